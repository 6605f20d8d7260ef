"""The chain walker: every refusal a topology produces has its way on run literally, to its end state.

For each topology and each local-git write of the registry (with the caller's
intent declared: the file ``feat.txt`` with known content, a title), the call is
made as an agent would make it. A refusal's ``next`` is run step by step, and each
of its ``choices`` in a sandbox of its own, up to a bound. A walk ends well only
in the caller's intent (for a commit or finish: that content committed on a branch
that is not the default) or in words for a person; it fails on a loop, a step that
fails with nothing to continue by, a write to a repository the walk did not
target, a proposed branch or path that already exists, a worktree proposed inside
another repository's working tree, or a "success" that leaves the work
uncommitted. Placeholders are filled from the intent; one the walker cannot
fill ends the walk as the caller's to continue.
"""
from __future__ import annotations

import collections
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pytest

import guard
import madtea
from topologies import commit_files, make_bare, make_repo, run_git, snapshot, write_files

CONTENT = "the caller's declared work\n"
TITLE = "Add the feature"
MAX_STEPS = 8
COUNTS: collections.Counter[str] = collections.Counter()


@dataclass
class World:
    launch: Path                      # where the server was started
    repos: list[Path]                 # every work tree a step could touch
    env: dict[str, str]               # caller signals
    dir: Path | None = None           # the repository the call names, if any


def _origin(name: str) -> str:
    return f"https://forge.example.test/acme/{name}.git"


def _on_main(base: Path) -> World:
    web = make_repo(base / "web", origin=_origin("web"))
    write_files(web, {"feat.txt": CONTENT})
    return World(web, [web], {})


def _umbrella(base: Path) -> World:
    top = make_repo(base / "top", origin=_origin("top"))
    run_git(top, "switch", "-q", "-c", "feat/top")
    child = make_repo(top / "child", origin=_origin("child"))
    run_git(child, "switch", "-q", "-c", "feat/child")
    for repo in (top, child):
        write_files(repo, {"feat.txt": CONTENT})
    return World(top, [top, child], {})


def _flat_signal(base: Path) -> World:
    web = make_repo(base / "web", origin=_origin("web"))
    api = make_repo(base / "api", origin=_origin("api"))
    for repo in (web, api):
        run_git(repo, "switch", "-q", "-c", "feat/x")
        write_files(repo, {"feat.txt": CONTENT})
    return World(web, [web, api], {"MADTEA_CALLER_REPO": "acme/api"})


def _foreign_primary(base: Path) -> World:
    home = make_repo(base / "home", origin=_origin("home"))
    run_git(home, "switch", "-q", "-c", "feat/home")
    bare = make_bare(base / "lib.git")
    lib = make_repo(base / "lib", origin=_origin("lib"))
    run_git(lib, "remote", "set-url", "--push", "origin", str(bare))
    write_files(lib, {"README.md": "the owner's unfinished edit\n", "feat.txt": CONTENT})
    return World(home, [home, lib], {}, dir=lib)


def _unborn(base: Path) -> World:
    web = make_repo(base / "web", origin=_origin("web"), commit=False)
    write_files(web, {"feat.txt": CONTENT})
    return World(web, [web], {})


def _detached(base: Path) -> World:
    web = make_repo(base / "web", origin=_origin("web"))
    commit_files(web, {"b.txt": "b\n"}, "second")
    run_git(web, "switch", "-q", "--detach", "HEAD~1")
    write_files(web, {"feat.txt": CONTENT})
    return World(web, [web], {})


WORLDS: dict[str, Callable[[Path], World]] = {
    "on-main": _on_main, "umbrella": _umbrella, "flat-signal": _flat_signal,
    "foreign-primary": _foreign_primary, "unborn": _unborn, "detached": _detached}

# The intent each local write declares; the registry says which operations there are.
INTENT = {"madt_add": {"files": ["feat.txt"]}, "madt_commit": {"files": ["feat.txt"], "title": TITLE},
          "madt_finish": {"files": ["feat.txt"], "title": TITLE}, "madt_branch_create": {"name": "topic"},
          "madt_switch": {"branch": "main"}, "madt_push": {}}
