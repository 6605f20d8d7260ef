"""MCP cold start: spawn -> initialize -> tools/list for the installed ``madtea mcp``, against a bare server.

madtea runs as the console script of a copy installed into a temporary
virtual environment (``_common.install_copy``); the baseline is a one-tool
``MCPServer`` started by that environment's interpreter (``python -m
<module>``, same working directory, same environment). Both are driven by the
same client, newline-delimited JSON-RPC over pipes with the legacy handshake
real clients send today, alternating, after a warm-up start of each. Prints
min / median / max of the time to the tools/list answer and of the child's CPU
time (user + sys, to its exit), and the median ratios; the target is at most
1.10x on both. A benchmark, not a test: nothing here asserts on time.

    python bench/mcp_cold_start.py [N]      (default N=25)
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import _common

TARGET = 1.10


def cold_start(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Seconds from spawn until the tools/list answer has arrived, and the child's CPU seconds."""
    start = time.perf_counter()
    pipe = _common.JsonRpcPipe(argv, cwd=cwd, env=env)
    try:
        pipe.initialize()
        pipe.request(2, "tools/list", {})
        wall = time.perf_counter() - start
    finally:
        cpu = pipe.close()
    return wall, cpu


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    n = int(args[0]) if args else 25
    with _common.sandbox() as base:
        repo, env, madtea, bare = _common.madtea_and_bare_servers(base)
        cold_start(madtea, repo, env)  # warm the file cache for both
        cold_start(bare, repo, env)
        ours: tuple[list[float], list[float]] = ([], [])
        theirs: tuple[list[float], list[float]] = ([], [])
        for _ in range(n):
            for command, into in ((madtea, ours), (bare, theirs)):
                wall, cpu = cold_start(command, repo, env)
                into[0].append(wall)
                into[1].append(cpu)
    print(f"one-tool MCPServer: to tools/list {_common.spread(theirs[0])} ms, CPU {_common.spread(theirs[1])} ms "
          f"(min / median / max, {n} starts)")
    _common.report_spread("mcp_cold_start", "madtea mcp, spawn -> initialize -> tools/list", ours[0], ours[1],
                          theirs[0], theirs[1], TARGET, "a one-tool MCPServer")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
