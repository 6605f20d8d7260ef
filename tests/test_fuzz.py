"""Property-based fuzzing of every tool and action, through the real dispatcher and the CLI.

Arbitrary JSON goes into every parameter: wrong types, lists and objects for
strings, 1 MB values, NUL, newlines, bidirectional controls, lone surrogates,
option-like values, ``..`` and ``.git`` paths, negative and huge numbers. Every
call must answer within a bound (a hang detector, not a timing assertion) with no
``INTERNAL_ERROR`` and no traceback; a refusal carries exactly one way on; a
sibling repository and a file beside the target never change. The examples are
derandomized and bounded, so a failure reproduces and the lanes stay short; each
lane prints its counts.
"""
from __future__ import annotations

import collections
import json
import os
import select
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import guard
import madtea
from fakeforge import DEFAULT_TOKEN, FakeForge
from remote_env import CALL_BOUND, WORKER, child_env, clone_of
from topologies import assert_only_changed, make_repo, snapshot

pytestmark = pytest.mark.slow  # fuzzing: not in the fast lane

MB = "x" * 1_000_000
OPS = [op for op in madtea.REGISTRY if not op.cli_only]
FUZZ = settings(max_examples=int(os.environ.get("MADTEA_FUZZ_EXAMPLES", "200")), deadline=None, derandomize=True,
                database=None, suppress_health_check=list(HealthCheck))
COUNTS: collections.Counter[str] = collections.Counter()
VERBOSE = bool(os.environ.get("MADTEA_FUZZ_VERBOSE"))  # read before the seal clears MADTEA_*: count each message


class Worker:
    """The dispatcher in a child process: a call that does not answer within the bound fails as a hang."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        self.proc = subprocess.Popen([sys.executable, str(WORKER)], cwd=cwd, env=child_env(),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True, encoding="utf-8")

    def call(self, tool: str, args: Any) -> dict[str, Any]:
        assert self.proc.stdin and self.proc.stdout
        line = json.dumps({"tool": tool, "args": args, "cwd": str(self.cwd)}, ensure_ascii=True)
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], CALL_BOUND)
        if not ready:
            self.close()
            raise AssertionError(f"hang: {tool} {_short(args)} gave no answer within {CALL_BOUND:.0f} s")
        answer = self.proc.stdout.readline()
        assert answer, f"the dispatcher died on {tool} {_short(args)}"
        return json.loads(answer)

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=30)


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=True, default=str)
    return text if len(text) < 300 else text[:300] + f"… ({len(text)} chars)"


# --------------------------------------------------------------------------- values

NASTY_STRINGS = ["", " ", "\x00", "a\x00b", "line one\nSigned-off-by: Mallory <m@example.invalid>", "\r\n",
                 "\u202eevil\u202c", "\u200b", "\ud800", "é", "--force", "-A", "-", "--", "..", "../..", ".",
                 ".git", ".git/config", "a/../../b", "/", "~", "$(id)", "`id`", "; id", "*", ":/", "HEAD~1",
                 "main", "feat/x", "refs/heads/main", "acme/web", "x" * 300, MB, "a b", "%2e%2e", "C:\\x"]
PLAUSIBLE = ["a.txt", "new.txt", "feat/x", "topic", "Fix login", "main", "origin/main", "v1.0", "bug", "1",
             "acme/web", "#ededed", "2026-01-01", "body text"]
NASTY_NUMBERS = [-1, 0, 1, 2, 2**31, 2**63, -(2**63), 10**30, 1.5, -0.0, 1e308, True, False]


# The passthrough sends any GET it is given: its paths are ones the forge's spec has, or ones refused first.
API_PATHS = ["/repos/acme/web/issues", "/repos/acme/web/pulls/1/merge", "/user", "/repos/acme/web/labels",
             "repos/acme/web/issues/1", "/repos/acme/web/issues?state=all&q=%00", "/repos/acme/../web", " /x",
             "/repos/a#b", "/x\\y", "/repos/acme/web/issues/1/comments", "/repos/acme/%2e%2e/web", "", MB]


def values(p: madtea.Param, sandbox: Path, tool: str = "") -> st.SearchStrategy[Any]:
    """Anything JSON can say, weighted toward values of the parameter's own type with hostile content."""
    if (tool, p.name) == ("madt_api_call", "path"):
        return st.sampled_from(API_PATHS)
    meant = {"dir": [str(sandbox / "web"), str(sandbox / "web") + "/", str(sandbox / "nowhere"), "relative/dir",
                     str(sandbox)],
             "path": [str(sandbox / "wt-new"), str(sandbox / "web"), "/repos/acme/web/issues", "wt",
                      "/repos/acme/web/pulls/1/merge", "/user", str(sandbox / "wt-new") + "/.git"],
             "files": [["a.txt"], ["new.txt"], ["../outside.txt"], [str(sandbox / "outside.txt")], ["-A"],
                       [".git/config"], ["."], ["README.md", "new.txt"], ["a.txt", MB]],
             "owner_repo": ["acme/web", "acme/nope", "web", "localhost/acme/web", "https://x/acme/web", "acme/../web"]
             }.get(p.name, [])
    text = st.one_of(st.sampled_from(NASTY_STRINGS), st.sampled_from(PLAUSIBLE), st.text(max_size=12))
    typed = {"str": text, "enum": st.one_of(st.sampled_from(p.choices or ("x",)), text),
             "strs": st.lists(text, max_size=3), "bool": st.booleans(),
             "int": st.one_of(st.sampled_from(NASTY_NUMBERS), st.integers(-3, 40)),
             "number": st.one_of(st.integers(-1, 6), st.sampled_from(["1", "#2", "1, 2", [1], ["3"], 2**63])),
             "numbers": st.one_of(st.integers(-1, 6), st.sampled_from(["1", "1, 2", [1, 2], [], ["x"]])),
             "json": st.dictionaries(st.sampled_from(["title", "body", "state", "x"]), text, max_size=2)}
    scalar = st.one_of(st.sampled_from(NASTY_STRINGS), st.sampled_from(NASTY_NUMBERS), st.none())
    anything = st.recursive(scalar, lambda inner: st.lists(inner, max_size=3)
                            | st.dictionaries(st.text(max_size=4), inner, max_size=2), max_leaves=4)
    own = typed.get(p.type, text)
    return st.one_of(st.sampled_from(meant), own, own, anything) if meant else st.one_of(own, own, own, anything)


