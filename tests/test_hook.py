"""The agent hook: the command table, the texts it locks, the three harnesses, the caller signal, its imports."""
from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import gitops
import guard
import madtea
from helpers import classify
from hook_cases import ALL_TABLES

ROOT = Path(__file__).resolve().parent.parent
DESIGN_ONLY_TOOLS = {"madt_finish": {"title", "body", "files", "style", "delete_branch", "closes", "close_linked",
                                     "no_close", "branch", "dir"}}


# --------------------------------------------------------------------------- the sandbox

def _git(cwd: Path, *args: str, env: dict[str, str], check: bool = True) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=env, check=check, capture_output=True)


def _stopped(path: Path, env: dict[str, str], how: str) -> None:
    """A repo whose main and side branches both change f.txt, stopped on the conflict by *how*."""
    path.mkdir()
    _git(path, "init", "-q", "-b", "main", env=env)
    (path / "f.txt").write_text("base\n")
    _git(path, "add", "f.txt", env=env)
    _git(path, "commit", "-q", "-m", "base", env=env)
    _git(path, "switch", "-q", "-c", "side", env=env)
    (path / "f.txt").write_text("side\n")
    _git(path, "commit", "-q", "-am", "side", env=env)
    _git(path, "switch", "-q", "main", env=env)
    (path / "f.txt").write_text("main\n")
    _git(path, "commit", "-q", "-am", "main", env=env)
    if how == "merge":
        _git(path, "merge", "side", env=env, check=False)
    elif how == "rebase":
        _git(path, "switch", "-q", "side", env=env)
        _git(path, "rebase", "main", env=env, check=False)
    else:
        _git(path, "cherry-pick", "side", env=env, check=False)


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Repos built once per module, with a git environment of their own (the seal is per test)."""
    base = Path(os.path.realpath(tmp_path_factory.mktemp("hook")))
    cfg = base / "gitconfig"
    cfg.write_text("[user]\n\tname = Test Person\n\temail = test@example.invalid\n[init]\n\tdefaultBranch = main\n"
                   "[advice]\n\tdetachedHead = false\n[commit]\n\tgpgsign = false\n")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(base), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": str(cfg), "GIT_AUTHOR_DATE": "1767225600 +0000",
           "GIT_COMMITTER_DATE": "1767225600 +0000", "LC_ALL": "C"}
    a, b = base / "a", base / "b"
    a.mkdir()
    b.mkdir()
    _git(a, "init", "-q", "-b", "main", env=env)
    (a / "a.py").write_text("print('a')\n")
    (a / "sub").mkdir()
    (a / "sub" / "c.py").write_text("print('c')\n")
    _git(a, "add", "a.py", "sub/c.py", env=env)
    _git(a, "commit", "-q", "-m", "first", env=env)
    _git(a, "branch", "feat", env=env)
    _git(a, "tag", "v1", env=env)
    _git(a, "update-ref", "refs/remotes/origin/main", "HEAD", env=env)
    _git(a, "update-ref", "refs/remotes/origin/rfeat", "HEAD", env=env)  # a branch only the remote has
    _git(a, "worktree", "add", "-q", "-b", "wtbranch", str(base / "wt"), env=env)
    _git(b, "init", "-q", "-b", "main", env=env)
    _git(b, "commit", "-q", "--allow-empty", "-m", "first", env=env)
    _stopped(base / "m", env, "merge")
    _stopped(base / "r", env, "rebase")
    _stopped(base / "c", env, "cherry-pick")
    (base / "n").mkdir()
    paths = {"P": str(base), "A": str(a), "B": str(b), "WT": str(base / "wt"), "M": str(base / "m"),
             "R": str(base / "r"), "C": str(base / "c"), "N": str(base / "n")}
    assert (base / "m" / ".git" / "MERGE_HEAD").is_file()
    assert (base / "r" / ".git" / "rebase-merge").is_dir()
    assert (base / "c" / ".git" / "CHERRY_PICK_HEAD").is_file()
    return paths


def fill(text: str, paths: dict[str, str]) -> str:
    for key, value in paths.items():
        text = text.replace("{" + key + "}", value)
    return text


def _table_params() -> list:
    out = []
    for where, cases in ALL_TABLES.items():
        for i, (command, kind, phrase) in enumerate(cases):
            short = command.replace("\n", "⏎")[:60]
            out.append(pytest.param(where, command, kind, phrase, id=f"{where}-{i}-{short}"))
    return out


def _all_decisions(paths: dict[str, str]) -> list[tuple[str, guard.HookDecision]]:
    found = []
    for where, cases in ALL_TABLES.items():
        cwd = paths[where.split("-")[0]]
        for command, _kind, _phrase in cases:
            found.append((cwd, classify(fill(command, paths), cwd)))
    return found


# --------------------------------------------------------------------------- the table

def test_the_table_is_large_enough() -> None:
    assert sum(len(cases) for cases in ALL_TABLES.values()) >= 150


@pytest.mark.parametrize("where, command, kind, phrase", _table_params())
def test_command_table(sandbox: dict[str, str], where: str, command: str, kind: str, phrase: str | None) -> None:
    cwd = sandbox[where.split("-")[0]]
    decision = classify(fill(command, sandbox), cwd)
    assert decision.kind == kind, decision.text
    if phrase is None:
        assert decision.text == ""
    else:
        assert fill(phrase, sandbox) in decision.text


# --------------------------------------------------------------------------- locked texts

def test_none_of_it_ran_sentence(sandbox: dict[str, str]) -> None:
    decision = classify("git add a.py && git commit -m x a.py", sandbox["A"])
    assert decision.text.split("\n")[0] == \
        "This entire command was blocked; none of it ran (the git add did not execute)."
    assert decision.segment == "git add a.py"


def test_single_command_has_no_none_of_it_ran_sentence(sandbox: dict[str, str]) -> None:
    assert "none of it ran" not in classify("git add a.py", sandbox["A"]).text


def test_add_text_exactly(sandbox: dict[str, str]) -> None:
    assert classify("git add a.py b.py", sandbox["A"]).text == (
        "Raw git add can sweep unrelated or someone else's changes into the index; madt_add stages exactly "
        "the files you name.\n"
        'Use: madt_add files=["a.py","b.py"]\n'
        "Do not retry any raw git add variant; every form is steered.")


def test_commit_text_exactly(sandbox: dict[str, str]) -> None:
    assert classify('git commit -m "x" a.py', sandbox["A"]).text == (
        "Raw git commit records whatever happens to be staged, including other people's work; madt_commit "
        "commits exactly the files you name.\n"
        'Use: madt_commit files=["a.py"] title="x"\n'
        "Do not retry any raw git commit variant; every form is steered.")


@pytest.mark.parametrize("line, use", [
    ("git commit -m a#b a.py", 'madt_commit files=["a.py"] title="a#b"'),  # "#" inside a word is no comment
    ('git commit -m "x\\qy \\"z\\"" a.py', 'madt_commit files=["a.py"] title="x\\\\qy \\"z\\""'),
    ("git commit -m x'y'\"z\"w a.py", 'madt_commit files=["a.py"] title="xyzw"'),
    ("git commit -m é#ü\\ a.py", 'madt_commit files=["<path>","..."] title="é#ü a.py"'),
])
def test_a_word_reads_as_bash_joins_it(sandbox: dict[str, str], line: str, use: str) -> None:
    """Plain runs end where the shell gives a character a meaning, and the pieces join into one word."""
    assert f"Use: {use}" in classify(line, sandbox["A"]).text.splitlines()


def test_foreign_text_names_dir(sandbox: dict[str, str]) -> None:
    text = classify(f"git -C {sandbox['B']} add x.py", sandbox["A"]).text
    assert text.split("\n")[0] == (
        f"This git add acts on {sandbox['B']}, a different repository from the one your shell is in "
        f"({sandbox['A']}); the madt_* tools act there only when it is named with dir=.")
    assert f'Use: madt_add dir="{sandbox["B"]}" files=["x.py"]' in text


def test_mid_operation_rail_exactly(sandbox: dict[str, str]) -> None:
    assert classify("git add f.txt", sandbox["M"]).text == (
        f"A merge is in progress in {sandbox['M']}: stage the resolved files with madt_add files=[\"f.txt\"], "
        "then finish with GIT_EDITOR=true git merge --continue (or stop with git merge --abort).\n"
        "Do not retry any raw git add variant; every form is steered.")


def test_rail_for_a_compound_line_names_the_files_once(sandbox: dict[str, str]) -> None:
    text = classify("git add f.txt && git commit --no-edit", sandbox["M"]).text
    assert text.split("\n") == [
        "This entire command was blocked; none of it ran (the git add did not execute).",
        f"A merge is in progress in {sandbox['M']}: stage the resolved files with madt_add files=[\"f.txt\"], "
        "then finish with GIT_EDITOR=true git merge --continue (or stop with git merge --abort).",
        "Do not retry any raw git add variant; every form is steered.",
        "Do not retry any raw git commit variant; every form is steered.",
    ]


@pytest.mark.parametrize("verb, command", [("add", "git add ."), ("commit", "git commit -am x"),
                                           ("push", "git push"), ("reset", "git reset --hard")])
def test_do_not_retry_line(sandbox: dict[str, str], verb: str, command: str) -> None:
    text = classify(command, sandbox["A"]).text
    assert text.split("\n")[-1] == f"Do not retry any raw git {verb} variant; every form is steered."


def test_every_denial_ends_with_do_not_retry(sandbox: dict[str, str]) -> None:
    for _cwd, decision in _all_decisions(sandbox):
        if decision.kind == "deny":
            assert re.fullmatch(r"Do not retry any (raw git [\w-]+|madtea [\w-]+|gh \w+|tea \w+|rm \.git|MADTEA_TOKEN|"
                                r"release-signers) variant; every form is steered\.",
                                decision.text.split("\n")[-1]), decision.text


def test_notes_carry_no_permission_words(sandbox: dict[str, str]) -> None:
    notes = [d.text for _cwd, d in _all_decisions(sandbox) if d.kind == "note"]
    assert notes
    for text in notes:
        assert "allow" not in text.lower() and "permissiondecision" not in text.lower(), text


def test_texts_are_self_contained(sandbox: dict[str, str]) -> None:
    for _cwd, decision in _all_decisions(sandbox):
        assert not re.search(r"\bADR\b|#\d|\bissue \d", decision.text), decision.text


# --------------------------------------------------------------------------- the chain: named calls are real

_CALL = re.compile(r'(madt_\w+)((?: \w+=(?:"(?:[^"\\]|\\.)*"|\[[^\]]*\]|[^\s,;]+))*)')
_ARG = re.compile(r' (\w+)=')


def test_named_calls_exist_with_their_parameters(sandbox: dict[str, str]) -> None:
    tools: dict[str, dict[str | None, set[str]]] = {}
    for op in madtea.REGISTRY:
        tools.setdefault(op.tool, {})[op.action] = {p.name for p in op.params if not p.cli_only}
    checked = 0
    for _cwd, decision in _all_decisions(sandbox):
        for m in _CALL.finditer(decision.text):
            tool, args = m.group(1), _ARG.findall(m.group(2))
            if tool in DESIGN_ONLY_TOOLS and tool not in tools:
                assert set(args) <= DESIGN_ONLY_TOOLS[tool], m.group(0)
                continue
            assert tool in tools, m.group(0)
            if not args and None not in tools[tool]:
                continue  # the tool named in prose ("through madt_worktrees"), not a call
            action = re.search(r" action=(\w+)", m.group(2))
            key = action.group(1) if action else None
            assert key in tools[tool], m.group(0)
            assert set(args) - {"action"} <= tools[tool][key], m.group(0)
            checked += 1
    assert checked > 50


def test_recommended_shell_commands_are_not_blocked(sandbox: dict[str, str]) -> None:
    shell = re.compile(r"(GIT_EDITOR=true git(?: -C \S+)? [\w-]+ --continue|git(?: -C \S+)? [\w-]+ --abort)")
    found = 0
    for cwd, decision in _all_decisions(sandbox):
        for command in shell.findall(decision.text):
            assert classify(command, cwd).kind == "allow", command
            found += 1
    assert found >= 5


def test_failure_rule() -> None:
    held = guard.hook_failure_decision("git add .", "the event was not one it knows")
    assert held.kind == "deny" and "could not check this command" in held.text and "madt_add" in held.text
    assert held.text.split("\n")[-1].startswith("Do not retry it in another shell form")  # what not to do next
    assert guard.hook_failure_decision("ls -la", "x").kind == "allow"
    assert guard.hook_failure_decision(None, "x").kind == "allow"


# Lines nested deeper than the reader follows: held when a git or madtea word is inside, read otherwise.
_DEEP = [("f() { f \"$@\"; }; f git push", True), ("eval " * 30 + "ls -la", False),
         ("echo " + "$(" * 200 + "git push" + ")" * 200, True), ("echo " + "$(" * 200 + "date" + ")" * 200, False),
         ("x=" + "`echo " * 3 + "$(" * 150 + "madtea pr merge 3" + ")" * 150 + "`" * 3, True)]


@pytest.mark.parametrize("line, held", _DEEP, ids=[f"{i}-{'held' if h else 'read'}" for i, (_l, h) in enumerate(_DEEP)])
def test_a_line_the_reader_cannot_finish_is_held_when_git_could_hide_there(sandbox: dict[str, str], line: str,
                                                                          held: bool) -> None:
    decision = classify(line, sandbox["A"])
    if not held:
        assert decision.kind == "allow", decision.text
        return
    assert decision.kind == "deny"
    said, way_on = decision.text.split("\n")[-2:]
    assert said.startswith("madtea's hook could not read this command to its end") and "none of it ran" in said
    assert way_on.startswith("Write the git or madtea step as a plain command of its own")


def test_an_eval_chain_is_read_through_to_its_command(sandbox: dict[str, str]) -> None:
    assert "madt_push" in classify("eval " * 25 + "git push", sandbox["A"]).text
    assert classify("eval " * 40 + "git status", sandbox["A"]).kind == "note"


def test_the_nesting_limit_holds_through_the_installed_hook(sandbox: dict[str, str]) -> None:
    proc = run_hook(_event("claude", "echo " + "$(" * 200 + "git push" + ")" * 200, sandbox["A"]), cwd=sandbox["A"])
    assert proc.returncode == 2 and "could not read this command" in proc.stderr and "Traceback" not in proc.stderr


# --------------------------------------------------------------------------- the hook process, per harness

def _event(harness: str, command: str, cwd: str) -> dict:
    if harness == "gemini":
        return {"session_id": "s", "transcript_path": "/dev/null", "cwd": cwd, "hook_event_name": "BeforeTool",
                "timestamp": "2026-01-01T00:00:00Z", "tool_name": "run_shell_command",
                "tool_input": {"command": command}}
    event = {"session_id": "s", "transcript_path": "/dev/null", "cwd": cwd, "permission_mode": "default",
             "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": "t1",
             "tool_input": {"command": command, "description": "run it"}}
    if harness == "codex":
        event.update(model="gpt-5-codex", turn_id="turn-1")
    return event


def run_hook(payload: object, cwd: str | None = None) -> subprocess.CompletedProcess[str]:
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return _decoded(subprocess.run([sys.executable, "-m", "madtea", "hook"], input=data, capture_output=True,
                                   env=env, cwd=cwd, timeout=60))


def _decoded(proc: subprocess.CompletedProcess[bytes]) -> subprocess.CompletedProcess[str]:
    return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode(), proc.stderr.decode())


@pytest.mark.parametrize("harness", ["claude", "codex", "gemini"])
def test_deny_is_exit_2_with_the_reason_on_stderr(sandbox: dict[str, str], harness: str) -> None:
    proc = run_hook(_event(harness, "git add a.py && git push", sandbox["A"]), sandbox["A"])
    assert proc.returncode == 2
    assert proc.stderr.startswith("This entire command was blocked; none of it ran (the git add did not execute).")
    assert 'madt_add files=["a.py"]' in proc.stderr
    assert proc.stdout == ""


@pytest.mark.parametrize("harness", ["claude", "codex"])
def test_note_is_additional_context_without_a_decision(sandbox: dict[str, str], harness: str) -> None:
    proc = run_hook(_event(harness, "git status", sandbox["A"]), sandbox["A"])
    assert proc.returncode == 0 and proc.stderr == ""
    out = json.loads(proc.stdout)
    assert out == {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                          "additionalContext": out["hookSpecificOutput"]["additionalContext"]}}
    assert "madt_status" in out["hookSpecificOutput"]["additionalContext"]
    assert "permissionDecision" not in proc.stdout and "allow" not in proc.stdout.lower()


def test_gemini_dir_path_is_where_the_command_is_judged(sandbox: dict[str, str]) -> None:
    """Gemini runs the shell in cwd/dir_path: a dir_path into another repo is advised with that dir=."""
    event = _event("gemini", "git add a.py", sandbox["A"])
    event["tool_input"]["dir_path"] = os.path.relpath(sandbox["B"], sandbox["A"])
    proc = run_hook(event, sandbox["A"])
    assert proc.returncode == 2
    assert f'madt_add dir="{sandbox["B"]}" files=["a.py"]' in proc.stderr, proc.stderr
    event["tool_input"]["dir_path"] = "sub"
    proc = run_hook(event, sandbox["A"])
    assert proc.returncode == 2 and 'madt_add files=["sub/a.py"]' in proc.stderr, proc.stderr


def test_gemini_note_prints_nothing(sandbox: dict[str, str]) -> None:
    proc = run_hook(_event("gemini", "git status", sandbox["A"]), sandbox["A"])
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")


@pytest.mark.parametrize("harness", ["claude", "codex", "gemini"])
def test_allow_prints_nothing(sandbox: dict[str, str], harness: str) -> None:
    proc = run_hook(_event(harness, "ls -la && echo 'git add .'", sandbox["A"]), sandbox["A"])
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")


@pytest.mark.parametrize("payload", [
    b"not json at all", b"", b"[1, 2]", b"\xff\xfe garbage",
    {"hook_event_name": "PreToolUse", "tool_name": "Bash"},
    {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {}},
    {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": 42}},
    {"hook_event_name": "PreToolUse", "tool_name": "Edit", "tool_input": {"command": "git add ."}},
    {"hook_event_name": "PreToolUse", "tool_name": "mcp__x__y", "tool_input": {"file_path": "git"}},
    {"hook_event_name": "BeforeTool", "tool_name": "write_file", "tool_input": {"command": "git push -f"}},
    {"hook_event_name": "SessionStart", "tool_input": {"command": "ls"}},
], ids=["text", "empty", "list", "bytes", "no-input", "no-command", "bad-command", "edit-tool", "mcp-tool",
        "gemini-write", "unknown-event-ls"])
def test_malformed_or_other_events_pass_silently(payload: object) -> None:
    proc = run_hook(payload)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")


def test_unknown_event_with_a_git_word_is_held(sandbox: dict[str, str]) -> None:
    proc = run_hook({"hook_event_name": "Mystery", "cwd": sandbox["A"], "tool_input": {"command": "git add ."}})
    assert proc.returncode == 2
    assert "hook could not check this command" in proc.stderr and "Traceback" not in proc.stderr


def test_missing_cwd_uses_the_process_cwd(sandbox: dict[str, str]) -> None:
    event = _event("claude", "git -C sub add c.py", sandbox["A"])
    del event["cwd"]
    proc = run_hook(event, sandbox["A"])
    assert proc.returncode == 2 and 'madt_add files=["sub/c.py"]' in proc.stderr


def _in_process(monkeypatch: pytest.MonkeyPatch, payload: dict) -> int:
    stdin = io.TextIOWrapper(io.BytesIO(json.dumps(payload).encode()))
    monkeypatch.setattr(sys, "stdin", stdin)
    return madtea.hook_main()


@pytest.mark.parametrize("command, code", [("git push", 2), ("madtea issue list", 2), ("ls", 0)])
def test_internal_error_never_wedges(sandbox: dict[str, str], monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str], command: str, code: int) -> None:
    def broken(*_a: object, **_k: object) -> guard.HookDecision:
        raise RuntimeError("boom")
    monkeypatch.setattr(guard, "classify_command", broken)
    assert _in_process(monkeypatch, _event("claude", command, sandbox["A"])) == code
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert ("internal error" in err) == (code == 2)


# --------------------------------------------------------------------------- imports on the hook path

_FORBIDDEN = {"mcp", "forge", "argparse", "ssl", "_ssl", "urllib", "http.client", "subprocess", "socket",
              "dataclasses", "inspect", "pathlib", "typing", "difflib", "threading"}


def _imported(flags: list[str], cwd: str, command: str = "git status", code: int = 0,
              entry: tuple[str, ...] = ("-m", "madtea")) -> set[str]:
    """Modules the hook itself imports (those that site imports at start-up are left out)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    event = json.dumps(_event("claude", command, cwd)).encode()
    proc = subprocess.run([sys.executable, *flags, "-X", "importtime", *entry, "hook"], input=event,
                          capture_output=True, env=env, cwd=cwd, timeout=60)
    assert proc.returncode == code, proc.stderr.decode()
    names: set[str] = set()
    group: list[str] = []
    for line in proc.stderr.decode().splitlines():
        if not line.startswith("import time:") or "|" not in line or "cumulative" in line:
            continue
        raw = line.rsplit("|", 1)[1]
        name = raw.strip()
        group.append(name)
        if raw[1:] == raw.lstrip():  # a top-level import closes the group of its nested ones
            if name != "site":
                names.update(group)
            group = []
    return names


