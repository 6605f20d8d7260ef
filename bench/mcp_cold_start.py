"""MCP cold start: spawn -> initialize -> tools/list for ``python -m madtea mcp``, against a bare server.

The baseline is a one-tool ``MCPServer`` started the same way (``python -m
<module>``, same interpreter, same working directory, same environment). Both
are driven by the same client, newline-delimited JSON-RPC over pipes with the
legacy handshake real clients send today, alternating, after a warm-up run of
each. Prints both medians and their ratio; the target is at most 1.15x.

    python bench/mcp_cold_start.py [N]      (default N=7)
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import _common

TARGET = 1.15


def cold_start(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    """Seconds from spawn until the tools/list answer has arrived."""
    start = time.perf_counter()
    pipe = _common.JsonRpcPipe(argv, cwd=cwd, env=env)
    try:
        pipe.initialize()
        pipe.request(2, "tools/list", {})
        return time.perf_counter() - start
    finally:
        pipe.close()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    n = int(args[0]) if args else 7
    with _common.sandbox() as base:
        repo, env, madtea, bare = _common.madtea_and_bare_servers(base)
        cold_start(madtea, repo, env)  # warm the file cache and write bytecode for both
        cold_start(bare, repo, env)
        ours, theirs = [], []
        for _ in range(n):
            ours.append(cold_start(madtea, repo, env))
            theirs.append(cold_start(bare, repo, env))
    m, b = _common.median(ours), _common.median(theirs)
    print(f"madtea mcp: median {m * 1000:.1f} ms over {n} starts (min {min(ours) * 1000:.1f}, "
          f"max {max(ours) * 1000:.1f})")
    print(f"one-tool MCPServer: median {b * 1000:.1f} ms over {n} starts (min {min(theirs) * 1000:.1f}, "
          f"max {max(theirs) * 1000:.1f})")
    _common.report("mcp_cold_start", m * 1000, b * 1000, TARGET, "ms", what="spawn -> initialize -> tools/list",
                   baseline_what="a one-tool MCPServer, same run")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
