"""The MCP surface: schemas, annotations, strict names, errors as data, roots, and a real stdio child."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.types import ListRootsResult, Root

import madtea
from topologies import make_repo, run_git, snapshot, assert_only_changed

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.anyio


def _roots_callback(*paths: Path):
    async def callback(context):  # the SDK's callback shape
        return ListRootsResult(roots=[Root(uri=p.as_uri(), name=p.name) for p in paths])
    return callback


async def _call(server, tool: str, args: dict, **client_options):
    async with Client(server, mode="legacy", **client_options) as client:
        return await client.call_tool(tool, args)


def _feature_repo(path: Path, origin: str) -> Path:
    make_repo(path, origin=origin, files={"a.txt": "a\n"})
    run_git(path, "switch", "-q", "-c", "feat/x")
    (path / "b.txt").write_text("b\n")
    return path


async def test_tools_are_one_per_noun_with_strict_schemas(single_repo) -> None:
    server = madtea.build_server(single_repo.repo)
    async with Client(server, mode="legacy") as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert all(name.startswith("madt_") for name in tools)
    assert {"madt_status", "madt_commit", "madt_issues", "madt_pr", "madt_worktrees", "madt_api_call"} <= set(tools)
    issues = tools["madt_issues"].input_schema
    assert issues["required"] == ["action"]
    assert "delete" not in issues["properties"]["action"]["enum"]
    assert set(issues["properties"]["action"]["enum"]) >= {"list", "view", "create", "edit", "close", "comment"}
    for tool in tools.values():
        assert tool.input_schema["additionalProperties"] is False
        for name, prop in tool.input_schema["properties"].items():
            assert prop.get("description") or name == "action", (tool.name, name)
    assert "not `message`" in tools["madt_commit"].input_schema["properties"]["title"]["description"]


async def test_annotations_are_truthful(single_repo) -> None:
    server = madtea.build_server(single_repo.repo)
    async with Client(server, mode="legacy") as client:
        tools = {t.name: t.annotations for t in (await client.list_tools()).tools}
    assert tools["madt_status"].read_only_hint is True
    assert tools["madt_log"].read_only_hint is True
    assert tools["madt_commit"].read_only_hint is False
    assert tools["madt_commit"].destructive_hint is False
    assert tools["madt_branch_delete"].destructive_hint is True
    assert tools["madt_issues"].destructive_hint is True       # edit can overwrite a body
    assert tools["madt_worktrees"].read_only_hint is False     # add and remove write
    assert tools["madt_issues"].open_world_hint is True
    assert tools["madt_status"].open_world_hint is False


async def test_unknown_parameter_is_refused_as_data(single_repo) -> None:
    result = await _call(madtea.build_server(single_repo.repo), "madt_commit",
                         {"commit_message": "x", "files": ["a.txt"]})
    assert result.is_error is True
    assert result.structured_content["code"] == "UNKNOWN_PARAMETER"
    assert result.structured_content["next"] == [{"tool": "madt_commit", "args": {"title": "x", "files": ["a.txt"]}}]
    text = result.content[0].text
    assert "Did you mean title?" in text and "Error executing tool" not in text


async def test_refusal_never_suggests_the_cli_or_cd(single_repo) -> None:
    run_git(single_repo.repo, "switch", "-q", "main")
    (single_repo.repo / "new.txt").write_text("n\n")
    result = await _call(madtea.build_server(single_repo.repo), "madt_commit", {"title": "t", "files": ["new.txt"]})
    assert result.structured_content["code"] == "DEFAULT_BRANCH"
    text = result.content[0].text
    assert "madtea " not in text and "cd " not in text
    assert "Either: madt_branch_create" in text and "Or: madt_commit" in text


async def test_commit_through_mcp_echoes_identity(tmp_path) -> None:
    repo = _feature_repo(tmp_path / "web", "https://forge.example.test/acme/web.git")
    result = await _call(madtea.build_server(repo), "madt_commit", {"title": "add b", "files": "b.txt"})
    assert result.is_error is False, result.content[0].text
    text = result.content[0].text
    assert text.startswith("Committed ") and f"acme/web @ {repo}" in text and "(feat/x)" in text
    assert result.structured_content["result"]["files"] == ["b.txt"]


async def test_roots_mismatch_refuses_and_changes_nothing(tmp_path) -> None:
    web = _feature_repo(tmp_path / "web", "https://forge.example.test/acme/web.git")
    api = make_repo(tmp_path / "api", origin="https://forge.example.test/acme/api.git", files={"x": "x\n"})
    before = snapshot([web, api])
    result = await _call(madtea.build_server(web), "madt_commit", {"title": "t", "files": ["b.txt"]},
                         list_roots_callback=_roots_callback(api))
    assert result.structured_content["code"] == "WRONG_REPO"
    text = result.content[0].text
    assert "acme/web" in text and "acme/api" in text
    assert "next" not in result.structured_content  # which repository is meant only the caller knows
    dirs = [step["args"].get("dir") for [step] in result.structured_content["choices"]]
    assert str(api) in dirs and str(web) in dirs
    assert_only_changed(before, snapshot([web, api]), set())


@pytest.mark.parametrize("roots", ["same", "none", "several", "not-a-repo"])
async def test_roots_that_are_no_signal_or_agree_let_the_call_through(tmp_path, roots) -> None:
    web = _feature_repo(tmp_path / "web", "https://forge.example.test/acme/web.git")
    other = make_repo(tmp_path / "api", origin="https://forge.example.test/acme/api.git", files={"x": "x\n"})
    plain = tmp_path / "plain"
    plain.mkdir()
    options = {"same": {"list_roots_callback": _roots_callback(web)}, "none": {},
               "several": {"list_roots_callback": _roots_callback(web, other)},
               "not-a-repo": {"list_roots_callback": _roots_callback(plain)}}[roots]
    result = await _call(madtea.build_server(web), "madt_commit", {"title": "t", "files": ["b.txt"]}, **options)
    assert result.is_error is False, result.content[0].text
    assert run_git(web, "log", "-1", "--format=%s").strip() == "t"


async def test_roots_are_not_asked_for_reads(tmp_path) -> None:
    web = _feature_repo(tmp_path / "web", "https://forge.example.test/acme/web.git")
    asked = []

    async def callback(context):
        asked.append(True)
        return ListRootsResult(roots=[])
    result = await _call(madtea.build_server(web), "madt_status", {}, list_roots_callback=callback)
    assert result.is_error is False and asked == []


async def test_internal_errors_are_coded_results_not_tracebacks(single_repo, monkeypatch) -> None:
    def boom(inv):
        raise RuntimeError("kaboom")
    op = next(op for op in madtea.REGISTRY if op.tool == "madt_status")
    patched = [madtea.replace(o, handler=boom) if o is op else o for o in madtea.REGISTRY]
    monkeypatch.setattr(madtea, "REGISTRY", patched)
    result = await _call(madtea.build_server(single_repo.repo), "madt_status", {})
    assert result.is_error is True
    assert result.structured_content["code"] == "INTERNAL_ERROR"
    assert "kaboom" in result.content[0].text and "Traceback" not in result.content[0].text


def _stdio_params(cwd: Path) -> StdioServerParameters:
    env = {"PYTHONPATH": str(ROOT), "HOME": os.environ["HOME"], "PATH": os.environ.get("PATH", ""),
           "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.environ["GIT_CONFIG_GLOBAL"],
           "XDG_CONFIG_HOME": os.environ["XDG_CONFIG_HOME"], "XDG_RUNTIME_DIR": os.environ["XDG_RUNTIME_DIR"]}
    return StdioServerParameters(command=sys.executable, args=["-m", "madtea", "mcp"], cwd=str(cwd), env=env)


async def test_stdio_legacy_client_from_a_repo_with_its_own_modules(shadowing_repo) -> None:
    """Launched where the repo holds guard.py, forge.py and gitops.py: madtea still loads its own."""
    async with Client(_stdio_params(shadowing_repo.repo), mode="legacy") as client:
        assert client.protocol_version == "2025-11-25"
        assert "dir=" in (client.instructions or "")
        tools = (await client.list_tools()).tools
        assert len(tools) == len(madtea.tool_names())
        result = await client.call_tool("madt_status", {})
    assert result.is_error is False, result.content[0].text
    assert str(shadowing_repo.repo) in result.content[0].text


async def test_stdio_error_result_reaches_the_client(single_repo) -> None:
    async with Client(_stdio_params(single_repo.repo), mode="legacy") as client:
        result = await client.call_tool("madt_add", {"files": ["."]})
    assert result.is_error is True
    assert result.structured_content["code"] == "UNDECLARED_FILES", result.content[0].text
    assert json.dumps(result.structured_content)


def test_the_server_is_the_sdks_own_low_level_server_imported_as_the_sdk_publishes_it(tmp_path: Path) -> None:
    """No stand-ins in sys.modules: the SDK's packages are the SDK's, each name where the SDK puts it."""
    probe = """
