"""forge.py against tiny scripted loopback servers (no fake forge needed).

Each test starts one or two ``http.server`` instances on 127.0.0.1 whose
answers are scripted per request, records what they received, and asserts on
what a caller sees: codes, messages, request counts and headers.
"""
from __future__ import annotations

import json
import shutil
import socket
import ssl
import subprocess
import threading
import time
import traceback
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

import forge
import gitops

TOKEN = "CANARYf00dfeed0123456789abcdef0123456789"


# --------------------------------------------------------------------------- scripted servers

@dataclass
class Seen:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Reply:
    status: int = 200
    json: Any = None
    body: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    action: str | None = None  # "drop" (close without answering) | "truncate" (short body)


Responder = Callable[[Seen], Reply]


class Server:
    """A loopback HTTP server answering each request with ``responder(seen)``."""

    def __init__(self, responder: Responder | list[Reply], tls: ssl.SSLContext | None = None) -> None:
        self.seen: list[Seen] = []
        if isinstance(responder, list):
            queue = list(responder)

            def scripted(_seen: Seen) -> Reply:
                return queue.pop(0) if len(queue) > 1 else queue[0]

            self.responder: Responder = scripted
        else:
            self.responder = responder
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                split = urllib.parse.urlsplit(self.path)
                seen = Seen(self.command, split.path, dict(urllib.parse.parse_qsl(split.query)),
                            {k.lower(): v for k, v in self.headers.items()}, body)
                outer.seen.append(seen)
                reply = outer.responder(seen)
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.action == "drop":
                    self.close_connection = True
                    return
                data = reply.body if reply.body is not None else (
                    b"" if reply.json is None and reply.status in (204, 301, 302, 307, 308) else
                    json.dumps(reply.json).encode())
                self.send_response(reply.status)
                headers = dict(reply.headers)
                if reply.body is None and "Content-Type" not in headers:
                    headers["Content-Type"] = "application/json;charset=utf-8"
                for key, value in headers.items():
                    self.send_header(key, value)
                if reply.action == "truncate":
                    self.send_header("Content-Length", str(len(data) + 500))
                    self.end_headers()
                    self.wfile.write(data)
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = do_HEAD = _any

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.handle_error = lambda *a: None  # type: ignore[method-assign]
        if tls is not None:
            self.httpd.socket = tls.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self.scheme = "https" if tls else "http"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.host}"

    @property
    def api(self) -> str:
        return f"{self.url}/api/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def serve() -> Iterator[Callable[..., Server]]:
    servers: list[Server] = []

    def start(responder: Responder | list[Reply], **kwargs: Any) -> Server:
        server = Server(responder, **kwargs)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


