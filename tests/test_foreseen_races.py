"""Failures madtea foresees get their own codes, with a way on a call can take: a lost race for a branch name.

The race is made real: git's own existence check passes, then another writer creates the branch before git
takes its lock, so git answers with its lock failure (the words git prints, from git itself).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import gitops
import madtea
from topologies import make_repo, run_git


def lose_the_race(monkeypatch: pytest.MonkeyPatch, repo_dir: Path, name: str) -> None:
    """The next git command that creates *name* meets it created by another writer just before its lock."""
    real = gitops.git

    def git(*args: Any, **kwargs: Any) -> Any:
        words = [str(a) for a in args]
        if name in words and ("branch" in words or "-b" in words):
            monkeypatch.setattr(gitops, "git", real)
            sha = run_git(repo_dir, "rev-parse", "HEAD")
            run_git(repo_dir, "branch", name, sha)  # the other writer wins
            # git's transaction for the loser: create the ref only if it does not exist yet.
            return real("update-ref", f"refs/heads/{name}", sha, "", repo=kwargs.get("repo"), check=False)
        return real(*args, **kwargs)

    monkeypatch.setattr(gitops, "git", git)


@pytest.mark.parametrize("tool, args", [
    ("madt_branch_create", {"name": "feat/x"}),
    ("madt_worktrees", {"action": "add", "b": "feat/x"}),
])
def test_the_loser_of_a_race_for_a_branch_name_is_branch_exists(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tool: str, args: dict[str, Any]) -> None:
    repo = make_repo(tmp_path / "app")
    if tool == "madt_worktrees":
        args = args | {"path": str(tmp_path / "app-x")}
    lose_the_race(monkeypatch, repo, "feat/x")
    result = madtea.run(tool, args, madtea.Context("mcp", repo))
    assert result.error is not None, result.text
    assert result.error["code"] == "BRANCH_EXISTS", result.text
    assert "already has a branch feat/x" in result.text
    assert result.error.get("user_action") is None
    ways = result.error["choices"] or [result.error["next"]]
    first = ways[0][0]
    assert first["tool"] == tool and first["args"].get("name", first["args"].get("b")) == "feat/x-2"  # not the lost one
