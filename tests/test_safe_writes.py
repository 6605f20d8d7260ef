"""Writes that never clobber and never duplicate: body edits under races, and writes whose answer was lost.

Body edits run against the fake forge with latency on every request, from
threads of one process and from two real ``madtea mcp`` stdio servers; each
append carries a unique marker, and the final body must hold every marker
exactly once. Lost answers use the fake's apply-then-reset fault: the forge
performs the write and closes the connection without answering.

Then hostile calls against the forge writes, on both fake flavours: a secret's value never comes back on any
channel and secrets of every length stay hidden without hiding madtea's own words; file writes stay on their
branch and in their repository, and path tricks are refused; values that could leave their URL segment are
refused before any request; a write retried after a lost answer lands once; read-only, pinned and cross-host
servers refuse every new write before any request; and the review, Actions, time-tracking and people actions
are fuzzed on every parameter through both surfaces.
"""
from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import forge
import guard
import madtea
from fakeforge import DEFAULT_TOKEN, FakeForge, call, open_pull
from remote_env import Env, child_env, clone_of, env, fast_client, other  # noqa: F401 - fixtures

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
    real = forge.RepoClient.patch
    seen: list[str] = []

    def patch(self: Any, *segments: Any, json: Any = None) -> Any:
        out = real(self, *segments, json=json)
        if json and "body" in json and len(seen) < times:
            seen.append(json["body"])
            e.forge.call("PATCH", "/repos/acme/web/issues/1", json_body={"body": rewrite(json["body"])})
        return out

    monkeypatch.setattr(forge.RepoClient, "patch", patch)
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
    assert e.forge.comment_body(comment["id"]) == "- [ ] tested\n\nmore" and "read back" in result.text


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


@pytest.mark.slow  # two servers' processes: not in the fast lane
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



# --------------------------------------------------------------------------- writes whose answer was lost

def _branch(e: Env, name: str, start: str = "main") -> str:
    return e.forge.commit("acme", "web", name, {f"{name}.txt": f"{name}\n"}, f"Add {name}", start=start)


@pytest.fixture
def pulls(env: Env) -> Env:
    """PR #1 feat-a by alice and PR #2 feat-b by bob, both open into main."""
    _branch(env, "feat-a")
    _branch(env, "feat-b")
    env.forge.create_pull("acme", "web", "feat-a", title="Add a", body="PR body")
    env.forge.create_pull("acme", "web", "feat-b", title="Add b", user="bob")
    return env


def _lost(e: Env, path: str) -> None:
    """The forge performs the next POST to *path* and resets the connection without answering."""
    e.forge.inject("drop-after", method="POST", path_contains=path)


def _made_once(result: madtea.Result) -> None:
    assert any("made once and not sent again" in text for _sev, text in result.notes), result.notes


def test_a_lost_issue_create_is_found_though_search_lags_and_a_twin_exists(env: Env, fast_client: list[float]) -> None:
    """An older issue with the same title and body is not taken for the new one; search does not see the new one."""
    e = env
    e.forge.create_issue("acme", "web", "Weekly report", "All green")
    e.forge.lag_search_index(600)
    _lost(e, "/repos/acme/web/issues")
    result = e.ok("madt_issues", action="create", title="Weekly report", body="All green")
    assert [i.number for i in e.repo.issues.values() if i.title == "Weekly report"] == [1, 2]
    assert result.data["number"] == 2 and "Created issue #2" in result.text
    assert len(e.forge.find_requests("POST", "/repos/acme/web/issues")) == 1
    assert not [r for r in e.forge.requests if r.query.get("q")]
    _made_once(result)


