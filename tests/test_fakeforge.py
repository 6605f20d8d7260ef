"""The fake forge behaves like Gitea 1.25.4 and Forgejo 15.0.3 where madtea depends on it.

Requests go through plain ``http.client`` (``forge.call``) or ``urllib``; git
results are checked in the bare repositories with real git.
"""
from __future__ import annotations

import base64
import http.client
import json
import socket
import subprocess
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

import speccheck
from fakeforge import DEFAULT_ROOT_URL, FakeForge, call, open_pull

ROOT = DEFAULT_ROOT_URL
REPO = "/repos/acme/web"


def new_branch(forge: FakeForge, branch: str, files: dict[str, str] | None = None, message: str = "Change") -> str:
    return forge.commit("acme", "web", branch, files or {f"{branch}.txt": f"{branch}\n"}, message)


def git_log(forge: FakeForge, *args: str) -> str:
    return forge.git("acme", "web", "log", *args)


def expect_violation(forge: FakeForge, fragment: str) -> None:
    """The spec checker flagged the deliberately bad request (when the specs are present)."""
    taken = forge.take_violations()
    if forge.spec_skip_reason is None:
        assert any(fragment in problem for problem in taken), taken


# =========================================================================== basics and auth

def test_version_per_flavour(fake_forge: FakeForge) -> None:
    status, _, body = call(fake_forge, "GET", "/version", token=None)
    expected = "1.25.4" if fake_forge.flavour == "gitea" else "15.0.3+gitea-1.22.0"
    assert (status, body) == (200, {"version": expected})


def test_defaults(fake_forge: FakeForge) -> None:
    status, _, user = call(fake_forge, "GET", "/user")
    assert status == 200 and user["login"] == "alice" and user["username"] == "alice"
    status, _, repo = call(fake_forge, "GET", REPO)
    assert status == 200
    assert (repo["full_name"], repo["default_branch"], repo["empty"], repo["private"]) == ("acme/web", "main",
                                                                                           False, False)
    assert repo["permissions"] == {"admin": True, "push": True, "pull": True}
    assert repo["clone_url"] == ROOT + "acme/web.git"
    assert fake_forge.remote_url() == f"http://127.0.0.1:{fake_forge.port}/acme/web.git"
    assert git_log(fake_forge, "--format=%s", "main") == "Initial commit"
    _, _, bob_view = call(fake_forge, "GET", REPO, token="bob-token")
    assert bob_view["permissions"] == {"admin": False, "push": False, "pull": True}


def test_settings_api(fake_forge: FakeForge) -> None:
    status, _, body = call(fake_forge, "GET", "/settings/api")
    assert status == 200
    assert (body["max_response_items"], body["default_paging_num"]) == (50, 30)


def test_invalid_token(fake_forge: FakeForge) -> None:
    status, headers, body = call(fake_forge, "GET", "/user", token="nope")
    assert status == 401
    assert body == {"message": "invalid username, password or token", "url": ROOT + "api/swagger"}
    # Even an endpoint that needs no auth refuses a bad token.
    assert call(fake_forge, "GET", "/version", token="nope")[0] == 401


def test_missing_token(fake_forge: FakeForge) -> None:
    status, _, body = call(fake_forge, "GET", "/user", token=None)
    assert (status, body["message"]) == (401, "token is required")
    status, _, body = call(fake_forge, "POST", REPO + "/issues", token=None, body={"title": "x"})
    assert (status, body["message"]) == (401, "token is required")
    assert call(fake_forge, "GET", REPO, token=None)[0] == 200  # public reads need none


def test_bearer_and_basic_auth(fake_forge: FakeForge) -> None:
    bearer = {"Authorization": "Bearer alice-token"}
    assert call(fake_forge, "GET", "/user", token=None, headers=bearer)[2]["login"] == "alice"
    basic = base64.b64encode(b"alice-token:x-oauth-basic").decode()
    assert call(fake_forge, "GET", "/user", token=None, headers={"Authorization": f"Basic {basic}"})[0] == 200
    basic = base64.b64encode(b"alice:alice-token").decode()
    assert call(fake_forge, "GET", "/user", token=None, headers={"Authorization": f"Basic {basic}"})[0] == 200
    assert call(fake_forge, "GET", "/user", token=None, headers={"Authorization": "token"})[0] == 401


def test_query_token_only_on_gitea(fake_forge: FakeForge) -> None:
    status, headers, body = call(fake_forge, "GET", "/user", token=None, query={"token": "alice-token"})
    if fake_forge.flavour == "gitea":
        assert status == 200 and body["login"] == "alice"
        assert "deprecated" in headers["X-Gitea-Warning"]
        assert fake_forge.take_violations() == []
    else:
        assert (status, body["message"]) == (401, "token is required")
        expect_violation(fake_forge, "query parameter 'token' is not declared")


def test_token_scopes(fake_forge: FakeForge) -> None:
    fake_forge.add_token("alice", "issues-only", scopes=["read:issue"])
    status, _, body = call(fake_forge, "GET", REPO, token="issues-only")
    assert status == 403
    assert body["message"] == ("token does not have at least one of required scope(s), required=[read:repository], "
                               "token scope=read:issue")
    assert call(fake_forge, "GET", REPO + "/issues", token="issues-only")[0] == 200
    status, _, body = call(fake_forge, "POST", REPO + "/issues", token="issues-only", body={"title": "x"})
    assert status == 403 and "required=[write:issue]" in body["message"]


def test_private_repository_is_a_404(fake_forge: FakeForge) -> None:
    fake_forge.add_repo("acme", "secret", private=True)
    status, _, body = call(fake_forge, "GET", "/repos/acme/secret", token="bob-token")
    assert status == 404
    if fake_forge.flavour == "gitea":
        assert body == {"errors": None, "message": "not found", "url": ROOT + "api/swagger"}
    else:
        assert body == {"message": "The target couldn't be found.", "url": ROOT + "api/swagger", "errors": []}
    assert call(fake_forge, "GET", "/repos/acme/secret")[0] == 200


def test_archived_repository_refuses_writes(fake_forge: FakeForge) -> None:
    status, _, repo = call(fake_forge, "PATCH", REPO, body={"archived": True})
    assert status == 200 and repo["archived"] is True
    status, _, body = call(fake_forge, "POST", REPO + "/issues", body={"title": "x"})
    assert (status, body["message"]) == (423, "acme/web is archived")
    assert call(fake_forge, "GET", REPO + "/issues")[0] == 200
    assert call(fake_forge, "PATCH", REPO, body={"archived": False})[0] == 200


def test_unknown_owner(fake_forge: FakeForge) -> None:
    status, _, body = call(fake_forge, "GET", "/repos/nobody/web")
    assert status == 404
    assert body["errors"] == ["user redirect does not exist [name: nobody]"]


def test_unknown_route_and_method(fake_forge: FakeForge) -> None:
    status, headers, body = call(fake_forge, "GET", REPO + "/frobnicate")
    assert (status, body) == (404, b"404 page not found\n")
    assert headers["Content-Type"].startswith("text/plain")
    expect_violation(fake_forge, "(no operation)")
    status, _, body = call(fake_forge, "PUT", "/version")
    assert (status, body) == (405, b"")
    expect_violation(fake_forge, "PUT /version is not an operation")


def test_requests_are_recorded(fake_forge: FakeForge) -> None:
    call(fake_forge, "POST", REPO + "/issues", body={"title": "Recorded"}, query={"x": "1"})
    expect_violation(fake_forge, "query parameter 'x' is not declared")
    [request] = fake_forge.find_requests("POST", "/issues")
    assert request.query == {"x": "1"} and request.json == {"title": "Recorded"}
    assert request.header("authorization") == "token alice-token"
    assert request.user == "alice"
    assert request.operation == (None if fake_forge.spec_skip_reason else "issueCreateIssue")


