"""The rules services ask guard.py to decide, as tables over facts: no git, no forge, the texts and ways on."""
from __future__ import annotations

from typing import Any

import pytest

import gitops
import guard
from helpers import Spec, refusal, repo_facts


WEB = repo_facts("/w/web")
LIB = repo_facts("/x/lib")


def local(tool: str, args: dict[str, Any] | None = None, *, action: str | None = None, at: guard.RepoFacts = WEB,
          branch: str | None = "feat/x") -> guard.Target:
    return guard.Target(tool, action, args or {}, True, "mcp", WEB, at, at is not WEB,
                        state=guard.RepoState(branch, "main", None, False, ()))


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
    assert r.code == "BAD_ARGUMENT"
    assert f"must be the full sha origin/feat/x is expected to be at, not {lease!r}" in r.message
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


def _commit(n: int, subject: str) -> gitops.Commit:
    return gitops.Commit(str(n) * 40, (), "A", "a@example.test", "2026-01-01T00:00:00+00:00", subject, "")


@pytest.mark.parametrize("unmerged,lost", [
    ([_commit(1, "Spike work")], "commits not in main: 111111111 Spike work"),
    ([_commit(n, "x" * 70) for n in range(1, 7)], "commits not in main: " + "; ".join(
        f"{str(n) * 9} {'x' * 60}" for n in range(1, 6)) + " and more"),
    ([], "its tip 111111111"),
])
def test_unproven_work_is_put_to_a_person_who_can_be_asked(unmerged: list[gitops.Commit], lost: str) -> None:
    t = local("madt_branch_delete", {"name": "old"})
    ask = guard.check_branch_delete(t, "old", exists=True, checked_out_at=None, proven=False, default="main",
                                    person=True, tip="1" * 40, unmerged=unmerged)
    assert ask == guard.Confirmation("delete the branch old in acme/web @ /w/web", "old", lost)
    assert guard.check_branch_delete(t, "old", exists=True, checked_out_at=None, proven=True, default="main",
                                     person=True) is None
    r = refusal(guard.check_branch_delete, t, "old", exists=True, checked_out_at="/w/x", proven=False,
                default="main", person=True)  # a checked-out branch is never deleted, whoever asks
    assert r.code == "BAD_ARGUMENT"


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


@pytest.mark.parametrize("st,unsaved,lost", [
    (_status(modified=["a.py"], untracked=["n.txt"]), 0,
     "uncommitted changes to 2 files: a.py, n.txt (its branch feat/y and its commits stay)"),
    (_status(), 2, "its files (its branch feat/y and its commits stay)"),
    (_status(None), 1, "1 commit(s) no branch, tag or remote holds"),
])
def test_unsaved_work_is_put_to_a_person_who_can_be_asked(st: gitops.Status, unsaved: int, lost: str) -> None:
    t = local("madt_worktrees", {"path": "/w/wt"}, action="remove")
    ask = guard.check_worktree_remove(t, "/w/wt", linked=True, status=st, unsaved=unsaved, person=True)
    assert ask == guard.Confirmation("remove the worktree /w/wt", "/w/wt", lost)
    assert guard.check_worktree_remove(t, "/w/wt", linked=True, status=_status(), unsaved=0, person=True) is None
    r = refusal(guard.check_worktree_remove, t, "/w/web", linked=False, status=st, unsaved=unsaved, person=True)
    assert r.code == "BAD_ARGUMENT"


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
    r = refusal(guard.check_forge_origin, local("madt_finish", at=repo_facts("/w/bare", origin=None)))
    assert r.message == "bare @ /w/bare has no forge origin to open a pull request on." and not r.next
    assert r.user_action == "Ask the user to add the forge repository as origin."


# --------------------------------------------------------------------------- forge calls: what their arguments name

def forge(tool: str, action: str | None, args: dict[str, Any] | None = None) -> guard.ForgeCall:
    return guard.ForgeCall(tool, action, {"owner_repo": "acme/web"} | (args or {}), "acme/web")


def test_extra_fields_are_named_as_the_forge_names_them() -> None:
    c = forge("madt_issues", "list", {"fields": ["milestone", "nope"]})
    items = [{"number": 1, "milestone": None}, {"number": 2, "assignees": []}]
    guard.check_fields(c, ["milestone", "assignees"], items)
    r = refusal(guard.check_fields, c, ["milestone", "nope"], items)
    assert r.message == ("madt_issues action=list: the forge's answer has no field nope; its fields are: assignees, "
                         "milestone, number.")
    assert way(r) == ["madt_issues action=list owner_repo=acme/web fields=[milestone]"]
    assert way(refusal(guard.check_fields, c, ["nope"], items)) == ["madt_issues action=list owner_repo=acme/web"]