def test_a_lost_create_that_two_identical_creates_made_is_unknown(env: Env, fast_client: list[float],
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A twin made after the mark, by another call, leaves two candidates: madtea says it cannot tell."""
    e = env
    real = forge.RepoClient.get

    def get(self: Any, *segments: Any, params: Any = None) -> Any:
        out = real(self, *segments, params=params)
        if params and params.get("limit") == 1 and not e.repo.issues:
            e.forge.create_issue("acme", "web", "Twin", "same")  # someone else, between the mark and the POST
        return out

    monkeypatch.setattr(forge.RepoClient, "get", get)
    _lost(e, "/repos/acme/web/issues")
    result = e.refused("FORGE_UNAVAILABLE", "madt_issues", action="create", title="Twin", body="same")
    assert "2 matching issues were made while the answer was lost (#2, #1)" in result.text
    assert "Whether the issue was made is unknown" in result.text
    assert result.error["next"] == [{"tool": "madt_issues", "args": {
        "action": "list", "owner_repo": f"{e.forge.host}/acme/web", "state": "all"}}]
    assert len(e.repo.issues) == 2 and len(e.forge.find_requests("POST", "/repos/acme/web/issues")) == 1


def test_a_lost_create_whose_look_up_fails_is_unknown_with_the_look_up_call(env: Env, fast_client: list[float],
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    e = env
    real = madtea._all_labels
    reads: list[int] = []

    def labels(inv: Any) -> Any:
        reads.append(1)
        if len(reads) > 1:  # the mark before the POST passes; the look-up after it fails
            e.forge.inject("500", 3, method="GET", path_contains="/repos/acme/web/labels")
        return real(inv)

    monkeypatch.setattr(madtea, "_all_labels", labels)
    _lost(e, "/repos/acme/web/labels")
    result = e.call("madt_labels", action="create", name="bug")
    assert result.is_error and result.error["code"] == "FORGE_UNAVAILABLE"
    assert "Whether the label was made is unknown" in result.text
    assert result.error["next"][0]["args"]["action"] == "list" and "Try the same call" not in result.text
    assert len(e.forge.find_requests("POST", "/repos/acme/web/labels")) == 1


def test_a_lost_comment_is_found_and_an_identical_older_one_is_not_taken(env: Env, fast_client: list[float]) -> None:
    e = env
    e.forge.create_issue("acme", "web", "Tracking", "body")
    older = e.forge.create_comment("acme", "web", 1, "LGTM", user="alice")
    _lost(e, "/repos/acme/web/issues/1/comments")
    result = e.ok("madt_issues", action="comment", number=1, body="LGTM")
    bodies = [e.forge.comment_body(c) for c in e.issue(1).comment_ids]
    assert bodies == ["LGTM", "LGTM"] and result.data["id"] != older["id"]
    assert result.data["id"] == e.issue(1).comment_ids[-1] and f"(comment {result.data['id']})" in result.text
    assert len(e.forge.find_requests("POST", "/repos/acme/web/issues/1/comments")) == 1
    _made_once(result)


def test_a_lost_pr_comment_is_made_once(pulls: Env, fast_client: list[float]) -> None:
    e = pulls
    _lost(e, "/repos/acme/web/issues/1/comments")
    result = e.ok("madt_pr", action="comment", number=1, body="Looks right")
    assert [e.forge.comment_body(c) for c in e.issue(1).comment_ids] == ["Looks right"]
    _made_once(result)


def test_a_lost_comment_in_a_batch_close_is_made_once_and_the_rest_go_on(env: Env, fast_client: list[float]) -> None:
    e = env
    for n in (1, 2):
        e.forge.create_issue("acme", "web", f"Issue {n}", "body")
    _lost(e, "/repos/acme/web/issues/2/comments")
    result = e.ok("madt_issues", action="close", numbers=[1, 2], comment="Fixed in v2")
    for n in (1, 2):
        assert [e.forge.comment_body(c) for c in e.issue(n).comment_ids] == ["Fixed in v2"]
        assert e.issue(n).state == "closed"
    _made_once(result)


def test_a_comment_in_a_batch_that_was_not_made_resends_only_the_rest(env: Env, fast_client: list[float]) -> None:
    e = env
    for n in (1, 2, 3):
        e.forge.create_issue("acme", "web", f"Issue {n}", "body")
    e.forge.inject("500", method="POST", path_contains="/repos/acme/web/issues/2/comments")
    result = e.refused("FORGE_UNAVAILABLE", "madt_issues", action="close", numbers=[1, 2, 3], comment="Done")
    assert result.text.startswith("Closed issue #1 in acme/web with a comment\n#2 failed")
    assert "The comment was not made; sending the same call again is safe." in result.text
    assert result.error["next"] == [{"tool": "madt_issues", "args": {
        "action": "close", "numbers": [2, 3], "comment": "Done"}}]


@pytest.mark.parametrize("tool, args, path, count", [
    ("madt_labels", {"action": "create", "name": "bug", "color": "#ee0701"}, "/repos/acme/web/labels",
     lambda e: [l.name for l in e.repo.labels.values()].count("bug")),
    ("madt_milestones", {"action": "create", "title": "v1"}, "/repos/acme/web/milestones",
     lambda e: [m.title for m in e.repo.milestones.values()].count("v1")),
    ("madt_releases", {"action": "create", "tag": "v1.0", "title": "One"}, "/repos/acme/web/releases",
     lambda e: [r.tag_name for r in e.repo.releases.values()].count("v1.0")),
    ("madt_wiki", {"action": "create", "page_name": "Home", "content": "Welcome"}, "/repos/acme/web/wiki/new",
     lambda e: len(e.repo.wiki)),
])
def test_a_lost_create_of_each_kind_is_made_once(env: Env, fast_client: list[float], tool: str,
                                                 args: dict[str, Any], path: str, count: Any) -> None:
    e = env
    _lost(e, path)
    result = e.ok(tool, **args)
    assert count(e) == 1 and len(e.forge.find_requests("POST", path)) == 1
    _made_once(result)


def test_a_lost_pr_create_is_made_once(env: Env, fast_client: list[float]) -> None:
    e = env
    _branch(e, "feat-x")
    _lost(e, "/repos/acme/web/pulls")
    result = e.ok("madt_pr", action="create", title="Add x", head="feat-x", base="main")
    assert result.data["number"] == 1 and result.data["created"] is True
    assert sum(1 for i in e.repo.issues.values() if i.pull is not None) == 1
    _made_once(result)


def test_a_lost_review_is_made_once(pulls: Env, fast_client: list[float]) -> None:
    e = pulls
    e.ok("madt_pr", action="review", number=2, event="comment", body="One nit")
    _lost(e, "/repos/acme/web/pulls/2/reviews")
    result = e.ok("madt_pr", action="review", number=2, event="comment", body="One nit")
    reviews = e.issue(2).pull.reviews
    assert [r.body for r in reviews] == ["One nit", "One nit"] and result.data["id"] == reviews[-1].id
    _made_once(result)


def test_a_lost_merge_answer_reads_the_merge_back(pulls: Env, fast_client: list[float]) -> None:
    e = pulls
    _lost(e, "/repos/acme/web/pulls/1/merge")
    result = e.ok("madt_pr", action="merge", number=1)
    assert e.issue(1).pull.merged and "Merged PR #1" in result.text
    assert len(e.forge.find_requests("POST", "/repos/acme/web/pulls/1/merge")) == 1
    assert any("a read-back shows PR #1 merged" in text for _sev, text in result.notes)


def test_a_merge_that_was_not_made_says_so(pulls: Env, fast_client: list[float]) -> None:
    e = pulls
    e.forge.inject("drop", method="POST", path_contains="/repos/acme/web/pulls/1/merge")
    result = e.refused("FORGE_UNAVAILABLE", "madt_pr", action="merge", number=1)
    assert "A read right after shows PR #1 not merged" in result.text and not e.issue(1).pull.merged
    assert "merging it again is safe" in result.text


def test_a_lost_create_on_the_cli_says_it_was_made_once(env: Env) -> None:
    e = env
    _lost(e, "/repos/acme/web/issues")
    out = e.cli("issue", "create", "--title", "From the shell", "--body", "x")
    assert out.returncode == 0 and "Created issue #1" in out.stdout, out.stderr
    assert "made once and not sent again" in out.stderr and "Traceback" not in out.stderr
    assert len(e.repo.issues) == 1


def test_a_forge_that_trims_the_body_on_save_is_no_other_writer(issue: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    e = issue
    real = forge.RepoClient.patch

    def patch(self: Any, *segments: Any, json: Any = None) -> Any:
        return real(self, *segments, json={"body": json["body"].rstrip() + "\r\n"} if json and "body" in json else json)

    monkeypatch.setattr(forge.RepoClient, "patch", patch)
    done = e.ok("madt_issues", action="edit", number=1, append="mine\n\n")
    assert "Body updated and read back (" in done.text and "another writer" not in done.text
    seen = e.ok("madt_issues", action="view", number=1).data
    whole = e.ok("madt_issues", action="edit", number=1, body="Mine  ", updated_at=seen["updated_at"])
    assert "Body updated and read back (" in whole.text


def test_a_lost_create_on_a_forge_that_ignores_page_is_still_made_once(env: Env, fast_client: list[float],
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    e = env
    real = forge.RepoClient.get

    def get(self: Any, *segments: Any, params: Any = None) -> Any:
        return real(self, *segments, params={k: v for k, v in (params or {}).items() if k != "page"} or None)

    monkeypatch.setattr(forge.RepoClient, "get", get)
    _lost(e, "/repos/acme/web/issues")
    result = e.ok("madt_issues", action="create", title="Paged", body="x")
    assert result.data["number"] == 1 and len(e.repo.issues) == 1
    _made_once(result)


@pytest.mark.anyio
async def test_a_lost_comment_through_mcp_says_it_was_made_once(env: Env) -> None:
    from mcp.client import Client

    e = env
    e.forge.create_issue("acme", "web", "Tracking", "body")
    _lost(e, "/repos/acme/web/issues/1/comments")
    async with Client(madtea.build_server(e.clone), mode="legacy") as client:
        result = await client.call_tool("madt_issues", {"action": "comment", "number": 1, "body": "Once"})
    assert result.is_error is False, result.content[0].text
    text = result.content[0].text
    assert "[notice] the forge's answer was lost" in text and "made once and not sent again" in text
    assert "Commented on issue #1" in text
    assert [e.forge.comment_body(c) for c in e.issue(1).comment_ids] == ["Once"]


def test_a_lost_create_is_not_taken_for_an_older_issue_of_the_same_title(env: Env, fast_client: list[float]) -> None:
    """The look-up after a dropped create matched last week's issue by title alone and reported it as made."""
    env.forge.create_issue("acme", "web", "Weekly report", "week 1")  # by the token's own user
    env.forge.inject("drop", method="POST", path_contains="/repos/acme/web/issues")
    made = env.ok("madt_issues", action="create", title="Weekly report", body="week 2")
    issues = env.repo.issues
    assert made.data["number"] == 2 and issues[2].body == "week 2"
    assert sorted(i.body for i in issues.values()) == ["week 1", "week 2"]


# --------------------------------------------------------------------------- one write per edit

def test_an_edit_sends_its_body_and_fields_in_one_patch(issue: Env) -> None:
    e = issue
    e.forge.create_milestone("acme", "web", "v1")
    e.forge.clear_requests()
    result = e.ok("madt_issues", action="edit", number=1, title="Tracking, renamed", milestone="v1",
                  add_assignee=["alice"], append="one more")
    issue_now = e.issue(1)
    assert issue_now.title == "Tracking, renamed" and issue_now.body.endswith("one more")
    assert issue_now.assignees == ["alice"] and e.repo.milestones[issue_now.milestone].title == "v1"
    patches = e.forge.find_requests("PATCH")
    assert len(patches) == 1 and patches[0].path.endswith("/repos/acme/web/issues/1")
    assert "read back" in result.text and "set assignees, milestone, title" in result.text


def test_a_failed_edit_write_changed_nothing_and_says_so(issue: Env, fast_client: list[float]) -> None:
    e = issue
    before = (e.issue(1).title, e.issue(1).body)
    e.forge.inject("500", times=10, method="PATCH", path_contains="/repos/acme/web/issues/1")
    result = e.call("madt_issues", action="edit", number=1, title="Renamed", append="mine")
    assert result.is_error and (e.issue(1).title, e.issue(1).body) == before
    assert "partly edited" not in result.text and "Body updated" not in result.text
    assert len(e.forge.find_requests("PATCH", "/repos/acme/web/issues/1")) >= 1


def test_a_request_failing_after_the_edit_write_says_what_landed(issue: Env, fast_client: list[float]) -> None:
    e = issue
    e.forge.create_label("acme", "web", "bug", "#ee0701")
    e.forge.inject("500", times=10, method="POST", path_contains="/repos/acme/web/issues/1/labels")
    result = e.call("madt_issues", action="edit", number=1, title="Renamed", append="mine", add_label=["bug"])
    assert result.is_error and e.issue(1).title == "Renamed" and e.issue(1).body.endswith("mine")
    assert "#1 was partly edited" in result.text and "set title" in result.text and "read back" in result.text
    assert "added labels" not in result.text and "the rest was not done" in result.text
    assert len(e.forge.find_requests("PATCH", "/repos/acme/web/issues/1")) == 1


# =========================================================================== secrets never echoed

SECRET = "zq9-Adversary-Secret-Value-77"


def _channels(result: madtea.Result) -> str:
    return "\n".join([result.text, json.dumps(result.data, default=str), json.dumps(result.error, default=str),
                      json.dumps(result.notes, default=str)])


@pytest.mark.parametrize("args", [
    {"action": "set_secrt", "name": "X", "body": SECRET},
    {"action": "set_secret", "name": "X", "body": [SECRET]},
    {"action": "set_secret", "name": "X", "body": {"v": SECRET}},
    {"action": "set_secret", "name": "X", "value": SECRET},
    {"action": "set_secret", "name": "X", "body": SECRET, "body_file": "/nonexistent"},
    {"action": [], "name": "X", "body": SECRET}, {"action": {"a": 1}, "body": SECRET},
])
def test_a_secret_given_in_any_shape_or_under_a_misspelt_action_is_never_echoed(env: Env, args: dict[str, Any]) -> None:
    result = env.call("madt_actions", **args)
    assert "Traceback" not in result.text
    assert SECRET[:8] not in _channels(result)


def test_a_read_only_refusal_of_a_secret_never_echoes_it(env: Env) -> None:
    ctx = madtea.Context("mcp", env.clone, scope=guard.Scope(read_only=True))
    result = madtea.run("madt_actions", {"action": "set_secret", "name": "X", "body": SECRET}, ctx)
    assert SECRET[:8] not in _channels(result)


def test_a_passthrough_body_for_a_secrets_path_is_never_echoed(env: Env) -> None:
    for method in ("PUT", "put"):
        result = env.call("madt_api_call", method=method, path="/repos/acme/web/actions/secrets/X",
                          body={"data": SECRET})
        assert SECRET[:8] not in _channels(result)


def test_the_cli_never_echoes_a_secret_under_a_misspelt_verb_or_a_bad_name(env: Env) -> None:
    for argv in (("actions", "set-secrt", "X", "--body", SECRET), ("actions", "set-secret", "9bad", "--body", SECRET),
                 ("actions", "set-secret", "X", "--body", SECRET, "--vaule", SECRET),
                 ("actions", "set-secret", "X", SECRET),
                 ("actions", "set-secret", "X", "--body", "v", f"--vaule={SECRET}")):
        out = env.cli(*argv)
        assert out.returncode != 0 and SECRET[:8] not in out.stdout + out.stderr, argv
    assert "unrecognized arguments: --vaule\n" in out.stderr


@pytest.mark.parametrize("path", [".g\u200cit/config", "src/.gi\u200dt/hooks/x", "\u202eevil.txt", "a\u2028b",
                                  "\ufeffa.txt", "git~1/config", "sub/GIT~1/hooks/x"])
def test_an_invisible_character_or_git_s_short_name_is_refused_before_any_request(path: str) -> None:
    with pytest.raises(guard.Refusal) as refused:
        guard.check_file_path(path, "madt_files action=create", lambda v: guard.call("madt_files", path=v))
    assert refused.value.code == "BAD_ARGUMENT" and guard.is_placeholder(refused.value.next[0]["args"]["path"])


def test_a_path_with_an_invisible_character_commits_nothing(env: Env) -> None:
    result = env.refused("BAD_ARGUMENT", "madt_files", action="create", path=".g\u200cit/config", content="x",
                         new_branch="t1")
    assert "invisible" in result.text and "t1" not in env.forge.git("acme", "web", "branch", "--list")


HIDDEN = "<the secret value>"
ONE_FLAVOUR = pytest.mark.parametrize("fake_forge", ["gitea"], indirect=True)  # decided before any request


# =========================================================================== secrets of every length

def test_a_one_letter_secret_leaves_madteas_words_whole(env: Env) -> None:
    made = env.ok("madt_actions", action="set_secret", name="K", body="e")
    assert made.text.startswith("Created the secret K in acme/web;") and HIDDEN not in made.text
    assert env.repo.secrets == {"K": "e"}


@ONE_FLAVOUR
@pytest.mark.parametrize("body", [["ab"], {"v": "ab"}])
def test_a_short_secret_echoed_by_a_refusal_is_hidden(env: Env, body: Any) -> None:
    refused = env.refused("BAD_ARGUMENT", "madt_actions", action="set_secret", name="K", body=body)
    assert '"ab"' not in refused.text + json.dumps(refused.error) and HIDDEN in refused.text
    assert "must be a string" in refused.text  # the rest of the sentence is left as it was


def test_a_secret_the_size_of_a_key_file_is_hidden_in_bounded_memory() -> None:
    # A kubeconfig or key bundle is tens of kilobytes; hiding its every prefix at once took gigabytes.
    probe = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
        "import madtea\n"
        "secret = 'k' * 7 + 'q' * 60_000\n"
        "result = madtea.Result('not \"' + secret[:80] + '… and ' + secret, {'echo': secret[:300]})\n"
        "done = madtea._without_secrets(result, [secret])\n"
        "assert 'kkkkkkkq' not in done.text + str(done.data), done.text[:200]\n"
        "print(done.text, done.data)\n")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=child_env(), capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "not \"<the secret value>… and <the secret value> {'echo': '<the secret value>'}"


