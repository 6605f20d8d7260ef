"""finish reads where the work stands from git and the forge, so it completes from every state it can stop in.

Each test stops a finish somewhere (a step that fails, fails again, or a process that dies between two
steps) and then follows the way on the result names, or runs the same finish again as an agent would after
a kill. What is asserted is what a user sees: one commit, one push, one pull request, one merge, and the
checkout where the result says it is.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

import gitops
import madtea
from fakeforge import DEFAULT_TOKEN, FakeForge
from remote_env import clone_of
from topologies import run_git, write_files

CLOSING = "nothing left to verify for this step."
REAL_SWITCH = gitops.switch


class Killed(BaseException):
    """A process that dies where it stands: nothing after this point runs and no result is written."""


def finish(where: Path, **args: Any) -> madtea.Result:
    return madtea.run("madt_finish", args, madtea.Context("mcp", where))


def follow(result: madtea.Result, where: Path) -> madtea.Result:
    """Run every step of the way on, in order, as an agent does; the last step's result."""
    assert result.error and result.error.get("next"), result.text
    out = result
    for step in result.error["next"]:
        assert "tool" in step, step
        out = madtea.run(step["tool"], step["args"], madtea.Context("mcp", where))
    return out


def pulls(forge: FakeForge) -> list[Any]:
    return [i for i in forge.repo("acme", "web").issues.values() if i.pull is not None]


def fail_pushes(forge: FakeForge, times: int, message: str = "the server answered 429 Too Many Requests") -> None:
    """The forge's git side refuses the next *times* pushes, as a rate limit or a proxy does."""
    hook = forge.bare_path("acme", "web") / "hooks" / "pre-receive"
    (hook.parent.parent / "fails").write_text(str(times))  # a bare repository's hooks run in it
    hook.write_text("#!/bin/sh\nn=$(cat fails)\nif [ \"$n\" -gt 0 ]; then echo $((n-1)) > fails; "
                    f"echo '{message}' >&2; exit 1; fi\ncat >/dev/null\n")
    hook.chmod(hook.stat().st_mode | stat.S_IXUSR)


def kill_after(monkeypatch: pytest.MonkeyPatch, name: str, when: Any = lambda *a, **k: True) -> list[bool]:
    """Kill the process right after gitops' *name* returns (the first time *when* holds for its arguments)."""
    real = getattr(gitops, name)
    fired: list[bool] = []

    def step(*args: Any, **kwargs: Any) -> Any:
        out = real(*args, **kwargs)
        if not fired and when(*args, **kwargs):
            fired.append(True)
            raise Killed(name)
        return out

    monkeypatch.setattr(gitops, name, step)
    return fired


def one_of_each(forge: FakeForge, clone: Path, branch: str = "feat") -> Any:
    """Exactly one pull request, merged, and exactly one commit of a.py on the branch."""
    [pr] = pulls(forge)
    assert pr.pull.merged
    assert run_git(clone, "rev-list", "--count", branch) == "2"  # initial, a
    assert forge.git("acme", "web", "rev-list", "--count", "main") == "3"  # initial, a, one merge commit
    return pr