class Sleeps(list):
    """An injectable ``sleep`` that only records."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def client(server: Server, token: str | None = TOKEN, **kwargs: Any) -> forge.Client:
    kwargs.setdefault("sleep", Sleeps())
    return forge.Client(server.api, server.host, token, **kwargs)


# --------------------------------------------------------------------------- round trip

def test_a_failure_restated_keeps_its_code_request_and_host() -> None:
    failed = forge.ForgeError("FORGE_UNAVAILABLE", "The forge did not answer.", None, "PATCH", "/repos/a/b/issues/3",
                              transient=True, host="forge.test")
    said = failed.restated(f"#3 was partly edited; then: {failed.message} https://{TOKEN}@forge.test/x")
    assert (said.code, said.status, said.method, said.path, said.transient, said.host) == (
        "FORGE_UNAVAILABLE", None, "PATCH", "/repos/a/b/issues/3", True, "forge.test")
    assert said.message.startswith("#3 was partly edited; then: The forge did not answer.") and TOKEN not in str(said)


def test_json_round_trip_sends_token_and_json_headers(serve: Callable[..., Server]) -> None:
    server = serve(lambda seen: Reply(201, {"number": 7, "title": seen.json["title"]}))
    api = client(server, user_agent="madtea/9.9")
    created = api.post(forge.repo_path("acme", "web", "issues"), json={"title": "Grüße"})
    assert created == {"number": 7, "title": "Grüße"}
    seen = server.seen[0]
    assert (seen.method, seen.path) == ("POST", "/api/v1/repos/acme/web/issues")
    assert seen.headers["authorization"] == f"token {TOKEN}"
    assert seen.headers["content-type"] == "application/json"
    assert seen.headers["accept"] == "application/json"
    assert seen.headers["user-agent"] == "madtea/9.9"
    assert json.loads(seen.body.decode("utf-8")) == {"title": "Grüße"}
    assert api.requests_made == 1


def test_get_has_no_body_and_empty_answers_are_none(serve: Callable[..., Server]) -> None:
    server = serve([Reply(200, body=b""), Reply(204)])
    api = client(server)
    assert api.post("/repos/acme/web/pulls/3/merge", json={"Do": "squash"}) is None
    assert api.get("/repos/acme/web/pulls/3/merge", params={"x": True, "skip": None}) is None
    assert "content-type" not in server.seen[1].headers
    assert server.seen[1].query == {"x": "true"}


def test_no_token_sends_no_authorization(serve: Callable[..., Server]) -> None:
    server = serve([Reply(200, {"version": "1.25.4"})])
    client(server, token=None).get("/version")
    assert "authorization" not in server.seen[0].headers


# --------------------------------------------------------------------------- pagination

def _listing(total: int, clamp: int, *, root_url: str | None, with_total: bool, with_link: bool) -> Responder:
    """A list endpoint over ``range(total)`` clamping ``limit`` like Gitea's MAX_RESPONSE_ITEMS."""

    def respond(seen: Seen) -> Reply:
        page = max(1, int(seen.query.get("page", 1)))
        limit = int(seen.query.get("limit", 30))
        limit = 30 if limit <= 0 else min(limit, clamp)
        items = [{"id": i} for i in range((page - 1) * limit, min(page * limit, total))]
        headers: dict[str, str] = {}
        if with_total:
            headers["X-Total-Count"] = str(total)
        if with_link and root_url:
            last = -(-total // limit)
            rels = []
            if page < last:
                rels.append(f'<{root_url}{seen.path}?limit={limit}&page={page + 1}>; rel="next"')
                rels.append(f'<{root_url}{seen.path}?limit={limit}&page={last}>; rel="last"')
            if page > 1:
                rels.append(f'<{root_url}{seen.path}?limit={limit}&page=1>; rel="first"')
            if rels:
                headers["Link"] = ",".join(rels)
        return Reply(200, items, headers=headers)

    return respond


@pytest.mark.parametrize("with_total", [True, False])
def test_listing_500_issues_takes_exactly_10_requests(serve: Callable[..., Server], with_total: bool) -> None:
    # The Link URLs name a ROOT_URL that is not the host dialled; following
    # them would leave the loopback (and the seal would refuse).
    server = serve(_listing(500, 50, root_url="https://forge.invalid", with_total=with_total, with_link=True))
    api = client(server)
    items, total = api.paginate("/repos/acme/web/issues", {"state": "all", "limit": 100, "page": 4})
    assert [item["id"] for item in items] == list(range(500))
    assert total == (500 if with_total else None)
    assert len(server.seen) == 10 == api.requests_made
    assert [s.query["page"] for s in server.seen] == [str(n) for n in range(1, 11)]
    assert all(s.query["limit"] == "50" and s.query["state"] == "all" for s in server.seen)


def test_pagination_never_stops_early_when_the_server_clamps_harder(serve: Callable[..., Server]) -> None:
    server = serve(_listing(500, 30, root_url="https://forge.invalid", with_total=False, with_link=True))
    items, _ = client(server).paginate("/repos/acme/web/issues")
    assert [item["id"] for item in items] == list(range(500))
    assert len(server.seen) == 17  # ceil(500 / 30)


def test_labels_style_endpoint_with_only_a_total_count(serve: Callable[..., Server]) -> None:
    server = serve(_listing(75, 30, root_url=None, with_total=True, with_link=False))
    items, total = client(server).paginate("/repos/acme/web/labels")
    assert (len(items), total, len(server.seen)) == (75, 75, 3)
    assert [item["id"] for item in items] == list(range(75))


def test_paginate_limit_and_headerless_endpoints(serve: Callable[..., Server]) -> None:
    server = serve(_listing(500, 50, root_url="https://forge.invalid", with_total=True, with_link=True))
    api = client(server)
    assert [i["id"] for i in api.paginate("/repos/acme/web/issues", limit=5)[0]] == [0, 1, 2, 3, 4]
    assert server.seen[-1].query["limit"] == "5"
    assert len(api.paginate("/repos/acme/web/issues", limit=120)[0]) == 120
    assert api.requests_made == 4

    # An endpoint that ignores page and sends no headers (comments): one
    # extra request proves it, and nothing is duplicated.
    same = serve(lambda seen: Reply(200, [{"id": 1}, {"id": 2}]))
    items, total = client(same).paginate("/repos/acme/web/issues/1/comments")
    assert (items, total, len(same.seen)) == ([{"id": 1}, {"id": 2}], None, 2)

    empty = serve([Reply(200, [], headers={"X-Total-Count": "0"})])
    assert client(empty).paginate("/repos/acme/web/issues") == ([], 0)

    notlist = serve([Reply(200, {"id": 1})])
    with pytest.raises(forge.ForgeError) as caught:
        client(notlist).paginate("/repos/acme/web")
    assert caught.value.code == "BAD_ARGUMENT"


# --------------------------------------------------------------------------- error shapes

GO_STRUCT = {"Style": "merge", "StdOut": "", "StdErr": "CONFLICT (content): Merge conflict in a.py\n", "Err": {}}
HTML = (b"<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head>"
        b"<body><h1>502 Bad Gateway</h1><hr>nginx</body></html>")

ERROR_CASES = [
    # (status, body, content type, path, code, words in the message)
    (404, b"", None, "/repos/acme/gone", "NOT_FOUND_OR_NO_ACCESS", ["/repos/acme/gone", "cannot see it", "404"]),
    (404, b"null", "application/json", "/repos/acme/gone", "NOT_FOUND_OR_NO_ACCESS", ["404"]),
    (404, b"404 page not found\n", "text/plain", "/repos/acme/web/nothing", "NOT_FOUND_OR_NO_ACCESS",
     ["404 page not found", "no such API route"]),
    (404, b'{"message":"The target couldn\'t be found.","url":"x","errors":[]}', "application/json",
     "/repos/acme/web/issues/9", "NOT_FOUND_OR_NO_ACCESS", ["The target couldn't be found."]),
    (401, b'{"message":"invalid username, password or token","url":"x"}', "application/json",
     "/user", "AUTH_MISSING", ["missing or invalid for 127.0.0.1", "invalid username"]),
    (403, b"", None, "/repos/acme/web/issues/3", "NOT_ALLOWED", ["403", "gave no reason"]),
    (403, b'{"message":"Must be repo admin","url":"x"}', "application/json", "/repos/acme/web/pulls/1/reviews/2/"
     "dismissals", "NOT_ALLOWED", ["does not allow", "because: Must be repo admin"]),
    (403, b'{"message":"token does not have at least one of required scope(s), required=[write:issue], '
          b'token scope=read:issue","url":"x"}', "application/json", "/repos/acme/web/issues",
     "SCOPE_MISSING", ["lacks a scope", "required=[write:issue]"]),
    (403, b'{"message":"Only signed in user is allowed to call APIs."}', "application/json", "/version",
     "AUTH_MISSING", ["signed-in"]),
    (405, b'{"message":"Work in progress PRs cannot be merged","url":"x"}', "application/json",
     "/repos/acme/web/pulls/3/merge", "MERGE_BLOCKED", ["Work in progress PRs cannot be merged"]),
    (405, b"", None, "/repos/acme/web/things", "NOT_SUPPORTED", ["does not allow"]),
    (409, json.dumps(GO_STRUCT).encode(), "application/json", "/repos/acme/web/pulls/3/merge",
     "MERGE_CONFLICT", ["conflicts", "Merge conflict in a.py"]),
    (409, b'{"message":"head out of date","url":"x"}', "application/json", "/repos/acme/web/pulls/3/merge",
     "HEAD_MOVED", ["head moved", "head out of date"]),
    (409, b'{"message":"pull request already exists for these targets [id: 1, issue_id: 4]"}',
     "application/json", "/repos/acme/web/pulls", "CONFLICT", ["already exists"]),
    (400, b'{"message":"labels should be an array of strings or integers"}', "application/json",
     "/repos/acme/web/issues/1/labels", "BAD_ARGUMENT", ["labels should be an array"]),
    (412, b'{"message":"unknown state: shut"}', "application/json", "/repos/acme/web/issues/1",
     "BAD_ARGUMENT", ["unknown state: shut", "412"]),
    (422, b'{"message":"[Title]: Required","url":"x"}', "application/json", "/repos/acme/web/issues",
     "BAD_ARGUMENT", ["[Title]: Required"]),
    (423, b'{"message":"acme/web is archived"}', "application/json", "/repos/acme/web/issues",
     "BAD_ARGUMENT", ["archived"]),
    (500, b'{"message":"","url":"x"}', "application/json", "/repos/acme/web/issues/1/comments",
     "FORGE_UNAVAILABLE", ["failed", "500"]),
    (502, HTML, "text/html", "/repos/acme/web", "FORGE_UNAVAILABLE", ["HTML page", "502 Bad Gateway"]),
    (200, HTML, "text/html", "/repos/acme/web", "FORGE_UNAVAILABLE", ["HTML page instead of JSON"]),
    (200, b'{"id": 1, "title": "half', "application/json", "/repos/acme/web/issues/1", "FORGE_UNAVAILABLE",
     ["unreadable JSON", '{"id": 1, "title": "half']),
]


@pytest.mark.parametrize("status,body,ctype,path,code,words", ERROR_CASES)
def test_every_error_body_shape_maps_to_a_stable_code(serve: Callable[..., Server], status: int, body: bytes,
                                                      ctype: str | None, path: str, code: str,
                                                      words: list[str]) -> None:
    headers = {"Content-Type": ctype} if ctype else {"Content-Type": ""}
    server = serve([Reply(status, body=body, headers=headers)])
    method = "POST" if path.endswith(("/merge", "/pulls", "/labels")) else "GET"
    with pytest.raises(forge.ForgeError) as caught:
        client(server, retries=0).send(method, path).json()
    error = caught.value
    assert error.code == code, error.message
    assert error.status == status
    assert (error.method, error.path) == (method, path)
    for word in words:
        assert word in error.message
    assert "<" not in error.message and "\n" not in error.message
    assert len(server.seen) == 1


def test_no_token_401_says_none_is_configured(serve: Callable[..., Server]) -> None:
    server = serve([Reply(401, {"message": "token is required"})])
    with pytest.raises(forge.ForgeError) as caught:
        client(server, token=None).get("/user")
    assert caught.value.code == "AUTH_MISSING"
    assert f"No token is configured for {server.host}" in caught.value.message


def test_snippets_are_short_printable_and_scrubbed(serve: Callable[..., Server]) -> None:
    hostile = ("\x1b[31mboom\u202e\u200b " + f"Authorization: token {TOKEN} " + "https://bob:hunter2@x.test/a "
               + "x" * 5000)
    server = serve([Reply(500, body=hostile.encode(), headers={"Content-Type": "text/plain"})])
    with pytest.raises(forge.ForgeError) as caught:
        client(server, retries=0).get("/repos/acme/web")
    message = caught.value.message
    assert "boom" in message and TOKEN not in message and "hunter2" not in message
    assert "\x1b" not in message and "\u202e" not in message and "\u200b" not in message
    snippet = forge.sanitise_snippet(hostile)
    assert len(snippet) <= forge.SNIPPET_CHARS and snippet.endswith("…")
    assert forge.scrub("fetch https://me:pw@host/x failed") == "fetch https://***@host/x failed"
    assert forge.scrub("GET /x?token=abc&access_token=def") == "GET /x?token=***&access_token=***"
    # Gitea's own scope message must survive scrubbing.
    assert forge.scrub("token scope=read:issue") == "token scope=read:issue"


# --------------------------------------------------------------------------- retries

def test_get_retries_502_503_then_succeeds(serve: Callable[..., Server]) -> None:
    server = serve([Reply(502, body=b"bad gateway"), Reply(503, {"message": ""}), Reply(200, {"ok": True})])
    sleeps = Sleeps()
    assert client(server, sleep=sleeps).get("/repos/acme/web") == {"ok": True}
    assert len(server.seen) == 3 and len(sleeps) == 2
    assert 0.25 <= sleeps[0] <= 0.5 and 0.5 <= sleeps[1] <= 1.0  # jittered, growing


def test_429_honours_retry_after_seconds_and_http_dates(serve: Callable[..., Server]) -> None:
    soon = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 4))
    server = serve([Reply(429, {"message": "slow down"}, headers={"Retry-After": "2"}),
                    Reply(429, {"message": "slow down"}, headers={"Retry-After": soon}),
                    Reply(200, [])])
    sleeps = Sleeps()
    assert client(server, sleep=sleeps).get("/repos/acme/web/issues") == []
    assert 2.0 <= sleeps[0] <= 2.2
    assert 2.0 <= sleeps[1] <= 4.4
    huge = serve([Reply(429, {}, headers={"Retry-After": "86400"}), Reply(200, {})])
    capped = Sleeps()
    client(huge, sleep=capped).get("/x")
    assert forge.RETRY_AFTER_CAP <= capped[0] <= forge.RETRY_AFTER_CAP * 1.1