# =========================================================================== names sent as one URL segment

@pytest.mark.parametrize("tool, args, name", [
    ("madt_people", {"action": "teams", "org": ".."}, "org"),
    ("madt_people", {"action": "teams", "org": "%2e%2e"}, "org"),
    ("madt_people", {"action": "packages", "owner": ".."}, "owner"),
    ("madt_people", {"action": "packages", "owner": "acme/../x"}, "owner"),
    ("madt_people", {"action": "package_versions", "owner": "acme", "type": "npm", "name": ".."}, "name"),
    ("madt_people", {"action": "package_versions", "owner": "%252E%252E", "type": "npm", "name": "x"}, "owner"),
    ("madt_actions", {"action": "dispatch", "workflow": "../.."}, "workflow"),
    ("madt_actions", {"action": "dispatch", "workflow": "..\\ci.yml"}, "workflow"),
])
@ONE_FLAVOUR
def test_a_name_that_reads_as_a_dot_segment_is_refused_before_any_request(env: Env, tool: str, args: dict[str, Any],
                                                                           name: str) -> None:
    env.forge.clear_requests()
    refused = env.refused("BAD_ARGUMENT", tool, **args)
    assert f"{name} " in refused.text and "'.' or '..'" in refused.text
    assert refused.error["next"][0]["args"][name].startswith("<")  # the same call, the name to fill in
    assert not [r for r in env.forge.requests if "/version" not in r.path]


