"""Run every benchmark in this folder, one after another, and print a summary table.

Each ``bench/*.py`` except this file and ``_``-prefixed helpers runs in its
own interpreter; its full output is shown, then one table of measured value,
baseline, ratio and target per figure. Benchmarks that print a ``summary``
line (the ``_common.report`` shape) fill the table directly; the hook
benchmark's ``ratio ...x (target <= ...x)`` line is read as well. A
benchmark that fails or prints neither shows as such. Nothing here asserts.

    python bench/run_all.py
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TIMEOUT = 900  # seconds per benchmark: a hung child ends the run instead of blocking it
_HOOK_RATIO = re.compile(r"ratio ([\d.]+)x \(target <= ([\d.]+)x\): (.*)")


def benchmarks() -> list[Path]:
    return sorted(p for p in HERE.glob("*.py") if p.name != Path(__file__).name and not p.name.startswith("_"))


def rows_from(name: str, output: str) -> list[dict[str, str]]:
    rows = []
    for line in output.splitlines():
        if line.startswith("summary\t"):
            data = json.loads(line.split("\t", 1)[1])
            rows.append({k: str(v) for k, v in data.items()} | {"ok": "yes" if data["ok"] else "NO"})
    if rows:
        return rows
    lines = output.strip().splitlines()
    for line in lines:
        found = _HOOK_RATIO.search(line)
        if found:
            median = lambda text: text.split("median", 1)[-1].split(" over")[0].strip()  # noqa: E731
            return [{"name": name, "measured": median(lines[0]), "baseline": median(lines[1]),
                     "ratio": found.group(1), "target": f"<= {found.group(2)}x the baseline",
                     "ok": "yes" if found.group(3).startswith("within") else "NO"}]
    return [{"name": name, "measured": "?", "baseline": "?", "ratio": "?", "target": "?",
             "ok": "no summary line"}]


def main() -> int:
    table: list[dict[str, str]] = []
    for script in benchmarks():
        print(f"==> python bench/{script.name}", flush=True)
        started = time.perf_counter()
        try:
            proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=TIMEOUT,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            print(f"    timed out after {TIMEOUT} s\n")
            table.append({"name": script.stem, "measured": "-", "baseline": "-", "ratio": "-", "target": "-",
                          "ok": "timed out"})
            continue
        print(proc.stdout.rstrip())
        if proc.returncode != 0:
            print(proc.stderr.rstrip())
            table.append({"name": script.stem, "measured": "-", "baseline": "-", "ratio": "-", "target": "-",
                          "ok": f"failed (exit {proc.returncode})"})
        else:
            table.extend(rows_from(script.stem, proc.stdout))
        print(f"    ({time.perf_counter() - started:.1f} s)\n", flush=True)
    columns = ("name", "measured", "baseline", "ratio", "target", "ok")
    widths = {c: max(len(c), *(len(r.get(c, "")) for r in table)) for c in columns}
    print("  ".join(c.ljust(widths[c]) for c in columns))
    print("  ".join("-" * widths[c] for c in columns))
    for row in table:
        print("  ".join(row.get(c, "").ljust(widths[c]) for c in columns))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
