#!/usr/bin/env python3
"""madtea's release command, for maintainers.

    python release/release.py --dry-run [--key KEY]
    python release/release.py --key KEY

From the conventional commits since the last release tag it computes the
next version, writes that version's changelog section, builds the sdist and
wheel, the single-file zipapp ``madtea-X.Y.Z.pyz`` and the archive
``madtea-X.Y.Z.zip`` of the four modules, writes ``SHA256SUMS``, signs every
artifact with ``ssh-keygen -Y sign`` and creates the annotated tag
``vX.Y.Z`` whose message is the changelog section. Nothing is committed:
the tag is the release. ``--dry-run`` does all of it in a temporary folder
and creates no tag.
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import gzip
import hashlib
import io
import os
import py_compile
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path
from typing import Sequence

sys.dont_write_bytecode = True  # a dry run writes nothing outside its temporary folder, not even bytecode caches
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import versioning  # noqa: E402

__all__ = ["Commit", "ReleaseError", "parse_commit", "next_version", "changelog", "plan", "build", "main"]

NAMESPACE = "madtea-release"
MODULES = ("madtea.py", "guard.py", "forge.py", "gitops.py")
# Types that change what a user runs; docs, test, refactor, chore, ci, build
# and style do not, so on their own they make no release.
GROUPS = (("breaking", "Breaking changes"), ("feat", "Features"), ("fix", "Fixes"),
          ("perf", "Performance"), ("ux", "Usability"), ("revert", "Reverts"))
RELEASABLE = frozenset(kind for kind, _ in GROUPS) - {"breaking"}
_SUBJECT = re.compile(r"(?P<type>[a-z]+)(?:\((?P<scope>[^()]*)\))?(?P<bang>!)?: (?P<text>.+)")
# The zipapp's entry. zipimport unmarshals a module's bytecode twice (once to name its file), so each
# module this Python's bytecode fits is read once here instead; `madtea hook` then loads guard and
# gitops alone, as the installed command does. Another Python falls through to zipimport and the source.
_MAIN = '''"""madtea in one file: python madtea-X.Y.Z.pyz COMMAND."""
import sys


def _load(name):
    from importlib.util import MAGIC_NUMBER  # already imported: the interpreter runs a zip with runpy
    import marshal
    try:
        data = __loader__.get_data(name + ".pyc")
    except OSError:
        return
    if data[:4] != MAGIC_NUMBER or name in sys.modules:
        return
    module = type(sys)(name)
    module.__file__ = __loader__.archive + "/" + name + ".py"
    module.__loader__ = __loader__
    sys.modules[name] = module
    try:
        exec(marshal.loads(memoryview(data)[16:]), module.__dict__)
    except BaseException:
        del sys.modules[name]
        raise


_load("gitops")
_load("guard")
import guard  # noqa: E402

def _cli_table():
    _load("madtea")
    import madtea
    return madtea.cli_table()


code = guard.hook_command(sys.argv[1:], _cli_table, exit=True)
if code is None:
    _load("madtea")
    import madtea
    code = madtea.main()
sys.exit(code)
'''


class ReleaseError(Exception):
    """Why the release cannot go on, in one sentence with the way on."""


@dataclasses.dataclass(frozen=True)
class Commit:
    sha: str
    type: str          # "feat", "fix", ...; "" when the subject is not conventional
    breaking: bool
    subject: str       # the subject without its type prefix

    @property
    def releasable(self) -> bool:
        return self.breaking or self.type in RELEASABLE


def parse_commit(sha: str, subject: str, body: str = "") -> Commit:
    """One commit, read as a conventional commit (``type(scope)!: text``, ``BREAKING CHANGE:`` footer)."""
    match = _SUBJECT.fullmatch(subject.strip())
    footer = re.search(r"^BREAKING[ -]CHANGE: ", body, re.M) is not None
    if not match:
        return Commit(sha, "", footer, subject.strip())
    text = match["text"].strip()
    if match["scope"]:
        text = f"{match['scope']}: {text}"
    return Commit(sha, match["type"], bool(match["bang"]) or footer, text)


def next_version(last: tuple[int, int, int] | None, commits: Sequence[Commit]) -> tuple[int, int, int] | None:
    """The version these commits release after *last*; None when none of them is releasable.

    Within 0.x only a breaking change bumps MINOR and everything else
    releasable bumps PATCH; from 1.0 on, breaking bumps MAJOR and a feature
    MINOR. The first release of all is 0.1.0.
    """
    releasable = [c for c in commits if c.releasable]
    if not releasable:
        return None
    if last is None:
        return (0, 1, 0)
    x, y, z = last
    breaking = any(c.breaking for c in releasable)
    if x == 0:
        return (0, y + 1, 0) if breaking else (0, y, z + 1)
    if breaking:
        return (x + 1, 0, 0)
    return (x, y + 1, 0) if any(c.type == "feat" for c in releasable) else (x, y, z + 1)


def changelog(version: str, date: str, commits: Sequence[Commit]) -> str:
    """The version's changelog section in Markdown, grouped by type, newest commit first in each group."""
    lines = [f"## {version} ({date})"]
    for kind, title in GROUPS:
        picked = [c for c in commits if (c.breaking if kind == "breaking" else c.type == kind and not c.breaking)]
        if picked:
            lines += ["", f"### {title}", ""] + [f"- {c.subject} ({c.sha[:10]})" for c in picked]
    others = sum(1 for c in commits if not c.releasable)
    if others:
        kinds = sorted({c.type or "unconventional" for c in commits if not c.releasable})
        lines += ["", f"{others} other commit{'s' * (others != 1)} ({', '.join(kinds)}) change nothing a user "
                  "runs and are not listed."]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- facts from git

