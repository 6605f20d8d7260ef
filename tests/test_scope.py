"""Scoping a server: read-only, tool allow-lists and a pinned repository list.

The decisions are guard.py's and are table-tested first; then every
combination that matters (read-only x tools x repos) goes through the in-memory
MCP client against the fake forge and real git, one stdio child starts from the
environment form, and the CLI is shown to be unaffected.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import gitops
import guard
import madtea
from fakeforge import DEFAULT_TOKEN, FakeForge
from topologies import assert_only_changed, make_repo, run_git, snapshot

ROOT = Path(__file__).resolve().parent.parent
WEB = "forge.example.test/acme/web"


# --------------------------------------------------------------------------- the decisions (guard.py)

@pytest.mark.parametrize("scope, tool, action, writes, reads_in_part, reach, expected", [
    (guard.Scope(), "madt_commit", None, True, False, "repo", True),
    (guard.Scope(read_only=True), "madt_commit", None, True, False, "repo", False),
    (guard.Scope(read_only=True), "madt_status", None, False, False, "repo", True),
    (guard.Scope(read_only=True), "madt_api_call", None, True, True, "repo", True),
    (guard.Scope(tools=("madt_issues",)), "madt_issues", "create", True, False, "repo", True),
    (guard.Scope(tools=("madt_issues:list",)), "madt_issues", "create", True, False, "repo", False),
    (guard.Scope(tools=("madt_issues:list",)), "madt_issues", "list", False, False, "repo", True),
    (guard.Scope(exclude=("madt_issues:create",)), "madt_issues", "create", True, False, "repo", False),
    (guard.Scope(exclude=("madt_issues:create",)), "madt_issues", "edit", True, False, "repo", True),
    (guard.Scope(tools=("madt_issues",), exclude=("madt_issues:edit",)), "madt_issues", "edit", True, False,
     "repo", False),
    (guard.Scope(repos=(WEB,)), "madt_notifications", "read", True, False, "account", False),
    (guard.Scope(repos=(WEB,)), "madt_notifications", "list", False, False, "forge", True),
    (guard.Scope(), "madt_notifications", "read", True, False, "account", True),
])
def test_listed(scope, tool, action, writes, reads_in_part, reach, expected) -> None:
    assert guard.listed(scope, tool, action, writes=writes, reads_in_part=reads_in_part, reach=reach) is expected


@pytest.mark.parametrize("scope, tool, action, writes, reach, code, phrase", [
    (guard.Scope(read_only=True), "madt_commit", None, True, "repo", "READ_ONLY", "(--read-only)"),
    (guard.Scope(read_only=True, read_only_by="MADTEA_READ_ONLY=1"), "madt_pr", "merge", True, "repo",
     "READ_ONLY", "(MADTEA_READ_ONLY=1)"),
    (guard.Scope(read_only=True), "madt_status", None, False, "repo", None, ""),
    (guard.Scope(tools=("madt_status",)), "madt_log", None, False, "repo", "OUT_OF_SCOPE", "(--tools)"),
    (guard.Scope(tools=("madt_pr",), tools_by="MADTEA_TOOLS"), "madt_issues", "list", False, "repo",
     "OUT_OF_SCOPE", "(MADTEA_TOOLS)"),
    (guard.Scope(exclude=("madt_pr:merge",)), "madt_pr", "merge", True, "repo", "OUT_OF_SCOPE",
     "(--exclude-tools)"),
    (guard.Scope(repos=(WEB,)), "madt_repo", "create", True, "account", "OUT_OF_SCOPE", "cannot be confined"),
    (guard.Scope(repos=(WEB,)), "madt_issues", "create", True, "repo", None, ""),
])
def test_check_scope(scope, tool, action, writes, reach, code, phrase) -> None:
    if code is None:
        guard.check_scope(scope, tool, action, writes=writes, reach=reach)
        return
    with pytest.raises(guard.Refusal) as caught:
        guard.check_scope(scope, tool, action, writes=writes, reach=reach)
    refusal = caught.value
    assert (refusal.code, refusal.next, refusal.choices) == (code, (), ())
    assert guard.way_on_problem(refusal.next, refusal.choices, refusal.user_action) is None
    assert phrase in refusal.message and "nothing was" in refusal.message
    assert refusal.user_action and refusal.user_action.startswith("Ask the user who started the server")


@pytest.mark.parametrize("repos, repo, allowed", [
    ((), "any.host/x/y", True), ((), None, True),
    ((WEB,), WEB, True), ((WEB,), "Forge.Example.Test/ACME/Web", True), ((WEB,), "forge.example.test/acme/api", False),
    ((WEB,), "other.test/acme/web", False), ((WEB,), None, False),
])
def test_repo_in_scope(repos, repo, allowed) -> None:
    assert guard.repo_in_scope(guard.Scope(repos=repos), repo) is allowed


def test_repo_scope_refusals_name_the_list_and_the_option() -> None:
    scope = guard.Scope(repos=(WEB, "git.other.test/t/x"), repos_by="MADTEA_REPOS")
    with pytest.raises(guard.Refusal) as caught:
        guard.check_repo_scope(scope, "madt_issues action=list", "forge.example.test/acme/api", "owner_repo")
    assert caught.value.code == "OUT_OF_SCOPE"
    assert f"({WEB}, git.other.test/t/x)" in caught.value.message and "(owner_repo)" in caught.value.message
    assert "MADTEA_REPOS" in caught.value.user_action
    with pytest.raises(guard.Refusal) as caught:
        guard.check_repo_scope(scope, "madt_status", None, "the origin of /w/plain")
    assert "names no forge repository" in caught.value.message
    guard.check_host_scope(scope, "madt_search action=issues", "forge.example.test")
    with pytest.raises(guard.Refusal) as caught:
        guard.check_host_scope(scope, "madt_search action=issues", "third.test")
    assert caught.value.code == "OUT_OF_SCOPE" and "third.test" in caught.value.message


def test_narrow_way_on() -> None:
    ok, bad = guard.call("madt_status"), guard.call("madt_commit", files=["a"])
    other = guard.call("madt_log")
    allowed = lambda step: step.get("tool") != "madt_commit"  # noqa: E731
    scope = guard.Scope(read_only=True)
    assert guard.narrow_way_on(scope, [ok], [], None, allowed) == ([ok], [], None, None)
    assert guard.narrow_way_on(scope, [], [], "Ask the user.", allowed) == ([], [], "Ask the user.", None)
    widen = "Ask the user who started the server to widen its scope if this is wanted; nothing more can be done here."
    note = 'The way on (madt_commit files=["a"]) is outside this server\'s scope (read-only (only reads are offered)).'
    assert guard.narrow_way_on(scope, [ok, bad], [], None, allowed) == ([], [], widen, note)
    assert guard.narrow_way_on(scope, [], [[ok], [bad]], None, allowed) == ([ok], [], None, note)  # one left: a plan
    assert guard.narrow_way_on(scope, [], [[ok], [other], [bad]], None, allowed) == ([], [[ok], [other]], None, note)
    assert guard.narrow_way_on(scope, [], [[bad], [ok, bad]], None, allowed)[:3] == ([], [], widen)
    for narrowed in (guard.narrow_way_on(scope, [bad], [], None, allowed),
                     guard.narrow_way_on(scope, [], [[ok], [bad]], None, allowed)):
        assert guard.way_on_problem(*narrowed[:3]) is None


def test_a_refusals_steps_are_vetted_with_each_operation_found_once(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    launch = make_repo(tmp_path / "web", origin=f"https://{WEB}.git")
    ctx = madtea.Context("mcp", launch, scope=guard.Scope(read_only=True, repos=(WEB,)))
    status, log = guard.call("madt_status"), guard.call("madt_log")
    commits = [guard.call("madt_commit", files=[name], message="m") for name in ("a", "b", "c")]
    error: dict[str, Any] = {"code": "X", "next": [], "user_action": None,
                             "choices": [[status], [log], [status, log], *([c] for c in commits)]}
    found: list[tuple[str, object]] = []
    real = madtea.find_op

    def counted(tool: str, action: object, *rest: Any, **named: Any) -> madtea.Op:
        found.append((tool, action))
        return real(tool, action, *rest, **named)

    monkeypatch.setattr(madtea, "find_op", counted)
    note = madtea._narrow_error(error, ctx)
    assert error["choices"] == [[status], [log], [status, log]] and error["next"] == []
    assert note and "madt_commit" in note and "madt_status" not in note
    assert sorted(found) == [("madt_commit", None), ("madt_log", None), ("madt_status", None)]


def test_entry_problems_have_a_did_you_mean() -> None:
    actions = {"madt_issues": ["list", "create"], "madt_status": [None]}
    assert guard.scope_entry_problems(["madt_issues", "madt_issues:list", "madt_status"], "--tools", actions) == []
    problems = guard.scope_entry_problems(["madt_isues", "madt_issues:lst", "madt_status:x", "nonsense"],
                                          "MADTEA_TOOLS", actions)
    assert problems == [
        "MADTEA_TOOLS: 'madt_isues': there is no such tool. Did you mean madt_issues?",
        "MADTEA_TOOLS: 'madt_issues:lst': madt_issues has no action 'lst' (its actions: list, create). "
        "Did you mean madt_issues:list?",
        "MADTEA_TOOLS: 'madt_status:x': madt_status has no actions; name the tool alone. Did you mean madt_status?",
        "MADTEA_TOOLS: 'nonsense': there is no such tool.",
    ]


# --------------------------------------------------------------------------- start-up: options, environment

def _scope(argv: list[str], environ: dict[str, str] | None = None, launch: Path | None = None):
    import argparse
    parser = argparse.ArgumentParser()
    madtea.scope_options(parser)
    return madtea.scope_from(parser.parse_args(argv), environ or {}, launch or Path("/nonexistent"))


def test_options_win_over_the_environment(tmp_path: Path) -> None:
    launch = make_repo(tmp_path / "web", origin="https://forge.example.test/acme/web.git")
    env = {"MADTEA_TOOLS": "madt_pr", "MADTEA_EXCLUDE_TOOLS": "madt_wiki", "MADTEA_REPOS": "acme/api",
           "MADTEA_READ_ONLY": "1"}
    scope, problems = _scope([], env, launch)
    assert problems == []
    assert scope == guard.Scope(True, ("madt_pr",), ("madt_wiki",), ("forge.example.test/acme/api",),
                                "MADTEA_READ_ONLY=1", "MADTEA_TOOLS", "MADTEA_EXCLUDE_TOOLS", "MADTEA_REPOS")
    scope, problems = _scope(["--tools", "madt_issues,madt_status", "--tools", "madt_log", "--repo", "acme/web",
                              "--repo", "Git.Other.Test/T/X", "--read-only"], env, launch)
    assert problems == []
    assert scope.tools == ("madt_issues", "madt_status", "madt_log") and scope.tools_by == "--tools"
    assert scope.exclude == ("madt_wiki",) and scope.exclude_by == "MADTEA_EXCLUDE_TOOLS"
    assert scope.repos == (WEB, "git.other.test/t/x") and scope.repos_by == "--repo"
    assert scope.read_only and scope.read_only_by == "--read-only"
    assert _scope([], {"MADTEA_READ_ONLY": "0"})[0] == guard.Scope()


def test_start_up_problems(tmp_path: Path) -> None:
    _, problems = _scope(["--tools", "madt_isues", "--exclude-tools", "madt_pr:mrege", "--repo", "acme/web",
                          "--repo", "https://x.test/a/b"], {"MADTEA_READ_ONLY": "maybe"}, tmp_path)
    assert problems == [
        "MADTEA_READ_ONLY: 'maybe' is neither 1 nor 0.",
        "--tools: 'madt_isues': there is no such tool. Did you mean madt_issues?",
        "--exclude-tools: 'madt_pr:mrege': madt_pr has no action 'mrege' (its actions: "
        + ", ".join(str(op.action) for op in madtea.tool_ops("madt_pr")) + "). Did you mean madt_pr:merge?",
        f"--repo: 'acme/web' names no host, and {tmp_path} has no forge origin to take one from; write it as "
        "HOST/OWNER/REPO.",
        "--repo: 'https://x.test/a/b' is not HOST/OWNER/REPO or OWNER/REPO (a name, not a URL).",
    ]
    assert _scope(["--tools", "madt_issues:delete"])[1][0].startswith("--tools: 'madt_issues:delete': madt_issues "
                                                                      "has no action 'delete'")


def test_the_server_does_not_start_with_a_typo(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "madtea", "mcp", "--tools", "madt_isues"], cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, stdin=subprocess.PIPE,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    assert "madt_isues" in done.stderr and "Did you mean madt_issues?" in done.stderr
    assert "Traceback" not in done.stderr


# --------------------------------------------------------------------------- the surface a scope shapes

def test_read_only_lists_only_reads() -> None:
    scope = guard.Scope(read_only=True)
    names = madtea.tool_names(scope)
    assert "madt_commit" not in names and "madt_finish" not in names and "madt_status" in names
    for name in names:
        ops = madtea.scoped_ops(name, scope)
        assert ops and all(not op.mutating or op.read_form for op in ops), name
        schema = madtea.tool_schema(name, scope)
        if "action" in schema["properties"]:
            enum = schema["properties"]["action"]["enum"]
            assert enum == [op.action for op in madtea.tool_ops(name) if not op.mutating], name
        assert madtea.tool_annotations(name, scope)["read_only_hint"] is True, name
        assert "destructive_hint" not in madtea.tool_annotations(name, scope)
    api_call = madtea.tool_schema("madt_api_call", scope)["properties"]["method"]
    assert api_call["enum"] == ["GET"] and "read-only" in api_call["description"]
    assert "GET only" in madtea.tool_description("madt_api_call", scope)
    assert "create" not in madtea.tool_description("madt_issues", scope)
    # every tool with a read action is there
    assert set(names) == {op.tool for op in madtea.REGISTRY if not op.cli_only and
                          (not op.mutating or op.read_form)}


def test_unscoped_surface_is_unchanged() -> None:
    for name in madtea.tool_names():
        assert madtea.tool_schema(name, guard.Scope()) == madtea.tool_schema(name)
        assert madtea.tool_description(name, guard.Scope()) == madtea.tool_description(name)
    assert madtea.server_instructions(guard.Scope()) == madtea.INSTRUCTIONS


# --------------------------------------------------------------------------- through the in-memory MCP client

pytest.importorskip("mcp")
from mcp.client import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402


@pytest.fixture
def forge_env(gitea_forge: FakeForge, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Clones of acme/web and acme/api from the fake forge, a clone with no origin, and the forge's host key."""
    monkeypatch.setenv("MADTEA_TOKEN", DEFAULT_TOKEN)
    gitea_forge.add_repo("acme", "api")
    gitea_forge.create_issue("acme", "web", "Login fails on web", "web body")
    gitea_forge.create_issue("acme", "api", "Login fails on api", "api secret body")
    clones = {}
    for name in ("web", "api"):
        run_git(tmp_path, "clone", "-q", gitea_forge.remote_url("acme", name), str(tmp_path / name))
        clones[name] = Path(os.path.realpath(tmp_path / name))
        run_git(clones[name], "switch", "-q", "-c", "feat/x")
        (clones[name] / "new.txt").write_text("new\n")
    clones["plain"] = make_repo(tmp_path / "plain")
    host = gitea_forge.host

    class E:
        forge = gitea_forge
        web, api, plain = clones["web"], clones["api"], clones["plain"]
        key = host
    E.web_full = f"{E.key}/acme/web"
    return E


