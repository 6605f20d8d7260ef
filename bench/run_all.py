"""Run every benchmark in this folder, one after another, and print a summary table.

Each ``bench/*.py`` except this file and ``_``-prefixed helpers runs in its
own interpreter; its full output is shown, then one table of measured value,
baseline, ratio and target per figure, read from the ``summary`` lines the
benchmarks print (the ``_common.report`` shapes). A benchmark that fails or
prints none shows as such. The benchmarks that time console scripts share one
temporary install of each kind for the run. Nothing here asserts.

With ``--markdown`` the table is also printed as Markdown, ready to paste as
the README's performance table: headed by when it was made and how long it
took, the tree's commit (and whether the checkout had changes beyond it), the
interpreter, cores and load average at the start and at the end.

    python bench/run_all.py [--markdown]
"""
from __future__ import annotations

import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TIMEOUT = 900  # seconds per benchmark: a hung child ends the run instead of blocking it
COLUMNS = ("name", "measured", "baseline", "ratio", "target", "ok")


def benchmarks() -> list[Path]:
    return sorted(p for p in HERE.glob("*.py") if p.name != Path(__file__).name and not p.name.startswith("_"))


def rows_from(name: str, output: str) -> list[dict[str, str]]:
    rows = []
    for line in output.splitlines():
        if line.startswith("summary\t"):
            data = json.loads(line.split("\t", 1)[1])
            rows.append({k: str(v) for k, v in data.items()} | {"ok": "yes" if data["ok"] else "OVER TARGET"})
    return rows or [{"name": name, "measured": "?", "baseline": "?", "ratio": "?", "target": "?",
                     "ok": "no summary line"}]


def run(script: Path, env: dict[str, str]) -> list[dict[str, str]]:
    print(f"==> python bench/{script.name}", flush=True)
    started = time.perf_counter()
    failed = {"name": script.stem, "measured": "-", "baseline": "-", "ratio": "-", "target": "-"}
    try:
        proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=TIMEOUT,
                              stdin=subprocess.DEVNULL, env=env)
    except subprocess.TimeoutExpired:
        print(f"    timed out after {TIMEOUT} s\n")
        return [failed | {"ok": "timed out"}]
    print(proc.stdout.rstrip())
    print(f"    ({time.perf_counter() - started:.1f} s)\n", flush=True)
    if proc.returncode != 0:
        print(proc.stderr.rstrip())
        return [failed | {"ok": f"failed (exit {proc.returncode})"}]
    return rows_from(script.stem, proc.stdout)


def tree() -> str:
    """The commit the benchmarks ran on, and whether the checkout had changes beyond it."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=HERE.parent, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL).stdout.strip()
    commit = git("rev-parse", "--short=12", "HEAD") or "an unknown commit"
    dirty = git("status", "--porcelain", "--untracked-files=no")
    return f"tree {commit}" + (" with uncommitted changes" if dirty else "")


def load_average() -> str:
    return " / ".join(f"{v:.1f}" for v in os.getloadavg())


def markdown(table: list[dict[str, str]], started: datetime.datetime, seconds: float, load: str) -> str:
    lines = [f"Made by one `python bench/run_all.py --markdown` run on {started:%Y-%m-%d %H:%M} UTC "
             f"({seconds / 60:.1f} min) from {tree()}: Python {platform.python_version()}, {os.cpu_count()} cores, "
             f"load average {load} at the start and {load_average()} at the end; each figure beside its baseline "
             "from the same run; a timed figure alternates with its baseline, and its ratio is the median of "
             "the per-round ratios.", "",
             "| what | measured | baseline | ratio | target | verdict |", "|---|---|---|---|---|---|"]
    for row in table:
        cells = [row.get("what", row["name"]), row["measured"], row["baseline"], row["ratio"],
                 row["target"].replace("<=", "≤"), "within target" if row["ok"] == "yes" else row["ok"]]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    started, clock = datetime.datetime.now(datetime.timezone.utc), time.perf_counter()
    load = load_average()
    installs = tempfile.mkdtemp(prefix="madtea-bench-installs-")
    table: list[dict[str, str]] = []
    try:
        env = dict(os.environ, MADTEA_BENCH_INSTALLS=installs)
        for script in benchmarks():
            table.extend(run(script, env))
    finally:
        shutil.rmtree(installs, ignore_errors=True)
    widths = {c: max(len(c), *(len(r.get(c, "")) for r in table)) for c in COLUMNS}
    print("  ".join(c.ljust(widths[c]) for c in COLUMNS))
    print("  ".join("-" * widths[c] for c in COLUMNS))
    for row in table:
        print("  ".join(row.get(c, "").ljust(widths[c]) for c in COLUMNS))
    if "--markdown" in args:
        print("\nThe README's performance table, from the line below to the end:\n")
        print(markdown(table, started, time.perf_counter() - clock, load))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