def test_an_unknown_label_is_refused_with_the_calls_that_create_it() -> None:
    c = forge("madt_issues", "create", {"title": "t", "label": ["Bug", "ux", "perf"]})
    guard.check_labels(c, "acme/web", ["BUG"], ["bug"])
    r = refusal(guard.check_labels, c, "acme/web", ["Bug", "ux", "perf"], ["bug", "area/api"])
    assert r.message == "acme/web has no label ux, perf; its labels are: area/api, bug."
    assert way(r) == ["madt_labels action=create owner_repo=acme/web name=ux color=#ededed",
                      "madt_labels action=create owner_repo=acme/web name=perf color=#ededed",
                      "madt_issues action=create owner_repo=acme/web title=t label=[Bug,ux,perf]"]
    assert refusal(guard.check_labels, c, "acme/web", ["x"], []).message.endswith("its labels are: none.")


def test_a_second_pull_request_for_the_same_branches_offers_the_typed_words_or_the_open_one() -> None:
    c = forge("madt_pr", "create", {"title": "New", "body": "Words", "head": "feat"})
    r = guard.pr_already_open(c, "acme/web", 5, "feat", "main", "Old")
    assert r.message == ("acme/web already has an open pull request from feat into main: #5 ('Old'); nothing was "
                         "created or changed.")
    assert [[guard.render_call(s) for s in choice] for choice in r.choices] == [
        ['madt_pr action=edit owner_repo="acme/web" number=5 title="New" body="Words"'],
        ['madt_pr action=create owner_repo="acme/web" title="New" body="Words" head="feat" reuse=true']]


def test_an_unknown_milestone_offers_to_create_it() -> None:
    r = guard.no_such_milestone("acme/web", "v2", ["v1"])
    assert r.message == "acme/web has no milestone 'v2'; its milestones are: v1."
    assert way(r) == ["madt_milestones action=create owner_repo=acme/web title=v2"]


@pytest.mark.parametrize("c,target,example,what", [
    (forge("madt_issues", "edit", {"number": 4}), "#4", "title", "the new title"),
    (forge("madt_repo", "edit"), "acme/web", "description", "the new description"),
])
def test_an_edit_names_something_to_change(c: guard.ForgeCall, target: str, example: str, what: str) -> None:
    guard.check_something_to_change(c, 1, target, example, what)
    r = refusal(guard.check_something_to_change, c, 0, target, example, what)
    assert (r.message, r.target) == (f"{c.where}: nothing to change was given.", target)
    assert way(r)[0].endswith(f"{example}=<{what}>")


def test_a_pull_request_needs_its_head_a_milestone_a_date_an_upload_files() -> None:
    pr = forge("madt_pr", "create", {"title": "t"})
    assert guard.check_pr_head(pr, "acme/web", "feat/x") == "feat/x"
    assert way(refusal(guard.check_pr_head, pr, "acme/web", None)) == [
        "madt_pr action=create owner_repo=acme/web title=t head=<the branch name>"]
    ms = forge("madt_milestones", "create", {"title": "v1", "due_date": "31/03/2026"})
    guard.check_due_date(ms, "2026-03-31", True)
    r = refusal(guard.check_due_date, ms, "31/03/2026", False)
    assert r.message == "madt_milestones action=create: due_date '31/03/2026' is not a date such as 2026-03-31."
    up = forge("madt_releases", "upload", {"tag": "v1", "files": ["a", "b"]})
    guard.check_upload_file(up, "a", "/w/a", 3, "/w")
    guard.check_upload_file(up, "/tmp/a", "/tmp/a", 3, None)  # the command line: a person's own path
    r = refusal(guard.check_upload_file, up, "b", "/w/b", None, "/w")
    assert (r.message, r.target) == ("'b' is not a file.", "b")
    assert way(r) == ["madt_releases action=upload owner_repo=acme/web tag=v1 "
                      "files=[<a file in the launch repository's work tree>]"]


@pytest.mark.parametrize("raw,real,code", [
    ("../x", "/x", "OUT_OF_SCOPE"), ("/wx/a", "/wx/a", "OUT_OF_SCOPE"), ("/w", "/w", "OUT_OF_SCOPE"),
    (".git/config", "/w/.git/config", "USER_ACTION_REQUIRED"),
    ("k/.ssh/id_rsa", "/w/k/.ssh/id_rsa", "USER_ACTION_REQUIRED"),
    ("id_ed25519", "/w/id_ed25519", "USER_ACTION_REQUIRED"), (".env.local", "/w/.env.local", "USER_ACTION_REQUIRED"),
    ("site.KEY", "/w/site.KEY", "USER_ACTION_REQUIRED"), ("api_token.txt", "/w/api_token.txt", "USER_ACTION_REQUIRED"),
    (".netrc", "/w/.netrc", "USER_ACTION_REQUIRED"), ("a/credentials", "/w/a/credentials", "USER_ACTION_REQUIRED"),
])
def test_an_upload_stays_in_the_work_tree_and_never_takes_a_credential_file(raw: str, real: str, code: str) -> None:
    up = forge("madt_issues", "attach", {"number": 1, "files": [raw]})
    assert refusal(guard.check_upload_file, up, raw, real, 10, "/w").code == code
    assert refusal(guard.check_upload_file, up, raw, real, 10, "").code == "OUT_OF_SCOPE"  # no launch repo


