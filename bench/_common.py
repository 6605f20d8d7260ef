"""Shared plumbing for the benchmarks: a sealed sandbox, a tiny JSON-RPC client over pipes, the report.

Not a benchmark itself (``run_all.py`` skips files that start with ``_``).
Everything runs on loopback or the local filesystem, inside a temporary
directory with its own HOME and git configuration, so a benchmark never reads
the user's credentials, hook records or git settings.
"""
from __future__ import annotations

__all__ = ["ROOT", "TESTS", "sandbox", "git", "make_repo", "JsonRpcPipe", "report", "median", "install_copy",
           "spawn", "alternate", "time_commands", "spread", "report_spread"]

import contextlib
import json
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
for _path in (str(ROOT), str(TESTS)):
    if _path not in sys.path:
        sys.path.insert(0, _path)

# The environment before sandbox() changes it: pip's own cache and index settings live there.
_OUTER_ENV = dict(os.environ)
# Variables that would point madtea or git somewhere other than the sandbox.
_DROPPED_PREFIXES = ("GIT_", "MADTEA_", "GITEA_", "FORGEJO_", "TEA_", "CLAUDE", "CODEX", "GEMINI")


@contextlib.contextmanager
def sandbox() -> Iterator[Path]:
    """A temporary base directory with a private HOME, XDG folders and git config; os.environ is restored after."""
    saved = dict(os.environ)
    with tempfile.TemporaryDirectory(prefix="madtea-bench-") as tmp:
        base = Path(os.path.realpath(tmp))
        home, runtime = base / "home", base / "runtime"
        (home / ".config").mkdir(parents=True)
        runtime.mkdir(mode=0o700)
        gitconfig = home / ".gitconfig"
        gitconfig.write_text("[user]\n\tname = Bench\n\temail = bench@example.invalid\n"
                             "[init]\n\tdefaultBranch = main\n[commit]\n\tgpgsign = false\n"
                             "[protocol]\n\tallow = never\n[protocol \"file\"]\n\tallow = always\n",
                             encoding="utf-8")
        for key in list(os.environ):
            if key.upper().startswith(_DROPPED_PREFIXES) or "TOKEN" in key.upper():
                del os.environ[key]
        os.environ.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_RUNTIME_DIR=str(runtime),
                          GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=str(gitconfig), LC_ALL="C")
        try:
            yield base
        finally:
            os.environ.clear()
            os.environ.update(saved)


def git(cwd: Path, *args: str) -> str:
    """Run git for the benchmark's own set-up (never counted: madtea's own calls go through gitops)."""
    out = subprocess.run(["git", *args], cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, check=True)
    return out.stdout.decode(errors="replace").strip()


def make_repo(path: Path, origin: str | None = None) -> Path:
    """A repository with one commit on main and, optionally, an origin."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    if origin:
        git(path, "remote", "add", "origin", origin)
    (path / "README.md").write_text(f"# {path.name}\n", encoding="utf-8")
    git(path, "add", "README.md")
    git(path, "commit", "-q", "-m", "initial commit")
    return path


class JsonRpcPipe:
    """An MCP stdio client that speaks newline-delimited JSON-RPC to a child process, legacy handshake first.

    Reads are bounded by a deadline, so a child that never answers ends the
    benchmark with an error instead of hanging it.
    """

    PROTOCOL = "2025-11-25"

    def __init__(self, argv: Sequence[str], *, cwd: Path, env: dict[str, str], timeout: float = 30.0) -> None:
        self.proc = subprocess.Popen(list(argv), cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        self.deadline = time.monotonic() + timeout
        self._buffer = b""

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, ident: int, method: str, params: dict[str, Any]) -> bytes:
        """Send a request and return the raw bytes of its response line."""
        self.send({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
        while True:
            line = self._line()
            if json.loads(line).get("id") == ident:
                return line

    def initialize(self) -> None:
        self.request(1, "initialize", {"protocolVersion": self.PROTOCOL, "capabilities": {},
                                       "clientInfo": {"name": "madtea-bench", "version": "0"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def cpu_so_far(self) -> float | None:
        """The child's CPU seconds (user + sys, all its threads) until now, where ``/proc`` tells; else None.

        Read when the answer being timed arrives, so a server's CPU is counted to the same point as its
        wall time, not to its exit: an interpreter that tears down its objects at exit is not charged
        for it, nor one that skips the teardown credited. Clock ticks (usually 10 ms).
        """
        try:
            with open(f"/proc/{self.proc.pid}/stat", encoding="ascii") as stat:
                fields = stat.read().rpartition(")")[2].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def close(self) -> float:
        """Hang up and wait for the child (killed after 10 s); its CPU seconds (user + sys)."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        deadline = time.monotonic() + 10
        while True:
            pid, status, usage = os.wait4(self.proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                self.proc.kill()
                _, status, usage = os.wait4(self.proc.pid, 0)
                break
            time.sleep(0.005)
        self.proc.returncode = os.waitstatus_to_exitcode(status)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        return usage.ru_utime + usage.ru_stime

    def _line(self) -> bytes:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buffer:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{self.proc.args!r} did not answer in time")
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    raise EOFError(f"{self.proc.args!r} closed its stdout (exit {self.proc.poll()})")
                self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line


# What a build reads: the metadata, the build hook and what it imports, the launcher and the modules.
BUILD_FILES = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "release/versioning.py", "bin/madtea",
               "madtea.py", "guard.py", "forge.py", "gitops.py")


