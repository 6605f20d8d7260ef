"""Time tracking on issues: the fake forge's stopwatch and times in both flavours, the durations the rules
take, then madtea's actions on both surfaces.
"""
from __future__ import annotations

import pytest

import guard
from fakeforge import FakeForge, call
from remote_env import Env, env  # noqa: F401 - fixtures

REPO = "/repos/acme/web"


# =========================================================================== the fake forge

def test_fake_time_tracking_and_attachments(fake_forge: FakeForge) -> None:
    number = fake_forge.create_issue("acme", "web", "Track me")["number"]
    assert call(fake_forge, "POST", f"{REPO}/issues/{number}/stopwatch/start")[0] == 201
    assert call(fake_forge, "POST", f"{REPO}/issues/{number}/stopwatch/start")[0] == 409
    assert call(fake_forge, "POST", f"{REPO}/issues/{number}/stopwatch/stop")[0] == 201
    assert call(fake_forge, "POST", f"{REPO}/issues/{number}/stopwatch/stop")[0] == 409
    status, _, added = call(fake_forge, "POST", f"{REPO}/issues/{number}/times", body={"time": 3600})
    assert status == 200 and added["time"] == 3600
    status, _, times = call(fake_forge, "GET", f"{REPO}/issues/{number}/times")
    assert status == 200 and len(times) == 2 and sum(t["time"] for t in times) > 3600
    status, _, assets = call(fake_forge, "GET", f"{REPO}/issues/{number}/assets")
    assert status == 200 and assets == []

# =========================================================================== the rules


_CALL = guard.ForgeCall("madt_issues", "add_time", {"number": 3, "duration": "x"}, "acme/web")


@pytest.mark.parametrize("text, seconds", [("1h30m", 5400), ("45m", 2700), ("90s", 90), ("3600", 3600),
                                           (" 2h ", 7200), ("1h 5m 3s", 3903)])
def test_durations_the_forge_takes(text: str, seconds: int) -> None:
    assert guard.duration_seconds(_CALL, text) == seconds


@pytest.mark.parametrize("text", ["", "0", "soon", "1d", "-5m", "1h-2m", "99999999h"])
def test_durations_refused_with_the_call_to_send(text: str) -> None:
    with pytest.raises(guard.Refusal) as caught:
        guard.duration_seconds(_CALL, text)
    assert caught.value.code == "BAD_ARGUMENT" and "1h30m" in caught.value.message
    assert caught.value.next[0]["args"]["duration"] == "<a time such as 1h30m>"

# =========================================================================== madtea, both surfaces


def test_time_tracking_each_write_gives_the_total(env: Env) -> None:
    e = env
    number = e.forge.create_issue("acme", "web", "Track me")["number"]
    added = e.ok("madt_issues", action="add_time", number=number, duration="1h30m")
    assert added.data["total"] == 5400 and "its total is now 1h 30m" in added.text
    assert "started" in e.ok("madt_issues", action="start_stopwatch", number=number).text
    assert "already running" in e.ok("madt_issues", action="start_stopwatch", number=number).text
    stopped = e.ok("madt_issues", action="stop_stopwatch", number=number)
    assert stopped.data["total"] == 5400 + stopped.data["seconds"] and stopped.data["seconds"] > 0
    nothing = e.refused("BAD_ARGUMENT", "madt_issues", action="stop_stopwatch", number=number)
    assert nothing.error["next"][0]["args"]["action"] == "add_time"
    listed = e.ok("madt_issues", action="times", number=number)
    assert listed.data["total"] == stopped.data["total"] and len(listed.data["times"]) == 2
    assert e.refused("BAD_ARGUMENT", "madt_issues", action="add_time", number=number, duration="soon")
    assert "no files are attached" in e.ok("madt_issues", action="attachments", number=number).text


def test_fake_cancel_stopwatch_lists_and_deletes_times(fake_forge: FakeForge) -> None:
    number = fake_forge.create_issue("acme", "web", "Track me")["number"]
    assert call(fake_forge, "POST", f"{REPO}/issues/{number}/stopwatch/start")[0] == 201
    status, _, watches = call(fake_forge, "GET", "/user/stopwatches")
    assert status == 200 and watches[0]["issue_index"] == number and watches[0]["repo_name"] == "web"
    assert call(fake_forge, "DELETE", f"{REPO}/issues/{number}/stopwatch/delete")[0] == 204
    assert call(fake_forge, "DELETE", f"{REPO}/issues/{number}/stopwatch/delete")[0] == 409
    assert call(fake_forge, "GET", "/user/stopwatches")[2] == []
    _, _, added = call(fake_forge, "POST", f"{REPO}/issues/{number}/times", body={"time": 60})
    for path in (f"{REPO}/times", "/user/times"):
        status, _, times = call(fake_forge, "GET", path)
        assert status == 200 and [t["id"] for t in times] == [added["id"]], path
    assert call(fake_forge, "DELETE", f"{REPO}/issues/{number}/times/{added['id']}")[0] == 204
    assert call(fake_forge, "DELETE", f"{REPO}/issues/{number}/times/{added['id']}")[0] == 404
    assert call(fake_forge, "GET", f"{REPO}/times")[2] == []


def test_cancel_a_stopwatch_list_them_and_delete_a_time_entry(env: Env) -> None:
    e = env
    number = e.forge.create_issue("acme", "web", "Track me")["number"]
    e.ok("madt_issues", action="start_stopwatch", number=number)
    running = e.ok("madt_issues", action="stopwatches")
    assert running.data[0]["number"] == number and f"acme/web#{number}" in running.text
    cancelled = e.ok("madt_issues", action="cancel_stopwatch", number=number)
    assert cancelled.data["cancelled"] is True and "no time was tracked" in cancelled.text
    assert e.ok("madt_issues", action="cancel_stopwatch", number=number).data["cancelled"] is False
    assert e.issue(number).times == [] and e.ok("madt_issues", action="stopwatches").data == []
    other = e.forge.create_issue("acme", "web", "Another")["number"]
    first = e.ok("madt_issues", action="add_time", number=number, duration="1h").data["id"]
    e.ok("madt_issues", action="add_time", number=other, duration="30m")
    repo_times = e.ok("madt_issues", action="times")
    assert repo_times.data["total"] == 5400 and "total for acme/web: 1h 30m" in repo_times.text
    mine = e.ok("madt_issues", action="times", mine=True)
    assert {t["issue"] for t in mine.data["times"]} == {number, other} and mine.data["total"] == 5400
    gone = e.ok("madt_issues", action="delete_time", number=number, time_id=first)
    assert "Deleted tracked time" in gone.text and gone.data["total"] == 0
    missing = e.refused("NOT_FOUND_OR_NO_ACCESS", "madt_issues", action="delete_time", number=number, time_id=first)
    assert missing.error["next"][0]["args"]["action"] == "times"
    out = e.cli("issue", "times", "--mine")
    assert out.returncode == 0 and "30m" in out.stdout, out.stderr
    out = e.cli("issue", "cancel-stopwatch", str(number))
    assert out.returncode == 0 and "nothing to cancel" in out.stdout, out.stderr
