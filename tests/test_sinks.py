"""Every byte from the forge or a repository cleaned for where it goes: a person's terminal, a pipe, --json, and an
agent. A hostile corpus (terminal escapes that write the clipboard, set the window title and move the cursor, C1
controls, bidirectional and zero-width characters) is put in every forge-supplied field the commands show, and each
sink's output is read for what it may not carry.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import madtea
from remote_env import Env, child_env, env  # noqa: F401 - fixtures
from topologies import run_git

# What reaches a terminal raw when a tool prints forge text as it came: OSC 52 (the clipboard), OSC 0 (the
# window title), CSI cursor moves and line erase, a carriage return, C1 controls (0x9b is a one-character
# CSI), the bidirectional overrides and isolates, zero-width characters, a byte-order mark, a line separator.
ESCAPES = "\x1b]52;c;cHduZWQ=\x07\x1b]0;owned\x07\x1b[2A\x1b[2K\r\x08\x7f"
UNICODE = "\x9b31m\x85\x90\u202e\u2066\u2067\u2068\u2069\u200b\u200c\u200d\ufeff\u2028\u061c\u200e"
HOSTILE = f"A{ESCAPES}{UNICODE}Z"
# A git ref may hold no C0 control; C1 and the rest are valid UTF-8 in a branch name.
REF_SAFE = "feat/\u202eevil\u0085\u009b\u200b"

# What no sink but a raw pipe may carry: every control but newline and tab, C1, bidi, zero-width, separators.
FORBIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff"
                       "\u2028\u2029]")


# The commands whose content a pipe gets as the forge's bytes (tested whole below), not cleaned.
RAW = (["pr", "diff"], ["files", "view"], ["actions", "logs"])


def _seed(e: Env) -> dict[str, Any]:
    """The hostile corpus in every kind of field the forge and the repository hand back."""
    f = e.forge
    f.create_label("acme", "web", f"label{HOSTILE}")
    issue = f.create_issue("acme", "web", f"title{HOSTILE}", f"body{HOSTILE}\nsecond line", user="bob",
                           labels=[f"label{HOSTILE}"])["number"]
    f.create_comment("acme", "web", issue, f"comment{HOSTILE}", user="bob")
    f.create_milestone("acme", "web", f"milestone{HOSTILE}")
    sha = f.commit("acme", "web", "main", {f"file{HOSTILE}.txt": f"content{HOSTILE}\n",
                                           f".gitea/workflows/ci{HOSTILE}.yml": "on: push\n"},
                   f"subject{HOSTILE}\n\nmessage body{HOSTILE}")
    f.commit("acme", "web", REF_SAFE, {"feature.txt": "one\r\ntwo\x1b[31m\n"}, f"branch work{HOSTILE}", start="main")
    pull = f.create_pull("acme", "web", REF_SAFE, title=f"pull{HOSTILE}", body=f"pull body{HOSTILE}", user="bob")
    f.create_comment("acme", "web", pull["number"], f"review words{HOSTILE}", user="bob")
    f.add_commit_status("acme", "web", f.branch_sha("acme", "web", REF_SAFE), "failure", context=f"ci{HOSTILE}",
                        description=f"status{HOSTILE}")
    run = f.add_action_run("acme", "web", workflow=f"ci{HOSTILE}.yml", title=f"run{HOSTILE}", branch="main",
                           jobs=((f"job{HOSTILE}", "failure", f"log{HOSTILE}\r\nprogress 50%\rprogress 100%\n"),))
    run_git(e.clone, "pull", "-q")
    (e.clone / f"untracked{HOSTILE}.txt").write_text("x")
    return {"issue": issue, "pull": pull["number"], "sha": sha, "run": run.id, "job": run.jobs[0].id}


def _commands(s: dict[str, Any]) -> list[list[str]]:
    """The commands that show forge or repository text, each as a person types it: every read the registry
    declares whose required arguments the seeded objects fill, and the refusals that show the forge's names."""
    fill = {"sha": s["sha"], "run_id": s["run"], "job_id": s["job"], "path": f"file{HOSTILE}.txt", "q": "title",
            "org": "acme", "owner": "acme", "title": f"milestone{HOSTILE}"}
    commands = [["issue", "view", str(s["issue"]), "--comments"], ["pr", "view", str(s["pull"]), "--comments"],
                ["pr", "checks", str(s["pull"])], ["repo", "commit", s["sha"], "--diff"],
                # a refusal that lists the forge's names: anyone who mistypes a label is shown them all
                ["issue", "create", "-t", "t", "-l", "nosuch"]]
    for op in madtea.REGISTRY:
        required = [p.name for p in op.params if p.required]
        args = {"number": s["pull"] if op.tool == "madt_pr" else s["issue"]} | fill
        if op.mutating or op.cli_only or not set(required) <= set(args) or op.tool == "madt_api_call":
            continue
        argv = list(op.cli)
        for p in op.params:
            if p.required:
                argv += [str(args[p.name])] if p.positional else [madtea._cli_flag(p)[-1], str(args[p.name])]
        commands.append(argv)
    return commands


def _assert_clean(text: str, where: str) -> None:
    found = FORBIDDEN.findall(text)
    assert not found, (where, sorted(set(found)), text[:2000])