def _server(e: Any, *argv: str, launch: Path | None = None) -> Any:
    scope, problems = _scope(list(argv), {}, launch or e.web)
    assert problems == []
    return madtea.build_server(launch or e.web, scope)


async def _list(server: Any) -> dict[str, Any]:
    async with Client(server, mode="legacy") as client:
        return {t.name: t for t in (await client.list_tools()).tools}


async def _calls(server: Any, *calls: tuple[str, dict]) -> list[Any]:
    async with Client(server, mode="legacy") as client:
        return [await client.call_tool(tool, args) for tool, args in calls]


def _refused(result: Any, code: str, *phrases: str) -> str:
    text = result.content[0].text
    assert result.is_error is True, text
    assert result.structured_content["code"] == code, text
    assert "next" not in result.structured_content and "choices" not in result.structured_content, text
    assert result.structured_content["user_action"].startswith("Ask the user who started the server"), text
    assert guard.way_on_problem((), (), result.structured_content["user_action"]) is None
    for phrase in phrases:
        assert phrase in text, (phrase, text)
    assert "Traceback" not in text
    return text


@pytest.mark.anyio
async def test_read_only_server(forge_env: Any) -> None:
    e = forge_env
    server = _server(e, "--read-only")
    tools = await _list(server)
    assert "madt_commit" not in tools and "madt_finish" not in tools
    assert tools["madt_issues"].input_schema["properties"]["action"]["enum"] == ["list", "view", "times",
                                                                                "stopwatches", "attachments"]
    assert tools["madt_wiki"].input_schema["properties"]["action"]["enum"] == ["list", "view", "history"]
    assert tools["madt_api_call"].input_schema["properties"]["method"]["enum"] == ["GET"]
    assert all(t.annotations.read_only_hint for t in tools.values())
    before = snapshot([e.web])
    e.forge.clear_requests()
    calls = gitops.call_count()
    commit, create, post, merge, listed, get = await _calls(
        server, ("madt_commit", {"title": "t", "files": ["new.txt"]}),
        ("madt_issues", {"action": "create", "title": "x"}),
        ("madt_api_call", {"path": "/repos/acme/web/topics", "method": "PUT", "body": {"topics": ["x"]}}),
        ("madt_pr", {"action": "merge", "number": 1}),
        ("madt_issues", {"action": "list"}), ("madt_api_call", {"path": "/repos/acme/web/issues/1"}))
    _refused(commit, "READ_ONLY", "madt_commit changes things", "(--read-only)")
    _refused(create, "READ_ONLY", "madt_issues action=create")
    _refused(post, "READ_ONLY", "only method GET is allowed")
    _refused(merge, "READ_ONLY")
    assert not e.forge.find_requests("POST") and not e.forge.find_requests("PUT")
    assert_only_changed(before, snapshot([e.web]), set())
    assert listed.is_error is False and "Login fails on web" in listed.content[0].text
    assert get.is_error is False and "Login fails on web" in get.content[0].text
    assert gitops.call_count() - calls <= 2  # the refused commit started no git: only the reads' own calls
    writes = await _calls(server, *(("madt_issues", {"action": a, "number": 1} | extra) for a, extra in (
        ("cancel_stopwatch", {}), ("delete_time", {"time_id": 1}), ("download", {"attachment_id": 1, "output": "/x"}),
        ("edit_attachment", {"attachment_id": 1, "name": "n"}))), ("madt_pr", {"action": "delete_review", "number": 1,
                                                                               "review_id": 1}))
    for refused in writes:
        _refused(refused, "READ_ONLY")
    assert not e.forge.find_requests("DELETE") and not e.forge.find_requests("PATCH")


