"""Commits, branches and tags on the forge, the latest release, people and packages.

The rules first, as tables over facts; then the fake forge's answers for the
endpoints these actions use (both flavours, spec-checked by the fixture); then
the actions through both surfaces against both flavours.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest

import guard
from fakeforge import FakeForge

REPO = "/repos/acme/web"


def write(args: dict[str, Any], *, default: str = "main", protected: bool = False, admin: bool = True) -> guard.RefWrite:
    return guard.RefWrite("madt_repo", "rename_branch", args, "acme/web", default, protected, admin)


# --------------------------------------------------------------------------- the rules

def test_the_default_branch_is_renamed_only_with_the_override_offered_as_a_choice() -> None:
    args = {"branch": "main", "new_name": "trunk"}
    with pytest.raises(guard.Refusal) as refused:
        guard.check_branch_rename(write(args), "main", "trunk")
    r = refused.value
    assert r.code == "DEFAULT_BRANCH" and not r.next and not r.user_action
    assert r.choices == (
        ({"tool": "madt_repo", "args": {"action": "create_branch", "branch": "trunk", "ref": "main"}},),
        ({"tool": "madt_repo", "args": {"action": "rename_branch", "branch": "main", "new_name": "trunk",
                                        "allow_default_branch": True}},))
    assert r.message == ("main is the default branch of acme/web: clones, open pull requests and workflows follow "
                         "it, so madtea renames it only when the call says so; nothing was renamed.")
    assert guard.way_on_problem(r.next, r.choices, r.user_action) is None
    guard.check_branch_rename(write(args | {"allow_default_branch": True}), "main", "trunk")


def test_without_admin_rights_the_default_or_a_protected_branch_is_a_persons_act() -> None:
    with pytest.raises(guard.Refusal) as refused:
        guard.check_branch_rename(write({"allow_default_branch": True}, admin=False), "main", "trunk")
    assert refused.value.code == "DEFAULT_BRANCH"
    assert refused.value.user_action == "Ask an admin of acme/web to rename main to trunk if the default branch " \
                                        "should change its name."
    with pytest.raises(guard.Refusal) as refused:
        guard.check_branch_rename(write({}, protected=True, admin=False), "release", "stable")
    r = refused.value
    assert (r.code, r.target) == ("PROTECTED_BRANCH", "acme/web branch release")
    assert r.message == ("release in acme/web is protected by a branch rule, and only a repository admin may "
                         "rename it; nothing was renamed.")
    assert r.user_action == "Ask an admin of acme/web to rename release, or to change its protection rule, if it " \
                            "should be renamed."
    guard.check_branch_rename(write({}, protected=True, admin=True), "release", "stable")
    guard.check_branch_rename(write({}, admin=False), "feat", "feature")


@pytest.mark.parametrize("kind, code", [("branch", "BRANCH_EXISTS"), ("tag", "TAG_EXISTS")])
def test_a_name_the_forge_has_already_is_refused_with_the_call_for_a_new_one(kind: str, code: str) -> None:
    key = "tag" if kind == "tag" else "branch"
    r = guard.ref_exists(write({key: "v1"}), kind, "v1", key)
    assert (r.code, r.message) == (code, f"acme/web already has a {kind} v1; nothing was changed.")
    assert r.next == ({"tool": "madt_repo", "args": {"action": "rename_branch",
                                                     key: f"<a {kind} name acme/web does not have yet>"}},)


def test_a_missing_start_point_or_branch_names_the_list_to_choose_from() -> None:
    r = guard.no_such_ref(write({"branch": "x", "ref": "nope"}), "nope", "ref")
    assert r.message == "Nothing in acme/web is called nope; nothing was changed."
    assert r.next[0]["args"]["ref"] == "<a branch, tag or commit that exists>"
    r = guard.no_such_ref(write({"branch": "gone", "new_name": "x"}), "gone", "branch", branch=True)
    assert r.code == "NOT_A_COMMIT" and r.message == "acme/web has no branch gone; nothing was changed."
    assert [s["args"]["action"] for s in r.next] == ["branches", "rename_branch"]


@dataclass(frozen=True)
class P:
    name: str
    type: str = "str"
    required: bool = False
    choices: tuple[str, ...] = ()
    minimum: int = 0


def test_a_misspelt_override_is_offered_as_a_choice_never_a_plan() -> None:
    specs = {"branch": P("branch", required=True), "allow_default_branch": P("allow_default_branch", "bool")}
    with pytest.raises(guard.Refusal) as refused:
        guard.check_arguments("madt_repo", "rename_branch", specs, {"branch": "main", "allow_default_brnch": True})
    r = refused.value
    assert r.code == "UNKNOWN_PARAMETER" and not r.next
    assert [c[0]["args"] for c in r.choices] == [{"action": "rename_branch", "branch": "main"},
                                                 {"action": "rename_branch", "branch": "main",
                                                  "allow_default_branch": True}]
    assert guard.way_on_problem(r.next, r.choices, r.user_action) is None


# --------------------------------------------------------------------------- the fake forge's answers

def _get(forge: FakeForge, where: str, **query: Any) -> tuple[int, dict[str, str], Any]:
    status, headers, raw = forge.call("GET", where, query=query or None)
    try:
        return status, headers, json.loads(raw)
    except ValueError:
        return status, headers, raw


def test_the_fake_lists_commits_newest_first_and_shows_one_with_its_files(fake_forge: FakeForge) -> None:
    f = fake_forge
    first = f.commit("acme", "web", "feat", {"a.txt": "a\n"}, "Add a")
    second = f.commit("acme", "web", "feat", {"a.txt": "a\nb\n", "b.txt": "b\n"}, "Grow a\n\nAnd add b.")
    status, headers, listed = _get(f, REPO + "/commits", sha="feat", stat="false", files="false",
                                   verification="false", limit=2)
    assert status == 200 and [c["sha"] for c in listed] == [second, first]
    assert headers["X-Total-Count"] == "3" and "files" not in listed[0] and "stats" not in listed[0]
    status, _, on_path = _get(f, REPO + "/commits", sha="feat", path="b.txt")
    assert [c["sha"] for c in on_path] == [second]
    status, _, one = _get(f, REPO + f"/git/commits/{second}")
    assert one["commit"]["message"] == "Grow a\n\nAnd add b.\n"
    assert sorted((x["filename"], x["status"]) for x in one["files"]) == [("a.txt", "modified"), ("b.txt", "added")]
    assert one["stats"] == {"total": 2, "additions": 2, "deletions": 0}
    assert [p["sha"] for p in one["parents"]] == [first]
    status, _, diff = _get(f, REPO + f"/git/commits/{second}.diff")
    assert status == 200 and b"+++ b/b.txt" in diff
    assert _get(f, REPO + "/git/commits/feat")[2]["sha"] == second  # a ref names its commit
    assert _get(f, REPO + "/git/commits/nothing-here")[0] == 404


def test_the_fake_renames_a_branch_as_the_forge_does(fake_forge: FakeForge) -> None:
    f = fake_forge
    f.commit("acme", "web", "feat", {"a.txt": "a\n"}, "Add a")
    f.create_pull("acme", "web", "feat")
    assert f.call("PATCH", REPO + "/branches/feat", json_body={"name": "main"})[0] == 422
    assert f.call("PATCH", REPO + "/branches/gone", json_body={"name": "x"})[0] == 404
    assert f.call("PATCH", REPO + "/branches/feat", json_body={"name": "feature"})[0] == 204
    assert f.branch_sha("acme", "web", "feat") is None and f.branch_sha("acme", "web", "feature")
    assert f.repo().issues[1].pull.head_branch == "feature"
    f.protect_branch("acme", "web", "feature")
    f.grant("acme", "web", "bob", "write")
    status, _, body = f.call("PATCH", REPO + "/branches/feature", token="bob-token", json_body={"name": "x"})
    assert status == 403 and b"admin to rename default or protected branches" in body
    status, _, body = f.call("PATCH", REPO + "/branches/main", token="bob-token", json_body={"name": "trunk"})
    assert status == 403
    assert f.call("PATCH", REPO + "/branches/main", json_body={"name": "trunk"})[0] == 204
    assert f.repo().default_branch == "trunk"


def test_the_fake_answers_people_and_package_searches(fake_forge: FakeForge) -> None:
    f = fake_forge
    f.add_team("acme", "devs", description="Developers", members=["alice"])
    f.add_team("acme", "ops", description="Runs the servers")
    f.add_package("acme", "npm", "left-pad", "1.0.0", repo="web")
    f.add_package("acme", "npm", "left-pad", "1.1.0")
    f.add_package("acme", "pypi", "padding", "0.1")
    status, headers, orgs = _get(f, "/user/orgs")
    assert [o["username"] for o in orgs] == ["acme"]
    assert ("X-Total-Count" in headers) == (f.flavour == "gitea")
    assert [u["login"] for u in _get(f, "/users/search", q="b")[2]["data"]] == ["bob"]
    assert [t["name"] for t in _get(f, "/orgs/acme/teams/search", q="server")[2]["data"]] == ["ops"]
    assert [t["name"] for t in _get(f, "/orgs/acme/teams/search", q="server", include_desc="false")[2]["data"]] == []
    status, _, body = f.call("GET", "/orgs/acme/teams/search", token="bob-token")
    assert status == 403
    listed = _get(f, "/packages/acme", q="pad")[2]
    assert [(p["name"], p["version"]) for p in listed] == [("padding", "0.1"), ("left-pad", "1.1.0"),
                                                          ("left-pad", "1.0.0")]
    assert listed[2]["repository"]["full_name"] == "acme/web" and listed[1]["repository"] is None
    status, _, versions = _get(f, "/packages/acme/npm/left-pad")
    if f.flavour == "gitea":
        assert [p["version"] for p in versions] == ["1.1.0", "1.0.0"]
    else:  # Forgejo 15 has no such route: Go's router answers a plain-text 404
        assert (status, versions) == (404, b"404 page not found\n")
        assert f.spec_skip_reason or any("no operation" in v for v in f.take_violations())
