"""Review of the local-git surface: proofs, unsaved work, argument refusals and the refusal chain."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import gitops
import guard
import madtea
from topologies import commit_files, make_bare, make_repo, run_git


def _mcp(tool: str, args: dict[str, Any], launch: Path) -> madtea.Result:
    return madtea.run(tool, args, madtea.Context("mcp", launch))


def _pushed_repo(tmp_path: Path) -> Path:
    bare = make_bare(tmp_path / "origin.git")
    repo = make_repo(tmp_path / "web", origin=str(bare))
    run_git(repo, "push", "-q", "origin", "main")
    return repo


# --------------------------------------------------------------------------- containment

def test_a_tag_named_like_the_branch_does_not_prove_the_branch_contained(tmp_path: Path, hermetic_seal: Path) -> None:
    repo = _pushed_repo(tmp_path)
    run_git(repo, "switch", "-q", "-c", "v1")
    work = commit_files(repo, {"x.txt": "unmerged\n"}, "unmerged work")
    run_git(repo, "switch", "-q", "main")
    run_git(repo, "tag", "v1", "main")   # "v1" now also names a commit that main holds
    result = _mcp("madt_branch_delete", {"name": "v1", "dir": str(repo)}, repo)
    assert result.error and result.error["code"] == "NOT_CONTAINED", result.text
    assert run_git(repo, "rev-parse", "refs/heads/v1") == work
    pruned = _mcp("madt_prune", {"dir": str(repo)}, repo)
    assert not pruned.is_error and "v1" in pruned.data["kept"], pruned.text
    assert run_git(repo, "rev-parse", "refs/heads/v1") == work


def test_containment_counts_the_default_branchs_own_upstream(tmp_path: Path, hermetic_seal: Path) -> None:
    repo = _pushed_repo(tmp_path)
    upstream = make_bare(tmp_path / "upstream.git")
    run_git(repo, "remote", "add", "upstream", str(upstream))
    run_git(repo, "switch", "-q", "-c", "feat")
    commit_files(repo, {"f.txt": "f\n"}, "feature")
    run_git(repo, "push", "-q", "upstream", "feat:main")
    run_git(repo, "fetch", "-q", "upstream")
    run_git(repo, "switch", "-q", "main")
    run_git(repo, "branch", "-q", "--set-upstream-to=upstream/main", "main")
    result = _mcp("madt_branch_delete", {"name": "feat", "dir": str(repo)}, repo)
    assert not result.is_error, result.text
    assert "nothing left to verify" in result.text


# --------------------------------------------------------------------------- worktree remove

def test_worktree_remove_refuses_a_detached_worktrees_own_commits(tmp_path: Path, hermetic_seal: Path) -> None:
    repo = _pushed_repo(tmp_path)
    wt = tmp_path / "wt"
    added = _mcp("madt_worktrees", {"action": "add", "path": str(wt), "dir": str(repo)}, repo)
    assert not added.is_error, added.text
    lone = commit_files(wt, {"y.txt": "only here\n"}, "work on a detached HEAD")
    result = _mcp("madt_worktrees", {"action": "remove", "path": str(wt), "dir": str(repo)}, repo)
    assert result.error and result.error["code"] == "UNSAVED_WORK", result.text
    assert "detached HEAD" in result.text and wt.exists()
    assert run_git(wt, "rev-parse", "HEAD") == lone


def test_worktree_remove_of_a_clean_detached_worktree_goes_ahead(tmp_path: Path, hermetic_seal: Path) -> None:
    repo = _pushed_repo(tmp_path)
    wt = tmp_path / "wt"
    assert not _mcp("madt_worktrees", {"action": "add", "path": str(wt), "dir": str(repo)}, repo).is_error
    result = _mcp("madt_worktrees", {"action": "remove", "path": str(wt), "dir": str(repo)}, repo)
    assert not result.is_error, result.text
    assert f"web @ {repo} (main)" in result.text and not wt.exists()


# --------------------------------------------------------------------------- argument refusals

def test_an_abbreviated_lease_is_answered_with_the_full_sha(tmp_path: Path, hermetic_seal: Path) -> None:
    repo = _pushed_repo(tmp_path)
    full = run_git(repo, "rev-parse", "origin/main")
    result = _mcp("madt_push", {"branch": "main", "force_with_lease": full[:7], "dir": str(repo)}, repo)
    assert result.error and result.error["code"] == "BAD_ARGUMENT", result.text
    assert result.error["next"] == [{"tool": "madt_push",
                                     "args": {"branch": "main", "force_with_lease": full, "dir": str(repo)}}]
    named = _mcp("madt_push", {"branch": "main", "force_with_lease": "origin/main", "dir": str(repo)}, repo)
    assert named.error and named.error["code"] == "BAD_ARGUMENT", named.text
    look, retry = named.error["next"]
    assert look == {"tool": "madt_log", "args": {"dir": str(repo), "ref": "origin/main"}}
    assert guard.is_placeholder(retry["args"]["force_with_lease"]) and not named.error["user_action"]
    assert "INTERNAL" not in named.text


def test_a_blank_commit_title_is_a_bad_argument(tmp_path: Path, hermetic_seal: Path) -> None:
    repo = _pushed_repo(tmp_path)
    run_git(repo, "switch", "-q", "-c", "feat")
    (repo / "z.txt").write_text("z\n", encoding="utf-8")
    result = _mcp("madt_commit", {"files": ["z.txt"], "title": "  ", "dir": str(repo)}, repo)
    assert result.error and result.error["code"] == "BAD_ARGUMENT", result.text
    assert "title" in result.text
    finish = _mcp("madt_finish", {"files": ["z.txt"], "title": " ", "dir": str(repo)}, repo)
    assert finish.error and finish.error["code"] == "BAD_ARGUMENT", finish.text
    assert run_git(repo, "status", "--porcelain") == "?? z.txt"


# --------------------------------------------------------------------------- paths

def test_a_padded_or_relative_worktree_path_is_refused_naming_path_not_dir(tmp_path: Path, hermetic_seal: Path) -> None:
    repo = _pushed_repo(tmp_path)
    wt = str(tmp_path / "wt")
    padded = _mcp("madt_worktrees", {"action": "add", "path": f" {wt} ", "b": "feat", "dir": str(repo)}, repo)
    assert padded.error and padded.error["code"] == "BAD_ARGUMENT"
    assert "path" in padded.text and "dir" not in padded.text.split(":", 1)[1].split(".")[0]
    assert padded.error["next"] == [{"tool": "madt_worktrees",
                                     "args": {"action": "add", "path": wt, "b": "feat", "dir": str(repo)}}]
    relative = _mcp("madt_worktrees", {"action": "add", "path": "wt", "dir": str(repo)}, repo)
    assert relative.error and "path 'wt' is relative" in relative.text
    assert relative.error["next"][0]["args"]["path"] == "<the absolute path of the worktree>"


def test_the_cli_takes_relative_paths_from_the_shell_directory(tmp_path: Path, hermetic_seal: Path,
                                                             monkeypatch, capsys) -> None:
    repo = _pushed_repo(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert madtea.main(["worktree", "add", "--dir", "web", "web-feat", "-b", "feat"]) == 0, capsys.readouterr()
    assert (tmp_path / "web-feat" / ".git").is_file()
    assert run_git(tmp_path / "web-feat", "branch", "--show-current") == "feat"
    assert madtea.main(["status", "--dir", "web-feat"]) == 0
    assert "(feat)" in capsys.readouterr().out


def test_an_unreadable_body_file_is_a_refusal_not_a_traceback(tmp_path: Path, hermetic_seal: Path, capsys) -> None:
    code = madtea.main(["issue", "create", "--title", "t", "--body-file", str(tmp_path / "missing.md"),
                        "--repo", "acme/web"])
    err = capsys.readouterr().err
    assert code == 1 and "BAD_ARGUMENT" in err and "Traceback" not in err and "missing.md" in err


# --------------------------------------------------------------------------- the refusal chain

def _refusal(t: guard.Target) -> guard.Refusal:
    try:
        guard.check_local(t)
    except guard.Refusal as refusal:
        return refusal
    raise AssertionError("the call was not refused")


def _facts(path: str, linked: bool = False) -> guard.RepoFacts:
    top = Path(path)
    common = Path("/x/lib/.git") if path.startswith("/x/") else top / ".git"
    git_dir = common / "worktrees" / top.name if linked else common
    return guard.RepoFacts(top, git_dir, common, gitops.parse_remote_url(f"https://h.test/acme/{top.name}.git"))


def _target(tool: str, args: dict[str, Any], at: guard.RepoFacts, branch: str = "feat/x") -> guard.Target:
    return guard.Target(tool, None, args, True, "mcp", _facts("/w/web"), at, True,
                        state=guard.RepoState(branch, "main"))


def test_finish_branch_form_on_the_default_branch_forwards_to_a_new_branch_not_to_itself() -> None:
    home = _facts("/w/web")
    r = _refusal(_target("madt_finish", {"branch": "main", "title": "Fix it", "dir": "/w/web"}, home, branch="main"))
    assert r.code == "DEFAULT_BRANCH" and "branch=main" in r.message
    create, finish = r.next
    assert create == {"tool": "madt_branch_create", "args": {"dir": "/w/web", "name": "work/fix-it",
                                                             "start_point": "main"}}
    assert finish == {"tool": "madt_finish", "args": {"branch": "work/fix-it", "title": "Fix it", "dir": "/w/web"}}


def test_a_switch_on_a_foreign_primary_forwards_to_a_worktree_of_that_existing_branch() -> None:
    primary = _facts("/x/lib")
    r = _refusal(_target("madt_switch", {"branch": "release", "dir": "/x/lib"}, primary, branch="main"))
    assert r.code == "FOREIGN_PRIMARY"
    # a switch asked for a checkout of that branch, nothing to finish: the worktree is the whole way on
    (add,) = r.next
    assert add["args"] == {"action": "add", "dir": "/x/lib", "path": "/x/lib-release", "commit_ish": "release"}
    current = _refusal(_target("madt_switch", {"branch": "main", "dir": "/x/lib"}, primary, branch="main"))
    # main is checked out there: a new branch starts from it instead
    assert current.next[0]["args"]["b"] == "work/contribution" and current.next[0]["args"]["commit_ish"] == "main"
    pull = _refusal(_target("madt_pull", {"branch": "main", "dir": "/x/lib"}, primary, branch="main"))
    assert pull.next[0]["args"]["b"] == "work/contribution"
    # the pull the caller asked for, run in the new worktree
    assert pull.next[1] == {"tool": "madt_pull", "args": {"dir": "/x/lib-work-contribution", "branch": "main"}}


def test_finish_on_a_foreign_worktree_commits_the_declared_files_then_finishes_with_every_argument() -> None:
    wt = _facts("/x/lib-fix", linked=True)
    args = {"files": ["a.py"], "title": "Fix", "body": "why", "style": "squash", "dir": "/x/lib-fix"}
    r = _refusal(_target("madt_finish", args, wt, branch="fix"))
    assert r.code == "FOREIGN_TARGET"
    commit, finish = r.next
    assert commit == {"tool": "madt_commit", "args": {"dir": "/x/lib-fix", "files": ["a.py"], "title": "Fix",
                                                      "body": "why"}}
    assert finish == {"tool": "madt_finish", "args": {"title": "Fix", "body": "why", "style": "squash",
                                                      "dir": "/x/lib-fix", "branch": "fix"}}


def test_a_switch_on_a_foreign_primary_is_answered_with_a_worktree_add_that_works(tmp_path: Path,
                                                                                 hermetic_seal: Path) -> None:
    home = make_repo(tmp_path / "home")
    lib = _pushed_repo(tmp_path)
    run_git(lib, "branch", "release")
    r = _mcp("madt_switch", {"branch": "release", "dir": str(lib)}, home)
    assert r.error and r.error["code"] == "FOREIGN_PRIMARY", r.text
    add = r.error["next"][0]
    done = _mcp(add["tool"], add["args"], home)
    assert not done.is_error, done.text
    assert run_git(Path(add["args"]["path"]), "branch", "--show-current") == "release"


# --------------------------------------------------------------------------- paths, roots and the identity echo

def test_an_absolute_file_spelt_through_the_symlinked_dir_is_inside_the_repo(tmp_path: Path,
                                                                           hermetic_seal: Path) -> None:
    real = make_repo(tmp_path / "real" / "web")
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    run_git(real, "switch", "-q", "-c", "feat")
    (real / "a.py").write_text("a\n", encoding="utf-8")
    result = _mcp("madt_commit", {"files": [str(link / "a.py")], "title": "Add a", "dir": str(link)}, real)
    assert not result.is_error, result.text
    assert result.data["files"] == ["a.py"] and f"web @ {real} (feat)" in result.text


def test_switch_and_worktree_add_echo_the_identity(tmp_path: Path, hermetic_seal: Path) -> None:
    repo = _pushed_repo(tmp_path)
    run_git(repo, "branch", "feat")
    switched = _mcp("madt_switch", {"branch": "feat", "dir": str(repo)}, repo)
    assert switched.text == f"Switched web @ {repo} (feat) from main to feat."
    added = _mcp("madt_worktrees", {"action": "add", "path": str(tmp_path / "wt"), "dir": str(repo)}, repo)
    assert added.text == f"Added worktree {tmp_path / 'wt'} on a detached HEAD for web @ {repo} (feat)."


@pytest.mark.anyio
async def test_dir_null_is_no_dir_and_still_meets_the_roots_signal(tmp_path: Path, hermetic_seal: Path) -> None:
    pytest.importorskip("mcp")
    from mcp.client import Client
    from mcp.types import ListRootsResult, Root

    web = make_repo(tmp_path / "web", origin="https://forge.example.test/acme/web.git")
    api = make_repo(tmp_path / "api", origin="https://forge.example.test/acme/api.git")
    run_git(web, "switch", "-q", "-c", "feat")
    (web / "b.txt").write_text("b\n", encoding="utf-8")

    async def roots(context: Any) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=api.as_uri(), name="api")])

    async with Client(madtea.build_server(web), mode="legacy", list_roots_callback=roots) as client:
        result = await client.call_tool("madt_commit", {"title": "t", "files": ["b.txt"], "dir": None})
    assert result.structured_content["code"] == "WRONG_REPO", result.content[0].text
    assert run_git(web, "status", "--porcelain") == "?? b.txt"


def test_a_value_of_the_wrong_shape_is_refused_with_a_way_on() -> None:
    result = madtea.run("madt_log", {"limit": "lots"}, madtea.Context("mcp", Path("/")))
    assert result.error and result.error["code"] == "BAD_ARGUMENT"
    assert result.error["next"] == [{"tool": "madt_log", "args": {"limit": "<a whole number of at least 1 (and below 2^63)>"}}]
    assert not result.error["user_action"]


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
