"""A person's confirmation through the client: the acts only a person may take, offered with ``elicitation/create``.

Each test runs ``madtea mcp`` as a stdio child under the SDK's own client, whose elicitation callback plays
the person: it reads the form, then accepts with the exact name, another name, declines or cancels. Only an
accept with the exact name acts; the scope rules answer first; a client without the capability gets the
refusal it always got.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.types import ElicitResult, ErrorData

from remote_env import Env, child_env, env  # noqa: F401 - fixtures
from topologies import make_repo, run_git

pytestmark = pytest.mark.anyio


def _params(cwd: Path, *args: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "madtea", "mcp", *args], cwd=str(cwd),
                                 env=child_env())


class Person:
    """The client's person: answers each form as told, and keeps what it was shown."""

    def __init__(self, action: str, typed: str | None = None) -> None:
        self.action, self.typed = action, typed
        self.forms: list[Any] = []

    async def __call__(self, context: Any, params: Any) -> ElicitResult:
        self.forms.append(params)
        content = {"name": self.typed} if self.action == "accept" else None
        return ElicitResult(action=self.action, content=content)


def _labels(e: Env) -> set[str]:
    return {label.name for label in e.repo.labels.values()}


@pytest.mark.parametrize("answer, typed, deleted", [("accept", "bug", True), ("accept", "bugs", False),
                                                    ("decline", None, False), ("cancel", None, False)])
async def test_deleting_a_label_is_the_persons_typed_choice(env: Env, answer: str, typed: str | None,
                                                            deleted: bool) -> None:
    env.forge.create_label("acme", "web", "bug")
    person = Person(answer, typed)
    async with Client(_params(env.clone), mode="legacy", elicitation_callback=person) as client:
        result = await client.call_tool("madt_labels", {"action": "delete", "name": "bug"})
    (form,) = person.forms
    assert "delete the label bug in acme/web" in form.message and "/acme/web/labels" in form.message
    assert "comes off every issue and pull request" in form.message and '"bug"' in form.message
    assert form.requested_schema["required"] == ["name"]
    text = result.content[0].text
    assert ("bug" not in _labels(env)) is deleted
    if deleted:
        assert not result.is_error and "Deleted label bug in acme/web, as the person confirmed" in text
        return
    data = result.structured_content
    assert result.is_error and data["code"] == "USER_ACTION_REQUIRED" and "nothing changed" in text, text
    said = {"accept": 'The name typed in the confirmation was "bugs", not "bug"',
            "decline": "was declined; a client with no person at it answers so at once, so no person may have seen it",
            "cancel": "was closed without an answer; a client with no person at it answers so at once"}[answer]
    assert said in text and "It was not confirmed" in text, text
    # the way on is the person's own route: the web page and the exact command, never the same call again
    route = data["user_action"]
    assert "/acme/web/labels" in route and f"madtea label delete bug --repo {env.forge.host}/acme/web" in route, route
    assert "Do not call this again" in route and "try" not in route and "declined to" not in text, route


async def test_a_release_and_a_tag_name_their_web_address_and_loss(env: Env) -> None:
    run_git(env.clone, "tag", "v1")
    run_git(env.clone, "push", "-q", "origin", "v1")
    person = Person("accept", "v1")
    async with Client(_params(env.clone), mode="legacy", elicitation_callback=person) as client:
        result = await client.call_tool("madt_repo", {"action": "delete_tag", "tag": "v1"})
    assert not result.is_error, result.content[0].text
    assert "/acme/web/src/tag/v1" in person.forms[0].message and "a release made from it" in person.forms[0].message
    assert env.forge.git("acme", "web", "tag", "--list") == ""


@pytest.mark.parametrize("args, code", [(["--read-only"], "READ_ONLY"),
                                        (["--tools", "madt_labels:list"], "OUT_OF_SCOPE"),
                                        (["--repo", "acme/other"], "OUT_OF_SCOPE")])
async def test_the_scope_answers_before_anyone_is_asked(env: Env, args: list[str], code: str) -> None:
    env.forge.create_label("acme", "web", "bug")
    person = Person("accept", "bug")
    async with Client(_params(env.clone, *args), mode="legacy", elicitation_callback=person) as client:
        result = await client.call_tool("madt_labels", {"action": "delete", "name": "bug"})
    assert result.structured_content["code"] == code, result.content[0].text
    assert person.forms == [] and "bug" in _labels(env)


async def test_without_the_capability_the_refusal_stands(env: Env) -> None:
    env.forge.create_label("acme", "web", "bug")
    async with Client(_params(env.clone), mode="legacy") as client:
        result = await client.call_tool("madt_labels", {"action": "delete", "name": "bug"})
    assert result.structured_content["code"] == "USER_ACTION_REQUIRED" and "bug" in _labels(env)
    assert "Ask the user to delete label" in result.structured_content["user_action"]


def _unmerged_branch(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "web", origin="https://forge.example.test/acme/web.git", files={"a.txt": "a\n"})
    run_git(repo, "switch", "-q", "-c", "spike")
    (repo / "s.txt").write_text("s\n")
    run_git(repo, "add", "s.txt")
    run_git(repo, "commit", "-q", "-m", "Spike work")
    run_git(repo, "switch", "-q", "main")
    return repo