@pytest.fixture
def web(fake_forge: FakeForge, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    clone = clone_of(fake_forge, tmp_path / "web")
    run_git(clone, "switch", "-q", "-c", "feat")
    write_files(clone, {"a.py": "print('a')\n"})
    monkeypatch.setenv("MADTEA_TOKEN", DEFAULT_TOKEN)
    return clone


@pytest.fixture
def linked(fake_forge: FakeForge, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """The primary checkout on main, and a linked worktree on feat with an uncommitted a.py (as agents work)."""
    primary = clone_of(fake_forge, tmp_path / "web")
    wt = tmp_path / "wt"
    run_git(primary, "worktree", "add", "-q", "-b", "feat", str(wt), "main")
    wt = Path(os.path.realpath(wt))
    write_files(wt, {"a.py": "print('a')\n"})
    monkeypatch.setenv("MADTEA_TOKEN", DEFAULT_TOKEN)
    return primary, wt


# --------------------------------------------------------------------------- a linked worktree

def test_a_finish_in_a_linked_worktree_leaves_it_at_the_merge_and_main_where_it_is(
        fake_forge: FakeForge, linked: tuple[Path, Path]) -> None:
    primary, wt = linked
    main_before = run_git(primary, "rev-parse", "main")
    result = finish(wt, title="Add a", files=["a.py"])
    assert not result.is_error, result.text
    pr = one_of_each(fake_forge, wt)
    merge = fake_forge.branch_sha("acme", "web", "main")
    # This worktree stands at the merge, detached; feat keeps its commit; the primary's main is not moved.
    assert run_git(wt, "rev-parse", "HEAD") == merge
    assert run_git(wt, "branch", "--show-current") == ""
    assert run_git(primary, "rev-parse", "main") == main_before
    assert run_git(primary, "branch", "--show-current") == "main"
    assert f"main is checked out at {primary}" in result.text
    assert f"detached at {merge[:9]}" in result.text
    assert result.data["checkout"] == {"dir": str(wt), "detached": merge, "branch": None}
    assert result.text.endswith(CLOSING)
    # The same finish again finds the work done and changes nothing.
    fake_forge.clear_requests()
    again = finish(wt, title="Add a", files=["a.py"])
    assert not again.is_error, again.text
    assert f"PR #{pr.number} was already merged" in again.text
    assert not fake_forge.find_requests("POST") and len(pulls(fake_forge)) == 1
    assert run_git(wt, "rev-parse", "HEAD") == merge


def test_a_finish_in_a_linked_worktree_switches_to_main_when_no_worktree_has_it(
        fake_forge: FakeForge, linked: tuple[Path, Path]) -> None:
    primary, wt = linked
    run_git(primary, "switch", "-q", "-c", "other")
    result = finish(wt, title="Add a", files=["a.py"])
    assert not result.is_error, result.text
    merge = fake_forge.branch_sha("acme", "web", "main")
    assert run_git(wt, "branch", "--show-current") == "main"
    assert run_git(wt, "rev-parse", "HEAD") == merge
    assert run_git(primary, "branch", "--show-current") == "other"


# --------------------------------------------------------------------------- a second failure

def test_a_resume_that_fails_again_still_offers_a_resume(fake_forge: FakeForge, web: Path) -> None:
    fail_pushes(fake_forge, 2)
    first = finish(web, title="Add a", files=["a.py"])
    assert first.is_error and first.error["next"], first.text
    commit = first.data["commit"]
    second = follow(first, web)
    # Nothing was done by the resume itself, yet it names what it found and offers the resume again.
    assert second.is_error and second.error["next"], second.text
    assert second.error.get("user_action") is None
    assert f"feat is at {commit[:9]}" in second.text
    assert second.error["next"][0] == {"tool": "madt_finish", "args": {"title": "Add a"}}
    third = follow(second, web)
    assert not third.is_error, third.text
    one_of_each(fake_forge, web)
    assert run_git(web, "rev-parse", "HEAD") == fake_forge.branch_sha("acme", "web", "main")


# --------------------------------------------------------------------------- the last step

def test_a_failed_last_step_says_where_the_checkout_is_and_its_resume_completes(
        fake_forge: FakeForge, web: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = gitops.fetch
    calls: list[bool] = []

    def fetch(*args: Any, **kwargs: Any) -> None:
        if not calls:
            calls.append(True)
            raise gitops.GitError(["git", "fetch"], 128, "fatal: unable to access: Connection reset by peer")
        real(*args, **kwargs)

    monkeypatch.setattr(gitops, "fetch", fetch)
    first = finish(web, title="Add a", files=["a.py"])
    assert first.is_error, first.text
    assert "the checkout is still on feat" in first.text
    done = follow(first, web)
    assert not done.is_error, done.text
    one_of_each(fake_forge, web)
    assert run_git(web, "branch", "--show-current") == "main"
    assert run_git(web, "rev-parse", "HEAD") == fake_forge.branch_sha("acme", "web", "main")
    assert run_git(web, "for-each-ref", "--format=%(refname:short)", "refs/heads/") == "feat\nmain"


def test_the_same_finish_after_a_kill_on_main_completes_on_main(
        fake_forge: FakeForge, web: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Killed right after the switch home; meanwhile main moved on the forge: the same call pulls and ends."""
    kill_after(monkeypatch, "switch", lambda repo, branch: branch == "main")
    with pytest.raises(Killed):
        finish(web, title="Add a", files=["a.py"])
    monkeypatch.setattr(gitops, "switch", REAL_SWITCH)
    assert run_git(web, "branch", "--show-current") == "main"
    later = fake_forge.commit("acme", "web", "main", {"b.py": "b\n"}, "someone else's")
    again = finish(web, title="Add a", files=["a.py"])
    assert not again.is_error, again.text
    assert "already on main" in again.text
    assert run_git(web, "rev-parse", "HEAD") == later
    assert len(pulls(fake_forge)) == 1
    assert run_git(web, "for-each-ref", "--format=%(refname:short)", "refs/heads/") == "feat\nmain"


def test_finish_on_main_with_changed_files_is_still_refused(fake_forge: FakeForge, web: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Coming home from a merged branch does not make the default branch a place to commit."""
    kill_after(monkeypatch, "switch", lambda repo, branch: branch == "main")
    with pytest.raises(Killed):
        finish(web, title="Add a", files=["a.py"])
    monkeypatch.setattr(gitops, "switch", REAL_SWITCH)
    write_files(web, {"c.py": "c\n"})
    result = finish(web, title="Add c", files=["c.py"])
    assert result.error and result.error["code"] == "DEFAULT_BRANCH", result.text


# --------------------------------------------------------------------------- nothing left behind

def marks(clone: Path) -> list[str]:
    return sorted(n for n in os.listdir(clone / ".git") if n.startswith("madtea-push-"))


def test_a_push_killed_after_origin_took_it_leaves_no_mark_once_the_finish_completes(
        fake_forge: FakeForge, web: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_git = gitops.git
    kill_after(monkeypatch, "git", lambda *args, **kwargs: "push" in args)
    with pytest.raises(Killed):
        finish(web, title="Add a", files=["a.py"])
    monkeypatch.setattr(gitops, "git", real_git)
    assert len(marks(web)) == 1  # the push's mark outlives the kill, as it must
    status = madtea.run("madt_status", {}, madtea.Context("mcp", web))
    assert "was interrupted" in status.text
    done = finish(web, title="Add a", files=["a.py"])
    assert not done.is_error, done.text
    assert "Found: origin has feat at" in done.text and "Pushed" not in done.text
    one_of_each(fake_forge, web)
    assert marks(web) == []
    status = madtea.run("madt_status", {}, madtea.Context("mcp", web))
    assert "a push of" not in status.text and status.data["interrupted_pushes"] == []


# --------------------------------------------------------------------------- the sha sent

def test_the_sha_pushed_and_merged_is_the_one_finish_read_though_another_writer_commits_meanwhile(
        fake_forge: FakeForge, web: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = gitops.push

    def push(repo: Any, branch: str, *args: Any, **kwargs: Any) -> Any:
        monkeypatch.setattr(gitops, "push", real)
        write_files(web, {"theirs.py": "another writer's\n"})
        run_git(web, "add", "theirs.py")
        run_git(web, "commit", "-q", "-m", "another writer's commit")  # lands on feat after finish read it
        return real(repo, branch, *args, **kwargs)

    monkeypatch.setattr(gitops, "push", push)
    fake_forge.clear_requests()
    result = finish(web, title="Add a", files=["a.py"])
    assert not result.is_error, result.text
    commit = result.data["commit"]
    assert result.data["pushed"] == commit
    [merge] = fake_forge.find_requests("POST", "/merge")
    assert merge.json["head_commit_id"] == commit
    [pr] = pulls(fake_forge)
    assert pr.pull.merged
    main = fake_forge.branch_sha("acme", "web", "main")
    assert fake_forge.git("acme", "web", "ls-tree", "--name-only", main).split() == ["README.md", "a.py"]
    theirs = run_git(web, "rev-parse", "feat")
    assert theirs != commit and run_git(web, "rev-parse", "feat~1") == commit  # their commit is kept, unsent


def test_a_failure_in_the_first_step_offers_the_same_call(fake_forge: FakeForge, web: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing found, nothing done: still a step that failed, so the way on is the call, not a person."""
    real = gitops.commit

    def commit(*args: Any, **kwargs: Any) -> str:
        monkeypatch.setattr(gitops, "commit", real)
        raise gitops.GitError(["git", "commit"], 128, "fatal: unable to write new index file")

    monkeypatch.setattr(gitops, "commit", commit)
    first = finish(web, title="Add a", files=["a.py"])
    assert first.is_error and first.error.get("user_action") is None, first.text
    assert first.error["next"][0] == {"tool": "madt_finish", "args": {"title": "Add a", "files": ["a.py"]}}
    assert "the checkout is still on feat" in first.text
    done = follow(first, web)
    assert not done.is_error, done.text
    one_of_each(fake_forge, web)


def test_status_lists_no_interrupted_push_of_work_origin_main_already_holds(fake_forge: FakeForge, web: Path) -> None:
    """A mark left by an older run, whose sha origin's main has since taken in, is settled, not news."""
    done = finish(web, title="Add a", files=["a.py"])
    assert not done.is_error, done.text
    merged = done.data["commit"]
    run_git(web, "switch", "-q", "-c", "next")
    write_files(web, {"n.py": "n\n"})
    run_git(web, "add", "n.py")
    run_git(web, "commit", "-q", "-m", "next")
    unpushed = run_git(web, "rev-parse", "HEAD")
    dead = 2 ** 22 + 12345  # a pid no process has here
    for branch, sha in (("feat", merged), ("next", unpushed)):
        (web / ".git" / ("madtea-push-" + branch.encode().hex())).write_text(f"{branch}\n{sha}\n{dead}\n")
    status = madtea.run("madt_status", {}, madtea.Context("mcp", web))
    assert "a push of feat" not in status.text
    assert f"a push of next ({unpushed[:9]}) was interrupted" in status.text
    assert [p["branch"] for p in status.data["interrupted_pushes"]] == ["next"]