def test_retries_are_bounded(serve: Callable[..., Server]) -> None:
    server = serve([Reply(503, body=b"Service Unavailable", headers={"Content-Type": "text/plain"})])
    with pytest.raises(forge.ForgeError) as caught:
        client(server, retries=2).get("/repos/acme/web")
    assert caught.value.code == "FORGE_UNAVAILABLE" and caught.value.transient
    assert "after 3 attempts" in caught.value.message and "503" in caught.value.message
    assert len(server.seen) == 3


def test_a_retry_that_would_pass_the_deadline_is_not_waited_for(serve: Callable[..., Server]) -> None:
    server = serve([Reply(429, {"message": "later"}, headers={"Retry-After": "20"})])
    sleeps = Sleeps()
    with pytest.raises(forge.ForgeError) as caught:
        client(server, sleep=sleeps, total_timeout=5).get("/repos/acme/web")
    assert sleeps == [] and len(server.seen) == 1
    assert "429" in caught.value.message and "wait 20 s" in caught.value.message


class FakeCall:
    """A running tool call (a gitops.Call) as forge reads it: its pauses and details recorded, cancelled on demand."""

    deadline: float | None = None

    def __init__(self, cancel_at_pause: int | None = None) -> None:
        self.waits: list[float] = []
        self.details: list[str] = []
        self.cancel_at_pause = cancel_at_pause

    @property
    def cancelled(self) -> bool:
        return self.cancel_at_pause is not None and len(self.waits) >= self.cancel_at_pause

    def detail(self, text: str) -> None:
        self.details.append(text)

    def hold(self, stop: Callable[[], None]) -> int:
        return 0

    def release(self, key: int) -> None:
        pass

    def wait(self, seconds: float) -> bool:
        self.waits.append(seconds)
        return self.cancelled


def _in_call(call: FakeCall, run: Callable[[], Any]) -> Any:
    token = gitops.CALL.set(call)  # type: ignore[arg-type]  # stands in for gitops.Call
    try:
        return run()
    finally:
        gitops.CALL.reset(token)


