"""gitops against real git: the funnel, URL parsing, discovery, the filesystem
helpers, status, and every operation, including the refusals and proofs."""
from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

import gitops
import guard
from helpers import modules_imported
from topologies import (
    HOST,
    commit_files,
    make_bare,
    make_mid_operation,
    make_repo,
    make_worktree,
    run_git,
    snapshot,
    assert_only_changed,
)

SHA_A = "a" * 40


def _repo(path: Path) -> gitops.Repo:
    repo = gitops.discover(path)
    assert repo is not None
    return repo


def _no_subprocess(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make any process start fail the test: the filesystem helpers must not need one."""
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"a subprocess was started: {args[:1]}")
    monkeypatch.setattr(subprocess, "Popen", refuse)
    monkeypatch.setattr(gitops, "git", refuse)


@dataclass
class Remote:
    bare: Path
    work: Path  # a clone with main pushed, origin/HEAD set
    other: Path  # a second clone: "someone else"

    @property
    def repo(self) -> gitops.Repo:
        return _repo(self.work)


@pytest.fixture
def remote(tmp_path: Path) -> Remote:
    bare = make_bare(tmp_path / "remote.git")
    work = make_repo(tmp_path / "work", origin=str(bare))
    run_git(work, "push", "-q", "origin", "main")
    run_git(work, "fetch", "-q", "origin")
    run_git(work, "remote", "set-head", "origin", "main")
    run_git(work, "branch", "-q", "--set-upstream-to=origin/main", "main")
    run_git(tmp_path, "clone", "-q", str(bare), "other")
    return Remote(bare, work, Path(os.path.realpath(tmp_path / "other")))


def _remote_sha(remote: Remote, branch: str) -> str | None:
    return run_git(remote.bare, "rev-parse", "-q", "--verify", f"refs/heads/{branch}", check=False) or None


# --------------------------------------------------------------------------- the funnel

def test_git_captures_bytes_and_strips_the_trailing_newline(single_repo):
    result = gitops.git("rev-parse", "--show-toplevel", cwd=single_repo.repo)
    assert result.ok and isinstance(result.stdout, bytes)
    assert result.stdout.endswith(b"\n") and result.text == str(single_repo.repo)


def test_git_error_carries_argv_exit_and_stderr(not_a_repo):
    with pytest.raises(gitops.GitError) as err:
        gitops.git("rev-parse", "--show-toplevel", cwd=not_a_repo)
    exc = err.value
    assert exc.argv == ["git", "rev-parse", "--show-toplevel"] and exc.returncode == 128
    assert "not a git repository" in exc.stderr
    assert str(exc).startswith("git rev-parse failed (exit 128): fatal: not a git repository")


def test_git_check_false_returns_the_failure(not_a_repo):
    result = gitops.git("rev-parse", "HEAD", cwd=not_a_repo, check=False)
    assert result.returncode == 128 and not result.ok and b"not a git repository" in result.stderr


def test_git_error_names_the_subcommand_after_global_options():
    exc = gitops.GitError(["git", "-c", "core.abbrev=no", "-C", "/x", "push", "origin"], 1, "hint: x\nerror: no\n")
    assert str(exc) == "git push failed (exit 1): error: no"


def test_git_error_never_shows_url_credentials():
    exc = gitops.GitError(["git", "push", "https://me:s3cret@forge.example.test/a/b.git"], 128,
                          "fatal: unable to access 'https://me:s3cret@forge.example.test/a/b.git/'")
    assert "s3cret" not in str(exc) and "s3cret" not in " ".join(exc.argv) and "s3cret" not in exc.stderr
    assert "https://***@forge.example.test" in exc.stderr


def test_git_in_a_missing_directory_is_a_git_error(tmp_path):
    with pytest.raises(gitops.GitError) as err:
        gitops.git("status", cwd=tmp_path / "gone")
    assert err.value.returncode == -1


def test_git_ignores_repo_selecting_variables(flat_siblings, monkeypatch):
    web, api = flat_siblings.web, flat_siblings.api
    monkeypatch.setenv("GIT_DIR", str(api / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(api))
    monkeypatch.setenv("GIT_INDEX_FILE", str(api / ".git" / "index"))
    monkeypatch.setenv("GIT_COMMON_DIR", str(api / ".git"))
    assert gitops.git("rev-parse", "--show-toplevel", cwd=web).text == str(web)
    before = snapshot(flat_siblings.repos)
    repo = _repo(web)
    assert repo.top == web
    (web / "note.txt").write_text("mine\n", encoding="utf-8")
    gitops.commit(repo, ["note.txt"], "lands in web")
    assert_only_changed(before, snapshot(flat_siblings.repos), allowed={web})
    assert run_git(web, "log", "-1", "--format=%s") == "lands in web"


def test_child_environment_is_scrubbed_and_pinned(single_repo, monkeypatch):
    monkeypatch.setenv("GIT_DIR", "/nowhere")
    monkeypatch.setenv("GIT_OBJECT_DIRECTORY", "/nowhere")
    monkeypatch.setenv("LC_ALL", "de_DE.UTF-8")
    out = gitops.git("-c", "alias.showenv=!env", "showenv", cwd=single_repo.repo).text
    env = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    assert "GIT_DIR" not in env and "GIT_OBJECT_DIRECTORY" not in env
    assert env["GIT_TERMINAL_PROMPT"] == "0" and env["GIT_EDITOR"] == "true"
    assert env["GIT_SEQUENCE_EDITOR"] == "true" and env["GIT_LITERAL_PATHSPECS"] == "1"
    assert env["LC_ALL"] == "C" and env["GIT_SSH_COMMAND"] == "ssh -o BatchMode=yes"


def test_child_environment_keeps_a_users_ssh_command_and_adds_extras(single_repo, monkeypatch):
    monkeypatch.setenv("GIT_SSH_COMMAND", "ssh -i key -o BatchMode=yes")
    out = gitops.git("-c", "alias.showenv=!env", "showenv", cwd=single_repo.repo, env={"EXTRA_VAR": "1"}).text
    assert "GIT_SSH_COMMAND=ssh -i key -o BatchMode=yes" in out.splitlines()
    assert "EXTRA_VAR=1" in out.splitlines()


def test_stdin_is_closed_unless_input_is_given(single_repo):
    # cat would block forever on an inherited terminal or pipe; closed stdin ends it at once.
    closed = gitops.git("-c", "alias.readin=!cat", "readin", cwd=single_repo.repo, timeout=10)
    assert closed.stdout == b""
    given = gitops.git("hash-object", "--stdin", cwd=single_repo.repo, input=b"hello\n")
    assert given.text == "ce013625030ba8dba906f756967f9e9ca394464a"


def test_timeout_kills_the_process_group(single_repo, tmp_path):
    marker = tmp_path / "survived"
    with pytest.raises(gitops.GitTimeout) as err:
        gitops.git("-c", f"alias.slow=!sleep 1 && touch {marker}", "slow", cwd=single_repo.repo, timeout=0.3)
    assert "timed out" in str(err.value)
    time.sleep(1.2)
    # Had git() waited for the shell, or left it running, the marker would exist.
    assert not marker.exists()


@pytest.mark.parametrize("script, mode, reason", [
    (None, None, "is not at {tool}"),
    ("exit 0", 0o644, "could not be started (Permission denied)"),
    ('echo $$ > "$0.pid"; exec sleep 600', 0o755, "did not answer within 1 s"),
    ("kill -9 $$", 0o755, "was ended by signal 9"),
])
def test_a_tool_that_does_not_run_to_its_end_is_a_typed_failure(tmp_path, script, mode, reason):
    tool = tmp_path / "tool"
    if script is not None:
        tool.write_text(f"#!/bin/sh\n{script}\n", encoding="utf-8")
        tool.chmod(mode)
    with pytest.raises(gitops.ToolFailed) as caught:
        gitops.run_tool([str(tool)], timeout=1)
    assert str(caught.value) == f"tool {reason.format(tool=tool)}"
    assert isinstance(caught.value, gitops.ToolMissing) == (script is None)
    if "sleep" in (script or ""):  # its process group was ended with it
        with pytest.raises(ProcessLookupError):
            os.kill(int((tmp_path / "tool.pid").read_text(encoding="utf-8")), 0)
    assert gitops.run_tool(["sh", "-c", "cat; echo err >&2; exit 3"], timeout=30, stdin=b"in") == (3, b"in", b"err\n")


def test_call_count_counts_every_process(single_repo):
    before = gitops.call_count()
    gitops.git("status", cwd=single_repo.repo)
    gitops.git("rev-parse", "HEAD", cwd=single_repo.repo, check=False)
    assert gitops.call_count() == before + 2


def test_git_version():
    assert gitops.git_version().split(".")[0].isdigit()


# --------------------------------------------------------------------------- option-looking values

@pytest.mark.parametrize("value", ["-f", "--force", "--upload-pack=touch /tmp/x", "-D"])
def test_reject_option_refuses_option_looking_values(value):
    with pytest.raises(ValueError, match="must not start with '-'"):
        gitops.reject_option(value, "branch")


def test_reject_option_returns_plain_values_and_refuses_nul():
    assert gitops.reject_option("feature/x-1", "branch") == "feature/x-1"
    with pytest.raises(ValueError, match="NUL"):
        gitops.reject_option("a\0b", "branch")


@pytest.mark.parametrize("call", [
    lambda r: gitops.log(r, "--output=/tmp/pwned"),
    lambda r: gitops.head_sha(r, "--all"),
    lambda r: gitops.ref_exists(r, "--all"),
    lambda r: gitops.switch(r, "-f"),
    lambda r: gitops.branch_create(r, "-D"),
    lambda r: gitops.branch_create(r, "ok", "--orphan"),
    lambda r: gitops.branch_delete(r, "-D", SHA_A),
    lambda r: gitops.push(r, "--force"),
    lambda r: gitops.push(r, "main", remote="--receive-pack=touch /tmp/x"),
    lambda r: gitops.pull_ff(r, "--rebase"),
    lambda r: gitops.fetch(r, "--upload-pack=x"),
    lambda r: gitops.worktree_add(r, "/tmp/wt", new_branch="-B"),
    lambda r: gitops.worktree_add(r, "/tmp/wt", commit_ish="--orphan"),
    lambda r: gitops.containment(r, "--all", "main"),
    lambda r: gitops.containment(r, "main", "-x"),
    lambda r: gitops.unpushed(r, "--all"),
], ids=lambda _: "")
def test_operations_refuse_option_looking_values_before_running_git(single_repo, call):
    repo = _repo(single_repo.repo)
    before = gitops.call_count()
    with pytest.raises(ValueError):
        call(repo)
    assert gitops.call_count() == before


def test_a_file_named_like_an_option_is_a_path(single_repo):
    repo = _repo(single_repo.repo)
    (single_repo.repo / "-n.txt").write_text("dash\n", encoding="utf-8")
    sha = gitops.commit(repo, ["-n.txt"], "add a dash file")
    assert run_git(single_repo.repo, "show", "--name-only", "--format=", sha) == "-n.txt"


# --------------------------------------------------------------------------- remote URLs

R = gitops.RemoteId


@pytest.mark.parametrize("url, expected", [
    (f"https://{HOST}/acme/web.git", R(HOST, None, "acme", "web", "", "https")),
    (f"https://{HOST}/acme/web", R(HOST, None, "acme", "web", "", "https")),
    (f"https://{HOST}/acme/web/", R(HOST, None, "acme", "web", "", "https")),
    (f"https://{HOST}/acme/web.git/", R(HOST, None, "acme", "web", "", "https")),
    (f"https://{HOST}//acme//web.git//", R(HOST, None, "acme", "web", "", "https")),
    (f"  https://{HOST}/acme/web.git\n", R(HOST, None, "acme", "web", "", "https")),
    (f"https://{HOST}/acme/web.git?ref=x#frag", R(HOST, None, "acme", "web", "", "https")),
    ("HTTPS://Forge.Example.TEST/Acme/Web.git", R(HOST, None, "Acme", "Web", "", "https")),
    (f"http://{HOST}:3000/acme/web.git", R(HOST, 3000, "acme", "web", "", "http")),
    (f"https://{HOST}/gitea/acme/web.git", R(HOST, None, "acme", "web", "gitea", "https")),
    (f"https://{HOST}/a/b/acme/web", R(HOST, None, "acme", "web", "a/b", "https")),
    (f"https://me:t0ken@{HOST}/acme/web.git", R(HOST, None, "acme", "web", "", "https")),
    (f"https://me@{HOST}:8443/acme/web.git", R(HOST, 8443, "acme", "web", "", "https")),
    (f"https://{HOST}:/acme/web.git", R(HOST, None, "acme", "web", "", "https")),
    (f"https://{HOST}/acme/web.git.git", R(HOST, None, "acme", "web.git", "", "https")),
    (f"ssh://git@{HOST}/acme/web.git", R(HOST, None, "acme", "web", "", "ssh")),
    (f"ssh://git@{HOST}:2222/acme/web.git", R(HOST, 2222, "acme", "web", "", "ssh")),
    (f"ssh://{HOST}/acme/web", R(HOST, None, "acme", "web", "", "ssh")),
    (f"git+ssh://git@{HOST}/acme/web.git", R(HOST, None, "acme", "web", "", "ssh")),
    (f"git@{HOST}:acme/web.git", R(HOST, None, "acme", "web", "", "ssh")),
    (f"git@{HOST}:acme/web", R(HOST, None, "acme", "web", "", "ssh")),
    (f"git@{HOST}:/acme/web.git/", R(HOST, None, "acme", "web", "", "ssh")),
    (f"{HOST}:acme/web.git", R(HOST, None, "acme", "web", "", "ssh")),
    (f"deploy.user@{HOST}:srv/acme/web.git", R(HOST, None, "acme", "web", "srv", "ssh")),
    ("https://[::1]:3000/acme/web.git", R("::1", 3000, "acme", "web", "", "https")),
    ("ssh://git@[2001:db8::1]:2222/acme/web.git", R("2001:db8::1", 2222, "acme", "web", "", "ssh")),
    ("git@[::1]:acme/web.git", R("::1", None, "acme", "web", "", "ssh")),
    ("http://127.0.0.1:8080/acme/web.git", R("127.0.0.1", 8080, "acme", "web", "", "http")),
])
def test_parse_remote_url(url, expected):
    assert gitops.parse_remote_url(url) == expected


@pytest.mark.parametrize("url", [
    "", "   ", "/srv/git/acme/web.git", "./web", "../acme/web.git", "~/acme/web.git",
    "file:///srv/acme/web.git", "git://forge.example.test/acme/web.git", "ftp://forge.example.test/acme/web",
    "https://forge.example.test/web.git", "https://forge.example.test/", "https://forge.example.test",
    "https://", "https:///acme/web", "C:/work/acme/web", "C:\\work\\acme\\web", "c:acme/web",
    "https://forge.example.test:99999/acme/web", "https://forge.example.test:0/acme/web",
    "https://forge.example.test:abc/acme/web", "https://forge.example.test/acme/.git",
    "https://forge.example.test/acme/../web", "https://forge.example.test/../acme/web",
    "https://forge example/acme/web", "https://forge.example.test/acme/we b",
    "https://forge.example.test/ac%2Fme/web", "https://[::1/acme/web", "https://[nothex]/acme/web",
    "git@forge.example.test", "git@forge.example.test:", "git@forge.example.test:web.git",
    "https://forge.example.test/acme/web\x00", "ssh://git@forge.example.test:22x/acme/web",
])
def test_parse_remote_url_refuses_what_it_cannot_name(url):
    assert gitops.parse_remote_url(url) is None


def test_remote_id_names():
    rid = gitops.parse_remote_url(f"https://{HOST}:8443/gitea/Acme/Web.git")
    assert rid.slug == "Acme/Web" and rid.full == f"{HOST}:8443/Acme/Web" and rid.netloc == f"{HOST}:8443"
    assert rid.key == f"{HOST}/acme/web"
    v6 = gitops.parse_remote_url("ssh://git@[::1]:2222/acme/web.git")
    assert v6.netloc == "[::1]:2222" and v6.full == "[::1]:2222/acme/web" and v6.key == "[::1]/acme/web"


def test_same_repo_over_every_transport_has_one_key():
    urls = [f"https://{HOST}/acme/web.git", f"https://{HOST}/gitea/ACME/web", f"git@{HOST}:acme/web.git",
            f"ssh://git@{HOST}:2222/acme/Web.git", f"http://{HOST.upper()}:3000/acme/web/"]
    assert {gitops.parse_remote_url(u).key for u in urls} == {f"{HOST}/acme/web"}
    assert gitops.parse_remote_url(f"git@{HOST}:acme/api.git").key != f"{HOST}/acme/web"


# --------------------------------------------------------------------------- discovery

def test_discover_from_a_subdirectory_and_a_file_in_one_call(symlinked_repo):
    before = gitops.call_count()
    repo = gitops.discover(symlinked_repo.real / "src")
    assert gitops.call_count() == before + 1
    assert repo == gitops.Repo(symlinked_repo.real, symlinked_repo.real / ".git", symlinked_repo.real / ".git")
    assert gitops.discover(symlinked_repo.real / "src" / "app.py") == repo


def test_discover_outside_any_repository_is_none(tmp_path, hermetic_seal):
    assert gitops.discover(tmp_path / "missing") is None
    (tmp_path / "plain").mkdir()
    assert gitops.discover(tmp_path / "plain") is None


def test_discover_names_a_repository_without_a_work_tree(single_repo, tmp_path):
    for inside in (single_repo.repo / ".git", single_repo.repo / ".git" / "refs"):
        with pytest.raises(gitops.NoWorkTree) as caught:
            gitops.discover(inside)
        assert caught.value.git_dir == single_repo.repo / ".git" and not caught.value.bare
    # a bare repository inside a work tree is itself, not the work tree around it
    bare = make_bare(single_repo.repo / "store.git")
    with pytest.raises(gitops.NoWorkTree) as caught:
        gitops.discover(bare)
    assert caught.value.git_dir == bare and caught.value.bare


def test_discover_refuses_a_work_tree_that_belongs_to_another_repository(tmp_path, hermetic_seal):
    other = make_repo(tmp_path / "d")
    odd = make_repo(tmp_path / "c")
    run_git(odd, "config", "core.worktree", str(other))
    with pytest.raises(gitops.Unpinnable) as caught:
        gitops.discover(odd)
    assert (caught.value.git_dir, caught.value.work_tree, caught.value.other) == (odd / ".git", other, other)
    run_git(odd, "config", "core.worktree", str(other / "sub"))  # a folder inside it is just as much its
    (other / "sub").mkdir()
    with pytest.raises(gitops.Unpinnable):
        gitops.discover(odd)


def test_a_work_tree_of_its_own_elsewhere_is_pinned_to_it(tmp_path, hermetic_seal):
    repo = make_repo(tmp_path / "c")
    tree = tmp_path / "tree"
    tree.mkdir()
    run_git(repo, "config", "core.worktree", str(tree))
    found = gitops.discover(repo)
    assert found == gitops.Repo(tree, repo / ".git", repo / ".git")
    (tree / "new.txt").write_text("new\n", encoding="utf-8")
    (repo / "stray.txt").write_text("not in the work tree\n", encoding="utf-8")
    assert gitops.status(found).untracked == ["new.txt"]


def test_discover_reports_a_broken_repo_instead_of_hiding_it(single_repo):
    (single_repo.repo / ".git" / "config").write_text("[core\nbroken", encoding="utf-8")
    with pytest.raises(gitops.GitError, match="bad config"):
        gitops.discover(single_repo.repo)


def test_discover_and_fs_find_repo_agree_on_a_linked_worktree(linked_worktree, monkeypatch):
    by_git = gitops.discover(linked_worktree.worktree)
    assert by_git.is_linked and by_git.top == linked_worktree.worktree
    assert by_git.common_dir == linked_worktree.main / ".git"
    _no_subprocess(monkeypatch)
    assert gitops.fs_find_repo(linked_worktree.worktree) == by_git


def test_fs_find_repo_follows_a_relative_gitdir_file(single_repo, tmp_path):
    sub = make_repo(tmp_path / "lib", origin=f"https://{HOST}/acme/lib.git")
    run_git(single_repo.repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub), "vendor/lib")
    vendored = single_repo.repo / "vendor" / "lib"
    assert (vendored / ".git").read_text().startswith("gitdir: ../../.git/modules/")
    expected = gitops.discover(vendored)
    assert expected.top == vendored and not expected.is_linked
    assert gitops.fs_find_repo(vendored) == expected
    assert gitops.nested_repos(single_repo.repo / "vendor") == [vendored]


def test_fs_find_repo_stops_at_a_broken_gitfile_and_inside_git_dirs(single_repo, tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / ".git").write_text("gitdir: /does/not/exist\n", encoding="utf-8")
    assert gitops.fs_find_repo(broken) is None
    assert gitops.fs_find_repo(single_repo.repo / ".git" / "refs") is None
    assert gitops.fs_find_repo(tmp_path / "no" / "such" / "dir") is None
    assert gitops.fs_find_repo(single_repo.repo / "missing") is None
    assert gitops.discover(single_repo.repo / "missing") is None
    readme = single_repo.repo / "README.md"
    assert gitops.fs_find_repo(readme) == gitops.discover(readme) == _repo(single_repo.repo)


def test_new_worktrees_go_beside_a_repository_but_never_inside_another_work_tree(umbrella, tmp_path, monkeypatch):
    _no_subprocess(monkeypatch)
    # A nested child's folder is its umbrella's work tree: the home is beside the umbrella.
    assert gitops.fs_worktree_home(umbrella.scp_child) == str(umbrella.top.parent)
    assert gitops.fs_worktree_home(umbrella.top) == str(umbrella.top.parent)
    assert "README.md" in gitops.fs_names(umbrella.top) and ".git" in gitops.fs_names(umbrella.top)
    assert gitops.fs_names(tmp_path / "no" / "such") == frozenset()


def test_fs_helpers_start_no_process(umbrella, monkeypatch):
    _no_subprocess(monkeypatch)
    repo = gitops.fs_find_repo(umbrella.scp_child)
    assert repo.top == umbrella.scp_child
    assert gitops.read_origin(repo.common_dir) == f"git@{HOST}:acme/docs.git"
    assert gitops.nested_repos(umbrella.top) == umbrella.nested
    assert gitops.operation_in_progress(repo.git_dir) is None
    assert gitops.default_branch(repo) == "main"


def test_nested_repos_counts_gitfiles_and_symlinked_children(single_repo, tmp_path):
    top = single_repo.repo
    make_worktree(top, top / "inner-wt", "inner")  # a .git file child
    outside = make_repo(tmp_path / "outside")
    (top / "linked").symlink_to(outside, target_is_directory=True)
    (top / "empty").mkdir()
    assert gitops.nested_repos(top) == [top / "inner-wt", top / "linked"]
    assert gitops.nested_repos(tmp_path / "missing") == []


def test_nested_origins_are_what_fs_find_and_read_origin_say_of_each_child(single_repo, tmp_path, monkeypatch):
    """The scan's shortcut for a child with its own git dir agrees with the general walk on every shape."""
    top = single_repo.repo
    make_repo(top / "plain", origin=f"https://{HOST}/acme/plain.git")
    make_repo(top / "scp", origin=f"git@{HOST}:acme/scp.git")
    make_repo(top / "no-origin")
    make_worktree(top / "plain", top / "inner-wt", "inner")  # a .git file child
    outside = make_repo(tmp_path / "outside", origin=f"https://{HOST}/acme/outside.git")
    (top / "linked").symlink_to(outside, target_is_directory=True)
    fake = top / "not-git"
    (fake / ".git").mkdir(parents=True)  # a .git folder that is no git dir: git looks further up
    real_git = make_repo(tmp_path / "real-git", origin=f"https://{HOST}/acme/real.git") / ".git"
    (top / "dotlink").mkdir()
    (top / "dotlink" / ".git").symlink_to(real_git, target_is_directory=True)
    _no_subprocess(monkeypatch)

    def walked(path: Path) -> tuple[Path, gitops.RemoteId | None]:
        repo = gitops.fs_find(path)
        url = gitops.read_origin(repo[2]) if repo else None
        return path, gitops.parse_remote_url(url) if url else None

    expected = [walked(path) for path in gitops.nested_repos(top)]
    assert len(expected) == 7 and expected[0][0] == top / "dotlink"
    assert gitops.nested_origins(top) == expected
    roundabout = top / "plain" / ".."  # a top that is not a realpath: the walk decides each child
    assert gitops.nested_origins(roundabout) == [walked(path) for path in gitops.nested_repos(roundabout)]
    assert gitops.nested_origins(tmp_path / "missing") == []


def test_a_parsed_remote_url_is_remembered_and_is_the_same_answer():
    url = f"  https://{HOST}/acme/web.git  "
    first = gitops.parse_remote_url(url)
    assert first is not None and first.repo == "web"
    assert gitops.parse_remote_url(url) is first and gitops.parse_remote_url(url.strip()) == first
    assert gitops.parse_remote_url("not a url") is None and gitops.parse_remote_url("not a url") is None


# --------------------------------------------------------------------------- config parsing

def _origin_from(tmp_path: Path, config: str) -> str | None:
    (tmp_path / "config").write_bytes(config.encode())
    return gitops.read_origin(tmp_path)


def _git_says(tmp_path: Path) -> str | None:
    out = subprocess.run(["git", "config", "--file", str(tmp_path / "config"), "--get-all", "remote.origin.url"],
                         capture_output=True, text=True, stdin=subprocess.DEVNULL)
    return out.stdout.splitlines()[0] if out.returncode == 0 else None


WEB = f"https://{HOST}/acme/web.git"


@pytest.mark.parametrize("config", [
    f'[remote "origin"]\n\turl = {WEB}\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n',
    f'[core]\n\tbare = false\n[remote "upstream"]\n\turl = https://x.test/a/b\n[remote "origin"]\n\turl = {WEB}\n',
    f'[Remote "origin"]\n\tURL={WEB}\n',
    f'[remote.origin]\n\turl = {WEB}\n',
    f'[remote "origin"]\n\turl = "{WEB}" ; a comment\n',
    f'[remote "origin"]\n\turl = {WEB} # a comment\n',
    f'[remote "origin"]\n\turl = "{WEB}#kept"\n',
    f'[remote "origin"]\n\turl = https://{HOST}/\\\nacme/web.git\n',
    f'[remote "origin"]\r\n\turl = {WEB}\r\n',
    f'[remote "origin"] url = {WEB}\n',
    f'[remote "origin"]\n\turl = {WEB}\n\turl = https://mirror.test/acme/web.git\n',
    f'# leading comment\n; another\n[remote "origin"]\n\tpushurl = x\n\turl = {WEB}\n',
    f'[remote "ori\\"gin"]\n\turl = nope\n[remote "origin"]\n\turl = {WEB}\n',
    f'\ufeff[remote "origin"]\n\turl = {WEB}\n',
    f'[remote "origin"]\n\turl =  {WEB}\t\t x  \n',  # each inner white-space character becomes one space
])
def test_read_origin_reads_what_git_reads(tmp_path, config):
    got = _origin_from(tmp_path, config)
    assert got == _git_says(tmp_path)
    assert got is not None and got.startswith(f"https://{HOST}/")


def test_read_origin_remembers_an_unchanged_config_and_sees_every_change(tmp_path, monkeypatch):
    config = tmp_path / "config"
    other = WEB.replace("web", "wob")
    config.write_text(f'[remote "origin"]\n\turl = {WEB}\n')
    assert gitops.read_origin(tmp_path) == WEB
    config.write_text(f'[remote "origin"]\n\turl = {other}\n')  # same size, same moment: read again
    assert gitops.read_origin(tmp_path) == other
    parsed: list[object] = []
    monkeypatch.setattr(gitops, "_parse_config", lambda *a, _real=gitops._parse_config: parsed.append(a) or _real(*a))
    later = time.time() + 60
    monkeypatch.setattr(gitops, "_time", type("Clock", (), {"time": staticmethod(lambda: later)}))
    assert gitops.read_origin(tmp_path) == other and len(parsed) == 1  # settled a minute ago: parsed once more
    assert gitops.read_origin(tmp_path) == other and len(parsed) == 1  # then remembered
    replaced = tmp_path / "config.new"
    replaced.write_text(f'[remote "origin"]\n\turl = {WEB}\n')
    os.replace(replaced, config)  # as git writes it: a new file in its place
    assert gitops.read_origin(tmp_path) == WEB and len(parsed) == 2
    config.unlink()
    assert gitops.read_origin(tmp_path) is None


@pytest.mark.parametrize("config", [
    f'[remote "Origin"]\n\turl = {WEB}\n',  # subsections are case-sensitive
    '[remote "origin"]\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n',
    '[remote "origin"]\n\turl\n',
    f'[remote "upstream"]\n\turl = {WEB}\n',
    f'url = {WEB}\n',  # a key before any section
    "",
])
def test_read_origin_without_an_origin_url(tmp_path, config):
    assert _origin_from(tmp_path, config) is None
    assert not _git_says(tmp_path)


@pytest.mark.parametrize("config", [
    f'[include]\n\tpath = other.config\n[remote "origin"]\n\turl = {WEB}\n',  # git may read another url first
    f'[remote "origin"]\n\turl = {WEB}\n[includeIf "gitdir:/"]\n\tpath = other.config\n',
    f'[remote "origin"]\n\turl = {WEB}\n[url "https://forge.example.test/acme/api"]\n\tinsteadOf = '
    'https://forge.example.test/acme/web\n',  # git fetches from another repository
    f'[remote "origin"]\n\turl = {WEB}\n[remote "upstream"]\n\tpushurl\n',  # git refuses every remote
])
def test_read_origin_gives_up_where_git_may_use_another_origin(tmp_path, config):
    assert _origin_from(tmp_path, config) is None


@pytest.mark.parametrize("config", [
    f'[remote "origin"\n\turl = {WEB}\n',
    f'[remote "origin"]\n\turl = "{WEB}\n',
    f'[remote "origin"]\n\turl = {WEB}\\q\n',
    f'[remote "origin"]\n\t%url = {WEB}\n',
])
def test_read_origin_on_a_malformed_config_is_none(tmp_path, config):
    assert _origin_from(tmp_path, config) is None
    assert subprocess.run(["git", "config", "--file", str(tmp_path / "config"), "--list"],
                          capture_output=True, stdin=subprocess.DEVNULL).returncode != 0


def test_read_origin_of_a_repo_without_a_config_file(tmp_path):
    assert gitops.read_origin(tmp_path) is None


# --------------------------------------------------------------------------- mid-operation

def test_operation_in_progress_for_each_stopped_operation(mid_operations, monkeypatch):
    repos = {name: _repo(path) for name, path in mid_operations.by_name().items()}
    _no_subprocess(monkeypatch)
    assert {name: gitops.operation_in_progress(r.git_dir) for name, r in repos.items()} == {
        name: name for name in repos}


def test_operation_in_progress_is_none_when_nothing_is_stopped(single_repo):
    assert gitops.operation_in_progress(single_repo.repo / ".git") is None


def test_a_multi_pick_resolved_by_hand_is_still_a_cherry_pick(single_repo):
    top = single_repo.repo
    commit_files(top, {"f.txt": "base\n"}, "base")
    run_git(top, "switch", "-q", "-c", "side")
    one = commit_files(top, {"f.txt": "side\n"}, "one")
    two = commit_files(top, {"g.txt": "g\n"}, "two")
    run_git(top, "switch", "-q", "main")
    commit_files(top, {"f.txt": "main\n"}, "main change")
    run_git(top, "cherry-pick", one, two, check=False)
    (top / "f.txt").write_text("resolved\n", encoding="utf-8")
    run_git(top, "add", "f.txt")
    run_git(top, "commit", "-q", "--no-edit")
    assert not (top / ".git" / "CHERRY_PICK_HEAD").exists()
    assert gitops.operation_in_progress(top / ".git") == "cherry-pick"


def test_operation_in_progress_is_per_worktree(linked_worktree):
    wt = _repo(linked_worktree.worktree)
    commit_files(wt.top, {"README.md": "feature side\n"}, "feature")
    commit_files(linked_worktree.main, {"README.md": "main side\n"}, "main")
    run_git(wt.top, "merge", "--no-edit", "main", check=False)
    assert gitops.operation_in_progress(wt.git_dir) == "merge"
    assert gitops.operation_in_progress(wt.common_dir) is None


# --------------------------------------------------------------------------- status

def test_status_is_one_call_and_reads_a_clean_tree(single_repo):
    repo = _repo(single_repo.repo)
    before = gitops.call_count()
    st = gitops.status(repo)
    assert gitops.call_count() == before + 1
    assert (st.branch, st.upstream, st.ahead, st.behind, st.operation) == ("main", None, 0, 0, None)
    assert st.clean and not st.dirty_tracked and len(st.head) == 40


def test_status_sorts_changes(dirty_trees):
    staged, modified, untracked = (gitops.status(_repo(p)) for p in
                                   (dirty_trees.staged, dirty_trees.modified, dirty_trees.untracked))
    assert (staged.staged, staged.modified, staged.untracked) == (["staged.txt"], [], [])
    assert (modified.staged, modified.modified) == ([], ["README.md"]) and modified.dirty_tracked
    assert untracked.untracked == ["untracked.txt"] and not untracked.dirty_tracked and not untracked.clean


def test_status_lists_conflicts(tmp_path):
    st = gitops.status(_repo(make_mid_operation(tmp_path / "merge", "merge")))
    assert st.conflicted == ["conflict.txt"] and st.operation == "merge" and st.dirty_tracked


def test_status_of_an_unborn_branch(tmp_path):
    top = make_repo(tmp_path / "fresh", commit=False)
    (top / "a.txt").write_text("a\n", encoding="utf-8")
    st = gitops.status(_repo(top))
    assert (st.branch, st.head, st.untracked) == ("main", None, ["a.txt"])


def test_status_of_a_detached_head(single_repo):
    run_git(single_repo.repo, "switch", "-q", "--detach", "HEAD")
    st = gitops.status(_repo(single_repo.repo))
    assert st.branch is None and st.head == run_git(single_repo.repo, "rev-parse", "HEAD")


def test_status_upstream_ahead_and_behind(remote):
    commit_files(remote.other, {"theirs.txt": "x\n"}, "theirs")
    run_git(remote.other, "push", "-q", "origin", "main")
    run_git(remote.work, "fetch", "-q")
    commit_files(remote.work, {"mine.txt": "x\n"}, "mine one")
    commit_files(remote.work, {"mine2.txt": "x\n"}, "mine two")
    st = gitops.status(remote.repo)
    assert (st.upstream, st.ahead, st.behind) == ("origin/main", 2, 1)


def test_status_paths_survive_renames_spaces_newlines_and_subdirectories(single_repo):
    top = single_repo.repo
    commit_files(top, {"old name.txt": "same content\n"}, "add")
    run_git(top, "mv", "old name.txt", "new name.txt")
    (top / "odd\nname.txt").write_text("x\n", encoding="utf-8")
    (top / "deep" / "er").mkdir(parents=True)
    (top / "deep" / "er" / "f.txt").write_text("x\n", encoding="utf-8")
    st = gitops.status(_repo(top))
    assert st.staged == ["new name.txt"] and st.modified == []
    assert st.untracked == ["deep/er/f.txt", "odd\nname.txt"]


def test_status_does_not_take_the_index_lock(single_repo):
    # A read must leave a concurrent git's lock alone instead of failing on it.
    lock = single_repo.repo / ".git" / "index.lock"
    lock.write_text("", encoding="utf-8")
    (single_repo.repo / "README.md").write_text("changed\n", encoding="utf-8")
    assert gitops.status(_repo(single_repo.repo)).modified == ["README.md"]
    assert lock.exists()


# --------------------------------------------------------------------------- default branch

def test_default_branch_from_origin_head_without_a_process(tmp_path, monkeypatch):
    bare = make_bare(tmp_path / "r.git")
    seed = make_repo(tmp_path / "seed", origin=str(bare), branch="trunk")
    run_git(seed, "push", "-q", "origin", "trunk")
    run_git(bare, "symbolic-ref", "HEAD", "refs/heads/trunk")
    run_git(tmp_path, "clone", "-q", str(bare), "clone")
    repo = _repo(tmp_path / "clone")
    _no_subprocess(monkeypatch)
    assert gitops.default_branch(repo) == "trunk"


def test_default_branch_from_repo_config(single_repo):
    run_git(single_repo.repo, "branch", "develop")
    run_git(single_repo.repo, "config", "init.defaultBranch", "develop")
    assert gitops.default_branch(_repo(single_repo.repo)) == "develop"


def test_default_branch_from_global_config(single_repo, tmp_path, monkeypatch):
    run_git(single_repo.repo, "branch", "trunk")
    config = tmp_path / "global"
    config.write_text("[init]\n\tdefaultBranch = trunk\n", encoding="utf-8")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    assert gitops.default_branch(_repo(single_repo.repo)) == "trunk"


def test_origin_and_default_branch_of_a_settled_config_are_one_parse(single_repo, monkeypatch):
    run_git(single_repo.repo, "branch", "develop")
    run_git(single_repo.repo, "config", "init.defaultBranch", "develop")
    repo = _repo(single_repo.repo)
    parsed: list[object] = []
    monkeypatch.setattr(gitops, "_parse_config", lambda *a, _real=gitops._parse_config: parsed.append(a) or _real(*a))
    later = time.time() + 60
    monkeypatch.setattr(gitops, "_time", type("Clock", (), {"time": staticmethod(lambda: later)}))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    origin = gitops.read_origin(repo.common_dir)
    assert gitops.default_branch(repo) == "develop" and len(parsed) == 1, parsed
    assert gitops.read_origin(repo.common_dir) == origin and len(parsed) == 1


def test_default_branch_falls_back_to_an_existing_master(tmp_path):
    top = make_repo(tmp_path / "old", branch="master")
    assert gitops.default_branch(_repo(top)) == "master"


def test_default_branch_finds_a_packed_remote_ref(tmp_path):
    top = make_repo(tmp_path / "r", branch="work")
    run_git(top, "update-ref", "refs/remotes/origin/master", "HEAD")
    run_git(top, "pack-refs", "--all")
    assert not (top / ".git" / "refs" / "remotes" / "origin" / "master").exists()
    assert gitops.default_branch(_repo(top)) == "master"


def test_default_branch_when_nothing_says(tmp_path):
    top = make_repo(tmp_path / "r", branch="work")
    assert gitops.default_branch(_repo(top)) == "main"


# --------------------------------------------------------------------------- add and commit

def test_add_stages_exactly_the_named_files(dirty_trees):
    top = dirty_trees.untracked
    (top / "other.txt").write_text("leave me\n", encoding="utf-8")
    gitops.add(_repo(top), ["untracked.txt"])
    st = gitops.status(_repo(top))
    assert st.staged == ["untracked.txt"] and st.untracked == ["other.txt"]


@pytest.mark.parametrize("files", [[], ".", ["."], ["./"], ["sub/.."], [""], ["a\0b"]])
def test_add_and_commit_refuse_blanket_or_bad_file_lists(single_repo, files):
    repo = _repo(single_repo.repo)
    before = gitops.call_count()
    with pytest.raises((ValueError, TypeError)):
        gitops.add(repo, files)
    with pytest.raises((ValueError, TypeError)):
        gitops.commit(repo, files, "title")
    assert gitops.call_count() == before


def test_add_refuses_the_work_tree_by_absolute_path(single_repo):
    with pytest.raises(ValueError, match="whole work tree"):
        gitops.add(_repo(single_repo.repo), [str(single_repo.repo)])


def test_commit_is_pathspec_isolated(single_repo):
    top = single_repo.repo
    repo = _repo(top)
    commit_files(top, {"other.txt": "v1\n"}, "other")
    (top / "other.txt").write_text("v2, staged by someone else\n", encoding="utf-8")
    run_git(top, "add", "other.txt")
    (top / "mine.txt").write_text("mine\n", encoding="utf-8")
    (top / "README.md").write_text("edited\n", encoding="utf-8")
    sha = gitops.commit(repo, ["mine.txt", "README.md"], "my change", "why it matters")
    assert sha == run_git(top, "rev-parse", "HEAD")
    assert run_git(top, "show", "--name-only", "--format=", sha).splitlines() == ["README.md", "mine.txt"]
    st = gitops.status(repo)
    assert st.staged == ["other.txt"] and st.modified == []
    assert run_git(top, "log", "-1", "--format=%s|%b") == "my change|why it matters"


def test_commit_pathspecs_are_literal(single_repo):
    top = single_repo.repo
    for name in ("*.txt", "a.txt", "b.txt"):
        (top / name).write_text(name, encoding="utf-8")
    sha = gitops.commit(_repo(top), ["*.txt"], "only the star file")
    assert run_git(top, "show", "--name-only", "--format=", sha) == "*.txt"
    assert gitops.status(_repo(top)).untracked == ["a.txt", "b.txt"]


def test_commit_records_a_deletion_and_a_dash_title(single_repo):
    top = single_repo.repo
    (top / "README.md").unlink()
    sha = gitops.commit(_repo(top), ["README.md"], "-m is a title here")
    assert run_git(top, "show", "--name-status", "--format=%s", sha).splitlines() == ["-m is a title here", "",
                                                                                      "D\tREADME.md"]


def test_commit_on_an_unborn_branch(tmp_path):
    top = make_repo(tmp_path / "fresh", commit=False)
    (top / "a.txt").write_text("a\n", encoding="utf-8")
    sha = gitops.commit(_repo(top), ["a.txt"], "first")
    assert run_git(top, "rev-list", "--count", sha) == "1"


def test_commit_with_nothing_to_commit(single_repo):
    with pytest.raises(gitops.NothingToCommit):
        gitops.commit(_repo(single_repo.repo), ["README.md"], "no change")


def test_commit_refuses_an_empty_title(single_repo):
    with pytest.raises(ValueError, match="title"):
        gitops.commit(_repo(single_repo.repo), ["README.md"], "  ")


def test_commit_of_an_unknown_path_is_a_git_error(single_repo):
    with pytest.raises(gitops.GitError, match="did not match"):
        gitops.commit(_repo(single_repo.repo), ["nope.txt"], "x")


# --------------------------------------------------------------------------- log, refs

def test_log_lists_commits_newest_first(single_repo):
    top = single_repo.repo
    first = run_git(top, "rev-parse", "HEAD")
    second = commit_files(top, {"x.txt": "x\n"}, "second")
    run_git(top, "commit", "-q", "--allow-empty", "-m", "third", "-m", "body line\n\nmore")
    entries = gitops.log(_repo(top), limit=10)
    assert [e.subject for e in entries] == ["third", "second", "initial commit"]
    assert entries[0].body == "body line\n\nmore" and entries[0].parents == (second,)
    assert entries[2].sha == first and entries[2].parents == ()
    assert entries[1].author == "Test Person" and entries[1].email == "test@example.invalid"
    assert entries[1].date.startswith("2026-01-01T00:00:00")
    assert [e.subject for e in gitops.log(_repo(top), "HEAD~1", limit=1)] == ["second"]


def test_log_of_an_unborn_branch_and_of_a_bad_ref(tmp_path, single_repo):
    assert gitops.log(_repo(make_repo(tmp_path / "fresh", commit=False))) == []
    with pytest.raises(gitops.GitError):
        gitops.log(_repo(single_repo.repo), "no-such-branch")


def test_head_sha_ref_exists_and_local_branches(single_repo):
    repo = _repo(single_repo.repo)
    sha = run_git(single_repo.repo, "rev-parse", "HEAD")
    run_git(single_repo.repo, "branch", "feature/x")
    assert gitops.head_sha(repo) == sha == gitops.head_sha(repo, "refs/heads/main")
    assert gitops.head_sha(repo, "nope") is None
    assert gitops.ref_exists(repo, "main") and gitops.ref_exists(repo, "refs/heads/feature/x")
    assert not gitops.ref_exists(repo, "refs/heads/nope")
    assert gitops.local_branches(repo) == ["feature/x", "main"]


# --------------------------------------------------------------------------- push, fetch, pull

def test_push_creates_a_branch_and_sets_its_upstream(remote):
    repo = remote.repo
    run_git(remote.work, "switch", "-q", "-c", "feature")
    sha = commit_files(remote.work, {"f.txt": "f\n"}, "feature")
    result = gitops.push(repo, "feature", set_upstream=True)
    assert result == gitops.PushResult("origin", "feature", "created", None, sha)
    assert _remote_sha(remote, "feature") == sha
    assert run_git(remote.work, "config", "branch.feature.merge") == "refs/heads/feature"


def test_push_fast_forward_and_up_to_date_report_full_shas(remote):
    repo = remote.repo
    old = run_git(remote.work, "rev-parse", "HEAD")
    new = commit_files(remote.work, {"f.txt": "f\n"}, "more")
    assert gitops.push(repo, "main") == gitops.PushResult("origin", "main", "fast-forward", old, new)
    assert gitops.push(repo, "main") == gitops.PushResult("origin", "main", "up-to-date", new, new)


def _someone_else_pushes(remote: Remote) -> str:
    sha = commit_files(remote.other, {"theirs.txt": "theirs\n"}, "theirs")
    run_git(remote.other, "push", "-q", "origin", "main")
    return sha


def test_push_rejects_a_non_fast_forward(remote):
    theirs = _someone_else_pushes(remote)
    commit_files(remote.work, {"mine.txt": "mine\n"}, "mine")
    with pytest.raises(gitops.PushRejected) as err:
        gitops.push(remote.repo, "main")
    assert not isinstance(err.value, gitops.LeaseRejected)
    assert err.value.kind == "non-fast-forward" and err.value.reason in ("fetch first", "non-fast-forward")
    assert _remote_sha(remote, "main") == theirs


def test_push_with_a_matching_lease_rewrites_the_branch(remote):
    base = run_git(remote.work, "rev-parse", "HEAD")
    commit_files(remote.work, {"wip.txt": "wip\n"}, "wip")
    pushed = gitops.push(remote.repo, "main").new_sha
    run_git(remote.work, "commit", "-q", "--amend", "-m", "wip, reworded")
    rewritten = run_git(remote.work, "rev-parse", "HEAD")
    result = gitops.push(remote.repo, "main", lease_sha=pushed)
    assert result == gitops.PushResult("origin", "main", "forced", pushed, rewritten)
    assert _remote_sha(remote, "main") == rewritten and base != rewritten


def test_push_with_a_stale_lease_overwrites_nothing(remote):
    lease = run_git(remote.work, "rev-parse", "HEAD")
    theirs = _someone_else_pushes(remote)
    run_git(remote.work, "commit", "-q", "--amend", "-m", "rewritten")
    run_git(remote.work, "fetch", "-q")  # a background fetch must not make the lease pass
    with pytest.raises(gitops.LeaseRejected) as err:
        gitops.push(remote.repo, "main", lease_sha=lease)
    assert err.value.kind == "lease" and err.value.reason == "stale info"
    assert _remote_sha(remote, "main") == theirs


def test_push_with_an_empty_lease_only_creates(remote):
    run_git(remote.work, "switch", "-q", "-c", "fresh")
    assert gitops.push(remote.repo, "fresh", lease_sha="").outcome == "created"
    commit_files(remote.work, {"x.txt": "x\n"}, "x")
    with pytest.raises(gitops.LeaseRejected):
        gitops.push(remote.repo, "fresh", lease_sha="")


def test_push_never_passes_a_bare_force(remote, monkeypatch):
    seen: list[tuple[str, ...]] = []
    real = gitops.git

    def spy(*args: str, **kwargs: object) -> gitops.GitResult:
        seen.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(gitops, "git", spy)
    pushed = gitops.push(remote.repo, "main").new_sha
    gitops.push(remote.repo, "main", lease_sha=pushed)
    pushes = [a for a in seen if "push" in a]
    assert pushes and all("--force" not in a and "-f" not in a for a in pushes)
    assert all(not any(x.startswith("+") for x in a) for a in pushes)
    assert any(f"--force-with-lease=refs/heads/main:{pushed}" in a for a in pushes)


def test_push_refuses_a_short_lease_and_a_missing_branch(remote):
    with pytest.raises(ValueError, match="full commit sha"):
        gitops.push(remote.repo, "main", lease_sha="abc123")
    with pytest.raises(gitops.GitError, match="no local branch"):
        gitops.push(remote.repo, "ghost")


def test_push_to_an_unreachable_remote_is_a_plain_git_error(remote, tmp_path):
    run_git(remote.work, "remote", "add", "gone", str(tmp_path / "gone.git"))
    with pytest.raises(gitops.GitError) as err:
        gitops.push(remote.repo, "main", remote="gone")
    assert not isinstance(err.value, gitops.PushRejected)


def test_fetch_and_pull_fast_forward(remote):
    theirs = _someone_else_pushes(remote)
    before = run_git(remote.work, "rev-parse", "HEAD")
    gitops.fetch(remote.repo)
    assert run_git(remote.work, "rev-parse", "origin/main") == theirs
    result = gitops.pull_ff(remote.repo, "main")
    assert result == gitops.PullResult(before, theirs) and result.updated
    assert not gitops.pull_ff(remote.repo).updated


def test_pull_refuses_diverged_history_even_with_pull_rebase(remote):
    _someone_else_pushes(remote)
    mine = commit_files(remote.work, {"mine.txt": "mine\n"}, "mine")
    run_git(remote.work, "config", "pull.rebase", "true")
    with pytest.raises(gitops.NotFastForward):
        gitops.pull_ff(remote.repo, "main")
    assert run_git(remote.work, "rev-parse", "HEAD") == mine
    assert gitops.operation_in_progress(remote.repo.git_dir) is None


# --------------------------------------------------------------------------- branches

def test_branch_create_sets_no_upstream(remote):
    sha = gitops.branch_create(remote.repo, "topic", "origin/main")
    assert sha == run_git(remote.work, "rev-parse", "origin/main") == run_git(remote.work, "rev-parse", "topic")
    assert run_git(remote.work, "config", "--get", "branch.topic.merge", check=False) == ""
    assert gitops.status(remote.repo).branch == "main"  # creating does not switch


def test_branch_create_refuses_existing_names_and_bad_start_points(single_repo):
    repo = _repo(single_repo.repo)
    with pytest.raises(gitops.GitError, match="already exists"):
        gitops.branch_create(repo, "main")
    with pytest.raises(gitops.GitError, match="not a commit"):
        gitops.branch_create(repo, "topic", "no-such-ref")
    with pytest.raises(gitops.GitError):
        gitops.branch_create(repo, "bad..name")


def test_switch_changes_branch(single_repo):
    repo = _repo(single_repo.repo)
    gitops.branch_create(repo, "topic")
    gitops.switch(repo, "topic")
    assert gitops.status(repo).branch == "topic"


def test_switch_never_creates_a_branch_from_a_remote(remote):
    run_git(remote.other, "switch", "-q", "-c", "theirs")
    run_git(remote.other, "push", "-q", "origin", "theirs")
    run_git(remote.work, "fetch", "-q")
    with pytest.raises(gitops.GitError):
        gitops.switch(remote.repo, "theirs")
    assert not gitops.ref_exists(remote.repo, "refs/heads/theirs")


def test_switch_keeps_uncommitted_work_it_would_overwrite(single_repo):
    top = single_repo.repo
    repo = _repo(top)
    gitops.branch_create(repo, "topic")
    gitops.switch(repo, "topic")
    commit_files(top, {"README.md": "topic version\n"}, "topic")
    gitops.switch(repo, "main")
    (top / "README.md").write_text("precious local edit\n", encoding="utf-8")
    with pytest.raises(gitops.GitError, match="overwritten"):
        gitops.switch(repo, "topic")
    assert (top / "README.md").read_text() == "precious local edit\n"


def test_branch_delete_is_compare_and_swap(single_repo):
    top = single_repo.repo
    repo = _repo(top)
    sha = gitops.branch_create(repo, "topic")
    run_git(top, "config", "branch.topic.remote", "origin")
    with pytest.raises(gitops.RefMoved):
        gitops.branch_delete(repo, "topic", SHA_A)
    assert gitops.head_sha(repo, "refs/heads/topic") == sha
    gitops.branch_delete(repo, "topic", sha)
    assert not gitops.ref_exists(repo, "refs/heads/topic")
    assert run_git(top, "config", "--get", "branch.topic.remote", check=False) == ""
    with pytest.raises(gitops.RefMoved):
        gitops.branch_delete(repo, "topic", sha)


def test_branch_delete_refuses_a_checked_out_branch(linked_worktree):
    main = _repo(linked_worktree.main)
    for name, where in (("main", linked_worktree.main), (linked_worktree.branch, linked_worktree.worktree)):
        with pytest.raises(gitops.BranchCheckedOut) as err:
            gitops.branch_delete(main, name, gitops.head_sha(main, f"refs/heads/{name}"))
        assert err.value.worktree == where
        assert gitops.ref_exists(main, f"refs/heads/{name}")


def test_branch_delete_refuses_a_short_sha(single_repo):
    with pytest.raises(ValueError, match="full commit sha"):
        gitops.branch_delete(_repo(single_repo.repo), "main", "abc")


# --------------------------------------------------------------------------- worktrees

def test_worktree_list_reads_every_state(linked_worktree, tmp_path):
    main = _repo(linked_worktree.main)
    detached = gitops.worktree_add(main, tmp_path / "with space")
    run_git(main.top, "worktree", "lock", str(detached))
    gone = gitops.worktree_add(main, tmp_path / "gone", new_branch="gone")
    subprocess.run(["rm", "-rf", str(gone)], check=True)
    trees = {w.path: w for w in gitops.worktree_list(main)}
    assert list(trees)[0] == linked_worktree.main
    assert set(trees) == {linked_worktree.main, linked_worktree.worktree, detached, gone}
    assert trees[linked_worktree.worktree].branch == "feature"
    assert trees[detached].detached and trees[detached].locked and trees[detached].branch is None
    assert trees[gone].prunable and trees[gone].branch == "gone"
    assert all(len(w.head or "") == 40 for w in trees.values())


def test_worktree_add_with_a_new_branch_sets_no_upstream(remote, tmp_path):
    path = gitops.worktree_add(remote.repo, tmp_path / "wt", "origin/main", new_branch="fix")
    wt = _repo(path)
    assert wt.is_linked and gitops.status(wt).branch == "fix"
    assert run_git(remote.work, "config", "--get", "branch.fix.merge", check=False) == ""


def test_worktree_add_checks_out_an_existing_branch_or_detaches(remote, tmp_path):
    repo = remote.repo
    gitops.branch_create(repo, "existing")
    branches = gitops.local_branches(repo)
    on_branch = gitops.worktree_add(repo, tmp_path / "a", "existing")
    on_remote = gitops.worktree_add(repo, tmp_path / "b", "origin/main")
    at_head = gitops.worktree_add(repo, tmp_path / "c")
    assert gitops.status(_repo(on_branch)).branch == "existing"
    assert gitops.status(_repo(on_remote)).branch is None
    assert gitops.status(_repo(at_head)).branch is None
    assert gitops.local_branches(repo) == branches  # no branch named "c" or "b" appeared


def test_worktree_add_never_guesses_a_branch_from_a_remote(remote, tmp_path):
    run_git(remote.other, "switch", "-q", "-c", "theirs")
    run_git(remote.other, "push", "-q", "origin", "theirs")
    run_git(remote.work, "fetch", "-q")
    with pytest.raises(gitops.GitError, match="not a commit"):
        gitops.worktree_add(remote.repo, tmp_path / "theirs", "theirs")
    assert not (tmp_path / "theirs").exists()
    assert "theirs" not in gitops.local_branches(remote.repo)


def test_worktree_add_takes_relative_paths_from_the_top(single_repo):
    path = gitops.worktree_add(_repo(single_repo.repo), "../rel-wt", new_branch="rel")
    assert path == single_repo.repo.parent / "rel-wt" and _repo(path).is_linked


def test_worktree_remove_removes_only_a_clean_worktree(linked_worktree):
    main = _repo(linked_worktree.main)
    wt = linked_worktree.worktree
    (wt / "untracked.txt").write_text("unsaved\n", encoding="utf-8")
    with pytest.raises(gitops.GitError, match="untracked"):
        gitops.worktree_remove(main, wt)
    (wt / "untracked.txt").unlink()
    (wt / "README.md").write_text("modified\n", encoding="utf-8")
    with pytest.raises(gitops.GitError, match="modified"):
        gitops.worktree_remove(main, wt)
    run_git(wt, "checkout", "--", "README.md")
    gitops.worktree_remove(main, wt)
    assert not wt.exists() and [w.path for w in gitops.worktree_list(main)] == [linked_worktree.main]
    assert gitops.ref_exists(main, f"refs/heads/{linked_worktree.branch}")


# --------------------------------------------------------------------------- containment

def _feature(top: Path, files: dict[str, str] | None = None) -> None:
    run_git(top, "switch", "-q", "-c", "feature", "main")
    for i, (name, content) in enumerate((files or {"f1.txt": "one\n", "f2.txt": "two\n"}).items()):
        commit_files(top, {name: content}, f"feature {i}")
    run_git(top, "switch", "-q", "main")
    commit_files(top, {"main.txt": "main moved on\n"}, "main moves")


def test_containment_ancestor_after_a_merge(single_repo):
    top = single_repo.repo
    _feature(top)
    run_git(top, "merge", "-q", "--no-edit", "feature")
    assert gitops.containment(_repo(top), "feature", "main") == "ancestor"


def test_containment_patch_id_after_a_rebase_or_cherry_pick(single_repo):
    top = single_repo.repo
    _feature(top)
    for sha in run_git(top, "rev-list", "--reverse", "main..feature").splitlines():
        run_git(top, "cherry-pick", sha)
    assert gitops.containment(_repo(top), "feature", "main") == "patch-id"


def test_containment_squash_after_a_squash_merge(single_repo):
    top = single_repo.repo
    _feature(top)
    run_git(top, "merge", "-q", "--squash", "feature")
    run_git(top, "commit", "-q", "-m", "squashed feature")
    repo = _repo(top)
    assert gitops.containment(repo, "feature", "main") == "squash"
    assert gitops.containment(repo, "feature", "refs/heads/main") == "squash"


def test_containment_squash_works_without_a_configured_identity(single_repo, tmp_path, monkeypatch):
    top = single_repo.repo
    _feature(top)
    run_git(top, "merge", "-q", "--squash", "feature")
    run_git(top, "commit", "-q", "-m", "squashed feature")
    for var in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"):
        monkeypatch.delenv(var)
    bare_config = tmp_path / "no-identity"
    bare_config.write_text("[user]\n\tuseConfigOnly = true\n", encoding="utf-8")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(bare_config))
    assert gitops.containment(_repo(top), "feature", "main") == "squash"


