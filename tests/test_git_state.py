"""Refusals and results that depend on the state of real repositories: the default branch, foreign
worktrees, unborn and detached HEADs, odd file names and typed git failures.

Every test builds its repositories with real git (the topology fixtures) and drives ``madtea.run``
as the MCP server would; what is asserted is the code, the way on and the repositories' state.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import madtea
from fakeforge import DEFAULT_TOKEN, FakeForge
from remote_env import clone_of
from topologies import ForeignRepo, SingleRepo, assert_only_changed, commit_files, run_git, snapshot, write_files


def call(tool: str, where: Path, **args: Any) -> madtea.Result:
    return madtea.run(tool, args, madtea.Context("mcp", where))


def refused(code: str, tool: str, where: Path, **args: Any) -> madtea.Result:
    result = call(tool, where, **args)
    assert result.is_error, result.text
    assert result.error["code"] == code, f"{result.error}\n{result.text}"
    assert "Traceback" not in result.text
    return result


def ok(tool: str, where: Path, **args: Any) -> madtea.Result:
    result = call(tool, where, **args)
    assert not result.is_error, f"{result.error}\n{result.text}"
    return result


def branches(repo: Path) -> list[str]:
    return run_git(repo, "for-each-ref", "--format=%(refname:short)", "refs/heads/").split()


# --------------------------------------------------------------------------- the default branch is never deleted

def test_branch_delete_never_deletes_the_default_branch(single_repo: SingleRepo) -> None:
    repo = single_repo.repo
    run_git(repo, "switch", "-q", "-c", "feat")
    result = refused("DEFAULT_BRANCH", "madt_branch_delete", repo, name="main")
    assert "main" in result.text and result.error["user_action"]
    assert "main" in branches(repo)


def test_prune_never_deletes_the_default_branch(single_repo: SingleRepo) -> None:
    repo = single_repo.repo
    run_git(repo, "switch", "-q", "-c", "feat")
    result = ok("madt_prune", repo)
    assert "main" not in result.data["deleted"]
    assert "main" in branches(repo)


@pytest.fixture
def clone(fake_forge: FakeForge, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MADTEA_TOKEN", DEFAULT_TOKEN)
    return clone_of(fake_forge, tmp_path / "web")


def test_finish_without_a_local_default_branch_recreates_it_from_origin(clone: Path, fake_forge: FakeForge) -> None:
    run_git(clone, "switch", "-q", "-c", "feat")
    run_git(clone, "branch", "-q", "-D", "main")  # a person removed it; madtea never does
    write_files(clone, {"a.py": "a\n"})
    result = ok("madt_finish", clone, title="Add a", files=["a.py"])
    assert run_git(clone, "branch", "--show-current") == "main"
    assert run_git(clone, "rev-parse", "HEAD") == fake_forge.branch_sha("acme", "web", "main")
    assert "main" in result.text
