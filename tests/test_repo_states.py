"""Repository states read from git's own files: a branch under a rebase or bisect in any worktree is held
there (``git worktree list`` shows that worktree as detached), and a detached HEAD's own commits are named
before a switch leaves them on no ref. Real git throughout."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

import gitops
from helpers import ok, refused, run_steps
from topologies import commit_files, local_branches, make_repo, run_git


@pytest.fixture
def three(tmp_path: Path, hermetic_seal: Path) -> Path:
    """A repository whose main has three commits, and a branch feat at main (its work is in main)."""
    repo = make_repo(tmp_path / "web")
    commit_files(repo, {"b.txt": "b\n"}, "second")
    commit_files(repo, {"c.txt": "c\n"}, "third")
    run_git(repo, "branch", "feat", "main")
    return repo


def _stopped_rebase(wt: Path) -> None:
    """Leave *wt* (on feat) in a rebase stopped after its first step, as a failed ``exec`` leaves it."""
    run_git(wt, "-c", "core.editor=true", "rebase", "-x", "false", "HEAD~1", check=False)
    assert (Path(run_git(wt, "rev-parse", "--absolute-git-dir")) / "rebase-merge" / "head-name").is_file()


def _held(repo: Path, kind: str, tmp_path: Path) -> Path:
    wt = tmp_path / "wt"
    run_git(repo, "worktree", "add", "-q", str(wt), "feat")
    if kind == "rebase":
        _stopped_rebase(wt)
    else:
        run_git(wt, "bisect", "start", "feat", "main~2")
    assert run_git(wt, "branch", "--show-current") == ""  # git worktree list shows it detached
    return Path(os.path.realpath(wt))


@pytest.mark.parametrize("kind", ["rebase", "bisect"])
def test_a_branch_under_a_rebase_or_bisect_is_held(three, tmp_path, kind):
    wt = _held(three, kind, tmp_path)
    held = gitops.branches_in_use(gitops.discover(three))
    assert held["feat"] == (wt, "being rebased" if kind == "rebase" else "being bisected")
    assert "feat" in gitops.fs_checked_out(gitops.discover(three).common_dir)


@pytest.mark.parametrize("kind", ["rebase", "bisect"])
def test_branch_delete_refuses_a_branch_under_a_rebase_or_bisect(three, tmp_path, kind):
    wt = _held(three, kind, tmp_path)
    result = refused("BAD_ARGUMENT", "madt_branch_delete", three, name="feat")
    assert result.error["rule"] == "branch_mid_operation"
    assert str(wt) in result.text and ("rebase" if kind == "rebase" else "bisect") in result.error["user_action"]
    assert "feat" in local_branches(three)
    with pytest.raises(gitops.BranchCheckedOut) as caught:  # the act itself checks again
        gitops.branch_delete(gitops.discover(three), "feat", run_git(three, "rev-parse", "feat"))
    assert caught.value.how.startswith("being ")


@pytest.mark.parametrize("kind", ["rebase", "bisect"])
def test_prune_keeps_a_branch_under_a_rebase_or_bisect(three, tmp_path, kind):
    _held(three, kind, tmp_path)
    run_git(three, "branch", "done", "main~1")  # contained and free: pruned
    result = ok("madt_prune", three)
    assert result.data["deleted"] == ["done"]
    assert "feat" in local_branches(three)


def test_a_switch_names_the_detached_commits_it_would_strand(three):
    run_git(three, "switch", "-q", "--detach", "main")
    lone = commit_files(three, {"lone.txt": "lone\n"}, "work on a detached HEAD")
    result = refused("DETACHED_HEAD", "madt_switch", three, branch="main")
    assert lone[:9] in result.text
    assert run_git(three, "rev-parse", "HEAD") == lone
    run_steps(result.error["next"], three)
    assert run_git(three, "branch", "--show-current") == "main"
    assert run_git(three, "rev-parse", f"detached-{lone[:7]}") == lone


def test_a_switch_from_a_detached_head_that_strands_nothing_goes_ahead(three):
    run_git(three, "switch", "-q", "--detach", "main~1")
    ok("madt_switch", three, branch="feat")
    assert run_git(three, "branch", "--show-current") == "feat"


# --------------------------------------------------------------------------- local acts stay local

@pytest.fixture
def watched_origin(tmp_path: Path, hermetic_seal: Path) -> tuple[Path, Path]:
    """A repository pushed to a bare origin, never cloned (no origin/HEAD), whose origin's transport program
    leaves a mark each time git runs it."""
    from topologies import make_pushed_repo
    repo = make_pushed_repo(tmp_path)
    mark = tmp_path / "transport-ran"
    program = tmp_path / "upload-pack"
    program.write_text(f"#!/bin/sh\necho ran >> '{mark}'\nexec git upload-pack \"$@\"\n")
    program.chmod(0o755)
    run_git(repo, "config", "remote.origin.uploadpack", str(program))
    run_git(repo, "ls-remote", "origin")  # the mark works
    assert mark.read_text() == "ran\n"
    mark.unlink()
    return repo, mark


def test_commit_branch_delete_and_prune_start_no_transport(watched_origin):
    repo, mark = watched_origin
    run_git(repo, "switch", "-q", "-c", "feat")
    (repo / "f.txt").write_text("f\n")
    ok("madt_commit", repo, files=["f.txt"], title="Add f")
    run_git(repo, "branch", "done", "main")
    run_git(repo, "branch", "done2", "main")
    ok("madt_branch_delete", repo, name="done")
    ok("madt_prune", repo)
    run_git(repo, "switch", "-q", "main")
    (repo / "m.txt").write_text("m\n")
    refused("DEFAULT_BRANCH", "madt_commit", repo, files=["m.txt"], title="Add m")  # the local convention's default
    assert not mark.exists()
    assert not {"done", "done2"} & local_branches(repo)


def test_a_possible_default_names_the_fetch_that_learns_it(watched_origin):
    repo, mark = watched_origin
    run_git(repo, "switch", "-q", "-c", "develop")
    run_git(repo, "push", "-q", "origin", "develop")
    (repo / "d.txt").write_text("d\n")
    result = refused("DEFAULT_BRANCH", "madt_commit", repo, files=["d.txt"], title="Add d")
    assert not mark.exists()
    learn = [c for c in result.error["choices"] if "shell" in c[0]]
    assert learn and "remote set-head origin --auto" in learn[0][0]["shell"]


def test_a_branch_create_with_checkout_during_a_merge_creates_nothing(three):
    run_git(three, "switch", "-q", "-c", "side", "main~1")
    commit_files(three, {"c.txt": "side\n"}, "side changes c")
    run_git(three, "merge", "-q", "main", check=False)  # c.txt conflicts: the merge stops
    assert (Path(run_git(three, "rev-parse", "--absolute-git-dir")) / "MERGE_HEAD").is_file()
    refused("MID_OPERATION", "madt_branch_create", three, name="next", checkout=True)
    refused("MID_OPERATION", "madt_switch", three, branch="main")
    assert "next" not in local_branches(three)
    assert run_git(three, "branch", "--show-current") == "side"


def test_a_branch_create_with_checkout_under_a_locked_index_creates_nothing(three):
    lock = Path(run_git(three, "rev-parse", "--absolute-git-dir")) / "index.lock"
    lock.write_text("")
    result = refused("USER_ACTION_REQUIRED", "madt_branch_create", three, name="next", checkout=True)
    assert result.error["rule"] == "check_index_unlocked" and "index.lock" in result.text
    assert "next" not in local_branches(three)
    lock.unlink()
    ok("madt_branch_create", three, name="next", checkout=True)
    assert run_git(three, "branch", "--show-current") == "next"


@pytest.fixture
def module_git_dir(tmp_path: Path, hermetic_seal: Path) -> tuple[Path, Path]:
    """A superproject with a submodule S: git keeps S's git dir in super/.git/modules/S, with core.worktree
    naming S's working tree, so git itself resolves a working tree from inside that git dir."""
    sub = make_repo(tmp_path / "subsrc")
    sup = make_repo(tmp_path / "super")
    run_git(sup, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub), "S")
    run_git(sup, "commit", "-q", "-m", "add S")
    moddir = Path(run_git(sup / "S", "rev-parse", "--absolute-git-dir"))
    assert moddir.parts[-3:] == (".git", "modules", "S")
    assert run_git(moddir / "refs", "rev-parse", "--is-inside-git-dir") == "true"
    return sup, Path(os.path.realpath(moddir))


