"""Requests to list 500 issues, and bytes per issue in the list result, against the fake forge on loopback.

Starts the fake Gitea (and the fake Forgejo) from ``tests/fakeforge.py`` on
127.0.0.1, seeds 500 labelled issues with a short body, and runs
``madt_issues action=list limit=500`` through ``madtea.run`` from a checkout
whose origin is the fake. Counts the requests the forge received; the
baseline is a plain paginator (``limit=50``, stop at ``X-Total-Count``) in the
same run, and the target is ceil(500 / 50) = 10. Then compares, issue by
issue, the JSON of madtea's row with the forge's raw JSON for the same issue;
the target is at most 15 %.

    python bench/forge_requests.py [ISSUES]      (default 500)
"""
from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path
from typing import Any

import _common

PAGE = 50  # the forge's MAX_RESPONSE_ITEMS: larger limits are clamped silently
SHARE_TARGET = 0.15
_BODY = ("Steps to reproduce: open the settings page, change the language and save. The page reloads in the old "
         "language until the cache expires.\n\n- expected: the new language at once\n- seen: the old one\n")


def _compact(obj: Any) -> int:
    return len(json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


def seed(forge: Any, count: int) -> None:
    forge.create_label("acme", "web", "bug", "#ee0701")
    forge.create_label("acme", "web", "ui", "#0052cc")
    for i in range(count):
        forge.create_issue("acme", "web", f"Settings page keeps the old language ({i})", _BODY,
                           labels=["bug", "ui"] if i % 2 else ["bug"])


def plain_paginator(forge: Any) -> tuple[int, dict[int, Any]]:
    """The fewest requests a correct client needs: pages of 50 until X-Total-Count is reached."""
    items: dict[int, Any] = {}
    requests, total, page = 0, None, 1
    while total is None or len(items) < total:
        status, headers, body = forge.call("GET", "/repos/acme/web/issues",
                                           query={"type": "issues", "state": "open", "limit": PAGE, "page": page})
        requests += 1
        if status != 200:
            raise SystemExit(f"the plain paginator got {status}")
        batch = json.loads(body)
        total = int(headers.get("X-Total-Count") or headers.get("x-total-count") or len(batch))
        if not batch:
            break
        items.update({item["number"]: item for item in batch})
        page += 1
    return requests, items


def run_flavour(base: Path, flavour: str, count: int) -> tuple[int, int, float, float, float]:
    """(madtea's requests, the plain paginator's, row bytes per issue, raw bytes per issue, median share)."""
    import madtea
    from fakeforge import DEFAULT_TOKEN, FakeForge

    forge = FakeForge(flavour, base_dir=base / f"forge-{flavour}").start()
    try:
        seed(forge, count)
        clone = _common.make_repo(base / f"web-{flavour}", origin=forge.remote_url("acme", "web"))
        os.environ["MADTEA_TOKEN"] = DEFAULT_TOKEN
        forge.clear_requests()
        result = madtea.run("madt_issues", {"action": "list", "limit": count}, madtea.Context("mcp", clone))
        if result.is_error:
            raise SystemExit(f"madt_issues list failed on {flavour}: {result.text}")
        seen = [f"{r.method} {r.path}?{'&'.join(f'{k}={v}' for k, v in r.query.items())}" for r in forge.requests]
        ours = len(seen)
        forge.clear_requests()
        baseline, raw = plain_paginator(forge)
        rows = result.data
        shares = sorted(_compact(row) / _compact(raw[row["number"]]) for row in rows)
        row_bytes = sum(_compact(row) for row in rows) / len(rows)
        raw_bytes = sum(_compact(raw[row["number"]]) for row in rows) / len(rows)
        problems = forge.violations + forge.internal_errors
    finally:
        forge.stop()
    print(f"[{flavour}] madtea: {ours} requests for {len(rows)} issues; the plain paginator: {baseline}")
    for line in seen:
        print(f"[{flavour}]   {line}")
    if problems:
        print(f"[{flavour}] the fake forge recorded problems:\n  " + "\n  ".join(problems))
    example = rows[0]
    print(f"[{flavour}] one row: {_compact(example)} bytes vs {_compact(raw[example['number']])} bytes raw")
    return ours, baseline, row_bytes, raw_bytes, _common.median(shares)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    count = int(args[0]) if args else 500
    with _common.sandbox() as base:
        figures = {flavour: run_flavour(base, flavour, count) for flavour in ("gitea", "forgejo")}
    target = math.ceil(count / PAGE)
    ours = max(f[0] for f in figures.values())
    baseline = max(f[1] for f in figures.values())
    worst = max(figures.values(), key=lambda f: f[2] / f[3])
    print()
    _common.report("forge_requests", ours, baseline, target, "requests", what=f"requests to list {count} issues",
                   baseline_what="a plain limit=50 paginator, same run", ratio_of="target")
    print()
    print(f"median per-issue share: {worst[4] * 100:.1f} %")
    _common.report("issue_bytes", worst[2], worst[3], SHARE_TARGET, "bytes/issue",
                   what="JSON of madtea's list row, mean per issue",
                   baseline_what="the forge's raw JSON for the same issues")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
