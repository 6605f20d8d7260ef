"""Long calls in a real client: progress, deadlines under the client's, a cancel that stops the work, local reads.

Every test drives a ``madtea mcp`` stdio child through the SDK's own client (or raw JSON-RPC lines where the
order of messages on the wire is the point), against the fake forge and real git. The slow remote is a
pre-receive hook that sleeps; the slow forge is the fake forge's injected faults.
"""
from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("mcp")

import anyio
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

import madtea
from remote_env import Env, child_env, env  # noqa: F401 - fixtures
from test_shutdown import Server, _alive, _slow_remote
from topologies import run_git

pytestmark = [pytest.mark.anyio,
              pytest.mark.skipif(not os.path.isdir("/proc/self") or os.name != "posix",
                                 reason="the process-tree checks read /proc")]


def _params(cwd: Path, **extra_env: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "madtea", "mcp"], cwd=str(cwd),
                                 env=child_env(**extra_env))


def _descendants(pid: int) -> dict[int, str]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if fields[0] != "Z":
                children.setdefault(int(fields[1]), []).append(int(entry))
    found: dict[int, str] = {}
    todo = list(children.get(pid, []))
    while todo:
        child = todo.pop()
        try:
            found[child] = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        todo += children.get(child, [])
    return found


def _server_pid() -> int:
    """The pid of the one ``madtea mcp`` child of this test process; an earlier test's server may still be
    exiting on a loaded machine, so this waits (up to 30 s) until it has gone."""
    deadline = time.monotonic() + 30
    while True:
        found = [pid for pid, cmd in _descendants(os.getpid()).items() if "madtea mcp" in cmd]
        if len(found) == 1 or time.monotonic() > deadline:
            assert len(found) == 1, found
            return found[0]
        time.sleep(0.05)


async def test_a_push_to_a_slow_remote_reports_gits_progress_and_keeps_counting(env: Env) -> None:
    _slow_remote(env, "echo checking the push; sleep 7; echo accepted")
    seen: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, message))

    async with Client(_params(env.clone), mode="legacy") as client:
        result = await client.call_tool("madt_push", {}, progress_callback=on_progress)
        answered = len(seen)
    assert not result.is_error, result.content[0].text
    assert env.forge.branch_sha("acme", "web", "feat/x") == run_git(env.clone, "rev-parse", "HEAD")
    counts = [p for p, _ in seen]
    assert counts == sorted(set(counts)) and len(counts) >= 2, seen
    messages = [m or "" for _, m in seen]
    assert any(m.startswith("pushing feat/x to origin — git: remote: checking the push") for m in messages), messages
    assert any("so far)" in m for m in messages), messages  # the quiet stretch of the hook still says something
    assert answered == len(seen)  # nothing after the answer
    assert "remote: checking" not in result.content[0].text


async def test_forge_retries_say_what_they_wait_for(env: Env) -> None:
    env.forge.create_issue("acme", "web", "Flaky", "body")
    env.forge.inject("503", 2, method="GET", path_contains="/issues/1")
    seen: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(message or "")

    async with Client(_params(env.clone), mode="legacy") as client:
        result = await client.call_tool("madt_issues", {"action": "view", "number": 1}, progress_callback=on_progress)
    assert not result.is_error, result.content[0].text
    assert any("answered 503; trying again in" in m for m in seen), seen


def test_progress_is_never_sent_after_the_answer(env: Env) -> None:
    """On the wire: every progress notification for a call comes before its response."""
    env.forge.create_issue("acme", "web", "Flaky", "body")
    env.forge.inject("503", 2, method="GET", path_contains="/issues/1")
    server = Server(env.clone)
    server.send({"jsonrpc": "2.0", "id": 90, "method": "tools/call",
                 "params": {"name": "madt_issues", "arguments": {"action": "view", "number": 1},
                            "_meta": {"progressToken": "t1"}}})
    server.send({"jsonrpc": "2.0", "id": 91, "method": "tools/call",
                 "params": {"name": "madt_issues", "arguments": {"action": "view", "number": 1}}})
    order: list[str] = []
    assert server.proc.stdout is not None
    while "91" not in order or "90" not in order:
        message = json.loads(server.proc.stdout.readline())
        if message.get("method") == "notifications/progress":
            assert message["params"]["progressToken"] == "t1"
            order.append("progress")
        elif "id" in message:
            order.append(str(message["id"]))
    server.send({"jsonrpc": "2.0", "id": 92, "method": "ping"})
    while (message := json.loads(server.proc.stdout.readline())).get("id") != 92:
        order.append("late " + str(message.get("method")))
    server.finish("eof")
    assert "progress" in order and not any(o.startswith("late") for o in order), order
    assert order.index("90") > max(i for i, o in enumerate(order) if o == "progress"), order