COMMITTING = {"madt_commit", "madt_finish"}


def _intent_args(op: madtea.Op) -> dict[str, Any]:
    return dict(INTENT.get(op.tool, {}))


def _local_writes() -> list[madtea.Op]:
    return [op for op in madtea.REGISTRY if op.kind == "local" and op.mutating and not op.cli_only
            and op.action is None and op.tool not in ("madt_prune", "madt_branch_delete", "madt_pull", "madt_push")]


# --------------------------------------------------------------------------- one walk

class WalkFailed(AssertionError):
    pass


def _fill(value: Any, fresh: Callable[[], str]) -> Any:
    """A placeholder filled from the intent, or None when only the caller could fill it."""
    if isinstance(value, list):
        filled = [_fill(v, fresh) for v in value]
        return None if any(v is None for v in filled) else filled
    if not guard.is_placeholder(value):
        return value
    what = value[1:-1]
    if "file" in what:
        return "feat.txt"
    if "title" in what or "subject" in what:
        return TITLE
    if "branch" in what and ("new" in what or "name" in what):
        return fresh()
    return None


def _branches(repo: Path) -> set[str]:
    return set(run_git(repo, "for-each-ref", "--format=%(refname:short)", "refs/heads").split())


def _check_proposal(step: dict[str, Any], world: World) -> None:
    """No proposed branch or path already exists; no worktree inside another repository's working tree."""
    args = step.get("args", {})
    repo = Path(args["dir"]) if args.get("dir") else world.launch
    if step.get("tool") == "madt_worktrees" and args.get("action") == "add":
        path = Path(args["path"])
        if path.exists():
            raise WalkFailed(f"proposes a worktree path that exists: {path}")
        for other in world.repos:
            if other != repo and path.is_relative_to(other):
                raise WalkFailed(f"proposes a worktree inside {other}'s working tree: {path}")
        if args.get("b") and repo.exists() and args["b"] in _branches(repo):
            raise WalkFailed(f"proposes branch {args['b']}, which exists")
    if step.get("tool") == "madt_branch_create" and repo.exists() and args.get("name") in _branches(repo):
        raise WalkFailed(f"proposes branch {args['name']}, which exists")


def _content_committed(world: World, default_too: bool = False) -> bool:
    """The declared content is in a commit on a branch that is not the default, in some repository of the world."""
    for repo in world.repos:
        for branch in _branches(repo) - (set() if default_too else {"main"}):
            shown = subprocess.run(["git", "show", f"{branch}:feat.txt"], cwd=repo, capture_output=True, text=True)
            if shown.returncode == 0 and shown.stdout == CONTENT:
                return True
    return False


def walk(world: World, tool: str, args: dict[str, Any], refused: madtea.Result, seen: tuple = (),
         depth: int = 0) -> str:
    """Follow one refusal's way on; return how the walk ended ("intent", "person", "caller")."""
    error = refused.error
    assert error is not None
    if guard.way_on_problem(error["next"], error["choices"], error["user_action"]):
        raise WalkFailed(f"{error['code']} has no single way on")
    if error["code"] in ("GIT_ERROR", "INTERNAL_ERROR"):
        raise WalkFailed(f"{tool} failed with {error['code']}: {refused.text}")
    if error["user_action"]:
        return "person"
    if depth > 3:
        raise WalkFailed("the chain does not end")
    return run_steps(world, error["next"], seen, depth, tool in COMMITTING)


