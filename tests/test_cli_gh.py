"""gh's conventions on the CLI, as a person who uses gh every day types them: ``api`` with placeholders, typed
fields and headers; issue and pull-request addresses and a pull request's branch name as arguments; and
``--repo host:port/owner/repo`` at a forge that speaks plain http."""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import madtea

from helpers import cli
from remote_env import Env, child_env, env, other  # noqa: F401 - fixtures
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
    raw = {"path": "/repos/acme/web/issues", "paginate": True}  # reading every page: a GET without -X
    madtea.api_cli_request(argparse.Namespace(_fields=[(False, "state=closed")], body_file=None), raw)
    assert raw == {"path": "/repos/acme/web/issues?state=closed", "method": "GET", "paginate": True}
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
        assert code == 1 and f"does not send a {name} header" in err, err
        assert ("madtea auth status" in err) == (name != "host"), err  # the login's way on where a login is meant
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



# --------------------------------------------------------------------------- addresses and branch names


def test_an_issue_or_pull_request_is_named_by_its_address(env: Env, monkeypatch, capsys) -> None:
    issue = env.forge.create_issue("acme", "web", "Crash on login", "steps")
    env.forge.commit("acme", "web", "feat/x", {"x.txt": "x\n"}, "X", start="main")
    pull = env.forge.create_pull("acme", "web", "feat/x", title="Add x")
    env.forge.add_repo("acme", "api")
    there = env.forge.create_issue("acme", "api", "Elsewhere", "in api")
    web = f"http://{env.forge.host}"
    code, out, err = cli(monkeypatch, capsys, env.clone, "issue", "view", f"{web}/acme/web/issues/{issue['number']}")
    assert code == 0 and "Crash on login" in out, err
    code, out, err = cli(monkeypatch, capsys, env.clone, "pr", "view", f"{web}/acme/web/pulls/{pull['number']}")
    assert code == 0 and "Add x" in out, err
    code, out, err = cli(monkeypatch, capsys, env.clone, "issue", "view", f"{web}/acme/api/issues/{there['number']}"
                         "#issuecomment-3")
    assert code == 0 and "Elsewhere" in out, err  # the address names its repository, as --repo would
    code, out, err = cli(monkeypatch, capsys, env.clone, "issue", "comment", f"{web}/acme/api/issues/1", "-b", "hi")
    assert code == 0, err
    assert env.forge.repo("acme", "api").issues[1].comment_ids and not env.repo.issues[issue["number"]].comment_ids
    assert [env.forge.comment_body(i) for i in env.forge.comment_ids()] == ["hi"]


def test_an_address_and_repo_naming_two_repositories_is_refused(env: Env, monkeypatch, capsys) -> None:
    env.forge.create_issue("acme", "web", "Crash on login", "steps")
    address = f"http://{env.forge.host}/acme/web/issues/1"
    code, out, err = cli(monkeypatch, capsys, env.clone, "issue", "comment", address, "-b", "hi", "-R", "acme/api")
    assert code == 1 and "--repo names acme/api" in err and "Leave out --repo" in err, err
    code, out, err = cli(monkeypatch, capsys, env.clone, "issue", "view", address, "-R", "ACME/web")
    assert code == 0 and "Crash on login" in out, err
    for bad in (f"http://{env.forge.host}/acme/web", f"http://{env.forge.host}/acme/web/issues/x",
                "ftp://host/acme/web/issues/1"):
        code, out, err = cli(monkeypatch, capsys, env.clone, "issue", "view", bad)
        assert code == 1 and "is not the address of an issue or pull request" in err, err
    assert not env.forge.comment_ids()


def test_several_addresses_close_in_their_one_repository(env: Env, monkeypatch, capsys) -> None:
    env.forge.add_repo("acme", "api")
    for title in ("One", "Two"):
        env.forge.create_issue("acme", "api", title, "")
    env.forge.create_issue("acme", "web", "Here", "")
    web = f"http://{env.forge.host}"
    code, out, err = cli(monkeypatch, capsys, env.clone, "issue", "close", f"{web}/acme/api/issues/1",
                         f"{web}/acme/web/issues/1")
    assert code == 1 and "is in " in err and "acme/web" in err, err  # two repositories: nothing closed
    assert {i.state for i in env.forge.repo("acme", "api").issues.values()} == {"open"}
    code, out, err = cli(monkeypatch, capsys, env.clone, "issue", "close", f"{web}/acme/api/issues/1",
                         f"{web}/acme/api/issues/2")
    assert code == 0, err
    assert {i.state for i in env.forge.repo("acme", "api").issues.values()} == {"closed"}
    assert env.repo.issues[1].state == "open"