def test_an_upload_is_bounded_and_its_content_never_a_key_or_token() -> None:
    up = forge("madt_issues", "attach", {"number": 1, "files": ["big.zip"]})
    assert refusal(guard.check_upload_file, up, "big.zip", "/w/big.zip", guard.MAX_UPLOAD + 1, "/w").user_action
    guard.check_upload_file(up, "tokenizer.py", "/w/tokenizer.py", 10, "/w")
    guard.check_upload_content("a.txt", b"plain text, sha 0123456789abcdef0123456789abcdef01234567")
    for data in (b"-----BEGIN OPENSSH PRIVATE KEY-----", b"x ghp_" + b"a" * 36, b"aws_secret_access_key = x"):
        assert refusal(guard.check_upload_content, "a.txt", data).code == "USER_ACTION_REQUIRED"


# --------------------------------------------------------------------------- the passthrough

@pytest.mark.parametrize("text,code", [("/repos/a/b/issues#x", "BAD_ARGUMENT"), ("/repos/a b", "BAD_ARGUMENT"),
                                       ("/repos\\a", "BAD_ARGUMENT"), ("/repos/a/b/../c", "OUT_OF_SCOPE"),
                                       ("/repos/a%2fb/c", "OUT_OF_SCOPE")])
def test_a_passthrough_path_is_plain(text: str, code: str) -> None:
    from urllib.parse import unquote
    segments = [unquote(s) for s in text.partition("?")[0].split("/") if s]
    assert refusal(guard.check_api_path, text, segments).code == code
    guard.check_api_path("/repos/a/b/issues?state=all", ["repos", "a", "b", "issues"])


def test_the_passthrough_never_deletes_and_reads_send_no_body() -> None:
    c = forge("madt_api_call", None, {"path": "/repos/acme/web/topics", "body": {"x": 1}})
    guard.check_api_method(c, "PUT", "/repos/acme/web/topics", "forge.example.test", True)
    r = refusal(guard.check_api_method, c, "DELETE", "/repos/acme/web", "forge.example.test", False)
    assert r.code == "USER_ACTION_REQUIRED" and "DELETE /repos/acme/web on forge.example.test" in (r.user_action or "")
    r = refusal(guard.check_api_method, c, "GET", "/repos/acme/web/topics", "forge.example.test", True)
    assert way(r) == ["madt_api_call owner_repo=acme/web path=/repos/acme/web/topics"]


@pytest.mark.parametrize("method,path,covered", [
    ("GET", "repos/acme/web/issues/3", None),
    ("PATCH", "repos/acme/web/issues/3", ("madt_issues", "edit", "acme/web", "issues/3")),
    ("POST", "repos/Acme/Web/PULLS/3/merge", ("madt_pr", "merge", "Acme/Web", "pulls/3/merge")),
    ("PATCH", "repos/acme/web", ("madt_repo", "edit", "acme/web", "")),
    ("PUT", "repos/acme/web/topics", None),
    ("POST", "user/repos", ("madt_repo", "create", "acme/launch", "user/repos")),
    ("PATCH", "notifications/threads/7", ("madt_notifications", "read", "acme/launch", "notifications/threads/7")),
])
def test_a_write_a_tool_covers_is_found_however_it_is_spelt(method: str, path: str, covered: Any) -> None:
    assert guard.covered_write(method, path.split("/"), "acme/launch") == covered


def test_a_covered_write_is_forwarded_with_what_the_call_showed() -> None:
    specs = {"number": Spec("number", required=True), "comment_id": Spec("comment_id"), "body": Spec("body"),
             "title": Spec("title", required=True)}
    r = guard.covered_refusal("PATCH", "/repos/acme/web/issues/3", ("madt_issues", "edit", "acme/web", "issues/3"),
                              {"body": "new", "state": "closed", "labels": [1]}, specs)
    assert r.message == ("PATCH /repos/acme/web/issues/3 is what madt_issues action=edit does, with its safety "
                         "checks; use it instead.")
    assert way(r) == ["madt_issues action=edit owner_repo=acme/web number=3 body=new title=<title>"]


# --------------------------------------------------------------------------- deletions are a person's act