def test_containment_none_for_unmerged_or_partly_merged_work(single_repo):
    top = single_repo.repo
    _feature(top)
    repo = _repo(top)
    assert gitops.containment(repo, "feature", "main") is None
    first = run_git(top, "rev-list", "--reverse", "main..feature").splitlines()[0]
    run_git(top, "cherry-pick", first)
    assert gitops.containment(repo, "feature", "main") is None


def test_containment_none_for_unrelated_history(single_repo):
    top = single_repo.repo
    run_git(top, "switch", "-q", "--orphan", "island")
    commit_files(top, {"island.txt": "alone\n"}, "island")
    assert gitops.containment(_repo(top), "island", "main") is None


def test_containment_fails_closed_on_a_bad_ref(single_repo):
    with pytest.raises(gitops.GitError):
        gitops.containment(_repo(single_repo.repo), "no-such-branch", "main")


# --------------------------------------------------------------------------- unpushed

def test_unpushed_against_the_upstream(remote):
    commit_files(remote.work, {"a.txt": "a\n"}, "a")
    commit_files(remote.work, {"b.txt": "b\n"}, "b")
    assert gitops.unpushed(remote.repo, "main") == 2


def test_unpushed_against_origin_branch_without_an_upstream(remote):
    run_git(remote.work, "switch", "-q", "-c", "topic")
    run_git(remote.work, "push", "-q", "origin", "topic")
    commit_files(remote.work, {"a.txt": "a\n"}, "a")
    assert run_git(remote.work, "config", "--get", "branch.topic.merge", check=False) == ""
    assert gitops.unpushed(remote.repo, "topic") == 1