@pytest.mark.anyio
async def test_tool_lists(forge_env: Any) -> None:
    e = forge_env
    server = _server(e, "--tools", "madt_status,madt_issues:list,madt_issues:view,madt_pr",
                     "--exclude-tools", "madt_pr:merge")
    tools = await _list(server)
    assert list(tools) == ["madt_status", "madt_issues", "madt_pr"]
    assert tools["madt_issues"].input_schema["properties"]["action"]["enum"] == ["list", "view"]
    assert "merge" not in tools["madt_pr"].input_schema["properties"]["action"]["enum"]
    assert "create" in tools["madt_pr"].input_schema["properties"]["action"]["enum"]
    assert "only the actions above" in tools["madt_issues"].description
    assert tools["madt_issues"].annotations.read_only_hint is True
    e.forge.clear_requests()
    log, create, merge, typo, status = await _calls(
        server, ("madt_log", {}), ("madt_issues", {"action": "create", "title": "x"}),
        ("madt_pr", {"action": "merge", "number": 1}), ("madt_issues", {"action": "lst"}), ("madt_status", {}))
    _refused(log, "OUT_OF_SCOPE", "madt_log is not among the tools this server offers (--tools)")
    _refused(create, "OUT_OF_SCOPE", "(--tools)")
    _refused(merge, "OUT_OF_SCOPE", "(--exclude-tools)")
    assert not e.forge.find_requests()
    # a misspelt action is corrected only to an action the server offers
    assert typo.structured_content["code"] == "BAD_ARGUMENT"
    assert typo.structured_content["next"] == [{"tool": "madt_issues", "args": {"action": "list"}}]
    assert "create" not in typo.content[0].text
    assert status.is_error is False