def test_a_retry_inside_a_call_waits_on_the_call_and_says_so(serve: Callable[..., Server]) -> None:
    server = serve([Reply(503, {"message": ""}), Reply(action="drop"), Reply(200, {"ok": True})])
    call, sleeps = FakeCall(), Sleeps()
    assert _in_call(call, lambda: client(server, sleep=sleeps).get("/repos/acme/web")) == {"ok": True}
    assert len(call.waits) == 2 and sleeps == [] and len(server.seen) == 3
    pauses = [d for d in call.details if "trying again in" in d]
    assert len(pauses) == 2 and "answered 503" in pauses[0], call.details


@pytest.mark.parametrize("first", [Reply(503, {"message": ""}), Reply(action="drop")], ids=["status", "dropped"])
def test_a_call_cancelled_during_a_retry_pause_sends_nothing_more(serve: Callable[..., Server], first: Reply) -> None:
    server = serve([first, Reply(200, {"ok": True})])
    call = FakeCall(cancel_at_pause=1)
    with pytest.raises(forge.ForgeError) as caught:
        _in_call(call, lambda: client(server).get("/repos/acme/web"))
    assert len(server.seen) == 1 and len(call.waits) == 1
    assert caught.value.code == "FORGE_UNAVAILABLE"
    assert caught.value.message == f"madtea stopped GET /repos/acme/web to {server.host} because the call " \
                                   "was cancelled.", caught.value.message


def test_a_cancelled_call_sends_no_request(serve: Callable[..., Server]) -> None:
    server = serve([Reply(200, {"ok": True})])
    with pytest.raises(forge.ForgeError) as caught:
        _in_call(FakeCall(cancel_at_pause=0), lambda: client(server).get("/repos/acme/web"))
    assert server.seen == [] and "because the call was cancelled." in caught.value.message


