"""The suite proves its own seal: no real home, no real git config, no checkout, no network, no secrets."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

import conftest

CHECKOUT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("address,allowed", [
    (("127.0.0.1", 80), True), (("127.9.9.9", 1), True), (("::1", 80, 0, 0), True), (("localhost", 80), True),
    ("/run/some.sock", True), (b"/run/other.sock", True),
    (("10.0.0.1", 80), False), (("192.168.1.1", 443), False), (("172.16.0.1", 22), False),
    (("8.8.8.8", 53), False), (("169.254.169.254", 80), False), (("2001:db8::1", 443, 0, 0), False),
    (("::ffff:10.0.0.1", 80, 0, 0), False), (("example.com", 443), False), (("forge.example.test", 443), False),
    ((), False), (None, False), ((42, 80), False),
])
def test_the_socket_guard_decides_on_the_address_alone(address: object, allowed: bool) -> None:
    assert conftest.loopback_only(address) is allowed


def test_a_non_loopback_connect_is_refused_before_it_is_attempted(monkeypatch: pytest.MonkeyPatch) -> None:
    """The real connect is replaced by a recorder: a refused address never reaches it."""
    attempted = []
    monkeypatch.setattr(conftest, "_real_connect", lambda sock, address: attempted.append(address))
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        with pytest.raises(conftest.NetworkRefused):
            sock.connect(("192.0.2.1", 9))
        sock.connect(("127.0.0.1", 9))
    assert attempted == [("127.0.0.1", 9)]


def test_names_are_not_resolved_so_no_resolver_is_asked() -> None:
    with pytest.raises(socket.gaierror):
        socket.getaddrinfo("forge.example.test", 443)
    assert socket.getaddrinfo("127.0.0.1", 80)
    assert conftest.resolvable("localhost") and conftest.resolvable("::1") and not conftest.resolvable("example.com")


def test_urllib_cannot_leave_the_machine() -> None:
    with pytest.raises((urllib.error.URLError, OSError)):
        urllib.request.urlopen("http://forge.example.test/api/v1/version", timeout=2)


def test_home_and_config_are_private(hermetic_seal: Path) -> None:
    home = Path(os.environ["HOME"])
    assert home != Path(conftest.REAL_HOME) and hermetic_seal in home.parents
    assert Path.home() == home and Path(os.path.expanduser("~")) == home
    assert Path(os.environ["XDG_CONFIG_HOME"]).is_relative_to(home)
    assert os.environ["GIT_CONFIG_NOSYSTEM"] == "1"
    listed = subprocess.run(["git", "config", "--global", "--list", "--show-origin"], capture_output=True,
                            text=True, check=True).stdout
    assert str(home) in listed and conftest.REAL_HOME + "/" not in listed.replace(str(home), "")
    assert "user.email=test@example.invalid" in listed


def test_the_test_never_runs_in_the_real_checkout(hermetic_seal: Path) -> None:
    cwd = Path.cwd().resolve()
    assert not cwd.is_relative_to(CHECKOUT)
    top = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True)
    assert top.returncode != 0 or not Path(top.stdout.strip()).resolve().is_relative_to(CHECKOUT)


def test_no_inherited_git_or_token_variables() -> None:
    allowed_git = {"GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_GLOBAL", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL",
                   "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE",
                   "GIT_ALLOW_PROTOCOL", "MADTEA_CREDENTIAL_STORES", "MADTEA_PAGER"}  # the last two are the seal's own
    leaked = [k for k in os.environ if k not in allowed_git and (
        k.startswith(("GIT_", "MADTEA_", "GITEA_", "FORGEJO_", "GH_", "GITHUB_")) or "TOKEN" in k.upper())]
    assert leaked == []


def test_git_children_may_only_use_local_transports(tmp_path: Path) -> None:
    """The in-process guard cannot see a git child, so git itself is told: file transport only."""
    proc = subprocess.run(["git", "ls-remote", "https://forge.example.test/acme/web.git"], capture_output=True,
                          text=True, timeout=30, cwd=tmp_path)
    assert proc.returncode != 0
    assert "transport 'https' not allowed" in proc.stderr


def test_commits_have_a_fixed_identity_and_date(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path / "r")], check=True)
    (tmp_path / "r" / "a").write_text("a\n")
    subprocess.run(["git", "-C", str(tmp_path / "r"), "add", "a"], check=True)
    subprocess.run(["git", "-C", str(tmp_path / "r"), "commit", "-qm", "a"], check=True)
    shown = subprocess.run(["git", "-C", str(tmp_path / "r"), "log", "-1", "--format=%an <%ae> %at"],
                           capture_output=True, text=True, check=True).stdout.strip()
    assert shown == "Test Person <test@example.invalid> 1767225600"


def test_a_child_python_inherits_the_seal(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-c", "import os; print(os.environ['HOME'])"], capture_output=True,
                         text=True, check=True).stdout.strip()
    assert out == os.environ["HOME"] != conftest.REAL_HOME