def install_copy(base: Path, *, with_mcp: bool = False) -> Path:
    """A virtual environment in *base* holding a non-editable ``pip install`` of this checkout; its bin folder.

    The files a build reads are copied first, so the build leaves nothing in the checkout; pip builds
    the wheel in its own isolated environment (setuptools from the package index or pip's cache) and
    writes the console script and bytecode, exactly as a user's install does. With *with_mcp* the
    running interpreter's ``mcp`` (and its dependencies) is made importable through a ``.pth`` file
    rather than downloaded again. Under ``run_all.py`` the benchmarks share one install of each kind.
    """
    shared = _OUTER_ENV.get("MADTEA_BENCH_INSTALLS")  # set by run_all.py: one install per kind for the whole run
    if shared:
        base = Path(shared) / ("with-mcp" if with_mcp else "plain")
        if (base / "venv" / "bin" / "madtea").exists():
            return base / "venv" / "bin"
        base.mkdir(parents=True, exist_ok=True)
    source, venv = base / "source", base / "venv"
    for name in BUILD_FILES:
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).write_bytes((ROOT / name).read_bytes())
        (source / name).chmod((ROOT / name).stat().st_mode)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    proc = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
                           "--no-input", "--disable-pip-version-check", str(source)],
                          env=_OUTER_ENV, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"pip install of the checkout failed:\n{proc.stdout}{proc.stderr}")
    if with_mcp:
        import mcp
        site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              check=True, capture_output=True, text=True).stdout.strip()
        Path(site, "bench-outer-packages.pth").write_text(str(Path(mcp.__file__).parent.parent) + "\n",
                                                          encoding="utf-8")
    return venv / "bin"