# Run as pip's console-script wrapper runs it (it imports re first), with an audit hook
# that records every attempt to start a process or open a socket.
_CONSOLE_SCRIPT = """
import json, sys
seen = []
_WATCHED = ("subprocess.", "socket.", "os.fork", "os.exec", "os.posix_spawn", "os.spawn", "os.system")
sys.addaudithook(lambda event, args: seen.append(event) if event.startswith(_WATCHED) else None)
import re
import madtea
built = []
table = madtea.cli_table
madtea.cli_table = lambda: built.append(1) or table()
code = madtea.main(["hook"])
with open(sys.argv[1], "w") as fh:
    json.dump({"events": seen, "modules": sorted(sys.modules), "table": bool(built)}, fh)
sys.exit(code)
"""


@pytest.mark.parametrize("command, code, table", [("git status", 0, False), ("git add x && git commit -m y", 2, False),
                                                  ("madtea issue list", 2, True)],
                         ids=["allow", "deny", "madtea-command"])
def test_hook_starts_no_process_opens_no_socket_and_reads_the_cli_table_only_for_madtea(
        sandbox: dict[str, str], tmp_path: Path, command: str, code: int, table: bool) -> None:
    out = tmp_path / "seen.json"
    proc = subprocess.run([sys.executable, "-c", _CONSOLE_SCRIPT, str(out)], cwd=sandbox["A"], timeout=60,
                          input=json.dumps(_event("claude", command, sandbox["A"])).encode(), capture_output=True,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.returncode == code, proc.stderr.decode()
    seen = json.loads(out.read_text(encoding="utf-8"))
    assert seen["events"] == []
    assert not {m for m in seen["modules"] if m.split(".")[0] in _FORBIDDEN}, seen["modules"]
    assert seen["table"] is table


@pytest.mark.parametrize("command, code", [("git status", 0), ("git add x && git commit -m y", 2)],
                         ids=["allow", "deny"])
@pytest.mark.parametrize("flags", [[], ["-S"]], ids=["with-site", "without-site"])
def test_hook_path_imports_nothing_heavy(sandbox: dict[str, str], flags: list[str], command: str, code: int) -> None:
    names = _imported(flags, sandbox["A"], command, code)
    assert "guard" in names
    bad = {n for n in names if n in _FORBIDDEN or n.startswith(("mcp.", "forge.", "urllib."))}
    assert not bad, sorted(bad)


# What the interpreter itself does not import at start-up, and costs more than the decision: re and
# json (which import enum and functools) and collections.
_STARTUP_HEAVY = {"re", "json", "enum", "functools", "collections"}


@pytest.mark.parametrize("command, code", [("git status", 0), ("git add x && git commit -m y", 2),
                                           ("python -m pytest -q", 0), ("FOO=1 npm test", 0)],
                         ids=["allow", "deny", "python", "other"])
def test_the_installed_launcher_runs_the_hook_on_the_start_up_modules_alone(
        sandbox: dict[str, str], command: str, code: int) -> None:
    names = _imported([], sandbox["A"], command, code, entry=(str(ROOT / "bin" / "madtea"),))
    assert "guard" in names and "gitops" in names
    bad = {n for n in names if n.split(".")[0] in _FORBIDDEN | _STARTUP_HEAVY | {"madtea"}}
    assert not bad, sorted(bad)


def test_the_launchers_hook_reads_madteas_cli_table_for_a_madtea_line(sandbox: dict[str, str]) -> None:
    names = _imported([], sandbox["A"], "madtea issue list", 2, entry=(str(ROOT / "bin" / "madtea"),))
    assert "madtea" in names  # the table comes from the registry, read only for such a line
    assert not {n for n in names if n.split(".")[0] in _FORBIDDEN}


# --------------------------------------------------------------------------- the kept CLI table

def _copy_install(tmp_path: Path) -> Path:
    """The launcher and the four modules, laid out as a checkout, to edit without touching this one."""
    top = tmp_path / "install"
    (top / "bin").mkdir(parents=True)
    shutil.copy2(ROOT / "bin" / "madtea", top / "bin" / "madtea")
    for name in ("madtea.py", "guard.py", "gitops.py", "forge.py"):
        shutil.copy2(ROOT / name, top / name)
    return top


def _kept_tables() -> list[Path]:
    return sorted((Path(guard.runtime_dir(create=True) or "/nonexistent")).glob("cli-table-*"))


def _launch(top: Path, cwd: str, command: str) -> tuple[set[str], str]:
    """(modules imported, stderr) of the launcher in *top* deciding *command*."""
    event = json.dumps(_event("claude", command, cwd)).encode()
    proc = subprocess.run([sys.executable, "-X", "importtime", str(top / "bin" / "madtea"), "hook"], input=event,
                          capture_output=True, env=dict(os.environ), cwd=cwd, timeout=60)
    assert proc.returncode == 2, proc.stderr.decode()
    lines = proc.stderr.decode().splitlines()
    names = {line.rsplit("|", 1)[1].strip() for line in lines if line.startswith("import time:") and "|" in line}
    return names, "\n".join(line for line in lines if not line.startswith("import time:"))


def test_a_madtea_line_reads_the_kept_table_and_an_edit_of_madtea_makes_it_miss(
        sandbox: dict[str, str], tmp_path: Path) -> None:
    top = _copy_install(tmp_path)
    first, text = _launch(top, sandbox["A"], "madtea issue list")
    assert "madtea" in first and "Use: madt_issues action=list" in text
    assert len(_kept_tables()) == 1
    again, same = _launch(top, sandbox["A"], "madtea issue list")
    assert "madtea" not in again and same == text  # the kept table, the same decision
    mtime = (top / "madtea.py").stat().st_mtime_ns
    with open(top / "madtea.py", "a", encoding="utf-8") as fh:
        fh.write("\n_built = cli_table\n\n\ndef cli_table():\n    table = _built()\n"
                 "    table[('issue', 'list')] = dict(table[('issue', 'list')], tool='madt_edited')\n"
                 "    return table\n")
    edited, text = _launch(top, sandbox["A"], "madtea issue list")
    assert "madtea" in edited and "Use: madt_edited action=list" in text
    # An edit of the same size whose modification time is put back still changes the file's change time.
    source = (top / "madtea.py").read_text(encoding="utf-8").replace("madt_edited", "madt_edit2d")
    (top / "madtea.py").write_text(source, encoding="utf-8")
    os.utime(top / "madtea.py", ns=(mtime, mtime))
    _names, text = _launch(top, sandbox["A"], "madtea issue list")
    assert "Use: madt_edit2d action=list" in text
    assert len(_kept_tables()) == 1  # one kept table per install folder


@pytest.mark.parametrize("damage", ["empty", "truncated", "not-json", "other-key", "bad-spec", "wrong-size",
                                    "symlink"])
def test_a_damaged_kept_table_is_ignored_and_rebuilt(sandbox: dict[str, str], tmp_path: Path, damage: str) -> None:
    top = _copy_install(tmp_path)
    _names, text = _launch(top, sandbox["A"], "madtea issue list")
    [kept] = _kept_tables()
    data = kept.read_bytes()
    head, _nl, body = data.partition(b"\n")
    index = json.loads(head)
    if damage == "empty":
        data = b""
    elif damage == "truncated":
        data = data[:-40]
    elif damage == "not-json":
        data = b"\xff" + data[1:]
    elif damage == "other-key":
        index["table"] = [[["issue", "list"], *index["table"][0][1:]]]
        index["key"][1] = "x"
        data = json.dumps(index).encode() + b"\n" + body
    elif damage == "bad-spec":  # the index agrees, the spec it points at is no spec: built anew, not trusted
        start, end = next(e[1:] for e in index["table"] if e[0] == ["issue", "list"])
        data = head + b"\n" + body[:start] + b'{"tool":"madt_x"}'.ljust(end - start) + body[end:]
    elif damage == "wrong-size":
        data = head + b"\n" + body + b" "
    if damage == "symlink":
        planted = tmp_path / "planted"
        planted.write_bytes(data)
        kept.unlink()
        kept.symlink_to(planted)
    else:
        kept.write_bytes(data)
    names, again = _launch(top, sandbox["A"], "madtea issue list")
    assert again == text and "madt_x" not in again
    assert "madtea" in names  # built from the registry, not read from the damaged copy
    if damage != "bad-spec":  # a copy that was not read is written anew
        assert not kept.is_symlink()
        names, again = _launch(top, sandbox["A"], "madtea issue list")
        assert "madtea" not in names and again == text


def test_the_kept_table_gives_every_command_the_spec_the_registry_builds(sandbox: dict[str, str]) -> None:
    built = madtea.cli_table()
    folder = guard.runtime_dir(create=True)
    assert folder is not None
    where = guard._table_key()
    assert where is not None
    path = os.path.join(folder, where[0])
    guard._table_write(path, where[1], built)
    kept = guard._table_read(path, where[1], lambda: {})
    assert kept is not None and set(kept) == set(built)
    for words, spec in built.items():
        assert kept[words] == json.loads(json.dumps(spec)), words
    for command in ("madtea issue list --state closed", "madtea repo delete acme/web", "madtea issues view 3",
                    "madtea pr merge 4 --style squash", "madtea update", "madtea version"):
        words = command.split()[1:]
        assert guard._madtea_registry(words, kept, "r") == guard._madtea_registry(words, built, "r")


# --------------------------------------------------------------------------- the caller signal

_SIGNAL_SCRIPT = r"""
import json, os, subprocess, sys
root, cwd, max_age, tamper = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
env = dict(os.environ, PYTHONPATH=root)
event = {"session_id": "s", "transcript_path": "/dev/null", "cwd": cwd, "hook_event_name": "PreToolUse",
         "tool_name": "Bash", "tool_input": {"command": "ls"}}
if cwd != "-":
    subprocess.run([sys.executable, "-m", "madtea", "hook"], input=json.dumps(event).encode(), env=env, check=True)
if tamper == "start":
    folder = os.path.join(os.path.expanduser("~"), ".cache", "madtea", "cwd-" + os.uname().nodename)
    for name in os.listdir(folder):
        path = os.path.join(folder, name)
        record = json.load(open(path))
        record["start"] += 1
        json.dump(record, open(path, "w"))
if tamper == "split":  # the server gets only an allow-list of variables, as Codex gives it
    env = {k: env[k] for k in ("HOME", "PATH", "PYTHONPATH", "LC_ALL", "TZ") if k in env}
reader = "import guard; print(guard.caller_cwd_signal(%r))" % max_age
out = subprocess.run([sys.executable, "-c", reader], env=env, capture_output=True, text=True, check=True)
print(out.stdout.strip())
"""


def _signal(cwd: str, max_age: float = 600, tamper: str = "") -> str:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", _SIGNAL_SCRIPT, str(ROOT), cwd, str(max_age), tamper or "-"],
                          capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


needs_proc = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="the caller signal needs /proc")


