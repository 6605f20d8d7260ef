"""Calls that never outlive their deadline: trickled forge answers, slow git children, and a busy server.

The deadline is configured short for each test (``MADTEA_FORGE_DEADLINE``); every
assertion is about what the caller sees and whether an answer came, never about
how long something took.
"""
from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest

import forge
import gitops
import madtea
from remote_env import Env, env  # noqa: F401 - fixtures


@pytest.mark.parametrize("read, name, default, most", [
    (lambda: forge.deadline_seconds(), "MADTEA_FORGE_DEADLINE", 120.0, 86400.0),
    (lambda: gitops.git_timeout(), "MADTEA_GIT_TIMEOUT", 120.0, 86400.0),
    (lambda: madtea.call_deadline(), "MADTEA_CALL_DEADLINE", 45.0, 45.0),
], ids=["forge", "git", "call"])
def test_each_limit_reads_seconds_from_its_variable_within_bounds(monkeypatch: pytest.MonkeyPatch, read: Any,
                                                                  name: str, default: float, most: float) -> None:
    for value, expected in (("", default), ("soon", default), ("0", default), ("-3", default), ("nan", default),
                            ("inf", default), (str(most + 1), default), (" 2.5 ", 2.5), ("1e1", 10.0)):
        monkeypatch.setenv(name, value)
        assert read() == expected, (name, value)
    monkeypatch.delenv(name)
    assert read() == default


@pytest.fixture
def short_deadline(monkeypatch: pytest.MonkeyPatch) -> float:
    monkeypatch.setenv(forge.DEADLINE_ENV, "1.5")
    return 1.5


@pytest.mark.parametrize("kind", ["trickle", "trickle-head"])
def test_a_trickled_answer_ends_at_the_deadline(env: Env, short_deadline: float, kind: str) -> None:
    env.forge.create_issue("acme", "web", "Slow", "x" * 400)
    # 400 bytes at one every 0.2 s would take 80 s; the deadline is 1.5 s.
    env.forge.inject(kind, method="GET", path_contains="/issues/1", seconds=0.2)
    done = threading.Event()
    box: list[madtea.Result] = []

    def call() -> None:
        box.append(env.call("madt_issues", action="view", number=1))
        done.set()

    worker = threading.Thread(target=call, daemon=True)
    worker.start()
    assert done.wait(20), "the call outlived its deadline"
    result = box[0]
    assert result.is_error and result.error["code"] == "FORGE_UNAVAILABLE", result.text
    assert "within the overall time limit (1.5 s)" in result.text
    assert env.forge.host in result.text and "Traceback" not in result.text


def test_a_trickled_write_is_looked_up_and_made_once(env: Env, short_deadline: float) -> None:
    env.forge.create_issue("acme", "web", "Slow", "body")
    env.forge.inject("trickle", method="POST", path_contains="/comments", seconds=0.3)
    done = threading.Event()
    box: list[madtea.Result] = []

    def call() -> None:
        box.append(env.call("madt_issues", action="comment", number=1, body="hello"))
        done.set()

    threading.Thread(target=call, daemon=True).start()
    assert done.wait(20), "the call outlived its deadline"
    result = box[0]
    # The forge applied the comment before its answer trickled past the deadline: the look-up finds it.
    assert not result.is_error and "Traceback" not in result.text, result.text
    assert any("made once and not sent again" in text for _sev, text in result.notes)
    assert [env.forge.comment_body(c) for c in env.issue(1).comment_ids] == ["hello"]


def test_the_deadline_setting_falls_back_when_unusable(monkeypatch: pytest.MonkeyPatch) -> None:
    for value in ("", "soon", "-1", "0", "1e9"):
        monkeypatch.setenv(forge.DEADLINE_ENV, value)
        assert forge.deadline_seconds() == forge.DEFAULT_DEADLINE
    monkeypatch.setenv(forge.DEADLINE_ENV, "7")
    assert forge.deadline_seconds() == 7.0


