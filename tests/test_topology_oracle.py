"""The topology oracle: git itself says where every call landed.

Workspaces are composed from git's own primitives: nested clones (of another repository or of the
same one), linked worktrees, submodules, separate git dirs, ``core.worktree`` pointing at another
repository's files or at a plain folder, a bare repository inside a work tree, symlinked paths,
``url.<base>.insteadOf``, ``pushInsteadOf`` and ``remote.origin.pushurl`` (plain or behind
``includeIf``), ``GIT_DIR``/``GIT_WORK_TREE``/``GIT_INDEX_FILE``/``GIT_COMMON_DIR`` and the intent
hint in the server's environment, fork and upstream remotes, a default branch other than main
without ``origin/HEAD``. Every remote is a bare repository of the fake forge. A random sequence of
local-git calls then goes through the MCP SDK client to a ``madtea mcp`` child launched somewhere in
that workspace, with and without ``dir=``, between edits a person makes. After each call every
repository and remote is read with git (refs, each work tree's HEAD, index and status with the
content of what status names, the local config, the worktree list) and compared with before:

- only the intended repository changed: the one git finds from ``dir=``, or without it from the
  launch directory (with none of the server's ``GIT_*`` variables); of its work trees only that one,
  besides a worktree the call adds or removes; a push or a finish may also change the remote git
  itself pushes to (``git remote get-url --push``). A refusal changes nothing.
- the result says what git did: a reported commit is that work tree's HEAD and holds exactly the
  files it reports, a reported push is on the remote git pushed to and the result names that remote, a
  created, deleted or switched-to branch is so in git, a finished work tree is at origin's default
  branch, every write names the work tree it landed in.
- a commit never lands on the branch the remote calls its default (``ls-remote --symref``) without
  the call's own ``allow_default_branch``.

The intended repository and the push target are asked of git, never of madtea. The examples are
derandomized and bounded; ``MADTEA_TOPOLOGY_EXAMPLES`` and ``MADTEA_TOPOLOGY_CALLS`` make longer runs.
"""
from __future__ import annotations

import collections
import hashlib
import itertools
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from anyio.from_thread import start_blocking_portal
from hypothesis import HealthCheck, Phase, given, settings, strategies as st
from mcp.client import Client

import guard
from fakeforge import DEFAULT_TOKEN, FakeForge
from remote_env import CALL_BOUND, bounded_call, mcp_server
from topologies import (git_bytes, make_bare_clone, make_clone, make_core_worktree, make_separate_git_dir,
                        make_submodule, make_unfetched_default, make_worktree, run_git, write_files)

pytestmark = pytest.mark.slow  # a workspace and a server per example: not in the fast lane

# Read before the seal clears MADTEA_*.
EXAMPLES = int(os.environ.get("MADTEA_TOPOLOGY_EXAMPLES", "20"))
CALLS = int(os.environ.get("MADTEA_TOPOLOGY_CALLS", "6"))
REPORT = os.environ.get("MADTEA_TOPOLOGY_REPORT")  # a file: record each broken promise there and go on
# No shrinking: each example builds a workspace and starts a server, and the failure text already tells
# the whole story (what was built, the server's environment, where it was launched, the call, the diff).
ORACLE = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                  suppress_health_check=list(HealthCheck), phases=(Phase.explicit, Phase.generate))
COUNTS: collections.Counter[str] = collections.Counter()
_SERIAL = itertools.count(1)

# --------------------------------------------------------------------------- the plan (plain data)

PRIMITIVES = ("nested", "mirror", "worktree", "submodule", "separate", "core_worktree_repo",
              "core_worktree_plain", "bare_inside", "symlink", "pushurl", "push_instead_of", "instead_of",
              "include_if", "fork", "trunk", "env_git_dir", "env_work_tree", "env_index_file",
              "env_common_dir", "hint_name", "hint_path")
BRANCHES = ("feat", "main", "trunk", "topic", "side1", "nope")
FILES = ("work.txt", "README.md", "src/work.txt", "abs", "missing.txt")
WRITES = ("madt_commit", "madt_add", "madt_push", "madt_pull", "madt_branch_create", "madt_branch_delete",
          "madt_switch", "worktrees_add", "worktrees_remove", "madt_prune", "madt_finish")
READS = ("madt_status", "madt_log", "worktrees_list")


@dataclass(frozen=True)
class Step:
    kind: str                     # a tool (or worktrees_<action>), or "edit" for a person's change
    dir: int | None = None        # an index into the world's places
    arg: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Plan:
    primitives: tuple[tuple[str, int, int], ...]  # (primitive, host index, other index)
    home_branch: str
    launch: int
    steps: tuple[Step, ...]


