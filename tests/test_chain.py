"""The chain test: every refusal and hook text is terminal or forwarding, never a dead end or a cycle.

Refusals are produced by driving the rules over a grid of facts (every local-git
operation of the registry against every kind of target and state, every remote
rule, every argument rule) and by the runtime refusals of the services. For each:
every ``next`` names a real operation with valid parameters, every shell step it
recommends passes the hook's classifier, and a refusal with no ``next`` carries a
``user_action``. MCP refusal texts never send the agent to the madtea CLI or a ``cd``.
The hook's own denials are checked the same way, from its command table.
"""
from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import Iterator

import pytest

import gitops
import guard
import madtea
import hook_cases
from helpers import classify as classify_in, repo_facts
from topologies import commit_files, make_repo, run_git


# --------------------------------------------------------------------------- producing refusals

HOME = repo_facts("/w/web")
TARGETS = {"self": (HOME, False), "worktree": (repo_facts("/w/web-wt", linked=True, common="/w/web/.git"), True),
           "foreign-primary": (repo_facts("/x/lib"), True),
           "foreign-linked": (repo_facts("/x/lib-wt", linked=True, common="/x/lib/.git"), True)}
STATES = [guard.RepoState("feat/x", "main"), guard.RepoState("main", "main"),
          guard.RepoState("feat/x", "main", dirty_tracked=True),
          *[guard.RepoState("feat/x", "main", op, conflicted=("a.py",)) for op in
            ("merge", "rebase", "cherry-pick", "revert", "am", "bisect")]]
SIGNALS = [(), (guard.Signal("the client's workspace root", repo=repo_facts("/w/api")),),
           (guard.Signal("MADTEA_CALLER_REPO", name="acme/api", confirms_workspace=True),)]
EXAMPLE_ARGS = {"files": ["a.py"], "title": "Fix login", "name": "topic", "branch": "feat/x", "path": "/w/new",
                "b": "topic", "checkout": True}


def _example_args(op: madtea.Op) -> dict:
    return {k: v for k, v in EXAMPLE_ARGS.items() if k in op.specs}


def local_refusals(surface: str = "mcp") -> Iterator[tuple[str, guard.Refusal]]:
    local_ops = [op for op in madtea.REGISTRY if op.kind == "local" and not op.cli_only]
    for op, (tname, (target, explicit)), state, signals, nested, launch in itertools.product(
            local_ops, TARGETS.items(), STATES, SIGNALS, [(), (Path("/w/web/child"),)], [HOME, None]):
        args = _example_args(op)
        optional = {k for k in ("branch", "files") if k in op.specs and not op.specs[k].required}
        for variant in (args, {k: v for k, v in args.items() if k not in optional}):
            if explicit:
                variant = variant | {"dir": str(target.top)}
            t = guard.Target(op.tool, op.action, variant, op.mutating, surface, launch, target, explicit,
                             nested, signals, state=state)
            try:
                guard.check_local(t)
                if op.tool in ("madt_add", "madt_commit", "madt_finish") and "files" in variant:
                    guard.declared_files(t)
                elif op.tool in ("madt_add", "madt_commit"):
                    guard.declared_files(t)
            except guard.Refusal as refusal:
                yield f"{op.where} {tname} {state} {bool(signals)} {bool(nested)}", refusal


def remote_refusals(surface: str = "mcp") -> Iterator[tuple[str, guard.Refusal]]:
    remote_ops = [op for op in madtea.REGISTRY if op.kind == "remote" and not op.cli_only]
    signals = [(), (guard.Signal("MADTEA_CALLER_REPO", name="acme/api"),)]
    for op, sig, nested, host in itertools.product(remote_ops, signals, [(), (("git.other.test/t/x", "/w/x"),)],
                                                   ["forge.example.test", "git.other.test"]):
        args = {name: _filler(p) for name, p in op.specs.items() if p.required}
        call = guard.RemoteCall(op.tool, op.action, args, op.mutating, surface, f"{host}/acme/web", host,
                                "forge.example.test", host != "forge.example.test", nested, sig)
        try:
            guard.check_remote(call)
        except guard.Refusal as refusal:
            yield f"{op.where} {host}", refusal