def _records() -> Path:
    return Path(os.environ["HOME"]) / ".cache" / "madtea" / f"cwd-{os.uname().nodename}"


@needs_proc
def test_signal_round_trip(sandbox: dict[str, str]) -> None:
    assert _signal(sandbox["A"] + "/sub") == sandbox["A"]
    folder = _records()
    assert folder.stat().st_mode & 0o777 == 0o700
    assert not [p for p in folder.iterdir() if p.name.endswith(".tmp")]


@needs_proc
def test_signal_of_a_linked_worktree_is_its_own_top(sandbox: dict[str, str]) -> None:
    assert _signal(sandbox["WT"]) == sandbox["WT"]


@needs_proc
def test_signal_stale_is_none(sandbox: dict[str, str]) -> None:
    assert _signal(sandbox["A"], max_age=0) == "None"


@needs_proc
def test_signal_outside_a_repo_is_none(sandbox: dict[str, str]) -> None:
    assert _signal(sandbox["N"]) == "None"


@needs_proc
def test_signal_needs_the_same_agent(sandbox: dict[str, str]) -> None:
    _signal(sandbox["A"])  # recorded under one parent process...
    assert _signal("-") == "None"  # ...and read under another


@needs_proc
def test_signal_is_found_when_the_server_gets_fewer_variables_than_the_hook(
        sandbox: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The hook sees XDG_RUNTIME_DIR and TMPDIR, the server neither: both still meet at one record."""
    (tmp_path / "tmp").mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    assert _signal(sandbox["A"], tamper="split") == sandbox["A"]
    assert list(_records().glob("*.json"))


@needs_proc
def test_signal_with_another_start_time_does_not_match(sandbox: dict[str, str]) -> None:
    assert _signal(sandbox["A"], tamper="start") == "None"


@needs_proc
def test_signal_refuses_a_folder_open_to_others(sandbox: dict[str, str]) -> None:
    folder = _records()
    folder.mkdir(mode=0o700, parents=True)
    folder.chmod(0o777)
    assert _signal(sandbox["A"]) == "None"
    assert list(folder.iterdir()) == []


def test_signal_without_proc_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    real = os.path.isdir
    monkeypatch.setattr(os.path, "isdir", lambda p: False if str(p).startswith("/proc") else real(p))
    assert guard.caller_cwd_signal() is None


def test_signal_without_records_is_none() -> None:
    assert guard.caller_cwd_signal() is None


def _fake_agent(monkeypatch: pytest.MonkeyPatch) -> Path:
    """One pretend agent process above this one, and the record folder it would use."""
    monkeypatch.setattr(os.path, "isdir", lambda p, _real=os.path.isdir: True if p == "/proc/self" else _real(p))
    monkeypatch.setattr(guard, "_ancestors", lambda _pid: [(4242, 777, "claude")])
    folder = guard.runtime_dir(create=True)
    assert folder is not None
    return Path(folder)


def test_signal_record_is_read_safely(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    folder = _fake_agent(monkeypatch)
    record = folder / "4242-777.json"
    good = {"pid": 4242, "start": 777, "time": time.time(), "top": str(tmp_path)}
    gitops.write_private(record, json.dumps(good).encode())
    assert guard.caller_cwd_signal() == str(tmp_path)
    for bad in ({**good, "time": "soon"}, {**good, "time": None}, {**good, "time": [1]}):
        gitops.write_private(record, json.dumps(bad).encode())
        assert guard.caller_cwd_signal() is None  # no exception reaches the guard
    gitops.write_private(record, json.dumps({**good, "cwd": "x" * 20000}).encode())
    assert guard.caller_cwd_signal() is None  # larger than any real record: not read whole
    record.unlink()
    elsewhere = tmp_path / "planted.json"
    gitops.write_private(elsewhere, json.dumps(good).encode())
    record.symlink_to(elsewhere)
    assert guard.caller_cwd_signal() is None  # a symlink is not followed


def test_signal_stale_records_are_swept(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    folder = _fake_agent(monkeypatch)
    old, fresh = folder / "1-1.json", folder / "2-2.json"
    for path in (old, fresh, folder / ".3-3.9.tmp"):
        path.write_text("{}")
    two_days_ago = time.time() - 2 * 86400
    os.utime(old, (two_days_ago, two_days_ago))
    os.utime(folder / ".3-3.9.tmp", (two_days_ago, two_days_ago))
    guard.record_caller_signal(str(tmp_path))
    assert sorted(p.name for p in folder.iterdir()) == ["2-2.json", "4242-777.json"]


def test_an_unchanged_fresh_record_is_not_written_again(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                         sandbox: dict[str, str]) -> None:
    folder = _fake_agent(monkeypatch)
    record = folder / "4242-777.json"
    guard.record_caller_signal(sandbox["A"])
    first = json.loads(record.read_text())
    writes: list[str] = []
    monkeypatch.setattr(os, "replace", lambda src, dst, _real=os.replace: writes.append(dst) or _real(src, dst))
    guard.record_caller_signal(sandbox["A"])
    assert writes == [] and json.loads(record.read_text()) == first
    guard.record_caller_signal(sandbox["B"])  # the shell moved: written at once
    assert writes == [str(record)] and json.loads(record.read_text())["cwd"] == sandbox["B"]
    aged = {**json.loads(record.read_text()), "time": time.time() - guard._HOOK_RECORD_KEEP - 1}
    record.write_text(json.dumps(aged))  # the file stays 0600
    guard.record_caller_signal(sandbox["B"])  # the same place, but no longer moments ago
    assert len(writes) == 2 and json.loads(record.read_text())["time"] > aged["time"] + 1
    assert guard.caller_cwd_signal() == sandbox["B"]


# --------------------------------------------------------------------------- the shipped wiring

def _json(rel: str) -> dict:
    return json.loads((ROOT / rel).read_text(encoding="utf-8"))


_SERVER = {"command": "sh", "args": ["-c", 'PATH="$PATH:$HOME/.local/bin" exec madtea mcp']}
_SERVER_ENV = {"MADTEA_TOKEN": "$MADTEA_TOKEN", "SSH_AUTH_SOCK": "$SSH_AUTH_SOCK",
               "XDG_RUNTIME_DIR": "$XDG_RUNTIME_DIR"}


def test_claude_plugin_wiring() -> None:
    plugin = _json(".claude-plugin/plugin.json")
    assert plugin["name"] == "madtea" and plugin["author"]["name"]  # `claude plugin validate --strict` wants it
    pre = _json("hooks/hooks.json")["hooks"]["PreToolUse"]
    assert pre[0]["matcher"] == "Bash" and "${CLAUDE_PLUGIN_ROOT}/bin/madtea" in pre[0]["hooks"][0]["command"]
    assert _json(".mcp.json")["mcpServers"]["madtea"] == _SERVER


def test_gemini_and_codex_wiring() -> None:
    ext = _json("integrations/gemini/gemini-extension.json")
    assert ext["mcpServers"]["madtea"] == dict(_SERVER, env=_SERVER_ENV)
    before = _json("integrations/gemini/hooks/hooks.json")["hooks"]["BeforeTool"]
    assert before[0]["matcher"] == "run_shell_command"
    codex = _json("integrations/codex-hooks.json")["hooks"]["PreToolUse"]
    assert codex[0]["matcher"] == "Bash"
    config = (ROOT / "integrations" / "codex-config.toml").read_text(encoding="utf-8")
    assert "[mcp_servers.madtea]" in config
    assert 'env_vars = ["MADTEA_TOKEN", "SSH_AUTH_SOCK", "XDG_RUNTIME_DIR"]' in config


def _hook_commands() -> list:
    return [pytest.param("claude", _json("hooks/hooks.json")["hooks"]["PreToolUse"][0]["hooks"][0]["command"],
                         id="claude"),
            pytest.param("gemini", _json("integrations/gemini/hooks/hooks.json")["hooks"]["BeforeTool"][0]["hooks"][0]
                         ["command"], id="gemini"),
            pytest.param("codex", _json("integrations/codex-hooks.json")["hooks"]["PreToolUse"][0]["hooks"][0]
                         ["command"], id="codex")]


def _run_manifest_hook(command: str, event: dict, path: str, home: Path) -> subprocess.CompletedProcess[str]:
    """The manifest's hook command run the way the harnesses run it: a shell, the event on stdin."""
    command = command.replace("${CLAUDE_PLUGIN_ROOT}", str(ROOT))  # what Claude Code substitutes
    env = {"PATH": path, "HOME": str(home), "LC_ALL": "C"}
    return _decoded(subprocess.run(["bash", "-c", command], input=json.dumps(event).encode(), capture_output=True,
                                   env=env, cwd=event["cwd"], timeout=60))


def _bare_path(tmp_path: Path) -> str:
    """A PATH with python3, git and the shell's tools, but no madtea."""
    bare = tmp_path / "bare-bin"
    if not bare.exists():
        bare.mkdir()
        (bare / "python3").symlink_to(sys.executable)
    return f"{bare}:/usr/bin:/bin"


@pytest.mark.parametrize("harness,command", _hook_commands())
def test_manifest_hook_denies_through_its_own_command(sandbox: dict[str, str], tmp_path: Path, harness: str,
                                                      command: str) -> None:
    """A deny (exit 2, the reason on stderr) reaches the harness through the shipped command line."""
    shim = tmp_path / "home" / ".local" / "bin"  # where pipx and uv put madtea, off PATH here
    shim.mkdir(parents=True)
    (shim / "madtea").write_text(f"#!/bin/sh\nPYTHONPATH={ROOT} exec {sys.executable} -m madtea \"$@\"\n")
    (shim / "madtea").chmod(0o755)
    proc = _run_manifest_hook(command, _event(harness, "git add a.py", sandbox["A"]), _bare_path(tmp_path),
                              tmp_path / "home")
    assert proc.returncode == 2, proc.stderr
    assert 'madt_add files=["a.py"]' in proc.stderr
    allowed = _run_manifest_hook(command, _event(harness, "ls", sandbox["A"]), _bare_path(tmp_path),
                                 tmp_path / "home")
    assert (allowed.returncode, allowed.stderr) == (0, "")


@pytest.mark.parametrize("harness,command", _hook_commands())
def test_manifest_hook_without_madtea_wedges_nothing(sandbox: dict[str, str], tmp_path: Path, harness: str,
                                                     command: str) -> None:
    """No madtea anywhere: every command is let through (Gemini blocks on any exit but 0 and 1)."""
    (tmp_path / "home").mkdir()
    for line in ("ls", "git status"):
        proc = _run_manifest_hook(command, _event(harness, line, sandbox["A"]), "/usr/bin:/bin", tmp_path / "home")
        assert proc.returncode in ((0, 127) if harness == "claude" else (0,)), (line, proc.returncode, proc.stderr)


@pytest.mark.parametrize("rel", [".claude-plugin/plugin.json", "hooks/hooks.json", ".mcp.json",
                                 "integrations/gemini/gemini-extension.json",
                                 "integrations/gemini/hooks/hooks.json", "integrations/codex-hooks.json"])
def test_manifests_are_self_contained(rel: str) -> None:
    text = (ROOT / rel).read_text(encoding="utf-8")
    assert not re.search(r"\bADR\b|#\d|\bissue\b", text, re.I), rel


def test_the_launcher_run_from_a_checkout_loads_the_modules_beside_it(sandbox: dict[str, str], tmp_path: Path) -> None:
    """The plugin's hook command: bin/madtea of a copied checkout, no PYTHONPATH; bytecode is cached there."""
    checkout = tmp_path / "plugin"
    (checkout / "bin").mkdir(parents=True)
    for name in ("madtea.py", "guard.py", "gitops.py", "forge.py", "bin/madtea"):
        shutil.copy(ROOT / name, checkout / name)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    event = json.dumps(_event("claude", "git add x && git commit -m y", sandbox["A"])).encode()
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-X", "importtime", str(checkout / "bin" / "madtea"), "hook"],
                              input=event, capture_output=True, env=env, cwd=sandbox["A"], timeout=60)
        assert proc.returncode == 2, proc.stderr.decode()
    imported = {line.rsplit("|", 1)[1].strip() for line in proc.stderr.decode().splitlines()
                if line.startswith("import time")}
    assert {"guard", "gitops"} <= imported and "madtea" not in imported
    assert sorted(p.name.split(".")[0] for p in (checkout / "__pycache__").glob("*.pyc")) == ["gitops", "guard"]


