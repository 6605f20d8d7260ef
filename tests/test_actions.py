"""Actions: artifacts, dispatch, secrets and variables: the fake forge's endpoints in both flavours, the
rules over names, downloads and inputs, then madtea's actions on both surfaces and the hook.
"""
from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

import guard
import madtea
from fakeforge import FakeForge, call
from remote_env import Env, child_env, env  # noqa: F401 - fixtures

REPO = "/repos/acme/web"


# =========================================================================== the fake forge

def test_fake_artifacts_exist_only_on_gitea(fake_forge: FakeForge) -> None:
    run = fake_forge.add_action_run("acme", "web")
    number = fake_forge.add_artifact("acme", "web", run.id, "dist", b"PK\x03\x04zip")
    if fake_forge.flavour == "forgejo":
        fake_forge.allow_violations("no operation in the forgejo")
    status, _, listing = call(fake_forge, "GET", f"{REPO}/actions/runs/{run.id}/artifacts")
    if fake_forge.flavour == "forgejo":
        assert status == 404
        return
    assert status == 200 and listing["artifacts"][0]["size_in_bytes"] == 7
    status, headers, _ = call(fake_forge, "GET", f"{REPO}/actions/artifacts/{number}/zip")
    assert status == 302 and "/artifacts-blob/" in headers.get("Location", headers.get("location", ""))


def test_fake_dispatch_secrets_variables(fake_forge: FakeForge) -> None:
    fake_forge.commit("acme", "web", "main", {".gitea/workflows/deploy.yml": "on: workflow_dispatch\n"}, "ci")
    body: dict[str, Any] = {"ref": "main", "inputs": {"level": "3"}}
    if fake_forge.flavour == "forgejo":
        body["return_run_info"] = True
    status, _, answer = call(fake_forge, "POST", f"{REPO}/actions/workflows/deploy.yml/dispatches", body=body)
    assert status == (201 if fake_forge.flavour == "forgejo" else 204)
    assert fake_forge.dispatches[-1]["inputs"] == {"level": "3"}
    status, _, _ = call(fake_forge, "POST", f"{REPO}/actions/workflows/nope.yml/dispatches", body={"ref": "main"})
    assert status == 404
    status, _, _ = call(fake_forge, "PUT", f"{REPO}/actions/secrets/deploy_key", body={"data": "s3cr3t-value"})
    assert status == 201 and fake_forge.repo().secrets == {"DEPLOY_KEY": "s3cr3t-value"}
    assert call(fake_forge, "PUT", f"{REPO}/actions/secrets/DEPLOY_KEY", body={"data": "v2"})[0] == 204
    assert call(fake_forge, "PUT", f"{REPO}/actions/secrets/GITEA_X", body={"data": "v"})[0] == 400
    assert call(fake_forge, "DELETE", f"{REPO}/actions/secrets/deploy_key")[0] == 204
    assert call(fake_forge, "POST", f"{REPO}/actions/variables/level", body={"value": "3"})[0] == 201
    assert call(fake_forge, "POST", f"{REPO}/actions/variables/level", body={"value": "3"})[0] == 409
    assert call(fake_forge, "PUT", f"{REPO}/actions/variables/level", body={"value": "4"})[0] == 204
    status, _, got = call(fake_forge, "GET", f"{REPO}/actions/variables/LEVEL")
    assert status == 200 and got["data"] == "4"
    assert call(fake_forge, "DELETE", f"{REPO}/actions/variables/level")[0] == 204

# =========================================================================== the rules


_CALL = guard.ForgeCall("madt_issues", "add_time", {"number": 3, "duration": "x"}, "acme/web")


@pytest.mark.parametrize("name, kept", [("deploy_key", "DEPLOY_KEY"), ("_X1", "_X1")])
def test_actions_names_are_upper_cased(name: str, kept: str) -> None:
    assert guard.actions_name(_CALL, name, "secret") == kept


@pytest.mark.parametrize("name", ["1ABC", "GITEA_TOKEN", "github_x", "a-b", "", "has space"])
def test_actions_names_the_forges_refuse(name: str) -> None:
    with pytest.raises(guard.Refusal) as caught:
        guard.actions_name(_CALL, name, "secret")
    assert caught.value.code == "BAD_ARGUMENT" and "cannot name a secret" in caught.value.message


def test_a_secret_is_never_repeated_in_a_refusal() -> None:
    secret_call = guard.ForgeCall("madt_actions", "secret_set", {"name": "1X", "body": "hunter2-value"}, "acme/web",
                                  secret="body")
    with pytest.raises(guard.Refusal) as caught:
        guard.actions_name(secret_call, "1X", "secret")
    assert "hunter2" not in json.dumps(caught.value.next) + caught.value.message
    assert caught.value.next[0]["args"]["body"] == "<the same body>"


