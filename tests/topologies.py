"""Sandbox repository topologies, built with real git, for every test to compose.

Plain builder functions (``make_repo``, ``make_worktree``, ``make_mid_operation``
...) make one thing at a path; the fixtures below combine them into the
topologies the design names and return small dataclasses of named paths.
``snapshot`` and ``assert_only_changed`` prove that a call touched no repo
other than the one it was meant to.

Builders run git through ``subprocess`` directly, not through ``gitops``: a
fixture must not depend on the code it is used to test. Every fixture asks for
``hermetic_seal`` so that its repos are built with the sealed identity, dates
and config, whatever order pytest would otherwise pick. Origins point at the
fake host ``forge.example.test``; nothing here ever contacts it.
"""
from __future__ import annotations

__all__ = [
    "HOST",
    "OPERATIONS",
    "SHADOW_MODULES",
    "https_origin",
    "run_git",
    "git_bytes",
    "local_branches",
    "write_files",
    "commit_files",
    "make_repo",
    "make_bare",
    "make_pushed_repo",
    "make_worktree",
    "make_dirty",
    "make_mid_operation",
    "make_shadowing_repo",
    "make_clone",
    "make_separate_git_dir",
    "make_submodule",
    "make_core_worktree",
    "make_bare_clone",
    "make_unfetched_default",
    "RepoState",
    "snapshot",
    "assert_only_changed",
    "SingleRepo",
    "Umbrella",
    "FlatSiblings",
    "LinkedWorktree",
    "ForeignRepo",
    "DirtyTrees",
    "MidOperations",
    "SymlinkedRepo",
    "ShadowingRepo",
    "single_repo",
    "umbrella",
    "flat_siblings",
    "linked_worktree",
    "foreign_repo",
    "dirty_trees",
    "mid_operations",
    "not_a_repo",
    "symlinked_repo",
    "shadowing_repo",
]

import hashlib
import os
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path

import pytest

HOST = "forge.example.test"
OPERATIONS = ("merge", "rebase", "cherry-pick", "revert", "bisect", "am")
# Modules a user's repo may hold under the same names as madtea's own; importing
# any of them prints to stdout (which would corrupt the MCP stream) and crashes.
SHADOW_MODULES = ("guard.py", "forge.py", "gitops.py")
_SHADOW_SOURCE = (
    "import sys\n"
    "print('SHADOWED: the repository\\'s own {name} was imported')\n"
    "sys.stderr.write('SHADOWED: {name}\\n')\n"
    "raise SystemExit(97)\n"
)


# --------------------------------------------------------------------------- builders

_REPO_SELECTING = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY",
                   "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE", "GIT_PREFIX")


def _env(**extra: str) -> dict[str, str]:
    # Only cwd picks the repo here too: a test that points GIT_DIR elsewhere
    # must not bend the builders or the snapshots that judge it.
    env = {k: v for k, v in os.environ.items() if k not in _REPO_SELECTING}
    env.update(extra)
    return env


def run_git(cwd: Path, *args: str, check: bool = True) -> str:
    """Run git in *cwd* with the sealed test environment; return stripped stdout."""
    proc = subprocess.run(["git", *args], cwd=cwd, env=_env(), stdin=subprocess.DEVNULL, capture_output=True,
                          check=False)
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed in {cwd}: {proc.stderr.decode(errors='replace')}")
    return proc.stdout.decode(errors="replace").strip()


def git_bytes(cwd: Path, *args: str, **extra_env: str) -> subprocess.CompletedProcess[bytes]:
    """Run git in *cwd* with the sealed test environment (plus *extra_env*); the raw result, never raising."""
    return subprocess.run(["git", *args], cwd=cwd, env=_env(**extra_env), stdin=subprocess.DEVNULL,
                          capture_output=True, check=False)


def local_branches(repo: Path) -> set[str]:
    """The names of *repo*'s local branches."""
    return set(run_git(repo, "for-each-ref", "--format=%(refname:short)", "refs/heads/").split())


def write_files(root: Path, files: Mapping[str, str]) -> None:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")


