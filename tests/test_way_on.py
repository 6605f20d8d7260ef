"""A refusal's way on has one explicit shape: steps (next), alternatives (choices), or words for a person."""
from __future__ import annotations

from pathlib import Path

import pytest

import guard
import madtea

ADD = guard.call("madt_add", files=["a.py"])
COMMIT = guard.call("madt_commit", files=["a.py"], title="Fix login")
OVERRIDE = guard.call("madt_commit", files=["a.py"], title="Fix login", allow_default_branch=True)


@pytest.mark.parametrize("next_, choices, user_action, problem", [
    ((ADD, COMMIT), (), None, None),
    ((), ((COMMIT,), (OVERRIDE,)), None, None),
    ((), (), "Delete issue 3 in the forge's web interface.", None),
    ((), (), None, "none"),
    ((COMMIT,), ((COMMIT,), (OVERRIDE,)), None, "'next', 'choices'"),
    ((COMMIT,), (), "Ask someone.", "'next', 'user_action'"),
    ((), ((COMMIT,),), None, "a single choice is a next"),
    ((), ((COMMIT,), ()), None, "at least one step"),
    ((), (), "Call madt_push again with branch set.", "not an agent step"),
    ((), (), "Ask the user which repository; then call madt_commit with it.", "not an agent step"),
])
def test_exactly_one_way_on(next_, choices, user_action, problem) -> None:
    found = guard.way_on_problem(next_, choices, user_action)
    assert (found is None) if problem is None else (problem in found), found


def test_the_text_renders_the_same_shape_on_each_surface() -> None:
    refused = madtea.refusal_result(guard.Refusal("DEFAULT_BRANCH", "madt_commit: on main.", target="acme/web",
                                                  choices=((guard.call("madt_branch_create", name="topic",
                                                                       checkout=True), COMMIT), (OVERRIDE,))))
    mcp = madtea.render_text(refused, "mcp").splitlines()
    assert mcp == ["DEFAULT_BRANCH:", "madt_commit: on main.",
                   'Either: madt_branch_create name="topic" checkout=true, then madt_commit files=["a.py"] '
                   'title="Fix login"',
                   'Or: madt_commit files=["a.py"] title="Fix login" allow_default_branch=true']
    cli = madtea.render_text(refused, "cli")
    assert "Either: madtea branch create topic --checkout, then madtea commit" in cli
    assert "madt_" not in cli and "madtea commit: on main." in cli  # the CLI does not speak MCP
    steps = madtea.render_text(madtea.error_result("UNDECLARED_FILES", "madt_finish: no files.",
                                                   next=(ADD, COMMIT)), "mcp").splitlines()
    assert steps[-2:] == ['Next: madt_add files=["a.py"]', 'Then: madt_commit files=["a.py"] title="Fix login"']
    person = madtea.render_text(madtea.error_result("USER_ACTION_REQUIRED", "x.", user_action="Log in."), "cli")
    assert person.endswith("To continue: Log in.")


def test_structured_content_carries_only_the_way_on_it_has() -> None:
    refused = madtea.refusal_result(guard.Refusal("WRONG_REPO", "x.", choices=((COMMIT,), (OVERRIDE,))))
    assert madtea.way_on(refused.error) == {"choices": [[COMMIT], [OVERRIDE]]}
    assert madtea.way_on(madtea.error_result("GIT_ERROR", "x.").error).keys() == {"user_action"}


def test_a_retry_that_fixes_another_argument_carries_no_override(tmp_path) -> None:
    """The caller's own override is dropped from a next step; the rule it turns off offers it again as a choice."""
    refused = madtea.run("madt_commit", {"title": "", "allow_default_branch": True, "files": ["a.py"]},
                         madtea.Context("mcp", tmp_path))
    assert refused.error and refused.error["code"] == "BAD_ARGUMENT", refused.text
    assert guard.way_on_problem(refused.error["next"], refused.error["choices"], refused.error["user_action"]) is None
    assert not any(guard.is_override(step) for step in refused.error["next"])
    direct = guard.Refusal("BAD_ARGUMENT", "x.", next=(OVERRIDE,))
    assert direct.next == (COMMIT,)