def test_no_request_starts_while_madtea_shuts_down(serve: Callable[..., Server],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    server = serve([Reply(200, {"ok": True})])
    closing = threading.Event()
    closing.set()
    monkeypatch.setattr(forge, "_CLOSING", closing)  # forge.end_requests() sets the process's own, for good
    with pytest.raises(forge.ForgeError) as caught:
        client(server).get("/repos/acme/web")
    assert server.seen == [] and caught.value.transient
    assert caught.value.message == f"madtea stopped GET /repos/acme/web to {server.host} because it is shutting down."


@pytest.mark.parametrize("method", ["POST", "PATCH"])
def test_writes_are_never_retried(serve: Callable[..., Server], method: str) -> None:
    server = serve([Reply(503, {"message": ""}), Reply(200, {"ok": True})])
    with pytest.raises(forge.ForgeError) as caught:
        client(server).send(method, "/repos/acme/web/issues/1", json={"title": "x"})
    assert caught.value.code == "FORGE_UNAVAILABLE" and len(server.seen) == 1


def test_put_and_delete_are_retried(serve: Callable[..., Server]) -> None:
    server = serve([Reply(502, {}), Reply(204)])
    client(server).delete("/repos/acme/web/issues/1/labels/3")
    server2 = serve([Reply(504, {}), Reply(200, [])])
    client(server2).put("/repos/acme/web/issues/1/labels", json={"labels": [1]})
    assert len(server.seen) == len(server2.seen) == 2
    assert server2.seen[1].json == {"labels": [1]}


# --------------------------------------------------------------------------- dropped connections and timeouts

def test_dropped_connection_is_retried_for_get_and_reported_for_post(serve: Callable[..., Server]) -> None:
    server = serve([Reply(action="drop"), Reply(200, {"ok": 1})])
    assert client(server).get("/repos/acme/web") == {"ok": 1}
    assert len(server.seen) == 2

    post = serve([Reply(action="drop")])
    with pytest.raises(forge.ForgeError) as caught:
        client(post).post("/repos/acme/web/issues", json={"title": "x"})
    assert caught.value.code == "FORGE_UNAVAILABLE" and caught.value.transient
    assert "dropped" in caught.value.message and "may or may not" in caught.value.message
    assert len(post.seen) == 1


def test_truncated_body_is_unavailable(serve: Callable[..., Server]) -> None:
    server = serve([Reply(200, {"id": 1}, action="truncate")])
    with pytest.raises(forge.ForgeError) as caught:
        client(server, retries=1).get("/repos/acme/web/issues/1")
    assert caught.value.code == "FORGE_UNAVAILABLE" and "dropped" in caught.value.message
    assert len(server.seen) == 2


def test_connection_refused_is_clear(serve: Callable[..., Server]) -> None:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    api = forge.Client(f"http://127.0.0.1:{port}/api/v1", f"127.0.0.1:{port}", TOKEN, sleep=Sleeps())
    with pytest.raises(forge.ForgeError) as caught:
        api.get("/version")
    assert caught.value.code == "FORGE_UNAVAILABLE"
    assert "Could not connect" in caught.value.message and "was not sent" in caught.value.message


def test_overall_deadline_bounds_a_slow_server(serve: Callable[..., Server]) -> None:
    server = serve([Reply(200, {"ok": 1}, delay=1.0)])
    started = time.monotonic()
    with pytest.raises(forge.ForgeError) as caught:
        client(server, timeout=5, total_timeout=0.3).get("/repos/acme/web")
    assert time.monotonic() - started < 0.9
    assert caught.value.code == "FORGE_UNAVAILABLE" and "overall time limit" in caught.value.message


# --------------------------------------------------------------------------- create with look-up

def test_create_timeout_looks_up_before_any_retry(serve: Callable[..., Server]) -> None:
    made: list[dict[str, Any]] = []

    def respond(seen: Seen) -> Reply:
        if seen.method == "POST":
            made.append({"number": len(made) + 1, "title": seen.json["title"]})
            return Reply(201, made[-1], delay=0.6)  # created, but answered too late
        return Reply(200, [m for m in made if m["title"] == seen.query.get("q")])

    server = serve(respond)
    api = client(server, timeout=0.2)

    def lookup() -> Any:
        found = api.get("/repos/acme/web/issues", params={"q": "Login fails"})
        return found[0] if found else None

    result = api.create("/repos/acme/web/issues", {"title": "Login fails"}, lookup=lookup)
    assert result == forge.Created({"number": 1, "title": "Login fails"}, recovered=True)
    assert [s.method for s in server.seen] == ["POST", "GET"]
    assert len(made) == 1


def test_create_retries_only_when_the_lookup_finds_nothing(serve: Callable[..., Server]) -> None:
    server = serve([Reply(502, body=b"bad gateway"), Reply(201, {"number": 5})])
    lookups: list[int] = []
    api = client(server)
    result = api.create("/repos/acme/web/issues", {"title": "x"}, lookup=lambda: lookups.append(1))
    assert result == forge.Created({"number": 5}, recovered=False)
    assert lookups == [1] and [s.method for s in server.seen] == ["POST", "POST"]


def test_a_create_cancelled_before_its_second_post_says_nothing_was_created(serve: Callable[..., Server]) -> None:
    server = serve([Reply(502, body=b"bad gateway"), Reply(201, {"number": 5})])
    call = FakeCall(cancel_at_pause=1)
    with pytest.raises(forge.ForgeError) as caught:
        _in_call(call, lambda: client(server).create("/repos/acme/web/issues", {"title": "x"}, lookup=lambda: None))
    assert [s.method for s in server.seen] == ["POST"] and len(call.waits) == 1
    assert caught.value.outcome == "absent" and caught.value.message.endswith(
        " A look-up right after found nothing created, and madtea did not try again because the call was cancelled.")


def test_create_without_lookup_and_non_transient_failures(serve: Callable[..., Server]) -> None:
    server = serve([Reply(action="drop")])
    with pytest.raises(forge.ForgeError) as caught:
        client(server).create("/repos/acme/web/issues", {"title": "x"})
    assert "may or may not have been created" in caught.value.message and caught.value.outcome == "unknown"
    assert len(server.seen) == 1

    rejected = serve([Reply(422, {"message": "[Title]: Required"})])
    with pytest.raises(forge.ForgeError) as caught:
        client(rejected).create("/repos/acme/web/issues", {}, lookup=lambda: pytest.fail("no look-up"))
    assert caught.value.code == "BAD_ARGUMENT"

    # A 201 whose body broke off did create the object: no second POST.
    unreadable = serve([Reply(201, body=b'{"number": 9, "ti', headers={"Content-Type": "application/json"})])
    with pytest.raises(forge.ForgeError) as caught:
        client(unreadable).create("/repos/acme/web/issues", {"title": "x"}, lookup=lambda: None)
    assert len(unreadable.seen) == 1

    failing = serve([Reply(500, {"message": ""})])
    with pytest.raises(forge.ForgeError) as caught:
        client(failing).create("/repos/acme/web/issues", {"title": "x"}, lookup=lambda: None)
    assert "found nothing created" in caught.value.message and len(failing.seen) == 1
    assert caught.value.outcome == "absent"


# --------------------------------------------------------------------------- redirects

def test_same_host_redirect_keeps_the_token(serve: Callable[..., Server]) -> None:
    def respond(seen: Seen) -> Reply:
        if seen.path == "/api/v1/repos/old/web":
            return Reply(301, headers={"Location": "/api/v1/repos/new/web"})
        return Reply(200, {"full_name": "new/web"})

    server = serve(respond)
    assert client(server).get("/repos/old/web") == {"full_name": "new/web"}
    assert [s.headers.get("authorization") for s in server.seen] == [f"token {TOKEN}"] * 2


def test_cross_host_redirect_never_carries_the_token(serve: Callable[..., Server]) -> None:
    other = serve([Reply(200, {"from": "other"})])
    home = serve([Reply(302, headers={"Location": f"{other.url}/download/1"})])
    assert client(home).get("/repos/acme/web/releases/assets/1") == {"from": "other"}
    assert home.seen[0].headers["authorization"] == f"token {TOKEN}"
    assert len(other.seen) == 1 and "authorization" not in other.seen[0].headers

    # Bouncing back to the token's host does not bring the token back either.
    back = serve([Reply(200, {"ok": 1})])
    hop = serve(lambda seen: Reply(307, headers={"Location": f"{back.url}/api/v1/x"}))
    start = serve([Reply(302, headers={"Location": f"{hop.url}/y"})])
    api = forge.Client(start.api, start.host, TOKEN, sleep=Sleeps())
    api.get("/repos/acme/web")
    assert "authorization" not in hop.seen[0].headers and "authorization" not in back.seen[0].headers


@pytest.mark.parametrize("status", [301, 307, 308])
def test_patch_redirect_on_the_same_host_is_reissued_whole(serve: Callable[..., Server], status: int) -> None:
    def respond(seen: Seen) -> Reply:
        if "/old/" in seen.path:
            return Reply(status, headers={"Location": seen.path.replace("/old/", "/new/")})
        return Reply(201, {"body": seen.json["body"]})

    server = serve(respond)
    assert client(server).patch("/repos/old/web/issues/4", json={"body": "hi"}) == {"body": "hi"}
    second = server.seen[1]
    assert (second.method, second.path, second.json) == ("PATCH", "/api/v1/repos/new/web/issues/4", {"body": "hi"})
    assert second.headers["authorization"] == f"token {TOKEN}"


def test_write_redirects_that_madtea_refuses(serve: Callable[..., Server]) -> None:
    other = serve([Reply(200, {})])
    away = serve([Reply(307, headers={"Location": f"{other.url}/api/v1/repos/acme/web/issues/4"})])
    with pytest.raises(forge.ForgeError) as caught:
        client(away).patch("/repos/acme/web/issues/4", json={"body": "x"})
    assert caught.value.code == "OUT_OF_SCOPE" and "another host" in caught.value.message
    assert other.seen == []

    post302 = serve([Reply(302, headers={"Location": "/api/v1/elsewhere"})])
    with pytest.raises(forge.ForgeError) as caught:
        client(post302).post("/repos/acme/web/issues", json={"title": "x"})
    assert caught.value.code == "FORGE_UNAVAILABLE" and "nothing was re-sent" in caught.value.message
    assert len(post302.seen) == 1

    loop = serve(lambda seen: Reply(302, headers={"Location": seen.path}))
    with pytest.raises(forge.ForgeError) as caught:
        client(loop).get("/repos/acme/web")
    assert "more than 5 times" in caught.value.message
    assert len(loop.seen) == forge.MAX_REDIRECTS + 1


def test_the_funnel_refuses_tokens_in_headers_and_urls() -> None:
    with pytest.raises(forge.ForgeError) as caught:
        forge.request("GET", "http://127.0.0.1:9/api/v1/user", headers={"Authorization": f"token {TOKEN}"})
    assert caught.value.code == "BAD_ARGUMENT" and TOKEN not in str(caught.value)
    with pytest.raises(forge.ForgeError) as caught:
        forge.request("GET", f"http://user:{TOKEN}@127.0.0.1:9/api/v1/user")
    assert "must not carry credentials" in caught.value.message and TOKEN not in caught.value.message
    with pytest.raises(forge.ForgeError):
        forge.request("GET", "file:///etc/passwd")


# --------------------------------------------------------------------------- TLS

def test_tls_verification_is_always_on() -> None:
    context = forge._tls_context(None)
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert context.minimum_version >= ssl.TLSVersion.TLSv1_2


def test_a_bad_ca_file_is_a_clear_error_not_a_fallback(tmp_path: Path) -> None:
    missing = tmp_path / "nope.pem"
    api = forge.Client("https://127.0.0.1:9/api/v1", "127.0.0.1:9", TOKEN, ca_file=str(missing), sleep=Sleeps())
    with pytest.raises(forge.ForgeError) as caught:
        api.get("/version")
    assert caught.value.code == "BAD_ARGUMENT"
    assert str(missing) in caught.value.message and "never falls back" in caught.value.message
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a certificate")
    with pytest.raises(forge.ForgeError) as caught:
        forge.request("GET", "https://127.0.0.1:9/api/v1/version", ca_file=str(garbage))
    assert caught.value.code == "BAD_ARGUMENT" and api.requests_made == 0


@pytest.fixture
def tls_pair(tmp_path: Path) -> tuple[ssl.SSLContext, Path]:
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed, so no test certificate can be made")
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True,
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    return context, cert


def test_real_tls_with_a_per_host_ca_file(serve: Callable[..., Server], tls_pair: tuple[ssl.SSLContext, Path]) -> None:
    context, cert = tls_pair
    server = serve([Reply(200, {"version": "1.25.4"})], tls=context)
    with pytest.raises(forge.ForgeError) as caught:
        client(server).get("/version")
    assert caught.value.code == "FORGE_UNAVAILABLE" and "The TLS connection to" in caught.value.message
    assert client(server, ca_file=str(cert)).get("/version") == {"version": "1.25.4"}
    assert server.seen[-1].headers["authorization"] == f"token {TOKEN}"


def test_https_to_http_redirect_is_refused(serve: Callable[..., Server],
                                           tls_pair: tuple[ssl.SSLContext, Path]) -> None:
    context, cert = tls_pair
    plain = serve([Reply(200, {})])
    server = serve([Reply(301, headers={"Location": f"{plain.url}/api/v1/version"})], tls=context)
    with pytest.raises(forge.ForgeError) as caught:
        client(server, ca_file=str(cert)).get("/version")
    assert "never downgrades TLS" in caught.value.message and plain.seen == []


# --------------------------------------------------------------------------- paths and confinement

def test_repo_path_validates_and_quotes() -> None:
    assert forge.repo_path("acme", "web") == "/repos/acme/web"
    assert forge.repo_path("a-b.c_d", "Web.2", "issues", 12, "comments") == "/repos/a-b.c_d/Web.2/issues/12/comments"
    assert forge.repo_path("acme", "web", "branches", "feat/x y?") == "/repos/acme/web/branches/feat%2Fx%20y%3F"
    assert forge.repo_path("acme", "web", "contents", "%2e%2e") == "/repos/acme/web/contents/%252e%252e"
    for owner, repo in [(".", "web"), ("acme", ".."), ("ac/me", "web"), ("acme", "web.git"), ("acme", "web.WIKI"),
                        ("", "web"), ("acme", "we b"), ("acmé", "web"), ("acme", "web%2f")]:
        with pytest.raises(forge.ForgeError) as caught:
            forge.repo_path(owner, repo)
        assert caught.value.code == "BAD_ARGUMENT"
    for segment in ["..", ".", ""]:
        with pytest.raises(forge.ForgeError):
            forge.repo_path("acme", "web", segment)


def test_api_path_keeps_every_name_in_its_own_segment() -> None:
    hostile = {"..%2F": "..%252F", "%2e%2e": "%252e%252e", "a/b": "a%2Fb", "a?b=1": "a%3Fb%3D1", "a#b": "a%23b",
               "a:b@c;d,e": "a%3Ab%40c%3Bd%2Ce", "a b": "a%20b"}
    for name, spelt in hostile.items():
        assert forge.api_path("orgs", name, "labels") == f"/orgs/{spelt}/labels"
    assert forge.api_path("notifications", "threads", 7) == "/notifications/threads/7"
    for segment in ["..", ".", "", True, None]:
        with pytest.raises(forge.ForgeError) as caught:
            forge.api_path("orgs", segment)  # type: ignore[arg-type]
        assert caught.value.code == "BAD_ARGUMENT"


def test_client_refuses_paths_that_leave_the_api(serve: Callable[..., Server]) -> None:
    server = serve([Reply(200, {})])
    api = client(server)
    for path in ["/repos/acme/web/../../admin", "/repos/%2e%2e/x", "/a/%252E%252E/b", "/a\\..\\b"]:
        with pytest.raises(forge.ForgeError) as caught:
            api.get(path)
        assert caught.value.code == "OUT_OF_SCOPE", path
    for path in ["repos/acme/web", "//evil.test/x", "/repos/acme/web?x=1", "/repos/a b"]:
        with pytest.raises(forge.ForgeError) as caught:
            api.get(path)
        assert caught.value.code == "BAD_ARGUMENT", path
    assert server.seen == []


def test_repo_client_is_confined_by_construction(serve: Callable[..., Server]) -> None:
    server = serve(lambda seen: Reply(200, {"path": seen.path}))
    repo = forge.RepoClient(client(server), "acme", "web")
    assert repo.get("issues/12") == {"path": "/api/v1/repos/acme/web/issues/12"}
    assert repo.get() == {"path": "/api/v1/repos/acme/web"}
    assert repo.get(("branches", "feat/x")) == {"path": "/api/v1/repos/acme/web/branches/feat%2Fx"}
    assert repo.path("branches/feat%2Fx") == "/repos/acme/web/branches/feat%2Fx"
    escapes = ["../other", "issues/../../../admin", "/repos/evil/x", "%2e%2e/evil", "%252e%252e/evil",
               "issues/%2e%2e%2f%2e%2e/x", "a%5c..%5cb", "http://evil.test/x", "issues//3", "./issues",
               ("..", "evil"), ("issues", "")]
    for sub in escapes:
        with pytest.raises(forge.ForgeError) as caught:
            repo.get(sub)
        assert caught.value.code == "OUT_OF_SCOPE", sub
    assert len(server.seen) == 3

    reader = forge.RepoClient(client(server), "acme", "web", read_only=True)
    with pytest.raises(forge.ForgeError) as caught:
        reader.post("issues", json={"title": "x"})
    assert caught.value.code == "OUT_OF_SCOPE"
    with pytest.raises(forge.ForgeError):
        reader.create("issues", {"title": "x"})
    assert len(server.seen) == 3


def test_repo_client_verbs_take_the_segments_as_arguments(serve: Callable[..., Server]) -> None:
    server = serve(lambda seen: Reply(200, {"path": seen.path, "query": seen.query}))
    repo = forge.RepoClient(client(server), "acme", "web")
    assert repo.get("branches", "feat/x") == {"path": "/api/v1/repos/acme/web/branches/feat%2Fx", "query": {}}
    assert repo.get("issues", 12, "comments", params={"page": 2})["path"] == "/api/v1/repos/acme/web/issues/12/comments"
    assert repo.patch("issues", 12, json={"title": "x"})["path"] == "/api/v1/repos/acme/web/issues/12"
    assert repo.get(12) == {"path": "/api/v1/repos/acme/web/12", "query": {}}
    assert "/api/v1/repos/acme/web/pulls/3.diff" in repo.get_text("pulls", "3.diff")
    for segments in (("..", "evil"), ("issues", ""), ("issues", "."), ("issues", None), ("issues", True)):
        with pytest.raises(forge.ForgeError) as caught:
            repo.get(*segments)
        assert caught.value.code == "OUT_OF_SCOPE", segments
    assert len(server.seen) == 5
    with pytest.raises(TypeError):
        client(server).get("/repos", "acme")  # the unconfined client takes one API path
    assert len(server.seen) == 5


def test_repo_client_refuses_redirects_out_of_the_repo(serve: Callable[..., Server]) -> None:
    server = serve(lambda seen: Reply(301, headers={"Location": seen.path.replace("/acme/web", "/acme/moved")})
                   if "/acme/web" in seen.path else Reply(200, {}))
    repo = forge.RepoClient(client(server), "acme", "web")
    with pytest.raises(forge.ForgeError) as caught:
        repo.get("issues")
    assert caught.value.code == "OUT_OF_SCOPE" and "/repos/acme/moved/issues" in caught.value.message
    assert len(server.seen) == 1
    # The same redirect on the unconfined client is an ordinary rename.
    assert client(server).get("/repos/acme/web/issues") == {}


def test_repo_client_paginates_inside_the_repo(serve: Callable[..., Server]) -> None:
    server = serve(_listing(60, 50, root_url=None, with_total=True, with_link=False))
    items, total = forge.RepoClient(client(server), "acme", "web").paginate("labels")
    assert (len(items), total) == (60, 60)
    assert {s.path for s in server.seen} == {"/api/v1/repos/acme/web/labels"}


def test_a_redirect_with_an_encoded_dot_segment_does_not_leave_the_repository() -> None:
    """A redirect to /repos/acme/web/%2e%2e/%2e%2e/acme/secret passed the prefix check of the confined client."""
    import http.server
    import threading

    import forge

    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.path)
            if self.path.startswith("/api/v1/repos/acme/web/issues"):
                self.send_response(301)
                self.send_header("Location", "/api/v1/repos/acme/web/%2e%2e/%2E%2e/acme/secret/issues")
                self.send_header("Content-Length", "0")
                self.end_headers()
            else:
                body = b"[]"
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        host = f"127.0.0.1:{server.server_port}"
        client = forge.Client(f"http://{host}/api/v1", host, "a" * 40, retries=0)
        scoped = forge.RepoClient(client, "acme", "web", read_only=True)
        with pytest.raises(forge.ForgeError) as raised:
            scoped.get("issues")
        assert raised.value.code == "OUT_OF_SCOPE"
        assert seen == ["/api/v1/repos/acme/web/issues"]
    finally:
        server.shutdown()
        server.server_close()