# =========================================================================== pagination

def test_limit_clamped_and_link_built_from_root_url(fake_forge: FakeForge) -> None:
    for n in range(75):
        fake_forge.create_issue("acme", "web", f"Issue {n}")
    status, headers, page1 = call(fake_forge, "GET", REPO + "/issues", query={"limit": 100, "state": "open"})
    assert status == 200 and len(page1) == 50
    assert headers["X-Total-Count"] == "75"
    base = ROOT + "api/v1/repos/acme/web/issues"
    assert headers["Link"] == (f'<{base}?limit=100&page=2&state=open>; rel="next",'
                               f'<{base}?limit=100&page=2&state=open>; rel="last"')
    _, headers, page2 = call(fake_forge, "GET", REPO + "/issues", query={"limit": 100, "state": "open", "page": 2})
    assert len(page2) == 25
    assert headers["Link"] == (f'<{base}?limit=100&page=1&state=open>; rel="first",'
                               f'<{base}?limit=100&page=1&state=open>; rel="prev"')
    assert {i["number"] for i in page1} | {i["number"] for i in page2} == set(range(1, 76))


def test_default_page_size_and_past_the_end(fake_forge: FakeForge) -> None:
    for n in range(35):
        fake_forge.create_issue("acme", "web", f"Issue {n}")
    for limit in (0, -5):
        assert len(call(fake_forge, "GET", REPO + "/issues", query={"limit": limit})[2]) == 30
    assert len(call(fake_forge, "GET", REPO + "/issues")[2]) == 30
    status, headers, body = call(fake_forge, "GET", REPO + "/issues", query={"page": 9})
    assert (status, body) == (200, [])
    _, headers, _ = call(fake_forge, "GET", REPO + "/issues", query={"page": 2, "limit": 10})
    rels = [part.split("; ")[1] for part in headers["Link"].split(",")]
    assert rels == ['rel="next"', 'rel="last"', 'rel="first"', 'rel="prev"']


def test_labels_list_has_total_but_no_link(fake_forge: FakeForge) -> None:
    for n in range(3):
        fake_forge.create_label("acme", "web", f"label-{n}")
    _, headers, labels = call(fake_forge, "GET", REPO + "/labels", query={"limit": 1})
    assert len(labels) == 1 and headers["X-Total-Count"] == "3" and "Link" not in headers


def test_comments_are_not_paginated(fake_forge: FakeForge) -> None:
    fake_forge.create_issue("acme", "web", "Chatty")
    for n in range(60):
        fake_forge.create_comment("acme", "web", 1, f"comment {n}")
    _, headers, comments = call(fake_forge, "GET", REPO + "/issues/1/comments")
    assert len(comments) == 60 and headers["X-Total-Count"] == "60" and "Link" not in headers


# =========================================================================== issues

def test_issue_create(fake_forge: FakeForge) -> None:
    bug = fake_forge.create_label("acme", "web", "bug")
    status, _, issue = call(fake_forge, "POST", REPO + "/issues",
                            body={"title": "Crash", "body": "Boom", "labels": [bug["id"]]})
    assert status == 201
    assert (issue["number"], issue["state"], issue["title"]) == (1, "open", "Crash")
    assert [label["name"] for label in issue["labels"]] == ["bug"]
    assert issue["html_url"] == ROOT + "acme/web/issues/1"
    assert issue["pull_request"] is None and issue["assignees"] is None
    # A reader may open issues, but the labels of a non-writer are dropped.
    status, _, issue = call(fake_forge, "POST", REPO + "/issues", token="bob-token",
                            body={"title": "From bob", "labels": [bug["id"]]})
    assert status == 201 and issue["labels"] == [] and issue["user"]["login"] == "bob"


def test_issue_create_needs_a_title(fake_forge: FakeForge) -> None:
    status, _, body = call(fake_forge, "POST", REPO + "/issues", body={"body": "untitled"})
    assert (status, body["message"]) == (422, "[Title]: Required")
    expect_violation(fake_forge, "missing required field 'title'")


def test_issue_edit_is_201_and_moves_updated_at(fake_forge: FakeForge) -> None:
    created = fake_forge.create_issue("acme", "web", "Typo", "teh")
    status, _, edited = call(fake_forge, "PATCH", REPO + "/issues/1", body={"body": "the", "state": "closed"})
    assert status == 201
    assert (edited["body"], edited["state"]) == ("the", "closed") and edited["closed_at"]
    assert edited["updated_at"] > created["updated_at"]
    status, _, reopened = call(fake_forge, "PATCH", REPO + "/issues/1", body={"state": "open"})
    assert (status, reopened["state"], reopened["closed_at"]) == (201, "open", None)
    status, _, body = call(fake_forge, "PATCH", REPO + "/issues/1", body={"state": "done"})
    assert (status, body["message"]) == (412, "unknown state: done")


def test_issue_edit_by_a_non_writer(fake_forge: FakeForge) -> None:
    fake_forge.create_issue("acme", "web", "Alice's")
    status, _, body = call(fake_forge, "PATCH", REPO + "/issues/1", token="bob-token", body={"title": "Mine"})
    assert (status, body) == (403, b"")
    fake_forge.create_issue("acme", "web", "Bob's", user="bob")
    milestone = fake_forge.create_milestone("acme", "web", "v1")
    status, _, issue = call(fake_forge, "PATCH", REPO + "/issues/2", token="bob-token",
                            body={"title": "Bob's, better", "milestone": milestone["id"]})
    assert status == 201 and issue["title"] == "Bob's, better"
    assert issue["milestone"] is None  # a non-writer's milestone is silently ignored


def test_issue_list_filters(fake_forge: FakeForge) -> None:
    bug = fake_forge.create_label("acme", "web", "bug")
    ui = fake_forge.create_label("acme", "web", "ui")
    milestone = fake_forge.create_milestone("acme", "web", "v1")
    fake_forge.create_issue("acme", "web", "Crash on save", labels=["bug", "ui"], milestone=milestone["id"])
    fake_forge.create_issue("acme", "web", "Slow start", labels=["bug"], user="bob", assignees=["alice"])
    fake_forge.create_issue("acme", "web", "Old", state="closed")
    new_branch(fake_forge, "feature")
    fake_forge.create_pull("acme", "web", "feature", title="A pull")

    def numbers(**query: Any) -> list[int]:
        status, _, issues = call(fake_forge, "GET", REPO + "/issues", query=query)
        assert status == 200
        return [i["number"] for i in issues]

    assert numbers() == [4, 2, 1]  # issues and pulls, newest first
    assert numbers(type="issues") == [2, 1]
    assert numbers(type="pulls") == [4]
    assert numbers(state="closed") == [3]
    assert numbers(state="all", type="issues") == [3, 2, 1]
    assert numbers(labels="bug") == [2, 1]
    assert numbers(labels="bug,ui") == [1]  # every named label must be on the issue
    assert numbers(labels="nope,ui") == [1]  # unknown names are dropped
    assert numbers(labels="nope") == [4, 2, 1]  # ... and with none known there is no label filter
    assert numbers(milestones="v1") == [1]
    assert numbers(milestones=str(milestone["id"])) == [1]
    assert numbers(q="slow") == [2]
    assert numbers(created_by="bob") == [2]
    assert numbers(assigned_by="alice") == [2]
    assert bug["id"] != ui["id"]