def _filler(p: madtea.Param):
    return {"number": 1, "numbers": [1], "int": 1, "strs": ["x"], "bool": True, "json": {},
            "enum": p.choices[0] if p.choices else "x"}.get(p.type, "x")


def identity_refusals() -> Iterator[tuple[str, guard.Refusal]]:
    """Refusals about which repository git would act on: a git dir, a bare or unpinnable repository, a push
    address rewritten elsewhere, a default branch that cannot be learnt, paths inside other repositories."""
    bare = gitops.NoWorkTree(["git"], Path("/x/store.git"), bare=True)
    git_dir = gitops.NoWorkTree(["git"], Path("/w/web/.git"), bare=False)
    odd = gitops.Unpinnable(["git"], Path("/x/c/.git"), Path("/x/d"), Path("/x/d"))
    asked = guard.Asked("madt_commit", None, {"files": ["a.py"], "title": "t"})
    yield "dir= bare", guard.not_a_repo("madt_status", "/x/store.git", {}, None, bare)
    yield "launched in a git dir", guard.no_launch_repo(asked, "/w/web/.git", git_dir)
    yield "launched unpinnable", guard.no_launch_repo(asked, "/x/c", odd)
    yield "hint in a git dir", guard.no_signal(asked, "MADTEA_CALLER_REPO", "/w/web/.git", git_dir, remote=False)
    yield "hint no repo", guard.no_signal(guard.Asked("madt_issues", "list", {}), "MADTEA_CALLER_REPO", "/p", None,
                                          remote=True)
    for tool, args in (("madt_commit", {"files": ["a.py", "b/n.py"], "title": "t"}),
                       ("madt_add", {"files": ["b/n.py"]}), ("madt_push", {"branch": "feat/x"}),
                       ("madt_worktrees", {"path": "/x/lib/wt", "b": "t"})):
        for target, explicit in TARGETS.values():
            action = "add" if tool == "madt_worktrees" else None
            t = guard.Target(tool, action, args | ({"dir": str(target.top)} if explicit else {}), True, "mcp", HOME,
                             target, explicit, state=guard.RepoState("feat/x", "feat/x", default_known=False),
                             subdir="pkg" if explicit else None,
                             signals=(guard.Signal("MADTEA_CALLER_REPO", name="acme/api",
                                                   checkouts=(Path("/w/web/api"),)),))
            checks = {"madt_push": [lambda: guard.check_remote_urls(t, "https://forge.example.test/acme/web.git",
                                                                    ["https://forge.example.test/acme/other.git"],
                                                                    push=push) for push in (True, False)],
                      "madt_worktrees": [lambda: guard.check_worktree_home(t, "/x/lib/wt", repo_facts("/x/lib"),
                                                                           None),
                                         lambda: guard.check_worktree_home(t, "/x/lib/.git/wt", None, git_dir)],
                      }.get(tool, [lambda: guard.check_files_from_top(t),
                                   lambda: _raise(guard.outside_sparse(t, ("b/n.py",)))])
            for check in [lambda: guard.check_local(t), *checks]:
                try:
                    check()
                except guard.Refusal as refusal:
                    yield f"{tool} {target.top}", refusal


def _raise(refusal: guard.Refusal) -> None:
    raise refusal


def argument_refusals() -> Iterator[tuple[str, guard.Refusal]]:
    for op in madtea.REGISTRY:
        if op.cli_only:
            continue
        required = {name: _filler(p) for name, p in op.specs.items() if p.required}
        optional = [name for name, p in op.specs.items() if not p.required]
        probes = [required | {n[:-1] + "x": _filler(op.specs[n]) for n in optional[:1]},
                  required | {"commit_message": "x"}, required | {"query": "x"}, {}]
        for raw in probes:
            try:
                guard.check_arguments(op.tool, op.action, op.specs, raw, batch_action=op.batch)
            except guard.Refusal as refusal:
                yield f"{op.where} {raw}", refusal
    for op in madtea.REGISTRY:
        if op.cli_only or not op.action:
            continue
        raw = {name: _filler(p) for name, p in op.specs.items() if p.required}
        for action in (op.action[:-1] + "x", None, "nonsense"):
            try:
                madtea.find_op(op.tool, action, raw=raw)
            except guard.Refusal as refusal:
                yield f"{op.tool} action={action}", refusal
    for raw in ("", "  ", "relative/path", " /abs"):
        try:
            guard.check_dir(raw, "madt_commit", {"title": "t", "files": ["a"], "dir": raw})
        except guard.Refusal as refusal:
            yield f"dir={raw!r}", refusal


