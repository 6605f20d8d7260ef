"""madtea on the oldest and newest Gitea and Forgejo releases the forge contract covers.

Each test runs once per release (``release_env``: gitea-1.21, gitea-1.25, forgejo-11, forgejo-15). What a
release has comes from the forge contract (tests/forge_contract.py, read from the servers' source), never from
madtea's own table: an action the release lacks is refused as NOT_SUPPORTED naming the release that brings it,
before any request to the missing endpoint, and an action it has works.
"""
from __future__ import annotations

from typing import Any

import forge_contract
from fakeforge import call, open_pull
from remote_env import Env, release_env  # noqa: F401 - fixtures

_R = "/repos/{owner}/{repo}"


def _offered(e: Env, method: str, path: str) -> bool:
    entry = forge_contract.endpoint(method, path.replace("{owner}", "acme").replace("{repo}", "web"))
    assert entry is not None, f"{method} {path} is not in the forge contract"
    return forge_contract.offered(entry, e.forge.flavour, e.forge.line)


def _brings(e: Env, method: str, path: str) -> str:
    """The release the contract says brings the endpoint, as madtea names it ("" when none of this flavour)."""
    entry = forge_contract.endpoint(method, path.replace("{owner}", "acme").replace("{repo}", "web"))
    assert entry is not None
    side = entry.side(e.forge.flavour)
    return f"{e.forge.flavour.capitalize()} {side.since}" if side else ""


def _refused_naming(e: Env, method: str, path: str, tool: str, **args: Any) -> None:
    """The call is NOT_SUPPORTED, names the release that brings the endpoint (or says there is none), and sent
    nothing to the endpoint."""
    e.forge.clear_requests()
    result = e.refused("NOT_SUPPORTED", tool, **args)
    brings = _brings(e, method, path)
    server = f"{e.forge.flavour.capitalize()} {e.forge.version.split('+')[0]}"
    assert server in result.text, result.text
    assert (f"needs {brings} or newer" if brings else "is not in the API of") in result.text, result.text
    assert "404" not in result.text and "not found" not in result.text.lower()
    literal = path.split("{repo}", 1)[1].split("{", 1)[0]
    sent = [r for r in e.forge.requests if r.method == method and literal in r.path]
    assert not sent, [f"{r.method} {r.path}" for r in sent]


def test_the_fake_plays_the_release(release_env: Env) -> None:
    e = release_env
    status, _, body = call(e.forge, "GET", "/version")
    assert status == 200 and body == {"version": forge_contract.VERSION_STRINGS[e.forge.release]}
    who = e.ok("madt_whoami")
    assert e.forge.version in who.text


def test_actions_reads_follow_the_release(release_env: Env) -> None:
    e = release_env
    run = e.forge.add_action_run("acme", "web", title="CI on main")
    e.forge.commit("acme", "web", "main", {".gitea/workflows/deploy.yml": "on: workflow_dispatch\n"}, "ci")
    reads = (
        ("GET", f"{_R}/actions/runs", {"action": "runs"}),
        ("GET", f"{_R}/actions/runs/{{run}}/jobs", {"action": "jobs", "run_id": run.id}),
        ("GET", f"{_R}/actions/workflows", {"action": "workflows"}),
        ("GET", f"{_R}/actions/jobs/{{job_id}}/logs", {"action": "logs", "job_id": run.jobs[0].id}),
        ("GET", f"{_R}/actions/artifacts", {"action": "artifacts"}),
        ("POST", f"{_R}/actions/workflows/{{workflow_id}}/dispatches", {"action": "dispatch",
                                                                       "workflow": "deploy.yml"}),
    )
    for method, path, args in reads:
        if _offered(e, method, path):
            done = e.ok("madt_actions", **args)
            if args["action"] == "runs":
                assert "CI on main" in done.text
        else:
            _refused_naming(e, method, path, "madt_actions", **args)


