"""The kill-and-resume lane: finish stopped at every write it makes, then the way on followed literally.

For each place finish writes (a git command that changes something, a forge request that is not a read),
before it and after it, a child process running madt_finish is killed with SIGKILL there, or fails there the
way that layer fails (git's error; a forge connection reset, which after a write is an answer lost). Then, as
an agent would: after a kill the same call is made again (a killed call has no result); after a failure the
steps of its way on are run in order. Whatever the stop, the end is one commit, one push, one pull request
and one merge, the checkout where the result says, and nothing left behind (no push mark, no lock, no stray
branch). Three topologies: a primary checkout, a linked worktree whose main is checked out in the primary,
and a foreign ``branch=`` finish of another repository's worktree. Kills run on a fake Gitea, faults on a fake
Forgejo.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import madtea
from fakeforge import DEFAULT_TOKEN, FakeForge
from remote_env import clone_of
from topologies import run_git, snapshot, write_files

pytestmark = pytest.mark.slow
CHILD = Path(__file__).with_name("finish_kill_child.py")
ROOT = Path(__file__).resolve().parent.parent
MOST_WRITES = 20  # a bound on the walk, far above the writes one finish makes


@dataclass
class Case:
    forge: FakeForge
    repo: str               # the forge repository the work lands in
    where: Path             # the checkout madt_finish is called in (dir= for the foreign finish)
    launch: Path            # the server's launch checkout
    args: dict[str, Any]
    watched: list[Path]     # checkouts whose working trees must be as finish says (or untouched)
    branch: str


def build(kind: str, forge: FakeForge, tmp: Path, name: str) -> Case:
    """A fresh forge repository *name* and the checkouts of one trial."""
    forge.add_repo("acme", name)
    if kind == "primary":
        web = clone_of(forge, tmp / "web", repo=name)
        run_git(web, "switch", "-q", "-c", "feat")
        write_files(web, {"a.py": "print('a')\n"})
        return Case(forge, name, web, web, {"title": "Add a", "files": ["a.py"]}, [web], "feat")
    if kind == "linked":
        web = clone_of(forge, tmp / "web", repo=name)
        wt = tmp / "wt"
        run_git(web, "worktree", "add", "-q", "-b", "feat", str(wt), "main")
        wt = Path(os.path.realpath(wt))
        write_files(wt, {"a.py": "print('a')\n"})
        return Case(forge, name, wt, wt, {"title": "Add a", "files": ["a.py"]}, [wt, web], "feat")
    web = clone_of(forge, tmp / "web")
    lib = clone_of(forge, tmp / "lib", repo=name)
    wt = tmp / "lib-fix"
    run_git(lib, "worktree", "add", "-q", "-b", "fix", str(wt))
    wt = Path(os.path.realpath(wt))
    write_files(wt, {"a.py": "fixed = True\n"})
    run_git(wt, "add", "a.py")
    run_git(wt, "commit", "-q", "-m", "Fix lib")
    return Case(forge, name, wt, web, {"dir": str(wt), "branch": "fix", "title": "Fix lib"}, [lib, wt], "fix")


def run_child(case: Case, n: int, when: str, mode: str) -> tuple[int, dict[str, Any] | None]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, str(CHILD), str(case.launch), json.dumps(case.args), str(n), when, mode],
                          cwd=case.launch, env=env, capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        return proc.returncode, None
    return 0, json.loads(proc.stdout.strip().splitlines()[-1])


def follow(case: Case, stopped: dict[str, Any] | None) -> madtea.Result:
    """What an agent does next: after a kill, the same call; after a failure, every step of its way on."""
    if stopped is None:
        return madtea.run("madt_finish", case.args, madtea.Context("mcp", case.launch))
    error = stopped["error"]
    assert error and error.get("next") and not error.get("user_action"), stopped["text"]
    out: madtea.Result | None = None
    for step in error["next"]:
        assert "tool" in step, step
        out = madtea.run(step["tool"], step["args"], madtea.Context("mcp", case.launch))
        assert not out.is_error, f"{step}\n{out.text}"
    assert out is not None
    return out


def one_of_everything(case: Case, result: madtea.Result, before: Any) -> None:
    f = case.forge
    assert not result.is_error, result.text
    prs = [i for i in f.repo("acme", case.repo).issues.values() if i.pull is not None]
    assert len(prs) == 1 and prs[0].pull.merged, [(p.number, p.pull.merged) for p in prs]
    main = f.branch_sha("acme", case.repo, "main")
    assert f.git("acme", case.repo, "rev-list", "--count", "main") == "3"  # initial, the work, one merge
    assert f.git("acme", case.repo, "ls-tree", "--name-only", main).split() == ["README.md", "a.py"]
    assert run_git(case.where, "rev-list", "--count", f"refs/heads/{case.branch}") == "2"  # one commit, once
    for checkout in case.watched:
        git_dir = Path(run_git(checkout, "rev-parse", "--absolute-git-dir"))
        common = Path(run_git(checkout, "rev-parse", "--git-common-dir")).resolve()
        assert not [n for n in os.listdir(git_dir) if n.startswith("madtea-push-")], checkout
        assert not [str(p) for p in common.rglob("*.lock")], checkout
        assert not run_git(checkout, "for-each-ref", "refs/heads/work/"), checkout
        status = madtea.run("madt_status", {}, madtea.Context("mcp", checkout))
        assert "a push of" not in status.text, status.text
    checkout = result.data.get("checkout")
    if "branch" in case.args:  # the foreign form touches no working tree
        after = snapshot(case.watched)
        assert {p: (s.head, s.index, s.status, s.content) for p, s in after.items()} == \
            {p: (s.head, s.index, s.status, s.content) for p, s in before.items()}
        assert checkout is None
        return
    assert checkout and checkout["dir"] == str(case.where), result.data
    head = run_git(case.where, "rev-parse", "HEAD")
    assert head == main
    assert run_git(case.where, "branch", "--show-current") == (checkout["branch"] or "")
    assert checkout["detached"] in (None, head)
    assert run_git(case.where, "status", "--porcelain") == ""


@pytest.mark.parametrize("mode", ["kill", "fault"])
@pytest.mark.parametrize("kind", ["primary", "linked", "foreign"])
def test_finish_completes_after_a_stop_at_every_write(request: pytest.FixtureRequest, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch, kind: str, mode: str) -> None:
    # Kills on a fake Gitea, faults on a fake Forgejo: both flavours, each trial once.
    fake_forge: FakeForge = request.getfixturevalue("gitea_forge" if mode == "kill" else "forgejo_forge")
    monkeypatch.setenv("MADTEA_TOKEN", DEFAULT_TOKEN)
    trials = 0
    for n in range(1, MOST_WRITES + 1):
        for when in ("before", "after"):
            (tmp_path / f"{n}-{when}").mkdir()
            case = build(kind, fake_forge, tmp_path / f"{n}-{when}", f"web-{n}-{when}")
            before = snapshot(case.watched)
            code, stopped = run_child(case, n, when, mode)
            if stopped is not None and not stopped["reached"]:
                print(f"[{fake_forge.flavour}] {kind} {mode}: {n - 1} writes, {trials} stops, each completed")
                assert trials == 2 * (n - 1) and n > 2
                return
            trials += 1
            if mode == "kill":
                assert code == -9 and stopped is None, (code, stopped)
                result = follow(case, None)
            else:
                assert stopped is not None, code
                # A write whose answer was lost may still end well: then there is nothing to follow.
                result = follow(case, stopped) if stopped["error"] else \
                    madtea.run("madt_finish", case.args, madtea.Context("mcp", case.launch))
            one_of_everything(case, result, before)
    raise AssertionError(f"finish made more than {MOST_WRITES} writes")
