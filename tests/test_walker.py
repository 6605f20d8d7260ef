"""The chain walker: every refusal a topology produces has its way on run literally, to its end state.

For each topology and each write of the registry (local git, push and pull, and the forge's action
tools; with the caller's intent declared: the file ``feat.txt`` with known content, a title), the
call is made as an agent would make it, against real git and a fake forge that every repository of
the topology is cloned from. A refusal's ``next`` is run step by step; at every refusal met on the
way, each of its ``choices`` is walked, each in a sandbox of its own (the topology built afresh and
the choices before it replayed), up to a bound. A walk ends well only in the caller's intent or in
words for a person. The intent of a commit is that content committed on a branch that is not the
default; of a finish, that content merged into the forge's default branch from a feature branch; of
any other call, the call itself answered without a refusal. A walk fails on a loop, a step that
fails with nothing to continue by, a write to a repository the walk did not target, a proposed
branch or path that already exists, a worktree proposed inside another repository's working tree,
or a "success" that leaves the work uncommitted or unmerged. Placeholders are filled from the
intent; one the walker cannot fill ends the walk as the caller's to continue.
"""
from __future__ import annotations

import collections
import itertools
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

import guard
import madtea
from fakeforge import DEFAULT_TOKEN, FakeForge, assert_no_violations
from remote_env import clone_of
from topologies import commit_files, run_git, snapshot, write_files

pytestmark = pytest.mark.slow  # an exhaustive sweep: not in the fast lane

CONTENT = "the caller's declared work\n"
TITLE = "Add the feature"
MAX_STEPS = 8          # steps of one way on
MAX_DEPTH = 4          # refusals met, one after another, in one walk
MAX_WALKS = 10         # walks of one first refusal (each choice met is a walk of its own)
COUNTS: collections.Counter[str] = collections.Counter()
_SERIAL = itertools.count(1)


@dataclass
class World:
    forge: FakeForge
    launch: Path                      # where the server was started
    repos: dict[Path, str]            # every work tree a step could touch, and its repository on the forge
    env: dict[str, str]               # caller signals
    dir: Path | None = None           # the repository the call names, if any
    names: dict[str, str] = field(default_factory=dict)  # the topology's role names -> forge names


def _repo(forge: FakeForge, world: dict[str, str], role: str, path: Path, init: bool = True) -> Path:
    name = f"{role}{next(_SERIAL)}"
    forge.add_repo("acme", name, init=init)
    if init:
        forge.create_issue("acme", name, "A bug", "the walker's issue")
    world[role] = name
    path.parent.mkdir(parents=True, exist_ok=True)
    return clone_of(forge, path, repo=name)


def _on_main(forge: FakeForge, base: Path) -> World:
    names: dict[str, str] = {}
    web = _repo(forge, names, "web", base / "web")
    write_files(web, {"feat.txt": CONTENT})
    return World(forge, web, {web: names["web"]}, {}, names=names)


def _umbrella(forge: FakeForge, base: Path) -> World:
    names: dict[str, str] = {}
    top = _repo(forge, names, "top", base / "top")
    run_git(top, "switch", "-q", "-c", "feat/top")
    child = _repo(forge, names, "child", top / "child")
    run_git(child, "switch", "-q", "-c", "feat/child")
    for repo in (top, child):
        write_files(repo, {"feat.txt": CONTENT})
    return World(forge, top, {top: names["top"], child: names["child"]}, {}, names=names)


def _flat_signal(forge: FakeForge, base: Path) -> World:
    names: dict[str, str] = {}
    web = _repo(forge, names, "web", base / "web")
    api = _repo(forge, names, "api", base / "api")
    for repo in (web, api):
        run_git(repo, "switch", "-q", "-c", "feat/x")
        write_files(repo, {"feat.txt": CONTENT})
    return World(forge, web, {web: names["web"], api: names["api"]}, {"MADTEA_CALLER_REPO": f"acme/{names['api']}"},
                 names=names)


def _foreign_primary(forge: FakeForge, base: Path) -> World:
    names: dict[str, str] = {}
    home = _repo(forge, names, "home", base / "home")
    run_git(home, "switch", "-q", "-c", "feat/home")
    lib = _repo(forge, names, "lib", base / "lib")
    write_files(lib, {"README.md": "the owner's unfinished edit\n", "feat.txt": CONTENT})
    return World(forge, home, {home: names["home"], lib: names["lib"]}, {}, dir=lib, names=names)


def _unborn(forge: FakeForge, base: Path) -> World:
    names: dict[str, str] = {}
    web = _repo(forge, names, "web", base / "web", init=False)
    write_files(web, {"feat.txt": CONTENT})
    return World(forge, web, {web: names["web"]}, {}, names=names)


