"""Named rules: every refusal names the guard function that decided it, on both surfaces; RULES.md lists them.

A rule is a function in guard.py (or, for a forge's answer, in forge.py); a
refusal's ``rule`` is the function that built it. The refusals come from the
chain test's producers (the rules driven over a grid of facts) and from real
calls, so a refusal that lost its rule, or names a function RULES.md does not
list for its code, fails here; so does a RULES.md the generator would write
otherwise.
"""
from __future__ import annotations

import importlib.util
import inspect
import itertools
import json
from pathlib import Path
from types import ModuleType

import pytest

import forge
import guard
import madtea
from test_chain import argument_refusals, identity_refusals, local_refusals, remote_refusals, runtime_refusals




def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("rules_md", Path(__file__).resolve().parent.parent / "release"
                                                  / "rules_md.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


rules_md = _generator()
SITES = {(code, rule) for code, rule, _ in rules_md.rule_sites()}


def assert_names_its_rule(label: str, code: str, rule: object) -> None:
    """*rule* is a function of guard.py or forge.py that builds a refusal with *code*, as RULES.md lists it."""
    assert isinstance(rule, str), f"{label}: {code} carries no rule"
    function = getattr(guard, rule, None) or getattr(forge, rule, None)
    assert inspect.isfunction(function), f"{label}: {code} names {rule}, which is no function of guard or forge"
    assert (code, rule) in SITES, f"{label}: RULES.md does not list {rule} for {code}"


def test_rules_md_is_what_the_generator_writes() -> None:
    assert (rules_md.ROOT / "RULES.md").read_text(encoding="utf-8") == rules_md.render(), \
        "RULES.md is stale: run python release/rules_md.py"


def test_rules_md_maps_the_guards_codes_to_their_rules() -> None:
    text = (rules_md.ROOT / "RULES.md").read_text(encoding="utf-8")
    for row in ("| `FOREIGN_PRIMARY` | `foreign_primary` | guard.py |", "| `WRONG_REPO` | `check_signals` | guard.py |",
                "| `NOT_FOUND_OR_NO_ACCESS` | `map_error` | forge.py |"):
        assert row in text
    assert "`madt_commit` | `commit_op` |" in text and "`_step_target`" in text


def test_every_rule_refusal_names_the_function_that_built_it() -> None:
    rules = set()
    for label, refusal in itertools.chain(local_refusals(), remote_refusals(), argument_refusals(),
                                          identity_refusals()):
        assert_names_its_rule(label, refusal.code, refusal.rule)
        rules.add(refusal.rule)
    assert {"check_signals", "foreign_primary", "foreign_finish_by_branch", "unknown_parameter", "missing_required",
            "unknown_action", "check_dir", "remote_signals", "cross_host_change"} <= rules


def test_every_runtime_refusal_shows_its_rule_on_both_surfaces(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    for label, result in runtime_refusals(tmp_path / "rt"):
        assert result.error is not None, label
        assert_names_its_rule(label, result.error["code"], result.error["rule"])
        shown = madtea._tool_result(result).structured_content
        assert shown is not None and shown["rule"] == result.error["rule"], label
        printed = json.loads(json.dumps(madtea.json_error(result)))
        assert printed["error"]["rule"] == result.error["rule"], label


def test_a_refusal_carried_with_more_context_keeps_its_rule() -> None:
    with pytest.raises(guard.Refusal) as caught:
        guard.check_changes("madt_files", "change", madtea.CHANGE_SPECS, {"changes": [{"path": "a", "bogus": 1}]})
    assert (caught.value.code, caught.value.rule) == ("UNKNOWN_PARAMETER", "unknown_parameter")
    assert "changes[0]" in caught.value.message


def test_a_forge_answer_names_the_function_that_mapped_it() -> None:
    error = forge.map_error(404, b'{"message": "not found"}', content_type="application/json", method="GET",
                            path="/repos/acme/web/issues/9", host="forge.example.test")
    assert (error.code, error.rule) == ("NOT_FOUND_OR_NO_ACCESS", "map_error")
    assert error.restated("said again").rule == "map_error"


def test_an_unforeseen_failure_names_no_rule() -> None:
    result = madtea.run_error(RuntimeError("boom"))
    assert result.error is not None and (result.error["code"], result.error["rule"]) == ("INTERNAL_ERROR", None)


def test_every_rule_is_a_function_a_reader_can_find_by_its_name() -> None:
    """A refusal built in a closure would be named after the closure: each rule is its module's own function."""
    modules = {"guard.py": guard, "forge.py": forge, "madtea.py": madtea}

    def found(module: ModuleType, name: str) -> bool:  # a function of the module, or a method of one of its classes
        return inspect.isfunction(getattr(module, name, None)) or any(
            inspect.isfunction(getattr(cls, name, None)) for cls in vars(module).values()
            if inspect.isclass(cls) and cls.__module__ == module.__name__)
    nested = sorted(f"{file}:{rule} ({code})" for code, rule, file in rules_md.rule_sites()
                    if not found(modules[file], rule))
    assert not nested, f"name these rules' functions, or pass rule=: {nested}"