def test_a_deletion_is_typed_at_a_terminal_or_left_to_a_person() -> None:
    assert guard.no_terminal_to_confirm("label bug", "bug").user_action == (
        "Run the same command in a terminal and type bug when asked.")
    guard.check_typed_name("label bug", "bug", "bug")
    r = refusal(guard.check_typed_name, "label bug", "bug", "Bug")
    assert r.message == "What was typed does not match bug; nothing was deleted." and r.target == "label bug"
    r = guard.delete_is_a_persons_act("issue", "4", "https://forge.example.test/acme/web/issues/4")
    assert r.code == "USER_ACTION_REQUIRED" and r.message.startswith("Deleting issue 4 cannot be undone")
    assert r.user_action == ("Ask the user to delete issue 4 themselves at "
                             "https://forge.example.test/acme/web/issues/4 if they want it gone.")


def test_only_filing_an_issue_crosses_to_another_forge_host() -> None:
    assert guard.cross_host_write("madt_issues", "create")
    assert not guard.cross_host_write("madt_issues", "edit") and not guard.cross_host_write("madt_pr", "create")


# --------------------------------------------------------------------------- the call pipeline: what a call names

ISSUES = guard.Asked("madt_issues", "list", {"owner_repo": "acme/web", "state": "all"})


def test_a_call_names_a_tool_and_one_of_its_actions() -> None:
    nope = guard.no_such_tool("madt_nope", [guard.call("madt_status")])
    assert (nope.code, nope.user_action, nope.next) == ("BAD_ARGUMENT", None, ({"tool": "madt_status", "args": {}},))
    guard.check_no_action("madt_status", None, {})
    r = refusal(guard.check_no_action, "madt_status", "list", {"dir": "/w/web"})
    assert (r.code, r.message, way(r)) == ("UNKNOWN_PARAMETER", "madt_status takes no action parameter.",
                                           ["madt_status dir=/w/web"])
    every = ((guard.call("madt_labels", action="list"),), (guard.call("madt_labels", action="create", name="<name>"),))
    names = ["list", "create"]
    cases = {None: ("madt_labels needs action: one of list, create.", [], 2),
             "lsit": ("madt_labels has no action 'lsit'; its actions are: list, create.",
                      ["madt_labels action=list"], 0),
             "zzz": ("madt_labels has no action 'zzz'; its actions are: list, create.", [], 2)}
    for action, (text, steps, choices) in cases.items():
        r = guard.unknown_action("madt_labels", action, names, {}, every)
        assert (r.code, r.message, way(r), len(r.choices)) == ("BAD_ARGUMENT", text, steps, choices)
    r = guard.unknown_action("madt_labels", "craete", names, {"color": "red"}, every, {"create": ["name"], "list": []})
    assert way(r) == ["madt_labels action=create name=<name> color=red"]
    r = guard.unknown_action("madt_labels", "craete", names, {"name": "bug"}, every, {"create": ["name"]})
    assert way(r) == ["madt_labels action=create name=bug"]
    r = guard.unknown_action("madt_labels", ["list"], names, {}, every)
    assert r.message == """madt_labels: action must be one name such as 'list', not ["list"]."""
    assert way(r) == ["madt_labels action=list"]
    assert len(guard.unknown_action("madt_labels", {"a": 1}, names, {}, every).choices) == 2


def test_arguments_are_an_object() -> None:
    guard.check_arguments_object("madt_status", {})
    r = refusal(guard.check_arguments_object, "madt_status", ["dir"])
    assert (r.message, way(r)) == ("madt_status: arguments must be an object.", ["madt_status"])


def test_a_local_call_outside_any_repository_needs_dir() -> None:
    r = guard.no_launch_repo(guard.Asked("madt_log", None, {"limit": 3}), "/tmp/x")
    assert r.message.startswith("madt_log: the server was launched outside any git repository (/tmp/x)")
    assert way(r) == ["madt_log limit=3 dir=<the absolute path of the repository>"]


@pytest.mark.parametrize("value,parsed", [("acme/web", (None, "acme", "web")),
                                          (" acme/web.git ", (None, "acme", "web")),
                                          ("/acme/web/", (None, "acme", "web")),
                                          ("Forge.Example:3000/acme/web", ("forge.example:3000", "acme", "web"))])
def test_owner_repo_is_owner_slash_repo_with_an_optional_host(value: str, parsed: tuple[Any, ...]) -> None:
    assert guard.check_owner_repo(value, "madt_issues action=list") == parsed


@pytest.mark.parametrize("value", ["https://forge/acme/web", "git@forge:acme/web", "web", "a/b/c/d", "acme/../x",
                                   "acme/we b", "acme/.."])
