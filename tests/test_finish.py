"""madt_finish end to end: real git, a fake Gitea and a fake Forgejo, every step and every way a step fails.

Each test clones ``acme/web`` from the fake forge over its http URL (git is
pointed at the bare repositories by ``rewrite_git_urls``), gives madtea the
launch host's token through ``MADTEA_TOKEN`` and drives ``madtea.run`` as the
MCP server would. What is asserted is what a user can see: the result's text
and codes, the forge's state (pull requests, issues, the bare repository's
branches) and the local checkout.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pytest

import madtea
from fakeforge import DEFAULT_TOKEN, FakeForge
from remote_env import clone_of
from topologies import assert_only_changed, make_repo, run_git, snapshot, write_files

ROOT = Path(__file__).resolve().parent.parent
STYLES = ("merge", "squash", "rebase", "rebase-merge", "fast-forward-only")
CLOSING = "nothing left to verify for this step."
_KEYWORD = re.compile(r"\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\b:?\s+#\d+", re.IGNORECASE)


# --------------------------------------------------------------------------- helpers

@dataclass
class Work:
    """A clone of acme/web on branch ``feat`` with an uncommitted new file ``a.py``."""

    forge: FakeForge
    clone: Path

    def finish(self, _dir: Path | None = None, **args: Any) -> madtea.Result:
        return madtea.run("madt_finish", args, madtea.Context("mcp", _dir or self.clone))

    def pulls(self, repo: str = "web") -> list[Any]:
        return [i for i in self.forge.repo("acme", repo).issues.values() if i.pull is not None]

    def bare(self, *args: str, repo: str = "web") -> str:
        return self.forge.git("acme", repo, *args)

    def local(self, *args: str) -> str:
        return run_git(self.clone, *args)


@pytest.fixture
def work(fake_forge: FakeForge, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Work:
    clone = clone_of(fake_forge, tmp_path / "web")
    run_git(clone, "switch", "-q", "-c", "feat")
    write_files(clone, {"a.py": "print('a')\n"})
    monkeypatch.setenv("MADTEA_TOKEN", DEFAULT_TOKEN)
    return Work(fake_forge, clone)


@pytest.fixture
def quick_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    """The mergeability poll without its pauses: the count of looks is what matters here."""
    real = madtea.wait_mergeable
    monkeypatch.setattr(madtea, "wait_mergeable", lambda a, n, attempts=10, delay=0.5: real(a, n, attempts, 0))


def wrap(monkeypatch: pytest.MonkeyPatch, name: str, before: Callable[[], None] | None = None,
         after: Callable[[], None] | None = None) -> None:
    """Run *before*/*after* around one madtea step, exactly once (the next call is the real one)."""
    real = getattr(madtea, name)
    fired = []

    def step(*args: Any, **kwargs: Any) -> Any:
        if fired:
            return real(*args, **kwargs)
        fired.append(True)
        if before:
            before()
        out = real(*args, **kwargs)
        if after:
            after()
        return out

    monkeypatch.setattr(madtea, name, step)


def sneak_in_before(monkeypatch: pytest.MonkeyPatch, w: Work, name: str) -> None:
    """Someone else pushes an unreviewed commit to feat just before madtea's step *name* runs."""
    wrap(monkeypatch, name, before=lambda: w.forge.commit("acme", "web", "feat", {"b.py": "sneaked in\n"},
                                                          "not reviewed"))


def assert_ok(result: madtea.Result) -> None:
    assert not result.is_error, f"{result.error}\n{result.text}"


def assert_nothing_merged(w: Work, main_before: str) -> None:
    assert w.forge.branch_sha("acme", "web", "main") == main_before
    assert all(not p.pull.merged and p.state == "open" for p in w.pulls())


# --------------------------------------------------------------------------- the happy path, every style

@pytest.mark.parametrize("style", STYLES)
def test_finish_merges_with_each_style_and_comes_home(work: Work, style: str) -> None:
    w = work
    main_before = w.forge.branch_sha("acme", "web", "main")
    w.forge.clear_requests()
    result = w.finish(title="Add a", files=["a.py"], style=style)
    assert_ok(result)
    commit = result.data["commit"]
    [pr] = w.pulls()
    merge = w.forge.branch_sha("acme", "web", "main")
    assert pr.pull.merged and pr.state == "closed" and pr.pull.merge_commit_sha == merge
    # The local default branch is back, and at the forge's merge commit.
    assert w.local("branch", "--show-current") == "main"
    assert w.local("rev-parse", "HEAD") == merge
    assert w.local("status", "--porcelain") == ""
    # Each style leaves its own shape on the forge's main.
    parents = w.bare("rev-list", "--parents", "-n", "1", merge).split()[1:]
    if style in ("merge", "rebase-merge"):
        assert len(parents) == 2 and parents[0] == main_before
    elif style == "squash":
        assert parents == [main_before] and w.bare("show", "-s", "--format=%s", merge) == "Add a"
    else:  # rebase onto an unmoved base and fast-forward-only both land the commit itself
        assert merge == commit
    assert w.forge.branch_sha("acme", "web", "feat") is None  # delete_branch defaults to true
    # Every step is named with its identifiers, then the closing line.
    lines = result.text.splitlines()
    assert lines[0] == f"acme/web @ {w.clone} (feat)"
    assert lines[1] == f"Committed {commit[:9]} on feat (1 file: a.py)"
    assert lines[2] == f"Pushed feat to origin ({commit[:9]})"
    assert lines[3].startswith(f"Opened PR #{pr.number} (feat → main) http")
    assert lines[4] == (f"Merged PR #{pr.number} by {style} into main at {merge[:9]} (head {commit[:9]}). "
                        f"Deleted remote branch feat.")
    assert lines[5] == f"Switched to main and pulled to {merge[:9]}"
    assert lines[6] == f"PR #{pr.number} is merged on the forge and your local main is at {merge[:9]}; {CLOSING}"
    assert len(lines) == 7
    assert result.data["pr"] == pr.number and result.data["merge_commit"] == merge == result.data["local"]
    merges = w.forge.find_requests("POST", "/merge")
    assert len(merges) == 1 and merges[0].json["Do"] == style and merges[0].json["head_commit_id"] == commit
    assert merges[0].json["delete_branch_after_merge"] is True


def test_one_finish_is_one_call_and_a_handful_of_requests(work: Work) -> None:
    """The round trips of one finish, from the fake's own record: 7 requests when this was written."""
    work.forge.clear_requests()
    assert_ok(work.finish(title="Add a", files=["a.py"]))
    seen = [f"{r.method} {r.path}" for r in work.forge.requests]
    assert len(work.forge.find_requests("POST")) == 2  # create the PR, merge it: nothing written twice
    print(f"[{work.forge.flavour}] one finish: {len(seen)} requests: {seen}")
    # Merge on green adds two reads before the merge: the head's commit statuses and its Actions runs.
    assert len(seen) <= 10, seen
    assert sum(1 for r in seen if r.endswith("/statuses") or r.endswith("/actions/runs")) == 2, seen


def test_waits_for_the_mergeability_check(work: Work, quick_polls: None) -> None:
    work.forge.mergeable_delay = 2
    result = work.finish(title="Add a", files=["a.py"])
    assert_ok(result)
    assert "Waited for the forge's mergeability check (3 looks)" in result.text
    assert work.pulls()[0].pull.merged


def test_cli_finish_in_a_subprocess(work: Work) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "madtea", "finish", "-t", "Add a", "--squash", "a.py"],
                          cwd=work.clone, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    [pr] = work.pulls()
    merge = work.forge.branch_sha("acme", "web", "main")
    assert pr.pull.merged and merge == pr.pull.merge_commit_sha
    assert f"Merged PR #{pr.number} by squash into main at {merge[:9]}" in proc.stdout
    assert CLOSING not in proc.stdout and "nothing left to verify" not in proc.stdout
    assert work.local("rev-parse", "HEAD") == merge


# --------------------------------------------------------------------------- reuse

def test_an_open_pr_is_reused_not_duplicated(work: Work) -> None:
    w = work
    run_git(w.clone, "add", "a.py")
    run_git(w.clone, "commit", "-q", "-m", "Add a")
    run_git(w.clone, "push", "-q", "-u", "origin", "feat")
    opened = w.forge.create_pull("acme", "web", "feat", title="Add a")
    write_files(w.clone, {"b.py": "print('b')\n"})
    w.forge.clear_requests()
    result = w.finish(title="Add b", files=["b.py"])
    assert_ok(result)
    assert f"Reused the open PR #{opened['number']} (feat → main)" in result.text
    assert w.forge.find_requests("POST", "/pulls") == w.forge.find_requests("POST", "/merge")  # no create
    [pr] = w.pulls()
    assert pr.number == opened["number"] and pr.pull.merged
    assert w.bare("rev-list", "--count", "main") == "4"  # initial, a, b, the merge commit


def test_nothing_to_finish(work: Work) -> None:
    (work.clone / "a.py").unlink()
    work.forge.clear_requests()
    result = work.finish()
    assert_ok(result)
    assert result.text == (f"Nothing to finish on feat in acme/web @ {work.clone} (feat): nothing to commit, "
                           f"nothing unpushed and no open pull request.")
    assert not work.forge.find_requests("POST") and not work.pulls()
    assert work.local("branch", "--show-current") == "feat"


# --------------------------------------------------------------------------- the forge refuses

def test_head_moved_between_push_and_merge(work: Work, monkeypatch: pytest.MonkeyPatch) -> None:
    w = work
    main_before = w.forge.branch_sha("acme", "web", "main")
    sneak_in_before(monkeypatch, w, "wait_mergeable")
    result = w.finish(title="Add a", files=["a.py"])
    assert result.error["code"] == "HEAD_MOVED"
    assert "nothing was merged" in result.text
    assert_nothing_merged(w, main_before)
    assert not w.forge.find_requests("POST", "/merge")
    assert w.local("branch", "--show-current") == "feat"  # the local commit and branch are intact
    assert w.local("rev-parse", "HEAD") == result.data["commit"]
    # The chain does not loop: read the PR, bring the new commits in, then resume (never resume first).
    view, pull, resume = result.error["next"][:3]
    assert view["tool"] == "madt_pr" and view["args"]["action"] == "view"
    assert pull == {"tool": "madt_pull", "args": {"dir": str(w.clone), "branch": "feat"}}
    assert resume["tool"] == "madt_finish"
    pulled = madtea.run(pull["tool"], pull["args"], madtea.Context("mcp", w.clone))
    assert pulled.error is None, pulled.text
    done = madtea.run(resume["tool"], resume["args"], madtea.Context("mcp", w.clone))
    assert done.error is None, done.text
    assert "nothing left to verify" in done.text and len(w.pulls()) == 1


def test_head_moved_after_the_last_look_is_refused_by_the_forge(work: Work, monkeypatch: pytest.MonkeyPatch) -> None:
    """head_commit_id travels with the merge, so the forge itself refuses a head that moved after madtea looked."""
    w = work
    main_before = w.forge.branch_sha("acme", "web", "main")
    sneak_in_before(monkeypatch, w, "merge_pr")
    result = w.finish(title="Add a", files=["a.py"])
    assert result.error["code"] == "HEAD_MOVED"
    assert "head out of date" in result.text
    assert_nothing_merged(w, main_before)


def test_a_wip_title_is_merge_blocked(work: Work) -> None:
    main_before = work.forge.branch_sha("acme", "web", "main")
    result = work.finish(title="WIP: Add a", files=["a.py"])
    assert result.error["code"] == "MERGE_BLOCKED"
    assert "Work in progress PRs cannot be merged" in result.text
    assert_nothing_merged(work, main_before)
    assert result.error["user_action"]


def test_a_rebase_that_conflicts_is_merge_conflict(work: Work) -> None:
    """The forge's check passes (the final trees merge), but replaying the first commit conflicts."""
    w = work
    (w.clone / "a.py").unlink()
    write_files(w.clone, {"README.md": "ours\n"})
    run_git(w.clone, "commit", "-q", "-am", "change the readme")
    write_files(w.clone, {"README.md": "# web\n"})
    run_git(w.clone, "commit", "-q", "-am", "change it back")
    main_before = w.forge.commit("acme", "web", "main", {"README.md": "theirs\n"}, "their readme")
    result = w.finish(style="rebase", title="Change the readme and back")
    assert result.error["code"] == "MERGE_CONFLICT"
    assert_nothing_merged(w, main_before)


def test_a_base_that_moved_into_conflict_after_the_check_is_merge_conflict(
        work: Work, monkeypatch: pytest.MonkeyPatch) -> None:
    w = work
    moved: list[str] = []

    def clash() -> None:
        moved.append(w.forge.commit("acme", "web", "main", {"a.py": "theirs\n"}, "their a.py"))
        w.forge.set_pull_status("acme", "web", w.pulls()[0].number, "mergeable")  # the check ran before the move

    wrap(monkeypatch, "wait_mergeable", after=clash)
    result = w.finish(title="Add a", files=["a.py"])
    assert result.error["code"] == "MERGE_CONFLICT"
    assert_nothing_merged(w, moved[0])


def test_a_conflict_the_forge_already_knows_is_refused_after_bounded_looks(work: Work, quick_polls: None) -> None:
    """The forge reports a conflicted PR as not mergeable and answers the merge with 405."""
    main_before = work.forge.commit("acme", "web", "main", {"a.py": "theirs\n"}, "their a.py")
    result = work.finish(title="Add a", files=["a.py"])
    assert result.error["code"] in ("MERGE_BLOCKED", "MERGE_CONFLICT")
    assert "(10 looks)" in result.text
    assert_nothing_merged(work, main_before)


# --------------------------------------------------------------------------- faults and the resume call

FAULTS = ("create", "poll", "merge", "reread")


@pytest.mark.parametrize("step", FAULTS)
def test_a_forge_failure_at_each_step_resumes_without_repeating(work: Work, monkeypatch: pytest.MonkeyPatch,
                                                                 step: str) -> None:
    w = work
    issue = w.forge.create_issue("acme", "web", "Broken a")["number"]
    number = issue + 1  # the PR takes the next index
    if step == "create":
        w.forge.inject(500, method="POST", path_contains="/pulls")
    elif step == "poll":
        w.forge.inject(500, method="GET", path_contains=f"/pulls/{number}")
    elif step == "merge":
        w.forge.inject(500, method="POST", path_contains="/merge")
    else:  # the re-read right after a successful merge
        wrap(monkeypatch, "wait_mergeable",
             after=lambda: w.forge.inject(500, method="GET", path_contains=f"/pulls/{number}"))
    first = w.finish(title="Add a", files=["a.py"], closes=[issue])
    assert first.is_error and first.error["code"] == "FORGE_UNAVAILABLE"
    commit = first.data["commit"]
    assert f"done: Committed {commit[:9]} on feat" in first.text
    assert f"done: Pushed feat to origin ({commit[:9]})" in first.text
    assert "Resume with the call below" in first.text
    resume = first.error["next"][0]
    assert resume == {"tool": "madt_finish", "args": {"title": "Add a", "closes": [issue]}}  # files: committed
    assert w.local("rev-parse", "feat") == commit  # nothing lost

    second = madtea.run(resume["tool"], resume["args"], madtea.Context("mcp", w.clone))
    assert_ok(second)
    assert second.text.endswith(CLOSING)
    assert "Committed" not in second.text and "Pushed" not in second.text
    assert f"Closed issue #{issue}" in second.text
    [pr] = w.pulls()  # never a second PR
    merge = w.forge.branch_sha("acme", "web", "main")
    assert pr.number == number and pr.pull.merged and pr.pull.merge_commit_sha == merge
    assert w.bare("rev-list", "--count", "main") == "3"  # initial, a, one merge commit
    assert w.local("rev-list", "--count", "feat") == "2"  # one commit of a, never two
    assert w.local("rev-parse", "HEAD") == merge and w.local("branch", "--show-current") == "main"
    assert w.forge.issue("acme", "web", issue)["state"] == "closed"
    assert len(w.forge.find_requests("PATCH", f"/issues/{issue}")) == 1


def test_a_merge_whose_answer_was_lost_is_read_back_and_finish_goes_on(work: Work) -> None:
    """The forge merged, then the connection reset: the read-back shows the merge, so nothing is resumed or repeated."""
    w = work
    w.forge.inject("drop-after", method="POST", path_contains="/merge")
    result = w.finish(title="Add a", files=["a.py"])
    assert_ok(result)
    assert result.text.endswith(CLOSING)
    assert any("a read-back shows PR" in text and "merged" in text for _sev, text in result.notes)
    [pr] = w.pulls()
    assert pr.pull.merged and len(w.forge.find_requests("POST", "/merge")) == 1
    assert w.local("rev-parse", "HEAD") == w.forge.branch_sha("acme", "web", "main")


# --------------------------------------------------------------------------- refusals before anything happens

def test_the_default_branch_is_refused(work: Work) -> None:
    run_git(work.clone, "switch", "-q", "main")
    before = snapshot([work.clone])
    work.forge.clear_requests()
    result = work.finish(title="Add a", files=["a.py"])
    assert result.error["code"] == "DEFAULT_BRANCH"
    assert snapshot([work.clone]) == before
    assert not work.forge.requests


def test_a_nested_workspace_fails_closed(work: Work, tmp_path: Path) -> None:
    nested = make_repo(work.clone / "lib", origin=work.forge.remote_url("acme", "lib"))
    before = snapshot([work.clone, nested])
    work.forge.clear_requests()
    result = work.finish(title="Add a", files=["a.py"])
    assert result.error["code"] == "MULTI_REPO_WORKSPACE"
    dirs = {call["args"].get("dir") for [call] in result.error["choices"]}
    assert {str(work.clone), str(nested)} <= dirs
    assert snapshot([work.clone, nested]) == before
    assert not work.forge.requests and not work.pulls()


# --------------------------------------------------------------------------- issues

def test_closes_closes_the_issue_on_a_same_repo_finish(work: Work) -> None:
    issue = work.forge.create_issue("acme", "web", "Broken a")["number"]
    result = work.finish(title="Add a", files=["a.py"], closes=[issue])
    assert_ok(result)
    assert f"Closed issue #{issue}" in result.text
    assert work.forge.issue("acme", "web", issue)["state"] == "closed"
    [pr] = work.pulls()
    assert f"Closes #{issue}" in pr.body


# --------------------------------------------------------------------------- a foreign repository

@dataclass
class Foreign:
    home: Path
    primary: Path       # acme/lib's main checkout, holding a stranger's uncommitted work
    worktree: Path      # a linked worktree of acme/lib on branch fix, with a commit not yet pushed
    repos: list[Path]


@pytest.fixture
def foreign(work: Work, tmp_path: Path) -> Foreign:
    work.forge.add_repo("acme", "lib")
    primary = clone_of(work.forge, tmp_path / "lib", repo="lib")
    write_files(primary, {"README.md": "a stranger's edit\n", "scratch.txt": "theirs\n"})
    worktree = tmp_path / "lib-fix"
    run_git(primary, "worktree", "add", "-q", "-b", "fix", str(worktree))
    worktree = Path(os.path.realpath(worktree))
    write_files(worktree, {"fix.py": "fixed = True\n"})
    run_git(worktree, "add", "fix.py")
    run_git(worktree, "commit", "-q", "-m", "Fix lib")
    return Foreign(work.clone, primary, worktree, [work.clone, primary, worktree])


def test_a_foreign_finish_without_branch_is_refused(work: Work, foreign: Foreign) -> None:
    before = snapshot(foreign.repos)
    work.forge.clear_requests()
    result = work.finish(dir=str(foreign.worktree), title="Fix lib")
    assert result.error["code"] == "FOREIGN_TARGET"
    assert "branch" in result.text
    assert snapshot(foreign.repos) == before
    assert not work.forge.requests


def _trees(state: Any) -> tuple[Any, ...]:
    """A repo's state without its refs: HEAD, index, status, dirty content, worktrees."""
    return (state.head, state.index, state.status, state.content, state.worktrees)


@pytest.mark.parametrize("where", ["worktree", "primary"])
def test_a_foreign_finish_with_branch_touches_no_working_tree_and_closes_nothing(
        work: Work, foreign: Foreign, where: str) -> None:
    f = work.forge
    issue = f.create_issue("acme", "lib", "Lib is broken")["number"]
    before = snapshot(foreign.repos)
    heads_before = run_git(foreign.primary, "for-each-ref", "refs/heads")
    target = foreign.worktree if where == "worktree" else foreign.primary
    result = work.finish(dir=str(target), branch="fix", title="Fix lib", body=f"Closes #{issue}")
    assert_ok(result)
    [pr] = [i for i in f.repo("acme", "lib").issues.values() if i.pull is not None]
    merge = f.branch_sha("acme", "lib", "main")
    assert pr.pull.merged and pr.pull.merge_commit_sha == merge
    assert result.text.endswith(f"PR #{pr.number} is merged on the forge at {merge[:9]}; no working tree was "
                                f"touched; {CLOSING}")
    # no_close defaults to true on a foreign target: the issue stays open, no keyword reaches the forge.
    assert f.issue("acme", "lib", issue)["state"] == "open"
    assert not _KEYWORD.search(pr.body)
    assert not _KEYWORD.search(f.git("acme", "lib", "log", "-1", "--format=%B", merge))
    assert any("closing keywords" in text for _, text in result.notes)
    # Nothing checked out, staged, switched or pulled anywhere; local branches unmoved.
    after = snapshot(foreign.repos)
    assert {p: _trees(s) for p, s in after.items()} == {p: _trees(s) for p, s in before.items()}
    assert run_git(foreign.primary, "for-each-ref", "refs/heads") == heads_before
    assert (foreign.primary / "scratch.txt").read_text() == "theirs\n"
    assert not work.pulls()  # the launch repo's forge repository is untouched


# --------------------------------------------------------------------------- the rest of the workspace

def test_only_the_target_repo_changes(work: Work, tmp_path: Path) -> None:
    work.forge.add_repo("acme", "lib")
    sibling = clone_of(work.forge, tmp_path / "lib", repo="lib")
    second = clone_of(work.forge, tmp_path / "web-second")
    write_files(second, {"notes.txt": "someone else's\n"})
    others = [sibling, second]
    before = snapshot([work.clone, *others])
    assert_ok(work.finish(title="Add a", files=["a.py"]))
    after = snapshot([work.clone, *others])
    assert_only_changed(before, after, {work.clone})
    assert after[work.clone] != before[work.clone]
