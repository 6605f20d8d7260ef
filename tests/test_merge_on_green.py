"""Merge on green: a head's checks read whole, `pr checks` exiting as gh's does, and `pr merge` never merging red.

Driven against the fake forge (both flavours) with paged commit statuses, Actions runs and their logs,
required status checks on a protected base and the forge's own scheduled merge.
"""
from __future__ import annotations

import json

import pytest

from remote_env import Env, env  # noqa: F401 - fixtures

FAILING_URL = "http://ci.example.test/builds/1"


def _pr(e: Env, name: str = "feat-a") -> str:
    """PR #1 from *name* into main; its head sha."""
    e.forge.commit("acme", "web", name, {f"{name}.txt": f"{name}\n"}, f"Work on {name}")
    e.forge.create_pull("acme", "web", name, title=f"Add {name}")
    sha = e.forge.branch_sha("acme", "web", name)
    assert sha
    return sha


def _paged_red(e: Env, sha: str) -> None:
    """35 contexts, the oldest failing: Gitea's first page of 30 latest statuses holds only successes."""
    e.forge.add_commit_status("acme", "web", sha, "failure", context="ci/oldest", description="tests failed",
                              target_url=FAILING_URL)
    for i in range(34):
        e.forge.add_commit_status("acme", "web", sha, "success", context=f"ci/check-{i:02d}")


def test_checks_read_every_page_and_the_oldest_failure_counts(env: Env) -> None:
    e = env
    sha = _pr(e)
    _paged_red(e, sha)
    # The forge's combined answer covers its first page only, which is all green.
    status, _headers, body = e.forge.call("GET", f"/repos/acme/web/commits/{sha}/status")
    assert status == 200 and json.loads(body)["state"] == "success"
    checks = e.ok("madt_pr", action="checks", number=1)
    assert checks.data["state"] == "failure" and checks.data["verdict"] == "failed"
    rows = {r["context"]: r for r in checks.data["statuses"]}
    assert len(rows) == 35 and rows["ci/oldest"]["state"] == "failure"
    assert rows["ci/oldest"]["url"] == FAILING_URL
    assert f"failure  ci/oldest: tests failed {FAILING_URL}" in checks.text
    assert checks.text.startswith(f"PR #1 head {sha[:9]}: failure (1 failed, 34 passed)")


def test_latest_status_of_a_context_counts(env: Env) -> None:
    e = env
    sha = _pr(e)
    e.forge.add_commit_status("acme", "web", sha, "failure", context="ci/build")
    e.forge.add_commit_status("acme", "web", sha, "success", context="ci/build")
    checks = e.ok("madt_pr", action="checks", number=1)
    assert [(r["context"], r["state"]) for r in checks.data["statuses"]] == [("ci/build", "success")]
    assert checks.data["verdict"] == "passed"


@pytest.mark.parametrize("states, verdict", [
    (("success", "success"), "passed"),
    (("success", "pending"), "pending"),
    (("pending", "error"), "failed"),
    ((), "passed"),
])
def test_cli_checks_exit_as_gh(env: Env, states: tuple[str, ...], verdict: str) -> None:
    e = env
    sha = _pr(e)
    for i, state in enumerate(states):
        e.forge.add_commit_status("acme", "web", sha, state, context=f"ci/{i}")
    done = e.cli("pr", "checks", "1")
    assert done.returncode == {"passed": 0, "failed": 1, "pending": 8}[verdict], done.stderr
    assert "Traceback" not in done.stderr
    if not states:
        assert "no checks reported" in done.stdout
    shown = e.cli("pr", "checks", "1", "--json")
    assert shown.returncode == done.returncode and json.loads(shown.stdout)["verdict"] == verdict


def test_a_warning_is_green_on_gitea_and_not_on_forgejo(env: Env) -> None:
    e = env
    sha = _pr(e)
    e.forge.add_commit_status("acme", "web", sha, "success", context="ci/build")
    e.forge.add_commit_status("acme", "web", sha, "warning", context="ci/lint")
    checks = e.ok("madt_pr", action="checks", number=1)
    if e.forge.flavour == "gitea":  # modules/commitstatus CommitStatusStates.Combine
        assert (checks.data["state"], checks.data["verdict"]) == ("success", "passed")
    else:  # CalcCommitStatus: the worst state, and warning is worse than pending
        assert (checks.data["state"], checks.data["verdict"]) == ("warning", "failed")


def test_actions_runs_of_the_head_count_and_a_failed_job_shows_its_log(env: Env) -> None:
    e = env
    sha = _pr(e)
    log = "".join(f"step {i}\n" for i in range(100)) + "FAILED test_login: expected 200\n"
    run = e.forge.add_action_run("acme", "web", branch="feat-a", head_sha=sha, conclusion="failure",
                                 jobs=(("lint", "success", "ok\n"), ("test", "failure", log)),
                                 post_statuses=e.forge.flavour == "gitea")
    e.forge.add_action_run("acme", "web", branch="main", conclusion="failure")  # another sha: not this head's
    checks = e.ok("madt_pr", action="checks", number=1)
    assert checks.data["verdict"] == "failed"
    if e.forge.flavour == "gitea":
        rows = {r["context"]: r for r in checks.data["statuses"]}
        assert set(rows) == {"ci / lint (push)", "ci / test (push)"}
        failed = rows["ci / test (push)"]
        assert failed["state"] == "failure" and failed["job_id"] == run.jobs[1].id
        assert failed["log"].endswith("FAILED test_login: expected 200") and "step 59\n" not in failed["log"]
        assert "<<< log of job" in checks.text and "untrusted content" in checks.text
        assert "step 99\nFAILED test_login" in checks.text
    else:  # Forgejo's API lists runs but has no jobs or logs: the run is one row, with its page
        [row] = checks.data["statuses"]
        assert row["state"] == "failure" and row["url"].endswith(f"/actions/runs/{run.number}")


def test_a_running_action_without_statuses_is_pending(env: Env) -> None:
    e = env
    sha = _pr(e)
    e.forge.add_commit_status("acme", "web", sha, "success", context="ci/build")
    e.forge.add_action_run("acme", "web", branch="feat-a", head_sha=sha, status="in_progress", conclusion="")
    checks = e.ok("madt_pr", action="checks", number=1)
    assert checks.data["verdict"] == "pending"
    assert e.cli("pr", "checks", "1").returncode == 8
