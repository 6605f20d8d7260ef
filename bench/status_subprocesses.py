"""Git subprocesses per ``madt_status`` call, through the dispatcher (``madtea.run``).

Counts with ``gitops.call_count()`` around each call, in a repository with an
upstream, a staged, a modified and an untracked file, both without ``dir=``
(the launch repo) and with it (which adds the discovery of the named path).
The baseline is one ``gitops.status`` call, the single git command the status
itself needs, counted the same way in the same run. Target: at most 2.

    python bench/status_subprocesses.py
"""
from __future__ import annotations

from pathlib import Path

import _common

TARGET = 2


def _count(fn: object) -> int:
    import gitops

    before = gitops.call_count()
    fn()  # type: ignore[operator]
    return gitops.call_count() - before


def main() -> int:
    with _common.sandbox() as base:
        import gitops
        import madtea

        bare = base / "origin.git"
        _common.git(base, "init", "-q", "--bare", "-b", "main", str(bare))
        repo = _common.make_repo(base / "web", origin=str(bare))
        _common.git(repo, "push", "-q", "-u", "origin", "main")
        _common.git(repo, "remote", "set-url", "origin", "https://forge.example.test/acme/web.git")
        (repo / "staged.txt").write_text("staged\n")
        _common.git(repo, "add", "staged.txt")
        (repo / "README.md").write_text("modified\n")
        (repo / "untracked.txt").write_text("untracked\n")
        ctx = madtea.Context("mcp", repo)
        results = {}
        for label, args in (("no dir=", {}), ("dir=", {"dir": str(repo)})):
            outcome: list[madtea.Result] = []
            results[label] = _count(lambda: outcome.append(madtea.run("madt_status", args, ctx)))
            if outcome[0].is_error:
                raise SystemExit(f"madt_status {label} failed: {outcome[0].text}")
        grepo = gitops.discover(Path(repo))
        assert grepo is not None
        baseline = _count(lambda: gitops.status(grepo))
    for label, count in results.items():
        print(f"madt_status {label}: {count} git subprocesses")
    _common.report("status_subprocesses", max(results.values()), baseline, TARGET, "git calls",
                   what="git subprocesses per madt_status (worst of both forms)",
                   baseline_what="one gitops.status", ratio_of="target")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