def _detached(forge: FakeForge, base: Path) -> World:
    names: dict[str, str] = {}
    web = _repo(forge, names, "web", base / "web")
    commit_files(web, {"b.txt": "b\n"}, "second")
    run_git(web, "switch", "-q", "--detach", "HEAD~1")
    write_files(web, {"feat.txt": CONTENT})
    return World(forge, web, {web: names["web"]}, {}, names=names)


WORLDS: dict[str, Callable[[FakeForge, Path], World]] = {
    "on-main": _on_main, "umbrella": _umbrella, "flat-signal": _flat_signal,
    "foreign-primary": _foreign_primary, "unborn": _unborn, "detached": _detached}

# The intent each write declares; the registry says which operations there are.
INTENT: dict[tuple[str, str | None], dict[str, Any]] = {
    ("madt_add", None): {"files": ["feat.txt"]},
    ("madt_commit", None): {"files": ["feat.txt"], "title": TITLE},
    ("madt_finish", None): {"files": ["feat.txt"], "title": TITLE},
    ("madt_branch_create", None): {"name": "topic"},
    ("madt_switch", None): {"branch": "main"},
    ("madt_push", None): {}, ("madt_pull", None): {},
    ("madt_worktrees", "add"): {"b": "topic"},
    ("madt_issues", "create"): {"title": TITLE, "body": "what the walker asks"},
    ("madt_issues", "comment"): {"number": 1, "body": "the walker's comment"},
    ("madt_issues", "close"): {"numbers": [1]},
    ("madt_labels", "create"): {"name": "walked", "color": "#ededed"},
    ("madt_milestones", "create"): {"title": "Walked"},
    ("madt_issues", "cancel_stopwatch"): {"number": 1},
    ("madt_issues", "delete_time"): {"number": 1, "time_id": 1},
}
COMMITTING = {"madt_commit", "madt_finish"}


def _ops() -> list[madtea.Op]:
    return [op for op in madtea.REGISTRY if op.mutating and not op.cli_only and (op.tool, op.action) in INTENT]


# --------------------------------------------------------------------------- one walk

class WalkFailed(AssertionError):
    pass


class Branch(Exception):
    """A choice point this walk has not been told how to take: the explorer walks each alternative."""