def test_issue_labels(fake_forge: FakeForge) -> None:
    bug = fake_forge.create_label("acme", "web", "bug")
    ui = fake_forge.create_label("acme", "web", "ui")
    fake_forge.create_issue("acme", "web", "Labelled")
    path = REPO + "/issues/1/labels"
    status, _, labels = call(fake_forge, "POST", path, body={"labels": ["bug", "no-such-label"]})
    assert status == 200 and [label["name"] for label in labels] == ["bug"]
    status, _, labels = call(fake_forge, "PUT", path, body={"labels": [ui["id"]]})
    assert status == 200 and [label["name"] for label in labels] == ["ui"]
    status, _, body = call(fake_forge, "POST", path, body={"labels": [bug["id"], "ui"]})
    assert (status, body["message"]) == (400, "labels should be an array of strings or integers")
    status, _, body = call(fake_forge, "POST", path, body={"labels": [True]})
    assert (status, body["message"]) == (400, "a label must be an integer or a string")
    status, _, body = call(fake_forge, "POST", path, token="bob-token", body={"labels": ["bug"]})
    assert (status, body) == (403, b"")
    status, _, body = call(fake_forge, "DELETE", f"{path}/999")
    assert (status, body["message"]) == (422, "label does not exist [label_id: 999]")
    assert call(fake_forge, "DELETE", f"{path}/{ui['id']}")[0] == 204
    assert fake_forge.issue("acme", "web", 1)["labels"] == []
    call(fake_forge, "POST", path, body={"labels": [bug["id"], ui["id"]]})
    assert call(fake_forge, "DELETE", path)[0] == 204
    assert call(fake_forge, "GET", path)[2] == []


def test_label_removal_by_name_is_forgejo_only(fake_forge: FakeForge) -> None:
    fake_forge.create_label("acme", "web", "bug")
    fake_forge.create_issue("acme", "web", "Labelled", labels=["bug"])
    status, _, body = call(fake_forge, "DELETE", REPO + "/issues/1/labels/bug")
    if fake_forge.flavour == "forgejo":
        assert status == 204 and fake_forge.issue("acme", "web", 1)["labels"] == []
    else:
        assert (status, body["message"]) == (422, "label does not exist [name: bug]")
        expect_violation(fake_forge, "path parameter id: must be an integer")


def test_exclusive_scoped_labels(fake_forge: FakeForge) -> None:
    low = fake_forge.create_label("acme", "web", "priority/low", exclusive=True)
    high = fake_forge.create_label("acme", "web", "priority/high", exclusive=True)
    fake_forge.create_issue("acme", "web", "Scoped", labels=[low["id"]])
    _, _, labels = call(fake_forge, "POST", REPO + "/issues/1/labels", body={"labels": [high["id"]]})
    assert [label["name"] for label in labels] == ["priority/high"]


def test_issue_lock(fake_forge: FakeForge) -> None:
    fake_forge.create_issue("acme", "web", "Heated")
    status, _, body = call(fake_forge, "PUT", REPO + "/issues/1/lock", body={"lock_reason": "too heated"})
    if fake_forge.flavour == "forgejo":
        assert (status, body) == (404, b"404 page not found\n")  # Forgejo 15 has no lock API
        expect_violation(fake_forge, "(no operation)")
        return
    assert status == 204 and fake_forge.issue("acme", "web", 1)["is_locked"] is True
    status, _, body = call(fake_forge, "POST", REPO + "/issues/1/comments", token="bob-token", body={"body": "hey"})
    assert (status, body["message"]) == (403, "You cannot comment on a locked issue.")
    assert call(fake_forge, "POST", REPO + "/issues/1/comments", body={"body": "calm"})[0] == 201
    assert call(fake_forge, "DELETE", REPO + "/issues/1/lock")[0] == 204
    assert fake_forge.issue("acme", "web", 1)["is_locked"] is False


def test_comments(fake_forge: FakeForge) -> None:
    fake_forge.create_issue("acme", "web", "Discuss")
    status, _, comment = call(fake_forge, "POST", REPO + "/issues/1/comments", body={"body": "First"})
    assert status == 201 and comment["body"] == "First"
    assert comment["html_url"] == f"{ROOT}acme/web/issues/1#issuecomment-{comment['id']}"
    path = f"{REPO}/issues/comments/{comment['id']}"
    status, _, edited = call(fake_forge, "PATCH", path, body={"body": "First!"})
    assert (status, edited["body"]) == (200, "First!")
    status, _, body = call(fake_forge, "PATCH", path, token="bob-token", body={"body": "mine"})
    assert (status, body) == (403, b"")  # Gitea's ctx.Status(403): no body at all
    assert call(fake_forge, "DELETE", path, token="bob-token")[0] == 403
    assert call(fake_forge, "DELETE", path)[0] == 204
    assert call(fake_forge, "GET", REPO + "/issues/1/comments")[2] == []
    status, _, body = call(fake_forge, "POST", REPO + "/issues/1/comments", body={})
    assert (status, body["message"]) == (422, "[Body]: Required")
    expect_violation(fake_forge, "missing required field 'body'")


def test_comments_of_a_missing_issue(fake_forge: FakeForge) -> None:
    status, _, body = call(fake_forge, "GET", REPO + "/issues/99/comments")
    # Gitea 1.25 misses the not-exist check and answers 500; Forgejo answers 404.
    assert status == (500 if fake_forge.flavour == "gitea" else 404)


def test_timeline(fake_forge: FakeForge) -> None:
    fake_forge.create_issue("acme", "web", "Story")
    fake_forge.create_comment("acme", "web", 1, "said")
    call(fake_forge, "PATCH", REPO + "/issues/1", body={"state": "closed"})
    _, _, events = call(fake_forge, "GET", REPO + "/issues/1/timeline")
    assert [e["type"] for e in events] == ["comment", "close"]


# =========================================================================== labels and milestones

def test_labels(fake_forge: FakeForge) -> None:
    status, _, label = call(fake_forge, "POST", REPO + "/labels", body={"name": "bug", "color": "#ABC"})
    assert status == 201 and label["color"] == "aabbcc"  # normalised, answered without '#'
    status, _, label2 = call(fake_forge, "POST", REPO + "/labels", body={"name": "ui", "color": "00FF00"})
    assert label2["color"] == "00ff00"
    status, _, body = call(fake_forge, "POST", REPO + "/labels", body={"name": "bad", "color": "red"})
    assert (status, body["message"]) == (422, "bad color code")
    status, _, body = call(fake_forge, "POST", REPO + "/labels", token="bob-token",
                           body={"name": "x", "color": "#000000"})
    assert (status, body["message"]) == (403, "user should have a permission to write to a repo")
    status, _, edited = call(fake_forge, "PATCH", f"{REPO}/labels/{label['id']}",
                             body={"name": "defect", "description": "A defect"})
    assert (status, edited["name"], edited["description"]) == (200, "defect", "A defect")
    assert [l["name"] for l in call(fake_forge, "GET", REPO + "/labels")[2]] == ["defect", "ui"]
    assert call(fake_forge, "DELETE", f"{REPO}/labels/{label['id']}")[0] == 204
    assert call(fake_forge, "GET", f"{REPO}/labels/{label['id']}")[0] == 404


