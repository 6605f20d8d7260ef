"""The forge contract (tests/forge_contract.py) is whole and cited, the fake forge serves what it says, release
by release, and madtea's version gate (forge.SINCE) says what it says."""
from __future__ import annotations

import re

import pytest

import fakeforge
import forge
import forge_contract
from fakeforge import FakeForge, call

_ALL_RELEASES = [f"{flavour}-{line}" for flavour, lines in forge_contract.RELEASES.items() for line in lines]


def _shape(method: str, path: str) -> str:
    return method + " " + re.sub(r"\{[^}]*\}", "{}", path)


def test_every_entry_cites_a_handler_in_the_range() -> None:
    seen = set()
    for entry in forge_contract.ENDPOINTS:
        assert entry.key not in seen, f"{entry.key} is listed twice"
        seen.add(entry.key)
        assert entry.gitea or entry.forgejo, f"{entry.key}: no server has it"
        for flavour in ("gitea", "forgejo"):
            side = entry.side(flavour)
            if side is None:
                continue
            assert side.since in forge_contract.RELEASES[flavour], (entry.key, side.since)
            assert side.file.startswith("routers/api/v1/") and side.file.endswith(".go"), (entry.key, side.file)
            assert re.fullmatch(r"[A-Z][A-Za-z0-9]*", side.function), (entry.key, side.function)
            assert side.paging in ("link+total", "total", "limit", "none")
            assert all(100 <= s < 600 for s in side.statuses)
    for key, notes in forge_contract.NOTES.items():
        assert key in seen, f"NOTES names {key}, which is not an endpoint of the contract"
        assert notes and all(re.search(r"\.go\b|\b[A-Z][A-Za-z]+\b", note) for note in notes)


def test_every_route_of_the_fake_is_in_the_contract() -> None:
    shapes = {_shape(e.method, e.path) for e in forge_contract.ENDPOINTS}
    missing = [f"{r.method} {r.pattern}" for r in fakeforge._ROUTES if _shape(r.method, r.pattern) not in shapes]
    assert not missing, "add these to tests/forge_contract.py, from the servers' source: " + ", ".join(missing)


def test_madteas_version_gate_says_what_the_contract_says() -> None:
    """forge.SINCE names each endpoint's first release as the contract does, and leaves out no endpoint of the
    fake (all that madtea calls) that some supported release lacks."""
    by_key = {e.key: e for e in forge_contract.ENDPOINTS}
    for key, (gitea, forgejo) in forge.SINCE.items():
        if "?" in key:  # a query parameter: its NOTES say when it came
            endpoint = key.split("?", 1)[0]
            assert endpoint in by_key and key.split("?", 1)[1] + "=" in " ".join(forge_contract.NOTES[endpoint])
            continue
        assert key in by_key, f"forge.SINCE names {key}, which the contract does not list"
        entry = by_key[key]
        assert (gitea, forgejo) == (entry.gitea and entry.gitea.since, entry.forgejo and entry.forgejo.since), key
    served = {_shape(r.method, r.pattern) for r in fakeforge._ROUTES}
    oldest = {flavour: next(iter(lines)) for flavour, lines in forge_contract.RELEASES.items()}
    not_everywhere = [e.key for e in forge_contract.ENDPOINTS if _shape(e.method, e.path) in served
                      and any(not forge_contract.offered(e, f, oldest[f]) for f in ("gitea", "forgejo"))]
    assert sorted(k for k in not_everywhere if k not in forge.SINCE) == []


def _concrete(path: str) -> str:
    filled = {"owner": "acme", "repo": "web", "org": "acme", "username": "alice", "index": "1", "id": "1",
              "sha": "0" * 40, "ref": "main", "branch*": "main", "tag*": "v1", "filepath*": "README.md",
              "diffType": "diff", "base": "main", "head": "feature", "type": "generic", "name": "pkg",
              "version": "1.0", "pageName": "Home", "collaborator": "bob", "attachment_id": "1"}
    return re.sub(r"\{([^}]+)\}", lambda m: filled.get(m.group(1), "1"), path)