def test_unpushed_without_any_remote_branch_counts_what_no_remote_has(remote):
    run_git(remote.work, "switch", "-q", "-c", "local-only")
    commit_files(remote.work, {"a.txt": "a\n"}, "a")
    commit_files(remote.work, {"b.txt": "b\n"}, "b")
    assert gitops.unpushed(remote.repo, "local-only") == 2


def test_unpushed_with_no_remotes_counts_everything(single_repo):
    commit_files(single_repo.repo, {"a.txt": "a\n"}, "a")
    assert gitops.unpushed(_repo(single_repo.repo), "main") == 2


def test_unpushed_when_the_upstream_branch_is_gone(remote):
    run_git(remote.work, "switch", "-q", "-c", "topic")
    commit_files(remote.work, {"a.txt": "a\n"}, "a")
    run_git(remote.work, "push", "-q", "-u", "origin", "topic")
    run_git(remote.work, "push", "-q", "origin", "--delete", "topic")
    assert gitops.unpushed(remote.repo, "topic") == 1


# --------------------------------------------------------------------------- value types

@gitops.record(frozen=True)
class _Point:
    x: int
    y: int = 0


@gitops.record
class _Box:
    size: int
    items: list[int] = gitops.field(default_factory=list)


def test_a_record_takes_arguments_and_defaults_as_a_dataclass_does():
    p = _Point(1, y=2)
    assert (p.x, p.y) == (1, 2) and _Point(1).y == 0
    assert _Point(1) == _Point(x=1, y=0) and _Point(1) != _Point(2) and hash(_Point(1)) == hash(_Point(x=1))
    assert repr(_Point(1, 2)) == "_Point(x=1, y=2)" and repr(_Box(1)) == "_Box(size=1, items=[])"
    assert _Box(1).items is not _Box(1).items  # a factory default is made per instance
    assert gitops.replace(p, y=5) == _Point(1, 5) and p.y == 2
    for bad in (lambda: _Point(), lambda: _Point(1, 2, 3), lambda: _Point(1, x=2), lambda: _Point(1, z=3)):
        with pytest.raises(TypeError):
            bad()


