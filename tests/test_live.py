"""The opt-in live lane: the remote tools against a real Gitea or Forgejo.

Skipped unless all three are set (for a scratch repository the token may write to):

    MADTEA_LIVE_URL    the forge's web address, e.g. https://gitea.example.org (a sub-path is kept)
    MADTEA_LIVE_TOKEN  a token with read and write access to issues and the repository
    MADTEA_LIVE_REPO   owner/repo of a scratch repository with at least one commit on its default branch

Optional: ``MADTEA_LIVE_CA`` names a CA file for a forge with a private certificate authority.

The test seal removes every ``MADTEA_*`` variable before each test, so they are
read once, when this module is imported. Only the live forge's own addresses
are let through the seal's loopback-only socket guard, and only for these
tests. What the lane leaves behind: closed issues, a merged pull request and a
commit on the default branch of the scratch repository (madtea deletes nothing
from the agent surface, by design).
"""
from __future__ import annotations

import ipaddress
import json
import os
import socket
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import urlsplit

import pytest

import madtea
from topologies import run_git

LIVE_URL = os.environ.get("MADTEA_LIVE_URL", "").strip().rstrip("/")
LIVE_TOKEN = os.environ.get("MADTEA_LIVE_TOKEN", "").strip()
LIVE_REPO = os.environ.get("MADTEA_LIVE_REPO", "").strip().strip("/")
LIVE_CA = os.environ.get("MADTEA_LIVE_CA", "").strip()
_MISSING = [name for name, value in (("MADTEA_LIVE_URL", LIVE_URL), ("MADTEA_LIVE_TOKEN", LIVE_TOKEN),
                                     ("MADTEA_LIVE_REPO", LIVE_REPO)) if not value]

pytestmark = pytest.mark.skipif(
    bool(_MISSING), reason=f"live lane is opt-in: set {', '.join(_MISSING)} (a real Gitea or Forgejo and a "
    "scratch owner/repo) to run it")


@pytest.fixture
def live(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A checkout whose origin is the scratch repository, the token for its host, and a way out of the seal."""
    parts = urlsplit(LIVE_URL)
    if parts.scheme not in ("http", "https") or not parts.hostname or LIVE_REPO.count("/") != 1:
        pytest.fail("MADTEA_LIVE_URL must be http(s)://host[:port][/prefix] and MADTEA_LIVE_REPO owner/repo")
    _let_through(parts.hostname, parts.port or (443 if parts.scheme == "https" else 80), monkeypatch)
    if LIVE_CA:
        key = parts.hostname + (f":{parts.port}" if parts.port else "")
        config = Path(os.environ["XDG_CONFIG_HOME"]) / "madtea" / "config.json"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(json.dumps({"hosts": {key: {"ca_file": LIVE_CA}}}), encoding="utf-8")
    monkeypatch.setenv("MADTEA_TOKEN", LIVE_TOKEN)
    checkout = tmp_path / LIVE_REPO.split("/")[1]
    checkout.mkdir()
    run_git(checkout, "init", "-q", "-b", "main")
    run_git(checkout, "remote", "add", "origin", f"{LIVE_URL}/{LIVE_REPO}.git")
    yield Path(os.path.realpath(checkout))


def _let_through(host: str, port: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Allow connections to the live forge's addresses (and loopback) for this test only."""
    seal = sys.modules["conftest"]
    monkeypatch.setattr(seal, "RESOLVABLE", seal.RESOLVABLE | {host})
    guarded = socket.socket.connect
    allowed = {info[4][0] for info in socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)}
    real = guarded.__globals__.get("_real_connect", guarded)  # the seal keeps the unguarded connect

    def connect(self: socket.socket, address: Any) -> None:
        if isinstance(address, tuple) and address and str(address[0]).split("%")[0] in allowed:
            return real(self, address)
        return guarded(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    assert all(not ipaddress.ip_address(a.split("%")[0]).is_unspecified for a in allowed)


def call(checkout: Path, tool: str, **args: Any) -> madtea.Result:
    result = madtea.run(tool, args, madtea.Context("mcp", checkout))
    assert not result.is_error, f"{tool} {args.get('action')}: {result.text}"
    assert LIVE_TOKEN not in result.text and LIVE_TOKEN not in json.dumps(result.data, default=str)
    return result


def test_live_reads_the_repository(live: Path) -> None:
    repo = call(live, "madt_repo", action="view")
    assert repo.data["full_name"].lower() == LIVE_REPO.lower()
    who = call(live, "madt_whoami")
    assert who.data["user"] and "MADTEA_TOKEN" in who.data["credential"]
    assert call(live, "madt_repo", action="branches").data
    call(live, "madt_labels", action="list")
    call(live, "madt_issues", action="list", state="all", limit=5)


def test_live_issue_lifecycle(live: Path) -> None:
    title = f"madtea live lane {uuid.uuid4().hex[:8]}"
    made = call(live, "madt_issues", action="create", title=title, body="- [ ] first\n- [ ] second")
    number = made.data["number"]
    found = call(live, "madt_issues", action="list", search=title, state="all").data
    assert [r["number"] for r in found] == [number]
    call(live, "madt_issues", action="comment", number=number, body="A comment from the live lane.")
    call(live, "madt_issues", action="edit", number=number, check="first", append="Appended.")
    view = call(live, "madt_issues", action="view", number=number, comments=True)
    assert "- [x] first" in view.data["body"] and view.data["body"].endswith("Appended.")
    assert [c["body"] for c in view.data["comments"]] == ["A comment from the live lane."]
    stale = madtea.run("madt_issues", {"action": "edit", "number": number, "body": "x",
                                       "updated_at": "2000-01-01T00:00:00Z"}, madtea.Context("mcp", live))
    assert stale.is_error and stale.error["code"] == "STALE_BODY"
    closed = call(live, "madt_issues", action="close", numbers=[number], comment="Closed by the live lane.")
    assert closed.data[0]["state"] == "closed"
    assert closed.text.rstrip().endswith("nothing left to verify for this step.")


def test_live_pull_request_is_opened_and_merged(live: Path) -> None:
    default = call(live, "madt_repo", action="view").data["default_branch"]
    branch = f"madtea-live-{uuid.uuid4().hex[:8]}"
    made = call(live, "madt_files", action="create", path=f"{branch}.txt", title=f"Live lane: {branch}",
                content=f"written by the madtea live lane on {branch}\n", branch=default, new_branch=branch)
    assert made.data["read_back"] is True and made.data["next"]["args"]["head"] == branch
    opened = call(live, "madt_pr", action="create", title=f"Live lane {branch}", head=branch, base=default)
    number = opened.data["number"]
    again = call(live, "madt_pr", action="create", title="again", head=branch, base=default, reuse=True)
    assert again.data["number"] == number and again.data["created"] is False
    assert f"+written by the madtea live lane on {branch}" in call(live, "madt_pr", action="diff", number=number).text
    for _ in range(20):  # the forge checks mergeability in the background
        if call(live, "madt_pr", action="view", number=number).data.get("mergeable"):
            break
        time.sleep(0.5)
    merged = call(live, "madt_pr", action="merge", number=number, style="merge", delete_branch=True)
    assert merged.data["state"] == "merged" and merged.data["merge_commit_sha"]
    assert not [b for b in call(live, "madt_repo", action="branches", limit=1000).data if b["name"] == branch]