def _git(root: Path, *args: str, check: bool = True) -> str:
    result = versioning.git_funnel(root)(*args, cwd=root, check=False, timeout=60)
    if check and not result.ok:
        raise ReleaseError(f"git {' '.join(args)} failed in {root}: "
                           f"{result.stderr.decode('utf-8', 'replace').strip()}")
    return result.text


def _git_bytes(root: Path, *args: str) -> bytes:
    return versioning.git_funnel(root)(*args, cwd=root, timeout=120).stdout


@dataclasses.dataclass
class Plan:
    root: Path
    head: str
    branch: str | None
    default_branch: str
    dirty: bool
    last_tag: str | None
    commits: list[Commit]
    version: str | None
    date: str
    epoch: int

    @property
    def tag(self) -> str:
        return f"v{self.version}"

    def problems(self) -> list[str]:
        """What stops a real release of this tree (a dry run shows them and goes on)."""
        found = []
        if self.branch != self.default_branch:
            found.append(f"HEAD is on {self.branch or 'a detached HEAD'}, not the default branch "
                         f"{self.default_branch}: switch to {self.default_branch} first")
        if self.dirty:
            found.append("the working tree has uncommitted changes: commit or stash them first")
        return found


def plan(root: Path) -> Plan:
    """Everything the release is computed from, read from the checkout at *root*."""
    head = _git(root, "rev-parse", "HEAD")
    branch = _git(root, "symbolic-ref", "--quiet", "--short", "HEAD", check=False) or None
    origin_head = _git(root, "symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD", check=False)
    default = origin_head.split("/", 1)[1] if "/" in origin_head else "main"
    dirty = bool(_git(root, "status", "--porcelain", "--untracked-files=no"))
    # Annotated tags only (no --tags): a lightweight tag is never a release.
    last_tag = _git(root, "describe", "--match", versioning.TAG_GLOB, "--abbrev=0", "HEAD", check=False) or None
    if last_tag and versioning.parse(last_tag) is None:
        last_tag = None
    spec = f"{last_tag}..HEAD" if last_tag else "HEAD"
    raw = _git(root, "log", "--format=%H%x1f%s%x1f%b%x1e", spec)
    commits = []
    for record in raw.split("\x1e"):
        fields = record.strip("\n").split("\x1f")
        if len(fields) == 3:
            commits.append(parse_commit(*fields))
    epoch = int(_git(root, "log", "-1", "--format=%ct", "HEAD"))
    date = datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc).strftime("%Y-%m-%d")
    nxt = next_version(versioning.parse(last_tag) if last_tag else None, commits)
    version = ".".join(map(str, nxt)) if nxt else None
    return Plan(root, head, branch, default, dirty, last_tag, commits, version, date, epoch)


