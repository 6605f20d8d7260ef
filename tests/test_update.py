"""`madtea update` on copy installs: signed releases verified against a pinned key, replaced atomically."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

import guard
import madtea
from release_env import change, keypair, release_tool, source_repo, tag
from remote_env import env  # noqa: F401  (a fixture)
from test_forge import serve  # noqa: F401  (a fixture)
from topologies import run_git

pytestmark = pytest.mark.slow  # installs and updates: not in the fast lane

rel = release_tool()


@dataclass
class Releases:
    key: Path
    other_key: Path
    old: Path          # v0.1.0's artifacts, signed with key
    new: Path          # v0.2.0's artifacts, signed with key
    fingerprint: str
    other_fingerprint: str


def _build(repo: Path, out: Path, key: Path) -> Path:
    rel.build(rel.plan(repo), out, key, copies_only=True)
    return out


@pytest.fixture
def releases(tmp_path: Path) -> Releases:
    repo = source_repo(tmp_path / "src")
    key = keypair(tmp_path / "key")
    other = keypair(tmp_path / "other-key", "someone else")
    old = _build(repo, tmp_path / "v0.1.0", key)
    tag(repo, "v0.1.0")
    change(repo, "feat!: a new surface")
    new = _build(repo, tmp_path / "v0.2.0", key)
    return Releases(key, other, old, new, rel.fingerprint(rel.public_key(key)),
                    rel.fingerprint(rel.public_key(other)))


def _copy_install(archive: Path, into: Path) -> Path:
    """The air-gapped install: the archive's four modules unpacked into a folder."""
    with zipfile.ZipFile(archive) as z:
        for name in z.namelist():
            (into / Path(name).name).parent.mkdir(parents=True, exist_ok=True)
            (into / Path(name).name).write_bytes(z.read(name))
    return into / "madtea.py"


def _pin(key: Path) -> Path:
    pin = madtea.release_key_file()
    pin.parent.mkdir(parents=True, exist_ok=True)
    pin.write_text(f'madtea-release namespaces="madtea-release" {rel.public_key(key)}\n', encoding="utf-8")
    return pin


def _names(folder: Path) -> list[str]:
    """The folder's entries but Python's bytecode cache: no temporary file is ever left behind."""
    return sorted(p.name for p in folder.iterdir() if p.name != "__pycache__")