def test_milestones(fake_forge: FakeForge) -> None:
    status, _, milestone = call(fake_forge, "POST", REPO + "/milestones",
                                body={"title": "v1.0", "description": "First", "due_on": "2026-03-01T00:00:00Z"})
    assert status == 201 and milestone["state"] == "open" and milestone["due_on"] == "2026-03-01T00:00:00Z"
    mid = milestone["id"]
    assert call(fake_forge, "GET", f"{REPO}/milestones/{mid}")[2]["title"] == "v1.0"
    status, _, by_name = call(fake_forge, "GET", REPO + "/milestones/v1.0")
    assert status == 200 and by_name["id"] == mid  # by id, and failing that by name
    if fake_forge.flavour == "forgejo":
        expect_violation(fake_forge, "must be an integer")  # Forgejo's spec says integer
    status, _, closed = call(fake_forge, "PATCH", f"{REPO}/milestones/{mid}", body={"state": "closed"})
    assert (status, closed["state"]) == (200, "closed") and closed["closed_at"]
    assert call(fake_forge, "GET", REPO + "/milestones")[2] == []
    assert len(call(fake_forge, "GET", REPO + "/milestones", query={"state": "all"})[2]) == 1
    assert call(fake_forge, "DELETE", f"{REPO}/milestones/{mid}")[0] == 204
    assert call(fake_forge, "GET", f"{REPO}/milestones/{mid}")[0] == 404


# =========================================================================== pull requests

def test_pull_create(fake_forge: FakeForge) -> None:
    new_branch(fake_forge, "feature")
    status, _, pull = call(fake_forge, "POST", REPO + "/pulls",
                           body={"head": "feature", "base": "main", "title": "Add feature", "body": "Why"})
    assert status == 201
    assert (pull["number"], pull["state"], pull["merged"], pull["mergeable"]) == (1, "open", False, True)
    assert pull["head"]["ref"] == "feature" and pull["head"]["label"] == "feature"
    assert pull["head"]["sha"] == fake_forge.branch_sha("acme", "web", "feature")
    assert pull["base"]["sha"] == fake_forge.branch_sha("acme", "web", "main")
    assert (pull["additions"], pull["changed_files"]) == (1, 1)
    assert pull["html_url"] == ROOT + "acme/web/pulls/1" and pull["diff_url"] == ROOT + "acme/web/pulls/1.diff"
    assert fake_forge.git("acme", "web", "rev-parse", "refs/pull/1/head") == pull["head"]["sha"]
    _, _, as_issue = call(fake_forge, "GET", REPO + "/issues/1")
    assert as_issue["pull_request"]["merged"] is False


def test_pull_create_errors(fake_forge: FakeForge) -> None:
    new_branch(fake_forge, "feature")
    body = {"head": "feature", "base": "main", "title": "Add feature"}
    assert call(fake_forge, "POST", REPO + "/pulls", body=body)[0] == 201
    status, _, error = call(fake_forge, "POST", REPO + "/pulls", body=body)
    assert status == 409
    assert error["message"] == ("pull request already exists for these targets [id: 1, issue_id: 1, "
                                "head_repo_id: 1, base_repo_id: 1, head_branch: feature, base_branch: main]")
    status, _, error = call(fake_forge, "POST", REPO + "/pulls", body={**body, "head": "main"})
    assert (status, error["message"]) == (
        422, "Invalid PullRequest: There are no changes between the head and the base")
    assert call(fake_forge, "POST", REPO + "/pulls", body={**body, "head": "nope"})[0] == 404
    assert call(fake_forge, "POST", REPO + "/pulls", body={**body, "base": "nope"})[0] == 404
    status, _, error = call(fake_forge, "POST", REPO + "/pulls", body={"head": "feature", "base": "main"})
    assert (status, error["message"]) == (422, "[Title]: Required")


def test_pull_list_get_edit_and_by_branches(fake_forge: FakeForge) -> None:
    open_pull(fake_forge, "one")
    open_pull(fake_forge, "two")
    _, headers, pulls = call(fake_forge, "GET", REPO + "/pulls")
    assert [p["number"] for p in pulls] == [2, 1] and headers["X-Total-Count"] == "2"
    status, _, edited = call(fake_forge, "PATCH", REPO + "/pulls/1", body={"title": "One, renamed"})
    assert (status, edited["title"]) == (201, "One, renamed")
    status, _, found = call(fake_forge, "GET", REPO + "/pulls/main/two")
    assert (status, found["number"]) == (200, 2)
    assert call(fake_forge, "GET", REPO + "/pulls/3")[0] == 404


def test_mergeable_while_the_check_runs(fake_forge: FakeForge) -> None:
    fake_forge.mergeable_delay = 2
    number = open_pull(fake_forge)
    status, _, body = call(fake_forge, "POST", f"{REPO}/pulls/{number}/merge", body={"Do": "merge"})
    assert (status, body["message"]) == (405, "Please try again later")
    seen = [call(fake_forge, "GET", f"{REPO}/pulls/{number}")[2]["mergeable"] for _ in range(3)]
    assert seen == [False, False, True]
    assert call(fake_forge, "POST", f"{REPO}/pulls/{number}/merge", body={"Do": "merge"})[0] == 200


def prepare_for_style(forge: FakeForge, style: str) -> tuple[int, str, str]:
    """An open PR for *style*; main has moved on unless the style needs a fast-forward."""
    head = forge.commit("acme", "web", "feature", {"feature.txt": "one\n"}, "Add feature")
    head = forge.commit("acme", "web", "feature", {"feature.txt": "one\ntwo\n"}, "Extend feature")
    if style == "manually-merged":
        call(forge, "PATCH", REPO, body={"allow_manual_merge": True})
    if style not in ("fast-forward-only", "manually-merged"):
        forge.commit("acme", "web", "main", {"other.txt": "other\n"}, "Unrelated change")
    base = forge.branch_sha("acme", "web", "main")
    assert base is not None
    status, _, pull = call(forge, "POST", REPO + "/pulls",
                           body={"head": "feature", "base": "main", "title": "Add feature"})
    assert status == 201
    return int(pull["number"]), base, head


@pytest.mark.parametrize("style", ["merge", "rebase", "rebase-merge", "squash", "fast-forward-only",
                                   "manually-merged"])
def test_merge_every_style_with_real_git(fake_forge: FakeForge, style: str) -> None:
    number, base, head = prepare_for_style(fake_forge, style)
    body: dict[str, Any] = {"Do": style, "delete_branch_after_merge": True}
    if style == "manually-merged":
        # The change reached main outside the forge (e.g. a local merge pushed directly).
        body["MergeCommitID"] = fake_forge.commit("acme", "web", "main", {"feature.txt": "one\ntwo\n"},
                                                  "Merge feature by hand")
    status, headers, raw = fake_forge.call("POST", f"{REPO}/pulls/{number}/merge", json_body=body)
    assert (status, raw) == (200, b"")  # success is an EMPTY 200, not the pull request
    tip = fake_forge.branch_sha("acme", "web", "main")
    pull = call(fake_forge, "GET", f"{REPO}/pulls/{number}")[2]
    assert (pull["merged"], pull["state"], pull["merge_commit_sha"]) == (True, "closed", tip)
    assert pull["merged_by"]["login"] == "alice"
    parents = fake_forge.git("acme", "web", "rev-list", "--parents", "-n1", "main").split()[1:]
    subjects = git_log(fake_forge, "--format=%s", f"{base}..main").splitlines()
    files = fake_forge.git("acme", "web", "show", "main:feature.txt")
    assert files == "one\ntwo"
    if style == "merge":
        assert parents == [base, head]
        assert subjects[0] == "Merge pull request 'Add feature' (#1) from feature into main"
    elif style == "rebase":
        assert len(parents) == 1 and subjects == ["Extend feature", "Add feature"] and tip != head
    elif style == "rebase-merge":
        assert parents[0] == base and parents[1] != head
        assert subjects[0].startswith("Merge pull request 'Add feature' (#1)")
    elif style == "squash":
        assert parents == [base] and subjects == ["Add feature (#1)"]
    elif style == "fast-forward-only":
        assert tip == head
    else:
        assert tip == body["MergeCommitID"]
    remaining = fake_forge.branch_sha("acme", "web", "feature")
    # Deleted after the merge, except for manually-merged, which returns before that step.
    assert (remaining is None) == (style != "manually-merged")
    status, _, error = call(fake_forge, "POST", f"{REPO}/pulls/{number}/merge", body={"Do": style})
    assert (status, error["message"]) == (405, "The PR is already merged")