def test_pull_request_author_filter_is_never_ignored(release_env: Env) -> None:
    """Gitea 1.21 and 1.22 ignore poster= and list every pull request: madtea refuses rather than list them."""
    e = release_env
    open_pull(e.forge, "mine", title="Alice's change")
    e.forge.commit("acme", "web", "theirs", {"b.txt": "b\n"}, "Bob's work")
    status, _, _ = call(e.forge, "POST", "/repos/acme/web/pulls", token="bob-token",
                        body={"head": "theirs", "base": "main", "title": "Bob's change"})
    assert status in (201, 403)
    listed = e.call("madt_pr", action="list", author="alice")
    if e.forge.since("1.23", "11"):
        assert not listed.is_error and [p["title"] for p in listed.data] == ["Alice's change"], listed.text
    else:
        assert listed.is_error and listed.error["code"] == "NOT_SUPPORTED", listed.text
        assert "Gitea 1.23 or newer" in listed.text and "Gitea 1.21.11" in listed.text


def test_issue_lock_follows_the_release(release_env: Env) -> None:
    e = release_env
    e.forge.create_issue("acme", "web", "Loud thread", "words")
    path = f"{_R}/issues/{{index}}/lock"
    if _offered(e, "PUT", path):
        e.ok("madt_issues", action="lock", number=1, reason="resolved")
        assert e.issue(1).locked
    else:
        _refused_naming(e, "PUT", path, "madt_issues", action="lock", number=1)
        assert not e.issue(1).locked


def test_secrets_and_variables_follow_the_release(release_env: Env) -> None:
    e = release_env
    listing = f"{_R}/actions/secrets"
    if _offered(e, "GET", listing):
        e.ok("madt_actions", action="set_secret", name="DEPLOY_KEY", body="s3cret")
        assert e.ok("madt_actions", action="secrets").data[0]["name"] == "DEPLOY_KEY"
    else:
        _refused_naming(e, "GET", listing, "madt_actions", action="secrets")
        # setting one still works, and says it cannot tell whether it was new
        done = e.ok("madt_actions", action="set_secret", name="DEPLOY_KEY", body="s3cret")
        assert "cannot list secrets" in done.text and "s3cret" not in done.text
    variable = f"{_R}/actions/variables/{{variablename}}"
    if _offered(e, "POST", variable):
        e.ok("madt_actions", action="set_variable", name="LEVEL", body="3")
        assert e.ok("madt_actions", action="variables").data == [{"name": "LEVEL", "value": "3"}]
    else:
        _refused_naming(e, "POST", variable, "madt_actions", action="set_variable", name="LEVEL", body="3")
        _refused_naming(e, "GET", f"{_R}/actions/variables", "madt_actions", action="variables")


def test_everyday_work_on_every_release(release_env: Env) -> None:
    """Issues, labels, comments, files and a pull request's whole life work alike on every release."""
    e = release_env
    e.forge.create_label("acme", "web", "bug", "#ee0701")
    made = e.ok("madt_issues", action="create", title="Crash on start", body="It crashes.", label=["bug"])
    number = made.data["number"]
    e.ok("madt_issues", action="comment", number=number, body="Seen it too.")
    assert [i["title"] for i in e.ok("madt_issues", action="list", label=["bug"]).data] == ["Crash on start"]
    e.ok("madt_issues", action="close", number=number)
    assert e.issue(number).state == "closed"
    shown = e.ok("madt_files", action="view", path="README.md")
    assert shown.data["sha"]
    pr = open_pull(e.forge, "feature", title="A change")
    view = e.ok("madt_pr", action="view", number=pr)
    assert "A change" in view.text
    merged = e.ok("madt_pr", action="merge", number=pr, style="merge")
    assert merged.data["merge_commit_sha"] and e.forge.repo("acme", "web").issues[pr].pull.merged