# --------------------------------------------------------------------------- artifacts

def _stage(p: Plan, into: Path) -> Path:
    """The committed tree at HEAD (never uncommitted files), with the version stamped into madtea.py."""
    stage = into / f"madtea-{p.version}-src"
    stage.mkdir()
    with tarfile.open(fileobj=io.BytesIO(_git_bytes(p.root, "archive", "--format=tar", "HEAD"))) as tar:
        tar.extractall(stage)  # the maintainer's own committed tree
    main = stage / "madtea.py"
    main.write_text(versioning.stamp(main.read_text(encoding="utf-8"), str(p.version)), encoding="utf-8")
    for path in stage.rglob("*"):
        os.utime(path, (p.epoch, p.epoch))  # the commit's time, so rebuilds give the same bytes
    return stage


def _zip_archive(stage: Path, target: Path, top: str, epoch: int) -> None:
    when = datetime.datetime.fromtimestamp(max(epoch, 315532800), datetime.timezone.utc).timetuple()[:6]
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in (*MODULES, "README.md"):
            info = zipfile.ZipInfo(f"{top}/{name}", date_time=when)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, (stage / name).read_bytes())


def _zipapp(stage: Path, target: Path, epoch: int) -> None:
    source = target.parent / f".{target.name}.d"
    source.mkdir()
    try:
        for name in MODULES:
            shutil.copy2(stage / name, source / name)
        (source / "__main__.py").write_text(_MAIN, encoding="utf-8")
        for name in (*MODULES, "__main__.py"):
            # zipimport cannot cache bytecode, so without it every start compiles the modules again (the hook
            # runs before every shell command). One interpreter's bytecode fits: other versions read the source.
            py_compile.compile(str(source / name), cfile=str(source / (name + "c")), dfile=name, doraise=True,
                               invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
        for path in source.iterdir():
            os.utime(path, (epoch, epoch))
        _write_zipapp(source, target, epoch)
    finally:
        shutil.rmtree(source)


def _write_zipapp(source: Path, target: Path, epoch: int) -> None:
    """As ``zipapp.create_archive(..., compressed=True)``, but the bytecode stored uncompressed: read as it
    is, it starts faster than inflated, at about twice the file's size."""
    when = datetime.datetime.fromtimestamp(max(epoch, 315532800), datetime.timezone.utc).timetuple()[:6]
    with open(target, "wb") as fh:
        fh.write(b"#!/usr/bin/env python3\n")
        with zipfile.ZipFile(fh, "w") as archive:
            for path in sorted(source.iterdir()):
                info = zipfile.ZipInfo(path.name, date_time=when)
                info.external_attr = 0o644 << 16
                info.compress_type = zipfile.ZIP_STORED if path.suffix == ".pyc" else zipfile.ZIP_DEFLATED
                archive.writestr(info, path.read_bytes())
    target.chmod(target.stat().st_mode | 0o100)  # executable by its owner, as zipapp makes it


def _python_dists(stage: Path, out: Path, version: str, epoch: int, isolated: bool) -> list[Path]:
    argv = [sys.executable, "-m", "build", "--outdir", str(out), str(stage)]
    if not isolated:
        argv[3:3] = ["--no-isolation", "--skip-dependency-check"]
    env = dict(os.environ, MADTEA_BUILD_VERSION=version, SOURCE_DATE_EPOCH=str(epoch))
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=600)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise ReleaseError("building the sdist and wheel failed (" + " / ".join(tail) + "); install the build "
                           "tool with `python -m pip install build` or pass --copies-only to skip them")
    sdists = sorted(out.glob("madtea-*.tar.gz"))
    for sdist in sdists:
        _reproducible_tar(sdist, epoch)
    return sdists + sorted(out.glob("madtea-*.whl"))