def test_an_address_on_another_host_keeps_that_hosts_rules(env: Env, other, monkeypatch, capsys) -> None:
    """An address is an explicit target: another forge is read through the client confined to that repository,
    and a write there is refused exactly as with --repo."""
    address = f"http://{other.host_name}/acme/web/issues/1"
    code, out, err = cli(monkeypatch, capsys, env.clone, "issue", "view", address)
    assert code == 0 and "Over there" in out, err
    code, by_address, err_address = cli(monkeypatch, capsys, env.clone, "issue", "comment", address, "-b", "hi")
    code_r, by_repo, err_repo = cli(monkeypatch, capsys, env.clone, "issue", "comment", "1", "-b", "hi",
                                    "-R", f"{other.host_name}/acme/web")
    assert code == code_r == 1 and err_address.split("\n")[0] == err_repo.split("\n")[0] == "OUT_OF_SCOPE:"
    assert not other.comment_ids()
    assert {r.method for r in other.requests} == {"GET"}


def test_a_pull_request_is_named_by_its_branch(env: Env, monkeypatch, capsys) -> None:
    env.forge.commit("acme", "web", "feat/login", {"login.txt": "fixed\n"}, "Fix login", start="main")
    number = env.forge.create_pull("acme", "web", "feat/login", title="Fix the login")["number"]
    code, out, err = cli(monkeypatch, capsys, env.clone, "pr", "view", "feat/login")
    assert code == 0 and "Fix the login" in out, err
    code, out, err = cli(monkeypatch, capsys, env.clone, "pr", "view", "ACME:feat/login")
    assert code == 0 and "Fix the login" in out, err  # gh's OWNER:BRANCH, the repository's own owner
    code, out, err = cli(monkeypatch, capsys, env.clone, "pr", "view", "someone:feat/login")
    assert code == 1 and "no pull request from the branch someone:feat/login" in err, err  # a fork's: not guessed
    code, out, err = cli(monkeypatch, capsys, env.clone, "pr", "diff", "feat/login")
    assert code == 0 and "+fixed" in out, err
    code, out, err = cli(monkeypatch, capsys, env.clone, "pr", "checkout", "feat/login")
    assert code == 0, err
    assert run_git(env.clone, "branch", "--show-current") == "feat/login"
    run_git(env.clone, "switch", "-q", "main")
    code, out, err = cli(monkeypatch, capsys, env.clone, "pr", "merge", "feat/login", "--merge")
    assert code == 0, err
    assert env.repo.issues[number].pull.merged
    code, out, err = cli(monkeypatch, capsys, env.clone, "pr", "view", "feat/login")
    assert code == 0 and "Fix the login" in out, err  # a merged one is still its branch's, as gh finds it


def test_a_branch_without_a_pull_request_is_refused_by_name(env: Env, monkeypatch, capsys) -> None:
    code, out, err = cli(monkeypatch, capsys, env.clone, "pr", "view", "no-such-branch")
    assert code == 1 and "no pull request from the branch no-such-branch" in err, err
    assert "madtea pr list" in err and "--state all" in err
    code, out, err = cli(monkeypatch, capsys, env.clone, "pr", "merge", "no-such-branch", "--json")
    error = json.loads(out)["error"]
    assert error["code"] == "NOT_FOUND_OR_NO_ACCESS" and error["next"] == ["madtea pr list --repo "
                                                                           f"{env.forge.host}/acme/web --state all"]
    assert not env.forge.find_requests("POST")


# --------------------------------------------------------------------------- --repo host:port at an http forge


def _person(*argv: str, cwd: Path, stdin: str = "", **extra: str) -> subprocess.CompletedProcess[str]:
    """madtea as a person's shell runs it: no token in the environment but *extra*, the plaintext store allowed."""
    env = {k: v for k, v in child_env(MADTEA_CREDENTIAL_STORES="file").items() if not k.startswith("MADTEA_TOKEN")}
    return subprocess.run([sys.executable, "-m", "madtea", *argv], cwd=cwd, input=stdin, capture_output=True,
                          text=True, env=env | extra, timeout=60)


def test_repo_at_an_http_forge_says_it_speaks_http_and_the_login_that_fixes_it(env: Env, tmp_path: Path) -> None:
    from fakeforge import DEFAULT_TOKEN
    env.forge.create_issue("acme", "web", "Reached over http", "")
    host = env.forge.url.removeprefix("http://")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    token = {"MADTEA_TOKEN_" + re.sub(r"[^A-Z0-9]", "_", host.upper()): DEFAULT_TOKEN}
    refused = _person("issue", "list", "-R", f"{host}/acme/web", cwd=outside, **token)
    said = refused.stderr
    assert refused.returncode == 1 and "speaks plain http, not https" in said, said
    assert f"madtea auth login --hostname http://{host}" in said and "ca_file" not in said and "again later" not in said
    assert not env.forge.find_requests("GET", "/issues")
    # The way on, followed: the login records the forge's scheme, and -R host:port then reaches it over http.
    login = _person("auth", "login", "--hostname", f"http://{host}", "--with-token", "--insecure-storage",
                    cwd=outside, stdin=DEFAULT_TOKEN)
    assert login.returncode == 0, login.stderr
    listed = _person("issue", "list", "-R", f"{host}/acme/web", cwd=outside)
    assert listed.returncode == 0 and "Reached over http" in listed.stdout, listed.stderr


