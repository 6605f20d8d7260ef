"""Each sandbox topology builds what it claims, and the snapshot helper tells
a change in the wrong repository from a change in the allowed one."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import gitops
from topologies import (
    HOST,
    assert_only_changed,
    commit_files,
    make_repo,
    make_worktree,
    run_git,
    snapshot,
)


def _agree(path: Path) -> gitops.Repo:
    """discover (git) and fs_find_repo (files) must give the same answer."""
    by_git = gitops.discover(path)
    assert by_git is not None, f"{path} is not in a repo"
    assert gitops.fs_find_repo(path) == by_git
    return by_git


def _key(repo: Path) -> str | None:
    url = gitops.read_origin(_agree(repo).common_dir)
    parsed = gitops.parse_remote_url(url) if url else None
    return parsed.key if parsed else None


# --------------------------------------------------------------------------- topologies

def test_single_repo_has_a_commit_and_an_https_origin(single_repo):
    repo = _agree(single_repo.repo)
    assert repo.top == single_repo.repo and not repo.is_linked
    assert gitops.read_origin(repo.common_dir) == single_repo.origin == f"https://{HOST}/acme/web.git"
    st = gitops.status(repo)
    assert (st.branch, st.clean, st.head is not None) == ("main", True, True)
    assert single_repo.repos == [single_repo.repo]


def test_umbrella_children_have_every_origin_form(umbrella):
    top_key = _key(umbrella.top)
    assert top_key == f"{HOST}/acme/umbrella"
    assert gitops.read_origin(_agree(umbrella.ssh_child).common_dir).startswith("ssh://git@")
    assert gitops.read_origin(_agree(umbrella.scp_child).common_dir).startswith(f"git@{HOST}:")
    assert gitops.read_origin(_agree(umbrella.no_origin_child).common_dir) is None
    assert [_key(c) for c in umbrella.distinct_children] == [
        f"{HOST}/acme/api", f"{HOST}/acme/worker", f"{HOST}/acme/docs", None]
    assert _key(umbrella.same_repo_child) == top_key


def test_umbrella_depth_one_scan_finds_the_children_and_nothing_else(umbrella):
    found = gitops.nested_repos(umbrella.top)
    assert found == umbrella.nested
    assert umbrella.deep not in found and umbrella.plain_dir not in found
    assert _agree(umbrella.deep).top == umbrella.deep
    for child in umbrella.nested:
        assert _agree(child).top == child != umbrella.top


def test_flat_siblings_parent_is_not_a_repo(flat_siblings):
    assert gitops.discover(flat_siblings.parent) is None
    assert gitops.fs_find_repo(flat_siblings.parent) is None
    assert gitops.nested_repos(flat_siblings.parent) == sorted([flat_siblings.web, flat_siblings.api])
    assert _key(flat_siblings.web) != _key(flat_siblings.api)
    assert flat_siblings.repos == [flat_siblings.web, flat_siblings.api]


def test_linked_worktree_shares_the_common_dir(linked_worktree):
    main, wt = _agree(linked_worktree.main), _agree(linked_worktree.worktree)
    assert not main.is_linked and wt.is_linked
    assert wt.common_dir == main.common_dir == main.git_dir
    assert wt.git_dir.parent == main.git_dir / "worktrees"
    assert gitops.status(wt).branch == linked_worktree.branch
    paths = [w.path for w in gitops.worktree_list(main)]
    assert paths == [linked_worktree.main, linked_worktree.worktree]


def test_foreign_repo_has_its_own_common_dir_worktree_and_stranger_work(foreign_repo):
    home, foreign = _agree(foreign_repo.home), _agree(foreign_repo.foreign)
    wt = _agree(foreign_repo.foreign_worktree)
    assert home.common_dir != foreign.common_dir
    assert wt.is_linked and wt.common_dir == foreign.common_dir
    st = gitops.status(foreign)
    assert (st.modified, st.untracked) == (["README.md"], ["untracked.txt"])
    assert sorted(st.modified + st.untracked) == sorted(foreign_repo.stranger_files)
    assert gitops.status(wt).clean and gitops.status(home).clean


def test_dirty_trees_each_hold_one_kind_of_change(dirty_trees):
    got = {name: gitops.status(_agree(getattr(dirty_trees, name)))
           for name in ("clean", "modified", "staged", "untracked")}
    assert got["clean"].clean
    assert (got["modified"].modified, got["modified"].staged, got["modified"].untracked) == (["README.md"], [], [])
    assert (got["staged"].staged, got["staged"].modified) == (["staged.txt"], [])
    assert got["untracked"].untracked == ["untracked.txt"] and not got["untracked"].dirty_tracked


def test_mid_operations_are_each_stopped_where_named(mid_operations):
    for name, path in mid_operations.by_name().items():
        repo = _agree(path)
        assert gitops.operation_in_progress(repo.git_dir) == name, name
        st = gitops.status(repo)
        assert st.operation == name
        if name != "bisect":
            assert st.conflicted == ["conflict.txt"], name


def test_not_a_repo_is_outside_every_repo(not_a_repo):
    assert gitops.discover(not_a_repo) is None
    assert gitops.fs_find_repo(not_a_repo) is None
    assert gitops.discover(not_a_repo / "file.txt") is None


def test_symlinked_paths_resolve_to_the_real_repo(symlinked_repo):
    assert symlinked_repo.link.is_symlink() and symlinked_repo.link_subdir.is_symlink()
    for path in (symlinked_repo.link, symlinked_repo.link_subdir):
        assert _agree(path).top == symlinked_repo.real
    assert symlinked_repo.repos == [symlinked_repo.real]


def test_shadowing_repo_modules_are_tracked_and_would_crash(shadowing_repo):
    tracked = run_git(shadowing_repo.repo, "ls-files").splitlines()
    assert {"guard.py", "forge.py", "gitops.py"} <= set(tracked)
    for module in shadowing_repo.modules:
        proc = subprocess.run([sys.executable, "-c", f"import {module.stem}"], cwd=shadowing_repo.repo,
                              capture_output=True, text=True, stdin=subprocess.DEVNULL)
        assert proc.returncode == 97 and "SHADOWED" in proc.stdout, module


def test_every_topology_lists_real_work_trees(umbrella, foreign_repo, mid_operations):
    for topo in (umbrella, foreign_repo, mid_operations):
        for path in topo.repos:
            assert _agree(path).top == path
    assert len(umbrella.repos) == 7  # top, five children, deep
    assert foreign_repo.foreign_worktree in foreign_repo.repos


# --------------------------------------------------------------------------- snapshots

def test_snapshot_is_quiet_when_only_the_allowed_repo_changed(flat_siblings):
    before = snapshot(flat_siblings.repos)
    commit_files(flat_siblings.web, {"new.txt": "x\n"}, "allowed change")
    (flat_siblings.web / "scratch.txt").write_text("untracked\n", encoding="utf-8")
    after = snapshot(flat_siblings.repos)
    assert before[flat_siblings.web] != after[flat_siblings.web]
    assert_only_changed(before, after, allowed={flat_siblings.web})


def test_snapshot_names_the_wrong_repo_and_what_changed(flat_siblings):
    before = snapshot(flat_siblings.repos)
    commit_files(flat_siblings.api, {"oops.txt": "x\n"}, "wrong repo")
    after = snapshot(flat_siblings.repos)
    with pytest.raises(AssertionError) as err:
        assert_only_changed(before, after, allowed={flat_siblings.web})
    text = str(err.value)
    assert str(flat_siblings.api) in text and f"{flat_siblings.web} changed" not in text
    assert "refs: - refs/heads/main" in text and "refs: + refs/heads/main" in text
    assert "head:" in text and "index: + " in text


@pytest.mark.parametrize("change", ["stage", "second-edit", "switch", "worktree", "untracked"])
def test_snapshot_sees_each_kind_of_change(dirty_trees, tmp_path, change):
    repo = dirty_trees.modified
    before = snapshot(dirty_trees.repos)
    if change == "stage":
        run_git(repo, "add", "--", "README.md")
    elif change == "second-edit":  # same porcelain line; only the content hash differs
        (repo / "README.md").write_text("edited again\n", encoding="utf-8")
    elif change == "switch":
        run_git(repo, "switch", "-q", "-c", "elsewhere")
    elif change == "worktree":
        make_worktree(repo, tmp_path / "extra-wt", "extra")
    else:
        (repo / "new-untracked.txt").write_text("x\n", encoding="utf-8")
    after = snapshot(dirty_trees.repos)
    with pytest.raises(AssertionError, match=str(repo)):
        assert_only_changed(before, after, allowed={dirty_trees.clean})
    assert_only_changed(before, after, allowed={repo})


def test_snapshot_reports_a_repo_that_appeared(tmp_path):
    first = make_repo(tmp_path / "one")
    before = snapshot([first])
    second = make_repo(tmp_path / "two")
    after = snapshot([first, second])
    with pytest.raises(AssertionError, match="two: appeared"):
        assert_only_changed(before, after, allowed=set())


def test_snapshot_accepts_allowed_paths_through_symlinks(symlinked_repo):
    before = snapshot([symlinked_repo.link])
    commit_files(symlinked_repo.real, {"x.txt": "x\n"}, "change")
    assert_only_changed(before, snapshot([symlinked_repo.real]), allowed={symlinked_repo.link})
