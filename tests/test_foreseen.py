"""Git failures a rule foresees reach the caller as their own code and a way on that works, not as GIT_ERROR.

A missing declared file, a branch name git could never take, a push of a branch that is not there, a git
child that ran out of time, and an unborn repository whose forge has no default branch yet: each is made
with real git (and the fake forge where a remote is needed), and each way on is run as given.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import gitops
import guard
import madtea
from fakeforge import DEFAULT_TOKEN, FakeForge
from helpers import refused, run_steps
from remote_env import clone, clone_of, env  # noqa: F401 - fixtures
from topologies import (SingleRepo, commit_files, local_branches, make_bare, make_repo, run_git, snapshot,
                        write_files)


@pytest.fixture
def on_feat(clone: Path) -> None:
    """The clone on a branch feat of its own."""
    run_git(clone, "switch", "-q", "-c", "feat")


# --------------------------------------------------------------------------- a declared file that is not there

@pytest.mark.parametrize("tool", ["madt_add", "madt_commit"])
def test_a_missing_declared_file_is_no_such_file(single_repo: SingleRepo, tool: str) -> None:
    repo = single_repo.repo
    run_git(repo, "switch", "-q", "-c", "feat")
    title = {"title": "Add a"} if tool == "madt_commit" else {}
    result = refused("NO_SUCH_FILE", tool, repo, files=["nope.txt"], **title)
    assert "nope.txt" in result.text and result.error["next"][0]["tool"] == "madt_status"
    write_files(repo, {"a.txt": "a\n"})
    result = refused("NO_SUCH_FILE", tool, repo, files=["a.txt", "nope.txt"], **title)
    assert run_git(repo, "diff", "--cached", "--name-only") == ""  # nothing was staged
    without, listing = result.error["choices"]
    assert without == [{"tool": tool, "args": {"files": ["a.txt"]} | title}]
    run_steps(without, repo)
    assert "a.txt" in run_git(repo, "show", "--name-only", "--format=", "HEAD" if title else ":a.txt") or not title


# --------------------------------------------------------------------------- branch names git cannot take

@pytest.mark.parametrize("name", ["bad..name", "has space", "ends.lock", "a//b", "x@{1}", "trailing.", ".hidden",
                                  "tilde~1", "col:on", "HEAD"])
def test_a_new_branch_name_git_cannot_take_gets_one_it_takes(single_repo: SingleRepo, name: str) -> None:
    repo = single_repo.repo
    before = local_branches(repo)
    result = refused("BAD_ARGUMENT", "madt_branch_create", repo, name=name)
    assert local_branches(repo) == before
    [step] = result.error["next"]
    assert guard.ref_name_problem(step["args"]["name"]) is None
    run_steps([step], repo)
    assert step["args"]["name"] in local_branches(repo)


@pytest.mark.usefixtures("on_feat")
def test_a_pull_of_a_branch_name_git_cannot_take_is_a_bad_argument(clone: Path) -> None:
    before = snapshot([clone])
    result = refused("BAD_ARGUMENT", "madt_pull", clone, branch="bad..name")
    assert "bad..name" in result.text and "GIT_ERROR" not in result.text
    assert snapshot([clone]) == before
    for choice in result.error["choices"]:
        assert not any("bad..name" in str(step["args"].values()) for step in choice)


def test_a_switch_to_a_branch_name_git_cannot_take_never_proposes_creating_it(single_repo: SingleRepo) -> None:
    result = refused("BAD_ARGUMENT", "madt_switch", single_repo.repo, branch="bad..x")
    assert "madt_branch_create" not in result.text


def test_a_valid_branch_name_is_left_alone() -> None:
    for name in ("feat/x", "work/add-a", "v1.0", "a.b/c_d", "ünïcode", "x@y"):
        assert guard.ref_name_problem(name) is None, name


def test_the_ref_name_check_is_linear() -> None:
    for value in ("." * 200_000 + "x", "/" * 200_000, "a" * 500_000 + ".lock", "@" * 300_000):
        assert guard.ref_name_problem(value) is not None or value.startswith("@")
        assert guard.ref_name_problem(guard.valid_branch_name(value)) is None


# --------------------------------------------------------------------------- a push of a branch that is not there

@pytest.mark.usefixtures("on_feat")
def test_a_push_of_a_missing_local_branch_offers_the_current_one_or_making_it(clone: Path,
                                                                             fake_forge: FakeForge) -> None:
    result = refused("NOT_A_COMMIT", "madt_push", clone, branch="topic")
    current, make = result.error["choices"]
    assert current == [{"tool": "madt_push", "args": {"branch": "feat"}}]
    assert [s["tool"] for s in make] == ["madt_branch_create", "madt_push"]
    assert "topic" not in local_branches(clone)
    run_steps(make, clone)
    assert fake_forge.branch_sha("acme", "web", "topic") == run_git(clone, "rev-parse", "topic")


# --------------------------------------------------------------------------- a push the remote turns away

def _pushed_clone(tmp_path: Path) -> tuple[Path, Path]:
    """A clone on branch feat that is pushed to a local bare origin, plus a second clone of it."""
    bare = make_bare(tmp_path / "origin.git")
    one = make_repo(tmp_path / "one")
    run_git(one, "remote", "add", "origin", str(bare))
    run_git(one, "switch", "-q", "-c", "feat")
    run_git(one, "push", "-q", "-u", "origin", "feat")
    two = tmp_path / "two"
    run_git(tmp_path, "clone", "-q", "-b", "feat", str(bare), str(two))
    commit_files(two, {"theirs.txt": "theirs\n"}, "their work")
    run_git(two, "push", "-q", "origin", "feat")
    run_git(one, "fetch", "-q", "origin")
    return one, two


def test_a_diverged_push_asks_the_user_instead_of_pointing_at_a_pull_that_cannot_work(tmp_path: Path) -> None:
    one, _ = _pushed_clone(tmp_path)
    commit_files(one, {"mine.txt": "mine\n"}, "my work")
    result = madtea.run("madt_push", {"dir": str(one)}, madtea.Context("mcp", one))
    assert result.error["code"] == "BAD_ARGUMENT"
    assert result.error["next"] == [] and "Ask the user whether to bring origin/feat" in result.error["user_action"]
    assert run_git(one, "rev-parse", "origin/feat") != run_git(one, "rev-parse", "HEAD")


def test_a_push_that_is_only_behind_points_at_the_pull_that_catches_up(tmp_path: Path, monkeypatch) -> None:
    one, _ = _pushed_clone(tmp_path)
    real = gitops.push

    def rejected(*args: Any, **kwargs: Any) -> Any:
        raise gitops.PushRejected(["git", "push"], 1, "rejected", reason="fetch first", kind="non-fast-forward")
    monkeypatch.setattr(gitops, "push", rejected)
    result = madtea.run("madt_push", {"dir": str(one)}, madtea.Context("mcp", one))
    monkeypatch.setattr(gitops, "push", real)
    assert result.error["next"] == [{"tool": "madt_pull", "args": {"dir": str(one), "branch": "feat"}}]
    pulled = madtea.run("madt_pull", result.error["next"][0]["args"], madtea.Context("mcp", one))
    assert pulled.error is None, pulled.text


# --------------------------------------------------------------------------- a git child that runs out of time

def test_a_git_timeout_is_its_own_code_with_words_for_a_person(single_repo: SingleRepo,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    repo = single_repo.repo
    run_git(repo, "switch", "-q", "-c", "feat")
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\nsleep 30\n", encoding="utf-8")
    hook.chmod(0o755)
    write_files(repo, {"a.txt": "a\n"})
    monkeypatch.setenv("MADTEA_GIT_TIMEOUT", "2")
    result = refused("GIT_TIMEOUT", "madt_commit", repo, files=["a.txt"], title="Add a")
    assert "ran longer than 2 s" in result.text and "MADTEA_GIT_TIMEOUT" in result.error["user_action"]
    assert run_git(repo, "log", "-1", "--format=%s") == "initial commit"


def test_a_timeout_reading_the_repositorys_state_is_its_own_code(single_repo: SingleRepo,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    import gitops

    def slow(*args: Any, **kwargs: Any) -> Any:
        raise gitops.GitTimeout(["git", "status"], 3.0)
    monkeypatch.setattr(gitops, "status", slow)  # read for the rules, before any handler runs
    result = refused("GIT_TIMEOUT", "madt_commit", single_repo.repo, files=["README.md"], title="t")
    assert "MADTEA_GIT_TIMEOUT" in result.error["user_action"] and result.error["target"]


def test_a_timeout_in_a_read_is_its_own_code_too(single_repo: SingleRepo,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    import gitops

    def slow(*args: Any, **kwargs: Any) -> Any:
        raise gitops.GitTimeout(["git", "status"], 7.0)
    monkeypatch.setattr(gitops, "status", slow)
    result = refused("GIT_TIMEOUT", "madt_status", single_repo.repo)
    assert "ran longer than 7 s" in result.text


# --------------------------------------------------------------------------- a ref that is not there

def test_a_switch_to_a_missing_branch_offers_the_branches_there(single_repo: SingleRepo) -> None:
    repo = single_repo.repo
    run_git(repo, "branch", "side")
    result = refused("NOT_A_COMMIT", "madt_switch", repo, branch="nope")
    choices = result.error["choices"]
    assert [{"tool": "madt_switch", "args": {"branch": "side"}}] in choices
    assert not any(guard.is_placeholder(v) for choice in choices for s in choice for v in s["args"].values())
    run_steps([{"tool": "madt_switch", "args": {"branch": "side"}}], repo)


def test_a_log_of_a_missing_ref_offers_refs_that_run_or_asks(single_repo: SingleRepo) -> None:
    repo = single_repo.repo
    result = refused("NOT_A_COMMIT", "madt_log", repo, ref="nope")
    ways = result.error["choices"] or [result.error["next"]] if not result.error["user_action"] else []
    for way in ways:
        run_steps(way, repo)
    assert ways or "nope" in result.error["user_action"]


@pytest.mark.usefixtures("on_feat")
def test_a_pull_of_a_branch_origin_lacks_asks_which_was_meant(clone: Path) -> None:
    result = refused("NOT_A_COMMIT", "madt_pull", clone, branch="nope")
    assert "nope" in result.error["user_action"] and "<" not in result.text


# --------------------------------------------------------------------------- steps that run as given

def _no_placeholder(result: madtea.Result) -> None:
    ways = result.error["choices"] or [result.error["next"]]
    assert not any(guard.is_placeholder(v) or (isinstance(v, list) and any(map(guard.is_placeholder, v)))
                   for way in ways for step in way for v in step.get("args", {}).values()), result.error


def test_a_worktree_add_without_a_path_is_offered_a_free_one(single_repo: SingleRepo) -> None:
    repo = single_repo.repo
    result = refused("BAD_ARGUMENT", "madt_worktrees", repo, action="add", b="side")
    _no_placeholder(result)
    [step] = result.error["next"]
    path = Path(step["args"]["path"])
    assert not path.exists() and not path.is_relative_to(repo)
    run_steps([step], repo)
    assert run_git(path, "branch", "--show-current") == "side"


@pytest.mark.usefixtures("on_feat")
def test_a_push_from_a_detached_head_offers_pushes_that_run(clone: Path, fake_forge: FakeForge) -> None:
    run_git(clone, "switch", "-q", "--detach", "HEAD")
    result = refused("BAD_ARGUMENT", "madt_push", clone)
    _no_placeholder(result)
    [make, push], *others = result.error["choices"]
    assert [{"tool": "madt_push", "args": {"branch": "feat"}}] in others
    run_steps([make, push], clone)
    assert fake_forge.branch_sha("acme", "web", push["args"]["branch"]) == run_git(clone, "rev-parse", "HEAD")


@pytest.mark.usefixtures("on_feat")
def test_a_pull_on_a_detached_head_offers_a_switch_to_each_branch_then_the_pull(clone: Path) -> None:
    run_git(clone, "switch", "-q", "--detach", "HEAD")
    result = refused("BAD_ARGUMENT", "madt_pull", clone)
    _no_placeholder(result)
    assert [{"tool": "madt_switch", "args": {"dir": str(clone), "branch": "main"}},
            {"tool": "madt_pull", "args": {}}] in result.error["choices"]
    run_steps(result.error["choices"][-1], clone)


# --------------------------------------------------------------------------- a finish into an empty repository

def test_a_finish_from_an_unborn_repo_whose_forge_repo_is_empty_starts_its_default_branch(
        fake_forge: FakeForge, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MADTEA_TOKEN", DEFAULT_TOKEN)
    fake_forge.add_repo("acme", "empty", init=False)
    repo = clone_of(fake_forge, tmp_path / "empty", repo="empty")
    write_files(repo, {"a.py": "a\n"})
    first = refused("DEFAULT_BRANCH", "madt_finish", repo, files=["a.py"], title="First")
    run_steps(first.error["next"][:-1], repo)  # the branch for the work; then the finish again
    pulls = len([i for i in fake_forge.repo("acme", "empty").issues.values() if i.pull is not None])
    result = refused("NO_BASE_BRANCH", "madt_finish", repo, files=["a.py"], title="First")
    assert "empty" in result.text and "NOT_FOUND" not in result.text
    assert fake_forge.branch_sha("acme", "empty", run_git(repo, "branch", "--show-current")) is None  # not pushed
    run_steps(result.error["next"], repo)
    assert fake_forge.git("acme", "empty", "show", "main:a.py") == "a"
    assert len([i for i in fake_forge.repo("acme", "empty").issues.values() if i.pull is not None]) == pulls


def test_a_finish_whose_origin_is_empty_but_a_local_default_branch_exists_pushes_that_first(
        fake_forge: FakeForge, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from topologies import commit_files
    monkeypatch.setenv("MADTEA_TOKEN", DEFAULT_TOKEN)
    fake_forge.add_repo("acme", "empty", init=False)
    repo = clone_of(fake_forge, tmp_path / "empty", repo="empty")
    commit_files(repo, {"README.md": "# empty\n"}, "initial commit")
    run_git(repo, "switch", "-q", "-c", "feat")
    write_files(repo, {"a.py": "a\n"})
    result = refused("NO_BASE_BRANCH", "madt_finish", repo, files=["a.py"], title="Add a")
    assert [s["tool"] for s in result.error["next"]] == ["madt_push", "madt_finish"]
    run_steps(result.error["next"], repo)
    assert fake_forge.git("acme", "empty", "show", "main:a.py") == "a"


def test_a_branch_name_git_cannot_take_never_proposes_deleting_or_finishing_another(single_repo: SingleRepo) -> None:
    repo = single_repo.repo
    for name in ("side", "other"):
        run_git(repo, "branch", name)
    for tool in ("madt_branch_delete", "madt_finish"):
        key = "name" if tool == "madt_branch_delete" else "branch"
        result = refused("BAD_ARGUMENT", tool, repo, **{key: "bad..x"})
        assert result.error["user_action"] and not result.error["choices"], result.error