@pytest.mark.anyio
async def test_read_only_with_tools(forge_env: Any) -> None:
    tools = await _list(_server(forge_env, "--read-only", "--tools", "madt_issues,madt_commit,madt_api_call"))
    assert list(tools) == ["madt_issues", "madt_api_call"]
    assert tools["madt_issues"].input_schema["properties"]["action"]["enum"] == ["list", "view", "times",
                                                                                "stopwatches", "attachments"]


@pytest.mark.anyio
async def test_repository_list(forge_env: Any) -> None:
    e = forge_env
    server = _server(e, "--repo", "acme/web")
    tools = await _list(server)
    assert "read" not in tools["madt_notifications"].input_schema["properties"]["action"]["enum"]
    assert "create" not in tools["madt_repo"].input_schema["properties"]["action"]["enum"]
    assert "fork" not in tools["madt_repo"].input_schema["properties"]["action"]["enum"]
    e.forge.clear_requests()
    before = snapshot([e.web, e.api, e.plain])
    calls = gitops.call_count()
    refused = await _calls(
        server, ("madt_issues", {"action": "view", "number": 1, "owner_repo": "acme/api"}),
        ("madt_issues", {"action": "create", "title": "x", "owner_repo": f"{e.key}/acme/api"}),
        ("madt_commit", {"title": "t", "files": ["new.txt"], "dir": str(e.api)}),
        ("madt_status", {"dir": str(e.plain)}),
        ("madt_log", {"dir": str(e.api)}),
        ("madt_api_call", {"path": "/repos/acme/api/issues/1"}),
        ("madt_api_call", {"path": "/repos/acme/api/issues/1", "owner_repo": "acme/web"}),
        ("madt_api_call", {"path": "/user"}),
        ("madt_notifications", {"action": "read"}),
        ("madt_finish", {"title": "t", "files": ["new.txt"], "dir": str(e.api)}))
    assert gitops.call_count() == calls, "a refused call started git"
    assert not e.forge.find_requests(), "a refused call reached the forge"
    assert_only_changed(before, snapshot([e.web, e.api, e.plain]), set())
    texts = [_refused(r, "OUT_OF_SCOPE") for r in refused]
    assert f"targets {e.key}/acme/api (owner_repo)" in texts[0] and f"({e.web_full})" in texts[0]
    assert f"the origin of {e.api}" in texts[2]
    assert "names no forge repository" in texts[3]
    assert "the API path" in texts[5] and "the API path" in texts[6]
    assert "/user" in texts[7] and "names no forge repository" in texts[7]
    assert "cannot be confined" in texts[8]
    for text in texts:
        assert "(--repo)" in text
    ok = await _calls(server, ("madt_issues", {"action": "view", "number": 1}),
                      ("madt_issues", {"action": "view", "number": 1, "owner_repo": "ACME/Web"}),
                      ("madt_status", {"dir": str(e.web)}),
                      ("madt_commit", {"title": "add new", "files": ["new.txt"]}))
    for result in ok:
        assert result.is_error is False, result.content[0].text
    assert run_git(e.web, "log", "-1", "--format=%s").strip() == "add new"