def _reproducible_tar(path: Path, epoch: int) -> None:
    """Rewrite a .tar.gz so the same commit gives the same bytes: entries sorted, each with the commit's time
    and no owner, and the commit's time in the gzip header. setuptools stamps the build's own time on the
    files it writes (PKG-INFO, setup.cfg) and on the gzip header, and the builder's user on every entry."""
    with tarfile.open(path, "r:gz") as source:
        members = sorted(source.getmembers(), key=lambda m: m.name)
        contents = {m.name: source.extractfile(m).read() for m in members if m.isfile()}  # type: ignore[union-attr]
    rebuilt = io.BytesIO()
    with tarfile.open(fileobj=rebuilt, mode="w", format=tarfile.PAX_FORMAT) as target:
        for member in members:
            member.mtime, member.uid, member.gid, member.uname, member.gname = epoch, 0, 0, "", ""
            member.mode = 0o755 if member.isdir() or member.mode & 0o100 else 0o644
            member.pax_headers = {}
            target.addfile(member, io.BytesIO(contents[member.name]) if member.isfile() else None)
    with open(path, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=epoch) as packed:
        packed.write(rebuilt.getvalue())


def sha256sums(paths: Sequence[Path]) -> str:
    """``SHA256SUMS`` in the format ``sha256sum -c`` checks."""
    return "".join(f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.name}\n" for p in sorted(paths))


def _keygen(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(["ssh-keygen", *args], input=stdin, capture_output=True, timeout=120,
                              stdin=None if stdin is not None else subprocess.DEVNULL)
    except FileNotFoundError:
        raise ReleaseError("ssh-keygen is not on PATH; install OpenSSH (8.1 or later) to sign releases") from None


def public_key(key: Path) -> str:
    """The public half of the signing key, one line of OpenSSH text."""
    pub = key.with_name(key.name + ".pub")
    if pub.is_file():
        return pub.read_text(encoding="utf-8").strip()
    proc = _keygen("-y", "-f", str(key))
    if proc.returncode != 0:
        raise ReleaseError(f"{key} is not a readable ssh private key ({proc.stderr.decode(errors='replace').strip()})")
    return proc.stdout.decode().strip()


def fingerprint(pub_line: str) -> str:
    """``SHA256:…`` of an OpenSSH public key line, as ``ssh-keygen -l`` prints it."""
    import base64
    blob = base64.b64decode(pub_line.split()[1])
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def sign(key: Path, path: Path) -> Path:
    proc = _keygen("-Y", "sign", "-f", str(key), "-n", NAMESPACE, str(path))
    if proc.returncode != 0:
        raise ReleaseError(f"ssh-keygen could not sign {path.name}: {proc.stderr.decode(errors='replace').strip()}")
    return path.with_name(path.name + ".sig")


@dataclasses.dataclass
class Built:
    out: Path
    artifacts: list[Path]
    sums: Path
    signatures: list[Path]
    notes: Path
    signer: str | None


def build(p: Plan, out: Path, key: Path | None, *, copies_only: bool = False, isolated: bool = True) -> Built:
    """Build, checksum and sign every artifact of *p* into *out* (which must be empty or new)."""
    if p.version is None:
        raise ReleaseError("nothing to release")
    out.mkdir(parents=True, exist_ok=True)
    if any(out.iterdir()):
        raise ReleaseError(f"{out} is not empty; pass an empty or new folder with --out")
    with tempfile.TemporaryDirectory(prefix="madtea-stage-") as temp:
        stage = _stage(p, Path(temp))
        version = p.version
        artifacts = [out / f"madtea-{version}.pyz", out / f"madtea-{version}.zip"]
        _zipapp(stage, artifacts[0], p.epoch)
        _zip_archive(stage, artifacts[1], f"madtea-{version}", p.epoch)
        if not copies_only:
            artifacts += _python_dists(stage, out, version, p.epoch, isolated)
    sums = out / "SHA256SUMS"
    sums.write_text(sha256sums(artifacts), encoding="utf-8")
    signer = None
    signatures: list[Path] = []
    notes_text = changelog(version, p.date, p.commits)
    if key is not None:
        pub = public_key(key)
        signer = fingerprint(pub)
        (out / f"{NAMESPACE}.pub").write_text(pub + "\n", encoding="utf-8")
        signatures = [sign(key, path) for path in (*artifacts, sums)]
        notes_text += f"\nSigned with the ssh key {signer} (namespace {NAMESPACE}).\n"
    notes = out / "CHANGELOG.md"
    notes.write_text(notes_text, encoding="utf-8")
    return Built(out, artifacts, sums, signatures, notes, signer)


# --------------------------------------------------------------------------- the command

def _report(p: Plan, built: Built | None) -> str:
    counts = {title.lower(): sum(1 for c in p.commits if (c.breaking if kind == "breaking" else
                                                          c.type == kind and not c.breaking))
              for kind, title in GROUPS}
    summary = ", ".join(f"{n} {what}" for what, n in counts.items() if n)
    since = f"after {p.last_tag}" if p.last_tag else "(the first release)"
    lines = [f"Release {p.tag} {since}: {len(p.commits)} commits ({summary}).", ""]
    if built is None:
        return "\n".join(lines)
    lines += [built.notes.read_text(encoding="utf-8"), f"Artifacts in {built.out}:"]
    width = max(len(a.name) for a in built.artifacts)
    for path in built.artifacts:
        lines.append(f"  {path.name:<{width}}  {path.stat().st_size:>9,} bytes")
    lines.append(f"  {built.sums.name:<{width}}  {len(built.artifacts)} checksums")
    if built.signer:
        lines.append(f"Signed {len(built.signatures)} files with {built.signer} (namespace {NAMESPACE}); "
                     f"publish {NAMESPACE}.pub and this fingerprint so users can check what they pin.")
    else:
        lines.append("Not signed: no --key was given.")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="release/release.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--dry-run", action="store_true",
                        help="Build and sign in a temporary folder, show everything, create no tag.")
    parser.add_argument("--key", type=Path, help="The ssh private key that signs the release (ssh-keygen -Y sign).")
    parser.add_argument("--repo", type=Path, default=HERE.parent, help="The checkout to release (default: this one).")
    parser.add_argument("--out", type=Path, help="Where the artifacts go (default: dist/X.Y.Z; a temporary "
                        "folder with --dry-run).")
    parser.add_argument("--copies-only", action="store_true",
                        help="Build only the zipapp and the archive, not the sdist and wheel.")
    parser.add_argument("--no-isolation", action="store_true",
                        help="Build the sdist and wheel with this Python's setuptools (no download).")
    ns = parser.parse_args(argv)
    try:
        return _release(ns)
    except ReleaseError as exc:
        print(f"release: {exc}.", file=sys.stderr)
        return 1