@pytest.mark.parametrize(("raw", "exists", "folder", "code"), [
    ("/tmp/x/a.zip", False, True, None),
    (" /tmp/x/a.zip ", False, True, None),
    ("/tmp/x/b.zip", True, True, "PATH_EXISTS"),
    ("rel.zip", False, True, "BAD_ARGUMENT"),
    ("", False, False, "BAD_ARGUMENT"),
    ("/tmp/x/no/c.zip", False, False, "BAD_ARGUMENT"),
])
def test_a_download_never_overwrites(raw: str, exists: bool, folder: bool, code: str | None) -> None:
    from pathlib import Path
    c = guard.ForgeCall("madt_actions", "download", {"artifact_id": 1}, "acme/web")
    if code is None:
        assert guard.saved_file(c, raw, exists=exists, folder=folder) == Path(raw.strip())
        return
    with pytest.raises(guard.Refusal) as caught:
        guard.saved_file(c, raw, exists=exists, folder=folder)
    assert caught.value.code == code
    assert caught.value.next[0]["args"]["output"].startswith("<")


_REVIEW = guard.ForgeCall("madt_pr", "review", {"number": 1, "event": "comment"}, "acme/web")


def test_dispatch_inputs_are_text() -> None:
    assert guard.dispatch_inputs(_REVIEW, {"a": 1, "b": True, "c": "x"}) == {"a": "1", "b": "true", "c": "x"}
    for bad in ([1], {"a": [1]}, "a=1"):
        with pytest.raises(guard.Refusal):
            guard.dispatch_inputs(_REVIEW, bad)

# =========================================================================== madtea, both surfaces


def test_actions_artifacts_download_and_dispatch(env: Env, tmp_path: Any) -> None:
    e = env
    run = e.forge.add_action_run("acme", "web")
    artifact = e.forge.add_artifact("acme", "web", run.id, "dist", b"PK\x03\x04 zip bytes")
    e.forge.commit("acme", "web", "main", {".gitea/workflows/deploy.yml": "on: workflow_dispatch\n"}, "ci")
    target = tmp_path / "dist.zip"
    if e.forge.flavour == "forgejo":
        e.forge.clear_requests()
        e.refused("NOT_SUPPORTED", "madt_actions", action="artifacts")
        e.refused("NOT_SUPPORTED", "madt_actions", action="download", artifact_id=artifact, output=str(target))
        assert not e.forge.find_requests(path_contains="artifacts")
        started = e.ok("madt_actions", action="dispatch", workflow="deploy.yml", inputs={"level": 3})
        assert started.data["run_id"] == e.forge.dispatches[-1]["run"] and "run " in started.text
    else:
        assert e.ok("madt_actions", action="artifacts", run_id=run.id).data[0]["name"] == "dist"
        saved = e.ok("madt_actions", action="download", artifact_id=artifact, output=str(target))
        assert target.read_bytes() == b"PK\x03\x04 zip bytes" and saved.data["size"] == 14
        again = e.refused("PATH_EXISTS", "madt_actions", action="download", artifact_id=artifact, output=str(target))
        assert "never overwrites" in again.text
        for output in ("dist.zip", str(tmp_path / "no" / "dist.zip")):
            e.refused("BAD_ARGUMENT", "madt_actions", action="download", artifact_id=artifact, output=output)
        assert not (tmp_path / "no").exists()
        started = e.ok("madt_actions", action="dispatch", workflow="deploy.yml", inputs={"level": 3})
        assert started.data["run_id"] is None and "does not say which run" in started.text
    assert e.forge.dispatches[-1] == {"workflow": "deploy.yml", "ref": "main", "inputs": {"level": "3"},
                                      "run": e.forge.dispatches[-1]["run"]}
    assert "on main with inputs" in started.text


def test_a_dispatch_with_many_inputs_says_how_many_in_a_bounded_text(env: Env) -> None:
    env.forge.commit("acme", "web", "main", {".gitea/workflows/deploy.yml": "on: workflow_dispatch\n"}, "ci")
    inputs = {f"input_{n}": "x" * 50 for n in range(500)}
    started = env.ok("madt_actions", action="dispatch", workflow="deploy.yml", inputs=inputs)
    assert env.forge.dispatches[-1]["inputs"] == inputs and started.data["inputs"] == inputs
    assert len(started.text) < 1000 and "(500 inputs in all)" in started.text


SECRET = "s3cr3t-Value-that-must-never-show"


