"""Refusals and results that depend on the state of real repositories: the default branch, foreign
worktrees, unborn and detached HEADs, odd file names and typed git failures.

Every test builds its repositories with real git (the topology fixtures) and drives ``madtea.run``
as the MCP server would; what is asserted is the code, the way on and the repositories' state.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import gitops
import guard
import madtea
from fakeforge import FakeForge
from helpers import call, ok, refused, run_steps
from remote_env import clone, clone_of, env  # noqa: F401 - fixtures
from topologies import (ForeignRepo, SingleRepo, assert_only_changed, commit_files, local_branches, make_bare,
                        make_pushed_repo, make_repo, run_git, snapshot, write_files)


# --------------------------------------------------------------------------- the default branch is never deleted

def test_branch_delete_never_deletes_the_default_branch(single_repo: SingleRepo) -> None:
    repo = single_repo.repo
    run_git(repo, "switch", "-q", "-c", "feat")
    result = refused("DEFAULT_BRANCH", "madt_branch_delete", repo, name="main")
    assert "main" in result.text and result.error["user_action"]
    assert "main" in local_branches(repo)


def test_prune_never_deletes_the_default_branch(single_repo: SingleRepo) -> None:
    repo = single_repo.repo
    run_git(repo, "switch", "-q", "-c", "feat")
    result = ok("madt_prune", repo)
    assert "main" not in result.data["deleted"]
    assert "main" in local_branches(repo)


def test_finish_without_a_local_default_branch_recreates_it_from_origin(clone: Path, fake_forge: FakeForge) -> None:
    run_git(clone, "switch", "-q", "-c", "feat")
    run_git(clone, "branch", "-q", "-D", "main")  # a person removed it; madtea never does
    write_files(clone, {"a.py": "a\n"})
    result = ok("madt_finish", clone, title="Add a", files=["a.py"])
    assert run_git(clone, "branch", "--show-current") == "main"
    assert run_git(clone, "rev-parse", "HEAD") == fake_forge.branch_sha("acme", "web", "main")
    assert "main" in result.text


def test_a_commit_never_asks_the_remote_for_its_default_branch_and_nothing_is_written(
        tmp_path: Path, hermetic_seal: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_pushed_repo(tmp_path)  # pushed, never cloned: git has no record of origin's HEAD
    run_git(repo, "switch", "-q", "-c", "feat")
    asked: list[tuple[Any, ...]] = []
    real_git = gitops.git

    def recording_git(*args: Any, **kwargs: Any) -> gitops.GitResult:
        asked.extend([args] if "ls-remote" in args else [])
        return real_git(*args, **kwargs)

    monkeypatch.setattr(gitops, "git", recording_git)
    for n in range(2):
        write_files(repo, {f"f{n}.txt": "x\n"})
        ok("madt_commit", repo, files=[f"f{n}.txt"], title=f"Add f{n}")
    run_git(repo, "switch", "-q", "main")
    write_files(repo, {"m.txt": "x\n"})
    refused("DEFAULT_BRANCH", "madt_commit", repo, files=["m.txt"], title="Add m")  # the local convention's default
    assert asked == []  # a commit is a local act: git commit reaches no remote, and neither does madtea's
    assert run_git(repo, "symbolic-ref", "-q", "refs/remotes/origin/HEAD", check=False) == ""


# --------------------------------------------------------------------------- containment proves a branch is merged

def test_a_tag_named_like_the_branch_does_not_prove_the_branch_contained(tmp_path: Path, hermetic_seal: Path) -> None:
    repo = make_pushed_repo(tmp_path)
    run_git(repo, "switch", "-q", "-c", "v1")
    work = commit_files(repo, {"x.txt": "unmerged\n"}, "unmerged work")
    run_git(repo, "switch", "-q", "main")
    run_git(repo, "tag", "v1", "main")   # "v1" now also names a commit that main holds
    result = call("madt_branch_delete", repo, name="v1", dir=str(repo))
    assert result.error and result.error["code"] == "NOT_CONTAINED", result.text
    assert run_git(repo, "rev-parse", "refs/heads/v1") == work
    pruned = call("madt_prune", repo, dir=str(repo))
    assert not pruned.is_error and "v1" in pruned.data["kept"], pruned.text
    assert run_git(repo, "rev-parse", "refs/heads/v1") == work


def test_containment_counts_the_default_branchs_own_upstream(tmp_path: Path, hermetic_seal: Path) -> None:
    repo = make_pushed_repo(tmp_path)
    upstream = make_bare(tmp_path / "upstream.git")
    run_git(repo, "remote", "add", "upstream", str(upstream))
    run_git(repo, "switch", "-q", "-c", "feat")
    commit_files(repo, {"f.txt": "f\n"}, "feature")
    run_git(repo, "push", "-q", "upstream", "feat:main")
    run_git(repo, "fetch", "-q", "upstream")
    run_git(repo, "switch", "-q", "main")
    run_git(repo, "branch", "-q", "--set-upstream-to=upstream/main", "main")
    result = call("madt_branch_delete", repo, name="feat", dir=str(repo))
    assert not result.is_error, result.text
    assert "nothing left to verify" in result.text


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


def test_the_commit_says_the_files_git_recorded(single_repo: SingleRepo, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    repo = single_repo.repo
    run_git(repo, "switch", "-q", "-c", "feat")
    commit_files(repo, {"run.sh": "echo\n", "same.txt": "s\n"}, "scripts")
    (repo / "run.sh").chmod(0o755)  # a mode change alone is a change git records
    write_files(repo, {"d/new.txt": "n\n"})
    asked: list[str] = []
    real_git = gitops.git

    def recording_git(*args: Any, **kwargs: Any) -> gitops.GitResult:
        asked.append(str(args[0]))
        return real_git(*args, **kwargs)

    monkeypatch.setattr(gitops, "git", recording_git)
    result = ok("madt_commit", repo, files=["run.sh", "same.txt", "d"], title="Make run.sh executable")
    monkeypatch.setattr(gitops, "git", real_git)
    shown = run_git(repo, "show", "--name-only", "--format=", result.data["sha"]).splitlines()
    assert result.data["files"] == sorted(shown) == ["d/new.txt", "run.sh"], result.text
    assert result.data["unchanged"] == ["same.txt"] and "(2 files: d/new.txt, run.sh)" in result.text
    assert asked[asked.index("commit"):] == ["commit", "rev-parse", "diff-tree"]  # what the commit holds: one call
    fresh = make_repo(tmp_path / "fresh", branch="feat", commit=False)
    write_files(fresh, {"a": "a\n", "b/c": "c\n"})
    first = ok("madt_commit", fresh, files=["a", "b"], title="First")
    assert first.data["files"] == ["a", "b/c"], first.text  # a root commit holds every file it adds


def test_a_file_named_like_an_option_is_committed_literally(single_repo: SingleRepo) -> None:
    repo = single_repo.repo
    run_git(repo, "switch", "-q", "-c", "feat")
    write_files(repo, {"-A": "literal\n", "b.txt": "not declared\n"})
    result = ok("madt_commit", repo, files=["-A"], title="Add the file named -A")
    assert run_git(repo, "show", "--name-only", "--format=", result.data["sha"]) == "-A"
    assert "b.txt" in run_git(repo, "status", "--porcelain")
    refused("UNDECLARED_FILES", "madt_add", repo, files=["--all"])  # no such file: a blanket word


def test_a_commit_reports_the_files_git_committed(single_repo: SingleRepo) -> None:
    repo = single_repo.repo
    run_git(repo, "switch", "-q", "-c", "feat")
    write_files(repo, {"a.py": "a\n", "src/b.py": "b\n"})
    result = ok("madt_commit", repo, files=["a.py", "README.md", "src"], title="Add a and b")
    held = run_git(repo, "show", "--name-only", "--format=", result.data["sha"]).splitlines()
    assert result.data["files"] == held == ["a.py", "src/b.py"]
    assert result.data["unchanged"] == ["README.md"]
    assert "(2 files: a.py, src/b.py)" in result.text and "Unchanged, so not in the commit: README.md." in result.text


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


def test_a_blank_commit_title_is_a_bad_argument(tmp_path: Path, hermetic_seal: Path) -> None:
    repo = make_pushed_repo(tmp_path)
    run_git(repo, "switch", "-q", "-c", "feat")
    (repo / "z.txt").write_text("z\n", encoding="utf-8")
    result = call("madt_commit", repo, files=["z.txt"], title="  ", dir=str(repo))
    assert result.error and result.error["code"] == "BAD_ARGUMENT", result.text
    assert "title" in result.text
    finish = call("madt_finish", repo, files=["z.txt"], title=" ", dir=str(repo))
    assert finish.error and finish.error["code"] == "BAD_ARGUMENT", finish.text
    assert run_git(repo, "status", "--porcelain") == "?? z.txt"


def test_an_absolute_file_spelt_through_the_symlinked_dir_is_inside_the_repo(tmp_path: Path,
                                                                           hermetic_seal: Path) -> None:
    real = make_repo(tmp_path / "real" / "web")
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    run_git(real, "switch", "-q", "-c", "feat")
    (real / "a.py").write_text("a\n", encoding="utf-8")
    result = call("madt_commit", real, files=[str(link / "a.py")], title="Add a", dir=str(link))
    assert not result.is_error, result.text
    assert result.data["files"] == ["a.py"] and f"web @ {real} (feat)" in result.text


# --------------------------------------------------------------------------- worktrees and the identity echo

def test_worktree_remove_refuses_a_detached_worktrees_own_commits(tmp_path: Path, hermetic_seal: Path) -> None:
    repo = make_pushed_repo(tmp_path)
    wt = tmp_path / "wt"
    added = call("madt_worktrees", repo, action="add", path=str(wt), dir=str(repo))
    assert not added.is_error, added.text
    lone = commit_files(wt, {"y.txt": "only here\n"}, "work on a detached HEAD")
    result = call("madt_worktrees", repo, action="remove", path=str(wt), dir=str(repo))
    assert result.error and result.error["code"] == "UNSAVED_WORK", result.text
    assert "detached HEAD" in result.text and wt.exists()
    assert run_git(wt, "rev-parse", "HEAD") == lone


def test_worktree_remove_of_a_clean_detached_worktree_goes_ahead(tmp_path: Path, hermetic_seal: Path) -> None:
    repo = make_pushed_repo(tmp_path)
    wt = tmp_path / "wt"
    assert not call("madt_worktrees", repo, action="add", path=str(wt), dir=str(repo)).is_error
    result = call("madt_worktrees", repo, action="remove", path=str(wt), dir=str(repo))
    assert not result.is_error, result.text
    assert f"web @ {repo} (main)" in result.text and not wt.exists()


def test_a_padded_or_relative_worktree_path_is_refused_naming_path_not_dir(tmp_path: Path, hermetic_seal: Path) -> None:
    repo = make_pushed_repo(tmp_path)
    wt = str(tmp_path / "wt")
    padded = call("madt_worktrees", repo, action="add", path=f" {wt} ", b="feat", dir=str(repo))
    assert padded.error and padded.error["code"] == "BAD_ARGUMENT"
    assert "path" in padded.text and "dir" not in padded.text.split(":", 1)[1].split(".")[0]
    assert padded.error["next"] == [{"tool": "madt_worktrees",
                                     "args": {"action": "add", "path": wt, "b": "feat", "dir": str(repo)}}]
    relative = call("madt_worktrees", repo, action="add", path="wt", dir=str(repo))
    assert relative.error and "path 'wt' is relative" in relative.text
    assert relative.error["next"][0]["args"]["path"] == "<the absolute path of the worktree>"


def test_switch_and_worktree_add_echo_the_identity(tmp_path: Path, hermetic_seal: Path) -> None:
    repo = make_pushed_repo(tmp_path)
    run_git(repo, "branch", "feat")
    switched = call("madt_switch", repo, branch="feat", dir=str(repo))
    assert switched.text == f"Switched web @ {repo} (feat) from main to feat."
    added = call("madt_worktrees", repo, action="add", path=str(tmp_path / "wt"), dir=str(repo))
    assert added.text == f"Added worktree {tmp_path / 'wt'} on a detached HEAD for web @ {repo} (feat)."


# --------------------------------------------------------------------------- a push's lease

def test_an_abbreviated_lease_is_answered_with_the_full_sha(tmp_path: Path, hermetic_seal: Path) -> None:
    repo = make_pushed_repo(tmp_path)
    full = run_git(repo, "rev-parse", "origin/main")
    result = call("madt_push", repo, branch="main", force_with_lease=full[:7], dir=str(repo))
    assert result.error and result.error["code"] == "BAD_ARGUMENT", result.text
    assert result.error["next"] == [{"tool": "madt_push",
                                     "args": {"branch": "main", "force_with_lease": full, "dir": str(repo)}}]
    named = call("madt_push", repo, branch="main", force_with_lease="origin/main", dir=str(repo))
    assert named.error and named.error["code"] == "BAD_ARGUMENT", named.text
    look, retry = named.error["next"]
    assert look == {"tool": "madt_log", "args": {"dir": str(repo), "ref": "origin/main"}}
    assert guard.is_placeholder(retry["args"]["force_with_lease"]) and not named.error["user_action"]
    assert "INTERNAL" not in named.text


# --------------------------------------------------------------------------- typed git failures

def test_foreseen_git_failures_have_their_own_codes(single_repo: SingleRepo, tmp_path: Path) -> None:
    repo = single_repo.repo
    run_git(repo, "switch", "-q", "-c", "feat")
    refused("NOTHING_TO_COMMIT", "madt_commit", repo, files=["README.md"], title="No change")
    result = refused("BRANCH_EXISTS", "madt_branch_create", repo, name="main")
    [step] = result.error["next"]
    assert step["args"]["name"] not in local_branches(repo)
    run_steps([step], repo)
    result = refused("BRANCH_EXISTS", "madt_branch_create", repo, name="feat", checkout=True)
    assert len(result.error["choices"]) == 2
    busy = tmp_path / "busy"
    write_files(busy, {"f": "x\n"})
    result = refused("PATH_EXISTS", "madt_worktrees", repo, action="add", path=str(busy), b="side")
    assert "side" not in local_branches(repo)  # git alone would have created it before finding the path taken
    [step] = result.error["next"]
    assert not Path(step["args"]["path"]).exists()
    run_steps([step], repo)
    result = refused("BRANCH_CHECKED_OUT", "madt_worktrees", repo, action="add", path=str(tmp_path / "wt2"),
                     commit_ish="feat")
    [step] = result.error["next"]
    assert step["args"]["b"] not in local_branches(repo)
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
    steps = (result.error["choices"] or [result.error["next"]])[0]  # the first choice; the override is the other
    assert not any(s["args"].get("allow_default_branch") for s in steps)
    done = run_steps(steps, repo)
    assert run_git(repo, "branch", "--show-current") != "main"
    assert run_git(repo, "show", "--name-only", "--format=", "HEAD") == "a.py"
    assert done.data["files"] == ["a.py"]


# --------------------------------------------------------------------------- working in another repository

@pytest.fixture
def lib(clone: Path, fake_forge: FakeForge, tmp_path: Path) -> Path:
    """acme/lib's main checkout, owned by someone else: an edit of theirs and one of the caller's own."""
    fake_forge.add_repo("acme", "lib")
    primary = clone_of(fake_forge, tmp_path / "lib", repo="lib")
    write_files(primary, {"README.md": "the owner's unfinished edit\n", "new.py": "print('mine')\n"})
    return primary


def test_the_foreign_primary_chain_commits_the_declared_files_and_merges(clone: Path, lib: Path,
                                                                         fake_forge: FakeForge) -> None:
    before = snapshot([clone, lib])
    result = refused("FOREIGN_PRIMARY", "madt_commit", clone, dir=str(lib), files=["new.py"], title="Add new")
    steps = result.error["next"]
    assert [s["tool"] for s in steps] == ["madt_worktrees", "madt_commit", "madt_finish"]
    path = Path(steps[0]["args"]["path"])
    assert not path.exists() and not str(path).startswith(str(lib) + "/")
    assert steps[0]["args"]["b"] not in local_branches(lib)
    run_steps(steps, clone)
    merged = fake_forge.branch_sha("acme", "lib", "main")
    assert fake_forge.git("acme", "lib", "show", f"{merged}:new.py") == "print('mine')"
    assert "README.md" not in fake_forge.git("acme", "lib", "diff", "--name-only", f"{merged}~1", merged)
    after = snapshot([clone, lib])
    assert after[clone] == before[clone]
    for part in ("head", "index", "status", "content"):  # the owner's checkout is untouched
        assert getattr(after[lib], part) == getattr(before[lib], part), part
    # The same call again proposes another branch and path, never the ones now taken.
    again = refused("FOREIGN_PRIMARY", "madt_commit", clone, dir=str(lib), files=["new.py"], title="Add new")
    assert again.error["next"][0]["args"]["b"] != steps[0]["args"]["b"]
    assert not Path(again.error["next"][0]["args"]["path"]).exists()


def test_carrying_files_onto_a_base_where_they_differ_asks_a_person(clone: Path, lib: Path) -> None:
    run_git(lib, "switch", "-q", "-c", "owners-branch")
    commit_files(lib, {"new.py": "print('owner version')\n"}, "owner's version")
    write_files(lib, {"new.py": "print('mine')\n"})
    result = refused("FOREIGN_PRIMARY", "madt_commit", clone, dir=str(lib), files=["new.py"], title="Add new")
    first = result.error["next"][0]
    assert first["args"]["commit_ish"] == "main"  # new work starts at the default branch, not the owner's
    before = snapshot([lib])
    done = refused("USER_ACTION_REQUIRED", first["tool"], clone, **first["args"])
    assert "new.py" in done.text and done.error["user_action"]
    assert not Path(first["args"]["path"]).exists()
    assert_only_changed(before, snapshot([lib]), set())


def test_a_file_whose_mode_differs_on_the_base_is_not_carried(single_repo: SingleRepo, tmp_path: Path) -> None:
    repo = single_repo.repo
    commit_files(repo, {"run.sh": "echo\n"}, "script")
    run_git(repo, "switch", "-q", "-c", "feat")
    run_git(repo, "switch", "-q", "main")
    (repo / "run.sh").chmod(0o755)
    run_git(repo, "commit", "-q", "-am", "make it executable")
    run_git(repo, "switch", "-q", "feat")  # its run.sh is not executable: copied onto main, it would undo that
    write_files(repo, {"run.sh": "echo changed\n"})
    done = refused("USER_ACTION_REQUIRED", "madt_worktrees", repo, action="add", path=str(tmp_path / "wt"),
                   commit_ish="main", b="topic", carry=["run.sh"])
    assert "run.sh" in done.text and not (tmp_path / "wt").exists()


def test_a_nested_repos_worktree_is_proposed_outside_the_umbrella(tmp_path: Path, hermetic_seal: Path) -> None:
    from topologies import make_repo
    home = make_repo(tmp_path / "home", origin="https://forge.example.test/acme/home.git")
    top = make_repo(tmp_path / "umbrella", origin="https://forge.example.test/acme/umbrella.git")
    child = make_repo(top / "child", origin="https://forge.example.test/acme/child.git")
    write_files(child, {"c.py": "c\n"})
    result = refused("FOREIGN_PRIMARY", "madt_commit", home, dir=str(child), files=["c.py"], title="C")
    path = Path(result.error["next"][0]["args"]["path"])
    assert not str(path).startswith(str(top) + "/"), path


def test_a_switch_of_a_dirty_foreign_worktree_is_refused(foreign_repo: ForeignRepo) -> None:
    f = foreign_repo
    run_git(f.foreign, "branch", "other")
    write_files(f.foreign_worktree, {"README.md": "owner's edit in their worktree\n", "staged.txt": "s\n"})
    run_git(f.foreign_worktree, "add", "staged.txt")
    before = snapshot(f.repos)
    for tool, args in (("madt_switch", {"branch": "other"}), ("madt_pull", {})):
        result = refused("DIRTY_TREE", tool, f.home, dir=str(f.foreign_worktree), **args)
        assert result.error["next"][0]["tool"] == "madt_worktrees"
    assert_only_changed(before, snapshot(f.repos), set())


def test_a_switch_on_a_foreign_primary_is_answered_with_a_worktree_add_that_works(tmp_path: Path,
                                                                                 hermetic_seal: Path) -> None:
    home = make_repo(tmp_path / "home")
    lib = make_pushed_repo(tmp_path)
    run_git(lib, "branch", "release")
    r = call("madt_switch", home, branch="release", dir=str(lib))
    assert r.error and r.error["code"] == "FOREIGN_PRIMARY", r.text
    add = r.error["next"][0]
    done = call(add["tool"], home, **add["args"])
    assert not done.is_error, done.text
    assert run_git(Path(add["args"]["path"]), "branch", "--show-current") == "release"


# --------------------------------------------------------------------------- signals compare working trees

def test_a_signal_naming_another_worktree_of_the_same_repo_is_wrong_repo(linked_worktree: Any,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    main, wt = linked_worktree.main, linked_worktree.worktree
    write_files(wt, {"w.py": "w\n"})
    monkeypatch.setenv("MADTEA_CALLER_REPO", str(wt))
    before = snapshot([main, wt])
    result = refused("WRONG_REPO", "madt_commit", main, files=["w.py"], title="W")
    first = (result.error["choices"] or [result.error["next"]])[0]
    assert first[0] == {"tool": "madt_commit", "args": {"files": ["w.py"], "title": "W", "dir": str(wt)}}
    assert_only_changed(before, snapshot([main, wt]), set())
    ok(first[0]["tool"], main, **first[0]["args"])
    # dir= foreignness still compares repositories: the worktree is not foreign
    assert run_git(wt, "log", "-1", "--format=%s") == "W"


# --------------------------------------------------------------------------- finish needs a title and real work

def test_a_finish_that_would_open_a_pull_request_needs_a_title(clone: Path, fake_forge: FakeForge) -> None:
    run_git(clone, "switch", "-q", "-c", "feat")
    commit_files(clone, {"a.py": "a\n"}, "Add a")
    result = refused("BAD_ARGUMENT", "madt_finish", clone)
    [step] = result.error["next"]
    assert step["args"]["title"] == "Add a"  # proposed in the open, never used silently
    assert fake_forge.branch_sha("acme", "web", "feat") is None  # nothing was pushed
    ok(step["tool"], clone, **step["args"])
    [pr] = [i for i in fake_forge.repo("acme", "web").issues.values() if i.pull is not None]
    assert pr.title == "Add a" and pr.pull.merged


def test_declared_files_that_were_never_committed_are_not_a_finished_success(clone: Path) -> None:
    run_git(clone, "switch", "-q", "-c", "feat")
    refused("NOTHING_TO_COMMIT", "madt_finish", clone, files=["README.md"], title="Nothing here")


# --------------------------------------------------------------------------- the hook's record never crosses sessions

def _as_process(monkeypatch: pytest.MonkeyPatch, ancestors: list[tuple[int, int, str]]) -> None:
    monkeypatch.setattr(madtea.os.path, "isdir",
                        lambda p, _real=madtea.os.path.isdir: True if p == "/proc/self" else _real(p))
    monkeypatch.setattr(guard, "_ancestors", lambda _pid: ancestors)


def test_a_record_of_a_process_above_the_servers_agent_is_no_signal(monkeypatch: pytest.MonkeyPatch,
                                                                    single_repo: SingleRepo) -> None:
    shared = (300, 30, "tmux: server")  # a long-lived process that many sessions run under
    _as_process(monkeypatch, [(101, 11, "sh"), shared])  # a hook run by it
    guard.record_caller_signal(str(single_repo.repo), "session-a")
    _as_process(monkeypatch, [(200, 20, "claude"), shared])  # another session's server, under its own agent
    assert guard.caller_cwd_signal() is None
    _as_process(monkeypatch, [(101, 11, "sh"), shared])  # a server the shared process started itself
    assert guard.caller_cwd_signal() == str(single_repo.repo)


def test_a_record_two_sessions_wrote_is_no_signal(monkeypatch: pytest.MonkeyPatch, single_repo: SingleRepo) -> None:
    _as_process(monkeypatch, [(400, 40, "ide-host")])
    guard.record_caller_signal(str(single_repo.repo), "session-a")
    guard.record_caller_signal(str(single_repo.repo), "session-a")
    assert guard.caller_cwd_signal() == str(single_repo.repo)
    guard.record_caller_signal(str(single_repo.repo), "session-b")
    assert guard.caller_cwd_signal() is None  # which of the two is this server's cannot be told


def test_the_commit_and_finish_chains_work_from_a_detached_head(clone: Path, fake_forge: FakeForge) -> None:
    run_git(clone, "switch", "-q", "--detach", "HEAD")
    write_files(clone, {"d.py": "d\n"})
    result = refused("DETACHED_HEAD", "madt_finish", clone, files=["d.py"], title="Add d")
    run_steps(list(result.error["next"]), clone)
    merged = fake_forge.branch_sha("acme", "web", "main")
    assert fake_forge.git("acme", "web", "show", f"{merged}:d.py") == "d"
    assert run_git(clone, "branch", "--show-current") == "main"
    run_git(clone, "switch", "-q", "--detach", "HEAD")
    write_files(clone, {"e.py": "e\n"})
    result = refused("DETACHED_HEAD", "madt_commit", clone, files=["e.py"], title="Add e")
    done = run_steps(list(result.error["next"]), clone)
    assert done.data["branch"] == run_git(clone, "branch", "--show-current") != "main"


def test_the_cli_renders_the_foreign_primary_steps_as_commands_that_parse(tmp_path: Path,
                                                                          hermetic_seal: Path) -> None:
    from topologies import make_repo
    home = make_repo(tmp_path / "home", origin="https://forge.example.test/acme/home.git")
    lib = make_repo(tmp_path / "lib", origin="https://forge.example.test/acme/lib.git")
    write_files(lib, {"new.py": "mine\n"})
    result = madtea.run("madt_commit", {"dir": str(lib), "files": ["new.py"], "title": "Add new"},
                        madtea.Context("cli", home))
    assert result.error["code"] == "FOREIGN_PRIMARY"
    import shlex
    parser = madtea.build_parser()
    for step in result.error["next"]:
        words = shlex.split(madtea.cli_render(step))
        ns = parser.parse_args(words[1:])  # argparse exits on anything it cannot take
        assert ns is not None
    add = shlex.split(madtea.cli_render(result.error["next"][0]))
    assert add[-1] != "main" or "--carry" not in add  # no positional after a list-valued option