def commit_files(repo: Path, files: Mapping[str, str], message: str) -> str:
    """Write *files*, stage exactly them, commit; return the new sha."""
    write_files(repo, files)
    run_git(repo, "add", "--", *files)
    run_git(repo, "commit", "-q", "-m", message)
    return run_git(repo, "rev-parse", "HEAD")


def make_repo(path: Path, origin: str | None = None, files: Mapping[str, str] | None = None,
              branch: str = "main", commit: bool = True) -> Path:
    """A repo at *path* on *branch*, with one commit of *files* (a README by default)."""
    path.mkdir(parents=True, exist_ok=True)
    run_git(path, "init", "-q", "-b", branch)
    if origin is not None:
        run_git(path, "remote", "add", "origin", origin)
    if commit:
        commit_files(path, files if files is not None else {"README.md": f"# {path.name}\n"}, "initial commit")
    return Path(os.path.realpath(path))


def make_bare(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    run_git(path, "init", "-q", "--bare", "-b", "main")
    return Path(os.path.realpath(path))


def make_pushed_repo(base: Path) -> Path:
    """The repo ``base/web`` whose main is pushed to the bare origin ``base/origin.git``."""
    bare = make_bare(base / "origin.git")
    repo = make_repo(base / "web", origin=str(bare))
    run_git(repo, "push", "-q", "origin", "main")
    return repo


def make_worktree(repo: Path, path: Path, branch: str) -> Path:
    """A linked worktree of *repo* at *path*, on a new *branch* started from HEAD."""
    run_git(repo, "worktree", "add", "-q", "-b", branch, str(path))
    return Path(os.path.realpath(path))


def make_dirty(repo: Path, kind: str) -> Path:
    """Leave *repo* with a "modified", "staged" or "untracked" change (README.md must be tracked)."""
    if kind == "modified":
        (repo / "README.md").write_text("locally modified\n", encoding="utf-8")
    elif kind == "staged":
        write_files(repo, {"staged.txt": "staged, not committed\n"})
        run_git(repo, "add", "--", "staged.txt")
    elif kind == "untracked":
        write_files(repo, {"untracked.txt": "nobody added me\n"})
    else:
        raise ValueError(f"unknown dirty kind {kind!r}")
    return repo


def _diverge(repo: Path) -> tuple[str, str]:
    """Branch "other" and "main" both change conflict.txt; return (main sha, other sha)."""
    commit_files(repo, {"conflict.txt": "base\n"}, "add conflict.txt")
    run_git(repo, "switch", "-q", "-c", "other")
    other = commit_files(repo, {"conflict.txt": "other side\n"}, "other side")
    run_git(repo, "switch", "-q", "main")
    main = commit_files(repo, {"conflict.txt": "main side\n"}, "main side")
    return main, other


def make_mid_operation(path: Path, operation: str, origin: str | None = None) -> Path:
    """A repo stopped in the middle of *operation* (one of OPERATIONS)."""
    repo = make_repo(path, origin=origin)
    if operation == "bisect":
        first = run_git(repo, "rev-parse", "HEAD")
        commit_files(repo, {"a.txt": "a\n"}, "a")
        commit_files(repo, {"b.txt": "b\n"}, "b")
        run_git(repo, "bisect", "start")
        run_git(repo, "bisect", "bad", "HEAD")
        run_git(repo, "bisect", "good", first)
        return repo
    if operation == "revert":
        first = commit_files(repo, {"conflict.txt": "one\n"}, "one")
        commit_files(repo, {"conflict.txt": "two\n"}, "two")
        run_git(repo, "revert", "--no-edit", first, check=False)
        return repo
    main, other = _diverge(repo)
    if operation == "merge":
        run_git(repo, "merge", "--no-edit", "other", check=False)
    elif operation == "cherry-pick":
        run_git(repo, "cherry-pick", other, check=False)
    elif operation == "rebase":
        run_git(repo, "switch", "-q", "other")
        run_git(repo, "rebase", "main", check=False)
    elif operation == "am":
        patch = run_git(repo, "format-patch", "-1", "--stdout", other)
        (repo.parent / f"{repo.name}.patch").write_text(patch + "\n", encoding="utf-8")
        run_git(repo, "am", "-3", str(repo.parent / f"{repo.name}.patch"), check=False)
    else:
        raise ValueError(f"unknown operation {operation!r}")
    return repo


def make_shadowing_repo(path: Path, origin: str | None = None) -> Path:
    """A repo whose own guard.py, forge.py and gitops.py crash (and print) when imported."""
    files = {name: _SHADOW_SOURCE.format(name=name) for name in SHADOW_MODULES}
    return make_repo(path, origin=origin, files={"README.md": "# shadow\n", **files})


def make_clone(url: str, path: Path, branch: str | None = None) -> Path:
    """A clone of *url* at *path*, on a new *branch* from the remote's HEAD when one is named."""
    path.parent.mkdir(parents=True, exist_ok=True)
    run_git(path.parent, "clone", "-q", url, str(path))
    if branch:
        run_git(path, "switch", "-q", "-c", branch)
    return Path(os.path.realpath(path))


def make_separate_git_dir(url: str, path: Path, git_dir: Path) -> Path:
    """A clone of *url* whose work tree at *path* holds only a ``.git`` file naming *git_dir*."""
    path.parent.mkdir(parents=True, exist_ok=True)
    git_dir.parent.mkdir(parents=True, exist_ok=True)
    run_git(path.parent, "clone", "-q", f"--separate-git-dir={git_dir}", url, str(path))
    return Path(os.path.realpath(path))


def make_submodule(parent: Path, url: str, rel: str) -> Path:
    """*url* added to *parent* as the submodule *rel* and committed there (its git dir in the parent's)."""
    run_git(parent, "-c", "protocol.file.allow=always", "submodule", "add", "-q", url, rel)
    run_git(parent, "commit", "-q", "-m", f"add submodule {rel}")
    return Path(os.path.realpath(parent / rel))


def make_core_worktree(url: str, path: Path, worktree: Path) -> Path:
    """A clone of *url* at *path* whose ``core.worktree`` is *worktree*: git finds the repository in *path*
    and works on the files of *worktree*."""
    make_clone(url, path)
    worktree.mkdir(parents=True, exist_ok=True)
    run_git(path, "config", "core.worktree", str(Path(os.path.realpath(worktree))))
    return Path(os.path.realpath(path))


def make_bare_clone(url: str, path: Path) -> Path:
    """A bare clone of *url* at *path* (which may lie inside another repository's work tree)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    run_git(path.parent, "clone", "-q", "--bare", url, str(path))
    return Path(os.path.realpath(path))


def make_unfetched_default(url: str, path: Path, branch: str) -> Path:
    """A repo on *branch* pushed with ``push -u`` to the empty remote *url*: no ``origin/HEAD`` exists locally,
    so only the remote can say which branch is its default."""
    repo = make_repo(path, origin=url, branch=branch)
    run_git(repo, "push", "-q", "-u", "origin", branch)
    return repo


def https_origin(owner: str, repo: str) -> str:
    return f"https://{HOST}/{owner}/{repo}.git"


# --------------------------------------------------------------------------- snapshots

@dataclass(frozen=True)
class RepoState:
    """What a call could change in one repository, as git reports it."""

    refs: tuple[str, ...]
    head: str
    index: tuple[str, ...]
    status: tuple[str, ...]
    content: tuple[str, ...]  # hashes of changed and untracked files: a second edit shows here
    worktrees: tuple[str, ...]
    config: tuple[str, ...] = ()  # the repository's own config file, as git lists it


def snapshot(paths: Iterable[Path]) -> dict[Path, RepoState]:
    """Record refs, HEAD, index, status, dirty-file content, worktrees and config of each repo.

    Each path is read as its own repository: git is pinned to the git dir found there (the path
    itself for a bare repository) and to the path as the work tree, so a ``core.worktree`` or an
    enclosing repository cannot make the snapshot read another repository instead.
    """
    return {Path(os.path.realpath(p)): _repo_state(Path(p)) for p in paths}


def _pinned(repo: Path) -> dict[str, str]:
    found = run_git(repo, "rev-parse", "--absolute-git-dir", "--is-bare-repository").splitlines()
    pins = {"GIT_DIR": found[0]}
    if found[1] != "true":
        pins["GIT_WORK_TREE"] = str(repo)
    return pins


def _pinned_git(repo: Path, pins: Mapping[str, str], *args: str, check: bool = True) -> str:
    proc = subprocess.run(["git", *args], cwd=repo, env=_env(GIT_OPTIONAL_LOCKS="0", **pins),
                          stdin=subprocess.DEVNULL, capture_output=True, check=False)
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed in {repo}: {proc.stderr.decode(errors='replace')}")
    return proc.stdout.decode(errors="replace").strip()


def _repo_state(repo: Path) -> RepoState:
    pins = _pinned(repo)
    refs = _pinned_git(repo, pins, "for-each-ref", "--format=%(refname) %(objectname) %(symref)")
    head = _pinned_git(repo, pins, "symbolic-ref", "-q", "HEAD", check=False) or "detached"
    head += " @ " + (_pinned_git(repo, pins, "rev-parse", "-q", "--verify", "HEAD", check=False) or "unborn")
    config = _pinned_git(repo, pins, "config", "--local", "--list", check=False)
    if "GIT_WORK_TREE" not in pins:  # a bare repository: no index, no work tree
        return RepoState(tuple(refs.splitlines()), head, (), (), (), (), tuple(config.splitlines()))
    index = _pinned_git(repo, pins, "ls-files", "-s")
    status = _quiet_status(repo, pins)
    content = tuple(f"{p} {_file_hash(repo / p)}" for p in _status_paths(status))
    worktrees = _pinned_git(repo, pins, "worktree", "list", "--porcelain")
    return RepoState(tuple(refs.splitlines()), head, tuple(index.splitlines()), tuple(status),
                     content, tuple(worktrees.splitlines()), tuple(config.splitlines()))


def _quiet_status(repo: Path, pins: Mapping[str, str]) -> list[str]:
    # GIT_OPTIONAL_LOCKS=0: taking a snapshot must not itself rewrite the index.
    out = subprocess.run(["git", "status", "--porcelain=v2", "-z", "--untracked-files=all"], cwd=repo,
                         env=_env(GIT_OPTIONAL_LOCKS="0", **pins), stdin=subprocess.DEVNULL, capture_output=True,
                         check=True).stdout
    return [rec.decode(errors="replace") for rec in out.split(b"\0") if rec]


def _status_paths(records: list[str]) -> list[str]:
    paths = []
    for rec in records:
        kind = rec[0]
        if kind in "12u":
            paths.append(rec.split(" ", {"1": 8, "2": 9, "u": 10}[kind])[-1])
        elif kind == "?":
            paths.append(rec[2:])
    return paths


def _file_hash(path: Path) -> str:
    try:
        return hashlib.sha1(path.read_bytes()).hexdigest()[:12]
    except OSError:
        return "absent"


def assert_only_changed(before: Mapping[Path, RepoState], after: Mapping[Path, RepoState],
                        allowed: set[Path]) -> None:
    """Fail, naming each repo and what changed in it, if any repo outside *allowed* changed."""
    allowed_real = {Path(os.path.realpath(p)) for p in allowed}
    problems = []
    for repo in sorted(set(before) | set(after)):
        if repo in allowed_real:
            continue
        if repo not in before or repo not in after:
            problems.append(f"{repo}: {'appeared' if repo in after else 'disappeared'}")
        elif before[repo] != after[repo]:
            problems.append(f"{repo} changed:\n" + _describe(before[repo], after[repo]))
    if problems:
        raise AssertionError("repositories outside the allowed set changed:\n" + "\n".join(problems))


def _describe(old: RepoState, new: RepoState) -> str:
    lines = []
    for f in fields(RepoState):
        a, b = getattr(old, f.name), getattr(new, f.name)
        if a == b:
            continue
        if isinstance(a, str):
            lines.append(f"  {f.name}: {a} -> {b}")
            continue
        lines += [f"  {f.name}: - {x}" for x in a if x not in b]
        lines += [f"  {f.name}: + {x}" for x in b if x not in a]
    return "\n".join(lines)


# --------------------------------------------------------------------------- topologies

class _Topology:
    @property
    def repos(self) -> list[Path]:
        """Every work tree in the topology (main and linked), for ``snapshot``."""
        out: list[Path] = []
        for f in fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if isinstance(value, Path) and f.name not in self._not_repos and (value / ".git").exists():
                if Path(os.path.realpath(value)) not in out:
                    out.append(Path(os.path.realpath(value)))
        return out

    _not_repos: tuple[str, ...] = ()


@dataclass(frozen=True)
class SingleRepo(_Topology):
    repo: Path
    origin: str


@dataclass(frozen=True)
class Umbrella(_Topology):
    """A repo whose top holds nested repos; ``deep`` sits two levels down (not depth-1)."""

    top: Path
    https_child: Path
    ssh_child: Path
    scp_child: Path
    no_origin_child: Path
    same_repo_child: Path  # scp origin naming the umbrella's own repo
    plain_dir: Path  # a child directory that is not a repo
    deep: Path
    origins: Mapping[str, str | None]  # child directory name (or "top") -> origin URL

    _not_repos = ("plain_dir",)

    @property
    def distinct_children(self) -> list[Path]:
        return [self.https_child, self.ssh_child, self.scp_child, self.no_origin_child]

    @property
    def nested(self) -> list[Path]:
        """What a depth-1 scan of ``top`` must find."""
        return sorted([*self.distinct_children, self.same_repo_child])


@dataclass(frozen=True)
class FlatSiblings(_Topology):
    parent: Path  # not a repo
    web: Path
    api: Path

    _not_repos = ("parent",)


@dataclass(frozen=True)
class LinkedWorktree(_Topology):
    main: Path
    worktree: Path
    branch: str


@dataclass(frozen=True)
class ForeignRepo(_Topology):
    """The session's own repo and a foreign one, whose primary checkout holds a
    stranger's uncommitted work and which has a linked worktree of its own."""

    home: Path
    foreign: Path
    foreign_worktree: Path
    branch: str
    stranger_files: tuple[str, ...]  # dirty paths in the foreign primary checkout


@dataclass(frozen=True)
class DirtyTrees(_Topology):
    clean: Path
    modified: Path
    staged: Path
    untracked: Path


@dataclass(frozen=True)
class MidOperations(_Topology):
    merge: Path
    rebase: Path
    cherry_pick: Path
    revert: Path
    bisect: Path
    am: Path

    def by_name(self) -> dict[str, Path]:
        """Operation name as gitops reports it ("cherry-pick") -> repo."""
        return {name: getattr(self, name.replace("-", "_")) for name in OPERATIONS}


@dataclass(frozen=True)
class SymlinkedRepo(_Topology):
    real: Path
    link: Path  # a symlink to ``real``
    link_subdir: Path  # a symlink to ``real/src``

    _not_repos = ("link", "link_subdir")


@dataclass(frozen=True)
class ShadowingRepo(_Topology):
    repo: Path
    modules: tuple[Path, ...]


@pytest.fixture
def single_repo(tmp_path: Path, hermetic_seal: Path) -> SingleRepo:
    """One repo with an initial commit and an https origin (acme/web)."""
    origin = https_origin("acme", "web")
    return SingleRepo(make_repo(tmp_path / "web", origin=origin), origin)


@pytest.fixture
def umbrella(tmp_path: Path, hermetic_seal: Path) -> Umbrella:
    """acme/umbrella holding https, ssh://, scp, origin-less and same-repo children."""
    origins: dict[str, str | None] = {
        "top": https_origin("acme", "umbrella"),
        "api": https_origin("acme", "api"),
        "worker": f"ssh://git@{HOST}:2222/acme/worker.git",
        "docs": f"git@{HOST}:acme/docs.git",
        "scratch": None,
        "mirror": f"git@{HOST}:acme/umbrella.git",
    }
    top = make_repo(tmp_path / "umbrella", origin=origins["top"])
    kids = {name: make_repo(top / name, origin=url) for name, url in origins.items() if name != "top"}
    (top / "notes").mkdir()
    (top / "notes" / "todo.txt").write_text("not a repo\n", encoding="utf-8")
    deep = make_repo(top / "libs" / "deep", origin=https_origin("acme", "deep"))
    return Umbrella(top, kids["api"], kids["worker"], kids["docs"], kids["scratch"], kids["mirror"],
                    top / "notes", deep, origins)


@pytest.fixture
def flat_siblings(tmp_path: Path, hermetic_seal: Path) -> FlatSiblings:
    """A plain directory holding two unrelated clones side by side."""
    parent = tmp_path / "src"
    return FlatSiblings(Path(os.path.realpath(tmp_path)) / "src",
                        make_repo(parent / "web", origin=https_origin("acme", "web")),
                        make_repo(parent / "api", origin=https_origin("acme", "api")))


@pytest.fixture
def linked_worktree(tmp_path: Path, hermetic_seal: Path) -> LinkedWorktree:
    """acme/web with a linked worktree on branch "feature"."""
    main = make_repo(tmp_path / "web", origin=https_origin("acme", "web"))
    return LinkedWorktree(main, make_worktree(main, tmp_path / "web-feature", "feature"), "feature")


@pytest.fixture
def foreign_repo(tmp_path: Path, hermetic_seal: Path) -> ForeignRepo:
    """Home repo acme/web; foreign acme/lib with a dirty primary and a worktree on "fix"."""
    home = make_repo(tmp_path / "web", origin=https_origin("acme", "web"))
    foreign = make_repo(tmp_path / "lib", origin=f"git@{HOST}:acme/lib.git")
    worktree = make_worktree(foreign, tmp_path / "lib-fix", "fix")
    make_dirty(foreign, "modified")
    make_dirty(foreign, "untracked")
    return ForeignRepo(home, foreign, worktree, "fix", ("README.md", "untracked.txt"))


@pytest.fixture
def dirty_trees(tmp_path: Path, hermetic_seal: Path) -> DirtyTrees:
    """Four repos: clean, one modified tracked file, one staged new file, one untracked file only."""
    made = {kind: make_repo(tmp_path / kind, origin=https_origin("acme", kind)) for kind in
            ("clean", "modified", "staged", "untracked")}
    for kind in ("modified", "staged", "untracked"):
        make_dirty(made[kind], kind)
    return DirtyTrees(**made)


@pytest.fixture
def mid_operations(tmp_path: Path, hermetic_seal: Path) -> MidOperations:
    """One repo stopped in each operation: merge, rebase, cherry-pick and revert
    on a conflict, bisect between good and bad, am on a conflicting patch."""
    made = {op.replace("-", "_"): make_mid_operation(tmp_path / op, op, origin=https_origin("acme", op))
            for op in OPERATIONS}
    return MidOperations(**made)


@pytest.fixture
def not_a_repo(tmp_path: Path, hermetic_seal: Path) -> Path:
    """A directory with a file in it and no repository anywhere above it."""
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "file.txt").write_text("not tracked by anything\n", encoding="utf-8")
    if run_git(plain, "rev-parse", "--show-toplevel", check=False):
        pytest.skip(f"{plain} is inside a git repository on this machine")
    return Path(os.path.realpath(plain))


@pytest.fixture
def symlinked_repo(tmp_path: Path, hermetic_seal: Path) -> SymlinkedRepo:
    """acme/web reached through a symlink to its top and one to a sub-directory."""
    real = make_repo(tmp_path / "real" / "web", origin=https_origin("acme", "web"),
                     files={"README.md": "# web\n", "src/app.py": "print('app')\n"})
    link = tmp_path / "link-web"
    link.symlink_to(real, target_is_directory=True)
    sub = tmp_path / "link-src"
    sub.symlink_to(real / "src", target_is_directory=True)
    return SymlinkedRepo(real, link, sub)


@pytest.fixture
def shadowing_repo(tmp_path: Path, hermetic_seal: Path) -> ShadowingRepo:
    """A repo holding its own guard.py, forge.py and gitops.py that crash when imported."""
    repo = make_shadowing_repo(tmp_path / "shadow", origin=https_origin("acme", "shadow"))
    return ShadowingRepo(repo, tuple(repo / name for name in SHADOW_MODULES))