def test_merge_title_and_message(fake_forge: FakeForge) -> None:
    number = open_pull(fake_forge)
    status, _, _ = call(fake_forge, "POST", f"{REPO}/pulls/{number}/merge",
                        body={"Do": "merge", "MergeTitleField": "  Ship it  ", "MergeMessageField": " Details. "})
    assert status == 200
    assert git_log(fake_forge, "-1", "--format=%B", "main").strip() == "Ship it\n\nDetails."
    assert fake_forge.branch_sha("acme", "web", "feature") is not None  # not asked to delete: kept


def test_snake_case_merge_keys_are_ignored(fake_forge: FakeForge) -> None:
    number = open_pull(fake_forge)
    status, _, _ = call(fake_forge, "POST", f"{REPO}/pulls/{number}/merge",
                        body={"Do": "merge", "merge_title_field": "Ignored"})
    assert status == 200
    assert git_log(fake_forge, "-1", "--format=%s", "main").startswith("Merge pull request 'A change'")
    expect_violation(fake_forge, "field 'merge_title_field' is not declared")


def test_delete_branch_after_merge_default(fake_forge: FakeForge) -> None:
    call(fake_forge, "PATCH", REPO, body={"default_delete_branch_after_merge": True})
    number = open_pull(fake_forge)
    assert call(fake_forge, "POST", f"{REPO}/pulls/{number}/merge", body={"Do": "merge"})[0] == 200
    remaining = fake_forge.branch_sha("acme", "web", "feature")
    if fake_forge.flavour == "gitea":
        assert remaining is None  # absent -> the repository's default applies
    else:
        assert remaining is not None  # Forgejo: a plain bool, absent means false


def test_merge_refusals(fake_forge: FakeForge) -> None:
    number = open_pull(fake_forge, title="WIP: not yet")
    merge = f"{REPO}/pulls/{number}/merge"
    status, _, body = call(fake_forge, "POST", merge, body={"Do": "merge"})
    assert (status, body["message"]) == (405, "Work in progress PRs cannot be merged")
    call(fake_forge, "PATCH", f"{REPO}/pulls/{number}", body={"title": "Ready"})
    status, _, body = call(fake_forge, "POST", merge, token="bob-token", body={"Do": "merge"})
    assert (status, body["message"]) == (405, "User not allowed to merge PR")
    call(fake_forge, "PATCH", REPO, body={"allow_squash_merge": False})
    status, _, body = call(fake_forge, "POST", merge, body={"Do": "squash"})
    assert (status, body["message"]) == (405, "squash is not allowed an allowed merge style for this repository")
    status, _, body = call(fake_forge, "POST", merge, body={"Do": "octopus"})
    assert (status, body["message"]) == (422, "[Do]: In")
    expect_violation(fake_forge, "body.Do must be one of")
    status, _, body = call(fake_forge, "POST", merge, body={"Do": "merge", "head_commit_id": "0" * 40})
    assert (status, body["message"]) == (409, "head out of date")
    head = fake_forge.branch_sha("acme", "web", "feature")
    assert call(fake_forge, "POST", merge, body={"Do": "merge", "head_commit_id": head})[0] == 200


def test_closed_pull_is_a_404_to_merge(fake_forge: FakeForge) -> None:
    number = open_pull(fake_forge)
    call(fake_forge, "PATCH", f"{REPO}/pulls/{number}", body={"state": "closed"})
    status, _, body = call(fake_forge, "POST", f"{REPO}/pulls/{number}/merge", body={"Do": "merge"})
    assert status == 404 and "message" in body


def test_merged_pull_state_cannot_change(fake_forge: FakeForge) -> None:
    number = open_pull(fake_forge)
    call(fake_forge, "POST", f"{REPO}/pulls/{number}/merge", body={"Do": "merge"})
    status, _, body = call(fake_forge, "PATCH", f"{REPO}/pulls/{number}", body={"state": "open"})
    assert (status, body["message"]) == (412, "cannot change state of this pull request, it was already merged")
    assert call(fake_forge, "GET", f"{REPO}/pulls/{number}/merge")[0] == 204


def conflicting_pull(forge: FakeForge) -> int:
    forge.commit("acme", "web", "feature", {"README.md": "# feature\n"}, "Feature readme")
    number = open_pull_existing(forge)
    forge.commit("acme", "web", "main", {"README.md": "# main\n"}, "Main readme")
    return number


def open_pull_existing(forge: FakeForge, branch: str = "feature") -> int:
    status, _, pull = call(forge, "POST", REPO + "/pulls", body={"head": branch, "base": "main", "title": "Change"})
    assert status == 201
    return int(pull["number"])


def test_a_known_conflict_is_a_405(fake_forge: FakeForge) -> None:
    number = conflicting_pull(fake_forge)
    assert call(fake_forge, "GET", f"{REPO}/pulls/{number}")[2]["mergeable"] is False
    status, _, body = call(fake_forge, "POST", f"{REPO}/pulls/{number}/merge", body={"Do": "merge"})
    assert (status, body["message"]) == (405, "Please try again later")


def test_a_conflict_found_while_merging_is_a_409_go_struct(fake_forge: FakeForge) -> None:
    number = conflicting_pull(fake_forge)
    fake_forge.set_pull_status("acme", "web", number, "mergeable")  # the last check predates main's move
    before = fake_forge.branch_sha("acme", "web", "main")
    status, _, body = call(fake_forge, "POST", f"{REPO}/pulls/{number}/merge", body={"Do": "merge"})
    assert status == 409
    assert set(body) == {"Style", "StdOut", "StdErr", "Err"} and body["Style"] == "merge"
    assert "CONFLICT" in body["StdOut"] and body["Err"] == {}
    assert fake_forge.branch_sha("acme", "web", "main") == before


def test_a_rebase_conflict_is_a_409_go_struct(fake_forge: FakeForge) -> None:
    # The net change merges cleanly, but replaying the first commit onto main conflicts.
    fake_forge.commit("acme", "web", "feature", {"README.md": "# changed\n", "extra.txt": "x\n"}, "Change readme")
    fake_forge.commit("acme", "web", "feature", {"README.md": "# web\n"}, "Restore readme")
    fake_forge.commit("acme", "web", "main", {"README.md": "# main\n"}, "Main readme")
    number = open_pull_existing(fake_forge)
    assert call(fake_forge, "GET", f"{REPO}/pulls/{number}")[2]["mergeable"] is True
    status, _, body = call(fake_forge, "POST", f"{REPO}/pulls/{number}/merge", body={"Do": "rebase"})
    assert status == 409 and "message" not in body
    assert body["Style"] == "rebase" and len(body["CommitSHA"]) == 40