# --------------------------------------------------------------------------- version and flavour

@pytest.mark.parametrize("version,flavour", [
    ("1.25.4", "gitea"), ("1.26.0+dev-12-gabc", "gitea"), ("15.0.3+gitea-1.22.0", "forgejo"),
    ("17.0.0-dev-123-d883bd8f+gitea-1.22.0", "forgejo"), ("7.0.0", "forgejo"),
])
def test_flavour_of(version: str, flavour: str) -> None:
    assert forge.flavour_of(version) == flavour


def test_version_and_flavour_are_cached_per_client(serve: Callable[..., Server]) -> None:
    server = serve([Reply(200, {"version": "15.0.3+gitea-1.22.0"})])
    api = client(server)
    assert (api.flavour(), api.version(), api.compat_version()) == ("forgejo", "15.0.3+gitea-1.22.0", "1.22.0")
    assert len(server.seen) == 1 and server.seen[0].path == "/api/v1/version"
    error = api.not_supported("Listing workflow runs", "this forge has no such endpoint")
    assert error.code == "NOT_SUPPORTED"
    assert error.message.startswith("Listing workflow runs is not supported by Forgejo 15.0.3+gitea-1.22.0 at ")

    gitea = serve([Reply(200, {"version": "1.25.4"})])
    assert client(gitea).flavour() == "gitea"
    broken = serve([Reply(200, {"nope": 1})])
    with pytest.raises(forge.ForgeError):
        client(broken).version()