async def test_a_forge_that_never_answers_is_answered_for_within_the_call_deadline(env: Env) -> None:
    env.forge.create_issue("acme", "web", "Stuck", "body")
    env.forge.inject("slow", 5, method="GET", path_contains="/issues/1", seconds=60)
    async with Client(_params(env.clone, MADTEA_CALL_DEADLINE="3"), mode="legacy") as client:
        with anyio.fail_after(40):  # a liveness bound far under the fault's 60 s, not a timing assertion
            result = await client.call_tool("madt_issues", {"action": "view", "number": 1})
    assert result.is_error and result.structured_content["code"] == "FORGE_UNAVAILABLE"
    assert "within the overall time limit" in result.content[0].text, result.content[0].text


def test_a_call_with_progress_answers_under_its_clients_measured_deadline() -> None:
    """Claude Code waits without limit, Gemini CLI 600 s, Codex CLI 300 s, whatever progress says."""
    assert madtea.call_limit("claude-code", True) is None
    assert madtea.call_limit("gemini-cli-mcp-client", True) == 570.0
    assert madtea.call_limit("codex-mcp-client", True) == 270.0 == madtea.LONG_WAIT
    assert madtea.call_limit("some-other-client", True) is None
    assert madtea.call_limit("codex-mcp-client", False) == madtea.call_limit(None, False) == madtea.CALL_DEADLINE


@pytest.mark.parametrize("client, slow, answered", [("codex-mcp-client", 60, False), ("claude-code", 8, True)])
async def test_a_call_that_reports_progress_is_bounded_by_its_client(env: Env, client: str, slow: int,
                                                                     answered: bool) -> None:
    """With progress a Codex call still answers before Codex gives up (its bound scaled down here by the
    variable), while a Claude Code call runs to its end."""
    from mcp.types import Implementation

    env.forge.create_issue("acme", "web", "Stuck", "body")
    env.forge.inject("slow", 1, method="GET", path_contains="/issues/1", seconds=slow)
    seen: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(message or "")

    async with Client(_params(env.clone, MADTEA_CALL_DEADLINE="3"), mode="legacy",
                      client_info=Implementation(name=client, version="1")) as client_session:
        with anyio.fail_after(50):  # a liveness bound under the 60 s fault, not a timing assertion
            result = await client_session.call_tool("madt_issues", {"action": "view", "number": 1},
                                                    progress_callback=on_progress)
    assert seen, "the call reported progress"
    if answered:
        assert not result.is_error and "Stuck" in result.content[0].text, result.content[0].text
    else:
        assert result.is_error and result.structured_content["code"] == "FORGE_UNAVAILABLE", result.content[0].text
        assert "even while it shows progress" in result.content[0].text or "time limit" in result.content[0].text


async def test_finish_past_its_deadline_answers_with_its_resumable_state(env: Env) -> None:
    run_git(env.clone, "switch", "-q", "-c", "feat/late")
    (env.clone / "late.txt").write_text("late\n")
    env.forge.inject("slow", 5, method="POST", path_contains="/pulls", seconds=60)
    async with Client(_params(env.clone, MADTEA_CALL_DEADLINE="6"), mode="legacy") as client:
        with anyio.fail_after(40):
            result = await client.call_tool("madt_finish", {"title": "Late work", "files": ["late.txt"]})
    assert result.is_error, result.content[0].text
    data = result.structured_content
    assert data["next"][0]["tool"] == "madt_finish" and "files" not in data["next"][0]["args"], data
    text = result.content[0].text
    assert "done: Committed" in text and "done: Pushed feat/late" in text and "Resume with" in text, text


async def test_a_cancelled_push_ends_every_descendant_and_lands_nothing(env: Env) -> None:
    pushed = _slow_remote(env, "sleep 30")
    local = run_git(env.clone, "rev-parse", "HEAD")
    async with Client(_params(env.clone), mode="legacy") as client:
        tree: dict[int, str] = {}
        async with anyio.create_task_group() as group:
            group.start_soon(client.call_tool, "madt_push", {})
            with anyio.fail_after(30):
                while not any(cmd.startswith("sleep 30") for cmd in tree.values()):
                    await anyio.sleep(0.05)
                    tree = _descendants(_server_pid())
            assert any("receive-pack" in cmd for cmd in tree.values()), tree
            group.cancel_scope.cancel()  # the SDK client sends notifications/cancelled for the call
        with anyio.fail_after(10):
            while any(_alive(pid, cmd) for pid, cmd in tree.items()):
                await anyio.sleep(0.05)
        await anyio.sleep(1.5)  # had anything survived to finish the push, it would have landed by now
        assert env.forge.branch_sha("acme", "web", "feat/x") == pushed
        status = await client.call_tool("madt_status", {})
    facts = status.structured_content["result"]
    assert facts["interrupted_pushes"] == [{"branch": "feat/x", "sha": local, "last_seen": pushed, "landed": None}]
    assert facts["pushes_in_progress"] == []
    assert "madt_push branch=feat/x settles it" in status.content[0].text