def test_a_frozen_record_refuses_assignment_and_a_mutable_one_is_unhashable():
    p = _Point(1)
    with pytest.raises(AttributeError):
        p.x = 2  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del p.y  # type: ignore[misc]
    box = _Box(3)
    box.items.append(1)
    box.size = 4
    assert box == _Box(4, [1])
    with pytest.raises(TypeError):
        hash(box)


# --------------------------------------------------------------------------- JSON without the json package

_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.tuples(inner) | st.dictionaries(
        st.text(max_size=8) | st.integers() | st.booleans() | st.none() | st.floats(allow_nan=False), inner,
        max_size=4),
    max_leaves=12)
_JSON_SETTINGS = settings(max_examples=300, deadline=None, derandomize=True, database=None)


@_JSON_SETTINGS
@given(value=_JSON_VALUES, ensure_ascii=st.booleans(),
       separators=st.sampled_from([(", ", ": "), (",", ":"), (" , ", " : ")]))
def test_to_json_writes_what_json_dumps_writes(value, ensure_ascii, separators):
    assert gitops.to_json(value, ensure_ascii=ensure_ascii, separators=separators) == \
        json.dumps(value, ensure_ascii=ensure_ascii, separators=separators)


@_JSON_SETTINGS
@given(value=_JSON_VALUES, pad=st.sampled_from(["", " ", "\n\t ", "\r\n"]))
def test_from_json_reads_what_json_loads_reads(value, pad):
    text = pad + json.dumps(value) + pad
    assert repr(gitops.from_json(text)) == repr(json.loads(text))