def _state(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


def _madtea(entry: Path, *args: str, tty_input: str | None = None,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-I", str(entry), *args]
    if tty_input is None:
        return subprocess.run(argv, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
                              cwd=entry.parent, env=None if env is None else {**os.environ, **env})
    import pty

    main, child = pty.openpty()
    os.write(main, tty_input.encode())
    try:
        return subprocess.run(argv, stdin=child, capture_output=True, text=True, timeout=60, cwd=entry.parent)
    finally:
        os.close(main)
        os.close(child)


def test_a_copy_install_updates_itself_from_the_archive_and_reports_the_new_version(releases, tmp_path) -> None:
    entry = _copy_install(releases.old / "madtea-0.1.0.zip", tmp_path / "install")
    assert _madtea(entry, "--version").stdout == "madtea 0.1.0\n"
    _pin(releases.key)
    done = _madtea(entry, "update", "--from", str(releases.new / "madtea-0.2.0.zip"))
    assert done.returncode == 0, done.stderr
    assert done.stdout == (f"Updated madtea 0.1.0 → 0.2.0 at {entry.parent} (madtea.py, guard.py, forge.py, "
                           f"gitops.py), verified against the release key {releases.fingerprint}.\n")
    assert _madtea(entry, "--version").stdout == "madtea 0.2.0\n"
    assert f"0.2.0, copied files in {entry.parent} (madtea update replaces them)" in _madtea(entry, "doctor").stdout
    assert _names(entry.parent) == ["README.md", "forge.py", "gitops.py", "guard.py", "madtea.py"]
    again = _madtea(entry, "update", "--from", str(releases.new / "madtea-0.2.0.pyz"))
    assert again.returncode == 0
    assert again.stdout == f"madtea 0.2.0 is already installed at {entry.parent}; nothing was replaced.\n"


def test_a_folder_install_takes_its_modules_from_the_pyz_named_relative_to_the_shell(releases, tmp_path) -> None:
    entry = _copy_install(releases.old / "madtea-0.1.0.zip", tmp_path / "install")
    _pin(releases.key)
    proc = subprocess.run([sys.executable, "-I", str(entry), "update", "--from", "madtea-0.2.0.pyz"],
                          cwd=releases.new, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"Updated madtea 0.1.0 → 0.2.0 at {entry.parent} (madtea.py, guard.py")
    with zipfile.ZipFile(releases.new / "madtea-0.2.0.pyz") as z:
        assert all((entry.parent / m).read_bytes() == z.read(m) for m in ("madtea.py", "guard.py", "forge.py",
                                                                           "gitops.py"))
    assert _names(entry.parent) == ["README.md", "forge.py", "gitops.py", "guard.py", "madtea.py"]


def test_a_single_file_install_is_replaced_by_the_new_pyz_keeping_its_mode(releases, tmp_path) -> None:
    (tmp_path / "bin").mkdir()
    entry = tmp_path / "bin" / "madtea.pyz"
    shutil.copy(releases.old / "madtea-0.1.0.pyz", entry)
    entry.chmod(0o750)
    _pin(releases.key)
    archive = _madtea(entry, "update", "--from", str(releases.new / "madtea-0.2.0.zip"))
    assert archive.returncode == 1 and archive.stderr.startswith("BAD_ARGUMENT:")
    assert "only a .pyz release replaces" in archive.stderr
    done = _madtea(entry, "update", "--from", str(releases.new / "madtea-0.2.0.pyz"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"Updated madtea 0.1.0 → 0.2.0 at {entry}, verified")
    assert entry.read_bytes() == (releases.new / "madtea-0.2.0.pyz").read_bytes()
    assert stat.S_IMODE(entry.stat().st_mode) == 0o750
    assert _madtea(entry, "--version").stdout == "madtea 0.2.0\n"
    assert f"0.2.0, the single file {entry} (madtea update replaces it)" in _madtea(entry, "doctor").stdout
    assert _names(entry.parent) == ["madtea.pyz"]


def test_a_single_file_reached_through_a_symlink_is_replaced_where_it_lives(releases, tmp_path) -> None:
    real = tmp_path / "opt" / "madtea.pyz"
    real.parent.mkdir()
    shutil.copy(releases.old / "madtea-0.1.0.pyz", real)
    (tmp_path / "bin").mkdir()
    link = tmp_path / "bin" / "madtea"
    link.symlink_to(real)
    _pin(releases.key)
    done = _madtea(link, "update", "--from", str(releases.new / "madtea-0.2.0.pyz"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"Updated madtea 0.1.0 → 0.2.0 at {real}, verified")
    assert link.is_symlink() and real.read_bytes() == (releases.new / "madtea-0.2.0.pyz").read_bytes()


def test_first_use_shows_the_fingerprint_and_pins_only_what_a_person_confirms(releases, tmp_path) -> None:
    entry = _copy_install(releases.old / "madtea-0.1.0.zip", tmp_path / "install")
    before = _state(entry.parent)
    new = str(releases.new / "madtea-0.2.0.zip")
    blind = _madtea(entry, "update", "--from", new)
    assert blind.returncode == 1 and blind.stderr.startswith("USER_ACTION_REQUIRED:")
    assert f"trusting {releases.fingerprint}" in blind.stderr and "needs a person at a terminal" in blind.stderr
    assert "nothing was pinned or replaced" in blind.stderr
    declined = _madtea(entry, "update", "--from", new, tty_input="no\n")
    assert declined.returncode == 1 and releases.fingerprint in declined.stderr
    assert "was not trusted; nothing was pinned or replaced" in declined.stderr
    assert not madtea.release_key_file().exists() and _state(entry.parent) == before
    trusted = _madtea(entry, "update", "--from", new, tty_input="yes\n")
    assert trusted.returncode == 0, trusted.stderr
    assert f"This release is signed by\n  {releases.fingerprint}\n" in trusted.stderr
    assert madtea.release_key_file().read_text(encoding="utf-8").split()[2:] == rel.public_key(releases.key).split()[:2]
    assert _madtea(entry, "--version").stdout == "madtea 0.2.0\n"


@pytest.mark.parametrize("case", ["tampered", "wrong signature", "changed key", "no signature", "not a release"])
def test_an_untrustworthy_file_is_refused_and_nothing_is_replaced(releases, tmp_path, case) -> None:
    entry = _copy_install(releases.old / "madtea-0.1.0.zip", tmp_path / "install")
    pin = _pin(releases.key)
    bad = tmp_path / "bad"
    bad.mkdir()
    target = bad / "madtea-0.2.0.zip"
    shutil.copy(releases.new / "madtea-0.2.0.zip", target)
    shutil.copy(releases.new / "madtea-0.2.0.zip.sig", bad / "madtea-0.2.0.zip.sig")
    if case == "tampered":
        with zipfile.ZipFile(target, "a") as z:  # still a valid release archive, one more file in it
            z.writestr("madtea-0.2.0/extra.py", "import os\n")
    elif case == "wrong signature":
        shutil.copy(releases.new / "madtea-0.2.0.pyz.sig", bad / "madtea-0.2.0.zip.sig")
    elif case == "changed key":
        (bad / "madtea-0.2.0.zip.sig").unlink()
        rel.sign(releases.other_key, target)
    elif case == "no signature":
        (bad / "madtea-0.2.0.zip.sig").unlink()
    else:
        target.write_bytes(b"not a zip at all")
    before = _state(entry.parent)
    refused = _madtea(entry, "update", "--from", str(target))
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert "nothing was replaced" in refused.stderr
    assert _state(entry.parent) == before
    assert pin.read_text(encoding="utf-8").split()[2:4] == rel.public_key(releases.key).split()[:2]
    expected = {
        "tampered": ("BAD_SIGNATURE:", "does not match", "the file changed after it was signed"),
        "wrong signature": ("BAD_SIGNATURE:", "does not match", "SHA256SUMS"),
        "changed key": ("BAD_SIGNATURE:", f"signed by the key {releases.other_fingerprint}",
                        f"this machine trusts {releases.fingerprint}"),
        "no signature": ("BAD_SIGNATURE:", "madtea-0.2.0.zip.sig is missing", "put it beside madtea-0.2.0.zip"),
        "not a release": ("BAD_SIGNATURE:", "does not match", "incorrect signature"),  # checked before it is read
    }[case]
    assert refused.stderr.startswith(expected[0]), refused.stderr
    assert all(part in refused.stderr for part in expected[1:]), refused.stderr
    assert refused.stderr.count("To continue: ") == 1
    if case == "changed key":
        assert f"a person deletes {pin} and runs the update again" in refused.stderr


# A fake ssh-keygen per way it can fail; "missing" leaves PATH without one.
_FAKE_KEYGEN = {"not executable": "exit 0", "hangs": 'echo $$ > "$PID_FILE"; exec "$SLEEP" 600',
                "killed": "kill -9 $$"}


@pytest.mark.parametrize("case", ["missing", "not executable", "hangs", "killed"])
def test_every_way_ssh_keygen_fails_is_a_plain_refusal(releases, tmp_path, case) -> None:
    entry = _copy_install(releases.old / "madtea-0.1.0.zip", tmp_path / "install")
    _pin(releases.key)
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "git").symlink_to(shutil.which("git") or "git")
    if case != "missing":
        (tools / "ssh-keygen").write_text(f"#!/bin/sh\n{_FAKE_KEYGEN[case]}\n", encoding="utf-8")
        (tools / "ssh-keygen").chmod(0o644 if case == "not executable" else 0o755)
    pid_file = tmp_path / "ssh-keygen.pid"
    env = {"PATH": str(tools), "PID_FILE": str(pid_file), "SLEEP": shutil.which("sleep") or "sleep"}
    release = str(releases.new / "madtea-0.2.0.zip")
    before = _state(entry.parent)
    if case == "hangs":  # the installed copy with its ssh-keygen time limit cut to 2 s
        run = (f"import sys; sys.path.insert(0, {str(entry.parent)!r}); import madtea; "
               f"madtea._SSH_KEYGEN_TIMEOUT = 2.0; raise SystemExit(madtea.main(['update', '--from', {release!r}]))")
        refused = subprocess.run([sys.executable, "-I", "-c", run], capture_output=True, text=True, timeout=120,
                                 stdin=subprocess.DEVNULL, cwd=entry.parent, env={**os.environ, **env})
    else:
        refused = _madtea(entry, "update", "--from", release, env=env)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr, refused.stderr
    reason = {"missing": "which is not on PATH", "not executable": "which could not be started (Permission denied)",
              "hangs": "which did not answer within 2 s", "killed": "which was ended by signal 9"}[case]
    assert refused.stderr.startswith(f"USER_ACTION_REQUIRED:\nVerifying {release} needs ssh-keygen"), refused.stderr
    assert f"{reason}; nothing was replaced." in refused.stderr, refused.stderr
    assert refused.stderr.count("To continue: ") == 1 and "ssh-keygen" in refused.stderr.split("To continue: ")[1]
    assert _state(entry.parent) == before
    if case == "hangs":  # its whole process group was ended, not left running
        with pytest.raises(ProcessLookupError):
            os.kill(int(pid_file.read_text(encoding="utf-8")), 0)


def test_a_downgrade_is_refused_unless_asked_for(releases, tmp_path) -> None:
    entry = _copy_install(releases.new / "madtea-0.2.0.zip", tmp_path / "install")
    _pin(releases.key)
    before = _state(entry.parent)
    old = str(releases.old / "madtea-0.1.0.zip")
    refused = _madtea(entry, "update", "--from", old)
    assert refused.returncode == 1 and refused.stderr.startswith("DOWNGRADE:")
    assert f"holds madtea 0.1.0, older than the 0.2.0 installed at {entry.parent}; nothing was replaced." \
        in refused.stderr
    assert f"madtea update --from {old} --allow-downgrade" in refused.stderr
    assert _state(entry.parent) == before
    done = _madtea(entry, "update", "--from", old, "--allow-downgrade")
    assert done.returncode == 0 and "0.2.0 → 0.1.0" in done.stdout
    assert _madtea(entry, "--version").stdout == "madtea 0.1.0\n"


def test_files_pip_manages_are_never_replaced(releases, tmp_path) -> None:
    entry = _copy_install(releases.old / "madtea-0.1.0.zip", tmp_path / "site-packages")
    info = entry.parent / "madtea-0.1.0.dist-info"
    info.mkdir()
    (info / "RECORD").write_text("madtea.py,sha256=x,1\nguard.py,sha256=y,1\n", encoding="utf-8")
    (info / "INSTALLER").write_text("pip\n", encoding="utf-8")
    _pin(releases.key)
    before = _state(entry.parent)
    refused = _madtea(entry, "update", "--from", str(releases.new / "madtea-0.2.0.zip"))
    assert refused.returncode == 1 and refused.stderr.startswith("USER_ACTION_REQUIRED:")
    assert f"was installed by pip, which lists its files in {info / 'RECORD'}" in refused.stderr
    assert "Update it with python -m pip install --upgrade madtea" in refused.stderr
    assert _state(entry.parent) == before
    assert f"0.1.0, installed by pip in {entry.parent} (update it with pip)" in _madtea(entry, "doctor").stdout


def test_a_git_checkout_is_left_to_git(releases, tmp_path) -> None:
    entry = _copy_install(releases.old / "madtea-0.1.0.zip", tmp_path / "checkout")
    run_git(entry.parent, "init", "-q", "-b", "main")
    run_git(entry.parent, "add", "--", "madtea.py")  # one tracked module is enough: git owns the folder
    _pin(releases.key)
    before = _state(entry.parent)
    refused = _madtea(entry, "update", "--from", str(releases.new / "madtea-0.2.0.zip"))
    assert refused.returncode == 1 and "runs from the git checkout" in refused.stderr
    assert f"git -C {entry.parent} pull" in refused.stderr
    assert _state(entry.parent) == before


def test_copied_files_untracked_inside_another_repository_are_a_copy_install(releases, tmp_path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    run_git(home, "init", "-q", "-b", "main")  # a home folder kept in git (dotfiles)
    (home / ".bashrc").write_text("alias m=madtea\n")
    run_git(home, "add", "--", ".bashrc")
    run_git(home, "commit", "-q", "-m", "dotfiles")
    (home / "tools" / "madtea").mkdir(parents=True)
    entry = _copy_install(releases.old / "madtea-0.1.0.zip", home / "tools" / "madtea")
    assert f"copied files in {entry.parent} (madtea update replaces them)" in _madtea(entry, "doctor").stdout
    _pin(releases.key)
    done = _madtea(entry, "update", "--from", str(releases.new / "madtea-0.2.0.zip"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"Updated madtea 0.1.0 → 0.2.0 at {entry.parent} (")
    assert _madtea(entry, "--version").stdout == "madtea 0.2.0\n"
    assert run_git(home, "status", "--porcelain") == "?? tools/"


@pytest.mark.parametrize("command", ["madtea update", "madtea update --from /tmp/madtea-0.2.0.pyz",
                                     "python3 madtea-0.2.0.pyz update", "./madtea.pyz update --allow-downgrade",
                                     "python3 -m madtea update", "python.exe C:/tools/madtea-0.2.0.pyz update"])
def test_the_hook_steers_an_agents_update_to_the_user(tmp_path, command) -> None:
    decision = guard.classify_command(command, str(tmp_path), lambda path: None, madtea.cli_table)
    assert decision.kind == "deny"
    assert "ask the user to run madtea update themselves" in decision.text


# --------------------------------------------------------------------------- from the forge

_PUBLISHED = ("madtea-0.2.0.zip", "madtea-0.2.0.zip.sig", "madtea-0.2.0.pyz", "madtea-0.2.0.pyz.sig", "SHA256SUMS",
              "SHA256SUMS.sig")


def _upload(env, files: list[str]) -> None:
    """Upload release assets as the maintainers do, at the command line (a person names files from anywhere)."""
    done = madtea.run("madt_releases", {"action": "upload", "tag": "v0.2.0", "files": files},
                      madtea.Context("cli", env.clone))
    assert not done.is_error, done.text


def test_update_fetches_the_latest_release_from_the_forge_that_publishes_it(releases, env, tmp_path) -> None:
    env.ok("madt_releases", action="create", tag="v0.2.0", title="madtea 0.2.0")  # published as the README says
    _upload(env, [str(releases.new / n) for n in _PUBLISHED])
    entry = _copy_install(releases.old / "madtea-0.1.0.zip", tmp_path / "install")
    _pin(releases.key)
    web = env.forge.url + "/acme/web"
    host = web.split("/")[2]
    done = _madtea(entry, "update", "--repo", web)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (f"Updated madtea 0.1.0 → 0.2.0 at {entry.parent} (madtea.py, guard.py, forge.py, "
                           f"gitops.py) from v0.2.0 of {host}/acme/web, verified against the release key "
                           f"{releases.fingerprint}.\n")
    assert _madtea(entry, "--version").stdout == "madtea 0.2.0\n"
    config = madtea.release_key_file().parent / "config.json"
    config.write_text('{"update_from": "%s"}' % web, encoding="utf-8")
    again = _madtea(entry, "update")
    assert again.returncode == 0, again.stderr
    assert again.stdout == (f"madtea 0.2.0 from v0.2.0 of {host}/acme/web is already installed at "
                            f"{entry.parent}; nothing was replaced.\n")


def test_a_downloaded_file_that_does_not_verify_is_named_by_where_it_came_from(releases, env, tmp_path) -> None:
    env.ok("madt_releases", action="create", tag="v0.2.0", title="madtea 0.2.0")
    shutil.copy(releases.new / "madtea-0.2.0.zip", tmp_path / "madtea-0.2.0.zip")
    with zipfile.ZipFile(tmp_path / "madtea-0.2.0.zip", "a") as z:
        z.writestr("madtea-0.2.0/extra.py", "import os\n")
    _upload(env, [str(tmp_path / "madtea-0.2.0.zip"), str(releases.new / "madtea-0.2.0.zip.sig")])
    entry = _copy_install(releases.old / "madtea-0.1.0.zip", tmp_path / "install")
    _pin(releases.key)
    before = _state(entry.parent)
    web = env.forge.url + "/acme/web"
    refused = _madtea(entry, "update", "--repo", web)
    assert refused.returncode == 1 and refused.stderr.startswith("BAD_SIGNATURE:"), refused.stderr
    assert f"does not match madtea-0.2.0.zip from v0.2.0 of {web.split('/')[2]}/acme/web (" in refused.stderr
    assert "/tmp" not in refused.stderr.split("does not match", 1)[1].split("(", 1)[0]
    assert _state(entry.parent) == before


def test_a_release_without_the_needed_file_is_said_plainly(releases, env, tmp_path) -> None:
    env.ok("madt_releases", action="create", tag="v0.2.0", title="madtea 0.2.0")
    _upload(env, [str(releases.new / "madtea-0.2.0.zip")])
    entry = _copy_install(releases.old / "madtea-0.1.0.zip", tmp_path / "install")
    before = _state(entry.parent)
    refused = _madtea(entry, "update", "--repo", env.forge.url + "/acme/web")
    assert refused.returncode == 1 and refused.stderr.startswith("NOT_FOUND_OR_NO_ACCESS:"), refused.stderr
    assert "has no madtea-0.2.0.zip with its madtea-0.2.0.zip.sig beside it" in refused.stderr
    assert _state(entry.parent) == before


def test_update_without_a_file_or_a_repository_says_what_it_needs(tmp_path) -> None:
    (tmp_path / "install").mkdir()
    for name in ("madtea.py", "guard.py", "forge.py", "gitops.py"):
        shutil.copy(Path(madtea.__file__).parent / name, tmp_path / "install" / name)
    refused = _madtea(tmp_path / "install" / "madtea.py", "update")
    assert refused.returncode == 1 and refused.stderr.startswith("BAD_ARGUMENT:")
    assert "madtea update --repo https://HOST/OWNER/REPO" in refused.stderr


def test_a_download_address_on_another_origin_is_refused_before_anything_is_sent() -> None:
    import forge

    client = forge.Client("http://127.0.0.1:9/api/v1", "127.0.0.1:9", "a-token-1234")
    with pytest.raises(forge.ForgeError) as caught:
        client.download("http://127.0.0.2:9/attachments/x")
    assert caught.value.code == "OUT_OF_SCOPE" and client.requests_made == 0


# --------------------------------------------------------------------------- platforms, simulated

def test_a_zipapp_knows_it_is_one_file(tmp_path, monkeypatch) -> None:
    class Loader:
        archive = str(tmp_path / "madtea.pyz")
    monkeypatch.setitem(madtea.__dict__, "__loader__", Loader())
    assert madtea.installed_copy() == ("zipapp", tmp_path / "madtea.pyz")
    monkeypatch.setitem(madtea.__dict__, "__loader__", None)
    assert madtea.installed_copy() == ("modules", Path(madtea._HERE))


@pytest.mark.parametrize("folder, installer, says", [
    ("pipx/venvs/madtea/lib/site-packages", "pip", "installed by pipx"),
    ("venv/lib/site-packages", "pip", "installed by pip"),
    ("uv/tools/madtea/lib/site-packages", "uv", "installed by uv"),
])
def test_doctor_names_the_tool_that_installed_madtea(tmp_path, monkeypatch, folder, installer, says) -> None:
    site = tmp_path / folder
    info = site / "madtea-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "RECORD").write_text("madtea.py,sha256=x,1\n")
    (info / "INSTALLER").write_text(installer + "\n")
    monkeypatch.setattr(madtea, "installed_copy", lambda: ("modules", site))
    description = madtea.installed_description()
    assert description.startswith(says + " in ") and description.endswith(f"(update it with {says.split()[-1]})")


def test_the_pin_lives_in_the_config_folder_on_every_platform(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    assert madtea.release_key_file() == tmp_path / "cfg" / "madtea" / "release-signers"
    monkeypatch.delenv("XDG_CONFIG_HOME")
    assert madtea.release_key_file() == Path.home() / ".config" / "madtea" / "release-signers"


# --------------------------------------------------------------------------- killed, raced, attacked

_RELEASED = ["README.md", "forge.py", "gitops.py", "guard.py", "madtea.py"]

# A child runs madtea's own entry point after this prelude. It wraps every call that changes a file or a folder
# (os's and builtins.open for writing) and, after the N-th one that touches the install's folder, SIGKILLs itself
# (a power cut, short of losing what was never synced) or SIGSTOPs (an update paused mid-way). With "full", from the
# N-th change on, every write, mkdir or file creation there fails as a full disk does (ENOSPC). With "log" it runs
# to the end instead, writing each such call and the folder it leaves (names, contents, modes).
_FAULTS = r'''
import builtins, hashlib, io, json, os, runpy, shutil, signal, sys  # shutil first: it picks rmtree by the real os

entry, plan, at, log = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
folder, count, real_open = os.path.realpath(os.path.dirname(entry)), [0], builtins.open


def where(target, dir_fd=None):
    if isinstance(target, int):
        return os.readlink(f"/proc/self/fd/{target}")
    base = os.readlink(f"/proc/self/fd/{dir_fd}") if dir_fd is not None else os.getcwd()
    return os.path.join(base, os.fsdecode(target))


def snapshot():
    found = {}
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = os.path.join(root, name)
            if os.path.isdir(path):
                found[os.path.relpath(path, folder)] = "folder"
                continue
            with real_open(path, "rb") as handle:
                digest = hashlib.sha256(handle.read()).hexdigest()
            found[os.path.relpath(path, folder)] = f"{digest} {os.stat(path).st_mode & 0o7777:o}"
    return found


def wrap(owner, name, targets):
    real = getattr(owner, name)

    def wrapped(*args, **kwargs):
        paths = targets(*args, **kwargs)
        inside = any(p == folder or p.startswith(folder + os.sep) for p in paths)
        if plan == "full" and inside and count[0] >= at and name in ("write", "mkdir", "open"):
            raise OSError(28, os.strerror(28))  # a full disk: nothing new fits; removing and renaming still work
        result = real(*args, **kwargs)
        if inside:
            count[0] += 1
            if plan == "log":
                with real_open(log, "a", encoding="utf-8") as out:
                    out.write(json.dumps([name, [os.path.relpath(p, folder) for p in paths], snapshot()]) + "\n")
            elif count[0] == at and plan in ("kill", "stop"):
                os.kill(os.getpid(), signal.SIGKILL if plan == "kill" else signal.SIGSTOP)
        return result
    setattr(owner, name, wrapped)


def kept(flags):
    return flags & (os.O_CREAT | os.O_TRUNC)


for name in ("mkdir", "rmdir", "unlink", "remove", "chmod"):
    wrap(os, name, lambda path, *a, dir_fd=None, **k: [where(path, dir_fd)])
for name in ("rename", "replace"):
    wrap(os, name, lambda src, dst, *a, src_dir_fd=None, dst_dir_fd=None, **k:
         [where(src, src_dir_fd), where(dst, dst_dir_fd)])
for name in ("write", "fsync"):
    wrap(os, name, lambda fd, *a, **k: [where(fd)])
wrap(os, "open", lambda path, flags, *a, dir_fd=None, **k: [where(path, dir_fd)] if kept(flags) else [])
for owner in (builtins, io):  # with "full", only a mode that makes or grows a file meets the full disk
    wrap(owner, "open", lambda file, mode="r", *a, **k: [where(file)] if set(mode) & set("wax" if plan == "full"
                                                                                        else "wax+") else [])
sys.argv = [entry, *sys.argv[5:]]
runpy.run_path(entry, run_name="__main__")
'''


def _faulted(entry: Path, plan: str, at: int, log: Path | None, *args: str,
             wait: bool = True) -> subprocess.CompletedProcess[str] | subprocess.Popen[str]:
    """madtea at *entry* run with *args* under the fault prelude: ``kill`` or ``stop`` after the *at*-th change
    to its folder, or ``log`` each change to *log*."""
    argv = [sys.executable, "-I", "-c", _FAULTS, str(entry), plan, str(at), str(log or os.devnull), *args]
    if wait:
        return subprocess.run(argv, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
                              cwd=entry.parent)
    return subprocess.Popen(argv, cwd=entry.parent, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


@dataclass
class Change:
    call: str
    paths: list[str]   # relative to the install's folder
    leaves: dict[str, str]


def _changes(entry: Path, archive: Path) -> list[Change]:
    """Every change an update of *entry* from *archive* makes to the install's folder, in order, each with the
    folder it leaves; the update itself must succeed under the prelude, so the prelude runs the real thing."""
    log = entry.parent.parent / f"{entry.parent.name}.changes"
    done = _faulted(entry, "log", 0, log, "update", "--from", str(archive))
    assert done.returncode == 0 and done.stdout.startswith("Updated madtea 0.1.0 → 0.2.0"), done.stderr
    return [Change(c, p, s) for c, p, s in map(json.loads, log.read_text(encoding="utf-8").splitlines())]


def _kill_points(changes: list[Change]) -> list[int]:
    """The changes (counted from 1) after which the folder differs from the one before: a kill after an fsync or a
    chmod that changed nothing leaves what a kill one change earlier does."""
    return [n for n, change in enumerate(changes, 1) if n == 1 or change.leaves != changes[n - 2].leaves]


def _first(changes: list[Change], call: str, path: str) -> int:
    return next(n for n, change in enumerate(changes, 1) if change.call == call and change.paths[-1] == path)


def _release_state(archive: Path) -> dict[str, str]:
    with zipfile.ZipFile(archive) as z:
        return {Path(n).name: hashlib.sha256(z.read(n)).hexdigest() for n in z.namelist()
                if n.endswith(".py")}


def test_an_update_killed_after_any_change_leaves_the_old_release_or_the_new_one(releases, tmp_path) -> None:
    old_state = _release_state(releases.old / "madtea-0.1.0.zip")
    new_state = _release_state(releases.new / "madtea-0.2.0.zip")
    new = releases.new / "madtea-0.2.0.zip"
    _pin(releases.key)
    changes = _changes(_copy_install(releases.old / "madtea-0.1.0.zip", tmp_path / "logged"), new)
    journal = _first(changes, "replace", ".madtea-update/journal")
    # the journal says forward before any installed file is touched, and madtea.py is the first one moved in
    moved = next(n for n, change in enumerate(changes, 1) if set(change.paths) & set(_RELEASED))
    assert moved > journal and changes[moved - 1].paths == [".madtea-update/new/madtea.py", "madtea.py"]
    points = _kill_points(changes)
    assert len(points) > 20 and journal in points
    for number, point in enumerate(points):
        entry = _copy_install(releases.old / "madtea-0.1.0.zip", tmp_path / f"install-{number}")
        killed = _faulted(entry, "kill", point, None, "update", "--from", str(new))
        assert killed.returncode == -9, (changes[point - 1], killed.stderr)
        if number % 2:  # the next start finishes it ...
            version = _madtea(entry, "--version")
            assert version.returncode == 0, (changes[point - 1], version.stderr)
            modules = {k: v for k, v in _state(entry.parent).items() if k.endswith(".py")}
            assert modules == (new_state if point >= journal else old_state), changes[point - 1]  # never a mix
            # a start that finished the switch already ran the madtea.py it found; the next one runs the new
            assert _madtea(entry, "--version").stdout == ("madtea 0.2.0\n" if point >= journal
                                                          else "madtea 0.1.0\n"), changes[point - 1]
            assert _names(entry.parent) == _RELEASED, changes[point - 1]
        again = _madtea(entry, "update", "--from", str(new))  # ... or the next update does
        assert again.returncode == 0, (changes[point - 1], again.stderr)
        assert again.stdout.startswith(("Updated madtea 0.1.0 → 0.2.0", "madtea 0.2.0 is already installed"))
        assert {k: v for k, v in _state(entry.parent).items() if k.endswith(".py")} == new_state
        assert _madtea(entry, "--version").stdout == "madtea 0.2.0\n", changes[point - 1]
        assert _names(entry.parent) == _RELEASED, changes[point - 1]


def test_an_update_that_meets_a_full_disk_at_any_change_leaves_the_old_release_and_says_to_free_space(
        releases, tmp_path) -> None:
    old_state = _release_state(releases.old / "madtea-0.1.0.zip")
    new_state = _release_state(releases.new / "madtea-0.2.0.zip")
    new = releases.new / "madtea-0.2.0.zip"
    _pin(releases.key)
    changes = _changes(_copy_install(releases.old / "madtea-0.1.0.zip", tmp_path / "logged"), new)
    refused = 0
    for number, point in enumerate(_kill_points(changes)):
        entry = _copy_install(releases.old / "madtea-0.1.0.zip", tmp_path / f"install-{number}")
        done = _faulted(entry, "full", point, None, "update", "--from", str(new))
        assert "Traceback" not in done.stderr, (changes[point - 1], done.stderr)
        assert _names(entry.parent) == _RELEASED, changes[point - 1]  # the staging folder never stays
        modules = {k: v for k, v in _state(entry.parent).items() if k.endswith(".py")}
        if done.returncode == 0:  # the disk filled after the last write: the update is whole
            assert modules == new_state, changes[point - 1]
            continue
        refused += 1
        assert modules == old_state, changes[point - 1]
        assert "No space left on device (ENOSPC)" in done.stderr, done.stderr
        assert f"Free space on the disk that holds {entry.parent}" in done.stderr, done.stderr
        assert "writable" not in done.stderr, done.stderr
    assert refused > 5


def _pyz_install(archive: Path, folder: Path) -> Path:
    folder.mkdir()
    entry = folder / "madtea.pyz"
    entry.write_bytes(archive.read_bytes())
    return entry


def test_a_single_file_update_killed_after_any_change_leaves_one_whole_file(releases, tmp_path) -> None:
    old, new = releases.old / "madtea-0.1.0.pyz", releases.new / "madtea-0.2.0.pyz"
    _pin(releases.key)
    changes = _changes(_pyz_install(old, tmp_path / "logged"), new)
    switched = _first(changes, "replace", "madtea.pyz")
    points = _kill_points(changes)
    assert len(points) > 10 and switched in points
    for number, point in enumerate(points):
        entry = _pyz_install(old, tmp_path / f"bin-{number}")
        killed = _faulted(entry, "kill", point, None, "update", "--from", str(new))
        assert killed.returncode == -9, (changes[point - 1], killed.stderr)
        assert entry.read_bytes() == (new if point >= switched else old).read_bytes(), changes[point - 1]
        assert _madtea(entry, "--version").returncode == 0, changes[point - 1]
        done = _madtea(entry, "update", "--from", str(new))
        assert done.returncode == 0, (changes[point - 1], done.stderr)
        assert entry.read_bytes() == new.read_bytes() and _names(entry.parent) == ["madtea.pyz"], changes[point - 1]


@pytest.mark.parametrize("paused", ["staging", "switching"])
def test_a_second_update_is_kept_out_while_one_runs(releases, tmp_path, paused) -> None:
    import signal

    _pin(releases.key)
    new = str(releases.new / "madtea-0.2.0.zip")
    changes = _changes(_copy_install(releases.old / "madtea-0.1.0.zip", tmp_path / "logged"), Path(new))
    # paused after its first change (the staging folder made), or with madtea.py switched and the rest not yet
    at = 1 if paused == "staging" else _first(changes, "replace", "madtea.py")
    entry = _copy_install(releases.old / "madtea-0.1.0.zip", tmp_path / "install")
    first = _faulted(entry, "stop", at, None, "update", "--from", new, wait=False)
    assert isinstance(first, subprocess.Popen)
    try:
        for _ in range(600):  # until the first update has paused itself
            if os.path.exists(f"/proc/{first.pid}/stat") and \
                    open(f"/proc/{first.pid}/stat").read().rsplit(")", 1)[1].split()[0] == "T":
                break
            assert first.poll() is None, first.communicate()
            import time
            time.sleep(0.1)
        before = _state(entry.parent)
        second = _madtea(entry, "update", "--from", new)
        assert second.returncode == 1 and second.stderr.startswith("USER_ACTION_REQUIRED:"), second.stderr
        assert f"Another madtea update is replacing the files at {entry.parent} right now" in second.stderr
        assert _state(entry.parent) == before
    finally:
        first.send_signal(signal.SIGCONT)
        out, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    assert out.startswith("Updated madtea 0.1.0 → 0.2.0")
    assert _madtea(entry, "--version").stdout == "madtea 0.2.0\n" and _names(entry.parent) == _RELEASED


def test_two_updates_started_together_end_in_one_whole_release(releases, tmp_path) -> None:
    entry = _copy_install(releases.old / "madtea-0.1.0.zip", tmp_path / "install")
    _pin(releases.key)
    argv = [sys.executable, "-I", str(entry), "update", "--from", str(releases.new / "madtea-0.2.0.zip")]
    racers = [subprocess.Popen(argv, cwd=entry.parent, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True) for _ in range(2)]
    answers = [(p.wait(timeout=120), *p.communicate()) for p in racers]
    updated = [a for a in answers if a[0] == 0 and a[1].startswith("Updated madtea 0.1.0 → 0.2.0")]
    assert len(updated) == 1, answers
    other = next(a for a in answers if a is not updated[0])
    assert (other[0] == 0 and "is already installed" in other[1]) or \
        (other[0] == 1 and "Another madtea update is replacing" in other[2]), other
    assert _state(entry.parent) == {**_release_state(releases.new / "madtea-0.2.0.zip"),
                                    "README.md": _state(entry.parent)["README.md"]}
    assert _names(entry.parent) == _RELEASED


def _bomb(path: Path) -> Path:
    """A 382 KiB zip of a .pyz's entries whose madtea.py inflates to 384 MiB, named as a release (read before
    its signature, it took an 806 MiB peak)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        for name in ("__main__.py", "guard.py", "forge.py", "gitops.py"):
            z.writestr(name, "")
        with z.open("madtea.py", "w", force_zip64=True) as member:
            chunk = bytes(1 << 20)
            for _ in range(384):
                member.write(chunk)
    return path


def _limited(limit: int) -> Callable[[], None]:
    def apply() -> None:
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    return apply


@pytest.mark.parametrize("signed", [False, True])
def test_a_zip_bomb_is_refused_within_bounded_memory(releases, tmp_path, signed) -> None:
    entry = _copy_install(releases.old / "madtea-0.1.0.zip", tmp_path / "install")
    _pin(releases.key)
    bomb = _bomb(tmp_path / "madtea-0.2.0.pyz")
    assert bomb.stat().st_size < 400 << 10
    if signed:  # even the release key's own signature does not make it inflate
        rel.sign(releases.key, bomb)
    before = _state(entry.parent)
    refused = subprocess.run([sys.executable, "-I", str(entry), "update", "--from", str(bomb)], cwd=entry.parent,
                             capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
                             preexec_fn=_limited(256 << 20))  # about a third of the bomb's size
    assert refused.returncode == 1 and "Traceback" not in refused.stderr and "MemoryError" not in refused.stderr
    if signed:
        assert refused.stderr.startswith("BAD_ARGUMENT:"), refused.stderr
        assert "would inflate to more than 16 MiB, more than a release holds; nothing was replaced" in refused.stderr
    else:
        assert refused.stderr.startswith("BAD_SIGNATURE:") and "madtea-0.2.0.pyz.sig is missing" in refused.stderr
    assert _state(entry.parent) == before and _names(entry.parent) == _RELEASED


@pytest.mark.parametrize("sig", ["none", "garbage", "another key"])
def test_nothing_opens_a_release_file_before_its_signature_checks_out(releases, tmp_path, monkeypatch, sig) -> None:
    folder = tmp_path / "install"
    _copy_install(releases.old / "madtea-0.1.0.zip", folder)
    _pin(releases.key)
    bomb = _bomb(tmp_path / "madtea-0.2.0.zip")
    if sig == "garbage":
        (tmp_path / "madtea-0.2.0.zip.sig").write_text("-----BEGIN SSH SIGNATURE-----\nAAAA\n")
    elif sig == "another key":
        rel.sign(releases.other_key, bomb)
    opened: list[object] = []
    monkeypatch.setattr(zipfile.ZipFile, "__init__", lambda self, *a, **k: opened.append(a) or 1 / 0)
    monkeypatch.setattr(madtea, "installed_copy", lambda: ("modules", folder))
    with pytest.raises(guard.Refusal) as refused:
        madtea.update_from_file(bomb)
    assert refused.value.code == "BAD_SIGNATURE" and opened == []


def _signed_zip(path: Path, entries: dict[str, bytes], key: Path) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in entries.items():
            z.writestr(name, data)
    path.with_name(path.name + ".sig").unlink(missing_ok=True)
    rel.sign(key, path)
    return path


def _modules(archive: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(archive) as z:
        return {Path(n).name: z.read(n) for n in z.namelist() if n.endswith(".py")}


@pytest.mark.parametrize("served", ["wheel as the pyz", "wheel as the zip", "pyz as the zip", "older as newer"])
def test_a_signed_artifact_served_under_another_name_is_refused(releases, tmp_path, served) -> None:
    (tmp_path / "bin").mkdir()
    single = tmp_path / "bin" / "madtea.pyz"
    shutil.copy(releases.old / "madtea-0.1.0.pyz", single)
    folder = _copy_install(releases.old / "madtea-0.1.0.zip", tmp_path / "install").parent
    _pin(releases.key)
    modules = _modules(releases.new / "madtea-0.2.0.zip")
    wheel = {**modules, "madtea-0.2.0.dist-info/METADATA": b"Name: madtea\nVersion: 0.2.0\n",
             "madtea-0.2.0.dist-info/RECORD": b"madtea.py,,\n"}
    served_dir = tmp_path / "served"
    served_dir.mkdir()
    if served == "wheel as the pyz":  # the release's own signed wheel, renamed with its valid .sig
        bad, entry = _signed_zip(served_dir / "madtea-0.2.0.pyz", wheel, releases.key), single
        says = "it holds madtea's wheel, not the single-file .pyz its name says"
    elif served == "wheel as the zip":
        bad, entry = _signed_zip(served_dir / "madtea-0.2.0.zip", wheel, releases.key), folder / "madtea.py"
        says = "it holds madtea's wheel, not the archive of the four modules its name says"
    elif served == "pyz as the zip":
        shutil.copy(releases.new / "madtea-0.2.0.pyz", served_dir / "madtea-0.2.0.zip")
        shutil.copy(releases.new / "madtea-0.2.0.pyz.sig", served_dir / "madtea-0.2.0.zip.sig")
        bad, entry = served_dir / "madtea-0.2.0.zip", folder / "madtea.py"
        says = "it holds the single-file .pyz, not the archive of the four modules its name says"
    else:
        shutil.copy(releases.old / "madtea-0.1.0.pyz", served_dir / "madtea-0.3.0.pyz")
        shutil.copy(releases.old / "madtea-0.1.0.pyz.sig", served_dir / "madtea-0.3.0.pyz.sig")
        bad, entry = served_dir / "madtea-0.3.0.pyz", single
        says = "it holds madtea 0.1.0, not the 0.3.0 its name says"
    before = (_state(single.parent), _state(folder))
    refused = _madtea(entry, "update", "--from", str(bad))
    assert refused.returncode == 1 and refused.stderr.startswith("BAD_SIGNATURE:"), refused.stderr
    assert says in refused.stderr and "nothing was replaced" in refused.stderr
    assert (_state(single.parent), _state(folder)) == before
    assert _madtea(single, "--version").stdout == "madtea 0.1.0\n"


def test_a_verified_release_that_does_not_start_replaces_nothing(releases, tmp_path) -> None:
    entry = _copy_install(releases.old / "madtea-0.1.0.zip", tmp_path / "install")
    _pin(releases.key)
    modules = _modules(releases.new / "madtea-0.2.0.zip")
    modules["gitops.py"] += b"\nraise ImportError('broken on purpose')\n"
    broken = _signed_zip(tmp_path / "madtea-0.2.0.zip", {f"madtea-0.2.0/{n}": d for n, d in modules.items()},
                         releases.key)
    before = _state(entry.parent)
    refused = _madtea(entry, "update", "--from", str(broken))
    assert refused.returncode == 1 and refused.stderr.startswith("BAD_ARGUMENT:"), refused.stderr
    assert "verified but does not run here (madtea --version exited with 1: ImportError: broken on purpose)" in \
        refused.stderr, repr(refused.stderr)
    assert "tried from a temporary folder and nothing was replaced" in refused.stderr
    assert _state(entry.parent) == before and _names(entry.parent) == _RELEASED
    modules["gitops.py"] = b"def (:\n"
    _signed_zip(broken, {f"madtea-0.2.0/{n}": d for n, d in modules.items()}, releases.key)
    refused = _madtea(entry, "update", "--from", str(broken))
    assert "gitops.py does not compile: invalid syntax" in refused.stderr, refused.stderr


def test_already_installed_is_judged_on_every_file(releases, tmp_path) -> None:
    entry = _copy_install(releases.new / "madtea-0.2.0.zip", tmp_path / "install")
    _pin(releases.key)
    with open(entry.parent / "forge.py", "a", encoding="utf-8") as edited:
        edited.write("# edited by hand\n")
    new = str(releases.new / "madtea-0.2.0.zip")
    repaired = _madtea(entry, "update", "--from", new)
    assert repaired.returncode == 0, repaired.stderr
    assert repaired.stdout.startswith(f"Reinstalled madtea 0.2.0 at {entry.parent} (madtea.py, guard.py, forge.py, "
                                      "gitops.py), whose forge.py differed from the release, verified")
    assert {k: v for k, v in _state(entry.parent).items() if k.endswith(".py")} == \
        _release_state(releases.new / "madtea-0.2.0.zip")
    assert _madtea(entry, "update", "--from", new).stdout.startswith("madtea 0.2.0 is already installed")


# --------------------------------------------------------------------------- tokens and addresses

def test_a_plain_http_repository_is_read_with_no_token_on_the_wire(releases, env, tmp_path, monkeypatch,
                                                                      capsys) -> None:
    import socket

    env.ok("madt_releases", action="create", tag="v0.2.0", title="madtea 0.2.0")
    _upload(env, [str(releases.new / n) for n in _PUBLISHED])
    folder = _copy_install(releases.old / "madtea-0.1.0.zip", tmp_path / "install").parent
    _pin(releases.key)
    port = env.forge.url.rsplit(":", 1)[1]
    name = "forge.example.test"  # another machine's name, reached over plain http (resolved here to loopback)
    real = socket.getaddrinfo
    monkeypatch.setattr(socket, "getaddrinfo", lambda host, *a, **k: real("127.0.0.1" if host == name else host,
                                                                          *a, **k))
    monkeypatch.setenv(f"MADTEA_TOKEN_FORGE_EXAMPLE_TEST_{port}", "a-stored-token-0123456789")
    monkeypatch.setattr(madtea, "installed_copy", lambda: ("modules", folder))
    env.forge.clear_requests()
    done = madtea.update_from_forge(f"http://{name}:{port}/acme/web/releases")
    assert done.startswith(f"Updated madtea {madtea.__version__} → 0.2.0 at {folder} (")
    assert f"from v0.2.0 of {name}:{port}/acme/web" in done
    sent = env.forge.find_requests()
    assert len(sent) >= 3 and not [r for r in sent if any(k.lower() == "authorization" for k in r.headers)]
    assert "a-stored-token" not in repr([(r.headers, r.query) for r in sent])
    assert (f"is plain http, so this update reads it without the token stored for {name}:{port}: a token never "
            "travels unencrypted") in capsys.readouterr().err


def test_a_release_whose_tag_names_no_version_is_said_plainly(releases, env, tmp_path) -> None:
    env.ok("madt_releases", action="create", tag="v0.2/0", title="madtea")
    entry = _copy_install(releases.old / "madtea-0.1.0.zip", tmp_path / "install")
    refused = _madtea(entry, "update", "--repo", env.forge.url + "/acme/web/releases/latest")
    assert refused.returncode == 1 and refused.stderr.startswith("NOT_FOUND_OR_NO_ACCESS:"), refused.stderr
    assert "The latest release v0.2/0 of" in refused.stderr and "has no madtea-X.Y.Z.zip" in refused.stderr


def test_an_attachment_redirected_to_object_storage_is_fetched_without_the_token(serve) -> None:
    import forge
    from test_forge import TOKEN, Reply

    storage = serve(lambda seen: Reply(body=b"release bytes"))
    home = serve(lambda seen: Reply(302, headers={"Location": f"http://localhost:{storage.port}/bucket/x?sig=1"}))
    client = forge.Client(home.api, home.host, TOKEN)
    assert client.download(f"{home.url}/attachments/0b1c") == b"release bytes"
    assert home.seen[0].headers.get("authorization") == f"token {TOKEN}"
    assert [s.path for s in storage.seen] == ["/bucket/x"]
    assert not any(k.lower() == "authorization" for k in storage.seen[0].headers)


def test_a_switch_that_fails_midway_is_rolled_back_and_leaves_nothing_behind(tmp_path, monkeypatch) -> None:
    names = ("madtea.py", "guard.py", "forge.py", "gitops.py")
    old = {tmp_path / name: f"old {name}\n".encode() for name in names}
    for path, data in old.items():
        path.write_bytes(data)
    monkeypatch.setattr(madtea, "_new_copy_failure", lambda entry, version: None)
    real_replace, moved = os.replace, []

    def flaky(src: object, dst: object) -> None:
        staged = Path(str(src)).parent.name
        if staged in ("new", "old"):
            moved.append(f"{staged} {Path(str(dst)).name}")
            if moved[-1] == "new forge.py":  # Windows: a file another process holds open
                raise PermissionError(13, "The process cannot access the file because it is being used")
        real_replace(src, dst)  # type: ignore[arg-type]
    monkeypatch.setattr(os, "replace", flaky)
    with pytest.raises(guard.Refusal) as refused:
        madtea._switch(tmp_path, {path: b"new\n" for path in old}, "0.2.0", "madtea-0.2.0.zip")
    assert refused.value.code == "USER_ACTION_REQUIRED" and "PermissionError" in refused.value.message
    # madtea.py goes first; when a rename fails, every saved file goes back, madtea.py last
    assert moved == ["new madtea.py", "new forge.py", "old guard.py", "old gitops.py", "old forge.py",
                     "old madtea.py"]
    assert {path: path.read_bytes() for path in old} == old
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names)


def test_the_update_lock_on_windows_is_a_locked_file_in_the_folder(tmp_path, monkeypatch) -> None:
    import types

    held: set[str] = set()

    def locking(fd: int, mode: int, size: int) -> None:  # msvcrt.locking: one byte, refused while held
        key = os.readlink(f"/proc/self/fd/{fd}")
        if key in held:
            raise PermissionError(13, "Permission denied")
        held.add(key)
    monkeypatch.setitem(sys.modules, "msvcrt", types.SimpleNamespace(LK_NBLCK=2, locking=locking))
    monkeypatch.setattr(sys, "platform", "win32")
    first = madtea._update_lock(str(tmp_path))
    assert first is not None and madtea._update_lock(str(tmp_path)) is None
    os.close(first)
    assert [p.name for p in tmp_path.iterdir()] == [".madtea-update.lock"]