def test_server_lacks_names_the_release_and_a_person_s_way_on() -> None:
    import guard
    c = guard.ForgeCall("madt_actions", "runs", {}, "forge.example/acme/web", None)
    newer = guard.server_lacks(c, "Listing workflow runs", "Gitea 1.24.7", "Gitea 1.25", "a person can see it there")
    assert (newer.code, newer.target) == ("NOT_SUPPORTED", "forge.example/acme/web")
    assert newer.message == ("Listing workflow runs needs Gitea 1.25 or newer, and the forge of "
                             "forge.example/acme/web runs Gitea 1.24.7.")
    assert "administrator" in (newer.user_action or "") and not newer.next
    never = guard.server_lacks(c, "Listing workflow runs", "Forgejo 11.0.15", "", "")
    assert "is not in the API of Forgejo 11.0.15" in never.message and never.user_action == guard.NOTHING_FURTHER


def test_a_closed_pull_request_is_said_closed_not_missing(release_env: Env) -> None:
    """Gitea and Forgejo answer the merge of a closed pull request with a bare 404 (pull_service.ErrIsClosed)."""
    e = release_env
    number = open_pull(e.forge, "dropped", title="Dropped idea")
    e.ok("madt_pr", action="close", number=number)
    refused = e.refused("MERGE_BLOCKED", "madt_pr", action="merge", number=number)
    assert f"PR #{number} is closed" in refused.text and "not found" not in refused.text
    assert "reopen" in (refused.error["user_action"] or "")
    assert not e.forge.find_requests("POST", path_contains="/merge")


def test_a_typo_in_a_list_filter_is_refused_not_dropped(release_env: Env) -> None:
    """The forge drops a milestone or label name that matches nothing, which would list every issue."""
    e = release_env
    v1 = e.forge.create_milestone("acme", "web", "Release 1")["id"]
    e.forge.create_label("acme", "web", "bug", "#ee0701")
    e.forge.create_issue("acme", "web", "In the milestone", milestone=v1, labels=["bug"])
    e.forge.create_issue("acme", "web", "Elsewhere")
    _, _, everything = call(e.forge, "GET", "/repos/acme/web/issues", query={"milestones": "Relase 1"})
    assert len(everything) == 2  # the server's own answer to the typo: no filter at all
    refused = e.refused("BAD_ARGUMENT", "madt_issues", action="list", milestone="Relase 1")
    assert "did you mean 'Release 1'" in refused.text
    assert refused.error["next"][0]["args"]["milestone"] == "Release 1"
    refused = e.refused("BAD_ARGUMENT", "madt_issues", action="list", label=["bgu"])
    assert refused.error["next"][0]["args"]["label"] == ["bug"]
    assert [i["title"] for i in e.ok("madt_issues", action="list", milestone="release 1").data] == \
        ["In the milestone"]


def test_a_private_repository_without_a_token_suggests_logging_in(release_env: Env, monkeypatch: Any) -> None:
    """repoAssignment answers 404 to a request without a token for a private repository, as if it were not
    there: the way on is a person's login, never "check the name"."""
    e = release_env
    e.forge.add_repo("acme", "secret", private=True)
    monkeypatch.delenv("MADTEA_TOKEN")
    result = e.call("madt_issues", action="list", owner_repo="acme/secret")
    assert result.is_error and result.error["code"] in ("NOT_FOUND_OR_NO_ACCESS", "AUTH_MISSING"), result.text
    assert result.error["code"] == "NOT_FOUND_OR_NO_ACCESS" and "no token was sent" in result.text, result.text
    assert "madtea auth login" in (result.error["user_action"] or ""), result.error