@_JSON_SETTINGS
@given(text=st.text(alphabet='{}[]":,. \\0123456789eE+-truefalsnNaIiy\u00e9\ud800', max_size=20))
def test_from_json_fails_where_json_loads_fails_with_its_error(text):
    try:
        expected: object = repr(json.loads(text))
    except Exception as exc:  # whatever json raises, from_json must raise too
        expected = (type(exc), str(exc))
    try:
        got: object = repr(gitops.from_json(text))
    except Exception as exc:
        got = (type(exc), str(exc))
    assert got == expected


def test_to_json_refuses_what_json_refuses_and_takes_a_default():
    for bad in ({1, 2}, object(), {(1, 2): 3}):
        with pytest.raises(TypeError):
            gitops.to_json(bad)
    circular: list[object] = []
    circular.append(circular)
    with pytest.raises(ValueError):
        gitops.to_json(circular)
    assert gitops.to_json({"p": Path("/x")}, default=str) == json.dumps({"p": Path("/x")}, default=str)


def test_to_json_and_from_json_import_neither_json_nor_re():
    probe = ("import sys, gitops\n"
             "assert gitops.from_json(gitops.to_json({'a': [1, 2.5, 'é', None, True]})) == "
             "{'a': [1, 2.5, 'é', None, True]}\n")
    assert modules_imported(probe, gitops) == "[]"