async def test_a_push_in_flight_is_reported_as_in_progress_not_interrupted(env: Env) -> None:
    _slow_remote(env, "sleep 30")
    async with Client(_params(env.clone), mode="legacy") as client:
        async with anyio.create_task_group() as group:
            group.start_soon(client.call_tool, "madt_push", {})
            with anyio.fail_after(30):
                while not any(c.startswith("sleep 30") for c in _descendants(_server_pid()).values()):
                    await anyio.sleep(0.05)
            status = await client.call_tool("madt_status", {})
            group.cancel_scope.cancel()
    facts = status.structured_content["result"]
    assert facts["interrupted_pushes"] == [] and [p["branch"] for p in facts["pushes_in_progress"]] == ["feat/x"]
    assert "a push of feat/x" in status.content[0].text and "is in progress" in status.content[0].text


async def test_status_and_log_never_reach_the_remote(env: Env, tmp_path: Path) -> None:
    """A stale push mark and a remote that would stall: status and log answer from local facts only."""
    _slow_remote(env, None)
    sha = run_git(env.clone, "rev-parse", "HEAD")
    (env.clone / ".git" / ("madtea-push-" + b"feat/x".hex())).write_text(f"feat/x\n{sha}\n999999999\n")
    reached = tmp_path / "remote-was-reached"
    for key in ("uploadpack", "receivepack"):
        run_git(env.clone, "config", f"remote.origin.{key}", f"touch {reached}; sleep 60; git-upload-pack")
    async with Client(_params(env.clone), mode="legacy") as client:
        with anyio.fail_after(30):
            status = await client.call_tool("madt_status", {})
            log = await client.call_tool("madt_log", {"limit": 2})
    assert not status.is_error and not log.is_error
    assert status.structured_content["result"]["interrupted_pushes"][0]["landed"] is None
    assert not reached.exists()


def test_sigterm_exits_with_the_signals_status(env: Env) -> None:
    server = Server(env.clone)
    code, stderr = server.finish("SIGTERM")
    assert code == 128 + signal.SIGTERM and "Traceback" not in stderr, stderr


async def test_finish_says_each_of_its_steps(env: Env) -> None:
    run_git(env.clone, "switch", "-q", "-c", "feat/steps")
    (env.clone / "steps.txt").write_text("steps\n")
    seen: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(message or "")

    # a slow mergeability answer keeps the call long enough for several messages to be sent
    env.forge.inject("slow", 2, method="GET", path_contains="/pulls/", seconds=1)
    async with Client(_params(env.clone), mode="legacy") as client:
        result = await client.call_tool("madt_finish", {"title": "Steps", "files": ["steps.txt"]},
                                        progress_callback=on_progress)
    assert not result.is_error, result.content[0].text
    steps = {m.split(" — ")[0] for m in seen}
    finish_steps = ("done: Committed", "pushing feat/steps", "opening the pull request", "merging PR",
                    "waiting for the forge", "switching to main", "done: ")
    assert len([s for s in steps if s.startswith(finish_steps)]) >= 2, seen
    assert "Merged PR" in result.content[0].text


async def test_progress_from_a_remote_reaches_the_agent_cleaned(env: Env) -> None:
    """A remote's own words (a pre-receive hook's output) are an agent sink like any result: no control, bidi or
    zero-width character passes in a progress message."""
    _slow_remote(env, "printf 'checking \\033]0;owned\\007 \\342\\200\\256 \\342\\200\\213 ok\\n'; sleep 2")
    seen: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(message or "")

    async with Client(_params(env.clone), mode="legacy") as client:
        result = await client.call_tool("madt_push", {}, progress_callback=on_progress)
    assert not result.is_error, result.content[0].text
    hook = [m for m in seen if "checking" in m]
    assert hook, seen
    for message in hook:
        assert not [c for c in message if ord(c) < 32 or 0x7F <= ord(c) < 0xA0 or c in "\u202e\u200b"], message
    assert any("\\u202e" in m for m in hook), hook
