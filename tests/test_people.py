"""People and packages: the fake forge's searches in both flavours, then madtea's actions on both
surfaces.
"""
from __future__ import annotations

from fakeforge import FakeForge, get
from remote_env import Env, env  # noqa: F401 - fixtures


# --------------------------------------------------------------------------- the fake forge's answers

def test_the_fake_answers_people_and_package_searches(fake_forge: FakeForge) -> None:
    f = fake_forge
    f.add_team("acme", "devs", description="Developers", members=["alice"])
    f.add_team("acme", "ops", description="Runs the servers")
    f.add_package("acme", "npm", "left-pad", "1.0.0", repo="web")
    f.add_package("acme", "npm", "left-pad", "1.1.0")
    f.add_package("acme", "pypi", "padding", "0.1")
    status, headers, orgs = get(f, "/user/orgs")
    assert [o["username"] for o in orgs] == ["acme"]
    assert ("X-Total-Count" in headers) == (f.flavour == "gitea")
    assert [u["login"] for u in get(f, "/users/search", q="b")[2]["data"]] == ["bob"]
    assert [t["name"] for t in get(f, "/orgs/acme/teams/search", q="server")[2]["data"]] == ["ops"]
    assert [t["name"] for t in get(f, "/orgs/acme/teams/search", q="server", include_desc="false")[2]["data"]] == []
    status, _, body = f.call("GET", "/orgs/acme/teams/search", token="bob-token")
    assert status == 403
    listed = get(f, "/packages/acme", q="pad")[2]
    assert [(p["name"], p["version"]) for p in listed] == [("padding", "0.1"), ("left-pad", "1.1.0"),
                                                          ("left-pad", "1.0.0")]
    assert listed[2]["repository"]["full_name"] == "acme/web" and listed[1]["repository"] is None
    status, _, versions = get(f, "/packages/acme/npm/left-pad")
    if f.flavour == "gitea":
        assert [p["version"] for p in versions] == ["1.1.0", "1.0.0"]
    else:  # Forgejo 15 has no such route: Go's router answers a plain-text 404
        assert (status, versions) == (404, b"404 page not found\n")
        assert f.spec_skip_reason or any("no operation" in v for v in f.take_violations())

# --------------------------------------------------------------------------- through both surfaces


def test_people_orgs_users_and_teams(env: Env) -> None:
    e = env
    e.forge.add_org("tooling", members=["alice"])
    e.forge.add_team("acme", "devs", description="Developers\u202e", members=["alice"])
    e.forge.add_team("acme", "ops", description="Runs the servers")
    assert [r["name"] for r in e.ok("madt_people", action="orgs").data] == ["acme", "tooling"]
    users = e.ok("madt_people", action="users", q="ex")
    assert [r["login"] for r in users.data] == ["alice", "bob"] and "@bob Bob Example" in users.text
    assert [r["login"] for r in e.ok("madt_people", action="users", q="ex", limit=1, page=2).data] == ["bob"]
    teams = e.ok("madt_people", action="teams", org="acme")
    assert [r["name"] for r in teams.data] == ["devs", "ops"] and "\u202e" not in teams.text
    assert [r["name"] for r in e.ok("madt_people", action="teams", org="acme", q="server").data] == ["ops"]
    assert "tooling" in e.cli_ok("people", "orgs")
    assert "devs" in e.cli_ok("people", "teams", "acme", "dev")


def test_packages_and_their_versions_on_both_flavours(env: Env) -> None:
    e = env
    e.forge.add_package("acme", "npm", "left-pad", "1.0.0", repo="web")
    e.forge.add_package("acme", "npm", "left-pad-extra", "3.0.0")
    e.forge.add_package("acme", "npm", "left-pad", "1.1.0")
    e.forge.add_package("acme", "pypi", "left-pad", "9.9")
    listed = e.ok("madt_people", action="packages", owner="acme")
    assert [(r["name"], r["version"]) for r in listed.data] == [("left-pad", "9.9"), ("left-pad", "1.1.0"),
                                                                 ("left-pad-extra", "3.0.0"), ("left-pad", "1.0.0")]
    assert "npm left-pad 1.0.0" in listed.text and "(acme/web)" in listed.text
    assert len(e.ok("madt_people", action="packages", owner="acme", type="pypi").data) == 1
    versions = e.ok("madt_people", action="package_versions", owner="acme", type="npm", name="left-pad")
    assert [r["version"] for r in versions.data] == ["1.1.0", "1.0.0"]
    assert "npm left-pad 1.1.0" in e.cli_ok("people", "package-versions", "acme", "npm", "left-pad")
    assert e.ok("madt_people", action="package_versions", owner="acme", type="npm",
                name="nothing").text in ("no versions of npm package nothing under acme",)
    assert not e.forge.take_violations()


