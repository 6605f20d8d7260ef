"""Every HTTP request madtea makes to a Gitea or Forgejo server (API v1).

One funnel, :func:`request`, opens every connection: JSON in and out, the
token as an ``Authorization: token …`` header that never follows a redirect
to another host, a per-operation socket timeout plus an overall deadline,
verified TLS (optionally against a per-host CA file, never unverified), and
bounded, jittered retries honouring ``Retry-After`` for idempotent methods
only. :class:`Client` adds paths relative to the API base, error mapping to
:class:`ForgeError` with stable codes, pagination that survives the server's
silent page-size clamp, version and flavour detection, and creates that look
for the created object before they ever POST twice. :class:`RepoClient` is a
client confined by construction to ``/repos/{owner}/{repo}/``.

Host resolution (:func:`resolve_target`) and token lookup (:func:`token_for`)
take plain values. Of madtea's modules this one imports only gitops: for the
URL credential scrubber both use, for the running call (:data:`gitops.CALL`),
whose cancel, deadline and progress reach every request, for the process
runner (:func:`gitops.run_tool`) that starts the credential tools, and for
the one reader and writer of private files. Tokens are keyed by host and kept
in the OS credential store (or the ``keyring`` package), in a 0600 plaintext
file only with the user's consent; the credential tools run as time-limited
subprocesses with the token on stdin.

The sections, in file order:

  constants, errors and scrubbing   ForgeError and its codes; secrets kept out
                                    of every text
  responses                         Response, Created
  the funnel                        ``request``: TLS, proxies, the watchdog,
                                    redirects, retries
  error mapping, paths              ``map_error``; ``api_path``, ``repo_path``
  clients                           Client and RepoClient
  resolution                        ForgeTarget, the config, ``resolve_target``
  tokens and credential stores      a second job in this module: the OS stores
                                    (security, secret-tool, Windows Credential
                                    Manager through ctypes), keyring, the 0600
                                    file, the logins record; ``token_for``,
                                    ``store_token``, ``delete_token``
  tea's logins                      reading tea's config for its logins

Limits, stated once: the forge has no idempotency keys, so a create's
look-up is only as good as the caller's ``lookup``. A socket timeout bounds
one blocking operation, not a trickled answer, so a watchdog thread ends any
connection still open at its request's deadline (headers and body alike);
only name resolution, the TCP connect and the TLS handshake are bounded by
the socket timeout alone (never longer than the time left).
"""
from __future__ import annotations

__all__ = [
    "ERROR_CODES",
    "PAGE_SIZE",
    "combined_state",
    "ForgeError",
    "Response",
    "Created",
    "request",
    "request_count",
    "end_requests",
    "deadline_seconds",
    "map_error",
    "scrub",
    "redact",
    "known_tokens",
    "sanitise_snippet",
    "flavour_of",
    "release_of",
    "SINCE",
    "api_path",
    "repo_path",
    "Client",
    "RepoClient",
    "ForgeTarget",
    "config_path",
    "load_config",
    "resolve_target",
    "CredentialStore",
    "StoreFailure",
    "SecurityStore",
    "SecretToolStore",
    "WinCredStore",
    "KeyringStore",
    "FileStore",
    "register_store",
    "credential_stores",
    "set_diagnostics",
    "describe_source",
    "hosts_path",
    "read_private_json",
    "is_loopback",
    "logins_path",
    "host_key",
    "token_env_var",
    "token_for",
    "check_token_text",
    "store_token",
    "delete_token",
    "record_login",
    "forget_login",
    "known_logins",
    "TeaLogin",
    "tea_config_path",
    "parse_tea_logins",
    "read_tea_logins",
    "target_for_url",
]

import datetime as _dt
import email.utils
import functools
import heapq
import html
import http.client
import ipaddress
import itertools
import json as _json
import os
import random
import re
import socket
import ssl
import sys
import threading
import time
import unicodedata
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, cast

import gitops

if TYPE_CHECKING:
    import ctypes
    from types import ModuleType
    from typing import TypedDict

    from typing_extensions import Unpack

    from gitops import Json

    class _ClientOptions(TypedDict, total=False):
        """What :meth:`Client.from_target` passes on to :class:`Client`."""

        timeout: float
        total_timeout: float | None
        retries: int
        user_agent: str
        sleep: Callable[[float], None]
        versions: dict[str, str]

    class _Advapi32(Protocol):
        """The four functions of Windows' advapi32 that :class:`WinCredStore` calls (BOOL answers)."""

        def CredReadW(self, target: str, kind: int, flags: int, found: object, /) -> int: ...
        def CredWriteW(self, cred: object, flags: int, /) -> int: ...
        def CredDeleteW(self, target: str, kind: int, flags: int, /) -> int: ...
        def CredFree(self, found: object, /) -> object: ...

_T = TypeVar("_T")
_Where = TypeVar("_Where")  # what a client's ``send`` takes: an API path, or a sub-path inside one repository

# --------------------------------------------------------------------------- constants

ERROR_CODES = (
    "NOT_FOUND_OR_NO_ACCESS",
    "NOT_ALLOWED",
    "AUTH_MISSING",
    "SCOPE_MISSING",
    "FORGE_UNAVAILABLE",
    "NOT_SUPPORTED",
    "MERGE_BLOCKED",
    "MERGE_CONFLICT",
    "HEAD_MOVED",
    "OUT_OF_SCOPE",
    "BAD_ARGUMENT",
    "STALE_BODY",
    "CONFLICT",
)

PAGE_SIZE = 50  # Gitea's and Forgejo's default MAX_RESPONSE_ITEMS; larger asks are clamped silently.
DEFAULT_TIMEOUT = 30.0  # seconds per blocking socket operation (connect, one read)
DEFAULT_DEADLINE = 120.0  # seconds for one logical call, retries and redirects included
DEADLINE_ENV = "MADTEA_FORGE_DEADLINE"  # seconds, overriding DEFAULT_DEADLINE for every client
DEFAULT_RETRIES = 2  # so at most three attempts per idempotent call
DEFAULT_USER_AGENT = "madtea"
MAX_REDIRECTS = 5
RETRY_AFTER_CAP = 30.0  # a server asking for longer gets this long, not an unbounded stall
MAX_BODY_BYTES = 32 * 1024 * 1024  # a runaway answer must not exhaust memory
SNIPPET_CHARS = 200
MAX_PAGES = 1000  # 50,000 items: a bound, not an expectation

_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"})
_IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE"})
_RETRY_STATUSES = frozenset({429, 502, 503, 504})
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
# A write is replayed only where HTTP says the method and body are kept (307,
# 308) and on 301, which Gitea sends for a renamed repository before any
# handler ran. 302/303 on a write historically mean "now GET something else".
_WRITE_REPLAY = frozenset({301, 307, 308})

_NAME_RE = re.compile(r"^[A-Za-z0-9._-]+$")
_RESERVED_SUFFIXES = (".git", ".wiki")

# --------------------------------------------------------------------------- errors and scrubbing

class _Secret:
    """Holds a token so that no repr, str or traceback local shows it."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "<redacted>"

    __str__ = __repr__


# Tokens seen by this process, kept wrapped so that even a dump of module
# globals shows "<redacted>"; scrub() removes them from every message.
_SECRETS: list[_Secret] = []
_SECRETS_LOCK = threading.Lock()

_AUTH_HEADER = re.compile(r"(?i)(authorization\s*[:=]\s*)(?:(?:token|bearer|basic)\s+)?[^\s,;]+")
_AUTH_VALUE = re.compile(r"(?i)\b(token|bearer|basic)(\s+|=|:\s*)([A-Za-z0-9._~+/-]{16,}=*)")
_QUERY_TOKEN = re.compile(r"(?i)([?&;](?:access_)?token=)[^&\s#]+")


def _remember_secret(value: str) -> None:
    # Short values would mangle ordinary words if scrubbed everywhere; real
    # tokens are 40 hex characters.
    if len(value) >= 8:
        with _SECRETS_LOCK:
            if all(known.reveal() != value for known in _SECRETS):
                _SECRETS.append(_Secret(value))


def known_tokens() -> list[str]:
    """Every token value this process knows: each ``MADTEA_TOKEN*`` variable's and each one a store gave."""
    values = {value.strip() for name, value in os.environ.items() if name.upper().startswith("MADTEA_TOKEN")}
    with _SECRETS_LOCK:
        values.update(known.reveal() for known in _SECRETS)
    return sorted((v for v in values if len(v) >= 8), key=len, reverse=True)


def redact(text: str, tokens: Sequence[str] | None = None) -> str:
    """*text* with every known token value (or each of *tokens*, gathered once for many texts) replaced by
    ``***``; nothing else changes (forge content)."""
    for secret in known_tokens() if tokens is None else tokens:
        if secret in text:
            text = text.replace(secret, "***")
    return text


def scrub(text: str) -> str:
    """Remove every known token, auth header value and ``user:pass@`` from *text*."""
    text = redact(text)
    text = gitops.hide_userinfo(text)
    text = _AUTH_HEADER.sub(r"\1***", text)
    text = _AUTH_VALUE.sub(lambda m: f"{m.group(1)}{m.group(2)}***", text)
    return _QUERY_TOKEN.sub(r"\1***", text)


def _looks_html(text: str, content_type: str | None = None) -> bool:
    if content_type and "html" in content_type.lower():
        return True
    head = text.lstrip()[:64].lower()
    return head.startswith(("<!doctype html", "<html", "<head", "<body", "<title"))


def _html_text(page: str) -> str:
    """An HTML page's title, or its text without scripts and styles, in work linear in its length.

    Every pattern stops at the next ``<``, and a script's end is looked for once from where it opens: a
    pattern that reads to the end of the page from each unclosed tag is quadratic in a hostile page.
    """
    title = re.search(r"(?i)<title[^<>]*>([^<]*)</title", page)
    if title and title.group(1).strip():
        return html.unescape(title.group(1))
    kept, at, lower = [], 0, page.lower()
    for opened in re.finditer(r"<(script|style)\b", lower):
        if opened.start() < at:
            continue  # inside a script already dropped
        close = lower.find(f"</{opened.group(1)}", opened.end())
        if close < 0:
            break  # never closed: the rest is kept as text
        kept.append(page[at:opened.start()])
        end = page.find(">", close)
        at = len(page) if end < 0 else end + 1
    kept.append(page[at:])
    return html.unescape(re.sub(r"<[^<>]*>", " ", " ".join(kept)))


def sanitise_snippet(data: bytes | str, content_type: str | None = None, limit: int = SNIPPET_CHARS) -> str:
    """A short, single-line, printable, token-free rendering of a server answer.

    HTML is reduced to its title (or its text); control, format and
    bidirectional characters become spaces so a hostile page cannot forge
    madtea's own words.
    """
    text = data[:65536].decode("utf-8", "replace") if isinstance(data, bytes) else data[:65536]
    if _looks_html(text, content_type):
        text = _html_text(text)
    text = "".join(" " if unicodedata.category(ch)[0] in "CZ" and ch != " " else ch for ch in text)
    text = scrub(" ".join(text.split()))
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return text


class ForgeError(Exception):
    """A forge answer or failure, with a stable ``code`` and one plain sentence.

    ``transient`` is true when trying again later may succeed (timeouts,
    dropped connections, 429/502/503/504). The message is scrubbed of tokens.
    """

    def __init__(
        self,
        code: str,
        message: str,
        status: int | None = None,
        method: str | None = None,
        path: str | None = None,
        *,
        transient: bool = False,
        host: str | None = None,
        rule: str | None = None,
    ) -> None:
        message = scrub(message)
        super().__init__(message)
        self.code = code
        self.rule = rule or gitops.rule_at(sys._getframe(1))  # the function that raised it, as guard's refusals
        self.message = message
        self.status = status
        self.method = method
        self.path = scrub(path) if path else path
        self.transient = transient
        self.host = host  # the credential key of the forge that answered, when known
        self.redirected_from: str | None = None  # the host whose redirect led to *host*, when it answered
        # After a create that may have been applied: "unknown" (it may exist), "absent" (a look-up found none).
        self.outcome: str | None = None
        self.plain_http = False  # https failed because the server speaks plain http
        self.config_file: str | None = None  # madtea's config file, when it is what cannot be read
        self.unknown_host = False  # the host's name is known to no name lookup: a typo, not a passing failure

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return (
            f"ForgeError({self.code!r}, {self.message!r}, status={self.status!r}, "
            f"method={self.method!r}, path={self.path!r})"
        )

    def restated(self, message: str) -> ForgeError:
        """The same failure (code, request, host) in *message*: the forge's answer beside what madtea knows."""
        return ForgeError(self.code, message, self.status, self.method, self.path, transient=self.transient,
                          host=self.host, rule=self.rule)

    def to_dict(self) -> dict[str, str | int | None]:
        """The error as plain data for a structured result."""
        return {"code": self.code, "message": self.message, "status": self.status,
                "method": self.method, "path": self.path}


# --------------------------------------------------------------------------- responses