@dataclass
class Walk:
    world: World
    tool: str
    action: str | None
    path: tuple[int, ...]             # which alternative to take at each choice point met, in order
    met: int = 0                      # choice points met so far
    found: list[tuple[int, ...]] = field(default_factory=list)  # paths of alternatives not taken here
    ran: list[dict[str, Any]] = field(default_factory=list)      # every step run, for the stray-write check
    counter: Iterator[int] = field(default_factory=lambda: itertools.count())
    trace: list[str] = field(default_factory=list)  # each step and how it answered, for a failure's message

    def fresh(self) -> str:
        return f"walk/{next(self.counter)}"

    def choose(self, choices: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
        COUNTS["choice points"] += 1
        if self.met < len(self.path):
            index = self.path[self.met]
        else:
            index = 0
            self.found += [self.path[:self.met] + (i,) for i in range(1, len(choices))]
            self.path = self.path + (0,)
        self.met += 1
        return choices[index]


def _fill(value: Any, walk: Walk) -> Any:
    """A placeholder filled from the intent, or None when only the caller could fill it."""
    if isinstance(value, list):
        filled = [_fill(v, walk) for v in value]
        return None if any(v is None for v in filled) else filled
    if not guard.is_placeholder(value):
        return value
    what = value[1:-1]
    if "file" in what:
        return "feat.txt"
    if "title" in what or "subject" in what:
        return TITLE
    if "branch" in what and ("new" in what or "name" in what):
        return walk.fresh()
    return None


def _branches(repo: Path) -> set[str]:
    if not repo.exists():
        return set()
    return set(run_git(repo, "for-each-ref", "--format=%(refname:short)", "refs/heads").split())


def _check_proposal(step: dict[str, Any], world: World) -> None:
    """No proposed branch or path already exists; no worktree inside another repository's working tree."""
    args = step.get("args", {})
    repo = Path(args["dir"]) if args.get("dir") else world.launch
    if step.get("tool") == "madt_worktrees" and args.get("action") == "add" and args.get("path"):
        path = Path(args["path"])
        if path.exists():
            raise WalkFailed(f"proposes a worktree path that exists: {path}")
        for other in world.repos:
            if other != repo and path.is_relative_to(other):
                raise WalkFailed(f"proposes a worktree inside {other}'s working tree: {path}")
        if args.get("b") and args["b"] in _branches(repo):
            raise WalkFailed(f"proposes branch {args['b']}, which exists")
    if step.get("tool") == "madt_branch_create" and args.get("name") in _branches(repo):
        raise WalkFailed(f"proposes branch {args['name']}, which exists")


def _shown(repo: Path, rev: str) -> str | None:
    done = subprocess.run(["git", "show", f"{rev}:feat.txt"], cwd=repo, capture_output=True, text=True)
    return done.stdout if done.returncode == 0 else None


def _content_committed(world: World, default_too: bool = False) -> bool:
    """The declared content is in a commit on a branch that is not the default, in some repository of the world."""
    for repo in world.repos:
        for branch in _branches(repo) - (set() if default_too else {"main"}):
            if _shown(repo, branch) == CONTENT:
                return True
    return False


def _content_merged(world: World) -> bool:
    """The declared content is on the forge's default branch of some repository of the world."""
    for name in world.repos.values():
        bare = world.forge.bare_path("acme", name)
        if _shown(bare, world.forge.repo("acme", name).default_branch) == CONTENT:
            return True
    return False


def _intent_reached(walk: Walk, last: dict[str, Any] | None, override: bool) -> None:
    if walk.tool == "madt_finish":
        if not _content_merged(walk.world):
            raise WalkFailed("every step succeeded, but the declared work is merged nowhere")
        COUNTS["ended merged"] += 1
    elif walk.tool in COMMITTING:
        if not _content_committed(walk.world, default_too=override):
            raise WalkFailed("every step succeeded, but the declared work is committed on no feature branch")
    elif walk.tool == "madt_add":
        if not any(_shown(repo, "") == CONTENT or _content_committed(walk.world) for repo in walk.world.repos):
            raise WalkFailed("every step succeeded, but the declared file is staged nowhere")
    elif walk.tool == "madt_branch_create":
        if not any(INTENT[("madt_branch_create", None)]["name"] in _branches(repo) for repo in walk.world.repos):
            raise WalkFailed("every step succeeded, but the branch asked for is nowhere")
    elif walk.tool == "madt_switch" and any(
            run_git(repo, "symbolic-ref", "-q", "HEAD", check=False) == "refs/heads/main" for repo in walk.world.repos):
        pass  # on the branch asked for (an unborn one too)
    elif walk.tool == "madt_switch" and last and last["tool"] == "madt_worktrees":
        pass  # another repository's checkout is left alone: a worktree of one's own has the branch
    elif last is None or (last["tool"], last["args"].get("action")) != (walk.tool, walk.action):
        raise WalkFailed(f"the way on ends in {last and last['tool']}, not in the {walk.tool} that was asked for")


def follow(walk: Walk, refused: madtea.Result, seen: tuple, depth: int) -> str:
    """Follow one refusal's way on; return how the walk ended ("intent", "person", "caller")."""
    error = refused.error
    assert error is not None
    problem = guard.way_on_problem(error["next"], error["choices"], error["user_action"])
    if problem:
        raise WalkFailed(f"{error['code']} has no single way on: {problem}")
    if error["code"] in ("GIT_ERROR", "INTERNAL_ERROR"):
        raise WalkFailed(f"failed with {error['code']}: {refused.text}")
    if error["user_action"]:
        return "person"
    if depth > MAX_DEPTH:
        raise WalkFailed("the chain does not end")
    steps = walk.choose(error["choices"]) if error["choices"] else error["next"]
    return run_steps(walk, steps, seen, depth)


def run_steps(walk: Walk, steps: list[dict[str, Any]], seen: tuple, depth: int) -> str:
    world = walk.world
    last = None
    for step in steps[:MAX_STEPS]:
        COUNTS["steps"] += 1
        if "shell" in step:
            done = subprocess.run(step["shell"], shell=True, cwd=world.launch, capture_output=True, text=True)
            if done.returncode != 0:
                raise WalkFailed(f"shell step failed: {step['shell']}: {done.stderr[-500:]}")
            continue
        args = {k: _fill(v, walk) for k, v in step["args"].items()}
        if any(v is None for v in args.values()):
            COUNTS["caller fills " + ", ".join(f"{step['tool']} {k}={v}" for k, v in step["args"].items()
                                               if args[k] is None)] += 1
            return "caller"  # a value only the caller knows
        last = {"tool": step["tool"], "args": args}
        _check_proposal(last, world)
        walk.ran.append(last)
        result = madtea.run(step["tool"], args, madtea.Context("mcp", world.launch))
        walk.trace.append(f"{guard.render_call(last)} -> {result.error['code'] if result.error else 'ok'}")
        if result.error:
            # The same call refused the same way again is a loop (once a step changed what it refused, the
            # same call may well be the way on).
            key = (step["tool"], repr(sorted(args.items())), result.error["code"])
            if key in seen:
                raise WalkFailed(f"loop: {step['tool']} {args} refused with {result.error['code']} again")
            return follow(walk, result, seen + (key,), depth + 1)
    override = any(guard.is_override(step) for step in steps if "args" in step)
    _intent_reached(walk, last, override)
    return "intent"


# --------------------------------------------------------------------------- the walk over every topology

# Cases the walk finds broken whose fix is not on main yet: strict, so each flips when it lands.
KNOWN: dict[tuple[str, str], str] = {}


@pytest.fixture(scope="module")
def forge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeForge]:
    """One fake forge for the module (each world gets repositories of its own on it)."""
    shared = FakeForge("gitea", base_dir=tmp_path_factory.mktemp("walker-forge"))
    shared.start()
    try:
        yield shared
    finally:
        shared.stop()
    assert_no_violations(shared)