def _steps() -> st.SearchStrategy[Step]:
    place = st.one_of(st.none(), st.integers(-3, 11))  # a negative index: one of the places made last
    files = st.lists(st.sampled_from(FILES), min_size=1, max_size=2, unique=True)
    branch = st.sampled_from(BRANCHES)
    args: dict[str, st.SearchStrategy[dict[str, Any]]] = {
        "madt_commit": st.fixed_dictionaries({"files": files}, optional={"allow_default_branch": st.just(True)}),
        "madt_add": st.fixed_dictionaries({"files": files}),
        "madt_push": st.fixed_dictionaries({}, optional={"branch": branch, "set_upstream": st.booleans()}),
        "madt_pull": st.fixed_dictionaries({}, optional={"branch": branch}),
        "madt_branch_create": st.fixed_dictionaries({"name": st.sampled_from(("topic", "side1", "feat", "t2"))},
                                                    optional={"checkout": st.booleans(),
                                                              "start_point": st.sampled_from(("main", "HEAD"))}),
        "madt_branch_delete": st.fixed_dictionaries({"name": branch}),
        "madt_switch": st.fixed_dictionaries({"branch": branch}),
        "worktrees_add": st.fixed_dictionaries({"path": st.tuples(st.sampled_from(("new", "inside")),
                                                                  st.integers(0, 5))},
                                               optional={"b": st.sampled_from(("wt-a", "wt-b", "feat"))}),
        "worktrees_remove": st.fixed_dictionaries({"path": st.tuples(st.sampled_from(("new", "linked")),
                                                                     st.integers(0, 5))}),
        "madt_prune": st.fixed_dictionaries({}, optional={"dry_run": st.booleans()}),
        "madt_finish": st.fixed_dictionaries({"files": files}),
        "madt_status": st.just({}), "madt_log": st.just({}), "worktrees_list": st.just({}),
    }
    call = st.sampled_from(WRITES * 3 + READS).flatmap(
        lambda kind: st.builds(Step, st.just(kind), place, args[kind]))
    edit = st.builds(Step, st.just("edit"), st.integers(0, 11), st.fixed_dictionaries({"readme": st.booleans()}))
    return st.one_of(call, call, call, edit)


@st.composite
def plans(draw: st.DrawFn) -> Plan:
    prims = draw(st.lists(st.tuples(st.sampled_from(PRIMITIVES), st.integers(0, 7), st.integers(0, 7)),
                          max_size=4))
    return Plan(tuple(prims), draw(st.sampled_from(("feat", "feat", "main"))), draw(st.integers(-3, 11)),
                tuple(draw(st.lists(_steps(), min_size=2, max_size=CALLS))))


# --------------------------------------------------------------------------- the world, built with git

@dataclass
class World:
    """A workspace as built: the paths a call may name or launch from, and the fake forge behind it."""

    forge: FakeForge
    base: Path
    trees: list[Path] = field(default_factory=list)     # ordinary work trees (hosts for more primitives)
    places: list[Path] = field(default_factory=list)    # every path a call may name or launch from
    remotes: dict[Path, str] = field(default_factory=dict)  # bare repository -> acme/<name>
    env: dict[str, str] = field(default_factory=dict)   # the server's extra environment
    hint: str | None = None
    built: list[str] = field(default_factory=list)      # what was made, for a failure's reproduction
    new_worktrees: list[Path] = field(default_factory=list)

    def remote(self, prefix: str, *, init: bool = True, default_branch: str = "main") -> str:
        name = f"{prefix}{next(_SERIAL)}"
        repo = self.forge.add_repo("acme", name, init=init, default_branch=default_branch)
        self.remotes[Path(os.path.realpath(repo.bare))] = f"acme/{name}"
        return self.forge.remote_url("acme", name)

    def tree(self, path: Path, *, place: bool = True) -> Path:
        write_files(path, {"work.txt": f"work in {path.name}\n"})
        self.trees.append(path)
        if place:
            self.places.append(path)
        return path

    def pick(self, items: list[Path], index: int) -> Path:
        return items[index % len(items)]


def _origin_url(repo: Path) -> str:
    return run_git(repo, "config", "--get", "remote.origin.url")


def build(forge: FakeForge, base: Path, plan: Plan) -> World:
    w = World(forge, base)
    home = make_clone(w.remote("home"), base / "home", None if plan.home_branch == "main" else plan.home_branch)
    w.tree(home)
    write_files(home, {"src/work.txt": "work in src\n"})
    (base / "plain").mkdir()
    w.places += [home / "src", base / "plain", home / ".git"]
    w.built.append(f"home {home} on {plan.home_branch}")
    for n, (kind, host_i, other_i) in enumerate(plan.primitives):
        host, other = w.pick(w.trees, host_i), w.pick(w.trees, other_i)
        _PRIMITIVE[kind](w, n, host, other)
        w.built.append(f"{kind} (host {host}, other {other})")
        COUNTS[f"primitive {kind}"] += 1
    return w


def _nested(w: World, n: int, host: Path, other: Path) -> None:
    w.tree(make_clone(w.remote("kid"), host / f"kid{n}", "feat"))


def _mirror(w: World, n: int, host: Path, other: Path) -> None:
    w.tree(make_clone(_origin_url(host), host / f"mirror{n}", "feat"))