def test_packed_refs_and_commondir_are_read_alike_by_the_rules_and_the_hook(tmp_path: Path) -> None:
    """One packed-refs file (a header, a peeled tag, lines ended by CRLF as an editor on Windows leaves
    them) and one commondir, as madtea's branch list and the hook's ref lookup read them."""
    sha = "a" * 40
    common = tmp_path / "repo.git"
    (common / "refs" / "heads").mkdir(parents=True)
    (common / "packed-refs").write_bytes(
        f"# pack-refs with: peeled fully-peeled sorted \r\n{sha} refs/heads/main\r\n{sha} refs/tags/v1\r\n"
        f"^{'b' * 40}\r\n{sha} refs/remotes/origin/feat\r\n".encode())
    assert gitops.fs_branches(common) == {"main"}
    assert [guard._ref_kind(str(common), n) for n in ("main", "v1", "origin/feat", "feat", "x")] == \
        ["branch", "tag", "tracking", "remote:origin", None]
    linked = common / "worktrees" / "wt"
    linked.mkdir(parents=True)
    (linked / "HEAD").write_text("ref: refs/heads/main\n")
    (linked / "refs").mkdir()
    (linked / "commondir").write_text("../..\r\n")
    assert guard._git_dir_itself(str(linked)) == (str(linked), str(linked), str(common))


