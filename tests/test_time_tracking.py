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
