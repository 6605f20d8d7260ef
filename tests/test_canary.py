"""The token canary: a unique token, configured in the environment or in a store, never shows up anywhere but
on the wire to its own forge.

Every tool that touches the forge or a remote runs through ``madtea.run`` and the CLI, with successes and
failures (a rejected push, a remote hook's refusal, a revoked token). Git talks smart HTTP to a loopback front
(``git http-backend`` behind Basic auth, the API passed through to the fake forge), so pushes and pulls really
ask madtea's credential helper. Then everything is scanned for the canary: results, diagnostics, CLI output,
every file under the temporary home and in every repository, the argv of every process started and the
environment of every git child madtea spawned.
"""
from __future__ import annotations

import base64
import http.client
import json
import os
import subprocess
import sys
import textwrap
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import unquote

import pytest

import forge
import gitops
import madtea
from fakeforge import FakeForge

pytestmark = pytest.mark.slow  # every surface under a canary token: not in the fast lane

ROOT = Path(__file__).resolve().parent.parent
REAL_GIT = subprocess.run(["sh", "-c", "command -v git"], capture_output=True, text=True).stdout.strip()


# --------------------------------------------------------------------------- a git front for the fake forge

class GitFront:
    """``http://127.0.0.1:PORT``: git's smart HTTP over the fake forge's bare repositories, behind Basic auth
    checked against the fake's tokens (every git request needs it), and ``/api/`` passed through."""

    def __init__(self, fake: FakeForge, home: Path) -> None:
        self.fake = fake
        self.home = home
        self.git_requests: list[tuple[str, str, str | None]] = []  # method, path, authenticated login
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _FrontHandler)
        self._server.front = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02},
                                        daemon=True)
        self._thread.start()

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self._server.server_address[1]}"

    def remote_url(self, owner: str = "acme", repo: str = "web") -> str:
        return f"http://{self.host}/{owner}/{repo}.git"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def forward(self, method: str, path: str, headers: Any, body: bytes) -> tuple[int, list, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.fake.port, timeout=30)
        keep = {k: v for k, v in headers.items() if k.lower() in ("authorization", "content-type", "accept")}
        conn.request(method, path, body=body or None, headers=keep)
        resp = conn.getresponse()
        data = resp.read()
        conn.close()
        passed = [(k, v) for k, v in resp.getheaders()
                  if k.lower() in ("content-type", "link", "x-total-count", "location", "retry-after")]
        return resp.status, passed, data

    def git(self, method: str, target: str, headers: Any, body: bytes) -> tuple[int, list, bytes]:
        path, _, query = target.partition("?")
        login = None
        auth = headers.get("Authorization") or ""
        if auth.lower().startswith("basic "):
            user, _, password = base64.b64decode(auth[6:]).decode("utf-8", "replace").partition(":")
            token = self.fake.tokens.get(password) or (self.fake.tokens.get(user) if not password else None)
            login = token.login if token else None
        self.git_requests.append((method, path, login))
        if login is None:
            return 401, [("WWW-Authenticate", 'Basic realm="Gitea"'), ("Content-Type", "text/plain")], b"no\n"
        env = {"GIT_PROJECT_ROOT": str(self.fake.bare_root), "GIT_HTTP_EXPORT_ALL": "1",
               "PATH_INFO": unquote(path), "QUERY_STRING": query, "REQUEST_METHOD": method,
               "CONTENT_TYPE": headers.get("Content-Type") or "", "CONTENT_LENGTH": str(len(body)),
               "REMOTE_USER": login, "REMOTE_ADDR": "127.0.0.1", "HOME": str(self.home),
               "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "PATH": os.defpath}
        if headers.get("Content-Encoding"):
            env["HTTP_CONTENT_ENCODING"] = headers["Content-Encoding"]
        if headers.get("Git-Protocol"):
            env["GIT_PROTOCOL"] = headers["Git-Protocol"]
        done = subprocess.run([REAL_GIT, "http-backend"], input=body, env=env, capture_output=True, timeout=60)
        head, sep, data = done.stdout.partition(b"\r\n\r\n")
        if not sep:
            head, _, data = done.stdout.partition(b"\n\n")
        status, out = 200, []
        for line in head.decode("latin-1").splitlines():
            key, _, value = line.partition(":")
            if key.lower() == "status":
                status = int(value.split()[0])
            elif key:
                out.append((key.strip(), value.strip()))
        return status, out, data


class _FrontHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def _body(self) -> bytes:
        if (self.headers.get("Transfer-Encoding") or "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _handle(self) -> None:
        front: GitFront = self.server.front  # type: ignore[attr-defined]
        body = self._body()
        if self.path.startswith("/api/"):
            status, headers, data = front.forward(self.command, self.path, self.headers, body)
        else:
            status, headers, data = front.git(self.command, self.path, self.headers, body)
        self.send_response(status)
        for key, value in headers:
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _handle


# --------------------------------------------------------------------------- recording

class Recorder:
    """What to scan: texts, the argv of every process, the environment of every git child."""

    def __init__(self) -> None:
        self.texts: list[tuple[str, str]] = []
        self.argv: list[list[str]] = []
        self.git_envs: list[dict[str, str]] = []

    def text(self, where: str, value: Any) -> None:
        self.texts.append((where, value if isinstance(value, str) else json.dumps(value, default=str)))

    def result(self, where: str, result: madtea.Result) -> madtea.Result:
        self.text(f"{where} text", result.text)
        self.text(f"{where} data", result.data)
        self.text(f"{where} error", result.error)
        self.text(f"{where} notes", result.notes)
        self.text(f"{where} mcp", madtea.render_text(result, "mcp"))
        self.text(f"{where} cli", madtea.render_text(result, "cli"))
        return result


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> Recorder:
    rec = Recorder()
    real_git = gitops.git

    def recording_git(*args: Any, **kwargs: Any) -> gitops.GitResult:
        rec.argv.append(["git", *(os.fspath(a) for a in args)])
        rec.git_envs.append(gitops._child_env(kwargs.get("env")))
        return real_git(*args, **kwargs)

    monkeypatch.setattr(gitops, "git", recording_git)
    real_popen = subprocess.Popen

    class RecordingPopen(real_popen):  # type: ignore[misc, valid-type]
        def __init__(self, args: Any, *rest: Any, **kwargs: Any) -> None:
            rec.argv.append([os.fspath(a) for a in args] if isinstance(args, (list, tuple)) else [str(args)])
            super().__init__(args, *rest, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", RecordingPopen)
    return rec


# --------------------------------------------------------------------------- the world

@pytest.fixture
def world(tmp_path: Path, hermetic_seal: Path, monkeypatch: pytest.MonkeyPatch,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    canary = f"canary{uuid.uuid4().hex}"
    with FakeForge("gitea", base_dir=tmp_path_factory.mktemp("canary-forge")) as fake:
        fake.add_token("alice", canary)
        hook = fake.bare_path("acme", "web") / "hooks" / "pre-receive"
        hook.write_text("#!/bin/sh\nwhile read old new ref; do\n  if [ \"$ref\" = refs/heads/blocked ]; then\n"
                        "    echo 'pushes to blocked are closed by policy' >&2; exit 1\n  fi\ndone\n")
        hook.chmod(0o755)
        front = GitFront(fake, tmp_path / "backend-home")
        (tmp_path / "backend-home").mkdir()
        monkeypatch.setenv("GIT_ALLOW_PROTOCOL", "file:http")
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        log = tmp_path / "git-children.log"
        wrapper = bin_dir / "git"
        wrapper.write_text(textwrap.dedent(f"""\
            #!/bin/sh
            if [ -n "$MADTEA_CANARY_LOG" ]; then
              {{ printf 'argv:'; printf ' %s' "$@"; printf '\\n'; env; printf -- '----\\n'; }} >> "$MADTEA_CANARY_LOG"
            fi
            exec {REAL_GIT} "$@"
            """))
        wrapper.chmod(0o755)
        monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
        repo = hermetic_seal / "work" / "web"
        subprocess.run([REAL_GIT, "clone", "-q", str(fake.bare_path()), str(repo)], check=True)
        subprocess.run([REAL_GIT, "-C", str(repo), "remote", "set-url", "origin", front.remote_url()], check=True)
        try:
            yield {"canary": canary, "fake": fake, "front": front, "repo": repo, "log": log, "bin": bin_dir,
                   "seal": hermetic_seal, "tmp": tmp_path}
        finally:
            front.close()


def _configure(world: dict[str, Any], source: str, monkeypatch: pytest.MonkeyPatch) -> None:
    canary, host = world["canary"], world["front"].host
    if source == "env":
        monkeypatch.setenv("MADTEA_TOKEN", canary)
        return
    store_dir = world["tmp"] / "keychain"
    store_dir.mkdir()
    data = store_dir / "items.json"
    data.write_text(json.dumps({f"madtea|{host}": canary}))
    tool = world["bin"] / "secret-tool"
    tool.write_text(f"#!{sys.executable}\n" + textwrap.dedent(f"""\
        import json, sys
        args = sys.argv[1:]
        with open({str(store_dir / 'argv.log')!r}, "a") as log:
            log.write(json.dumps(args) + "\\n")
        items = json.load(open({str(data)!r}))
        pairs = dict(zip(args[1::2], args[2::2]))
        if args[0] == "lookup":
            value = items.get(pairs.get("service", "") + "|" + pairs.get("host", ""))
            if value is None:
                sys.exit(1)
            sys.stdout.write(value)
        """))
    tool.chmod(0o755)
    monkeypatch.setenv("MADTEA_CREDENTIAL_STORES", "secret-tool")
    forge.record_login(host, "alice", "secret-tool", f"http://{host}/api/v1")


def _write(repo: Path, name: str, text: str) -> None:
    (repo / name).write_text(text, encoding="utf-8")


# --------------------------------------------------------------------------- the canary

@pytest.mark.parametrize("source", ["env", "store"])
def test_the_canary_never_leaks(world: dict[str, Any], recorder: Recorder, source: str,
                                monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    _configure(world, source, monkeypatch)
    canary, fake, front, repo = world["canary"], world["fake"], world["front"], world["repo"]
    ctx = madtea.Context("mcp", repo)

    def run(tool: str, **args: Any) -> madtea.Result:
        return recorder.result(f"{tool} {args}", madtea.run(tool, args, ctx))

    def ok(tool: str, **args: Any) -> madtea.Result:
        result = run(tool, **args)
        assert not result.is_error, madtea.render_text(result, "mcp")
        return result

    def cli(*args: str) -> subprocess.CompletedProcess:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "MADTEA_CANARY_LOG": str(world["log"])}
        done = subprocess.run([sys.executable, "-m", "madtea", *args], cwd=repo, capture_output=True, text=True,
                              env=env, timeout=120)
        recorder.text(f"cli {args} stdout", done.stdout)
        recorder.text(f"cli {args} stderr", done.stderr)
        return done

    # Reads and writes on the forge.
    who = ok("madt_whoami")
    assert who.data["user"] == "alice"
    ok("madt_issues", action="list")
    issue = ok("madt_issues", action="create", title="Canary issue", body="Checking for leaks.")
    number = issue.data["number"]
    ok("madt_issues", action="view", number=number, comments=True)
    ok("madt_issues", action="comment", number=number, body="Still checking.")
    ok("madt_pr", action="list")
    ok("madt_labels", action="list")
    ok("madt_repo", action="view")
    ok("madt_repo", action="branches")
    ok("madt_search", action="issues", q="Canary")
    ok("madt_notifications", action="list")
    ok("madt_api_call", path="/user")
    ok("madt_api_call", path="/repos/acme/web")

    # Git transport through the helper: push, pull, then finish end to end.
    ok("madt_branch_create", name="feat", checkout=True)
    _write(repo, "feat.txt", "one\n")
    ok("madt_commit", files=["feat.txt"], title="Add feat")
    ok("madt_push", branch="feat", set_upstream=True)
    ok("madt_pull", branch="feat")
    assert fake.branch_sha("acme", "web", "feat") == gitops.head_sha(gitops.discover(repo), "refs/heads/feat")
    ok("madt_switch", branch="main")
    ok("madt_branch_create", name="feat2", checkout=True)
    _write(repo, "feat2.txt", "two\n")
    finished = ok("madt_finish", title="Add feat2", files=["feat2.txt"], closes=[number])
    assert "Merged PR #" in finished.text

    # Failures: a push the remote refuses as non-fast-forward, one its hook refuses, a pull that cannot move.
    ok("madt_switch", branch="feat")
    fake.commit("acme", "web", "feat", {"server.txt": "theirs\n"}, "Server side change")
    _write(repo, "feat.txt", "one\nmine\n")
    ok("madt_commit", files=["feat.txt"], title="Local change")
    assert run("madt_push", branch="feat").is_error
    assert run("madt_pull", branch="feat").is_error
    ok("madt_branch_create", name="blocked", checkout=True)
    assert run("madt_push", branch="blocked").is_error

    # The same through the CLI.
    for args in (("whoami",), ("issue", "list"), ("issue", "view", str(number)), ("pr", "list"),
                 ("api", "/user"), ("status",), ("auth", "status")):
        done = cli(*args)
        assert done.returncode == 0, (args, done.stderr)
    subprocess.run([REAL_GIT, "-C", str(repo), "switch", "-q", "-c", "feat3", "main"], check=True)
    _write(repo, "feat3.txt", "three\n")
    assert cli("commit", "-t", "Add feat3", "feat3.txt").returncode == 0
    pushed = cli("push", "-u")
    assert pushed.returncode == 0, pushed.stderr
    assert cli("pull").returncode == 0
    assert cli("push", "blocked").returncode == 1

    # Positive evidence: git authenticated as alice through the helper, on both surfaces.
    assert ("POST", "/acme/web.git/git-receive-pack", "alice") in front.git_requests
    assert any(r.user == "alice" for r in fake.find_requests("POST", "/api/v1/repos/acme/web/issues"))

    # The forge stops accepting the token: every call fails, and says so without the token.
    del fake.tokens[canary]
    refused = run("madt_api_call", path="/user")
    assert refused.error["code"] == "AUTH_MISSING"
    assert f"madtea auth login --hostname {front.host}" in refused.error["user_action"]
    assert run("madt_issues", action="list").is_error
    run("madt_whoami")
    ok("madt_branch_create", name="feat4", start_point="main", checkout=True)
    _write(repo, "feat4.txt", "four\n")
    ok("madt_commit", files=["feat4.txt"], title="Add feat4")
    denied = run("madt_push", branch="feat4")
    assert denied.error["code"] == "AUTH_MISSING", denied.text
    assert f"--hostname {front.host}" in denied.error["user_action"]
    assert run("madt_pull", branch="main").error["code"] == "AUTH_MISSING"
    for args in (("whoami",), ("issue", "list"), ("api", "/user"), ("push", "feat4"), ("auth", "status")):
        cli(*args)
    assert any(login is None for _m, _p, login in front.git_requests)

    recorder.text("captured stdout/stderr", capsys.readouterr())
    _scan(canary, recorder, world)


def _scan(canary: str, recorder: Recorder, world: dict[str, Any]) -> None:
    hits: list[str] = []
    for where, text in recorder.texts:
        if canary in text:
            hits.append(where)
    hits += [f"argv {argv}" for argv in recorder.argv if any(canary in word for word in argv)]
    hits += [f"git child env {k}" for env in recorder.git_envs for k, v in env.items() if canary in v]
    assert recorder.git_envs and recorder.argv
    assert not [env for env in recorder.git_envs if any(k.startswith("MADTEA_TOKEN") for k in env)]
    log = world["log"]
    assert log.exists() and " push --porcelain" in log.read_text(), "the CLI's git children were not recorded"
    roots = [world["seal"], world["fake"].base_dir, log.parent / "keychain" / "argv.log"]
    for root in roots:
        paths = [root] if root.is_file() else [p for p in root.rglob("*") if p.is_file() and not p.is_symlink()]
        for path in paths:
            if canary.encode() in path.read_bytes():
                hits.append(f"file {path}")
    if log.exists() and canary in log.read_text():
        hits.append(f"git child argv or environment in {log}")
    for repo in (world["repo"], world["fake"].bare_path()):
        history = subprocess.run([REAL_GIT, "-C", str(repo), "log", "--all", "-p", "--format=%H%n%B"],
                                 capture_output=True, text=True).stdout
        config = subprocess.run([REAL_GIT, "-C", str(repo), "config", "--list", "--show-origin"],
                                capture_output=True, text=True).stdout
        if canary in history + config:
            hits.append(f"history or config of {repo}")
    assert not hits, hits


def test_push_without_any_credential_says_who_must_log_in(world: dict[str, Any], recorder: Recorder) -> None:
    repo, front = world["repo"], world["front"]
    ctx = madtea.Context("mcp", repo)
    assert not madtea.run("madt_branch_create", {"name": "feat", "checkout": True}, ctx).is_error
    _write(repo, "f.txt", "x\n")
    assert not madtea.run("madt_commit", {"files": ["f.txt"], "title": "Add f"}, ctx).is_error
    result = madtea.run("madt_push", {"branch": "feat"}, ctx)
    assert result.error["code"] == "AUTH_MISSING"
    assert result.text.startswith(f"git could not authenticate to {front.host}")
    assert result.error["user_action"].startswith(f"Ask the user to run `madtea auth login --hostname {front.host}`")
    # Git asked the helper, which had nothing to give, and no prompt could wait for a person.
    assert [login for _m, _p, login in front.git_requests] == [None]
    helper = [env for env in recorder.git_envs if env.get("GIT_CONFIG_COUNT")]
    assert helper and helper[-1]["GIT_CONFIG_VALUE_1"] == madtea.helper_command()


@pytest.mark.parametrize("source", ["env", "store"])
def test_no_hook_reaches_the_token_on_a_push_or_pull(world: dict[str, Any], recorder: Recorder, source: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The repository's pre-push hook, a core.hooksPath hook (.husky) and a reference-transaction hook each try
    to get the token: by ``git credential fill`` for the forge's host, and from the environment they inherit
    (the helper's file). None of them runs inside madtea's transport calls; the local merge's hooks run with
    nothing of the transport's environment, so none gets it."""
    _configure(world, source, monkeypatch)
    canary, repo, front = world["canary"], world["repo"], world["front"]
    caught = world["tmp"] / "hook-caught"
    body = textwrap.dedent(f"""\
        #!/bin/sh
        {{ echo "hook $0"; env; printf 'protocol=http\\nhost={front.host}\\n\\n' | git credential fill;
          for f in $(env | sed -n 's/^[A-Z_]*FILE[A-Z_]*=//p'); do cat "$f"; done; }} >> '{caught}' 2>&1
        exit 0
        """)
    for folder in (repo / ".git" / "hooks", repo / ".husky"):
        folder.mkdir(exist_ok=True)
        for name in ("pre-push", "reference-transaction", "post-merge", "post-checkout"):
            (folder / name).write_text(body)
            (folder / name).chmod(0o755)
    ctx = madtea.Context("mcp", repo)
    subprocess.run([REAL_GIT, "-C", str(repo), "switch", "-q", "-c", "feat"], check=True)
    _write(repo, "f.txt", "x\n")
    subprocess.run([REAL_GIT, "-C", str(repo), "add", "f.txt"], check=True)
    subprocess.run([REAL_GIT, "-C", str(repo), "commit", "-q", "-m", "Add f"], check=True)
    assert caught.read_text().startswith("hook ")  # git itself runs these hooks (here, for the commit)
    caught.unlink()
    for hooks in (None, ".husky"):
        if hooks:
            subprocess.run([REAL_GIT, "-C", str(repo), "config", "core.hooksPath", hooks], check=True)
        pushed = madtea.run("madt_push", {"branch": "feat"}, ctx)
        assert not pushed.is_error, madtea.render_text(pushed, "mcp")
        pulled = madtea.run("madt_pull", {"branch": "feat"}, ctx)
        assert not pulled.is_error, madtea.render_text(pulled, "mcp")
        _write(repo, "f.txt", f"{hooks}\n")
        subprocess.run([REAL_GIT, "-C", str(repo), "commit", "-q", "-am", "more"], check=True, env={
            **os.environ, "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.hooksPath",
            "GIT_CONFIG_VALUE_0": "/dev/null"})
    assert any(login == "alice" for _m, _p, login in front.git_requests)  # the push itself was authenticated
    seen = caught.read_text() if caught.exists() else ""
    assert canary not in seen and "password=" not in seen
    # No hook runs inside a transport call; pull's fast-forward is local, as git's own merge, and its hooks
    # (reference-transaction, post-merge) run without any of the transport's credential environment.
    ran = {line.rsplit("/", 1)[-1] for line in seen.splitlines() if line.startswith("hook ")}
    assert ran <= {"reference-transaction", "post-merge"}, ran
    assert madtea.helper_command() not in seen
    assert not [name for name in (madtea._HELPER_FILE_ENV, madtea._HELPER_HOST_ENV) if f"{name}=" in seen]
