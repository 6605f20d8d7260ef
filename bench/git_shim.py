"""madtea's exec-time ``git`` against the real git: what the shim adds to each git call the agent writes.

In a fresh repository, two git calls run straight (the real git) and through the shim as an agent's
shell meets it (this process stands for the harness, so each call is judged: the shim starts an
interpreter, reads /proc, reads the call as a hook line and decides, then becomes the real git):
``git rev-parse HEAD``, where git's own work is least, and ``git status --short``. Rounds alternate
as in the hook's benchmark. Prints min / median / max of wall and CPU time and the added milliseconds.
There is no target: the shim is a Python start per judged git call, and this says how much.

    python bench/git_shim.py [ROUNDS]      (default 40)
"""
from __future__ import annotations

import json
import os
import statistics
import sys
from pathlib import Path

import _common


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    rounds = int(args[0]) if args else 40
    with _common.sandbox() as base:
        import gitops
        import guard

        folder = guard.shim_folder(create=True)
        real = gitops.real_git()
        if folder is None or real is None:
            raise SystemExit("no runtime folder for the shim, or no git on PATH")
        repo = _common.make_repo(base / "repo")
        (repo / "x").write_text("x\n", encoding="utf-8")
        env = {**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ.get('PATH', os.defpath)}"}
        shim = str(Path(folder) / "git")
        cases = {"bare rev-parse": ([real, "rev-parse", "HEAD"], b"", 0),
                 "shim rev-parse": ([shim, "rev-parse", "HEAD"], b"", 0),
                 "bare status": ([real, "status", "--short"], b"", 0),
                 "shim status": ([shim, "status", "--short"], b"", 0)}
        walls, cpus = _common.time_commands(cases, rounds, cwd=repo, env=env)
    for what in ("rev-parse HEAD", "status --short"):
        key = what.split()[0]
        bare, shim_walls = walls[f"bare {key}"], walls[f"shim {key}"]
        added = [a - b for a, b in zip(shim_walls, bare)]
        print(f"git {what}: real git wall {_common.spread(bare)} ms, CPU {_common.spread(cpus[f'bare {key}'])} ms; "
              f"through the shim wall {_common.spread(shim_walls)} ms, CPU {_common.spread(cpus[f'shim {key}'])} ms "
              f"(min / median / max, {len(bare)} runs); added per call {_common.spread(added)} ms")
        print("summary\t" + json.dumps({
            "name": f"git_shim_{key}", "what": f"git {what} through madtea's exec-time git",
            "measured": f"{statistics.median(shim_walls) * 1000:.1f} ms wall",
            "baseline": f"{statistics.median(bare) * 1000:.1f} ms wall (the real git)",
            "ratio": f"{statistics.median(a / b for a, b in zip(shim_walls, bare)):.2f} wall "
                     f"(+{statistics.median(added) * 1000:.1f} ms)",
            "target": "none: reported", "ok": True}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
