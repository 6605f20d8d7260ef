"""Bytes of the tools/list answer for madtea's full MCP surface, with a per-tool breakdown.

Starts ``python -m madtea mcp`` over pipes (legacy handshake), asks for
tools/list and counts the bytes of the JSON-RPC response as sent on the wire.
The budget is 40 KB (about 10k tokens). For scale, the same is measured for a
one-tool ``MCPServer`` in the same run, and for ``madtea mcp --read-only``.

    python bench/tools_list_size.py
"""
from __future__ import annotations

import json
from pathlib import Path

import _common

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
        repo, env, madtea_cmd, bare_cmd = _common.madtea_and_bare_servers(base)
        ours = tools_list(madtea_cmd, repo, env)
        bare = tools_list(bare_cmd, repo, env)
        read_only = tools_list(madtea_cmd + ["--read-only"], repo, env)
    tools = json.loads(ours)["result"]["tools"]
    print(f"{'tool':<20} {'bytes':>7} {'schema':>7} {'desc':>6}  params")
    for tool in sorted(tools, key=_size, reverse=True):
        props = tool.get("inputSchema", {}).get("properties", {})
        print(f"{tool['name']:<20} {_size(tool):>7} {_size(tool.get('inputSchema', {})):>7} "
              f"{len(tool.get('description', '').encode()):>6}  {len(props)}")
    print(f"{len(tools)} tools; about {len(ours) // 4} tokens at 4 bytes a token")
    _common.report("tools_list_size", len(ours), len(bare), BUDGET, "bytes", what="tools/list response",
                   baseline_what="a one-tool MCPServer's tools/list, same run", ratio_of="target")
    listed = json.loads(read_only)["result"]["tools"]
    print(f"read-only: {len(listed)} tools; about {len(read_only) // 4} tokens")
    _common.report("tools_list_size_read_only", len(read_only), len(ours), BUDGET, "bytes",
                   what="tools/list response, madtea mcp --read-only",
                   baseline_what="the full surface's tools/list, same run", ratio_of="target")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