import sys
import madtea
server = madtea.build_server()
import mcp, mcp.server
from mcp.server.lowlevel import Server
print(type(server) is Server, all(getattr(sys.modules[m], "__getattr__", None) is None for m in ("mcp", "mcp.server")),
      mcp.Client.__name__, mcp.server.MCPServer.__name__)
"""
    env = {"PYTHONPATH": str(ROOT), "HOME": os.environ["HOME"], "PATH": os.environ.get("PATH", "")}
    out = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=120, stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True", "Client", "MCPServer"]


@pytest.mark.anyio
async def test_dir_null_is_no_dir_and_still_meets_the_roots_signal(tmp_path: Path, hermetic_seal: Path) -> None:
    web = make_repo(tmp_path / "web", origin="https://forge.example.test/acme/web.git")
    api = make_repo(tmp_path / "api", origin="https://forge.example.test/acme/api.git")
    run_git(web, "switch", "-q", "-c", "feat")
    (web / "b.txt").write_text("b\n", encoding="utf-8")

    async def roots(context: Any) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=api.as_uri(), name="api")])

    async with Client(madtea.build_server(web), mode="legacy", list_roots_callback=roots) as client:
        result = await client.call_tool("madt_commit", {"title": "t", "files": ["b.txt"], "dir": None})
    assert result.structured_content["code"] == "WRONG_REPO", result.content[0].text
    assert run_git(web, "status", "--porcelain") == "?? b.txt"


async def test_tools_list_fits_the_shared_budget(tmp_path: Path) -> None:
    """The whole surface's tools/list, as the SDK serialises it (a little more than the wire's bytes), stays
    within 38,000 bytes: an addition pays for itself with shorter shared wording (bench/tools_list_size.py)."""
    repo = make_repo(tmp_path / "web", origin="https://forge.example.test/acme/web.git")
    async with Client(madtea.build_server(repo, None), mode="legacy") as client:
        listed = await client.list_tools()
    answer = {"jsonrpc": "2.0", "id": 2, "result": listed.model_dump(by_alias=True, exclude_none=True, mode="json")}
    size = len(json.dumps(answer, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))
    assert size <= 38_000, f"tools/list is {size} bytes"
