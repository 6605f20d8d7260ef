"""The shared harness of the remote-tool tests: a clone whose origin is the fake forge, and a second forge host."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import helpers
import madtea
from fakeforge import DEFAULT_TOKEN, FakeForge, running_forge
from topologies import run_git

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Env:
    """A clone of acme/web whose origin is the fake forge, and the ways to call madtea from it."""

    forge: FakeForge
    clone: Path

    @property
    def repo(self) -> Any:
        return self.forge.repo("acme", "web")

    def call(self, tool: str, _dir: Path | None = None, **args: Any) -> madtea.Result:
        return helpers.call(tool, _dir or self.clone, **args)

    def ok(self, tool: str, _dir: Path | None = None, **args: Any) -> madtea.Result:
        return helpers.ok(tool, _dir or self.clone, **args)

    def refused(self, code: str, tool: str, _dir: Path | None = None, **args: Any) -> madtea.Result:
        return helpers.refused(code, tool, _dir or self.clone, **args)

    def cli(self, *argv: str, cwd: Path | None = None, stdin: Any = subprocess.DEVNULL,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "madtea", *argv], cwd=cwd or self.clone, stdin=stdin,
                              env=env or child_env(), capture_output=True, text=True, timeout=60)

    def cli_ok(self, *argv: str) -> str:
        """The command's output, which exited 0 without a traceback."""
        done = self.cli(*argv)
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr
        return done.stdout

    def issue(self, number: int) -> Any:
        return self.repo.issues[number]

    def issue_count(self) -> int:
        return sum(1 for i in self.repo.issues.values() if i.pull is None)

    def label_names(self, number: int) -> set[str]:
        return {self.repo.labels[i].name for i in self.issue(number).labels}


def child_env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), **extra}


# --------------------------------------------------------------------------- a madtea child over stdio

CALL_BOUND = 60.0  # seconds for one call on a loaded machine; quadratic work on 1 MB takes far longer
WORKER = Path(__file__).with_name("fuzz_worker.py")


def mcp_server(cwd: Path, **extra: str) -> Any:
    """How the SDK's client launches ``madtea mcp`` (the fuzz worker) in *cwd*, *extra* in its environment."""
    from mcp.client.stdio import StdioServerParameters

    return StdioServerParameters(command=sys.executable, args=[str(WORKER), "mcp"], cwd=str(cwd),
                                 env=child_env(**extra))


async def bounded_call(client: Any, tool: str, args: dict[str, Any]) -> Any:
    """*tool* called through the SDK's *client*, given up after CALL_BOUND seconds."""
    import anyio

    with anyio.fail_after(CALL_BOUND):  # a hang detector, not a timing assertion
        return await client.call_tool(tool, args)


def clone_of(forge: FakeForge, path: Path, owner: str = "acme", repo: str = "web") -> Path:
    run_git(path.parent, "clone", "-q", forge.remote_url(owner, repo), str(path))
    return Path(os.path.realpath(path))


@pytest.fixture
def env(fake_forge: FakeForge, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    monkeypatch.setenv("MADTEA_TOKEN", DEFAULT_TOKEN)
    return Env(fake_forge, clone_of(fake_forge, tmp_path / "web"))


@pytest.fixture
def release_env(release_forge: FakeForge, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    """``env`` on each of the oldest and newest Gitea and Forgejo releases the forge contract covers."""
    monkeypatch.setenv("MADTEA_TOKEN", DEFAULT_TOKEN)
    return Env(release_forge, clone_of(release_forge, tmp_path / "web"))


@pytest.fixture
def clone(env: Env) -> Path:
    """The clone of acme/web on the fake forge, with the forge's token set (``env``'s clone)."""
    return env.clone


@pytest.fixture
def other(env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A second fake forge (the other flavour) reached as localhost: another host, with its own token."""
    flavour = "forgejo" if env.forge.flavour == "gitea" else "gitea"
    for forge in running_forge(flavour, tmp_path / "other-forge"):
        host = f"localhost:{forge.port}"
        config = Path(os.environ["XDG_CONFIG_HOME"]) / "madtea" / "config.json"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(json.dumps({"hosts": {host: {"api_url": f"http://{host}/api/v1"}}}), encoding="utf-8")
        monkeypatch.setenv("MADTEA_TOKEN_" + re.sub(r"[^A-Z0-9]", "_", host.upper()), DEFAULT_TOKEN)
        forge.create_issue("acme", "web", "Over there", "on the other forge")
        forge.host_name = host  # type: ignore[attr-defined]
        yield forge


@pytest.fixture
def fast_client(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Short socket timeouts and no real pauses; returns the pauses the client asked for."""
    import forge

    pauses: list[float] = []
    real_init = forge.Client.__init__

    def init(self: Any, api_base: str, host: str, token: str | None = None, **options: Any) -> None:
        options.setdefault("timeout", 1.0)
        options["sleep"] = pauses.append
        real_init(self, api_base, host, token, **options)

    monkeypatch.setattr(forge.Client, "__init__", init)
    return pauses
