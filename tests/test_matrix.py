"""The scenario matrix: topology x caller signal x every non-read local-git action x with/without dir=.

Each case runs through the real dispatcher (guard, services, real git) and asserts:
allowed or refused, the code, that a refusal names both repos and carries next or
user_action, and with workspace snapshots that no repository other than the target
changed (nothing at all on a refusal).

The expected outcome comes from an oracle written from the design's rules, not from
the implementation.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pytest

import guard
import madtea
from topologies import make_repo, make_worktree, run_git, snapshot, assert_only_changed

pytestmark = pytest.mark.slow  # an exhaustive sweep: not in the fast lane

GUARD_CODES = {"WRONG_REPO", "MULTI_REPO_WORKSPACE", "FOREIGN_TARGET", "FOREIGN_PRIMARY", "DEFAULT_BRANCH",
               "UNDECLARED_FILES", "MID_OPERATION", "BAD_ARGUMENT", "UNKNOWN_PARAMETER"}


@dataclass
class World:
    """One topology, seen from the server: where it was launched, what dir= names, and every repo."""

    name: str
    launch: Path
    target: Path                    # what dir= names in the dir cases
    repos: list[Path]
    launch_is_repo: bool = True
    nested: bool = False            # the launch repo holds distinct nested repos
    foreign: str | None = None      # None | "primary" | "linked": how dir= target relates to the launch repo
    elsewhere: Path | None = None   # an unrelated repo, for disagreeing signals


def _family(world: World, path: Path) -> set[Path]:
    """Every work tree that shares *path*'s repository (a linked worktree's refs are its main's)."""
    common = Path(os.path.realpath(run_git(path, "rev-parse", "--path-format=absolute", "--git-common-dir")))
    out = set()
    for repo in world.repos:
        other = Path(os.path.realpath(run_git(repo, "rev-parse", "--path-format=absolute", "--git-common-dir")))
        if other == common:
            out.add(Path(os.path.realpath(repo)))
    return out


def _on_feature(repo: Path) -> None:
    if run_git(repo, "branch", "--show-current") != "feat/x":
        run_git(repo, "switch", "-q", "-C", "feat/x")


def build(name: str, tmp: Path) -> World:
    elsewhere = make_repo(tmp / "elsewhere", origin="https://forge.example.test/acme/elsewhere.git")
    origin = "https://forge.example.test/acme/{}.git".format
    if name == "single":
        web = make_repo(tmp / "web", origin=origin("web"))
        world = World(name, web, web, [web, elsewhere], elsewhere=elsewhere)
    elif name == "nested":
        top = make_repo(tmp / "umbrella", origin=origin("umbrella"))
        child = make_repo(top / "api", origin=origin("api"))
        scp = make_repo(top / "docs", origin="git@forge.example.test:acme/docs.git")
        world = World(name, top, child, [top, child, scp, elsewhere], nested=True, foreign="primary",
                      elsewhere=elsewhere)
    elif name == "flat":
        web = make_repo(tmp / "src" / "web", origin=origin("web"))
        api = make_repo(tmp / "src" / "api", origin=origin("api"))
        world = World(name, web, api, [web, api, elsewhere], foreign="primary", elsewhere=api)
    elif name == "worktree":
        web = make_repo(tmp / "web", origin=origin("web"))
        wt = make_worktree(web, tmp / "web-wt", "wt-branch")
        world = World(name, web, wt, [web, wt, elsewhere], elsewhere=elsewhere)
    elif name == "foreign-worktree":
        home = make_repo(tmp / "web", origin=origin("web"))
        lib = make_repo(tmp / "lib", origin="git@forge.example.test:acme/lib.git")
        wt = make_worktree(lib, tmp / "lib-wt", "fix")
        world = World(name, home, wt, [home, lib, wt, elsewhere], foreign="linked", elsewhere=elsewhere)
    elif name == "foreign-primary":
        home = make_repo(tmp / "web", origin=origin("web"))
        lib = make_repo(tmp / "lib", origin="git@forge.example.test:acme/lib.git")
        (lib / "README.md").write_text("a stranger's unsaved edit\n")
        world = World(name, home, lib, [home, lib, elsewhere], foreign="primary", elsewhere=elsewhere)
    elif name == "outside":
        plain = tmp / "plain"
        plain.mkdir()
        web = make_repo(tmp / "web", origin=origin("web"))
        world = World(name, plain, web, [web, elsewhere], launch_is_repo=False, foreign="primary",
                      elsewhere=elsewhere)
    elif name == "symlink":
        real = make_repo(tmp / "real" / "web", origin=origin("web"))
        link = tmp / "link-web"
        link.symlink_to(real, target_is_directory=True)
        world = World(name, real, link, [real, elsewhere], elsewhere=elsewhere)
    else:
        raise ValueError(name)
    for repo in world.repos:
        if repo != world.elsewhere:
            _on_feature(repo)
    return world