# --------------------------------------------------------------------------- resolution and config

def test_resolve_target_from_origin_parts(tmp_path: Path) -> None:
    none: dict[str, Any] = {}
    assert forge.resolve_target("Git.Example.com", None, "https", "", config=none) == forge.ForgeTarget(
        "git.example.com", "https://git.example.com/api/v1", None)
    assert forge.resolve_target("git.example.com", 2222, "ssh", "", config=none).api_base == \
        "https://git.example.com/api/v1"
    assert forge.resolve_target("git.example.com", None, "scp", "", config=none).host == "git.example.com"
    assert forge.resolve_target("git.example.com", 443, "https", "/gitea/", config=none).api_base == \
        "https://git.example.com/gitea/api/v1"
    assert forge.resolve_target("git.example.com", 3000, "https", "", config=none) == forge.ForgeTarget(
        "git.example.com:3000", "https://git.example.com:3000/api/v1", None)
    assert forge.resolve_target("127.0.0.1", 8123, "http", "", config=none) == forge.ForgeTarget(
        "127.0.0.1:8123", "http://127.0.0.1:8123/api/v1", None)
    assert forge.resolve_target("::1", 8123, "http", "", config=none).api_base == "http://[::1]:8123/api/v1"
    for bad in [("evil.test/x", "https"), ("a@b", "https"), ("git.example.com", "ftp")]:
        with pytest.raises(forge.ForgeError):
            forge.resolve_target(bad[0], None, bad[1], "", config=none)
    with pytest.raises(forge.ForgeError):
        forge.resolve_target("git.example.com", None, "https", "a/../b", config=none)