@pytest.mark.parametrize("release", _ALL_RELEASES)
def test_the_fake_serves_what_the_contract_says(release: str, tmp_path: object) -> None:
    """Release by release, an endpoint the contract gives it answers from its handler, and one it does not
    answers as Gitea's router does for an unknown path (a plain-text 404, or 405 for another method's path)."""
    flavour, line = forge_contract.release(release)
    with FakeForge(release, spec_check=False) as fake:
        assert fake.version == forge_contract.VERSION_STRINGS[release]
        wrong = []
        served = {_shape(r.method, r.pattern) for r in fakeforge._ROUTES}
        for entry in forge_contract.ENDPOINTS:
            # reads only (a write here would change what later reads find), of the endpoints the fake has
            if entry.method != "GET" or _shape(entry.method, entry.path) not in served:
                continue
            status, headers, body = call(fake, "GET", _concrete(entry.path))
            routed = not (status in (404, 405) and not headers.get("Content-Type", "").startswith(
                "application/json"))
            if routed != forge_contract.offered(entry, flavour, line):
                wrong.append(f"{entry.key}: {status} {body!r:.80}")
        assert not wrong, "\n".join(wrong)
        assert not fake.internal_errors


def test_a_request_outside_the_contract_fails_the_test() -> None:
    with FakeForge("gitea", spec_check=False) as fake:
        call(fake, "GET", "/repos/acme/web/actions/secrets")
        assert not fake.violations
        call(fake, "GET", "/repos/acme/web/projects")
        assert fake.violations == ["GET /repos/acme/web/projects: an endpoint the forge contract does not list"]


@pytest.mark.parametrize("version, flavour, release", [
    ("1.25.4", "gitea", (1, 25)), ("1.21.11", "gitea", (1, 21)), ("1.26.0+dev-12-gabcdef", "gitea", (1, 26)),
    ("15.0.3+gitea-1.22.0", "forgejo", (15,)), ("11.0.15+gitea-1.22.0", "forgejo", (11,)),
])
def test_a_version_string_names_its_release(version: str, flavour: str, release: tuple[int, ...]) -> None:
    assert forge.release_of(version) == (flavour, release)


def test_the_readme_names_the_range_the_contract_covers() -> None:
    from pathlib import Path
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    gitea, forgejo = list(forge_contract.GITEA_RELEASES), list(forge_contract.FORGEJO_RELEASES)
    assert f"**Gitea {gitea[0]} to {gitea[-1]}** and **Forgejo {forgejo[0]} to {forgejo[-1]}**" in readme
    for line, (tag, _) in (forge_contract.GITEA_RELEASES | forge_contract.FORGEJO_RELEASES).items():
        assert tag[1:] in readme, f"the README does not name {tag}"


# The code madtea gives each status a handler of the contract writes (routers/api/v1 and services/context/api.go:
# a JSON {"message"} body). A 409 and 405 on a merge path, and 401/403 by their message, are mapped further; these
# are the codes for a plain message on a path that is not a merge.
_MAPPED = {400: "BAD_ARGUMENT", 403: "NOT_ALLOWED", 404: "NOT_FOUND_OR_NO_ACCESS", 405: "NOT_SUPPORTED",
           409: "CONFLICT", 412: "BAD_ARGUMENT", 413: "BAD_ARGUMENT", 422: "BAD_ARGUMENT", 423: "READ_ONLY",
           500: "FORGE_UNAVAILABLE"}


def test_every_error_status_a_handler_writes_maps_to_a_code() -> None:
    """madtea's error mapping is checked against the contract: each error status a cited handler writes becomes
    a stable code (never an internal error), its message kept."""
    import json
    seen = set()
    for entry in forge_contract.ENDPOINTS:
        for side in (entry.gitea, entry.forgejo):
            for status in side.statuses if side else ():
                if status < 400 or (status, entry.method) in seen:
                    continue
                seen.add((status, entry.method))
                path = _concrete(entry.path.replace("/merge", "/files")) if status in (405, 409) else \
                    _concrete(entry.path)
                error = forge.map_error(status, json.dumps({"message": "said by the server"}).encode(),
                                        content_type="application/json", method=entry.method, path=path,
                                        host="forge.example")
                assert error.code, (entry.key, status)
                if status in _MAPPED and status != 423:
                    assert error.code in (_MAPPED[status], "MERGE_BLOCKED", "CONFLICT"), (entry.key, status, error)
                assert "said by the server" in str(error) or status == 413 or status >= 500, (entry.key, status)
    assert {s for s, _ in seen} >= {400, 403, 404, 409, 422, 500}
