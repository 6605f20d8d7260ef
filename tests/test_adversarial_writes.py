"""Adversarial calls against the newest forge writes: a secret's value never comes back on any channel,
file writes stay on their branch and in their repository, and path tricks are refused."""
from __future__ import annotations

import json
from typing import Any

import pytest

import guard
import madtea
from remote_env import Env, env  # noqa: F401 - fixtures

SECRET = "zq9-Adversary-Secret-Value-77"


def _channels(result: madtea.Result) -> str:
    return "\n".join([result.text, json.dumps(result.data, default=str), json.dumps(result.error, default=str),
                      json.dumps(result.notes, default=str)])


@pytest.mark.parametrize("args", [
    {"action": "set_secrt", "name": "X", "body": SECRET},
    {"action": "set_secret", "name": "X", "body": [SECRET]},
    {"action": "set_secret", "name": "X", "body": {"v": SECRET}},
    {"action": "set_secret", "name": "X", "value": SECRET},
    {"action": "set_secret", "name": "X", "body": SECRET, "body_file": "/nonexistent"},
    {"action": [], "name": "X", "body": SECRET}, {"action": {"a": 1}, "body": SECRET},
])
def test_a_secret_given_in_any_shape_or_under_a_misspelt_action_is_never_echoed(env: Env, args: dict[str, Any]) -> None:
    result = env.call("madt_actions", **args)
    assert "Traceback" not in result.text
    assert SECRET[:8] not in _channels(result)


def test_a_read_only_refusal_of_a_secret_never_echoes_it(env: Env) -> None:
    ctx = madtea.Context("mcp", env.clone, scope=guard.Scope(read_only=True))
    result = madtea.run("madt_actions", {"action": "set_secret", "name": "X", "body": SECRET}, ctx)
    assert SECRET[:8] not in _channels(result)


def test_a_passthrough_body_for_a_secrets_path_is_never_echoed(env: Env) -> None:
    for method in ("PUT", "put"):
        result = env.call("madt_api_call", method=method, path="/repos/acme/web/actions/secrets/X",
                          body={"data": SECRET})
        assert SECRET[:8] not in _channels(result)


def test_the_cli_never_echoes_a_secret_under_a_misspelt_verb_or_a_bad_name(env: Env) -> None:
    for argv in (("actions", "set-secrt", "X", "--body", SECRET), ("actions", "set-secret", "9bad", "--body", SECRET),
                 ("actions", "set-secret", "X", "--body", SECRET, "--vaule", SECRET),
                 ("actions", "set-secret", "X", SECRET), ("actions", "set-secret", "X", "--body", "v", f"--vaule={SECRET}")):
        out = env.cli(*argv)
        assert out.returncode != 0 and SECRET[:8] not in out.stdout + out.stderr, argv
    assert "unrecognized arguments: --vaule\n" in out.stderr


@pytest.mark.parametrize("path", [".g\u200cit/config", "src/.gi\u200dt/hooks/x", "\u202eevil.txt", "a\u2028b",
                                  "\ufeffa.txt", "git~1/config", "sub/GIT~1/hooks/x"])
def test_an_invisible_character_or_git_s_short_name_is_refused_before_any_request(path: str) -> None:
    with pytest.raises(guard.Refusal) as refused:
        guard.check_file_path(path, "madt_files action=create", lambda v: guard.call("madt_files", path=v))
    assert refused.value.code == "BAD_ARGUMENT" and guard.is_placeholder(refused.value.next[0]["args"]["path"])


def test_a_path_with_an_invisible_character_commits_nothing(env: Env) -> None:
    result = env.refused("BAD_ARGUMENT", "madt_files", action="create", path=".g\u200cit/config", content="x",
                         new_branch="t1")
    assert "invisible" in result.text and "t1" not in env.forge.git("acme", "web", "branch", "--list")
