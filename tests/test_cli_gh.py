"""gh's conventions on the CLI, as a person who uses gh every day types them: ``api`` with placeholders, typed
fields and headers; issue and pull-request addresses and a pull request's branch name as arguments; and
``--repo host:port/owner/repo`` at a forge that speaks plain http."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

import madtea

from helpers import cli
from remote_env import Env, env  # noqa: F401 - fixtures
from topologies import run_git

# --------------------------------------------------------------------------- api as gh's


def test_api_fills_owner_repo_and_branch_from_the_checkout(env: Env, monkeypatch, capsys) -> None:
    env.forge.create_label("acme", "web", "bug")
    code, out, err = cli(monkeypatch, capsys, env.clone, "api", "/repos/{owner}/{repo}/labels")
    assert code == 0, err
    assert [label["name"] for label in json.loads(out)] == ["bug"]
    run_git(env.clone, "switch", "-q", "-c", "topic")
    env.forge.commit("acme", "web", "topic", {"t.txt": "t\n"}, "Topic work", start="main")
    code, out, err = cli(monkeypatch, capsys, env.clone, "api", "/repos/{owner}/{repo}/branches/{branch}")
    assert code == 0, err
    assert json.loads(out)["name"] == "topic"
    assert env.forge.find_requests("GET", "/repos/acme/web/branches/topic")


def test_api_placeholders_follow_repo_and_refuse_with_nothing_to_fill_them(env: Env, tmp_path: Path,
                                                                          monkeypatch, capsys) -> None:
    env.forge.add_repo("acme", "api")
    env.forge.create_label("acme", "api", "docs")
    code, out, err = cli(monkeypatch, capsys, env.clone, "api", "/repos/{owner}/{repo}/labels", "-R", "acme/api")
    assert code == 0, err
    assert [label["name"] for label in json.loads(out)] == ["docs"]
    outside = tmp_path / "outside"
    outside.mkdir()
    code, out, err = cli(monkeypatch, capsys, outside, "api", "/repos/{owner}/{repo}/labels")
    assert code == 1 and "{owner} cannot be filled in" in err and "--repo OWNER/REPO" in err
    assert not env.forge.find_requests("GET", "/repos/%7Bowner%7D")


def test_api_fields_are_the_json_body_of_a_post(env: Env, tmp_path: Path, monkeypatch, capsys) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text("from a file\n")
    code, out, err = cli(monkeypatch, capsys, env.clone, "api", "/repos/{owner}/{repo}/branches",
                         "-f", "new_branch_name=typed-12", "-F", "old_branch_name={branch}")
    assert code == 0, err  # no -X: fields make it a POST, as gh's
    sent = env.forge.find_requests("POST", "/repos/acme/web/branches")[-1].json
    assert sent == {"new_branch_name": "typed-12", "old_branch_name": "main"}
    assert env.forge.branch_sha("acme", "web", "typed-12") and json.loads(out)["name"] == "typed-12"
    # A write a command covers is sent to it, with the fields as its flags.
    code, out, err = cli(monkeypatch, capsys, env.clone, "api", "/repos/{owner}/{repo}/issues",
                         "-f", "title=Typed 12", "-F", "body=@" + str(notes))
    assert code == 1 and "madtea issue create --repo acme/web --title 'Typed 12'" in err, err
    assert not env.forge.find_requests("POST", "/issues")


def test_api_typed_fields_nest_as_gh_nests_them(tmp_path: Path, monkeypatch) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text("from a file\n")
    monkeypatch.chdir(tmp_path)
    fields = [(False, "title=12"), (True, f"note=@{notes}"), (True, "closed=false"), (True, "open=true"),
              (True, "milestone=null"), (True, "size=12"), (True, "neg=-3"), (False, "raw=true"),
              (True, "assignees[]=alice"), (True, "assignees[]=bob"), (True, "labels[]"), (True, "meta[size]=3"),
              (True, "meta[tags][]=a"), (True, "items[][name]=x"), (True, "items[][kind]=k"),
              (True, "items[][name]=y"), (True, "where={owner}/{repo}"), (False, "plain={owner}")]
    raw: dict = {"path": "/repos/{owner}/{repo}/hooks", "owner_repo": "acme/web"}
    madtea.api_cli_request(argparse.Namespace(_fields=fields, body_file=None), raw)
    assert raw["method"] == "POST" and raw["path"] == "/repos/acme/web/hooks"
    assert raw["body"] == {"title": "12", "note": "from a file\n", "closed": False, "open": True, "milestone": None,
                           "size": 12, "neg": -3, "raw": "true", "assignees": ["alice", "bob"], "labels": [],
                           "meta": {"size": 3, "tags": ["a"]}, "items": [{"name": "x", "kind": "k"}, {"name": "y"}],
                           "where": "acme/web", "plain": "{owner}"}
    raw = {"path": "/repos/acme/web/issues?type=issues", "method": "GET"}
    madtea.api_cli_request(argparse.Namespace(_fields=[(True, "page=2"), (False, "q=a b&c"), (True, "x[]")],
                                              body_file=None), raw)
    assert raw == {"path": "/repos/acme/web/issues?type=issues&page=2&q=a+b%26c", "method": "GET"}
    body = tmp_path / "body.json"
    body.write_text('{"a": [1]}')
    raw = {"path": "/repos/acme/web/x"}  # with --input, fields are the query string (gh's)
    madtea.api_cli_request(argparse.Namespace(_fields=[(True, "n=1")], body_file=str(body)), raw)
    assert raw == {"path": "/repos/acme/web/x?n=1", "method": "POST", "body": {"a": [1]}}


def test_api_fields_of_a_get_are_its_query_string(env: Env, monkeypatch, capsys) -> None:
    env.forge.create_issue("acme", "web", "Open one", "x")
    env.forge.create_issue("acme", "web", "Closed one", "y", state="closed")
    code, out, err = cli(monkeypatch, capsys, env.clone, "api", "-X", "GET", "/repos/{owner}/{repo}/issues",
                         "-f", "state=closed", "-F", "limit=5")
    assert code == 0, err
    assert [issue["title"] for issue in json.loads(out)] == ["Closed one"]
    request = env.forge.find_requests("GET", "/repos/acme/web/issues")[-1]
    assert request.query == {"state": "closed", "limit": "5"} and not request.body


def test_api_input_is_the_body_file_and_fields_go_in_the_query(env: Env, tmp_path: Path, monkeypatch,
                                                               capsys) -> None:
    body = tmp_path / "body.json"
    body.write_text(json.dumps({"new_branch_name": "from-input", "old_branch_name": "main"}))
    code, out, err = cli(monkeypatch, capsys, env.clone, "api", "/repos/{owner}/{repo}/branches",
                         "--input", str(body))
    assert code == 0, err  # --input alone makes it a POST too
    request = env.forge.find_requests("POST", "/repos/acme/web/branches")[-1]
    assert request.json == {"new_branch_name": "from-input", "old_branch_name": "main"} and not request.query
    assert env.forge.branch_sha("acme", "web", "from-input")
    body.write_text("not json")
    code, out, err = cli(monkeypatch, capsys, env.clone, "api", "/repos/acme/web/branches", "--input", str(body))
    assert code == 1 and "not JSON" in err and len(env.forge.find_requests("POST")) == 1


def test_api_bad_fields_send_nothing(env: Env, tmp_path: Path, monkeypatch, capsys) -> None:
    for field, said in (("name", "has no '='"), ("=x", "has no key"), ("a[b=x", "brackets"),
                        ("body=@" + str(tmp_path / "missing.md"), "missing.md")):
        code, out, err = cli(monkeypatch, capsys, env.clone, "api", "/repos/acme/web/topics", "-X", "PUT",
                             "-F", field)
        assert code == 1 and said in err and "nothing was sent" in err, (field, err)
    code, out, err = cli(monkeypatch, capsys, env.clone, "api", "/repos/acme/web/labels", "-F", "a=1",
                         "-F", "a[b]=2")
    assert code == 1 and "both a list and an object" in err
    assert not [r for r in env.forge.requests if r.method != "GET"]


def test_api_headers_are_sent_but_never_the_credential(env: Env, monkeypatch, capsys) -> None:
    code, out, err = cli(monkeypatch, capsys, env.clone, "api", "/repos/{owner}/{repo}", "-H", "X-Trace: abc 1",
                         "-H", "Accept: application/json")
    assert code == 0, err
    request = env.forge.find_requests("GET", "/repos/acme/web")[-1]
    assert request.header("X-Trace") == "abc 1" and request.header("Accept") == "application/json"
    assert request.header("Authorization")  # madtea's own token still went
    before = len(env.forge.requests)
    for header in ("Authorization: token stolen", "host: evil.example", "Cookie: a=b"):
        code, out, err = cli(monkeypatch, capsys, env.clone, "api", "/repos/{owner}/{repo}", "-H", header)
        name = header.split(":")[0]
        assert code == 1 and f"does not send a {name} header" in err and "madtea auth status" in err, err
    code, out, err = cli(monkeypatch, capsys, env.clone, "api", "/repos/acme/web", "-H", "no colon here")
    assert code == 1 and "'Name: value'" in err
    assert len(env.forge.requests) == before


@pytest.mark.parametrize("args", [
    ("/repos/acme/web/issues/1", "-X", "PATCH", "-f", "body=clobbered"),   # a covered write, through fields
    ("/repos/acme/web/issues/1", "-X", "DELETE"),                          # deleting is a person's act
])
def test_api_fields_keep_the_passthrough_rules(env: Env, monkeypatch, capsys, args: tuple[str, ...]) -> None:
    env.forge.create_issue("acme", "web", "Body", "original")
    code, out, err = cli(monkeypatch, capsys, env.clone, "api", *args)
    assert code == 1, out
    assert env.repo.issues[1].body == "original"
    assert not env.forge.find_requests("PATCH") and not env.forge.find_requests("DELETE")


def test_api_placeholders_do_not_widen_a_read_only_or_other_repo(env: Env, monkeypatch, capsys) -> None:
    """A field filled in from the checkout is checked as the written-out path is: another repository's write
    still goes through -R's rules, and a label created through fields forwards to its command."""
    code, out, err = cli(monkeypatch, capsys, env.clone, "api", "/repos/{owner}/{repo}/labels",
                         "-f", "name=bug", "-f", "color=#ff0000")
    assert code == 1 and "madtea label create" in err, err
    assert not env.forge.find_requests("POST")