def test_packages_listed_from_a_later_page(env: Env) -> None:
    """page= on a forge-wide list starts there, as it does on a repository's lists; a notice says there is more."""
    e = env
    for version in ("1.0", "2.0", "3.0"):
        e.forge.add_package("acme", "npm", "left-pad", version)
    first = e.ok("madt_people", action="packages", owner="acme", limit=1)
    assert [r["version"] for r in first.data] == ["3.0"]
    assert any("showing 1 of 3" in text for _, text in first.notes)
    second = e.ok("madt_people", action="packages", owner="acme", limit=1, page=2)
    assert [r["version"] for r in second.data] == ["2.0"]
    assert [r["version"] for r in e.ok("madt_people", action="packages", owner="acme", limit=2, page=2).data] == ["1.0"]


def test_one_package_version_and_an_organisations_labels(env: Env) -> None:
    e = env
    e.forge.add_package("acme", "npm", "left-pad", "1.0.0", repo="web")
    e.forge.add_package("acme", "npm", "left-pad", "1.1.0")
    one = e.ok("madt_people", action="package", owner="acme", type="npm", name="left-pad", version="1.0.0")
    assert one.data["version"] == "1.0.0" and one.data["repo"] == "acme/web" and "by @" in one.text
    e.refused("NOT_FOUND_OR_NO_ACCESS", "madt_people", action="package", owner="acme", type="npm", name="left-pad",
              version="9")
    bad = e.refused("BAD_ARGUMENT", "madt_people", action="package", owner="acme", type="npm", name="left-pad",
                    version="..")
    assert "version" in bad.text
    assert "npm left-pad 1.1.0" in e.cli_ok("people", "package", "acme", "npm", "left-pad", "1.1.0")
    e.forge.add_org_label("acme", "org-wide", description="for every repository")
    labels = e.ok("madt_labels", action="org", org="acme")
    assert [r["name"] for r in labels.data] == ["org-wide"] and "for every repository" in labels.text
    e.refused("NOT_FOUND_OR_NO_ACCESS", "madt_labels", action="org", org="nobody-here")
    assert not e.forge.take_violations()


def test_wiki_history_a_notification_by_id_and_secret_names(env: Env) -> None:
    e = env
    e.ok("madt_wiki", action="create", page_name="Home", content="one", message="First")
    for n in range(11):
        e.ok("madt_wiki", action="edit", page_name="Home", content=f"v{n}", message=f"Edit {n}")
    history = e.ok("madt_wiki", action="history", page_name="Home")
    assert history.data["count"] == 12 and len(history.data["revisions"]) == 10
    assert history.data["revisions"][0]["message"] == "Edit 10" and "2 older revisions" in history.text
    older = e.ok("madt_wiki", action="history", page_name="Home", page=2)
    assert [r["message"] for r in older.data["revisions"]] == ["Edit 0", "First"]
    e.refused("BAD_ARGUMENT", "madt_wiki", action="history", page_name="%2e%2e")
    number = e.forge.create_issue("acme", "web", "Ping")["number"]
    thread = e.forge.add_notification("alice", "acme", "web", number)
    shown = e.ok("madt_notifications", action="view", id=thread["id"])
    assert shown.data["repo"] == "acme/web" and "Ping" in shown.text and shown.data["unread"] is True
    e.ok("madt_actions", action="set_secret", name="deploy_key", body="s3cret-value-1")
    secrets = e.ok("madt_actions", action="secrets")
    assert secrets.data[0]["name"] == "DEPLOY_KEY" and "s3cret" not in secrets.text + str(secrets.data)
    assert not e.forge.take_violations()
