"""Token hygiene in what madtea shows: known token values never appear, whoever wrote them.

A forge can echo a token back inside content (an issue body, a comment); madtea hides every
token value it knows (the environment's and those a store gave it) on both surfaces. A 401
or 403 names the host that answered it, not the one that redirected there.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable

import pytest
from hypothesis import given, settings, strategies as st

import forge
import gitops
import madtea
from fakeforge import DEFAULT_TOKEN
from remote_env import Env, child_env, env  # noqa: F401 - fixtures
from test_forge import Reply, Server, Sleeps, serve  # noqa: F401 - the scripted-server fixture

OTHER = "zq-other-host-token-0123456789"


@pytest.fixture
def leaky(env: Env, monkeypatch: pytest.MonkeyPatch) -> Env:
    """Issue 1 whose body and comment carry the launch token and another host's environment token."""
    monkeypatch.setenv("MADTEA_TOKEN_FORGE_EXAMPLE_TEST", OTHER)
    env.forge.create_issue("acme", "web", "Leak", f"the token is {DEFAULT_TOKEN} and also {OTHER}.")
    env.forge.create_comment("acme", "web", 1, f"echo: {DEFAULT_TOKEN}")
    return env


def test_forge_content_is_redacted_in_text_and_data(leaky: Env) -> None:
    result = leaky.ok("madt_issues", action="view", number=1, comments=True)
    shown = result.text + json.dumps(result.data)
    assert DEFAULT_TOKEN not in shown and OTHER not in shown
    assert "the token is *** and also ***." in result.text and "echo: ***" in result.text
    listed = leaky.ok("madt_issues", action="list", fields=["body"])
    assert DEFAULT_TOKEN not in listed.text + json.dumps(listed.data)


def test_forge_content_is_redacted_on_the_cli(leaky: Env) -> None:
    out = leaky.cli("issue", "view", "1", "--comments", "--json")
    assert out.returncode == 0, out.stderr
    assert DEFAULT_TOKEN not in out.stdout + out.stderr and OTHER not in out.stdout + out.stderr
    assert "***" in out.stdout


@pytest.mark.anyio
async def test_forge_content_is_redacted_over_mcp(leaky: Env) -> None:
    pytest.importorskip("mcp")
    from mcp.client import Client

    async with Client(madtea.build_server(leaky.clone), mode="legacy") as client:
        result = await client.call_tool("madt_issues", {"action": "view", "number": 1, "comments": True})
    shown = result.content[0].text + json.dumps(result.structured_content)
    assert not result.is_error and DEFAULT_TOKEN not in shown and OTHER not in shown


def test_a_token_a_store_gave_is_redacted(env: Env) -> None:
    stored = "zq-stored-token-abcdef0123456789"
    forge.store_token("forge.example.test", stored, insecure=True)
    assert forge.token_for("forge.example.test")[0] == stored
    env.forge.create_issue("acme", "web", "Stored", f"copy of {stored}")
    result = env.ok("madt_issues", action="view", number=1)
    assert stored not in result.text + json.dumps(result.data) and "copy of ***" in result.text


def _carrying(value: str) -> madtea.Result:
    """A result holding *value* in every part a surface shows: text, data (nested, as a key too), a refusal,
    a note and the raw bytes of a view."""
    result = madtea.Result(f"text {value}.", {"items": [f"in a list {value}", (value,)], value: {"v": value}},
                           error={"code": "X", "target": value, "next": [{"tool": "t", "args": {"v": value}}]},
                           content=f"raw {value}\n".encode())
    result.notes = [("warning", f"a note {value}")]
    return result


def _shown(result: madtea.Result) -> str:
    return repr((result.text, result.data, result.error, result.notes)) + (result.content or b"").decode()


def test_a_known_token_is_hidden_in_every_part_of_a_result(monkeypatch: pytest.MonkeyPatch) -> None:
    token = "zq-env-token-0123456789abcdef"
    monkeypatch.setenv("MADTEA_TOKEN", token)
    done = madtea._redacted(_carrying(token))
    assert token not in _shown(done), _shown(done)
    assert done.text == "text ***." and done.content == b"raw ***\n" and done.notes == [("warning", "a note ***")]
    assert done.data == {"items": ["in a list ***", ("***",)], "***": {"v": "***"}}


def test_the_known_tokens_are_gathered_once_per_result(monkeypatch: pytest.MonkeyPatch) -> None:
    token = "zq-env-token-0123456789abcdef"
    monkeypatch.setenv("MADTEA_TOKEN", token)
    asked: list[int] = []
    monkeypatch.setattr(forge, "known_tokens", lambda _real=forge.known_tokens: asked.append(1) or _real())
    listing = madtea.Result("3 issues", [{"title": f"issue {n}", "body": f"echo {token}"} for n in range(3)])
    done = madtea._redacted(listing)
    assert len(asked) == 1 and token not in _shown(done)


