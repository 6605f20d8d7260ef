"""MCP cold start: spawn -> initialize -> tools/list for the installed ``madtea mcp``, against a bare server.

madtea runs as the console script of a copy installed into a temporary
virtual environment (``_common.install_copy``); the baseline is a one-tool
``MCPServer`` started by that environment's interpreter (``python -m
<module>``, same working directory, same environment). Both are driven by the
same client, newline-delimited JSON-RPC over pipes with the legacy handshake
real clients send today, after a warm-up start of each, in pairs whose order
alternates. Prints min / median / max of the time to the tools/list answer, of
the child's CPU time to that answer (user + sys, read from ``/proc``; to its
exit where there is none), and of the per-pair ratios. The verdict is on the
median of the per-pair ratios, wall and CPU, each at most 1.10x: both servers
spend about nine tenths of their start importing the same SDK, whose time
varies by a tenth from one start to the next on a shared machine, so a ratio
of two medians taken apart flips where the paired one holds. At most N pairs
(default 40); none starts after three minutes once 25 are done, so a loaded
machine still finishes ``run_all.py`` in its budget. A benchmark, not a test:
nothing here asserts on time.

    python bench/mcp_cold_start.py [N]      (default N=40)
"""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Callable

import _common

TARGET = 1.10
MIN_PAIRS = 25
SECONDS = 180.0


def cold_start(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Seconds from spawn until the tools/list answer has arrived, and the child's CPU seconds until then."""
    start = time.perf_counter()
    pipe = _common.JsonRpcPipe(argv, cwd=cwd, env=env)
    try:
        pipe.initialize()
        pipe.request(2, "tools/list", {})
        wall = time.perf_counter() - start
        cpu = pipe.cpu_so_far()
    finally:
        at_exit = pipe.close()
    return wall, at_exit if cpu is None else cpu


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    n = int(args[0]) if args else 40
    with _common.sandbox() as base:
        repo, env, madtea, bare = _common.madtea_and_bare_servers(base)

        def start(command: list[str]) -> Callable[[], tuple[float, float]]:
            return lambda: cold_start(command, repo, env)

        cases = {"madtea": start(madtea), "bare": start(bare)}
        for case in cases.values():  # warm the file cache for both
            case()
        walls, cpus = _common.alternate(cases, n, seconds=SECONDS, min_rounds=min(n, MIN_PAIRS))
    pairs = len(walls["bare"])
    print(f"one-tool MCPServer: to tools/list {_common.spread(walls['bare'])} ms, "
          f"CPU {_common.spread(cpus['bare'])} ms (min / median / max, {pairs} starts)")
    _common.report_spread("mcp_cold_start", "madtea mcp, spawn -> initialize -> tools/list", walls["madtea"],
                          cpus["madtea"], walls["bare"], cpus["bare"], TARGET, "a one-tool MCPServer")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