def test_a_lone_surrogate_echoed_in_a_step_is_shown_escaped(tmp_path) -> None:
    """Another argument's value is refused first; the step that fixes it still shows this one, sendably."""
    assert guard.render_call(guard.call("madt_x", id="\ud800")) == 'madt_x id="\\ud800"'
    refused = madtea.run("madt_notifications", {"action": "read", "owner_repo": [], "id": "\ud800"},
                         madtea.Context("mcp", tmp_path))
    assert refused.error and refused.error["code"] == "BAD_ARGUMENT"
    madtea.render_text(refused, "mcp").encode("utf-8")


def test_a_forge_refusal_made_before_any_request_names_the_call_as_its_target(tmp_path) -> None:
    """The repository client refuses a control character in a path segment before it sends anything."""
    import forge

    op = madtea.find_op("madt_wiki", "view")
    result = madtea._forge_error(forge.ForgeError("BAD_ARGUMENT", "A sub-path segment contains control characters."),
                                 madtea.Invocation(op, {"page_name": "\b"}, madtea.Context("mcp", tmp_path)))
    assert result is not None and result.error["target"] == "madt_wiki action=view"


def test_a_package_type_the_forges_do_not_know_is_refused_before_it_is_sent() -> None:
    """The sweep found a hostile type sent to the forge as a query value its spec does not allow."""
    import pytest as _pytest
    with _pytest.raises(guard.Refusal) as refused:
        guard.check_package_type("madt_people action=packages", "nugget", lambda v: guard.call("madt_people", type=v))
    assert refused.value.next == (guard.call("madt_people", type="nuget"),)
    with _pytest.raises(guard.Refusal):
        guard.check_package_type("madt_people action=packages", "\u202eevil", lambda v: guard.call("madt_people"))
    guard.check_package_type("madt_people action=packages", "pypi", lambda v: guard.call("madt_people"))
    guard.check_package_type("madt_people action=packages", None, lambda v: guard.call("madt_people"))


def test_a_value_of_the_wrong_shape_is_refused_with_a_way_on() -> None:
    result = madtea.run("madt_log", {"limit": "lots"}, madtea.Context("mcp", Path("/")))
    assert result.error and result.error["code"] == "BAD_ARGUMENT"
    assert result.error["next"] == [
        {"tool": "madt_log", "args": {"limit": "<a whole number of at least 1 (and below 2^63)>"}}]
    assert not result.error["user_action"]


def _placeholders_in_the_source() -> list[str]:
    """Every placeholder guard.py and madtea.py write: each literal one, and each built one with its gaps filled."""
    import ast

    found = []
    for module in (guard, madtea):
        tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None))
                    == "placeholder" and node.args):
                continue
            for arg in [node.args[0], *([node.args[0].body, node.args[0].orelse]
                                        if isinstance(node.args[0], ast.IfExp) else [])]:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    found.append(guard.placeholder(arg.value))
                elif isinstance(arg, ast.JoinedStr):
                    found.append(guard.placeholder("".join(
                        str(part.value) if isinstance(part, ast.Constant) else "x" for part in arg.values)))
    return found


def test_every_placeholder_a_way_on_gives_is_refused_when_sent_back() -> None:
    """A placeholder is found at any depth, from the source and from every rule's own refusals."""
    from test_chain import argument_refusals, identity_refusals, local_refusals, remote_refusals

    names = madtea._param_names()
    given = _placeholders_in_the_source()
    for _label, refusal in [*local_refusals(), *remote_refusals(), *argument_refusals(), *identity_refusals()]:
        for step in [*refusal.next, *(s for choice in refusal.choices for s in choice)]:
            given += [v for v in step.get("args", {}).values() if guard.is_placeholder(v)]
    assert len(set(given)) > 80 and "<the whole new content, rebuilt from the current version>" in given
    for text in set(given):
        assert list(guard.placeholders_in({"changes": [{"content": text}]}, names)) == [
            ("changes[0].content", text)], text


@pytest.mark.parametrize("value", ["<br>", '<div class="x">', "<!DOCTYPE html>", "<alice@example.com>",
                                   "a <b>bold</b> word", "<<< fenced >>>", "x < y > z", "<3"])
def test_markup_and_ordinary_text_are_not_placeholders(value: str) -> None:
    assert list(guard.placeholders_in({"body": value}, madtea._param_names())) == []
