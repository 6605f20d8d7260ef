"""Helpers more than one test file uses: calls as the MCP server makes them, facts for the guard's
table tests, the hook's decision on a line, and a probe of the modules a snippet imports.

Repositories are made by ``topologies``, a clone of the fake forge by ``remote_env``.
"""
from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import gitops
import guard
import madtea

# --------------------------------------------------------------------------- calls

def call(tool: str, where: Path, /, **args: Any) -> madtea.Result:
    """*tool* called with *args* as the MCP server calls it, launched in *where*."""
    return madtea.run(tool, args, madtea.Context("mcp", where))


def ok(tool: str, where: Path, /, **args: Any) -> madtea.Result:
    result = call(tool, where, **args)
    assert not result.is_error, f"{result.error}\n{result.text}"
    return result


def refused(code: str, tool: str, where: Path, /, **args: Any) -> madtea.Result:
    """The call, refused with *code* and exactly one way on, and no traceback in its text."""
    result = call(tool, where, **args)
    assert result.is_error, result.text
    assert result.error["code"] == code, f"{result.error}\n{result.text}"
    assert guard.way_on_problem(result.error["next"], result.error["choices"], result.error["user_action"]) is None
    assert "Traceback" not in result.text
    return result


def cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], cwd: Path,
        *argv: str) -> tuple[int, str, str]:
    """``madtea *argv*`` run in *cwd* as a person runs it: exit code, stdout, stderr (never a traceback)."""
    monkeypatch.chdir(cwd)
    code = madtea.main(list(argv))
    out = capsys.readouterr()
    assert "Traceback" not in out.err + out.out
    return code, out.out, out.err


def run_steps(steps: list[dict[str, Any]], where: Path) -> madtea.Result:
    """Run a way on's steps as given (none a placeholder), each succeeding; the last one's result."""
    done = None
    for step in steps:
        assert not any(guard.is_placeholder(v) for v in step["args"].values()), step
        done = call(step["tool"], where, **step["args"])
        assert not done.is_error, f"{step}: {done.text}"
    assert done is not None
    return done


# --------------------------------------------------------------------------- facts for the guard's tables

@dataclass(frozen=True)
class Spec:
    """A parameter as the registry declares it, with only what the guard reads."""

    name: str
    type: str = "str"
    required: bool = False
    choices: tuple[str, ...] = ()
    minimum: int = 0


def repo_facts(path: str, origin: str | None = "https://forge.example.test/acme/{name}.git", linked: bool = False,
               common: str | None = None) -> guard.RepoFacts:
    """The facts of a repository at *path* (a linked worktree of *common* when *linked*), never on disk."""
    top = Path(path)
    common_dir = Path(common) if common else top / ".git"
    git_dir = (common_dir / "worktrees" / top.name) if linked else common_dir
    url = origin.format(name=top.name) if origin else None
    return guard.RepoFacts(top, git_dir, common_dir, gitops.parse_remote_url(url) if url else None)


def refusal(check: Callable[..., Any], *args: Any, **kwargs: Any) -> guard.Refusal:
    """The refusal *check* raises for these arguments."""
    with pytest.raises(guard.Refusal) as caught:
        check(*args, **kwargs)
    return caught.value


def classify(command: str, cwd: str) -> guard.HookDecision:
    """The hook's decision on *command* run in *cwd*, from the repository files there and the CLI's table."""
    return guard.classify_command(command, cwd, guard.hook_repo_facts, madtea.cli_table)


# --------------------------------------------------------------------------- imports

def modules_imported(probe: str, module: Any,
                     names: tuple[str, ...] = ("json", "re", "enum", "functools", "collections")) -> str:
    """Which of *names* are imported once *probe* has run in a bare interpreter (``-S``) beside *module*,
    as the sorted list prints."""
    script = f"import sys\n{probe}\nprint(sorted(m for m in {names!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-S", "-c", script], capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, PYTHONPATH=str(Path(module.__file__).parent)))
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()
