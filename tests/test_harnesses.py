"""The real agent harnesses, run headless against a scripted model on 127.0.0.1, with madtea wired as shipped.

`.ci/run` installs the pinned releases from npm into a cache folder; without them these tests
skip, saying so. No model is reached: the stand-in answers each turn with the next scripted tool
call and keeps every request, so the assertions read what the harness showed the model.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness_models import ScriptedModel, await_tool
from topologies import make_repo

ROOT = Path(__file__).resolve().parent.parent
PINNED = {"claude": "@anthropic-ai/claude-code@2.1.197"}
# Read when the module is imported, before each test's private home replaces the real one.
HARNESS_BIN = Path(os.environ.get("MADTEA_HARNESS_BIN")
                   or Path.home() / ".cache" / "madtea-harnesses" / "node_modules" / ".bin")
TOKEN = "canary-harness-token-8731"


def _binary(name: str) -> Path:
    path = HARNESS_BIN / name
    if not (path.exists() and shutil.which("node")):
        pytest.skip(f"{PINNED[name]} is not installed in {HARNESS_BIN.parent.parent} "
                    "(.ci/run installs it from npm; npm could not be reached, or this is not a CI run)")
    return path


def _madtea_bin(tmp: Path) -> Path:
    """A folder holding a ``madtea`` command and python3: this checkout run by the Python that has mcp.

    It stands in for the README's pipx install (which needs the network), and runs this
    checkout's files, so an older madtea installed elsewhere cannot answer for them.
    """
    folder = tmp / "madtea-bin"
    folder.mkdir()
    (folder / "madtea").write_text(f'#!/bin/sh\nexec "{sys.executable}" "{ROOT / "madtea.py"}" "$@"\n')
    (folder / "madtea").chmod(0o755)
    (folder / "python3").symlink_to(sys.executable)
    return folder


def _workspace(tmp: Path) -> tuple[Path, Path]:
    """Two sibling clones whose forge is a closed port on loopback (nothing answers, nothing leaves)."""
    web = make_repo(tmp / "src" / "web", origin="http://127.0.0.1:9/acme/web.git")
    api = make_repo(tmp / "src" / "api", origin="http://127.0.0.1:9/acme/api.git")
    (web / "x").write_text("x\n")
    return web, api


def _run_claude(model: ScriptedModel, cwd: Path, path: str, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {"HOME": os.environ["HOME"], "PATH": path, "LANG": "C.UTF-8", "TZ": "UTC", "IS_SANDBOX": "1",
           "ANTHROPIC_BASE_URL": model.url, "ANTHROPIC_API_KEY": "sk-scripted",
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1",
           "MADTEA_TOKEN": TOKEN, "GIT_CONFIG_GLOBAL": os.environ["GIT_CONFIG_GLOBAL"], "GIT_CONFIG_NOSYSTEM": "1",
           # anything the harness would send off this machine goes to a closed loopback port instead
           "HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9", "NO_PROXY": "127.0.0.1,localhost"}
    return subprocess.run([str(_binary("claude")), "-p", "commit x", "--output-format", "stream-json", "--verbose",
                           "--dangerously-skip-permissions", "--plugin-dir", str(ROOT), *extra],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL)


def _mcp(tool: str) -> str:
    return f"mcp__plugin_madtea_madtea__{tool}"


def test_claude_code_runs_the_hook_and_the_server_as_installed(tmp_path: Path) -> None:
    claude = _binary("claude")
    web, api = _workspace(tmp_path)
    path = f"{_madtea_bin(tmp_path)}:{Path(shutil.which('node') or '/usr/bin/node').parent}:/usr/bin:/bin"
    steps = [
        {"name": "Bash", "input": {"command": "git add x && git commit -m y", "description": "commit"}},
        {"name": "Bash", "input": {"command": "git status", "description": "status"}},
        await_tool(_mcp("madt_status")),
        {"name": _mcp("madt_status"), "input": {}},
        {"name": _mcp("madt_whoami"), "input": {}},
        {"name": "Bash", "input": {"command": f"cd {api}", "description": "go to the sibling"}},
        {"name": "Bash", "input": {"command": "ls", "description": "look"}},
        {"name": _mcp("madt_add"), "input": {"files": ["x"]}},
    ]
    with ScriptedModel(steps) as model:
        proc = _run_claude(model, web, path, "--add-dir", str(api))
    assert claude.exists() and proc.returncode == 0, proc.stderr[-2000:]
    results = [(call["name"], call["input"], result) for call, result in model.exchanges()
               if call["input"].get("command") != "sleep 1"]
    names = [name for name, _, _ in results]
    assert names == [s["name"] for s in steps if "name" in s], names
    blocked, status, mcp_status, whoami, cd, ls, add = (r for _, _, r in results)
    # the deny and madtea's reason reach the model, and nothing was staged
    assert blocked.get("is_error") is True and 'madt_add files=["x"]' in blocked["text"], blocked["text"]
    # a read runs, with the note beside it
    assert not status.get("is_error") and "Untracked files" in status["text"] and "madt_status" in status["text"]
    # the server started in the launch repo, through Claude Code's own MCP client, with the token
    assert not mcp_status.get("is_error") and str(web) in mcp_status["text"], mcp_status["text"]
    assert "the environment variable MADTEA_TOKEN" in whoami["text"] and TOKEN not in whoami["text"], whoami["text"]
    # after a cd into the sibling, a dir-less madt_add is refused, naming the call with dir=
    assert not cd.get("is_error") and not ls.get("is_error"), (cd, ls)
    assert add.get("is_error") is True and "WRONG_REPO" in add["text"] and str(api) in add["text"], add["text"]
    assert subprocess.run(["git", "diff", "--cached", "--name-only"], cwd=web, capture_output=True,
                          text=True).stdout == ""  # neither the raw git add nor the refused madt_add staged x


def test_claude_code_without_madtea_on_path_wedges_nothing(tmp_path: Path) -> None:
    _binary("claude")
    web, _ = _workspace(tmp_path)
    bare = tmp_path / "bare-bin"
    bare.mkdir()
    (bare / "python3").symlink_to(sys.executable)
    path = f"{bare}:{Path(shutil.which('node') or '/usr/bin/node').parent}:/usr/bin:/bin"
    steps = [{"name": "Bash", "input": {"command": "ls", "description": "look"}},
             {"name": "Bash", "input": {"command": "git add x", "description": "stage"}}]
    with ScriptedModel(steps) as model:
        proc = _run_claude(model, web, path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (ls, ls_result), (add, add_result) = model.exchanges()
    assert not ls_result.get("is_error") and "x" in ls_result["text"].split()
    # the hook needs only python3 and the plugin's own folder: it still steers without madtea on PATH
    assert add_result.get("is_error") is True and 'madt_add files=["x"]' in add_result["text"]
