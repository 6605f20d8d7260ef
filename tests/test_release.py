"""The maintainer's release command: versions from tags and commits, the changelog, signed artifacts."""
from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from release_env import ROOT, change, dry_run, keypair, release_tool, source_repo, tag
from topologies import run_git

sys.path.insert(0, str(ROOT / "release"))
import versioning

pytestmark = pytest.mark.slow  # builds: not in the fast lane

rel = release_tool()


@pytest.mark.parametrize("subject, body, kind, breaking, text", [
    ("feat: a thing", "", "feat", False, "a thing"),
    ("fix(forge): a bug", "", "fix", False, "forge: a bug"),
    ("feat!: renamed", "", "feat", True, "renamed"),
    ("refactor(guard)!: moved", "", "refactor", True, "guard: moved"),
    ("fix: quiet", "details\n\nBREAKING CHANGE: the flag is gone", "fix", True, "quiet"),
    ("Merge branch 'x'", "", "", False, "Merge branch 'x'"),
    ("docs: readme", "", "docs", False, "readme"),
])
def test_conventional_subjects_are_read(subject: str, body: str, kind: str, breaking: bool, text: str) -> None:
    commit = rel.parse_commit("a" * 40, subject, body)
    assert (commit.type, commit.breaking, commit.subject) == (kind, breaking, text)


@pytest.mark.parametrize("last, subjects, expected", [
    ((0, 3, 4), ["fix: a"], (0, 3, 5)),
    ((0, 3, 4), ["feat: a", "fix: b"], (0, 3, 5)),       # within 0.x a feature is a PATCH
    ((0, 3, 4), ["perf: a"], (0, 3, 5)),
    ((0, 3, 4), ["feat!: a", "fix: b"], (0, 4, 0)),      # only a breaking change bumps MINOR
    ((0, 3, 4), ["docs: a", "test: b", "refactor: c"], None),
    ((0, 3, 4), [], None),
    (None, ["fix: a"], (0, 1, 0)),
    (None, ["docs: a"], None),
    ((1, 2, 3), ["fix: a"], (1, 2, 4)),
    ((1, 2, 3), ["feat: a"], (1, 3, 0)),
    ((1, 2, 3), ["chore!: a"], (2, 0, 0)),
])
def test_next_version(last, subjects, expected) -> None:
    commits = [rel.parse_commit(f"{i:040d}", s) for i, s in enumerate(subjects)]
    assert rel.next_version(last, commits) == expected


def test_changelog_groups_by_type_and_counts_what_it_leaves_out() -> None:
    commits = [rel.parse_commit("1" * 40, "feat!: the new surface"), rel.parse_commit("2" * 40, "fix: a crash"),
               rel.parse_commit("3" * 40, "feat(cli): a verb"), rel.parse_commit("4" * 40, "docs: words"),
               rel.parse_commit("5" * 40, "test: more")]
    text = rel.changelog("0.4.0", "2026-01-01", commits)
    assert text.startswith("## 0.4.0 (2026-01-01)\n")
    breaking, rest = text.split("### Breaking changes", 1)[1].split("### Features", 1)
    assert "- the new surface (1111111111)" in breaking and "crash" not in breaking
    features, fixes = rest.split("### Fixes", 1)
    assert "- cli: a verb (3333333333)" in features and "the new surface" not in features
    assert "- a crash (2222222222)" in fixes
    assert "2 other commits (docs, test) change nothing a user runs and are not listed." in text