def _worktree(w: World, n: int, host: Path, other: Path) -> None:
    w.tree(make_worktree(host, w.base / f"wt{n}", f"side{n}"))


def _submodule(w: World, n: int, host: Path, other: Path) -> None:
    sub = make_submodule(host, w.remote("sub"), f"sub{n}")
    run_git(sub, "switch", "-q", "-c", "feat")
    w.tree(sub)


def _separate(w: World, n: int, host: Path, other: Path) -> None:
    repo = make_separate_git_dir(w.remote("sep"), w.base / f"sep{n}", w.base / "gitdirs" / f"sep{n}")
    run_git(repo, "switch", "-q", "-c", "feat")
    w.tree(repo)


def _core_worktree_repo(w: World, n: int, host: Path, other: Path) -> None:
    repo = make_core_worktree(w.remote("cw"), w.base / f"cw{n}", host)
    run_git(repo, "switch", "-q", "-c", "feat")  # the branch only: the other repository's files stay as they are
    w.places.append(repo)


def _core_worktree_plain(w: World, n: int, host: Path, other: Path) -> None:
    files = w.base / f"cw{n}-files"
    repo = make_core_worktree(w.remote("cw"), w.base / f"cw{n}", files)
    run_git(repo, "reset", "-q", "--hard")
    run_git(repo, "switch", "-q", "-c", "feat")
    write_files(files, {"work.txt": "work in a core.worktree folder\n"})
    w.places += [repo, Path(os.path.realpath(files))]


def _bare_inside(w: World, n: int, host: Path, other: Path) -> None:
    bare = make_bare_clone(_origin_url(host), host / f"store{n}.git")
    w.places.append(bare)


def _symlink(w: World, n: int, host: Path, other: Path) -> None:
    link = w.base / f"link{n}"
    link.symlink_to(host, target_is_directory=True)
    w.places.append(link)


def _bare_of(w: World, url: str) -> Path:
    name = url.rsplit("/", 1)[1].removesuffix(".git")
    return Path(os.path.realpath(w.forge.bare_path("acme", name)))


def _pushurl(w: World, n: int, host: Path, other: Path) -> None:
    run_git(host, "config", "remote.origin.pushurl", w.remote("elsewhere"))


def _push_instead_of(w: World, n: int, host: Path, other: Path) -> None:
    run_git(host, "config", f"url.{_bare_of(w, w.remote('elsewhere'))}.pushInsteadOf", _origin_url(host))


def _instead_of(w: World, n: int, host: Path, other: Path) -> None:
    run_git(host, "config", f"url.{_bare_of(w, w.remote('elsewhere'))}.insteadOf", _origin_url(host))


def _include_if(w: World, n: int, host: Path, other: Path) -> None:
    included = w.base / f"included{n}.config"
    included.write_text(f'[remote "origin"]\n\tpushurl = {w.remote("elsewhere")}\n', encoding="utf-8")
    # "gitdir:<folder>/" matches every git dir under that folder (git 2.39 does not match "<git dir>/" itself).
    folder = os.path.dirname(run_git(host, "rev-parse", "--path-format=absolute", "--git-common-dir"))
    run_git(host, "config", f"includeIf.gitdir:{folder}/.path", str(included))


def _fork(w: World, n: int, host: Path, other: Path) -> None:
    upstream = w.remote("upstream")
    repo = make_clone(upstream, w.base / f"fork{n}")
    run_git(repo, "remote", "rename", "origin", "upstream")
    run_git(repo, "remote", "add", "origin", w.remote("fork", init=False))
    run_git(repo, "push", "-q", "-u", "origin", "main")
    run_git(repo, "switch", "-q", "-c", "feat")
    w.tree(repo)


def _trunk(w: World, n: int, host: Path, other: Path) -> None:
    w.tree(make_unfetched_default(w.remote("trunk", init=False, default_branch="trunk"), w.base / f"trunk{n}",
                                  "trunk"))


def _git_fact(path: Path, flag: str) -> str:
    return run_git(path, "rev-parse", "--path-format=absolute", flag)


def _env_git_dir(w: World, n: int, host: Path, other: Path) -> None:
    w.env["GIT_DIR"] = _git_fact(other, "--absolute-git-dir")


def _env_work_tree(w: World, n: int, host: Path, other: Path) -> None:
    w.env["GIT_WORK_TREE"] = str(other)


def _env_index_file(w: World, n: int, host: Path, other: Path) -> None:
    w.env["GIT_INDEX_FILE"] = os.path.join(_git_fact(other, "--absolute-git-dir"), "index")


def _env_common_dir(w: World, n: int, host: Path, other: Path) -> None:
    w.env["GIT_COMMON_DIR"] = _git_fact(other, "--git-common-dir")


def _hint_name(w: World, n: int, host: Path, other: Path) -> None:
    url = _origin_url(other)
    w.hint = w.env["MADTEA_CALLER_REPO"] = "acme/" + url.rsplit("/", 1)[1].removesuffix(".git")