@pytest.mark.parametrize("tool, args, segment", [
    ("madt_people", {"action": "package_versions", "owner": "acme", "type": "npm", "name": "@scope/left-pad"},
     "/%40scope%2Fleft-pad"),
    ("madt_actions", {"action": "dispatch", "workflow": "deploy.yml?x=1#y"}, "/deploy.yml%3Fx%3D1%23y/"),
])
def test_a_name_with_a_slash_or_a_query_sign_is_sent_escaped_in_its_segment(env: Env, tool: str, args: dict[str, Any],
                                                                              segment: str) -> None:
    env.forge.clear_requests()
    env.call(tool, **args)
    sent = [r for r in env.forge.requests if "/version" not in r.path and "/repos/acme/web" != r.path[7:]]
    if env.forge.flavour == "forgejo" and tool == "madt_people":  # no versions endpoint: the list, by name
        assert sent[-1].path == "/api/v1/packages/acme" and sent[-1].query["q"] == "@scope/left-pad"
        return
    assert segment in sent[-1].path and not {"x", "y"} & set(sent[-1].query), [(r.path, r.query) for r in sent]


@pytest.mark.parametrize("org", ["..", "%2e%2e", "a/b", "a?b=1", "a#b", "a:b@c", "a;b,c"])
@ONE_FLAVOUR
def test_a_segment_travels_as_one_spelling_from_a_tool_and_from_the_passthrough(env: Env, org: str) -> None:
    """The tool and ``madt_api_call`` send a name in one spelling, or refuse it before sending anything."""
    from urllib.parse import quote

    def sent_by(result: madtea.Result) -> str | None:
        paths = [r.path for r in env.forge.requests if r.path.startswith("/api/v1/orgs/")]
        assert len(paths) <= 1, paths
        assert paths or result.error, result.text
        return paths[0] if paths else None

    env.forge.clear_requests()
    by_tool = sent_by(env.call("madt_people", action="teams", org=org))
    env.forge.clear_requests()
    by_passthrough = sent_by(env.call("madt_api_call", path=f"/orgs/{quote(org, safe='')}/teams/search"))
    # Refused before sending, or sent with the name as one segment: nothing added a segment, a query or a fragment.
    one_segment = f"/api/v1/orgs/{quote(org, safe='')}/teams/search"
    assert by_tool in (None, one_segment) and by_passthrough in (None, one_segment), (by_tool, by_passthrough)
    env.forge.clear_requests()
    out = env.cli("api", f"/orgs/{quote(org, safe='')}/teams/search")
    assert "Traceback" not in out.stderr and [r.path for r in env.forge.requests if "/orgs/" in r.path] == \
        ([by_passthrough] if by_passthrough else [])


