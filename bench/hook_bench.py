"""The installed console script: ``madtea hook`` per event and ``madtea --version``, against a bare interpreter.

Installs a non-editable copy of this checkout into a temporary virtual
environment (``_common.install_copy``) and runs its ``madtea`` script, the file
pip writes and a harness runs, on three Claude Code ``PreToolUse`` events in a
fresh repository: ``git status`` (allowed, with a note), ``git add x && git
commit -m y`` (denied) and ``madtea issue list`` (denied, steered to its tool:
the first such line after an install or an update builds madtea's CLI table
and keeps it in the runtime folder, as the warm-up runs do, so the rounds time
the kept table). The
baseline is ``python -c pass`` from the same interpreter. Each round runs all
five commands in turn, the order rotated every round, so load on a shared
machine falls on all of them alike. Prints min / median / max of wall time and
of the child's CPU time (user + sys), and of the per-round ratios; the median
of those is judged. Targets: hook at most 2.0x on wall and CPU for every
event; ``--version`` at most 2.5x. A benchmark, not a test: nothing here
asserts on time.

    python bench/hook_bench.py [ROUNDS]      (default 60)
"""
from __future__ import annotations

import json
import os
import sys

import _common

HOOK_TARGET = 2.0
VERSION_TARGET = 2.5


def _event(repo: str, command: str) -> bytes:
    return json.dumps({
        "session_id": "bench", "transcript_path": "/dev/null", "cwd": repo, "permission_mode": "default",
        "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": "t",
        "tool_input": {"command": command, "description": "run it"},
    }).encode()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    rounds = int(args[0]) if args else 60
    with _common.sandbox() as base:
        bin_dir = _common.install_copy(base)
        repo = _common.make_repo(base / "repo")
        (repo / "x").write_text("x\n", encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
        script = str(bin_dir / "madtea")
        cases = {
            "bare": ([str(bin_dir / "python"), "-c", "pass"], b"", 0),
            "allow": ([script, "hook"], _event(str(repo), "git status"), 0),
            "deny": ([script, "hook"], _event(str(repo), "git add x && git commit -m y"), 2),
            "madtea": ([script, "hook"], _event(str(repo), "madtea issue list"), 2),
            "version": ([script, "--version"], b"", 0),
        }
        walls, cpus = _common.time_commands(cases, rounds, cwd=repo, env=env)
    bare = "python -c pass"
    print(f"{bare}: wall {_common.spread(walls['bare'])} ms, CPU {_common.spread(cpus['bare'])} ms "
          f"(min / median / max, {rounds} runs)")
    for name, what, target in (("allow", "madtea hook, git status (allowed)", HOOK_TARGET),
                               ("deny", "madtea hook, git add x && git commit -m y (denied)", HOOK_TARGET),
                               ("madtea", "madtea hook, madtea issue list (denied)", HOOK_TARGET),
                               ("version", "madtea --version", VERSION_TARGET)):
        _common.report_spread(f"hook_{name}" if name != "version" else "version", what, walls[name], cpus[name],
                              walls["bare"], cpus["bare"], target, bare)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