def test_owner_repo_is_never_a_url_or_a_path(value: str) -> None:
    r = refusal(guard.check_owner_repo, value, "madt_issues action=list")
    assert r.message == f"madt_issues action=list: owner_repo {value!r} is not owner/repo or host/owner/repo."
    assert way(r) == ["madt_issues action=list owner_repo=<owner/repo, such as acme/web>"]
    again = refusal(guard.check_owner_repo, value, "madt_issues action=list", ISSUES)
    assert way(again) == ["madt_issues action=list owner_repo=<owner/repo, such as acme/web> state=all"]
    assert way(refusal(guard.check_owner_repo, value, "--repo")) == ["--repo owner_repo=<owner/repo, such as acme/web>"]


def test_a_forge_call_needs_a_repository_to_reach() -> None:
    guard.check_owner_repo_host(ISSUES, "acme/web", None, True)
    guard.check_owner_repo_host(ISSUES, "h/acme/web", "h", False)
    r = refusal(guard.check_owner_repo_host, ISSUES, "acme/web", None, False)
    assert r.message == ("madt_issues action=list: owner_repo 'acme/web' names no host and the launch repo has no "
                         "forge origin to take it from.")
    assert way(r) == ["madt_issues action=list owner_repo=<host/owner/repo> state=all"]
    r = guard.no_forge_origin(guard.Asked("madt_issues", "list", {"dir": "/w/x"}), "/w/x", "has no origin remote")
    assert (r.message, way(r)) == ("madt_issues action=list: /w/x has no origin remote.",
                                   ["madt_issues action=list owner_repo=<owner/repo>"])
    r = guard.no_default_repo(ISSUES, "/tmp/x is not a git repository")
    assert r.message == ("madt_issues action=list: /tmp/x is not a git repository, so there is no repository to "
                         "default to.")


# --------------------------------------------------------------------------- body edits and lost answers

VIEW = guard.call("madt_issues", action="view", owner_repo="acme/web", number=4)


def test_a_lost_create_says_what_a_look_settled() -> None:
    look = guard.call("madt_issues", action="list", owner_repo="acme/web", state="all")
    again = guard.call("madt_issues", action="create", owner_repo="acme/web", title="t")
    unknown = guard.lost_create("acme/web", "The forge did not answer.", "issue", "unknown", look, again)
    assert unknown is not None and unknown.message == (
        "The forge did not answer. Whether the issue was made is unknown; look for it before sending this again: "
        + guard.render_call(look))
    assert unknown.next == (look,) and unknown.code == "FORGE_UNAVAILABLE"
    absent = guard.lost_create("acme/web", "The forge did not answer.", "issue", "absent", look, again)
    assert absent is not None and absent.next == (again,)
    assert absent.message.endswith("sending the same call again is safe.")
    assert guard.lost_create("acme/web", "x", "issue", None, look, again) is None


@pytest.mark.parametrize("found", [0, 2])
def test_a_tick_names_exactly_one_checklist_item(found: int) -> None:
    guard.check_checklist_item("Docs", 1, VIEW)
    r = refusal(guard.check_checklist_item, "Docs", found, VIEW)
    assert r.message == f"The body has {found} checklist items with the text 'Docs'; exactly one is needed."
    assert r.next == (VIEW,)


def test_a_whole_body_replacement_names_the_version_it_replaces() -> None:
    versions = ("2026-01-01T00:00:00Z", "0123456789ab")
    shown: list[str] = []
    body = lambda: shown.append("read") or "<fenced body>"  # noqa: E731
    for seen in versions:
        guard.check_whole_body(seen, versions, VIEW, versions[0], body)
    assert not shown  # the current body is fenced only for a refusal that shows it
    r = refusal(guard.check_whole_body, None, versions, VIEW, versions[0], body)
    assert r.code == "BAD_ARGUMENT" and r.message.startswith("Replacing the whole body needs updated_at")
    r = refusal(guard.check_whole_body, "2025-12-31T00:00:00Z", versions, VIEW, versions[0], body)
    assert r.code == "STALE_BODY" and r.next == (VIEW,)
    assert r.message == ("The body changed since you read it (it is now at updated_at 2026-01-01T00:00:00Z); nothing "
                         "was written. Current version:\n<fenced body>")


@pytest.mark.parametrize("count", [0, 3])
def test_replace_old_occurs_exactly_once(count: int) -> None:
    guard.check_replace_once(1, VIEW)
    r = refusal(guard.check_replace_once, count, VIEW)
    assert r.message == f"replace_old occurs {count} times in the current body; it must occur exactly once."