def _hint_path(w: World, n: int, host: Path, other: Path) -> None:
    w.hint = w.env["MADTEA_CALLER_REPO"] = str(other)


_PRIMITIVE = {name: globals()[f"_{name}"] for name in PRIMITIVES}


# --------------------------------------------------------------------------- git's account of everything

@dataclass(frozen=True)
class Ident:
    """A repository as git finds it from a path: its git dir, common dir, work tree (None when bare)."""

    git_dir: Path
    common: Path
    top: Path | None


def ident(path: Path) -> Ident | None:
    """What git itself finds from *path*, with none of the server's GIT_* variables."""
    where = Path(os.path.realpath(path))
    if not where.is_dir():
        return None
    found = git_bytes(where, "rev-parse", "--path-format=absolute", "--absolute-git-dir", "--git-common-dir")
    if found.returncode != 0:
        return None
    git_dir, common = (Path(os.path.realpath(p)) for p in os.fsdecode(found.stdout).splitlines())
    top = git_bytes(where, "rev-parse", "--show-toplevel")
    text = os.fsdecode(top.stdout).strip()
    return Ident(git_dir, common, Path(os.path.realpath(text)) if top.returncode == 0 and text else None)


@dataclass(frozen=True)
class Account:
    """Git's account of every repository: shared state by common dir, work tree state by git dir."""

    shared: dict[Path, tuple[str, ...]]
    trees: dict[Path, tuple[str, ...]]
    tops: dict[Path, Path]           # git dir -> its work tree
    owner: dict[Path, Path]          # git dir -> its common dir


def _lines(cwd: Path, *args: str, **env: str) -> tuple[str, ...]:
    out = git_bytes(cwd, *args, **env)
    return tuple(os.fsdecode(out.stdout).split("\0" if "-z" in args else "\n")) + (f"rc={out.returncode}",)


def _repositories(w: World) -> dict[Path, Ident]:
    """Every git dir git can see from the world's places, its linked worktrees and its remotes."""
    found: dict[Path, Ident] = {}
    for path in [*w.places, *w.trees, *w.new_worktrees, *w.remotes]:
        got = ident(path)
        if got is not None:
            found.setdefault(got.git_dir, got)
    for common in {i.common for i in found.values()}:
        for gitfile in sorted((common / "worktrees").glob("*/gitdir")):
            tree = Path(os.path.dirname(gitfile.read_text(encoding="utf-8", errors="replace").strip()))
            got = ident(tree)
            if got is not None and got.common == common:
                found.setdefault(got.git_dir, got)
    return found


def account(w: World, fixed_tops: set[Path]) -> Account:
    repos = _repositories(w)
    shared: dict[Path, tuple[str, ...]] = {}
    trees: dict[Path, tuple[str, ...]] = {}
    for ident_ in repos.values():
        c = ident_.common
        if c not in shared:
            at = ("--git-dir", str(c))
            shared[c] = (_lines(c, *at, "for-each-ref", "--format=%(refname) %(objectname) %(symref)")
                         + _lines(c, *at, "config", "--list", "--local")
                         + _lines(c, *at, "worktree", "list", "--porcelain"))
        if ident_.top is not None:
            trees[ident_.git_dir] = _tree_state(ident_, fixed_tops, repos)
    return Account(shared, trees, {i.git_dir: i.top for i in repos.values() if i.top},
                   {i.git_dir: i.common for i in repos.values()})


def _tree_state(i: Ident, fixed_tops: set[Path], repos: dict[Path, Ident]) -> tuple[str, ...]:
    assert i.top is not None
    at = ("--git-dir", str(i.git_dir), "--work-tree", str(i.top))
    head = _lines(i.top, *at, "symbolic-ref", "-q", "HEAD") + _lines(i.top, *at, "rev-parse", "-q", "--verify", "HEAD")
    index = _lines(i.top, *at, "ls-files", "--stage", "-z")
    raw = git_bytes(i.top, *at, "status", "--porcelain=v2", "-z", "--untracked-files=all", "--ignore-submodules=all",
                    GIT_OPTIONAL_LOCKS="0").stdout
    # What lies in another repository (a nested clone, a bare repository, another's git dir) is judged there.
    elsewhere = [t for t in fixed_tops if t != i.top] + [r.git_dir for r in repos.values() if r.git_dir != i.git_dir]
    status = []
    for rec in (r.decode(errors="replace") for r in raw.split(b"\0") if r):
        path = _status_path(rec)
        full = os.path.realpath(i.top / path) if path else ""
        if path and any(full == str(o) or full.startswith(str(o) + os.sep) for o in elsewhere):
            continue
        status.append(rec + (f" #{_hash(Path(full))}" if path else ""))
    return head + index + tuple(status)


def _status_path(rec: str) -> str | None:
    kind = rec[0]
    if kind in "12u":
        return rec.split(" ", {"1": 8, "2": 9, "u": 10}[kind])[-1]
    return rec[2:] if kind in "?!" else None