def test_origin_head_is_what_git_recorded_and_remote_head_what_the_remote_says(tmp_path, hermetic_seal):
    bare = make_bare(tmp_path / "origin.git")
    run_git(bare, "symbolic-ref", "HEAD", "refs/heads/trunk")
    repo_path = make_repo(tmp_path / "r", origin=str(bare), branch="trunk")
    run_git(repo_path, "push", "-q", "-u", "origin", "trunk")
    repo = gitops.discover(repo_path)
    assert gitops.origin_head(repo) is None  # push -u records none
    assert gitops.remote_head(repo) == "trunk"
    run_git(repo_path, "remote", "set-head", "origin", "trunk")
    assert gitops.origin_head(repo) == "trunk" == run_git(repo_path, "symbolic-ref", "--short",
                                                          "refs/remotes/origin/HEAD").removeprefix("origin/")
    run_git(repo_path, "remote", "set-url", "origin", str(tmp_path / "gone.git"))
    assert gitops.remote_head(repo) is None


def _urls_as_git_lists_them(repo: Path, remote: str) -> tuple[str | None, list[str], list[str]]:
    """The written address (``config --get``) and the addresses ``git remote -v`` says git uses."""
    written = run_git(repo, "config", "--get", f"remote.{remote}.url", check=False)
    fetch, push = [], []
    for line in run_git(repo, "remote", "-v").splitlines():
        name, _, rest = line.partition("\t")
        url, _, kind = rest.rpartition(" ")
        if name == remote:
            (fetch if kind == "(fetch)" else push).append(url)
    return (written.splitlines()[-1] if written else None), fetch, push