@pytest.mark.parametrize("value, refused", [("..", True), (".", True), ("a/..", True), ("..\\x", True),
                                            ("%2E%2e", True), ("%25252e%25252e", True), ("a/./b", True),
                                            ("..a", False), ("v1.0", False), ("@scope/pkg", False), ("a%2Fb", False)])
def test_which_names_read_as_a_dot_segment(value: str, refused: bool) -> None:
    import guard
    try:
        guard.check_path_name("madt_people action=teams", "org", value, "an organisation",
                              lambda v: guard.call("madt_people", action="teams", org=v))
    except guard.Refusal as caught:
        assert refused and caught.code == "BAD_ARGUMENT" and guard.is_placeholder(caught.next[0]["args"]["org"])
    else:
        assert not refused


# =========================================================================== retried and lost writes

def _pull(e: Env) -> int:
    return open_pull(e.forge)


def test_a_review_submitted_again_with_the_same_verdict_is_done_and_another_verdict_is_a_new_review(env: Env) -> None:
    number = _pull(env)
    rid = env.ok("madt_pr", action="review", number=number, event="pending", body="draft").data["id"]
    env.forge.inject("drop-after", method="POST", path_contains=f"/reviews/{rid}")
    first = env.ok("madt_pr", action="submit_review", number=number, review_id=rid, event="comment", body="see")
    assert first.data["state"] == "COMMENT" and "answer was lost" in first.notes[0][1]
    again = env.ok("madt_pr", action="submit_review", number=number, review_id=rid, event="comment", body="see")
    assert again.text == f"Review {rid} on PR #{number} in acme/web was already submitted: comment."
    other = env.refused("BAD_ARGUMENT", "madt_pr", action="submit_review", number=number, review_id=rid,
                        event="approve")
    assert "already submitted as COMMENT" in other.text
    assert other.error["next"][0] == {"tool": "madt_pr", "args": {"action": "review", "number": number,
                                                                  "event": "approve"}}
    reviews = env.ok("madt_pr", action="reviews", number=number).data
    assert [(r["id"], r["state"]) for r in reviews] == [(rid, "COMMENT")]  # submitted once, nothing new made


def _carol(e: Env) -> None:
    e.forge.add_user("carol", token="carol-token")


def _dispatches(e: Env) -> int:
    return len(e.forge.dispatches)


def _time_entries(e: Env) -> int:
    return len(e.ok("madt_issues", action="times", number=2).data["times"])


def _reviews(e: Env) -> int:
    return len(e.ok("madt_pr", action="reviews", number=1).data)


def _asked(e: Env) -> list[str]:
    return [u["login"] for u in e.forge.pull("acme", "web", 1)["requested_reviewers"]]


LOST = [  # the write, the request whose answer is lost, and what must be there exactly once afterwards
    ("madt_issues", {"action": "add_time", "number": 2, "duration": "1h"}, "POST", "/times", _time_entries, 1),
    ("madt_pr", {"action": "review", "number": 1, "event": "comment", "body": "LGTM"}, "POST", "/reviews",
     _reviews, 1),
    ("madt_pr", {"action": "edit", "number": 1, "add_reviewer": ["carol"]}, "POST", "/requested_reviewers",
     _asked, ["carol"]),
    ("madt_actions", {"action": "set_variable", "name": "LEVEL", "body": "3"}, "POST", "/actions/variables/",
     lambda e: e.repo.variables, {"LEVEL": "3"}),
]


@pytest.mark.parametrize("tool, args, method, path, seen, expected", LOST,
                         ids=[f"{t}-{a['action']}" for t, a, *_ in LOST])
def test_a_write_whose_answer_is_lost_lands_once_and_says_so(env: Env, tool: str, args: dict[str, Any], method: str,
                                                             path: str, seen: Any, expected: Any) -> None:
    _pull(env)
    env.forge.create_issue("acme", "web", "Track me")
    _carol(env)
    env.forge.inject("drop-after", method=method, path_contains=path)
    done = env.ok(tool, **args)
    again = env.ok(tool, **args) if args["action"] == "edit" else None  # a set: asking again adds nothing
    assert seen(env) == expected
    assert len(env.forge.find_requests(method, path)) == 1, [r.path for r in env.forge.find_requests(method)]
    assert [n for _, n in done.notes if "answer was lost" in n and "not sent again" in n], done.notes
    if again is not None:
        assert "review requested from @carol" in again.text and not again.notes


def test_a_dispatch_whose_answer_is_lost_names_its_run_and_is_never_sent_twice(env: Env) -> None:
    env.forge.commit("acme", "web", "main", {".gitea/workflows/deploy.yml": "on: workflow_dispatch\n"}, "ci")
    env.forge.add_action_run("acme", "web", workflow="deploy.yml")  # an older run of the same workflow
    env.forge.inject("drop-after", method="POST", path_contains="/dispatches")
    settled = env.ok("madt_actions", action="dispatch", workflow="deploy.yml")
    run = env.forge.dispatches[-1]["run"]
    assert _dispatches(env) == 1 and len(env.forge.find_requests("POST", "/dispatches")) == 1
    assert settled.data["run_id"] == run and f": run {run} (number " in settled.text
    assert f"found the run this call made (id {run})" in settled.notes[-1][1]
    env.forge.inject("drop", method="POST", path_contains="/dispatches")  # lost before the forge applied it
    lost = env.refused("FORGE_UNAVAILABLE", "madt_actions", action="dispatch", workflow="deploy.yml")
    assert _dispatches(env) == 1 and len(env.forge.find_requests("POST", "/dispatches")) == 2
    assert lost.error["next"] == [{"tool": "madt_actions", "args": {"action": "runs", "owner_repo": lost.error[
        "next"][0]["args"]["owner_repo"]}}] and "look before sending this again" in lost.text
    env.ok("madt_actions", action="dispatch", workflow="deploy.yml")  # a deliberate second dispatch is a second run
    assert _dispatches(env) == 2