def test_a_secret_is_set_and_never_shown_anywhere(env: Env, capsys: Any) -> None:
    e = env
    outputs = []
    made = e.ok("madt_actions", action="set_secret", name="deploy_key", body=SECRET)
    assert e.repo.secrets == {"DEPLOY_KEY": SECRET} and "Created the secret DEPLOY_KEY" in made.text
    outputs.append(made)
    outputs.append(e.ok("madt_actions", action="set_secret", name="DEPLOY_KEY", body=SECRET))
    assert "Updated" in outputs[-1].text
    # Refusals echo the call they refuse: a misspelt parameter, a bad name, a value git could not take.
    outputs.append(e.refused("UNKNOWN_PARAMETER", "madt_actions", action="set_secret", name="X", body=SECRET,
                             vaule=SECRET))
    outputs.append(e.refused("BAD_ARGUMENT", "madt_actions", action="set_secret", name="1x", body=SECRET))
    outputs.append(e.refused("BAD_ARGUMENT", "madt_actions", action="set_secret", name="X", body=SECRET + "\x00"))
    e.forge.inject("500", method="PUT", path_contains="/actions/secrets/")
    outputs.append(e.call("madt_actions", action="set_secret", name="LOST", body=SECRET))
    cli = subprocess.run([sys.executable, "-m", "madtea", "actions", "set-secret", "CLI_KEY", "--body-file", "-"],
                         cwd=e.clone, env=child_env(), input=SECRET, capture_output=True, text=True, timeout=60)
    assert cli.returncode == 0, cli.stderr
    assert e.repo.secrets["CLI_KEY"] == SECRET
    bad_cli = e.cli("actions", "set-secret", "9bad", "--body", SECRET)
    assert bad_cli.returncode != 0
    seen = capsys.readouterr()
    channels = [seen.out, seen.err, cli.stdout, cli.stderr, bad_cli.stdout, bad_cli.stderr]
    for result in outputs:
        channels += [result.text, json.dumps(result.data, default=str), json.dumps(result.error, default=str),
                     json.dumps(result.notes)]
    assert not [c for c in channels if SECRET[:8] in c or SECRET in c]


def test_variables_read_and_write(env: Env) -> None:
    e = env
    made = e.ok("madt_actions", action="set_variable", name="level", body="3")
    assert "Created the variable LEVEL" in made.text and "<<< variable LEVEL" in made.text
    assert "Updated" in e.ok("madt_actions", action="set_variable", name="LEVEL", body="4").text
    assert e.ok("madt_actions", action="variables").data == [{"name": "LEVEL", "value": "4"}]
    assert e.ok("madt_actions", action="variables", name="level").data[0]["value"] == "4"
    e.refused("NOT_FOUND_OR_NO_ACCESS", "madt_actions", action="variables", name="nope")
    gone = e.refused("USER_ACTION_REQUIRED", "madt_actions", action="delete_variable", name="LEVEL")
    assert "nothing was deleted" in gone.text and e.repo.variables == {"LEVEL": "4"}


def test_the_hook_steers_a_typed_secret_without_repeating_it(tmp_path: Any) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    event = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "cwd": str(tmp_path), "session_id": "s",
             "tool_input": {"command": f"madtea actions set-secret DEPLOY --body {SECRET}"}}
    out = subprocess.run([sys.executable, "-m", "madtea", "hook"], input=json.dumps(event), capture_output=True,
                         text=True, env=child_env(), timeout=60)
    assert out.returncode == 2 and "madt_actions action=set_secret" in out.stderr
    assert SECRET[:8] not in out.stderr + out.stdout and 'body="<the secret value>"' in out.stderr


_MISSPELT = ("bdy", "Body", "bodyy", "bod", "BODY", "value", "data", "secret", "val", "secret_value")


@pytest.mark.parametrize("key", _MISSPELT)
def test_a_secret_under_a_misspelt_parameter_is_never_repeated(env: Env, key: str) -> None:
    refused = env.refused("UNKNOWN_PARAMETER", "madt_actions", action="set_secret", name="DEPLOY_KEY",
                          **{key: SECRET})
    text = madtea.render_text(refused, "mcp")
    shown = text + json.dumps(refused.data, default=str) + json.dumps(refused.error, default=str)
    assert SECRET not in shown and SECRET[:8] not in shown and json.dumps(SECRET)[1:9] not in shown
    way = refused.error["next"] or [c[0] for c in refused.error["choices"]]
    assert way and all(step["args"]["body"] == "<the secret value>" for step in way), way
    assert all(step["args"]["action"] == "set_secret" and key not in step["args"] for step in way)
    assert 'body="<the secret value>"' in text
    assert env.repo.secrets == {}


@pytest.mark.parametrize("args", [{"name": SECRET, "body": SECRET}, {"nmae": SECRET, "body": "x"},
                                  {"name": "K", "body": [SECRET]}, {"body": SECRET},
                                  {"name": "K", "body": SECRET, "owner_repo": SECRET}])
def test_no_value_given_to_an_action_that_carries_a_secret_is_repeated(env: Env, args: dict[str, Any]) -> None:
    refused = env.call("madt_actions", action="set_secret", **args)
    assert refused.is_error
    shown = madtea.render_text(refused, "mcp") + json.dumps(refused.data, default=str) \
        + json.dumps(refused.error, default=str)
    assert SECRET[:8] not in shown, shown


@pytest.mark.parametrize("body", [{"data": SECRET}, {"body": SECRET}, {"value": SECRET, "name": SECRET}])
def test_a_secret_sent_through_the_passthrough_is_steered_without_its_value(env: Env, body: dict[str, Any]) -> None:
    refused = env.refused("BAD_ARGUMENT", "madt_api_call", path="/repos/acme/web/actions/secrets/DEPLOY_KEY",
                          method="PUT", body=body)
    shown = madtea.render_text(refused, "mcp") + json.dumps(refused.data, default=str) \
        + json.dumps(refused.error, default=str)
    assert SECRET[:8] not in shown
    assert refused.error["next"][0]["args"] | {"owner_repo": None} == {
        "action": "set_secret", "owner_repo": None, "name": "DEPLOY_KEY", "body": "<the secret value>"}
