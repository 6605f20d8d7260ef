"""Which repository git acts on: each target is resolved once by git and every later git call is pinned to
it, and the facts that decide a write (where a push goes, origin's default branch) come from git.

Each test builds a topology with real git in which git, left to rediscover the repository from a
directory, would act on another one (``core.worktree``, a bare repository inside a work tree, a push
address rewritten by config, a default branch that is not ``main`` and that git has no record of), snapshots
every repository and remote with git before and after the calls, and asserts that only the intended
repository changed and that the result says what git did.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import madtea
from helpers import call, cli, ok, refused, run_steps
from topologies import (assert_only_changed, commit_files, https_origin, make_bare, make_repo, run_git, snapshot,
                        write_files)


def _pushed(base: Path, name: str, branch: str = "main") -> tuple[Path, Path]:
    """A repo ``base/name`` with origin ``base/remotes/acme/name.git`` (a bare repo) holding its *branch*."""
    origin = make_bare(base / "remotes" / "acme" / f"{name}.git")
    repo = make_repo(base / name, origin=str(origin), branch=branch)
    run_git(repo, "push", "-q", "origin", branch)
    return repo, origin


# --------------------------------------------------------------------------- core.worktree into another repository

@pytest.fixture
def worktree_elsewhere(tmp_path: Path, hermetic_seal: Path) -> dict[str, Path]:
    """C's core.worktree is D, another repository's work tree. D holds its owner's uncommitted edit, and
    both have a branch feat ahead of their origins."""
    d, d_origin = _pushed(tmp_path, "d")
    c, c_origin = _pushed(tmp_path, "c")
    for repo in (c, d):
        run_git(repo, "switch", "-q", "-c", "feat")
        commit_files(repo, {f"{repo.name}.txt": "work\n"}, f"work in {repo.name}")
        run_git(repo, "switch", "-q", "main")
    (d / "README.md").write_text("D's owner's uncommitted edit\n", encoding="utf-8")
    run_git(c, "config", "core.worktree", str(d))
    return {"c": c, "d": d, "c_origin": c_origin, "d_origin": d_origin, "outside": tmp_path}


_C_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("madt_branch_create", {"name": "zz"}),
    ("madt_push", {"branch": "feat"}),
    ("madt_worktrees", {"action": "add", "path": "{outside}/wt", "b": "wt"}),
    ("madt_commit", {"files": ["README.md"], "title": "t", "allow_default_branch": True}),
    ("madt_switch", {"branch": "feat"}),
    ("madt_status", {}),
]


@pytest.mark.parametrize(("tool", "args"), _C_CALLS, ids=[f"{t}-{a.get('action', '')}" for t, a in _C_CALLS])
def test_a_work_tree_that_is_another_repositorys_is_refused_and_nothing_changes(
        worktree_elsewhere: dict[str, Path], tool: str, args: dict[str, Any]) -> None:
    w = worktree_elsewhere
    args = {k: v.format(outside=w["outside"]) if isinstance(v, str) else v for k, v in args.items()}
    before = snapshot([w["c"], w["d"], w["c_origin"], w["d_origin"]])
    for where, extra in ((w["outside"], {"dir": str(w["c"])}), (w["c"], {})):  # dir=C, and launched in C
        result = refused("USER_ACTION_REQUIRED", tool, where, **args, **extra)
        assert "core.worktree" in result.text and str(w["d"]) in result.text, result.text
        assert not result.error["next"] and not result.error["choices"]  # nothing leads into D
    assert_only_changed(before, snapshot([w["c"], w["d"], w["c_origin"], w["d_origin"]]), set())
    assert not (w["outside"] / "wt").exists()


def test_the_cli_refuses_a_work_tree_that_is_another_repositorys(worktree_elsewhere: dict[str, Path],
                                                                monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    w = worktree_elsewhere
    before = snapshot([w["c"], w["d"], w["c_origin"], w["d_origin"]])
    for argv in (["branch", "create", "zz"], ["push", "feat"], ["switch", "feat"],
                 ["commit", "README.md", "--title", "t", "--allow-default-branch"]):
        code, out, err = cli(monkeypatch, capsys, w["c"], *argv)
        text = err + out
        assert code != 0 and "core.worktree" in text, (argv, text)
        code, out, err = cli(monkeypatch, capsys, w["outside"], *argv, "--dir", str(w["c"]))
        text = err + out
        assert code != 0 and "core.worktree" in text, (argv, text)
    assert_only_changed(before, snapshot([w["c"], w["d"], w["c_origin"], w["d_origin"]]), set())


def test_a_work_tree_of_its_own_elsewhere_is_where_the_commit_comes_from(tmp_path: Path, hermetic_seal: Path) -> None:
    """core.worktree naming a folder no other repository owns is pinnable: git reads that folder, and only
    that repository changes."""
    other, other_origin = _pushed(tmp_path, "other")
    store = make_repo(tmp_path / "store", files={"a.txt": "a\n"})
    tree = tmp_path / "tree"
    tree.mkdir()
    run_git(store, "config", "core.worktree", str(tree))
    (tree / "a.txt").write_text("a\n", encoding="utf-8")
    run_git(store, "switch", "-q", "-c", "feat")
    write_files(tree, {"new.txt": "from the work tree\n"})
    write_files(store, {"new.txt": "a decoy beside the git dir\n"})
    before = snapshot([other, other_origin])
    result = ok("madt_commit", store, files=["new.txt"], title="Add new")  # launched beside the git dir
    sha = result.data["sha"]
    assert run_git(store, "--git-dir", str(store / ".git"), "rev-parse", "refs/heads/feat") == sha
    assert run_git(store, "--git-dir", str(store / ".git"), "show", f"{sha}:new.txt") == "from the work tree"
    assert str(tree) in result.text
    assert_only_changed(before, snapshot([other, other_origin]), set())


# --------------------------------------------------------------------------- a name hint leads to the hinted repository

@pytest.fixture
def umbrella_with_child(tmp_path: Path, hermetic_seal: Path) -> tuple[Path, Path]:
    """Umbrella acme/u holding a nested clone acme/child; both on feat with an uncommitted f.txt."""
    u = make_repo(tmp_path / "u", origin=https_origin("acme", "u"))
    child = make_repo(u / "child", origin=https_origin("acme", "child"))
    for repo in (u, child):
        run_git(repo, "switch", "-q", "-c", "feat")
        write_files(repo, {"f.txt": f"{repo.name}'s change\n"})
    return u, child


def test_a_name_hint_leads_to_the_checkout_of_the_hinted_repository(umbrella_with_child: tuple[Path, Path],
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    u, child = umbrella_with_child
    monkeypatch.setenv("MADTEA_CALLER_REPO", "acme/child")
    before = snapshot([u, child])
    result = refused("WRONG_REPO", "madt_commit", u, files=["f.txt"], title="Change f")
    ways = result.error["choices"] or [result.error["next"]]
    dirs = [step["args"].get("dir") for way in ways for step in way]
    assert dirs == [str(child)], result.error  # never the umbrella the hint said was wrong
    assert_only_changed(before, snapshot([u, child]), set())
    # The hinted checkout is a foreign main checkout from the umbrella: its own refusal continues into a
    # worktree of the child, where the declared file is committed; the umbrella is never a step.
    foreign = refused("FOREIGN_PRIMARY", ways[0][0]["tool"], u, **ways[0][0]["args"])
    add, commit, finish = foreign.error["next"]
    assert {add["args"]["dir"], finish["args"]["dir"]} == {str(child)}
    done = run_steps([add, commit], u)
    assert "acme/child" in done.text
    assert run_git(child, "rev-parse", f"refs/heads/{add['args']['b']}") == done.data["sha"]
    assert run_git(child, "show", f"{done.data['sha']}:f.txt") == "child's change"
    assert_only_changed(before, snapshot([u, child]), {child})


def test_a_name_hint_with_no_checkout_in_sight_asks_for_the_path(tmp_path: Path, hermetic_seal: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    fork = make_repo(tmp_path / "r", origin=https_origin("me", "r"))
    run_git(fork, "remote", "add", "upstream", https_origin("acme", "r"))
    run_git(fork, "switch", "-q", "-c", "feat")
    write_files(fork, {"f.txt": "f\n"})
    monkeypatch.setenv("MADTEA_CALLER_REPO", "acme/r")
    before = snapshot([fork])
    result = refused("WRONG_REPO", "madt_commit", fork, files=["f.txt"], title="Change f")
    [step] = result.error["next"]
    assert step["args"]["dir"] != str(fork) and "acme/r" in step["args"]["dir"]  # a placeholder naming the repo
    assert_only_changed(before, snapshot([fork]), set())


@pytest.mark.parametrize("hint", ["plain", "u/.git", "u/.git/refs"])
def test_a_hint_that_names_no_repository_is_refused_as_such(umbrella_with_child: tuple[Path, Path], hint: str,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    u, child = umbrella_with_child
    (u.parent / "plain").mkdir()
    monkeypatch.setenv("MADTEA_CALLER_REPO", str(u.parent / hint))
    before = snapshot([u, child])
    for tool, args in (("madt_commit", {"files": ["f.txt"], "title": "t", "dir": None}), ("madt_status", {})):
        result = refused("BAD_ARGUMENT", tool, child, **args)
        assert "MADTEA_CALLER_REPO" in result.text and str(u.parent / hint) in result.text
    assert_only_changed(before, snapshot([u, child]), set())


def test_a_root_naming_a_git_dir_is_refused_as_such(umbrella_with_child: tuple[Path, Path]) -> None:
    u, child = umbrella_with_child
    before = snapshot([u, child])
    ctx = madtea.Context("mcp", child, [(u / ".git").as_uri()])
    result = madtea.run("madt_commit", {"files": ["f.txt"], "title": "t"}, ctx)
    assert result.is_error and result.error["code"] == "BAD_ARGUMENT", result.text
    assert "git directory" in result.text and "workspace root" in result.text
    assert_only_changed(before, snapshot([u, child]), set())


# --------------------------------------------------------------------------- a bare repository is itself

def test_a_server_launched_in_a_bare_repository_inside_a_work_tree_acts_on_neither(
        tmp_path: Path, hermetic_seal: Path) -> None:
    u = make_repo(tmp_path / "u", origin=https_origin("acme", "u"))
    run_git(u, "switch", "-q", "-c", "feat")
    store = make_bare(u / "store.git")
    write_files(u, {"f.txt": "f\n"})
    before = snapshot([u, store])
    for tool, args in (("madt_commit", {"files": ["f.txt"], "title": "t"}), ("madt_add", {"files": ["f.txt"]}),
                       ("madt_status", {})):
        result = refused("BAD_ARGUMENT", tool, store, **args)
        assert "bare repository" in result.text and str(store) in result.text, result.text
        result = refused("BAD_ARGUMENT", tool, u, dir=str(store), **args)
        assert "bare repository" in result.text
    assert_only_changed(before, snapshot([u, store]), set())


def test_a_bare_repository_on_its_own_is_not_outside_any_repository(tmp_path: Path, hermetic_seal: Path) -> None:
    bare = make_bare(tmp_path / "alone.git")
    result = refused("BAD_ARGUMENT", "madt_log", bare)
    assert "bare repository" in result.text and "outside any git repository" not in result.text


# --------------------------------------------------------------------------- origin's default branch, from git

def test_a_default_branch_git_has_no_record_of_keeps_a_local_act_closed(tmp_path: Path, hermetic_seal: Path) -> None:
    """A local act never asks the remote: with no origin/HEAD, trunk may be the default, so the rule stays closed."""
    origin = make_bare(tmp_path / "origin.git")
    run_git(origin, "symbolic-ref", "HEAD", "refs/heads/trunk")
    repo = make_repo(tmp_path / "r", origin=str(origin), branch="trunk")
    run_git(repo, "push", "-q", "-u", "origin", "trunk")  # no origin/HEAD: only a clone records one
    assert run_git(repo, "symbolic-ref", "-q", "refs/remotes/origin/HEAD", check=False) == ""
    write_files(repo, {"f.txt": "f\n"})
    before = snapshot([repo, origin])
    result = refused("DEFAULT_BRANCH", "madt_commit", repo, files=["f.txt"], title="Add f")
    assert "may be its default branch" in result.text
    assert_only_changed(before, snapshot([repo, origin]), set())
    # The remote gone: the same answer, since the remote was never asked.
    run_git(repo, "remote", "set-url", "origin", str(tmp_path / "gone.git"))
    before = snapshot([repo, origin])
    result = refused("DEFAULT_BRANCH", "madt_commit", repo, files=["f.txt"], title="Add f")
    assert "may be its default branch" in result.text
    assert_only_changed(before, snapshot([repo, origin]), set())
    # A feature branch is not the default whatever the remote says.
    run_git(repo, "switch", "-q", "-c", "feat")
    done = ok("madt_commit", repo, files=["f.txt"], title="Add f")
    assert done.data["branch"] == "feat" and done.data["sha"] == run_git(repo, "rev-parse", "refs/heads/feat")


# --------------------------------------------------------------------------- where a push really goes

@pytest.mark.parametrize("rewrite", ["insteadOf", "pushInsteadOf", "pushurl"])
def test_a_push_that_git_would_send_to_another_repository_is_refused(tmp_path: Path, hermetic_seal: Path,
                                                                     rewrite: str) -> None:
    repo, origin = _pushed(tmp_path, "r")
    other = make_bare(tmp_path / "remotes" / "evil" / "other.git")
    if rewrite == "pushurl":
        run_git(repo, "config", "remote.origin.pushurl", str(other))
    else:
        run_git(repo, "config", f"url.{other}.{rewrite}", str(origin))
    run_git(repo, "switch", "-q", "-c", "feat")
    commit_files(repo, {"f.txt": "f\n"}, "f")
    before = snapshot([repo, origin, other])
    result = refused("USER_ACTION_REQUIRED", "madt_push", repo, branch="feat")
    assert "nothing was pushed" in result.text
    if rewrite == "insteadOf":  # the fetch address is rewritten too: a pull would bring in the other's commits
        run_git(repo, "switch", "-q", "main")
        result = refused("USER_ACTION_REQUIRED", "madt_pull", repo, branch="main")
        assert "nothing was pulled" in result.text
        run_git(repo, "switch", "-q", "feat")
    assert_only_changed(before, snapshot([repo, origin, other]), set())


def test_a_push_address_that_names_another_forge_repository_is_refused(tmp_path: Path, hermetic_seal: Path) -> None:
    repo = make_repo(tmp_path / "r", origin=https_origin("acme", "r"))
    run_git(repo, "config", "remote.origin.pushurl", https_origin("acme", "other"))
    run_git(repo, "switch", "-q", "-c", "feat")
    commit_files(repo, {"f.txt": "f\n"}, "f")
    before = snapshot([repo])
    result = refused("USER_ACTION_REQUIRED", "madt_push", repo, branch="feat")
    assert "acme/other" in result.text and "acme/r" in result.text
    assert_only_changed(before, snapshot([repo]), set())


def test_a_push_to_where_origin_names_says_so(tmp_path: Path, hermetic_seal: Path) -> None:
    repo, origin = _pushed(tmp_path, "r")
    run_git(repo, "switch", "-q", "-c", "feat")
    sha = commit_files(repo, {"f.txt": "f\n"}, "f")
    before = snapshot([repo, origin])
    result = ok("madt_push", repo, branch="feat")
    assert run_git(origin, "rev-parse", "refs/heads/feat") == sha and sha[:9] in result.text
    assert_only_changed(before, snapshot([repo, origin]), {repo, origin})
    assert call("madt_status", repo).data["branch"] == "feat"


# --------------------------------------------------------------------------- paths a call names inside a repository

def test_dir_naming_a_folder_inside_the_repository_asks_which_files_are_meant(tmp_path: Path,
                                                                              hermetic_seal: Path) -> None:
    repo = make_repo(tmp_path / "r", files={"setup.py": "top\n", "pkg/setup.py": "pkg\n"})
    run_git(repo, "switch", "-q", "-c", "feat")
    write_files(repo, {"setup.py": "top changed\n", "pkg/setup.py": "pkg changed\n"})
    before = snapshot([repo])
    result = refused("BAD_ARGUMENT", "madt_commit", repo, dir=str(repo / "pkg"), files=["setup.py"], title="Bump")
    under, top = result.error["choices"]
    assert [under[0]["args"]["files"], top[0]["args"]["files"]] == [["pkg/setup.py"], ["setup.py"]]
    assert {under[0]["args"]["dir"], top[0]["args"]["dir"]} == {str(repo)}
    assert_only_changed(before, snapshot([repo]), set())
    done = run_steps(under, repo)
    assert run_git(repo, "show", "--name-only", "--format=", done.data["sha"]) == "pkg/setup.py"
    assert run_git(repo, "status", "--porcelain") == "M setup.py"


def test_a_worktree_inside_another_repositorys_working_tree_is_refused(tmp_path: Path, hermetic_seal: Path) -> None:
    repo, origin = _pushed(tmp_path, "r")
    other = make_repo(tmp_path / "other")
    before = snapshot([repo, other, origin])
    for path in (other / "wt", other / ".git" / "wt"):
        result = refused("BAD_ARGUMENT", "madt_worktrees", repo, action="add", path=str(path), b="feat")
        assert str(other) in result.text and not path.exists()
    assert_only_changed(before, snapshot([repo, other, origin]), set())
    [step] = result.error["next"]
    assert not step["args"]["path"].startswith(str(other) + "/")
    done = ok(step["tool"], repo, **step["args"])
    assert Path(done.data["path"]).is_dir() and run_git(Path(done.data["path"]), "branch", "--show-current") == "feat"
    assert_only_changed(before, snapshot([repo, other, origin]), {repo})


def test_a_file_outside_the_sparse_checkout_gets_a_way_on_an_agent_can_run(tmp_path: Path,
                                                                           hermetic_seal: Path) -> None:
    import subprocess

    repo = make_repo(tmp_path / "r", files={"a/x.txt": "x\n", "b/y.txt": "y\n"})
    run_git(repo, "switch", "-q", "-c", "feat")
    run_git(repo, "sparse-checkout", "set", "a")
    write_files(repo, {"a/x.txt": "x changed\n", "b/new.txt": "new\n"})
    result = refused("OUTSIDE_SPARSE_CHECKOUT", "madt_commit", repo, files=["a/x.txt", "b/new.txt"], title="Add")
    assert "b/new.txt" in result.text and "nothing was committed" in result.text
    widen, without = result.error["choices"]
    assert without == [{"tool": "madt_commit", "args": {"files": ["a/x.txt"], "title": "Add"}}]
    shell, again = widen
    assert shell["shell"].endswith("sparse-checkout add -- b")
    subprocess.run(["bash", "-c", shell["shell"]], check=True, capture_output=True)
    done = ok(again["tool"], repo, **again["args"])
    assert run_git(repo, "show", "--name-only", "--format=", done.data["sha"]).split() == ["a/x.txt", "b/new.txt"]
