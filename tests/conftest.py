"""The hermetic seal: every test runs in a private home, with private git
configuration, fixed identity and dates, no inherited git or token variables,
and sockets that can only reach the loopback interface.

Nothing here reaches the real checkout, the real home directory, a real forge
or a real credential store; ``tests/test_seal.py`` proves it.
"""
from __future__ import annotations

import ipaddress
import os
import socket
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

REAL_HOME = os.path.expanduser("~")
FIXED_DATE = "1767225600 +0000"  # 2026-01-01T00:00:00Z
_STRIPPED_PREFIXES = ("GIT_", "MADTEA_", "GITEA_", "FORGEJO_", "GH_", "GITHUB_", "TEA_", "SSH_", "CLAUDE", "CODEX",
                      "GEMINI")
_STRIPPED_WORDS = ("TOKEN", "PASSWORD", "SECRET")


# --------------------------------------------------------------------------- sockets

class NetworkRefused(OSError):
    """A test tried to reach an address that is not loopback."""


def loopback_only(address: object) -> bool:
    """True when *address* (as given to ``socket.connect``) is loopback or a local socket.

    Names other than ``localhost`` are refused without resolving them: a DNS
    lookup is itself network traffic.
    """
    if isinstance(address, (str, bytes)):  # AF_UNIX path
        return True
    if not isinstance(address, tuple) or not address:
        return False
    host = address[0]
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    if not isinstance(host, str):
        return False
    if host in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _guarded_connect(self: socket.socket, address: object) -> None:
    if not loopback_only(address):
        raise NetworkRefused(f"test sockets may only reach loopback, not {address!r}")
    return _real_connect(self, address)


def _guarded_connect_ex(self: socket.socket, address: object) -> int:
    if not loopback_only(address):
        raise NetworkRefused(f"test sockets may only reach loopback, not {address!r}")
    return _real_connect_ex(self, address)


socket.socket.connect = _guarded_connect  # type: ignore[method-assign]
socket.socket.connect_ex = _guarded_connect_ex  # type: ignore[method-assign]

# A name lookup is network traffic too (to the resolver), so names other than localhost are not
# resolved at all: they fail as an unknown name would. The opt-in live lane adds its forge here.
RESOLVABLE: set[str] = set()
_real_getaddrinfo = socket.getaddrinfo


def resolvable(host: object) -> bool:
    """True when looking *host* up needs no resolver: an address literal, localhost, or an allowed name."""
    if host is None:
        return True
    name = host.decode("ascii", "replace") if isinstance(host, bytes) else str(host)
    if name in ("localhost", "localhost.") or name in RESOLVABLE:
        return True
    try:
        ipaddress.ip_address(name.split("%", 1)[0])
        return True
    except ValueError:
        return False


def _guarded_getaddrinfo(host: object, *args: object, **kwargs: object) -> list:
    if not resolvable(host):
        raise socket.gaierror(socket.EAI_NONAME, f"test sockets resolve no names but localhost, not {host!r}")
    return _real_getaddrinfo(host, *args, **kwargs)  # type: ignore[arg-type]


socket.getaddrinfo = _guarded_getaddrinfo  # type: ignore[assignment]


# --------------------------------------------------------------------------- environment

def _scrubbed_environ() -> dict[str, str]:
    keep = {}
    for key, value in os.environ.items():
        upper = key.upper()
        if upper.startswith(_STRIPPED_PREFIXES) or any(word in upper for word in _STRIPPED_WORDS):
            continue
        keep[key] = value
    return keep


@pytest.fixture(autouse=True)
def hermetic_seal(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Give the test a private HOME, git config, identity and working directory."""
    base = tmp_path_factory.mktemp("seal")
    home = base / "home"
    (home / ".config").mkdir(parents=True)
    runtime = base / "runtime"
    runtime.mkdir(mode=0o700)
    work = base / "work"
    work.mkdir()
    gitconfig = home / ".gitconfig"
    gitconfig.write_text(
        "[user]\n\tname = Test Person\n\temail = test@example.invalid\n"
        "[init]\n\tdefaultBranch = main\n"
        "[advice]\n\tdetachedHead = false\n"
        "[protocol]\n\tallow = never\n"
        '[protocol "file"]\n\tallow = always\n'
        "[commit]\n\tgpgsign = false\n"
        "[core]\n\tautocrlf = false\n",
        encoding="utf-8",
    )
    kept = _scrubbed_environ()
    for key in list(os.environ):
        monkeypatch.delenv(key)
    for key, value in kept.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("USERPROFILE", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(gitconfig))
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Test Person")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "test@example.invalid")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Test Person")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "test@example.invalid")
    monkeypatch.setenv("GIT_AUTHOR_DATE", FIXED_DATE)
    monkeypatch.setenv("GIT_COMMITTER_DATE", FIXED_DATE)
    monkeypatch.setenv("GIT_ALLOW_PROTOCOL", "file")
    monkeypatch.setenv("TZ", "UTC")
    monkeypatch.setenv("LC_ALL", "C")
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("MADTEA_PAGER", "")  # a test that plays a terminal reads the output itself, unpaged
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.chdir(work)
    return base


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# --- fixture modules ---
from topologies import *  # noqa: E402, F403 - sandbox repo fixtures
from fakeforge import fake_forge, forgejo_forge, gitea_forge, release_forge  # noqa: E402,F401 - fake forge fixtures
from credseal import sealed_credential_stores  # noqa: E402,F401 - no test reaches a real keychain