def test_repo_on_the_checkouts_http_forge_keeps_its_scheme(env: Env, monkeypatch, capsys) -> None:
    """Another repository on the host the checkout's origin names at http is reached at http, as the origin is."""
    env.forge.add_repo("acme", "api")
    env.forge.create_issue("acme", "api", "On the same forge", "")
    host = env.forge.url.removeprefix("http://")
    for repo in (f"{host}/acme/api", f"{host.split(':')[0]}/acme/api", "acme/api"):
        code, out, err = cli(monkeypatch, capsys, env.clone, "issue", "list", "-R", repo)
        assert code == 0 and "On the same forge" in out, (repo, err)


def test_api_field_reads_standard_input(env: Env, tmp_path: Path) -> None:
    given = tmp_path / "stdin.txt"
    given.write_text("from-stdin")
    with given.open() as stdin:
        done = env.cli("api", "/repos/{owner}/{repo}/branches", "-F", "new_branch_name=@-", "-f",
                       "old_branch_name=main", stdin=stdin)
    assert done.returncode == 0, done.stderr
    assert env.forge.find_requests("POST", "/branches")[-1].json == {"new_branch_name": "from-stdin",
                                                                     "old_branch_name": "main"}


# --------------------------------------------------------------------------- a gh user's odd inputs


def test_api_a_field_typed_twice_is_refused_never_dropped(env: Env, monkeypatch, capsys) -> None:
    """gh's "unexpected override": a second value for one key is refused, not kept over the first; -F reads only
    ASCII digits as a number, and '@' with no file after it names none."""
    for fields in (("-F", "a[]=1", "-F", "a=2"), ("-f", "a=1", "-f", "a=2"), ("-F", "a[b]=1", "-F", "a=2")):
        code, out, err = cli(monkeypatch, capsys, env.clone, "api", "/repos/acme/web/topics", "-X", "PUT", *fields)
        assert code == 1 and "sets a again" in err and "nothing was sent" in err, (fields, err)
    code, out, err = cli(monkeypatch, capsys, env.clone, "api", "/repos/acme/web/topics", "-X", "PUT", "-F", "k=@")
    assert code == 1 and "names no file after '@'" in err, err
    assert not [r for r in env.forge.requests if r.method != "GET"]
    raw: dict = {"path": "/repos/acme/web/x", "owner_repo": "acme/web"}
    madtea.api_cli_request(argparse.Namespace(_fields=[(True, "n=\u0663"), (True, "z=007"), (True, "e=1e3"),
                                                       (False, "empty="), (True, f"big={1 << 64}"),
                                                       (True, f"max={(1 << 63) - 1}")], body_file=None), raw)
    assert raw["body"] == {"n": "\u0663", "z": 7, "e": "1e3", "empty": "", "big": str(1 << 64),
                           "max": (1 << 63) - 1}  # as gh's strconv.Atoi reads them


def test_api_headers_a_forge_cannot_carry_or_given_twice_are_refused(env: Env, monkeypatch, capsys) -> None:
    before = len(env.forge.requests)
    for headers, said in ((("X-Note: \u65e5\u672c",), "The header X-Note has a value an HTTP header cannot carry"),
                          (("X-Trace: 1", "x-trace: 2"), "The header x-trace is given twice")):
        code, out, err = cli(monkeypatch, capsys, env.clone, "api", "/repos/{owner}/{repo}",
                             *[w for h in headers for w in ("-H", h)])
        assert code == 1 and said in err and "To continue:" in err and "could not be built" not in err, err
    for header in ("Accept-Encoding: gzip", "Content-Length: 5"):  # madtea's own, and nothing about a login
        code, out, err = cli(monkeypatch, capsys, env.clone, "api", "/repos/{owner}/{repo}", "-H", header)
        name = header.split(":")[0]
        assert code == 1 and f"does not send a {name} header" in err and "auth status" not in err, err
    assert len(env.forge.requests) == before


