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


# --------------------------------------------------------------------------- declared files and titles

def test_blanket_files_on_the_default_branch_are_undeclared_first(single_repo: SingleRepo) -> None:
    repo = single_repo.repo
    write_files(repo, {"a.py": "a\n"})
    for tool in ("madt_commit", "madt_finish"):
        refused("UNDECLARED_FILES", tool, repo, files=["."], title="Add a")


@pytest.mark.parametrize("path", [".git/config", ".git", "sub/../.git/HEAD", ".GIT/config"])
def test_git_dir_paths_are_refused_and_nothing_is_staged(single_repo: SingleRepo, path: str) -> None:
    repo = single_repo.repo
    run_git(repo, "switch", "-q", "-c", "feat")
    before = snapshot([repo])
    for tool, extra in (("madt_add", {}), ("madt_commit", {"title": "t"})):
        result = refused("BAD_ARGUMENT", tool, repo, files=[path], **extra)
        assert ".git" in result.text.lower()
    assert_only_changed(before, snapshot([repo]), set())


def test_a_file_named_like_an_option_is_committed_literally(single_repo: SingleRepo) -> None:
    repo = single_repo.repo
    run_git(repo, "switch", "-q", "-c", "feat")
    write_files(repo, {"-A": "literal\n", "b.txt": "not declared\n"})
    result = ok("madt_commit", repo, files=["-A"], title="Add the file named -A")
    assert run_git(repo, "show", "--name-only", "--format=", result.data["sha"]) == "-A"
    assert "b.txt" in run_git(repo, "status", "--porcelain")
    refused("UNDECLARED_FILES", "madt_add", repo, files=["--all"])  # no such file: a blanket word


def test_a_title_is_one_line(single_repo: SingleRepo) -> None:
    repo = single_repo.repo
    run_git(repo, "switch", "-q", "-c", "feat")
    write_files(repo, {"a.py": "a\n"})
    result = refused("BAD_ARGUMENT", "madt_commit", repo, files=["a.py"], title="Add a\n\nSigned-off-by: Eve <e@x>")
    assert run_git(repo, "rev-list", "--count", "HEAD") == "1"
    [step] = result.error["next"]
    assert step["args"]["title"] == "Add a" and "Signed-off-by" in step["args"]["body"]
    done = ok(step["tool"], repo, **step["args"])
    assert run_git(repo, "log", "-1", "--format=%s", done.data["sha"]) == "Add a"
    refused("BAD_ARGUMENT", "madt_finish", repo, files=["a.py"], title="one\rtwo")


# --------------------------------------------------------------------------- typed git failures

def run_steps(steps: list[dict[str, Any]], where: Path) -> madtea.Result:
    result = None
    for step in steps:
        result = ok(step["tool"], where, **step["args"])
    assert result is not None
    return result


def test_foreseen_git_failures_have_their_own_codes(single_repo: SingleRepo, tmp_path: Path) -> None:
    repo = single_repo.repo
    run_git(repo, "switch", "-q", "-c", "feat")
    refused("NOTHING_TO_COMMIT", "madt_commit", repo, files=["README.md"], title="No change")
    result = refused("BRANCH_EXISTS", "madt_branch_create", repo, name="main")
    [step] = result.error["next"]
    assert step["args"]["name"] not in branches(repo)
    run_steps([step], repo)
    result = refused("BRANCH_EXISTS", "madt_branch_create", repo, name="feat", checkout=True)
    assert len(result.error["choices"]) == 2
    busy = tmp_path / "busy"
    write_files(busy, {"f": "x\n"})
    result = refused("PATH_EXISTS", "madt_worktrees", repo, action="add", path=str(busy), b="side")
    assert "side" not in branches(repo)  # git alone would have created it before finding the path taken
    [step] = result.error["next"]
    assert not Path(step["args"]["path"]).exists()
    run_steps([step], repo)
    result = refused("BRANCH_CHECKED_OUT", "madt_worktrees", repo, action="add", path=str(tmp_path / "wt2"),
                     commit_ish="feat")
    [step] = result.error["next"]
    assert step["args"]["b"] not in branches(repo)
    run_steps([step], repo)
    result = refused("NOT_A_COMMIT", "madt_switch", repo, branch="nope")
    assert result.error["choices"]
    refused("NOT_A_COMMIT", "madt_log", repo, ref="nope")
    refused("NOT_A_COMMIT", "madt_branch_create", repo, name="x", start_point="nope")


def test_a_switch_over_conflicting_changes_is_a_dirty_tree(single_repo: SingleRepo) -> None:
    repo = single_repo.repo
    run_git(repo, "switch", "-q", "-c", "theirs")
    commit_files(repo, {"README.md": "theirs\n"}, "their readme")
    run_git(repo, "switch", "-q", "-c", "mine", "main")
    write_files(repo, {"README.md": "my edit\n"})
    result = refused("DIRTY_TREE", "madt_switch", repo, branch="theirs")
    assert "README.md" in result.text
    assert result.error["next"][0]["args"]["files"] == ["README.md"]
    assert run_git(repo, "branch", "--show-current") == "mine"


def test_a_pull_over_a_conflicting_local_edit_is_a_dirty_tree(clone: Path, fake_forge: FakeForge,
                                                               tmp_path: Path) -> None:
    other = clone_of(fake_forge, tmp_path / "other")
    commit_files(other, {"README.md": "upstream change\n"}, "upstream change")
    run_git(other, "push", "-q", "origin", "main")
    write_files(clone, {"README.md": "local edit\n"})
    result = refused("DIRTY_TREE", "madt_pull", clone)
    assert "README.md" in result.text and result.error["user_action"]
    assert (clone / "README.md").read_text() == "local edit\n"


# --------------------------------------------------------------------------- unborn and detached HEADs

def test_the_default_branch_chain_works_from_an_unborn_repo(tmp_path: Path, hermetic_seal: Path) -> None:
    from topologies import make_repo
    repo = make_repo(tmp_path / "new", origin="https://forge.example.test/acme/new.git", commit=False)
    write_files(repo, {"a.py": "a\n"})
    result = refused("DEFAULT_BRANCH", "madt_commit", repo, files=["a.py"], title="First")
    steps = [s for s in result.error["next"] if not s["args"].get("allow_default_branch")]  # the override is a choice
    done = run_steps(steps, repo)
    assert run_git(repo, "branch", "--show-current") != "main"
    assert run_git(repo, "show", "--name-only", "--format=", "HEAD") == "a.py"
    assert done.data["files"] == ["a.py"]
