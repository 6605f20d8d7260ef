"""The agent's cd, followed end to end: a hook event from a sibling repo, then a guarded MCP call refused.

A small "agent" process spawns both the hook and the MCP server, as a harness does, so the
two share the agent as their ancestor.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from topologies import make_repo, run_git, snapshot, assert_only_changed

pytestmark = pytest.mark.slow  # many processes: not in the fast lane

ROOT = Path(__file__).resolve().parent.parent

AGENT = r"""
import asyncio, json, os, subprocess, sys
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
root, launch, shell_cwd = sys.argv[1:4]
env = dict(os.environ, PYTHONPATH=root)
event = {"session_id": "s", "cwd": shell_cwd, "hook_event_name": "PreToolUse", "tool_name": "Bash",
         "tool_input": {"command": "ls"}}
if shell_cwd != "-":
    subprocess.run([sys.executable, "-m", "madtea", "hook"], input=json.dumps(event).encode(), env=env, check=True)
params = StdioServerParameters(command=sys.executable, args=["-m", "madtea", "mcp"], cwd=launch, env=env)
async def main():
    async with Client(params, mode="legacy") as client:
        result = await client.call_tool("madt_commit", {"title": "t", "files": ["b.txt"]})
    print(json.dumps({"error": result.is_error, "structured": result.structured_content,
                      "text": result.content[0].text}))
asyncio.run(main())
"""

needs_proc = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="the cd-following signal needs /proc")


def _agent(launch: Path, shell_cwd: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", AGENT, str(ROOT), str(launch), shell_cwd], capture_output=True,
                          text=True, timeout=120, env=dict(os.environ))
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _flat(tmp: Path) -> tuple[Path, Path]:
    web = make_repo(tmp / "src" / "web", origin="https://forge.example.test/acme/web.git")
    api = make_repo(tmp / "src" / "api", origin="https://forge.example.test/acme/api.git")
    run_git(web, "switch", "-q", "-c", "feat/x")
    (web / "b.txt").write_text("b\n")
    return web, api


@needs_proc
def test_agent_in_a_sibling_repo_is_refused_with_wrong_repo(tmp_path: Path) -> None:
    web, api = _flat(tmp_path)
    before = snapshot([web, api])
    out = _agent(web, str(api / "sub") if (api / "sub").exists() else str(api))
    assert out["error"] is True
    assert out["structured"]["code"] == "WRONG_REPO"
    assert "the agent's shell directory" in out["text"] and "acme/api" in out["text"]
    assert ({"tool": "madt_commit", "args": {"title": "t", "files": ["b.txt"], "dir": str(api)}},) in \
        map(tuple, out["structured"]["choices"])
    assert_only_changed(before, snapshot([web, api]), set())


@needs_proc
def test_agent_in_the_launch_repo_goes_through(tmp_path: Path) -> None:
    web, api = _flat(tmp_path)
    out = _agent(web, str(web))
    assert out["error"] is False, out["text"]
    assert run_git(web, "log", "-1", "--format=%s") == "t"


@needs_proc
def test_no_hook_event_is_no_signal(tmp_path: Path) -> None:
    web, _ = _flat(tmp_path)
    out = _agent(web, "-")
    assert out["error"] is False, out["text"]
