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

import forge
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