def test_a_submodules_git_dir_is_refused_as_a_git_dir(module_git_dir):
    sup, moddir = module_git_dir
    (sup / "S" / "new.txt").write_text("new\n")
    before = run_git(sup / "S", "status", "--porcelain")
    for inside in (moddir, moddir / "refs"):
        launched = refused("BAD_ARGUMENT", "madt_commit", inside, title="add new", files=["new.txt"])
        assert "git directory" in launched.text or "git dir" in launched.text, launched.text
    named = refused("BAD_ARGUMENT", "madt_commit", sup, dir=str(moddir), title="add new", files=["new.txt"])
    assert "git directory" in named.text, named.text
    assert run_git(sup / "S", "status", "--porcelain") == before  # nothing staged into S
    assert run_git(sup / "S", "rev-list", "--count", "HEAD") == "1"


@pytest.mark.parametrize("tool, key", [("madt_switch", "branch"), ("madt_branch_delete", "name")])
def test_a_branch_named_head_is_answered_with_a_way_that_works(three, tool, key):
    """git's plumbing can make refs/heads/HEAD; no call can name it (git reads HEAD as the current commit), so
    the way on is never that call again: it is a rename git takes, after which the call works."""
    run_git(three, "update-ref", "refs/heads/HEAD", "main~1")
    result = refused("BAD_ARGUMENT", tool, three, **{key: "HEAD"})
    offered = [s for way in result.error["choices"] for s in way] + list(result.error["next"])
    assert not any(s["args"].get(key) == "HEAD" for s in offered), offered
    action = result.error["user_action"] or ""
    assert "git branch -m HEAD renamed-HEAD" in action, action
    run_git(three, "branch", "-m", "HEAD", "renamed-HEAD")
    ok(tool, three, **{key: "renamed-HEAD"})
    assert "HEAD" not in local_branches(three)


def test_a_switch_never_offers_a_branch_git_cannot_name(three):
    run_git(three, "update-ref", "refs/heads/HEAD", "main~1")
    result = refused("BAD_ARGUMENT", "madt_switch", three, branch="a..b")
    offered = [s["args"]["branch"] for way in result.error["choices"] for s in way]
    assert offered == ["feat"] or (not offered and result.error["user_action"]), result.error