@pytest.mark.parametrize("answer, typed", [("accept", "spike"), ("accept", "main"), ("decline", None),
                                           ("cancel", None)])
async def test_a_branch_with_unproven_work_goes_only_on_the_persons_word(tmp_path: Path, answer: str,
                                                                         typed: str | None) -> None:
    repo = _unmerged_branch(tmp_path)
    tip = run_git(repo, "rev-parse", "spike")
    person = Person(answer, typed)
    async with Client(_params(repo), mode="legacy", elicitation_callback=person) as client:
        result = await client.call_tool("madt_branch_delete", {"name": "spike"})
    assert "Spike work" in person.forms[0].message and "commits not in main" in person.forms[0].message
    gone = run_git(repo, "branch", "--list", "spike") == ""
    assert gone is (answer == "accept" and typed == "spike"), result.content[0].text
    if not gone:
        assert result.structured_content["code"] == "USER_ACTION_REQUIRED"
        assert run_git(repo, "rev-parse", "spike") == tip
        assert f"in their own terminal with: git -C {repo} branch -D spike" in result.structured_content["user_action"]
    else:
        assert "as the person confirmed through the client" in result.content[0].text


async def test_a_branch_is_not_asked_about_without_the_capability(tmp_path: Path) -> None:
    repo = _unmerged_branch(tmp_path)
    async with Client(_params(repo), mode="legacy") as client:
        result = await client.call_tool("madt_branch_delete", {"name": "spike"})
    assert result.structured_content["code"] == "NOT_CONTAINED" and run_git(repo, "branch", "--list", "spike")


@pytest.mark.parametrize("answer, typed", [("accept", "exact"), ("accept", "wt"), ("decline", None)])
async def test_a_worktree_with_unsaved_work_is_removed_only_on_the_persons_word(tmp_path: Path, answer: str,
                                                                                typed: str | None) -> None:
    repo = make_repo(tmp_path / "web", origin="https://forge.example.test/acme/web.git", files={"a.txt": "a\n"})
    tree = tmp_path / "wt"
    run_git(repo, "worktree", "add", "-q", "-b", "side", str(tree))
    (tree / "a.txt").write_text("unsaved\n")
    person = Person(answer, str(tree) if typed == "exact" else typed)
    async with Client(_params(repo), mode="legacy", elicitation_callback=person) as client:
        result = await client.call_tool("madt_worktrees", {"action": "remove", "path": str(tree)})
    assert "uncommitted changes to 1 file: a.txt" in person.forms[0].message and str(tree) in person.forms[0].message
    removed = not tree.exists()
    assert removed is (typed == "exact"), result.content[0].text
    if removed:
        assert "discarding its unsaved work" in result.content[0].text
        assert run_git(repo, "branch", "--list", "side")  # the branch is kept
    else:
        assert (tree / "a.txt").read_text() == "unsaved\n"


async def _failing_client(context: Any, params: Any) -> ErrorData:
    return ErrorData(code=-32603, message="the client could not show the form")


async def test_a_client_that_cannot_show_the_form_deletes_nothing(tmp_path: Path) -> None:
    repo = _unmerged_branch(tmp_path)
    async with Client(_params(repo), mode="legacy", elicitation_callback=_failing_client) as client:
        result = await client.call_tool("madt_branch_delete", {"name": "spike"})
    assert result.structured_content["code"] == "USER_ACTION_REQUIRED", result.content[0].text
    assert "closed without an answer" in result.content[0].text and run_git(repo, "branch", "--list", "spike")


@pytest.mark.parametrize("answer", ["decline", "cancel"])
async def test_a_confirmation_not_accepted_is_not_asked_again_in_the_session(env: Env, answer: str) -> None:
    """A headless client answers at once with no person involved: asking again would only loop."""
    env.forge.create_label("acme", "web", "bug")
    person = Person(answer)
    async with Client(_params(env.clone), mode="legacy", elicitation_callback=person) as client:
        first = await client.call_tool("madt_labels", {"action": "delete", "name": "bug"})
        again = await client.call_tool("madt_labels", {"action": "delete", "name": "bug"})
    assert len(person.forms) == 1 and "bug" in _labels(env), person.forms
    assert first.structured_content["code"] == again.structured_content["code"] == "USER_ACTION_REQUIRED"
    text = again.content[0].text
    assert "was not accepted earlier in this session, so it is not asked again; nothing changed" in text, text
    assert f"madtea label delete bug --repo {env.forge.host}/acme/web" in again.structured_content["user_action"], text


async def test_a_worktree_is_not_asked_about_without_the_capability(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "web", origin="https://forge.example.test/acme/web.git", files={"a.txt": "a\n"})
    tree = tmp_path / "wt"
    run_git(repo, "worktree", "add", "-q", "--detach", str(tree))
    run_git(tree, "commit", "-q", "--allow-empty", "-m", "Stranded")
    async with Client(_params(repo), mode="legacy") as client:
        result = await client.call_tool("madt_worktrees", {"action": "remove", "path": str(tree)})
    assert result.structured_content["code"] == "UNSAVED_WORK", result.content[0].text
    assert "1 commit on a detached HEAD" in result.content[0].text and tree.exists()
