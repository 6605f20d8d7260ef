"""A person's command that meets a full disk or a read-only home says so in one clear line and changes nothing.

The disk is real: a tiny tmpfs mounted as the home folder in a private mount namespace (``unshare``), filled
to the last byte, or remounted read-only, after an earlier login was copied in. What is asserted is what the
person sees (the file, the system's words, the remedy; never a traceback) and that the earlier login's files
are byte for byte as they were.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fakeforge import DEFAULT_TOKEN, FakeForge

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = r'''
set -e
mount -t tmpfs -o size=256k tmpfs "$HOME"
cp -a "$PRIOR/." "$HOME/"
find "$HOME/.config" -type f -exec sha256sum {} + | sort > "$OUT/before"
if [ "$CASE" = full ]; then dd if=/dev/zero of="$HOME/filler" bs=4k 2>/dev/null || true; fi
if [ "$CASE" = read-only ]; then mount -o remount,ro "$HOME"; fi
set +e
printf %s "$TOKEN" | "$PYTHON" -m madtea auth $VERB --hostname "$URL" $FLAGS > "$OUT/stdout" 2> "$OUT/stderr"
echo $? > "$OUT/rc"
find "$HOME/.config" -type f -exec sha256sum {} + | sort > "$OUT/after"
'''


def _can_mount() -> bool:
    if not shutil.which("unshare"):
        return False
    return subprocess.run(["unshare", "-rm", "true"], capture_output=True).returncode == 0


pytestmark = pytest.mark.skipif(not _can_mount(), reason="needs unshare to mount a private tmpfs")


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MADTEA_TOKEN", "XDG_CONFIG_HOME"))}
    return {**env, "HOME": str(home), "PYTHONPATH": str(ROOT), "MADTEA_CREDENTIAL_STORES": "file", **extra}


def _run(fake_forge: FakeForge, tmp_path: Path, case: str, verb: str) -> tuple[Path, Path]:
    """An earlier login (bob's) in a home that is then full or read-only, and ``madtea auth <verb>`` run there."""
    prior, home, out = tmp_path / "prior", tmp_path / "home", tmp_path / "out"
    for folder in (prior, home, out):
        folder.mkdir()
    first = subprocess.run([sys.executable, "-m", "madtea", "auth", "login", "--hostname", fake_forge.url,
                            "--with-token", "--insecure-storage"], input="bob-token", text=True,
                           capture_output=True, env=_env(prior), cwd=tmp_path, timeout=60)
    assert first.returncode == 0, first.stderr
    flags = "--with-token --insecure-storage" if verb == "login" else ""
    run = subprocess.run(["unshare", "-rm", "sh", "-c", SCRIPT], capture_output=True, text=True, timeout=120,
                         cwd=tmp_path, env=_env(home, PRIOR=str(prior), OUT=str(out), CASE=case, VERB=verb,
                                                FLAGS=flags, TOKEN=DEFAULT_TOKEN, URL=fake_forge.url,
                                                PYTHON=sys.executable))
    assert run.returncode == 0, run.stderr
    return home, out


def _unchanged(out: Path) -> None:
    before, after = (out / "before").read_text(), (out / "after").read_text()
    assert before == after and "hosts.json" in before and "logins.json" in before


@pytest.mark.parametrize("case, says", [("full", "No space left on device (ENOSPC)"),
                                        ("read-only", "Read-only file system (EROFS)")])
def test_a_login_on_a_full_or_read_only_home_says_so_and_keeps_the_earlier_login(
        fake_forge: FakeForge, tmp_path: Path, case: str, says: str) -> None:
    home, out = _run(fake_forge, tmp_path, case, "login")
    stderr = (out / "stderr").read_text()
    assert (out / "rc").read_text().strip() == "1", stderr
    assert "Traceback" not in stderr
    assert f"Could not write {home}/.config/madtea/hosts.json: {says}." in stderr, stderr
    assert "Nothing was changed: earlier logins are as they were." in stderr
    assert ("Free space on the disk that holds" if case == "full" else "is on a read-only file system") in stderr
    _unchanged(out)


def test_a_logout_on_a_read_only_home_says_so_and_changes_nothing(fake_forge: FakeForge, tmp_path: Path) -> None:
    home, out = _run(fake_forge, tmp_path, "read-only", "logout")
    stderr = (out / "stderr").read_text()
    assert (out / "rc").read_text().strip() == "1", stderr
    assert "Traceback" not in stderr
    assert f"Could not write {home}/.config/madtea/logins.json: Read-only file system (EROFS). Nothing was " \
           f"changed." in stderr, stderr
    _unchanged(out)


COMMIT = r'''
set -e
mount -t tmpfs -o size=400k tmpfs "$DISK"
git init -q -b main "$DISK/app"
cd "$DISK/app"
git -c user.name=a -c user.email=a@example.com commit -q --allow-empty -m initial
git switch -q -c feat
head -c 60000 /dev/urandom > big.bin
avail=$(stat -f -c '%a %S' "$DISK" | awk '{print $1 * $2}')
head -c $((avail - LEFT)) /dev/zero > "$DISK/filler"
"$PYTHON" -c '
import json, sys
from pathlib import Path
import madtea
r = madtea.run("madt_commit", {"title": "Add big", "files": ["big.bin"]}, madtea.Context("mcp", Path.cwd()))
print(json.dumps({"text": r.text, "error": r.error}))
' > "$OUT/result"
git status --porcelain > "$OUT/status"
'''


@pytest.mark.parametrize("left", [0, 72 * 1024])
def test_a_commit_on_a_full_disk_names_the_disk_and_what_is_staged(tmp_path: Path, left: int) -> None:
    """Full from the start (nothing staged), or room for git add's object but not the commit's index."""
    import json
    disk, out = tmp_path / "disk", tmp_path / "out"
    disk.mkdir()
    out.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MADTEA_")}
    run = subprocess.run(["unshare", "-rm", "sh", "-c", COMMIT], capture_output=True, text=True, timeout=120,
                         cwd=tmp_path, env={**env, "PYTHONPATH": str(ROOT), "DISK": str(disk), "OUT": str(out),
                                            "LEFT": str(left), "PYTHON": sys.executable,
                                            "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@example.com",
                                            "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@example.com"})
    assert run.returncode == 0, run.stderr
    result = json.loads((out / "result").read_text())
    assert result["error"] and result["error"]["code"] == "USER_ACTION_REQUIRED", result["text"]
    text = result["text"]
    assert f"No space left on device (ENOSPC), on the disk that holds {disk}/app/.git." in text, text
    assert "changed nothing after it" not in text and "Only a person" not in text
    assert f"Free space on the disk that holds {disk}/app/.git" in result["error"]["user_action"]
    staged = (out / "status").read_text()
    if left:  # git add's object fitted; the commit did not
        assert staged.startswith("A  big.bin") and "big.bin is staged (git add ran); nothing was committed." in text
    else:
        assert staged.startswith("?? big.bin") and "Nothing was staged or committed." in text, text


SWITCH = r'''
set -e
mount -t tmpfs -o size=400k tmpfs "$DISK"
git init -q -b main "$DISK/app"
cd "$DISK/app"
git commit -q --allow-empty -m initial
git switch -q -c other
head -c 60000 /dev/urandom > big.bin
git add big.bin
git commit -q -m big
git switch -q main
avail=$(stat -f -c '%a %S' "$DISK" | awk '{print $1 * $2}')
head -c "$avail" /dev/zero > "$DISK/filler"
"$PYTHON" -c '
import json
from pathlib import Path
import madtea
r = madtea.run("madt_switch", {"branch": "other"}, madtea.Context("mcp", Path.cwd()))
print(json.dumps({"text": r.text, "error": r.error}))
' > "$OUT/result"
'''


def test_a_switch_on_a_full_disk_names_the_disk_and_git_s_own_words(tmp_path: Path) -> None:
    import json
    disk, out = tmp_path / "disk", tmp_path / "out"
    disk.mkdir()
    out.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MADTEA_")}
    run = subprocess.run(["unshare", "-rm", "sh", "-c", SWITCH], capture_output=True, text=True, timeout=120,
                         cwd=tmp_path, env={**env, "PYTHONPATH": str(ROOT), "DISK": str(disk), "OUT": str(out),
                                            "PYTHON": sys.executable,
                                            "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@example.com",
                                            "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@example.com"})
    assert run.returncode == 0, run.stderr
    result = json.loads((out / "result").read_text())
    assert result["error"] and result["error"]["code"] == "USER_ACTION_REQUIRED", result["text"]
    assert f"No space left on device (ENOSPC), on the disk that holds {disk}/app/.git." in result["text"]
    assert "git switch stopped part way" in result["text"] and "staged" not in result["text"]