def run_steps(world: World, steps: list[dict[str, Any]], seen: tuple, depth: int, committing: bool) -> str:
    counter = iter(range(1000))

    def fresh() -> str:
        return f"walk/{depth}-{next(counter)}"
    last = None
    for step in steps[:MAX_STEPS]:
        COUNTS["steps"] += 1
        if "shell" in step:
            done = subprocess.run(step["shell"], shell=True, cwd=world.launch, capture_output=True, text=True)
            if done.returncode != 0:
                raise WalkFailed(f"shell step failed: {step['shell']}: {done.stderr[-500:]}")
            continue
        args = {k: _fill(v, fresh) for k, v in step["args"].items()}
        if any(v is None for v in args.values()):
            return "caller"  # a value only the caller knows
        key = (step["tool"], repr(sorted(args.items())))
        if key in seen:
            raise WalkFailed(f"loop: {step['tool']} {args} again")
        seen = seen + (key,)
        _check_proposal({"tool": step["tool"], "args": args}, world)
        last = madtea.run(step["tool"], args, madtea.Context("mcp", world.launch))
        if last.error:
            if last.error["choices"]:
                return walk_choices(world, step["tool"], args, last, seen, depth + 1)
            return walk(world, step["tool"], args, last, seen, depth + 1)
    override = any(step.get("args", {}).get("allow_default_branch") for step in steps)
    if committing and not _content_committed(world, default_too=override):
        raise WalkFailed("every step succeeded, but the declared work is committed on no feature branch")
    return "intent"


def walk_choices(world: World, tool: str, args: dict[str, Any], refused: madtea.Result, seen: tuple,
                 depth: int) -> str:
    """Choices met mid-walk: the world has moved on, so the first is walked here (every choice of the
    first refusal is walked in a sandbox of its own by the test)."""
    COUNTS["choices seen"] += len(refused.error["choices"])
    return run_steps(world, refused.error["choices"][0], seen, depth, tool in COMMITTING)


# --------------------------------------------------------------------------- the walk over every topology

# Cases the walk finds broken whose fix is not on main yet: strict, so each flips when it lands.
KNOWN: dict[tuple[str, str], str] = {}


def _cases() -> list[Any]:
    return [pytest.param(world, op.tool, marks=pytest.mark.xfail(strict=True, reason=KNOWN[(world, op.tool)]))
            if (world, op.tool) in KNOWN else (world, op.tool) for world in WORLDS for op in _local_writes()]


@pytest.mark.parametrize("world_name,tool", _cases())
def test_every_refusal_chain_ends_where_the_caller_meant(world_name: str, tool: str, tmp_path: Path,
                                                         hermetic_seal: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    def refused_in(world: World) -> tuple[dict[str, Any], madtea.Result]:
        for key, value in world.env.items():
            monkeypatch.setenv(key, value)
        args = _intent_args(madtea.find_op(tool, None)) | ({"dir": str(world.dir)} if world.dir else {})
        return args, madtea.run(tool, args, madtea.Context("mcp", world.launch))

    probe = WORLDS[world_name](tmp_path / "probe")
    args, first = refused_in(probe)
    if not first.error:
        pytest.skip(f"{tool} is not refused on {world_name}")
    COUNTS["refusals walked"] += 1
    ways = range(len(first.error["choices"])) if first.error["choices"] else [None]
    for index in ways:
        world, result = (probe, first) if index is None else (WORLDS[world_name](tmp_path / f"choice-{index}"), None)
        if result is None:
            args, result = refused_in(world)
            COUNTS["choices walked"] += 1
        before = snapshot(world.repos)
        steps = result.error["next"] if index is None else result.error["choices"][index]
        try:
            ended = walk(world, tool, args, result) if index is None else \
                run_steps(world, steps, (), 0, tool in COMMITTING)
        except WalkFailed as failed:
            raise AssertionError(f"{world_name} {tool} {'next' if index is None else f'choice {index}'}: "
                                 f"{result.error['code']}: {failed}") from None
        COUNTS[f"ended {ended}"] += 1
        touched = _targets(steps, world)
        after = snapshot(world.repos)
        for repo in world.repos:
            if repo not in touched and before.get(repo) != after.get(repo):
                raise AssertionError(f"{world_name} {tool}: a stray write in {repo}")


def _targets(steps: list[dict[str, Any]], world: World) -> set[Path]:
    out = {world.launch if world.dir is None else world.dir}
    for step in steps:
        if step.get("args", {}).get("dir"):
            out.add(Path(os.path.realpath(step["args"]["dir"])))
    return out


def test_walk_counts() -> None:
    """Printed for the record: how many refusals and choices the walker followed (run with -s)."""
    print(f"\nwalker: {dict(sorted(COUNTS.items()))}")