def _hash(path: Path) -> str:
    try:
        return hashlib.sha1(path.read_bytes()).hexdigest()[:12]
    except OSError:
        return "absent"


def changes(before: Account, after: Account) -> tuple[set[Path], set[Path]]:
    """(common dirs whose shared state changed, git dirs whose work tree changed, appeared or vanished)."""
    shared = {c for c in set(before.shared) | set(after.shared) if before.shared.get(c) != after.shared.get(c)}
    trees = {g for g in set(before.trees) | set(after.trees) if before.trees.get(g) != after.trees.get(g)}
    return shared, trees


def _diff(before: Account, after: Account, shared: set[Path], trees: set[Path]) -> str:
    out = []
    for kind, keys, old, new in (("repository", shared, before.shared, after.shared),
                                 ("work tree of", trees, before.trees, after.trees)):
        for key in sorted(keys):
            a, b = old.get(key, ()), new.get(key, ())
            where = f"{key} ({after.tops.get(key) or before.tops.get(key)})" if kind != "repository" else str(key)
            out.append(f"  {kind} {where}:")
            out += [f"    - {x}" for x in a if x not in b][:6] + [f"    + {x}" for x in b if x not in a][:6]
    return "\n".join(out)


# --------------------------------------------------------------------------- one call, through the SDK

def _resolve(w: World, step: Step) -> tuple[str, dict[str, Any]]:
    tool, action = {"worktrees_add": ("madt_worktrees", "add"), "worktrees_remove": ("madt_worktrees", "remove"),
                    "worktrees_list": ("madt_worktrees", "list")}.get(step.kind, (step.kind, None))
    args: dict[str, Any] = {} if action is None else {"action": action}
    if step.dir is not None:
        args["dir"] = str(w.pick(w.places, step.dir))
    for key, value in step.arg.items():
        if key == "files":
            named = w.pick(w.places, step.dir) if step.dir is not None else None
            args["files"] = [str((named or w.trees[0]) / "work.txt") if f == "abs" else f for f in value]
        elif key == "path" and value[0] == "new":
            args["path"] = str(w.base / f"new-wt{value[1]}")
        elif key == "path" and value[0] == "inside":
            args["path"] = str(w.pick(w.trees, value[1]) / "inner-wt")
        elif key == "path":
            linked = [t for t in w.trees if (t / ".git").is_file()] + w.new_worktrees
            args["path"] = str(w.pick(linked, value[1])) if linked else str(w.base / "no-such-wt")
        else:
            args[key] = value
    if tool in ("madt_commit", "madt_finish"):
        args["title"] = "Add the work"
    return tool, args


@dataclass
class Answer:
    text: str
    ok: bool
    code: str | None
    data: Any
    error: dict[str, Any]


def _answer(result: Any) -> Answer:
    text = "\n".join(getattr(c, "text", "") for c in result.content)
    structured = result.structured_content or {}
    data = structured.get("result")
    return Answer(text, not result.is_error, structured.get("code"), data, structured if result.is_error else {})


# --------------------------------------------------------------------------- the promises

def _remote_sha(bare: Path, branch: str) -> str | None:
    out = git_bytes(bare, "--git-dir", str(bare), "rev-parse", "-q", "--verify", f"refs/heads/{branch}")
    return os.fsdecode(out.stdout).strip() or None


def push_target(w: World, i: Ident) -> Path | None:
    """The bare repository git itself pushes origin to from *i* (after insteadOf, pushInsteadOf, pushurl)."""
    out = git_bytes(i.top or i.git_dir, "--git-dir", str(i.git_dir), "remote", "get-url", "--push", "origin")
    url = os.fsdecode(out.stdout).strip()
    if out.returncode != 0 or not url:
        return None
    real = Path(os.path.realpath(url)) if os.path.isabs(url) else None
    return real if real in w.remotes else None


def remote_default(i: Ident) -> str | None:
    """The branch origin itself calls its default."""
    out = git_bytes(i.top or i.git_dir, "--git-dir", str(i.git_dir), "ls-remote", "--symref", "origin", "HEAD")
    for line in os.fsdecode(out.stdout).splitlines():
        if line.startswith("ref: refs/heads/"):
            return line.split("\t")[0][len("ref: refs/heads/"):]
    return None