@pytest.mark.anyio
async def test_status_answers_while_slow_forge_calls_fill_every_worker(env: Env) -> None:
    pytest.importorskip("mcp")
    import anyio
    from mcp.client import Client

    calls = madtea.NETWORK_WORKERS + 13  # more than the lane holds, and more than the SDK's 40 threads
    env.forge.create_issue("acme", "web", "Slow", "body")
    env.forge.inject("slow", calls, method="GET", path_contains="/issues/1", seconds=60)
    server = madtea.build_server(env.clone)
    finished: list[bool] = []

    async def slow(client: Client) -> None:
        await client.call_tool("madt_issues", {"action": "view", "number": 1})
        finished.append(True)

    async with Client(server, mode="legacy") as client:
        async with anyio.create_task_group() as group:
            for _ in range(calls):
                group.start_soon(slow, client)
            for _ in range(400):  # until the lane is full at the forge (bounded)
                if len(env.forge.find_requests("GET", "/issues/1")) >= madtea.NETWORK_WORKERS:
                    break
                await anyio.sleep(0.05)
            with anyio.fail_after(30):
                status = await client.call_tool("madt_status", {})
            assert not status.is_error and "working tree clean" in status.content[0].text
            assert not finished, "the slow calls were meant to be still pending"
            group.cancel_scope.cancel()


def test_a_git_child_ends_at_the_configured_timeout(single_repo, monkeypatch: pytest.MonkeyPatch,
                                                      tmp_path: Path) -> None:
    import gitops

    monkeypatch.setenv(gitops.TIMEOUT_ENV, "0.5")
    marker = tmp_path / "outlived"
    with pytest.raises(gitops.GitTimeout) as caught:
        gitops.git("-c", f"alias.slow=!sleep 5 && touch {marker}", "slow", cwd=single_repo.repo)
    assert "timed out after 0.5 s" in str(caught.value)
    assert not marker.exists() and gitops.running_children() == []


def test_ending_children_ends_their_process_groups_and_starts_no_more(single_repo, monkeypatch: pytest.MonkeyPatch,
                                                                       tmp_path: Path) -> None:
    import gitops

    monkeypatch.setattr(gitops, "_closing", [])  # restored afterwards: the rest of the suite still runs git
    marker = tmp_path / "outlived"
    caught: list[BaseException] = []

    def slow() -> None:
        try:
            gitops.git("-c", f"alias.slow=!sleep 3 && touch {marker}", "slow", cwd=single_repo.repo)
        except gitops.GitError as exc:
            caught.append(exc)

    worker = threading.Thread(target=slow, daemon=True)
    worker.start()
    for _ in range(400):
        if gitops.running_children():
            break
        threading.Event().wait(0.01)
    assert gitops.end_children() == 1
    worker.join(10)
    assert caught and "madtea is shutting down" in str(caught[0])
    with pytest.raises(gitops.GitError, match="not started"):
        gitops.git("status", cwd=single_repo.repo)
    threading.Event().wait(3.5)
    assert not marker.exists()


def test_ending_children_ends_a_running_tool_too(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import gitops

    monkeypatch.setattr(gitops, "_closing", [])  # restored afterwards: the rest of the suite still runs git
    tool = tmp_path / "tool"
    tool.write_text('#!/bin/sh\necho $$ > "$0.pid"; exec sleep 30\n', encoding="utf-8")
    tool.chmod(0o755)
    caught: list[BaseException] = []

    def slow() -> None:
        try:
            gitops.run_tool([str(tool)], timeout=60)
        except gitops.ToolFailed as exc:
            caught.append(exc)

    worker = threading.Thread(target=slow, daemon=True)
    worker.start()
    for _ in range(400):
        if gitops.running_children() and tool.with_name("tool.pid").exists():
            break
        threading.Event().wait(0.01)
    assert gitops.end_children() == 1
    worker.join(10)
    assert [str(e) for e in caught] == ["tool was ended: madtea is shutting down"]
    with pytest.raises(ProcessLookupError):
        os.kill(int(tool.with_name("tool.pid").read_text(encoding="utf-8")), 0)
    with pytest.raises(gitops.ToolFailed, match="tool was not started: madtea is shutting down"):
        gitops.run_tool([str(tool)], timeout=60)