def test_a_body_lost_to_another_writer_shows_the_current_one() -> None:
    r = guard.body_replaced("T2", " The title was changed.", "<fenced>", VIEW)
    assert r.code == "STALE_BODY" and r.next == (VIEW,)
    assert r.message == ("madtea wrote your body, but another edit replaced it before it could be read back (it is "
                         "now at updated_at T2); your text is not the current body. The title was changed. Current "
                         "version:\n<fenced>")
    r = guard.body_kept_changing(4, "the appended text", "T3", "", "<fenced>", VIEW)
    assert r.message == ("The body changed under each of madtea's 4 writes of the appended text, and the read-back "
                         "does not show it (the body is now at updated_at T3). Current version:\n<fenced>")


def test_a_batch_stopped_part_way_says_what_was_done_and_sends_only_the_rest() -> None:
    again = guard.call("madt_issues", action="close", owner_repo="acme/web", numbers=[3, 4, 5])
    look = guard.call("madt_issues", action="list", owner_repo="acme/web")
    failed = guard.Refusal("FORGE_UNAVAILABLE", "The forge did not answer.", target="acme/web", next=(look, again))
    r = guard.batch_stopped(["Closed #3."], 4, failed, again, [4, 5])
    assert (r.code, r.target) == ("FORGE_UNAVAILABLE", "acme/web")
    assert r.message == "Closed #3.\n#4 failed, and the rest were not tried: The forge did not answer."
    assert list(r.next) == [look, guard.call("madt_issues", action="close", owner_repo="acme/web", numbers=[4, 5])]


# --------------------------------------------------------------------------- what a forge's answers settle

def person(r: guard.Refusal) -> str | None:
    """The one way on a person-only refusal: the words, with no steps beside them."""
    assert guard.way_on_problem(r.next, r.choices, r.user_action) is None and not r.next and not r.choices
    return r.user_action


THERE = "other.test/acme/web"
OUTSIDE = "on another forge host than the launch repo; only its own repository paths may be read from here."


@pytest.mark.parametrize("path,names,text", [
    (None, None, f"{THERE} is {OUTSIDE}"),                                # /user, /repos/search: outside any repo
    ("/repos/acme/api/issues", "acme/api",
     f"/repos/acme/api/issues names another repository than {THERE}, which is {OUTSIDE}"),
])
def test_a_confined_client_reads_its_own_repository_alone(path: str | None, names: str | None, text: str) -> None:
    for own in ("acme/web", "ACME/Web"):
        guard.check_confined(THERE, True, f"/repos/{own}/issues", own)
    guard.check_confined(THERE, False, path, names)  # the launch host is not confined
    r = refusal(guard.check_confined, THERE, True, path, names)
    assert (r.code, r.message, r.target) == ("OUT_OF_SCOPE", text, THERE)
    assert person(r) == "Ask the user to run madtea from a checkout of that repository's forge."


PUSHED = "a" * 40


@pytest.mark.parametrize("forge_head,merged,code,text", [
    ("b" * 40, True, "HEAD_MOVED", "PR #7's head on the forge is bbbbbbbbb, not the aaaaaaaaa madtea pushed; "
                                   "nothing was merged."),
    (PUSHED, False, "MERGE_BLOCKED", "The forge accepted the merge of PR #7 but does not show it merged."),
])
def test_a_merge_is_at_the_pushed_head_and_reads_back_merged(forge_head: str, merged: bool, code: str,
                                                             text: str) -> None:
    for head in (PUSHED, None, ""):  # the forge showing no head is no other head
        guard.check_merge_head("acme/web", 7, head, PUSHED)
    guard.check_merged("acme/web", 7, True)
    check = (guard.check_merge_head, "acme/web", 7, forge_head, PUSHED) if code == "HEAD_MOVED" else \
        (guard.check_merged, "acme/web", 7, merged)
    r = refusal(*check)
    assert (r.code, r.message, r.target) == (code, text, "acme/web#7")
    assert person(r) == guard.FORGE_NEXT[code]


@pytest.mark.parametrize("code,flavour,refused", [
    ("NOT_FOUND_OR_NO_ACCESS", "forgejo", True),
    ("NOT_FOUND_OR_NO_ACCESS", "gitea", False),    # Gitea has the endpoint: the object is what is missing
    ("FORGE_UNAVAILABLE", "forgejo", False),       # any other failure is the forge's own word
])
def test_forgejo_lacks_the_gitea_actions_endpoints(code: str, flavour: str, refused: bool) -> None:
    c = forge("madt_actions", "logs", {"job_id": 3})
    asked: list[str] = []

    def said() -> str:  # the flavour costs a request: asked only after a "not found"
        asked.append(flavour)
        return flavour
    if not refused:
        guard.check_forgejo_offers(c, code, said, "job logs")
        assert len(asked) == (code == "NOT_FOUND_OR_NO_ACCESS")
        return
    for what in ("job logs", "the Gitea Actions endpoint actions/workflows"):
        r = refusal(guard.check_forgejo_offers, c, code, said, what)
        assert (r.code, r.message, r.target) == ("NOT_SUPPORTED", f"Forgejo does not offer {what} through its API.",
                                                 "acme/web")
        assert person(r) == "Tell the user what failed; madtea changed nothing further."


