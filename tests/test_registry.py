"""One registry, two surfaces: every operation on both, with the same parameters and words."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import guard
import madtea

ROOT = Path(__file__).resolve().parent.parent

# What a shipped string must never carry: decision-record or tracker numbers, internal names.
LEAKS = re.compile(r"\bADR[- ]?\d|\b(?:issue|ticket|tracker)\s*#?\d{2,}|#\d{3,}|legacy tracker|internal tracker",
                   re.IGNORECASE)


def _subparsers(parser):
    for action in parser._actions:  # argparse has no public walk
        if action.__class__.__name__ == "_SubParsersAction":
            return action.choices
    return {}


def _cli_parser_for(op):
    parser = madtea.build_parser()
    node = parser
    for word in op.cli:
        node = _subparsers(node)[word]
    return node


def _cli_dests(sub) -> dict[str, str]:
    return {a.dest: a.help for a in sub._actions if a.dest not in ("help",)}


AGENT_OPS = [op for op in madtea.REGISTRY if not op.cli_only]


@pytest.mark.parametrize("op", AGENT_OPS, ids=lambda op: op.where)
def test_every_operation_is_on_both_surfaces_with_the_same_words(op) -> None:
    sub = _cli_parser_for(op)
    assert sub.description == madtea._for_people(op.summary)  # the same words, calls written as the CLI's
    dests = _cli_dests(sub)
    mcp_names = set(op.specs)
    cli_only = {p.name for p in op.params if p.cli_only}
    # -F for a long text, --web on a view, --jq and --template beside --json, api's -f/-F fields and -H headers:
    # people's own options.
    assert set(dests) - cli_only - {"body_file", "_web", "_jq", "_template", "_fields", "_headers"} == mcp_names
    schema = madtea.tool_schema(op.tool)
    for name, param in op.specs.items():
        assert name in schema["properties"], name
        assert param.description in schema["properties"][name]["description"]
        if not param.enum_flags:
            # The CLI speaks of its own cwd, and names its flags as flags.
            assert dests[name] == madtea._for_people(param.cli_help or param.description)
    if op.action:
        assert op.action in schema["properties"]["action"]["enum"]
        assert f"- {op.action}: {op.summary}" in madtea.tool_description(op.tool)
    else:
        assert madtea.tool_description(op.tool) == op.summary


def test_tools_are_named_madt_and_each_noun_is_one_tool() -> None:
    names = madtea.tool_names()
    assert all(re.fullmatch(r"madt_[a-z_]+", n) for n in names)
    assert len(names) == len(set(names))
    for name in names:
        actions = [op.action for op in madtea.tool_ops(name)]
        assert len(actions) == len(set(actions))
        assert actions == [None] or None not in actions


def test_no_delete_action_on_the_agent_surface() -> None:
    # Two deletions lose nothing that cannot be put back: a tracked time entry (add_time restores it) and a
    # pending review (a draft nobody else has seen; a submitted one is refused). Every other is a person's.
    assert [op.where for op in AGENT_OPS if op.action and "delete" in op.action] == [
        "madt_issues action=delete_time", "madt_pr action=delete_review"]
    assert "madt_branch_delete" in madtea.tool_names()  # the one local delete: proven-contained branches


def test_people_only_operations_are_exactly_the_forge_deletions_and_are_on_the_cli() -> None:
    """Besides the deletions, two person's shortcuts: gh's pr checkout (an agent switches with madt_switch) and
    repo clone (an agent works in the checkout it was launched in)."""
    shortcuts = {("pr", "checkout"), ("repo", "clone")}
    assert {op.cli for op in madtea.REGISTRY if op.cli_only and not op.destructive} == shortcuts
    people = [op for op in madtea.REGISTRY if op.cli_only and op.cli not in shortcuts]
    assert {op.tool for op in people} == {"madt_issues", "madt_labels", "madt_milestones", "madt_releases",
                                          "madt_wiki", "madt_repo", "madt_actions"}
    for op in people:
        assert op.action.startswith("delete") and op.destructive
        assert _cli_parser_for(op).description == op.summary
        assert op.action not in madtea.tool_schema(op.tool)["properties"]["action"]["enum"]


def test_local_tools_take_dir_and_remote_tools_take_owner_repo() -> None:
    for op in madtea.REGISTRY:
        assert ("dir" if op.kind == "local" else "owner_repo") in op.specs, op.where


def test_design_parameter_names_of_local_tools() -> None:
    expected = {
        "madt_status": set(), "madt_log": {"ref", "limit"}, "madt_add": {"files"},
        "madt_commit": {"files", "title", "body", "allow_default_branch"},
        "madt_push": {"branch", "force_with_lease", "set_upstream"}, "madt_pull": {"branch"},
        "madt_branch_create": {"name", "start_point", "checkout"}, "madt_branch_delete": {"name"},
        "madt_switch": {"branch"}, "madt_prune": {"dry_run"},
    }
    for tool, names in expected.items():
        (op,) = madtea.tool_ops(tool)
        assert set(op.specs) == names | {"dir"}, tool
    worktrees = set().union(*(op.specs for op in madtea.tool_ops("madt_worktrees")))
    assert worktrees == {"path", "commit_ish", "b", "carry", "dir"}


def test_cli_renders_style_as_gh_flags() -> None:
    (merge,) = [op for op in madtea.REGISTRY if op.where == "madt_pr action=merge"]
    help_text = _cli_parser_for(merge).format_help()
    assert "--squash" in help_text and "--rebase" in help_text and "--style" not in help_text


def test_tools_list_payload_is_within_budget() -> None:
    payload = [{"name": n, "description": madtea.tool_description(n), "inputSchema": madtea.tool_schema(n),
                "annotations": madtea.tool_annotations(n)} for n in madtea.tool_names()]
    assert len(json.dumps(payload)) <= 40_000


def _shipped_strings() -> list[str]:
    texts = [madtea.INSTRUCTIONS, *madtea.TOOL_SUMMARIES.values(), madtea.build_parser().format_help()]
    for op in madtea.REGISTRY:
        texts.append(op.summary)
        texts += [p.description for p in op.params]
        texts.append(_cli_parser_for(op).format_help())
    for name in ("plugin.json",):
        path = ROOT / ".claude-plugin" / name
        if path.exists():
            texts.append(path.read_text())
    for path in (ROOT / "hooks" / "hooks.json", ROOT / ".mcp.json", ROOT / "integrations" / "codex-hooks.json",
                 ROOT / "integrations" / "gemini" / "gemini-extension.json",
                 ROOT / "integrations" / "gemini" / "hooks" / "hooks.json",
                 ROOT / "integrations" / "codex-config.toml"):
        if path.exists():
            texts.append(path.read_text())
    return texts


def test_shipped_strings_are_self_contained() -> None:
    offenders = [t for t in _shipped_strings() if LEAKS.search(t)]
    assert not offenders, [LEAKS.search(t).group(0) for t in offenders]


def test_the_lint_itself_catches_a_citation() -> None:
    assert LEAKS.search("see ADR 0026 for why")
    assert LEAKS.search("fixed in legacy tracker 1313")
    assert not LEAKS.search("The issue or pull request number, e.g. 12.")


def test_descriptions_name_the_reflex_word_they_are_not() -> None:
    (commit,) = madtea.tool_ops("madt_commit")
    assert "not `message`" in commit.specs["title"].description
    search = madtea.tool_ops("madt_search")[0]
    assert "not `query`" in search.specs["q"].description


def test_every_operation_is_declared_where_a_grep_for_the_decorator_finds_it() -> None:
    import inspect
    hidden = [(op.tool, op.action) for op in madtea.REGISTRY
              if "<locals>" in op.handler.__qualname__
              or not inspect.getsource(op.handler).lstrip().startswith("@operation(")]
    assert hidden == []
    assert len(re.findall(r"^@operation\(", Path(madtea.__file__).read_text(), re.M)) == len(madtea.REGISTRY)


def test_a_refusal_names_each_operation_as_the_registry_does() -> None:
    """The guard's wording of a call and the registry's are one: a bad value's refusal opens with op.where."""
    for op in madtea.REGISTRY:
        int_params = [s for s in op.specs.values() if s.type == "int"]
        if not int_params:
            continue
        with pytest.raises(guard.Refusal) as caught:
            guard.check_arguments(op.tool, op.action, op.specs, {int_params[0].name: "not a number"})
        assert caught.value.message.startswith(f"{op.where}: "), (op.where, caught.value.message)