def runtime_refusals(tmp: Path, scope: guard.Scope | None = None) -> Iterator[tuple[str, madtea.Result]]:
    """The services' own refusals, from real repositories (in a server started with *scope*, if given)."""
    repo = make_repo(tmp / "web", origin="https://forge.example.test/acme/web.git")
    run_git(repo, "switch", "-q", "-c", "unmerged")
    commit_files(repo, {"u.txt": "u\n"}, "unmerged work")
    run_git(repo, "switch", "-q", "main")
    scope = scope or guard.Scope()
    ctx = madtea.Context("mcp", repo, scope=scope)
    yield "not contained", madtea.run("madt_branch_delete", {"name": "unmerged"}, ctx)
    yield "checked out", madtea.run("madt_branch_delete", {"name": "main"}, ctx)
    yield "no branch", madtea.run("madt_branch_delete", {"name": "nope"}, ctx)
    wt = tmp / "wt"
    run_git(repo, "worktree", "add", "-q", "-b", "side", str(wt))
    (wt / "dirty.txt").write_text("x\n")
    yield "unsaved work", madtea.run("madt_worktrees", {"action": "remove", "path": str(wt)}, ctx)
    yield "not a worktree", madtea.run("madt_worktrees", {"action": "remove", "path": str(tmp / "nowhere")}, ctx)
    run_git(repo, "switch", "-q", "-c", "theirs")
    commit_files(repo, {"README.md": "their readme\n"}, "their readme")
    run_git(repo, "switch", "-q", "main")
    (repo / "README.md").write_text("uncommitted edit\n")
    yield "dirty switch", madtea.run("madt_switch", {"branch": "theirs"}, ctx)
    yield "outside files", madtea.run("madt_add", {"files": ["/elsewhere/x"]}, ctx)
    yield "delete on MCP", madtea.run("madt_issues", {"action": "delete", "number": 3}, ctx)
    yield "api delete", madtea.run("madt_api_call", {"path": "/repos/acme/web/issues/3", "method": "DELETE"}, ctx)
    yield "api covered", madtea.run("madt_api_call", {"path": "/repos/acme/web/pulls/3/merge", "method": "POST"}, ctx)
    yield "outside repo", madtea.run("madt_add", {"files": ["a"]}, madtea.Context("mcp", tmp, scope=scope))
    yield "not a repo dir", madtea.run("madt_status", {"dir": str(tmp)}, ctx)


# --------------------------------------------------------------------------- checking a chain link

@pytest.fixture
def classify(tmp_path: Path):
    cwd = make_repo(tmp_path / "agent-cwd", origin="https://forge.example.test/acme/web.git")

    def decide(command: str) -> guard.HookDecision:
        return classify_in(command, str(cwd))
    return decide


def check_step(step: dict, classify, complete: bool = True) -> None:
    """A next step: an allowed shell command, or a real operation with valid (and, for refusals, all) parameters."""
    if "shell" in step:
        decision = classify(step["shell"])
        assert decision.kind != "deny", (step["shell"], decision.text)
        return
    op = madtea.find_op(step["tool"], step["args"].get("action"))
    specs = op.specs if complete else {k: gitops.replace(p, required=False) for k, p in op.specs.items()}
    args = {k: _filler(specs[k]) if guard.is_placeholder(v) and k in specs else v for k, v in step["args"].items()}
    guard.check_arguments(op.tool, op.action, specs, args, batch_action=op.batch)


def check_refusal(label: str, code: str, message: str, next_steps, choices, user_action, classify) -> None:
    """One refusal: a known code, exactly one way on, and every step of it a valid call or allowed command."""
    assert code in madtea_codes(), (label, code)
    problem = guard.way_on_problem(next_steps, choices, user_action)
    assert problem is None, f"{label}: {message}: {problem}"
    for step in [*next_steps, *(s for choice in choices for s in choice)]:
        check_step(step, classify)
    for text in (message, user_action or ""):
        assert not CLI_SUGGESTION.search(text), (label, text)
        assert not re.search(r"(^|[\s`(])cd\s", text), (label, text)
        assert not re.search(r"\bADR[- ]?\d|#\d{3,}", text), (label, text)