@dataclass(frozen=True, eq=False)
class Response:
    """One final HTTP answer. ``headers`` has lower-cased names; repeats are joined with ", "."""

    status: int
    headers: Mapping[str, str]
    body: bytes
    url: str
    method: str = "GET"
    path: str = ""
    host: str = ""
    attempts: int = 1

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "")

    def text(self) -> str:
        return self.body.decode("utf-8", "replace")

    def json(self) -> Json:
        """The body as JSON; ``None`` for an empty body (a merge answers 200 with nothing)."""
        if not self.body.strip():
            return None
        label = f"{self.method} {self.path}"
        text = self.body.decode("utf-8", "replace")
        if _looks_html(text, self.content_type):
            raise ForgeError(
                "FORGE_UNAVAILABLE",
                f"The forge at {self.host} answered {label} with an HTML page instead of JSON "
                f"({self.status}: {sanitise_snippet(text, 'text/html')}); check the API URL for {self.host}.",
                self.status, self.method, self.path, transient=True,
            )
        try:
            return _json.loads(self.body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise ForgeError(
                "FORGE_UNAVAILABLE",
                f"The forge at {self.host} sent an unreadable JSON answer to {label} "
                f"({self.status}: {sanitise_snippet(text)}).",
                self.status, self.method, self.path, transient=True,
            ) from None


@dataclass(frozen=True)
class Created:
    """The object a create produced; ``recovered`` when a look-up found it after a failed POST."""

    value: Json
    recovered: bool = False


# --------------------------------------------------------------------------- the funnel

_COUNT_LOCK = threading.Lock()
_COUNT = 0


def request_count() -> int:
    """How many HTTP requests this process has sent (for the benchmarks)."""
    return _COUNT


def _bump() -> None:
    global _COUNT
    with _COUNT_LOCK:
        _COUNT += 1


class _Transport(Exception):
    """A failure below HTTP: ``kind`` decides retrying and wording; ``sent`` whether the request left."""

    def __init__(self, kind: str, reason: str, sent: bool) -> None:
        super().__init__(reason)
        self.kind = kind
        self.reason = reason
        self.sent = sent


# Why madtea itself stopped a request, by the kind of _Transport that says so.
_STOPPED_BECAUSE = {"shutdown": "it is shutting down", "cancelled": "the call was cancelled"}


def _stopped(kind: str, sent: bool) -> _Transport:
    return _Transport(kind, _STOPPED_BECAUSE[kind], sent)


def _split_checked(url: str) -> urllib.parse.SplitResult:
    parts = urllib.parse.urlsplit(url)
    shown = _display_url(url)
    if parts.scheme.lower() not in ("http", "https"):
        raise ForgeError("BAD_ARGUMENT", f"Only http and https forge URLs are supported, not {shown}.")
    if "@" in parts.netloc:
        raise ForgeError("BAD_ARGUMENT",
                         f"A forge URL must not carry credentials ({shown}); madtea sends the token as a header.")
    if not parts.hostname:
        raise ForgeError("BAD_ARGUMENT", f"The forge URL {shown} has no host.")
    try:
        parts.port
    except ValueError:
        raise ForgeError("BAD_ARGUMENT", f"The forge URL {shown} has an invalid port.") from None
    if any(ord(ch) < 33 or ord(ch) > 126 for ch in url):
        raise ForgeError("BAD_ARGUMENT", f"The forge URL {shown} must be percent-encoded ASCII without spaces.")
    return parts


def _display_url(url: str) -> str:
    """The URL without credentials, query or fragment, for messages."""
    parts = urllib.parse.urlsplit(url)
    netloc = parts.netloc.rsplit("@", 1)[-1]
    return scrub(f"{parts.scheme}://{netloc}{parts.path}")


def _origin(url: str) -> tuple[str, str, int]:
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or "").lower(), parts.port or (443 if scheme == "https" else 80)


def _within(url: str, scope: str) -> bool:
    if _origin(url) != _origin(scope):
        return False
    path = urllib.parse.urlsplit(url).path
    base = urllib.parse.urlsplit(scope).path.rstrip("/")
    if "\\" in path or any(_escapes(segment) for segment in path.split("/")):
        return False  # an encoded "..", which a server may decode after this prefix check
    return path == base or path.startswith(base + "/")


@functools.lru_cache(maxsize=8)
def _tls_context(ca_file: str | None) -> ssl.SSLContext:
    # A CA file replaces the system store for that host (a private CA), it
    # never loosens checking: hostname checks and CERT_REQUIRED stay on.
    # Cached per path for the process's life: a replaced CA file needs a restart.
    context = ssl.create_default_context(cafile=ca_file) if ca_file else ssl.create_default_context()
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if context.verify_mode != ssl.CERT_REQUIRED or not context.check_hostname:  # pragma: no cover
        raise ssl.SSLError("TLS verification is not enabled")
    return context


def _tls_for(ca_file: str | None, host: str) -> ssl.SSLContext:
    try:
        return _tls_context(ca_file)
    except (OSError, ssl.SSLError, ValueError) as exc:
        reason = sanitise_snippet(getattr(exc, "strerror", None) or str(exc) or type(exc).__name__)
        raise ForgeError(
            "BAD_ARGUMENT",
            f"The CA file {ca_file} configured for {host} cannot be used ({reason}); "
            "madtea never falls back to unverified TLS, so fix ca_file for this host.",
        ) from None


def is_loopback(host: str) -> bool:
    """Whether *host* (a name or address, with or without a port) is this machine."""
    if host.startswith("[") and "]" in host:
        name = host[1 : host.index("]")]
    else:
        name = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    name = name.lower()
    if name in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


class _ProxyHandler(urllib.request.ProxyHandler):
    # Environment proxies are honoured (corporate networks need them), but
    # never for loopback: a proxy cannot reach this machine's 127.0.0.1.
    def proxy_open(self, req: urllib.request.Request, proxy: str, type: str) -> http.client.HTTPResponse | None:
        if is_loopback(req.host):
            return None
        return super().proxy_open(req, proxy, type)


class _Watch:
    """One request's connection, cut when its deadline passes or the process shuts down.

    A socket timeout restarts with every byte, so a forge trickling its answer
    would never trip it; cutting the socket ends a blocked read at once.
    """

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.reason: str | None = None  # "deadline", "shutdown" or "cancelled" once cut
        self.done = False
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()

    def arm(self, sock: socket.socket) -> None:
        with self._lock:
            self._sock = sock
            late = self.reason is not None
        if late:
            _cut(sock)

    def expire(self, reason: str) -> None:
        with self._lock:
            if self.done or self.reason is not None:
                return
            self.reason = reason
            sock = self._sock
        if sock is not None:
            _cut(sock)

    def finish(self) -> None:
        with self._lock:
            self.done = True
            self._sock = None


def _cut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)  # wakes a blocked recv in the reading thread
    except OSError:
        pass  # already closed


_WATCH_CV = threading.Condition()
_WATCHES: list[tuple[float, int, _Watch]] = []  # a heap by deadline; finished entries are dropped lazily
_WATCH_SEQ = itertools.count()
_WATCHER: list[threading.Thread] = []
_CLOSING = threading.Event()


def _watch_until(deadline: float) -> _Watch:
    watch = _Watch(deadline)
    with _WATCH_CV:
        heapq.heappush(_WATCHES, (deadline, next(_WATCH_SEQ), watch))
        if not _WATCHER:
            thread = threading.Thread(target=_watchdog, name="madtea-forge-deadlines", daemon=True)
            _WATCHER.append(thread)
            thread.start()
        _WATCH_CV.notify()
    return watch


def _watchdog() -> None:
    while True:
        with _WATCH_CV:
            while _WATCHES and _WATCHES[0][2].done:
                heapq.heappop(_WATCHES)
            if not _WATCHES:
                _WATCH_CV.wait()
                continue
            wait = _WATCHES[0][0] - time.monotonic()
            if wait > 0:
                _WATCH_CV.wait(wait)
                continue
            watch = heapq.heappop(_WATCHES)[2]
        watch.expire("deadline")


def end_requests() -> None:
    """Cut every open forge connection and refuse new ones: the process is shutting down."""
    _CLOSING.set()
    with _WATCH_CV:
        pending = [entry[2] for entry in _WATCHES]
    for watch in pending:
        watch.expire("shutdown")


def deadline_seconds() -> float:
    """The overall time limit of one forge call: ``MADTEA_FORGE_DEADLINE`` seconds, else the default."""
    return gitops.env_seconds(DEADLINE_ENV, DEFAULT_DEADLINE)