def test_a_secret_a_call_gave_is_hidden_in_every_part_of_a_result() -> None:
    secret = "zq-secret-value-0123456789"
    done = madtea._without_secrets(_carrying(secret), [secret])
    assert secret not in _shown(done), _shown(done)
    hidden = "<the secret value>"
    assert done.text == f"text {hidden}." and done.content == b"raw ***\n" and done.error["target"] == hidden
    assert done.data == {"items": [f"in a list {hidden}", (hidden,)], hidden: {"v": hidden}}


def test_a_401_from_a_redirect_target_names_that_host(serve: Callable[..., Server]) -> None:
    other = serve([Reply(401, {"message": "token is required"})])
    home = serve([Reply(302, headers={"Location": f"{other.url}/download/1"})])
    api = forge.Client(home.api, home.host, "CANARYf00dfeed0123456789abcdef0123456789", sleep=Sleeps())
    with pytest.raises(forge.ForgeError) as caught:
        api.get("/repos/acme/web/releases/assets/1")
    error = caught.value
    assert error.code == "AUTH_MISSING" and error.host == other.host and error.redirected_from == home.host
    assert f"{home.host} redirected GET /repos/acme/web/releases/assets/1 to {other.host}, which answered 401" \
        in error.message
    result = madtea._forge_error(error)
    assert result is not None and other.host in result.error["user_action"]
    assert "auth login" not in result.error["user_action"]


def test_a_401_from_the_host_itself_still_advises_login_there(serve: Callable[..., Server]) -> None:
    home = serve([Reply(401, {"message": "token is required"})])
    api = forge.Client(home.api, home.host, "CANARYf00dfeed0123456789abcdef0123456789", sleep=Sleeps())
    with pytest.raises(forge.ForgeError) as caught:
        api.get("/repos/acme/web")
    assert caught.value.host == home.host and caught.value.redirected_from is None
    result = madtea._forge_error(caught.value)
    assert result is not None and f"auth login --hostname {home.host}" in result.error["user_action"]


# --------------------------------------------------------------------------- credentials in URLs

# A hostile server's error body: a credential up front, then a dotted run as long as the
# part of an error body madtea reads (64 KiB). A scrubber whose pattern starts with the
# scheme retries at every letter of the run and reads to its end each time (quadratic).
HOSTILE_BODY = "fetch https://bob:hunter2@x.test/a failed " + "a." * 32768


def test_a_hostile_error_body_is_shown_without_its_credential(env: Env) -> None:
    env.forge.inject(500, times=2, body=HOSTILE_BODY, path_contains="/issues/1")
    result = env.call("madt_issues", action="view", number=1)
    assert result.error and "hunter2" not in result.text, result.text
    assert "fetch https://***@x.test/a failed a.a." in result.text
    out = env.cli("issue", "view", "1")
    assert out.returncode != 0 and "Traceback" not in out.stderr
    assert "hunter2" not in out.stdout + out.stderr and "https://***@x.test/a" in out.stderr


def test_the_credential_scrubber_reads_a_hostile_text_in_linear_work() -> None:
    # 4 MiB of the hostile run: a linear scrubber reads it in well under a second, a quadratic
    # one for hours, so this generous limit judges the shape of the work, not its speed.
    probe = "import forge, gitops; t = 'a.' * 2**21; forge.scrub(t); gitops.hide_userinfo(t)"
    done = subprocess.run([sys.executable, "-c", probe], env=child_env(), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr


def test_an_error_page_is_reduced_to_text_in_linear_work() -> None:
    # The same bound for the HTML an error page is reduced by: unclosed tags, titles and scripts, 4 MiB each.
    probe = ("import forge\nfor page in ('<' * 2**22, '<title' * 2**19, '<script>' * 2**19, '<a <b' * 2**20):\n"
             "    forge._html_text(page)\n")
    done = subprocess.run([sys.executable, "-c", probe], env=child_env(), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("page, shown", [
    ("<html><title>Bad gateway</title><body>x</body></html>", "Bad gateway"),
    ("<html><body><script>var t = 1;</script><style>p {}</style><p>Down for maintenance</p></body></html>",
     "Down for maintenance"),
    ("<html><body><p>Down</p><script>never closed", "Down never closed"),
])
def test_an_error_page_is_shown_as_its_title_or_text(page: str, shown: str) -> None:
    assert forge.sanitise_snippet(page.encode(), "text/html").startswith(shown)


# The scheme-first pattern forge used before: the reference for what must stay hidden.
_SCHEME_FIRST = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@]+@")
_URLISH = st.text(alphabet="aZ09+.-:/@ \t%_~!", max_size=60)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(_URLISH, st.sampled_from(["https://", "ssh://", "git+ssh://", "u:p@", "@", "/"])),
                max_size=12))
def test_the_scrubber_hides_every_credential_the_scheme_first_pattern_hid(parts: list[str]) -> None:
    text = "".join(parts)
    for shown in (forge.scrub(text), gitops.hide_userinfo(text)):
        assert _SCHEME_FIRST.sub(r"\1***@", shown) == shown, (text, shown)