def _case_id(op: madtea.Op) -> str:
    return op.tool + (f":{op.action}" if op.action else "")


def _cases() -> list[Any]:
    out = []
    for world in WORLDS:
        for op in _ops():
            known = KNOWN.get((world, _case_id(op)))
            marks = [pytest.mark.xfail(strict=True, reason=known)] if known else []
            out.append(pytest.param(world, op, id=f"{world}-{_case_id(op)}", marks=marks))
    return out


@pytest.mark.parametrize("world_name,op", _cases())
def test_every_refusal_chain_ends_where_the_caller_meant(world_name: str, op: madtea.Op, forge: FakeForge,
                                                         tmp_path: Path, hermetic_seal: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    forge.rewrite_git_urls()
    monkeypatch.setenv("MADTEA_TOKEN", DEFAULT_TOKEN)
    monkeypatch.setattr(madtea, "wait_mergeable", _no_pause(madtea.wait_mergeable))
    serial = itertools.count()

    def build() -> tuple[World, dict[str, Any], madtea.Result]:
        world = WORLDS[world_name](forge, tmp_path / f"w{next(serial)}")
        for key, value in world.env.items():
            monkeypatch.setenv(key, value)
        args = dict(INTENT[(op.tool, op.action)]) | ({"action": op.action} if op.action else {})
        if op.kind == "local" and world.dir:
            args["dir"] = str(world.dir)
        return world, args, madtea.run(op.tool, args, madtea.Context("mcp", world.launch))

    world, args, first = build()
    if not first.error:
        pytest.skip(f"{_case_id(op)} is not refused on {world_name}")
    COUNTS["refusals walked"] += 1
    pending: list[tuple[int, ...]] = [()]
    walks = 0
    while pending and walks < MAX_WALKS:
        path = pending.pop(0)
        if walks:
            world, args, first = build()
            COUNTS["choices walked"] += 1
        walks += 1
        walk = Walk(world, op.tool, op.action, path)
        before = snapshot(world.repos)
        try:
            ended = follow(walk, first, (), 0)
        except WalkFailed as failed:
            raise AssertionError(f"{world_name} {_case_id(op)} by choices {walk.path}: {first.error['code']}: "
                                 f"{failed}\n  " + "\n  ".join(walk.trace)) from None
        pending += walk.found
        COUNTS[f"ended {ended}"] += 1
        touched = _targets(walk.ran, world)
        after = snapshot(world.repos)
        for repo in world.repos:
            if repo not in touched and before.get(repo) != after.get(repo):
                raise AssertionError(f"{world_name} {_case_id(op)} by choices {walk.path}: a stray write in {repo}")
    COUNTS["choice paths left unwalked (bound)"] += len(pending)


def _no_pause(real: Callable[..., Any]) -> Callable[..., Any]:
    """The mergeability poll without its pauses: how often it looks is what matters here."""
    return lambda api, number, attempts=10, delay=0.5: real(api, number, attempts, 0)


def _targets(steps: list[dict[str, Any]], world: World) -> set[Path]:
    out = {world.launch if world.dir is None else world.dir}
    for step in steps:
        if step.get("args", {}).get("dir"):
            out.add(Path(os.path.realpath(step["args"]["dir"])))
    return out


def test_walk_counts() -> None:
    """Printed for the record: how many refusals and choices the walker followed (run with -s)."""
    print(f"\nwalker: {dict(sorted(COUNTS.items()))}")
