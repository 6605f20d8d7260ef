"""Every refusal decision madtea makes, and the text of each refusal.

The module is three parts, in this order:

1. **Rules over facts.** Functions take facts (paths, common dirs, origins,
   caller signals, repo state, what a forge answered) and return a decision or
   raise :class:`Refusal`: the wrong-repo guard, the foreign-target contract,
   the rules every call meets, the forge writes' rules, the server's scope and
   the rules of updating a copy install.
2. **The hook's shell classifier.** :func:`classify_command` takes one shell
   line and a filesystem-only reader of repository facts and returns a
   :class:`HookDecision`; it is a rule too, and as pure as the first part.
3. **The hook's entry.** ``madtea hook`` itself: the module's only I/O (the
   event on stdin, the answer on stdout and stderr, a few small file reads and
   the caller record). It lives here so that a hook run loads guard and gitops
   alone. The exec-time ``git`` (the shim) is its other entry: the same table,
   judged on the argv git really receives.

Private names take one prefix, ``_``, in all three parts; part 3 is set apart
by its section header, not by its names.

Nothing here touches the network. Nothing starts a process but the shim, which asks git (through gitops)
for an alias that is not a builtin's name, then becomes git.
"""
from __future__ import annotations

import os
import stat
import sys
import time

import gitops
from gitops import record, to_json

# The hook imports this module before every shell command: pathlib, typing and
# collections are for type checkers here, Path and re are imported where a rule
# uses them (a pattern is a string; re compiles and caches it), and JSON is
# gitops.to_json (see there).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
    from pathlib import Path
    from typing import IO, NoReturn, Protocol, TypedDict

    from gitops import Json  # JSON: a tool call's arguments, a forge's answers, a record read back

    # Loads madtea's CLI table, (noun, verb) -> what the hook needs of it: only a line that runs madtea asks.
    CliTable = Callable[[], Mapping[tuple[str, ...], Json]]


__all__ = [
    "Refusal", "where_of", "RepoFacts", "RepoState", "Signal", "Target", "call", "render_call", "did_you_mean",
    "way_on_problem", "placeholder", "is_placeholder", "placeholders_in",
    "check_no_placeholder", "render_way_on", "shell_quote", "check_arguments",
    "check_not_option", "check_dir", "not_a_repo", "no_work_tree", "unpinnable", "names_origin",
    "no_signal", "launch_problem", "distinct_children", "check_local", "check_signals",
    "check_workspace", "check_foreign", "foreign_finish_by_branch", "foreign_push_names_branch",
    "foreign_primary", "foreign_dirty_switch", "foreign_prune", "foreign_branch_on_dirty", "BLANKET_WORDS",
    "new_worktree_path", "declared_files",
    "contribution_flow", "continue_rail", "slug",
    "check_remote_urls", "check_worktree_home", "check_files_from_top", "outside_sparse",
    "RemoteCall", "check_remote", "remote_signals", "remote_workspace_hosts", "cross_host_change", "Scope", "listed",
    "check_scope", "server_read_only", "tool_not_offered", "account_wide", "repo_in_scope", "check_repo_scope",
    "check_host_scope", "narrow_way_on", "scope_entry_problems", "RefWrite", "check_branch_rename",
    "protected_branch", "pr_already_open", "ref_exists", "no_such_ref", "ForgeCall", "duration_seconds",
    "actions_name", "saved_file",
    "artifact_too_large", "no_stopwatch", "no_time_entry", "check_review_pending", "inline_comments",
    "dispatch_inputs", "lost_write", "no_review_comment",
    "check_file_path", "FileWrite", "check_file_branch", "check_file_sha", "file_changed", "check_replacement",
    "file_too_large",
    "check_file_content", "no_such_file", "no_ref_to_read", "check_file_input", "bad_base64", "check_rename_target",
    "check_path_spelling", "check_changes", "check_package_type", "Asked", "call_ran_out", "no_such_tool",
    "LOST", "confirmation_form", "check_confirmation", "persons_route", "asked_before",
    "check_no_action", "unknown_action", "check_arguments_object", "no_launch_repo", "check_owner_repo",
    "check_owner_repo_host",
    "no_forge_origin", "no_current_pull_request", "no_pull_request_from", "not_an_address", "address_elsewhere",
    "same_repository", "liberal_numbers", "no_default_repo", "check_branch_named", "is_full_sha",
    "is_short_sha", "check_lease",
    "lease_rejected", "push_rejected", "check_local_branch", "check_branch_delete", "branch_checked_out",
    "not_contained", "check_worktree_path_given",
    "check_worktree_remove", "check_finish_branch_form", "check_finish_title", "finish_no_close",
    "check_forge_origin", "check_origin_has_base", "cross_host_write", "check_fields", "check_labels",
    "check_confined", "FORGE_NEXT", "NOTHING_FURTHER", "check_merge_head", "check_merged", "check_forgejo_offers",
    "server_lacks", "check_pr_open", "anonymous_not_found_way_on", "check_filter_names",
    "no_such_wiki_page", "no_such_user",
    "check_secret_listed", "no_such_variable", "stopped_time_unseen", "login_way_on", "check_git_auth",
    "no_such_milestone", "check_something_to_change", "check_pr_head", "check_due_date", "check_upload_file",
    "upload_without_repo", "upload_outside_tree",
    "check_upload_content", "check_api_path", "api_path_leaves", "check_api_method", "check_api_secret",
    "check_api_headers", "bad_api_field", "api_placeholder_unknown", "bad_api_body", "unreadable_file",
    "covered_write",
    "covered_refusal", "no_terminal_to_confirm", "check_typed_name", "delete_is_a_persons_act", "lost_create",
    "no_login_to_default", "no_terminal_for_token", "no_token_given",
    "no_stored_token", "import_needs_terminal", "unreadable_body_file", "plain_http_way_on",
    "batch_stopped", "check_checklist_item", "check_whole_body", "body_version_missing", "body_changed",
    "check_replace_once", "body_replaced",
    "body_kept_changing", "check_update_install", "update_not_a_release", "update_no_signature",
    "update_wrong_kind", "check_update_signer", "update_bad_signature", "update_trust_needs_terminal",
    "update_not_trusted", "check_update_version", "update_tool_failed", "update_replace_failed",
    "update_no_source", "update_bad_source", "update_release_lacks", "update_busy", "update_new_copy_failed",
    "HookDecision", "HookRepo", "classify_command",
    "hook_failure_decision", "mentions_git_or_madtea", "NONE_RAN", "DO_NOT_RETRY", "MID_OPERATION_RAIL",
    "hook_command", "hook_main", "exit_flushed", "caller_cwd_signal", "runtime_dir",
    "record_caller_signal", "hook_repo_facts",
]

# =========================================================================== 1. rules over facts

if TYPE_CHECKING:
    Call = dict[str, Json]  # {"tool": "madt_x", "args": {...}}: a next step, as data
else:
    Call = dict

DO_NOT_SWEEP = "Do not retry with blanket staging; name the files."


class Refusal(Exception):
    """An expected refusal: a stable code, one plain sentence of why, and exactly one way on.

    ``next`` is the ordered steps of one way on (running them all, in order, does
    what the caller asked); ``choices`` is alternatives, each an ordered list of
    steps, when only the caller knows which is meant; ``user_action`` is words
    for a person, when only a person can continue. :func:`way_on_problem` says
    when a refusal carries other than exactly one of them.

    ``rule`` names the rule that made the refusal: the guard function that
    builds it, unless the builder names another (a refusal re-raised with more
    context keeps the rule of the one it carries). RULES.md lists them all.
    """

    def __init__(self, code: str, message: str, *, target: str | None = None,
                 next: Sequence[Call] = (), choices: Sequence[Sequence[Call]] = (),
                 user_action: str | None = None, rule: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        # sys._getframe, not inspect.currentframe: importing inspect would double the hook's start-up.
        self.rule = rule or gitops.rule_at(sys._getframe(1))
        self.message = message
        self.target = target
        if len(choices) == 1 and not next:
            next, choices = choices[0], ()  # one alternative is no choice: it is the way on
        # An override is only ever a choice: a retry that fixes another argument drops the caller's own
        # override too, and the rule it turns off offers it again, as a choice, if it still applies.
        self.next = tuple({**s, "args": {k: v for k, v in s["args"].items() if not (k.startswith("allow_")
                                                                                  and v is True)}}
                          if "args" in s and is_override(s) else s for s in next)
        self.choices = tuple(tuple(choice) for choice in choices)
        self.user_action = user_action


# An agent step disguised as words for a person: "Call madt_x again ...".
_AGENT_STEP = r"\bmadt_[a-z_]+|^(?:Or )?[Cc]all\b"


def way_on_problem(next: Sequence[Call], choices: Sequence[Sequence[Call]], user_action: str | None) -> str | None:
    """Why a way on is not exactly one of next, choices or user_action; None when it is."""
    given = [name for name, value in (("next", next), ("choices", choices), ("user_action", user_action)) if value]
    if len(given) != 1:
        return f"a refusal carries exactly one of next, choices, user_action; this one has {given or 'none'}"
    if any(not choice for choice in choices):
        return "every choice is at least one step"
    if len(choices) == 1:
        return "a single choice is a next"
    if any(is_override(step) for step in next):
        return "an override is only ever a choice, never a step of next"
    import re
    if user_action and re.search(_AGENT_STEP, user_action):
        return f"user_action is for a person, not an agent step: {user_action!r}"
    return None


def is_override(step: Call) -> bool:
    """A step that turns a rule off for one call (``allow_default_branch=true``)."""
    return any(key.startswith("allow_") and value is True for key, value in step.get("args", {}).items())


def placeholder(what: str) -> str:
    """A value only the caller can supply, in a step: ``<the branch to push>``."""
    return f"<{what}>"


def is_placeholder(value: object) -> bool:
    return isinstance(value, str) and len(value) > 2 and value.startswith("<") and value.endswith(">")


# A way on's placeholder as placeholder() writes it: words between angle brackets that start with a letter, on
# one line, with no "=" and no other angle bracket (so markup with attributes, or <!DOCTYPE html>, is not one).
# One word is a placeholder when it is a parameter's name (``<title>``) or a shape (``<owner/repo>``).
_PLACEHOLDER_TEXT = r"<[^\W\d_][^<>=\n]*>"


def placeholders_in(value: Json, names: Collection[str], where: str = "") -> Iterable[tuple[str, str]]:
    """Each (argument path, value) in *value*, at any depth, that is still a way on's placeholder."""
    import re

    if isinstance(value, str):
        text = value.strip()
        inner = text[1:-1].strip()
        if re.fullmatch(_PLACEHOLDER_TEXT, text) and (" " in inner or "/" in inner or inner in names):
            yield where, text
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from placeholders_in(item, names, f"{where}[{i}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from placeholders_in(item, names, f"{where}.{key}" if where else str(key))


def check_no_placeholder(tool: str, action: str | None, args: Mapping[str, Json], names: Collection[str]) -> None:
    """A call whose argument is still a placeholder a way on gave (``<the whole new content>``) is refused:
    sent as it is, it would be written as it is (a file's content, a body, a title)."""
    found = next(iter(placeholders_in(dict(args), names)), None)
    if found is None:
        return
    where, text = found
    raise Refusal("BAD_ARGUMENT", f"{where} is still the placeholder {_shown(text, 200)}, which a way on gave for "
                  f"the caller to fill in with the real value; madtea never sends or writes it as it is, so nothing "
                  f"was done.", target=f"{tool}{' ' + action if action else ''}",
                  next=(call(tool, **_with_action(action, dict(args))),))


def call(tool: str, **args: Json) -> Call:
    """A next step as data; arguments whose value is None are left out."""
    return {"tool": tool, "args": {k: v for k, v in args.items() if v is not None}}


def render_call(step: Mapping[str, Json]) -> str:
    """``madt_worktrees action=add dir="/x" files=["a.py","b.py"]``: how every text names a call.

    The action is a bare word; every other value is JSON (lists without spaces), so a call reads the same in a
    refusal, a hook text and a continuation line.
    """
    parts = [step["tool"]]
    for key, value in step["args"].items():
        parts.append(f"{key}={value}" if key == "action" and isinstance(value, str) else f"{key}={_call_value(value)}")
    # A caller's lone surrogate, echoed in a step, is shown escaped: the text must be sendable as UTF-8.
    return " ".join(parts).encode("utf-8", "backslashreplace").decode("utf-8")


def _call_value(value: Json) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, (list, tuple)):
        return to_json(list(value), ensure_ascii=False, separators=(",", ":"))
    return to_json(value if isinstance(value, (str, dict)) or value is None else str(value), ensure_ascii=False)



def render_way_on(next: Sequence[Call], choices: Sequence[Sequence[Call]], user_action: str | None,
                  show: Callable[[Call], str] = render_call) -> list[str]:
    """The way on as text lines, in the same shape as the data: steps, alternatives, or words for a person."""
    def step(s: Call) -> str:
        return f"run `{s['shell']}`" if "shell" in s else show(s)
    lines = [("Next: " if i == 0 else "Then: ") + step(s) for i, s in enumerate(next)]
    lines += [("Either: " if i == 0 else "Or: ") + ", then ".join(step(s) for s in choice)
              for i, choice in enumerate(choices)]
    if user_action:
        lines.append("Only a person can continue: " + user_action)
    return lines

# --------------------------------------------------------------------------- parameters

if TYPE_CHECKING:
    class ParamSpec(Protocol):
        # Read-only, so a frozen record's fields satisfy them.
        @property
        def name(self) -> str: ...
        @property
        def type(self) -> str: ...             # str | int | bool | strs | number | numbers | enum | json
        @property
        def required(self) -> bool: ...
        @property
        def choices(self) -> tuple[str, ...]: ...
        @property
        def minimum(self) -> int: ...          # the least whole number an "int" parameter takes


# The largest identifier or count either surface takes: the forge's own integers are 64-bit.
MAX_NUMBER = 2**63 - 1
_DIGITS = r"#?([0-9]{1,19})"


def _whole(value: object) -> int | None:
    """An integer, or a string of ASCII digits (``"7"``, ``"#7"``); None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        import re
        text = value.strip()
        negative = text.startswith("-")
        match = re.fullmatch(_DIGITS, text[1:] if negative else text)
        return None if match is None else (-1 if negative else 1) * int(match.group(1))
    return None


# A short, closed table of reflex words. No open-ended alias matching: a
# confident wrong guess is worse than a refusal.
_REFLEX = {
    "commit_message": "title", "message": "title", "msg": "title", "subject": "title",
    "query": "q", "search": "q",
    "repo": "owner_repo", "repository": "owner_repo",
    "directory": "dir", "path_to_repo": "dir", "repo_path": "dir", "cwd": "dir",
    "paths": "files", "file": "files",
}


def did_you_mean(name: str, known: Iterable[str]) -> str | None:
    """The one real parameter a mistyped *name* most likely meant, if any."""
    known = list(known)
    reflex = _REFLEX.get(name.lower())
    if reflex in known:
        return reflex
    import difflib
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.75)
    return close[0] if close else None


def _liberal_numbers(value: object) -> list[int] | None:
    if isinstance(value, str):
        import re
        value = [p for p in re.split(r"[\s,]+", value.strip()) if p]
    if not isinstance(value, (list, tuple)):
        value = [value]
    out = []
    for item in value:
        number = _whole(item)
        if number is None or not 1 <= number <= MAX_NUMBER:
            return None
        out.append(number)
    return out


def where_of(tool: str, action: str | None) -> str:
    """``madt_pr action=merge``: how a refusal names the call it refuses."""
    return f"{tool} action={action}" if action else tool


def _shown(value: object, limit: int = 80) -> str:
    """A caller's value as a refusal quotes it: JSON, cut to *limit* characters, lone surrogates escaped."""
    text = to_json(value, ensure_ascii=False, default=str)
    text = text if len(text) <= limit else text[:limit] + "…"
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _bad(tool: str, action: str | None, name: str, expected: str, value: object,
         raw: Mapping[str, Json] | None = None, values: Sequence[Json] = (), *, hide: bool = False) -> Refusal:
    """A value of the wrong shape: the same call with it set right (each allowed value, when there are few).

    With *hide* (an action that carries a secret, whose *raw* values the caller has withheld), the value is
    not quoted."""
    where = where_of(tool, action)
    others = {k: v for k, v in (raw or {}).items() if k != "action"}
    retry = [call(tool, **_with_action(action, others | {name: v})) for v in values] or \
        [call(tool, **_with_action(action, others | {name: placeholder(expected)}))]
    shown = placeholder("the secret value") if hide else _shown(value)
    return Refusal("BAD_ARGUMENT", f"{where}: {name} must be {expected}, not {shown}.", target=where,
                   next=retry if len(retry) == 1 else (), choices=[(c,) for c in retry] if len(retry) > 1 else ())


# Free text goes to the forge as JSON or to git on stdin; every other string can become a command-line
# argument or a path, which the system bounds (an argument of 128 KiB, a path of 4096 bytes).
_FREE_TEXT = frozenset({"body", "content", "append", "replace_old", "replace_new", "notes", "description",
                        "comment", "message", "title", "new_title", "q", "search", "check", "uncheck"})
MAX_NAME = 4096
MAX_NAMES = 256 * 1024  # all the strings of one list together


def _text_problem(name: str, values: Sequence[str]) -> str | None:
    """Why strings cannot be taken as they are (NUL, lone surrogates, too long); None when they can."""
    for v in values:
        if "\x00" in v:
            return "free of NUL bytes"
        try:
            v.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            return "of valid Unicode text (no lone surrogates)"
        if name not in _FREE_TEXT and len(v) > MAX_NAME:
            return f"at most {MAX_NAME} characters long"
    if name not in _FREE_TEXT and sum(map(len, values)) > MAX_NAMES:
        return f"at most {MAX_NAMES} characters long altogether"
    return None


def _coerce(tool: str, action: str | None, spec: ParamSpec, value: Json, raw: Mapping[str, Json] | None = None,
            hide: bool = False) -> Json:
    kind = spec.type
    if kind in ("str", "enum"):
        if isinstance(value, int) and not isinstance(value, bool) and kind == "str":
            value = str(value)
        if not isinstance(value, str):
            raise _bad(tool, action, spec.name, "a string", value, raw, hide=hide)
        problem = _text_problem(spec.name, [value])
        if problem:
            raise _bad(tool, action, spec.name, "a string " + problem, value, raw, hide=hide)
        if kind == "enum" and value not in spec.choices:
            raise _bad(tool, action, spec.name, "one of " + ", ".join(spec.choices), value, raw, spec.choices,
                       hide=hide)
        return value
    if kind == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        raise _bad(tool, action, spec.name, "true or false", value, raw, (True, False), hide=hide)
    if kind == "int":
        number = _whole(value[0] if isinstance(value, (list, tuple)) and len(value) == 1 else value)
        low = getattr(spec, "minimum", 0)
        if number is None or not low <= number <= MAX_NUMBER:
            raise _bad(tool, action, spec.name, f"a whole number of at least {low} (and below 2^63)", value, raw,
                       hide=hide)
        return number
    if kind in ("number", "numbers"):
        numbers = _liberal_numbers(value)
        if not numbers:
            raise _bad(tool, action, spec.name, "an issue or PR number such as 12", value, raw, hide=hide)
        return numbers
    if kind == "strs":
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise _bad(tool, action, spec.name, "a list of strings", value, raw, hide=hide)
        problem = _text_problem(spec.name, value)
        if problem:
            raise _bad(tool, action, spec.name, "a list of strings " + problem, value, raw, hide=hide)
        return list(value)
    return value  # json: any shape, checked by its handler


def unknown_parameter(tool: str, action: str | None, specs: Mapping[str, ParamSpec], raw: Mapping[str, Json],
                      name: str, hide: bool) -> Refusal:
    """A parameter the tool (action) does not have; the way on is the call with the likeliest spelling."""
    where = where_of(tool, action)
    guess = did_you_mean(name, specs)
    hint = f" Did you mean {guess}?" if guess else ""
    known = ", ".join(sorted(specs)) or "none"
    corrected = {(guess if guess and key == name else key): v for key, v in raw.items()
                 if key != "action" and (guess or key != name)}
    if hide:  # the way on names every required parameter, whichever the misspelt one meant
        corrected = _withheld(specs, {n: "" for n, p in specs.items() if p.required} | corrected)
    step = call(tool, **_with_action(action, corrected))
    # A misspelt override is still only ever a choice: the call without it is the other one.
    plain = call(tool, **_with_action(action, {k: v for k, v in corrected.items() if k != guess}))
    return Refusal("UNKNOWN_PARAMETER",
                   f"{where} has no parameter {name[:60]!r}.{hint} Its parameters are: {known}.",
                   target=where, next=() if is_override(step) else (step,),
                   choices=((plain,), (step,)) if is_override(step) else ())


def several_numbers(tool: str, action: str | None, out: Mapping[str, Json], numbers: list[Json],
                    batch_action: str | None) -> Refusal:
    """A single-target action given several numbers (or none)."""
    where = where_of(tool, action)
    other = f" {tool} action={batch_action} takes several." if batch_action else " Make one call for each."
    given = {k: v for k, v in out.items() if k != "number"}
    steps = [call(tool, **_with_action(batch_action, given | {"numbers": numbers}))] if batch_action else \
        [call(tool, **_with_action(action, given | {"number": n})) for n in numbers]
    return Refusal("BAD_ARGUMENT",
                   f"{where} acts on one number, but {len(numbers)} were given "
                   f"({', '.join(map(str, numbers[:10]))}{' …' if len(numbers) > 10 else ''}).{other}",
                   target=where, next=steps if numbers else (call(tool, **_with_action(
                       action, given | {"number": placeholder("number")})),))


def missing_required(tool: str, action: str | None, specs: Mapping[str, ParamSpec], out: Mapping[str, Json],
                     missing: list[str], hide: bool) -> Refusal:
    """Required parameters absent or blank."""
    where = where_of(tool, action)
    blank = missing[0] in out
    fill = {n: placeholder(n) for n in missing}
    given = _withheld(specs, out) if hide else out
    return Refusal("BAD_ARGUMENT", f"{where} needs {', '.join(missing)}" + (", and it is blank." if blank else "."),
                   target=where, next=(call(tool, **_with_action(action, dict(given) | fill)),))


def check_arguments(tool: str, action: str | None, specs: Mapping[str, ParamSpec],
                    raw: Mapping[str, Json], *, batch_action: str | None = None) -> dict[str, Json]:
    """Strict names, liberal shapes, hard arity: the arguments a handler may trust.

    ``number`` and ``numbers`` are one identifier: a single-target action takes
    ``numbers=[N]`` as ``number=N`` and refuses several.
    """
    where = where_of(tool, action)
    hide = any(getattr(spec, "secret", False) for spec in specs.values())
    shown = _withheld(specs, raw) if hide else raw
    out: dict[str, Json] = {}
    for name, value in raw.items():
        if name == "action":
            continue
        spec = specs.get(name)
        if spec is None and name in ("number", "numbers"):
            spec = specs.get("numbers" if name == "number" else "number")
        if spec is None:
            raise unknown_parameter(tool, action, specs, raw, name, hide)
        if value is None:
            continue
        out[spec.name] = _coerce(tool, action, spec, value, shown, hide)
    if "number" in specs and "number" in out and isinstance(out["number"], list):
        numbers = out["number"]
        if len(numbers) != 1:
            raise several_numbers(tool, action, out, numbers, batch_action)
        out["number"] = numbers[0]
    missing = [name for name, spec in specs.items() if spec.required and
               (name not in out or isinstance(out[name], str) and not out[name].strip())]
    if missing:
        raise missing_required(tool, action, specs, out, missing, hide)
    for name, value in out.items():  # a value the forge's API takes as one segment of its path
        what = getattr(specs.get(name), "segment", None)
        if what and isinstance(value, str):
            def again(given: str, name: str = name) -> Call:
                return call(tool, **_with_action(action, out | {name: given}))
            check_path_name(where, name, value, what, again)
    return out


def _withheld(specs: Mapping[str, ParamSpec], args: Mapping[str, Json]) -> dict[str, Json]:
    """The arguments of an action that carries a secret, each value replaced by a placeholder to fill again.

    A secret may come under any key (a misspelt one, or the wrong one), so no value given to such an action is
    repeated in a refusal's text or way on; placeholders stay as they are.
    """
    return {key: value if is_placeholder(value) or key == "action" else placeholder(
        "the secret value" if getattr(specs.get(key), "secret", False)
        else f"the {key} again (not repeated: this action carries a secret)") for key, value in args.items()}


def _with_action(action: str | None, args: dict[str, Json]) -> dict[str, Json]:
    return ({"action": action} if action else {}) | {k: v for k, v in args.items() if k}


def check_not_option(value: str, name: str, where: str, args: Mapping[str, Json] | None = None) -> str:
    """Values that start with '-' are never handed to git, where they would read as options."""
    if value.startswith("-"):
        tool, _, action = where.partition(" action=")
        retry = dict(args or {}) | {name: placeholder(f"a {name} that does not start with '-'")}
        raise Refusal("BAD_ARGUMENT", f"{where}: {name} {value[:60]!r} starts with '-', which git would read "
                      "as an option.", target=where, next=(call(tool, **_with_action(action or None, retry)),))
    return value


def check_dir(raw: str, tool: str, args: Mapping[str, Json] | None = None, action: str | None = None,
              *, name: str = "dir") -> Path:
    """A ``dir=`` value (or another path parameter, *name*): any absolute path; never relative, empty or blank.

    With the call's *args*, a value that is only padded is answered with the same call, trimmed.
    """
    from pathlib import Path
    what = "a git repository" if name == "dir" else "the worktree"
    stripped = raw.strip()

    def again(value: str | None) -> Call:
        return call(tool, **_with_action(action, {k: v for k, v in (args or {}).items() if k != name}
                                         | {name: value}))
    absolute = placeholder(f"the absolute path of {what}")
    if not stripped:
        raise Refusal("BAD_ARGUMENT", f"{tool}: {name} is empty; it must be the absolute path of {what}.",
                      target=tool, choices=((again(absolute),), (again(None),)) if name == "dir" else (),
                      next=() if name == "dir" else (again(absolute),))
    if stripped != raw:
        raise Refusal("BAD_ARGUMENT", f"{tool}: {name} {raw[:60]!r} has leading or trailing white space.",
                      target=tool, next=(again(stripped),))
    if not Path(raw).is_absolute():
        raise Refusal("BAD_ARGUMENT", f"{tool}: {name} {raw[:60]!r} is relative; the server cannot know what "
                      f"it is relative to.", target=tool, next=(again(absolute),))
    return Path(raw)


def not_a_repo(tool: str, path: str, args: Mapping[str, Json] | None = None, action: str | None = None,
               why: gitops.NoWorkTree | None = None) -> Refusal:
    """A ``dir=`` that names no work tree: outside any repository, or (*why*) a bare repository or a git dir."""
    retry = {k: v for k, v in (args or {}).items() if k != "dir"} \
        | {"dir": placeholder("the absolute path of a git repository")}
    return Refusal("BAD_ARGUMENT", f"{tool}: {no_work_tree(path, why)}.", target=path,
                   next=(call(tool, **_with_action(action, retry)),))


def no_work_tree(path: str, why: gitops.NoWorkTree | None) -> str:
    """Why *path* gives no work tree to act on, in words."""
    if why is None:
        return f"{path} is not inside a git repository"
    if why.bare:
        return f"{path} is in the bare repository {why.git_dir}, which has no working tree"
    return f"{path} is inside the git directory {why.git_dir}, not in a working tree"


def unpinnable(target: str, exc: gitops.Unpinnable) -> Refusal:
    """A repository whose configured work tree is another repository's: no git call can be pinned to it."""
    return Refusal("USER_ACTION_REQUIRED",
                   f"The repository at {exc.git_dir} sets core.worktree to {exc.work_tree}, which is in the "
                   f"working tree of the repository at {exc.other}; git would read and write that repository's "
                   f"files for this one, so madtea does not act on it.", target=target,
                   user_action=f"Ask the user to remove or correct core.worktree in {exc.git_dir}/config, or to say "
                               f"which repository they mean; madtea changes neither until then.")


# --------------------------------------------------------------------------- facts

@record(frozen=True)
class RepoFacts(gitops.Repo):
    """What the guard knows of one repository: the work tree git resolved (a ``gitops.Repo``, so every git call
    is pinned to it as it is) and whom it belongs to."""

    origin: gitops.RemoteId | None = None

    @property
    def name(self) -> str:
        return self.origin.slug if self.origin else self.top.name

    def describe(self) -> str:
        return f"{self.name} @ {self.top}"


@record(frozen=True)
class Signal:
    """Independent evidence of which repository the caller means. It can refuse, never redirect."""

    source: str
    repo: RepoFacts | None = None     # a path signal, resolved
    name: str | None = None           # an owner/repo or host/owner/repo signal
    confirms_workspace: bool = False  # only an explicit intent hint confirms inside a workspace
    checkouts: tuple[Path, ...] = ()  # a name signal: the checkouts in sight whose origin it names

    def describe(self) -> str:
        return self.repo.describe() if self.repo else str(self.name)


def same_repo(a: RepoFacts, b: RepoFacts) -> bool:
    return a.common_dir == b.common_dir


def names_origin(name: str, origin: gitops.RemoteId | None) -> bool:
    """Whether ``owner/repo`` or ``host/owner/repo`` *name* is the repository *origin* points at."""
    if origin is None:
        return False
    want = name.strip().strip("/").casefold().removesuffix(".git")
    if want.count("/") >= 2:
        return want == origin.full.casefold() or want == f"{origin.host}/{origin.slug}".casefold()
    return want == origin.slug.casefold()


def signal_agrees(signal: Signal, repo: RepoFacts, *, work_tree: bool = True) -> bool:
    """A path signal agrees with the same working tree (another worktree of the same repository is
    somewhere else to land); with *work_tree* false, with any working tree of the same repository."""
    if signal.repo is not None:
        return signal.repo.top == repo.top if work_tree else same_repo(signal.repo, repo)
    return signal.name is not None and names_origin(signal.name, repo.origin)


def distinct_children(launch: RepoFacts, children: Iterable[tuple[Path, gitops.RemoteId | None]]) -> list[Path]:
    """Nested repositories that are not the launch repo under another path.

    A child with no origin, or one that cannot be parsed, counts as distinct:
    when in doubt the structural check fails closed.
    """
    out = []
    for path, origin in children:
        if origin is None or launch.origin is None or origin.key != launch.origin.key:
            out.append(path)
    return out


# --------------------------------------------------------------------------- the wrong-repo guard

@record(frozen=True)
class RepoState:
    """The target's state, as far as the rules for this call need it."""

    branch: str | None
    default_branch: str
    operation: str | None = None
    dirty_tracked: bool | None = None   # None: not gathered for this call
    conflicted: tuple[str, ...] = ()
    unborn: bool = False                # HEAD names a branch with no commit yet
    branches: frozenset[str] | None = None  # local branch names; None: not gathered
    checked_out: frozenset[str] | None = None  # branches some worktree of the repo has checked out
    default_known: bool = True          # False: origin's default could not be learnt and may be `branch`
    blanket_files: frozenset[str] = frozenset()  # the BLANKET_WORDS that name a file or folder at the top
    worktree_home: str | None = None    # where new worktrees go (see gitops.fs_worktree_home); None: beside top
    home_names: frozenset[str] = frozenset()  # the names already in that folder
    came_from: str | None = None        # finish on the default branch or detached: the branch HEAD last left


@record(frozen=True)
class _Guarded:
    """What every guarded call shares: the tool, action and arguments as asked (its first three fields),
    its name in refusals, and the same call with changes."""

    tool: str
    action: str | None
    args: Mapping[str, Json]

    @property
    def where(self) -> str:
        return where_of(self.tool, self.action)

    def retry(self, **changes: Json) -> Call:
        return call(self.tool, **_with_action(self.action, dict(self.args) | changes))


@record(frozen=True)
class Target(_Guarded):
    """A repo-scoped call with everything the guard needs to decide on it."""

    mutating: bool
    surface: str                        # "mcp" or "cli"
    launch: RepoFacts | None            # the server's (or the shell's) cwd repo
    target: RepoFacts                   # where the call would land
    explicit: bool                      # dir= (local) or owner_repo (remote) was given
    nested: tuple[Path, ...] = ()       # distinct nested repos of the launch repo
    signals: tuple[Signal, ...] = ()
    remote: bool = False
    state: RepoState | None = None
    subdir: str | None = None           # dir= named this folder inside the target's top (posix, relative)

    @property
    def foreign(self) -> bool:
        """A target outside the launch repo; with no launch repo, every target is foreign."""
        return self.launch is None or not same_repo(self.launch, self.target)



def check_signals(t: Target) -> None:
    """Refuse when independent evidence says the caller meant another repository."""
    if t.explicit or t.surface != "mcp":
        return
    for signal in t.signals:
        if signal_agrees(signal, t.target, work_tree=not t.remote):
            continue
        key = "owner_repo" if t.remote else "dir"
        text = (f"This call would land on {t.target.describe()}, the server's launch repo, but "
                f"{signal.source} points at {signal.describe()}. Name the repository you mean with {key}=.")
        if signal.repo is None and key == "dir":
            # A name leads to the checkouts of that repository in sight, else to its path: never back
            # to the repository the name said was wrong.
            if not signal.checkouts:
                raise Refusal("WRONG_REPO", text, target=t.target.describe(),
                              next=(t.retry(dir=placeholder(f"the absolute path of your checkout of "
                                                            f"{signal.name}")),))
            steps = [t.retry(dir=str(path)) for path in signal.checkouts]
        else:
            steps = [t.retry(**{key: _identity(signal.repo, key) if signal.repo else signal.name}),
                     t.retry(**{key: _identity(t.target, key)})]
        raise Refusal("WRONG_REPO", text, target=t.target.describe(), choices=tuple((step,) for step in steps))


def no_signal(c: _Guarded, source: str, value: str, why: gitops.NoWorkTree | None, *, remote: bool) -> Refusal:
    """A caller signal that names no repository: it cannot say which one the call means, and is not ignored."""
    key = "owner_repo" if remote else "dir"
    fill = placeholder("owner/repo" if remote else "the absolute path of the repository you mean")
    return Refusal("BAD_ARGUMENT",
                   f"{c.where}: {source} names {value[:200]}, but {no_work_tree(value[:200], why)}, so it cannot "
                   f"say which repository this call means. Name the repository with {key}=.",
                   target=c.where, next=(c.retry(**{key: fill}),))


def _identity(repo: RepoFacts, key: str) -> str:
    if key == "dir":
        return str(repo.top)
    return repo.origin.full if repo.origin else repo.name


def check_workspace(t: Target) -> None:
    """Fail closed on a dir-less mutation in a workspace that holds other repositories."""
    if t.explicit or t.surface != "mcp" or not t.mutating or not t.nested:
        return
    if any(s.confirms_workspace and signal_agrees(s, t.target) for s in t.signals):
        return
    names = ", ".join(str(p) for p in t.nested[:5]) + (" …" if len(t.nested) > 5 else "")
    raise Refusal("MULTI_REPO_WORKSPACE",
                  f"The server's launch repo {t.target.describe()} contains other git repositories "
                  f"({names}), so a call without dir= cannot tell which one you mean. Pass dir= with the "
                  f"absolute path of the repository to change.",
                  target=t.target.describe(),
                  choices=((t.retry(dir=str(t.target.top)),),) + tuple((t.retry(dir=str(p)),) for p in t.nested[:5]))


# --------------------------------------------------------------------------- the foreign-target contract

def slug(text: str, fallback: str = "work") -> str:
    """A branch-name-safe slug of a title, for suggested next calls."""
    import re
    words = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return words[:40].rstrip("-") or fallback


def _arg_ref(t: Target, key: str) -> str | None:
    value = t.args.get(key)
    return value if isinstance(value, str) and value and not value.startswith("-") else None


def _suggested_branch(t: Target) -> str:
    """A branch for new work. A switch's or pull's branch= names a branch that already exists, so
    it is never offered as a new one (a worktree's -b would refuse it)."""
    keys = ("b", "name") if t.tool in ("madt_switch", "madt_pull") else ("branch", "b", "name")
    for key in keys:
        if _arg_ref(t, key):
            return str(_arg_ref(t, key))
    title = t.args.get("title")
    return "work/" + slug(title) if isinstance(title, str) and title else "work/contribution"


def new_worktree_path(t: Target, name: str) -> str:
    """A free path for a new worktree of the target on branch *name*, in the folder the state names."""
    from pathlib import Path
    state, top = t.state, t.target.top
    home = Path(state.worktree_home) if state and state.worktree_home else top.parent
    return fresh_path(home / f"{top.name}-{slug(name)}", state.home_names if state else frozenset())


def contribution_flow(t: Target) -> tuple[Call, ...]:
    """The sanctioned way to work in someone else's repository: a worktree of one's own, the declared
    files' current content carried into it and committed there, then a finish by branch.

    A switch to an existing branch gets a worktree that checks that branch out, unless a checkout
    already has it (git checks a branch out in one worktree only): then a new branch starts there.
    A switch is done once the worktree is there; a pull pulls into it. Every proposed branch and
    path is free.
    """
    state = t.state
    existing = _arg_ref(t, "branch") if t.tool in ("madt_switch", "madt_pull") else None
    busy = state.checked_out if state and state.checked_out is not None else frozenset(
        b for b in ((state.branch if state else None),) if b)
    known = state.branches if state and state.branches is not None else None
    add: dict[str, str | None]
    if existing and existing not in busy and (known is None or existing in known):
        branch, add = existing, {"commit_ish": existing}
    else:
        branch = fresh_branch(t, _suggested_branch(t))
        base = existing if existing and (known is None or existing in known) else \
            state.default_branch if state and known and state.default_branch in known else None
        add = {"b": branch, "commit_ish": base}
    top = str(t.target.top)
    path = new_worktree_path(t, branch)
    files = t.args.get("files") if t.tool in ("madt_add", "madt_commit", "madt_finish") else None
    files = list(files) if isinstance(files, list) and files else None
    title = t.args.get("title") if isinstance(t.args.get("title"), str) and t.args.get("title") else None
    steps = [call("madt_worktrees", action="add", dir=top, path=path, carry=files, **add)]
    if t.tool == "madt_switch":
        return tuple(steps)  # the worktree has the branch (or a new one started from it): that is the switch
    if t.tool == "madt_pull":
        pulled = existing or (state.branch if state and state.branch else state.default_branch if state else None)
        return tuple(steps) + (call("madt_pull", dir=path, branch=pulled),)
    if files:
        steps.append(call("madt_commit", dir=path, files=files, title=title or placeholder("the commit title"),
                          body=t.args.get("body")))
    finish = {k: v for k, v in t.args.items() if k in ("body", "style", "delete_branch", "closes", "close_linked",
                                                       "no_close")} if t.tool == "madt_finish" else {}
    steps.append(call("madt_finish", dir=top, branch=branch, title=title or placeholder("the pull request title"),
                      **finish))
    return tuple(steps)


_PRIMARY_IMMUTABLE = {"madt_commit", "madt_add", "madt_switch", "madt_pull", "madt_prune"}


def check_foreign(t: Target) -> None:
    """On another repository's checkout, never sweep up or move a stranger's work: the rules below, in order."""
    if t.remote or not t.foreign:
        return
    foreign_finish_by_branch(t)
    foreign_push_names_branch(t)
    foreign_primary(t)
    foreign_dirty_switch(t)
    foreign_prune(t)
    foreign_branch_on_dirty(t)


def _whose(t: Target) -> str:
    return "another repository's main checkout" if not t.target.is_linked else "a worktree of another repository"


def foreign_finish_by_branch(t: Target) -> None:
    """madt_finish on another repository's checkout takes only the branch= form, which touches no working tree."""
    if t.tool != "madt_finish" or t.args.get("branch"):
        return
    primary = not t.target.is_linked
    branch = t.state.branch if t.state and t.state.branch else _suggested_branch(t)
    top = str(t.target.top)
    # The branch= form commits nothing: declared files are committed first, in a worktree
    # (a main checkout's own refusal forwards to one); every other argument carries over.
    files, title = t.args.get("files"), t.args.get("title")
    commit = (call("madt_commit", dir=top, files=files, title=title or placeholder("the commit subject"),
                   body=t.args.get("body")),) if files else ()
    raise Refusal("FOREIGN_TARGET",
                  f"{t.target.describe()} is {_whose(t)}, so madt_finish takes only the branch= form, "
                  f"which commits, switches and pulls nothing there"
                  + ("; commit the declared files first." if files else "."),
                  target=t.target.describe(),
                  # On a main checkout the current branch is its owner's: never offer to merge it.
                  next=contribution_flow(t) if primary else commit + (t.retry(dir=top, branch=branch,
                                                                              files=None),))


def foreign_push_names_branch(t: Target) -> None:
    """madt_push on another repository's checkout names the branch: its current one may be its owner's."""
    if t.tool != "madt_push" or t.args.get("branch"):
        return
    current = t.state.branch if t.state and t.state.branch else None
    raise Refusal("FOREIGN_TARGET",
                  f"{t.target.describe()} is {_whose(t)}, so madt_push must name the branch to push.",
                  target=t.target.describe(),
                  choices=[[t.retry(branch=current)]] if current else _push_which(t))


def foreign_primary(t: Target) -> None:
    """Another repository's main working tree is its owner's: nothing that changes it runs there."""
    if t.target.is_linked or not (t.tool in _PRIMARY_IMMUTABLE or (t.tool, t.action) == ("madt_worktrees", "remove")
                                  or (t.tool == "madt_branch_create" and t.args.get("checkout"))):
        return
    raise Refusal("FOREIGN_PRIMARY",
                  f"{t.target.describe()} is {_whose(t)}; its working tree belongs to its owner, so "
                  f"{t.where} does not change it. Work in a worktree of your own"
                  + ("." if t.tool in ("madt_switch", "madt_pull") else " and finish by branch."),
                  target=t.target.describe(), next=contribution_flow(t))


def foreign_dirty_switch(t: Target) -> None:
    """A switch or pull in another repository's worktree with tracked changes would carry its owner's work."""
    if t.target.is_linked and t.tool in ("madt_switch", "madt_pull") and t.state and t.state.dirty_tracked:
        raise Refusal("DIRTY_TREE",
                      f"{t.target.describe()} is {_whose(t)} and has modified or staged tracked files; a "
                      f"{'switch' if t.tool == 'madt_switch' else 'pull'} there would carry or mix in its "
                      f"owner's unfinished work, so nothing was changed.",
                      target=t.target.describe(), next=contribution_flow(t))


def foreign_prune(t: Target) -> None:
    """Pruning another repository's branches is its owner's housekeeping."""
    if t.target.is_linked and t.tool == "madt_prune":
        raise Refusal("FOREIGN_TARGET",
                      f"{t.target.describe()} is {_whose(t)}; pruning its branches is its owner's housekeeping.",
                      target=t.target.describe(),
                      user_action="Ask the person who owns that repository to prune its branches.")


def foreign_branch_on_dirty(t: Target) -> None:
    """A new branch in another repository's worktree with tracked changes could carry its owner's work."""
    if t.target.is_linked and t.tool == "madt_branch_create" and t.state and t.state.dirty_tracked:
        raise Refusal("FOREIGN_TARGET",
                      f"{t.target.describe()} is {_whose(t)} and has modified or staged tracked files; a new "
                      f"branch there could carry its owner's unfinished work.",
                      target=t.target.describe(), next=contribution_flow(t))


# --------------------------------------------------------------------------- rules on every target

_BLANKET = {"", ".", "./"}
# Words that mean "everything" to git's own add; under literal pathspecs and "--" they name a file,
# so they are a blanket only when no such file is there.
BLANKET_WORDS = frozenset({"*", ":/", ":", "-A", "--all", "-a", "-u"})


def no_files_declared(t: Target) -> Refusal:
    """A staging call that names no files: there is no stage-everything mode."""
    return Refusal("UNDECLARED_FILES",
                   f"{t.where} on {t.target.describe()} needs files: the exact paths to stage. "
                   f"There is no stage-everything mode. {DO_NOT_SWEEP}",
                   target=t.target.describe(), next=_declare(t))


def file_outside_target(t: Target, raw: str) -> Refusal:
    """A declared file outside the target's work tree."""
    return Refusal("BAD_ARGUMENT", f"{t.where}: {raw!r} is outside {t.target.describe()}.",
                   target=t.target.describe(),
                   next=(t.retry(files=[placeholder(f"each changed file inside {t.target.top}")]),))


def file_in_git_store(t: Target, raw: str, files: Sequence[str]) -> Refusal:
    """A declared file inside the .git directory, git's own store."""
    return Refusal("BAD_ARGUMENT",
                   f"{t.where}: {raw!r} is inside the .git directory of {t.target.describe()}, which is "
                   f"git's own store and never staged.", target=t.target.describe(),
                   next=(t.retry(files=[f for f in files if f != raw]
                                 or [placeholder("paths of the working tree you changed")]),))


def file_stages_everything(t: Target, raw: str) -> Refusal:
    """A declared "file" that is a blanket (".", "-A", the top itself): it would stage everything."""
    return Refusal("UNDECLARED_FILES",
                   f"{t.where}: {raw!r} would stage the whole of {t.target.describe()}. "
                   f"Name the files (or a sub-directory) instead. {DO_NOT_SWEEP}",
                   target=t.target.describe(), next=_declare(t))


def declared_files(t: Target, files: Sequence[str] | None = None) -> list[str]:
    """The files a call stages (or *files*), as paths relative to the target's top; never a blanket."""
    from pathlib import Path
    files = files if files is not None else t.args.get("files") or []
    if not files:
        raise no_files_declared(t)
    out = []
    for raw in files:
        path = Path(raw) if Path(raw).is_absolute() else t.target.top / raw
        try:
            rel = Path(_normpath(path)).relative_to(t.target.top)
        except ValueError:
            raise file_outside_target(t, raw) from None
        if ".git" in (part.casefold() for part in rel.parts):
            raise file_in_git_store(t, raw, files)
        blanket_word = raw.strip() in BLANKET_WORDS and raw.strip() not in (t.state.blanket_files if t.state else ())
        if raw.strip() in _BLANKET or str(rel) == "." or blanket_word:
            raise file_stages_everything(t, raw)
        out.append(rel.as_posix())
    return out


def _declare(t: Target) -> tuple[Call, ...]:
    """List the changed files, then make the same call naming them."""
    return (call("madt_status", dir=str(t.target.top) if t.explicit else None),
            t.retry(files=[placeholder("each changed file")]))


def _normpath(path: Path) -> str:
    import os.path
    return os.path.normpath(str(path))


def continue_rail(t: Target) -> tuple[Call, ...]:
    """The way out of a merge, rebase or cherry-pick in progress: stage the resolutions, then continue."""
    state = t.state
    assert state is not None and state.operation is not None
    op = state.operation
    top = str(t.target.top)
    if op == "bisect":
        return ({"shell": f"git -C {shell_quote(top)} bisect reset"},)
    files = list(state.conflicted) or list(t.args.get("files") or [])
    steps: list[Call] = []
    if files:
        steps.append(call("madt_add", dir=top, files=files))
    steps.append({"shell": f"GIT_EDITOR=true git -C {shell_quote(top)} {op} --continue"})
    return tuple(steps)


_SHELL_SAFE = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./:@%+=,-"


def shell_quote(text: str) -> str:
    """``shlex.quote(text)``, without importing shlex (and re) on the hook's path."""
    # Nothing left after stripping the safe characters from both ends: every character is safe.
    return text if text and not text.strip(_SHELL_SAFE) else "'" + text.replace("'", "'\"'\"'") + "'"


def check_mid_operation(t: Target) -> None:
    switches = t.tool == "madt_switch" or (t.tool == "madt_branch_create" and bool(t.args.get("checkout")))
    if (t.tool not in ("madt_commit", "madt_finish") and not switches) or t.state is None \
            or t.state.operation is None:
        return
    if t.tool == "madt_finish" and t.args.get("branch"):
        return  # the branch= form touches no working tree
    op = t.state.operation
    rail = continue_rail(t)
    steps = " then ".join(render_call(s) if "tool" in s else f"`{s['shell']}`" for s in rail)
    # A switch during a merge or rebase is refused by git after a branch create has already made the branch:
    # the rule refuses first, so nothing is half done.
    act = "a switch of branch now" if switches else "a new commit now"
    raise Refusal("MID_OPERATION",
                  f"A {op} is in progress in {t.target.describe()}; {act} would tangle with it. "
                  f"Finish it first: {steps}. Do not retry {t.tool} until the {op} is done.",
                  target=t.target.describe(), next=rail)


def check_default_branch(t: Target) -> None:
    if t.state is None:
        return
    if t.tool == "madt_branch_delete" and t.args.get("name") == t.state.default_branch:
        # Every containment proof is made against the default branch, so its own proof is
        # always true: the rule stops it before any proof is tried.
        raise Refusal("DEFAULT_BRANCH",
                      f"{t.state.default_branch} is the default branch of {t.target.describe()}; madtea never "
                      f"deletes it, because every other branch's work is proven safe against it.",
                      target=t.target.describe(),
                      user_action=f"Leave {t.state.default_branch} in place; only the repository's owner "
                                  f"removes a default branch, on the forge and in their own checkout.")
    if t.tool == "madt_commit" and not t.args.get("allow_default_branch"):
        branch = t.state.branch
    elif t.tool == "madt_finish":
        branch = t.args.get("branch") or t.state.branch
    else:
        return
    if branch is None or branch != t.state.default_branch:
        return
    if t.tool == "madt_finish" and not t.args.get("branch") and t.state.came_from is not None:
        return  # perhaps a finish that already came home from that branch: finish asks the forge, then decides
    new = "work/" + slug(str(t.args.get("title") or "change"))
    dir_arg = str(t.target.top) if t.explicit else None
    if t.tool == "madt_finish" and t.args.get("branch"):
        # The branch= form touches no working tree, and retrying it unchanged would meet this
        # refusal again: the new branch starts at the named one and is finished instead.
        steps = (call("madt_branch_create", dir=dir_arg, name=new, start_point=branch), t.retry(branch=new))
        where = f"branch={branch} names the default branch of {t.target.describe()}"
    elif not t.state.default_known:
        steps = (call("madt_branch_create", dir=dir_arg, name=new, checkout=True), t.retry())
        where = (f"{t.target.describe()} is on {branch}, which may be its default branch: git has no record of "
                 f"origin's default branch (no origin/HEAD), and a local act does not ask the remote")
        if t.tool == "madt_commit":
            learn = {"shell": f"git -C {shell_quote(str(t.target.top))} remote set-head origin --auto"}
            raise Refusal("DEFAULT_BRANCH", f"{where}. Create a branch first, or let git ask origin which branch "
                          f"is its default.", target=t.target.describe(),
                          choices=(steps, (learn, t.retry()), (t.retry(allow_default_branch=True),)))
    else:
        steps = (call("madt_branch_create", dir=dir_arg, name=new, checkout=True), t.retry())
        where = f"{t.target.describe()} is on its default branch {branch}"
    if t.tool == "madt_commit":
        # Only the caller knows whether this commit is the rare one meant for the default branch.
        raise Refusal("DEFAULT_BRANCH", f"{where}; committing onto it is almost always a mistake. "
                      "Create a branch first.", target=t.target.describe(),
                      choices=(steps, (t.retry(allow_default_branch=True),)))
    raise Refusal("DEFAULT_BRANCH", f"{where}; there is no feature branch to merge. Create a branch first.",
                  target=t.target.describe(), next=steps)


def check_title(t: Target) -> None:
    """A commit title is one line: a line break would start the body, and lines there can read as trailers."""
    title = t.args.get("title")
    if t.tool not in ("madt_commit", "madt_finish") or not isinstance(title, str):
        return
    lines = [line.strip() for line in title.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    if len(lines) == 1:
        return
    first, rest = lines[0], "\n".join(lines[1:]).strip("\n")
    body = "\n\n".join(b for b in (rest, t.args.get("body")) if isinstance(b, str) and b.strip())
    raise Refusal("BAD_ARGUMENT",
                  f"{t.where}: title has a line break; a title is one line, and what follows a break would "
                  f"become the body (where lines such as Signed-off-by: read as trailers).",
                  target=t.target.describe(),
                  next=(t.retry(title=first or placeholder("a one-line title"), body=body or None),))


# git's rules for a ref name (git check-ref-format --branch), each a linear scan.
_REF_BAD_CHARS = r"[\x00-\x20\x7f~^:?*\[\\]"
_REF_BAD = {"'..'": r"\.\.", "'@{'": r"@\{", "'//'": r"//",
            "a part that starts with '.'": r"(?:^|/)\.", "a part that ends in '.lock'": r"\.lock(?:/|$)"}
_NEW_BRANCH_KEYS = {("madt_branch_create", None): "name", ("madt_worktrees", "add"): "b"}
_BRANCH_KEYS = {"madt_switch": "branch", "madt_push": "branch", "madt_pull": "branch", "madt_finish": "branch",
                "madt_branch_delete": "name"}


def ref_name_problem(name: str) -> str | None:
    """Why git would not take *name* as a branch name; None when it would."""
    import re
    bad = re.search(_REF_BAD_CHARS, name)
    if bad:
        return f"has {bad.group()!r}, and spaces, control characters and ~ ^ : ? * [ \\ are not allowed"
    for what, pattern in _REF_BAD.items():
        if re.search(pattern, name):
            return f"has {what}"
    if name.startswith("/") or name.endswith(("/", ".")):
        return "starts with '/' or ends with '/' or '.'"
    if name in ("@", "HEAD"):
        return "is a name git keeps for itself"
    return None


def valid_branch_name(name: str) -> str:
    """*name* made into a branch name git takes: each offending character or sequence becomes '-' or one '.'."""
    import re
    text = re.sub(_REF_BAD_CHARS, "-", name).replace("@{", "@-")
    text = re.sub(r"\.{2,}", ".", re.sub(r"/{2,}", "/", text))
    parts = [p.lstrip(".").removesuffix(".lock").rstrip(".") for p in text.split("/")]
    text = "/".join(p for p in parts if p).strip("-")
    return text if text and ref_name_problem(text) is None else "work/branch"


def check_ref_names(t: Target) -> None:
    """A branch name git could never take is refused before any git process, with a name it takes."""
    new = _NEW_BRANCH_KEYS.get((t.tool, t.action))
    key = new or _BRANCH_KEYS.get(t.tool) or ""
    value = t.args.get(key) if key else None
    if not isinstance(value, str) or not value or value.startswith("-") or ref_name_problem(value) is None:
        return
    why = f"{t.where}: {value!r} is not a branch name git takes (it {ref_name_problem(value)})"
    fixed = valid_branch_name(value)
    state = t.state
    known = sorted(b for b in state.branches if ref_name_problem(b) is None) \
        if state and state.branches is not None else []
    if not new and state and state.branches is not None and value in state.branches:
        raise misnamed_branch(t, value, why)
    ask: str | None = None
    if new:
        said, ways = "nothing was created", [[t.retry(**{key: fresh_branch(t, fixed)})]]
    elif fixed in known:
        said, ways = f"{fixed} is the branch of that name here", [[t.retry(**{key: fixed})]]
    else:
        # Which branch was meant only the caller knows: the branches there are, when there are several.
        # A switch may be offered every branch there is; a delete, push or finish of a branch nobody named
        # is never offered, so beyond the current branch's own push or pull only a person can say.
        current = state.branch if state else None
        said, ways = "nothing was changed", \
            ([[t.retry(**{key: None})]] if t.tool in ("madt_push", "madt_pull") and current else []) + \
            [[t.retry(**{key: b})] for b in known if b != current and t.tool == "madt_switch"][:5]
        if len(ways) < 2:
            ways, ask = [], f"Ask the user which branch they meant: no branch can be called {value!r}."
    raise Refusal("BAD_ARGUMENT", f"{why}; {said}.", target=t.target.describe(), choices=ways, user_action=ask)


def misnamed_branch(t: Target, value: str, why: str) -> Refusal:
    """A branch that exists under a name git keeps for itself (``refs/heads/HEAD``, made by plumbing): git reads
    the name as something else, so no call can name it; renaming it is the way on that works."""
    name = fresh_branch(t, f"renamed-{value.strip('@') or 'at'}")
    return Refusal("BAD_ARGUMENT", why + f"; a branch of that name exists here, but git reads {value!r} as "
                   f"something else wherever a branch is named, so nothing was changed.", target=t.target.describe(),
                   user_action=f"Ask the user to rename that branch (git branch -m {value} {name} in "
                               f"{t.target.top}) and then to name {name}.")


def fresh_branch(t: Target, name: str, *also: str) -> str:
    """*name*, or *name*-2, -3 ...: the first that is not a local branch of the target (nor one of *also*, which
    git has just said exist though the state read before the call did not have them)."""
    taken = (t.state.branches if t.state and t.state.branches is not None else frozenset()) | set(also)
    return next(c for c in (name if i == 1 else f"{name}-{i}" for i in range(1, len(taken) + 3)) if c not in taken)


def fresh_path(path: str | Path, taken: Collection[str]) -> str:
    """*path*, or *path*-2, -3 ...: the first whose name is not *taken* in its folder (bounded; the last is
    offered regardless)."""
    name = os.path.basename(str(path))
    candidates = [(str(path), name)] + [(f"{path}-{i}", f"{name}-{i}") for i in range(2, 100)]
    return next((c for c, n in candidates if n not in taken), candidates[-1][0])


def no_space(t: Target, exc: gitops.NoSpace) -> Refusal:
    """git stopped because the disk that holds the repository is full: the disk, and what is staged now."""
    import errno
    err = getattr(errno, "EDQUOT", errno.ENOSPC) if exc.quota else errno.ENOSPC
    disk = exc.disk or str(t.target.git_dir)
    if exc.subcommand not in ("add", "commit"):
        staged = f"git {exc.subcommand} stopped part way; git's own message says where: {exc.stderr.strip()[:300]}"
    elif exc.staged:
        staged = (f"{files_list(list(exc.staged))} {'is' if len(exc.staged) == 1 else 'are'} staged (git add ran); "
                  f"nothing was committed.")
    else:
        staged = "Nothing was staged or committed."
    return Refusal("USER_ACTION_REQUIRED", f"git could not write in {t.target.describe()}: {os_meaning(err)}, on the "
                   f"disk that holds {disk}. {staged}", target=t.target.describe(),
                   user_action=disk_remedy(disk, err, f"run {t.where} again", exc.free))


def git_failure(t: Target, exc: gitops.GitError, taken: Collection[str] = ()) -> Refusal | None:
    """A git failure a rule foresees, as its own code and way on; None for what no rule foresaw. *taken* is
    the names in the folder of a worktree path that is already there. Each kind has its rule below."""
    fresh = None
    if isinstance(exc, (gitops.BranchExists, gitops.BranchCheckedOut)):
        fresh = fresh_branch(t, exc.branch, exc.branch)  # git just saw it, though the state read before may not
    elif isinstance(exc, gitops.PathExists):
        fresh = fresh_path(exc.path, taken)
    where = t.target.describe()
    if isinstance(exc, gitops.NoSpace):
        return no_space(t, exc)
    if isinstance(exc, gitops.NothingToCommit):
        return nothing_to_commit(t)
    if isinstance(exc, gitops.LocalChanges):
        return local_changes(t, exc)
    if isinstance(exc, gitops.NotFastForward):
        return not_fast_forward(t)
    if isinstance(exc, gitops.RefMoved):
        return ref_moved(t)
    if isinstance(exc, gitops.BranchExists):
        return branch_exists(t, exc, fresh)
    if isinstance(exc, gitops.PathExists):
        return path_exists(t, exc, fresh)
    if isinstance(exc, gitops.BranchCheckedOut):
        return checked_out_elsewhere(t, exc, fresh)
    if isinstance(exc, gitops.UnsafeSetting):
        return unsafe_setting(where, exc)
    if isinstance(exc, gitops.OutsideSparse):
        return outside_sparse(t, exc.paths)
    if isinstance(exc, gitops.NoSuchPath):
        return _no_such_path(t, exc)
    if isinstance(exc, gitops.NoSuchBranch):
        return _no_such_branch(t, exc)
    if isinstance(exc, gitops.NotACommit):
        return _not_a_commit(t, exc)
    if isinstance(exc, gitops.GitTimeout):
        return git_timeout_refusal(where, exc)
    return None


def nothing_to_commit(t: Target) -> Refusal:
    """Declared files with no change against HEAD commit nothing."""
    where = t.target.describe()
    return Refusal("NOTHING_TO_COMMIT",
                   f"The declared files carry no change against HEAD in {where}, so nothing was committed.",
                   target=where, next=(t.retry(files=[placeholder("the paths you changed (madt_status lists "
                                                                  "them)")]),))


def local_changes(t: Target, exc: gitops.LocalChanges) -> Refusal:
    """git will not overwrite uncommitted changes: a pull leaves them to a person, anything else commits them."""
    top, where = str(t.target.top), t.target.describe()
    paths = list(exc.paths) or [placeholder("the changed paths (madt_status lists them)")]
    shown = ", ".join(exc.paths[:5]) or "some files"
    if t.tool == "madt_pull":
        return Refusal("DIRTY_TREE",
                       f"Pulling into {where} would overwrite uncommitted changes to {shown}, which the "
                       f"incoming commits also change; nothing was pulled.", target=where,
                       user_action=f"Ask the user whether the uncommitted changes to {shown} should be kept "
                                   f"(committed, then merged with the incoming commits by a person) or "
                                   f"set aside before pulling.")
    return Refusal("DIRTY_TREE",
                   f"{t.where} in {where} would overwrite uncommitted changes to {shown}; nothing was changed.",
                   target=where, next=(call("madt_commit", dir=top if t.explicit else None, files=paths,
                                            title=placeholder("a title for these changes")), t.retry()))


def not_fast_forward(t: Target) -> Refusal:
    """madtea pulls by fast-forward only: a branch and its origin that both moved are a person's to join."""
    where = t.target.describe()
    return Refusal("DIVERGED",
                   f"{where} and its origin branch have both moved on, so a fast-forward pull cannot bring "
                   f"them together; nothing was changed.", target=where,
                   user_action="Ask the user whether to merge the origin branch in or rebase onto it; madtea "
                               "only ever pulls by fast-forward.")


def ref_moved(t: Target) -> Refusal:
    """A ref that moved under a compare-and-swap changes nothing."""
    where = t.target.describe()
    return Refusal("REF_MOVED", f"A branch in {where} moved while {t.where} ran, so nothing was changed.",
                   target=where, next=(t.retry(),))


def branch_exists(t: Target, exc: gitops.BranchExists, fresh: str | None) -> Refusal:
    """A new branch never takes the name of one that exists."""
    top, where = str(t.target.top), t.target.describe()
    key = "b" if t.tool == "madt_worktrees" else "name"
    existing = (t.retry(b=None, commit_ish=exc.branch) if key == "b" else
                call("madt_switch", dir=top if t.explicit else None, branch=exc.branch)
                if t.args.get("checkout") else None)
    steps = [[t.retry(**{key: fresh})]] if fresh else []
    steps += [[existing]] if existing else []
    return Refusal("BRANCH_EXISTS", f"{where} already has a branch {exc.branch}; nothing was created.",
                   target=where, choices=steps or [[t.retry(**{key: placeholder("a new branch name")})]])


def path_exists(t: Target, exc: gitops.PathExists, fresh: str | None) -> Refusal:
    """A new worktree goes only where nothing is."""
    return Refusal("PATH_EXISTS", f"{exc.path} already exists, so no worktree was added there.",
                   target=t.target.describe(),
                   next=(t.retry(path=fresh or placeholder("an absolute path that does not exist yet")),))


def checked_out_elsewhere(t: Target, exc: gitops.BranchCheckedOut, fresh: str | None) -> Refusal:
    """git checks a branch out in one worktree only; a branch under an operation elsewhere is that one's."""
    where = t.target.describe()
    if t.tool == "madt_worktrees" and fresh:
        return Refusal("BRANCH_CHECKED_OUT",
                       f"{exc.branch} is checked out at {exc.worktree}, and git checks a branch out in one "
                       f"worktree only; nothing was added.", target=where,
                       next=(t.retry(b=fresh, commit_ish=exc.branch),))
    if exc.how != "checked out":
        return branch_mid_operation(where, exc.branch, exc.worktree, exc.how)
    return Refusal("BRANCH_CHECKED_OUT", f"{exc.branch} is checked out at {exc.worktree}; nothing was changed.",
                   target=where, user_action=f"Leave {exc.branch} to the checkout at {exc.worktree}, or ask "
                                             f"its owner to switch that checkout away from it.")


def unsafe_setting(where: str, exc: gitops.UnsafeSetting) -> Refusal:
    """A git setting that would make madtea's write do more than it names, and that no option of that one
    call turns off: the setting is named, and only a person changes their configuration."""
    return Refusal("USER_ACTION_REQUIRED",
                   f"The git configuration of {where} sets {exc.setting} to {exc.value}, which {exc.effect}; "
                   f"madtea writes only what it names, so nothing was changed.", target=where,
                   user_action=f"Ask the user whether the {exc.setting} entry {exc.value} may be removed from "
                               f"their git configuration (git config --show-origin --get-all {exc.setting} names "
                               f"the file that holds it); the same call can then be made again.")


def git_timeout_refusal(where: str, exc: gitops.GitTimeout) -> Refusal:
    """A git child that ran out of time was stopped with its whole process group: what it left is git's own."""
    if exc.by_call:
        return Refusal("GIT_TIMEOUT",
                       f"git {exc.subcommand} in {where} was stopped at this call's time limit (a call answers "
                       f"within a minute unless its client asks for progress), so the call did not finish.",
                       target=where,
                       user_action="Ask the user whether the repository's remote is slow; a client that shows "
                                   "progress lets the same call run to its end.")
    return Refusal("GIT_TIMEOUT",
                   f"git {exc.subcommand} in {where} ran longer than {exc.seconds:g} s and was stopped, so "
                   f"the call did not finish.", target=where,
                   user_action=f"Ask the user to check that the repository's disk and its remote answer, or to "
                               f"start the server with MADTEA_GIT_TIMEOUT set above {exc.seconds:g} seconds; "
                               f"the same call can then be made again.")


def _no_such_path(t: Target, exc: gitops.NoSuchPath) -> Refusal:
    """A declared file that is not there: the call without it, or the files status lists."""
    where = t.target.describe()
    missing = set(exc.paths)
    shown = ", ".join(sorted(missing)) or "a declared path"
    declared = [f for f in (t.args.get("files") or []) if isinstance(f, str)]
    rest = [f for f in declared if f not in missing and os.path.normpath(f) not in missing]
    why = (f"{t.where}: {shown} is neither in the working tree of {where} nor known to git, so nothing was "
           f"staged.")
    if rest:
        return Refusal("NO_SUCH_FILE", why, target=where, choices=([t.retry(files=rest)], list(_declare(t))))
    return Refusal("NO_SUCH_FILE", why, target=where, next=_declare(t))


def _no_such_branch(t: Target, exc: gitops.NoSuchBranch) -> Refusal:
    """A push of a branch that is not there: the current branch, or the branch made here first."""
    where, top = t.target.describe(), str(t.target.top) if t.explicit else None
    ref = exc.ref or ""
    current = t.state.branch if t.state and not t.state.unborn else None
    ways = [[t.retry(branch=current)]] if current and current != ref else []
    if current or (t.state and t.state.branch is None and not t.state.unborn):
        ways.append([call("madt_branch_create", dir=top, name=ref), t.retry()])
    why = f"{where} has no local branch {ref}, so nothing was pushed."
    if not ways:
        return Refusal("NOT_A_COMMIT", why, target=where,
                       user_action=f"Ask the user which branch of {where} they meant to push.")
    return Refusal("NOT_A_COMMIT", why, target=where, choices=ways)


_REF_KEYS = {"madt_branch_create": "start_point", "madt_worktrees": "commit_ish", "madt_switch": "branch",
             "madt_pull": "branch", "madt_log": "ref"}


def _not_a_commit(t: Target, exc: gitops.NotACommit) -> Refusal:
    where, top = t.target.describe(), str(t.target.top) if t.explicit else None
    ref = exc.ref or "HEAD"
    if ref == "HEAD" and t.state is not None and t.state.unborn:
        first = call("madt_commit", dir=top, files=[placeholder("the first files")],
                     title=placeholder("the first commit's title"))
        # Naming the unborn HEAD creates the branch: a branch create is then done, and a call that
        # creates a branch of its own (a worktree's b) needs another name for the first commit's.
        name = _suggested_branch(t)
        made = t.tool == "madt_branch_create" and name == _arg_ref(t, "name")
        if t.tool == "madt_worktrees" and name == _arg_ref(t, "b"):
            name = fresh_branch(t, "work/first-commit")
        return Refusal("NOT_A_COMMIT", f"{where} has no commit yet, so {t.where} has nothing to start from.",
                       target=where, choices=([call("madt_branch_create", dir=top, name=name, checkout=True),
                                               first, *(() if made else (t.retry(),))],
                                              [first | {"args": first["args"] | {"allow_default_branch": True}},
                                               t.retry()]))
    key = _REF_KEYS.get(t.tool, "ref")
    state = t.state
    current = state.branch if state else None
    # What exists instead, as calls that run: the branches there are (and, where the call has a
    # default, the call without the ref). Which was meant only the caller knows.
    others = [b for b in sorted(state.branches) if b not in (ref, current)][:4] \
        if state and state.branches is not None else []
    if t.tool == "madt_switch":
        return Refusal("NOT_A_COMMIT", f"{where} has no branch {ref}; nothing was switched.", target=where,
                       choices=[[call("madt_branch_create", dir=top, name=ref, checkout=True)]]
                       + [[t.retry(branch=b)] for b in others])
    if t.tool == "madt_pull":  # which of origin's branches was meant, nothing here can tell
        return Refusal("NOT_A_COMMIT", f"{t.where}: origin has no branch {ref}; nothing was changed.", target=where,
                       user_action=f"Ask the user which branch of origin they meant to pull: origin has no {ref}.")
    ways = ([[t.retry(**{key: None})]] if state is None or not state.unborn else []) + \
        [[t.retry(**{key: b})] for b in others + ([current] if current and current != ref else [])][:4]
    why = f"{t.where}: nothing in {where} is called {ref}; nothing was changed."
    if len(ways) < 2:
        return Refusal("NOT_A_COMMIT", why, target=where,
                       user_action=f"Ask the user which branch, tag or commit they meant: {where} has no {ref}.")
    return Refusal("NOT_A_COMMIT", why, target=where, choices=ways)


def finish_needs_title(t: Target, newest_subject: str | None) -> Refusal:
    """A pull request is opened under a title the caller chose; a branch name is never used silently."""
    proposal = newest_subject.strip() if newest_subject and newest_subject.strip() else None
    return Refusal("BAD_ARGUMENT",
                   f"{t.where} would open a pull request for {t.target.describe()}, and a pull request needs "
                   f"a title; nothing was pushed or opened."
                   + (f" The branch's newest commit is titled {proposal!r}." if proposal else ""),
                   target=t.target.describe(),
                   next=(t.retry(title=proposal or placeholder("the pull request title")),))


def carry_conflict(t: Target, base: str, paths: Sequence[str]) -> Refusal:
    shown = ", ".join(paths[:5]) + (" …" if len(paths) > 5 else "")
    return Refusal("USER_ACTION_REQUIRED",
                   f"{shown} in {t.target.describe()} differ between its HEAD and {base}, so their current "
                   f"content cannot be carried onto {base} without undoing changes; no worktree was added.",
                   target=t.target.describe(),
                   user_action=f"Ask the user how the changes to {shown} should be brought onto {base}: they "
                               f"were made against a different version of those files.")


def check_detached(t: Target) -> None:
    """A commit on a detached HEAD belongs to no branch: it can be neither pushed nor merged by name."""
    if t.tool not in ("madt_commit", "madt_finish") or t.state is None or t.state.branch is not None \
            or t.state.unborn or (t.tool == "madt_finish" and (t.args.get("branch") or t.state.came_from)):
        return  # a finish that left a branch for a detached HEAD may be one that came home: finish decides
    new = fresh_branch(t, _suggested_branch(t))
    raise Refusal("DETACHED_HEAD",
                  f"{t.target.describe()} is on a detached HEAD, so {t.where} would leave its commit on no "
                  f"branch. Create a branch there first; the working tree and what is staged stay as they are.",
                  target=t.target.describe(),
                  next=(call("madt_branch_create", dir=str(t.target.top) if t.explicit else None, name=new,
                             checkout=True), t.retry()))


def check_index_unlocked(t: Target, locked: bool) -> None:
    """git holds a worktree's index.lock while it writes the index; a switch then fails, so a call that would
    create a branch and switch to it creates nothing."""
    if not locked:
        return
    top = t.target.top
    raise Refusal("USER_ACTION_REQUIRED",
                  f"The index of {t.target.describe()} is locked (index.lock in its git dir): another git process "
                  f"is writing it, or one that stopped left the lock behind; nothing was created or switched.",
                  target=t.target.describe(),
                  user_action=f"Ask the user whether a git process is still running in {top}; once none is, the "
                              f"stale index.lock in its git dir can be removed and the same call made again.")


def check_switch_keeps(t: Target, head: str | None, stranded: int) -> None:
    """A switch away from a detached HEAD whose commits no branch, tag or remote-tracking ref holds would leave
    them on no ref (git only warns, afterwards): they get a branch first."""
    if head is None or stranded == 0:
        return
    new = fresh_branch(t, f"detached-{head[:7]}")
    what = "its commit" if stranded == 1 else f"its {stranded} commits"
    raise Refusal("DETACHED_HEAD",
                  f"{t.target.describe()} is on a detached HEAD at {head[:9]}, and no branch, tag or remote-tracking "
                  f"ref holds {what}: switching away would leave them on no ref. Nothing was changed.",
                  target=t.target.describe(),
                  next=(call("madt_branch_create", dir=str(t.target.top) if t.explicit else None, name=new,
                             start_point=head), t.retry()))


def check_local(t: Target) -> None:
    """Every rule for a local-git call, in order; the first that fails refuses."""
    check_signals(t)
    check_workspace(t)
    check_foreign(t)
    check_mid_operation(t)
    check_title(t)
    check_ref_names(t)
    check_files_from_top(t)
    if t.tool in ("madt_add", "madt_commit") or (t.tool == "madt_finish" and t.args.get("files")
                                                 and not t.args.get("branch")):
        declared_files(t)  # a blanket is refused as such before any branch rule forwards it
    check_detached(t)
    check_default_branch(t)


# --------------------------------------------------------------------------- the call pipeline: what a call names


@record(frozen=True)
class Asked(_Guarded):
    """A call as it was asked, before its target is resolved: what a refusal sends again."""


def call_ran_out(tool: str, seconds: float, reporting: bool = False) -> Refusal:
    """A call that did not answer by its deadline: its work was stopped, and what it did is in the repository
    and on the forge as it left them. A call that showed progress ran as long as its client waits."""
    later = ("this client stops waiting for a call soon after that, even while it shows progress" if reporting
             else "a client that shows progress lets the same call run longer")
    return Refusal("FORGE_UNAVAILABLE",
                   f"{tool} did not finish within {seconds:g} s and was stopped; what it did before that stays "
                   f"done.", target=tool,
                   user_action=f"Ask the user whether the forge or the remote is slow; {later}.")


def no_such_tool(tool: str, near: Sequence[Call]) -> Refusal:
    """A tool name the server does not have: the caller's own slip, answered with the nearest tools it offers."""
    shown = _shown(tool)
    names = ", ".join(step["tool"] for step in near)
    return Refusal("BAD_ARGUMENT", f"There is no tool named {shown}; the nearest this server offers: {names}.",
                   target=shown, choices=tuple((step,) for step in near))


def check_no_action(tool: str, action: object, others: Mapping[str, Json]) -> None:
    """A tool of one operation takes no action; the same call without it is the way on."""
    if action is not None:
        raise Refusal("UNKNOWN_PARAMETER", f"{tool} takes no action parameter.", target=tool,
                      next=(call(tool, **others),))


def unknown_action(tool: str, action: object, names: Sequence[str], others: Mapping[str, Json],
                   every: Sequence[Sequence[Call]], required: Mapping[str, Sequence[str]] | None = None) -> Refusal:
    """A call whose action is missing, not one name, or none of the tool's *names*.

    The way on is the corrected call where one is certain (a close spelling, a one-name list), else
    *every* action as a choice. A corrected spelling carries placeholders for what that action
    requires (*required*, by action) and the call does not give.
    """
    if action is None:
        return Refusal("BAD_ARGUMENT", f"{tool} needs action: one of {', '.join(names)}.", target=tool,
                       choices=every)
    if not isinstance(action, str):
        import json

        only = action[0] if isinstance(action, list) and len(action) == 1 and action[0] in names else None
        shown = json.dumps(action, ensure_ascii=False, default=str)[:80]
        return Refusal("BAD_ARGUMENT", f"{tool}: action must be one name such as {names[0]!r}, not {shown}.",
                       target=tool, next=(call(tool, action=only, **others),) if only else (),
                       choices=() if only else every)
    guess = did_you_mean(action, names)
    needs = {n: placeholder(n) for n in (required or {}).get(guess, ())} if guess else {}
    return Refusal("BAD_ARGUMENT", f"{tool} has no action {action[:80]!r}; its actions are: {', '.join(names)}.",
                   target=tool, next=(call(tool, action=guess, **{**needs, **others}),) if guess else (),
                   choices=() if guess else every)


def check_arguments_object(tool: str, raw: object) -> None:
    from collections.abc import Mapping

    if not isinstance(raw, Mapping):
        raise Refusal("BAD_ARGUMENT", f"{tool}: arguments must be an object.", target=tool, next=(call(tool),))


def no_launch_repo(c: _Guarded, launch_dir: str, why: gitops.GitError | None = None) -> Refusal:
    """A local-git call without dir= from a server launched outside any work tree (*why* says what it is in)."""
    if isinstance(why, gitops.Unpinnable):
        return unpinnable(launch_dir, why)
    where = f"the server was launched outside any git repository ({launch_dir})" if why is None else \
        f"the server was launched where {launch_problem(launch_dir, why)}"
    return Refusal("BAD_ARGUMENT", f"{c.where}: {where}, so there is no repository to act on without dir=.",
                   target=launch_dir, next=(c.retry(dir=placeholder("the absolute path of the repository")),))


def launch_problem(launch_dir: str, why: gitops.GitError | None) -> str:
    """Why the launch directory gives no repository, in words."""
    if isinstance(why, gitops.Unpinnable):
        return (f"{launch_dir} is in a repository whose core.worktree ({why.work_tree}) is in the working tree of "
                f"the repository at {why.other}")
    if isinstance(why, gitops.NoWorkTree):
        return no_work_tree(launch_dir, why)
    return f"{launch_dir} is not a git repository" if why is None else \
        f"git cannot use the repository at {launch_dir} ({why})"


_REPO_NAME = r"[A-Za-z0-9._-]+"


def check_owner_repo(value: str, where: str, c: _Guarded | None = None) -> tuple[str | None, str, str]:
    """``owner/repo`` or ``host[:port]/owner/repo`` as (host or None, owner, repo); never a URL.

    The way on is *c* sent again with owner_repo to fill in, or without *c* (an option, not a call)
    the call *where* names.
    """
    import re

    text = value.strip().removesuffix(".git").strip("/")
    parts = text.split("/")
    if "://" in value or "@" in value or len(parts) not in (2, 3) \
            or not all(re.fullmatch(_REPO_NAME, p) for p in parts[-2:]) or {parts[-1], parts[-2]} & {".", ".."}:
        tool, _, action = where.partition(" action=")
        fill = placeholder("owner/repo, such as acme/web")
        raise Refusal("BAD_ARGUMENT", f"{where}: owner_repo {value[:80]!r} is not owner/repo or host/owner/repo.",
                      target=where, next=(c.retry(owner_repo=fill) if c else
                                          call(tool, action=action or None, owner_repo=fill),))
    return (parts[0].lower() if len(parts) == 3 else None), parts[-2], parts[-1]


def check_owner_repo_host(c: _Guarded, owner_repo: str, host: str | None, launch_has_forge: bool) -> None:
    """An owner/repo without a host takes the launch repo's forge; with none, the host must be named."""
    if host is None and not launch_has_forge:
        raise Refusal("BAD_ARGUMENT", f"{c.where}: owner_repo {owner_repo!r} names no host and the launch repo has "
                      f"no forge origin to take it from.", target=c.where,
                      next=(c.retry(owner_repo=placeholder("host/owner/repo")),))


def no_forge_origin(c: _Guarded, top: str, problem: str) -> Refusal:
    """A forge call given dir= whose checkout has no usable forge origin (*problem* says why, in words)."""
    return Refusal("BAD_ARGUMENT", f"{c.where}: {top} {problem}.", target=top,
                   next=(c.retry(dir=None, owner_repo=placeholder("owner/repo")),))


def no_branch_for_pull_request(where: str, repo: str | None) -> Refusal:
    """A person's pull request command without a number, on no branch to find one from."""
    return Refusal("BAD_ARGUMENT", f"{where} names no pull request and {repo or 'the current directory'} is not "
                   f"on a branch to find one from.", target=repo,
                   next=(call("madt_pr", action="list", owner_repo=repo),))


def no_pull_request_for_branch(where: str, branch: str, repo: str | None) -> Refusal:
    """A person's pull request command without a number, where the current branch has no pull request."""
    return Refusal("NOT_FOUND_OR_NO_ACCESS", f"{where} names no pull request and {repo} has none from the current "
                   f"branch {branch}.", target=repo,
                   next=(call("madt_pr", action="create", owner_repo=repo, head=branch,
                              title=placeholder("the pull request title")),))


def no_pull_request_from(where: str, branch: str, repo: str | None) -> Refusal:
    """``pr view BRANCH`` where no pull request, open or not, has that branch as its head."""
    return Refusal("NOT_FOUND_OR_NO_ACCESS", f"{where} {branch}: {repo or 'the repository'} has no pull request "
                   f"from the branch {branch}.", target=branch,
                   next=(call("madt_pr", action="list", owner_repo=repo, state="all"),))


def not_a_repository_address(where: str, value: str) -> Refusal:
    """A clone's argument with :// that is not a repository's web address (one with a user in it included)."""
    return Refusal("BAD_ARGUMENT", f"{where}: {value[:200]} is not the web address of a repository "
                   f"(https://HOST/OWNER/REPO), so nothing was cloned.", target=value[:200],
                   user_action="Give OWNER/REPO, HOST/OWNER/REPO, or the address as the forge's page shows it.")


def not_an_address(where: str, value: str) -> Refusal:
    """An argument with :// that is not an issue's or pull request's web address."""
    return Refusal("BAD_ARGUMENT", f"{where}: {value[:200]} is not the address of an issue or pull request "
                   f"(https://HOST/OWNER/REPO/issues/N or .../pulls/N).", target=value[:200],
                   user_action="Give the number, or the address as the forge's page shows it.")


def address_elsewhere(where: str, value: str, named: str, given: str) -> Refusal:
    """An address and --repo that name two repositories: madtea acts on one, and never picks for the person."""
    return Refusal("BAD_ARGUMENT", f"{where}: {value[:200]} is in {named}, but --repo names {given}; nothing was "
                   f"done.", target=value[:200],
                   user_action="Leave out --repo: the address names the repository.")


def same_repository(a: str, b: str) -> bool:
    """Whether two repositories as --repo names them (``[host/]owner/repo``) are one: owner and name case-folded,
    and the host only when both name one."""
    left, right = a.strip("/").lower().split("/"), b.strip("/").lower().split("/")
    return left[-2:] == right[-2:] and (len(left) < 3 or len(right) < 3 or left[:-2] == right[:-2])


def liberal_numbers(value: object) -> list[int] | None:
    """The numbers in *value* as a call may give them ("12", "#12", "12,14", [12, "14"]); None when it is not
    numbers."""
    return _liberal_numbers(value)


def no_current_pull_request(where: str, branch: str | None, repo: str | None) -> Refusal:
    """A person's pull request command without a number: no branch, or a branch without a pull request."""
    return no_branch_for_pull_request(where, repo) if branch is None else \
        no_pull_request_for_branch(where, branch, repo)


def no_default_repo(c: _Guarded, why: str) -> Refusal:
    """A forge call without owner_repo where the launch directory gives no repository to default to."""
    return Refusal("BAD_ARGUMENT", f"{c.where}: {why}, so there is no repository to default to.", target=c.where,
                   next=(c.retry(owner_repo=placeholder("owner/repo")),))


# --------------------------------------------------------------------------- what local services find


def check_branch_named(t: Target, branch: str | None) -> str:
    """A push, pull or finish acts on a branch; on a detached HEAD the caller names it."""
    if branch is not None:
        return branch
    where = t.target.describe()
    ask: str | None = None
    if t.tool == "madt_pull":
        # Which branch to pull into only the caller knows: each branch there is, switched to, then pulled.
        todo, ways = "switch to a branch first", \
            [[call("madt_switch", dir=str(t.target.top), branch=b), t.retry()] for b in _known_branches(t)][:4]
        if len(ways) < 2:
            ways, ask = [], f"Ask the user which branch {where} should be on to pull into: it is on a detached " \
                f"HEAD, and a pull moves a branch."
    elif t.tool == "madt_finish":
        todo, ways = "name the branch", [[t.retry(branch=placeholder("the branch to finish"))]]
    else:
        todo, ways = "name the branch to push", [list(way) for way in _push_which(t)]
    raise Refusal("BAD_ARGUMENT", f"{where} is on a detached HEAD; {todo}.", target=where, choices=ways,
                  user_action=ask)


def _known_branches(t: Target) -> list[str]:
    return sorted(t.state.branches) if t.state and t.state.branches is not None else []


def _push_which(t: Target) -> list[list[Call]]:
    """A push from a detached HEAD: the commit there on a new branch of its own, or a branch that is there
    (never the default branch, which is not pushed to from here)."""
    default = t.state.default_branch if t.state else None
    new = fresh_branch(t, "work/" + slug(t.target.top.name + "-detached"))
    top = str(t.target.top) if t.explicit else None
    return [[call("madt_branch_create", dir=top, name=new), t.retry(branch=new)]] + \
        [[t.retry(branch=b)] for b in _known_branches(t) if b != default][:4]


def is_full_sha(text: str) -> bool:
    return len(text) in (40, 64) and all(ch in "0123456789abcdef" for ch in text)


def is_short_sha(text: str) -> bool:
    """What could abbreviate a sha (4 to 63 hex digits); a full one is not asked about."""
    return 4 <= len(text) <= 63 and all(ch in "0123456789abcdef" for ch in text)


def check_lease(t: Target, branch: str, lease: str, full: str | None) -> str:
    """A lease is an exact expectation: the full sha; *full* is what an abbreviated one names, if anything."""
    if is_full_sha(lease):
        return lease
    raise Refusal("BAD_ARGUMENT",
                  f"{t.where}: force_with_lease must be the full sha origin/{branch} is expected to be at, not "
                  f"{lease!r}; a lease on a name or a short sha is not an exact expectation.",
                  target=t.target.describe(),
                  next=(t.retry(force_with_lease=full),) if full else (
                      call("madt_log", dir=str(t.target.top), ref=f"origin/{branch}"),
                      t.retry(force_with_lease=placeholder(
                          f"the full sha of origin/{branch} that you based your work on"))))


def lease_rejected(t: Target, branch: str, lease: str | None, said: str) -> Refusal:
    return Refusal("LEASE_REJECTED",
                   f"origin/{branch} is no longer at {(lease or '')[:9]}; someone pushed since you based your work "
                   f"on it, so nothing was overwritten ({said.strip()[:120]}).",
                   target=t.target.describe(),
                   user_action=f"Ask the user: someone else's commits are on origin/{branch} now, and a new lease "
                               f"would throw them away.")


def push_rejected(t: Target, branch: str, kind: str, reason: str, *, lease: bool, behind_only: bool) -> Refusal:
    """origin refused a push: its own rule (a person's call), or commits the branch lacks.

    Only a branch with nothing of its own to push (*behind_only*) can catch up by fast-forward; a
    diverged one needs a person to choose between merging the remote commits and replacing them.
    """
    if kind != "non-fast-forward":
        return push_refused_by_origin_rule(t, branch, reason)
    return push_not_fast_forward(t, branch, lease=lease, behind_only=behind_only)


def push_refused_by_origin_rule(t: Target, branch: str, reason: str) -> Refusal:
    """origin refused a push by its own rule (a hook, a protected branch): a person's call."""
    return Refusal("BAD_ARGUMENT", f"origin refused {branch} ({reason}); nothing was pushed.",
                   target=t.target.describe(),
                   user_action="Ask the user how they want origin's rule handled; madtea pushed nothing.")


def push_not_fast_forward(t: Target, branch: str, *, lease: bool, behind_only: bool) -> Refusal:
    """origin refused a push because the remote branch has commits the local one lacks."""
    return Refusal("LEASE_REJECTED" if lease else "BAD_ARGUMENT",
                   f"origin refused {branch}: the remote branch has commits yours does not. Nothing was "
                   f"overwritten.", target=t.target.describe(),
                   next=(call("madt_pull", dir=str(t.target.top), branch=branch),) if behind_only else (),
                   user_action=None if behind_only else
                   f"Ask the user whether to bring origin/{branch}'s commits into {branch} or to replace them; "
                   f"madtea will not choose for them.")


def check_remote_urls(t: Target, written: str | None, urls: Sequence[str], *, push: bool) -> None:
    """A push goes only to, and a pull comes only from, the repository origin names: each URL git will really
    use (after ``pushurl``, ``pushInsteadOf`` and ``insteadOf``) must name the same repository as origin's own
    address in the config."""
    named = gitops.parse_remote_url(written) if written else None
    for url in urls:
        used = gitops.parse_remote_url(url)
        if written == url or (named.key == used.key if named and used else _same_tail(url, written, named)):
            continue
        shown = used.full if used else "an address that is not a forge repository"
        meant = named.full if named else "an address that is not a forge repository" if written else \
            "no address in its config"
        verb, keys = ("push", "pushurl, pushInsteadOf or insteadOf") if push else ("pull", "insteadOf")
        raise Refusal("USER_ACTION_REQUIRED",
                      f"git would {verb} {t.target.describe()} {'to' if push else 'from'} {shown}, not "
                      f"{'to' if push else 'from'} {meant}, the repository origin names (the repository's git "
                      f"config rewrites the address: {keys}); nothing was {verb}ed.", target=t.target.describe(),
                      user_action=f"Ask the user whether {t.target.top} is meant to {verb} {'to' if push else 'from'} "
                                  f"{shown}; madtea {verb}s only {'to' if push else 'from'} the repository origin "
                                  f"names, so the rewrite must be removed (or origin set to that repository) first.")


def check_origin_unchanged(t: Target, written: str | None) -> None:
    """Origin's address as git reads it now names the repository the call was resolved against: a switch inside
    the call (with an ``includeIf "onbranch:..."``) or a config changed meanwhile may have moved it."""
    resolved = t.target.origin
    if resolved is None:
        return
    now = gitops.parse_remote_url(written) if written else None
    if now is not None and now.key == resolved.key:
        return
    shown = (now.full if now else written) or "no address"
    where = t.target.describe()
    raise Refusal("USER_ACTION_REQUIRED",
                  f"origin of {t.target.top} now names {shown}, not {resolved.full}, the repository this call "
                  f"started with (an include of the git configuration that follows the branch, or a change made "
                  f"meanwhile); nothing more was sent or taken.", target=where,
                  user_action=f"Ask the user which repository {t.target.top} belongs to; madtea reaches only the "
                              f"one origin named when the call began, so the include or the address must agree "
                              f"with it first.")


def _same_tail(url: str, written: str | None, named: gitops.RemoteId | None) -> bool:
    tail = _path_tail(url)
    return tail is not None and tail == (named.slug.casefold() if named else _path_tail(written or ""))


def _path_tail(url: str) -> str | None:
    """``owner/repo`` of a URL with no host (a local path, ``file://``), case-folded: the repository it names
    by its last two folders, as a forge's store lays them out. None for a URL with a host."""
    path = url.removeprefix("file://")
    if "://" in path or gitops.parse_remote_url(path) is not None:
        return None
    parts = [p for p in path.replace("\\", "/").split("/") if p]
    return "/".join(parts[-2:]).casefold().removesuffix(".git") if len(parts) >= 2 else None


def check_local_branch(t: Target, name: str, exists: bool) -> None:
    """A named local branch exists; the way on is to look at the repository's branches."""
    if not exists:
        raise Refusal("BAD_ARGUMENT", f"{t.target.describe()} has no local branch {name}.",
                      target=t.target.describe(), next=(call("madt_status", dir=str(t.target.top)),))


@record(frozen=True)
class Confirmation:
    """An act a rule leaves to a person who can be asked through the client: what it does, the exact name
    they type to confirm it, and what it loses."""

    act: str
    name: str
    lost: str


def check_branch_delete(t: Target, name: str, *, exists: bool, checked_out_at: str | None, proven: bool,
                        default: str, person: bool = False, tip: str = "",
                        unmerged: Sequence[gitops.Commit] = (), held_as: str = "checked out") -> Confirmation | None:
    """A branch is deleted only when it exists, is checked out nowhere, and its work is proven in *default*;
    unproven work is a *person*'s to discard, when the client can ask one: the confirmation names the
    commits at *tip* that *default* does not hold (*unmerged*, newest first, at most six read)."""
    check_local_branch(t, name, exists)
    where = t.target.describe()
    if checked_out_at is not None and held_as != "checked out":
        raise branch_mid_operation(where, name, checked_out_at, held_as)
    if checked_out_at is not None:
        raise branch_checked_out(t, name, checked_out_at)
    if proven:
        return None
    if person:
        shown = "; ".join(f"{c.sha[:9]} {c.subject[:60]}" for c in unmerged[:5])
        more = " and more" if len(unmerged) > 5 else ""
        lost = f"commits not in {default}: {shown}{more}" if unmerged else f"its tip {tip[:9]}"
        return Confirmation(f"delete the branch {name} in {where}", name, lost)
    raise not_contained(t, name, default)


def branch_checked_out(t: Target, name: str, checked_out_at: str) -> Refusal:
    """A branch checked out in any worktree is never deleted."""
    return Refusal("BAD_ARGUMENT", f"{name} is checked out at {checked_out_at}; a checked-out branch is never "
                   f"deleted.", target=t.target.describe(),
                   next=(call("madt_switch", dir=checked_out_at, branch=placeholder("another branch")), t.retry()))


def not_contained(t: Target, name: str, default: str) -> Refusal:
    """A branch whose work git cannot prove is in the default branch (by ancestry, patch ids or a squash merge)
    is a person's to discard."""
    where = t.target.describe()
    return Refusal("NOT_CONTAINED",
                   f"{name} in {where} has work that is not in {default}: its tip is not an ancestor, its "
                   f"patches are not there, and it does not match a squash merge. Deleting it would lose that "
                   f"work.", target=where,
                   user_action=f"Ask the user whether the unmerged work on {name} may be discarded; only a "
                               f"person deletes it.")


def branch_mid_operation(where: str, name: str, at: str | Path, held_as: str) -> Refusal:
    """A branch a rebase or bisect in some worktree will return to: deleting it strands that operation."""
    op = "rebase" if held_as == "being rebased" else "bisect"
    ends = "git rebase --continue (or --abort)" if op == "rebase" else "git bisect reset"
    return Refusal("BAD_ARGUMENT",
                   f"{name} is {held_as} at {at}: that {op} returns to it when it ends, so it is not deleted; "
                   f"nothing was changed.", target=where,
                   user_action=f"Ask the user to end the {op} at {at} first ({ends} there); the branch can then be "
                               f"deleted if its work is in the default branch.")


def check_origin_has_base(t: Target, branch: str, default: str, *, origin_has: bool, local_has: bool) -> None:
    """A pull request merges into origin's default branch: an empty repository on the forge has none yet.

    With a local default branch, pushing it starts origin's and the finish then goes on; without one (a
    repository whose first commit is this work), that commit starts the default branch itself.
    """
    if origin_has:
        return
    where, top = t.target.describe(), str(t.target.top) if t.explicit else None
    why = (f"origin of {where} has no {default} branch yet (its repository on the forge is empty), so there is "
           f"no branch for a pull request to merge into; nothing was committed or pushed.")
    if local_has and branch != default:
        raise Refusal("NO_BASE_BRANCH", why + f" Pushing the local {default} starts it.", target=where,
                      next=(call("madt_push", dir=top, branch=default), t.retry()))
    files, title = t.args.get("files"), t.args.get("title")
    commit = (call("madt_commit", dir=top, files=files, title=title or placeholder("the commit title"),
                   body=t.args.get("body")),) if files and not t.args.get("branch") else ()
    raise Refusal("NO_BASE_BRANCH", why + f" This work becomes the first commit of {default}: there is nothing "
                  f"before it to review it against.", target=where,
                  next=commit + (call("madt_branch_create", dir=top, name=default, start_point=branch),
                                 call("madt_push", dir=top, branch=default)))


def check_worktree_path_given(t: Target, raw: str | None) -> str:
    """A worktree's path is given; for an add, a free one beside the repository (never inside another's
    working tree) is proposed."""
    if not raw:
        if t.action == "add":
            name = _arg_ref(t, "b") or _arg_ref(t, "commit_ish") or "worktree"
            path = new_worktree_path(t, name)
        else:
            path = placeholder("the worktree's absolute path")
        raise Refusal("BAD_ARGUMENT", f"{t.where} needs path: the worktree's absolute path.",
                      target=t.target.describe(), next=(t.retry(path=path),))
    return raw


def check_worktree_home(t: Target, path: str, holder: RepoFacts | None, why: gitops.GitError | None) -> None:
    """A new worktree never goes inside another repository's working tree (that repository would hold it as
    an untracked folder, and a nested-repository scan would count it) nor inside a git directory."""
    if why is None and (holder is None or same_repo(holder, t.target)):
        return
    if holder is not None:
        inside = f"the working tree of {holder.describe()}"
    elif isinstance(why, gitops.NoWorkTree):
        inside = f"the bare repository {why.git_dir}" if why.bare else f"the git directory {why.git_dir}"
    else:
        inside = f"a folder git cannot resolve safely ({why})"
    name = _arg_ref(t, "b") or _arg_ref(t, "commit_ish") or "worktree"
    free = new_worktree_path(t, name)
    raise Refusal("BAD_ARGUMENT", f"{t.where}: {path} is inside {inside}, so no worktree of "
                  f"{t.target.describe()} goes there; nothing was added.", target=t.target.describe(),
                  next=(t.retry(path=free),))


def check_files_from_top(t: Target) -> None:
    """Declared files are relative to the repository's top: when dir= names a folder inside it, a relative
    file could mean either, so the call is asked again with dir= the top and one reading of the files."""
    files = [f for f in t.args.get("files") or [] if isinstance(f, str)]
    if not t.subdir or not any(not os.path.isabs(f) for f in files):
        return
    top = str(t.target.top)
    under = [f if os.path.isabs(f) else f"{t.subdir}/{f}" for f in files]
    raise Refusal("BAD_ARGUMENT",
                  f"{t.where}: dir= names {t.subdir}, a folder inside {t.target.describe()}, and files are paths "
                  f"from the repository's top, so {files[0]!r} could mean {under[0]} or {files[0]}; nothing was "
                  f"staged.", target=t.target.describe(),
                  choices=((t.retry(dir=top, files=under),), (t.retry(dir=top, files=files),)))


def outside_sparse(t: Target, paths: Sequence[str]) -> Refusal:
    """Declared files outside the sparse checkout: git stages none of them until its rules include them."""
    where, top = t.target.describe(), str(t.target.top)
    shown = ", ".join(paths[:5]) + (" …" if len(paths) > 5 else "")
    folders = sorted({os.path.dirname(p) or p for p in paths})
    widen = ({"shell": f"git -C {shell_quote(top)} sparse-checkout add -- "
                       + " ".join(shell_quote(f) for f in folders)}, t.retry())
    declared = [f for f in t.args.get("files") or [] if isinstance(f, str)]
    rest = [f for f in declared if os.path.normpath(f) not in paths]
    it = "it" if len(paths) == 1 else "them"
    why = (f"{t.where}: {shown} {'is' if len(paths) == 1 else 'are'} outside the sparse checkout of {where} (its "
           f"sparse-checkout rules leave {it} out of the working tree), so git did not stage {it}"
           + ("; the other declared files are staged" if rest else "")
           + ("; nothing was committed" if t.tool in ("madt_commit", "madt_finish") else "")
           + f". Widen the sparse checkout to {'that folder' if len(folders) == 1 else 'those folders'} first, or "
             f"leave {it} out.")
    if rest:
        return Refusal("OUTSIDE_SPARSE_CHECKOUT", why, target=where, choices=(widen, (t.retry(files=rest),)))
    return Refusal("OUTSIDE_SPARSE_CHECKOUT", why, target=where, next=widen)


def not_a_linked_worktree(t: Target, path: str) -> Refusal:
    """Only a linked worktree is removed: never a main checkout, never a folder that is none."""
    return Refusal("BAD_ARGUMENT", f"{path} is not a linked worktree of {t.target.describe()}.",
                   target=t.target.describe(), next=(call("madt_worktrees", action="list", dir=str(t.target.top)),))


def check_worktree_remove(t: Target, path: str, *, linked: bool, status: gitops.Status | None, unsaved: int,
                          person: bool = False) -> Confirmation | None:
    """A linked worktree is removed only when it holds nothing that would be lost, or when a *person* the
    client can ask confirms losing it.

    *status* is the worktree's own (None when it cannot be read as a checkout); *unsaved* counts its
    branch's unpushed commits, or on a detached HEAD the commits no branch, tag or remote holds.
    """
    if not linked:
        raise not_a_linked_worktree(t, path)
    if status is None:
        return None
    changed = [*status.conflicted, *status.staged, *status.modified, *status.untracked]
    if not changed and not unsaved:
        return None
    if person:
        lost = ", ".join(filter(None, [
            f"uncommitted changes to {files_list(changed)}" if changed else "",
            f"{unsaved} commit(s) no branch, tag or remote holds" if unsaved and not status.branch else ""]))
        kept = f" (its branch {status.branch} and its commits stay)" if status.branch else ""
        return Confirmation(f"remove the worktree {path}", path, (lost or "its files") + kept)
    plural = "s" if unsaved != 1 else ""
    what = "uncommitted changes" if changed else f"{unsaved} unpushed commit{plural}" if status.branch else \
        f"{unsaved} commit{plural} on a detached HEAD that no branch, tag or remote holds"
    branch = status.branch or placeholder("a new branch")
    save = [call("madt_status", dir=path)]
    if not status.branch:
        save.append(call("madt_branch_create", dir=path, name=branch, checkout=True))
    if changed:
        save.append(call("madt_commit", dir=path, files=[placeholder("each changed file")], title=placeholder("title")))
    save.append(call("madt_push", dir=path, branch=branch))
    raise Refusal("UNSAVED_WORK", f"The worktree {path} holds {what}; removing it would lose them, so save it first "
                  "(only a person may decide to discard it).", target=path, next=(*save, t.retry()))


def files_list(files: Sequence[str]) -> str:
    """``2 files: a.py, b.py`` (the first ten named)."""
    shown = ", ".join(files[:10]) + (f" and {len(files) - 10} more" if len(files) > 10 else "")
    return f"{len(files)} file{'s' if len(files) != 1 else ''}: {shown}"


def check_finish_branch_form(t: Target, branch: str, exists: bool) -> None:
    """finish's branch= form lands a branch that is already committed: it takes no files, and the branch exists."""
    if t.args.get("files"):
        raise Refusal("BAD_ARGUMENT", "The branch= form commits nothing, so it takes no files; commit them in the "
                      "branch's own checkout first.", target=t.target.describe(),
                      next=(call("madt_finish", **{k: v for k, v in t.args.items() if k != "files"}),))
    check_local_branch(t, branch, exists)


def check_finish_title(t: Target) -> None:
    """Committing the declared files needs a commit subject."""
    if not str(t.args.get("title") or "").strip():
        raise Refusal("BAD_ARGUMENT", "madt_finish needs title to commit the declared files.",
                      target=t.target.describe(), next=(t.retry(title=placeholder("the commit subject")),))


def finish_no_close(t: Target) -> bool:
    """Whether finish leaves the issues a body names open: as asked, else on a foreign target unless it
    names issues to close (closing someone else's issues is their call)."""
    asked = t.args.get("no_close")
    if asked is not None:
        return bool(asked)
    return t.foreign and not (t.args.get("closes") or t.args.get("close_linked"))


def check_forge_origin(t: Target) -> None:
    """finish opens its pull request on the checkout's origin; without one there is nowhere to open it."""
    if t.target.origin is None:
        raise Refusal("BAD_ARGUMENT", f"{t.target.describe()} has no forge origin to open a pull request on.",
                      target=t.target.describe(), user_action="Ask the user to add the forge repository as origin.")


# --------------------------------------------------------------------------- remote calls and the launch scope

@record(frozen=True)
class RemoteCall(_Guarded):
    """A forge call: which repository it would reach, and what says otherwise."""

    mutating: bool
    surface: str
    target: str                          # host/owner/repo
    target_host: str
    launch_host: str | None              # the launch repo's forge host, the credential boundary
    explicit: bool
    nested_hosts: tuple[tuple[str, str], ...] = ()   # (host/owner/repo, path) on other hosts
    signals: tuple[Signal, ...] = ()


def _signal_names(signal: Signal) -> str | None:
    if signal.repo is not None:
        return signal.repo.origin.full if signal.repo.origin else None
    return signal.name


def _remote_agrees(signal: Signal, target: str) -> bool:
    """Same owner/repo, and the same host name when the signal names one (ports are not compared:
    an ssh origin's port is not its forge's web port)."""
    name = _signal_names(signal)
    if name is None:
        return True  # a repository with no forge origin says nothing about forge targets
    want = name.strip().strip("/").casefold().removesuffix(".git").split("/")
    have = target.casefold().split("/")
    if want[-2:] != have[-2:]:
        return False
    return len(want) < 3 or want[0].split(":")[0] == have[0].split(":")[0]


# Writes the launch scope allows on another forge host: filing an issue there.
_CROSS_HOST_WRITES = {("madt_issues", "create")}


def cross_host_write(tool: str, action: str | None) -> bool:
    """Whether the launch scope lets this write reach another forge host (filing an issue there)."""
    return (tool, action) in _CROSS_HOST_WRITES


def check_remote(c: RemoteCall) -> None:
    """Signals, the multi-host workspace and the launch scope, for a forge call: the rules below, in order."""
    remote_signals(c)
    remote_workspace_hosts(c)
    cross_host_change(c)


def remote_signals(c: RemoteCall) -> None:
    """A forge call without owner_repo is refused when independent evidence names another repository."""
    if c.explicit or c.surface != "mcp":
        return
    for signal in c.signals:
        if _remote_agrees(signal, c.target):
            continue
        raise Refusal("WRONG_REPO",
                      f"This call would reach {c.target}, the launch repo's origin, but {signal.source} "
                      f"points at {_signal_names(signal)}. Name the repository with owner_repo=.",
                      target=c.target,
                      choices=((c.retry(owner_repo=_signal_names(signal)),), (c.retry(owner_repo=c.target),)))


def remote_workspace_hosts(c: RemoteCall) -> None:
    """A launch repo holding repositories on other forge hosts leaves a call without owner_repo no forge to
    assume."""
    if c.explicit or c.surface != "mcp" or not c.nested_hosts:
        return
    others = ", ".join(f"{name} at {path}" for name, path in c.nested_hosts[:5])
    raise Refusal("MULTI_REPO_WORKSPACE",
                  f"The launch repo holds repositories on other forge hosts ({others}), so a call "
                  f"without owner_repo cannot tell which forge you mean.", target=c.target,
                  choices=((c.retry(owner_repo=c.target),),) +
                  tuple((c.retry(owner_repo=name),) for name, _ in c.nested_hosts[:5]))


def cross_host_change(c: RemoteCall) -> None:
    """A change on another forge host than the launch repo's is outside the server's credential scope."""
    launch_host = c.launch_host
    if launch_host and c.target_host != launch_host and c.mutating and (c.tool, c.action) not in _CROSS_HOST_WRITES:
        raise Refusal("OUT_OF_SCOPE",
                      f"{c.target} is on {c.target_host}, but this server was launched for {launch_host}; "
                      f"changes on another forge host are outside its scope (reading and filing an issue "
                      f"are allowed).", target=c.target,
                      user_action=f"Ask the user to run madtea from a checkout of a {c.target_host} repository "
                      f"for this change.")


def check_confined(full: str, confined: bool, path: str | None = None, names: str | None = None) -> None:
    """A client confined to *full* (a repository on another forge host than the launch repo's) reads that
    repository's own paths alone: *names* is the owner/repo an API *path* lies under, None for a path
    outside any repository."""
    own = full.split("/", 1)[-1]
    if not confined or (names is not None and names.lower() == own.lower()):
        return
    what = f"{full} is" if names is None else f"{path} names another repository than {full}, which is"
    raise Refusal("OUT_OF_SCOPE", f"{what} on another forge host than the launch repo; only its own repository "
                  f"paths may be read from here.", target=full, user_action=FORGE_NEXT["OUT_OF_SCOPE"])


# --------------------------------------------------------------------------- what forge services find

# The way on for each code a forge answer carries (a person's words: only they can act on what the forge said).
FORGE_NEXT = {
    "AUTH_MISSING": "Ask the user to log in for this host with `madtea auth login`.",
    "SCOPE_MISSING": "Ask the user for a token with the scope the forge names.",
    "HEAD_MOVED": "Ask the user to look at the pull request's new commits before it is merged.",
    "MERGE_CONFLICT": "Ask the user to bring the branch up to date with its base, or to resolve the conflict in a "
                      "checkout of the branch; then it can be merged.",
    "MERGE_BLOCKED": "Read the forge's reason above; if only a person can satisfy it (an approval, a protection "
                     "rule), ask them.",
    "NOT_FOUND_OR_NO_ACCESS": "Check the owner/repo and number; if they are right, the credential cannot see it.",
    "NOT_ALLOWED": "Tell the user the forge's reason above; only a person it allows (an admin, the author) can do "
                   "this, so ask them to do it or to grant the access.",
    "FORGE_UNAVAILABLE": "Try the same call again later; if it was a write whose answer was lost, read the object "
                         "first to see whether it landed.",
    "OUT_OF_SCOPE": "Ask the user to run madtea from a checkout of that repository's forge.",
}
# A failure no later step can mend: said to a person.
NOTHING_FURTHER = "Tell the user what failed; madtea changed nothing further."
# What git says when no credential (or a rejected one) was all it had; a 403
# is a permission answer about a working credential, so it stays a git error.
_GIT_AUTH_FAILED = ("could not read Username", "could not read Password", "Authentication failed",
                    "returned error: 401")


def login_way_on(host: str) -> str:
    """A person logs in for *host* in their own terminal: madtea asks for the token and checks it."""
    return (f"Ask the user to run `madtea auth login --hostname {host}` in their own terminal (it asks for a token "
            f"and checks it with the forge), then call again.")


def unknown_host_way_on(host: str) -> str:
    """A host name no lookup knows: trying later does not mend a typo or an address from another network."""
    return (f"Check the host name {host} as it was given (madtea auth status lists the forges madtea knows), "
            f"and give the forge's name or address as this machine reaches it.")


def config_file_way_on(path: str) -> str:
    """madtea's config file that cannot be read: nothing in it is guessed at, and nothing overwrites it."""
    return (f"Ask the user to fix {path} (a JSON object of settings and hosts) or move it aside to start "
            f"from no settings.")


def plain_http_way_on(host: str) -> str:
    """A forge that speaks plain http, reached over https: a person says it is at http, once, by logging in to it."""
    return (f"Ask the user to run `madtea auth login --hostname http://{host}` in their own terminal: that records "
            f"{host} as a plain-http forge (it asks for a token and checks it), and every command after it uses "
            f"http there.")


def anonymous_not_found_way_on(host: str) -> str:
    """A 404 to a request sent without a token: the repository may be private, which only a login can tell."""
    return (f"Check the owner/repo and number; if they are right, the repository may be private: ask the user to "
            f"run `madtea auth login --hostname {host}` in their own terminal, then call again.")


def check_git_auth(host: str | None, exc: gitops.GitError) -> None:
    """A git transport failure that says no credential worked (a rejected push never does) is a person's
    login for *host*, the origin's forge host."""
    if isinstance(exc, gitops.PushRejected) or not any(sign in exc.stderr for sign in _GIT_AUTH_FAILED):
        return
    shown = host or "the origin's host"
    raise Refusal("AUTH_MISSING", f"git could not authenticate to {shown}: no working credential for it ({exc}).",
                  target=host,
                  user_action=login_way_on(host) if host else FORGE_NEXT["AUTH_MISSING"])


def check_fields(c: _Guarded, names: Sequence[str], items: Sequence[Mapping[str, object]]) -> None:
    """Extra fields are named as the forge names them: one no answered item has is refused, with those it has."""
    unknown = [n for n in names if not any(n in item for item in items)]
    if unknown:
        known = ", ".join(sorted(set().union(*(item.keys() for item in items))))
        raise Refusal("BAD_ARGUMENT", f"{c.where}: the forge's answer has no field {', '.join(unknown)}; its fields "
                      f"are: {known}.", target=c.where,
                      next=(c.retry(fields=[n for n in names if n not in unknown] or None),))


def check_labels(c: _Guarded, repo: str, names: Sequence[str], known: Sequence[str]) -> None:
    """Labels are named, never dropped: an unknown name is refused, with the calls that would create it."""
    have = {name.casefold() for name in known}
    missing = [n for n in names if n.casefold() not in have]
    if missing:
        raise Refusal("BAD_ARGUMENT", f"{repo} has no label {', '.join(missing)}; its labels are: "
                      f"{', '.join(sorted(known)) or 'none'}.", target=repo,
                      next=(*(call("madt_labels", action="create", owner_repo=repo, name=name, color="#ededed")
                              for name in missing), c.retry()))


def check_filter_names(c: _Guarded, repo: str, what: str, param: str, given: Sequence[str],
                       known: Sequence[str], *, many: bool = False) -> list[str]:
    """A list filter's names, as the forge spells them: Gitea and Forgejo drop a name that matches nothing from
    the filter, so a typo would list everything. An unknown one is refused, with the name it most likely meant
    (*param* takes a list of names when *many*)."""
    spelled = {k.casefold(): k for k in known}
    missing = [n for n in given if n.casefold() not in spelled]
    if not missing:
        return [spelled[n.casefold()] for n in given]
    import difflib
    folded = list(spelled)
    meant = {n: difflib.get_close_matches(n.casefold(), folded, n=1, cutoff=0.6) for n in missing}
    hints = "; ".join((f"did you mean {spelled[m[0]]!r}" + (f" for {n}" if len(missing) > 1 else "") + "?")
                      if m else f"nothing is close to {n}" for n, m in meant.items())
    reason = (f"{repo} has no {what} {', '.join(missing)} ({hints}); its {what}s are: "
              f"{', '.join(sorted(known)) or 'none'}.")
    fixed = [spelled[meant[n][0]] if meant.get(n) else n for n in given]
    known_all = all(meant.values())
    raise Refusal("BAD_ARGUMENT", reason, target=repo,
                  next=(c.retry(**{param: list(fixed) if many else fixed[0]}),) if known_all else (),
                  user_action=None if known_all else f"Ask the user which {what} they mean; its names are listed "
                                                     f"above.")


def no_such_user(c: _Guarded, repo: str, param: str, name: str) -> Refusal:
    """A list filtered by a user the forge does not know (it answers 404 or 400, not an empty list)."""
    return Refusal("BAD_ARGUMENT", f"The forge of {repo} has no user {name} (the {param} filter).", target=repo,
                   next=(call("madt_people", action="users", owner_repo=repo, q=name),))


def no_such_milestone(repo: str, name: str, known: Sequence[str]) -> Refusal:
    return Refusal("BAD_ARGUMENT", f"{repo} has no milestone {name!r}; its milestones are: "
                   f"{', '.join(known) or 'none'}.", target=repo,
                   next=(call("madt_milestones", action="create", owner_repo=repo, title=name),))


def check_something_to_change(c: _Guarded, changes: int, target: str, example: str, what: str) -> None:
    """An edit that names nothing to change is refused with the call that names one (*example*)."""
    if not changes:
        raise Refusal("BAD_ARGUMENT", f"{c.where}: nothing to change was given.", target=target,
                      next=(c.retry(**{example: placeholder(what)}),))


def pr_already_open(c: _Guarded, repo: str, number: int, head: str, base: str, title: str) -> Refusal:
    """A create for a head that already has an open pull request into the base: the forge takes only one, and the
    title and body given would be lost in a silent reuse, so the caller says which they meant."""
    edit = {k: c.args[k] for k in ("title", "body") if c.args.get(k) is not None}
    return Refusal("BAD_ARGUMENT", f"{repo} already has an open pull request from {head} into {base}: #{number} "
                   f"({title!r}); nothing was created or changed.", target=repo,
                   choices=((call("madt_pr", action="edit", owner_repo=repo, number=number, **edit),),
                            (c.retry(reuse=True),)))


def check_pr_head(c: _Guarded, repo: str, head: str | None) -> str:
    """A pull request is opened from a branch: the one named, or the launch checkout's current one."""
    if not head:
        raise Refusal("BAD_ARGUMENT", "madt_pr action=create needs head: the branch with the changes.", target=repo,
                      next=(c.retry(head=placeholder("the branch name")),))
    return head


def check_merge_head(repo: str, number: int, forge_head: str | None, pushed: str | None) -> None:
    """A pull request is merged at the head madtea pushed: another head on the forge holds commits no one
    here has seen."""
    if forge_head and forge_head != pushed:
        raise Refusal("HEAD_MOVED", f"PR #{number}'s head on the forge is {forge_head[:9]}, not the "
                      f"{(pushed or '')[:9]} madtea pushed; nothing was merged.", target=f"{repo}#{number}",
                      user_action=FORGE_NEXT["HEAD_MOVED"])


def no_such_wiki_page(c: ForgeCall, name: str, editing: bool) -> Refusal:
    """A wiki page that is not there: an edit would create it (the forge says nothing of that), so it is said
    first, with the call that creates it, or, for a read, the list of the pages there are."""
    step = call(c.tool, action="create", owner_repo=c.args.get("owner_repo"), page_name=name,
                content=c.args.get("content")) if editing else call(c.tool, action="list",
                                                                    owner_repo=c.args.get("owner_repo"))
    return Refusal("NOT_FOUND_OR_NO_ACCESS", f"{c.repo} has no wiki page {name}"
                   + ("; nothing was written." if editing else "."), target=c.repo, next=(step,))


def check_pr_open(repo: str, number: int, state: object) -> None:
    """A closed pull request cannot be merged (Gitea and Forgejo answer its merge with a bare 404)."""
    if state == "closed":
        raise Refusal("MERGE_BLOCKED", f"PR #{number} is closed, so it cannot be merged; nothing was merged.",
                      target=f"{repo}#{number}", user_action="Ask the user whether the pull request should be "
                      "reopened; once it is open again it can be merged.")


def check_merged(repo: str, number: int, merged: bool) -> None:
    """A merge the forge accepted is done only when the pull request reads back merged."""
    if not merged:
        raise Refusal("MERGE_BLOCKED", f"The forge accepted the merge of PR #{number} but does not show it "
                      f"merged.", target=f"{repo}#{number}", user_action=FORGE_NEXT["MERGE_BLOCKED"])


def checks_failed(repo: str, number: int, sha: str, failing: str, resume: Call, finish: bool) -> Refusal:
    """A red head is never merged by an agent: the failing checks (with their addresses and log tails) are the
    reason, and the way on is the call that, once a fix is committed, merges the new head when it is green."""
    how = ("Fix what failed, then call finish again with the files of the fix: it commits and pushes them and "
           "merges once the new head is green." if finish else
           "Fix what failed and push the fix; then the call below merges once the new head is green.")
    return Refusal("CHECKS_FAILED", f"PR #{number}'s head {sha[:9]} has failing checks, so nothing was merged. "
                   f"{how}\n{failing}", target=f"{repo}#{number}", next=(resume,))


def checks_still_pending(repo: str, number: int, sha: str, pending: Sequence[str], waited: int, resume: Call,
                         protected: bool) -> Refusal:
    """A head still pending at the bound, on a base that does not require those checks: the forge would merge a
    scheduled pull request at once there, so nothing is scheduled; calling again waits again."""
    why = ("the base branch does not require them, so the forge would merge at once if asked to wait for them"
           if not protected else "the base branch does not require all of them, so the forge cannot be left to "
           "wait for them")
    return Refusal("CHECKS_PENDING", f"Not merged; still pending: PR #{number}'s head {sha[:9]} has checks still "
                   f"running after {waited} s ({', '.join(pending)}); {why}. Nothing was merged or scheduled; the "
                   f"call below waits again.", target=f"{repo}#{number}", next=(resume,))


def schedule_on_required(enabled: bool, patterns: Sequence[str], pending: Sequence[str], failing: bool) -> bool:
    """Whether the forge may be asked to merge when the checks pass: only where the base's protection requires
    every check still pending (services/pull/commit_status.go MergeRequiredContextsCommitStatus: an empty list
    requires every context; the others are glob patterns), and none has failed."""
    import fnmatch
    if not enabled or failing or not pending:
        return False
    return not patterns or all(any(fnmatch.fnmatchcase(c, p) for p in patterns) for c in pending)


def ignore_checks_needs_terminal(number: int | None) -> Refusal:
    """Merging over red or pending checks is a person's decision, confirmed at a terminal."""
    what = f"PR #{number}" if number else "the pull request"
    return Refusal("USER_ACTION_REQUIRED", f"--ignore-checks merges {what} whatever its checks say, and there is no "
                   f"terminal to confirm it on, so nothing was merged.", target=what,
                   user_action="Run the same command in a terminal and type the pull request's number when asked.")


def jq_not_installed() -> Refusal:
    """``--jq`` runs the jq program, which madtea does not bundle (it runs on Python's standard library alone)."""
    return Refusal("USER_ACTION_REQUIRED", "--jq filters the JSON with the jq program, and no jq is on PATH, so the "
                   "command was not run.", target="jq",
                   user_action="Install jq (for example apt-get install jq, or brew install jq), or leave out --jq "
                   "and read the --json output.")


def ignore_checks_not_confirmed(number: int) -> Refusal:
    return Refusal("USER_ACTION_REQUIRED", f"What was typed is not {number}; PR #{number} was not merged.",
                   target=f"PR #{number}", user_action=f"Run the command again and type {number} exactly.")


def check_due_date(c: _Guarded, due: str, exact: bool) -> None:
    """A due date is a date (YYYY-MM-DD, or a full timestamp); *exact* says it parsed as one."""
    if not exact:
        raise Refusal("BAD_ARGUMENT", f"{c.where}: due_date {due[:40]!r} is not a date such as 2026-03-31.",
                      target=c.where, next=(c.retry(due_date=placeholder("a date as YYYY-MM-DD")),))


MAX_UPLOAD = 50 * 1024 * 1024  # bytes of one uploaded file, read whole into memory before it is sent
# File names and directories that hold credentials; an upload of one is refused (fail closed: a false
# positive leaves the upload to a person, a miss would publish a key).
_CREDENTIAL_NAME = (r"(?i)id_(rsa|dsa|ecdsa|ed25519)(_sk)?|.*\.(pem|key|p12|pfx|jks|keystore|kdbx|ppk)|"
                    r"\.env(\..*)?|[._]netrc|\.git-credentials|\.pgpass|\.npmrc|\.pypirc|\.htpasswd|"
                    r"credentials(\.\w+)?|secrets?(\.\w+)?|.*tokens?(\.\w+)?")
_CREDENTIAL_DIR = frozenset({".git", ".ssh", ".gnupg", ".aws", ".azure", ".kube", ".docker", ".config"})
_CREDENTIAL_TEXT = (rb"PRIVATE KEY( BLOCK)?-----|aws_secret_access_key|\b(ghp|gho|ghs|github_pat|glpat|xox[bp])"
                    rb"[_-][A-Za-z0-9_]{16,}")


def upload_without_repo(raw: str) -> Refusal:
    """A server started outside a repository has no work tree to upload from."""
    return Refusal("OUT_OF_SCOPE", f"{raw!r}: this server was started outside a repository, so it uploads no "
                   f"file.", target=raw, user_action="Ask the user to upload it themselves.")


def upload_outside_tree(raw: str, tree: str, again: Call) -> Refusal:
    """Only files in the launch repository's work tree are uploaded: nothing else on the machine leaves it."""
    return Refusal("OUT_OF_SCOPE", f"{raw!r} is outside the launch repository's work tree {tree}; only files "
                   f"there are uploaded from here, so nothing else on this machine leaves it.", target=raw,
                   next=(again,))


def upload_not_a_file(raw: str, again: Call) -> Refusal:
    """A file to upload that is not a regular file (a folder, a device, nothing)."""
    return Refusal("BAD_ARGUMENT", f"{raw!r} is not a file.", target=raw, next=(again,))


def upload_may_hold_credentials(raw: str) -> Refusal:
    """A file to upload whose name or folder says it may hold credentials: never sent."""
    return Refusal("USER_ACTION_REQUIRED", f"{raw!r} may hold credentials (by its name or folder), so madtea "
                   f"does not upload it.", target=raw,
                   user_action="Ask the user to upload it themselves if it holds no secret.")


def upload_too_large(raw: str, size: int) -> Refusal:
    """A file to upload larger than MAX_UPLOAD."""
    return Refusal("BAD_ARGUMENT", f"{raw!r} is {size} bytes; madtea uploads files of at most {MAX_UPLOAD} "
                   f"bytes.", target=raw, user_action="Ask the user to upload it in the forge's web page.")


def check_upload_file(c: _Guarded, raw: str, real: str, size: int | None, tree: str | None) -> None:
    """One file to upload, before it is read: *real* is where it resolves (symbolic links followed), *size* its
    size when it is a regular file, *tree* the work tree it must be in (None on the command line, where a
    person names the file). A file that may hold credentials is never sent."""
    from pathlib import PurePath

    again = c.retry(files=[placeholder("a file in the launch repository's work tree" if tree else "a file")])
    if tree == "":
        raise upload_without_repo(raw)
    if tree is not None and not real.startswith(tree.rstrip("/") + "/"):
        raise upload_outside_tree(raw, tree, again)
    if size is None:
        raise upload_not_a_file(raw, again)
    parts = PurePath(real[len(tree):] if tree else real).parts
    import re
    if any(p.lower() in _CREDENTIAL_DIR for p in parts[:-1]) or re.fullmatch(_CREDENTIAL_NAME, parts[-1]):
        raise upload_may_hold_credentials(raw)
    if size > MAX_UPLOAD:
        raise upload_too_large(raw, size)


def check_upload_content(raw: str, data: bytes) -> None:
    """A file to upload whose content holds a private key or a token is never sent."""
    import re
    if re.search(_CREDENTIAL_TEXT, data):
        raise Refusal("USER_ACTION_REQUIRED", f"{raw!r} holds what looks like a private key or token, so madtea "
                      f"does not upload it.", target=raw,
                      user_action="Ask the user to upload it themselves if it holds no secret.")


def check_api_path(text: str, segments: Sequence[str]) -> None:
    """A passthrough path is plain, and its decoded *segments* cannot leave where it points; a whole address
    (gh takes one) is refused before anything is sent, with its path after /api/v1 as the way on."""
    import re
    path = text.partition("?")[0]
    if path.strip("/").lower() == "graphql":  # gh's `api graphql`: these forges answer REST only
        raise Refusal("BAD_ARGUMENT", "Gitea and Forgejo have no GraphQL API (gh's `api graphql` is GitHub's), so "
                      "nothing was sent.", target="madt_api_call",
                      next=(call("madt_api_call", path=placeholder("a REST path such as /repos/owner/repo/issues")),))
    if re.match(r"(?i)[a-z][a-z0-9+.-]*://", text.lstrip("/")):
        from urllib.parse import urlsplit
        parts = urlsplit(text.lstrip("/"))
        after = re.sub(r"^/api/v1(?=/|$)", "", parts.path) + (f"?{parts.query}" if parts.query else "")
        raise Refusal("BAD_ARGUMENT", f"The API path {text[:120]!r} is a whole address; madtea sends a path to "
                      f"the repository's own forge, so nothing was sent.", target="madt_api_call",
                      next=(call("madt_api_call", path=after or "/"),))
    if "#" in text or "\\" in path or any(ord(ch) < 33 or ord(ch) == 127 for ch in text):
        raise Refusal("BAD_ARGUMENT", f"The API path {text[:120]!r} must be a plain path (no spaces, control "
                      f"characters, backslashes or '#').", target="madt_api_call",
                      next=(call("madt_api_call", path=placeholder("a plain path such as /repos/owner/repo/issues")),))
    if any(s in (".", "..") or "/" in s or "\\" in s for s in segments):
        raise api_path_leaves(text)


def api_path_leaves(text: str) -> Refusal:
    """A passthrough path whose segments could climb out of where it points is not sent."""
    return Refusal("OUT_OF_SCOPE", f"The API path {text[:120]!r} has '.', '..' or encoded '/' segments; madtea "
                   f"does not send paths that could leave where they point.", target=text[:120],
                   next=(call("madt_api_call", path=placeholder("the path written out plainly")),))


def check_api_method(c: _Guarded, method: str, path: str, host: str, has_body: bool) -> None:
    """The passthrough never deletes (a person's act), and a read sends no body.

    Removing a repository file is a commit that history keeps: it is forwarded like any file write."""
    parts = path.split("/")
    if method == "DELETE" and not (len(parts) > 5 and parts[1].lower() == "repos" and parts[4].lower() == "contents"):
        raise api_delete(path, host)
    if method == "GET" and has_body:
        raise api_read_with_body(c, path)


# Headers madtea sets itself: the credential is madtea's (it goes only to the forge it belongs to), and the
# others follow from the address and the body.
_OWN_HEADERS = {"authorization": "the token is madtea's and goes only to the forge it was made for",
                "proxy-authorization": "the token is madtea's and goes only to the forge it was made for",
                "cookie": "the token is madtea's and goes only to the forge it was made for",
                "host": "the host is the one in the forge's address",
                "content-length": "madtea sets the body's length from the body it sends",
                "transfer-encoding": "madtea sets the body's length from the body it sends",
                "connection": "madtea manages its own connections",
                "accept-encoding": "madtea reads the forge's answer as plain text, never compressed"}


def check_api_headers(given: Sequence[str]) -> dict[str, str]:
    """``api -H 'Name: value'`` as headers to send; a malformed one, or one madtea sets itself, is refused."""
    import re

    headers: dict[str, str] = {}
    for text in given:
        name, colon, value = text.partition(":")
        name, value = name.strip(), value.strip()
        if not colon or not re.fullmatch(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+", name) or \
                any(ord(ch) < 32 and ch != "\t" or ord(ch) == 127 for ch in value):
            raise Refusal("BAD_ARGUMENT", f"The header {text[:120]!r} is not of the form 'Name: value' (a name "
                          f"of letters, digits and dashes, and a value on one line); nothing was sent.",
                          target=text[:120], user_action="Write each header as -H 'Name: value'.")
        if not value.isascii() and any(ord(ch) > 255 for ch in value):
            raise Refusal("BAD_ARGUMENT", f"The header {name} has a value an HTTP header cannot carry (characters "
                          f"beyond Latin-1); nothing was sent.", target=name,
                          user_action=f"Give -H '{name}: ...' a value in plain ASCII (percent-encode the rest).")
        if any(seen.lower() == name.lower() for seen in headers):
            raise Refusal("BAD_ARGUMENT", f"The header {name} is given twice, and madtea sends each header once; "
                          f"nothing was sent.", target=name, user_action=f"Give -H '{name}: ...' once.")
        why = _OWN_HEADERS.get(name.lower())
        if why is not None:
            raise Refusal("BAD_ARGUMENT", f"madtea does not send a {name} header given on its command line: {why}; "
                          f"nothing was sent.", target=name,
                          user_action=f"Leave out -H '{name}: ...'" + ("; madtea signs in with your login "
                                      "(madtea auth status shows which)." if "token" in why else "."))
        headers[name] = value
    return headers


def bad_api_field(text: str, why: str) -> Refusal:
    """An ``api -f/-F`` field madtea cannot read: nothing is sent with a field half-understood."""
    return Refusal("BAD_ARGUMENT", f"The field {text[:120]!r} {why}; nothing was sent.", target=text[:120],
                   user_action="Write each field as key=value (key[]=value adds to a list, key[name]=value to an "
                               "object).")


def stdin_read_twice(readers: Sequence[str]) -> Refusal:
    """Standard input is read once: a second ``@-`` (or ``--input -`` beside one) would be sent empty."""
    return Refusal("BAD_ARGUMENT", f"{' and '.join(readers)} both read standard input, which can be read only once "
                   f"(the second would be sent empty); nothing was sent.", target=readers[-1],
                   user_action="Read standard input in one place, and give the other value from a file (@FILE).")


def bad_api_body(flag: str, why: str) -> Refusal:
    """An ``api`` body that is not JSON: the forge's API reads JSON bodies only."""
    return Refusal("BAD_ARGUMENT", f"The body given with {flag} is not JSON ({why}); nothing was sent.",
                   target=flag, user_action="Give a JSON body, or the fields one by one with -f/-F key=value.")


def unreadable_file(what: str, source: str, why: str, text: bool = False) -> Refusal:
    """A file a command line names (``@FILE``, ``--input FILE``) that cannot be read, or (*text*) is not UTF-8
    text a JSON value can carry, sends nothing."""
    if text:
        return Refusal("BAD_ARGUMENT", f"{source} is not UTF-8 text ({why}), and {what} is sent as text; "
                       f"nothing was sent.", target=source,
                       user_action="Name a UTF-8 text file (madtea release upload sends a binary file as it is).")
    return Refusal("BAD_ARGUMENT", f"Cannot read {source} for {what} ({why}); nothing was sent.", target=source,
                   user_action="Name a file that can be read ('-' reads standard input).")


def api_placeholder_unknown(name: str, why: str) -> Refusal:
    """``{owner}``, ``{repo}`` or ``{branch}`` in an ``api`` call with nothing to fill it from."""
    return Refusal("BAD_ARGUMENT", f"{{{name}}} cannot be filled in: {why}; nothing was sent.", target=f"{{{name}}}",
                   user_action="Write the branch's name in place of {branch}." if name == "branch" else
                   "Pass --repo OWNER/REPO.")


def api_delete(path: str, host: str) -> Refusal:
    """The passthrough deletes nothing that cannot be restored: that is a person's act."""
    return Refusal("USER_ACTION_REQUIRED", f"DELETE {path} removes something that cannot be restored; deleting "
                   f"is a person's act.", target=path,
                   user_action=f"Ask the user to delete it themselves (DELETE {path} on {host}).")


def api_read_with_body(c: _Guarded, path: str) -> Refusal:
    """A passthrough read sends no body."""
    return Refusal("BAD_ARGUMENT", f"GET {path[:120]} takes no body; a read sends none.", target=path[:120],
                   next=(c.retry(body=None),))


def check_api_secret(method: str, segments: Sequence[str], web: str) -> None:
    """An organisation's or user's Actions secret reaches every repository it owns: a person sets it."""
    import re

    sub = "/".join(segments).lower()
    owner = re.fullmatch(r"(?:orgs/([^/]+)|user)/actions/secrets/[^/]+", sub)
    if method != "GET" and owner:
        page = f"{web}/org/{segments[1]}/settings" if owner.group(1) else f"{web}/user/settings"
        raise Refusal("USER_ACTION_REQUIRED", f"{method} /{'/'.join(segments)} sets a secret every repository of "
                      f"{segments[1] if owner.group(1) else 'the user'} can read; madtea leaves that to a person.",
                      target="/".join(segments), user_action=f"Ask the user to set it at {page}/actions/secrets.")


# Non-GET paths a dedicated tool covers, by the path below /repos/{owner}/{repo}/ (lower case): the
# passthrough forwards there so body edits keep their stale check and merges their head check.
_COVERED = [
    (r"issues/\d+$", "madt_issues", "edit"), (r"issues/comments/\d+$", "madt_issues", "edit"),
    (r"issues/\d+/comments/\d+$", "madt_issues", "edit"),  # the deprecated form of the comment edit
    (r"issues/\d+/comments$", "madt_issues", "comment"), (r"issues$", "madt_issues", "create"),
    (r"issues/\d+/labels(/\d+)?$", "madt_issues", "edit"), (r"issues/\d+/lock$", "madt_issues", "lock"),
    (r"pulls$", "madt_pr", "create"), (r"pulls/\d+$", "madt_pr", "edit"), (r"pulls/\d+/merge$", "madt_pr", "merge"),
    (r"pulls/\d+/reviews$", "madt_pr", "review"), (r"pulls/\d+/update$", "madt_pr", "update_branch"),
    (r"labels$", "madt_labels", "create"), (r"labels/\d+$", "madt_labels", "edit"),
    (r"milestones$", "madt_milestones", "create"), (r"milestones/[^/]+$", "madt_milestones", "edit"),
    (r"releases$", "madt_releases", "create"), (r"releases/\d+$", "madt_releases", "edit"),
    (r"releases/\d+/assets$", "madt_releases", "upload"),
    (r"wiki/new$", "madt_wiki", "create"), (r"wiki/page/[^/]+$", "madt_wiki", "edit"),
    (r"contents(/.+)?$", "madt_files", "edit"),
    (r"actions/secrets/[^/]+$", "madt_actions", "set_secret"),
    (r"actions/variables/[^/]+$", "madt_actions", "set_variable"),
    (r"forks$", "madt_repo", "fork"), (r"$", "madt_repo", "edit"),
]
# The same for paths outside a repository: "repos/..." is handled above.
_COVERED_ROOT = [
    (r"user/repos$", "madt_repo", "create"), (r"orgs/[^/]+/repos$", "madt_repo", "create"),
    (r"notifications(/threads/\d+)?$", "madt_notifications", "read"),
]


def covered_write(method: str, segments: Sequence[str], default_repo: str) -> tuple[str, str, str, str] | None:
    """The tool and action that make this passthrough write with their safety checks, if one does:
    (tool, action, owner/repo, the path below the repository). Matched case-folded on the decoded
    segments, so a covered write is found however it is spelt."""
    import re

    if method == "GET":
        return None
    in_repo = len(segments) >= 3 and segments[0].lower() == "repos"
    sub = "/".join(segments[3 if in_repo else 0:]).lower()
    for pattern, tool, action in _COVERED if in_repo else _COVERED_ROOT:
        if re.fullmatch(pattern, sub):
            if tool == "madt_files":  # one file's create or removal, else an edit (several files: change)
                action = {"POST": "create" if "/" in sub else "change", "DELETE": "remove"}.get(method, "edit")
            return tool, action, f"{segments[1]}/{segments[2]}" if in_repo else default_repo, sub
    return None


def covered_refusal(method: str, path: str, covered: tuple[str, str, str, str], body: Json,
                    specs: Mapping[str, ParamSpec]) -> Refusal:
    """Forward a covered write to the tool that makes it safely (*specs* are its parameters), with what the
    call showed: the number and comment id in the path, and the body's plain values that tool takes."""
    import re
    from collections.abc import Mapping

    tool, action, owner_repo, sub = covered
    args: dict[str, Json] = {"owner_repo": owner_repo}
    number = re.match(r"(?:issues|pulls)/(\d+)", sub)
    if number and "number" in specs:
        args["number"] = int(number.group(1))
    comment = re.search(r"comments/(\d+)$", sub)
    if comment and "comment_id" in specs:
        args["comment_id"] = int(comment.group(1))
    if tool == "madt_actions" and "name" in specs:  # the name is in the URL; a variable's value is the body
        args["name"] = path.rsplit("/", 1)[-1]
        if isinstance(body, Mapping) and action == "set_variable":
            body = {"body": body.get("value")}
    if tool == "madt_files":  # the file's path is in the URL; the forge's content is base64, its message a title
        from urllib.parse import unquote
        file_path = [unquote(part) for part in path.split("/")[5:]]
        if file_path:
            args["path"] = "/".join(file_path)
        if isinstance(body, Mapping):
            renamed = {"content": "content_base64", "message": "title"}
            body = {renamed.get(k, k): v for k, v in body.items()}
    if isinstance(body, Mapping):
        args |= {k: v for k, v in body.items() if k in specs and isinstance(v, (str, int, bool))}
    if any(getattr(p, "secret", False) for p in specs.values()):  # the body may be the secret under any key
        args = {"owner_repo": owner_repo, "name": path.rsplit("/", 1)[-1]} | _withheld(
            specs, {n: "" for n, p in specs.items() if getattr(p, "secret", False)})
    args |= {name: placeholder(name) for name, p in specs.items() if p.required and name not in args}
    return Refusal("BAD_ARGUMENT", f"{method} {path} is what {tool} action={action} does, with its safety checks; "
                   f"use it instead.", target=path, next=(call(tool, action=action, **args),))


def no_login_to_default(cwd: str) -> Refusal:
    """``madtea auth`` without --hostname names the current repository's forge, or the one login there is."""
    return Refusal("BAD_ARGUMENT", f"{cwd} is not in a repository with a forge origin, and there is not exactly one "
                   f"login to default to; pass --hostname.", target=cwd,
                   user_action="Run the same command again with --hostname and the forge's host.")


def no_terminal_for_token(host: str, page: str, turned_off: bool = False) -> Refusal:
    """A login reads its token at a terminal (hidden) or from standard input (--with-token), never argv; with
    prompting turned off (``madtea config set prompt disabled``) a terminal is not asked either."""
    why = "Prompting is turned off in madtea's settings, so the token is not asked for" if turned_off else \
        "There is no terminal to ask for the token at"
    return Refusal("BAD_ARGUMENT", f"{why}; pipe it in with --with-token. " + page, target=host,
                   user_action="Pipe the token in: madtea auth login --with-token < token-file.")


def no_token_given(host: str) -> Refusal:
    """A person who ends the token prompt (Ctrl-D) has chosen to log in later: nothing is stored."""
    return Refusal("BAD_ARGUMENT", "No token was given; nothing was stored.", target=host,
                   user_action=f"Run madtea auth login --hostname {host} again when the token is at hand.")


def unknown_config_key(key: str, known: Sequence[str], setting: bool) -> Refusal:
    """``madtea config get|set`` of a setting madtea does not have; a token is never a setting (auth keeps it)."""
    kept = " Nothing was changed." if setting else ""
    if "token" in key.lower():
        return Refusal("BAD_ARGUMENT", f"{key!r} is not a setting: tokens are never kept in madtea's config, only "
                       f"in the credential store madtea auth login writes to.{kept}", target=key,
                       next=({"shell": "madtea auth login"},))
    return Refusal("BAD_ARGUMENT", f"madtea has no setting named {key!r}; the settings are {', '.join(known)}.{kept}",
                   target=key, next=({"shell": "madtea config list"},))


def config_value_not_one_line(key: str) -> Refusal:
    """A setting is one line a program is run with or printed as; a line break or control character in it would
    run or print something other than what was typed."""
    return Refusal("BAD_ARGUMENT", f"The value for {key} has a line break or control character, and a setting is "
                   f"one line; nothing was changed.", target=key,
                   user_action=f"Give madtea config set {key} a value on one line.")


def bad_config_value(key: str, value: str, choices: Sequence[str]) -> Refusal:
    """A setting that takes one of a few words, given another."""
    return Refusal("BAD_ARGUMENT", f"The setting {key} is {' or '.join(choices)}, not {value!r}; nothing was "
                   "changed.", target=key, next=({"shell": f"madtea config set {key} {choices[0]}"},))


def no_title_without_terminal(command: str) -> Refusal:
    """A create without --title asks for one only at a terminal; elsewhere (a pipe, an agent) it never waits."""
    return Refusal("BAD_ARGUMENT", f"{command} needs --title: none was given and there is no terminal to ask for "
                   "one at (or prompting is turned off), so nothing was created.", target=command,
                   user_action=f"Give the title with --title (and the body with --body or -F FILE): "
                   f"{command} --title TITLE.")


def no_title_typed(command: str) -> Refusal:
    """A person who leaves the title prompt empty (or ends it) has cancelled: nothing is created."""
    return Refusal("BAD_ARGUMENT", "No title was typed, so nothing was created.", target=command,
                   user_action=f"Run {command} again and type a title, or give it with --title.")


def editor_failed(command: str, editor: str, why: str, title: str = "") -> Refusal:
    """The body's editor did not end well: the text it held is not sent, and a title typed at the prompt is
    given back in the way on, never lost with it."""
    kept = f" --title {shell_quote(title)}" if title else ""
    return Refusal("USER_ACTION_REQUIRED", f"The editor {editor!r} {why}, so nothing was created.", target=command,
                   user_action=f"Give the body from a file instead: {command}{kept} -F FILE (madtea config set "
                   f"editor PROGRAM sets a working editor for next time).")


def clone_into_non_empty(target: str) -> Refusal:
    """``madtea repo clone`` never clones over what a folder already holds (git refuses it too, less clearly)."""
    return Refusal("BAD_ARGUMENT", f"{target} already exists and is not empty, so nothing was cloned into it.",
                   target=target, user_action="Name a new or empty folder as the clone's DIR.")


# git clone's own options that run a program or write configuration git later obeys (with their shortest
# spellings: git takes any unambiguous prefix of a long option).
_CLONE_RUNS = ("--upload-pack", "--config", "--template")


def check_clone_flags(flags: Sequence[str]) -> None:
    """``madtea repo clone … -- FLAGS``: git clone's own flags, except those that run a program or set
    configuration (-u/--upload-pack, -c/--config, --template): madtea hands git its credentials and nothing
    that would run with them."""
    for word in flags:
        name = word.partition("=")[0]
        if name.startswith("--"):
            if len(name) > 3 and any(option.startswith(name) for option in _CLONE_RUNS):
                raise _clone_flag_refused(word)
        elif name.startswith("-") and len(name) > 1:
            for letter in name[1:]:
                if letter in "boj":  # the rest of the word is that option's value
                    break
                if letter in "uc":
                    raise _clone_flag_refused(word)


def _clone_flag_refused(flag: str) -> Refusal:
    return Refusal("BAD_ARGUMENT", f"git clone's {flag[:40]!r} runs a program or sets configuration git obeys "
                   "later, so madtea does not pass it on; nothing was cloned.", target=flag[:40],
                   user_action="Leave that flag out, or run git clone yourself for it.")


def no_stored_token(host: str) -> Refusal:
    """``madtea auth token`` prints a token there is; none is a login to make."""
    return Refusal("AUTH_MISSING", f"no token for {host}; log in with: madtea auth login --hostname {host}",
                   target=host, user_action=f"Run madtea auth login --hostname {host}.")


def import_needs_terminal() -> Refusal:
    """Tokens are imported from tea only with a person's yes, typed at a terminal."""
    return Refusal("USER_ACTION_REQUIRED", "importing tokens needs your consent at a terminal, and there is none; "
                   "run madtea auth import-tea in a terminal.", target="tea's logins",
                   user_action="Run madtea auth import-tea in a terminal.")


def unreadable_body_file(command: str, why: str) -> Refusal:
    """A --body-file that cannot be read sends nothing (an empty body is never taken for it)."""
    return Refusal("BAD_ARGUMENT", f"madtea {command}: cannot read --body-file ({why}); nothing was sent.",
                   target=f"madtea {command}", user_action="Name a file that can be read.")


def no_terminal_to_confirm(what: str, name: str) -> Refusal:
    return Refusal("USER_ACTION_REQUIRED", f"Deleting {what} cannot be undone, and there is no terminal to confirm "
                   f"it on, so nothing was deleted.", target=what,
                   user_action=f"Run the same command in a terminal and type {name} when asked.")


def check_typed_name(what: str, name: str, typed: str) -> None:
    """A person confirms a deletion by typing the object's name exactly."""
    if typed != name:
        raise Refusal("USER_ACTION_REQUIRED", f"What was typed does not match {name}; nothing was deleted.",
                      target=what, user_action=f"Run the command again and type {name} exactly.")


# What deleting each forge object loses, said in the form a person confirms it with.
LOST = {
    "issue": "the issue, its comments and its history",
    "comment": "the comment's text",
    "attached file": "the file and every link to it",
    "label": "the label, and it comes off every issue and pull request that has it",
    "milestone": "the milestone; its issues and pull requests lose it",
    "release": "the release's notes and uploaded files (its tag stays)",
    "tag": "the tag; a release made from it loses its tag",
    "wiki page": "the page and its history",
    "secret": "the secret's value; workflows that use it fail until it is set again",
    "variable": "the variable's value; workflows that use it change",
}


def confirmation_form(act: str, name: str, web: str | None, lost: str) -> tuple[str, dict[str, Json]]:
    """The form a person confirms one of their own acts with, through the client: what, where, what is lost,
    and a field where they type the object's exact name (an agent never fills it in)."""
    where = f" ({web})" if web else ""
    message = (f"An agent asks to {act}{where}. This cannot be undone: it loses {lost}. To go ahead, type "
               f"{_shown(name, 200)} exactly; to keep it, decline.")
    schema = {"type": "object", "required": ["name"],
              "properties": {"name": {"type": "string", "title": "Type the exact name to confirm",
                                      "description": f"Exactly {_shown(name, 200)}"}}}
    return message, schema


def persons_route(web: str | None, command: str) -> str:
    """Where a person does an act themselves: the object's web page (if it has one) and the exact command."""
    where = f"on its web page, {web}, or " if web else ""
    return f"{where}in their own terminal with: {command}"


def check_confirmation(act: str, name: str, answer: str, typed: object, route: str) -> None:
    """A person's answer to a confirmation form: only an accept carrying the exact name lets the act go on.

    Anything else is said as it happened: not confirmed, nothing changed. A client with no person at it
    (a headless run) declines or closes the form at once, so a decline or a close is not taken for a
    person's choice, and the way on is the person's own *route*, never the same call again."""
    if answer == "accept" and typed == name:
        return
    if answer == "accept":
        why = f"The name typed in the confirmation was {_shown(typed)}, not {_shown(name)}"
    else:
        how = "declined" if answer == "decline" else "closed without an answer"
        why = (f"The confirmation to {act} was {how}; a client with no person at it answers so at once, so no "
               f"person may have seen it")
    raise Refusal("USER_ACTION_REQUIRED", f"{why}. It was not confirmed, and nothing changed.", target=act,
                  user_action=_persons_way_on(act, route))


def asked_before(act: str, route: str) -> Refusal:
    """The same act, asked about again in one session after its confirmation was not accepted: not asked twice."""
    return Refusal("USER_ACTION_REQUIRED", f"The confirmation to {act} was not accepted earlier in this session, so "
                   f"it is not asked again; nothing changed.", target=act, user_action=_persons_way_on(act, route))


def _persons_way_on(act: str, route: str) -> str:
    return (f"Tell the user that the confirmation to {act} was not accepted and nothing changed; if they want it "
            f"done, they can do it themselves {route}. Do not call this again to ask once more.")


def delete_is_a_persons_act(noun: str, what: str, web: str) -> Refusal:
    """An agent asked to delete a forge object: there is no delete on its surface, so a person is asked."""
    return Refusal("USER_ACTION_REQUIRED", f"Deleting {noun} {what} cannot be undone, so madtea leaves it to a "
                   f"person; nothing was deleted.", target=web,
                   user_action=f"Ask the user to delete {noun} {what} themselves at {web} if they want it gone.")


# --------------------------------------------------------------------------- body edits and lost answers


def lost_create(repo: str, failure: str, what: str, outcome: str | None, look: Call, again: Call) -> Refusal | None:
    """A create whose answer was lost, as far as a look settled it: *outcome* "unknown" (look before sending
    it again), "absent" (sending it again is safe), or None (not a lost answer: no refusal)."""
    if outcome == "unknown":
        return Refusal("FORGE_UNAVAILABLE", f"{failure} Whether the {what} was made is unknown; look for it before "
                       f"sending this again: {render_call(look)}", target=repo, next=(look,))
    if outcome == "absent":
        return Refusal("FORGE_UNAVAILABLE", f"{failure} The {what} was not made; sending the same call again is safe.",
                       target=repo, next=(again,))
    return None


def check_checklist_item(item: str, found: int, view: Call) -> None:
    """A tick or untick names exactly one checklist item of the body by its text."""
    if found != 1:
        raise Refusal("BAD_ARGUMENT", f"The body has {found} checklist items with the text {item[:80]!r}; exactly "
                      f"one is needed.", next=(view,))


def check_whole_body(seen: str | None, versions: Sequence[object], view: Call, updated_at: Json,
                     shown: Callable[[], str], again: Call | None = None) -> None:
    """A whole-body replacement names the version it replaces (*seen*: its updated_at or body sha), and
    that version is one of the current *versions*; otherwise the current body (*shown*) comes back. The way on
    reads the current version, then sends the edit *again* naming it."""
    if not seen:
        raise body_version_missing(view, again)
    if seen not in versions:
        raise body_changed(view, updated_at, shown(), again)


def body_version_missing(view: Call, again: Call | None) -> Refusal:
    """A whole-body replacement names the version it replaces."""
    follow = (call(again["tool"], **again["args"] | {"updated_at": placeholder("the updated_at the view shows")}),
              ) if again else ()
    return Refusal("BAD_ARGUMENT", "Replacing the whole body needs updated_at from the version you read, so an "
                   "edit you have not seen is never overwritten.", next=(view, *follow))


def body_changed(view: Call, updated_at: Json, shown: str, again: Call | None) -> Refusal:
    """A whole body built on a version that is no longer current is not written."""
    # The caller's body was built on the old version: the way on rebuilds it, never sends it again.
    rebuilt = (call(again["tool"], **again["args"] | {
        "updated_at": updated_at, "body": placeholder("the whole body, rebuilt from the current version")}),
    ) if again and updated_at else ()
    return Refusal("STALE_BODY", f"The body changed since you read it (it is now at updated_at {updated_at}); "
                   f"nothing was written. Current version:\n" + shown, next=(view, *rebuilt))


def check_replace_once(count: int, view: Call, again: Call | None = None) -> None:
    """A replacement in a body names text that occurs once; the way on reads the body, then edits it again
    (*again*, the refused call) with text that does."""
    if count != 1:
        steps = (view,) if again is None else (view, dict(again, args=again["args"] | {
            "replace_old": placeholder("the exact text with enough around it to occur once"),
            "replace_new": placeholder("that text as it should read")}))
        raise Refusal("BAD_ARGUMENT", f"replace_old occurs {count} times in the current body; it must occur exactly "
                      "once.", next=steps)


def batch_stopped(done: Sequence[str], number: int, failed: Refusal, again: Call, rest: Sequence[int]) -> Refusal:
    """A batch a refusal stopped at #*number*: what was *done* before it, then the refusal, whose own call
    (*again*) is sent again for the *rest* of the numbers only (those before are done)."""
    steps = [dict(s, args=s["args"] | {"numbers": list(rest)}) if s == again else s for s in failed.next]
    return Refusal(failed.code, "\n".join([*done, f"#{number} failed, and the rest were not tried: {failed.message}"]),
                   target=failed.target, next=steps, rule=failed.rule)


def body_replaced(updated_at: object, carried: str, shown: str, view: Call) -> Refusal:
    """A whole body madtea wrote that another edit replaced before it was read back."""
    return Refusal("STALE_BODY", f"madtea wrote your body, but another edit replaced it before it could be read back "
                   f"(it is now at updated_at {updated_at}); your text is not the current body.{carried} Current "
                   f"version:\n" + shown, next=(view,))


def body_kept_changing(tries: int, edit: str, updated_at: object, carried: str, shown: str, view: Call) -> Refusal:
    """An edit that every one of madtea's bounded writes lost to another writer."""
    return Refusal("STALE_BODY", f"The body changed under each of madtea's {tries} writes of {edit}, and the "
                   f"read-back does not show it (the body is now at updated_at {updated_at}).{carried} Current "
                   f"version:\n" + shown, next=(view,))


# --------------------------------------------------------------------------- repository files through the forge

_DRIVE = r"[A-Za-z]:"


# The package types both forges' specs list; another is refused before it is sent.
PACKAGE_TYPES = ("alpine", "cargo", "chef", "composer", "conan", "conda", "container", "cran", "debian", "generic",
                 "go", "helm", "maven", "npm", "nuget", "pub", "pypi", "rpm", "rubygems", "swift", "vagrant")


def check_package_type(where: str, value: str | None, again: Callable[[str], Call]) -> None:
    """A package type is one the forge knows."""
    if value is None or value in PACKAGE_TYPES:
        return
    guess = did_you_mean(value, PACKAGE_TYPES)
    raise Refusal("BAD_ARGUMENT", f"{where}: type must be a package type ({', '.join(PACKAGE_TYPES)}), not "
                  f"{_shown(value)}.", target=where,
                  next=(again(guess or placeholder("a package type such as npm")),))


def _decoded(value: str) -> str:
    """*value* percent-decoded until it is stable, as a server in front of the forge may decode it again."""
    from urllib.parse import unquote  # only path-like values need it; the hook never loads it

    text = value
    for _ in range(5):
        text, before = unquote(text), text
        if text == before:
            break
    return text


def check_path_name(where: str, name: str, value: str, what: str, again: Callable[[str], Call]) -> str:
    """A name sent as one segment of an API path, which no server may read as ``.`` or ``..``: such a name
    (also percent-encoded, or between slashes) would address another path than the one named."""
    if any(piece in (".", "..") for piece in _decoded(value).replace("\\", "/").split("/")):
        raise Refusal("BAD_ARGUMENT", f"{where}: {name} {_shown(value)} cannot name {what}: a '.' or '..' in it "
                      f"would address another path of the forge's API.", target=where,
                      next=(again(placeholder(what)),))
    return value


def check_file_path(path: str, where: str, again: Callable[[str], Call], name: str = "path") -> str:
    """A path inside the repository, as the forge stores it: relative, plain segments, never under ``.git``.

    *again* is the refused call with *name* set to a given value.
    """
    import re
    import unicodedata  # only file writes need it; the hook never loads it

    why = None
    segments = path.split("/")
    if not path.strip():
        why = "is empty"
    elif path.startswith(("/", "\\")) or re.match(_DRIVE, path):
        why = "is absolute; paths are relative to the repository's root"
    elif "\\" in path:
        why = "has a backslash; separate folders with /"
    elif any(ord(ch) < 32 or ord(ch) == 127 or unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") for ch in path):
        why = "has control characters or invisible formatting characters"
    elif "" in segments:
        why = "has an empty segment (a leading, trailing or doubled /)"
    elif any(seg in (".", "..") for seg in segments):
        why = "has a '.' or '..' segment"
    elif any(seg in (".", "..") for seg in _decoded(path).replace("\\", "/").split("/")):
        why = "has a percent-encoded '.' or '..' segment, which a server may decode into a step out of the folder"
    elif any(seg.rstrip(". ").casefold() in (".git", "git~1")  # git~1: .git's NTFS short name
             for seg in segments + _decoded(path).replace("\\", "/").split("/")):
        why = "is inside .git, which holds git's own data, not the repository's files"
    if why is None:
        return path
    raise Refusal("BAD_ARGUMENT", f"{where}: {name} {_shown(path)} {why}.", target=where,
                  next=(again(placeholder("a path inside the repository, such as docs/guide.md")),))


@record(frozen=True)
class FileWrite(_Guarded):
    """A commit of repository files made through the forge: where it starts, where it lands, what is there."""

    repo: str                            # host/owner/repo
    default_branch: str
    branches: frozenset[str]             # the repository's branch names
    title: str                           # the commit subject the write will carry
    index: int | None = None             # which of several changes (action=change) a file rule is about
    unpushable: frozenset[str] = frozenset()  # branches the forge says this token's user may not push to
    unmergeable: frozenset[str] = frozenset()  # branches it may not merge a pull request into either
    writer: bool = True                  # the user may push to some branch without a protection rule

    @property
    def file(self) -> Mapping[str, Json]:
        """The arguments of the one file a rule is about: the call's own, or one of its changes."""
        return self.args if self.index is None else self.args["changes"][self.index]

    @property
    def op(self) -> str:
        """What is done to that file: create, edit, rename or remove."""
        if self.index is None:
            return str(self.action)
        f = self.file
        return "remove" if f.get("remove") else "rename" if f.get("from_path") else "edit" if f.get("sha") \
            else "create"

    def again(self, **changes: Json) -> Call:
        """The same call with *changes* to that file's arguments (None leaves one out)."""
        if self.index is None:
            return self.retry(**changes)
        items = [dict(c) for c in self.args["changes"]]
        items[self.index] = {k: v for k, v in (items[self.index] | changes).items() if v is not None}
        return self.retry(changes=items)

    @property
    def base(self) -> str:
        return str(self.args.get("branch") or self.default_branch)

    @property
    def lands_on(self) -> str:
        return str(self.args.get("new_branch") or self.base)

    def fresh(self, name: str) -> str:
        return next(c for c in (name if i == 1 else f"{name}-{i}" for i in range(1, len(self.branches) + 3))
                    if c not in self.branches)


def check_file_branch(w: FileWrite) -> None:
    """A file write starts on a branch that exists, makes only a new new_branch, and lands off the default branch.

    The default branch takes the write only with the call's own ``allow_default_branch=true``; the way on
    is a new branch and a pull request, as for a local commit.
    """
    if w.base not in w.branches:
        raise file_base_missing(w)
    new = w.args.get("new_branch")
    if isinstance(new, str) and new and ref_name_problem(new) is not None:
        raise file_new_branch_name(w, new)
    if isinstance(new, str) and new and new in w.branches:
        raise file_new_branch_exists(w, new)
    branch = w.fresh("work/" + slug(w.title, "files"))
    owner_repo = w.args.get("owner_repo") or w.repo
    steps = (w.retry(new_branch=branch, allow_default_branch=None),
             call("madt_pr", action="create", owner_repo=owner_repo, head=branch, base=w.base, title=w.title))
    if not w.writer:
        raise file_no_push_right(w)
    if w.lands_on in w.unpushable:
        raise file_protected_branch(w, steps)
    if w.lands_on != w.default_branch or w.args.get("allow_default_branch"):
        return
    raise file_on_default_branch(w, steps)


def file_base_missing(w: FileWrite) -> Refusal:
    """A file write starts from a branch that exists."""
    return Refusal("BAD_ARGUMENT", f"{w.repo} has no branch {w.base}; a write starts from a branch that "
                   f"exists.", target=w.repo, next=(w.retry(branch=None, new_branch=w.base),))


def file_new_branch_name(w: FileWrite, new: str) -> Refusal:
    """A file write's new_branch is a name git takes."""
    return Refusal("BAD_ARGUMENT", f"{w.where}: new_branch {_shown(new)} is not a branch name git takes (it "
                   f"{ref_name_problem(new)}).", target=w.repo, next=(w.retry(new_branch=valid_branch_name(new)),))


def file_new_branch_exists(w: FileWrite, new: str) -> Refusal:
    """new_branch makes a branch: it never names one that exists."""
    return Refusal("BAD_ARGUMENT", f"new_branch {new} already exists in {w.repo}; new_branch makes a branch, "
                   f"branch names one to commit on.", target=w.repo,
                   choices=((w.retry(branch=new, new_branch=None),), (w.retry(new_branch=w.fresh(new)),)))


def file_no_push_right(w: FileWrite) -> Refusal:
    """A token whose user may push to no branch writes nothing."""
    return Refusal("NOT_ALLOWED", f"This token's user may not push to {w.repo}: the forge lists no branch it "
                   f"may push to; nothing was written.", target=w.repo,
                   user_action=f"Ask the user for write access to {w.repo}, or to make this change themselves.")


def file_protected_branch(w: FileWrite, steps: Sequence[Call]) -> Refusal:
    """A protected branch this token's user may not push to takes the write on a new branch and a pull request."""
    merge = f" Merging it then needs a person the rule allows to merge into {w.base}." \
        if w.base in w.unmergeable else ""
    return Refusal("PROTECTED_BRANCH", f"{w.base} in {w.repo} is protected, and this token's user may not push "
                   f"to it; nothing was written. Commit on a new branch and open a pull request into {w.base}."
                   f"{merge}", target=f"{w.repo} branch {w.base}", next=steps)


def file_on_default_branch(w: FileWrite, steps: Sequence[Call]) -> Refusal:
    """A file write lands off the default branch, unless the call itself allows it."""
    return Refusal("DEFAULT_BRANCH", f"This write would commit onto {w.default_branch}, the default branch of "
                   f"{w.repo}, without review. Commit on a new branch and open a pull request.", target=w.repo,
                   choices=(steps, (w.retry(allow_default_branch=True),)))


MAX_CHANGES = 100  # files in one commit through the forge


def changes_not_a_list(tool: str, action: str, args: Mapping[str, Json], items: Json) -> Refusal:
    """A commit's changes that are not a list of 1 to MAX_CHANGES objects."""
    where = where_of(tool, action)
    example = {"path": placeholder("a path"), "sha": placeholder("its sha"),
               "replace_old": placeholder("the exact text"), "replace_new": placeholder("its replacement")}
    return Refusal("BAD_ARGUMENT", f"{where}: changes must be a list of 1 to {MAX_CHANGES} objects, one per "
                   f"file, not {_shown(items)}.", target=where,
                   next=(call(tool, **_with_action(action, dict(args) | {"changes": [example]})),))


def file_changed_twice(tool: str, action: str, args: Mapping[str, Json], twice: list[str]) -> Refusal:
    """Two entries of one commit's changes for one path (NFC and NFD spellings are one path)."""
    where = where_of(tool, action)
    return Refusal("BAD_ARGUMENT", f"{where}: changes name {', '.join(twice)} more than once; each file is "
                   f"changed by one entry.", target=where,
                   next=(call(tool, **_with_action(action, dict(args) | {"changes": placeholder(
                       "the changes, one entry per path")})),))


def check_changes(tool: str, action: str, specs: Mapping[str, ParamSpec],
                  args: Mapping[str, Json]) -> list[dict[str, Json]]:
    """The changes of one commit: 1 to MAX_CHANGES objects, each checked like a call's arguments, one per path."""
    where = where_of(tool, action)
    items = args.get("changes")
    if isinstance(items, str):  # the command line's --changes is JSON text
        try:
            items = gitops.from_json(items)
        except ValueError:
            pass
    if not isinstance(items, list) or not 1 <= len(items) <= MAX_CHANGES or \
            not all(isinstance(item, dict) for item in items):
        raise changes_not_a_list(tool, action, args, items)
    out: list[dict[str, Json]] = []
    for index, item in enumerate(items):
        try:
            out.append(check_arguments(tool, action, specs, item))
        except Refusal as bad:
            def fixed(step: Call) -> Call:
                edited = [dict(i) for i in items]
                edited[index] = {k: v for k, v in step["args"].items() if k != "action"}
                return call(tool, **_with_action(action, dict(args) | {"changes": edited}))
            raise Refusal(bad.code, bad.message.replace(where, f"{where} changes[{index}]", 1), target=where,
                          next=tuple(fixed(step) for step in bad.next),
                          choices=tuple(tuple(fixed(step) for step in choice) for choice in bad.choices),
                          user_action=bad.user_action, rule=bad.rule) from None
    import unicodedata  # two spellings of one path (NFC, NFD) are one file to a person, two to git

    paths = [unicodedata.normalize("NFC", item[key]) for key in ("path", "from_path") for item in out
             if item.get(key)]
    twice = sorted({path for path in paths if paths.count(path) > 1})
    if twice:
        raise file_changed_twice(tool, action, args, twice)
    return out


def check_file_sha(w: FileWrite, path: str, current: str | None, view: Call) -> None:
    """A write names the blob sha of the version it replaces; a create names a path that is free."""
    given = w.file.get("sha")
    if w.op == "create":
        if current is not None:
            raise file_exists(w, path, current, view)
        return
    if current is None:
        raise not_a_file(w, path)
    if not given:
        raise file_sha_missing(w, path, current, view)
    # A sha as git and the forge's pages abbreviate it (seven digits or more) names the version it starts.
    if given != current and not (len(given) >= 7 and is_short_sha(given.lower()) and
                                 current.startswith(given.lower())):
        raise file_changed(w, path, current, given, view)


def file_exists(w: FileWrite, path: str, current: str, view: Call) -> Refusal:
    """A create never replaces a file that is there: that is an edit of the version read."""
    edit = w.again(sha=current) if w.index is not None else \
        call(w.tool, **_with_action("edit", dict(w.args) | {"sha": current}))
    return Refusal("CONFLICT", f"{path} already exists on {w.base} of {w.repo} (sha {current}); creating it would "
                   f"replace a file you have not read.", target=path, next=(view, edit))


def not_a_file(w: FileWrite, path: str) -> Refusal:
    """An edit, move or deletion names a file that is on the branch."""
    listing = call(w.tool, action="tree", owner_repo=w.args.get("owner_repo") or w.repo, ref=w.base,
                   path=path.rpartition("/")[0] or None)
    return Refusal("BAD_ARGUMENT", f"{path} is not a file on {w.base} of {w.repo}.", target=path, next=(listing,))


def file_sha_missing(w: FileWrite, path: str, current: str, view: Call) -> Refusal:
    """A write names the blob sha of the version it replaces."""
    return Refusal("BAD_ARGUMENT", f"{w.where} needs sha: the blob sha of the version of {path} you read, so "
                   f"a change you have not seen is never overwritten.", target=path,
                   next=(view, w.again(sha=current)))


def file_changed(w: FileWrite, path: str, current: str, given: str, view: Call) -> Refusal:
    """A file write built on a version that is no longer current is not written."""
    whole = next((k for k in ("content", "content_base64") if w.file.get(k) is not None), None)
    # A targeted edit is checked again on the current version: sending it again is safe. Whole content is not.
    rebuild = {} if whole is None else {whole: placeholder("the whole new content, rebuilt from the current version")}
    return Refusal("STALE_BODY", f"{path} changed on {w.base} of {w.repo} since you read it: it is now at sha "
                   f"{current}, not {given}. Nothing was written." + ("" if whole is None else
                   f" Your {whole} was built on the old version: rebuild it from the current one (sending it again "
                   f"would undo the change made since)."), target=path, next=(view, w.again(sha=current, **rebuild)))


def check_replacement(w: FileWrite, path: str, text: str, old: str, view: Call) -> None:
    """An exact-substring edit names text that occurs exactly once in the file."""
    count = text.count(old)
    if count == 1:
        return
    if count == 0:
        hint = ""
        if "\r\n" in text and "\n" in old and "\r\n" not in old and text.count(old.replace("\n", "\r\n")) == 1:
            hint = " The file's lines end with CRLF; replace_old must too."
        why = f"replace_old does not occur in {path}.{hint}"
    else:
        why = f"replace_old occurs {count} times in {path}; it must occur exactly once: include more of the " \
              f"text around it."
    exact = "the exact text as the view shows it" if count == 0 else \
        "the exact text with enough of the lines around it to occur once"
    raise Refusal("BAD_ARGUMENT", why + " Nothing was written.", target=path,
                  next=(view, w.again(replace_old=placeholder(exact),
                                      replace_new=placeholder("that text as it should read"))))


def text_edit_on_binary(w: FileWrite, path: str) -> Refusal:
    """replace_old/replace_new on a binary file: text edits only on text."""
    return Refusal("BAD_ARGUMENT", f"{path} is binary; replace_old and replace_new edit text. Send the whole "
                   f"new file as content_base64.", target=path,
                   next=(w.again(replace_old=None, replace_new=None,
                                 content_base64=placeholder("the whole new file, base64-encoded")),))


def write_would_cut(w: FileWrite, path: str, current_length: int, new_length: int, window: int) -> Refusal:
    """A whole-content write shorter than a file too long to read in one view: it would cut the unseen rest."""
    return Refusal("BAD_ARGUMENT", f"{path} is {current_length} characters long, more than one view shows "
                   f"({window}); writing {new_length} in its place would cut the rest. Replace the part you "
                   f"mean with replace_old and replace_new.", target=path,
                   next=(w.again(content=None, content_base64=None,
                                 replace_old=placeholder("the exact text to replace"),
                                 replace_new=placeholder("the text that replaces it")),))


def check_file_content(w: FileWrite, path: str, binary: bool, current_length: int | None, new_length: int,
                       window: int) -> None:
    """Text edits only on text; a whole-content write never cuts a file that was too long to read in one view."""
    if binary and w.file.get("replace_old") is not None:
        raise text_edit_on_binary(w, path)
    whole = w.file.get("content") is not None or w.file.get("content_base64") is not None
    if whole and not binary and current_length is not None and window < current_length and new_length < current_length:
        raise write_would_cut(w, path, current_length, new_length, window)


def file_too_large(repo: str, path: str, size: int, limit: int, web: str) -> Refusal:
    """A file larger than madtea reads: refused from its size, before any of it is downloaded."""
    return Refusal("BAD_ARGUMENT", f"{path} in {repo} is {size} bytes, more than the {limit} bytes madtea reads "
                   f"through the forge; nothing was downloaded, and asking again will not change that.",
                   target=path, user_action=f"Ask the user to open {web} if the file's content is needed.")


def no_such_file(repo: str, path: str, ref: str, listing: Call) -> Refusal:
    """A read of a path that is not there."""
    return Refusal("BAD_ARGUMENT", f"{path} is not in {repo} at {ref}.", target=path, next=(listing,))


def no_ref_to_read(repo: str, ref: str, again: Call) -> Refusal:
    """A read at a ref that names no branch, tag or commit."""
    return Refusal("BAD_ARGUMENT", f"{repo} has no branch, tag or commit {ref}.", target=repo,
                   next=(call("madt_repo", action="branches", owner_repo=repo), again))


def check_file_input(w: FileWrite, given: Sequence[str], allowed: Sequence[str]) -> None:
    """A write carries exactly one form of the new content its action takes, and replace_new only with replace_old."""
    if w.file.get("replace_new") is not None and w.file.get("replace_old") is None:
        raise Refusal("BAD_ARGUMENT", f"{w.where}: replace_new needs replace_old, the exact text it replaces.",
                      target=w.where, next=(w.again(replace_old=placeholder("the exact text to replace")),))
    if not allowed or len(given) == 1:
        return
    if given:
        raise Refusal("BAD_ARGUMENT", f"{w.where} takes one of {', '.join(allowed)}, not {' and '.join(given)}.",
                      target=w.where, choices=tuple((w.again(**{g: w.file[g] if n == g else None for g in given}
                                                             ),) for n in given))
    raise Refusal("BAD_ARGUMENT", f"{w.where} needs the new content: one of {', '.join(allowed)}.", target=w.where,
                  next=(w.again(content=placeholder("the whole new content")),))


def bad_base64(w: FileWrite) -> Refusal:
    return Refusal("BAD_ARGUMENT", f"{w.where}: content_base64 is not valid base64.", target=w.where,
                   next=(w.again(content_base64=placeholder("the whole new file, base64-encoded")),))


def check_path_spelling(w: FileWrite, name: str, path: str, spelt: str | None) -> None:
    """A path the branch holds in another Unicode normal form (*spelt*) is that file or folder, never a second
    one that looks the same."""
    if spelt is not None:
        raise Refusal("BAD_ARGUMENT", f"{w.where}: {name} {to_json(path)} is {to_json(spelt)} on {w.base} of "
                      f"{w.repo} in another Unicode form (NFC or NFD); git would keep both as two paths that look "
                      f"the same.",
                      target=path, next=(w.again(**{name: spelt}),))


def check_rename_target(w: FileWrite, path: str, there: str | None) -> None:
    """A move never replaces what is at its destination."""
    if there is not None:
        raise Refusal("CONFLICT", f"{path} already exists on {w.base} of {w.repo} ({there}); moving onto it would "
                      f"replace it.", target=path, next=(w.again(path=placeholder("a path that is free")),))


# --------------------------------------------------------------------------- the server's scope

@record(frozen=True)
class Scope:
    """What the person who started the server allowed: reads only, some tools, some repositories.

    Each ``*_by`` names the option that set the rule as the person wrote it
    (``--read-only`` or ``MADTEA_READ_ONLY=1``), so a refusal names it too.
    ``repos`` are ``host/owner/repo``, case-folded; empty means every repository.
    """

    read_only: bool = False
    tools: tuple[str, ...] = ()          # entries ``tool`` or ``tool:action``; empty means every tool
    exclude: tuple[str, ...] = ()
    repos: tuple[str, ...] = ()
    read_only_by: str = "--read-only"
    tools_by: str = "--tools"
    exclude_by: str = "--exclude-tools"
    repos_by: str = "--repo"

    @property
    def active(self) -> bool:
        return bool(self.read_only or self.tools or self.exclude or self.repos)

    @property
    def hosts(self) -> frozenset[str]:
        return frozenset(r.rsplit("/", 2)[0] for r in self.repos)

    def describe(self) -> str:
        """The effective scope in one line, for whoami, doctor and the server's instructions."""
        if not self.active:
            return "unscoped: every tool and every repository the launch repo's forge allows"
        parts = ["read-only (only reads are offered)"] if self.read_only else []
        if self.tools:
            parts.append("tools " + ", ".join(self.tools))
        if self.exclude:
            parts.append("excluding " + ", ".join(self.exclude))
        if self.repos:
            parts.append("repositories " + ", ".join(self.repos))
        return "; ".join(parts)


def _entry_matches(entry: str, tool: str, action: str | None) -> bool:
    return entry == tool or (action is not None and entry == f"{tool}:{action}")


def _narrowed_by(scope: Scope, tool: str, action: str | None) -> str | None:
    """The option that leaves *tool*/*action* out of the server, or None when it is in."""
    if scope.tools and not any(_entry_matches(e, tool, action) for e in scope.tools):
        return scope.tools_by
    if any(_entry_matches(e, tool, action) for e in scope.exclude):
        return scope.exclude_by
    return None


def listed(scope: Scope, tool: str, action: str | None, *, writes: bool, reads_in_part: bool, reach: str) -> bool:
    """Whether the server offers an operation at all: what tools/list and the action enums carry.

    *writes* is the operation's kind; *reads_in_part* says some of its calls
    only read (the passthrough's GET), so a read-only server keeps it for those.
    *reach* "account" is an operation no repository list can confine.
    """
    if scope.read_only and writes and not reads_in_part:
        return False
    if scope.repos and reach == "account":
        return False
    return _narrowed_by(scope, tool, action) is None


def _widen(option: str) -> str:
    return f"Ask the user who started the server to widen its scope ({option}) if this is wanted."


def check_scope(scope: Scope, tool: str, action: str | None, *, writes: bool, reach: str,
                read_values: str | None = None) -> None:
    """Refuse a call the server's scope leaves out, before anything runs.

    *writes* is whether this call would change anything; *read_values* names
    the argument values that would make it a read instead ("method GET").
    """
    where = where_of(tool, action)
    if scope.read_only and writes:
        raise server_read_only(scope, where, read_values)
    option = _narrowed_by(scope, tool, action)
    if option is not None:
        raise tool_not_offered(where, option)
    if scope.repos and reach == "account":
        raise account_wide(scope, where)


def server_read_only(scope: Scope, where: str, read_values: str | None) -> Refusal:
    """A server started read-only changes nothing."""
    only = f"; only {read_values} is allowed" if read_values else ""
    return Refusal("READ_ONLY", f"{where} changes things, and this server was started read-only "
                   f"({scope.read_only_by}){only}; nothing was done.", target=where,
                   user_action=_widen(f"without {scope.read_only_by}"))


def tool_not_offered(where: str, option: str) -> Refusal:
    """A tool or action the server's tool lists leave out is not called."""
    return Refusal("OUT_OF_SCOPE", f"{where} is not among the tools this server offers ({option}); "
                   f"nothing was done.", target=where, user_action=_widen(option))


def account_wide(scope: Scope, where: str) -> Refusal:
    """A server pinned to repositories makes no call that acts on the whole account."""
    return Refusal("OUT_OF_SCOPE", f"{where} acts on the whole account, which cannot be confined to the "
                   f"repositories this server is pinned to ({', '.join(scope.repos)}); nothing was sent.",
                   target=where, user_action=_widen(scope.repos_by))


def repo_in_scope(scope: Scope, repo: str | None) -> bool:
    """Whether ``host/owner/repo`` is one the server may reach; None (no forge origin) never is."""
    if not scope.repos:
        return True
    return repo is not None and repo.strip("/").casefold() in scope.repos


def check_repo_scope(scope: Scope, where: str, repo: str | None, how: str) -> None:
    """Default-deny on a repository list: *repo* (``host/owner/repo``, or None) must be listed.

    *how* says where the repository came from ("owner_repo", "the launch
    repo's origin", "the origin of /path", "the API path").
    """
    if repo_in_scope(scope, repo):
        return
    allowed = ", ".join(scope.repos)
    if repo is None:
        why = f"{where} targets {how}, which names no forge repository, so it is outside"
    else:
        why = f"{where} targets {repo} ({how}), which is not among"
    raise Refusal("OUT_OF_SCOPE", f"{why} the repositories this server is pinned to ({allowed}); nothing was "
                  f"run or sent.", target=repo or how,
                  user_action=f"Ask the user who started the server to add {repo or 'that repository'} to its "
                  f"repository list ({scope.repos_by}) if it should be reachable.")


def check_host_scope(scope: Scope, where: str, host: str) -> None:
    """A forge-wide read (search, notifications) goes only to a host of a listed repository."""
    if not scope.repos or host.casefold() in scope.hosts:
        return
    raise Refusal("OUT_OF_SCOPE", f"{where} would ask {host}, which holds none of the repositories this server "
                  f"is pinned to ({', '.join(scope.repos)}); nothing was sent.", target=host,
                  user_action=f"Ask the user who started the server to add a {host} repository to its repository "
                  f"list ({scope.repos_by}) if it should be reachable.")


def narrow_way_on(scope: Scope, next: Sequence[Call], choices: Sequence[Sequence[Call]], user_action: str | None,
                  allowed: Callable[[Call], bool]) -> tuple[list[Call], list[list[Call]], str | None, str | None]:
    """A refusal's way on, without any step the server's scope would refuse.

    *allowed(step)* says whether a step is in scope. A plan (``next``) with a
    refused step is no way on at all; a refused choice is dropped, and a single
    choice left is the plan (unless it is an override, never a plan). With
    nothing else left, the way on is the person who can widen the scope. The fourth value is a sentence
    for the refusal's text that names what the scope refused (None when nothing was).
    """
    steps, options = list(next), [list(c) for c in choices]
    refused = [s for s in steps + [s for c in options for s in c] if "tool" in s and not allowed(s)]
    if not refused:
        return steps, options, user_action, None
    note = (f"The way on ({'; '.join(render_call(s) for s in refused[:3])}) is outside this server's scope "
            f"({scope.describe()}).")
    widen = "Ask the user who started the server to widen its scope if this is wanted; nothing more can be done here."
    kept = [c for c in options if all(allowed(s) for s in c)]
    if len(kept) == 1 and not any(is_override(s) for s in kept[0]):
        return kept[0], [], None, note
    if len(kept) > 1:
        return [], kept, None, note
    return [], [], widen, note


def scope_entry_problems(entries: Iterable[str], option: str, actions: Mapping[str, Sequence[str | None]]) -> list[str]:
    """Start-up errors for tool entries: each names the entry, why, and the closest real name.

    *actions* maps each tool the server has to its actions (``[None]`` for a
    tool without actions). A typo must not silently widen or narrow the surface.
    """
    known = [t for t in actions] + [f"{t}:{a}" for t, acts in actions.items() for a in acts if a]
    problems = []
    for entry in entries:
        tool, colon, action = entry.partition(":")
        if entry in known:
            continue
        guess = did_you_mean(entry, known) or did_you_mean(entry.lower(), known)
        if colon and tool in actions and actions[tool] == [None]:
            why = f"{tool} has no actions; name the tool alone"
            guess = tool
        elif colon and tool in actions:
            why = f"{tool} has no action {action!r} (its actions: {', '.join(str(a) for a in actions[tool])})"
        else:
            why = "there is no such tool"
        problems.append(f"{option}: {entry!r}: {why}." + (f" Did you mean {guess}?" if guess else ""))
    return problems


# --------------------------------------------------------------------------- branches and tags on the forge

@record(frozen=True)
class RefWrite(_Guarded):
    """A branch or tag write on the forge, with the facts read just before it."""

    repo: str                     # owner/repo on the forge
    default_branch: str = ""
    protected: bool = False       # the branch has a protection rule
    admin: bool = False           # the token's user administers the repository


def check_branch_rename(w: RefWrite, name: str, new_name: str) -> None:
    """The default branch is renamed only by a call that says so; the forge lets only an admin rename it
    or a protected branch, so without one the refusal says who can."""
    if name == w.default_branch and not w.admin:
        raise Refusal("DEFAULT_BRANCH", f"{name} is the default branch of {w.repo}, and only a repository admin "
                      f"may rename it; this token's user is not one, so nothing was renamed.", target=w.repo,
                      user_action=f"Ask an admin of {w.repo} to rename {name} to {new_name} if the default "
                                  f"branch should change its name.")
    if name == w.default_branch and not w.args.get("allow_default_branch"):
        # Only the caller knows whether the default branch itself should change its name, or a
        # branch of that name should start from it.
        raise Refusal("DEFAULT_BRANCH", f"{name} is the default branch of {w.repo}: clones, open pull requests "
                      f"and workflows follow it, so madtea renames it only when the call says so; nothing was "
                      f"renamed.", target=w.repo,
                      choices=((call(w.tool, action="create_branch", owner_repo=w.args.get("owner_repo"),
                                     branch=new_name, ref=name),),
                               (w.retry(allow_default_branch=True),)))
    if w.protected and not w.admin:
        raise protected_branch(w, name)


def protected_branch(w: RefWrite, name: str) -> Refusal:
    """A branch protection rule stands in the way (read before the write, or the forge's refusal of it)."""
    return Refusal("PROTECTED_BRANCH", f"{name} in {w.repo} is protected by a branch rule, and only a repository "
                   f"admin may rename it; nothing was renamed.", target=f"{w.repo} branch {name}",
                   user_action=f"Ask an admin of {w.repo} to rename {name}, or to change its protection rule, if "
                               f"it should be renamed.")


def ref_exists(w: RefWrite, kind: str, name: str, key: str) -> Refusal:
    """A branch or tag to create (or rename to) that the forge already has."""
    return Refusal("TAG_EXISTS" if kind == "tag" else "BRANCH_EXISTS",
                   f"{w.repo} already has a {kind} {name}; nothing was changed.", target=w.repo,
                   next=(w.retry(**{key: placeholder(f"a {kind} name {w.repo} does not have yet")}),))


def no_such_ref(w: RefWrite, ref: str, key: str, branch: bool = False) -> Refusal:
    """A branch, tag or commit named to start from (or a branch to rename) that the forge does not have."""
    if branch:
        return Refusal("NOT_A_COMMIT", f"{w.repo} has no branch {ref}; nothing was changed.", target=w.repo,
                       next=(call(w.tool, action="branches", owner_repo=w.args.get("owner_repo")),
                             w.retry(**{key: placeholder("a branch the list shows")})))
    return Refusal("NOT_A_COMMIT", f"Nothing in {w.repo} is called {ref}; nothing was changed.", target=w.repo,
                   next=(w.retry(**{key: placeholder("a branch, tag or commit that exists")}),))


# --------------------------------------------------------------------------- reviews, Actions and time on the forge

@record(frozen=True)
class ForgeCall(_Guarded):
    """A call that writes to the forge (or saves what it read), with the facts read just before it."""

    repo: str                     # owner/repo on the forge
    secret: str | None = None     # the parameter whose value is never repeated in a refusal

    def retry(self, **changes: Json) -> Call:
        kept = {k: v for k, v in self.args.items() if k != self.secret}
        if self.secret and self.secret in self.args and self.secret not in changes:
            kept[self.secret] = placeholder(f"the same {self.secret}")
        return call(self.tool, **_with_action(self.action, kept | changes))


_DURATION = r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?"


def duration_seconds(c: ForgeCall, value: str) -> int:
    """A tracked time as the forge stores it, in whole seconds: "1h30m", "45m", "90s", or a number of seconds."""
    import re
    text = value.strip().lower().replace(" ", "")
    found = re.fullmatch(_DURATION, text) if text and not text.isdigit() else None
    seconds = int(text) if text.isdigit() else (
        int(found[1] or 0) * 3600 + int(found[2] or 0) * 60 + int(found[3] or 0) if found else 0)
    if not 0 < seconds <= 10_000 * 3600:
        raise Refusal("BAD_ARGUMENT", f"{c.where}: {value[:40]!r} is not a time to track; give hours, minutes or "
                      f"seconds such as 1h30m, 45m or 90s.", target=c.where,
                      next=(c.retry(duration=placeholder("a time such as 1h30m")),))
    return seconds


_ACTIONS_NAME = r"[A-Za-z_][A-Za-z0-9_]*"


def actions_name(c: ForgeCall, name: str, what: str) -> str:
    """A secret's or variable's name as Gitea and Forgejo keep it: upper-cased; letters, digits and _, not
    starting with a digit, and not with GITEA_ or GITHUB_ (theirs)."""
    import re
    upper = name.strip().upper()
    if not re.fullmatch(_ACTIONS_NAME, upper) or upper.startswith(("GITEA_", "GITHUB_")):
        raise Refusal("BAD_ARGUMENT", f"{c.where}: {name[:60]!r} cannot name a {what}: use letters, digits and _, "
                      f"not starting with a digit, GITEA_ or GITHUB_.", target=c.where,
                      next=(c.retry(name=placeholder(f"a {what} name such as DEPLOY_KEY")),))
    return upper


def check_forgejo_offers(c: ForgeCall, code: str, flavour: Callable[[], str], what: str) -> None:
    """Forgejo answers "not found" for the Gitea Actions endpoints it lacks: *what* is missing, not the object.
    *flavour* is asked only after a "not found" (any other failure is the forge's own word)."""
    if code == "NOT_FOUND_OR_NO_ACCESS" and flavour() == "forgejo":
        raise Refusal("NOT_SUPPORTED", f"Forgejo does not offer {what} through its API.", target=c.repo,
                      user_action=NOTHING_FURTHER)


def server_lacks(c: ForgeCall, feature: str, server: str, brings: str, by_hand: str) -> Refusal:
    """*feature* needs an endpoint the forge's release lacks: name the release that brings it (*brings*; "" when
    no release of that server has it), rather than send a request that can only 404 or be ignored. *by_hand*
    says where a person can do it instead ("" when nowhere)."""
    if brings:
        reason = f"{feature} needs {brings} or newer, and the forge of {c.repo} runs {server}."
        action = (f"Tell the user this needs {brings} or newer; only the forge's administrator can upgrade it"
                  + (f" (meanwhile {by_hand})." if by_hand else "."))
    else:
        reason = f"{feature} is not in the API of {server}, which the forge of {c.repo} runs."
        action = f"Tell the user {by_hand}." if by_hand else NOTHING_FURTHER
    return Refusal("NOT_SUPPORTED", reason, target=c.repo, user_action=action)


def check_secret_listed(c: ForgeCall, name: str, listed: bool) -> None:
    """A secret is set only when the forge lists it afterwards (its name is all it ever shows of it)."""
    if not listed:
        raise Refusal("FORGE_UNAVAILABLE", f"The forge accepted the secret {name} but does not list it "
                      f"afterwards.", target=c.repo, user_action=FORGE_NEXT["FORGE_UNAVAILABLE"])


def no_such_variable(c: ForgeCall, name: str) -> Refusal:
    return Refusal("NOT_FOUND_OR_NO_ACCESS", f"{c.repo} has no variable {name}.", target=c.repo,
                   user_action=FORGE_NEXT["NOT_FOUND_OR_NO_ACCESS"])


def output_not_absolute(c: ForgeCall, raw: str, new: str) -> Refusal:
    """A download's output that is not an absolute path."""
    return Refusal("BAD_ARGUMENT", f"{c.where}: output {raw[:80]!r} is not an absolute path; the server cannot "
                   f"know what it is relative to.", target=c.where, next=(c.retry(output=new),))


def output_exists(c: ForgeCall, path: "Path", new: str) -> Refusal:
    """A download's output where something is already: a download never overwrites."""
    return Refusal("PATH_EXISTS", f"{path} already exists, and a download never overwrites a file; nothing was "
                   f"fetched.", target=str(path), next=(c.retry(output=new),))


def output_folder_missing(c: ForgeCall, path: "Path", new: str) -> Refusal:
    """A download's output in a folder that does not exist."""
    return Refusal("BAD_ARGUMENT", f"{c.where}: the folder {path.parent} does not exist; nothing was fetched.",
                   target=str(path.parent), next=(c.retry(output=new),))


def saved_file(c: ForgeCall, raw: str, exists: bool, folder: bool) -> "Path":
    """Where a download is saved: a new file, by absolute path, in a folder that exists; nothing is overwritten.

    *exists* says whether something (a link too) is at the path already, *folder* whether its folder exists;
    both are read only for an absolute path.
    """
    from pathlib import Path
    path = Path(raw.strip())
    new = placeholder("the absolute path of a file that does not exist yet")
    if not raw.strip() or not path.is_absolute():
        raise output_not_absolute(c, raw, new)
    if exists:
        raise output_exists(c, path, new)
    if not folder:
        raise output_folder_missing(c, path, new)
    return path


def artifact_too_large(c: ForgeCall, name: str, size: int, limit: int, web: str) -> Refusal:
    return Refusal("BAD_ARGUMENT", f"The artifact {name} of {c.repo} is {size} bytes, more than the {limit} bytes "
                   f"madtea downloads; nothing was fetched.", target=c.repo,
                   user_action=f"Ask the user to download {name} from {web} if it is needed.")


def inline_comments(c: ForgeCall, value: object) -> list[dict[str, Json]]:
    """A review's inline comments as the forge takes them: each a path, a body and a line of the new file
    (``line``) or of the old one (``old_line``)."""
    shape = placeholder('a list such as [{"path": "a.py", "line": 3, "body": "..."}]')
    out = []
    for item in value if isinstance(value, list) else [None]:
        line = item.get("line") if isinstance(item, dict) else None
        old = item.get("old_line") if isinstance(item, dict) else None
        whole = [n for n in (line, old) if isinstance(n, int) and not isinstance(n, bool) and 0 < n <= MAX_NUMBER]
        if not isinstance(item, dict) or set(item) - {"path", "body", "line", "old_line"} or \
                not isinstance(item.get("path"), str) or not item["path"].strip() or \
                not isinstance(item.get("body"), str) or not item["body"].strip() or \
                len(whole) != 1 or len(whole) != len([n for n in (line, old) if n is not None]):
            raise Refusal("BAD_ARGUMENT", f"{c.where}: each inline comment is an object with path, body and one of "
                          f"line (in the new file) or old_line (a removed line), as whole numbers.", target=c.where,
                          next=(c.retry(inline=shape),))
        out.append({"path": item["path"], "body": item["body"], "new_position": line or 0, "old_position": old or 0})
    return out


def dispatch_inputs(c: ForgeCall, value: object) -> dict[str, str]:
    """A workflow's inputs as the forge takes them: names to strings (numbers and true/false become text)."""
    if isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, (str, int, float, bool))
                                       for k, v in value.items()):
        return {k: (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in value.items()}
    raise Refusal("BAD_ARGUMENT", f"{c.where}: inputs is an object of names to values, such as "
                  '{"level": "3"}.', target=c.where,
                  next=(c.retry(inputs=placeholder('an object such as {"level": "3"}')),))


def lost_write(c: ForgeCall, failure: str, what: str, look: Call) -> Refusal:
    """A write whose answer was lost and that no read-back could settle: look before sending it again."""
    return Refusal("FORGE_UNAVAILABLE", f"{failure} Whether {what} is unknown; look before sending this again: "
                   f"{render_call(look)}", target=c.repo, next=(look,))


def review_submitted(c: ForgeCall, number: int, review_id: int, state: str) -> Refusal:
    """A submit of a review already submitted with another verdict: the forge keeps the first."""
    return Refusal("BAD_ARGUMENT", f"Review {review_id} on PR #{number} in {c.repo} was already submitted as "
                   f"{state}; a submitted review cannot be submitted again, so leave a new review instead.",
                   target=f"{c.repo}#{number}",
                   next=(call(c.tool, action="review", owner_repo=c.args.get("owner_repo"), number=number,
                              event=c.args.get("event"), body=c.args.get("body")),))


def no_review_comment(c: ForgeCall, number: int, comment_id: int) -> Refusal:
    return Refusal("NOT_FOUND_OR_NO_ACCESS", f"PR #{number} in {c.repo} has no review comment {comment_id}; "
                   f"nothing was sent.", target=f"{c.repo}#{number}",
                   next=(call(c.tool, action="reviews", owner_repo=c.args.get("owner_repo"), number=number,
                              comments=True),
                         c.retry(comment_id=placeholder("a comment id the reviews show"))))


def no_time_entry(c: ForgeCall, number: int, time_id: int) -> Refusal:
    """A tracked time entry the issue does not hold (another issue's, or already deleted)."""
    return Refusal("NOT_FOUND_OR_NO_ACCESS", f"#{number} in {c.repo} has no tracked time entry {time_id}; nothing "
                   f"was deleted.", target=f"{c.repo}#{number}",
                   next=(call(c.tool, action="times", owner_repo=c.args.get("owner_repo"), number=number),
                         c.retry(time_id=placeholder("an entry id the list shows"))))


def check_review_pending(c: ForgeCall, number: int, review_id: int, state: str, web: str) -> None:
    """Only a pending review (a draft nobody else has seen) is deleted by an agent; a submitted one is part of
    the pull request's record, and removing it is a person's act."""
    if state != "PENDING":
        raise Refusal("USER_ACTION_REQUIRED", f"Review {review_id} on PR #{number} in {c.repo} was submitted "
                      f"({state}); deleting a submitted review removes it from the record, so nothing was deleted.",
                      target=f"{c.repo}#{number}",
                      user_action=f"Ask the user to delete review {review_id} at {web} if it should go (an approval "
                                  f"or change request can be dismissed instead).")


def no_stopwatch(c: ForgeCall, number: int) -> Refusal:
    """Stopping a stopwatch that is not running: the time to record can still be added by hand."""
    return Refusal("BAD_ARGUMENT", f"No stopwatch of yours is running on #{number} in {c.repo}; nothing was "
                   f"tracked.", target=f"{c.repo}#{number}",
                   next=(call(c.tool, action="add_time", owner_repo=c.args.get("owner_repo"), number=number,
                              duration=placeholder("the time spent, such as 1h30m")),))


def stopped_time_unseen(c: ForgeCall, number: int, lost: str | None, look: Call) -> Refusal:
    """A stop after which the forge lists no new tracked time: after a lost answer, look before stopping
    again; after an answer, the forge contradicts itself."""
    if lost is not None:
        return lost_write(c, lost, "the stopwatch stopped", look)
    return Refusal("FORGE_UNAVAILABLE", f"The forge stopped the stopwatch on #{number} but lists no new tracked "
                   f"time.", target=f"{c.repo}#{number}", user_action=FORGE_NEXT["FORGE_UNAVAILABLE"])


# --------------------------------------------------------------------------- updating a copy install
#
# ``madtea update`` replaces madtea's own files for people who installed it by
# copying them. These rules take what it found (where madtea runs from, who
# manages those files, the signer, the versions) and refuse before anything is
# written; each refusal says nothing was replaced.


def check_update_install(where: str, *, managed_by: str | None, record: str | None, checkout: str | None) -> None:
    """A copy install is madtea's to replace; files a package manager or git tracks are not."""
    if record:
        tool = managed_by or "pip"
        way = ("python -m pip install --upgrade madtea (or pip install the release's wheel file)" if tool == "pip"
               else f"{tool}, the tool that installed it")
        raise Refusal("USER_ACTION_REQUIRED", f"madtea at {where} was installed by {tool}, which lists its files in "
                      f"{record}; madtea update does not replace files a package manager owns, so nothing was "
                      "replaced.", target=where, user_action=f"Update it with {way}.")
    if checkout:
        raise Refusal("USER_ACTION_REQUIRED", f"madtea at {where} runs from the git checkout {checkout}, whose files "
                      "are git's to change; nothing was replaced.", target=where,
                      user_action=f"Update the checkout with git (git -C {checkout} pull).")


def update_not_a_release(path: str, why: str) -> Refusal:
    return Refusal("BAD_ARGUMENT", f"{path} is not a madtea release file: {why}; nothing was replaced.", target=path,
                   user_action="Pass a release's madtea-X.Y.Z.pyz or madtea-X.Y.Z.zip, with its .sig beside it.")


def update_no_signature(path: str, sig: str) -> Refusal:
    return Refusal("BAD_SIGNATURE", f"{path} has no signature beside it ({sig} is missing), so it cannot be "
                   "verified; nothing was replaced.", target=path,
                   user_action=f"Download {os.path.basename(sig)} from the same release and put it beside "
                   f"{os.path.basename(path)}.")


def update_wrong_kind(path: str, where: str) -> Refusal:
    return Refusal("BAD_ARGUMENT", f"madtea runs as the single file {where}, which only a .pyz release replaces, "
                   f"not the archive {path}; nothing was replaced.", target=path,
                   user_action="Pass the same release's madtea-X.Y.Z.pyz (with its .sig) instead.")


def check_update_signer(path: str, signer: str, pinned: str | None, pin_file: str) -> None:
    """The release key pinned on first use must sign every later update."""
    if pinned is not None and pinned != signer:
        raise Refusal("BAD_SIGNATURE", f"{path} is signed by the key {signer}, but this machine trusts {pinned} "
                      f"for madtea releases (pinned in {pin_file}); nothing was replaced.", target=path,
                      user_action=f"Keep the installed madtea unless its maintainers announced {signer} as their new "
                      f"release key; if they did, a person deletes {pin_file} and runs the update again to pin it.")


def update_bad_signature(path: str, sig: str, detail: str) -> Refusal:
    return Refusal("BAD_SIGNATURE", f"The signature {sig} does not match {path} ({detail}): the file changed after "
                   "it was signed, or the signature belongs to another file; nothing was replaced.", target=path,
                   user_action="Download the file and its .sig again from the release and check the file against "
                   "the release's SHA256SUMS.")


def update_trust_needs_terminal(path: str, signer: str, again: str) -> Refusal:
    return Refusal("USER_ACTION_REQUIRED", f"No madtea release key is trusted on this machine yet, and trusting "
                   f"{signer}, which signed {path}, needs a person at a terminal; nothing was pinned or replaced.",
                   target=path, user_action=f"Run {again} at a terminal, compare the fingerprint it shows with "
                   "the one madtea's maintainers publish, and type yes.")


def update_not_trusted(path: str, signer: str) -> Refusal:
    return Refusal("USER_ACTION_REQUIRED", f"The key {signer} that signed {path} was not trusted; nothing was pinned "
                   "or replaced.", target=path, user_action=f"Check {signer} against the fingerprint madtea's "
                   "maintainers publish, then run the update again and type yes.")


def _version_key(version: str) -> tuple[int, int, int, int] | None:
    import re
    match = re.match(r"(\d+)\.(\d+)\.(\d+)(?:\.dev(\d+))?", version)
    if not match or version.startswith("0.0.0+"):
        return None
    dev = int(match[4]) if match[4] is not None else 1 << 62  # a dev build sorts before its release
    return (int(match[1]), int(match[2]), int(match[3]), dev)


def check_update_version(path: str, new: str, installed: str, where: str, allow_downgrade: bool,
                         again: str) -> bool:
    """True when *new* differs from *installed*; a step back is refused unless the person asked for it."""
    old_key, new_key = _version_key(installed), _version_key(new)
    if new_key is None:
        raise update_not_a_release(path, f"its madtea.py reports no release version ({new})")
    if old_key is None or new_key > old_key:
        return True
    if new_key == old_key and new == installed:
        return False
    if not allow_downgrade:
        raise Refusal("DOWNGRADE", f"{path} holds madtea {new}, older than the {installed} installed at {where}; "
                      "nothing was replaced.", target=path,
                      user_action=f"To go back to {new} on purpose, run {again} --allow-downgrade.")
    return True


def update_tool_failed(path: str, reason: str, missing: bool) -> Refusal:
    """ssh-keygen, which verifies every release, is *missing* from PATH or did not run to its end (*reason*)."""
    return Refusal("USER_ACTION_REQUIRED", f"Verifying {path} needs ssh-keygen (OpenSSH 8.1 or later), which "
                   f"{reason}; nothing was replaced.", target=path,
                   user_action="Install OpenSSH's ssh-keygen and run the update again." if missing else
                   "Make sure ssh-keygen runs for this user (ssh-keygen -Y verify), then run the update again.")


def os_meaning(err: int | None, said: str = "") -> str:
    """What an errno means, in the system's words, with its name: "No space left on device (ENOSPC)"."""
    import errno
    if not err:
        return said or "an operating-system error"
    return f"{os.strerror(err)} ({errno.errorcode.get(err, str(err))})"


def disk_remedy(folder: str, err: int | None, then: str, free: int | None = None) -> str:
    """The one thing a person does about a file madtea could not write in *folder*, by what the system said."""
    import errno
    if err in (errno.ENOSPC, getattr(errno, "EDQUOT", -1)):
        room = f" (it has {free:,} bytes free)" if free is not None else ""
        return f"Free space on the disk that holds {folder}{room}, then {then}."
    if err == errno.EROFS:
        return f"{folder} is on a read-only file system: remount it writable or use a writable folder, then {then}."
    if err in (None, errno.EACCES, errno.EPERM):
        return f"Make {folder} writable for this user, then {then}."
    return f"Check that {folder} exists and can be written, then {then}."


def update_replace_failed(where: str, detail: str, err: int | None = None, free: int | None = None) -> Refusal:
    import errno
    action = disk_remedy(where, err, "run the update again", free)
    if err in (None, errno.EACCES, errno.EPERM):
        action = action.replace(", then", " (and close other running madtea processes on Windows), then", 1)
    return Refusal("USER_ACTION_REQUIRED", f"Replacing madtea's files at {where} failed ({detail}); the files that "
                   "were there before are in place again.", target=where, user_action=action)


def local_write_failed(path: str, err: int | None, said: str, done: str, free: int | None = None) -> Refusal:
    """A file madtea keeps for a person (a login, a token, its config) could not be written."""
    folder = os.path.dirname(path) or path
    return Refusal("USER_ACTION_REQUIRED", f"Could not write {path}: {os_meaning(err, said)}. {done}", target=path,
                   user_action=disk_remedy(folder, err, "run the command again", free))


def update_busy(where: str) -> Refusal:
    return Refusal("USER_ACTION_REQUIRED", f"Another madtea update is replacing the files at {where} right now; "
                   "this one read nothing and replaced nothing.", target=where,
                   user_action="Let the other update finish, then run madtea --version to see what is installed.")


def update_new_copy_failed(path: str, detail: str) -> Refusal:
    return Refusal("BAD_ARGUMENT", f"The madtea in {path} verified but does not run here ({detail}); it was tried "
                   "from a temporary folder and nothing was replaced.", target=path,
                   user_action="Keep the installed madtea, and tell its maintainers what the new release printed.")


def update_no_source(config: str) -> Refusal:
    return Refusal("BAD_ARGUMENT", "madtea update needs a release file (--from FILE) or the forge repository that "
                   "publishes madtea's releases, and neither was given; nothing was fetched.", target="madtea update",
                   user_action="Run madtea update --repo https://HOST/OWNER/REPO, naming the repository that publishes "
                   f"madtea's releases (set \"update_from\" to that address in {config} to make it the default).")


def update_bad_source(value: str) -> Refusal:
    return Refusal("BAD_ARGUMENT", f"{value!r} is not the web address of a forge repository; nothing was fetched.",
                   target=value, user_action="Pass the repository's address as it shows in a browser, such as "
                   "https://codeberg.org/OWNER/REPO.")


def update_release_lacks(repo: str, tag: str, name: str) -> Refusal:
    return Refusal("NOT_FOUND_OR_NO_ACCESS", f"The latest release {tag} of {repo} has no {name} with its "
                   f"{name}.sig beside it; nothing was fetched or replaced.", target=repo,
                   user_action=f"Ask madtea's maintainers to attach {name} and {name}.sig to the release {tag}.")


# =========================================================================== 2. the hook's shell classifier
#
# The agent hook decides on one shell command before the harness runs it.
# Everything below is pure: the caller hands in ``repo_facts(path)`` (a
# filesystem-only reader, such as part 3's hook_repo_facts) and gets a HookDecision.
# The hook steers; it is not a security boundary. It reads a line as bash and git
# would (git's option table, every context that runs a command, wrappers by their
# own syntax); git aliases from config, strings built at run time and scripts on
# disk are out of reach: the guard in the MCP tools enforces.

NONE_RAN = "This entire command was blocked; none of it ran (the {first} did not execute)."
DO_NOT_RETRY = "Do not retry any raw git {verb} variant; every form is steered."
MID_OPERATION_RAIL = ("A {op} is in progress in {top}: stage the resolved files with {add}, "
                      "then finish with GIT_EDITOR=true git{c} {op} --continue (or stop with git{c} {op} --abort).")


class HookDecision:
    """What the hook does with one shell command.

    ``kind`` is "allow" (say nothing), "note" (let it run, with advisory text for
    the agent) or "deny" (block it; ``text`` is the reason). ``segment`` is the
    part of the command line that decided.
    """

    __slots__ = ("kind", "text", "segment")

    def __init__(self, kind: str, text: str = "", segment: str = "") -> None:
        self.kind = kind
        self.text = text
        self.segment = segment

    def __eq__(self, other: object) -> bool:
        return isinstance(other, HookDecision) and (self.kind, self.text, self.segment) == (
            other.kind, other.text, other.segment)

    def __repr__(self) -> str:
        return f"HookDecision({self.kind!r}, {self.text!r}, {self.segment!r})"


class HookRepo:
    """Filesystem facts about the repository holding one path (realpaths).

    ``prefix`` is that path relative to ``top`` ("" at the top); ``operation`` is
    a stopped merge, rebase, cherry-pick, revert, am or bisect; ``ref_kind(name)``
    says "branch", "remote" or "tag" for a name the repo has, None otherwise.
    """

    __slots__ = ("top", "git_dir", "common_dir", "prefix", "operation", "ref_kind")

    def __init__(self, top: str, git_dir: str, common_dir: str, prefix: str = "",
                 operation: str | None = None, ref_kind: Callable[[str], str | None] | None = None) -> None:
        self.top = top
        self.git_dir = git_dir
        self.common_dir = common_dir
        self.prefix = prefix
        self.operation = operation
        self.ref_kind = ref_kind

    def __repr__(self) -> str:
        return f"HookRepo({self.top!r}, operation={self.operation!r})"


def mentions_git_or_madtea(command: str) -> bool:
    """True when *command* has a ``git`` or ``madtea`` word: a blocked form could hide there."""
    command = command or ""
    if "git" not in command and "madtea" not in command:
        return False  # most commands: no pattern to compile
    import re
    return bool(re.search(_HOOK_GIT_OR_MADTEA, command))


_HOOK_GIT_OR_MADTEA = r"\b(?:git|madtea)\b"


def hook_failure_decision(command: str | None, reason: str) -> HookDecision:
    """The hook could not decide (a malformed event, an internal error): never wedge the agent.

    Only a command with a git or madtea word is held back, since a blocked form
    could hide there; everything else goes ahead.
    """
    if not command or not mentions_git_or_madtea(command):
        return HookDecision("allow")
    return HookDecision("deny", (
        f"madtea's hook could not check this command ({reason}), and it runs git or madtea, so it was "
        "held back; none of it ran. Do this step with the madt_* tools instead (madt_status, madt_add, "
        "madt_commit, madt_push), or ask the user to check the madtea installation.\n"
        "Do not retry it in another shell form; every git or madtea line is held back until the hook can check it."),
        command)


def classify_command(command: str, cwd: str, repo_facts: Callable[[str], HookRepo | None],
                     cli_ops: CliTable, run_dir: str | None = None) -> HookDecision:
    """Decide on one shell command line run from *cwd* (or from *run_dir*, when the harness runs it there).

    ``repo_facts(path) -> HookRepo | None`` reads the repository holding a path
    (filesystem only); it is called at most once per distinct path. ``cli_ops()``
    maps the madtea CLI's (noun, verb) to its MCP twin, as plain data taken from
    the registry: ``{"tool", "action", "reads", "params": [{"name", "type", "flags",
    "positional", "cli_only", "choices", "enum_flags"}]}``; it is called only
    for a line that runs madtea. A line with any denied part is denied whole,
    and the text says none of it ran. The own repository is always *cwd*'s: a
    *run_dir* in another repository is judged as a ``cd`` there would be.
    """
    ctx = _LineContext(cwd, repo_facts)
    ctx.cli_ops = cli_ops
    denied: list[tuple[_ShellSegment, str]] = []
    notes: list[str] = []
    try:
        segs = _ShellParser(command, run_dir or cwd).parse()
        ctx.line, ctx.segs = command, segs
        if "(" in command or "function" in command:
            ctx.functions = _functions(segs)
        for seg in segs:
            for kind, text in _verdicts(seg, ctx, 0):
                if kind == "deny":
                    denied.append((seg, text))
                elif kind == "note" and text not in notes:
                    notes.append(text)
    except (_Unreadable, RecursionError) as exc:  # a line deeper than the reader goes: held if git could hide there
        why = str(exc) if isinstance(exc, _Unreadable) else _TOO_DEEP
        if not mentions_git_or_madtea(command):
            return HookDecision("allow")
        return HookDecision("deny", _unreadable_text(why), command)
    if denied:  # only a denial names the line's commands
        top_level = [label for s in segs if s.depth == 0 and (label := _label(s))]
        lines = [NONE_RAN.format(first=top_level[0])] if len(top_level) > 1 else []
        for _seg, text in denied:
            lines.extend(line for line in text.split("\n") if line not in lines)
        return HookDecision("deny", "\n".join(lines), denied[0][0].raw)
    if notes:
        return HookDecision("note", "\n".join(notes))
    return HookDecision("allow")


UNREADABLE = ("madtea's hook could not read this command to its end ({why}), and it holds a git or madtea word, "
              "so it was held back; none of it ran.\n"
              "Write the git or madtea step as a plain command of its own, not inside a string, a here-document or "
              "a nested shell, so the hook can check it.")
_TOO_DEEP = "it nests shells, evals or substitutions deeper than the hook follows"


class _Unreadable(Exception):
    """The reader cannot finish the line: the reason, said to the agent."""


def _unreadable_text(why: str) -> str:
    return UNREADABLE.format(why=why)


def _unreadable(words: Iterable[str], why: str = _TOO_DEEP) -> list[tuple[str, str]]:
    """The verdict on a part the reader cannot read: held when a git or madtea word is in it, else nothing."""
    return [("deny", _unreadable_text(why))] if mentions_git_or_madtea(" ".join(words)) else []


# --------------------------------------------------------------------------- shell parsing

class _ShellWord:
    __slots__ = ("text", "dynamic", "quoted", "script")

    def __init__(self, text: str, dynamic: bool, quoted: bool, script: str | None = None) -> None:
        self.text = text
        self.dynamic = dynamic  # holds an expansion whose value only the shell knows
        self.quoted = quoted
        self.script = script  # a process substitution's output, when the line shows it

    def __repr__(self) -> str:
        return f"_ShellWord({self.text!r}{', dynamic' if self.dynamic else ''})"


if TYPE_CHECKING:
    class _ShellEnv(TypedDict):
        dir: str | None              # None once a cd went where only the shell knows
        env: dict[str, _ShellWord]    # the exported variables

    class _ShellScope(_ShellEnv, total=False):
        """What a command list runs with: its directory, its variables and the aliases the line defined."""

        alias: dict[str, list[_ShellWord]]


class _ShellSegment:
    """One simple command, with the directory and exported variables in force when it starts."""

    __slots__ = ("words", "raw", "depth", "dir", "env", "heredoc", "writes")

    def __init__(self, words: list[_ShellWord], raw: str, depth: int, dir: str | None,
                 env: dict[str, _ShellWord]) -> None:
        # what is fed to its stdin, once read: [the exact text or None, the text as written]
        self.heredoc: list[str | None] = [None, None]
        self.writes: list[str] = []  # files its redirections write
        self.words = words
        self.raw = raw
        self.depth = depth  # 0 = on the line itself, >0 = inside a substitution or an inner shell
        self.dir = dir      # None once a cd went somewhere only the shell knows
        self.env = env


class _ParseState:
    __slots__ = ("words", "cur", "dyn", "quoted", "start", "prev_sep", "skip_next", "heredoc", "herestring", "piped",
                 "script", "redirect", "writes", "cases", "braces", "group")

    def __init__(self) -> None:
        self.heredoc: list[str | None] = [None, None]
        self.script: str | None = None  # the current word's process substitution output, when known
        self.redirect = ""  # the operator whose target the next word is
        self.writes: list[str] = []
        self.cases = 0  # case statements open in this list, whose patterns end in ")"
        self.braces: list[tuple[str, bool]] | None = None  # the word's pieces (text, quoted) once one holds a "{"
        self.group: tuple[int, int] | None = None  # the commands of a subshell just closed, whose redirects follow
        self.words: list[_ShellWord] = []
        self.cur: list[str] | None = None
        self.dyn = False
        self.quoted = False
        self.start: int | None = None
        self.prev_sep: str | None = None
        self.skip_next = False  # the next word is a redirection target, not an argument
        self.herestring = False  # ...and that target is a here-string fed to stdin
        self.piped: list[str | None] | None = None  # what the previous part of a pipeline writes, when literal




def _assigns(text: str) -> bool:
    """A shell variable assignment word: ``NAME=...`` with NAME matching ``[A-Za-z_][A-Za-z0-9_]*``.

    Plain string tests rather than a pattern: every word of every command meets this one, and
    compiling a pattern costs more than the hook's decision."""
    name, eq, _ = text.partition("=")
    return bool(eq and name) and not name[0].isdigit() and name.isascii() and name.replace("_", "a").isalnum()


def _varname_end(src: str, pos: int) -> int | None:
    """Where the name of a ``$NAME``, ``$1`` or ``$@`` whose name starts at *pos* ends; None for none."""
    first = src[pos:pos + 1]
    if first and first in "0123456789@*#?$!-":
        return pos + 1
    if not (first.isascii() and (first.isalpha() or first == "_")):
        return None
    end = pos + 1
    while end < len(src) and src[end].isascii() and (src[end].isalnum() or src[end] == "_"):
        end += 1
    return end

_HOOK_ANSI = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "e": "\x1b", "a": "\a", "0": "\0"}


_HOOK_LOOKUPS = (["command", "-v"], ["type", "-p"], ["type", "-P"])  # besides which: what names a program's path

# What ends a run of plain characters, which is read as one piece: in a command list, every character with a
# meaning of its own (``#`` starts a comment only where a word starts, so inside a word it is plain); between
# double quotes, the quote, ``\``, ``$`` and a backtick; in a here-document body, the same but the quote.
_HOOK_SPECIAL = frozenset(" \t\r\n;&|()<>'\"\\$`")
_HOOK_DQUOTE_SPECIAL = frozenset("\"\\$`")
_HOOK_HEREDOC_SPECIAL = frozenset("\\$`")


class _ShellParser:
    """A small POSIX-shell reader: enough to find every command a line would run.

    Quoted text is data; ``$(...)``, backticks and ``<(...)`` are commands that
    run before the one holding them; here-document bodies are data. ``case``
    patterns and other rare syntax are read on a best-effort basis.
    """

    def __init__(self, src: str, cwd: str | None, depth: int = 0, env: dict[str, _ShellWord] | None = None,
                 out: list[_ShellSegment] | None = None) -> None:
        self.src = src
        self.n = len(src)
        self.pos = 0
        self.cwd = cwd
        self.depth = depth
        self.env = dict(env or {})
        self.out = out if out is not None else []
        self.heredocs: list[tuple[str, int, list[str | None]]] = []  # (delimiter, flags, where the body goes)

    def parse(self) -> list[_ShellSegment]:
        self._list({"dir": self.cwd, "env": self.env}, self.depth, None)
        return self.out

    # -- the main loop: one command list, up to *stop* (")" for groups and substitutions)
    def _list(self, scope: _ShellScope, depth: int, stop: str | None) -> None:
        if depth > _HOOK_MAX_DEPTH:
            raise _Unreadable(_TOO_DEEP)
        st = _ParseState()
        while self.pos < self.n:
            c = self.src[self.pos]
            if st.start is None and c not in " \t\r\n;&|)":
                st.start = self.pos
            if c in " \t\r\n;&|":
                self._separator(st, scope, depth, c)
            elif c == "(":
                self._open_paren(st, scope, depth)
            elif c == ")":
                if self._close_paren(st, scope, depth, stop):
                    return
            else:
                self._word_part(st, scope, depth, c)
        self._end_seg(st, scope, depth, None)

    def _separator(self, st: _ParseState, scope: _ShellScope, depth: int, c: str) -> None:
        """Blanks end a word; newlines and the control operators end a command (``&>`` is a redirect)."""
        src = self.src
        if c in " \t\r":
            self._end_word(st)
            self.pos += 1
        elif c == "\n":
            self._end_seg(st, scope, depth, ";")
            self.pos += 1
            self._skip_heredocs()
        elif c == ";":
            self._end_seg(st, scope, depth, ";")
            self.pos += 2 if src.startswith((";;", ";&"), self.pos) else 1
        elif c == "&":
            if src.startswith("&&", self.pos):
                self._end_seg(st, scope, depth, "&&")
                self.pos += 2
            elif src.startswith("&>", self.pos):
                self._end_word(st)
                self.pos += 3 if src.startswith("&>>", self.pos) else 2
                st.skip_next = True
            else:
                self._end_seg(st, scope, depth, "&")
                self.pos += 1
        else:
            two = src.startswith(("||", "|&"), self.pos)
            self._end_seg(st, scope, depth, "||" if src.startswith("||", self.pos) else "|")
            self.pos += 2 if two else 1

    def _open_paren(self, st: _ParseState, scope: _ShellScope, depth: int) -> None:
        last = st.words[-1] if st.words else None
        if st.cur is None and last is not None and last.text == "in" and not last.quoted and \
                st.words[0].text == "case" and not st.words[0].quoted:
            self.pos += 1  # case x in (x) ...: a pattern's optional opening parenthesis
            return
        if st.cur is None and (last is None or last.text.endswith("()") or
                               (last.text in _HOOK_RESERVED and not last.quoted)):
            self.pos += 1  # a subshell, or a function body in one: its cd stays inside
            inner: _ShellScope = {"dir": scope["dir"], "env": dict(scope["env"]),
                                 "alias": dict(scope.get("alias") or {})}
            first = len(self.out)
            self._list(inner, depth, ")")
            st.group = (first, len(self.out))
            st.start = None if not st.words else st.start
        else:
            start = self.pos
            self._balanced_literal(st)  # f() or a=(1 2): not a command, but $( ) in it runs
            self._expansions_in(self.src[start + 1:self.pos - 1], scope, depth)

    def _close_paren(self, st: _ParseState, scope: _ShellScope, depth: int, stop: str | None) -> bool:
        """True when the ")" closes the list being read; a case pattern's ")" ends only a command."""
        self._end_word(st)
        head = st.words[0] if st.words else None
        if head is not None and head.text == "case" and not head.quoted:
            st.cases += 1  # the first pattern of a case: its ")" closes nothing
        elif stop == ")" and not st.cases:
            self._end_seg(st, scope, depth, None)
            self.pos += 1
            return True
        self._end_seg(st, scope, depth, ";")  # a case pattern "a)": what follows is a command
        self.pos += 1
        return False

    def _word_part(self, st: _ParseState, scope: _ShellScope, depth: int, c: str) -> None:
        """Read the next piece of a word: a redirect, quoted text, an expansion, a comment or plain characters."""
        src = self.src
        if c in "<>":
            self._redirect(st, scope, depth)
        elif c == "'":
            end = src.find("'", self.pos + 1)
            end = self.n if end < 0 else end
            self._add(st, src[self.pos + 1:end], quoted=True)
            self.pos = end + 1
        elif c == '"':
            self._dquote(st, scope, depth)
        elif c == "\\":
            if src.startswith("\\\n", self.pos):
                self.pos += 2
            else:
                self._add(st, src[self.pos + 1:self.pos + 2], quoted=True)
                self.pos += 2
        elif c == "$":
            self._dollar(st, scope, depth, in_dquote=False)
        elif c == "`":
            self._backtick(st, scope, depth)
        elif c == "#" and st.cur is None:
            end = src.find("\n", self.pos)
            self.pos = self.n if end < 0 else end
        else:
            end = self.pos + 1
            while end < self.n and src[end] not in _HOOK_SPECIAL:
                end += 1
            self._add(st, src[self.pos:end])
            self.pos = end

    def _expansions_in(self, text: str, scope: _ShellScope, depth: int) -> None:
        """The commands that substitutions inside *text* run (an array, ``${x:-...}``, ``$((...))``)."""
        if "$(" in text or "`" in text or "<(" in text or ">(" in text:
            inner = _ShellParser(text, scope["dir"], depth + 1, scope["env"]).parse()
            self.out.extend(seg for seg in inner if seg.depth > depth + 1)

    def _add(self, st: _ParseState, text: str, quoted: bool = False, dynamic: bool = False) -> None:
        if st.cur is None:
            st.cur, st.dyn, st.quoted, st.braces = [], False, False, None
        if st.braces is None and not quoted and not dynamic and "{" in text:
            st.braces = [(piece, True) for piece in st.cur]  # unquoted braces: bash may expand them
        if st.braces is not None:
            st.braces.append((text, quoted or dynamic))
        st.cur.append(text)
        st.quoted = st.quoted or quoted
        st.dyn = st.dyn or dynamic

    def _end_word(self, st: _ParseState) -> None:
        if st.cur is None:
            return
        word = _ShellWord("".join(st.cur), st.dyn, st.quoted, st.script)
        st.cur, st.script = None, None
        if not word.text and not word.quoted and not word.dynamic and not st.skip_next:
            st.braces = None
            return  # $(true): bash removes an unquoted word that expands to nothing
        if st.skip_next:
            if st.herestring:
                st.heredoc[:] = [None if word.dynamic else word.text, word.text]
            elif st.redirect == "<" and word.script is not None:
                st.heredoc[:] = [None, word.script]
            elif st.redirect not in ("<", "<&", ">&"):
                st.writes.append(word.text)
            st.skip_next = st.herestring = False
        else:
            if not st.words and word.text == "esac" and not word.quoted and st.cases:
                st.cases -= 1
            expanded = _brace_expand(st.braces) if st.braces is not None and not (
                _assigns(word.text) and all(_assigns(w.text) for w in st.words)) else None
            if expanded is not None:
                st.words.extend(_ShellWord(text, word.dynamic, word.quoted) for text in expanded)
            else:
                st.words.append(word)
        st.braces = None

    def _end_seg(self, st: _ParseState, scope: _ShellScope, depth: int, sep: str | None) -> None:
        self._end_word(st)
        piped, st.piped = st.piped if st.prev_sep == "|" else None, None
        aliases = scope.get("alias")
        if st.words and aliases and not st.words[0].quoted and st.words[0].text in aliases:
            st.words[:1] = aliases[st.words[0].text]  # an alias defined earlier on the line
        if not st.words and st.group is not None and (
                st.heredoc[1] is not None or any(box is st.heredoc for _d, _f, box in self.heredocs)):
            for inner in self.out[st.group[0]:st.group[1]]:  # (bash) <<< '...': the subshell's commands read it
                if inner.heredoc[1] is None and not any(box is inner.heredoc for _d, _f, box in self.heredocs):
                    inner.heredoc = st.heredoc
        st.group = None
        if st.words:
            raw = self.src[st.start if st.start is not None else self.pos:self.pos].strip()
            seg = _ShellSegment(st.words, raw, depth, scope["dir"], dict(scope["env"]))
            seg.writes = st.writes
            own_stdin = st.heredoc[1] is not None or any(box is st.heredoc for _d, _f, box in self.heredocs)
            seg.heredoc = st.heredoc if own_stdin or piped is None else piped
            self.out.append(seg)
            if sep == "|":
                st.piped = _pipe_text(seg)
            if sep != "|" and st.prev_sep != "|":  # a pipeline's parts run in subshells
                _scope_update(seg, scope)
        st.words = []
        st.writes = []
        st.heredoc = [None, None]
        st.start = None
        st.skip_next = st.herestring = False
        st.prev_sep = sep

    def _skip_heredocs(self) -> None:
        pending, self.heredocs = self.heredocs, []
        for delim, flags, box in pending:
            strip_tabs, literal = bool(flags & 1), bool(flags & 2)
            body: list[str] = []
            while self.pos < self.n:
                end = self.src.find("\n", self.pos)
                end = self.n if end < 0 else end
                line = self.src[self.pos:end]
                self.pos = min(end + 1, self.n)
                if (line.lstrip("\t") if strip_tabs else line) == delim:
                    break
                body.append(line.lstrip("\t") if strip_tabs else line)
            text = "\n".join(body)
            if literal or not any(ch in text for ch in "$`\\"):
                box[:] = [text, text]
                continue
            # an unquoted delimiter lets the shell expand $, ` and \ in the body: its exact text is unknown,
            # and the substitutions in it run
            reader = _ShellParser(text, self.cwd, self.depth, self.env, self.out)
            st = _ParseState()
            reader._dquote(st, {"dir": self.cwd, "env": self.env}, self.depth, closing=None)
            box[:] = [None, "".join(st.cur or [])]

    def _redirect(self, st: _ParseState, scope: _ShellScope, depth: int) -> None:
        src = self.src
        if st.cur is not None and "".join(st.cur).isdigit() and not st.quoted:
            st.cur = None  # "2>": the digits name a file descriptor
        else:
            self._end_word(st)
        if src.startswith(("<(", ">("), self.pos):
            self.pos += 2
            first = len(self.out)
            self._list({"dir": scope["dir"], "env": dict(scope["env"])}, depth + 1, ")")
            inner = [seg for seg in self.out[first:] if seg.depth == depth + 1]
            text = _pipe_text(inner[-1]) if inner else None
            self._add(st, "/dev/fd/63", dynamic=True)
            st.script = text[1] if text is not None else None
            return
        if src.startswith("<<<", self.pos):
            self.pos += 3
            st.skip_next = st.herestring = True
            return
        if src.startswith("<<", self.pos):
            self.pos += 2
            strip_tabs = src.startswith("-", self.pos)
            self.pos += 1 if strip_tabs else 0
            while self.pos < self.n and src[self.pos] in " \t":
                self.pos += 1
            start = self.pos
            while self.pos < self.n and src[self.pos] not in " \t\n;&|<>()":
                self.pos += 1
            word = src[start:self.pos]
            delim = word.replace("'", "").replace('"', "").replace("\\", "")
            self.heredocs.append((delim, strip_tabs | (2 if delim != word else 0), st.heredoc))
            return
        for op in (">>", ">&", ">|", "<&", "<>", ">", "<"):
            if src.startswith(op, self.pos):
                self.pos += len(op)
                st.redirect = op
                break
        st.skip_next = True

    def _dquote(self, st: _ParseState, scope: _ShellScope, depth: int, closing: str | None = '"') -> None:
        """A double-quoted string; with no *closing* quote, a here-document body read the same way."""
        src = self.src
        self.pos += 1 if closing else 0
        self._add(st, "", quoted=True)
        plain_ends = _HOOK_DQUOTE_SPECIAL if closing else _HOOK_HEREDOC_SPECIAL
        while self.pos < self.n:
            c = src[self.pos]
            if c == closing:
                self.pos += 1
                return
            if c == "\\" and src[self.pos + 1:self.pos + 2] in ('"', "\\", "$", "`", "\n"):
                nxt = src[self.pos + 1]
                if nxt != "\n":
                    self._add(st, nxt, quoted=True)
                self.pos += 2
            elif c == "$":
                self._dollar(st, scope, depth, in_dquote=True)
            elif c == "`":
                self._backtick(st, scope, depth)
            else:
                end = self.pos + 1
                while end < self.n and src[end] not in plain_ends:
                    end += 1
                self._add(st, src[self.pos:end], quoted=True)
                self.pos = end

    def _dollar(self, st: _ParseState, scope: _ShellScope, depth: int, in_dquote: bool) -> None:
        src = self.src
        nxt = src[self.pos + 1:self.pos + 2]
        if src.startswith("$((", self.pos):
            self.pos += 1
            start = self.pos
            self._skip_balanced("(", ")")
            self._expansions_in(src[start + 2:self.pos - 2], scope, depth)
            self._add(st, "$(())", dynamic=True)
        elif nxt == "(":
            self.pos += 2
            first = len(self.out)
            self._list({"dir": scope["dir"], "env": dict(scope["env"])}, depth + 1, ")")
            self._substituted(st, self.out[first:])
        elif nxt == "{":
            self.pos += 1
            start = self.pos
            self._skip_balanced("{", "}")
            inner = src[start + 1:self.pos - 1]
            self._expansions_in(inner, scope, depth)
            name = inner[:_varname_end(inner, 0) or 0] if inner[:1] != "!" else ""
            default = inner[len(name):]
            for op in (":-", "-", ":=", "="):
                if name and default.startswith(op) and name not in scope["env"] and \
                        not any(ch in default for ch in "$`\\'\""):
                    self._add(st, default[len(op):], quoted=in_dquote)  # ${X:-push}: unset on the line, the default
                    return
            self._add(st, "${" + name + "}", dynamic=True)
        elif nxt == "'" and not in_dquote:
            self._ansi_c(st)
        elif nxt == '"' and not in_dquote:
            self.pos += 1  # $"..." is a translated string: read it as "..."
        else:
            end = _varname_end(src, self.pos + 1)
            known = scope["env"].get(src[self.pos + 1:end]) if end is not None else None
            value = known.text.partition("=")[2] if known is not None and not known.dynamic and \
                "IFS" not in scope["env"] else None
            if end is not None and value is not None and value[:1] != "(" and not any(c in value for c in " \t\n\x1f"):
                self._add(st, value, quoted=in_dquote)  # t=hard; git reset --$t: a value the line set
                self.pos = end
            elif end is not None:
                self._add(st, "$" + src[self.pos + 1:end], dynamic=True)
                self.pos = end
            else:
                self._add(st, "$")
                self.pos += 1

    def _ansi_c(self, st: _ParseState) -> None:
        src = self.src
        self.pos += 2
        out: list[str] = []
        while self.pos < self.n and src[self.pos] != "'":
            if src[self.pos] == "\\" and self.pos + 1 < self.n:
                kind = src[self.pos + 1]
                digits, base, most = {"x": ("0123456789abcdefABCDEF", 16, 2), "u": ("0123456789abcdefABCDEF", 16, 4),
                                      "U": ("0123456789abcdefABCDEF", 16, 8)}.get(kind, ("01234567", 8, 3))
                start = self.pos + (1 if kind in "01234567" else 2)
                end = start
                while end < self.n and end - start < most and src[end] in digits:
                    end += 1
                if (kind in "xuU" or kind in "01234567") and end > start:
                    out.append(chr(min(int(src[start:end], base), 0x10FFFF)))
                    self.pos = end
                    continue
                out.append(_HOOK_ANSI.get(kind, kind))
                self.pos += 2
            else:
                out.append(src[self.pos])
                self.pos += 1
        self.pos += 1
        self._add(st, "".join(out), quoted=True)

    def _backtick(self, st: _ParseState, scope: _ShellScope, depth: int) -> None:
        src = self.src
        self.pos += 1
        body: list[str] = []
        while self.pos < self.n and src[self.pos] != "`":
            if src[self.pos] == "\\" and src[self.pos + 1:self.pos + 2] in ("`", "\\", "$"):
                body.append(src[self.pos + 1])
                self.pos += 2
            else:
                body.append(src[self.pos])
                self.pos += 1
        self.pos += 1
        first = len(self.out)
        _ShellParser("".join(body), scope["dir"], depth + 1, scope["env"], self.out).parse()
        self._substituted(st, self.out[first:])

    def _substituted(self, st: _ParseState, inner: list[_ShellSegment]) -> None:
        """The word a command substitution leaves, when the line shows it: a here-document's text
        (``"$(cat <<'EOF' ...)"`` is how agents write a commit message) or the program a look-up
        names (``$(which git)``); otherwise a value only the shell knows."""
        words = [w.text for w in inner[0].words] if len(inner) == 1 else []
        printed = _pipe_text(inner[0]) if words and words[0] in ("echo", "printf") else None
        if words in (["true"], [":"], ["false"]):
            self._add(st, "")  # prints nothing: an unquoted word of nothing else is no word at all
        elif words == ["cat"] and inner[0].heredoc[0] is not None:
            self._add(st, inner[0].heredoc[0], quoted=True)
        elif printed is not None and printed[0] is not None:
            self._add(st, printed[0], quoted=True)  # "$(echo git push)": what echo prints is on the line
        elif len(words) >= 2 and (words[0] == "which" or words[:2] in _HOOK_LOOKUPS) and not inner[0].words[-1].dynamic:
            self._add(st, words[-1], quoted=True)
        else:
            self._add(st, "$()", dynamic=True)

    def _skip_balanced(self, open_: str, close: str) -> None:
        level = 0
        while self.pos < self.n:
            c = self.src[self.pos]
            self.pos += 1
            if c == open_:
                level += 1
            elif c == close:
                level -= 1
                if level == 0:
                    return

    def _balanced_literal(self, st: _ParseState) -> None:
        start = self.pos
        self._skip_balanced("(", ")")
        self._add(st, self.src[start:self.pos])


def _brace_expand(pieces: list[tuple[str, bool]]) -> list[str] | None:
    """bash's brace expansion of one word given as (text, quoted) pieces: ``git{,-stash}``, ``--{hard,}``,
    ``{1..3}``; None when nothing in it expands. Quoted braces and ``${`` are left as they are."""
    chars = [(ch, quoted) for text, quoted in pieces for ch in text]
    out = _braces(chars, 0)
    if out is None:
        return None
    return [text for text in out if text][:_HOOK_MAX_BRACES]


_HOOK_MAX_BRACES = 256  # words one brace expansion makes at most, as the reader follows it


def _braces(chars: list[tuple[str, bool]], made: int) -> list[str] | None:
    for i, (ch, quoted) in enumerate(chars):
        if ch != "{" or quoted or (i and chars[i - 1] == ("$", False)):
            continue
        level, commas, end = 0, [], None
        for j in range(i, len(chars)):
            cj, qj = chars[j]
            if qj:
                continue
            if cj == "{":
                level += 1
            elif cj == "}":
                level -= 1
                if level == 0:
                    end = j
                    break
            elif cj == "," and level == 1:
                commas.append(j)
        if end is None:
            return None
        inner = "".join(c for c, _q in chars[i + 1:end])
        if commas:
            cuts = [i] + commas + [end]
            alternatives = [chars[a + 1:b] for a, b in zip(cuts, cuts[1:])]
        elif ".." in inner and all(not q for _c, q in chars[i + 1:end]):
            first, _, last = inner.partition("..")
            last = last.split("..")[0]
            if first.lstrip("-").isdecimal() and last.lstrip("-").isdecimal() and \
                    abs(int(last) - int(first)) < _HOOK_MAX_BRACES:
                step = 1 if int(last) >= int(first) else -1
                alternatives = [[(c, True) for c in str(n)] for n in range(int(first), int(last) + step, step)]
            elif len(first) == 1 and len(last) == 1 and first.isalpha() and last.isalpha():
                step = 1 if last >= first else -1
                alternatives = [[(chr(n), True)] for n in range(ord(first), ord(last) + step, step)]
            else:
                continue
        else:
            continue
        out: list[str] = []
        for alt in alternatives:
            words = _braces(chars[:i] + alt + chars[end + 1:], made + len(out))
            out.extend(words if words is not None else ["".join(c for c, _q in chars[:i] + alt + chars[end + 1:])])
            if made + len(out) > _HOOK_MAX_BRACES:
                return out
        return out
    return None


def _scope_update(seg: _ShellSegment, scope: _ShellScope) -> None:
    """A finished command changes what follows it: ``cd``, ``export``, ``unset``, bare assignments."""
    words = seg.words
    if all(_assigns(w.text) for w in words):
        for w in words:
            scope["env"][w.text.split("=", 1)[0]] = w
        return
    name = words[0].text
    if name in ("cd", "pushd"):
        args = [w for w in words[1:] if not (w.text.startswith("-") and w.text != "-")]
        target = args[0] if args else _ShellWord("~", False, False)
        if target.dynamic or target.text == "-" or scope["dir"] is None and not target.text.startswith(("/", "~")):
            scope["dir"] = None
        else:
            path = os.path.expanduser(target.text)
            scope["dir"] = os.path.normpath(os.path.join(scope["dir"] or "/", path))
    elif name == "popd":
        scope["dir"] = None
    elif name in ("export", "declare", "typeset", "local", "readonly"):
        for w in words[1:]:
            if _assigns(w.text):
                scope["env"][w.text.split("=", 1)[0]] = w
    elif name == "read" and seg.heredoc[0] is not None:  # read -r cmd <<< 'git push'
        names = [w.text for w in words[1:] if not w.text.startswith("-")]
        if names and all(_assigns(n + "=") for n in names):
            values = seg.heredoc[0].split("\n", 1)[0].split(None, len(names) - 1)
            for n, value in zip(names, values + [""] * len(names)):
                scope["env"][n] = _ShellWord(f"{n}={value}", False, True)
    elif name == "printf" and len(words) > 3 and words[1].text == "-v" and "%" not in words[3].text:
        scope["env"][words[2].text] = _ShellWord(f"{words[2].text}={words[3].text}", words[3].dynamic, True)
    elif name == "unset":
        for w in words[1:]:
            scope["env"].pop(w.text, None)
    elif name == "hash" and len(words) == 4 and words[1].text == "-p" and not words[3].dynamic:
        program, called = words[2], words[3]
        if _basename(program.text) == "git" or _basename(program.text).startswith("git-"):
            program = called if _basename(called.text).startswith("git-") else _ShellWord("git", False, False)
        scope.setdefault("alias", {})[called.text] = [program]  # hash -p /usr/bin/git x: x runs git, named x
    elif name == "set" and len(words) > 1 and words[1].text == "--" and not any(w.dynamic for w in words[2:]):
        scope["env"]["@"] = _ShellWord("@=" + "\x1f".join(w.text for w in words[2:]), False, False)
    elif name == "alias":
        for w in words[1:]:
            alias, eq, value = w.text.partition("=")
            if eq and not w.dynamic:
                found = _ShellParser(value, None).parse()
                scope.setdefault("alias", {})[alias] = found[0].words if found else []


def _pipe_text(seg: _ShellSegment) -> list[str | None] | None:
    """What ``echo``/``printf``/``cat <<EOF`` writes into a pipe, when the line shows it (a box:
    a here-document body is read after the line that opens it)."""
    words = _strip(seg)[0]
    if not words:
        return None
    name, args = words[0].text, [w.text for w in words[1:]]
    dynamic = any(w.dynamic for w in words)
    if name == "cat" and not args:
        return seg.heredoc
    if name == "cat" and len(words) == 2 and words[1].script is not None:
        return [None, words[1].script]
    text: str | None = None
    if name == "echo":
        while args and args[0] in ("-n", "-e", "-E", "-ne", "-en"):
            args.pop(0)
        text = " ".join(args)
    elif name == "printf" and args and "%" not in args[0]:
        text = args[0].replace("\\n", "\n")
    elif name == "printf" and len(args) > 1 and args[0] in ("%s\\n", "%s\n", "%s"):
        text = "\n".join(args[1:])
    elif name == "printf" and len(args) > 1 and args[0].count("%") == args[0].count("%s") == len(args) - 1:
        text = args[0].replace("%s", "\x00").replace("\\n", "\n")  # printf 'res%s' et
        for arg in args[1:]:
            text = text.replace("\x00", arg, 1)
    if text is None:
        return None
    return [None if dynamic else text, text]


# --------------------------------------------------------------------------- from segments to commands

_HOOK_RESERVED = frozenset({"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "{", "}", "!",
                          "time", "[[", "]]", "function", "coproc", "esac"})
_HOOK_NOT_A_COMMAND = frozenset({"for", "select", "case", "in"})
_HOOK_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "busybox"})
_HOOK_MAX_NEST = 24   # inner shells and evals the reader follows; past them a git word is held
_HOOK_MAX_DEPTH = 60  # substitutions and subshells nested inside one another, likewise


def _python(name: str) -> bool:
    """``python``, ``python2``, ``python3`` or ``python3.12``, each maybe with ``.exe``; string tests rather than a
    pattern, since agents run python often and compiling one costs more than the hook's decision."""
    rest = name[:-1] if name.endswith("\n") else name  # "$" also matches before a final newline
    if not rest.startswith("python"):
        return False
    rest = rest[6:-4] if rest.endswith(".exe") else rest[6:]
    major, dot, minor = rest[:1], rest[1:2], rest[2:]
    return not rest or major in ("2", "3") and (not dot or dot == "." and minor.isdecimal())


class _LineContext:
    def __init__(self, cwd: str, repo_facts: Callable[[str], HookRepo | None]) -> None:
        self.cwd = cwd
        self._facts = repo_facts
        self._cache: dict[str, HookRepo | None] = {}
        self.cli_ops: CliTable = dict
        self.rail_files: list[str] | None = None  # files a git add earlier on the line named, for a later rail
        self.own = self.facts(cwd)
        self.line = ""
        self.segs: list[_ShellSegment] = []
        self.functions: dict[str, list[_ShellSegment]] = {}
        self.written: dict[str, str | None] = {}  # files the line writes, with their text when it shows it
        self._loose: list[str] | None = None

    def loose(self) -> list[str]:
        """Every literal text the line holds that could reach a program's stdin: here-documents,
        here-strings, what echo and printf print, the values it assigns."""
        if self._loose is None:
            found: list[str] = []
            for seg in self.segs:
                texts = [seg.heredoc[1]] + [w.text.partition("=")[2] for w in seg.words if _assigns(w.text)]
                if seg.words and seg.words[0].text in ("echo", "printf"):
                    shown = _pipe_text(seg)
                    texts.append(shown[1] if shown is not None else None)
                found += [t for t in texts if t and mentions_git_or_madtea(t) and t not in found]
            self._loose = found
        return self._loose

    def facts(self, path: str) -> HookRepo | None:
        if path not in self._cache:
            self._cache[path] = self._facts(path)
        return self._cache[path]


def _basename(text: str) -> str:
    name = text.replace("\\", "/").rsplit("/", 1)[-1]
    return name[:-4] if name.lower().endswith(".exe") else name


def _strip(seg: _ShellSegment) -> tuple[list[_ShellWord], dict[str, _ShellWord], str | None]:
    """The command itself: reserved words, variable assignments and wrappers (env, sudo, xargs …) removed."""
    words = list(seg.words)
    env = dict(seg.env)
    cdir = seg.dir
    while words and not words[0].quoted:
        text = words[0].text
        if text == "function":
            words = words[2:]  # "function f": the body that follows runs when f is called
        elif len(words) > 1 and words[1].text == "()" and not words[1].quoted:
            words = words[2:]  # "f () { ...": likewise
        elif text.endswith("()") and len(text) > 2:
            words = words[1:]  # "f() { ..."
        elif text in _HOOK_RESERVED:
            words.pop(0)
            while text == "time" and words and words[0].text in ("-p", "--"):
                words.pop(0)  # the time keyword's own option
        else:
            break
    if not words or words[0].text in _HOOK_NOT_A_COMMAND:
        return [], env, cdir
    for _ in range(16):
        while words and _assigns(words[0].text):
            word = words.pop(0)
            env[word.text.split("=", 1)[0]] = word
        if not words:
            break
        if any(w.dynamic for w in words):
            words = _known_values(words, env)  # cmd=git; $cmd push / set -- push; git "$@" / a=(x y); "${a[@]}"
            if not words:
                break
        first = words[0]
        if first.text[:1] == "{" and first.text[-1:] == "}" and "," in first.text and not first.quoted:
            words = [_ShellWord(t, False, False) for t in first.text[1:-1].split(",")] + words[1:]  # {git,push}
        name = _basename(words[0].text)
        rest = words[1:]
        if name == "command" and rest and rest[0].text in ("-v", "-V"):
            return [], env, cdir  # a look-up, not a run
        if name == "env":
            words, cdir = _env_wrapper(rest, cdir)
        elif name in _HOOK_LAUNCHERS:
            argv0 = _exec_argv0(rest) if name == "exec" else None
            unwrapped = _unwrap(name, rest)
            if unwrapped is None:
                break
            if name == "xargs":
                unwrapped = _xargs_input(rest, unwrapped, seg.heredoc[0])
            words = unwrapped
            if argv0 is not None and _basename(argv0.text).startswith("git-") and _basename(words[0].text) == "git":
                words = [argv0] + words[1:]  # exec -a git-branch git -D x: git reads its command from argv[0]
        else:
            break
    return words, env, cdir


def _exec_argv0(rest: list[_ShellWord]) -> _ShellWord | None:
    """The name ``exec -a NAME`` runs its command under."""
    for i, word in enumerate(rest):
        if not word.text.startswith("-") or word.text == "--":
            return None
        if "a" in word.text[1:] and i + 1 < len(rest):
            return rest[i + 1]
    return None


def _xargs_input(options: list[_ShellWord], command: list[_ShellWord], stdin: str | None) -> list[_ShellWord]:
    """xargs's command with the input the line shows put where xargs puts it (``-I R`` replaces R
    in each line's command; otherwise the words are appended)."""
    replace = None
    for i, word in enumerate(options):
        if word.text == "-I" and i + 1 < len(options):
            replace = options[i + 1].text
        elif word.text.startswith("-I") and len(word.text) > 2:
            replace = word.text[2:]
        elif word.text in ("-a", "--arg-file") and i + 1 < len(options) and options[i + 1].script is not None:
            stdin = options[i + 1].script
        elif word.text.startswith("--arg-file=") and word.script is not None:
            stdin = word.script
        elif not word.text.startswith("-"):
            break
    command = command[:-1]  # the placeholder _unwrap gives xargs's input
    if stdin is None:
        return command + [_ShellWord("<input>", True, False)]
    if replace is None:
        return command + [_ShellWord(t, False, True) for t in stdin.split()]
    lines = [[_ShellWord(w.text.replace(replace, line), False, True) for w in command]
             for line in stdin.split("\n") if line.strip()]
    if len(lines) == 1:
        return lines[0]
    script = "\n".join(" ".join(shell_quote(w.text) for w in cmd) for cmd in lines)
    return [_ShellWord("sh", False, False), _ShellWord("-c", False, False), _ShellWord(script, False, True)]


def _known_values(words: list[_ShellWord], env: dict[str, _ShellWord]) -> list[_ShellWord]:
    """Words that are a variable the line set (or "$@" after ``set --``), replaced by its value as bash
    splits it: an array's elements, an unquoted value split at IFS."""
    ifs_word = env.get("IFS")
    ifs = ifs_word.text.partition("=")[2] if ifs_word is not None and not ifs_word.dynamic else " \t\n"
    out: list[_ShellWord] = []
    for w in words:
        text = w.text
        name = text[2:-1] if text.startswith("${") and text.endswith("}") else text[1:] if text[:1] == "$" else ""
        name = "@" if name in ("@", "*") else name
        known = env.get("@" if name.isdecimal() and name != "0" else name) if w.dynamic and name else None
        if known is None or known.dynamic:
            out.append(w)
            continue
        value = known.text.partition("=")[2]
        if name == "@":
            out.extend(_ShellWord(t, False, True) for t in value.split("\x1f") if value)
        elif name.isdecimal():
            params = value.split("\x1f") if value else []
            out.extend(_ShellWord(t, False, True) for t in params[int(name) - 1:int(name)])
        elif value.startswith("(") and value.endswith(")"):
            found = _ShellParser(value[1:-1], None).parse()
            out.extend(_ShellWord(v.text, v.dynamic, True) for v in (found[0].words if found else []))
        elif w.quoted:
            out.append(_ShellWord(value, False, True))
        else:
            piece = ""
            for ch in value + ifs[:1]:
                if ch in ifs:
                    if piece:
                        out.append(_ShellWord(piece, False, False))
                    piece = ""
                else:
                    piece += ch
    return out


# Commands that run another command given as their arguments, by their real syntax: the short
# options and the long options that take a value, how many arguments come before the command,
# and the options whose value is a command line for a shell. A launcher that first takes a verb
# (``uv run``, ``poetry run``) names it after a colon.
_HOOK_LAUNCHERS: dict[str, tuple[str, frozenset[str], int, frozenset[str]]] = {
    name: (short, frozenset(long.split()), count, frozenset(script.split()))
    for name, short, long, count, script in (
        ("command", "", "", 0, ""), ("builtin", "", "", 0, ""), ("exec", "a", "", 0, ""), ("nohup", "", "", 0, ""),
        ("setsid", "", "", 0, ""), ("chronic", "", "", 0, ""), ("unbuffer", "", "", 0, ""), ("busybox", "", "", 0, ""),
        ("caffeinate", "tw", "", 0, ""), ("time", "fo", "--format --output", 0, ""), ("doas", "uC", "", 0, ""),
        ("stdbuf", "ioe", "--input --output --error", 0, ""), ("nice", "n", "--adjustment", 0, ""),
        ("ionice", "cnp", "--class --classdata --pid", 0, ""),
        ("chrt", "TPD", "--sched-runtime --sched-period --sched-deadline", 1, ""), ("taskset", "", "", 1, ""),
        ("timeout", "sk", "--signal --kill-after", 1, ""), ("watch", "n", "--interval", 0, ""),
        ("sudo", "ugCDhprtTU", ("--user --group --close-from --chdir --host --prompt --role --type "
                                "--command-timeout --other-user"), 0, ""),
        ("su", "sgGw", "--shell --group --supp-group --whitelist-environment", 9, "-c --command --session-command"),
        ("runuser", "usgGw", "--user --shell --group --supp-group --whitelist-environment", 9,
         "-c --command --session-command"),
        ("flock", "wE", "--timeout --wait --conflict-exit-code", 1, "-c --command"),
        ("strace", "abeEIoOpPsSuUX", "--output --expr --env --attach --string-limit --user --trace --signal", 0, ""),
        ("ltrace", "aAbDeEFnopSu", "--output", 0, ""),
        ("script", "BEIOTtm", "--log-io --log-in --log-out --log-timing --echo", 9, "-c --command"),
        ("xargs", "aEILnPsd", "--arg-file --delimiter --max-args --max-procs --max-chars --process-slot-var", 0, ""),
        ("parallel", "jSI", "--jobs --sshlogin --colsep --joblog", 0, ""),
        ("uv:run", "p", ("--with --with-requirements --python --from --directory --project --package --extra "
                         "--group --env-file --index --default-index"), 0, ""),
        ("uv:tool", "p", "--with --with-requirements --python --from --index", 0, ""),
        ("uvx", "p", "--with --with-requirements --python --from --index", 0, ""),
        ("poetry:run", "", "--directory", 0, ""), ("pipenv:run", "", "", 0, ""), ("pdm:run", "", "", 0, ""),
        ("hatch:run", "", "", 0, ""), ("rye:run", "", "", 0, ""), ("pixi:run", "e", "--environment", 0, ""),
        ("pipx:run", "", "--spec --python --pip-args", 0, ""), ("conda:run", "np", "--name --prefix", 0, ""),
        ("direnv:exec", "", "", 1, ""), ("nix-shell", "pIAE", "--packages --attr --arg --argstr", 9,
                                         "--run --command"),
        ("nix:develop", "", "", 9, "-c --command"), ("fd", "etdE", "--extension --type --max-depth --exclude", 9,
                                                    "-x --exec -X --exec-batch"),
    )
}
for _name in ("uv", "poetry", "pipenv", "pdm", "hatch", "rye", "pixi", "pipx", "conda", "direnv", "nix"):
    _HOOK_LAUNCHERS[_name] = ("", frozenset(), 0, frozenset())
_HOOK_LAUNCHERS["fdfind"] = _HOOK_LAUNCHERS["fd"]
for _name in ("mamba", "micromamba"):
    _HOOK_LAUNCHERS[_name], _HOOK_LAUNCHERS[_name + ":run"] = _HOOK_LAUNCHERS["conda"], _HOOK_LAUNCHERS["conda:run"]
_HOOK_VERB_LAUNCHERS = frozenset(n.partition(":")[0] for n in _HOOK_LAUNCHERS if ":" in n)  # uv run, nix develop


def _unwrap(name: str, rest: list[_ShellWord]) -> list[_ShellWord] | None:
    """The command a wrapper runs, as words (a command line given as one string becomes ``sh -c``
    with it); None when it runs none the line shows."""
    if name in _HOOK_VERB_LAUNCHERS:
        verb = rest[0].text if rest else ""
        if name == "uv" and verb == "tool":
            rest, verb = rest[1:], "tool"  # uv tool run
        if f"{name}:{verb}" not in _HOOK_LAUNCHERS or not rest:
            return None
        name, rest = f"{name}:{verb}", rest[1:]
    short, long, count, script = _HOOK_LAUNCHERS[name]
    i = positional = 0
    dashdash = False
    while i < len(rest):
        word = rest[i]
        text = word.text
        if text == "--":
            i, dashdash = i + 1, True
            break
        option, eq, value = text.partition("=")
        letters = option[1:] if option[:1] == "-" and option[1:2] != "-" else ""
        at = next((n for n, ch in enumerate(letters) if "-" + ch in script), None)
        if script and (option in script or at is not None):  # a command line for a shell, given to an option
            stuck = value if eq else (letters[at + 1:] if at is not None else "")
            if name in ("fd", "fdfind") and not stuck:
                return rest[i + 1:]  # fd -x runs the words that follow
            body = stuck or (rest[i + 1].text if i + 1 < len(rest) else "")
            return [_ShellWord("sh", False, False), _ShellWord("-c", False, False), _ShellWord(body, False, True)]
        if not text.startswith("-") or text == "-" or word.dynamic:
            if count == 9 or positional < count:  # su's user, script's file, flock's lock, timeout's duration
                positional += 1
                i += 1
                continue
            break
        if text.startswith("--"):
            i += 2 if text in long else 1
        elif name == "nice" and text[1:].isdecimal():
            i += 1
        else:
            takes = next((n for n, ch in enumerate(letters) if ch in short), None)
            i += 2 if takes is not None and takes == len(letters) - 1 else 1
    rest = rest[i:]
    if count == 9 and not (name == "runuser" and dashdash):
        return None  # su, script, nix-shell without a command string: nothing the line shows runs
    if name == "parallel":
        cut = next((n for n, w in enumerate(rest) if w.text in (":::", "::::")), len(rest))
        command, items = rest[:cut], rest[cut + 1:]
        if not command:  # the items are the commands
            return [_ShellWord("sh", False, False), _ShellWord("-c", False, False),
                    _ShellWord("\n".join(w.text for w in items), False, True)]
        if len(command) == 1 and " " in command[0].text:
            command = [_ShellWord("sh", False, False), _ShellWord("-c", False, False), command[0]]
        if not items or any(w.dynamic for w in items):
            return command + [_ShellWord("<input>", True, False)]
        runs = []  # parallel runs its command once per item, the item put at {} or after it, through a shell
        for item in items:
            placed = [w.text.replace("{}", item.text) for w in command]
            runs.append(" ".join(placed if placed != [w.text for w in command] else placed + [item.text]))
        return [_ShellWord("sh", False, False), _ShellWord("-c", False, False),
                _ShellWord("\n".join(runs), False, True)]
    if name == "xargs":
        rest = rest + [_ShellWord("<input>", True, False)]
    if name == "watch" and rest:  # watch joins its words into a command line for sh -c
        return [_ShellWord("sh", False, False), _ShellWord("-c", False, False),
                _ShellWord(" ".join(w.text for w in rest), False, True)]
    return rest or None


def _env_wrapper(words: list[_ShellWord], cdir: str | None) -> tuple[list[_ShellWord], str | None]:
    i = 0
    while i < len(words):
        text = words[i].text
        if text in ("-C", "--chdir") and i + 1 < len(words):
            target = words[i + 1]
            cdir = None if target.dynamic or cdir is None else os.path.normpath(
                os.path.join(cdir, os.path.expanduser(target.text)))
            i += 2
        elif text in ("-u", "--unset"):
            i += 2
        elif text.startswith("--split-string"):
            # env -S 'git add .' splits its one argument into the command line
            joined = text == "--split-string"
            value = words[i + 1] if joined and i + 1 < len(words) else words[i]
            body = value.text if joined else value.text.split("=", 1)[-1]
            return _env_split(value, body) + words[i + (2 if joined else 1):], cdir
        elif text.startswith("-") and not text.startswith("--") and text != "-":
            letters = text[1:]
            at = next((n for n, ch in enumerate(letters) if ch in "uCSP"), None)  # the options that take a value
            if at is None:
                i += 1
                continue
            stuck = letters[at + 1:]
            value = _ShellWord(stuck, words[i].dynamic, False) if stuck else (
                words[i + 1] if i + 1 < len(words) else _ShellWord("", False, False))
            if letters[at] == "S":
                return _env_split(value, value.text) + words[i + (1 if stuck else 2):], cdir
            if letters[at] == "C":
                cdir = None if value.dynamic or cdir is None else os.path.normpath(
                    os.path.join(cdir, os.path.expanduser(value.text)))
            i += 1 if stuck else 2
        elif text.startswith("-") and text != "-":
            i += 1
        else:
            break
    return words[i:], cdir


def _env_split(value: _ShellWord, body: str) -> list[_ShellWord]:
    """The words ``env -S`` splits its string into, quotes read as it reads them."""
    found = _ShellParser(body, None).parse() if not value.dynamic else []
    if found and len(found) == 1:
        return found[0].words
    return [_ShellWord(t, value.dynamic, False) for t in body.split()]


def _label(seg: _ShellSegment) -> str:
    """How the none-of-it-ran sentence names a command: "git add", "madtea issue", "npm"."""
    words, _env, _dir = _strip(seg)
    if not words:
        return ""
    name = _basename(words[0].text)
    if name.startswith("git-") and len(name) > 4:
        return "git " + name[4:]
    if name == "git":
        sub = _git_split(words[1:])[0]
        return f"git {sub.text}" if sub is not None else "git"
    cli = _madtea_args(words)
    if cli is not None:
        nouns = [w.text for w in cli if not w.text.startswith("-")]
        return "madtea " + nouns[0] if nouns else "madtea"
    return name


def _verdicts(seg: _ShellSegment, ctx: _LineContext, nest: int) -> list[tuple[str, str]]:
    if nest > _HOOK_MAX_NEST:
        return _unreadable([seg.raw] + [w.text for w in seg.words])
    found = _side_effects(seg) + _wrote(seg, ctx)
    words, env, cdir = _strip(seg)
    if not words:
        return found
    name = _basename(words[0].text)
    if words[0].dynamic and words[0].text[:1] == "$":  # while read c; do $c; done <<< 'git push'
        found += [v for text in ctx.loose() for v in _script_verdicts(text, cdir, seg.depth + 1, env, ctx, nest)
                  if v[0] == "deny"]
    if not words[0].quoted and words[0].text in ctx.functions and len(words) > 1:
        return found + _function_call(ctx.functions[words[0].text], words[1:], ctx, nest)
    inner = _inner_script(name, words, seg.heredoc[1], ctx.written)
    if inner is _READS_STDIN:  # a shell reading a stdin the reader cannot pin: every text the line holds may be it
        return found + [v for text in ctx.loose() for v in _script_verdicts(text, cdir, seg.depth + 1, env, ctx, nest)
                        if v[0] == "deny"]
    if inner is not None:
        if name == "eval":
            while inner.startswith("eval ") and not any(ch in inner for ch in "'\"\\$`(){};&|<>"):
                inner = inner[5:].lstrip()  # eval eval eval ...: each one only joins its words again
        return found + _script_verdicts(inner, cdir, seg.depth + 1, env, ctx, nest)
    if words[0].text in ctx.written or words[0].text.removeprefix("./") in ctx.written:
        script = ctx.written.get(words[0].text, ctx.written.get(words[0].text.removeprefix("./")))
        return found + _ran_script(script, cdir, seg.depth + 1, env, ctx, nest)
    code = _interpreter_code(name, words, seg.heredoc[1], ctx)
    if code is not None:
        data = [w.text for w in words[1:] if mentions_git_or_madtea(w.text)]  # the program's own arguments
        return found + _code_verdicts(code[0], code[1], cdir, seg.depth + 1, env, ctx, nest, data)
    if name == "find":
        return found + [v for s in _find_exec(words, seg, env, cdir) for v in _verdicts(s, ctx, nest + 1)]
    if name.startswith("git-") and len(name) > 4:  # git's own programs, such as .../git-core/git-commit
        words = [_ShellWord("git", False, False), _ShellWord(name[4:], False, False)] + words[1:]
        name = "git"
    if name == "git":
        git = _GitCall(words[1:], env, cdir, ctx, seg.heredoc[0])
        config = _git_config(git, env)
        seen: set[str] = set()
        while git.sub is not None and git.sub not in seen and not _git_builtin(git.sub):
            seen.add(git.sub)  # git -c alias.p=push p: an alias the line defines, and one it names in turn
            alias = next((v for k, v in reversed(config) if k == f"alias.{git.sub.lower()}"), None)
            if alias is None:
                break
            if alias.startswith("!"):
                script = alias[1:] + "".join(" " + shell_quote(w.text) for w in git.args)
                return found + _script_verdicts(script, cdir, seg.depth + 1, env, ctx, nest)
            parsed = _ShellParser(alias, None).parse()
            expanded = (parsed[0].words if parsed else []) + git.args
            git = _GitCall([w for w in words[1:len(words) - len(git.args) - 1]] + expanded, env, cdir, ctx,
                           seg.heredoc[0])
        runs = _git_runs(git, config, env)
        if runs:  # what git runs gets git's environment, less what made it run it
            inner_env = {k: v for k, v in env.items() if k not in _HOOK_GIT_RUNS_ENV and not k.startswith("GIT_CONFIG")}
            found += [v for text in runs for v in _script_verdicts(text, cdir, seg.depth + 1, inner_env, ctx, nest)
                      if v[0] == "deny"]
        if git.sub == "submodule" and git.args[:1] and git.args[0].text == "foreach":
            script = " ".join(w.text for w in git.args[1:] if w.text not in ("--recursive", "-q", "--quiet"))
            return found + _script_verdicts(script, None, seg.depth + 1, env, ctx, nest)
        return found + [git.credential_leak_in(config) or git.verdict()]
    cli = _madtea_args(words)
    if cli is not None:
        return found + [_madtea(cli, ctx.cli_ops)]
    if name in ("gh", "tea"):
        return found + [_forge_cli(name, [w.text for w in words[1:]])]
    if name == "rm":
        return found + [_rm(words[1:])]
    if name in _HOOK_DATA or name in _HOOK_RESERVED:
        return found
    return found + _arguments(words, seg, env, cdir, ctx, nest)


def _script_verdicts(script: str, cdir: str | None, depth: int, env: dict[str, _ShellWord], ctx: _LineContext,
                          nest: int) -> list[tuple[str, str]]:
    return [v for s in _ShellParser(script, cdir, depth, env).parse() for v in _verdicts(s, ctx, nest + 1)]


def _ran_script(script: str | None, cdir: str | None, depth: int, env: dict[str, _ShellWord], ctx: _LineContext,
                nest: int) -> list[tuple[str, str]]:
    """A script the line itself wrote, now run: read as shell; held when its text is not on the line."""
    if script is None:
        return _unreadable([ctx.line], "it runs a script it writes with text only the shell knows")
    return _script_verdicts(script, cdir, depth, env, ctx, nest)


def _wrote(seg: _ShellSegment, ctx: _LineContext) -> list[tuple[str, str]]:
    """Remember the files this command writes, with their text when the line shows it (for a later run)."""
    words = seg.words
    targets = list(seg.writes)
    tee = bool(words) and _basename(words[0].text) == "tee"
    if tee:
        targets += [w.text for w in words[1:] if not w.text.startswith("-")]
    if not targets:
        return []
    shown = seg.heredoc if tee else _pipe_text(seg)
    text = shown[0] if shown is not None else None
    for target in targets:
        key = target.removeprefix("./")
        if ">>" in seg.raw and key in ctx.written:
            before = ctx.written[key]
            ctx.written[key] = None if before is None or text is None else before + "\n" + text
        else:
            ctx.written[key] = text
    return []


def _function_call(body: list[_ShellSegment], args: list[_ShellWord], ctx: _LineContext,
                   nest: int) -> list[tuple[str, str]]:
    """A function the line defined, called with arguments: its body read with them in "$@", "$1" ..."""
    found: list[tuple[str, str]] = []
    for seg in body:
        words: list[_ShellWord] = []
        for w in seg.words:
            if w.dynamic and w.text in ("$@", "$*"):
                words.extend(args)
            elif w.dynamic and len(w.text) == 2 and w.text[0] == "$" and w.text[1] in "123456789":
                n = int(w.text[1])
                words.extend(args[n - 1:n])
            else:
                words.append(w)
        if words != seg.words:
            called = _ShellSegment(words, seg.raw, seg.depth + 1, seg.dir, seg.env)
            called.heredoc = seg.heredoc
            found += _verdicts(called, ctx, nest + 1)
    return found


def _functions(segs: list[_ShellSegment]) -> dict[str, list[_ShellSegment]]:
    """The functions a line defines, each with the commands of its body (``f() { ...; }``, ``function f``)."""
    found: dict[str, list[_ShellSegment]] = {}
    for i, seg in enumerate(segs):
        words = seg.words
        if not words or words[0].quoted:
            continue
        first = words[0].text
        if first.endswith("()") and len(first) > 2:
            name, rest = first[:-2], words[1:]
        elif len(words) > 1 and words[1].text == "()":
            name, rest = first, words[2:]
        elif first == "function" and len(words) > 1:
            name, rest = words[1].text.removesuffix("()"), words[2:]
            rest = rest[1:] if rest and rest[0].text == "()" else rest
        else:
            continue
        if not rest or rest[0].text != "{":
            continue
        body = [_ShellSegment(rest[1:], seg.raw, seg.depth, seg.dir, seg.env)] if rest[1:] else []
        level = 1
        for later in segs[i + 1:]:
            if later.depth != seg.depth:
                continue
            opening = sum(1 for w in later.words if w.text == "{" and not w.quoted)
            closing = sum(1 for w in later.words if w.text == "}" and not w.quoted)
            level += opening - closing
            if level <= 0:
                break
            body.append(later)
        found[name] = body
    return found


# The markers and building blocks of code handed to another language's interpreter.
_READS_STDIN = "\0stdin"  # _inner_script: a shell reads its commands from a stdin the line does not show
# a call that runs a command, in the languages agents reach for (python, perl, ruby, node, php, awk, tcl, lua)
_HOOK_EXEC_CALL = (r"\b(?:system|exec\w*|popen\w*|spawn\w*|subprocess|Popen|call|check_output|check_call|run|"
                   r"getoutput|getstatusoutput|shell_exec|passthru|proc_open|execSync|execFile\w*|pty|Open3|getline|"
                   r"qx)\b|%x|`|\|\s*[\"']")
_HOOK_CODE_STRING = (r"""'(?:[^'\\\n]|\\.)*'|"(?:[^"\\]|\\.)*"|`[^`]*`|"""
                     r"""\b(?:qx|%x)\s*(?:\([^)]*\)|\{[^}]*\}|\[[^\]]*\])""")
_HOOK_CODE_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", "'": "'", '"': '"', "`": "`", "$": "$"}


def _code_strings(code: str) -> list[tuple[int, int, str]]:
    """The string literals in *code*, each (start, end, text) with its escapes undone."""
    import re
    found = []
    for m in re.finditer(_HOOK_CODE_STRING, code):
        raw = m.group(0)
        body = raw[raw.index(raw.lstrip("qx%").lstrip()[0]) + 1:-1] if raw[0] in "q%" else raw[1:-1]
        out, i = [], 0
        while i < len(body):
            if body[i] == "\\" and i + 1 < len(body):
                out.append(_HOOK_CODE_ESCAPES.get(body[i + 1], "\\" + body[i + 1]))
                i += 2
            else:
                out.append(body[i])
                i += 1
        found.append((m.start(), m.end(), "".join(out)))
    return found


def _code_verdicts(lang: str, codes: list[str | None], cdir: str | None, depth: int, env: dict[str, _ShellWord],
                   ctx: _LineContext, nest: int, data: Sequence[str] = ()) -> list[tuple[str, str]]:
    """What a program handed to an interpreter runs: the strings it hands a shell, read as shell.

    A string (or a list of strings, such as ``["git", "push"]``) in code that calls something that runs
    a command is read as a command line; a git word in a string the code builds from pieces at run time
    (``"git " + sub``, ``f"git {sub}"``) is held, since the reader cannot tell what runs."""
    found: list[tuple[str, str]] = []
    if any(code is None for code in codes):
        given: list[str | None] = [c for c in codes if c is not None]
        codes = given + list(ctx.loose())  # code on a stdin the line does not pin
    for code in codes:
        assert code is not None
        if not mentions_git_or_madtea(code):
            if _runs_its_input(lang, code):  # awk '{system($0)}' <<< 'git push': the command comes as data
                found += [v for text in list(data) + ctx.loose()
                          for v in _script_verdicts(text, cdir, depth, env, ctx, nest) if v[0] == "deny"]
            continue
        texts = _shell_texts(lang, code)
        if texts is None:
            continue  # prints or matches text, runs nothing
        for text, _pieces in list(texts):  # code in a string the code runs as code: exec('os.system("...")')
            quoted = any(q in text for q in "'\"`")
            if lang in ("code", "python") and text != code and quoted and mentions_git_or_madtea(text):
                texts += _shell_texts(lang, text) or []
        unsure = False
        for text, pieces in texts:
            if not mentions_git_or_madtea(text):
                continue
            verdicts = _script_verdicts(text, cdir, depth, env, ctx, nest)
            found += [v for v in verdicts if v[0] == "deny"]
            unsure = unsure or pieces is None or (pieces is True and _git_unnamed(text))
        if unsure and not found:
            found += _unreadable([code], "it hands a program a git command that the program builds at run time")
    return found


def _runs_its_input(lang: str, code: str) -> bool:
    """Code with no git word that runs a command it is given (its arguments, its input)."""
    if "git" in code or not any(ch in code for ch in "s|`ex"):
        return False
    if lang == "sed":
        return any(pieces is None for _text, pieces in _sed_commands(code))
    import re
    return lang in ("code", "python") and bool(re.search(_HOOK_EXEC_CALL, code))


def _git_unnamed(text: str) -> bool:
    """A command line running git whose subcommand is not written out (``git``, ``git $x``, ``git {sub}``)."""
    for seg in _ShellParser(text, None).parse():
        words = _strip(seg)[0]
        if words and _basename(words[0].text) == "git":
            sub = _git_split(words[1:])[0]
            if sub is None or sub.dynamic or any(ch in sub.text for ch in "{}#%$"):
                return True
    return False


def _shell_texts(lang: str, code: str) -> list[tuple[str, bool | None]] | None:
    """The command lines *code* hands a shell, or None when the code calls nothing that runs a command.
    Each comes with None when it is built from pieces at run time, True when it is one string of a list
    (its list is read too), False when it is whole."""
    import re
    if lang == "sed":
        return _sed_commands(code)
    if lang == "vim":
        cmd = code.lstrip(": \t")
        for lead in ("silent!", "silent", "sil!", "sil", "exe", "execute"):
            cmd = cmd[len(lead):].lstrip() if cmd.startswith(lead + " ") else cmd
        bang = re.match(r"[0-9,.$%']*\s*(?:r|read|w|write)?\s*!(.*)", cmd, re.S)
        if bang:
            return [(bang.group(1), False)]
    if lang == "make":
        names = dict(re.findall(r"(?m)^([A-Za-z_][A-Za-z0-9_]*)\s*[:?+]?=\s*(.*)$", code))
        for name, value in names.items():  # GIT = git ... $(GIT) push
            code = code.replace(f"$({name})", value).replace("${" + name + "}", value)
        recipes = [line.lstrip("\t").lstrip("@-+ ") for line in code.split("\n") if line.startswith("\t")]
        return [(text, False) for text in recipes + re.findall(r"\$\(shell\s+([^)]*)\)", code)]
    if lang == "tcl":
        return [(text, False) for text in re.findall(r"\b(?:exec|spawn)\s+([^\]\n;]+)", code)] or None
    if not re.search(_HOOK_EXEC_CALL, code):
        return None
    strings = _code_strings(code)
    texts: list[tuple[str, bool | None]] = []
    group: list[int] = []
    end = None
    for start, stop, text in strings:
        if end is not None and code[end:start].strip(" \t\n,[]()") == "":
            group.append(len(texts))  # a list of strings: one argv, run as a command line
        else:
            _joined(texts, group)
            group = [len(texts)]
        before = code[:start].rstrip()[-1:]
        after = code[stop:].lstrip()[:1]
        prefix = code[start - 1:start] if start else ""
        method = code[stop:stop + 1] == "." and code[stop + 1:stop + 2].isalpha()  # "git push".split()
        built = before in ("+", ".") or after in ("+", "%") or (after == "." and not method) or \
            prefix in ("f", "F") or "#{" in text or code[stop:].startswith((".format", ".join"))
        texts.append((text, None if built else True))
        end = stop
    _joined(texts, group)
    return texts


def _joined(texts: list[tuple[str, bool | None]], group: list[int]) -> None:
    """Add the command line a list of strings makes, and mark its strings as read within it."""
    if len(group) < 2:
        return
    argv = [texts[n][0] for n in group]
    if len(argv) > 2 and (argv[0] == argv[1] or _basename(argv[0]) == "git" and (
            _basename(argv[1]) == "git" or argv[1].startswith("git-"))):
        argv = argv[1:]  # execvp("git", ["git", ...]): the program, then its argv (argv[0] names git's command)
    for n in group:
        texts[n] = (texts[n][0], None if texts[n][1] is None else False)
    texts.append((" ".join(shell_quote(a) for a in argv), True))


def _sed_commands(script: str) -> list[tuple[str, bool | None]]:
    """The shell commands a sed script runs: the ``e command`` command and the ``e`` flag of ``s``."""
    import re
    texts: list[tuple[str, bool | None]] = []
    for part in re.split(r"[;\n]", script):
        cmd = re.sub(r"^\s*(?:\d+|\$|/(?:[^/\\]|\\.)*/)?(?:\s*,\s*(?:\d+|\$|/(?:[^/\\]|\\.)*/))?\s*!?\s*", "", part)
        if cmd.startswith("e"):
            texts.append((cmd[1:].strip() or script, None if not cmd[1:].strip() else False))
        elif cmd.startswith("s") and len(cmd) > 1:
            pieces = re.split(r"(?<!\\)" + re.escape(cmd[1]), cmd[2:])
            if len(pieces) >= 3 and "e" in pieces[2]:
                texts.append((pieces[1], None if "&" in pieces[1] or "\\" in pieces[1] else False))
    return texts


_HOOK_PERL_LIKE = frozenset({"perl", "ruby", "node", "nodejs", "bun", "deno", "php", "lua", "luajit", "Rscript",
                             "osascript", "julia"})
_HOOK_AWKS = frozenset({"awk", "gawk", "mawk", "nawk"})
_HOOK_VIMS = frozenset({"vim", "vi", "nvim", "ex", "view", "gvim", "vimdiff", "rvim"})
_HOOK_TCL = frozenset({"tclsh", "wish", "expect"})


def _interpreter_code(name: str, words: list[_ShellWord], stdin: str | None,
                      ctx: _LineContext) -> tuple[str, list[str | None]] | None:
    """The language and the code an interpreter the line runs is handed: from its options (``-c``, ``-e``,
    ``--eval``, a sed or awk program, ``vim -c``, a makefile), from a script the line wrote, or from its
    stdin (None when the line does not pin it); None when it is no interpreter, or runs a file."""
    args = words[1:]
    if _python(name):
        lang, flags, valued = "python", "c", "WXQ"
    elif name in _HOOK_PERL_LIKE:
        lang, flags, valued = "code", "erp" if name in ("php", "node", "nodejs", "bun") else "eE", "IMxi"
    elif name in _HOOK_AWKS:
        return _awk_code(args, ctx)
    elif name in ("sed", "gsed"):
        return _sed_code(args, ctx)
    elif name in _HOOK_VIMS:
        return _vim_code(name, args, stdin, ctx)
    elif name in ("make", "gmake"):
        return _make_code(args, stdin, ctx)
    elif name in _HOOK_TCL:
        lang, flags, valued = "tcl", "c" if name == "expect" else "", ""
    else:
        return None
    codes: list[str | None] = []
    i = 0
    while i < len(args):
        text = args[i].text
        if text in ("--eval", "--print", "eval") and i + 1 < len(args) and lang == "code":
            codes.append(args[i + 1].text)
            i += 2
            continue
        if text.startswith(("--eval=", "--print=")) and lang == "code":
            codes.append(text.partition("=")[2])
            i += 1
            continue
        if text == "-" or text == "--":
            return (lang, codes or [stdin]) if text == "-" else (lang, codes or [])
        if text.startswith("-") and not text.startswith("--"):
            letters = text[1:]
            at = next((n for n, ch in enumerate(letters) if ch in flags), None) if flags else None
            if at is not None:
                stuck = letters[at + 1:]
                codes.append(stuck if stuck else (args[i + 1].text if i + 1 < len(args) else ""))
                i += 1 if stuck else 2
                if lang == "python" or name == "php":
                    return lang, codes  # python -c ends its options; what follows is the program's
                continue
            if lang == "python" and letters[:1] == "m":
                return None  # a module by name: out of reach
            i += 2 if letters[-1:] in valued and len(letters) == 1 else 1
            continue
        if text.startswith("--"):
            i += 1
            continue
        if codes:
            return lang, codes
        key = text.removeprefix("./")
        return (lang, [ctx.written[key]]) if key in ctx.written else None  # a file on disk is out of reach
    return lang, codes or [stdin]


def _awk_code(args: list[_ShellWord], ctx: _LineContext) -> tuple[str, list[str | None]] | None:
    i = 0
    codes: list[str | None] = []
    while i < len(args):
        text = args[i].text
        if text in ("-f", "--file") and i + 1 < len(args):
            name = args[i + 1].text.removeprefix("./")
            codes.append(ctx.written.get(name))
            i += 2
        elif text in ("-e", "--source") and i + 1 < len(args):
            codes.append(args[i + 1].text)
            i += 2
        elif text in ("-F", "-v", "--field-separator", "--assign") and i + 1 < len(args):
            i += 2
        elif text.startswith("-") and text != "-":
            i += 1
        else:
            return "code", codes or [text]
    return ("code", codes) if codes else None


def _sed_code(args: list[_ShellWord], ctx: _LineContext) -> tuple[str, list[str | None]] | None:
    codes: list[str | None] = []
    first: str | None = None
    i = 0
    while i < len(args):
        text = args[i].text
        if text in ("-e", "--expression") and i + 1 < len(args):
            codes.append(args[i + 1].text)
            i += 2
        elif text.startswith("--expression="):
            codes.append(text.split("=", 1)[1])
            i += 1
        elif text in ("-f", "--file") and i + 1 < len(args):
            codes.append(ctx.written.get(args[i + 1].text.removeprefix("./")))
            i += 2
        elif text in ("-l", "--line-length") and i + 1 < len(args):
            i += 2
        elif text.startswith("-") and text != "-":
            i += 1
        else:
            first = text if first is None else first
            i += 1
    return "sed", codes or ([first] if first is not None else [])


def _vim_code(name: str, args: list[_ShellWord], stdin: str | None,
              ctx: _LineContext) -> tuple[str, list[str | None]] | None:
    codes: list[str | None] = []
    ex = name == "ex"
    i = 0
    while i < len(args):
        text = args[i].text
        if text in ("-c", "--cmd") and i + 1 < len(args):
            codes.append(args[i + 1].text)
            i += 2
            continue
        if text == "-S" and i + 1 < len(args):
            codes.append(ctx.written.get(args[i + 1].text.removeprefix("./")))
            i += 2
            continue
        if text.startswith("+") and len(text) > 1:
            codes.append(text[1:])
        elif text.startswith("-") and not text.startswith("--") and ("e" in text or "E" in text or "s" in text):
            ex = True
        i += 1
    if ex:
        codes += (stdin or "").split("\n") if stdin is not None else [None]
    return ("vim", codes) if codes else None


def _make_code(args: list[_ShellWord], stdin: str | None, ctx: _LineContext) -> tuple[str, list[str | None]] | None:
    codes: list[str | None] = []
    files: list[str] = []
    dry = False
    i = 0
    while i < len(args):
        text = args[i].text
        if text in ("-f", "--file", "--makefile") and i + 1 < len(args):
            files.append(args[i + 1].text)
            i += 2
            continue
        if text.startswith(("--file=", "--makefile=")):
            files.append(text.split("=", 1)[1])
        elif text.startswith("-f") and len(text) > 2:
            files.append(text[2:])
        elif text.startswith("--eval="):
            codes.append(text.split("=", 1)[1])
        elif text in ("-n", "--dry-run", "--just-print", "--recon"):
            dry = True
        i += 1
    for name in files or ["GNUmakefile", "makefile", "Makefile"]:
        if name in ("-", "/dev/stdin", "/dev/fd/0"):
            codes.append(stdin)
        elif name.removeprefix("./") in ctx.written:
            codes.append(ctx.written[name.removeprefix("./")])
    if dry:  # a dry run prints its recipes; only $(shell ...) runs
        import re
        codes = [None if c is None else "\n".join("\t" + t for t in re.findall(r"\$\(shell\s+([^)]*)\)", c))
                 for c in codes]
    return ("make", codes) if codes else None


# Commands that read or print their arguments and never run them.
_HOOK_DATA = frozenset({
    "echo", "printf", "grep", "egrep", "fgrep", "rg", "ag", "ack", "cat", "tac", "less", "more", "head", "tail", "wc",
    "sort", "uniq", "cut", "tr", "sed", "awk", "gawk", "jq", "yq", "ls", "tree", "stat", "file", "du", "touch",
    "mkdir", "rmdir", "cp", "mv", "ln", "diff", "cmp", "comm", "test", "[", "true", "false", ":", "cd", "pushd",
    "popd", "export", "unset", "local", "declare", "typeset", "readonly", "read", "type", "which", "whereis", "hash",
    "alias", "unalias", "man", "info", "help", "apropos", "whatis", "basename", "dirname", "realpath", "readlink",
    "shopt", "set", "wait", "sleep", "exit", "return", "break", "continue", "printenv", "column", "fold", "fmt",
    "nl", "od", "xxd", "hexdump", "base64", "sha256sum", "sha1sum", "md5sum", "tee", "chmod", "chown", "date",
})
# Words that may start a command inside another command's arguments.
_HOOK_RUNNERS = frozenset({"git", "madtea", "madtea.py", "gh", "tea", "rm", "eval", "source", ".", "py"}) | \
    _HOOK_SHELLS | frozenset(n.partition(":")[0] for n in _HOOK_LAUNCHERS)


def _arguments(words: list[_ShellWord], seg: _ShellSegment, env: dict[str, _ShellWord], cdir: str | None,
                    ctx: _LineContext, nest: int) -> list[tuple[str, str]]:
    """A command the hook does not know may run what its arguments spell out (``ssh host git push``,
    ``watchexec -- 'git commit -am x'``): a denied form among them denies, a read is never held."""
    for i in range(1, len(words)):
        text = words[i].text
        base = _basename(text)
        if base in _HOOK_RUNNERS or base.startswith(("git-", "madtea")) or _python(base):
            inner = _ShellSegment(words[i:], seg.raw, seg.depth + 1, cdir, env)
            denied = [v for v in _verdicts(inner, ctx, nest + 1) if v[0] == "deny"]
        elif " " in text or "\n" in text or "\t" in text:
            denied = [v for v in _script_verdicts(text, cdir, seg.depth + 1, env, ctx, nest) if v[0] == "deny"]
        else:
            continue
        if denied:
            return denied
    return []


def _inner_script(name: str, words: list[_ShellWord], stdin: str | None = None,
                  written: dict[str, str | None] | None = None) -> str | None:
    """The text of ``bash -c '...'``, ``eval '...'``, a process substitution a shell runs or
    sources, or a script a shell reads from *stdin* (a here-document, a here-string, ``echo '...' |``);
    None when there is none to read. Expansions stay as written: a command spelt out around them
    is still that command."""
    if name == "eval":
        return " ".join(w.text for w in words[1:])
    written = written or {}
    if name in ("source", "."):
        if len(words) > 1 and words[1].script is not None:
            return words[1].script  # source <(echo ...): the process substitution's text
        if len(words) > 1 and _stdin_path(words[1].text):
            return stdin if stdin is not None else _READS_STDIN
        if len(words) > 1 and words[1].text.removeprefix("./") in written:
            return written[words[1].text.removeprefix("./")] or _READS_STDIN
        return words[1].script if len(words) > 1 else None
    if name == "trap":
        return words[1].text if len(words) > 2 and not words[1].text.startswith("-") else None
    if name not in _HOOK_SHELLS:
        return None
    command = stdin_flag = False
    i = 1
    while i < len(words):
        text = words[i].text
        if text in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
            i += 2
            continue
        if text == "--":
            i += 1
            if not command and stdin_flag:
                break
            continue
        if text[:1] in "-+" and len(text) > 1 and not text.startswith("--"):
            command = command or "c" in text[1:]
            stdin_flag = stdin_flag or (text[0] == "-" and "s" in text[1:])
        elif not text.startswith("--"):
            if command and "$" in text:  # bash -c 'script' name args: the args are its "$@"
                return "set -- " + " ".join(shell_quote(w.text) for w in words[i + 2:]) + "\n" + text
            if not command and stdin_flag:
                break
            if not command and words[i].script is not None:
                return words[i].script  # bash <(echo ...): the process substitution's text
            if not command and (_stdin_path(text) or text == "-"):
                return stdin if stdin is not None else _READS_STDIN
            if not command and text.removeprefix("./") in written:
                return written[text.removeprefix("./")] or _READS_STDIN  # a script the line wrote
            return text if command else words[i].script  # a script file is out of reach
        i += 1
    return stdin if stdin is not None else _READS_STDIN


def _stdin_path(text: str) -> bool:
    """A path that reads a file descriptor: ``/dev/stdin``, ``/dev/fd/N``, ``/proc/self/fd/N``."""
    return text == "/dev/stdin" or text.startswith(("/dev/fd/", "/proc/self/fd/"))


def _find_exec(words: list[_ShellWord], seg: _ShellSegment, env: dict[str, _ShellWord],
                    cdir: str | None) -> list[_ShellSegment]:
    found: list[_ShellSegment] = []
    i = 0
    while i < len(words):
        if words[i].text in ("-exec", "-execdir", "-ok", "-okdir"):
            j = i + 1
            while j < len(words) and words[j].text not in (";", "+"):
                j += 1
            cmd = [(_ShellWord("<found>", True, False) if w.text == "{}" else w) for w in words[i + 1:j]]
            if cmd:
                found.append(_ShellSegment(cmd, seg.raw, seg.depth + 1, cdir, env))
            i = j
        i += 1
    return found


def _madtea_args(words: list[_ShellWord]) -> list[_ShellWord] | None:
    """The arguments of a madtea CLI run (``madtea ...``, ``python3 .../bin/madtea ...``,
    ``python -m madtea ...``, ``py madtea.pyz ...``), or None. Launchers such as ``uv run`` and
    ``pipx run`` are wrappers, removed before this."""
    name = _basename(words[0].text)
    if _madtea_name(name):
        return words[1:]
    if _python(name) or name == "py":
        i = 1
        while i < len(words) and words[i].text.startswith("-"):
            if words[i].text == "-m":
                return words[i + 2:] if i + 1 < len(words) and words[i + 1].text == "madtea" else None
            if words[i].text.startswith("-c"):
                return None
            i += 2 if words[i].text in ("-W", "-X") else 1
        if i < len(words) and _madtea_name(_basename(words[i].text)):
            return words[i + 1:]
    return None


_HOOK_MADTEA_PYZ = r"madtea(-[0-9][0-9A-Za-z.+-]*)?\.pyz"  # the single-file release, any version


def _madtea_name(name: str) -> bool:
    """``madtea``, ``madtea.py`` or the single-file release ``madtea-1.2.pyz``: a program that is madtea's CLI."""
    if name in ("madtea", "madtea.py"):
        return True
    if not (name.startswith("madtea") and name.endswith(".pyz")):
        return False  # most names: no pattern to compile
    import re
    return bool(re.fullmatch(_HOOK_MADTEA_PYZ, name))


# --------------------------------------------------------------------------- rendering

def _call(tool: str, *pairs: tuple[str, Json]) -> str:
    """``madt_add dir="/x" files=["a.py"]``: the call a hook text names (None values left out)."""
    return render_call(call(tool, **dict(pairs)))


def _sentence(text: str) -> str:
    return text if text.endswith((".", ":", ")")) else text + "."


def _retry(verb: str) -> str:
    return DO_NOT_RETRY.format(verb=verb)


# --------------------------------------------------------------------------- git

_HOOK_GIT_GLOBAL_VALUE = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env",
                                  "--super-prefix", "--attr-source", "--exec-path", "--list-cmds"})
_HOOK_CONTROLS = frozenset({"--continue", "--abort", "--skip", "--quit", "--show-current-patch", "--edit-todo"})
_HOOK_CONTROL_VERBS = frozenset({"merge", "rebase", "cherry-pick", "revert", "am"})
# user:secret@, or a bare token as the user name (Gitea takes one there: 40 hex digits, or a known prefix)
_HOOK_CRED_URL = (r"(?i)\b([a-z][a-z0-9+.-]*://)(?:[^/\s@:]+:[^/\s@]+|[0-9a-f]{32,}|"
                  r"(?:gh[pousr]_|github_pat_|glpat-)[^/\s@:]+)@")
_HOOK_HEX = "0123456789abcdef"
_HOOK_DESTROYS = "{what}, so only a person may do it: ask the user to run it themselves if it is really wanted."


def _git_split(
        args: list[_ShellWord]) -> tuple[_ShellWord | None, list[tuple[str, _ShellWord | None]], list[_ShellWord]]:
    """git's own options, the subcommand word and its arguments."""
    opts: list[tuple[str, _ShellWord | None]] = []
    i = 0
    while i < len(args):
        text = args[i].text
        if not text.startswith("-") or text == "-":
            return args[i], opts, args[i + 1:]
        name, eq, value = text.partition("=")
        if name in _HOOK_GIT_GLOBAL_VALUE and not eq and name != "--exec-path":
            opts.append((name, args[i + 1] if i + 1 < len(args) else None))
            i += 2
            continue
        opts.append((name, _ShellWord(value, args[i].dynamic, args[i].quoted) if eq else None))
        i += 1
    return None, opts, []


# git's own option table for the subcommands the hook decides on, as ``git <sub> -h`` lists them
# (git 2.39): ``x|long`` a short and a long spelling of one option, ``=`` after it a value that
# must follow, ``?`` a value only when stuck to it (``--opt=v``, ``-xv``). git takes any unique
# prefix of a long option and ``--no-<long>`` to undo it; a short ``-h`` or ``--help`` anywhere
# before ``--`` only prints help. tests/test_hook_shell_oracle.py checks the table against git.
_HOOK_GIT_OPTIONS = {
    "add": ("n|dry-run v|verbose i|interactive p|patch e|edit f|force u|update renormalize N|intent-to-add "
        "A|all ignore-removal refresh ignore-errors ignore-missing sparse chmod= pathspec-from-file= "
        "pathspec-file-nul"),
    "commit": ("q|quiet v|verbose F|file= author= date= m|message= c|reedit-message= C|reuse-message= fixup= "
        "squash= reset-author trailer= s|signoff t|template= e|edit cleanup= status S|gpg-sign? a|all "
        "i|include interactive p|patch o|only n|no-verify dry-run short branch ahead-behind porcelain "
        "long z|null amend no-post-rewrite u|untracked-files? pathspec-from-file= pathspec-file-nul"),
    "branch": ("v|verbose q|quiet t|track? u|set-upstream-to= unset-upstream color? r|remotes contains= "
        "no-contains= abbrev? a|all d|delete D m|move M c|copy C l|list show-current create-reflog "
        "edit-description f|force merged= no-merged= column? sort= points-at= i|ignore-case "
        "recurse-submodules format="),
    "switch": ("c|create= C|force-create= guess discard-changes q|quiet recurse-submodules? progress m|merge "
        "conflict= d|detach t|track? f|force orphan= overwrite-ignore ignore-other-worktrees"),
    "checkout": ("b= B= l guess overlay q|quiet recurse-submodules? progress m|merge conflict= d|detach t|track? "
        "f|force orphan= overwrite-ignore ignore-other-worktrees 2|ours 3|theirs p|patch "
        "ignore-skip-worktree-bits pathspec-from-file= pathspec-file-nul"),
    "restore": ("s|source= S|staged W|worktree ignore-unmerged overlay q|quiet recurse-submodules? progress "
        "m|merge conflict= 2|ours 3|theirs p|patch ignore-skip-worktree-bits pathspec-from-file= "
        "pathspec-file-nul"),
    "reset": ("q|quiet no-refresh mixed soft hard merge keep recurse-submodules? p|patch N|intent-to-add "
        "pathspec-from-file= pathspec-file-nul"),
    "clean": "q|quiet n|dry-run f|force i|interactive d e|exclude= x X",
    "stash push": ("k|keep-index S|staged p|patch q|quiet u|include-untracked a|all m|message= pathspec-from-file= "
        "pathspec-file-nul"),
    "stash drop": "q|quiet",
    "push": ("v|verbose q|quiet repo= all mirror d|delete tags n|dry-run porcelain f|force force-with-lease? "
        "force-if-includes recurse-submodules= thin receive-pack= exec= u|set-upstream progress prune "
        "no-verify follow-tags signed? atomic o|push-option= 4|ipv4 6|ipv6"),
    "pull": ("v|verbose q|quiet progress recurse-submodules? r|rebase? n stat log? signoff? squash commit edit "
        "cleanup= ff ff-only verify verify-signatures autostash s|strategy= X|strategy-option= "
        "S|gpg-sign? allow-unrelated-histories all a|append upload-pack= f|force t|tags p|prune j|jobs? "
        "dry-run k|keep depth= shallow-since= shallow-exclude= deepen= unshallow update-shallow refmap= "
        "o|server-option= 4|ipv4 6|ipv6 negotiation-tip= show-forced-updates set-upstream"),
    "fetch": ("v|verbose q|quiet all set-upstream a|append atomic upload-pack= f|force m|multiple t|tags n "
        "j|jobs= prefetch p|prune P|prune-tags recurse-submodules? dry-run write-fetch-head k|keep "
        "u|update-head-ok progress depth= shallow-since= shallow-exclude= deepen= unshallow refetch "
        "update-shallow refmap= o|server-option= 4|ipv4 6|ipv6 negotiation-tip= negotiate-only filter= "
        "auto-maintenance auto-gc show-forced-updates write-commit-graph stdin"),
    "merge": ("n stat summary log? squash commit e|edit cleanup= ff ff-only rerere-autoupdate verify-signatures "
        "s|strategy= X|strategy-option= m|message= F|file= into-name= v|verbose q|quiet abort quit "
        "continue allow-unrelated-histories progress S|gpg-sign? autostash overwrite-ignore signoff "
        "no-verify"),
    "rebase": ("onto= keep-base no-verify q|quiet v|verbose n|no-stat signoff committer-date-is-author-date "
        "reset-author-date C= ignore-whitespace whitespace= f|force-rebase no-ff continue skip abort quit "
        "edit-todo show-current-patch apply m|merge i|interactive rerere-autoupdate empty= autosquash "
        "update-refs S|gpg-sign? autostash x|exec= r|rebase-merges? fork-point s|strategy= "
        "X|strategy-option= root reschedule-failed-exec reapply-cherry-picks"),
    "worktree add": "f|force b= B= d|detach checkout lock reason= q|quiet track guess-remote",
    "worktree remove": "f|force",
    "worktree prune": "n|dry-run v|verbose expire=",
    "update-ref": "m= d no-deref z stdin create-reflog",
    "checkout-index": ("a|all ignore-skip-worktree-bits f|force q|quiet n|no-create u|index z stdin temp "
        "prefix= stage="),
    "read-tree": ("index-output= empty v|verbose m trivial aggressive reset prefix= u exclude-per-directory= i "
        "n|dry-run no-sparse-checkout debug-unpack recurse-submodules? q|quiet"),
    "reflog expire": "dry-run rewrite updateref verbose expire= expire-unreachable= stale-fix all",
    "reflog delete": "dry-run rewrite updateref verbose",
    "gc": "q|quiet prune? cruft aggressive auto force keep-largest-pack",
    "rm": "n|dry-run q|quiet cached f|force r ignore-unmatch sparse pathspec-from-file= pathspec-file-nul",
    "tag": ("l|list n? d|delete v|verify a|annotate m|message= F|file= e|edit s|sign cleanup= u|local-user= "
        "f|force create-reflog column? contains= no-contains= merged= no-merged= sort= points-at= format= "
        "color? i|ignore-case"),
    "remote add": "f|fetch tags t|track= m|master= mirror?",
    "remote set-url": "push add delete",
    "clone": ("v|verbose q|quiet progress reject-shallow n|no-checkout bare mirror l|local no-hardlinks "
        "s|shared recurse-submodules? recursive? j|jobs= template= reference= reference-if-able= "
        "dissociate o|origin= b|branch= u|upload-pack= depth= shallow-since= shallow-exclude= "
        "single-branch no-tags shallow-submodules separate-git-dir= c|config= server-option= 4|ipv4 "
        "6|ipv6 filter= also-filter-submodules remote-submodules sparse bundle-uri="),
    "config": ("global system local worktree f|file= blob= get get-all get-regexp get-urlmatch replace-all add "
        "unset unset-all rename-section remove-section l|list fixed-value e|edit get-color get-colorbool "
        "t|type= bool int bool-or-int bool-or-str path expiry-date z|null name-only includes show-origin "
        "show-scope default="),
    "prune": "n|dry-run v|verbose progress expire= exclude-promisor-objects",
    "mv": "v|verbose n|dry-run f|force k sparse",
}
_HOOK_OPTION_TABLES: dict[str, tuple[dict[str, tuple[str, str]], dict[str, tuple[str, str]]]] = {}


def _option_table(key: str) -> tuple[dict[str, tuple[str, str]], dict[str, tuple[str, str]]] | None:
    """(long name -> (short, kind), short letter -> (long, kind)) of one git subcommand, or None."""
    if key not in _HOOK_GIT_OPTIONS:
        return None
    if key not in _HOOK_OPTION_TABLES:
        longs: dict[str, tuple[str, str]] = {}
        shorts: dict[str, tuple[str, str]] = {}
        for entry in _HOOK_GIT_OPTIONS[key].split():
            kind = entry[-1] if entry[-1] in "=?" else ""
            short, bar, name = entry.rstrip("=?").rpartition("|")
            if not bar and len(name) == 1:
                short, name = name, ""
            if name:
                longs[name] = (short, kind)
            if short:
                shorts[short] = (name, kind)
        _HOOK_OPTION_TABLES[key] = (longs, shorts)
    return _HOOK_OPTION_TABLES[key]


def _long_option(name: str, longs: Mapping[str, tuple[str, str]]) -> tuple[str, bool] | None:
    """git's reading of ``--name``: (the option, whether negated), by exact name or unique prefix."""
    if name in longs:
        return name, False
    if name.startswith("no-") and name[3:] in longs:
        return name[3:], True
    found = {(n, False) for n in longs if n.startswith(name)}
    if name.startswith("no-"):
        found |= {(n, True) for n in longs if n.startswith(name[3:]) and not n.startswith("no-")}
    return found.pop() if len(found) == 1 else None  # none, or ambiguous: git refuses the line


def _getopt(args: list[_ShellWord], key: str | None = None
                 ) -> tuple[list[tuple[str, _ShellWord | None]], list[_ShellWord], bool]:
    """Options (name, value) and positionals of a git subcommand; also whether ``--`` was given.

    With git's table for *key*, options read as git reads them: a long option by any unique
    prefix (named in full here), a later ``--no-<long>`` undoing an earlier one in either
    spelling, short options bundled, values taken where git takes them. Without one, no
    option takes a value.
    """
    table = _option_table(key) if key else None
    longs, shorts = table if table is not None else ({}, {})
    opts: list[tuple[str, _ShellWord | None]] = []
    pos: list[_ShellWord] = []
    i = 0
    while i < len(args):
        w = args[i]
        t = w.text
        if t in ("--", "--end-of-options"):
            pos.extend(args[i + 1:])
            return opts, pos, True
        if t.startswith("--") and not w.dynamic:
            name, eq, value = t[2:].partition("=")
            known = _long_option(name, longs) if table is not None else None
            if known is not None and known[1]:
                short = longs[known[0]][0]
                opts = [o for o in opts if o[0] not in ("--" + known[0], "-" + short)]
            elif known is not None:
                kind = longs[known[0]][1]
                if eq:
                    opts.append(("--" + known[0], _ShellWord(value, w.dynamic, w.quoted)))
                elif kind == "=" and i + 1 < len(args):
                    opts.append(("--" + known[0], args[i + 1]))
                    i += 1
                else:
                    opts.append(("--" + known[0], None))
            else:
                opts.append(("--" + name, _ShellWord(value, w.dynamic, w.quoted) if eq else None))
        elif t.startswith("-") and len(t) > 1 and not w.dynamic:
            j = 1
            while j < len(t):
                letter = t[j]
                kind = shorts[letter][1] if letter in shorts else ""
                if kind:
                    if j + 1 < len(t):
                        opts.append(("-" + letter, _ShellWord(t[j + 1:], False, w.quoted)))
                    elif kind == "=" and i + 1 < len(args):
                        opts.append(("-" + letter, args[i + 1]))
                        i += 1
                    else:
                        opts.append(("-" + letter, None))
                    break
                opts.append(("-" + letter, None))
                j += 1
        else:
            pos.append(w)
        i += 1
    return opts, pos, False


def _help(opts: list[tuple[str, _ShellWord | None]], key: str) -> bool:
    """``-h`` or ``--help`` among a subcommand's options: git prints help and does nothing else."""
    table = _option_table(key)
    short_h = table is not None and "h" in table[1]
    return any(name == "--help" or (name == "-h" and not short_h) for name, _v in opts)


def _has(opts: list[tuple[str, _ShellWord | None]], *names: str) -> bool:
    return any(name in names for name, _v in opts)


def _val(opts: list[tuple[str, _ShellWord | None]], *names: str) -> _ShellWord | None:
    for name, value in opts:
        if name in names and value is not None:
            return value
    return None


def _git_config(git: _GitCall, env: dict[str, _ShellWord]) -> list[tuple[str, str]]:
    """The config the line hands git, as (lower-case key, value), in git's order: GIT_CONFIG_PARAMETERS,
    GIT_CONFIG_COUNT with GIT_CONFIG_KEY_n and GIT_CONFIG_VALUE_n, then -c and --config-env."""
    def value(name: str) -> str | None:
        word = env.get(name)
        return None if word is None or word.dynamic else word.text.partition("=")[2]

    found: list[tuple[str, str]] = []
    params = value("GIT_CONFIG_PARAMETERS")
    if params:
        for seg in _ShellParser(params, None).parse():
            for w in seg.words:
                key, _eq, val = w.text.partition("=")
                found.append((key.lower(), val))
    count = value("GIT_CONFIG_COUNT") or ""
    for n in range(min(int(count), 64) if count.isdecimal() else 0):
        named = value(f"GIT_CONFIG_KEY_{n}")
        if named is not None:
            found.append((named.lower(), value(f"GIT_CONFIG_VALUE_{n}") or ""))
    for option, given in git.gopts:
        if given is None or given.dynamic:
            continue
        if option == "-c":
            key, _eq, val = given.text.partition("=")
            found.append((key.lower(), val))
        elif option == "--config-env":
            key, _eq, var = given.text.rpartition("=")
            found.append((key.lower(), value(var) or ""))
    return found


def _git_builtin(sub: str) -> bool:
    """A subcommand git has itself: an alias of the same name is never used."""
    return hasattr(_GitCall, "g_" + sub.replace("-", "_")) or sub in _HOOK_GIT_OPTIONS or sub in _HOOK_GIT_READS


# Subcommands that read (an alias of the same name is ignored by git), beyond those the hook decides on.
_HOOK_GIT_READS = frozenset({"diff", "show", "blame", "grep", "describe", "rev-parse", "ls-files", "ls-remote",
                             "cat-file", "config", "help", "version", "clone", "init", "mv", "notes", "bisect"})
# What git runs as a command from its config and environment, and for which subcommands (None: any).
_HOOK_EDITING = frozenset({"commit", "tag", "merge", "rebase", "revert", "cherry-pick", "am", "notes", "config",
                           "pull", "add", "stash", "var", "send-email", "filter-branch"})
_HOOK_DIFFING = frozenset({"diff", "log", "show", "whatchanged", "stash", "difftool", "range-diff", "add",
                           "format-patch"})
_HOOK_REMOTE = frozenset({"fetch", "pull", "push", "clone", "ls-remote", "archive", "submodule", "remote",
                          "fetch-pack", "send-pack"})
_HOOK_GIT_RUNS_ENV = {"GIT_EDITOR": _HOOK_EDITING, "GIT_SEQUENCE_EDITOR": _HOOK_EDITING, "EDITOR": _HOOK_EDITING,
                      "VISUAL": _HOOK_EDITING, "GIT_EXTERNAL_DIFF": _HOOK_DIFFING, "GIT_SSH_COMMAND": _HOOK_REMOTE,
                      "GIT_SSH": _HOOK_REMOTE, "GIT_PROXY_COMMAND": _HOOK_REMOTE, "GIT_ASKPASS": _HOOK_REMOTE,
                      "SSH_ASKPASS": _HOOK_REMOTE, "GIT_PAGER": None, "PAGER": None}
_HOOK_GIT_RUNS_KEYS = {"core.editor": _HOOK_EDITING, "sequence.editor": _HOOK_EDITING, "diff.external": _HOOK_DIFFING,
                       "core.sshcommand": _HOOK_REMOTE, "core.askpass": _HOOK_REMOTE, "core.gitproxy": _HOOK_REMOTE,
                       "credential.helper": _HOOK_REMOTE, "core.pager": None, "core.fsmonitor": None,
                       "gpg.program": None, "uploadpack.packobjectshook": _HOOK_REMOTE}
# diff options that make git print no patch, so no external diff runs
_HOOK_NO_PATCH = frozenset({"--no-ext-diff", "--stat", "--numstat", "--shortstat", "--name-only", "--name-status",
                            "--summary", "--raw", "--quiet", "--dirstat", "-s", "--no-patch", "--check"})
_HOOK_GIT_RUNS_SUFFIXES = (".helper", ".textconv", ".command", ".driver", ".clean", ".smudge", ".process", ".cmd",
                           ".program", ".uploadpack", ".receivepack", ".sshcommand", ".proxy", ".hook")


def _git_runs(git: _GitCall, config: list[tuple[str, str]], env: dict[str, _ShellWord]) -> list[str]:
    """The command lines git would run for this call from what the line hands it: editors, an external
    diff, ssh and proxy commands, credential helpers, pagers, ``--upload-pack``, ``ext::`` transports.
    Only those holding a git or madtea word are returned: the rest cannot run a steered form."""
    sub = git.sub or ""
    texts: list[str] = []
    args = git.args
    options = {w.text.partition("=")[0] for w in args if w.text.startswith("-")}
    no_patch = bool(options & _HOOK_NO_PATCH) or (sub in ("log", "whatchanged") and
                                                  not options & {"-p", "-u", "--patch"})
    for name, subs in _HOOK_GIT_RUNS_ENV.items():
        word = env.get(name)
        if word is not None and (subs is None or sub in subs) and not (subs is _HOOK_DIFFING and no_patch):
            texts.append(word.text.partition("=")[2])
    for key, value in config:
        subs = _HOOK_GIT_RUNS_KEYS.get(key)
        if key in _HOOK_GIT_RUNS_KEYS and (subs is None or sub in subs) and not (subs is _HOOK_DIFFING and no_patch) \
                or key.startswith("pager.") or key.endswith(_HOOK_GIT_RUNS_SUFFIXES) and not key.startswith("alias."):
            texts.append(value[1:] if value.startswith("!") else value)
    ext_allowed = next((v for k, v in reversed(config) if k in ("protocol.ext.allow", "protocol.allow")), "always")
    for i, w in enumerate(args):
        name, eq, value = w.text.partition("=")
        if name in ("--upload-pack", "--receive-pack", "--exec") or (sub == "clone" and name == "-u"):
            texts.append(value if eq else (args[i + 1].text if i + 1 < len(args) else ""))
        elif sub == "clone" and name in ("-c", "--config") and i + 1 < len(args):
            key, _eq, val = args[i + 1].text.partition("=")
            if key.lower() in _HOOK_GIT_RUNS_KEYS or key.lower().endswith(_HOOK_GIT_RUNS_SUFFIXES):
                texts.append(val[1:] if val.startswith("!") else val)
        elif "ext::" in w.text and ext_allowed == "always":
            texts.append(_ext_command(w.text[w.text.index("ext::") + 5:]))
        elif sub == "difftool" and name in ("-x", "--extcmd") or sub == "filter-branch" and name.endswith("-filter"):
            texts.append(value if eq else (args[i + 1].text if i + 1 < len(args) else ""))
    if sub == "bisect" and args[:1] and args[0].text == "run":  # git bisect run <cmd>...
        texts.append(" ".join(shell_quote(w.text) for w in args[1:]))
    return [t for t in texts if mentions_git_or_madtea(t)]


def _ext_command(text: str) -> str:
    """The command line an ``ext::`` URL runs (git-remote-ext: ``% `` a space, ``%%`` a percent sign)."""
    words, word, i = [], "", 0
    while i < len(text):
        if text[i] == "%" and i + 1 < len(text):
            word += {" ": " ", "%": "%", "s": "git-upload-pack", "S": "upload-pack"}.get(text[i + 1], "")
            i += 2
            continue
        if text[i] == " ":
            words.append(word)
            word = ""
        else:
            word += text[i]
        i += 1
    words.append(word)
    return " ".join(shell_quote(w) for w in words if w)


def _previous(name: str) -> bool:
    """``-`` or ``@{-N}``: the branch checked out N switches ago."""
    return name == "-" or (name.startswith("@{-") and name.endswith("}") and name[3:-1].isdecimal())


def _extra_header(key: str) -> bool:
    """A config key of git's extra HTTP header (``http.extraHeader``, ``http.<url>.extraHeader``)."""
    key = key.strip().lower()
    return key.startswith("http.") and key.endswith(".extraheader")


class _GitCall:
    """One ``git`` invocation: where it acts, and what the hook says about it."""

    def __init__(self, args: list[_ShellWord], env: dict[str, _ShellWord], cdir: str | None, ctx: _LineContext,
                 stdin: str | None = None) -> None:
        self.ctx = ctx
        self.stdin = stdin  # a literal here-document fed to git, if any
        self.raw_args = args
        sub, gopts, self.args = _git_split(args)
        self.sub = sub.text if sub is not None and not sub.dynamic else None
        if self.sub == "stage":
            self.sub = "add"  # git stage is git add by another name
        self.gopts = gopts
        self.cdir = cdir
        self.known_dir = cdir is not None
        git_dir = env.get("GIT_DIR")
        git_dir_text: str | None = git_dir.text.split("=", 1)[1] if git_dir is not None else None
        if git_dir is not None and git_dir.dynamic:
            self.known_dir = False
        for name, value in gopts:
            if name == "-C":
                path = os.path.expanduser(value.text) if value is not None and not value.dynamic else None
                if path is None:
                    self.known_dir = False
                elif os.path.isabs(path):
                    self.cdir, self.known_dir = os.path.normpath(path), self.known_dir or self.cdir is None
                elif self.cdir is not None and path:
                    self.cdir = os.path.normpath(os.path.join(self.cdir, path))
            elif name == "--git-dir":
                if value is None or value.dynamic:
                    self.known_dir = False
                else:
                    git_dir_text = value.text
        target = self.cdir
        if self.known_dir and git_dir_text:
            target = os.path.normpath(os.path.join(self.cdir or "/", os.path.expanduser(git_dir_text)))
        self.repo = ctx.facts(target) if self.known_dir and target else ctx.own
        own = ctx.own
        self.foreign = self.repo is not None and (own is None or self.repo.common_dir != own.common_dir)
        self.dir = self.repo.top if self.foreign and self.repo is not None else None
        self.op = self.repo.operation if self.repo is not None else None

    # -- helpers for texts
    def files(self, words: list[_ShellWord]) -> list[str] | None:
        """Paths relative to the repo top, or None when the shell decides them (globs, variables)."""
        out: list[str] = []
        prefix = self.repo.prefix if self.repo is not None and self.cdir is not None else ""
        top = self.repo.top if self.repo is not None else None
        for w in words:
            text = w.text
            if w.dynamic or (not w.quoted and any(ch in text for ch in "*?[")) or text.startswith(":"):
                return None
            if os.path.isabs(text):
                if top and (text == top or text.startswith(top.rstrip("/") + "/")):
                    text = os.path.relpath(text, top)
            else:
                text = os.path.normpath(os.path.join(prefix, text)) if prefix else os.path.normpath(text)
            out.append(text)
        return out

    def d(self) -> tuple[str, str | None]:
        return ("dir", self.dir)

    def where(self) -> str:
        if self.foreign and self.repo is not None:
            own = self.ctx.own.top if self.ctx.own is not None else "no repository"
            return (f"This git {self.sub} acts on {self.repo.top}, a different repository from the one your "
                    f"shell is in ({own}); the madt_* tools act there only when it is named with dir=.")
        return ""

    def deny(self, why: str, call: str | None = None, extra: str = "", verb: str | None = None) -> tuple[str, str]:
        lines = [self.where()] if self.where() else []
        lines.append(_sentence(why))
        if call:
            lines.append(f"Use: {call}")
        if extra:
            lines.append(_sentence(extra))
        lines.append(_retry(verb or self.sub or ""))
        return "deny", "\n".join(lines)

    def destroys(self, what: str, alternative: str = "") -> tuple[str, str]:
        text = _HOOK_DESTROYS.format(what=what)
        if alternative:
            text += " " + alternative
        return "deny", text + "\n" + _retry(self.sub or "")

    def rail(self, files: list[str] | None) -> str:
        assert self.repo is not None and self.op is not None
        files = files or self.ctx.rail_files
        self.ctx.rail_files = files
        add = _call("madt_add", self.d(), ("files", files if files else ["<each resolved file>"]))
        c = f" -C {shell_quote(self.repo.top)}" if self.foreign else ""
        return MID_OPERATION_RAIL.format(op=self.op, top=self.repo.top, add=add, c=c)

    def mid_operation(self) -> bool:
        return self.op in ("merge", "rebase", "cherry-pick", "revert", "am")

    # -- the decision
    def verdict(self) -> tuple[str, str]:
        leak = self.credential_leak()
        if leak:
            return leak
        sub = self.sub
        if sub is None:
            return ("allow", "")
        if sub in _HOOK_CONTROL_VERBS and any(w.text in _HOOK_CONTROLS for w in self.args):
            return ("allow", "")
        action = f"{sub} {self.args[0].text}" if self.args else sub
        key, rest = (action, self.args[1:]) if action in _HOOK_GIT_OPTIONS else (sub, self.args)
        if _help(_getopt(rest, key)[0], key):
            return ("allow", "")  # git prints help and does nothing else
        handler: Callable[[], tuple[str, str]] | None = getattr(self, "g_" + sub.replace("-", "_"), None)
        if handler is None:
            return ("allow", "")  # a read, a harmless verb, or an alias: aliases are not expanded
        return handler()

    def credential_leak_in(self, config: list[tuple[str, str]]) -> tuple[str, str] | None:
        """A credential in config the line hands git some other way than -c (its environment, --config-env)."""
        if any(_extra_header(key) for key, _value in config):
            return self.credential_leak(force=True)
        given = [_ShellWord(f"{key}={value}", False, True) for key, value in config if "@" in key + value]
        return self.credential_leak(extra=given) if given else None

    def credential_leak(self, force: bool = False, extra: Sequence[_ShellWord] = ()) -> tuple[str, str] | None:
        config = [v.text for n, v in self.gopts if n in ("-c", "--config-env") and v is not None]
        config += ["http.extraheader="] if force else []
        if self.sub == "config":
            config += [w.text for w in self.args if not w.text.startswith("-")][:1]
        if any(_extra_header(text.partition("=")[0]) for text in config):
            return "deny", (
                "An HTTP header set on git's command line or in its config (http.extraHeader) carries a credential "
                "into the shell's history, the transcript and error messages. Ask the user to log in for that host "
                "with madtea auth login; the madt_* tools then authenticate on their own.\n"
                + _retry(self.sub or "config"))
        words = [v for _n, v in self.gopts if v is not None] + list(self.args) + list(extra)
        for w in words:
            if "://" not in w.text or "@" not in w.text:
                continue  # most words: no pattern to compile
            import re
            if re.search(_HOOK_CRED_URL, w.text):
                clean = re.sub(_HOOK_CRED_URL, lambda mm: mm.group(1), w.text)
                return "deny", (
                    "A token or password inside a remote URL is stored in .git/config and shows up in "
                    f"remote listings, logs and error messages. Use the plain URL ({clean}) and ask the user to "
                    "log in for that host with madtea auth login; the madt_* tools then authenticate on their own."
                    "\n" + _retry(self.sub or "remote"))
        return None

    def note(self, tool_call: str, what: str) -> tuple[str, str]:
        return "note", f"madtea: {tool_call} {what}"

    # -- reads with a structured twin
    def g_status(self) -> tuple[str, str]:
        return self.note(_call("madt_status", self.d()),
                         "gives the same facts as structured data (branch, upstream, ahead/behind, staged, "
                         "modified, untracked).")

    def g_log(self) -> tuple[str, str]:
        return self.note(_call("madt_log", self.d()),
                         "returns commits as structured data (sha, author, date, subject).")

    g_shortlog = g_log
    g_whatchanged = g_log

    # -- staging and committing
    def g_add(self) -> tuple[str, str]:
        opts, pos, _dd = _getopt(self.args, self.sub)
        if _has(opts, "-n", "--dry-run"):
            return ("allow", "")
        blanket = _has(opts, "-A", "--all", "-u", "--update", "--no-ignore-removal", "-p", "--patch", "-i",
                          "--interactive", "-e", "--edit", "--pathspec-from-file")
        files = self.files(pos)
        if files is not None and any(f in (".", "") or f == ".." or f.startswith("../") for f in files):
            blanket = True
        good = files if files and not blanket else None
        if self.mid_operation():
            return self.deny(self.rail(good))
        why = ("Raw git add can sweep unrelated or someone else's changes into the index; "
               "madt_add stages exactly the files you name")
        if good is None:
            return self.deny(why, _call("madt_add", self.d(), ("files", ["<path>", "..."])),
                             "Name every file; blanket forms such as ., -A or -u are not accepted")
        return self.deny(why, _call("madt_add", self.d(), ("files", good)))

    def g_commit(self) -> tuple[str, str]:
        opts, pos, _dd = _getopt(self.args, self.sub)
        if _has(opts, "--dry-run"):
            return ("allow", "")
        messages = [v.text for n, v in opts if n in ("-m", "--message") and v is not None]
        from_file = _val(opts, "-F", "--file")
        if not messages and from_file is not None and from_file.text == "-" and self.stdin is not None:
            messages = [self.stdin]
        title: str | None = None
        body: str | None = None
        if messages and not any(n in ("-m", "--message") and v is not None and v.dynamic for n, v in opts):
            first, _, rest = messages[0].strip().partition("\n")
            title = first.strip()
            body_parts = [rest.strip()] + [m.strip() for m in messages[1:]]
            body = "\n\n".join(p for p in body_parts if p) or None
        files = self.files(pos)
        blanket = _has(opts, "-a", "--all", "-i", "--include", "-p", "--patch", "--interactive")
        good = files if files and not blanket else None
        if self.mid_operation():
            return self.deny(self.rail(good))
        call = _call("madt_commit", self.d(), ("files", good or ["<path>", "..."]),
                        ("title", title or "<subject>"), ("body", body))
        why = ("Raw git commit records whatever happens to be staged, including other people's work; "
               "madt_commit commits exactly the files you name")
        extra = ""
        if _has(opts, "--amend"):
            why = ("Amending rewrites a commit that may already be pushed or shared; "
                   "make a new commit instead with madt_commit")
        if good is None:
            extra = "Name every file to commit; -a and other blanket forms are not accepted"
        return self.deny(why, call, extra)

    # -- branches
    def g_branch(self) -> tuple[str, str]:
        opts, pos, _dd = _getopt(self.args, self.sub)
        names = [w.text for w in pos]
        delete = _has(opts, "-d", "--delete", "-D")
        force = _has(opts, "-D", "-f", "--force", "-M", "-C")
        if _has(opts, "-r", "--remotes") and delete:
            return ("allow", "")  # remote-tracking refs come back with the next fetch
        if delete:
            calls = "; ".join(_call("madt_branch_delete", self.d(), ("name", n)) for n in names) or \
                _call("madt_branch_delete", self.d(), ("name", "<branch>"))
            if force:
                return self.destroys("Force-deleting a branch can discard commits that exist nowhere else",
                                     f"If its work is already merged, {calls} deletes it after proving that.")
            return self.deny("madt_branch_delete deletes a branch only after proving its work is contained in the "
                             "default branch", calls)
        if _has(opts, "-m", "--move", "-M", "-c", "--copy", "-C"):
            old, new = (names[0], names[1]) if len(names) >= 2 \
                else ("<current branch>", names[0] if names else "<new name>")
            create = _call("madt_branch_create", self.d(), ("name", new), ("start_point", old))
            if _has(opts, "-c", "--copy", "-C"):
                return self.deny("Branches are made through madt_branch_create so the start point is explicit", create)
            return self.deny("A rename is a new branch plus a proven delete of the old one",
                             f"{create}, then {_call('madt_branch_delete', self.d(), ('name', old))}")
        if _has(opts, "-u", "--set-upstream-to", "--unset-upstream", "--edit-description"):
            return ("allow", "")
        listing = _has(opts, "-l", "--list", "-a", "--all", "-r", "--remotes", "-v", "-vv", "--verbose",
                          "--show-current", "--contains", "--no-contains", "--merged", "--no-merged",
                          "--points-at", "--format", "--sort", "--column", "--no-column", "--color", "--no-color")
        if not names or listing:
            return self.note(_call("madt_status", self.d()),
                             "reports the current branch and its upstream as structured data.")
        if force:
            return self.destroys("Moving an existing branch with --force can discard commits that exist nowhere else")
        call = _call("madt_branch_create", self.d(), ("name", names[0]),
                        ("start_point", names[1] if len(names) > 1 else None))
        return self.deny("Branches are made through madt_branch_create so the start point is explicit and checked",
                         call)

    def _switch_call(self, branch: str) -> str:
        previous = "<previous branch>" if _previous(branch) else branch
        return _call("madt_switch", self.d(), ("branch", previous))

    def _create_call(self, name: str, start: str | None) -> str:
        return _call("madt_branch_create", self.d(), ("name", name), ("start_point", start), ("checkout", True))

    _SWITCH_WHY = "madt_switch changes branches without carrying or discarding uncommitted work behind your back"

    def _remote_branch(self, name: str, opts: list[tuple[str, _ShellWord | None]]) -> tuple[str, str] | None:
        """The steer when the switch would make a new branch from a remote-tracking one (``--track``,
        or a name only a remote has): madt_switch takes existing local branches only."""
        kind = self.ref_kind(name) or ""
        if _has(opts, "-t", "--track") and "/" in name and kind != "branch":
            start, new = name, name.removeprefix("refs/remotes/").split("/", 1)[1]
        elif kind.startswith("remote:"):
            start, new = f"{kind[len('remote:'):]}/{name}", name
        else:
            return None
        return self.deny(f"{new} is not a local branch yet, and branches are made through madt_branch_create "
                         "so the start point is explicit", self._create_call(new, start))

    def g_switch(self) -> tuple[str, str]:
        opts, pos, _dd = _getopt(self.args, self.sub)
        if _has(opts, "--discard-changes", "-f", "--force"):
            return self.destroys("Switching with --discard-changes or --force discards uncommitted changes for good")
        new = _val(opts, "-c", "--create", "-C", "--force-create")
        if new is not None:
            return self.deny("Branches are made through madt_branch_create so the start point is explicit",
                             self._create_call(new.text, pos[0].text if pos else None))
        orphan = self._orphan(opts)
        if orphan is not None:
            return orphan
        if _has(opts, "-d", "--detach") or not pos:
            return ("allow", "")
        if self.ref_kind(pos[0].text) == "tracking" and not _has(opts, "-t", "--track"):
            return ("allow", "")  # git itself refuses to switch to a remote-tracking ref without --detach
        return self._remote_branch(pos[0].text, opts) or self.deny(self._SWITCH_WHY, self._switch_call(pos[0].text))

    def _orphan(self, opts: list[tuple[str, _ShellWord | None]]) -> tuple[str, str] | None:
        """``--orphan NAME`` starts a new branch: steered to madt_branch_create like any other."""
        name = _val(opts, "--orphan")
        if name is None:
            return None
        return self.deny("Branches are made through madt_branch_create so the start point is explicit",
                         self._create_call(name.text, None))

    def g_checkout(self) -> tuple[str, str]:
        opts, pos, dashdash = _getopt(self.args, self.sub)
        if _has(opts, "-f", "--force", "-p", "--patch"):
            return self.destroys("A forced or patch checkout overwrites uncommitted changes for good")
        new = _val(opts, "-b", "-B")
        if new is not None:
            return self.deny("Branches are made through madt_branch_create so the start point is explicit",
                             self._create_call(new.text, pos[0].text if pos else None))
        orphan = self._orphan(opts)
        if orphan is not None:
            return orphan
        if _has(opts, "--detach", "-d"):
            return ("allow", "")
        paths = dashdash or len(pos) > 1 or (pos and pos[0].text in (".", "./"))
        sides = _has(opts, "--ours", "--theirs", "-2", "-3", "--conflict") or (
            _has(opts, "-m", "--merge") and (paths or (pos and self.ref_kind(pos[0].text) != "branch")))
        if sides and self.op is not None:
            return ("allow", "")  # picking a side while resolving a conflict
        if paths or sides:
            return self.destroys("Checking out paths (git checkout -- <paths>) overwrites their uncommitted changes "
                                 "for good")
        if not pos:
            return ("allow", "")
        name = pos[0].text
        kind = self.ref_kind(name)
        steer = self._remote_branch(name, opts)
        if steer is not None:
            return steer
        if _previous(name) or kind == "branch" or (kind is None and self.refs_unknown()):
            return self.deny(self._SWITCH_WHY, self._switch_call(name))
        if kind in ("tag", "tracking") or (7 <= len(name) <= 40 and not name.strip(_HOOK_HEX)) \
                or any(ch in name for ch in "~^@:") or name.startswith(("HEAD", "refs/")):
            return ("allow", "")  # a detached look at a commit: nothing is lost
        return self.destroys(f"git checkout {name} names no branch here, so git reads it as a path, and checking "
                             "out a path overwrites its uncommitted changes for good")

    def ref_kind(self, name: str) -> str | None:
        if self.repo is None or self.repo.ref_kind is None:
            return None
        return self.repo.ref_kind(name)

    def refs_unknown(self) -> bool:
        return self.repo is None or self.repo.ref_kind is None

    def g_restore(self) -> tuple[str, str]:
        opts, _pos, _dd = _getopt(self.args, self.sub)
        if _has(opts, "-S", "--staged") and not _has(opts, "-W", "--worktree"):
            return ("allow", "")  # unstaging keeps the file as it is
        if _has(opts, "--ours", "--theirs", "-2", "-3", "-m", "--merge", "--conflict") and self.op is not None:
            return ("allow", "")  # picking a side while resolving a conflict
        return self.destroys("git restore of working-tree files overwrites their uncommitted changes for good")

    def g_reset(self) -> tuple[str, str]:
        opts, _pos, _dd = _getopt(self.args, self.sub)
        if not _has(opts, "--hard"):
            return ("allow", "")
        alt = ""
        if self.mid_operation():
            c = f" -C {shell_quote(self.repo.top)}" if self.foreign and self.repo else ""
            alt = f"To stop the {self.op} in progress instead, run git{c} {self.op} --abort."
        return self.destroys("git reset --hard discards uncommitted changes for good", alt)

    def g_clean(self) -> tuple[str, str]:
        opts, _pos, _dd = _getopt(self.args, self.sub)
        if _has(opts, "-n", "--dry-run"):
            return ("allow", "")
        if _has(opts, "-f", "--force", "-i", "--interactive"):
            return self.destroys("git clean -f deletes untracked files for good")
        return ("allow", "")

    def g_stash(self) -> tuple[str, str]:
        action = next((w.text for w in self.args if not w.text.startswith("-")), "push")
        if action in ("drop", "clear"):
            return self.destroys(f"git stash {action} deletes stashed work for good")
        return ("allow", "")

    # -- remote sync
    def g_push(self) -> tuple[str, str]:
        opts, pos, _dd = _getopt(self.args, self.sub)
        if _has(opts, "-n", "--dry-run"):
            return ("allow", "")
        refspecs = [w.text for w in pos[1:]]
        lease = [v.text if v is not None else "" for n, v in opts if n == "--force-with-lease"]
        force = _has(opts, "-f", "--force", "--mirror") or any(r.startswith("+") for r in refspecs)
        delete = _has(opts, "-d", "--delete", "--prune") or any(r.startswith(":") for r in refspecs)
        branches: list[str] = []
        for r in refspecs:
            src = r.lstrip("+").split(":", 1)[0]
            if src.startswith("refs/heads/"):
                src = src[len("refs/heads/"):]
            if src and src != "HEAD":
                branches.append(src)
        tags = [b for b in branches if b.startswith("refs/tags/") or self.ref_kind(b) == "tag"]
        branches = [b for b in branches if b not in tags]
        sha = next((v.split(":", 1)[1] for v in lease if ":" in v and v.split(":", 1)[1]), None)
        set_up = True if _has(opts, "-u", "--set-upstream") else None
        calls = [_call("madt_push", self.d(), ("branch", b), ("force_with_lease", sha if lease else None),
                          ("set_upstream", set_up)) for b in (branches or [None])]  # type: ignore[list-item]
        if delete:
            return self.destroys("Deleting a branch on the remote can discard commits that exist nowhere else")
        if force:
            lease_call = _call("madt_push", self.d(), ("branch", branches[0] if branches else "<branch>"),
                                  ("force_with_lease", "<the remote sha you expect to replace>"))
            return self.destroys("A force push without a lease can overwrite commits on the remote that exist "
                                 "nowhere else", "To replace the remote branch only if it is still where you last "
                                 f"saw it, use {lease_call}.")
        if lease and sha is None:
            call = _call("madt_push", self.d(), ("branch", branches[0] if branches else "<branch>"),
                            ("force_with_lease", "<the remote sha you expect to replace>"))
            return self.deny("A lease without an explicit expected sha trusts a remote-tracking ref that a "
                             "background fetch may have moved; madt_push takes the sha itself", call)
        if tags or _has(opts, "--tags"):
            names = [t.removeprefix("refs/tags/") for t in tags] or ["<tag>"]
            release = None if self.foreign else "; ".join(
                _call("madt_releases", ("action", "create"), ("tag", n),
                           ("target", "<the commit the tag points at>"))
                for n in names)
            extra = ("That makes the tag on the forge with its release, once the commit is pushed; "
                     if release else "") + "to push a tag on its own, ask the user to run the push themselves"
            extra = extra[0].upper() + extra[1:]
            if branches:
                extra += ". Push the branches with " + "; ".join(calls)
            return self.deny("madt_push pushes branches only, and a raw git push uses whatever credentials the "
                             "shell has", release, extra)
        return self.deny("Raw git push uses whatever credentials the shell has and can overwrite the remote; "
                         "madt_push pushes with madtea's own credentials and overwrites only under an explicit lease",
                         "; ".join(calls))

    def g_pull(self) -> tuple[str, str]:
        _opts, pos, _dd = _getopt(self.args, self.sub)
        branch = pos[1].text if len(pos) > 1 else None
        return self.deny("madt_pull fast-forwards only, so it never makes a surprise merge commit or rewrites history",
                         _call("madt_pull", self.d(), ("branch", branch)))

    def g_fetch(self) -> tuple[str, str]:
        opts, pos, _dd = _getopt(self.args, self.sub)
        force = _has(opts, "-f", "--force")
        for spec in pos[1:]:
            dst = spec.text.rpartition(":")[2] if ":" in spec.text else ""
            local = dst.startswith("refs/heads/") or not dst.startswith("refs/")
            if (force or spec.text.startswith("+")) and dst and local:
                return self.destroys("A forced fetch into a local branch can move it back and lose commits that "
                                     "exist nowhere else")
        if not self.foreign:
            return ("allow", "")
        return self.deny("madt_pull brings it up to date through madtea's own credentials",
                         _call("madt_pull", self.d()))

    def g_merge(self) -> tuple[str, str]:
        if not self.foreign:
            return ("allow", "")
        _opts, pos, _dd = _getopt(self.args, self.sub)
        what = pos[0].text if pos else None
        if what is None or what.startswith(("origin/", "FETCH_HEAD", "@{")):
            return self.deny("madt_pull fast-forwards it from its upstream", _call("madt_pull", self.d()))
        return self.deny("work is merged there through a pull request",
                         _call("madt_finish", self.d(), ("branch", what)))

    def g_rebase(self) -> tuple[str, str]:
        _opts, pos, _dd = _getopt(self.args, self.sub)
        branch = pos[1].text if len(pos) > 1 else None
        return self.deny("A rebase rewrites commits that a pull request or another clone may already hold",
                         _call("madt_pull", self.d(), ("branch", branch)),
                         "That brings the branch up to date without rewriting it; if a rebase is really needed, "
                         "ask the user to run it")

    # -- worktrees
    def g_worktree(self) -> tuple[str, str]:
        action = self.args[0].text if self.args else "list"
        opts, pos, _dd = _getopt(self.args[1:], "worktree " + action)
        base = self.cdir or self.ctx.cwd
        if action == "list":
            return self.note(_call("madt_worktrees", ("action", "list"), self.d()),
                             "lists worktrees as structured data.")
        if action == "add":
            path = os.path.normpath(os.path.join(base, os.path.expanduser(pos[0].text))) if pos else "<path>"
            b = _val(opts, "-b", "-B")
            call = _call("madt_worktrees", ("action", "add"), self.d(), ("path", path),
                            ("commit_ish", pos[1].text if len(pos) > 1 else None), ("b", b.text if b else None))
            return self.deny("madt_worktrees adds a worktree without creating branches behind your back", call)
        if action == "remove":
            if _has(opts, "-f", "--force"):
                return self.destroys("Force-removing a worktree discards its uncommitted changes for good")
            path = os.path.normpath(os.path.join(base, pos[0].text)) if pos else "<path>"
            return self.deny("madt_worktrees removes a worktree only when it holds no uncommitted or unpushed work",
                             _call("madt_worktrees", ("action", "remove"), self.d(), ("path", path)))
        if action == "prune":
            return self.deny("Worktree housekeeping goes through madt_worktrees",
                             _call("madt_worktrees", ("action", "list"), self.d()),
                             "Then remove the ones you own with " +
                             _call("madt_worktrees", ("action", "remove"), self.d(), ("path", "<path>")))
        return ("allow", "")

    def g_update_ref(self) -> tuple[str, str]:
        """The plumbing twin of git branch: a branch deleted or moved by update-ref is steered the same way."""
        opts, pos, _dd = _getopt(self.args, self.sub)
        if _has(opts, "--stdin"):
            return self.destroys("git update-ref --stdin can delete or move any branch, tag or stash entry it is fed")
        if pos and _has(opts, "-d") and not pos[0].text.startswith(("refs/heads/", "refs/remotes/")):
            return self.destroys(f"Deleting {pos[0].text} with git update-ref -d loses what it points at for good")
        if not pos or pos[0].dynamic or not pos[0].text.startswith("refs/heads/"):
            return ("allow", "")
        name = pos[0].text[len("refs/heads/"):]
        if _has(opts, "-d"):
            return self.destroys("Deleting a branch with git update-ref -d skips any proof that its commits exist "
                                 "elsewhere", "If its work is already merged, "
                                 f"{_call('madt_branch_delete', self.d(), ('name', name))} deletes it after "
                                 "proving that.")
        if self.ref_kind(name) == "branch" or self.refs_unknown():
            return self.destroys("Moving an existing branch with git update-ref can discard commits that exist "
                                 "nowhere else")
        return self.deny("Branches are made through madt_branch_create so the start point is explicit and checked",
                         _call("madt_branch_create", self.d(), ("name", name),
                                  ("start_point", pos[1].text if len(pos) > 1 else None)))

    def g_credential(self) -> tuple[str, str]:
        if self.args[:1] and self.args[0].text == "fill":
            return "deny", ("git credential fill prints a stored password or token into the transcript, and the "
                            "madt_* tools authenticate on their own. Use madt_whoami to see which account and "
                            "credential source a call would use.\n" + _retry("credential"))
        return ("allow", "")

    def g_checkout_index(self) -> tuple[str, str]:
        opts, _pos, _dd = _getopt(self.args, self.sub)
        if _has(opts, "-f", "--force"):
            return self.destroys("git checkout-index -f overwrites working-tree files with the index's copy, "
                                 "discarding their uncommitted changes for good")
        return ("allow", "")

    def g_read_tree(self) -> tuple[str, str]:
        opts, _pos, _dd = _getopt(self.args, self.sub)
        if _has(opts, "--reset") and _has(opts, "-u"):
            return self.destroys("git read-tree -u --reset overwrites the working tree, discarding uncommitted "
                                 "changes for good")
        return ("allow", "")

    def g_reflog(self) -> tuple[str, str]:
        action = self.args[0].text if self.args else "show"
        opts, _pos, _dd = _getopt(self.args[1:], "reflog " + action)
        early = any(n in ("--expire", "--expire-unreachable") and v is not None and v.text != "never" for n, v in opts)
        if action == "delete" or (action == "expire" and early and not _has(opts, "--dry-run")):
            return self.destroys(f"git reflog {action} throws away the record of commits a reset or rebase left "
                                 "behind, so a later gc deletes them for good")
        return ("allow", "")

    def g_gc(self) -> tuple[str, str]:
        opts, _pos, _dd = _getopt(self.args, self.sub)
        prune = _val(opts, "--prune")
        if prune is not None and prune.text in ("now", "all"):
            return self.destroys("git gc --prune=now deletes unreachable commits at once, including work only a "
                                 "reflog still remembered")
        return ("allow", "")

    def g_prune(self) -> tuple[str, str]:
        opts, _pos, _dd = _getopt(self.args, self.sub)
        expire = _val(opts, "--expire")
        if _has(opts, "-n", "--dry-run") or (expire is not None and expire.text not in ("now", "all")):
            return ("allow", "")
        return self.destroys("git prune deletes unreachable commits at once, including work only a reflog still "
                             "remembered")

    def g_rm(self) -> tuple[str, str]:
        opts, _pos, _dd = _getopt(self.args, self.sub)
        if _has(opts, "-f", "--force") and not _has(opts, "--cached", "-n", "--dry-run"):
            return self.destroys("git rm -f deletes files together with their uncommitted changes for good")
        return ("allow", "")

    def g_tag(self) -> tuple[str, str]:
        opts, pos, _dd = _getopt(self.args, self.sub)
        if _has(opts, "-d", "--delete"):
            names = ", ".join(w.text for w in pos) or "a tag"
            return self.destroys(f"Deleting {names} drops the only name the tagged commit may have")
        return ("allow", "")

    def g_remote(self) -> tuple[str, str]:
        opts, pos, _dd = _getopt(self.args, self.sub)
        if not pos and _has(opts, "-v", "--verbose") and not self.foreign:
            return self.note(_call("madt_repo", ("action", "view")),
                             "names the repository on the forge as structured data; madt_whoami says which account "
                             "a call would use.")
        return ("allow", "")


# --------------------------------------------------------------------------- the madtea CLI

def _madtea(args: list[_ShellWord], cli_ops: CliTable) -> tuple[str, str]:
    words = [w for w in args]
    while words and words[0].text.startswith("-"):
        words.pop(0)
    if not words:
        return ("allow", "")
    if any(w.text in ("-h", "--help") for w in words):
        return ("allow", "")  # help is a read
    noun = words[0].text
    verb = words[1].text if len(words) > 1 and not words[1].text.startswith("-") else None
    retry = f"Do not retry any madtea {noun} variant; every form is steered."
    if noun == "auth":
        if verb in ("login", "logout", "import-tea"):
            return "deny", ("Storing or removing a credential is a person's act: ask the user to run "
                            f"madtea auth {verb} themselves.\n" + retry)
        if verb in ("token", "git-credential"):
            return "deny", ("Printing a token puts it into the transcript, and the madt_* tools authenticate on "
                            "their own. Use madt_whoami to see which account and credential source a call would use.\n"
                            + retry)
        if verb == "status":
            return "deny", ("The madtea command line is for people; agents use the MCP tools, which return "
                            "structured results.\nUse: madt_whoami\n" + retry)
        return ("allow", "")
    if noun == "config" and verb == "set":
        return "deny", ("madtea's settings name programs it runs at a person's terminal (its editor, pager and "
                        "browser), so changing them is a person's act: ask the user to run madtea config set "
                        "themselves.\n" + retry)
    if noun == "update":
        return "deny", ("Updating madtea replaces its own files and may trust a release signing key on this machine, "
                        "which is a person's act: ask the user to run madtea update themselves.\n" + retry)
    return _madtea_registry([w.text for w in words], cli_ops(), retry)


_HOOK_PERSON_VERBS = frozenset({"delete", "rm", "remove"})


def _forge_cli(name: str, args: list[str]) -> tuple[str, str]:
    """``gh`` and ``tea`` act on the forge with credentials of their own: merges go to madt_pr, deletes
    to a person."""
    words = [a for a in args if not a.startswith("-")]
    if any(a in ("-h", "--help") for a in args) or len(words) < 2:
        return ("allow", "")
    noun, verb = words[0], words[1]
    retry = f"Do not retry any {name} {noun} variant; every form is steered."
    if verb in _HOOK_PERSON_VERBS:
        return "deny", (f"Deleting on the forge with {name} cannot be undone, so it is a person's act: ask the user to "
                        f"delete it themselves.\n{retry}")
    if verb == "merge" and noun in ("pr", "pulls", "pull"):
        number = next((w for w in words[2:] if w.isdecimal()), None)
        call = _call("madt_pr", ("action", "merge"), ("number", int(number) if number else "<number>"))
        return "deny", (f"Merging with {name} skips madtea's checks of the head it merges and of the repository it "
                        f"acts on; madt_pr merges through madtea's own credentials.\nUse: {call}\n{retry}")
    return ("allow", "")


def _rm(args: list[_ShellWord]) -> tuple[str, str]:
    """``rm -r`` of a ``.git``: the repository's history, branches and stashes."""
    recursive = any(w.text in ("--recursive",) or (w.text[:1] == "-" and w.text[1:2] != "-" and
                                                   ("r" in w.text or "R" in w.text)) for w in args)
    if recursive and any(_os_basename(w.text) == ".git" for w in args if not w.text.startswith("-")):
        what = "rm -r .git deletes the repository's history, branches and stashes for good"
        return "deny", _HOOK_DESTROYS.format(what=what) + "\nDo not retry any rm .git variant; every form is steered."
    return ("allow", "")


def _os_basename(path: str) -> str:
    return os.path.basename(os.path.normpath(path)) if path else ""


_HOOK_TOKEN_READS = frozenset({"test", "[", "[["})
_HOOK_SIGNERS = "release-signers"  # madtea's pinned release key, beside its config
_HOOK_SIGNERS_READS = frozenset({"cat", "less", "more", "head", "tail", "grep", "ls", "stat", "wc", "diff", "cmp",
                                 "sha256sum", "file", "ssh-keygen"})


def _side_effects(seg: _ShellSegment) -> list[tuple[str, str]]:
    """What any command can do by its words alone: expand madtea's token, or write the file that
    pins madtea's release key."""
    found: list[tuple[str, str]] = []
    first = seg.words[0].text if seg.words else ""
    if first not in _HOOK_TOKEN_READS and any(
            w.dynamic and ("$MADTEA_TOKEN" in w.text or "${MADTEA_TOKEN" in w.text) for w in seg.words) or (
            first == "printenv" and any(w.text.startswith("MADTEA_TOKEN") for w in seg.words[1:])):
        found.append(("deny", "MADTEA_TOKEN holds a credential: printing or passing it puts it into the transcript and "
                              "the shell's history, and the madt_* tools authenticate on their own. Use madt_whoami to "
                              "see which account and credential source a call would use.\n"
                              "Do not retry any MADTEA_TOKEN variant; every form is steered."))
    name = _basename(first)
    if any(_HOOK_SIGNERS in target for target in seg.writes) or (
            name not in _HOOK_SIGNERS_READS and any(_HOOK_SIGNERS in w.text for w in seg.words[1:])):
        found.append(("deny", f"{_HOOK_SIGNERS} pins the key madtea trusts for its own updates, so changing it is a "
                              "person's act: ask the user to do it themselves (madtea update pins a key only at a "
                              "terminal).\nDo not retry any release-signers variant; every form is steered."))
    return found


def _madtea_registry(words: list[str], cli_ops: Mapping[tuple[str, ...], Json], retry: str) -> tuple[str, str]:
    """The CLI command's MCP twin, named from the registry's own declaration of both surfaces."""
    key = next((k for k in sorted(cli_ops, key=len, reverse=True) if tuple(words[:len(k)]) == tuple(k)), None)
    nouns = {k[0] for k in cli_ops}
    spec = cli_ops[key] if key is not None else {}
    verb = words[1] if len(words) > 1 else ""
    if spec.get("person") or (key is None and words[0] in nouns and verb in _HOOK_PERSON_VERBS):
        return "deny", ("Deleting cannot be undone, so it is a person's act at a terminal: ask the user to "
                        "delete it themselves.\n" + retry)
    if spec.get("tool") is None:
        return ("allow", "")  # help, version, hook, mcp, or a command with no MCP twin
    pairs: list[tuple[str, Json]] = []
    if spec.get("action"):
        pairs.append(("action", spec["action"]))
    pairs.extend(_cli_registry_params(words[len(key or ()):], spec.get("params") or []))
    return "deny", ("The madtea command line is for people; agents use the MCP tools, which return structured "
                    f"results and errors.\nUse: {_call(spec['tool'], *pairs)}\n" + retry)


def _cli_registry_params(words: list[str], params: list[Mapping[str, Json]]) -> list[tuple[str, Json]]:
    flags: dict[str, Mapping[str, Json]] = {}
    enum_flags: dict[str, tuple[str, str]] = {}
    for p in params:
        for f in p.get("flags") or ():
            flags[f] = p
        if p.get("enum_flags"):
            for choice in p.get("choices") or ():
                enum_flags["--" + choice] = (p["name"], choice)
    positional = [p for p in params if p.get("positional")]
    got: dict[str, Json] = {}
    i = 0
    while i < len(words):
        t = words[i]
        name, eq, value = t.partition("=") if t.startswith("--") else (t, "", "")
        if t == "--":
            i += 1
            continue
        if name in enum_flags:
            got[enum_flags[name][0]] = enum_flags[name][1]
        elif name in flags:
            p = flags[name]
            if p.get("type") == "bool" and not eq:
                value = True  # type: ignore[assignment]
            elif not eq:
                i += 1
                value = words[i] if i < len(words) else ""
            if not p.get("cli_only"):
                got[p["name"]] = _cli_value(p, value, got.get(p["name"]))
        elif not t.startswith("-") and positional:
            p = positional[0]
            if p.get("type") in ("strs", "numbers"):
                got[p["name"]] = _cli_value(p, t, got.get(p["name"]))
            else:
                got[p["name"]] = _cli_value(p, t, None)
                positional.pop(0)
        i += 1
    # A secret typed on the command line is not repeated in the text that steers it to its tool.
    return [(p["name"], placeholder("the secret value") if p.get("secret") else got[p["name"]])
            for p in params if p["name"] in got]


def _cli_value(p: Mapping[str, Json], value: str | bool, before: Json) -> Json:
    kind = p.get("type")
    if kind in ("int", "number") and isinstance(value, str) and value.isdigit():
        return int(value)
    if kind in ("strs", "numbers"):
        item: int | str | bool = \
            int(value) if kind == "numbers" and isinstance(value, str) and value.isdigit() else value
        return (before or []) + [item]
    return value


# =========================================================================== 3. the hook's entry: the only I/O
#
# ``madtea hook`` runs before every shell command the agent's harness executes,
# so it stays on the standard library, starts no process and opens no socket:
# it reads the event, reads a few files of the repositories involved, writes one
# small record of where the agent's shell is (the caller signal), and answers.
# It never wedges the agent: anything it cannot read lets the command run,
# unless the command has a git or madtea word in it.
#
# It lives here, beside the classifier, so that a hook run loads guard and
# gitops alone: madtea's registry and services are read only for a line that
# runs madtea, through the table its caller hands in, and then only once per
# install or update: the table is kept in the runtime folder. This part is the
# only one of guard that does I/O: the event on stdin, the answer on stdout and
# stderr, the caller record and the kept CLI table.


def hook_command(args: Sequence[str], cli_ops: CliTable, exit: bool = False) -> int | None:
    """``madtea hook``'s exit status when *args* are ``hook ...``; None for any other command.

    *cli_ops* loads madtea's CLI table; the caller hands it in, so that only a line that runs madtea
    loads the surfaces. A harness may pass the hook words of its own: only a request for help is not an event to answer
    (an argument error would exit 2, which every harness takes as a block). With *exit* the process
    ends here once its streams are flushed: tearing the interpreter down costs more than the decision,
    and there is nothing to release (the one file write is already renamed into place).
    """
    if list(args[:1]) != ["hook"] or {"-h", "--help"} & set(args[1:]):
        return None
    code = hook_main(cli_ops)
    if exit:
        exit_flushed(code)
    return code


def exit_flushed(code: int) -> NoReturn:
    """End the process with *code* once stdout and stderr are flushed (a reader that went away is no error),
    skipping the interpreter's teardown: for a short command it costs more than the work did."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


# Each harness names its shell tool differently; the event's own fields tell them apart.
_HOOK_SHELL_TOOLS = {"PreToolUse": ("Bash",), "BeforeTool": ("run_shell_command",)}
# Processes between the hook and the agent that are not the agent itself: the
# shell the harness runs the hook command with, and common launch wrappers.
_HOOK_WRAPPERS = _HOOK_SHELLS | frozenset({"env", "timeout", "nice", "nohup", "stdbuf", "time", "sudo", "doas",
                                          "setsid"})
_HOOK_DEPTH = 6


def hook_main(cli_ops: CliTable) -> int:
    """``madtea hook``: read a pre-tool-use event on stdin, answer by exit code and streams.

    Exit 2 with the reason on stderr blocks the command (all three harnesses
    honour it); exit 0 lets it run, with an advisory note as additional context
    where the harness takes one. Never a traceback.
    """
    command: str | None = None
    try:
        raw = sys.stdin.buffer.read()
        if b"SessionStart" in raw and _session_start(raw):
            return 0
        mcp = _mcp_read(raw, cli_ops) if b"madtea__madt_" in raw else None
        if mcp is not None:  # one of madtea's own tools: a read runs without asking
            return mcp
        event = _event(raw)
        if event is None:
            return 0
        harness, command, cwd, run_dir = event
        if harness == "unknown":
            return _answer(harness, hook_failure_decision(command, "the event was not one it knows"))
        try:
            record_caller_signal(run_dir or cwd, _session(raw))
        except Exception:  # the signal is a convenience; the decision must not depend on it
            pass
        decision = classify_command(command, cwd, hook_repo_facts, _cached_table(cli_ops), run_dir=run_dir)
        return _answer(harness, decision)
    except BaseException as exc:  # never a traceback, never a wedge
        if isinstance(exc, SystemExit):
            raise
        try:
            return _answer("failure", hook_failure_decision(command, f"internal error: {type(exc).__name__}"))
        except BaseException:
            return 0


def _session_start(raw: bytes) -> bool:
    """Claude Code's SessionStart: put madtea's exec-time git first on PATH for every later shell command of
    the session, through the environment file the harness sources before each one. False when the event
    is not a session start (a shell command that merely names one is judged as always)."""
    try:
        data = gitops.from_json(raw.decode("utf-8", errors="replace"))
    except ValueError:
        return False
    if not isinstance(data, dict) or data.get("hook_event_name") != "SessionStart":
        return False
    env_file = os.environ.get("CLAUDE_ENV_FILE")
    folder = shim_folder(create=True) if env_file and os.path.isdir("/proc/self") else None
    if env_file is None or folder is None:
        return True
    quoted = shell_quote(folder)
    line = f'case ":$PATH:" in *:{quoted}:*) ;; *) export PATH={quoted}:"$PATH" ;; esac\n'
    try:
        with open(env_file, "a", encoding="utf-8") as fh:
            fh.write(line)
    except OSError:
        pass
    return True


def _mcp_read(raw: bytes, cli_ops: CliTable) -> int | None:
    """Claude Code's PreToolUse for one of madtea's MCP tools: a read action is allowed (a permission rule
    cannot tell a tool's actions apart), anything else gets no answer, so the harness asks as it would.
    None when the event is not for one of madtea's tools (a shell command is judged as always)."""
    import re

    try:
        data = gitops.from_json(raw.decode("utf-8", errors="replace"))
    except ValueError:
        return None
    tool_input = data.get("tool_input") if isinstance(data, dict) else None
    named = re.fullmatch(r"mcp__(?:plugin_madtea_)?madtea__(madt_\w+)", str(data.get("tool_name"))) \
        if isinstance(data, dict) and data.get("hook_event_name") == "PreToolUse" else None
    if named is None or not isinstance(tool_input, dict):
        return None
    action = tool_input.get("action")
    table = _cached_table(cli_ops)()
    reads = [entry for entry in (table[words] for words in table) if isinstance(entry, dict)
             and entry.get("tool") == named.group(1) and entry.get("action") == action and entry.get("reads") is True]
    if reads:
        out = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow",
                                      "permissionDecisionReason": "madtea reads without changing anything"}}
        _write(sys.stdout, gitops.to_json(out) + "\n")
    return 0


def _event(raw: bytes) -> tuple[str, str, str, str | None] | None:
    """(harness, command, cwd, run dir) of a shell-tool event; None when there is nothing to decide.

    "unknown" as the harness means a command arrived in an event the hook does
    not recognise: it is then judged by the hook-failure rule. The run dir is
    where the shell runs when that is not *cwd* (Gemini's ``dir_path``, taken
    relative to *cwd*), else None.
    """
    try:
        data = gitops.from_json(raw.decode("utf-8", errors="replace"))
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    tool_input = data.get("tool_input")
    command = tool_input.get("command") if isinstance(tool_input, dict) else None
    if not isinstance(command, str) or not command.strip():
        return None
    event = data.get("hook_event_name")
    cwd = data.get("cwd")
    if not isinstance(cwd, str) or not os.path.isabs(cwd):
        cwd = os.getcwd()
    if event not in _HOOK_SHELL_TOOLS:
        return "unknown", command, cwd, None
    if data.get("tool_name") not in _HOOK_SHELL_TOOLS[event]:
        return None  # an edit, a read, an MCP tool: not a shell command
    if event == "BeforeTool":
        where = tool_input.get("dir_path") if isinstance(tool_input, dict) else None
        run_dir = os.path.normpath(os.path.join(cwd, where)) if isinstance(where, str) and where.strip() else None
        return "gemini", command, cwd, run_dir if run_dir != cwd else None
    return ("codex" if "turn_id" in data or "model" in data else "claude"), command, cwd, None


def _answer(harness: str, decision: HookDecision) -> int:
    if decision.kind == "deny":
        _write(sys.stderr, decision.text + "\n")
        return 2
    if decision.kind == "note" and harness in ("claude", "codex"):
        # Additional context only, never a permission decision: an "allow" here
        # would approve the command on the user's behalf.
        out = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": decision.text}}
        _write(sys.stdout, gitops.to_json(out) + "\n")
    return 0  # Gemini's BeforeTool takes no additional context: silence is the safe answer there


def _write(stream: IO[str], text: str) -> None:
    try:
        stream.write(text)
        stream.flush()
    except (OSError, ValueError):
        pass


# --------------------------------------------------------------------------- repository facts, from files

def hook_repo_facts(path: str) -> HookRepo | None:
    """What the classifier needs to know of the repository holding *path*: files only, no git process."""
    real = os.path.realpath(path)
    found = _git_dir_itself(real)
    if found is None:
        found = gitops.fs_find(real)
        if found is None:
            return None
    top, git_dir, common = found
    prefix = os.path.relpath(real, top) if real != top and real.startswith(top.rstrip("/") + "/") else ""
    return HookRepo(top, git_dir, common, prefix, gitops.operation_in_progress(git_dir),
                          lambda name: _ref_kind(common, name))


def _git_dir_itself(path: str) -> tuple[str, str, str] | None:
    # GIT_DIR=... or --git-dir=... names the git dir, not a work tree.
    if not (os.path.isfile(os.path.join(path, "HEAD")) and os.path.isdir(os.path.join(path, "refs"))):
        return None
    common = gitops.common_dir_of(path)
    top = os.path.dirname(path) if os.path.basename(path) == ".git" else path
    return top, path, common


def _ref_kind(common: str, name: str) -> str | None:
    """"branch", "tag", "tracking" (``origin/main`` itself) or "remote:<remote>" (only
    ``<remote>/<name>`` exists, which git's checkout would turn into a new branch)."""
    if not name or name.startswith("-") or ".." in name:
        return None
    refs: list[str] = []
    for ref in (f"refs/heads/{name}", f"refs/tags/{name}", f"refs/remotes/{name}"):
        if os.path.isfile(os.path.join(common, ref)):
            refs.append(ref)
    remotes = os.path.join(common, "refs", "remotes")
    try:
        refs += [f"refs/remotes/{r}/{name}" for r in sorted(os.listdir(remotes))
                 if os.path.isfile(os.path.join(remotes, r, name))]
    except OSError:
        pass
    refs += gitops.packed_refs(common)
    # git's own order: a branch, then a tag, then the remote-tracking ref named in full
    for kind, ref in (("branch", f"refs/heads/{name}"), ("tag", f"refs/tags/{name}"),
                      ("tracking", f"refs/remotes/{name}")):
        if ref in refs:
            return kind
    guess = next((r.split("/", 3)[2] for r in refs if r.startswith("refs/remotes/") and r.count("/") >= 3
                  and r.split("/", 3)[3] == name), None)
    return "remote:" + guess if guess else None


# --------------------------------------------------------------------------- the caller signal

def caller_cwd_signal(max_age: float = 600) -> str | None:
    """The repo top the agent's shell was last in, as recorded by the hook for this server's agent.

    The server's agent is its nearest ancestor that is not a shell or launch wrapper, and only a
    record keyed to that process (pid plus start time, so a reused pid cannot match) is read: a
    record of a process further up belongs to whatever else that process runs. None without
    /proc, without a record, when the record is older than *max_age* seconds, says the shell was
    not in a repository, or was written by more than one agent session in that time (a process
    hosting several sessions cannot tell this server which is its own).
    """
    if not os.path.isdir("/proc/self"):
        return None
    folder = runtime_dir(create=False)
    agent = _agent(os.getpid())
    if folder is None or agent is None:
        return None
    pid, start = agent
    record = _read_record(os.path.join(folder, f"{pid}-{start}.json"))
    if record is None or record.get("pid") != pid or record.get("start") != start:
        return None
    when, top, sessions = record.get("time"), record.get("top"), record.get("sessions")
    if not isinstance(when, (int, float)) or not (-5 <= time.time() - when <= max_age) \
            or not isinstance(top, str):
        return None
    if isinstance(sessions, list) and len({gitops.to_json(s) for s in sessions}) > 1:
        return None
    return top


def _agent(pid: int) -> tuple[int, int] | None:
    """(pid, start) of *pid*'s nearest ancestor that is not a shell or launch wrapper: the agent
    process that a hook and the server it started share as the key of the signal record."""
    return next(((p, start) for p, start, comm in _ancestors(pid) if comm not in _HOOK_WRAPPERS), None)


_HOOK_SESSIONS_MAX = 8  # distinct sessions remembered per key; two already make the record no signal
_HOOK_SESSION_WINDOW = 600.0  # a session that wrote a key this recently still shares it


def _session(raw: bytes) -> str | None:
    """The event's agent session id, when the harness sends one (all three do)."""
    try:
        session = gitops.from_json(raw.decode("utf-8", errors="replace")).get("session_id")
    except (ValueError, AttributeError):
        return None
    return session[:200] if isinstance(session, str) and session else None


_HOOK_RECORD_MAX = 16384  # a record is a few hundred bytes; anything larger is not one
_HOOK_RECORD_STALE = 86400.0  # records of agents gone for a day are swept when a new agent writes
# An unchanged record is rewritten at most this often, so its time may lag the last command by this
# much: well inside the minutes the server trusts a record for.
_HOOK_RECORD_KEEP = 30.0


def _read_record(path: str) -> dict[str, Json] | None:
    """One record, read as a private file (see gitops.read_private); None when it is not one."""
    try:
        data = gitops.read_private(path, _HOOK_RECORD_MAX)
    except OSError:
        return None
    if data is None:
        return None
    try:
        record = gitops.from_json(data.decode("utf-8", errors="replace"))
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def _sweep(folder: str) -> None:
    """Remove records and temp files older than a day: their agents are gone."""
    cutoff = time.time() - _HOOK_RECORD_STALE
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        if not name.endswith((".json", ".tmp")):
            continue
        path = os.path.join(folder, name)
        try:
            if os.lstat(path).st_mtime < cutoff:
                os.unlink(path)
        except OSError:
            pass


def record_caller_signal(cwd: str, session: str | None = None) -> None:
    """Record the repo of the agent's shell cwd, keyed to the agent process, in one atomic write.

    The record also lists the sessions that wrote it lately: a key shared by several sessions
    is then no signal for any of them."""
    if not os.path.isdir("/proc/self"):
        return  # no process ancestry to key on, so no signal
    agent = _agent(os.getpid())
    folder = runtime_dir(create=True)
    if agent is None or folder is None:
        return
    repo = gitops.fs_find(cwd) if os.path.isdir(cwd) else None
    record = {"pid": agent[0], "start": agent[1], "time": time.time(), "cwd": cwd,
              "top": repo[0] if repo else None, "common_dir": repo[2] if repo else None, "session": session}
    final = os.path.join(folder, f"{agent[0]}-{agent[1]}.json")
    previous = _read_record(final)
    lately = previous is not None and isinstance(previous.get("time"), (int, float)) \
        and 0 <= record["time"] - previous["time"] <= _HOOK_SESSION_WINDOW
    sessions = previous.get("sessions") if lately and previous is not None else None
    seen = sessions if isinstance(sessions, list) else []
    record["sessions"] = ([s for s in seen if s != session] + [session])[-_HOOK_SESSIONS_MAX:]
    if previous is not None and all(previous.get(k) == record[k] for k in ("pid", "start", "cwd", "top", "common_dir",
                                                                           "session", "sessions")) \
            and isinstance(previous.get("time"), (int, float)) \
            and 0 <= record["time"] - previous["time"] < _HOOK_RECORD_KEEP:
        return  # the same place, recorded moments ago: reading it is cheaper than writing it again
    if not os.path.lexists(final):
        _sweep(folder)  # once per agent process: the folder does not grow without bound
    # A cache: a record lost to a crash is written again by the next command, so it is not synced.
    gitops.write_private(final, gitops.to_json(record).encode("utf-8"), durable=False)


_HOOK_TABLE_FORMAT = 1
_HOOK_TABLE_MAX = 1 << 20  # the table is some hundred kilobytes; anything larger is not one


def _cached_table(build: CliTable) -> CliTable:
    """*build*, with its table kept in the runtime folder for the next line that runs madtea.

    Building the table imports all of madtea.py, which costs more than the rest of the hook. The copy
    is keyed by the path, device, inode, size, modification and change times of the four modules beside
    this one, so an update (new files) or an edit (new times) of any of them makes it miss; a copy that
    is unreadable, keyed otherwise or not shaped as a table is ignored and rebuilt. It is written only
    when madtea was loaded from the folder it is keyed by.
    """
    def load() -> Mapping[tuple[str, ...], Json]:
        where = _table_key()
        folder = runtime_dir(create=True) if where is not None else None
        if where is None or folder is None:
            return build()
        path = os.path.join(folder, where[0])
        kept = _table_read(path, where[1], build)
        if kept is not None:
            return kept
        table = build()
        built = sys.modules.get("madtea")
        if os.path.dirname(os.path.abspath(getattr(built, "__file__", None) or "/")) == where[1][0]:
            _table_write(path, where[1], table)
        return table
    return load


def _table_key() -> tuple[str, list[Json]] | None:
    """(file name, key) of the table built from the modules beside this one; None where they are not files."""
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        st = os.stat(here)
        key: list[Json] = [here, _HOOK_TABLE_FORMAT]
        for name in gitops.MODULES:  # madtea declares the table, and its declarations read the other three
            sf = os.stat(os.path.join(here, name))
            key.append([name, sf.st_dev, sf.st_ino, sf.st_size, sf.st_mtime_ns, sf.st_ctime_ns])
    except OSError:  # a zip application, or a module missing: build the table each time
        return None
    return f"cli-table-{st.st_dev}-{st.st_ino}", key


def _table_read(path: str, key: list[Json], build: CliTable) -> _KeptTable | None:
    """The table kept at *path* when it is keyed by *key* and shaped as a table, else None."""
    try:
        data = gitops.read_private(path, _HOOK_TABLE_MAX)
        return _table_parse(data, key, build) if data is not None else None
    except (OSError, ValueError):  # not a private file, not ASCII, not JSON
        return None


def _table_parse(data: bytes, key: list[Json], build: CliTable) -> _KeptTable | None:
    """The table in *data* when it is keyed by *key* and shaped as a table, else None.

    *data* is one line of JSON, the index (the key, the body's size, and for each command its words and
    where its spec lies in the body), then the body: each distinct spec's JSON text once. Only the index
    is decoded here, and a spec when a line asks for it: decoding them all costs half of importing madtea.
    """
    head, _nl, body = data.partition(b"\n")
    index = gitops.from_json(head.decode("ascii"))
    if not isinstance(index, dict) or index.get("key") != key or index.get("size") != len(body):
        return None
    entries = index.get("table")
    if not isinstance(entries, list) or not entries:
        return None
    table = _KeptTable(build, body)
    for entry in entries:
        if not (isinstance(entry, list) and len(entry) == 3 and _strs(entry[0]) and entry[0]
                and type(entry[1]) is int and type(entry[2]) is int and 0 <= entry[1] < entry[2] <= len(body)):
            return None
        dict.__setitem__(table, tuple(entry[0]), (entry[1], entry[2]))
    return table


class _KeptTable(dict):  # type: ignore[type-arg]
    """A kept CLI table: (noun, verb) -> the command's spec, decoded and checked when it is looked up.

    A spec that does not decode to the shape of madtea's is not used: the table is then built anew
    and the spec read from there.
    """

    def __init__(self, build: CliTable, body: bytes) -> None:
        super().__init__()
        self._build, self._body = build, body

    def __getitem__(self, key: tuple[str, ...]) -> Json:
        start, end = dict.__getitem__(self, key)
        try:
            spec = gitops.from_json(self._body[start:end].decode("ascii"))
        except ValueError:
            spec = None
        return spec if _table_spec(spec) else self._build()[key]


def _strs(value: object) -> bool:
    """Whether *value* is a list of strings (JSON's form; the table madtea builds may hold tuples)."""
    return isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)


def _table_spec(spec: object) -> bool:
    """Whether *spec* has the shape of one command's entry in madtea's CLI table."""
    if not isinstance(spec, dict) or not isinstance(spec.get("tool"), (str, type(None))):
        return False
    if spec["tool"] is None:
        return set(spec) == {"tool", "person"} and isinstance(spec["person"], bool)
    params = spec.get("params")
    if set(spec) != {"tool", "action", "params", "reads"} or not isinstance(spec["action"], (str, type(None))) \
            or not isinstance(params, list) or not isinstance(spec["reads"], bool):
        return False
    return all(isinstance(p, dict) and set(p) == _HOOK_TABLE_PARAM and isinstance(p["name"], str)
               and isinstance(p["type"], str) and _strs(p["flags"]) and (p["choices"] is None or _strs(
                   p["choices"])) and all(isinstance(p[k], bool) for k in _HOOK_TABLE_FLAGS) for p in params)


_HOOK_TABLE_FLAGS = ("positional", "cli_only", "enum_flags", "secret")
_HOOK_TABLE_PARAM = frozenset({"name", "type", "flags", "choices", *_HOOK_TABLE_FLAGS})


def _table_write(path: str, key: list[Json], table: Mapping[tuple[str, ...], Json]) -> None:
    """Keep *table* at *path* in one atomic write, when it is plain JSON data.

    Its specs are checked when they are read, not here: a spec whose shape guard does not know is
    then built anew at each lookup, and a test holds every spec madtea builds to that shape.
    """
    body: list[bytes] = []
    spans: dict[int, tuple[int, int]] = {}  # by the spec's identity: a plural noun's commands share their specs
    entries: list[tuple[list[str], int, int]] = []
    size = 0
    try:
        for words, spec in table.items():
            span = spans.get(id(spec))
            if span is None:
                text = to_json(spec, separators=(",", ":")).encode("ascii")
                span = spans[id(spec)] = (size, size + len(text))
                body.append(text)
                size += len(text)
            entries.append((list(words), *span))
        head = to_json({"key": key, "size": size, "table": entries}, separators=(",", ":")).encode("ascii")
    except (TypeError, ValueError):
        return
    try:
        gitops.write_private(path, head + b"\n" + b"".join(body), durable=False)  # a cache: a lost write rebuilds
    except OSError:
        pass


def runtime_dir(create: bool) -> str | None:
    """``~/.cache/madtea/cwd-<machine>``: a 0700 folder found from the home folder alone.

    The hook and the server read no other variable to find it, because harnesses
    pass them different environments (Codex and Gemini give the server only some
    variables; ``XDG_RUNTIME_DIR`` or ``TMPDIR`` may be set for one and not the
    other) while every one of them passes ``HOME``. The machine's name keeps a
    home shared between machines from mixing their process ids. A folder that is
    a symlink, belongs to someone else or is open to others is not used: another
    user could otherwise plant a record.
    """
    home = os.path.expanduser("~")
    if not os.path.isabs(home) or not os.path.isdir(home):
        return None
    cache = os.path.join(home, ".cache", "madtea")
    folder = os.path.join(cache, f"cwd-{os.uname().nodename or 'localhost'}")
    if create:
        try:
            os.makedirs(cache, 0o700, exist_ok=True)
            os.mkdir(folder, 0o700)
        except FileExistsError:
            pass
        except OSError:
            return None
    try:
        st = os.lstat(folder)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        return None
    return folder


def _ancestors(pid: int) -> list[tuple[int, int, str]]:
    """(pid, start time, name) of *pid*'s ancestors, nearest first, up to a small depth, never pid 1."""
    found: list[tuple[int, int, str]] = []
    current = _proc_stat(pid)
    while current is not None and len(found) < _HOOK_DEPTH:
        parent = current[0]
        if parent <= 1:
            break
        current = _proc_stat(parent)
        if current is None:
            break
        found.append((parent, current[1], current[2]))
    return found


def _proc_stat(pid: int) -> tuple[int, int, str] | None:
    """(parent pid, start time in clock ticks, name) from /proc/<pid>/stat."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
        left, right = data.index(b"("), data.rindex(b")")
        fields = data[right + 2:].split()
        return int(fields[1]), int(fields[19]), data[left + 1:right].decode("utf-8", "replace")
    except (OSError, ValueError, IndexError):
        return None


# --------------------------------------------------------------------------- the exec-time git (the shim)
#
# Where a harness lets madtea shape the agent's shell (Claude Code's session start), a ``git`` of madtea's
# own goes first on that shell's PATH. It sees the argv git really receives, from any interpreter, script
# or string built at run time, and judges it with the hook's own table: the argv is written back as the
# one-command line it amounts to (the repository-selecting and config-carrying variables in front, an
# alias from git's config files expanded as git would) and handed to classify_command. A denial is the
# hook's text on stderr and git never runs; anything else becomes the real git (the next one on PATH
# that is not a shim). Only git that the agent itself wrote is judged: a git started by git (hooks, a
# ``git-<command>`` the agent did not write,
# ``!`` aliases, editors), or by a program started from the agent's shell that runs git inside itself
# (pre-commit, pip, npm, a build), runs as it is. Without /proc the shim lets every git run.

SHIM_FOLDER = "git-shim"
_SHIM_ENV = frozenset({"GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "GIT_DIR", "GIT_WORK_TREE", *_HOOK_GIT_RUNS_ENV})
# Programs that only start the command they are given (wrappers, editors, consoles with a shell escape, terminal
# multiplexers): like a shell, they say nothing of who wrote it.
_SHIM_PASSING = _HOOK_WRAPPERS | frozenset({
    "xargs", "find", "parallel", "watch", "script", "flock", "chronic", "unbuffer", "expect", "strace", "ltrace",
    "su", "runuser", "ionice", "taskset", "chrt", "make", "gmake", "awk", "gawk", "mawk", "nawk", "sed", "vim",
    "vi", "nvim", "ex", "view", "emacs", "tclsh", "wish", "gdb", "lldb", "sqlite3", "psql", "mysql", "mariadb",
    "less", "more", "man", "ftp", "tmux", "screen", "dtach", "abduco"})
_SHIM_INTERPRETERS = frozenset({"node", "nodejs", "perl", "ruby", "php", "lua", "deno", "bun", "Rscript", "R",
                                "julia", "osascript"})
# Options of an interpreter whose value is the code itself, or that read the code from the command line.
_SHIM_INLINE = frozenset({"-c", "-e", "-E", "--eval", "-p", "--print", "-r", "--command"})
# Where programs are installed, rather than written by the agent: a script there is a tool.
_SHIM_INSTALLED = ("/site-packages/", "/dist-packages/", "/node_modules/", "/.local/", "/.cache/", "/.nvm/",
                   "/.pyenv/", "/.volta/", "/.cargo/", "/.rustup/", "/go/", "/.linuxbrew/")
# Python's own modules that run the code or the file they are handed (``python -m runpy fix``).
_SHIM_PY_RUNNERS = frozenset({"runpy", "pdb", "code", "timeit", "trace", "cProfile", "profile", "doctest",
                              "pydoc", "idlelib"})
_SHIM_SYSTEM = ("/usr/", "/bin/", "/sbin/", "/opt/", "/nix/", "/snap/", "/gnu/")
_SHIM_GIT_GLOBALS = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env",
                               "--super-prefix", "--attr-source"})
_SHIM_DEPTH = 24


def shim_folder(create: bool) -> str | None:
    """The folder holding madtea's exec-time ``git``, kept in the hook's runtime folder; with *create*, the
    program is (re)written there for the interpreter and modules running now. None where there is none."""
    base = runtime_dir(create)
    if base is None:
        return None
    folder = os.path.join(base, SHIM_FOLDER)
    if create:
        here = os.path.dirname(os.path.abspath(__file__))
        text = _SHIM_PROGRAM.format(python=sys.executable, mark=gitops.SHIM_MARK.decode(), here=repr(here))
        path = os.path.join(folder, "git")
        try:
            os.makedirs(folder, 0o700, exist_ok=True)
            # where the launcher keeps the modules' bytecode under PYTHONDONTWRITEBYTECODE: the program reads it
            os.makedirs(os.path.join(os.path.dirname(base), "bytecode"), 0o700, exist_ok=True)
            with open(path, "rb") as fh:
                same = fh.read() == text.encode()
        except OSError:
            same = False
        if not same:
            try:
                gitops.write_private(path, text.encode(), durable=False)
                os.chmod(path, 0o700)
            except OSError:
                return None
    return folder if os.access(os.path.join(folder, "git"), os.X_OK) else None


# The program itself. It only finds guard: a madtea that is gone or cannot be imported lets git run, as a
# hook that cannot find madtea lets every command run. Once guard is loaded, guard decides.
_SHIM_PROGRAM = '''#!{python} -S
# {mark}: madtea's exec-time git; written by madtea at each session start, safe to delete.
import os, stat, sys
BYTECODE = os.path.join(os.path.expanduser("~"), ".cache", "madtea", "bytecode")  # as the launcher keeps it
try:
    st = os.lstat(BYTECODE)
    private = sys.dont_write_bytecode and stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() \\
        and not st.st_mode & 0o077
except OSError:
    private = False
prefix = sys.pycache_prefix
if private:  # for guard and gitops alone
    sys.pycache_prefix, sys.dont_write_bytecode = BYTECODE, False
try:
    sys.path.insert(0, {here})
    import guard
except BaseException:
    guard = None
if private:
    sys.pycache_prefix, sys.dont_write_bytecode = prefix, True
if guard is not None:
    guard.shim_main(sys.argv[1:])
for folder in os.environ.get("PATH", os.defpath).split(os.pathsep):
    path = os.path.join(os.path.abspath(folder or "."), "git")
    try:
        with open(path, "rb") as fh:
            if b"{mark}" in fh.read(256) or not os.access(path, os.X_OK):
                continue
    except OSError:
        continue
    os.execv(path, ["git"] + sys.argv[1:])
sys.stderr.write("git: no git on PATH besides madtea's exec-time git\\n")
sys.exit(127)
'''


def shim_main(args: Sequence[str]) -> NoReturn:
    """The exec-time ``git``: judge *args* (git's argv after ``git``) when the agent wrote the call, then
    become the real git, or refuse on stderr with exit status 1 and git never runs."""
    real = gitops.real_git()
    if real is None:
        _write(sys.stderr, "git: no git on PATH besides madtea's exec-time git\n")
        exit_flushed(127)
    try:
        decision = _shim_decision(list(args)) if _shim_judges(os.getpid()) else HookDecision("allow")
    except BaseException as exc:  # a working madtea that cannot judge holds the call, as the hook does
        if isinstance(exc, SystemExit):
            raise
        decision = hook_failure_decision("git " + " ".join(args), f"internal error: {type(exc).__name__}")
    if decision.kind == "deny":
        _write(sys.stderr, decision.text + "\n")
        exit_flushed(1)
    sys.stdout.flush()
    os.execv(real, ["git", *args])


def _shim_decision(args: list[str]) -> HookDecision:
    """The hook's decision on git doing *args* in this process's directory and environment."""
    return classify_command(shim_line(args, os.environ), os.getcwd(), hook_repo_facts,
                            _cached_table(_shim_cli_table))


def _shim_cli_table() -> Mapping[tuple[str, ...], Json]:
    """madtea's CLI table, for a shell alias that runs madtea."""
    from madtea import cli_table
    return cli_table()


def shim_line(args: list[str], env: Mapping[str, str]) -> str:
    """The one-command shell line git doing *args* amounts to: the variables that choose its repository or
    carry config in front, and an alias from git's config files (not a builtin's name) expanded as git
    expands it; a shell alias becomes its own shell text followed by the arguments."""
    named = {arg.rpartition("=")[2] for at, arg in enumerate(args)
             for arg in ([args[at + 1]] if arg == "--config-env" and at + 1 < len(args) else
                         [arg[13:]] if arg.startswith("--config-env=") else [])}
    prefix = [f"{name}={shell_quote(value)}" for name, value in sorted(env.items())
              if name in _SHIM_ENV or name in named or name.startswith(("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_"))]
    seen: set[str] = set()
    while True:
        at = _shim_subcommand(args)
        if at is None or _git_builtin(args[at]) or args[at] in seen or len(seen) > 8:
            break
        sub = args[at]
        seen.add(sub)
        value = _shim_alias(args[:at], sub, env)
        if value is None:
            break
        if value.startswith("!"):
            return " ".join([value[1:], *(shell_quote(a) for a in args[at + 1:])])
        import shlex
        try:
            args = [*args[:at], *shlex.split(value), *args[at + 1:]]
        except ValueError:
            raise _Unreadable("git's alias for it could not be read") from None
    at = _shim_subcommand(args)
    script = None if at is None or _git_builtin(args[at]) else _shim_own_script(args[at], env)
    return script if script is not None else " ".join([*prefix, "git", *(shell_quote(a) for a in args)])


def _shim_own_script(sub: str, env: Mapping[str, str]) -> str | None:
    """The text of the ``git-<sub>`` git would run from PATH when the agent wrote it (outside the places
    programs are installed): git's children reach git past the shim, so the script is judged as a line."""
    for folder in env.get("PATH", os.defpath).split(os.pathsep):
        path = os.path.realpath(os.path.join(folder or ".", "git-" + sub))
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            continue
        if _shim_installed(path):
            return None
        try:
            with open(path, "rb") as fh:
                return fh.read(1 << 16).decode("utf-8")
        except (OSError, UnicodeDecodeError):
            raise _Unreadable(f"git would run {path}, which could not be read") from None
    return None


def _shim_subcommand(args: list[str]) -> int | None:
    """Where git's subcommand is in *args*, past git's own options; None when there is none."""
    at = 0
    while at < len(args) and args[at].startswith("-"):
        if args[at] in _SHIM_GIT_GLOBALS:
            at += 1
        at += 1
    return at if at < len(args) else None


def _shim_alias(globals_: list[str], sub: str, env: Mapping[str, str]) -> str | None:
    """``alias.<sub>`` as git itself reads it for this call (its files, ``-c`` and the environment)."""
    picked: list[str] = []
    i = 0
    while i < len(globals_):
        if globals_[i] in _SHIM_GIT_GLOBALS and i + 1 < len(globals_):
            picked += globals_[i:i + 2]
            i += 2
            continue
        if globals_[i].split("=", 1)[0] in _SHIM_GIT_GLOBALS:
            picked.append(globals_[i])
        i += 1
    where = {name: env[name] for name in ("GIT_DIR", "GIT_WORK_TREE") if name in env}
    found = gitops.git(*picked, "config", "--get", f"alias.{sub}", cwd=os.getcwd(), env=where or None, check=False)
    return found.text if found.ok and found.text.strip() else None


def _shim_judges(pid: int) -> bool:
    """Whether the git call of process *pid* is the agent's own to judge, read from its ancestors.

    Shells, launch wrappers, interpreters running code from their command line or stdin, and scripts
    outside the places programs are installed pass the call up: they only run what someone wrote. The
    first ancestor that is none of those decides. git itself: its own children (hooks, aliases, editors)
    run, the outer call having been judged. A program started from the agent's shell (its environment
    already has this folder on PATH) runs git inside itself and is let be. Anything else, the harness
    that runs the agent's shell, means the agent wrote the call. False without /proc."""
    if not os.path.isdir("/proc/self"):
        return False
    mine = os.path.dirname(os.path.realpath(sys.argv[0] or "."))
    current = pid
    for _ in range(_SHIM_DEPTH):
        found = _proc_stat(current)
        if found is None or found[0] <= 1:
            return True
        child, current = current, found[0]
        if _proc_stat(current) is None:
            return True
        exe = _proc_exe(current)
        name = os.path.basename(exe)
        if (name == "git" or name.startswith("git-")) and _shim_installed(exe):
            # the real git by its program file: a name (comm, argv[0]) is anyone's to choose
            if _shim_own_command(child):
                continue
            return False
        if _shim_passes_up(_proc_words(current, "cmdline"), exe, current):
            continue
        return not any(os.path.realpath(folder or ".") == mine
                       for folder in _proc_path(current).split(os.pathsep))
    return True


def _shim_passes_up(argv: list[str], exe: str = "", pid: int | None = None) -> bool:
    """True for a process that only runs what it was handed (a shell, a wrapper, inline code, the agent's
    own script or program); False for a program: a native one, or a script, where programs are installed.
    *exe* is its program file (argv[0] is anyone's to choose), *pid* gives its directory and environment."""
    if not argv:
        return True
    names = {os.path.basename(argv[0]).lstrip("-"), *([os.path.basename(exe)] if exe else [])}
    if any(name in _HOOK_SHELLS or name in _SHIM_PASSING for name in names):
        return True
    if exe and not _shim_installed(exe):
        return True  # a program the agent copied or built
    python = any(_python(name) for name in names)
    if not (python or names & _SHIM_INTERPRETERS):
        return False
    rest = argv[1:]
    while rest and rest[0].startswith("-") and rest[0] != "-":
        option = rest.pop(0)
        if option in _SHIM_INLINE or option.startswith(("--eval=", "--print=")):
            return True
        if option.startswith("--"):
            continue
        if not python:
            if option[1:].isalpha() and ("e" in option or "E" in option):
                return True  # perl -le, ruby -ne
            continue
        for at, letter in enumerate(option[1:], 2):
            if letter == "c":
                return True
            if letter == "m":
                return _shim_own_module(option[at:] or (rest[0] if rest else ""), pid)
            if letter in "WXQ":
                if at == len(option) and rest:
                    rest.pop(0)
                break
    if not rest or rest[0] == "-" or rest[0].startswith("/dev/fd/") or rest[0].startswith("/proc/"):
        return True  # code read from stdin
    # A script named from a directory: the process may since have left it, so each place it may be must hold it.
    bases = {os.getcwd(), _proc_exe(pid, "cwd") if pid is not None else ""} - {""}
    scripts = {os.path.realpath(os.path.join(base, rest[0])) for base in bases}
    if any(os.path.basename(script) in _SHIM_PASSING for script in scripts):
        return True  # GNU parallel is a perl script
    return not all(os.path.isfile(script) and _shim_installed(script) for script in scripts)


def _shim_own_command(pid: int) -> bool:
    """Whether process *pid*, started by git, is a ``git-<command>`` the agent wrote (git runs one it finds
    in its exec path or on PATH): git only started it, as a shell would."""
    exe = _proc_exe(pid)
    paths = [exe] if os.path.basename(exe).startswith("git-") else _proc_words(pid, "cmdline")[1:3]
    return any(os.path.basename(path).startswith("git-") and not _shim_installed(os.path.realpath(path))
               for path in paths)


def _shim_installed(path: str) -> bool:
    """Whether the file *path* lies where programs are installed, rather than where the agent writes."""
    return any(part in path for part in _SHIM_INSTALLED) or path.startswith(_SHIM_SYSTEM) \
        or os.path.isfile(os.path.join(os.path.dirname(os.path.dirname(path)), "pyvenv.cfg"))


def _shim_own_module(module: str, pid: int | None) -> bool:
    """``python -m module``: True when it runs code it is handed, or is the agent's own (found in the
    process's directory or on its PYTHONPATH outside installed places); False for an installed tool."""
    top = module.partition(".")[0]
    if not top or top in _SHIM_PY_RUNNERS:
        return True
    folders = [os.getcwd()]
    if pid is not None:
        folders.append(_proc_exe(pid, "cwd"))
        folders += next((word[11:].split(os.pathsep) for word in _proc_words(pid, "environ")
                         if word.startswith("PYTHONPATH=")), [])
    return any(folder and not _shim_installed(os.path.join(folder, "")) and
               (os.path.isfile(os.path.join(folder, top + ".py")) or os.path.isdir(os.path.join(folder, top)))
               for folder in folders)


def _proc_exe(pid: int, what: str = "exe") -> str:
    """/proc/<pid>/exe (or cwd): the process's program file; "" where it cannot be read."""
    try:
        return os.readlink(f"/proc/{pid}/{what}").removesuffix(" (deleted)")
    except OSError:
        return ""


def _proc_words(pid: int, what: str) -> list[str]:
    """/proc/<pid>/cmdline (or environ) as its NUL-separated words; [] where it cannot be read."""
    try:
        with open(f"/proc/{pid}/{what}", "rb") as fh:
            data = fh.read()
    except OSError:
        return []
    return [os.fsdecode(word) for word in data.split(b"\0") if word]


def _proc_path(pid: int) -> str:
    """The PATH process *pid* started with."""
    return next((word[5:] for word in _proc_words(pid, "environ") if word.startswith("PATH=")), "")
