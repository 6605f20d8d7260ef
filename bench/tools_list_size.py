"""Bytes of the tools/list answer for madtea's full MCP surface, with a per-tool breakdown.

Starts ``python -m madtea mcp`` over pipes (legacy handshake), asks for
tools/list and counts the bytes of the JSON-RPC response as sent on the wire.
The budget is 40 KB (about 10k tokens). For scale, the same is measured for a
one-tool ``MCPServer`` in the same run.

    python bench/tools_list_size.py
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import _common
from mcp_cold_start import _BARE_SERVER

BUDGET = 40 * 1024


def tools_list(argv: list[str], cwd: Path, env: dict[str, str]) -> bytes:
    pipe = _common.JsonRpcPipe(argv, cwd=cwd, env=env)
    try:
        pipe.initialize()
        return pipe.request(2, "tools/list", {})
    finally:
        pipe.close()


def _size(obj: object) -> int:
    return len(json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


def main() -> int:
    with _common.sandbox() as base:
        repo = _common.make_repo(base / "web", origin="https://forge.example.test/acme/web.git")
        modules = base / "modules"
        modules.mkdir()
        (modules / "bare_mcp.py").write_text(_BARE_SERVER, encoding="utf-8")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(_common.ROOT), str(modules)]))
        ours = tools_list([sys.executable, "-m", "madtea", "mcp"], repo, env)
        bare = tools_list([sys.executable, "-m", "bare_mcp"], repo, env)
    tools = json.loads(ours)["result"]["tools"]
    print(f"{'tool':<20} {'bytes':>7} {'schema':>7} {'desc':>6}  params")
    for tool in sorted(tools, key=_size, reverse=True):
        props = tool.get("inputSchema", {}).get("properties", {})
        print(f"{tool['name']:<20} {_size(tool):>7} {_size(tool.get('inputSchema', {})):>7} "
              f"{len(tool.get('description', '').encode()):>6}  {len(props)}")
    print(f"{len(tools)} tools; about {len(ours) // 4} tokens at 4 bytes a token")
    _common.report("tools_list_size", len(ours), len(bare), BUDGET, "bytes", what="tools/list response",
                   baseline_what="a one-tool MCPServer's tools/list, same run", ratio_of="target")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