# A refusal that sends an agent to the CLI names "madtea <command>"; only logging in is a person's CLI act.
CLI_SUGGESTION = re.compile(r"\bmadtea (?:" + "|".join(sorted({op.cli[0] for op in madtea.REGISTRY})) + r")\b")


def madtea_codes() -> set[str]:
    return {"UNKNOWN_PARAMETER", "BAD_ARGUMENT", "WRONG_REPO", "MULTI_REPO_WORKSPACE", "FOREIGN_TARGET",
            "FOREIGN_PRIMARY", "DEFAULT_BRANCH", "UNDECLARED_FILES", "DIRTY_TREE", "UNSAVED_WORK", "MID_OPERATION",
            "NOT_CONTAINED", "LEASE_REJECTED", "HEAD_MOVED", "MERGE_BLOCKED", "MERGE_CONFLICT", "STALE_BODY",
            "OUT_OF_SCOPE", "NOT_FOUND_OR_NO_ACCESS", "AUTH_MISSING", "SCOPE_MISSING", "FORGE_UNAVAILABLE",
            "NOT_SUPPORTED", "USER_ACTION_REQUIRED", "GIT_ERROR", "INTERNAL_ERROR", "CONFLICT",
            "NOTHING_TO_COMMIT", "BRANCH_EXISTS", "PATH_EXISTS", "NOT_A_COMMIT", "DIVERGED", "REF_MOVED",
            "BRANCH_CHECKED_OUT", "DETACHED_HEAD", "READ_ONLY", "OUTSIDE_SPARSE_CHECKOUT"}


# --------------------------------------------------------------------------- the tests

def test_every_rule_refusal_continues_the_chain(classify) -> None:
    seen: set[str] = set()
    count = 0
    for label, refusal in itertools.chain(local_refusals(), remote_refusals(), argument_refusals(),
                                          identity_refusals()):
        count += 1
        seen.add(refusal.code)
        try:
            check_refusal(label, refusal.code, refusal.message, refusal.next, refusal.choices,
                          refusal.user_action, classify)
        except guard.Refusal as broken:
            raise AssertionError(f"{label}: {refusal.message} -> next {refusal.next}: {broken.message}") from None
    assert count > 500
    assert {"WRONG_REPO", "MULTI_REPO_WORKSPACE", "FOREIGN_TARGET", "FOREIGN_PRIMARY", "DEFAULT_BRANCH",
            "UNDECLARED_FILES", "MID_OPERATION", "OUT_OF_SCOPE", "UNKNOWN_PARAMETER", "BAD_ARGUMENT"} <= seen


def test_every_runtime_refusal_continues_the_chain(classify, tmp_path: Path) -> None:
    codes = set()
    for label, result in runtime_refusals(tmp_path / "rt"):
        assert result.error, (label, result.text)
        codes.add(result.error["code"])
        check_refusal(label, result.error["code"], result.text, result.error["next"], result.error["choices"],
                      result.error["user_action"], classify)
    assert {"NOT_CONTAINED", "UNSAVED_WORK", "USER_ACTION_REQUIRED", "BAD_ARGUMENT", "DIRTY_TREE"} <= codes


def test_mid_operation_rails_end_in_an_allowed_control(classify) -> None:
    for op in ("merge", "rebase", "cherry-pick", "revert", "am"):
        t = guard.Target("madt_commit", None, {"title": "t", "files": ["a.py"]}, True, "mcp", HOME, HOME, False,
                         state=guard.RepoState("feat/x", "main", op, conflicted=("a.py",)))
        rail = guard.continue_rail(t)
        assert rail[-1]["shell"].endswith(f"{op} --continue")
        assert classify(rail[-1]["shell"]).kind != "deny"


_CALL = re.compile(r"\b(madt_[a-z_]+)((?: [a-z_]+=(?:\"(?:[^\"\\]|\\.)*\"|\[[^\]]*\]|[^\s,;.]+))*)")


