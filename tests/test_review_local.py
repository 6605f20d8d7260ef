"""Review of the local-git surface: proofs, unsaved work, argument refusals and the refusal chain."""
from __future__ import annotations

from pathlib import Path
from typing import Any

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
    assert named.error and named.error["code"] == "BAD_ARGUMENT" and named.error["user_action"], named.text
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
    assert "with path set to the absolute path of the worktree" in relative.error["user_action"]


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