@pytest.mark.anyio
async def test_forge_wide_reads_are_confined(forge_env: Any) -> None:
    e = forge_env
    e.forge.add_notification("alice", "acme", "web", 1)
    e.forge.add_notification("alice", "acme", "api", 1)
    e.forge.add_repo("acme", "website")
    search, repos, notes, mine, whoami = await _calls(
        _server(e, "--repo", "acme/web"), ("madt_search", {"action": "issues", "q": "Login"}),
        ("madt_search", {"action": "repos", "q": "web"}), ("madt_notifications", {"action": "list"}),
        ("madt_repo", {"action": "list", "owner": "acme"}), ("madt_whoami", {}))
    for result in (search, repos, notes, mine, whoami):
        assert result.is_error is False, result.content[0].text
    assert [r["repo"] for r in search.structured_content["result"]] == ["acme/web"]
    assert "api secret" not in search.content[0].text and "Login fails on api" not in search.content[0].text
    assert "1 of 2 results were left out" in search.content[0].text
    assert [r["full_name"] for r in repos.structured_content["result"]] == ["acme/web"]
    assert [r["repo"] for r in notes.structured_content["result"]] == ["acme/web"]
    assert [r["full_name"] for r in mine.structured_content["result"]] == ["acme/web"]
    assert whoami.structured_content["result"]["scope"] == f"repositories {e.web_full}"
    assert f"this server's scope: repositories {e.web_full}" in whoami.content[0].text
    # unscoped, the same calls see both repositories
    search, = await _calls(madtea.build_server(e.web), ("madt_search", {"action": "issues", "q": "Login"}))
    assert sorted(r["repo"] for r in search.structured_content["result"]) == ["acme/api", "acme/web"]