ACTION = madtea.Param("action", "str")


@st.composite
def calls(draw: st.DrawFn, sandbox: Path) -> tuple[str, Any]:
    op = draw(st.sampled_from(OPS))
    names = sorted(op.specs)
    # Rare branches take a middle value: hypothesis draws the ends of a range often.
    required = [n for n in names if op.specs[n].required and draw(st.integers(0, 5)) != 3]
    chosen = required + (draw(st.lists(st.sampled_from(names), unique=True, max_size=min(3, len(names))))
                         if names else [])
    args: dict[str, Any] = {name: draw(values(op.specs[name], sandbox, op.tool)) for name in chosen}
    if op.action is not None:
        args["action"] = op.action if draw(st.integers(0, 9)) != 5 else draw(values(ACTION, sandbox))
    if draw(st.integers(0, 9)) == 5:
        args[draw(st.sampled_from(["commit_message", "query", "x" * 200, "", "\x00", "dir ", "__proto__"]))] = 1
    if draw(st.integers(0, 29)) == 15:
        return op.tool, draw(st.sampled_from([[], "action=list", None, 3]))  # not an object at all
    return op.tool, args


# --------------------------------------------------------------------------- the sandbox

@pytest.fixture
def sandbox(gitea_forge: FakeForge, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A clone of the fake forge's acme/web to act in, a sibling repository and a file that must not change."""
    monkeypatch.setenv("MADTEA_TOKEN", DEFAULT_TOKEN)
    # The passthrough GETs any path it is given, by design: a drawn path that no API route has is the forge's 404.
    gitea_forge.allow_violations("spec matches GET ")
    base = Path(os.path.realpath(tmp_path))
    web = clone_of(gitea_forge, base / "web")
    (web / "a.txt").write_text("a\n", encoding="utf-8")
    (web / "new.txt").write_text("new\n", encoding="utf-8")
    make_repo(base / "api", origin="https://forge.example.test/acme/api.git", files={"x.txt": "x\n"})
    (base / "outside.txt").write_text("outside\n", encoding="utf-8")
    yield base


def check_answer(tool: str, args: Any, answer: dict[str, Any]) -> None:
    """The invariants every call keeps, whatever it was given."""
    assert "crash" not in answer, f"{tool} {_short(args)}\n{answer.get('crash')}"
    where = f"{tool} {_short(args)}\n{answer['text'][:2000]}"
    assert answer["code"] != "INTERNAL_ERROR", where
    assert "Traceback" not in answer["text"], where
    answer["text"].encode("utf-8")  # what the MCP transport must be able to send
    COUNTS[f"code {answer['code'] or 'ok'}"] += 1
    if VERBOSE:
        COUNTS[answer["text"].split("\n")[1][:70] if answer["code"] else "ok"] += 1
    if answer["code"]:
        problem = guard.way_on_problem(answer["next"], answer["choices"], answer["user_action"])
        assert problem is None, f"{where}\n{problem}"
        assert len(answer["structured"]) == 1, where


def test_fuzz_every_tool_and_action_through_the_dispatcher(sandbox: Path) -> None:
    worker = Worker(sandbox / "web")
    outside = [sandbox / "api"]
    before = snapshot(outside)
    before_file = (sandbox / "outside.txt").read_bytes()
    COUNTS.clear()

    @FUZZ
    @given(call=calls(sandbox))
    def one(call: tuple[str, Any]) -> None:
        tool, args = call
        COUNTS["calls"] += 1
        check_answer(tool, args, worker.call(tool, args))
        assert (sandbox / "outside.txt").read_bytes() == before_file, f"{tool} {_short(args)} wrote outside.txt"

    try:
        one()
    finally:
        worker.close()
        print(f"\nfuzz (dispatcher): {dict(sorted(COUNTS.items()))}")
    assert_only_changed(before, snapshot(outside), set())
    assert COUNTS["calls"] >= 50


SWEEP = ["\ud800", MB, "\x00", "line one\nSigned-off-by: Mallory <m@example.invalid>", "-A", ".git/config",
         ["x", {"y": 1}], {"a": [1]}, -1, 2**63, "\u202eevil", "../../outside.txt", " ", 1.5, "x" * 120_000]
SWEEP_VALID = {"str": "topic", "strs": ["a.txt"], "int": 1, "number": 1, "numbers": [1], "bool": True, "json": {}}


def sweep_calls(sandbox: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each parameter of each operation meets hostile values in turn, the rest of the call well formed."""
    turn = 0
    for op in OPS:
        valid = {n: p.choices[0] if p.type == "enum" and p.choices else SWEEP_VALID.get(p.type, "topic")
                 for n, p in op.specs.items() if p.required}
        for name in sorted(op.specs):
            for offset in (0, 7):
                value = API_PATHS[(turn + offset) % len(API_PATHS)] if (op.tool, name) == ("madt_api_call", "path") \
                    else SWEEP[(turn + offset) % len(SWEEP)]
                yield op.tool, ({"action": op.action} if op.action else {}) | valid | {name: value}
            turn += 1


def test_sweep_every_parameter_with_hostile_values(sandbox: Path) -> None:
    worker = Worker(sandbox / "web")
    before = snapshot([sandbox / "api"])
    COUNTS.clear()
    try:
        for tool, args in sweep_calls(sandbox):
            COUNTS["calls"] += 1
            check_answer(tool, args, worker.call(tool, args))
    finally:
        worker.close()
        print(f"\nfuzz (sweep): {dict(sorted(COUNTS.items()))}")
    assert_only_changed(before, snapshot([sandbox / "api"]), set())
    assert (sandbox / "outside.txt").read_text(encoding="utf-8") == "outside\n"


# --------------------------------------------------------------------------- the CLI

CLI_STRINGS = [s for s in NASTY_STRINGS if "\x00" not in s and "\ud800" not in s and s != MB] + ["x" * 100_000]


@st.composite
def command_lines(draw: st.DrawFn) -> list[str]:
    op = draw(st.sampled_from([op for op in madtea.REGISTRY]))
    argv = list(op.cli)
    for p in draw(st.lists(st.sampled_from(op.params), unique_by=lambda p: p.name, max_size=3)):
        value = draw(st.one_of(st.sampled_from(CLI_STRINGS), st.sampled_from(["-1", "0", "99999999999999999999999",
                                                                              "1.5", "１２"])))
        if p.positional:
            argv.append(value)
        elif p.type == "bool" or p.enum_flags:
            argv.append(f"--{p.name.replace('_', '-')}")
        else:
            argv += [f"--{(p.flag or p.name).replace('_', '-')}", value]
    return argv


def test_fuzz_the_cli_exits_0_1_or_2_without_a_traceback(sandbox: Path) -> None:
    web = sandbox / "web"
    seen: collections.Counter[int] = collections.Counter()

    @settings(FUZZ, max_examples=int(os.environ.get("MADTEA_FUZZ_CLI_EXAMPLES", "30")))
    @given(argv=command_lines())
    def one(argv: list[str]) -> None:
        done = subprocess.run([sys.executable, "-m", "madtea", *argv], cwd=web, env=child_env(),
                              stdin=subprocess.DEVNULL, capture_output=True, timeout=CALL_BOUND)
        seen[done.returncode] += 1
        stderr = done.stderr.decode("utf-8", "replace")
        assert done.returncode in (0, 1, 2), (argv[:4], done.returncode, stderr[-2000:])
        assert "Traceback" not in stderr, (argv[:4], stderr[-2000:])

    try:
        one()
    finally:
        print(f"\nfuzz (CLI): {sum(seen.values())} command lines, exit statuses {dict(seen)}")


@pytest.mark.parametrize("argv", [["--help"], ["log"], ["status"], ["issues", "list"], ["nonsense"]])
def test_the_cli_into_a_closed_pipe_ends_without_a_traceback(sandbox: Path, argv: list[str]) -> None:
    read, write = os.pipe()
    os.close(read)  # like `| head` that has already exited
    try:
        done = subprocess.run([sys.executable, "-m", "madtea", *argv], cwd=sandbox / "web", env=child_env(),
                              stdin=subprocess.DEVNULL, stdout=write, stderr=subprocess.PIPE, timeout=CALL_BOUND)
    finally:
        os.close(write)
    stderr = done.stderr.decode("utf-8", "replace")
    assert "Traceback" not in stderr and done.returncode in (0, 1, 2, 141), (done.returncode, stderr[-2000:])


@pytest.mark.parametrize("argv", [["log"], ["status"], ["commit", "é.txt", "--title", "é ✓"], ["issues", "list"]])
def test_the_cli_on_a_non_utf8_terminal_ends_without_a_traceback(sandbox: Path, argv: list[str]) -> None:
    web = sandbox / "web"
    (web / "é.txt").write_text("é\n", encoding="utf-8")
    env = child_env(LC_ALL="C", LANG="C", PYTHONCOERCECLOCALE="0", PYTHONUTF8="0")
    env.pop("PYTHONIOENCODING", None)
    done = subprocess.run([sys.executable, "-m", "madtea", *argv], cwd=web, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, timeout=CALL_BOUND)
    stderr = done.stderr.decode("ascii", "replace")
    assert done.returncode in (0, 1, 2) and "Traceback" not in stderr, (done.returncode, stderr[-2000:])


# --------------------------------------------------------------------------- the classes the lanes found

ACTION_TOOLS = sorted({op.tool for op in OPS if op.action is not None})


@pytest.mark.parametrize("action", [["list"], {"name": "list"}, 3, True, ""])
def test_an_action_that_is_not_one_name_is_a_bad_argument_on_every_action_tool(action: Any) -> None:
    assert len(ACTION_TOOLS) >= 11
    for tool in ACTION_TOOLS:
        result = madtea.run(tool, {"action": action}, madtea.Context("mcp", Path("/")))
        assert result.error and result.error["code"] == "BAD_ARGUMENT", (tool, result.text)
        assert guard.way_on_problem(result.error["next"], result.error["choices"], result.error["user_action"]) \
            is None, (tool, result.error)
    one = madtea.run("madt_worktrees", {"action": ["list"]}, madtea.Context("mcp", Path("/")))
    assert one.error["next"] == [{"tool": "madt_worktrees", "args": {"action": "list"}}]


@pytest.mark.parametrize("value", [-1, "-1", 0, 2**63, "99999999999999999999", "²", "1.5"])
def test_a_number_out_of_range_is_refused_alike_on_both_surfaces(single_repo: Any, value: Any) -> None:
    mcp = madtea.run("madt_log", {"limit": value}, madtea.Context("mcp", single_repo.repo))
    cli = madtea.run("madt_log", {"limit": str(value)}, madtea.Context("cli", single_repo.repo))
    for result in (mcp, cli):
        assert result.error and result.error["code"] == "BAD_ARGUMENT", result.text
        assert "at least 1" in result.text


@pytest.mark.parametrize("args", [{"files": ["\ud800"]}, {"files": ["y" * 1_000_000]}, {"files": ["a.txt"] * 70_000}])
def test_a_value_git_could_not_take_is_refused_before_git(single_repo: Any, args: dict[str, Any]) -> None:
    result = madtea.run("madt_add", args, madtea.Context("mcp", single_repo.repo))
    assert result.error and result.error["code"] == "BAD_ARGUMENT", result.text
    result.text.encode("utf-8")


def test_a_long_commit_message_goes_to_git_whole(single_repo: Any) -> None:
    repo = single_repo.repo
    import subprocess
    subprocess.run(["git", "switch", "-q", "-c", "feat/long"], cwd=repo, check=True)
    (repo / "long.txt").write_text("long\n", encoding="utf-8")
    body = "b" * 300_000  # more than one command-line argument can hold
    result = madtea.run("madt_commit", {"files": ["long.txt"], "title": "Long", "body": body},
                        madtea.Context("mcp", repo))
    assert not result.error, result.text
    message = subprocess.run(["git", "log", "-1", "--format=%B"], cwd=repo, capture_output=True, text=True).stdout
    assert message.strip() == "Long\n\n" + body


def test_the_credential_scrubber_still_scrubs() -> None:
    import gitops
    assert gitops.hide_userinfo("fatal: https://me:tok@h/x and ssh://u@h:22/y") == \
        "fatal: https://***@h/x and ssh://***@h:22/y"