def test_a_secret_is_set_when_the_forge_lists_it_and_a_variable_is_named_or_missing() -> None:
    c = guard.ForgeCall("madt_actions", "set_secret", {"name": "DEPLOY_KEY", "body": "s3cret"}, "acme/web", "body")
    guard.check_secret_listed(c, "DEPLOY_KEY", True)
    r = refusal(guard.check_secret_listed, c, "DEPLOY_KEY", False)
    assert (r.code, r.message, r.target) == (
        "FORGE_UNAVAILABLE", "The forge accepted the secret DEPLOY_KEY but does not list it afterwards.", "acme/web")
    assert person(r) == guard.FORGE_NEXT["FORGE_UNAVAILABLE"] and "s3cret" not in repr(vars(r))
    r = guard.no_such_variable(forge("madt_actions", "variables", {"name": "level"}), "LEVEL")
    assert (r.code, r.message, r.target) == ("NOT_FOUND_OR_NO_ACCESS", "acme/web has no variable LEVEL.", "acme/web")
    assert person(r) == guard.FORGE_NEXT["NOT_FOUND_OR_NO_ACCESS"]


@pytest.mark.parametrize("lost,code,text,steps", [
    (None, "FORGE_UNAVAILABLE", "The forge stopped the stopwatch on #4 but lists no new tracked time.", []),
    ("The forge did not answer.", "FORGE_UNAVAILABLE", "The forge did not answer. Whether the stopwatch stopped is "
     "unknown; look before sending this again: madt_issues action=times number=4",
     ["madt_issues action=times number=4"]),
])
def test_a_stopped_stopwatch_shows_its_time(lost: str | None, code: str, text: str, steps: list[str]) -> None:
    look = guard.call("madt_issues", action="times", number=4)
    r = guard.stopped_time_unseen(forge("madt_issues", "stop_stopwatch", {"number": 4}), 4, lost, look)
    assert (r.code, r.message) == (code, text)
    assert way(r) == steps
    assert r.target == ("acme/web#4" if lost is None else "acme/web")
    assert lost is not None or person(r) == guard.FORGE_NEXT["FORGE_UNAVAILABLE"]


# --------------------------------------------------------------------------- files and folders, as facts

@pytest.mark.parametrize("raw,present,refused", [
    ("*", frozenset(), True),                    # git's own add would take everything
    ("-A", frozenset({"*"}), True),
    ("*", frozenset({"*"}), False),              # a file called * is named, not a blanket
    (" --all", frozenset({"--all"}), False),
    ("src", frozenset(), False),
])
def test_a_blanket_word_is_a_file_only_when_one_is_there(raw: str, present: frozenset[str], refused: bool) -> None:
    t = guard.Target("madt_add", None, {"files": [raw]}, True, "mcp", WEB, WEB, False,
                     state=guard.RepoState("feat/x", "main", blanket_files=present))
    if not refused:
        assert guard.declared_files(t) == [raw.strip() if raw.strip() != "--all" else raw]
        return
    r = refusal(guard.declared_files, t)
    assert (r.code, r.message) == ("UNDECLARED_FILES", f"madt_add: {raw!r} would stage the whole of acme/web @ "
                                   f"/w/web. Name the files (or a sub-directory) instead. {guard.DO_NOT_SWEEP}")


@pytest.mark.parametrize("taken,free", [
    (frozenset(), "/w/web-x"),
    (frozenset({"web-x", "web-x-2", "other"}), "/w/web-x-3"),
    (frozenset({"web-x"} | {f"web-x-{i}" for i in range(2, 100)}), "/w/web-x-99"),  # bounded: the last regardless
])
def test_a_fresh_path_is_the_first_name_not_taken(taken: frozenset[str], free: str) -> None:
    assert guard.fresh_path("/w/web-x", taken) == free


@pytest.mark.parametrize("home,names,path", [
    (None, frozenset(), "/w/web-feat-y"),                              # not gathered: beside the top
    ("/outer", frozenset(), "/outer/web-feat-y"),                      # the top's folder is another's work tree
    ("/w", frozenset({"web-feat-y"}), "/w/web-feat-y-2"),
])
def test_a_new_worktree_goes_to_the_home_the_state_names(home: str | None, names: frozenset[str], path: str) -> None:
    state = guard.RepoState("feat/x", "main", worktree_home=home, home_names=names)
    t = guard.Target("madt_worktrees", "add", {"b": "feat/y"}, True, "mcp", WEB, WEB, False, state=state)
    assert guard.new_worktree_path(t, "feat/y") == path
    assert way(refusal(guard.check_worktree_path_given, t, None)) == [f"madt_worktrees action=add b=feat/y path={path}"]
    r = refusal(guard.check_worktree_home, t, "/x/lib/wt", repo_facts("/x/lib"), None)
    assert way(r) == [f"madt_worktrees action=add b=feat/y path={path}"]