@pytest.mark.anyio
async def test_launch_repo_outside_the_list(forge_env: Any) -> None:
    e = forge_env
    server = _server(e, "--repo", "acme/web", launch=e.api)
    status, issues, search, web = await _calls(
        server, ("madt_status", {}), ("madt_issues", {"action": "list"}),
        ("madt_search", {"action": "issues", "q": "Login"}), ("madt_status", {"dir": str(e.web)}))
    _refused(status, "OUT_OF_SCOPE", "the launch repo's origin")
    _refused(issues, "OUT_OF_SCOPE", "the launch repo's origin")
    assert search.is_error is False  # a forge-wide read needs only a listed host; its results are confined
    assert web.is_error is False


@pytest.mark.anyio
async def test_read_only_with_repos_and_tools(forge_env: Any) -> None:
    e = forge_env
    server = _server(e, "--read-only", "--repo", "acme/web", "--tools", "madt_issues,madt_status")
    tools = await _list(server)
    assert list(tools) == ["madt_status", "madt_issues"]
    other, write, read = await _calls(
        server, ("madt_issues", {"action": "list", "owner_repo": "acme/api"}),
        ("madt_issues", {"action": "comment", "number": 1, "body": "x"}),
        ("madt_issues", {"action": "view", "number": 1}))
    _refused(other, "OUT_OF_SCOPE", "acme/api")
    _refused(write, "READ_ONLY")
    assert read.is_error is False


