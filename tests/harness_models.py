"""A scripted model API on 127.0.0.1 for driving the real agent harnesses headless.

No model is reached: each turn of the main conversation is answered with the next scripted
tool call, and every request the harness sends is kept, so a test reads exactly what the
harness showed the model (tool results, hook reasons, notes). Three dialects, each streamed as
SSE: the Anthropic Messages API (Claude Code), the OpenAI Responses API (Codex CLI) and the
Gemini API (Gemini CLI).
"""
from __future__ import annotations

import itertools
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["ScriptedModel", "await_tool"]

_WAIT_LIMIT = 30  # harmless calls spent waiting for a tool to appear, at most


def await_tool(name: str) -> dict[str, Any]:
    """A script step that waits (with `sleep 1` shell calls) until the harness offers *name*."""
    return {"await": name}


class ScriptedModel:
    """``with ScriptedModel(steps) as model:`` serves on ``model.url``; ``model.requests`` holds what came."""

    def __init__(self, steps: list[dict[str, Any]], dialect: str = "anthropic") -> None:
        self.steps = list(steps)
        self.dialect = dialect
        self.shell_tool = {"anthropic": "Bash", "responses": "exec_command", "gemini": "run_shell_command"}[dialect]
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._waited = 0
        model = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # http.server's name
                size = int(self.headers.get("content-length") or 0)
                try:
                    body = json.loads(self.rfile.read(size) or b"{}")
                except ValueError:
                    body = {}
                with model._lock:
                    model.requests.append({"path": self.path, "body": body})
                    reply = model._reply(self.path, body)
                model._send(self, body, reply)

            def do_GET(self) -> None:
                self.send_response(404)
                self.send_header("content-length", "0")
                self.end_headers()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> "ScriptedModel":
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()

    # ------------------------------------------------------------------ the script

    def _reply(self, path: str, body: dict[str, Any]) -> dict[str, Any] | None:
        """The next content block for a main-conversation turn, or None for a plain text answer."""
        if self.dialect == "anthropic" and (not path.startswith("/v1/messages") or "count_tokens" in path):
            return {"raw": {"input_tokens": 1}}
        tools = _tool_names(body)
        if self.shell_tool not in tools or not self.steps:
            return None  # a side request (a title, a summary) or the end of the script
        step = self.steps[0]
        if "await" in step:
            if step["await"] not in tools and self._waited < _WAIT_LIMIT:
                self._waited += 1
                key = "cmd" if self.dialect == "responses" else "command"
                # each wait differs: Gemini CLI ends a turn that repeats one call verbatim
                return {"name": self.shell_tool, "input": {key: f"sleep 1; : wait {self._waited}"}}
            self.steps.pop(0)
            if not self.steps:
                return None
            step = self.steps[0]
        self.steps.pop(0)
        return step

    def _send(self, handler: BaseHTTPRequestHandler, body: dict[str, Any], reply: dict[str, Any] | None) -> None:
        if reply is not None and "raw" in reply:
            return _json(handler, reply["raw"])
        if self.dialect == "responses":
            return self._send_response(handler, reply)
        if self.dialect == "gemini":
            return self._send_gemini(handler, reply)
        if reply is None:
            block: dict[str, Any] = {"type": "text", "text": "done"}
            stop = "end_turn"
        else:
            block = {"type": "tool_use", "id": f"toolu_{next(self._ids)}", "name": reply["name"],
                     "input": reply["input"]}
            stop = "tool_use"
        message = {"id": f"msg_{next(self._ids)}", "type": "message", "role": "assistant",
                   "model": body.get("model", "scripted"), "content": [], "stop_reason": None,
                   "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}
        if not body.get("stream"):
            return _json(handler, dict(message, content=[block], stop_reason=stop))
        handler.send_response(200)
        handler.send_header("content-type", "text/event-stream")
        handler.send_header("cache-control", "no-cache")
        handler.end_headers()
        if block["type"] == "text":
            start, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": block["text"]}
        else:
            start = dict(block, input={})
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        for kind, data in (("message_start", {"message": message}),
                           ("content_block_start", {"index": 0, "content_block": start}),
                           ("content_block_delta", {"index": 0, "delta": delta}),
                           ("content_block_stop", {"index": 0}),
                           ("message_delta", {"delta": {"stop_reason": stop, "stop_sequence": None},
                                              "usage": {"output_tokens": 1}}),
                           ("message_stop", {})):
            handler.wfile.write(f"event: {kind}\ndata: {json.dumps(dict(data, type=kind))}\n\n".encode())
        handler.wfile.flush()

    def _send_response(self, handler: BaseHTTPRequestHandler, reply: dict[str, Any] | None) -> None:
        """One Responses API turn: a function call (namespaced for an MCP tool) or a closing message."""
        rid = f"resp_{next(self._ids)}"
        if reply is None:
            item: dict[str, Any] = {"type": "message", "id": f"m_{next(self._ids)}", "role": "assistant",
                                    "content": [{"type": "output_text", "text": "done"}]}
        else:
            item = {"type": "function_call", "id": f"fc_{next(self._ids)}", "call_id": f"call_{next(self._ids)}",
                    "name": reply["name"], "arguments": json.dumps(reply["input"])}
            if reply.get("namespace"):
                item["namespace"] = reply["namespace"]
        usage = {"input_tokens": 1, "input_tokens_details": None, "output_tokens": 1,
                 "output_tokens_details": None, "total_tokens": 2}
        handler.send_response(200)
        handler.send_header("content-type", "text/event-stream")
        handler.end_headers()
        for kind, data in (("response.created", {"response": {"id": rid}}),
                           ("response.output_item.done", {"output_index": 0, "item": item}),
                           ("response.completed", {"response": {"id": rid, "output": [item], "usage": usage}})):
            handler.wfile.write(f"event: {kind}\ndata: {json.dumps(dict(data, type=kind))}\n\n".encode())
        handler.wfile.flush()

    def _send_gemini(self, handler: BaseHTTPRequestHandler, reply: dict[str, Any] | None) -> None:
        """One Gemini turn: a function call, or (for the main conversation's end and for side requests
        such as the next-speaker check) a text that hands the turn back to the user."""
        if reply is None:
            part: dict[str, Any] = {"text": '{"next_speaker": "user", "reasoning": "done"}'}
        else:
            part = {"functionCall": {"name": reply["name"], "args": reply["input"]}}
        data = {"candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
                "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2}}
        path = handler.path
        if ":countTokens" in path:
            return _json(handler, {"totalTokens": 1})
        if ":streamGenerateContent" not in path:
            return _json(handler, data)
        handler.send_response(200)
        handler.send_header("content-type", "text/event-stream")
        handler.end_headers()
        handler.wfile.write(f"data: {json.dumps(data)}\r\n\r\n".encode())
        handler.wfile.flush()

    # ------------------------------------------------------------------ what the model was shown

    def exchanges(self) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """(tool call, its result) pairs, in order, from the longest conversation the harness sent."""
        if self.dialect == "responses":
            return self._response_exchanges()
        if self.dialect == "gemini":
            return self._gemini_exchanges()
        conversations = [r["body"].get("messages") or [] for r in self.requests if isinstance(r["body"], dict)]
        messages = max(conversations, key=len, default=[])
        calls: dict[str, dict[str, Any]] = {}
        pairs = []
        for message in messages:
            content = message.get("content")
            for block in content if isinstance(content, list) else []:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "tool_use":
                    calls[block["id"]] = block
                elif block.get("type") == "tool_result" and block.get("tool_use_id") in calls:
                    pairs.append((calls[block["tool_use_id"]], dict(block, text=_text(block, content))))
        return pairs


    def _response_exchanges(self) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        inputs = [r["body"].get("input") or [] for r in self.requests if isinstance(r["body"], dict)]
        items = max(inputs, key=len, default=[])
        calls: dict[str, dict[str, Any]] = {}
        pairs = []
        for item in items if isinstance(items, list) else []:
            if not isinstance(item, dict):
                continue
            if item.get("type") == "function_call":
                try:
                    args = json.loads(item.get("arguments") or "{}")
                except ValueError:
                    args = {}
                calls[item.get("call_id", "")] = {"name": item.get("name"), "input": args,
                                                  "namespace": item.get("namespace")}
            elif item.get("type") == "function_call_output" and item.get("call_id") in calls:
                output = item.get("output")
                pairs.append((calls[item["call_id"]], {"text": output if isinstance(output, str)
                                                       else json.dumps(output)}))
        return pairs


    def _gemini_exchanges(self) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        contents = [r["body"].get("contents") or [] for r in self.requests if isinstance(r["body"], dict)]
        turns = max(contents, key=len, default=[])
        waiting: list[dict[str, Any]] = []
        pairs = []
        for turn in turns if isinstance(turns, list) else []:
            for part in turn.get("parts") or [] if isinstance(turn, dict) else []:
                if not isinstance(part, dict):
                    continue
                if "functionCall" in part:
                    waiting.append({"name": part["functionCall"].get("name"),
                                    "input": part["functionCall"].get("args") or {}})
                elif "functionResponse" in part:
                    name = part["functionResponse"].get("name")
                    call = next((c for c in waiting if c["name"] == name), None)
                    if call is not None:
                        waiting.remove(call)
                        pairs.append((call, {"text": json.dumps(part["functionResponse"].get("response"))}))
        return pairs


def _tool_names(body: dict[str, Any]) -> set[str]:
    """The tools a request offers; a namespace's tools as ``<namespace>:<tool>`` (Codex's MCP tools)."""
    names: set[str] = set()
    for tool in body.get("tools") or []:
        if not isinstance(tool, dict):
            continue
        names.update(str(d.get("name")) for d in tool.get("functionDeclarations") or [] if isinstance(d, dict))
        names.add(str(tool.get("name")))
        for inner in tool.get("tools") or [] if tool.get("type") == "namespace" else []:
            if isinstance(inner, dict):
                names.add(f"{tool.get('name')}:{inner.get('name')}")
    return names


def _text(result: dict[str, Any], siblings: list[Any]) -> str:
    """A tool result's text, with the notes the harness put beside it (hook context)."""
    content = result.get("content")
    parts = [content] if isinstance(content, str) else [b.get("text", "") for b in content or []
                                                         if isinstance(b, dict)]
    parts += [b.get("text", "") for b in siblings if isinstance(b, dict) and b.get("type") == "text"]
    return "\n".join(parts)


def _json(handler: BaseHTTPRequestHandler, data: Any) -> None:
    raw = json.dumps(data).encode()
    handler.send_response(200)
    handler.send_header("content-type", "application/json")
    handler.send_header("content-length", str(len(raw)))
    handler.end_headers()
    handler.wfile.write(raw)
