"""madtea's own small files (tokens, logins, the release key's pin, an update's journal, the hook's record of the
agent's shell): written whole and private from their creation, synced when they must survive a crash, and read
capped, never through a symlink, never when another user could have written or read them."""
from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import forge
import gitops
import guard
from test_credentials import notes  # noqa: F401  (a fixture)

TOKEN = "c0ffee0ddba11f00d5eedcafe0123456789abcde"
HOST = "git.example.test"


def _recording(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The syncs and renames a write makes, in order."""
    calls: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        calls.append("folder fsync" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file fsync")
        real_fsync(fd)

    def replace(src: object, dst: object) -> None:
        calls.append("rename")
        real_replace(src, dst)  # type: ignore[arg-type]
    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    return calls


@pytest.mark.parametrize("platform, durable, expected", [
    ("linux", True, ["file fsync", "rename", "folder fsync"]),
    ("darwin", True, ["F_FULLFSYNC", "rename", "folder fsync"]),  # fsync leaves data in the drive's cache
    ("win32", True, ["file fsync", "rename"]),                     # no folder handle to sync there
    ("linux", False, ["rename"]),                                  # a cache: whole, but not synced
])
def test_a_private_file_is_synced_before_its_rename_and_its_folder_after(tmp_path, monkeypatch, platform, durable,
                                                                         expected) -> None:
    import fcntl

    calls = _recording(monkeypatch)
    monkeypatch.setattr(fcntl, "fcntl", lambda fd, op, *a: calls.append("F_FULLFSYNC") or 0, raising=True)
    monkeypatch.setattr(sys, "platform", platform)
    path = tmp_path / "made" / "hosts.json"
    gitops.write_private(path, b'{"hosts": {}}\n', durable=durable)
    assert calls == expected
    assert path.read_bytes() == b'{"hosts": {}}\n' and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700 and os.listdir(path.parent) == ["hosts.json"]


def test_a_token_file_is_never_seen_half_written_or_readable_by_others(notes) -> None:
    forge.FileStore().set(HOST, TOKEN)
    path = forge.hosts_path()
    seen: list[tuple[int, bytes]] = []
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            for name in os.listdir(path.parent):  # the file and any temporary one beside it
                try:
                    fd = os.open(path.parent / name, os.O_RDONLY)
                except FileNotFoundError:
                    continue
                with os.fdopen(fd, "rb") as handle:
                    seen.append((stat.S_IMODE(os.fstat(fd).st_mode), handle.read() if name == path.name else b""))
    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        for n in range(200):
            forge.FileStore().set(HOST, TOKEN + "x" * (n % 7 * 500))  # each value a different length
    finally:
        done.set()
        watcher.join()
    assert seen and {mode for mode, _ in seen} == {0o600}
    for _, data in seen:
        if data:
            token = json.loads(data)["hosts"][HOST]["token"]
            assert token.startswith(TOKEN) and set(token[len(TOKEN):]) <= {"x"}


# A child that stores a token and SIGKILLs itself when it reaches the rename: a crash between write and rename.
_CRASH = r'''
import os, signal, sys
sys.path.insert(0, sys.argv[1])
import forge
os.replace = lambda src, dst: os.kill(os.getpid(), signal.SIGKILL)
forge.FileStore().set("git.example.test", "new-token")
'''


def test_a_crash_between_write_and_rename_leaves_the_old_token_file(notes) -> None:
    forge.FileStore().set(HOST, TOKEN)
    before = forge.hosts_path().read_bytes()
    crashed = subprocess.run([sys.executable, "-c", _CRASH, str(Path(forge.__file__).parent)], capture_output=True,
                             text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    assert forge.hosts_path().read_bytes() == before and forge.token_for(HOST) == (TOKEN, "file")
    left = [p for p in forge.hosts_path().parent.iterdir() if p.name.endswith(".tmp")]
    assert len(left) == 1 and stat.S_IMODE(left[0].stat().st_mode) == 0o600  # the new copy, private too


def test_a_write_that_fails_leaves_the_old_file_and_no_temporary_one(tmp_path, monkeypatch) -> None:
    path = tmp_path / "logins.json"
    gitops.write_private(path, b"old\n")

    def full(fd: int, data: object) -> int:
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(os, "write", full)
    with pytest.raises(OSError):
        gitops.write_private(path, b"new\n")
    assert path.read_bytes() == b"old\n" and os.listdir(tmp_path) == ["logins.json"]


# --------------------------------------------------------------------------- the reader

@pytest.mark.parametrize("case, says", [
    ("group-readable", "can be read by other users (mode 0640)"),
    ("another owner", "belongs to another user"),
    ("a symlink", "Too many levels of symbolic links"),  # O_NOFOLLOW
    ("a fifo", "is not a regular file"),
    ("too large", "is larger than 64 bytes"),
])
def test_the_reader_refuses_what_is_not_a_private_file(tmp_path, monkeypatch, case, says) -> None:
    path = tmp_path / "hosts.json"
    if case == "a symlink":
        (tmp_path / "planted").write_bytes(b"{}")
        (tmp_path / "planted").chmod(0o600)
        path.symlink_to(tmp_path / "planted")
    elif case == "a fifo":
        os.mkfifo(path, 0o600)  # opened for reading, a fifo would wait for a writer that never comes
    else:
        gitops.write_private(path, b"{}" + b" " * (100 if case == "too large" else 0))
    if case == "group-readable":
        path.chmod(0o640)
    if case == "another owner":
        real = os.getuid()
        monkeypatch.setattr(os, "getuid", lambda: real + 1)
    with pytest.raises(OSError) as caught:
        gitops.read_private(path, 64)
    assert says in str(caught.value)
    assert gitops.read_private(tmp_path / "none.json", 64) is None


def test_a_fifo_in_the_token_files_place_is_refused_at_once(notes) -> None:
    forge.hosts_path().parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(forge.hosts_path(), 0o600)
    assert forge.token_for(HOST) == (None, "none")
    assert any("is not a regular file" in n for n in notes)


def test_the_hooks_record_is_private_and_read_only_while_it_stays_so(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(os.path, "isdir", lambda p, _real=os.path.isdir: True if p == "/proc/self" else _real(p))
    monkeypatch.setattr(guard, "_ancestors", lambda _pid: [(4242, 777, "claude")])
    guard.record_caller_signal(str(tmp_path))
    record = Path(guard.runtime_dir(create=False) or "") / "4242-777.json"
    assert stat.S_IMODE(record.stat().st_mode) == 0o600
    data = json.loads(record.read_bytes())
    assert data["cwd"] == str(tmp_path)
    record.chmod(0o644)  # widened by someone: no longer this user's alone, so not trusted
    assert guard._read_record(str(record)) is None
    record.chmod(0o600)
    assert guard._read_record(str(record)) == data
