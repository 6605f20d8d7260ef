"""The kill-and-resume lane's child: one madt_finish that is stopped at its N-th write.

    python finish_kill_child.py DIR ARGS_JSON N before|after kill|fault

A write is a git command that changes something (add, commit, push, fetch, update-ref, switch, merge, branch)
or a forge request that is not a read. At the N-th one, before or after it runs, the child SIGKILLs itself
("kill": nothing after that point runs, no result is written) or raises the failure that layer raises
("fault": git's error, or a forge connection reset, and finish answers with its result). The result, when
there is one, is printed as JSON; a run that never reaches its N-th write prints it with "reached": false.
"""
from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import forge
import gitops
import madtea

GIT_WRITES = {"add", "commit", "push", "fetch", "update-ref", "switch", "merge", "branch"}


def git_subcommand(args: tuple[Any, ...]) -> str:
    words = [str(a) for a in args]
    i = 0
    while i < len(words) and words[i].startswith("-"):
        i += 2 if words[i] in ("-c", "-C") else 1
    return words[i] if i < len(words) else ""


def main() -> None:
    where, args, target, when, mode = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]), sys.argv[4], \
        sys.argv[5]
    seen = [0]

    def strike(fault: BaseException) -> None:
        if mode == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        raise fault

    def around(real: Any, is_write: Any, fault: Any) -> Any:
        def step(*a: Any, **k: Any) -> Any:
            if not is_write(*a, **k):
                return real(*a, **k)
            seen[0] += 1
            hit = seen[0] == target
            if hit and when == "before":
                strike(fault(*a, **k))
            out = real(*a, **k)
            if hit and when == "after":
                strike(fault(*a, **k))
            return out
        return step

    gitops.git = around(gitops.git, lambda *a, **k: git_subcommand(a) in GIT_WRITES,
                        lambda *a, **k: gitops.GitError(["git", *map(str, a)], 128,
                                                        "fatal: the remote end hung up unexpectedly"))
    forge.request = around(forge.request, lambda method, url, **k: method != "GET",
                           lambda method, url, **k: forge.ForgeError(
                               "FORGE_UNAVAILABLE", "the connection was reset before the forge answered",
                               method=method, path=url, transient=True))
    result = madtea.run("madt_finish", args, madtea.Context("mcp", Path(where)))
    print(json.dumps({"reached": seen[0] >= target, "text": result.text, "error": result.error,
                      "data": result.data}, default=str))


if __name__ == "__main__":
    main()