# --------------------------------------------------------------------------- actions

@dataclass
class Action:
    tool: str
    action: str | None
    prepare: Callable[[Path, int, Path], dict[str, Any]]   # (target repo, case index, tmp) -> args
    immutable_on_foreign_primary: bool = False
    foreign_needs_branch: bool = False                    # push and finish must name branch= on a foreign target
    refused_on_foreign_linked: bool = False                # prune


def _new_file(repo: Path, i: int, tmp: Path) -> dict[str, Any]:
    name = f"new-{i}.txt"
    (repo / name).write_text(f"{i}\n")
    return {"files": [name]}


def _commit_args(repo: Path, i: int, tmp: Path) -> dict[str, Any]:
    return _new_file(repo, i, tmp) | {"title": f"change {i}"}


def _merged_branch(repo: Path, i: int, tmp: Path) -> dict[str, Any]:
    run_git(repo, "branch", f"merged-{i}", "HEAD")
    return {"name": f"merged-{i}"}


def _spare_worktree(repo: Path, i: int, tmp: Path) -> dict[str, Any]:
    path = tmp / f"spare-{i}"
    run_git(repo, "worktree", "add", "-q", "--detach", str(path))
    return {"path": str(Path(os.path.realpath(path)))}


ACTIONS = [
    Action("madt_add", None, _new_file, immutable_on_foreign_primary=True),
    Action("madt_commit", None, _commit_args, immutable_on_foreign_primary=True),
    Action("madt_push", None, lambda r, i, t: {}, foreign_needs_branch=True),
    Action("madt_pull", None, lambda r, i, t: {}, immutable_on_foreign_primary=True),
    Action("madt_branch_create", None, lambda r, i, t: {"name": f"topic-{i}"}),
    Action("madt_branch_create", "checkout", lambda r, i, t: {"name": f"co-{i}", "checkout": True},
           immutable_on_foreign_primary=True),
    Action("madt_branch_delete", None, _merged_branch),
    Action("madt_switch", None, lambda r, i, t: {"branch": "feat/x"}, immutable_on_foreign_primary=True),
    Action("madt_worktrees", "add", lambda r, i, t: {"path": str(t / f"added-{i}"), "b": f"wt-{i}"}),
    Action("madt_worktrees", "remove", _spare_worktree, immutable_on_foreign_primary=True),
    Action("madt_prune", None, lambda r, i, t: {}, immutable_on_foreign_primary=True, refused_on_foreign_linked=True),
    Action("madt_finish", None, _commit_args, foreign_needs_branch=True),
]

SIGNALS = ["none", "env-match", "env-mismatch", "root-match", "root-mismatch", "several-roots", "non-repo-root"]


def expected(world: World, act: Action, signal: str | None, with_dir: bool) -> str | None:
    """The code the design's rules give, or None when the guard lets the call through."""
    if not with_dir:
        if not world.launch_is_repo:
            return "BAD_ARGUMENT"
        if signal in ("env-mismatch", "root-mismatch"):
            return "WRONG_REPO"
        if world.nested and signal != "env-match":
            return "MULTI_REPO_WORKSPACE"
        return None
    if world.foreign is None:
        return None
    if act.foreign_needs_branch:
        return "FOREIGN_TARGET"
    if world.foreign == "primary" and act.immutable_on_foreign_primary:
        return "FOREIGN_PRIMARY"
    if world.foreign == "linked" and act.refused_on_foreign_linked:
        return "FOREIGN_TARGET"
    return None