def test_a_worktree_path_that_is_there_is_offered_a_free_sibling() -> None:
    t = local("madt_worktrees", {"path": "/w/wt", "b": "feat/y"}, action="add")
    exc = gitops.PathExists(["git", "worktree", "add"], 128, "fatal: '/w/wt' already exists", path="/w/wt")
    for taken, free in ((frozenset({"wt"}), "/w/wt-2"), (frozenset({"wt", "wt-2"}), "/w/wt-3")):
        r = guard.git_failure(t, exc, taken)
        assert r is not None and free in [s["args"].get("path") for s in r.next], r.next


# --------------------------------------------------------------------------- a person's login at the CLI

@pytest.mark.parametrize("r,code,text,target", [
    (guard.no_login_to_default("/home/p/notes"), "BAD_ARGUMENT", "/home/p/notes is not in a repository with a forge "
     "origin, and there is not exactly one login to default to; pass --hostname.", "/home/p/notes"),
    (guard.no_terminal_for_token("forge.test", "Make a token at https://forge.test/user/settings/applications."),
     "BAD_ARGUMENT", "There is no terminal to ask for the token at; pipe it in with --with-token. Make a token at "
     "https://forge.test/user/settings/applications.", "forge.test"),
    (guard.no_token_given("forge.test"), "BAD_ARGUMENT", "No token was given; nothing was stored.", "forge.test"),
])
def test_a_login_names_its_host_and_reads_its_token_from_a_person(r: guard.Refusal, code: str, text: str,
                                                                  target: str) -> None:
    assert (r.code, r.message, r.target) == (code, text, target)
    assert person(r) and "madt_" not in (r.user_action or "")


# --------------------------------------------------------------------------- git's transport without a credential

def _git_failed(stderr: str, kind: type[gitops.GitError] = gitops.GitError) -> gitops.GitError:
    return kind(["git", "push", "origin", "feat"], 128, stderr)


@pytest.mark.parametrize("stderr,host,refused", [
    ("fatal: could not read Username for 'https://forge.test': terminal prompts disabled", "forge.test", True),
    ("remote: Authentication failed for 'https://forge.test/acme/web.git/'", None, True),
    ("error: The requested URL returned error: 401", "forge.test", True),
    ("error: The requested URL returned error: 403", "forge.test", False),  # a working credential, refused
    ("fatal: unable to access: Could not resolve host", "forge.test", False),
])
def test_git_without_a_working_credential_is_a_persons_login(stderr: str, host: str | None, refused: bool) -> None:
    # A push the remote rejected had a working credential, whatever its hook printed.
    guard.check_git_auth(host, gitops.PushRejected(["git", "push"], 1, stderr, reason="hook", kind="remote"))
    if not refused:
        guard.check_git_auth(host, _git_failed(stderr))
        return
    r = refusal(guard.check_git_auth, host, _git_failed(stderr))
    shown = host or "the origin's host"
    assert (r.code, r.target) == ("AUTH_MISSING", host)
    assert r.message == f"git could not authenticate to {shown}: no working credential for it ({_git_failed(stderr)})."
    assert person(r) == (guard.FORGE_NEXT["AUTH_MISSING"] if host is None else
                         "Ask the user to run `madtea auth login --hostname forge.test` in their own terminal (it "
                         "asks for a token and checks it with the forge), then call again.")


@pytest.mark.parametrize("r,code,text,target,person_words", [
    (guard.no_stored_token("forge.test"), "AUTH_MISSING", "no token for forge.test; log in with: madtea auth login "
     "--hostname forge.test", "forge.test", "Run madtea auth login --hostname forge.test."),
    (guard.import_needs_terminal(), "USER_ACTION_REQUIRED", "importing tokens needs your consent at a terminal, and "
     "there is none; run madtea auth import-tea in a terminal.", "tea's logins",
     "Run madtea auth import-tea in a terminal."),
    (guard.unreadable_body_file("issue create", "[Errno 2] No such file or directory: 'b.md'"), "BAD_ARGUMENT",
     "madtea issue create: cannot read --body-file ([Errno 2] No such file or directory: 'b.md'); nothing was sent.",
     "madtea issue create", "Name a file that can be read."),
])
def test_what_only_a_person_at_the_cli_can_give(r: guard.Refusal, code: str, text: str, target: str,
                                                 person_words: str) -> None:
    assert (r.code, r.message, r.target) == (code, text, target)
    assert person(r) == person_words
