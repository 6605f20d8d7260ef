"""Writes that never clobber and never duplicate: body edits under races, and writes whose answer was lost.

Body edits run against the fake forge with latency on every request, from
threads of one process and from two real ``madtea mcp`` stdio servers; each
append carries a unique marker, and the final body must hold every marker
exactly once. Lost answers use the fake's apply-then-reset fault: the forge
performs the write and closes the connection without answering.
"""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import madtea
from fakeforge import DEFAULT_TOKEN, FakeForge
from remote_env import Env, clone_of, env, fast_client  # noqa: F401 - fixtures

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def issue(env: Env) -> Env:
    env.forge.create_issue("acme", "web", "Tracking", "Steps:\n- [ ] reproduce\n- [ ] fix")
    return env


@pytest.fixture
def gitea_env(gitea_forge: FakeForge, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    monkeypatch.setenv("MADTEA_TOKEN", DEFAULT_TOKEN)
    gitea_forge.create_issue("acme", "web", "Tracking", "Appended below:")
    return Env(gitea_forge, clone_of(gitea_forge, tmp_path / "web"))


def _another_writer(e: Env, monkeypatch: pytest.MonkeyPatch, rewrite: Any, times: int = 1) -> list[str]:
    """After each of madtea's next *times* body writes, another writer (not madtea) sets the body to rewrite(...)."""
    real = madtea.Api.patch
    seen: list[str] = []

    def patch(self: Any, *segments: Any, json: Any = None) -> Any:
        out = real(self, *segments, json=json)
        if json and "body" in json and len(seen) < times:
            seen.append(json["body"])
            e.forge.call("PATCH", "/repos/acme/web/issues/1", json_body={"body": rewrite(json["body"])})
        return out

    monkeypatch.setattr(madtea.Api, "patch", patch)
    return seen


def _landed(body: str, markers: list[str]) -> tuple[int, int]:
    """(landed once, landed more than once) of *markers* in *body*."""
    counts = [body.count(m) for m in markers]
    return sum(1 for c in counts if c == 1), sum(1 for c in counts if c > 1)


# --------------------------------------------------------------------------- the read-back after a write

def test_an_edit_made_on_top_of_ours_is_reported_as_both(issue: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    e = issue
    _another_writer(e, monkeypatch, lambda ours: ours + "\nand theirs")
    result = e.ok("madt_issues", action="edit", number=1, append="mine")
    assert e.issue(1).body.endswith("mine\nand theirs")
    assert "the read-back shows your append, and also an edit made meanwhile by another writer" in result.text
    assert not result.notes


def test_an_append_that_another_writer_dropped_is_applied_again(issue: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    e = issue
    before = e.issue(1).body
    _another_writer(e, monkeypatch, lambda _ours: before + "\n\ntheirs")
    result = e.ok("madt_issues", action="edit", number=1, append="mine")
    assert e.issue(1).body == before + "\n\ntheirs\n\nmine"
    assert "written 2 times" in result.text and "read back" in result.text


def test_a_tick_that_another_writer_undid_is_applied_again(issue: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    e = issue
    before = e.issue(1).body
    _another_writer(e, monkeypatch, lambda _ours: before + "\n- [ ] theirs")
    e.ok("madt_issues", action="edit", number=1, check="reproduce")
    assert e.issue(1).body == "Steps:\n- [x] reproduce\n- [ ] fix\n- [ ] theirs"


def test_a_body_that_keeps_changing_is_stale_and_claims_nothing(issue: Env,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    e = issue
    before = e.issue(1).body
    writes = _another_writer(e, monkeypatch, lambda _ours: before + f"\n\ntheirs {time.monotonic()}",
                             times=madtea.BODY_TRIES)
    result = e.refused("STALE_BODY", "madt_issues", action="edit", number=1, append="mine")
    assert len(writes) == madtea.BODY_TRIES and "mine" not in e.issue(1).body
    assert f"changed under each of madtea's {madtea.BODY_TRIES} writes of your append" in result.text
    assert "Body updated" not in result.text and e.issue(1).body.split("theirs")[0] in result.text
    assert result.error["next"][0]["args"]["action"] == "view"


def test_a_raced_full_replacement_is_stale_with_the_current_version(issue: Env,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    e = issue
    seen = e.ok("madt_issues", action="view", number=1).data
    _another_writer(e, monkeypatch, lambda _ours: "Theirs, written last")
    result = e.refused("STALE_BODY", "madt_issues", action="edit", number=1, body="Mine",
                       updated_at=seen["updated_at"])
    assert "another edit replaced it before it could be read back" in result.text
    assert "Theirs, written last" in result.text and e.issue(1).body == "Theirs, written last"


@pytest.mark.parametrize("kind", ["drop-after", "drop"])
def test_a_body_write_whose_answer_was_lost_lands_once(issue: Env, fast_client: list[float], kind: str) -> None:
    """drop-after: the forge applied the write and reset; drop: it reset without applying it."""
    e = issue
    e.forge.inject(kind, method="PATCH", path_contains="/repos/acme/web/issues/1")
    result = e.ok("madt_issues", action="edit", number=1, append="once")
    assert e.issue(1).body.count("once") == 1 and "read back" in result.text
    assert len(e.forge.find_requests("PATCH", "/repos/acme/web/issues/1")) == (1 if kind == "drop-after" else 2)


def test_a_comment_edit_is_verified_too(issue: Env, fast_client: list[float]) -> None:
    e = issue
    comment = e.forge.create_comment("acme", "web", 1, "- [ ] tested", user="alice")
    e.forge.inject("drop-after", method="PATCH", path_contains=f"/issues/comments/{comment['id']}")
    result = e.ok("madt_issues", action="edit", number=1, comment_id=comment["id"], append="more")
    assert e.forge._comments[comment["id"]].body == "- [ ] tested\n\nmore" and "read back" in result.text


# --------------------------------------------------------------------------- the edit lock

def test_concurrent_appends_in_one_process_lose_nothing(gitea_env: Env) -> None:
    e = gitea_env
    e.forge.inject("slow", 100000, seconds=0.01)
    markers = [f"[thread {t} append {i}]" for t in range(4) for i in range(8)]
    errors: list[str] = []

    def worker(t: int) -> None:
        for i in range(8):
            result = e.call("madt_issues", action="edit", number=1, append=f"[thread {t} append {i}]")
            if result.is_error:
                errors.append(result.text)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    landed, doubled = _landed(e.issue(1).body, markers)
    print(f"one process, 4 threads: appends attempted {len(markers)}, landed {landed}, "
          f"lost {len(markers) - landed - doubled}, doubled {doubled}")
    assert not errors and landed == len(markers) and doubled == 0


_SERVERS = r"""
import anyio, json, sys
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
clone, env, name, count, width = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
params = StdioServerParameters(command=sys.executable, args=["-m", "madtea", "mcp"], cwd=clone, env=env)
async def main():
    errors = []
    async with Client(params, mode="legacy") as client:
        async def one(i):
            result = await client.call_tool("madt_issues", {"action": "edit", "number": 1,
                                                            "append": f"[{name} append {i}]"})
            if result.is_error:
                errors.append(result.content[0].text)
        for start in range(0, count, width):
            async with anyio.create_task_group() as group:
                for i in range(start, min(count, start + width)):
                    group.start_soon(one, i)
    print(json.dumps(errors))
anyio.run(main)
"""


def test_two_servers_appending_to_one_issue_lose_nothing(gitea_env: Env) -> None:
    """Two real stdio servers (separate processes), each with concurrent calls, 20 appends each."""
    e = gitea_env
    e.forge.inject("slow", 100000, seconds=0.01)
    env = {"PYTHONPATH": str(ROOT), "HOME": os.environ["HOME"], "PATH": os.environ.get("PATH", ""),
           "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.environ["GIT_CONFIG_GLOBAL"],
           "XDG_CONFIG_HOME": os.environ["XDG_CONFIG_HOME"], "XDG_RUNTIME_DIR": os.environ["XDG_RUNTIME_DIR"],
           "MADTEA_TOKEN": DEFAULT_TOKEN}
    import json
    drivers = [subprocess.Popen([sys.executable, "-c", _SERVERS, str(e.clone), json.dumps(env), name, "20", "4"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ))
               for name in ("server A", "server B")]
    outputs = [d.communicate(timeout=120) for d in drivers]
    for driver, (out, err) in zip(drivers, outputs):
        assert driver.returncode == 0, err[-2000:]
        assert json.loads(out.strip().splitlines()[-1]) == []
    markers = [f"[{name} append {i}]" for name in ("server A", "server B") for i in range(20)]
    landed, doubled = _landed(e.issue(1).body, markers)
    print(f"two servers: appends attempted {len(markers)}, landed {landed}, lost {len(markers) - landed - doubled}, "
          f"doubled {doubled}")
    assert landed == len(markers) and doubled == 0


_HOLDER = r"""
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(float(sys.argv[2]))
"""


def _lock_path(e: Env, segments: tuple[Any, ...]) -> str:
    import hashlib
    key = "/".join([e.forge.host, "acme", "web", *map(str, segments)])
    folder = madtea._lock_folder()
    assert folder is not None
    return os.path.join(folder, "body-" + hashlib.sha256(key.encode()).hexdigest()[:24] + ".lock")


@pytest.mark.skipif(madtea._lock_kind() != "flock", reason="a held flock needs fcntl")
def test_a_lock_held_past_the_wait_is_passed_with_a_notice(issue: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    e = issue
    monkeypatch.setattr(madtea, "BODY_LOCK_WAIT", 0.3)
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, _lock_path(e, ("issues", 1)), "30"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        result = e.ok("madt_issues", action="edit", number=1, append="mine")
    finally:
        holder.kill()
        holder.wait(timeout=10)
    assert e.issue(1).body.endswith("mine")
    assert any("kept this body's edit lock for over 0.3 s" in text for _sev, text in result.notes)


@pytest.mark.skipif(madtea._lock_kind() != "flock", reason="a held flock needs fcntl")
def test_a_lock_whose_holder_died_does_not_block(issue: Env) -> None:
    e = issue
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, _lock_path(e, ("issues", 1)), "30"],
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    holder.kill()
    holder.wait(timeout=10)
    result = e.ok("madt_issues", action="edit", number=1, append="mine")
    assert e.issue(1).body.endswith("mine") and not result.notes


@pytest.mark.parametrize("owner", ["dead", "old"])
def test_a_stale_lock_file_without_os_locks_does_not_block(issue: Env, monkeypatch: pytest.MonkeyPatch,
                                                         owner: str) -> None:
    """Where the platform has neither fcntl nor msvcrt, a lock file of a dead holder, or one too old, is broken."""
    e = issue
    monkeypatch.setattr(madtea, "_lock_kind", lambda: "file")
    monkeypatch.setattr(madtea, "BODY_LOCK_WAIT", 5.0)
    path = _lock_path(e, ("issues", 1))
    if owner == "dead":
        child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                               text=True, check=True)
        Path(path).write_text(f"{child.stdout.strip()} {time.time():.3f}")
    else:
        Path(path).write_text(f"{os.getpid()} {time.time() - 60:.3f}")
    result = e.ok("madt_issues", action="edit", number=1, append="mine")
    assert e.issue(1).body.endswith("mine") and not result.notes and not os.path.exists(path)

