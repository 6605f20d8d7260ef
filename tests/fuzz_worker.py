"""A child process that answers fuzzed calls, one JSON line each, so its parent can bound every call's time.

With the argument ``mcp`` it is the stdio MCP server instead, as ``madtea mcp`` is.
Each request line is ``{"tool", "args", "cwd"}``; each answer line carries what a
caller would see: the rendered MCP text, the code, and the structured way on. The
loopback-only socket guard of the suite is installed before madtea is imported.
"""
from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

import conftest  # noqa: E402,F401 - installs the loopback-only socket guard
import madtea  # noqa: E402


def answer(request: dict) -> dict:
    result = madtea.run(request["tool"], request["args"], madtea.Context("mcp", Path(request["cwd"])))
    error = result.error or {}
    return {"text": madtea.render_text(result, "mcp"), "code": error.get("code"),
            "next": error.get("next") or [], "choices": error.get("choices") or [],
            "user_action": error.get("user_action"), "structured": madtea.way_on(error) if error else {}}


def main() -> None:
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    sys.stdout = sys.stderr  # anything printed is not an answer
    for line in sys.stdin:
        try:
            reply = answer(json.loads(line))
        except BaseException:  # the parent reports it as a crash
            reply = {"crash": traceback.format_exc()}
        out.write(json.dumps(reply, ensure_ascii=True, default=str) + "\n")
        out.flush()


if __name__ == "__main__":
    if sys.argv[1:] == ["mcp"]:  # the MCP server itself, behind the same socket guard
        sys.exit(madtea.main(["mcp"]))
    main()