def test_diff_and_patch(fake_forge: FakeForge) -> None:
    number = open_pull(fake_forge, files={"notes.txt": "hello\n"})
    status, headers, diff = fake_forge.call("GET", f"{REPO}/pulls/{number}.diff")
    assert status == 200 and headers["Content-Type"].startswith("text/plain")
    assert b"diff --git a/notes.txt b/notes.txt" in diff and b"+hello" in diff
    status, _, patch = fake_forge.call("GET", f"{REPO}/pulls/{number}.patch")
    assert status == 200 and patch.startswith(b"From ") and b"Subject: [PATCH] Add feature" in patch


def test_reviews(fake_forge: FakeForge) -> None:
    number = open_pull(fake_forge)
    path = f"{REPO}/pulls/{number}/reviews"
    status, _, body = call(fake_forge, "POST", path, body={"event": "APPROVED"})
    assert (status, body["message"]) == (422, "approve your own pull is not allowed")
    status, _, review = call(fake_forge, "POST", path, token="bob-token", body={"event": "APPROVED", "body": "LGTM"})
    assert status == 200 and review["state"] == "APPROVED" and review["official"] is False
    status, _, body = call(fake_forge, "POST", path, token="bob-token", body={"event": "COMMENT"})
    assert status == 422
    _, _, reviews = call(fake_forge, "GET", path)
    assert [r["body"] for r in reviews] == ["LGTM"]


def test_update_branch(fake_forge: FakeForge) -> None:
    number = open_pull(fake_forge)
    main = fake_forge.commit("acme", "web", "main", {"other.txt": "x\n"}, "Main moves")
    status, _, raw = fake_forge.call("POST", f"{REPO}/pulls/{number}/update")
    assert (status, raw) == (200, b"")
    head = fake_forge.branch_sha("acme", "web", "feature")
    assert fake_forge.git("acme", "web", "merge-base", "--is-ancestor", main, head) == ""
    assert call(fake_forge, "GET", f"{REPO}/pulls/{number}")[2]["head"]["sha"] == head


def test_push_over_the_http_remote_and_open_a_pull(fake_forge: FakeForge, tmp_path: Path) -> None:
    clone = tmp_path / "web"
    subprocess.run(["git", "clone", "-q", fake_forge.remote_url(), str(clone)], check=True)
    (clone / "pushed.txt").write_text("pushed\n")
    for argv in (["git", "switch", "-q", "-c", "pushed"], ["git", "add", "pushed.txt"],
                 ["git", "commit", "-q", "-m", "Pushed"], ["git", "push", "-q", "origin", "pushed"]):
        subprocess.run(argv, cwd=clone, check=True)
    origin = subprocess.run(["git", "config", "remote.origin.url"], cwd=clone, capture_output=True, text=True)
    assert origin.stdout.strip() == fake_forge.remote_url()  # still http, served from the bare repo
    number = open_pull_existing(fake_forge, "pushed")
    assert call(fake_forge, "GET", f"{REPO}/pulls/{number}")[2]["changed_files"] == 1


def test_pull_from_a_fork(fake_forge: FakeForge) -> None:
    status, _, fork = call(fake_forge, "POST", REPO + "/forks", token="bob-token", body={})
    assert status == 202 and fork["full_name"] == "bob/web" and fork["fork"] is True
    assert fork["parent"]["full_name"] == "acme/web"
    fake_forge.commit("bob", "web", "fix", {"fix.txt": "fixed\n"}, "Fix it")
    status, _, pull = call(fake_forge, "POST", REPO + "/pulls", token="bob-token",
                           body={"head": "bob:fix", "base": "main", "title": "Fix from a fork"})
    assert status == 201 and pull["head"]["label"] == "bob:fix" and pull["head"]["repo"]["full_name"] == "bob/web"
    assert call(fake_forge, "POST", f"{REPO}/pulls/{pull['number']}/merge", body={"Do": "merge"})[0] == 200
    assert fake_forge.git("acme", "web", "show", "main:fix.txt") == "fixed"
    assert git_log(fake_forge, "-1", "--format=%s", "main") == (
        "Merge pull request 'Fix from a fork' (#1) from bob/web:fix into main")


# =========================================================================== releases, notifications, search, wiki

