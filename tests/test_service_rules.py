"""The rules services ask guard.py to decide, as tables over facts: no git, no forge, the texts and ways on."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import gitops
import guard


def _repo(path: str, origin: str | None = "https://forge.example.test/acme/{name}.git") -> guard.RepoFacts:
    top = Path(path)
    url = origin.format(name=top.name) if origin else None
    return guard.RepoFacts(top, top / ".git", top / ".git", gitops.parse_remote_url(url) if url else None)


WEB = _repo("/w/web")
LIB = _repo("/x/lib")


def local(tool: str, args: dict[str, Any] | None = None, *, action: str | None = None, at: guard.RepoFacts = WEB,
          branch: str | None = "feat/x") -> guard.Target:
    return guard.Target(tool, action, args or {}, True, "mcp", WEB, at, at is not WEB,
                        state=guard.RepoState(branch, "main", None, False, ()))


def refusal(check: Any, *args: Any, **kwargs: Any) -> guard.Refusal:
    with pytest.raises(guard.Refusal) as caught:
        check(*args, **kwargs)
    return caught.value


def way(r: guard.Refusal) -> list[str]:
    """The plan's steps as calls, without the renderer's JSON quotes."""
    return [guard.render_call(step).replace('"', "") for step in r.next]


# --------------------------------------------------------------------------- push, pull and finish name a branch

@pytest.mark.parametrize("tool,text,steps", [
    ("madt_push", "is on a detached HEAD; name the branch to push.",  # the commit there, on a branch of its own
     ["madt_branch_create name=work/web-detached", "madt_push branch=work/web-detached"]),
    ("madt_pull", "is on a detached HEAD; switch to a branch first.", []),  # which branch: a person's word
    ("madt_finish", "is on a detached HEAD; name the branch.", ["madt_finish branch=<the branch to finish>"]),
])
def test_a_detached_head_needs_the_branch_named(tool: str, text: str, steps: list[str]) -> None:
    t = local(tool, branch=None)
    assert guard.check_branch_named(t, "feat/x") == "feat/x"
    r = refusal(guard.check_branch_named, t, None)
    assert (r.code, r.message, r.target) == ("BAD_ARGUMENT", f"acme/web @ /w/web {text}", "acme/web @ /w/web")
    assert way(r) == steps


# --------------------------------------------------------------------------- leases and rejected pushes

FULL = "a" * 40


@pytest.mark.parametrize("lease,full,steps", [
    ("abc1234", FULL, [f"madt_push force_with_lease={FULL}"]),
    ("main", None, ["madt_log dir=/w/web ref=origin/feat/x",
                    "madt_push force_with_lease=<the full sha of origin/feat/x that you based your work on>"]),
])
def test_a_lease_is_a_full_sha(lease: str, full: str | None, steps: list[str]) -> None:
    t = local("madt_push", {"force_with_lease": lease})
    assert guard.check_lease(t, "feat/x", FULL, None) == FULL
    assert guard.check_lease(t, "feat/x", "b" * 64, None) == "b" * 64
    r = refusal(guard.check_lease, t, "feat/x", lease, full)
    assert r.code == "BAD_ARGUMENT" and f"must be the full sha origin/feat/x is expected to be at, not {lease!r}" in r.message
    assert way(r) == steps


@pytest.mark.parametrize("text,short", [("abcd", True), ("abc", False), (FULL, True), ("A" * 8, False),
                                        ("g" * 8, False), ("a" * 64, False)])
def test_what_could_abbreviate_a_sha(text: str, short: bool) -> None:
    assert guard.is_short_sha(text) is short
    assert guard.is_full_sha(text) is (len(text) in (40, 64) and set(text) <= set("abcdef0123456789"))


def test_a_rejected_lease_is_a_persons_call() -> None:
    r = guard.lease_rejected(local("madt_push"), "feat/x", FULL, "  ! [rejected] stale info\n")
    assert r.code == "LEASE_REJECTED" and r.message.startswith("origin/feat/x is no longer at aaaaaaaaa;")
    assert "(! [rejected] stale info)" in r.message and not r.next
    assert r.user_action and "a new lease would throw them away" in r.user_action


@pytest.mark.parametrize("kind,lease,behind,code,steps,person", [
    ("hook", False, False, "BAD_ARGUMENT", [], "origin's rule"),
    ("non-fast-forward", False, True, "BAD_ARGUMENT", ["madt_pull dir=/w/web branch=feat/x"], None),
    ("non-fast-forward", True, True, "LEASE_REJECTED", ["madt_pull dir=/w/web branch=feat/x"], None),
    ("non-fast-forward", False, False, "BAD_ARGUMENT", [], "bring origin/feat/x's commits into feat/x"),
])
def test_a_rejected_push(kind: str, lease: bool, behind: bool, code: str, steps: list[str], person: str | None) -> None:
    r = guard.push_rejected(local("madt_push"), "feat/x", kind, "declined by a hook", lease=lease, behind_only=behind)
    assert r.code == code and r.message.startswith("origin refused feat/x")
    assert way(r) == steps
    assert (person is None and r.user_action is None) or (person and person in (r.user_action or ""))


# --------------------------------------------------------------------------- deleting a branch, removing a worktree

@pytest.mark.parametrize("facts,code,text,steps", [
    ({"exists": False, "checked_out_at": None, "proven": False}, "BAD_ARGUMENT",
     "acme/web @ /w/web has no local branch old.", ["madt_status dir=/w/web"]),
    ({"exists": True, "checked_out_at": "/w/web-old", "proven": True}, "BAD_ARGUMENT",
     "old is checked out at /w/web-old; a checked-out branch is never deleted.",
     ["madt_switch dir=/w/web-old branch=<another branch>", "madt_branch_delete name=old"]),
    ({"exists": True, "checked_out_at": None, "proven": False}, "NOT_CONTAINED",
     "old in acme/web @ /w/web has work that is not in main", []),
])
def test_a_branch_is_deleted_only_when_its_work_is_proven(facts: dict[str, Any], code: str, text: str,
                                                         steps: list[str]) -> None:
    t = local("madt_branch_delete", {"name": "old"})
    guard.check_branch_delete(t, "old", exists=True, checked_out_at=None, proven=True, default="main")
    r = refusal(guard.check_branch_delete, t, "old", default="main", **facts)
    assert r.code == code and r.message.startswith(text) and way(r) == steps
    assert (code == "NOT_CONTAINED") == bool(r.user_action)


def test_a_worktree_path_is_required() -> None:
    t = local("madt_worktrees", action="remove")
    assert guard.check_worktree_path_given(t, "/w/wt") == "/w/wt"
    r = refusal(guard.check_worktree_path_given, t, None)
    assert r.message == "madt_worktrees action=remove needs path: the worktree's absolute path."
    assert way(r) == ["madt_worktrees action=remove path=<the worktree's absolute path>"]


def _status(branch: str | None = "feat/y", **changes: list[str]) -> gitops.Status:
    return gitops.Status(branch, "c" * 40, **changes)


@pytest.mark.parametrize("st,unsaved,what,steps", [
    (_status(modified=["a.py"]), 0, "uncommitted changes",
     ["madt_status", "madt_commit files=[<each changed file>] title=<title>", "madt_push branch=feat/y"]),
    (_status(), 2, "2 unpushed commits", ["madt_status", "madt_push branch=feat/y"]),
    (_status(None), 1, "1 commit on a detached HEAD that no branch, tag or remote holds",
     ["madt_status", "madt_branch_create name=<a new branch> checkout=true", "madt_push branch=<a new branch>"]),
])
def test_a_worktree_with_unsaved_work_is_kept(st: gitops.Status, unsaved: int, what: str, steps: list[str]) -> None:
    t = local("madt_worktrees", {"path": "/w/wt"}, action="remove")
    guard.check_worktree_remove(t, "/w/wt", linked=True, status=_status(), unsaved=0)
    guard.check_worktree_remove(t, "/w/wt", linked=True, status=None, unsaved=0)
    r = refusal(guard.check_worktree_remove, t, "/w/wt", linked=True, status=st, unsaved=unsaved)
    assert r.code == "UNSAVED_WORK" and r.message.startswith(f"The worktree /w/wt holds {what};")
    shown = [s.replace(" dir=/w/wt", "") for s in way(r)]
    assert shown == steps + ["madt_worktrees action=remove path=/w/wt"]


def test_only_a_linked_worktree_is_removed() -> None:
    t = local("madt_worktrees", {"path": "/w/web"}, action="remove")
    r = refusal(guard.check_worktree_remove, t, "/w/web", linked=False, status=_status(), unsaved=0)
    assert r.message == "/w/web is not a linked worktree of acme/web @ /w/web."
    assert way(r) == ["madt_worktrees action=list dir=/w/web"]


# --------------------------------------------------------------------------- finish

def test_the_branch_form_takes_no_files_and_needs_the_branch() -> None:
    t = local("madt_finish", {"branch": "feat/y", "files": ["a.py"], "title": "t"})
    r = refusal(guard.check_finish_branch_form, t, "feat/y", True)
    assert r.message.startswith("The branch= form commits nothing") and way(r) == ['madt_finish branch=feat/y title=t']
    t = local("madt_finish", {"branch": "feat/y"})
    guard.check_finish_branch_form(t, "feat/y", True)
    assert refusal(guard.check_finish_branch_form, t, "feat/y", False).message.endswith("has no local branch feat/y.")


@pytest.mark.parametrize("title", [None, "", "   "])
def test_committing_in_finish_needs_a_title(title: str | None) -> None:
    r = refusal(guard.check_finish_title, local("madt_finish", {"files": ["a.py"], "title": title}))
    assert r.message == "madt_finish needs title to commit the declared files."
    assert way(r) == ["madt_finish files=[a.py] title=<the commit subject>"]
    guard.check_finish_title(local("madt_finish", {"title": "Fix it"}))


@pytest.mark.parametrize("args,at,leaves_open", [
    ({}, WEB, False), ({}, LIB, True), ({"closes": [3]}, LIB, False), ({"close_linked": True}, LIB, False),
    ({"no_close": True}, WEB, True), ({"no_close": False}, LIB, False),
])
def test_finish_leaves_a_foreign_repositorys_issues_open_unless_asked(args: dict[str, Any], at: guard.RepoFacts,
                                                                     leaves_open: bool) -> None:
    assert guard.finish_no_close(local("madt_finish", args, at=at)) is leaves_open


def test_finish_needs_a_forge_origin() -> None:
    guard.check_forge_origin(local("madt_finish"))
    r = refusal(guard.check_forge_origin, local("madt_finish", at=_repo("/w/bare", origin=None)))
    assert r.message == "bare @ /w/bare has no forge origin to open a pull request on." and not r.next
    assert r.user_action == "Ask the user to add the forge repository as origin."