def check(w: World, step: Step, tool: str, args: dict[str, Any], intended: Ident | None, answer: Answer,
          before: Account, after: Account) -> list[str]:
    """Every broken promise of this call, in words."""
    problems: list[str] = []
    if answer.code == "INTERNAL_ERROR" or "Traceback" in answer.text:
        problems.append("an internal error or a traceback reached the caller")
    if not answer.ok:
        way = guard.way_on_problem(answer.error.get("next") or [], answer.error.get("choices") or [],
                                   answer.error.get("user_action"))
        if way:
            problems.append(f"the refusal's way on: {way}")
    shared, trees = changes(before, after)
    if not answer.ok and intended is not None and tool in ("madt_pull", "madt_push", "madt_finish") \
            and _fetched_only(before.shared.get(intended.common, ()), after.shared.get(intended.common, ())):
        shared.discard(intended.common)  # a fetch before the refusal moved origin's tracking refs, nothing else
    writes = step.kind in WRITES and (answer.ok or tool == "madt_finish")
    allowed_shared: set[Path] = set()
    allowed_trees: set[Path] = set()
    remote = push_target(w, intended) if intended else None
    if writes and intended is not None:
        allowed_shared.add(intended.common)
        allowed_trees.add(intended.git_dir)
        if tool in ("madt_push", "madt_finish") and remote is not None:
            allowed_shared.add(remote)
        # a worktree the call added or removed belongs to the intended repository
        allowed_trees |= {g for g in trees if (before.owner.get(g) or after.owner.get(g)) == intended.common
                          and (g not in before.trees or g not in after.trees)}
    stray_shared, stray_trees = shared - allowed_shared, trees - allowed_trees
    if stray_shared or stray_trees:
        what = "a refusal" if not answer.ok else "a read" if step.kind in READS else "the call"
        problems.append(f"{what} changed what it did not target (intended: "
                        f"{intended.git_dir if intended else 'no repository'}):\n"
                        + _diff(before, after, stray_shared, stray_trees))
    if answer.ok and step.kind in WRITES and intended is not None:
        problems += _says_what_git_did(w, tool, args, intended, answer, before, after, remote, shared)
    if not answer.ok and answer.code == "WRONG_REPO" and w.hint and "/" in w.hint and not os.path.isabs(w.hint):
        problems += _hint_way_on(w, answer, intended)
    return problems


def _fetched_only(old: tuple[str, ...], new: tuple[str, ...]) -> bool:
    changed = set(old) ^ set(new)
    return all(line.startswith("refs/remotes/") for line in changed)


def _says_what_git_did(w: World, tool: str, args: dict[str, Any], i: Ident, answer: Answer, before: Account,
                       after: Account, remote: Path | None, shared: set[Path]) -> list[str]:
    problems = []
    data = answer.data if isinstance(answer.data, dict) else {}
    tree = after.trees.get(i.git_dir, ())
    refs = after.shared.get(i.common, ())
    if i.top is not None and str(i.top) not in answer.text and tool != "madt_worktrees":
        problems.append(f"the result does not name the work tree it landed in ({i.top})")
    if tool == "madt_commit":
        sha = data.get("sha")
        if not sha or sha not in tree:
            problems.append(f"the reported commit {sha} is not HEAD of {i.top or 'the intended repository'}")
        else:
            got = run_git(i.top or i.git_dir, "--git-dir", str(i.git_dir), "diff-tree", "--root", "--no-commit-id",
                          "--name-only", "-r", sha).splitlines()
            if sorted(got) != sorted(data.get("files") or []):
                problems.append(f"commit {sha[:9]} holds {got}, the result says {data.get('files')}")
        default = remote_default(i)
        if default and data.get("branch") == default and not args.get("allow_default_branch"):
            problems.append(f"committed onto {default}, the branch origin calls its default, without "
                            "allow_default_branch")
    elif tool == "madt_push":
        sha, branch = data.get("sha"), data.get("branch")
        pushed_to = [r for r in shared if r in w.remotes]
        if remote is None or _remote_sha(remote, branch) != sha:
            problems.append(f"the reported push of {branch} at {sha} is not on {remote}, where git pushes")
        for r in pushed_to:
            if w.remotes[r].lower() not in answer.text.lower():
                problems.append(f"the push landed on {w.remotes[r]}, which the result does not name")
    elif tool == "madt_branch_create":
        line = f"refs/heads/{data.get('branch')} {data.get('sha')} "
        if data.get("sha") and line not in refs:
            problems.append(f"branch {data.get('branch')} is not at {data.get('sha')} in {i.common}")
        if data.get("checked_out") and f"refs/heads/{data.get('branch')}" not in tree:
            problems.append(f"{i.top} is not on {data.get('branch')} as reported")
    elif tool == "madt_branch_delete":
        if any(r.startswith(f"refs/heads/{data.get('branch')} ") for r in refs):
            problems.append(f"branch {data.get('branch')} is still in {i.common}")
    elif tool == "madt_switch":
        if f"refs/heads/{data.get('branch')}" not in tree:
            problems.append(f"{i.top} is not on {data.get('branch')} as reported")
    elif tool == "madt_worktrees" and args.get("action") in ("add", "remove"):
        listed = any(line == f"worktree {os.path.realpath(args['path'])}" for line in refs)
        if listed != (args["action"] == "add"):
            problems.append(f"worktree {args['path']} is {'not ' if not listed else ''}listed by git after "
                            f"{args['action']}")
    elif tool == "madt_finish":
        default = remote_default(i)
        landed = _remote_sha(remote, default) if remote and default else None
        if not landed or landed not in tree:
            problems.append(f"after the finish, {i.top} is not at origin's {default} ({landed})")
    elif tool == "madt_pull" and data.get("to") and data["to"] not in tree:
        problems.append(f"the reported pull to {data['to']} is not HEAD of {i.top}")
    return problems


