"""How long the agent hook takes per event, against a bare interpreter start.

Runs N ``madtea hook`` processes on a typical Claude Code event (``git status``
in a fresh repository) and N ``python3 -c pass``, interleaved in the same run,
and prints both medians and their ratio. The target is at most 2.5x. A
benchmark, not a test: nothing here asserts on time.

    python bench/hook_bench.py [N]
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = 2.5


def _repo(base: Path) -> Path:
    repo = base / "repo"
    repo.mkdir()
    env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull)
    subprocess.run(["git", "init", "-q", str(repo)], check=True, env=env)
    (repo / "a.py").write_text("print('a')\n")
    return repo


def _time(argv: list[str], data: bytes, env: dict[str, str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(argv, input=data, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=cwd,
                   check=False)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    n = int(args[0]) if args else 40
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        repo = _repo(base)
        runtime = base / "runtime"
        runtime.mkdir(mode=0o700)
        # An installed copy runs from compiled bytecode: let the warm-up runs write it (to a private
        # cache folder, so the checkout stays untouched) even where PYTHONDONTWRITEBYTECODE is set.
        env = dict(os.environ, PYTHONPATH=str(ROOT), XDG_RUNTIME_DIR=str(runtime), HOME=str(base),
                   PYTHONPYCACHEPREFIX=str(base / "pycache"))
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        event = json.dumps({
            "session_id": "bench", "transcript_path": os.devnull, "cwd": str(repo), "permission_mode": "default",
            "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": "t",
            "tool_input": {"command": "git status", "description": "Show the working tree status"},
        }).encode()
        hook = [sys.executable, "-m", "madtea", "hook"]
        bare = [sys.executable, "-c", "pass"]
        for _ in range(3):  # warm the file cache for both
            _time(hook, event, env, repo)
            _time(bare, b"", env, repo)
        hook_times, bare_times = [], []
        for _ in range(n):
            hook_times.append(_time(hook, event, env, repo))
            bare_times.append(_time(bare, b"", env, repo))
    h, b = statistics.median(hook_times), statistics.median(bare_times)
    ratio = h / b
    print(f"hook: median {h * 1000:.1f} ms over {n} events")
    print(f"python3 -c pass: median {b * 1000:.1f} ms")
    print(f"ratio {ratio:.2f}x (target <= {TARGET}x): {'within target' if ratio <= TARGET else 'OVER TARGET'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