@pytest.mark.parametrize("setup, remote, calls", [
    ([], "origin", 2),  # no address in the config: git lists what it uses
    ([["remote", "add", "origin", "https://h.example/o/r.git"]], "origin", 1),
    ([["remote", "add", "origin", "https://h.example/o/r.git"],
      ["config", "--add", "remote.origin.url", "ssh://git@h.example/o/r"]], "origin", 1),
    ([["remote", "add", "origin", "https://h.example/o/r.git"], ["config", "--add", "remote.origin.url", ""]],
     "origin", 1),
    ([["remote", "add", "origin", "https://h.example/o/a b.git"]], "origin", 1),
    ([["remote", "add", "up.stream", "https://h.example/o/r.git"]], "up.stream", 1),
    ([["remote", "add", "origin", "https://h.example/o/r.git"],
      ["config", "remote.origin.pushurl", "https://other.example/o/r.git"]], "origin", 2),
    ([["remote", "add", "origin", "https://h.example/o/r.git"],
      ["config", "--global", "url.https://mirror.example/.insteadOf", "https://h.example/"]], "origin", 2),
    ([["remote", "add", "origin", "https://h.example/o/r.git"],
      ["config", "url.ssh://git@h.example/.pushInsteadOf", "https://h.example/"]], "origin", 2),
    ([["remote", "add", "origin", "https://h.example/o/r.git"],
      ["config", "url.https://nowhere.example/.insteadOf", "https://elsewhere.example/"]], "origin", 2),
    ([["config", "include.path", "remote.inc"]], "origin", 1),
])
def test_remote_urls_are_what_git_lists(tmp_path: Path, hermetic_seal: Path, setup: list[list[str]], remote: str,
                                        calls: int) -> None:
    repo = make_repo(tmp_path / "r")
    (repo / ".git" / "remote.inc").write_text('[remote "origin"]\n\turl = https://h.example/o/inc.git\n')
    for args in setup:
        run_git(repo, *args)
    pinned = _repo(repo)
    before = gitops.call_count()
    assert gitops.remote_urls(pinned, remote) == _urls_as_git_lists_them(repo, remote)
    assert gitops.call_count() - before == calls



def test_a_pull_requests_head_is_fetched_with_gits_progress_when_the_call_reports(tmp_path: Path,
                                                                                  hermetic_seal: Path) -> None:
    bare = make_bare(tmp_path / "origin.git")
    work = make_repo(tmp_path / "work", origin=str(bare), files={f"f{n}.txt": f"{n}\n" for n in range(20)})
    run_git(work, "push", "-q", "origin", "HEAD:refs/pull/1/head")
    clone = make_repo(tmp_path / "clone", origin=str(bare), commit=False)
    call = gitops.Call(None, reporting=True)
    token = gitops.CALL.set(call)
    try:
        gitops.fetch_pull_head(_repo(clone), 1, "pr-1")
    finally:
        gitops.CALL.reset(token)
    assert run_git(clone, "rev-parse", "refs/heads/pr-1") == run_git(work, "rev-parse", "HEAD")
    assert call.said[0] >= 2 and call.said[1].startswith("git: "), call.said  # git's own lines, as for a pull