def _hint_way_on(w: World, answer: Answer, launch: Ident | None) -> list[str]:
    """A name hint that disagrees never has the repository it said was wrong as the only way on."""
    steps = list(answer.error.get("next") or []) + [s for c in answer.error.get("choices") or [] for s in c]
    dirs = {s.get("args", {}).get("dir") for s in steps if isinstance(s, dict)}
    targets = {ident(Path(d)).common if d and os.path.isabs(d) and ident(Path(d)) else None for d in dirs}
    names = {_name_of(run_git(launch.top or launch.git_dir, "config", "--get", "remote.origin.url", check=False)),
             _name_of(run_git(launch.top or launch.git_dir, "remote", "get-url", "origin", check=False))} \
        if launch is not None else set()
    if launch is not None and targets == {launch.common} and (w.hint or "").casefold() not in names:
        return [f"the hint {w.hint} disagrees with {launch.top}, yet every way on leads back into it"]
    return []


def _name_of(url: str) -> str:
    """acme/<name> of a fake forge URL or bare repository path."""
    return "acme/" + url.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git").casefold() if url else ""


# --------------------------------------------------------------------------- the lane

def _edit(w: World, step: Step) -> None:
    tree = w.pick(w.places, step.dir or 0)
    if tree.is_dir() and not tree.name.endswith(".git") and ident(tree) is not None and ident(tree).top:
        top = ident(tree).top
        assert top is not None
        write_files(top, {"work.txt": f"edit {next(_SERIAL)}\n"})
        if step.arg.get("readme") and (top / "README.md").exists():
            write_files(top, {"README.md": "a person's unfinished edit\n"})


def run_plan(forge: FakeForge, base: Path, plan: Plan) -> list[str]:
    """Build the plan's world, run its steps through the MCP SDK client; every broken promise, in words."""
    w = build(forge, base, plan)
    launch = w.pick(w.places, plan.launch)
    fixed_tops = {t for t in (ident(p) for p in [*w.places, *w.trees]) if t and t.top for t in [t.top]}
    COUNTS["examples"] += 1
    found: list[str] = []
    server = mcp_server(launch, MADTEA_TOKEN=DEFAULT_TOKEN, **w.env)
    with start_blocking_portal() as portal:
        with portal.wrap_async_context_manager(Client(server, mode="legacy")) as client:
            before = account(w, fixed_tops)
            for n, step in enumerate(plan.steps):
                if step.kind == "edit":
                    _edit(w, step)
                    before = account(w, fixed_tops)
                    continue
                tool, args = _resolve(w, step)
                intended = ident(Path(args["dir"])) if "dir" in args else ident(launch)
                try:
                    answer = _answer(portal.call(bounded_call, client, tool, args))
                except TimeoutError:
                    raise AssertionError(f"hang: {tool} gave no answer within {CALL_BOUND:.0f} s") from None
                if tool == "madt_worktrees" and args.get("action") == "add" and answer.ok:
                    w.new_worktrees.append(Path(os.path.realpath(args["path"])))
                after = account(w, fixed_tops)
                COUNTS["calls"] += 1
                COUNTS[f"{tool}{'/' + args['action'] if 'action' in args else ''} "
                       f"{'ok' if answer.ok else answer.code}"] += 1
                problems = check(w, step, tool, args, intended, answer, before, after)
                if problems:
                    found.append(_story(w, plan, launch, n, tool, args, answer, problems))
                before = after
    return found


def _story(w: World, plan: Plan, launch: Path, n: int, tool: str, args: dict[str, Any], answer: Answer,
           problems: list[str]) -> str:
    lines = ["built: " + "; ".join(w.built), f"server env: {w.env}", f"launched in {launch}",
             f"step {n}: {tool} {json.dumps(args)}", f"answer: {answer.code or 'ok'}: {answer.text[:400]}"]
    return "\n".join(lines + [f"BROKEN: {p}" for p in problems])


def test_every_call_lands_only_where_git_says_it_was_meant(gitea_forge: FakeForge, tmp_path: Path) -> None:
    COUNTS.clear()
    serial = itertools.count()

    @ORACLE
    @given(plan=plans())
    def one(plan: Plan) -> None:
        found = run_plan(gitea_forge, tmp_path / f"ex{next(serial)}", plan)
        if found and REPORT:
            with open(REPORT, "a", encoding="utf-8") as fh:
                fh.write(json.dumps({"plan": repr(plan), "found": found}) + "\n")
            COUNTS["broken examples"] += 1
            return
        assert not found, "\n\n".join(found)

    try:
        one()
    finally:
        print(f"\ntopology oracle: {dict(sorted(COUNTS.items()))}")
    assert COUNTS["calls"] >= EXAMPLES


# --------------------------------------------------------------------------- the issue's cases, always run