def test_a_wiki_page_is_read_by_the_name_its_title_is_stored_under(release_env: Env) -> None:
    """services/wiki/wiki_path.go: a title with a dash is stored as 'release-notes.-', and 'release-notes' reads
    the page titled 'release notes'; an edit of a missing page would create it."""
    e = release_env
    made = e.ok("madt_wiki", action="create", page_name="release-notes", content="v1 notes")
    assert made.data["name"] == "release-notes.-"
    status, _, _ = call(e.forge, "GET", "/repos/acme/web/wiki/page/release-notes")
    assert status == 404  # the server's own answer to the title as a name
    for name in ("release-notes", "release-notes.-"):
        shown = e.ok("madt_wiki", action="view", page_name=name)
        assert "v1 notes" in shown.text and shown.data["title"] == "release-notes"
    e.ok("madt_wiki", action="edit", page_name="release-notes.-", content="v2 notes")
    assert [p["title"] for p in e.ok("madt_wiki", action="list").data] == ["release-notes"]  # nothing renamed
    assert "v2 notes" in e.ok("madt_wiki", action="view", page_name="release-notes").text
    e.ok("madt_wiki", action="create", page_name="Getting Started", content="hello")
    assert "hello" in e.ok("madt_wiki", action="view", page_name="Getting Started").text
    assert len(e.ok("madt_wiki", action="history", page_name="release-notes").data["revisions"]) == 2
    e.forge.clear_requests()
    refused = e.refused("NOT_FOUND_OR_NO_ACCESS", "madt_wiki", action="edit", page_name="Nowhere", content="x")
    assert "no wiki page Nowhere" in refused.text and refused.error["next"][0]["args"]["action"] == "create"
    assert not e.forge.find_requests("PATCH")
    assert sorted(p["title"] for p in e.ok("madt_wiki", action="list").data) == ["Getting Started", "release-notes"]


def test_a_file_over_the_blob_limit_is_read_whole_not_as_empty(release_env: Env) -> None:
    """Gitea leaves a file over [api] DEFAULT_MAX_BLOB_SIZE out as null, Forgejo 11-15 as "" (GetBlobBySHA):
    neither is an empty file. madtea reads its raw bytes, and an edit is checked against them."""
    e = release_env
    e.forge.commit("acme", "web", "main", {"big.txt": "line one\nline two\n"}, "big")
    e.forge.max_blob_size = 10
    _, _, item = call(e.forge, "GET", "/repos/acme/web/contents/big.txt")
    assert item["content"] == ("" if e.forge.flavour == "forgejo" else None)
    shown = e.ok("madt_files", action="view", path="big.txt")
    assert shown.data["content"] == "line one\nline two\n"
    e.ok("madt_files", action="edit", path="big.txt", sha=shown.data["sha"], replace_old="line two",
         replace_new="line 2", new_branch="two", title="Two")
    assert e.forge.git("acme", "web", "show", "two:big.txt") == "line one\nline 2"


def test_a_write_to_a_git_lfs_path_reads_back_as_landed(release_env: Env) -> None:
    """With its LFS server on, the forge stores an API write to a filter=lfs path as a pointer
    (services/repository/files/update.go): the read-back holds the pointer to the new bytes, which is the write
    landed, not "another write came after it"; the view says it shows a pointer."""
    e = release_env
    e.forge.commit("acme", "web", "main", {".gitattributes": "*.dat filter=lfs diff=lfs merge=lfs -text\n"}, "lfs")
    made = e.ok("madt_files", action="create", path="notes.dat", content="the real bytes\n", new_branch="lfs",
                title="Notes")
    assert made.data["read_back"] is True and "another write" not in made.text, made.text
    stored = e.forge.git("acme", "web", "show", "lfs:notes.dat")
    assert stored.startswith("version https://git-lfs.github.com/spec/v1")  # git holds the pointer
    shown = e.ok("madt_files", action="view", path="notes.dat", ref="lfs")
    assert "stored in Git LFS" in shown.text and shown.data["lfs"]["size"] == len("the real bytes\n")


def test_a_file_type_refused_mid_attach_says_what_was_attached(release_env: Env) -> None:
    """CreateIssueAttachment answers 422 for a type outside [attachment] ALLOWED_TYPES (upload.Verify); the
    files before it stay attached, and the answer says which."""
    e = release_env
    e.forge.create_issue("acme", "web", "Crash", "see logs")
    (e.clone / "crash.log").write_text("boom\n")
    (e.clone / "core.bin").write_bytes(b"\x7fELF")
    (e.clone / "notes.txt").write_text("later\n")
    e.forge.attachment_allowed_types = ".log,.txt"
    result = e.call("madt_issues", action="attach", number=1, files=["crash.log", "core.bin", "notes.txt"])
    assert result.is_error, result.text
    assert "Attached crash.log (5 bytes); core.bin was not attached" in result.text, result.text
    assert "forbidden file extension" in result.text and "notes.txt" in result.text
    assert [a.name for a in e.forge.repo("acme", "web").issues[1].attachments] == ["crash.log"]


