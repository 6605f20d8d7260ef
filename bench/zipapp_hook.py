"""How long ``python madtea-X.Y.Z.pyz hook`` takes per event, against a bare interpreter start.

Builds the zipapp from this checkout's committed tree (``release/release.py
--dry-run --copies-only``, into the sandbox), then runs N hook events through
it, N through ``python -m madtea hook`` (the installed script's path, from
compiled bytecode) and N ``python3 -c pass``, interleaved in the same run.
The zipapp has the hook's target, at most 2.5x a bare start. A benchmark, not
a test: nothing here asserts on time.

    python bench/zipapp_hook.py [N]
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from _common import ROOT, median, report, sandbox

TARGET = 2.5


def _time(argv: list[str], data: bytes, cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, input=data, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=cwd, env=env,
                   check=False)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    n = int(args[0]) if args else 30
    with sandbox() as base:
        out = base / "release"
        subprocess.run([sys.executable, str(ROOT / "release" / "release.py"), "--dry-run", "--copies-only",
                        "--out", str(out)], check=True, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        pyz = next(out.glob("madtea-*.pyz"))
        size = pyz.stat().st_size
        repo = base / "repo"
        repo.mkdir()
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONPYCACHEPREFIX=str(base / "pycache"))
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        event = json.dumps({"session_id": "bench", "transcript_path": os.devnull, "cwd": str(repo),
                            "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": "t",
                            "tool_input": {"command": "git status"}}).encode()
        runs = {"zipapp": [sys.executable, str(pyz), "hook"], "script": [sys.executable, "-m", "madtea", "hook"],
                "bare": [sys.executable, "-c", "pass"]}
        for argv_ in runs.values():  # warm the file cache and the script's bytecode
            for _ in range(3):
                _time(argv_, event, repo, env)
        times: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(n):
            for name, argv_ in runs.items():
                times[name].append(_time(argv_, event, repo, env))
    zipapp, script, bare = (median(times[k]) * 1000 for k in ("zipapp", "script", "bare"))
    print(f"{pyz.name}: {size:,} bytes; "
          f"python -m madtea hook: median {script:.1f} ms ({script / bare:.2f}x bare)")
    report("zipapp hook", zipapp, bare, TARGET, "ms", what=f"python {pyz.name} hook, median over {n} events",
           baseline_what="python3 -c pass, same run")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
