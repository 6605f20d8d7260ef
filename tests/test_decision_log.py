"""The decision log reads as one: adr/README.md lists every record once, with the record's own status.

A record added without its index line, an index line whose status drifted from
its record, a link to no file, or a status naming a record that does not exist
fails here.
"""
from __future__ import annotations

import re
from pathlib import Path

ADR = Path(__file__).resolve().parent.parent / "adr"
ROW = re.compile(r"^\| \[(\d{4})\]\(([^)]+)\) \| (.+?) \| (.+) \|$")


def records() -> dict[str, Path]:
    return {path.name: path for path in sorted(ADR.glob("[0-9][0-9][0-9][0-9]-*.md"))}


def index_rows() -> list[tuple[str, str, str, str]]:
    rows = [ROW.match(line) for line in (ADR / "README.md").read_text(encoding="utf-8").splitlines()]
    return [(m[1], m[2], m[3], m[4]) for m in rows if m]


def status_of(path: Path) -> str:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("Status:"):
            return line[len("Status:"):].strip()
    raise AssertionError(f"{path.name} has no Status: line")


def test_every_record_is_listed_once_and_every_link_resolves() -> None:
    listed = [link for _, link, _, _ in index_rows()]
    missing = sorted(set(records()) - set(listed))
    assert not missing, f"add a line to adr/README.md for: {missing}"
    assert not [link for link in listed if link not in records()], "an index line links to no record"
    assert len(listed) == len(set(listed)), "a record is listed twice"
    assert all(link.startswith(number) for number, link, _, _ in index_rows())
    assert listed == sorted(listed), "the index is in number order"


def test_each_line_states_its_records_own_status() -> None:
    for _, link, _, status in index_rows():
        assert status == status_of(ADR / link), f"{link}: the index says {status!r}, the record another"


def test_every_record_a_status_names_exists() -> None:
    numbers = {int(name[:4]) for name in records()}
    for name, path in records().items():
        status = status_of(path)
        lists = re.findall(r"(?:\bby|\bamends|\bextends|\bsupersedes|\bfrom|\bof|→)\s+(\d+(?:(?:,\s*|\s+and\s+)\d+)*)",
                           status)
        named = {int(n) for found in lists for n in re.findall(r"\d+", found)}
        assert named <= numbers, f"{name}: its status names {sorted(named - numbers)}, which do not exist"


def test_a_superseded_record_names_what_holds_instead() -> None:
    for name, path in records().items():
        status = status_of(path)
        if status.startswith(("Superseded", "Rejected")):
            assert re.match(r"(Superseded|Rejected) by \d+", status), f"{name}: say which record holds instead"