def test_versions_come_from_annotated_tags_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MADTEA_BUILD_VERSION", raising=False)
    plain = tmp_path / "plain"
    plain.mkdir()
    assert versioning.describe(plain) == "0.0.0+unknown"
    repo = source_repo(tmp_path / "src")
    sha = run_git(repo, "rev-parse", "--short=12", "HEAD")
    assert versioning.describe(repo) == f"0.0.0.dev1+g{sha}"
    run_git(repo, "tag", "v9.9.9")  # lightweight: not a release
    assert versioning.describe(repo) == f"0.0.0.dev1+g{sha}"
    tag(repo, "v0.2.0")
    assert versioning.describe(repo) == "0.2.0"
    change(repo, "fix: one")
    sha = run_git(repo, "rev-parse", "--short=12", "HEAD")
    assert versioning.describe(repo) == f"0.2.1.dev1+g{sha}"
    (repo / "madtea.py").write_text("# edited\n", encoding="utf-8")
    assert versioning.describe(repo) == f"0.2.1.dev1+g{sha}.dirty"
    (repo / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: madtea\nVersion: 0.5.1\n", encoding="utf-8")
    assert versioning.describe(repo) == "0.5.1"
    monkeypatch.setenv("MADTEA_BUILD_VERSION", "1.0.0")
    assert versioning.describe(repo) == "1.0.0"


def test_the_source_reports_unknown_and_a_stamp_replaces_exactly_its_version() -> None:
    source = (ROOT / "madtea.py").read_text(encoding="utf-8")
    assert versioning.version_of(source) == "0.0.0+unknown"
    stamped = versioning.stamp(source, "0.3.1")
    assert versioning.version_of(stamped) == "0.3.1"
    assert len(stamped) == len(source) - len("0.0.0+unknown") + len("0.3.1")
    with pytest.raises(ValueError):
        versioning.stamp(source + '\n__version__ = "1"\n', "0.3.1")
    with pytest.raises(ValueError):
        versioning.stamp(source, '1"; import os; "')


def test_dry_run_builds_signs_and_shows_everything_but_tags_nothing(tmp_path: Path) -> None:
    repo = source_repo(tmp_path / "src")
    tag(repo, "v0.1.0")
    change(repo, "feat: updates verify their signature")
    change(repo, "fix!: the old flag is gone")
    change(repo, "docs: explain it")
    key = keypair(tmp_path / "key")
    refs_before = run_git(repo, "for-each-ref")
    status_before = run_git(repo, "status", "--porcelain", "--ignored")
    out = tmp_path / "out"
    proc = dry_run(repo, out, key)
    assert proc.returncode == 0, proc.stderr
    assert "Release v0.2.0 after v0.1.0: 3 commits" in proc.stdout
    assert "### Breaking changes\n\n- the old flag is gone" in proc.stdout
    assert "### Features\n\n- updates verify their signature" in proc.stdout
    assert "1 other commit (docs)" in proc.stdout
    assert "Dry run: no tag was created" in proc.stdout
    assert run_git(repo, "for-each-ref") == refs_before
    assert run_git(repo, "status", "--porcelain", "--ignored") == status_before
    names = sorted(p.name for p in out.iterdir())
    assert names == ["CHANGELOG.md", "SHA256SUMS", "SHA256SUMS.sig", "madtea-0.2.0.pyz", "madtea-0.2.0.pyz.sig",
                     "madtea-0.2.0.zip", "madtea-0.2.0.zip.sig", "madtea-release.pub"]
    sums = (out / "SHA256SUMS").read_text(encoding="utf-8")
    assert subprocess.run(["sha256sum", "-c", "SHA256SUMS"], cwd=out, capture_output=True).returncode == 0, sums
    signers = tmp_path / "allowed"
    signers.write_text("madtea " + (out / "madtea-release.pub").read_text(encoding="utf-8"), encoding="utf-8")
    for name in ("madtea-0.2.0.pyz", "madtea-0.2.0.zip", "SHA256SUMS"):
        with open(out / name, "rb") as data:
            verified = subprocess.run(["ssh-keygen", "-Y", "verify", "-f", str(signers), "-I", "madtea",
                                       "-n", "madtea-release", "-s", str(out / f"{name}.sig")], stdin=data,
                                      capture_output=True, timeout=60)
        assert verified.returncode == 0, verified.stderr
    with zipfile.ZipFile(out / "madtea-0.2.0.zip") as archive:
        assert sorted(archive.namelist()) == [f"madtea-0.2.0/{n}" for n in
                                              ("README.md", "forge.py", "gitops.py", "guard.py", "madtea.py")]
        assert versioning.version_of(archive.read("madtea-0.2.0/madtea.py").decode()) == "0.2.0"


def test_the_zipapp_runs_help_version_and_hook_on_python_alone(tmp_path: Path) -> None:
    repo = source_repo(tmp_path / "src")
    out = tmp_path / "out"
    assert dry_run(repo, out, None).returncode == 0
    pyz = out / "madtea-0.1.0.pyz"
    with zipfile.ZipFile(pyz) as z:  # bytecode inside: zipimport cannot cache it, and the hook starts often
        assert {"__main__.py", "madtea.py", "madtea.pyc", "guard.pyc", "forge.pyc", "gitops.pyc"} <= set(z.namelist())
    bare = [sys.executable, "-S", "-I", str(pyz)]
    run = dict(capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert subprocess.run([*bare, "--version"], stdin=subprocess.DEVNULL, **run).stdout == "madtea 0.1.0\n"
    helped = subprocess.run([*bare, "--help"], stdin=subprocess.DEVNULL, **run)
    assert helped.returncode == 0 and "update" in helped.stdout
    event = ('{"hook_event_name": "PreToolUse", "tool_name": "Bash", "cwd": "%s", '
             '"tool_input": {"command": "git reset --hard"}}' % tmp_path)
    hooked = subprocess.run([*bare, "hook"], input=event, **run)
    assert hooked.returncode == 2 and "ask the user" in hooked.stderr
    allowed = subprocess.run([*bare, "hook"], input=event.replace("git reset --hard", "ls"), **run)
    assert allowed.returncode == 0 and allowed.stderr == ""
    steered = subprocess.run([*bare, "hook"], input=event.replace("git reset --hard", "madtea issue list"), **run)
    assert steered.returncode == 2 and "Use: madt_issues action=list" in steered.stderr
    assert not list((Path.home() / ".cache" / "madtea").glob("*/cli-table-*"))  # its modules are no files to key on
    # the hook reads guard and gitops from their bytecode alone: no madtea, nothing the start-up does not load
    traced = subprocess.run([*bare[:-1], "-X", "importtime", str(pyz), "hook"], input=event, **run)
    imported = {line.rsplit("|", 1)[1].strip() for line in traced.stderr.splitlines() if line.startswith("import time")}
    assert traced.returncode == 2 and "runpy" in imported
    assert not imported & {"madtea", "guard", "gitops", "forge", "re", "json", "enum", "zlib", "argparse"}, imported


def test_a_zipapp_run_by_another_python_reads_its_sources(tmp_path: Path) -> None:
    """Bytecode of another interpreter version is passed over for the modules' source, on every path."""
    repo = source_repo(tmp_path / "src")
    out = tmp_path / "out"
    assert dry_run(repo, out, None).returncode == 0
    pyz, other = out / "madtea-0.1.0.pyz", tmp_path / "other.pyz"
    with zipfile.ZipFile(pyz) as source, zipfile.ZipFile(other, "w") as copy:
        for info in source.infolist():
            data = source.read(info)
            copy.writestr(info, b"\0\0\r\n" + data[4:] if info.filename.endswith(".pyc") else data)
    run = dict(capture_output=True, text=True, timeout=120, cwd=tmp_path)
    bare = [sys.executable, "-S", "-I", str(other)]
    assert subprocess.run([*bare, "--version"], stdin=subprocess.DEVNULL, **run).stdout == "madtea 0.1.0\n"
    event = ('{"hook_event_name": "PreToolUse", "tool_name": "Bash", "cwd": "%s", '
             '"tool_input": {"command": "git reset --hard"}}' % tmp_path)
    hooked = subprocess.run([*bare, "hook"], input=event, **run)
    assert hooked.returncode == 2 and "ask the user" in hooked.stderr


def test_two_builds_of_one_commit_give_the_same_files(tmp_path: Path) -> None:
    repo = source_repo(tmp_path / "src")
    assert dry_run(repo, tmp_path / "one", None).returncode == 0
    assert dry_run(repo, tmp_path / "two", None).returncode == 0
    assert (tmp_path / "one" / "SHA256SUMS").read_text() == (tmp_path / "two" / "SHA256SUMS").read_text()


def test_nothing_releasable_is_said_plainly(tmp_path: Path) -> None:
    repo = source_repo(tmp_path / "src")
    tag(repo, "v0.3.0")
    change(repo, "docs: a typo")
    change(repo, "test: a case")
    proc = dry_run(repo, tmp_path / "out", None)
    assert proc.returncode == 0
    assert proc.stdout.startswith("Nothing to release: none of the 2 commits since v0.3.0 is a feat, fix")
    assert not (tmp_path / "out").exists()


def test_a_real_release_tags_the_changelog_and_refuses_an_unready_tree(tmp_path: Path) -> None:
    repo = source_repo(tmp_path / "src")
    tag(repo, "v0.1.0")
    change(repo, "perf: faster hook")
    key = keypair(tmp_path / "key")
    tool = [sys.executable, str(repo / "release" / "release.py"), "--repo", str(repo), "--copies-only"]
    run = dict(capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    unsigned = subprocess.run(tool, **run)
    assert unsigned.returncode == 1 and "pass the signing key with --key" in unsigned.stderr
    (repo / "NOTES.md").write_text("uncommitted\n", encoding="utf-8")
    dirty = subprocess.run([*tool, "--key", str(key)], **run)
    assert dirty.returncode == 1 and "uncommitted changes" in dirty.stderr
    run_git(repo, "checkout", "-q", "--", "NOTES.md")
    run_git(repo, "switch", "-q", "-c", "topic")
    off = subprocess.run([*tool, "--key", str(key)], **run)
    assert off.returncode == 1 and "not the default branch main" in off.stderr
    run_git(repo, "switch", "-q", "main")
    assert run_git(repo, "tag", "-l") == "v0.1.0"
    done = subprocess.run([*tool, "--key", str(key)], **run)
    assert done.returncode == 0, done.stderr
    assert "Tagged" in done.stdout and "git push origin v0.1.1" in done.stdout
    dist = repo / "dist" / "0.1.1"
    assert f"madtea release create v0.1.1 --title 'madtea 0.1.1' --notes \"$(cat {dist / 'CHANGELOG.md'})\"" \
        in done.stdout
    assert (f"madtea release upload v0.1.1 {dist / 'SHA256SUMS'} {dist / 'SHA256SUMS.sig'} {dist / 'madtea-0.1.1.pyz'} "
            f"{dist / 'madtea-0.1.1.pyz.sig'} {dist / 'madtea-0.1.1.zip'} {dist / 'madtea-0.1.1.zip.sig'} "
            f"{dist / 'madtea-release.pub'}") in done.stdout
    assert run_git(repo, "cat-file", "-t", "v0.1.1") == "tag"
    message = run_git(repo, "tag", "-l", "--format=%(contents)", "v0.1.1")
    assert "### Performance\n\n- faster hook" in message
    assert (repo / "dist" / "0.1.1" / "madtea-0.1.1.pyz.sig").is_file()
    assert run_git(repo, "log", "-1", "--format=%s") == "perf: faster hook"  # no release commit
    again = subprocess.run([*tool, "--key", str(key)], **run)
    assert again.returncode == 0 and again.stdout.startswith("Nothing to release")


def test_sdist_and_wheel_report_the_tagged_version(tmp_path: Path) -> None:
    """The one sdist + wheel build in the suite (no isolation: the test venv's setuptools, no download)."""
    for needed in ("build", "wheel", "setuptools"):  # a venv of Python 3.12+ has no setuptools of its own
        pytest.importorskip(needed)
    repo = source_repo(tmp_path / "src")
    tag(repo, "v0.1.0")
    change(repo, "fix: a bug")
    out = tmp_path / "out"
    proc = dry_run(repo, out, None, "--no-isolation")
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert (out / "madtea-0.1.1.tar.gz").is_file()
    wheel = out / "madtea-0.1.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as archive:
        assert versioning.version_of(archive.read("madtea.py").decode()) == "0.1.1"
        assert "madtea-0.1.1.dist-info/RECORD" in archive.namelist()
        # the command is madtea's own launcher, its first line for pip to point at the install's Python
        launcher = archive.read("madtea-0.1.1.data/scripts/madtea").decode()
        assert launcher.startswith("#!python\n") and "guard.hook_command" in launcher
        assert "madtea-0.1.1.dist-info/entry_points.txt" not in archive.namelist()
    assert "madtea-0.1.1.tar.gz" in (out / "SHA256SUMS").read_text(encoding="utf-8")
    # the sdist is reproducible: the commit's time on every entry and in the gzip header, whenever it is built
    import gzip
    import tarfile
    import time

    epoch = int(run_git(repo, "log", "-1", "--format=%ct"))
    sdist = (out / "madtea-0.1.1.tar.gz").read_bytes()
    assert int.from_bytes(sdist[4:8], "little") == epoch
    with tarfile.open(out / "madtea-0.1.1.tar.gz") as archive:
        assert {m.mtime for m in archive.getmembers()} == {epoch} and {m.uname for m in archive.getmembers()} == {""}
        assert "madtea-0.1.1/PKG-INFO" in archive.getnames()
    time.sleep(1.1)  # a second later, as a rebuild from the tag would be
    again = dry_run(repo, tmp_path / "again", None, "--no-isolation")
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "again" / "madtea-0.1.1.tar.gz").read_bytes() == sdist
    assert gzip.decompress(sdist)  # still a valid archive