@pytest.mark.anyio
async def test_refusals_point_only_inside_the_scope(forge_env: Any) -> None:
    """A refusal whose way on the scope would refuse says so to a person instead."""
    e = forge_env
    run_git(e.web, "switch", "-q", "main")
    scoped, unscoped = await _calls(_server(e, "--tools", "madt_commit"),
                                    ("madt_commit", {"title": "t", "files": ["new.txt"]})), \
        await _calls(madtea.build_server(e.web), ("madt_commit", {"title": "t", "files": ["new.txt"]}))
    original = unscoped[0].structured_content
    assert original["code"] == "DEFAULT_BRANCH"
    assert "madt_branch_create" in json.dumps(original)
    refusal = scoped[0].structured_content
    assert refusal["code"] == "DEFAULT_BRANCH"
    # The structured content repeats the text, which names the step as out of scope; no step of its own offers it.
    assert "madt_branch_create" not in json.dumps({k: v for k, v in refusal.items() if k not in ("target", "text")})
    assert "madt_branch_create" in scoped[0].content[0].text
    assert "outside this server's scope" in scoped[0].content[0].text
    for step in refusal.get("next", []) + [s for choice in refusal.get("choices", []) for s in choice]:
        assert step["tool"] == "madt_commit", refusal
    assert guard.way_on_problem(refusal.get("next", ()), refusal.get("choices", ()), refusal.get("user_action")) is None


@pytest.mark.anyio
async def test_instructions_carry_the_scope(forge_env: Any) -> None:
    async with Client(_server(forge_env, "--read-only", "--repo", "acme/web"), mode="legacy") as client:
        text = client.instructions or ""
    assert "read-only" in text and f"repositories {forge_env.web_full}" in text
    assert "madt_finish" not in text


# --------------------------------------------------------------------------- the environment form, over stdio

@pytest.mark.anyio
async def test_stdio_server_scoped_by_the_environment(forge_env: Any) -> None:
    e = forge_env
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MADTEA_READ_ONLY": "1", "MADTEA_TOOLS": "madt_issues,madt_status",
           "MADTEA_EXCLUDE_TOOLS": "madt_issues:view", "MADTEA_REPOS": "acme/web"}
    params = StdioServerParameters(command=sys.executable, args=["-m", "madtea", "mcp"], cwd=str(e.web), env=env)
    async with Client(params, mode="legacy") as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        listed = await client.call_tool("madt_issues", {"action": "list"})
        write = await client.call_tool("madt_issues", {"action": "create", "title": "x"})
        view = await client.call_tool("madt_issues", {"action": "view", "number": 1})
        other = await client.call_tool("madt_issues", {"action": "list", "owner_repo": "acme/api"})
        instructions = client.instructions or ""
    assert list(tools) == ["madt_status", "madt_issues"]
    assert tools["madt_issues"].input_schema["properties"]["action"]["enum"] == ["list", "times", "stopwatches",
                                                                                "attachments"]
    assert listed.is_error is False and "Login fails on web" in listed.content[0].text
    _refused(write, "READ_ONLY", "(MADTEA_READ_ONLY=1)")
    _refused(view, "OUT_OF_SCOPE", "(MADTEA_EXCLUDE_TOOLS)")
    _refused(other, "OUT_OF_SCOPE", "(MADTEA_REPOS)")
    assert "read-only" in instructions and "acme/web" in instructions


# --------------------------------------------------------------------------- the CLI is not scoped