# Each case: the primitives (the home repository is trees[0] and places[0]; places[1:4] are home/src, a
# plain folder and home/.git; each primitive's place follows), the launch place, and the calls.
KNOWN: dict[str, Plan] = {
    "core.worktree into another repo: branch_create dir=": Plan(
        (("core_worktree_repo", 0, 0),), "feat", 0, (Step("madt_branch_create", -1, {"name": "zz"}),)),
    "core.worktree into another repo: push dir=": Plan(
        (("core_worktree_repo", 0, 0),), "feat", 0, (Step("madt_push", -1, {"branch": "feat"}),)),
    "core.worktree into another repo: worktrees add dir=": Plan(
        (("core_worktree_repo", 0, 0),), "feat", 0, (Step("worktrees_add", -1, {"path": ("new", 0)}),)),
    "core.worktree into another repo: launched there, commit and switch": Plan(
        (("core_worktree_repo", 0, 0),), "feat", -1,
        (Step("edit", 0, {"readme": True}), Step("madt_commit", None, {"files": ["README.md"]}),
         Step("madt_switch", None, {"branch": "main"}))),
    "core.worktree into a plain folder: commit, push, worktrees add": Plan(
        (("core_worktree_plain", 0, 0),), "feat", -2,
        (Step("madt_commit", None, {"files": ["work.txt"]}), Step("madt_push", None, {}),
         Step("worktrees_add", -2, {"path": ("new", 1), "b": "wt-a"}))),
    "name hint of a nested child: the way on": Plan(
        (("nested", 0, 0), ("hint_name", 0, 1)), "feat", 0, (Step("madt_commit", None, {"files": ["work.txt"]}),)),
    "launched in a bare repository inside a work tree: commit": Plan(
        (("bare_inside", 0, 0),), "feat", -1,
        (Step("edit", 0, {}), Step("madt_commit", None, {"files": ["work.txt"]}))),
    "default branch trunk without origin/HEAD: commit": Plan(
        (("trunk", 0, 0),), "feat", -1, (Step("madt_commit", None, {"files": ["work.txt"]}),)),
    "remote.origin.pushurl: push": Plan((("pushurl", 0, 0),), "feat", 0, (Step("madt_push", None, {}),)),
    "url.pushInsteadOf: push": Plan((("push_instead_of", 0, 0),), "feat", 0, (Step("madt_push", None, {}),)),
    "url.insteadOf: push": Plan((("instead_of", 0, 0),), "feat", 0, (Step("madt_push", None, {}),)),
    "pushurl behind includeIf: push": Plan((("include_if", 0, 0),), "feat", 0, (Step("madt_push", None, {}),)),
    "GIT_DIR, GIT_INDEX_FILE and GIT_WORK_TREE of another repo in the server's environment": Plan(
        (("nested", 0, 0), ("env_git_dir", 0, 1), ("env_index_file", 0, 1), ("env_work_tree", 0, 1)), "feat", 0,
        (Step("madt_add", None, {"files": ["work.txt"]}), Step("madt_commit", -1, {"files": ["work.txt"]}),
         Step("madt_branch_create", 0, {"name": "topic", "checkout": True}))),
    "GIT_COMMON_DIR of a linked worktree's repo: commit in the worktree": Plan(
        (("worktree", 0, 0), ("env_common_dir", 0, 0)), "feat", -1,
        (Step("madt_commit", None, {"files": ["work.txt"]}), Step("madt_push", None, {}))),
    "separate git dir and submodule by dir=": Plan(
        (("separate", 0, 0), ("submodule", 0, 0)), "feat", 0,
        (Step("madt_commit", -2, {"files": ["work.txt"]}), Step("madt_commit", -1, {"files": ["work.txt"]}),
         Step("madt_push", -1, {}))),
    "symlinked dir= and fork remotes": Plan(
        (("fork", 0, 0), ("symlink", 1, 0)), "feat", 0,
        (Step("madt_commit", -1, {"files": ["work.txt"]}), Step("madt_push", -1, {"set_upstream": True}),
         Step("madt_pull", -1, {}))),
    "finish from the launch repository": Plan((), "feat", 0, (Step("madt_finish", None, {"files": ["work.txt"]}),)),
    "finish by dir= in a linked worktree, then prune": Plan(
        (("worktree", 0, 0),), "main", 0,
        (Step("madt_finish", -1, {"files": ["work.txt"]}), Step("madt_prune", 0, {}))),
    "finish where pushurl names another repository": Plan(
        (("pushurl", 0, 0),), "feat", 0, (Step("madt_finish", None, {"files": ["work.txt"]}),)),
    "worktrees add into another repository's work tree": Plan(
        (("nested", 0, 0),), "feat", 0, (Step("worktrees_add", 0, {"path": ("inside", 1), "b": "wt-a"}),)),
}


@pytest.mark.parametrize("case", list(KNOWN))
def test_each_topology_the_issue_names(gitea_forge: FakeForge, tmp_path: Path, case: str) -> None:
    found = run_plan(gitea_forge, tmp_path, KNOWN[case])
    assert not found, "\n\n".join(found)