def test_an_address_as_a_browser_shows_it(env: Env, monkeypatch, capsys) -> None:
    """A pull request's tab (files, commits, checks) and percent-escapes are the same pull request, as gh reads
    them; digits that are not ASCII, or an escaped slash, are not an address."""
    env.forge.commit("acme", "web", "feat/x", {"x.txt": "x\n"}, "X", start="main")
    pull = env.forge.create_pull("acme", "web", "feat/x", title="Add x")["number"]
    web = f"http://{env.forge.host}"
    for address in (f"{web}/acme/web/pulls/{pull}/files", f"{web}/acme/web/pulls/{pull}/commits?style=split",
                    f"{web}/%61cme/w%65b/pulls/{pull}"):
        code, out, err = cli(monkeypatch, capsys, env.clone, "pr", "view", address)
        assert code == 0 and "Add x" in out, (address, err)
    for bad in (f"{web}/acme/web/pulls/\u0661", f"{web}/acme/web%2Fx/pulls/{pull}", f"{web}/acme/web/issues/1/files"):
        code, out, err = cli(monkeypatch, capsys, env.clone, "pr", "view", bad)
        assert code == 1 and "is not the address of an issue or pull request" in err, (bad, err)


def test_api_a_whole_address_or_a_detached_head_is_refused_with_its_own_way_on(env: Env, monkeypatch,
                                                                               capsys) -> None:
    """gh takes a whole URL as the endpoint; madtea sends only a path to the repository's forge, so an address is
    refused before anything is sent, its path after /api/v1 the way on. {branch} on a detached HEAD says to
    write the branch out, not to go to a checkout the person is already in."""
    before = len(env.forge.requests)
    code, out, err = cli(monkeypatch, capsys, env.clone, "api", f"{env.forge.url}/api/v1/repos/acme/web?page=2")
    assert code == 1 and "is a whole address" in err and "madtea api '/repos/acme/web?page=2'" in err, err
    code, out, err = cli(monkeypatch, capsys, env.clone, "api", "graphql", "-f", "query={ viewer { login } }")
    assert code == 1 and "no GraphQL API" in err and "a REST path such as" in err, err  # gh's habit, said plainly
    run_git(env.clone, "switch", "-q", "--detach")
    code, out, err = cli(monkeypatch, capsys, env.clone, "api", "/repos/{owner}/{repo}/branches/{branch}")
    assert code == 1 and "detached HEAD" in err, err
    assert "To continue: Write the branch's name in place of {branch}." in err and "checkout of" not in err, err
    assert len(env.forge.requests) == before


def test_api_standard_input_read_twice_is_refused(env: Env, tmp_path: Path) -> None:
    """Standard input can be read once: a second @- (or --input - beside one) would go out empty."""
    given = tmp_path / "stdin.txt"
    given.write_text("from-stdin")
    for argv in (("-F", "new_branch_name=@-", "-F", "old_branch_name=@-"), ("--input", "-", "-F", "n=@-")):
        with given.open() as stdin:
            done = env.cli("api", "/repos/{owner}/{repo}/branches", *argv, stdin=stdin)
        assert done.returncode == 1 and "can be read only once" in done.stderr and "@FILE" in done.stderr, argv
        assert "Traceback" not in done.stderr
    assert not env.forge.find_requests("POST")


def test_api_branch_placeholder_is_escaped_in_the_path(env: Env, monkeypatch, capsys) -> None:
    """{branch} is the checkout's branch exactly: a '%' in its name is not read as an escape (odd%41x is not
    oddAx, another branch), and a '#' does not cut the path; its slashes stay the route's."""
    for name in ("odd%41x", "oddAx", "we#ird", "feat/odd"):
        env.forge.commit("acme", "web", name, {"n.txt": name + "\n"}, f"On {name}", start="main")
    for name in ("odd%41x", "we#ird", "feat/odd"):
        run_git(env.clone, "switch", "-q", "-c", name)
        code, out, err = cli(monkeypatch, capsys, env.clone, "api", "/repos/{owner}/{repo}/branches/{branch}")
        assert code == 0 and json.loads(out)["name"] == name, (name, err)


def test_api_a_binary_file_is_said_to_be_not_text(env: Env, tmp_path: Path, monkeypatch, capsys) -> None:
    """A file that reads but is not UTF-8 is not 'a file that cannot be read': the refusal says what it is."""
    binary = tmp_path / "logo.png"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe")
    code, out, err = cli(monkeypatch, capsys, env.clone, "api", "/repos/acme/web/topics", "-X", "PUT",
                         "-F", f"k=@{binary}")
    assert code == 1 and f"{binary} is not UTF-8 text (at byte 0)" in err and "Cannot read" not in err, err
    assert not [r for r in env.forge.requests if r.method != "GET"]


def test_an_address_on_a_host_no_lookup_knows_says_so(env: Env, monkeypatch, capsys) -> None:
    """A host name that resolves nowhere is a typo or another network's name: said so, never 'try again later'."""
    code, out, err = cli(monkeypatch, capsys, env.clone, "issue", "view", "https://no-such-forge.invalid/acme/web/issues/1")
    assert code == 1 and "No host named no-such-forge.invalid is known here" in err, err
    assert "To continue: Check the host name no-such-forge.invalid" in err and "again later" not in err, err