class _WatchedHTTP(http.client.HTTPConnection):
    def __init__(self, *args: Any, watch: _Watch, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._watch = watch

    def connect(self) -> None:
        super().connect()
        self._watch.arm(self.sock)


class _WatchedHTTPS(http.client.HTTPSConnection):
    def __init__(self, *args: Any, watch: _Watch, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._watch = watch

    def connect(self) -> None:
        super().connect()  # TCP and the TLS handshake; the TLS socket is the one to cut
        self._watch.arm(self.sock)


class _HTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, watch: _Watch) -> None:
        super().__init__()
        self._watch = watch

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(functools.partial(_WatchedHTTP, watch=self._watch), req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, context: ssl.SSLContext, watch: _Watch) -> None:
        super().__init__(context=context)
        self._watch = watch
        self._tls = context

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(functools.partial(_WatchedHTTPS, watch=self._watch), req, context=self._tls)


def _opener(scheme: str, ca_file: str | None, host: str, watch: _Watch) -> urllib.request.OpenerDirector:
    # Built by hand: no redirect handler (redirects are decided below), no
    # file:, ftp: or data: handlers.
    opener = urllib.request.OpenerDirector()
    handlers: list[urllib.request.BaseHandler] = [_ProxyHandler(), _HTTPHandler(watch)]
    if scheme == "https":
        handlers.append(_HTTPSHandler(_tls_for(ca_file, host), watch))
    handlers += [urllib.request.HTTPDefaultErrorHandler(), urllib.request.HTTPErrorProcessor()]
    for handler in handlers:
        opener.add_handler(handler)
    return opener


def _classify(exc: BaseException, sent: bool) -> _Transport:
    reason = sanitise_snippet(str(exc) or type(exc).__name__, limit=120)
    if isinstance(exc, ssl.SSLCertVerificationError):
        return _Transport("tls", sanitise_snippet(exc.verify_message or reason, limit=120), False)
    if isinstance(exc, ssl.SSLError) and not sent:
        return _Transport("tls", reason, False)  # the handshake; mid-answer TLS errors are drops
    if isinstance(exc, (TimeoutError, socket.timeout)):
        return _Transport("timeout", reason, sent)
    if isinstance(exc, socket.gaierror):  # a name that no lookup knows is a typo, not a passing failure
        return _Transport("nohost" if exc.errno == socket.EAI_NONAME else "dns", reason, False)
    if isinstance(exc, ConnectionRefusedError):
        return _Transport("refused", reason, False)
    if not sent and isinstance(exc, OSError) and not isinstance(exc, ConnectionError):
        return _Transport("refused", reason, False)  # unreachable network or host
    if isinstance(exc, (OSError, http.client.HTTPException, EOFError)):
        name = type(exc).__name__
        return _Transport("dropped", reason if reason.startswith(name) else f"{name}: {reason}", sent)
    return _Transport("other", reason, sent)


def _read_capped(resp: http.client.HTTPResponse | urllib.error.HTTPError, deadline: float, max_bytes: int,
                 host: str) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while True:
        if time.monotonic() > deadline:
            raise _Transport("deadline", "the overall time limit ran out while reading", True)
        try:
            chunk = resp.read(65536)
        except (OSError, http.client.HTTPException) as exc:
            raise _classify(exc, True) from None
        if not chunk:
            return b"".join(chunks)
        total += len(chunk)
        if total > max_bytes:
            raise ForgeError("FORGE_UNAVAILABLE", f"The forge at {host} sent more than "
                                                  f"{max_bytes // (1024 * 1024)} MiB; madtea stopped reading.")
        chunks.append(chunk)


def _open_once(req: urllib.request.Request, scheme: str, ca_file: str | None, timeout: float,
               deadline: float, max_bytes: int, host: str,
               on_send: Callable[[str, str], None] | None) -> tuple[int, dict[str, str], bytes]:
    if _CLOSING.is_set():
        raise _stopped("shutdown", False)
    call = gitops.CALL.get()
    if call is not None and call.cancelled:
        raise _stopped("cancelled", False)
    watch = _watch_until(deadline)
    held = call.hold(lambda: watch.expire("cancelled")) if call is not None else 0
    try:
        answer = _open_watched(req, scheme, ca_file, timeout, deadline, max_bytes, host, on_send, watch)
    except _Transport as failure:
        if watch.reason is None:
            raise
        raise _Transport(watch.reason, f"the connection was ended ({watch.reason})", failure.sent) from None
    finally:
        watch.finish()
        if call is not None:
            call.release(held)
    if watch.reason is not None:  # a body read to the connection's end looks whole when it was cut
        raise _Transport(watch.reason, f"the connection was ended ({watch.reason})", True)
    return answer


def _open_watched(req: urllib.request.Request, scheme: str, ca_file: str | None, timeout: float,
                  deadline: float, max_bytes: int, host: str, on_send: Callable[[str, str], None] | None,
                  watch: _Watch) -> tuple[int, dict[str, str], bytes]:
    opener = _opener(scheme, ca_file, host, watch)  # a bad CA file fails here, before anything is sent
    _bump()
    if on_send is not None:
        on_send(req.get_method(), req.full_url)
    try:
        resp: http.client.HTTPResponse | urllib.error.HTTPError = opener.open(req, timeout=timeout)
    except urllib.error.HTTPError as err:
        resp = err  # non-2xx and every 3xx: an answer, not a failure
    except urllib.error.URLError as err:
        # urllib wraps failures while connecting or sending; the server has
        # not seen a whole request.
        raise _classify(err.reason if isinstance(err.reason, BaseException) else err, False) from None
    except (OSError, http.client.HTTPException) as err:
        # Raised while reading the status line: the request was sent.
        raise _classify(err, True) from None
    except ValueError as err:
        raise ForgeError("BAD_ARGUMENT", f"The request could not be built ({sanitise_snippet(str(err))}).") from None
    try:
        body = _read_capped(resp, deadline, max_bytes, host)
        # begin() sets HTTPResponse.code too, but typeshed declares it on HTTPError alone.
        status = int(getattr(resp, "status", None) or resp.code)  # type: ignore[union-attr]
        headers: dict[str, str] = {}
        for name, value in resp.headers.items():
            key = name.lower()
            headers[key] = f"{headers[key]}, {value}" if key in headers else value
    finally:
        resp.close()
    # http.client's read(n) returns b"" at a premature end instead of raising
    # IncompleteRead, so a short body is detected here.
    declared = headers.get("content-length", "")
    if (req.get_method() != "HEAD" and status not in (204, 304) and "transfer-encoding" not in headers
            and declared.isdigit() and int(declared) != len(body)):
        raise _Transport("dropped", f"the answer stopped after {len(body)} of {declared} bytes", True)
    return status, headers, body


# What OpenSSL says when the server answers its TLS greeting in plain http ("HTTP/1.1 400 ..." read as a record).
_PLAIN_HTTP_SIGNS = ("WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "PACKET_LENGTH_TOO_LONG", "HTTP_REQUEST")


def _transport_error(failure: _Transport, method: str, host: str, path: str, timeout: float,
                     attempts: int, out_of_time: bool, limit: float) -> ForgeError:
    label = f"{method} {path}"
    tries = f" after {attempts} attempts" if attempts > 1 else ""
    if failure.kind in _STOPPED_BECAUSE:
        text = f"madtea stopped {label} to {host} because {_STOPPED_BECAUSE[failure.kind]}."
        if method not in _IDEMPOTENT and failure.sent:
            text += " The forge may or may not have applied it."
        return ForgeError("FORGE_UNAVAILABLE", text, None, method, path, transient=True)
    if failure.kind == "tls" and any(sign in failure.reason for sign in _PLAIN_HTTP_SIGNS):
        # The server answered the TLS greeting with plain http: no CA file helps, and madtea does not
        # downgrade on its own (the token would go in clear to a host nobody said is at http).
        text = (f"https to {host} failed because the server there speaks plain http, not https "
                f"({failure.reason}); madtea does not switch a host to http on its own.")
        error = ForgeError("FORGE_UNAVAILABLE", text, None, method, path, host=host)
        error.plain_http = True
        return error
    if failure.kind == "tls":
        text = (f"The TLS connection to {host} failed ({failure.reason}); madtea never turns verification "
                f"off, so give this host a ca_file in {config_path()} if it uses a private CA.")
        return ForgeError("FORGE_UNAVAILABLE", text, None, method, path)
    if failure.kind == "nohost":
        error = ForgeError("FORGE_UNAVAILABLE", f"No host named {host} is known here ({failure.reason}), so "
                           f"{label} was not sent.", None, method, path, host=host)
        error.unknown_host = True
        return error
    if failure.kind == "dns":
        return ForgeError("FORGE_UNAVAILABLE", f"Could not resolve {host} ({failure.reason}).", None, method, path,
                          transient=True)
    if failure.kind == "refused" or (failure.kind == "timeout" and not failure.sent):
        text = f"Could not connect to {host}{tries} ({failure.reason}); {label} was not sent."
        return ForgeError("FORGE_UNAVAILABLE", text, None, method, path, transient=True)
    if failure.kind == "timeout" and not out_of_time:
        text = f"The forge at {host} did not answer {label} within {timeout:g} s{tries}."
    elif failure.kind in ("timeout", "deadline"):
        text = (f"The forge at {host} did not finish {label} within the overall time limit "
                f"({round(limit, 1):g} s){tries}.")
    else:
        text = f"The connection to {host} dropped during {label}{tries} ({failure.reason})."
    if method not in _IDEMPOTENT and failure.sent:
        text += " The forge may or may not have applied it."
    return ForgeError("FORGE_UNAVAILABLE", text, None, method, path, transient=True)


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        seconds = float(value)
    else:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=_dt.timezone.utc)
        seconds = (when - _dt.datetime.now(_dt.timezone.utc)).total_seconds()
    return max(0.0, min(seconds, RETRY_AFTER_CAP))


def _backoff(attempt: int) -> float:
    # "Equal jitter": half fixed, half random, so retries from many clients spread out.
    base = min(8.0, 0.5 * 2.0 ** (attempt - 1))
    return base / 2 + random.random() * base / 2


def _exchange(method: str, url: str, body: bytes | None, headers: Mapping[str, str], token: _Secret | None,
              timeout: float, deadline: float, ca_file: str | None, scope: str | None,
              on_send: Callable[[str, str], None] | None, max_bytes: int, host: str, path: str) -> Response:
    """One attempt: send, and follow redirects under the token and scope rules."""
    home = _origin(url)
    current, with_auth = url, token is not None
    for _hop in range(MAX_REDIRECTS + 1):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise _Transport("deadline", "the overall time limit ran out", False)
        req = urllib.request.Request(current, data=body, method=method)
        for name, value in headers.items():
            req.add_header(name, value)
        if with_auth and token is not None and _origin(current) == home:
            # Unredirected: even a redirect handler would not copy it.
            req.add_unredirected_header("Authorization", f"token {token.reveal()}")
        scheme = urllib.parse.urlsplit(current).scheme.lower()
        # The CA file belongs to the configured host; another host (a CDN a
        # download redirects to) is checked against the system store.
        trust = ca_file if _origin(current)[1] == home[1] else None
        status, got, data = _open_once(req, scheme, trust, min(timeout, remaining), deadline, max_bytes, host,
                                       on_send)
        location = got.get("location")
        if status not in _REDIRECTS or not location:
            return Response(status, got, data, current, method, path, host)
        target = urllib.parse.urldefrag(urllib.parse.urljoin(current, location.strip()))[0]
        current = _redirect_decision(method, status, current, target, home, scope, host, path)
        if _origin(current) != home:
            with_auth = False  # and it stays off, even if a later hop comes back
    raise ForgeError("FORGE_UNAVAILABLE", f"The forge at {host} redirected {method} {path} more than "
                     f"{MAX_REDIRECTS} times; madtea stopped following.", None, method, path)


def _redirect_decision(method: str, status: int, current: str, target: str, home: tuple[str, str, int],
                       scope: str | None, host: str, path: str) -> str:
    parts = urllib.parse.urlsplit(target)
    if parts.scheme.lower() not in ("http", "https") or "@" in parts.netloc or not parts.hostname:
        raise redirect_unfollowable(method, status, target, host, path)
    if urllib.parse.urlsplit(current).scheme.lower() == "https" and parts.scheme.lower() != "https":
        raise redirect_downgrades_tls(method, status, target, host, path)
    if scope is not None and not _within(target, scope):
        raise redirect_outside_scope(method, status, target, scope, path)
    if method in ("GET", "HEAD"):
        return target
    if _origin(target) != home:
        raise redirect_write_across_hosts(method, status, target, path)
    if status not in _WRITE_REPLAY:
        raise redirect_write_not_replayable(method, status, target, path)
    return target


def redirect_unfollowable(method: str, status: int, target: str, host: str, path: str) -> ForgeError:
    """A redirect to a URL that is not plain http(s) to a host (another scheme, credentials in it)."""
    return ForgeError("FORGE_UNAVAILABLE", f"The forge at {host} redirected {method} {path} to "
                      f"{_display_url(target)}, which madtea does not follow.", status, method, path)


def redirect_downgrades_tls(method: str, status: int, target: str, host: str, path: str) -> ForgeError:
    """A redirect from https to plain http."""
    return ForgeError("FORGE_UNAVAILABLE", f"The forge at {host} redirected {method} {path} from https to plain "
                      f"http ({_display_url(target)}); madtea never downgrades TLS.", status, method, path)


def redirect_outside_scope(method: str, status: int, target: str, scope: str, path: str) -> ForgeError:
    """A redirect outside the URL this client is confined to."""
    return ForgeError("OUT_OF_SCOPE", f"The forge redirected {method} {path} to {_display_url(target)}, outside "
                      f"{_display_url(scope)}; this client is confined there, so it did not follow.",
                      status, method, path)


def redirect_write_across_hosts(method: str, status: int, target: str, path: str) -> ForgeError:
    """A write redirected to another host: a write or a token never crosses hosts."""
    return ForgeError("OUT_OF_SCOPE", f"The forge redirected {method} {path} to another host "
                      f"({_display_url(target)}); madtea never sends a write or a token across hosts, so nothing "
                      "was re-sent.", status, method, path)


def redirect_write_not_replayable(method: str, status: int, target: str, path: str) -> ForgeError:
    """A write redirected with a status madtea does not replay a write on (only 301, 307 and 308)."""
    return ForgeError("FORGE_UNAVAILABLE", f"The forge answered {method} {path} with a {status} redirect to "
                      f"{_display_url(target)}, which madtea does not follow for a write; nothing was re-sent.",
                      status, method, path)


def request(
    method: str,
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    body: bytes | None = None,
    token: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    deadline: float | None = None,
    ca_file: str | None = None,
    retries: int = DEFAULT_RETRIES,
    sleep: Callable[[float], None] = time.sleep,
    scope: str | None = None,
    on_send: Callable[[str, str], None] | None = None,
    max_bytes: int = MAX_BODY_BYTES,
    host: str | None = None,
    path: str | None = None,
) -> Response:
    """Send one HTTP request; the only place madtea opens a connection.

    *deadline* is an absolute ``time.monotonic()`` value (default: now +
    :func:`deadline_seconds`), enforced across trickled headers and bodies;
    *timeout* bounds each socket operation. The token
    goes only to *url*'s origin. Redirects: GET/HEAD follow (dropping the
    token once the chain leaves the origin); writes are re-sent, same method
    and body, only on 301/307/308 to the same origin; nothing follows https
    to http, and with *scope* (a URL prefix) nothing follows outside it.
    GET/HEAD/PUT/DELETE are retried up to *retries* times on
    429/502/503/504 and dropped connections; POST and PATCH never are.
    Returns the final answer whatever its status; raises :class:`ForgeError`
    when there is none. *host* and *path* name the request in messages.
    """
    method = method.upper()
    if method not in _METHODS:
        raise ForgeError("BAD_ARGUMENT", f"The HTTP method {method!r} is not one madtea sends.")
    parts = _split_checked(url)
    host = host or parts.netloc
    path = path or parts.path or "/"
    send_headers = dict(headers or {})
    if any(name.lower() == "authorization" for name in send_headers):
        raise ForgeError("BAD_ARGUMENT", "Pass the token as token=, never as a header, so it cannot follow a redirect.")
    secret = _check_token(token, host) if token else None
    if deadline is None:
        deadline = time.monotonic() + deadline_seconds()
    call = gitops.CALL.get()
    if call is not None and call.deadline is not None:
        deadline = min(deadline, call.deadline)  # a call answers within its client's patience
    limit = max(0.0, deadline - time.monotonic())
    idempotent = method in _IDEMPOTENT
    attempt = 0
    while True:
        attempt += 1
        if call is not None:
            call.detail(f"forge: {method} {path} on {host}" + (f" (attempt {attempt})" if attempt > 1 else ""))
        try:
            resp = _exchange(method, url, body, send_headers, secret, timeout, deadline, ca_file, scope,
                             on_send, max_bytes, host, path)
        except _Transport as failure:
            retryable = failure.kind in ("timeout", "dropped", "refused")
            if idempotent and retryable and attempt <= retries:
                delay = _backoff(attempt)
                if time.monotonic() + delay < deadline:
                    if _pause(call, sleep, delay, f"{method} {path} on {host}: {failure.reason}"):
                        continue
                    failure = _stopped("cancelled", failure.sent)
            out_of_time = time.monotonic() >= deadline  # the socket timeout was the remaining budget
            raise _transport_error(failure, method, host, path, timeout, attempt, out_of_time, limit) from None
        if idempotent and resp.status in _RETRY_STATUSES and attempt <= retries:
            waited = _retry_after(resp.header("retry-after"))
            delay = waited + random.random() * waited / 10 if waited is not None else _backoff(attempt)
            if time.monotonic() + delay < deadline:
                if _pause(call, sleep, delay, f"{method} {path} on {host} answered {resp.status}"):
                    continue
                raise _transport_error(_stopped("cancelled", True), method, host, path, timeout, attempt, False,
                                       limit) from None
        return Response(resp.status, resp.headers, resp.body, resp.url, method, path, host, attempt)


def _pause(call: gitops.Call | None, sleep: Callable[[float], None], delay: float, why: str) -> bool:
    """Wait *delay* seconds before a retry, saying so; False when the call was cancelled meanwhile."""
    if call is None:
        sleep(delay)
        return True
    call.detail(f"forge: {why}; trying again in {delay:.0f} s")
    return not call.wait(delay)


def _check_token(token: str, host: str) -> _Secret:
    # A token with spaces or control characters would split the header (or
    # be refused by http.client with the value in the message).
    if not token or any(ord(ch) < 33 or ord(ch) > 126 for ch in token):
        raise ForgeError("AUTH_MISSING", f"The token for {host} contains spaces or characters a token cannot "
                         "have, so it was not sent; store it again.", host=host)
    _remember_secret(token)
    return _Secret(token)


# --------------------------------------------------------------------------- error mapping

_MERGE_PATH = re.compile(r"/pulls/[^/]+/merge/?$")


def _server_message(body: bytes, content_type: str | None) -> tuple[str, Json, bool]:
    """(sanitised message, parsed JSON or None, whether the body was JSON)."""
    text = body[:65536].decode("utf-8", "replace").strip()
    if not text or _looks_html(text, content_type):
        return "", None, False
    try:
        parsed = _json.loads(text)
    except ValueError:
        return sanitise_snippet(text), None, False
    if isinstance(parsed, dict) and isinstance(parsed.get("message"), str):
        return sanitise_snippet(parsed["message"]), parsed, True
    if isinstance(parsed, str):
        return sanitise_snippet(parsed), parsed, True
    return "", parsed, True


def map_error(
    status: int,
    body: bytes,
    *,
    content_type: str | None = None,
    method: str = "GET",
    path: str = "",
    host: str = "",
    attempts: int = 1,
    token_sent: bool = True,
    retry_after: str | None = None,
    answered_by: str | None = None,
) -> ForgeError:
    """Turn a non-2xx answer into a :class:`ForgeError` with a stable code.

    Gitea's error bodies come in many shapes (JSON ``message``, ``null``,
    empty, plain text, a serialised Go struct, a proxy's HTML page); each is
    read defensively and only a sanitised snippet reaches the message.
    An HTML body means something other than the API answered (a proxy, a
    login wall, a wrong API URL), so it is FORGE_UNAVAILABLE whatever the
    status, except 401. *answered_by* is the host a redirect led to, when it
    is not *host*: a 401 or 403 from there is that host's, and no token of
    *host* was offered to it.
    """
    label = f"{method} {path}"
    msg, parsed, is_json = _server_message(body, content_type)
    said = f": {msg}" if msg else ""
    tries = f" after {attempts} attempts" if attempts > 1 else ""

    def err(code: str, text: str, transient: bool = False) -> ForgeError:
        return ForgeError(code, text, status, method, path, transient=transient, host=host or None,
                          rule="map_error")

    raw = body[:65536].decode("utf-8", "replace")
    if answered_by and status in (401, 403):
        refused = ForgeError("AUTH_MISSING", f"{host} redirected {label} to {answered_by}, which answered {status}"
                             f"{said}; madtea sends no token to another host, so none was offered there.",
                             status, method, path, host=answered_by)
        refused.redirected_from = host
        return refused
    if status in (413, 414, 431):  # a proxy's or the server's size limit, often as an HTML page: nothing was done
        what = {413: "body", 414: "address", 431: "headers"}[status]
        return err("BAD_ARGUMENT", f"The forge at {host} refused {label} because its {what} is too large "
                   f"({status}); nothing was done, and shorter values may pass.")
    if raw.strip() and _looks_html(raw, content_type) and status != 401:
        # Gitea's API never answers with HTML: a proxy, a login wall or a
        # wrong API URL is in the way.
        return err("FORGE_UNAVAILABLE", f"The forge at {host} answered {label} with an HTML page instead of "
                   f"JSON ({status}{tries}: {sanitise_snippet(raw, 'text/html')}); check the API URL for {host}.",
                   status >= 500 or status == 429)
    if status == 401:
        if not token_sent:
            return err("AUTH_MISSING", f"No token is configured for {host}, and {label} needs one (401{said}).")
        return err("AUTH_MISSING", f"The token is missing or invalid for {host} (401 on {label}{said}).")
    if status == 403:
        lowered = msg.lower()
        if "scope" in lowered:
            return err("SCOPE_MISSING", f"The token for {host} lacks a scope that {label} needs (403{said}).")
        if "signed in" in lowered or "sign in" in lowered:
            return err("AUTH_MISSING", f"The forge at {host} only answers signed-in users; the token is missing "
                       f"or invalid for {host} (403{said}).")
        # The forge found the object and the user, and says no: a permission answer, never "not found".
        why = f"because: {msg}" if msg else "and gave no reason (it usually needs the author, write or admin access)"
        return err("NOT_ALLOWED", f"The forge does not allow {label} for this token's user, {why} (403).")
    if status in (404, 410):
        hint = ""
        if msg and not is_json:
            hint = "; a plain-text 404 usually means this forge has no such API route"
        if not token_sent and not hint:  # Gitea's repoAssignment: a private repository is a 404 to the anonymous
            return err("NOT_FOUND_OR_NO_ACCESS", f"{path} was not found on {host}; no token was sent, and a private "
                       f"repository answers a request without one as if it did not exist ({status}{said}).")
        return err("NOT_FOUND_OR_NO_ACCESS", f"{path} was not found on {host}, or this token cannot see it "
                   f"({status}{said}{hint}).")
    if status == 405:
        if _MERGE_PATH.search(path) or "merge" in msg.lower():
            return err("MERGE_BLOCKED", f"The forge refused the merge ({label}, 405{said}).")
        return err("NOT_SUPPORTED", f"The forge at {host} does not allow {label} (405{said}).")
    if status == 409:
        if is_json and isinstance(parsed, dict) and "message" not in parsed:
            detail = ""
            for key in ("StdErr", "StdOut", "Err"):
                value = parsed.get(key)
                if isinstance(value, str) and value.strip():
                    detail = f"; git said: {sanitise_snippet(value)}"
                    break
            style = parsed.get("Style")
            kind = f"{style} " if isinstance(style, str) and style else ""
            return err("MERGE_CONFLICT", f"The {kind}merge hit conflicts (409 on {label}{detail}).")
        if "head out of date" in msg.lower():
            return err("HEAD_MOVED", f"The pull request's head moved since it was read, so the forge refused "
                       f"{label} (409{said}).")
        return err("CONFLICT", f"The forge reported a conflict for {label} (409{said}).")
    if status == 423:
        return err("BAD_ARGUMENT", f"The repository is archived, so the forge refused {label} (423{said}).")
    if status == 429:
        wait = _retry_after(retry_after)
        later = f"; it asks to wait {wait:g} s" if wait else ""
        return err("FORGE_UNAVAILABLE", f"The forge at {host} is limiting requests (429 on {label}{tries}{later}).",
                   True)
    if status >= 500:
        body_note = said or (f": {sanitise_snippet(raw)}" if raw.strip() and not is_json else "")
        return err("FORGE_UNAVAILABLE", f"The forge at {host} failed on {label} ({status}{tries}{body_note}).",
                   status in _RETRY_STATUSES)
    if 400 <= status < 500:
        return err("BAD_ARGUMENT", f"The forge rejected {label} ({status}{said}).")
    return err("FORGE_UNAVAILABLE", f"The forge at {host} gave an unexpected answer to {label} ({status}{said}).")


# --------------------------------------------------------------------------- paths

def _check_name(value: object, what: str) -> str:
    if not isinstance(value, str) or not _NAME_RE.match(value) or value in (".", ".."):
        raise ForgeError("BAD_ARGUMENT", f"{sanitise_snippet(repr(value), limit=80)} is not a valid {what} name "
                         "(letters, digits, '.', '_' and '-' only).")
    if value.lower().endswith(_RESERVED_SUFFIXES):
        raise ForgeError("BAD_ARGUMENT", f"{value!r} is not a valid {what} name (names ending in .git or .wiki "
                         "are reserved by the forge).")
    return value


def api_path(*segments: str | int) -> str:
    """``/{segment}/…``, each segment quoted whole: the one way a path is built from names.

    A ``/``, ``?``, ``#`` or ``%`` inside a segment travels escaped in it, so no
    value adds a segment, a query or a fragment; ``.``, ``..`` and empty
    segments are refused.
    """
    parts = []
    for segment in segments:
        if isinstance(segment, bool) or not isinstance(segment, (str, int)):
            raise ForgeError("BAD_ARGUMENT", f"A path segment must be text or a number, not {type(segment).__name__}.")
        text = str(segment)
        if text in ("", ".", ".."):
            raise ForgeError("BAD_ARGUMENT", f"{text!r} cannot be a path segment.")
        parts.append(urllib.parse.quote(text, safe=""))
    return "/" + "/".join(parts)


def repo_path(owner: str, repo: str, *segments: str | int) -> str:
    """``/repos/{owner}/{repo}/…`` with validated names (see :func:`api_path`).

    A segment may contain ``/`` (a branch ``feat/x`` becomes ``feat%2Fx``).
    """
    return api_path("repos", _check_name(owner, "owner"), _check_name(repo, "repository"), *segments)


def _fully_unquoted(text: str) -> str:
    # Decode until stable, so double encoding (%252e) cannot hide a "..".
    for _ in range(5):
        decoded = urllib.parse.unquote(text)
        if decoded == text:
            break
        text = decoded
    return text


def _escapes(segment: str) -> bool:
    pieces = re.split(r"[/\\]", _fully_unquoted(segment))
    return any(piece in (".", "..") for piece in pieces)


def _check_api_path(path: str) -> str:
    """A path relative to the API base: absolute, ASCII, no query, no dot segments."""
    if not isinstance(path, str) or not path.startswith("/") or path.startswith("//"):
        raise ForgeError("BAD_ARGUMENT",
                         f"An API path must start with a single '/', not {sanitise_snippet(repr(path))}.")
    if any(ord(ch) < 33 or ord(ch) > 126 for ch in path) or "?" in path or "#" in path:
        raise ForgeError("BAD_ARGUMENT", f"The API path {sanitise_snippet(repr(path))} must be percent-encoded, "
                         "without spaces, and without a query (pass params instead).")
    if "\\" in path or any(_escapes(segment) for segment in path.split("/")[1:]):
        raise ForgeError("OUT_OF_SCOPE", f"The API path {sanitise_snippet(path)} contains '.' or '..' segments; "
                         "madtea does not send paths that could leave the API.")
    return path


def _encode_params(params: Mapping[str, object] | None) -> str:
    pairs: list[tuple[str, str]] = []
    for key, value in (params or {}).items():
        values = value if isinstance(value, (list, tuple)) else [value]
        for item in values:
            if item is None:
                continue
            pairs.append((key, ("true" if item else "false") if isinstance(item, bool) else str(item)))
    return urllib.parse.urlencode(pairs)


_LINK_RE = re.compile(r'<([^>]*)>\s*;\s*rel="?([^",;]+)"?')


def _link_rels(value: str | None) -> set[str] | None:
    if value is None:
        return None
    return {rel.strip().lower() for _url, rels in _LINK_RE.findall(value) for rel in rels.split()}


def _int_header(resp: Response, name: str) -> int | None:
    value = resp.header(name)
    try:
        return int(value.strip()) if value is not None else None
    except ValueError:
        return None


def _multipart(field: str, filename: str, data: bytes) -> tuple[bytes, str]:
    """One file as a multipart/form-data body, and its Content-Type."""
    boundary = "madtea-" + os.urandom(12).hex()
    safe = filename.replace('"', "_").replace("\r", "_").replace("\n", "_")
    head = (f'--{boundary}\r\nContent-Disposition: form-data; name="{field}"; filename="{safe}"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n").encode("utf-8")
    return head + data + f"\r\n--{boundary}--\r\n".encode("ascii"), f"multipart/form-data; boundary={boundary}"


def flavour_of(version: str) -> str:
    """The flavour, ``"forgejo"`` or ``"gitea"``, read from a ``/version`` string.

    Forgejo reports ``15.0.3+gitea-1.22.0``; Gitea is still on 1.x. Forgejo
    releases before 7.0 that lacked the suffix read as "gitea" (a known limit).
    """
    text = version.strip().lower()
    if "+gitea-" in text or "forgejo" in text:
        return "forgejo"
    major = re.match(r"v?(\d+)", text)
    return "forgejo" if major and int(major.group(1)) >= 7 else "gitea"


# The first release with each endpoint (or query parameter) madtea uses that not every supported release has:
# (Gitea, Forgejo); None where no release of that flavour has it. Read from the servers' source: the forge
# contract in tests/forge_contract.py cites the function for each, and a test holds this table to it.
SINCE: dict[str, tuple[str | None, str | None]] = {
    "GET /repos/{owner}/{repo}/actions/runs": ("1.25", "12"),
    "GET /repos/{owner}/{repo}/actions/runs/{run}": ("1.25", "12"),
    "GET /repos/{owner}/{repo}/actions/runs/{run}/jobs": ("1.25", None),
    "GET /repos/{owner}/{repo}/actions/workflows": ("1.24", None),
    "POST /repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches": ("1.24", "11"),
    "GET /repos/{owner}/{repo}/actions/jobs/{job_id}/logs": ("1.24", None),
    "GET /repos/{owner}/{repo}/actions/artifacts": ("1.24", None),
    "GET /repos/{owner}/{repo}/actions/runs/{run}/artifacts": ("1.24", None),
    "GET /repos/{owner}/{repo}/actions/artifacts/{artifact_id}": ("1.24", None),
    "GET /repos/{owner}/{repo}/actions/artifacts/{artifact_id}/zip": ("1.24", None),
    "GET /repos/{owner}/{repo}/actions/secrets": ("1.22", "11"),
    "GET /repos/{owner}/{repo}/actions/variables": ("1.22", "11"),
    "GET /repos/{owner}/{repo}/actions/variables/{variablename}": ("1.22", "11"),
    "POST /repos/{owner}/{repo}/actions/variables/{variablename}": ("1.22", "11"),
    "PUT /repos/{owner}/{repo}/actions/variables/{variablename}": ("1.22", "11"),
    "DELETE /repos/{owner}/{repo}/actions/variables/{variablename}": ("1.22", "11"),
    "PUT /repos/{owner}/{repo}/issues/{index}/lock": ("1.24", None),
    "DELETE /repos/{owner}/{repo}/issues/{index}/lock": ("1.24", None),
    "PATCH /repos/{owner}/{repo}/branches/{branch*}": ("1.23", "11"),
    "GET /repos/{owner}/{repo}/pulls/{base}/{head}": ("1.22", "11"),
    "GET /packages/{owner}/{type}/{name}": ("1.24", None),
    "POST /repos/{owner}/{repo}/pulls/{index}/reviews/{id}/comments": (None, "11"),
    "GET /repos/{owner}/{repo}/pulls?poster": ("1.23", "11"),
}


def release_of(version: str) -> tuple[str, tuple[int, ...]] | None:
    """(flavour, release) from a ``/version`` string: ("gitea", (1, 25)) from "1.25.4", ("forgejo", (15,)) from
    "15.0.3+gitea-1.22.0"; None when it names no release (a build of unknown age)."""
    found = re.match(r"v?(\d+)\.(\d+)", version.strip())
    if not found:
        return None
    flavour = flavour_of(version)
    major, minor = int(found.group(1)), int(found.group(2))
    return flavour, ((major,) if flavour == "forgejo" else (major, minor))


def _release_name(flavour: str, release: str) -> str:
    return f"{'Forgejo' if flavour == 'forgejo' else 'Gitea'} {release}"


# Commit status states in Forgejo's order, worst first (modules/structs/commit_status.go commitStatusPriorities);
# Gitea kept the same order until its Combine rule (1.24).
_WORST_FIRST = ("error", "failure", "warning", "pending", "success")


def combined_state(flavour: str, version: str, states: Sequence[str]) -> str:
    """The state the forge gives a head whose contexts' latest states are *states* ("" when there are none).

    Gitea 1.24 on (modules/commitstatus/commit_status.go ``CommitStatusStates.Combine``): any failure or error
    is "failure"; all of success, warning and skipped is "success"; anything else "pending". Forgejo, and
    Gitea before 1.24 (models/git/commit_status.go ``CalcCommitStatus`` with ``NoBetterThan``): the worst
    state in the order above, starting from the newest; a state outside it never counts, and a warning is
    not green.
    """
    if not states:
        return ""
    release = release_of(version)
    if flavour == "gitea" and (release is None or release[1] >= (1, 24)):  # an unknown build is taken as new
        if any(s in ("failure", "error") for s in states):
            return "failure"
        return "success" if all(s in ("success", "warning", "skipped") for s in states) else "pending"
    worst = states[0]
    for state in states[1:]:
        if state in _WORST_FIRST and worst in _WORST_FIRST and \
                _WORST_FIRST.index(state) <= _WORST_FIRST.index(worst):
            worst = state
    return worst


# --------------------------------------------------------------------------- clients

def _check_base_url(api_base: str) -> str:
    parts = _split_checked(api_base)
    if parts.query or parts.fragment:
        raise ForgeError("BAD_ARGUMENT", f"The API URL {_display_url(api_base)} must not have a query or fragment.")
    return api_base.rstrip("/")


class _Verbs(Generic[_Where]):
    """The HTTP verbs, defined once over ``send``: parsed JSON back (``None`` for an empty body).

    *where* is what the class's ``send`` takes: an API path for :class:`Client`; for :class:`RepoClient`,
    a sub-path inside the repository (one string or one sequence) or its literal segments as arguments
    (``repo.get("issues", 12, "comments", params=...)``).
    """

    def send(self, method: str, where: _Where, params: Mapping[str, object] | None = None, json: Json = None, *,
             accept: str = "application/json") -> Response:
        raise NotImplementedError

    def _address(self, where: tuple[str | int | Sequence[str | int], ...]) -> _Where:
        """What ``send`` takes, from a verb's positional arguments."""
        raise NotImplementedError

    def get(self, *where: str | int | Sequence[str | int], params: Mapping[str, object] | None = None,
            json: Json = None) -> Json:
        return self.send("GET", self._address(where), params, json).json()

    def post(self, *where: str | int | Sequence[str | int], params: Mapping[str, object] | None = None,
             json: Json = None) -> Json:
        return self.send("POST", self._address(where), params, json).json()

    def patch(self, *where: str | int | Sequence[str | int], params: Mapping[str, object] | None = None,
              json: Json = None) -> Json:
        return self.send("PATCH", self._address(where), params, json).json()

    def put(self, *where: str | int | Sequence[str | int], params: Mapping[str, object] | None = None,
            json: Json = None) -> Json:
        return self.send("PUT", self._address(where), params, json).json()

    def delete(self, *where: str | int | Sequence[str | int], params: Mapping[str, object] | None = None,
               json: Json = None) -> Json:
        return self.send("DELETE", self._address(where), params, json).json()

    def get_text(self, *where: str | int | Sequence[str | int], params: Mapping[str, object] | None = None) -> str:
        """A non-JSON answer (a diff, a log) as text."""
        return self.send("GET", self._address(where), params, accept="text/plain, */*").text()

    def get_bytes(self, *where: str | int | Sequence[str | int], params: Mapping[str, object] | None = None) -> bytes:
        """A raw answer (a repository file's bytes) as it came, undecoded."""
        return self.send("GET", self._address(where), params, accept="application/octet-stream, */*").body


class Client(_Verbs[str]):
    """A Gitea/Forgejo API v1 client for one host; paths are relative to *api_base*.

    ``get/post/patch/put/delete`` return the parsed JSON (``None`` for an
    empty body) and raise :class:`ForgeError` for every non-2xx answer.
    """

    def __init__(
        self,
        api_base: str,
        host: str,
        token: str | None = None,
        *,
        ca_file: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        total_timeout: float | None = None,
        retries: int = DEFAULT_RETRIES,
        user_agent: str = DEFAULT_USER_AGENT,
        sleep: Callable[[float], None] = time.sleep,
        versions: dict[str, str] | None = None,
    ) -> None:
        self.api_base = _check_base_url(api_base)
        self.host = host
        self.ca_file = ca_file
        self._token = _check_token(token, host) if token else None
        self._timeout = timeout
        self._total = deadline_seconds() if total_timeout is None else total_timeout
        self._retries = retries
        self._agent = user_agent
        self._sleep = sleep
        self._lock = threading.Lock()
        self._requests = 0
        # The servers' /version strings by API base, shared by the clients of one session (an MCP server's
        # life, one CLI command), so each server is asked its release once per session.
        self._versions = {} if versions is None else versions

    @classmethod
    def from_target(cls, target: ForgeTarget, token: str | None = None,
                    **options: Unpack[_ClientOptions]) -> Client:
        """A client for a resolved :class:`ForgeTarget`."""
        return cls(target.api_base, target.host, token, ca_file=target.ca_file, **options)

    def __repr__(self) -> str:
        token = "<set>" if self._token else None
        return f"Client(api_base={self.api_base!r}, host={self.host!r}, token={token})"

    @property
    def has_token(self) -> bool:
        return self._token is not None

    @property
    def requests_made(self) -> int:
        """HTTP requests this client has sent, retries and redirect hops included."""
        return self._requests

    def _count(self, _method: str, _url: str) -> None:
        with self._lock:
            self._requests += 1

    def _address(self, where: tuple[str | int | Sequence[str | int], ...]) -> str:
        if len(where) != 1 or not isinstance(where[0], str):
            raise TypeError(f"Client verbs take one API path, not {len(where)} arguments")
        return where[0]

    def send(self, method: str, path: str, params: Mapping[str, object] | None = None, json: Json = None, *,
             accept: str = "application/json", scope: str | None = None,
             upload: tuple[str, str, bytes] | None = None, extra: Mapping[str, str] | None = None) -> Response:
        """The answer to one call; raises :class:`ForgeError` unless it is 2xx.

        *scope*, a path prefix relative to the API base, confines redirects.
        *upload* (form field, file name, content) sends one file as multipart/form-data.
        *extra* headers (a person's ``api -H``, checked by the guard) replace madtea's of the same name.
        """
        rel = _check_api_path(path)
        query = _encode_params(params)
        url = self.api_base + rel + (f"?{query}" if query else "")
        headers = {"Accept": accept, "User-Agent": self._agent}
        body = None
        if json is not None:
            body = _json.dumps(json, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
            headers["Content-Type"] = "application/json"
        elif upload is not None:
            body, headers["Content-Type"] = _multipart(*upload)
        for name, value in (extra or {}).items():
            headers = {k: v for k, v in headers.items() if k.lower() != name.lower()} | {name: value}
        resp = request(
            method, url, headers=headers, body=body,
            token=self._token.reveal() if self._token else None,
            timeout=self._timeout, deadline=time.monotonic() + self._total, ca_file=self.ca_file,
            retries=self._retries, sleep=self._sleep,
            scope=self.api_base + _check_api_path(scope) if scope else None,
            on_send=self._count, host=self.host, path=rel,
        )
        if not 200 <= resp.status < 300:
            elsewhere = _origin(resp.url) != _origin(url)
            raise map_error(resp.status, resp.body, content_type=resp.content_type, method=resp.method,
                            path=rel, host=self.host, attempts=resp.attempts, token_sent=self.has_token,
                            retry_after=resp.header("retry-after"),
                            answered_by=urllib.parse.urlsplit(resp.url).netloc if elsewhere else None)
        return resp

    def asset_url(self, asset: Mapping[str, Json]) -> str:
        """Where to fetch a release asset (an Attachment object) from: this forge's own ``/attachments/<uuid>``.

        The forge builds ``browser_download_url`` from its ROOT_URL, which may name it by another address
        than the one madtea reaches it at (a proxy, a configured api_url); the uuid is the same either way.
        An external asset keeps its own address, which :meth:`download` refuses unless it is on this origin.
        """
        uuid = str(asset.get("uuid") or "")
        if (re.fullmatch(r"[0-9A-Fa-f-]{8,64}", uuid) and asset.get("type", "attachment") == "attachment"
                and self.api_base.endswith("/api/v1")):
            return self.api_base[:-len("/api/v1")] + "/attachments/" + uuid
        return str(asset.get("browser_download_url") or "")

    def download(self, url: str, *, max_bytes: int = MAX_BODY_BYTES) -> bytes:
        """The bytes at *url*, an absolute address on this forge's own origin (a release asset's download link).

        An address on any other origin is refused before anything is sent. A redirect to another host (a
        forge that serves attachments from object storage) is followed without the token, which goes only
        to this origin; nothing follows https to http.
        """
        home = _origin(self.api_base)
        parts = _split_checked(url)
        if _origin(url) != home:
            raise ForgeError("OUT_OF_SCOPE", f"The download address {_display_url(url)} is not on the forge "
                             f"{self.host} that listed it, so nothing was fetched.", None, "GET", parts.path,
                             host=self.host)
        resp = request("GET", url, headers={"Accept": "application/octet-stream", "User-Agent": self._agent},
                       token=self._token.reveal() if self._token else None, timeout=self._timeout,
                       deadline=time.monotonic() + self._total, ca_file=self.ca_file, retries=self._retries,
                       sleep=self._sleep, on_send=self._count, max_bytes=max_bytes, host=self.host,
                       path=parts.path)
        if not 200 <= resp.status < 300:
            raise map_error(resp.status, resp.body, content_type=resp.content_type, method="GET", path=parts.path,
                            host=self.host, attempts=resp.attempts, token_sent=self.has_token)
        return resp.body

    def upload(self, path: str, filename: str, data: bytes, *, field: str = "attachment",
               params: Mapping[str, object] | None = None, scope: str | None = None) -> Json:
        """POST one file as multipart/form-data (release assets); never retried, like every POST."""
        return self.send("POST", path, params, upload=(field, filename, data), scope=scope).json()

    def create(self, path: str, json: Json, *, lookup: Callable[[], Json] | None = None,
               params: Mapping[str, object] | None = None, scope: str | None = None) -> Created:
        """POST a new object without ever creating it twice.

        A POST is never retried blindly. When it fails in a way that may
        have created the object (timeout, dropped connection, 5xx, an
        unreadable answer), *lookup* — the caller's search for exactly that
        object, returning it or ``None`` — runs first; the POST is repeated
        only when the look-up found nothing and the failure was transient.
        The look-up must not match objects that existed before (a limit: the
        forge has no idempotency keys, so its precision is the caller's).
        """
        attempt = 0
        while True:
            attempt += 1
            try:
                return Created(self.send("POST", path, params, json, scope=scope).json(), False)
            except ForgeError as failed:
                if failed.code != "FORGE_UNAVAILABLE":
                    raise
                error = failed
            if lookup is None:
                raise self._create_failed(error, "unknown", " It may or may not have been created.")
            try:
                found = lookup()
            except ForgeError as missed:
                raise self._create_failed(error, "unknown", " The look-up for what it may have created failed "
                                          f"too ({missed.message}).") from None
            if found is not None:
                return Created(found, True)
            # A 2xx with an unreadable body did create it: never POST again.
            answered = error.status is not None and 200 <= error.status < 300
            if answered:
                raise self._create_failed(error, "unknown", " The forge answered that it was created, but a "
                                          "look-up did not find it.")
            if not error.transient or attempt > self._retries:
                raise self._create_failed(error, "absent", " A look-up right after found nothing created.")
            why = f"POST {path} on {self.host} created nothing"
            if not _pause(gitops.CALL.get(), self._sleep, _backoff(attempt), why):
                raise self._create_failed(error, "absent", " A look-up right after found nothing created, and madtea "
                                          f"did not try again because {_STOPPED_BECAUSE['cancelled']}.")

    @staticmethod
    def _create_failed(error: ForgeError, outcome: str, known: str) -> ForgeError:
        failed = ForgeError("FORGE_UNAVAILABLE", error.message + known, error.status, error.method, error.path,
                            transient=error.transient, host=error.host)
        failed.outcome = outcome
        return failed

    def paginate(self, path: str, params: Mapping[str, object] | None = None,
                 limit: int | None = None, *, scope: str | None = None,
                 extra: Mapping[str, str] | None = None) -> tuple[list[Json], int | None]:
        """Every item of a list endpoint (or the first *limit*), and the server's total if it sent one.

        Pages by number with a constant page size of at most 50. It never
        stops on a short page alone: the server may clamp the size. It stops
        when ``X-Total-Count`` is reached, when a ``Link`` header has no
        ``next``, on an empty page, or — with neither header — on a page
        shorter than the longest seen or identical to the last (an endpoint
        that ignores ``page``). ``Link`` URLs are never followed: they carry
        the server's ROOT_URL, which may not be the host dialled. ``page``
        and ``limit`` in *params* are replaced.
        """
        if limit is not None and limit <= 0:
            return [], None
        size = PAGE_SIZE if limit is None else min(PAGE_SIZE, limit)
        base = {k: v for k, v in (params or {}).items() if k not in ("page", "limit")}
        items: list[Json] = []
        total: int | None = None
        longest = 0
        previous: list[Json] | None = None
        for page in range(1, MAX_PAGES + 1):
            resp = self.send("GET", path, {**base, "page": page, "limit": size}, scope=scope, extra=extra)
            batch = resp.json()
            if not isinstance(batch, list):
                raise ForgeError("BAD_ARGUMENT", f"{path} does not answer with a list, so it cannot be paged.",
                                 resp.status, "GET", path)
            counted = _int_header(resp, "x-total-count")
            total = counted if counted is not None else total
            rels = _link_rels(resp.header("link"))
            if not batch or batch == previous:
                break
            items.extend(batch)
            longest = max(longest, len(batch))
            if limit is not None and len(items) >= limit:
                del items[limit:]
                break
            if total is not None:
                if len(items) >= total:
                    break
            elif rels is not None:
                if "next" not in rels:
                    break
            elif len(batch) < longest:
                break
            previous = batch
        return items, total

    def version(self) -> str:
        """The server's ``/version`` string, fetched once per session (see *versions*)."""
        known = self._versions.get(self.api_base)
        if known is None:
            data = self.get("/version")
            value = data.get("version") if isinstance(data, dict) else None
            if not isinstance(value, str) or not value.strip():
                raise ForgeError("FORGE_UNAVAILABLE", f"The forge at {self.host} did not report its version.",
                                 200, "GET", "/version")
            known = self._versions[self.api_base] = sanitise_snippet(value, limit=80)
        return known

    def flavour(self) -> str:
        """The server's flavour: ``"gitea"`` or ``"forgejo"``."""
        return flavour_of(self.version())

    def compat_version(self) -> str:
        """The Gitea version whose API this server follows (Forgejo names it after ``+gitea-``)."""
        version = self.version()
        return version.split("+gitea-", 1)[1] if "+gitea-" in version else version

    def brings(self, what: str) -> str | None:
        """None when this server has *what* (a :data:`SINCE` key); else the release that brings it ("Gitea 1.25"),
        or "" when no release of this server's flavour has it. A version that names no release has everything."""
        release = release_of(self.version())
        if release is None:
            return None
        flavour, have = release
        first = SINCE[what][0 if flavour == "gitea" else 1]
        if first is None:
            return ""
        return None if have >= tuple(int(n) for n in first.split(".")) else _release_name(flavour, first)

    def server(self) -> str:
        """The server as a person names it: "Gitea 1.25.4", "Forgejo 15.0.3"."""
        version = self.version()
        return _release_name(self.flavour(), version.split("+", 1)[0])

    def not_supported(self, feature: str, reason: str) -> ForgeError:
        """A ``NOT_SUPPORTED`` error naming the feature, this forge and why (to raise)."""
        version = self._versions.get(self.api_base)
        known = f"{self.flavour().capitalize()} {version}" if version else "this forge"
        return ForgeError("NOT_SUPPORTED", f"{feature} is not supported by {known} at {self.host}: {reason}")


def _confine(sub: str | Sequence[str | int], where: str) -> str:
    """A sub-path relative to a repository, re-quoted; OUT_OF_SCOPE when it could leave."""
    def refuse(why: str) -> ForgeError:
        return ForgeError("OUT_OF_SCOPE", f"{sanitise_snippet(repr(sub), limit=120)} is not inside {where}: "
                          f"{why}; this client only reaches that repository.", rule="_confine")

    if isinstance(sub, str):
        if sub == "":
            return ""
        if sub.startswith(("/", "\\")) or "://" in sub or re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", sub):
            raise refuse("it is absolute")
        if "?" in sub or "#" in sub:
            raise ForgeError("BAD_ARGUMENT", "Pass query parameters as params, not in the sub-path.")
        raw = sub.split("/")
        decoded = []
        for piece in raw:
            if piece == "":
                raise refuse("it has an empty segment")
            if "\\" in _fully_unquoted(piece) or _escapes(piece):
                raise refuse("it has a '.' or '..' segment")
            decoded.append(urllib.parse.unquote(piece))
    else:
        decoded = []
        for segment in sub:
            if isinstance(segment, bool) or not isinstance(segment, (str, int)):
                raise refuse("a segment is neither text nor a number")
            text = str(segment)
            if text in ("", ".", ".."):
                raise refuse("it has an empty, '.' or '..' segment")
            decoded.append(text)
    for text in decoded:
        if any(ord(ch) < 32 or ord(ch) == 127 for ch in text):
            raise ForgeError("BAD_ARGUMENT", "A sub-path segment contains control characters.")
    return "".join("/" + urllib.parse.quote(text, safe="") for text in decoded)


class RepoClient(_Verbs[str | Sequence[str | int]]):
    """A client confined by construction to ``/repos/{owner}/{repo}`` and below.

    Every method takes a sub-path relative to the repository — a string
    (``"issues/12"``, percent-encoding allowed) or a sequence of literal
    segments (``("branches", "feat/x")``); the verbs also take the literal
    segments as arguments (``get("branches", "feat/x")``). Absolute paths, ``.``/``..``
    (however encoded) and redirects that leave the repository are refused
    with ``OUT_OF_SCOPE``. With *read_only*, only GET is sent.
    """

    def __init__(self, client: Client, owner: str, repo: str, *, read_only: bool = False) -> None:
        self._client = client
        self._prefix = repo_path(owner, repo)
        self.owner = owner
        self.repo = repo
        self.read_only = read_only

    def __repr__(self) -> str:
        return f"RepoClient({self.owner}/{self.repo} on {self._client.host}, read_only={self.read_only})"

    @property
    def host(self) -> str:
        return self._client.host

    @property
    def requests_made(self) -> int:
        return self._client.requests_made

    def path(self, sub: str | Sequence[str | int] = "") -> str:
        """The API path for *sub*, checked."""
        return self._prefix + _confine(sub, f"{self.owner}/{self.repo}")

    @staticmethod
    def _address(where: tuple[str | int | Sequence[str | int], ...]) -> str | Sequence[str | int]:
        """One argument is the sub-path (a string, or a sequence of segments); several are the segments."""
        if len(where) == 1 and isinstance(where[0], (str, Sequence)):
            return where[0]
        return cast("tuple[str | int, ...]", where)  # a segment that is not text or a number: _confine refuses

    def _write(self, method: str) -> None:
        if self.read_only:
            raise ForgeError("OUT_OF_SCOPE", f"This client for {self.owner}/{self.repo} only reads; {method} "
                             "is outside what it may do.", None, method, self._prefix)

    def send(self, method: str, sub: str | Sequence[str | int] = "", params: Mapping[str, object] | None = None,
             json: Json = None, *, accept: str = "application/json",
             extra: Mapping[str, str] | None = None) -> Response:
        if method.upper() not in ("GET", "HEAD"):
            self._write(method.upper())
        return self._client.send(method, self.path(sub), params, json, accept=accept, scope=self._prefix,
                                 extra=extra)

    def upload(self, sub: str | Sequence[str | int], filename: str, data: bytes, *,
               params: Mapping[str, object] | None = None) -> Json:
        self._write("POST")
        return self._client.upload(self.path(sub), filename, data, params=params, scope=self._prefix)

    def paginate(self, sub: str | Sequence[str | int] = "", params: Mapping[str, object] | None = None,
                 limit: int | None = None, *, extra: Mapping[str, str] | None = None) -> tuple[list[Json], int | None]:
        return self._client.paginate(self.path(sub), params, limit, scope=self._prefix, extra=extra)

    def create(self, sub: str | Sequence[str | int], json: Json, *, lookup: Callable[[], Json] | None = None,
               params: Mapping[str, object] | None = None) -> Created:
        self._write("POST")
        return self._client.create(self.path(sub), json, lookup=lookup, params=params, scope=self._prefix)


# --------------------------------------------------------------------------- resolution

@dataclass(frozen=True)
class ForgeTarget:
    """Where a host's API lives. ``host`` is the credential key: the host name,
    plus ``:port`` when the API URL derived from the origin keeps a port."""

    host: str
    api_base: str
    ca_file: str | None = None


_WEB_SCHEMES = {"https": "https", "http": "http"}
_GIT_SCHEMES = frozenset({"ssh", "git+ssh", "ssh+git", "scp", "git", ""})


def config_path() -> Path:
    """``$XDG_CONFIG_HOME/madtea/config.json``, else ``~/.config/madtea/config.json``."""
    base = os.environ.get("XDG_CONFIG_HOME", "")
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".config"
    return root / "madtea" / "config.json"


def load_config(path: Path | None = None) -> dict[str, Json]:
    """The user's madtea config; ``{}`` when there is none.

    A file that exists but cannot be read or parsed is an error, not an
    empty config: silently ignoring it could drop a CA file or API URL the
    user set on purpose.
    """
    path = path or config_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise _config_error(path, f"The config file {path} cannot be read ({exc.strerror}).") from None
    try:
        data = _json.loads(text)
    except ValueError as exc:
        raise _config_error(path, f"The config file {path} is not valid JSON ({exc}).") from None
    if not isinstance(data, dict) or not isinstance(data.get("hosts", {}), dict):
        raise _config_error(path, f"The config file {path} must be a JSON object whose \"hosts\" is an object.")
    for key, entry in data.get("hosts", {}).items():
        if not isinstance(entry, dict) or any(
            not isinstance(entry.get(name), (str, type(None))) for name in ("api_url", "ca_file")
        ):
            raise _config_error(path, f"The config entry for host {key!r} in {path} must be an object "
                             "with text api_url and ca_file.")
    return data


def _config_error(path: Path, message: str) -> ForgeError:
    """The config file that cannot be read, as an error that names it (its way on: fix or move the file)."""
    error = ForgeError("BAD_ARGUMENT", message)
    error.config_file = str(path)
    return error


def config_setting(key: str, path: Path | None = None) -> str | None:
    """A person's setting as the config file holds it, None when unset; a file that cannot be read, or a value
    that is not text, is an error."""
    path = path or config_path()
    value = load_config(path).get(key)
    if value is None or isinstance(value, str):
        return value
    raise _config_error(path, f"The setting {key} in the config file {path} is {_json.dumps(value)[:40]}, not text.")


def _clean_host(host: str) -> str:
    name = host.strip().lower()
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    # A host name of letters, digits, '.', '_' and '-', or an IPv6 address (with a zone).
    if not re.fullmatch(r"[a-z0-9._-]+" if ":" not in name else r"[0-9a-f:.%a-z]+", name):
        raise ForgeError("BAD_ARGUMENT", f"{sanitise_snippet(repr(host), limit=80)} is not a host name madtea can use.")
    return f"[{name}]" if ":" in name else name


def resolve_target(host: str, port: int | None = None, scheme: str = "https", path_prefix: str = "", *,
                   config: Mapping[str, Json] | None = None) -> ForgeTarget:
    """The API location for an origin's host, port, scheme and sub-path prefix.

    https keeps a non-default port; http keeps http and its port (the key is
    then ``host:port``); ssh, scp and git origins map to
    ``https://host[/prefix]/api/v1`` — their port is the ssh port, not the
    web one, so a forge on a non-standard https port needs a config entry.
    A config entry ``hosts[<key>]`` (or ``hosts[<host>]``) may set
    ``api_url`` and ``ca_file`` (relative to the config file's folder).
    """
    url_host = _clean_host(host)
    scheme = (scheme or "").lower()
    if scheme in _WEB_SCHEMES:
        web = _WEB_SCHEMES[scheme]
        keep = port if port and port != (443 if web == "https" else 80) else None
    elif scheme in _GIT_SCHEMES:
        web, keep = "https", None
    else:
        raise ForgeError("BAD_ARGUMENT", f"An origin with scheme {scheme!r} cannot be mapped to a forge API.")
    key = f"{url_host}:{keep}" if keep else url_host
    segments = [s for s in (path_prefix or "").strip("/").split("/") if s]
    if any(_escapes(s) for s in segments):
        raise ForgeError("BAD_ARGUMENT", f"The origin's path prefix {path_prefix!r} has '.' or '..' segments.")
    prefix = "".join("/" + urllib.parse.quote(urllib.parse.unquote(s), safe="") for s in segments)
    api_base = f"{web}://{key}{prefix}/api/v1"
    ca_file: str | None = None
    data = load_config() if config is None else config
    hosts = {str(k).strip().lower(): v for k, v in (data.get("hosts") or {}).items()}
    entry = hosts.get(key) or hosts.get(url_host) or hosts.get(url_host.strip("[]")) or {}
    if entry.get("api_url"):
        api_base = _check_base_url(str(entry["api_url"]))
    if entry.get("ca_file"):
        ca = Path(str(entry["ca_file"])).expanduser()
        ca_file = str(ca if ca.is_absolute() else (config_path().parent / ca))
    return ForgeTarget(key, api_base, ca_file)


# --------------------------------------------------------------------------- tokens and credential stores
#
# A token is stored per host in the most secure backend this machine has: the
# OS store (macOS Keychain through ``security``, the Secret Service through
# ``secret-tool``, Windows Credential Manager through ctypes), then the
# ``keyring`` package if it imports. A plaintext file is used only with the
# user's explicit consent, and every use of it is announced. Every backend call
# is time-limited; a backend that is absent, hangs or fails is skipped with a
# diagnostic, so a broken keychain can neither stop a lookup a later store
# would answer nor wedge the caller. Tokens never go into argv, git config,
# logs or error texts.

SERVICE = "madtea"
STORE_TIMEOUT = 15.0  # seconds per backend call: long enough for an unlock prompt, short enough not to wedge
STORES_ENV = "MADTEA_CREDENTIAL_STORES"  # comma-separated backend names to consider, e.g. "keyring,file"
_WINCRED_BLOB_MAX = 2560
_TOKEN_RE = re.compile(r"^[\x21-\x7e]+$")


def _stderr_diagnostic(text: str) -> None:
    sys.stderr.write(f"warning: {text}\n")


_diagnostic: Callable[[str], None] = _stderr_diagnostic


def set_diagnostics(emit: Callable[[str], None]) -> None:
    """Route this module's warnings (store failures, plaintext use) through the caller's emitter."""
    global _diagnostic
    _diagnostic = emit


class StoreFailure(Exception):
    """A credential backend failed or timed out; the message carries no secret."""


class CredentialStore(Protocol):
    """Somewhere a token for a host may live; consulted after the environment."""

    name: str

    def available(self) -> bool:
        ...

    def get(self, host: str) -> str | None:
        ...

    def set(self, host: str, token: str) -> None:
        ...

    def delete(self, host: str) -> bool:
        ...


def _run_tool(argv: Sequence[str], what: str, stdin: bytes | None = None) -> tuple[int, bytes, bytes]:
    """Run a credential tool with a time limit; its whole process group dies on timeout."""
    try:
        return gitops.run_tool(argv, timeout=STORE_TIMEOUT, stdin=stdin)
    except gitops.ToolFailed as exc:
        raise StoreFailure(f"{what} {exc.reason}") from None


def _tool_error(what: str, code: int, err: bytes) -> StoreFailure:
    detail = sanitise_snippet(err, limit=120)
    return StoreFailure(f"{what} failed (exit {code}{': ' + detail if detail else ''})")


def _time_limited(fn: Callable[[], _T], what: str) -> _T:
    """Run *fn* in a daemon thread and give up after STORE_TIMEOUT (a library call cannot be killed)."""
    box: dict[str, _T | BaseException] = {}

    def work() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # handed back to the caller below
            box["error"] = exc

    thread = threading.Thread(target=work, name=f"madtea {what}", daemon=True)
    thread.start()
    thread.join(STORE_TIMEOUT)
    if thread.is_alive():
        raise StoreFailure(f"{what} did not answer within {STORE_TIMEOUT:g} s")
    if "error" in box:
        exc = box["error"]
        raise StoreFailure(f"{what} failed ({type(exc).__name__}: {sanitise_snippet(str(exc), limit=120)})")
    return cast(_T, box["value"])


class _HangMemory:
    """A backend that timed out once is not asked again by this process: each try would stall it anew."""

    hung = False

    def _call(self, fn: Callable[[], _T]) -> _T:
        try:
            return fn()
        except StoreFailure as exc:
            if "did not answer" in str(exc):
                self.hung = True
            raise


class _CommandStore(_HangMemory):
    """A backend driven through a command of the same name; available while it is on PATH and has not hung."""

    name = ""

    def available(self) -> bool:
        import shutil
        return not self.hung and shutil.which(self.name) is not None


class SecurityStore(_CommandStore):
    """macOS Keychain through ``security``; the token reaches it on stdin (``security -i``), never in argv."""

    name = "security"

    def get(self, host: str) -> str | None:
        code, out, err = self._call(lambda: _run_tool(
            ["security", "find-generic-password", "-s", SERVICE, "-a", host, "-w"], "security"))
        if code == 44:  # errSecItemNotFound
            return None
        if code != 0:
            raise _tool_error("security find-generic-password", code, err)
        return out.decode("utf-8", "replace").strip() or None

    def set(self, host: str, token: str) -> None:
        # security -i splits its command line itself: a quote or backslash in
        # the token could end the value early, so such a token is not passed.
        if '"' in token or "\\" in token:
            raise StoreFailure("security cannot take a token with quotes or backslashes")
        command = f'add-generic-password -U -s {SERVICE} -a "{host}" -l "madtea: {host}" -w "{token}"\n'
        code, _out, err = self._call(lambda: _run_tool(["security", "-i"], "security", command.encode()))
        if code != 0:
            raise _tool_error("security add-generic-password", code, err)

    def delete(self, host: str) -> bool:
        code, _out, err = self._call(lambda: _run_tool(
            ["security", "delete-generic-password", "-s", SERVICE, "-a", host], "security"))
        if code == 44:
            return False
        if code != 0:
            raise _tool_error("security delete-generic-password", code, err)
        return True


class SecretToolStore(_CommandStore):
    """The Secret Service (GNOME Keyring, KWallet) through ``secret-tool``; the token goes on stdin."""

    name = "secret-tool"

    def get(self, host: str) -> str | None:
        code, out, err = self._call(lambda: _run_tool(
            ["secret-tool", "lookup", "service", SERVICE, "host", host], "secret-tool"))
        if code == 1 and not err.strip():  # no such item
            return None
        if code != 0:
            raise _tool_error("secret-tool lookup", code, err)
        return out.decode("utf-8", "replace").strip() or None

    def set(self, host: str, token: str) -> None:
        # No trailing newline: secret-tool stores stdin byte for byte.
        code, _out, err = self._call(lambda: _run_tool(
            ["secret-tool", "store", f"--label=madtea: {host}", "service", SERVICE, "host", host],
            "secret-tool", token.encode("utf-8")))
        if code != 0:
            raise _tool_error("secret-tool store", code, err)

    def delete(self, host: str) -> bool:
        present = self.get(host) is not None
        code, _out, err = self._call(lambda: _run_tool(
            ["secret-tool", "clear", "service", SERVICE, "host", host], "secret-tool"))
        if code != 0:
            raise _tool_error("secret-tool clear", code, err)
        return present


CRED_TYPE_GENERIC = 1
_CRED_PERSIST_LOCAL_MACHINE = 2
_ERROR_NOT_FOUND = 1168


@functools.lru_cache(maxsize=1)
def _credential_struct() -> type[ctypes.Structure]:
    import ctypes

    class CREDENTIALW(ctypes.Structure):
        _fields_ = [("Flags", ctypes.c_uint32), ("Type", ctypes.c_uint32), ("TargetName", ctypes.c_wchar_p),
                    ("Comment", ctypes.c_wchar_p), ("LastWritten", ctypes.c_uint32 * 2),
                    ("CredentialBlobSize", ctypes.c_uint32), ("CredentialBlob", ctypes.POINTER(ctypes.c_ubyte)),
                    ("Persist", ctypes.c_uint32), ("AttributeCount", ctypes.c_uint32),
                    ("Attributes", ctypes.c_void_p), ("TargetAlias", ctypes.c_wchar_p),
                    ("UserName", ctypes.c_wchar_p)]

    return CREDENTIALW


class WinCredStore(_HangMemory):
    """Windows Credential Manager through ctypes (advapi32), generic credentials named ``madtea:<host>``."""

    name = "wincred"

    def __init__(self, advapi32: _Advapi32 | None = None, last_error: Callable[[], int] | None = None) -> None:
        self._api = advapi32
        self._last_error = last_error

    def available(self) -> bool:
        return not self.hung and (self._api is not None or sys.platform == "win32")

    def _lib(self) -> tuple[_Advapi32, Callable[[], int]]:
        import ctypes

        if self._api is not None:
            return self._api, self._last_error or (lambda: 0)
        lib = ctypes.WinDLL("advapi32", use_last_error=True)  # type: ignore[attr-defined]
        return lib, ctypes.get_last_error  # type: ignore[attr-defined]

    def get(self, host: str) -> str | None:
        return self._call(lambda: _time_limited(lambda: self._read(host), "Windows Credential Manager"))

    def _read(self, host: str) -> str | None:
        import ctypes

        lib, last_error = self._lib()
        found = ctypes.POINTER(_credential_struct())()
        if not lib.CredReadW(f"{SERVICE}:{host}", CRED_TYPE_GENERIC, 0, ctypes.byref(found)):
            code = last_error()
            if code == _ERROR_NOT_FOUND:
                return None
            raise StoreFailure(f"CredReadW failed (error {code})")
        try:
            cred = found.contents
            blob = ctypes.string_at(cred.CredentialBlob, cred.CredentialBlobSize)
        finally:
            lib.CredFree(found)
        return blob.decode("utf-16-le", "replace").strip() or None

    def set(self, host: str, token: str) -> None:
        self._call(lambda: _time_limited(lambda: self._write(host, token), "Windows Credential Manager"))

    def _write(self, host: str, token: str) -> None:
        import ctypes

        lib, last_error = self._lib()
        blob = token.encode("utf-16-le")
        if len(blob) > _WINCRED_BLOB_MAX:
            raise StoreFailure("the token is longer than Windows Credential Manager keeps")
        buffer = (ctypes.c_ubyte * len(blob)).from_buffer_copy(blob)
        cred = _credential_struct()()
        cred.Type = CRED_TYPE_GENERIC
        cred.TargetName = f"{SERVICE}:{host}"
        cred.Comment = f"madtea token for {host}"
        cred.CredentialBlobSize = len(blob)
        cred.CredentialBlob = ctypes.cast(buffer, ctypes.POINTER(ctypes.c_ubyte))
        cred.Persist = _CRED_PERSIST_LOCAL_MACHINE
        cred.UserName = SERVICE
        if not lib.CredWriteW(ctypes.byref(cred), 0):
            raise StoreFailure(f"CredWriteW failed (error {last_error()})")

    def delete(self, host: str) -> bool:
        return self._call(lambda: _time_limited(lambda: self._remove(host), "Windows Credential Manager"))

    def _remove(self, host: str) -> bool:
        lib, last_error = self._lib()
        if lib.CredDeleteW(f"{SERVICE}:{host}", CRED_TYPE_GENERIC, 0):
            return True
        code = last_error()
        if code == _ERROR_NOT_FOUND:
            return False
        raise StoreFailure(f"CredDeleteW failed (error {code})")


class KeyringStore(_HangMemory):
    """The ``keyring`` package, when it is installed; every call runs in a thread with a time limit."""

    name = "keyring"

    def available(self) -> bool:
        import importlib.util

        if self.hung:
            return False
        if "keyring" in sys.modules:
            return sys.modules["keyring"] is not None
        try:
            return importlib.util.find_spec("keyring") is not None
        except (ImportError, ValueError):
            return False

    def _module(self) -> ModuleType:
        import importlib
        return importlib.import_module("keyring")

    def get(self, host: str) -> str | None:
        value = self._call(lambda: _time_limited(lambda: self._module().get_password(SERVICE, host), "keyring"))
        return value.strip() if isinstance(value, str) and value.strip() else None

    def set(self, host: str, token: str) -> None:
        self._call(lambda: _time_limited(lambda: self._module().set_password(SERVICE, host, token), "keyring"))

    def delete(self, host: str) -> bool:
        def remove() -> bool:
            module = self._module()
            try:
                module.delete_password(SERVICE, host)
            except Exception as exc:  # keyring signals "not there" with its own error class
                if type(exc).__name__ == "PasswordDeleteError":
                    return False
                raise
            return True

        return bool(self._call(lambda: _time_limited(remove, "keyring")))


def hosts_path() -> Path:
    """The plaintext token file, used only with the user's consent: ``<config dir>/madtea/hosts.json``."""
    return config_path().parent / "hosts.json"


def logins_path() -> Path:
    """Which hosts madtea logged in to, as whom, and where the token went (no secrets)."""
    return config_path().parent / "logins.json"


def read_private_json(path: Path) -> dict[str, Json]:
    """A JSON object from a file only its owner can read; ``{}`` when it does not exist."""
    try:
        raw = gitops.read_private(path, 1 << 20)
    except gitops.UnsafeFile as exc:
        raise StoreFailure(str(exc)) from None
    except OSError as exc:
        raise StoreFailure(f"{path} cannot be opened ({exc.strerror})") from None
    if raw is None:
        return {}
    try:
        data = _json.loads(raw.decode("utf-8"))
    except ValueError:
        raise StoreFailure(f"{path} is not valid JSON") from None
    if not isinstance(data, dict):
        raise StoreFailure(f"{path} must hold a JSON object")
    return data


def _write_private_json(path: Path, data: Mapping[str, Json]) -> None:
    """Replace *path* with *data* whole, 0600 from its creation, synced to survive a crash (a token, a login)."""
    gitops.write_private(path, _json.dumps(data, indent=2, sort_keys=True).encode("utf-8") + b"\n")


class FileStore:
    """The plaintext last resort: a 0600 JSON file, owner and mode checked on every read, announced when stored."""

    name = "file"

    def available(self) -> bool:
        return True

    def _hosts(self) -> dict[str, Json]:
        hosts = read_private_json(hosts_path()).get("hosts", {})
        return hosts if isinstance(hosts, dict) else {}

    def get(self, host: str) -> str | None:
        entry = self._hosts().get(host)
        token = entry.get("token") if isinstance(entry, dict) else None
        if not isinstance(token, str) or not token.strip():
            return None
        # Said at login and by `auth status` and `doctor`, not at every read: a warning on every command (and in
        # every agent's tool result, where nothing can be done about it) is a warning nobody reads.
        return token.strip()

    def set(self, host: str, token: str) -> None:
        hosts = self._hosts()
        hosts[host] = {"token": token}
        _write_private_json(hosts_path(), {"hosts": hosts})
        _diagnostic(f"the token for {host} is stored in plain text in {hosts_path()} (mode 0600).")

    def delete(self, host: str) -> bool:
        hosts = self._hosts()
        if host not in hosts:
            return False
        del hosts[host]
        if hosts:
            _write_private_json(hosts_path(), {"hosts": hosts})
        else:
            hosts_path().unlink()
        return True

    def hosts(self) -> list[str]:
        """The hosts the file holds tokens for (the file is read, so its checks apply)."""
        return sorted(self._hosts())


_STORES: list[CredentialStore] = [SecurityStore(), SecretToolStore(), WinCredStore(), KeyringStore(), FileStore()]
_BUILTIN = frozenset({"security", "secret-tool", "wincred", "keyring", "file"})


def register_store(store: CredentialStore) -> None:
    """Add a credential store; stores are consulted in registration order."""
    if store not in _STORES:
        _STORES.append(store)


def credential_stores() -> tuple[CredentialStore, ...]:
    """The stores a lookup consults, in order. ``MADTEA_CREDENTIAL_STORES`` (a comma-separated list of
    security, secret-tool, wincred, keyring, file) narrows madtea's own backends; others always count."""
    chosen = os.environ.get(STORES_ENV, "").strip()
    if not chosen:
        return tuple(_STORES)
    names = {part.strip().lower() for part in chosen.split(",")}
    return tuple(s for s in _STORES if getattr(s, "name", "") not in _BUILTIN or s.name in names)


def describe_source(source: str) -> str:
    """Where a token lives, in words (never the token): an environment variable, a backend, a file."""
    if source.startswith("env:"):
        return f"the environment variable {source[4:]}"
    return {
        "security": "the macOS Keychain (security)",
        "secret-tool": "the Secret Service (secret-tool)",
        "wincred": "Windows Credential Manager",
        "keyring": "the keyring package",
        "file": f"the plaintext file {hosts_path()}",
        "none": "nowhere (no credential found)",
    }.get(source, source)


def token_env_var(host: str) -> str:
    """``MADTEA_TOKEN_<HOST>``: the host upper-cased, every non-alphanumeric character as ``_``."""
    return "MADTEA_TOKEN_" + re.sub(r"[^A-Z0-9]", "_", host.strip().upper())


def host_key(host: str) -> str:
    """The credential key for *host*: lower-cased, surrounding space removed."""
    return host.strip().lower()


def token_for(host: str, launch_host: str | None = None, *,
              stores: Sequence[CredentialStore] | None = None) -> tuple[str | None, str]:
    """The token for *host* and where it came from (``"env:NAME"``, a store's name, or ``"none"``).

    Order: ``MADTEA_TOKEN_<HOST>``; then ``MADTEA_TOKEN``, only when *host*
    is the launch host (a generic token must not travel to other forges);
    then each credential store. A store that is absent is passed over; one
    that fails or hangs is skipped with a diagnostic.
    """
    key = host_key(host)
    name = token_env_var(key)
    value = os.environ.get(name, "").strip()
    if value:
        return value, f"env:{name}"
    if launch_host and key == host_key(launch_host):
        value = os.environ.get("MADTEA_TOKEN", "").strip()
        if value:
            return value, "env:MADTEA_TOKEN"
    for store in credential_stores() if stores is None else stores:
        try:
            if hasattr(store, "available") and not store.available():
                continue
            found = store.get(key)
        except Exception as exc:  # a store's failure is "not found here", said aloud
            _report_once(f"the credential store {getattr(store, 'name', '?')} failed for {key} "
                         f"({scrub(str(exc)) or type(exc).__name__}); trying the next one.")
            continue
        if found and found.strip():
            _remember_secret(found.strip())
            return found.strip(), store.name
    return None, "none"


# A store that fails the same way on every call (a Secret Service that is not
# running on a headless machine) is reported once per process, not per call.
_REPORTED: set[str] = set()


def _report_once(text: str) -> None:
    if text not in _REPORTED:
        _REPORTED.add(text)
        _diagnostic(text)


def check_token_text(token: str) -> str:
    """*token* without surrounding space, or BAD_ARGUMENT if it could not be an API token."""
    token = token.strip()
    if not _TOKEN_RE.match(token):
        raise ForgeError("BAD_ARGUMENT", "That is not a token: it is empty or has spaces or control characters.")
    _remember_secret(token)
    return token


def store_token(host: str, token: str, *, insecure: bool = False) -> str:
    """Store *token* for *host* in the first secure backend that works; return that backend's name.

    Each write is read back before it counts. With *insecure* (the user's
    explicit consent) and no secure backend working, the plaintext file is
    used; without it, the refusal names what was tried.
    """
    key = host_key(host)
    token = check_token_text(token)
    tried: list[str] = []
    for store in credential_stores():
        if store.name == "file":
            continue
        if not store.available():
            tried.append(f"{store.name}: not available here")
            continue
        try:
            store.set(key, token)
            if store.get(key) != token:
                raise StoreFailure("the token did not read back")
        except Exception as exc:  # the next backend may work
            reason = scrub(str(exc)) or type(exc).__name__
            tried.append(f"{store.name}: {reason}")
            _diagnostic(f"the credential store {store.name} could not keep the token for {key} ({reason}).")
            continue
        _drop_plaintext(key)
        return store.name
    files = [s for s in credential_stores() if s.name == "file"]
    if insecure and files:
        files[0].set(key, token)
        return files[0].name
    raise ForgeError("NOT_SUPPORTED", f"No secure credential store works on this machine "
                     f"({'; '.join(tried) or 'none is enabled'}), so the token for {key} was not stored. "
                     f"Log in again with --insecure-storage to keep it in the plaintext file {hosts_path()} "
                     f"(mode 0600) instead.")


def _drop_plaintext(key: str) -> None:
    # A secure copy now exists: an older plaintext copy would only be a leak.
    try:
        if FileStore().delete(key):
            _diagnostic(f"removed the older plaintext copy of the token for {key} from {hosts_path()}.")
    except (StoreFailure, OSError):
        pass


def delete_token(host: str) -> list[str]:
    """Remove *host*'s token from every store that has it; return their names."""
    key = host_key(host)
    removed = []
    for store in credential_stores():
        try:
            if store.available() and store.delete(key):
                removed.append(store.name)
        except Exception as exc:  # the others are still cleaned
            _diagnostic(f"the credential store {store.name} could not remove the token for {key} "
                        f"({scrub(str(exc)) or type(exc).__name__}).")
    return removed


def record_login(host: str, user: str | None, store: str, api: str | None = None) -> None:
    """Remember (without the token) that *host* is logged in as *user*, its token in *store*, its API at *api*."""
    data = _logins()
    data[host_key(host)] = {"user": user, "store": store, "api": api}
    _write_private_json(logins_path(), {"hosts": data})


def forget_login(host: str) -> None:
    data = _logins()
    if data.pop(host_key(host), None) is not None:
        _write_private_json(logins_path(), {"hosts": data})


def _logins() -> dict[str, dict[str, Json]]:
    try:
        hosts = read_private_json(logins_path()).get("hosts", {})
    except StoreFailure as exc:
        _diagnostic(str(exc))
        return {}
    return {k: v for k, v in hosts.items() if isinstance(v, dict)} if isinstance(hosts, dict) else {}


def known_logins() -> dict[str, dict[str, Json]]:
    """Hosts madtea logged in to: ``{host: {"user": ..., "store": ...}}`` (no secrets)."""
    return _logins()


# --------------------------------------------------------------------------- tea's logins

@dataclass(frozen=True)
class TeaLogin:
    """One login from tea's config: its name, web URL, user and token."""

    name: str
    url: str
    user: str
    token: str = field(repr=False)


def tea_config_path() -> Path:
    """Where tea keeps its logins: ``<config dir>/tea/config.yml``."""
    return config_path().parent.parent / "tea" / "config.yml"


def _yaml_scalar(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] == "'":
        return text[1:-1].replace("''", "'")
    if len(text) >= 2 and text[0] == text[-1] == '"':
        try:
            value = _json.loads(text)
        except ValueError:
            return text[1:-1]
        return value if isinstance(value, str) else text[1:-1]
    return re.sub(r"\s+#.*$", "", text)


def parse_tea_logins(text: str) -> list[TeaLogin]:
    """The ``logins:`` list of tea's YAML config: the small subset tea writes, nothing more.

    Each item is a block of ``key: value`` lines starting with ``- ``; only
    scalar values are read (nested blocks are skipped), and items without a
    url and token are dropped.
    """
    items: list[dict[str, str]] = []
    inside, item_indent, key_indent = False, None, None
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        indent = len(line) - len(line.lstrip(" "))
        if indent == 0 and not line.startswith("-"):
            inside = line.split(":", 1)[0].strip() == "logins"
            item_indent = key_indent = None
            continue
        if not inside:
            continue
        body = line.strip()
        if body.startswith("- ") or body == "-":
            item_indent, key_indent = indent, None
            items.append({})
            rest = body[1:]
            body = rest.strip()
            indent += 1 + len(rest) - len(rest.lstrip(" "))
            if not body:
                continue
        if not items or item_indent is None or indent <= item_indent:
            continue
        if key_indent is None:
            key_indent = indent
        if indent != key_indent:  # a nested block's line, not one of the item's own keys
            continue
        key, sep, value = body.partition(":")
        if sep and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key.strip()) and value.strip():
            items[-1].setdefault(key.strip(), _yaml_scalar(value))
    return [TeaLogin(i.get("name", ""), i["url"], i.get("user", ""), i["token"])
            for i in items if i.get("url") and i.get("token")]


def read_tea_logins(path: Path | None = None) -> list[TeaLogin]:
    """tea's logins from its config file; ``[]`` when there is none."""
    path = path or tea_config_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise ForgeError("BAD_ARGUMENT", f"tea's config {path} cannot be read ({exc.strerror}).") from None
    return parse_tea_logins(text)


def target_for_url(url: str) -> ForgeTarget:
    """The forge target for a web URL such as ``https://gitea.example.com[:port][/prefix]``."""
    parts = _split_checked(url if "://" in url else f"https://{url}")
    return resolve_target(parts.hostname or "", parts.port, parts.scheme, parts.path)