def test_a_filter_by_an_unknown_user_is_said_as_such(release_env: Env) -> None:
    """ListIssues answers an unknown created_by with 404 (getUserIDForFilter), ListPullRequests an unknown poster
    with 400: the user is missing, not the repository."""
    e = release_env
    status, _, _ = call(e.forge, "GET", "/repos/acme/web/issues", query={"created_by": "nobdy"})
    assert status == 404
    refused = e.refused("BAD_ARGUMENT", "madt_issues", action="list", author="nobdy")
    assert "has no user nobdy" in refused.text and refused.error["next"][0]["args"]["q"] == "nobdy"
    if e.forge.since("1.23", "11"):
        refused = e.refused("BAD_ARGUMENT", "madt_pr", action="list", author="nobdy")
        assert "has no user nobdy" in refused.text


def test_actions_secrets_are_the_owner_s_alone(release_env: Env, monkeypatch: Any) -> None:
    """reqOwner guards a repository's Actions secrets and variables: a collaborator with admin access is refused
    403, and the way on names the person who can."""
    e = release_env
    e.forge.grant("acme", "web", "bob", "admin")
    monkeypatch.setenv("MADTEA_TOKEN", "bob-token")
    if not _offered(e, "GET", f"{_R}/actions/secrets"):
        return
    refused = e.refused("NOT_ALLOWED", "madt_actions", action="secrets")
    assert "should be the owner" in refused.text
    assert "only the repository's owner" in (refused.error["user_action"] or "")


def test_the_rules_for_what_the_forge_would_answer_misleadingly() -> None:
    """check_filter_names, no_such_user, check_pr_open and no_such_wiki_page, as guard builds them."""
    import guard
    import pytest
    c = guard.ForgeCall("madt_issues", "list", {"milestone": "Relase 1"}, "acme/web", None)
    assert guard.check_filter_names(c, "acme/web", "milestone", "milestone", ["release 1"], ["Release 1"]) == \
        ["Release 1"]
    with pytest.raises(guard.Refusal) as typo:
        guard.check_filter_names(c, "acme/web", "milestone", "milestone", ["Relase 1"], ["Release 1", "v2"])
    assert typo.value.code == "BAD_ARGUMENT" and typo.value.next[0]["args"]["milestone"] == "Release 1"
    with pytest.raises(guard.Refusal) as far:
        guard.check_filter_names(c, "acme/web", "label", "label", ["zzz"], ["bug"], many=True)
    assert far.value.user_action and not far.value.next and "nothing is close to zzz" in far.value.message
    user = guard.no_such_user(c, "acme/web", "author", "nobdy")
    assert user.code == "BAD_ARGUMENT" and user.next[0]["args"] == {"action": "users", "owner_repo": "acme/web",
                                                                     "q": "nobdy"}
    with pytest.raises(guard.Refusal) as closed:
        guard.check_pr_open("acme/web", 3, "closed")
    assert closed.value.code == "MERGE_BLOCKED" and "PR #3 is closed" in closed.value.message
    guard.check_pr_open("acme/web", 3, "open")
    w = guard.ForgeCall("madt_wiki", "edit", {"page_name": "Nowhere", "content": "x"}, "acme/web", None)
    page = guard.no_such_wiki_page(w, "Nowhere", True)
    assert page.code == "NOT_FOUND_OR_NO_ACCESS" and page.next[0]["args"]["action"] == "create"
    assert guard.no_such_wiki_page(w, "Nowhere", False).next[0]["args"]["action"] == "list"
