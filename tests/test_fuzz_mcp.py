"""Fuzzing through the real MCP SDK client over stdio, as a harness calls the tools.

The same hostile calls as the dispatcher lane (wrong types, lists and objects for strings, 1 MB
values, NUL, bidirectional controls, ``..`` and ``.git`` paths, negative and huge numbers) go
through ``mcp.client.Client`` to a ``madtea mcp`` child (behind the suite's loopback-only socket
guard), so what the SDK does with them on either side is part of what is checked. Every call
answers within a bound with no ``INTERNAL_ERROR`` and no traceback, a refusal carries exactly one
way on in its structured content, and a sibling repository and a file beside the target never
change. A request the SDK itself would turn away (arguments that are not an object, a tool name
that is not a string) is sent as raw JSON-RPC and must come back as madtea's own refusal.
"""
from __future__ import annotations

import collections
import json
import os
import select
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from anyio.from_thread import start_blocking_portal
from hypothesis import given, settings
from mcp.client import Client

import guard
from remote_env import CALL_BOUND, WORKER, bounded_call, child_env, mcp_server
from test_fuzz import FUZZ, calls, check_answer, sandbox  # noqa: F401
from topologies import assert_only_changed, snapshot

pytestmark = pytest.mark.slow  # fuzzing through the SDK's client: not in the fast lane

COUNTS: collections.Counter[str] = collections.Counter()
REFUSAL_BOUND = 32_000  # characters of text and structured content together: values of 1 MB come in
EXAMPLES = int(os.environ.get("MADTEA_FUZZ_MCP_EXAMPLES", "120"))  # read before the seal clears MADTEA_*


def _sendable(value: Any) -> bool:
    """JSON a client can put on the wire: a lone surrogate is no UTF-8 (the dispatcher lane has those)."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except (UnicodeEncodeError, TypeError, ValueError):
        return False
    return True


def _answer(result: Any) -> dict[str, Any]:
    """What check_answer reads, from the SDK's CallToolResult."""
    text = "\n".join(getattr(c, "text", "") for c in result.content)
    structured = result.structured_content or {}
    assert structured.get("ok") is (not result.is_error), (text[:500], structured)
    way = {k: structured[k] for k in ("next", "choices", "user_action") if k in structured}
    if result.is_error:
        assert structured.get("target"), f"a refusal names its target: {text[:500]}"
        size = len(text) + len(json.dumps(structured))
        assert size <= REFUSAL_BOUND, f"a refusal of {size} characters, whatever the call sent: {text[:300]}"
    return {"text": text, "code": structured.get("code"), "next": structured.get("next") or [],
            "choices": structured.get("choices") or [], "user_action": structured.get("user_action"),
            "structured": way}


def test_fuzz_every_tool_and_action_through_the_mcp_sdk_client(sandbox: Path) -> None:
    before = snapshot([sandbox / "api"])
    before_file = (sandbox / "outside.txt").read_bytes()
    COUNTS.clear()
    with start_blocking_portal() as portal:
        with portal.wrap_async_context_manager(Client(mcp_server(sandbox / "web"), mode="legacy")) as client:

            @settings(FUZZ, max_examples=EXAMPLES)
            @given(call=calls(sandbox))
            def one(call: tuple[str, Any]) -> None:
                tool, args = call
                if not isinstance(args, dict) or not _sendable(args):
                    COUNTS["not sendable by the SDK client"] += 1
                    return
                COUNTS["calls"] += 1
                try:
                    result = portal.call(bounded_call, client, tool, args)
                except TimeoutError:
                    raise AssertionError(f"hang: {tool} gave no answer within {CALL_BOUND:.0f} s") from None
                answer = _answer(result)
                COUNTS[f"code {answer['code'] or 'ok'}"] += 1
                check_answer(tool, args, answer)
                assert (sandbox / "outside.txt").read_bytes() == before_file, f"{tool} wrote outside.txt"

            try:
                one()
            finally:
                print(f"\nfuzz (MCP SDK client): {dict(sorted(COUNTS.items()))}")
    assert_only_changed(before, snapshot([sandbox / "api"]), set())
    assert COUNTS["calls"] >= 30


# --------------------------------------------------------------------------- what the SDK would turn away

class RawServer:
    """A ``madtea mcp`` child spoken to in raw JSON-RPC lines, as a harness of its own would."""

    def __init__(self, cwd: Path) -> None:
        self.proc = subprocess.Popen([sys.executable, str(WORKER), "mcp"], cwd=cwd, env=child_env(),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True, encoding="utf-8")
        self.ids = iter(range(1, 10_000))
        init = self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                           "clientInfo": {"name": "raw", "version": "1"}})
        assert "result" in init, init
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: Any) -> dict[str, Any]:
        number = next(self.ids)
        self.send({"jsonrpc": "2.0", "id": number, "method": method, "params": params})
        assert self.proc.stdout
        ready, _, _ = select.select([self.proc.stdout], [], [], CALL_BOUND)
        assert ready, f"hang: {method} {params!r:.200} gave no answer within {CALL_BOUND:.0f} s"
        answer = json.loads(self.proc.stdout.readline())
        assert answer.get("id") == number, answer
        return answer

    def close(self) -> None:
        assert self.proc.stdin
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=30)


@pytest.fixture
def raw(sandbox: Path) -> Any:
    server = RawServer(sandbox / "web")
    yield server
    server.close()


@pytest.mark.parametrize("arguments", [[], ["x"], "action=list", 3, True, 1.5])
@pytest.mark.parametrize("tool", ["madt_log", "madt_issues", "madt_commit"])
def test_arguments_that_are_not_an_object_get_madteas_refusal(raw: RawServer, tool: str, arguments: Any) -> None:
    answer = raw.request("tools/call", {"name": tool, "arguments": arguments})
    assert "result" in answer, f"the SDK answered for madtea: {answer}"
    result = answer["result"]
    structured = result["structuredContent"]
    assert result["isError"] is True and structured["code"] == "BAD_ARGUMENT", result
    assert structured["target"] and tool in result["content"][0]["text"]
    assert guard.way_on_problem(structured.get("next") or [], structured.get("choices") or [],
                                structured.get("user_action")) is None, structured
    assert "Traceback" not in result["content"][0]["text"]


@pytest.mark.parametrize("name", [5, None, ["madt_log"], {"tool": "madt_log"}])
def test_a_tool_name_that_is_not_a_string_gets_madteas_refusal(raw: RawServer, name: Any) -> None:
    answer = raw.request("tools/call", {"name": name, "arguments": {}})
    assert "result" in answer, f"the SDK answered for madtea: {answer}"
    structured = answer["result"]["structuredContent"]
    assert structured["code"] == "BAD_ARGUMENT" and structured["target"], structured
    assert guard.way_on_problem(structured.get("next") or [], structured.get("choices") or [],
                                structured.get("user_action")) is None, structured


def test_the_server_still_answers_after_malformed_requests(raw: RawServer) -> None:
    raw.request("tools/call", {"name": "madt_log", "arguments": []})
    answer = raw.request("tools/call", {"name": "madt_status", "arguments": {}})
    assert answer["result"]["isError"] is False, answer


@pytest.mark.parametrize("params", [{}, {"arguments": {}}, None])
def test_a_call_without_a_tool_name_gets_madteas_refusal(raw: RawServer, params: Any) -> None:
    answer = raw.request("tools/call", params)
    assert "result" in answer, f"the SDK answered for madtea: {answer}"
    structured = answer["result"]["structuredContent"]
    assert structured["code"] == "BAD_ARGUMENT" and structured["target"], structured