def _calls_in(text: str) -> Iterator[dict]:
    for match in _CALL.finditer(text):
        args = {}
        for pair in re.finditer(r" ([a-z_]+)=(\"(?:[^\"\\]|\\.)*\"|\[[^\]]*\]|[^\s,;.]+)", match.group(2)):
            raw = pair.group(2)
            try:
                args[pair.group(1)] = json.loads(raw)
            except ValueError:
                args[pair.group(1)] = raw
        if not args and madtea.tool_ops(match.group(1))[0].action is not None:
            continue  # the tool named in prose ("madt_worktrees adds a worktree"), not a call
        yield {"tool": match.group(1), "args": args}


def test_hook_denials_name_real_calls_and_no_blocked_form(classify, tmp_path: Path) -> None:
    """Every madt_* call a hook text names is a real operation with valid parameters."""
    checked = 0
    cases = [c for name in dir(hook_cases) if name.isupper() and isinstance(getattr(hook_cases, name), list)
             for c in getattr(hook_cases, name) if isinstance(c, tuple) and len(c) == 3]
    for command, kind, _phrase in cases:
        if "{" in command:
            continue  # placeholders need the hook test's sandbox
        decision = classify(command)
        for step in _calls_in(decision.text):
            if step["tool"] not in madtea.tool_names():
                raise AssertionError(f"{command!r} names unknown tool {step['tool']}")
            check_step(step, classify, complete=False)  # a hook names what the command showed
            checked += 1
        assert "permissionDecision" not in decision.text
    assert checked > 20


# --------------------------------------------------------------------------- scoped servers

SCOPES = {
    "read-only": guard.Scope(read_only=True),
    "tools": guard.Scope(tools=("madt_commit", "madt_add", "madt_status", "madt_issues:view", "madt_worktrees")),
    "exclude": guard.Scope(exclude=("madt_branch_create", "madt_worktrees:add", "madt_issues:edit", "madt_pull")),
    "repos": guard.Scope(repos=("forge.example.test/acme/web",)),
    "all": guard.Scope(read_only=True, tools=("madt_issues", "madt_status", "madt_log"),
                       repos=("forge.example.test/acme/api",)),
}


def _ways_on(error: dict) -> list[dict]:
    return list(error.get("next") or []) + [s for choice in error.get("choices") or [] for s in choice]


def assert_in_scope(label: str, step: dict, ctx: madtea.Context) -> None:
    """What the dispatcher checks before anything runs: the step is an offered call on a listed repository."""
    if "shell" in step:
        return
    args = {k: v for k, v in step["args"].items() if k != "action"}
    try:
        op = madtea.find_op(step["tool"], step["args"].get("action"), scope=ctx.scope)
        madtea.check_op_scope(op, args, ctx.scope)
        if ctx.scope.repos:
            madtea.check_repo_scope(op, args, ctx)
    except guard.Refusal as refusal:
        raise AssertionError(f"{label}: the way on {step} is refused by the scope: {refusal.message}") from None


@pytest.mark.parametrize("name", SCOPES)
def test_no_refusal_in_a_scoped_server_points_outside_its_scope(classify, tmp_path: Path, name: str) -> None:
    launch = make_repo(tmp_path / "web", origin="https://forge.example.test/acme/web.git")
    ctx = madtea.Context("mcp", launch, scope=SCOPES[name])
    narrowed = 0
    seen: set[tuple[str, str]] = set()
    for label, refusal in itertools.chain(local_refusals(), remote_refusals(), argument_refusals(),
                                          identity_refusals()):
        if (refusal.code, refusal.message) in seen:
            continue  # the same refusal from another grid point: same way on
        seen.add((refusal.code, refusal.message))
        error = {"code": refusal.code, "next": list(refusal.next), "choices": [list(c) for c in refusal.choices],
                 "user_action": refusal.user_action}
        before = _ways_on(error)
        madtea._narrow_error(error, ctx)
        narrowed += _ways_on(error) != before
        check_refusal(label, error["code"], refusal.message, error["next"], error["choices"], error["user_action"],
                      classify)
        for step in _ways_on(error):
            assert_in_scope(label, step, ctx)
    assert narrowed > 0
    for label, result in runtime_refusals(tmp_path / "rt", SCOPES[name]):
        assert result.error, (label, result.text)
        check_refusal(label, result.error["code"], result.text, result.error["next"], result.error["choices"],
                      result.error["user_action"], classify)
        for step in _ways_on(result.error):
            assert_in_scope(label, step, madtea.Context("mcp", tmp_path / "rt" / "web", scope=SCOPES[name]))
