"""The last parity gaps: the passthrough's Actions writes, attachment uploads, commit fields, file-path forms.

Each test runs against the fake forge (both flavours) and real git, through the MCP dispatcher and the CLI.
"""
from __future__ import annotations

import json
from typing import Any

import pytest

import guard
from remote_env import Env, env  # noqa: F401 - fixtures

SECRET = "pq7-Parity-Secret-Value-31"


# --------------------------------------------------------------------------- the passthrough's Actions writes

@pytest.mark.parametrize("path", ["/repos/acme/web/actions/secrets/DEPLOY_KEY", "/repos/Acme/web/Actions/Secrets/deploy_key",
                                  "/repos/acme/web/actions/secrets/DEPLOY_KEY/"])
def test_a_passthrough_secret_write_is_sent_to_set_secret_and_its_value_never_echoed(env: Env, path: str) -> None:
    for method in ("PUT", "POST"):
        refused = env.refused("BAD_ARGUMENT", "madt_api_call", path=path, method=method, body={"data": SECRET})
        step = refused.error["next"][0]
        assert step["tool"] == "madt_actions" and step["args"]["action"] == "set_secret"
        assert step["args"]["name"].upper() == "DEPLOY_KEY" and guard.is_placeholder(step["args"]["body"])
        assert SECRET[:8] not in refused.text + json.dumps(refused.error, default=str)
    assert not env.repo.secrets and not env.forge.find_requests("PUT") and not env.forge.find_requests("POST")
    out = env.cli("api", path, "-X", "PUT", "--body", json.dumps({"data": SECRET}))
    assert out.returncode != 0 and "madtea actions set-secret" in out.stdout + out.stderr, out.stderr
    assert SECRET[:8] not in out.stdout + out.stderr and not env.repo.secrets


def test_a_passthrough_variable_write_is_sent_to_set_variable_with_its_value(env: Env) -> None:
    refused = env.refused("BAD_ARGUMENT", "madt_api_call", path="/repos/acme/web/actions/variables/LEVEL",
                          method="POST", body={"value": "3"})
    assert refused.error["next"] == [{"tool": "madt_actions", "args": {
        "action": "set_variable", "owner_repo": "acme/web", "name": "LEVEL", "body": "3"}}]
    assert not env.forge.find_requests("POST")


@pytest.mark.parametrize("path", ["/orgs/acme/actions/secrets/DEPLOY_KEY", "/user/actions/secrets/DEPLOY_KEY"])
def test_an_organisation_or_user_secret_is_a_persons_to_set(env: Env, path: str) -> None:
    refused = env.refused("USER_ACTION_REQUIRED", "madt_api_call", path=path, method="PUT", body={"data": SECRET})
    assert "/settings/actions/secrets" in refused.error["user_action"]
    assert SECRET[:8] not in refused.text + json.dumps(refused.error, default=str)
    assert not env.forge.find_requests("PUT")
    out = env.cli("api", path, "-X", "PUT", "--body", json.dumps({"data": SECRET}))
    assert out.returncode != 0 and "person" in out.stdout + out.stderr and SECRET[:8] not in out.stdout + out.stderr