def test_a_stopwatch_whose_stop_answer_is_lost_tracks_its_time_once(env: Env) -> None:
    number = env.forge.create_issue("acme", "web", "Track me")["number"]
    env.forge.inject("drop-after", method="POST", path_contains="/stopwatch/start")
    assert "started" in env.ok("madt_issues", action="start_stopwatch", number=number).text
    env.forge.inject("drop-after", method="POST", path_contains="/stopwatch/stop")
    stopped = env.ok("madt_issues", action="stop_stopwatch", number=number)
    times = env.ok("madt_issues", action="times", number=number).data
    assert len(times["times"]) == 1 and times["total"] == stopped.data["total"] == stopped.data["seconds"]
    assert len(env.forge.find_requests("POST", "/stopwatch/stop")) == 1
    env.refused("BAD_ARGUMENT", "madt_issues", action="stop_stopwatch", number=number)  # nothing runs any more


def test_a_dismissal_or_a_reply_whose_answer_is_lost_lands_once(env: Env) -> None:
    number = _pull(env)
    _, _, review = call(env.forge, "POST", f"/repos/acme/web/pulls/{number}/reviews", token="bob-token", body={
        "event": "REQUEST_CHANGES", "body": "no", "comments": [{"path": "app.py", "body": "why?", "new_position": 1}]})
    env.forge.inject("drop-after", method="POST", path_contains="/dismissals")
    done = env.ok("madt_pr", action="dismiss_review", number=number, review_id=review["id"], body="addressed")
    assert done.data["dismissed"] and len(env.forge.find_requests("POST", "/dismissals")) == 1
    if env.forge.flavour == "gitea":
        return  # no replies on Gitea (NOT_SUPPORTED before any request, tested with the reviews)
    comment = env.ok("madt_pr", action="reviews", number=number, comments=True).data[0]["comments"][0]["id"]
    env.forge.inject("drop-after", method="POST", path_contains=f"/reviews/{review['id']}/comments")
    replied = env.ok("madt_pr", action="reply", number=number, comment_id=comment, body="fixed")
    assert [c["body"] for c in replied.data["thread"]] == ["why?", "fixed"]
    assert len(env.forge.find_requests("POST", f"/reviews/{review['id']}/comments")) == 1


# =========================================================================== read-only, pinned and cross-host servers


WRITES = [("madt_actions", {"action": "dispatch", "workflow": "deploy.yml"}),
          ("madt_actions", {"action": "set_variable", "name": "L", "body": "1"}),
          ("madt_actions", {"action": "set_secret", "name": "S", "body": "secret-value-9"}),
          ("madt_pr", {"action": "review", "number": 1, "event": "comment", "body": "x"}),
          ("madt_pr", {"action": "submit_review", "number": 1, "review_id": 1, "event": "comment"}),
          ("madt_pr", {"action": "dismiss_review", "number": 1, "review_id": 1, "body": "x"}),
          ("madt_pr", {"action": "reply", "number": 1, "comment_id": 1, "body": "x"}),
          ("madt_pr", {"action": "edit", "number": 1, "add_reviewer": ["bob"]}),
          ("madt_issues", {"action": "add_time", "number": 1, "duration": "1m"}),
          ("madt_issues", {"action": "start_stopwatch", "number": 1}),
          ("madt_issues", {"action": "stop_stopwatch", "number": 1})]
REPO_READS = [("madt_actions", {"action": "variables"}), ("madt_pr", {"action": "reviews", "number": 1}),
              ("madt_pr", {"action": "files", "number": 1}), ("madt_issues", {"action": "times", "number": 1})]
ACCOUNT_READS = [("madt_people", {"action": "orgs"}), ("madt_people", {"action": "users", "q": "a"}),
                 ("madt_people", {"action": "teams", "org": "acme"}),
                 ("madt_people", {"action": "packages", "owner": "acme"}),
                 ("madt_people", {"action": "package_versions", "owner": "acme", "type": "npm", "name": "x"})]


@ONE_FLAVOUR
def test_a_read_only_server_refuses_every_new_write_before_any_request_and_answers_the_reads(env: Env) -> None:
    _pull(env)
    ctx = madtea.Context("mcp", env.clone, scope=guard.Scope(read_only=True))
    for tool, args in WRITES:
        env.forge.clear_requests()
        result = madtea.run(tool, dict(args), ctx)
        assert result.error and result.error["code"] == "READ_ONLY", (tool, args, result.text)
        assert not env.forge.requests and "secret-val" not in result.text, (tool, args)
    for tool, args in REPO_READS + ACCOUNT_READS:
        assert not madtea.run(tool, dict(args), ctx).is_error, (tool, args)
    offered = {t: madtea.tool_schema(t, ctx.scope)["properties"]["action"]["enum"]
               for t in ("madt_actions", "madt_pr", "madt_issues")}
    assert not {a for _, a in ((t, w["action"]) for t, w in WRITES)} & {a for v in offered.values() for a in v}


@ONE_FLAVOUR
def test_a_pinned_server_refuses_every_new_call_on_another_repository_before_any_request(env: Env) -> None:
    ctx = madtea.Context("mcp", env.clone, scope=guard.Scope(repos=("127.0.0.1:1/acme/other",)))
    for tool, args in WRITES + REPO_READS + ACCOUNT_READS:
        env.forge.clear_requests()
        result = madtea.run(tool, dict(args), ctx)
        assert result.error and result.error["code"] == "OUT_OF_SCOPE", (tool, args, result.text)
        assert not env.forge.requests, (tool, args, [r.path for r in env.forge.requests])