def _run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], cwd: Path, argv: list[str],
         tty: bool) -> tuple[int, str, str]:
    monkeypatch.chdir(cwd)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: tty, raising=False)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: tty, raising=False)
    monkeypatch.setenv("NO_COLOR", "")
    code = madtea.main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_the_hostile_corpus_reaches_no_sink_raw(env: Env, monkeypatch, capsys) -> None:
    e = env
    seeded = _seed(e)
    shown = 0
    for argv in _commands(seeded):
        for tty in (True, False) if argv[:2] not in RAW else (True,):  # a terminal, and a pipe (raw content aside)
            code, out, err = _run(monkeypatch, capsys, e.clone, argv, tty)
            assert "Traceback" not in err, (argv, err)
            coloured = re.findall(r"\x1b\[\d+m", out + err)
            assert not coloured or (tty and set(coloured) <= {"\x1b[31m", "\x1b[33m", "\x1b[36m", "\x1b[0m"}), argv
            _assert_clean(re.sub(r"\x1b\[\d+m", "", out + err), f"{argv} tty={tty}")  # madtea's own colour aside
            shown += any(m in out + err for m in ("^[", "\\u202e", "\\u009b"))
        code, out, err = _run(monkeypatch, capsys, e.clone, [*argv, "--json"], False)
        _assert_clean(out + err, f"{argv} --json")
        json.loads(out)  # the escapes keep it JSON, and say every character as it is
        agent = _agent(e, argv)
        _assert_clean(agent, f"{argv} (agent)")
    assert len(_commands(seeded)) > 35 and shown >= 30  # the corpus is shown escaped, not dropped


def test_json_escapes_every_character_and_loses_none(env: Env, monkeypatch, capsys) -> None:
    e = env
    seeded = _seed(e)
    code, out, err = _run(monkeypatch, capsys, e.clone, ["issue", "view", str(seeded["issue"]), "--json"], False)
    assert code == 0, err
    _assert_clean(out, "issue view --json")
    assert "\\u001b]52" in out and "\\u202e" in out and "\\u009b" in out and "\\u200b" in out
    shown = json.loads(out)
    assert shown["body"] == f"body{HOSTILE}\nsecond line"
    assert shown["title"] == " ".join(f"title{HOSTILE}".split())  # a title is one line: its line breaks are spaces


def _agent(e: Env, argv: list[str]) -> str:
    """The same command as an agent reads it: the MCP result's text and its structured content."""
    parser = madtea.build_parser()
    ns = parser.parse_args(argv)
    op = ns._op
    raw = {p.name: getattr(ns, p.name) for p in op.params if not p.cli_only and getattr(ns, p.name) is not None}
    raw = {k: (v[0] if isinstance(v, list) and op.specs[k].type not in ("strs", "numbers") else v)
           for k, v in raw.items() if v != []}
    if op.action:
        raw["action"] = op.action
    result = madtea._tool_result(e.call(op.tool, **raw))
    return result.content[0].text + json.dumps(result.structured_content, ensure_ascii=False)


def test_the_terminal_shows_escapes_as_gh_does() -> None:
    assert madtea.for_terminal("a\x1b]0;t\x07b\rc\x7f\td\ne") == "a^[]0;t^Gb^Mc^?\td\ne"
    assert madtea.for_terminal("\x9b\u202e\u200b\U000e0041") == "\\u009b\\u202e\\u200b\\U000e0041"
    assert madtea.for_terminal("caf\u00e9 \u2764\ufe0f") == "caf\u00e9 \u2764\ufe0f"  # an emoji's look is kept
    assert json.loads(madtea.for_json(["\x1b\x9b\u202e\U000e0041\x7f"])) == ["\x1b\x9b\u202e\U000e0041\x7f"]
    assert madtea.for_agent("x\u202ey\ufe0f\x1b") == "x\\u202ey\\ufe0f\\u001b"


def _pipe(e: Env, *argv: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "madtea", *argv], cwd=e.clone, capture_output=True,
                          env=child_env(), timeout=60)


def test_pr_diff_to_a_pipe_is_the_patch_whole_and_git_applies_it(env: Env, tmp_path: Path) -> None:
    e = env
    big = "".join(f"line {i} with some words to make it long enough\n" for i in range(2000))  # ~100 kB
    e.forge.commit("acme", "web", "feat/big", {"big.txt": big, "crlf.txt": b"one\r\ntwo\x1b[31m\r\n"},
                   "Big change", start="main")
    number = e.forge.create_pull("acme", "web", "feat/big", title="Big")["number"]
    done = _pipe(e, "pr", "diff", str(number))
    assert done.returncode == 0, done.stderr
    assert b"\r\n" in done.stdout and b"\x1b[31m" in done.stdout and b"truncated" not in done.stdout
    assert len(done.stdout) > 90_000  # far past the 20,000 characters an agent reads at once
    patch = tmp_path / "x.patch"
    patch.write_bytes(done.stdout)
    applied = subprocess.run(["git", "apply", "--check", str(patch)], cwd=e.clone, capture_output=True)
    assert applied.returncode == 0, applied.stderr


def test_logs_and_api_to_a_pipe_are_the_forges_bytes(env: Env) -> None:
    e = env
    log = "step 1\r\nprogress 50%\rprogress 100%\n\x1b[32mok\x1b[0m\n"
    run = e.forge.add_action_run("acme", "web", jobs=(("build", "success", log),))
    if e.forge.flavour == "gitea":
        done = _pipe(e, "actions", "logs", str(run.jobs[0].id))
        assert done.returncode == 0, done.stderr
        assert done.stdout == log.encode()
    e.forge.create_issue("acme", "web", f"title{HOSTILE}")
    done = _pipe(e, "api", "/repos/acme/web/issues")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)[0]["title"] == f"title{HOSTILE}"  # the forge's own answer, not madtea's view