def _release(ns: argparse.Namespace) -> int:
    root = Path(_git(ns.repo.resolve(), "rev-parse", "--show-toplevel"))
    p = plan(root)
    if p.version is None:
        since = f"since {p.last_tag}" if p.last_tag else "in this repository"
        print(f"Nothing to release: none of the {len(p.commits)} commits {since} is a feat, fix, perf, ux, revert "
              "or breaking change.")
        return 0
    problems = p.problems()
    if not ns.dry_run:
        if problems:
            raise ReleaseError(problems[0])
        if ns.key is None:
            raise ReleaseError("a release is signed: pass the signing key with --key")
        if _git(root, "rev-parse", "--quiet", "--verify", f"refs/tags/{p.tag}", check=False):
            raise ReleaseError(f"the tag {p.tag} already exists; delete it or release from a later commit")
    out = ns.out or (Path(tempfile.mkdtemp(prefix=f"madtea-release-{p.version}-")) if ns.dry_run
                     else root / "dist" / str(p.version))
    built = build(p, out, ns.key, copies_only=ns.copies_only, isolated=not ns.no_isolation)
    print(_report(p, built))
    if ns.dry_run:
        for problem in problems:
            print(f"A real release would stop here: {problem}.")
        print(f"Dry run: no tag was created and nothing outside {out} was written; "
              f"a real run tags {p.head[:12]} as {p.tag} (annotated, with the changelog above).")
        return 0
    _git(root, "tag", "-a", "--cleanup=verbatim", p.tag, "-F", str(built.notes), p.head)
    files = " ".join(shlex.quote(str(f)) for f in sorted(out.iterdir()) if f.name != built.notes.name)
    print(f"Tagged {p.head[:12]} as {p.tag}. Publish it:\n"
          f"  git push origin {p.tag}\n"
          f"  madtea release create {p.tag} --title 'madtea {p.version}' "
          f"--notes \"$(cat {shlex.quote(str(built.notes))})\"\n"
          f"  madtea release upload {p.tag} {files}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