def test_per_host_overrides_from_the_config_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    home_config = Path.home() / ".config"
    assert forge.config_path() == home_config / "madtea" / "config.json"  # the seal sets XDG_CONFIG_HOME there
    xdg = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg))
    assert forge.config_path() == xdg / "madtea" / "config.json"
    assert forge.load_config() == {}
    forge.config_path().parent.mkdir(parents=True)
    forge.config_path().write_text(json.dumps({"hosts": {
        "Git.Example.com": {"api_url": "https://git.example.com:8443/forge/api/v1/", "ca_file": "ca/corp.pem"},
        "127.0.0.1:8123": {"ca_file": "/etc/abs.pem"},
    }}))
    target = forge.resolve_target("git.example.com", None, "ssh", "")
    assert target == forge.ForgeTarget("git.example.com", "https://git.example.com:8443/forge/api/v1",
                                       str(xdg / "madtea" / "ca" / "corp.pem"))
    assert forge.resolve_target("127.0.0.1", 8123, "http", "").ca_file == "/etc/abs.pem"
    assert forge.resolve_target("other.example.com", None, "https", "").ca_file is None

    monkeypatch.setenv("XDG_CONFIG_HOME", "relative/ignored")
    assert forge.config_path() == home_config / "madtea" / "config.json"

    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg))
    forge.config_path().write_text("{not json")
    with pytest.raises(forge.ForgeError) as caught:
        forge.resolve_target("git.example.com", None, "https", "")
    assert caught.value.code == "BAD_ARGUMENT" and "not valid JSON" in caught.value.message
    forge.config_path().write_text(json.dumps({"hosts": {"h": {"api_url": "https://u:p@h/api/v1"}}}))
    with pytest.raises(forge.ForgeError) as caught:
        forge.resolve_target("h", None, "https", "")
    assert "credentials" in caught.value.message and ":p@" not in caught.value.message
    forge.config_path().write_text(json.dumps({"hosts": {"h": {"api_url": 3}}}))
    with pytest.raises(forge.ForgeError):
        forge.resolve_target("h", None, "https", "")


# --------------------------------------------------------------------------- tokens

def test_token_env_var_names() -> None:
    assert forge.token_env_var("gitea.example.com") == "MADTEA_TOKEN_GITEA_EXAMPLE_COM"
    assert forge.token_env_var("127.0.0.1:8123") == "MADTEA_TOKEN_127_0_0_1_8123"
    assert forge.token_env_var("code-berg.org") == "MADTEA_TOKEN_CODE_BERG_ORG"


def test_token_for_environment_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    assert forge.token_for("gitea.example.com", "gitea.example.com") == (None, "none")
    monkeypatch.setenv("MADTEA_TOKEN", " generic\n")
    assert forge.token_for("gitea.example.com", "gitea.example.com") == ("generic", "env:MADTEA_TOKEN")
    assert forge.token_for("Gitea.Example.com", "gitea.example.COM") == ("generic", "env:MADTEA_TOKEN")
    # The generic token never travels to another host, nor without a launch host.
    assert forge.token_for("codeberg.org", "gitea.example.com") == (None, "none")
    assert forge.token_for("gitea.example.com") == (None, "none")
    monkeypatch.setenv("MADTEA_TOKEN_CODEBERG_ORG", "cb")
    assert forge.token_for("codeberg.org", "gitea.example.com") == ("cb", "env:MADTEA_TOKEN_CODEBERG_ORG")
    monkeypatch.setenv("MADTEA_TOKEN_GITEA_EXAMPLE_COM", "specific")
    assert forge.token_for("gitea.example.com", "gitea.example.com") == (
        "specific", "env:MADTEA_TOKEN_GITEA_EXAMPLE_COM")
    monkeypatch.setenv("MADTEA_TOKEN_127_0_0_1_8123", "local")
    assert forge.token_for("127.0.0.1:8123") == ("local", "env:MADTEA_TOKEN_127_0_0_1_8123")
    monkeypatch.setenv("MADTEA_TOKEN_CODEBERG_ORG", "  ")
    assert forge.token_for("codeberg.org", "gitea.example.com") == (None, "none")


def test_token_for_consults_stores_after_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    class Broken:
        name = "broken"

        def get(self, host: str) -> str | None:
            raise OSError("keychain locked")

    class Memory:
        name = "memory"

        def __init__(self) -> None:
            self.asked: list[str] = []

        def get(self, host: str) -> str | None:
            self.asked.append(host)
            return "stored" if host == "git.example.com" else None

    memory = Memory()
    stores = [Broken(), memory]
    assert forge.token_for("Git.Example.com", stores=stores) == ("stored", "memory")
    assert forge.token_for("other.test", stores=stores) == (None, "none")
    monkeypatch.setenv("MADTEA_TOKEN_GIT_EXAMPLE_COM", "env")
    assert forge.token_for("git.example.com", stores=stores) == ("env", "env:MADTEA_TOKEN_GIT_EXAMPLE_COM")
    assert memory.asked == ["git.example.com", "other.test"]
    monkeypatch.setattr(forge, "_STORES", [])
    forge.register_store(memory)
    forge.register_store(memory)
    assert forge.credential_stores() == (memory,)
    assert forge.token_for("git.example.com") == (
        "env", "env:MADTEA_TOKEN_GIT_EXAMPLE_COM")


# --------------------------------------------------------------------------- the token canary

def test_the_token_never_appears_in_errors_or_reprs(serve: Callable[..., Server]) -> None:
    echo = f"invalid token {TOKEN} for Authorization: token {TOKEN}"
    server = serve([
        Reply(401, {"message": echo}),
        Reply(500, body=f"<html><title>oops {TOKEN}</title></html>".encode(), headers={"Content-Type": "text/html"}),
        Reply(422, body=echo.encode(), headers={"Content-Type": "text/plain"}),
        Reply(200, body=f'{{"broken": "{TOKEN}'.encode()),
        Reply(action="drop"),
    ])
    api = client(server, retries=0)
    errors: list[forge.ForgeError] = []
    for _ in range(5):
        try:
            api.post("/repos/acme/web/issues", json={"title": "x"})
        except forge.ForgeError as exc:
            errors.append(exc)
    try:
        api.send("GET", f"/repos/acme/web/{TOKEN}/x?")
    except forge.ForgeError as exc:
        errors.append(exc)
    try:
        forge.Client(server.api, server.host, TOKEN + " bad")
    except forge.ForgeError as exc:
        errors.append(exc)
    assert len(errors) == 7
    texts = [repr(api), repr(forge.RepoClient(api, "acme", "web")), str(api.__dict__), repr(vars(forge))]
    for exc in errors:
        texts += [str(exc), repr(exc), json.dumps(exc.to_dict()), "".join(traceback.format_exception(exc))]
    for text in texts:
        assert TOKEN not in text
    assert server.seen[0].headers["authorization"] == f"token {TOKEN}"  # it was really sent