@ONE_FLAVOUR
def test_another_hosts_repository_gets_no_new_write_and_reads_stay_inside_it(env: Env, other: Any) -> None:
    target = f"{other.host_name}/acme/web"
    for tool, args in WRITES:
        other.clear_requests()
        refused = env.refused("OUT_OF_SCOPE", tool, **args, owner_repo=target)
        assert not other.requests and "secret-val" not in refused.text, (tool, args)
    for tool, args in ACCOUNT_READS:
        other.clear_requests()
        env.refused("OUT_OF_SCOPE", tool, **args, owner_repo=target)
        assert not [r for r in other.requests if r.header("Authorization")], (tool, args)
    other.clear_requests()
    for tool, args in REPO_READS:
        env.call(tool, **args, owner_repo=target)
    assert other.requests and all(r.path.startswith("/api/v1/repos/acme/web/") or r.path == "/api/v1/version"
                                  for r in other.requests), [r.path for r in other.requests]
    assert not [r for r in other.requests if r.path == "/api/v1/version" and r.header("Authorization")]


# =========================================================================== both surfaces

@pytest.mark.anyio
@pytest.mark.parametrize("scope, expected", [
    (None, {"madt_actions": (False, True, False), "madt_pr": (False, True, False),
            "madt_issues": (False, True, False), "madt_people": (True, None, None)}),
    (guard.Scope(read_only=True), {"madt_actions": (True, None, None), "madt_pr": (True, None, None),
                                   "madt_issues": (True, None, None), "madt_people": (True, None, None)}),
    (guard.Scope(tools=("madt_actions:dispatch", "madt_actions:variables", "madt_pr:submit_review",
                        "madt_pr:dismiss_review", "madt_issues:start_stopwatch", "madt_issues:add_time")),
     {"madt_actions": (False, False, False), "madt_pr": (False, False, True), "madt_issues": (False, False, False)}),
    (guard.Scope(tools=("madt_actions:set_variable", "madt_actions:set_secret")),
     {"madt_actions": (False, True, True)}),
])
async def test_the_listed_annotations_say_what_the_offered_actions_do(tmp_path: Any, scope: Any,
                                                                       expected: dict[str, Any]) -> None:
    from mcp.client import Client

    async with Client(madtea.build_server(tmp_path, scope=scope), mode="legacy") as client:
        tools = {t.name: t.annotations for t in (await client.list_tools()).tools}
    seen = {name: (tools[name].read_only_hint, tools[name].destructive_hint, tools[name].idempotent_hint)
            for name in expected}
    assert seen == expected