# --------------------------------------------------------------------------- typed reads of the arguments

# Each declared type, a value a caller may send for it, and the reader a handler takes it with.
_READS = {"str": ("a title", "text"), "enum": (None, "text"), "int": ("7", "number"), "number": ([12], "number"),
          "bool": ("true", "flag"), "strs": ("one", "texts"), "numbers": ("3, 4", "numbers")}


@pytest.mark.parametrize("op", madtea.REGISTRY, ids=lambda op: op.where)
def test_each_argument_reads_back_as_its_declared_type(op, tmp_path: Path) -> None:
    for spec in op.specs.values():
        if spec.type == "json":
            continue
        assert spec.type in _READS, f"{op.where}: {spec.name} is declared {spec.type!r}, which no reader takes"
        sent, reader = _READS[spec.type]
        sent = spec.choices[0] if spec.type == "enum" else sent
        args = guard.check_arguments(op.tool, op.action, {spec.name: spec}, {spec.name: sent})
        inv = madtea.Invocation(op, args, madtea.Context("mcp", tmp_path))
        value = getattr(inv, reader)(spec.name)
        assert value == args[spec.name] and value not in (None, [], ""), (op.where, spec.name, value)


def test_a_value_of_another_type_is_an_internal_error_naming_the_argument(tmp_path: Path) -> None:
    op = madtea.find_op("madt_issues", "view")
    inv = madtea.Invocation(op, {"number": "12", "comments": 1}, madtea.Context("mcp", tmp_path))
    with pytest.raises(TypeError, match="madt_issues action=view: the argument number is str, not int"):
        inv.number("number")
    with pytest.raises(TypeError, match="the argument comments is int, not bool"):
        inv.flag("comments")
    assert inv.flag("absent") is False and inv.texts("absent") == [] and inv.opt_text("absent") is None


def test_a_handler_reads_only_json_arguments_from_the_mapping_itself() -> None:
    source = (ROOT / "madtea.py").read_text(encoding="utf-8")
    read = set(re.findall(r"""inv\.args(?:\[|\.get\()\s*["'](\w+)["']""", source))
    json_names = {s.name for op in madtea.REGISTRY for s in op.specs.values() if s.type == "json"}
    assert read, "the pattern no longer finds the JSON reads"
    assert read <= json_names, f"read from inv.args, not through a typed reader: {sorted(read - json_names)}"