def test_releases(fake_forge: FakeForge) -> None:
    status, _, release = call(fake_forge, "POST", REPO + "/releases",
                              body={"tag_name": "v1.0", "name": "One", "body": "Notes"})
    assert status == 201 and release["tag_name"] == "v1.0"
    assert fake_forge.git("acme", "web", "rev-parse", "v1.0^{commit}") == fake_forge.branch_sha("acme", "web", "main")
    assert call(fake_forge, "POST", REPO + "/releases", body={"tag_name": "v1.0"})[0] == 409
    call(fake_forge, "POST", REPO + "/releases", body={"tag_name": "v2.0", "draft": True})
    assert fake_forge.git("acme", "web", "tag", "--list") == "v1.0"  # drafts create no tag
    assert [r["tag_name"] for r in call(fake_forge, "GET", REPO + "/releases")[2]] == ["v2.0", "v1.0"]
    assert [r["tag_name"] for r in call(fake_forge, "GET", REPO + "/releases", token="bob-token")[2]] == ["v1.0"]
    assert call(fake_forge, "GET", REPO + "/releases/tags/v1.0")[2]["id"] == release["id"]
    assert call(fake_forge, "GET", REPO + "/releases/latest")[2]["tag_name"] == "v1.0"
    status, _, edited = call(fake_forge, "PATCH", f"{REPO}/releases/{release['id']}", body={"name": "Uno"})
    assert (status, edited["name"]) == (200, "Uno")
    boundary = "FormBoundary7"
    form = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"attachment\"; filename=\"app.tar.gz\"\r\n"
            f"Content-Type: application/gzip\r\n\r\nbinary\r\n--{boundary}--\r\n").encode()
    status, _, raw = fake_forge.call("POST", f"{REPO}/releases/{release['id']}/assets", body=form,
                                     headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
    asset = json.loads(raw)
    assert status == 201 and (asset["name"], asset["size"]) == ("app.tar.gz", 6)
    assert [a["name"] for a in call(fake_forge, "GET", f"{REPO}/releases/{release['id']}")[2]["assets"]] == [
        "app.tar.gz"]
    assert call(fake_forge, "DELETE", f"{REPO}/releases/{release['id']}")[0] == 204
    assert call(fake_forge, "GET", f"{REPO}/releases/{release['id']}")[0] == 404


def test_notifications(fake_forge: FakeForge) -> None:
    fake_forge.create_issue("acme", "web", "Question")
    status, _, comment = call(fake_forge, "POST", REPO + "/issues/1/comments", token="bob-token",
                              body={"body": "Ping"})
    assert status == 201
    _, headers, threads = call(fake_forge, "GET", "/notifications")
    assert len(threads) == 1 and headers["X-Total-Count"] == "1"
    thread = threads[0]
    assert thread["unread"] is True and thread["subject"]["type"] == "Issue"
    assert thread["subject"]["url"] == ROOT + "api/v1/repos/acme/web/issues/1"
    status, _, read = call(fake_forge, "PATCH", f"/notifications/threads/{thread['id']}")
    assert status == 205 and read["unread"] is False
    assert call(fake_forge, "GET", "/notifications")[2] == []
    assert len(call(fake_forge, "GET", "/notifications", query={"all": "true"})[2]) == 1
    assert call(fake_forge, "GET", f"/notifications/threads/{thread['id']}", token="bob-token")[0] == 403
    fake_forge.add_notification("alice", "acme", "web", 1)
    status, _, changed = call(fake_forge, "PUT", "/notifications")
    assert status == 205 and len(changed) == 1
    assert call(fake_forge, "GET", "/notifications", token=None)[0] == 401
    assert comment["user"]["login"] == "bob"


def test_search(fake_forge: FakeForge) -> None:
    fake_forge.add_repo("acme", "website-private", private=True)
    fake_forge.add_repo("acme", "api", description="the web api")
    _, headers, found = call(fake_forge, "GET", "/repos/search", query={"q": "web"})
    assert found["ok"] is True
    assert [r["full_name"] for r in found["data"]] == ["acme/web", "acme/website-private"]
    assert headers["X-Total-Count"] == "2"
    _, _, found = call(fake_forge, "GET", "/repos/search", token="bob-token", query={"q": "web", "includeDesc": "true"})
    assert [r["full_name"] for r in found["data"]] == ["acme/api", "acme/web"]
    fake_forge.create_issue("acme", "web", "Crash in web")
    fake_forge.create_issue("acme", "api", "Crash in api", user="bob")
    _, _, issues = call(fake_forge, "GET", "/repos/issues/search", query={"q": "crash"})
    assert sorted(i["repository"]["full_name"] for i in issues) == ["acme/api", "acme/web"]
    _, _, mine = call(fake_forge, "GET", "/repos/issues/search", token="bob-token", query={"created": "true"})
    assert [i["title"] for i in mine] == ["Crash in api"]


def test_wiki(fake_forge: FakeForge) -> None:
    content = base64.b64encode(b"# Welcome\n").decode()
    status, _, page = call(fake_forge, "POST", REPO + "/wiki/new",
                           body={"title": "Getting Started", "content_base64": content, "message": "Start"})
    assert status == 201 and page["sub_url"] == "Getting-Started" and page["last_commit"]["message"] == "Start"
    _, headers, pages = call(fake_forge, "GET", REPO + "/wiki/pages")
    assert [p["title"] for p in pages] == ["Getting Started"] and headers["X-Total-Count"] == "1"
    status, _, got = call(fake_forge, "GET", REPO + "/wiki/page/Getting-Started")
    assert status == 200 and base64.b64decode(got["content_base64"]) == b"# Welcome\n"
    new = base64.b64encode(b"# Hello\n").decode()
    status, _, edited = call(fake_forge, "PATCH", REPO + "/wiki/page/Getting-Started",
                             body={"content_base64": new})
    assert status == 200 and edited["commit_count"] == 2
    assert call(fake_forge, "DELETE", REPO + "/wiki/page/Getting-Started")[0] == 204
    assert call(fake_forge, "GET", REPO + "/wiki/page/Getting-Started")[0] == 404


# =========================================================================== actions

def test_actions(fake_forge: FakeForge) -> None:
    fake_forge.commit("acme", "web", "main", {".gitea/workflows/ci.yml": "on: push\n"}, "Add CI")
    run = fake_forge.add_action_run("acme", "web", conclusion="failure",
                                    jobs=[("build", "success", "built\n"), ("test", "failure", "1 failed\n")])
    status, headers, body = call(fake_forge, "GET", REPO + "/actions/runs")
    assert status == 200 and body["total_count"] == 1
    if fake_forge.flavour == "forgejo":
        assert body["workflow_runs"][0]["status"] == "failure" and body["workflow_runs"][0]["workflow_id"] == "ci.yml"
        for path in (f"/actions/runs/{run.id}/jobs", "/actions/workflows", f"/actions/jobs/{run.jobs[0].id}/logs"):
            status, _, body = call(fake_forge, "GET", REPO + path)
            assert (status, body) == (404, b"404 page not found\n")
            expect_violation(fake_forge, "(no operation)")
        return
    assert body["workflow_runs"][0]["conclusion"] == "failure"
    _, _, jobs = call(fake_forge, "GET", f"{REPO}/actions/runs/{run.id}/jobs")
    assert [(j["name"], j["conclusion"]) for j in jobs["jobs"]] == [("build", "success"), ("test", "failure")]
    _, _, workflows = call(fake_forge, "GET", REPO + "/actions/workflows")
    assert [w["path"] for w in workflows["workflows"]] == [".gitea/workflows/ci.yml"]
    status, headers, log = fake_forge.call("GET", f"{REPO}/actions/jobs/{run.jobs[1].id}/logs")
    assert (status, log) == (200, b"1 failed\n")


# =========================================================================== redirects

def test_renamed_repository_redirects(fake_forge: FakeForge) -> None:
    fake_forge.rename_repo("acme", "web", new_name="webapp")
    status, headers, _ = call(fake_forge, "GET", REPO + "/issues", query={"state": "all"})
    assert status == 301 and headers["Location"] == "/api/v1/repos/acme/webapp/issues?state=all"
    status, headers, _ = call(fake_forge, "PATCH", REPO + "/issues/1", body={"title": "x"})
    assert status == 301  # every method gets the 301; urllib would not follow this one
    request = urllib.request.Request(fake_forge.api + REPO, headers={"Authorization": "token alice-token"})
    with urllib.request.urlopen(request, timeout=5) as response:  # GET: urllib follows
        assert json.load(response)["full_name"] == "acme/webapp"


def test_redirect_to_another_host_is_observable(fake_forge: FakeForge) -> None:
    with FakeForge(fake_forge.flavour) as other:
        fake_forge.redirect_repo("acme", "web", f"http://localhost:{other.port}/api/v1/repos/acme/web")
        status, headers, _ = call(fake_forge, "GET", REPO)
        assert status == 301 and headers["Location"] == f"http://localhost:{other.port}/api/v1/repos/acme/web"
        request = urllib.request.Request(fake_forge.api + REPO, headers={"Authorization": "token alice-token"})
        with urllib.request.urlopen(request, timeout=5) as response:
            assert response.status == 200
        [followed] = other.find_requests("GET", "/repos/acme/web")
        # urllib keeps the header across hosts: exactly what a careful client must prevent.
        assert followed.header("Authorization") == "token alice-token"


# =========================================================================== faults

def test_search_index_lag_hides_new_issues_from_q_only(fake_forge: FakeForge) -> None:
    fake_forge.create_issue("acme", "web", "Indexed already", "x")
    fake_forge.lag_search_index(600)
    fake_forge.create_issue("acme", "web", "Indexed later", "x")
    _, _, found = call(fake_forge, "GET", "/repos/acme/web/issues", query={"q": "indexed", "state": "all"})
    assert [i["title"] for i in found] == ["Indexed already"]
    _, _, listed = call(fake_forge, "GET", "/repos/acme/web/issues", query={"state": "all"})
    assert [i["title"] for i in listed] == ["Indexed later", "Indexed already"]


def test_fault_server_errors(fake_forge: FakeForge) -> None:
    fake_forge.inject(500)
    status, _, body = call(fake_forge, "GET", REPO)
    assert (status, body) == (500, {"message": "", "url": ROOT + "api/swagger"})
    for code in (502, 503):
        fake_forge.inject(code)
        status, headers, body = call(fake_forge, "GET", REPO)
        assert status == code and headers["Content-Type"] == "text/html" and b"nginx" in body
    assert call(fake_forge, "GET", REPO)[0] == 200  # each fault fires once by default


def test_fault_rate_limit(fake_forge: FakeForge) -> None:
    fake_forge.inject(429, retry_after=7)
    status, headers, _ = call(fake_forge, "GET", REPO)
    assert status == 429 and headers["Retry-After"] == "7"


def test_fault_filters_and_times(fake_forge: FakeForge) -> None:
    fake_forge.inject(503, times=2, path_contains="/issues", method="POST")
    assert call(fake_forge, "GET", REPO + "/issues")[0] == 200
    assert [call(fake_forge, "POST", REPO + "/issues", body={"title": "x"})[0] for _ in range(3)] == [503, 503, 201]
    assert fake_forge.faults == []


def test_fault_slow(fake_forge: FakeForge) -> None:
    fake_forge.inject("slow", seconds=1.0)
    with pytest.raises((TimeoutError, socket.timeout, urllib.error.URLError)):
        urllib.request.urlopen(fake_forge.api + "/version", timeout=0.2)
    fake_forge.inject("slow", seconds=0.1)
    with urllib.request.urlopen(fake_forge.api + "/version", timeout=5) as response:
        assert json.load(response)["version"] == fake_forge.version


def test_fault_html(fake_forge: FakeForge) -> None:
    fake_forge.inject("html")
    status, headers, body = fake_forge.call("GET", REPO)
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    with pytest.raises(ValueError):
        json.loads(body)
    fake_forge.inject("html", status=502)
    assert fake_forge.call("GET", REPO)[0] == 502


def test_fault_truncated(fake_forge: FakeForge) -> None:
    fake_forge.inject("truncated")
    status, _, body = fake_forge.call("GET", REPO)
    assert status == 200 and body.startswith(b'{"id":1,')
    with pytest.raises(json.JSONDecodeError):
        json.loads(body)
    fake_forge.inject("truncated", incomplete=True)
    with pytest.raises(http.client.IncompleteRead):
        fake_forge.call("GET", REPO)


def test_fault_drop(fake_forge: FakeForge) -> None:
    fake_forge.inject("drop", method="POST")
    with pytest.raises(http.client.RemoteDisconnected):
        fake_forge.call("POST", REPO + "/issues", json_body={"title": "Lost"})
    assert fake_forge.repo().issues == {}  # dropped before it was performed
    fake_forge.inject("drop-after", method="POST")
    with pytest.raises(http.client.RemoteDisconnected):
        fake_forge.call("POST", REPO + "/issues", json_body={"title": "Done, unanswered"})
    assert [i.title for i in fake_forge.repo().issues.values()] == ["Done, unanswered"]


def test_fault_create_then_timeout(fake_forge: FakeForge) -> None:
    fake_forge.inject("create-then-timeout", method="POST", path_contains="/issues", seconds=1.0)
    with pytest.raises((TimeoutError, socket.timeout)):
        fake_forge.call("POST", REPO + "/issues", json_body={"title": "Exactly once"}, timeout=0.2)
    # A client that looks before it retries finds the issue and does not create it twice.
    _, _, found = call(fake_forge, "GET", REPO + "/issues", query={"q": "Exactly once"})
    assert [i["title"] for i in found] == ["Exactly once"]


def test_fault_null_404(fake_forge: FakeForge) -> None:
    fake_forge.inject("null-404")
    status, _, body = fake_forge.call("GET", REPO)
    assert (status, body) == (404, b"null\n")


def test_inject_rejects_unknown_kinds(fake_forge: FakeForge) -> None:
    with pytest.raises(ValueError):
        fake_forge.inject("teapot")


# =========================================================================== response shapes

SHAPES = [
    ("Repository", lambda f: call(f, "GET", REPO)[2]),
    ("User", lambda f: call(f, "GET", "/user")[2]),
    ("Issue", lambda f: f.issue("acme", "web", 1)),
    ("PullRequest", lambda f: call(f, "GET", REPO + "/pulls/2")[2]),
    ("Label", lambda f: call(f, "GET", REPO + "/labels")[2][0]),
    ("Milestone", lambda f: call(f, "GET", REPO + "/milestones")[2][0]),
    ("Comment", lambda f: call(f, "GET", REPO + "/issues/1/comments")[2][0]),
    ("Branch", lambda f: call(f, "GET", REPO + "/branches/main")[2]),
    ("Tag", lambda f: call(f, "GET", REPO + "/tags")[2][0]),
    ("Release", lambda f: call(f, "GET", REPO + "/releases")[2][0]),
    ("NotificationThread", lambda f: call(f, "GET", "/notifications")[2][0]),
    ("WikiPage", lambda f: call(f, "GET", REPO + "/wiki/page/Home")[2]),
    ("PullReview", lambda f: call(f, "GET", REPO + "/pulls/2/reviews")[2][0]),
]


@pytest.mark.parametrize("definition, fetch", SHAPES, ids=[name for name, _ in SHAPES])
def test_answers_use_only_documented_keys(fake_forge: FakeForge, definition: str, fetch: Any) -> None:
    reason = speccheck.spec_skip_reason(fake_forge.flavour)
    if reason:
        pytest.skip(reason)
    fake_forge.create_label("acme", "web", "bug")
    fake_forge.create_milestone("acme", "web", "v1")
    fake_forge.create_issue("acme", "web", "Shape", labels=["bug"])
    fake_forge.create_comment("acme", "web", 1, "A comment", user="bob")
    fake_forge.add_notification("alice", "acme", "web", 1)
    new_branch(fake_forge, "feature")
    fake_forge.create_pull("acme", "web", "feature")
    call(fake_forge, "POST", REPO + "/pulls/2/reviews", token="bob-token", body={"event": "APPROVED"})
    call(fake_forge, "POST", REPO + "/releases", body={"tag_name": "v1"})
    call(fake_forge, "POST", REPO + "/wiki/new", body={"title": "Home", "content_base64": ""})
    checker = speccheck.checker_for(fake_forge.flavour)
    assert checker is not None
    extra = set(speccheck.undeclared_keys(checker, definition, fetch(fake_forge)))
    assert extra - {"username"} == set()  # "username" is Gitea's MarshalJSON compatibility alias


def test_user_repos_collaborator_check_and_file_create(fake_forge: FakeForge) -> None:
    fake_forge.add_repo("alice", "notes")
    status, _, repos = call(fake_forge, "GET", "/users/alice/repos")
    assert status == 200 and [r["full_name"] for r in repos] == ["alice/notes"]
    assert call(fake_forge, "GET", "/users/nobody/repos")[0] == 404
    assert call(fake_forge, "GET", REPO + "/collaborators/bob")[0] == 404
    fake_forge.grant("acme", "web", "bob", "write")
    assert call(fake_forge, "GET", REPO + "/collaborators/bob")[0] == 204
    assert call(fake_forge, "GET", REPO + "/collaborators/alice")[0] == 404  # an org owner is not in that table
    content = base64.b64encode(b"hello\n").decode()
    status, _, made = call(fake_forge, "POST", REPO + "/contents/docs/hello.txt",
                           body={"content": content, "message": "Add hello", "new_branch": "hello"})
    assert status == 201 and made["content"]["path"] == "docs/hello.txt"
    assert made["commit"]["sha"] == fake_forge.branch_sha("acme", "web", "hello")
    assert fake_forge.git("acme", "web", "show", "hello:docs/hello.txt") == "hello"
    assert fake_forge.git("acme", "web", "log", "-1", "--format=%s", "hello") == "Add hello"
    again = call(fake_forge, "POST", REPO + "/contents/docs/hello.txt", body={"content": content, "branch": "hello"})
    assert again[0] == 422
    assert call(fake_forge, "POST", REPO + "/contents/x.txt", token="bob-token", body={"content": content})[0] == 201
    assert call(fake_forge, "POST", "/repos/alice/notes/contents/x.txt", token="bob-token",
                body={"content": content})[0] == 403
    reason = speccheck.spec_skip_reason(fake_forge.flavour)
    if reason is None:
        checker = speccheck.checker_for(fake_forge.flavour)
        assert set(speccheck.undeclared_keys(checker, "FileResponse", made)) == set()
