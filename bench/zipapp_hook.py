"""``python madtea-X.Y.Z.pyz hook`` per event, against a bare interpreter start.

Builds the zipapp from this checkout's committed tree (``release/release.py
--dry-run --copies-only``, into the sandbox), then runs, in rounds that take
each command in turn, ``python3 -c pass``, the zipapp's hook on a Claude Code
``PreToolUse`` event for ``git status`` (allowed) and for ``git add x && git
commit -m y`` (denied), and ``python madtea-X.Y.Z.pyz --version``, all from the
same interpreter, the order rotated every round. Prints min / median / max of
wall time, of the child's CPU time (user + sys) and of the per-round ratios;
the median of those is judged. Target: the hook at most 2.0x on wall
and CPU for both events, as for the installed command. A benchmark, not a
test: nothing here asserts on time.

    python bench/zipapp_hook.py [ROUNDS]      (default 60)
"""
from __future__ import annotations

import os
import subprocess
import sys

import _common
from hook_bench import HOOK_TARGET, VERSION_TARGET, _event


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    rounds = int(args[0]) if args else 60
    with _common.sandbox() as base:
        out = base / "release"
        subprocess.run([sys.executable, str(_common.ROOT / "release" / "release.py"), "--dry-run", "--copies-only",
                        "--out", str(out)], check=True, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        pyz = next(out.glob("madtea-*.pyz"))
        repo = _common.make_repo(base / "repo")
        (repo / "x").write_text("x\n", encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
        cases = {
            "bare": ([sys.executable, "-c", "pass"], b"", 0),
            "allow": ([sys.executable, str(pyz), "hook"], _event(str(repo), "git status"), 0),
            "deny": ([sys.executable, str(pyz), "hook"], _event(str(repo), "git add x && git commit -m y"), 2),
            "version": ([sys.executable, str(pyz), "--version"], b"", 0),
        }
        walls, cpus = _common.time_commands(cases, rounds, cwd=repo, env=env)
        size = pyz.stat().st_size
    bare = "python -c pass"
    print(f"{pyz.name}: {size:,} bytes")
    print(f"{bare}: wall {_common.spread(walls['bare'])} ms, CPU {_common.spread(cpus['bare'])} ms "
          f"(min / median / max, {rounds} runs)")
    for name, what, target in (("allow", f"python {pyz.name} hook, git status (allowed)", HOOK_TARGET),
                               ("deny", f"python {pyz.name} hook, git add x && git commit -m y (denied)", HOOK_TARGET),
                               ("version", f"python {pyz.name} --version", VERSION_TARGET)):
        _common.report_spread(f"zipapp_{name}", what, walls[name], cpus[name], walls["bare"], cpus["bare"], target,
                              bare)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