@pytest.mark.parametrize("tool, args, allowed", [
    ("mcp__plugin_madtea_madtea__madt_status", {}, True),
    ("mcp__plugin_madtea_madtea__madt_issues", {"action": "list"}, True),
    ("mcp__plugin_madtea_madtea__madt_notifications", {"action": "list"}, True),
    ("mcp__plugin_madtea_madtea__madt_issues", {"action": "create", "title": "x"}, False),
    ("mcp__plugin_madtea_madtea__madt_labels", {"action": "delete", "name": "bug"}, False),
    ("mcp__plugin_madtea_madtea__madt_push", {}, False),
    ("mcp__other__madt_status", {}, False),
])
def test_the_hook_lets_madteas_own_reads_run_and_answers_nothing_else(tool: str, args: dict, allowed: bool) -> None:
    """A permission rule names a whole tool; the hook tells a mixed tool's read actions from its writes."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    event = {"hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": args, "cwd": "/"}
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, str(root / "bin" / "madtea"), "hook"], input=json.dumps(event),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout)["hookSpecificOutput"]["permissionDecision"] if done.stdout.strip() else None
    assert said == ("allow" if allowed else None), done.stdout


def test_a_shell_line_naming_a_madtea_tool_is_still_judged_as_a_shell_line(tmp_path) -> None:
    import json
    import subprocess
    import sys
    from pathlib import Path

    event = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "cwd": str(tmp_path),
             "tool_input": {"command": "git push --force origin main # mcp__plugin_madtea_madtea__madt_status"}}
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, str(root / "bin" / "madtea"), "hook"], input=json.dumps(event),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "allow" not in done.stdout, (done.stdout, done.stderr)
