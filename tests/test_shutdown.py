"""A real ``madtea mcp`` stdio child that is hung up on or signalled mid-call leaves nothing behind.

Each test starts the server, sends one slow call (a push to a remote whose pre-receive hook
sleeps, or a forge read trickled one byte at a time), waits until it is under way, then closes
stdin or sends a signal. Afterwards no process the server started is alive, no token file is left,
stderr holds no traceback and the interrupted push is visible for what it is.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import madtea
from remote_env import Env, child_env, env  # noqa: F401 - fixtures
from topologies import run_git

pytest.importorskip("mcp")
pytestmark = [pytest.mark.slow,  # many processes: not in the fast lane
              pytest.mark.skipif(not os.path.isdir("/proc/self") or os.name != "posix",
                                 reason="the process-tree checks read /proc")]


class Server:
    """A ``madtea mcp`` child spoken to in raw JSON-RPC lines (the legacy handshake)."""

    def __init__(self, cwd: Path, **extra_env: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "madtea", "mcp"], cwd=cwd, env=child_env(**extra_env),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self._id = 0
        answer = self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                             "clientInfo": {"name": "test", "version": "0"}})
        assert "result" in answer, answer
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._id += 1
        self.send({"jsonrpc": "2.0", "id": self._id, "method": method, "params": params})
        assert self.proc.stdout is not None
        return json.loads(self.proc.stdout.readline())

    def start_call(self, tool: str, args: dict[str, Any]) -> None:
        self._id += 1
        self.send({"jsonrpc": "2.0", "id": self._id, "method": "tools/call",
                   "params": {"name": tool, "arguments": args}})

    def descendants(self) -> dict[int, str]:
        """pid -> command line of every live process below the server (they run in their own sessions)."""
        children: dict[int, list[int]] = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                parent = _ppid(int(entry))
                if parent is not None:
                    children.setdefault(parent, []).append(int(entry))
        found: dict[int, str] = {}
        todo = list(children.get(self.proc.pid, []))
        while todo:
            pid = todo.pop()
            found[pid] = _cmdline(pid)
            todo += children.get(pid, [])
        return found

    def finish(self, how: str) -> tuple[int, str]:
        """Hang up or signal; the exit status and stderr, within a bound."""
        if how == "eof":
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        else:
            self.proc.send_signal(getattr(signal, how))
        try:
            code = self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
            pytest.fail(f"the server was still running 20 s after {how}")
        assert self.proc.stderr is not None
        return code, self.proc.stderr.read().decode("utf-8", "replace")


def _ppid(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return int(fields[1]) if fields[0] != "Z" else None


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def _alive(pid: int, cmdline: str) -> bool:
    """Still running (not a zombie) as the same program."""
    return _ppid(pid) is not None and _cmdline(pid) == cmdline


def _wait_for(predicate: Any, what: str, seconds: float = 30.0) -> None:
    give_up = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > give_up:
            pytest.fail(f"gave up waiting for {what}")
        time.sleep(0.05)


def _token_files(pid: int) -> list[str]:
    """The token files process *pid* made (other processes on the machine may hold their own)."""
    import tempfile

    found = []
    for folder in {os.environ["XDG_RUNTIME_DIR"], tempfile.gettempdir()}:
        found += [n for n in os.listdir(folder) if n.startswith(f"madtea-git-{pid}-")]
    return found


def _slow_remote(e: Env, hook: str | None = "sleep 30") -> str:
    """feat/x is pushed once; a second commit waits to be pushed to a remote whose pre-receive hook runs *hook*."""
    run_git(e.clone, "switch", "-q", "-c", "feat/x")
    (e.clone / "b.txt").write_text("b\n")
    run_git(e.clone, "add", "b.txt")
    run_git(e.clone, "commit", "-q", "-m", "first")
    run_git(e.clone, "push", "-q", "-u", "origin", "feat/x")
    pushed = run_git(e.clone, "rev-parse", "HEAD")
    (e.clone / "b.txt").write_text("b2\n")
    run_git(e.clone, "commit", "-q", "-am", "second")
    if hook is not None:
        path = e.forge.bare_path("acme", "web") / "hooks" / "pre-receive"
        path.write_text(f"#!/bin/sh\n{hook}\n")
        path.chmod(0o755)
    return pushed


@pytest.mark.parametrize("how", ["eof", "SIGTERM", "SIGINT", "SIGHUP"])
def test_a_push_in_flight_is_ended_with_nothing_left(env: Env, how: str) -> None:
    pushed = _slow_remote(env)
    server = Server(env.clone)
    server.start_call("madt_push", {})
    _wait_for(lambda: any(c.startswith("sleep 30") for c in server.descendants().values()), "the push's hook")
    tree = server.descendants()
    assert _token_files(server.proc.pid), "the push was meant to hold a token file"
    code, stderr = server.finish(how)
    assert code == (0 if how == "eof" else 128 + getattr(signal, how)) and "Traceback" not in stderr, stderr
    _wait_for(lambda: not any(_alive(pid, cmd) for pid, cmd in tree.items()), "the git processes to end", 10)
    assert _token_files(server.proc.pid) == []
    assert env.forge.branch_sha("acme", "web", "feat/x") == pushed
    status = env.ok("madt_status")
    assert status.data["ahead"] == 1 and "1 ahead" in status.text
    local = run_git(env.clone, "rev-parse", "HEAD")
    assert f"a push of feat/x ({local[:9]}) was interrupted before it finished; whether origin got it is not " \
           f"known here (origin/feat/x was last seen at {pushed[:9]})" in status.text
    assert status.data["interrupted_pushes"] == [{"branch": "feat/x", "sha": local, "last_seen": pushed,
                                                  "landed": None}]
    (env.forge.bare_path("acme", "web") / "hooks" / "pre-receive").unlink()
    env.ok("madt_push")
    settled = env.ok("madt_status")
    assert settled.data["ahead"] == 0 and settled.data["interrupted_pushes"] == []


def test_an_interrupted_push_that_landed_says_so(env: Env) -> None:
    run_git(env.clone, "switch", "-q", "-c", "feat/y")
    (env.clone / "c.txt").write_text("c\n")
    run_git(env.clone, "add", "c.txt")
    run_git(env.clone, "commit", "-q", "-m", "c")
    sha = run_git(env.clone, "rev-parse", "HEAD")
    # origin got the commit, but the push never ended by itself, so its mark stayed behind
    run_git(env.clone, "push", "-q", "origin", "feat/y")
    (env.clone / ".git" / ("madtea-push-" + b"feat/y".hex())).write_text(f"feat/y\n{sha}\n")
    status = env.ok("madt_status")
    assert f"a push of feat/y ({sha[:9]}) was interrupted before it finished, but it landed: origin/feat/y is " \
           f"at {sha[:9]}" in status.text
    assert status.data["interrupted_pushes"][0]["landed"] is True


def test_a_trickled_forge_call_is_cut_at_a_signal(env: Env) -> None:
    env.forge.create_issue("acme", "web", "Slow", "x" * 400)
    env.forge.inject("trickle", method="GET", path_contains="/issues/1", seconds=0.5)
    server = Server(env.clone)
    server.start_call("madt_issues", {"action": "view", "number": 1})
    _wait_for(lambda: env.forge.find_requests("GET", "/issues/1"), "the forge read")
    code, stderr = server.finish("SIGTERM")
    assert code == 128 + signal.SIGTERM and "Traceback" not in stderr, stderr


def test_stale_token_files_are_swept_at_start(tmp_path: Path) -> None:
    folder = Path(os.environ["XDG_RUNTIME_DIR"])
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = folder / f"madtea-git-{dead.pid}-abc.json"
    live = folder / f"madtea-git-{os.getpid()}-def.json"
    for path in (stale, live):
        path.write_text('{"host": "h", "token": "t"}')
    assert madtea.sweep_token_files() >= 1  # the shared temporary folder may hold other stale ones
    assert not stale.exists() and live.exists()