@ONE_FLAVOUR
def test_the_cli_gives_the_same_answers(env: Env) -> None:
    number = _pull(env)
    rid = env.ok("madt_pr", action="review", number=number, event="pending", body="draft").data["id"]
    for expected in (f"Submitted review {rid}", f"Review {rid} on PR #{number} in acme/web was already submitted"):
        out = env.cli("pr", "submit-review", str(number), "--review-id", str(rid), "--comment")
        assert out.returncode == 0 and expected in out.stdout, out.stderr
    out = env.cli("people", "teams", "..")
    assert out.returncode == 1 and "org \"..\" cannot name an organisation" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr
    done = subprocess.run([sys.executable, "-m", "madtea", "actions", "set-secret", "K", "--body-file", "-"],
                          cwd=env.clone, env=child_env(), input="e", capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("Created the secret K in acme/web;"), done.stderr
    assert HIDDEN not in done.stdout + done.stderr


# =========================================================================== fuzzing every parameter


FUZZED = {("madt_actions", a) for a in ("dispatch", "variables", "set_variable", "set_secret", "artifacts")} \
    | {("madt_pr", a) for a in ("review", "submit_review", "dismiss_review", "reply", "reviews", "files", "edit")} \
    | {("madt_issues", a) for a in ("times", "add_time", "start_stopwatch", "stop_stopwatch")} \
    | {("madt_people", a) for a in ("orgs", "users", "teams", "packages", "package_versions")}
FUZZ_OPS = [op for op in madtea.REGISTRY if (op.tool, op.action) in FUZZED]
# Each action starts from a call that works against the populated forge; one or two parameters are then drawn.
WELL_FORMED: dict[str, dict[str, Any]] = {
    "dispatch": {"workflow": "deploy.yml", "ref": "main", "inputs": {"level": "3"}}, "variables": {"name": "LEVEL"},
    "set_variable": {"name": "LEVEL", "body": "3"}, "set_secret": {"name": "KEY", "body": "fuzzed-secret-value"},
    "artifacts": {"run_id": 1, "limit": 5},
    "review": {"number": 1, "event": "comment", "body": "x", "inline": [{"path": "app.py", "line": 1, "body": "c"}]},
    "submit_review": {"number": 1, "review_id": 2, "event": "comment"},
    "dismiss_review": {"number": 1, "review_id": 1, "body": "d"}, "reply": {"number": 1, "comment_id": 1, "body": "r"},
    "reviews": {"number": 1, "comments": True}, "files": {"number": 1}, "times": {"number": 2},
    "add_time": {"number": 2, "duration": "1m"}, "start_stopwatch": {"number": 2}, "stop_stopwatch": {"number": 2},
    "orgs": {}, "users": {"q": "a"}, "teams": {"org": "acme", "q": "d"}, "packages": {"owner": "acme", "type": "npm"},
    "package_versions": {"owner": "acme", "type": "npm", "name": "left-pad"},
    "edit": {"number": 1, "add_reviewer": ["bob"], "remove_reviewer": ["carol"]}}
HOSTILE = ["", " ", "\x00", "a\x00b", "\n", "\u202eevil", "\u200b", "\ud800", "é", "--x", "-", "..", "../..", ".",
           "a/b", "a/../b", "/", "%2e%2e", "%2F", "?x=1", "#f", "&q=1", "a b", "x" * 300, "x" * 100_000, "deploy.yml",
           "main", "feature", "bob", "alice", "carol", "acme", "npm", "pypi", "left-pad", "LEVEL", "1h", "1h30m",
           "0s", "1", "１h", ".gitea/workflows/deploy.yml", "refs/heads/main", "v1.0", "HEAD", "e", "GITEA_X"]
NUMBERS = [-1, 0, 1, 2, 3, 2**31, 2**63, 10**30, 1.5, True, False, "1", "2", [1], [1, 2]]
FUZZ = settings(max_examples=int(os.environ.get("MADTEA_FUZZ_EXAMPLES", "200")) * 2 // 5, deadline=None,
                derandomize=True, database=None, suppress_health_check=list(HealthCheck))
COUNTS: collections.Counter[str] = collections.Counter()


def _values(p: madtea.Param) -> st.SearchStrategy[Any]:
    text = st.one_of(st.sampled_from(HOSTILE), st.sampled_from(HOSTILE), st.text(max_size=8))
    inline = st.lists(st.dictionaries(st.sampled_from(["path", "body", "line", "old_line", "x"]),
                                      st.one_of(text, st.sampled_from(NUMBERS)), max_size=4), max_size=2)
    own = {"str": text, "enum": st.one_of(st.sampled_from(p.choices or ("x",)), text),
           "strs": st.lists(text, max_size=3), "bool": st.booleans(), "int": st.sampled_from(NUMBERS),
           "number": st.sampled_from(NUMBERS),
           "json": st.one_of(st.dictionaries(text, st.one_of(text, st.sampled_from(NUMBERS), st.none()), max_size=3),
                             inline, text)}.get(p.type, text)
    anything = st.recursive(st.one_of(st.sampled_from(HOSTILE), st.sampled_from(NUMBERS), st.none()),
                            lambda i: st.lists(i, max_size=2) | st.dictionaries(st.text(max_size=3), i, max_size=2),
                            max_leaves=3)
    return st.one_of(own, own, own, anything)


@st.composite
def _calls(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    op = draw(st.sampled_from(FUZZ_OPS))
    names = sorted(n for n in op.specs if n not in ("body_file", "json"))
    args = dict(WELL_FORMED[str(op.action)])
    for name in draw(st.lists(st.sampled_from(names), unique=True, min_size=1, max_size=2)):
        args[name] = draw(_values(op.specs[name]))
    return op.tool, {"action": op.action} | args


def _populated(e: Env) -> Any:
    f = e.forge
    f.commit("acme", "web", "main", {".gitea/workflows/deploy.yml": "on: workflow_dispatch\n"}, "ci")
    number = _pull(e)
    call(f, "POST", f"/repos/acme/web/pulls/{number}/reviews", token="bob-token", body={
        "event": "REQUEST_CHANGES", "body": "no", "comments": [{"path": "app.py", "body": "why?", "new_position": 1}]})
    call(f, "POST", f"/repos/acme/web/pulls/{number}/reviews", body={"event": "PENDING", "body": ""})
    f.create_issue("acme", "web", "Track me")
    f.add_package("acme", "npm", "left-pad", "1.0.0")
    f.add_artifact("acme", "web", f.add_action_run("acme", "web").id, "dist", b"PK\x03\x04zip")
    _carol(e)
    return f.add_repo("acme", "bystander")


@pytest.mark.slow  # fuzzing: not in the fast lane
def test_fuzz_every_parameter_of_the_review_actions_time_and_people_actions(env: Env) -> None:
    bystander = _populated(env)
    COUNTS.clear()

    @FUZZ
    @given(drawn=_calls())
    def one(drawn: tuple[str, dict[str, Any]]) -> None:
        tool, args = drawn
        COUNTS["calls"] += 1
        result = env.call(tool, **args)
        where = f"{tool} {json.dumps(args, default=str)[:300]}\n{result.text[:1000]}"
        COUNTS[result.error["code"] if result.error else "ok"] += 1
        assert not (result.error and result.error["code"] == "INTERNAL_ERROR"), where
        assert "Traceback" not in result.text, where
        result.text.encode("utf-8")
        if result.error:
            assert guard.way_on_problem(result.error["next"], result.error["choices"],
                                        result.error["user_action"]) is None, where
        secret = args.get("body") if args["action"] == "set_secret" else None
        if isinstance(secret, str) and len(secret) >= 8:
            seen = result.text + json.dumps([result.data, result.error, result.notes], default=str)
            assert secret[:8] not in seen, where
        assert not env.forge.take_violations(), where

    try:
        one()
    finally:
        print(f"\nfuzz (reviews, Actions, time, people; {env.forge.flavour}): {dict(sorted(COUNTS.items()))}")
    assert (bystander.issues, bystander.secrets, bystander.variables) == ({}, {}, {})
    assert COUNTS["calls"] >= 40 and COUNTS["ok"] >= 5


@ONE_FLAVOUR
def test_a_search_too_long_for_the_forges_address_limit_is_a_bad_argument_not_an_outage(env: Env) -> None:
    refused = env.refused("BAD_ARGUMENT", "madt_people", action="users", q="x" * 100_000)
    assert "because its address is too large (414); nothing was done" in refused.text
    assert "check the API URL" not in refused.text and "again later" not in refused.text


CLI_VALUES = [v for v in HOSTILE if "\x00" not in v and "\ud800" not in v and len(v) < 1000] + ["-1", "99999999999"]


@st.composite
def _command_lines(draw: st.DrawFn) -> list[str]:
    op = draw(st.sampled_from(FUZZ_OPS))
    argv = list(op.cli)
    well = WELL_FORMED[str(op.action)]
    for p in op.params:
        if p.name in ("owner_repo", "json", "body_file"):
            continue
        drawn = draw(st.integers(0, 3)) == 0
        value = draw(st.sampled_from(CLI_VALUES)) if drawn else well.get(p.name)
        if value is None or p.type == "json":
            continue
        if p.type == "bool":
            argv += [f"--{(p.flag or p.name).replace('_', '-')}"] if value else []
            continue
        for item in value if isinstance(value, list) else [value]:
            argv += [str(item)] if p.positional else [f"--{(p.flag or p.name).replace('_', '-')}", str(item)]
    return argv


@pytest.mark.slow  # fuzzing: not in the fast lane
@ONE_FLAVOUR
def test_fuzz_the_cli_verbs_of_these_actions_exit_0_1_or_2_without_a_traceback(env: Env) -> None:
    _populated(env)
    seen: collections.Counter[int] = collections.Counter()

    @settings(FUZZ, max_examples=max(4, FUZZ.max_examples // 12))
    @given(argv=_command_lines())
    def one(argv: list[str]) -> None:
        done = env.cli(*argv)
        seen[done.returncode] += 1
        assert done.returncode in (0, 1, 2) and "Traceback" not in done.stderr, (argv[:6], done.stderr[-2000:])
        assert not env.forge.take_violations(), argv[:6]

    try:
        one()
    finally:
        print(f"\nfuzz (CLI of reviews, Actions, time, people): {sum(seen.values())} command lines, exit statuses "
              f"{dict(seen)}")
    assert seen[0] >= 1