def spawn(argv: Sequence[str], stdin: bytes = b"", *, cwd: Path, env: dict[str, str]) -> tuple[float, float, int]:
    """Run one process to its end: (wall seconds, the child's CPU seconds (user + sys), exit status)."""
    start = time.perf_counter()
    proc = subprocess.Popen(list(argv), cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    assert proc.stdin is not None
    try:
        proc.stdin.write(stdin)
        proc.stdin.close()
    except BrokenPipeError:
        pass
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_utime + usage.ru_stime, proc.returncode


Timing = tuple[dict[str, list[float]], dict[str, list[float]]]


def alternate(cases: Mapping[str, Callable[[], tuple[float, float]]], rounds: int, *,
              seconds: float | None = None, min_rounds: int = 0) -> Timing:
    """Each case's (wall, CPU) seconds, run once per round with the order rotated every round.

    Every case meets the machine's load in the same rounds, and none always runs first or right
    after another; the lists stay aligned by round, so ratios can be taken round by round. With
    *seconds*, no round starts after that long once *min_rounds* rounds are done.
    """
    names = list(cases)
    walls: dict[str, list[float]] = {name: [] for name in names}
    cpus: dict[str, list[float]] = {name: [] for name in names}
    deadline = time.monotonic() + seconds if seconds is not None else None
    for done in range(rounds):
        if deadline is not None and done >= min_rounds and time.monotonic() > deadline:
            break
        for name in names[done % len(names):] + names[:done % len(names)]:
            wall, cpu = cases[name]()
            walls[name].append(wall)
            cpus[name].append(cpu)
    return walls, cpus


def time_commands(cases: Mapping[str, tuple[Sequence[str], bytes, int]], rounds: int, *, cwd: Path,
                  env: dict[str, str]) -> Timing:
    """``alternate`` over commands run to their end (argv, stdin, expected exit status), after two
    warm-up runs of each that also check each exits as it should."""
    for name, (command, stdin, code) in cases.items():
        for _ in range(2):
            _, _, status = spawn(command, stdin, cwd=cwd, env=env)
            if status != code:
                raise SystemExit(f"{name}: exit {status}, expected {code}")

    def run(command: Sequence[str], stdin: bytes) -> Callable[[], tuple[float, float]]:
        return lambda: spawn(command, stdin, cwd=cwd, env=env)[:2]

    return alternate({name: run(command, stdin) for name, (command, stdin, _code) in cases.items()}, rounds)


def spread(values: Sequence[float], unit: float = 1000.0, digits: int = 1) -> str:
    """``min / median / max`` in milliseconds (with the default *unit*)."""
    return " / ".join(f"{v * unit:.{digits}f}" for v in (min(values), statistics.median(values), max(values)))


def report_spread(name: str, what: str, walls: Sequence[float], cpus: Sequence[float], base_walls: Sequence[float],
                  base_cpus: Sequence[float], target: float, baseline_what: str) -> bool:
    """Print one command's wall and CPU spread, its ratios to the baseline and the verdict on both.

    The lists are aligned by round (``alternate``): the ratio judged is the median of the per-round
    ratios, so a burst of load that slows one round slows both sides of that ratio, and a few rounds
    that it slows unevenly sit in the tails, not in the median.
    """
    wall_ratios = [a / b for a, b in zip(walls, base_walls)]
    cpu_ratios = [a / b for a, b in zip(cpus, base_cpus)]
    wall_ratio, cpu_ratio = statistics.median(wall_ratios), statistics.median(cpu_ratios)
    ok = wall_ratio <= target and cpu_ratio <= target
    print(f"{what}: wall {spread(walls)} ms, CPU {spread(cpus)} ms (min / median / max, {len(walls)} runs)")
    print(f"    ratio to {baseline_what}, per round: wall {spread(wall_ratios, 1, 2)}x, "
          f"CPU {spread(cpu_ratios, 1, 2)}x (min / median / max)")
    print(f"    median ratio: wall {wall_ratio:.2f}x, CPU {cpu_ratio:.2f}x (target <= {target:g}x): "
          f"{'within target' if ok else 'OVER TARGET'}")
    print("summary\t" + json.dumps({
        "name": name, "what": what,
        "measured": f"{statistics.median(walls) * 1000:.1f} ms wall, {statistics.median(cpus) * 1000:.1f} ms CPU",
        "baseline": f"{statistics.median(base_walls) * 1000:.1f} ms wall, "
                    f"{statistics.median(base_cpus) * 1000:.1f} ms CPU",
        "ratio": f"{wall_ratio:.2f} wall, {cpu_ratio:.2f} CPU (median of {len(walls)} rounds)",
        "target": f"<= {target:g}x the baseline", "ok": ok}))
    return ok


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def report(name: str, measured: float, baseline: float, target: float, unit: str, *, what: str,
           baseline_what: str, ratio_of: str = "baseline", lower_is_better: bool = True) -> None:
    """Print the figures in one shape, then a machine-readable summary line for run_all.py.

    The ratio is measured / baseline when *ratio_of* is "baseline" (a relative
    target such as 1.15x) and measured / target otherwise (an absolute budget).
    """
    denominator = baseline if ratio_of == "baseline" else target
    ratio = measured / denominator if denominator else float("inf")
    limit = target if ratio_of != "baseline" else target * baseline
    ok = measured <= limit if lower_is_better else measured >= limit
    target_text = f"<= {target:g}x the baseline" if ratio_of == "baseline" else f"<= {target:g} {unit}"
    print(f"{what}: {measured:.6g} {unit}")
    print(f"baseline ({baseline_what}): {baseline:.6g} {unit}")
    print(f"ratio: {ratio:.3f} (measured / {ratio_of})")
    print(f"target: {target_text}: {'within target' if ok else 'OVER TARGET'}")
    print("summary\t" + json.dumps({"name": name, "what": what, "measured": f"{measured:.6g} {unit}",
                                     "baseline": f"{baseline:.6g} {unit}", "ratio": f"{ratio:.3f}",
                                     "target": target_text, "ok": ok}))


BARE_SERVER = '''"""The smallest MCPServer with one tool: the cold-start baseline."""
from mcp.server import MCPServer

server = MCPServer("bare", version="0.0.0")


@server.tool()
def ping() -> str:
    """Answer pong."""
    return "pong"


if __name__ == "__main__":
    server.run()
'''


def madtea_and_bare_servers(base: Path) -> tuple[Path, dict[str, str], list[str], list[str]]:
    """A repo to launch in, the environment, and the two server commands compared: madtea's and a bare one.

    madtea's is the installed console script (``madtea mcp``) of a copy installed into a temporary
    virtual environment with the ``mcp`` extra available; the bare one runs from the same interpreter.
    """
    bin_dir = install_copy(base, with_mcp=True)
    repo = make_repo(base / "web", origin="https://forge.example.test/acme/web.git")
    modules = base / "modules"
    modules.mkdir()
    (modules / "bare_mcp.py").write_text(BARE_SERVER, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONPATH"] = str(modules)
    return repo, env, [str(bin_dir / "madtea"), "mcp"], [str(bin_dir / "python"), "-m", "bare_mcp"]