def _signal_setup(world: World, signal: str, monkeypatch: pytest.MonkeyPatch, tmp: Path) -> list[str] | None:
    monkeypatch.delenv("MADTEA_CALLER_REPO", raising=False)
    plain = tmp / "not-a-repo-root"
    plain.mkdir(exist_ok=True)
    if signal == "env-match":
        monkeypatch.setenv("MADTEA_CALLER_REPO", str(world.launch))
    elif signal == "env-mismatch":
        monkeypatch.setenv("MADTEA_CALLER_REPO", str(world.elsewhere))
    return {"none": None, "env-match": None, "env-mismatch": None,
            "root-match": [world.launch.as_uri()], "root-mismatch": [world.elsewhere.as_uri()],
            "several-roots": [world.launch.as_uri(), world.elsewhere.as_uri()],
            "non-repo-root": [plain.as_uri()]}[signal]


WORLDS = ["single", "nested", "flat", "worktree", "foreign-worktree", "foreign-primary", "outside", "symlink"]


@pytest.mark.parametrize("act", ACTIONS, ids=lambda a: a.tool + (f"-{a.action}" if a.action else ""))
@pytest.mark.parametrize("world_name", WORLDS)
def test_matrix(world_name: str, act: Action, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    world = build(world_name, tmp_path)
    cases: list[tuple[str | None, bool]] = [(s, False) for s in SIGNALS] + [(None, True)]
    for i, (signal, with_dir) in enumerate(cases):
        roots = _signal_setup(world, signal, monkeypatch, tmp_path) if signal else None
        if not signal:
            monkeypatch.delenv("MADTEA_CALLER_REPO", raising=False)
        target = Path(os.path.realpath(world.target if with_dir else world.launch))
        args = act.prepare(target, i, tmp_path) if world.launch_is_repo or with_dir else {"files": ["x"],
                                                                                              "title": "t"}
        args = {k: v for k, v in args.items() if k in _specs(act)}
        if act.action in ("add", "remove"):
            args["action"] = act.action
        if with_dir:
            args["dir"] = str(world.target)
        before = snapshot(world.repos)
        result = madtea.run(act.tool, args, madtea.Context("mcp", world.launch, roots))
        after = snapshot(world.repos)
        want = expected(world, act, signal, with_dir)
        label = f"{world_name} {act.tool} signal={signal} dir={with_dir}: {result.text}"
        code = result.error["code"] if result.error else None
        if want is None:
            assert code not in GUARD_CODES, label
            assert_only_changed(before, after, _family(world, target))
        else:
            assert code == want, label
            assert guard.way_on_problem(result.error["next"], result.error["choices"],
                                        result.error["user_action"]) is None, label
            assert_only_changed(before, after, set())
            if want == "WRONG_REPO":
                assert "acme/" + world.launch.name in result.text and "elsewhere" in result.text or \
                    world.elsewhere.name in result.text, label
            if want in ("FOREIGN_PRIMARY", "FOREIGN_TARGET"):
                assert str(world.target) in result.text or str(os.path.realpath(world.target)) in result.text, label


def _specs(act: Action) -> set[str]:
    ops = [op for op in madtea.REGISTRY if op.tool == act.tool and (op.action == act.action or
                                                                     act.action == "checkout")]
    return set().union(*(set(op.specs) for op in ops))


def test_cli_surface_ignores_signals_but_keeps_the_other_rules(tmp_path: Path, monkeypatch) -> None:
    """On the CLI the shell's cwd is the person's intent: no wrong-repo signals, no workspace check."""
    world = build("nested", tmp_path)
    monkeypatch.setenv("MADTEA_CALLER_REPO", str(world.elsewhere))
    (world.launch / "n.txt").write_text("n\n")
    ok = madtea.run("madt_commit", {"title": "t", "files": ["n.txt"]}, madtea.Context("cli", world.launch))
    assert ok.error is None, ok.text
    refused = madtea.run("madt_add", {"files": ["."]}, madtea.Context("cli", world.launch))
    assert refused.error["code"] == "UNDECLARED_FILES"
    foreign = madtea.run("madt_pull", {"dir": str(world.target)}, madtea.Context("cli", world.launch))
    assert foreign.error["code"] == "FOREIGN_PRIMARY"