def test_cli_ignores_the_server_scope(forge_env: Any) -> None:
    e = forge_env
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MADTEA_READ_ONLY": "1", "MADTEA_TOOLS": "madt_status",
           "MADTEA_REPOS": "acme/api"}
    done = subprocess.run([sys.executable, "-m", "madtea", "commit", "new.txt", "-t", "from the cli"], cwd=e.web,
                          env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert run_git(e.web, "log", "-1", "--format=%s").strip() == "from the cli"
    done = subprocess.run([sys.executable, "-m", "madtea", "issue", "view", "1"], cwd=e.web, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "Login fails on web" in done.stdout, done.stderr


def test_doctor_reports_the_scope(forge_env: Any) -> None:
    e = forge_env
    base = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "madtea", "doctor"], cwd=e.web, env=base | {"MADTEA_READ_ONLY": "1"},
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert "mcp scope" in done.stdout and "read-only (only reads are offered)" in done.stdout, done.stdout
    done = subprocess.run([sys.executable, "-m", "madtea", "doctor", "--tools", "madt_isues", "--repo", "acme/web"],
                          cwd=e.web, env=base, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "fail  mcp scope" in done.stdout and "Did you mean madt_issues?" in done.stdout
    done = subprocess.run([sys.executable, "-m", "madtea", "doctor"], cwd=e.web, env=base,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert "unscoped" in done.stdout


@pytest.mark.parametrize("with_dir", [False, True])
def test_a_scoped_local_call_checks_its_repository_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        with_dir: bool) -> None:
    """The files' view passes the list before any git process; git's view of the same repository is not
    checked again (only a repository git names otherwise would be)."""
    repo = make_repo(tmp_path / "web", origin="https://forge.example.test/acme/web.git")
    checked: list[object] = []
    real = guard.check_repo_scope
    monkeypatch.setattr(guard, "check_repo_scope", lambda *a, **k: (checked.append(a[2]), real(*a, **k))[1])
    ctx = madtea.Context("mcp", repo, scope=guard.Scope(repos=(WEB,)))
    result = madtea.run("madt_status", {"dir": str(repo)} if with_dir else {}, ctx)
    assert result.error is None, result.text
    assert checked == [WEB]
    outside = madtea.run("madt_status", {}, madtea.Context("mcp", repo, scope=guard.Scope(repos=("acme/api",))))
    assert outside.error is not None and outside.error["code"] == "OUT_OF_SCOPE"


@pytest.mark.anyio
async def test_a_server_asks_the_forge_its_release_once_for_its_life(forge_env: Any) -> None:
    """/version is read once per session: later calls that need the release reuse it, as does each CLI command."""
    e = forge_env
    e.forge.clear_requests()
    results = await _calls(madtea.build_server(e.web), ("madt_whoami", {}), ("madt_whoami", {}),
                           ("madt_actions", {"action": "runs"}))
    assert [r.is_error for r in results] == [False, False, False], [r.content[0].text for r in results]
    assert e.forge.version in results[1].content[0].text
    assert len(e.forge.find_requests("GET", "/api/v1/version")) == 1
    # A second server is a second session: it asks again.
    await _calls(madtea.build_server(e.web), ("madt_whoami", {}))
    assert len(e.forge.find_requests("GET", "/api/v1/version")) == 2


@pytest.mark.parametrize("scoped", [False, True])
def test_a_folder_a_call_names_is_resolved_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                scoped: bool) -> None:
    """One madt_commit dir=… launched in the same checkout, with it as the client's one root: git resolves the
    folder once, its files are read once (only for the repository list), and origin is read once; the
    repository the scope read from its files is the very object the handler is pinned to."""
    repo = make_repo(tmp_path / "web", origin=f"https://{WEB}.git")
    run_git(repo, "switch", "-q", "-c", "feat/x")
    (repo / "new.txt").write_text("new\n")
    counts = {"discover": 0, "fs_find_repo": 0, "read_origin": 0}
    for name in counts:
        def counted(*a: Any, _real: Any = getattr(gitops, name), _name: str = name, **k: Any) -> Any:
            counts[_name] += 1
            return _real(*a, **k)
        monkeypatch.setattr(gitops, name, counted)
    pinned: list[guard.RepoFacts] = []
    real_commit = gitops.commit
    monkeypatch.setattr(gitops, "commit", lambda r, *a, **k: (pinned.append(r), real_commit(r, *a, **k))[1])
    ctx = madtea.Context("mcp", repo, [repo.as_uri()], scope=guard.Scope(repos=(WEB,)) if scoped else guard.Scope())
    result = madtea.run("madt_commit", {"title": "add new", "files": ["new.txt"], "dir": str(repo) + "/"}, ctx)
    assert result.error is None, result.text
    # Before one Place held both views: discover 3 (dir, launch, root), fs_find_repo 1, read_origin 4 (3 unscoped).
    assert counts == {"discover": 1, "fs_find_repo": int(scoped), "read_origin": 1}
    assert list(ctx.places) == [str(repo)]
    if scoped:
        assert pinned and pinned[0] is ctx.places[str(repo)].files()
