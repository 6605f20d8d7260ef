"""The configuration corpus: the settings git documents for pushing, pulling, fetching, submodules, rebases,
branches, remotes, URL rewriting, includes and the core, each set as git's own documentation spells its values,
under madtea's commit, push, branch delete, prune, switch and pull. Every repository and the remote are
snapshotted by git (every ref, every reachable commit) before and after each call. The corpus is also crossed
with repository states (a rebase or bisect holding a branch in another worktree, a stopped merge, a detached HEAD
with its own commit, a locked index): a branch such a state holds must still be there after every call.

The corpus is generated from git itself: the keys are ``git help --config`` filtered to those families, and each
key's values are the quoted words of its paragraph in the git-config manual (``"true"`` where it quotes none).
Asserted for every case: 0 stray writes (a ref no call meant to move, here or on the remote), 0 unreported ref
moves (a push or pull result names every ref that moved, here and on the remote) and 0 lost commits.
"""
from __future__ import annotations

import functools
import os
import re
import subprocess
from pathlib import Path

import pytest

from helpers import call
from topologies import commit_files, make_bare, make_clone, make_repo, run_git

FAMILIES = re.compile(r"^(push|pull|fetch|submodule|rebase|merge|branch|remote|url|include|includeIf|core)\.|"
                      r"^init\.defaultBranch$")
# Keys left out, each for a reason of the test machine, not of madtea: a daemon that outlives the test.
NOT_HERE = {"core.fsmonitor": "starts a file-system monitor daemon that outlives the test"}
# The cases, run in the fast lane; the whole corpus runs in the slow lane.
FAST = ("push.followTags", "submodule.recurse", "push.recurseSubmodules", "remote.<name>.fetch",
        "remote.<name>.mirror", "pull.rebase", "rebase.autoStash", "merge.autoStash", "fetch.prune",
        "fetch.pruneTags", "remote.<name>.tagOpt", "core.hooksPath", "push.default", "include.path")


@functools.lru_cache(maxsize=1)
def _manual() -> dict[str, str]:
    """key -> its paragraph in the git-config manual page, as man renders it."""
    text = subprocess.run(["man", "-P", "cat", "git-config"], capture_output=True, text=True,
                          env={**os.environ, "MANWIDTH": "200"}).stdout
    out: dict[str, str] = {}
    key = None
    for line in text.splitlines():
        if line.startswith("       ") and not line.startswith("        ") and re.fullmatch(r"\s+[\w.<>-]+", line):
            key = line.strip()
            out[key] = ""
        elif key is not None:
            out[key] += line.strip() + " "
    return out


def _values(key: str) -> list[str]:
    doc = _manual().get(key, "")
    if key.endswith((".fetch", ".push")) and "refspec" in doc.lower():
        return ["+refs/heads/*:refs/heads/*"]  # a refspec in git's syntax, mapping every branch onto a local one
    words = re.findall(r'"([^"\s]{1,24})"', doc) + re.findall(r"(?:•|·)\s+([a-z][a-z0-9-]*)\s+-", doc)
    quoted = [w for w in words if w not in ("false", "no", "none", "never") and re.fullmatch(r"[a-z][a-z0-9-]*", w)]
    return list(dict.fromkeys(quoted))[:4] or ["true"]


@functools.lru_cache(maxsize=1)
def corpus() -> list[tuple[str, str]]:
    keys = subprocess.run(["git", "help", "--config"], capture_output=True, text=True).stdout.split()
    cases = []
    for key in keys:
        if not FAMILIES.search(key) or key in NOT_HERE or "<msg-id>" in key:
            continue
        for value in _values(key):
            cases.append((key, value))
    return cases


def _concrete(key: str) -> list[str]:
    """The documented key with its placeholder named: origin, both branches, the submodule, a URL base."""
    if "<name>" in key and key.startswith("branch."):
        return [key.replace("<name>", b) for b in ("feat", "main")]
    return [key.replace("<name>", "sub" if key.startswith("submodule.") else "origin")
            .replace("<base>", "https://forge.example.test/")]


def _refs(repo: Path) -> dict[str, str]:
    """Every ref and what it names: a symbolic ref its target ref, any other ref its object."""
    out = run_git(repo, "for-each-ref", "--format=%(refname) %(if)%(symref)%(then)ref:%(symref)%(else)%(objectname)"
                                        "%(end)")
    return dict(line.split(" ", 1) for line in out.splitlines() if line)


def _reachable(repo: Path) -> set[str]:
    proc = subprocess.run(["git", "rev-list", "--all", "HEAD"], cwd=repo, capture_output=True, text=True)
    return set(proc.stdout.split())


def _world(base: Path) -> tuple[Path, Path]:
    """A clone ``work`` of ``origin.git`` on feat (one commit ahead of main), a branch done (in main), and
    origin's main one commit ahead of the clone's (another clone pushed it)."""
    bare = make_bare(base / "origin.git")
    seed = make_repo(base / "seed", origin=str(bare))
    run_git(seed, "push", "-q", "origin", "main")
    work = make_clone(str(bare), base / "work")
    run_git(work, "branch", "done", "main")
    run_git(work, "switch", "-q", "-c", "feat")
    commit_files(work, {"feat.txt": "feat\n"}, "feat work")
    run_git(work, "tag", "-a", "-m", "a release", "v1")
    commit_files(seed, {"seed.txt": "more\n"}, "origin moves on")
    run_git(seed, "push", "-q", "origin", "main")
    return work, bare


# (tool, arguments, refs of the clone the call may move, refs of the remote it may move, result names moves)
STEPS = (
    ("madt_commit", {"files": ["c.txt"], "title": "Add c"}, {"refs/heads/feat"}, set(), False),
    ("madt_push", {"branch": "feat"}, {"refs/remotes/origin/feat"}, {"refs/heads/feat"}, True),
    ("madt_branch_delete", {"name": "done"}, {"refs/heads/done"}, set(), False),
    ("madt_prune", {}, {"refs/heads/done"}, set(), False),
    ("madt_switch", {"branch": "main"}, set(), set(), False),
    ("madt_pull", {"branch": "main"}, {"refs/heads/main", "refs/remotes/origin/main"}, set(), True),
)


def _held_worktree(work: Path, base: Path) -> Path:
    """A second worktree of *work* on ``done`` (whose work is in main: only what holds it keeps it)."""
    wt = base / "held"
    run_git(work, "worktree", "add", "-q", str(wt), "done")
    return wt


def _rebase(work: Path, base: Path) -> str | None:
    """``done`` is being rebased in another worktree, stopped after its first step (a failing ``exec``)."""
    wt = _held_worktree(work, base)
    run_git(wt, "-c", "core.editor=true", "rebase", "-x", "false", "--root", check=False)
    assert (Path(run_git(wt, "rev-parse", "--absolute-git-dir")) / "rebase-merge" / "head-name").is_file()
    return "done"


def _bisect(work: Path, base: Path) -> str | None:
    """``done`` is being bisected in another worktree."""
    run_git(_held_worktree(work, base), "bisect", "start", "done")
    return "done"


def _merge(work: Path, base: Path) -> str | None:
    """*work* (on feat) is in a merge stopped on a conflict."""
    run_git(work, "switch", "-q", "-c", "side", "feat~1")
    commit_files(work, {"feat.txt": "side\n"}, "side work")
    run_git(work, "switch", "-q", "feat")
    run_git(work, "merge", "-q", "side", check=False)
    assert (work / ".git" / "MERGE_HEAD").is_file()
    return None


def _detached(work: Path, base: Path) -> str | None:
    """*work*'s HEAD is detached one commit past feat (a commit on no branch)."""
    run_git(work, "switch", "-q", "--detach", "feat")
    commit_files(work, {"d.txt": "d\n"}, "detached work")
    return None


def _locked_index(work: Path, base: Path) -> str | None:
    """Another git process holds *work*'s index (``index.lock``)."""
    (work / ".git" / "index.lock").write_text("")
    return None


# Repository states as git leaves them; each returns the branch the state holds (None: none).
STATES = {"clean": lambda work, base: None, "rebase": _rebase, "bisect": _bisect, "merge": _merge,
          "detached": _detached, "locked-index": _locked_index}


def _run_case(base: Path, key: str, value: str, level: str, state: str = "clean") -> dict[str, list[str]]:
    work, bare = _world(base)
    held = STATES[state](work, base)
    (work / "c.txt").write_text("c\n")
    for name in _concrete(key):
        if level == "user":
            run_git(work, "config", "--global", "--add", name, value)
        else:
            run_git(work, "config", "--add", name, value)
    found: dict[str, list[str]] = {"stray": [], "unreported": [], "lost": []}
    if subprocess.run(["git", "for-each-ref"], cwd=work, capture_output=True).returncode != 0:
        return found  # git itself refuses this value (and every command with it): nothing can be written
    for tool, args, meant_here, meant_there, reports in STEPS:
        before_here, before_there, commits = _refs(work), _refs(bare), _reachable(work)
        result = call(tool, work, **args)
        after_here, after_there = _refs(work), _refs(bare)
        moved_here = {r for r in set(before_here) | set(after_here) if before_here.get(r) != after_here.get(r)}
        moved_there = {r for r in set(before_there) | set(after_there) if before_there.get(r) != after_there.get(r)}
        found["stray"] += [f"{tool}: {r}" for r in sorted(moved_here - meant_here)]
        found["stray"] += [f"{tool}: remote {r}" for r in sorted(moved_there - meant_there)]
        if reports and not result.is_error:
            named = {m["ref"] for m in result.data["moved"]}
            found["unreported"] += [f"{tool}: {r}" for r in sorted(moved_here - named)]
            found["unreported"] += [f"{tool}: remote {r}" for r in sorted(moved_there)
                                    if f"{bare}: {r}" not in named]
        found["lost"] += [f"{tool}: {c}" for c in sorted(commits - _reachable(work))]
        if held and f"refs/heads/{held}" in before_here and f"refs/heads/{held}" not in after_here:
            found["lost"] += [f"{tool}: refs/heads/{held}, which a {state} holds"]
    return found


def _check(tmp_path: Path, key: str, value: str, level: str, state: str = "clean") -> None:
    found = _run_case(tmp_path, key, value, level, state)
    assert found == {"stray": [], "unreported": [], "lost": []}, (key, value, level, state, found)


def test_the_corpus_is_generated_from_git_s_documentation() -> None:
    cases = corpus()
    keys = {k for k, _ in cases}
    assert len(cases) > 150 and {"push.followTags", "submodule.recurse", "pull.rebase"} <= keys
    assert ("push.recurseSubmodules", "on-demand") in cases and ("remote.<name>.fetch", "+refs/heads/*:refs/heads/*") \
        in cases
    assert all(FAMILIES.search(k) for k in keys)


@pytest.mark.parametrize("key,value", [c for c in corpus() if c[0] in FAST], ids=lambda v: str(v))
def test_a_fast_sample_of_the_corpus(tmp_path: Path, hermetic_seal: Path, key: str, value: str) -> None:
    _check(tmp_path, key, value, "repo")


@pytest.mark.slow
@pytest.mark.parametrize("level", ["repo", "user"])
@pytest.mark.parametrize("key,value", corpus(), ids=lambda v: str(v))
def test_the_whole_corpus(tmp_path: Path, hermetic_seal: Path, key: str, value: str, level: str) -> None:
    _check(tmp_path, key, value, level)


def _state_sample() -> list[tuple[str, str, str]]:
    """Each repository state with a few of the issue's settings, in turn: a fast cross of both."""
    keys = ("push.followTags", "submodule.recurse", "remote.<name>.fetch", "pull.rebase", "rebase.autoStash",
            "fetch.prune")
    cases = [c for c in corpus() if c[0] in keys]
    states = [s for s in STATES if s != "clean"]
    return [(*cases[(i * 3 + j) % len(cases)], state) for i, state in enumerate(states) for j in range(2)]


@pytest.mark.parametrize("key,value,state", _state_sample(), ids=lambda v: str(v))
def test_a_fast_sample_of_the_corpus_in_each_repository_state(tmp_path: Path, hermetic_seal: Path, key: str,
                                                              value: str, state: str) -> None:
    _check(tmp_path, key, value, "repo", state)


@pytest.mark.slow
@pytest.mark.parametrize("state", [s for s in STATES if s != "clean"])
@pytest.mark.parametrize("key,value", corpus(), ids=lambda v: str(v))
def test_the_whole_corpus_in_each_repository_state(tmp_path: Path, hermetic_seal: Path, key: str, value: str,
                                                    state: str) -> None:
    _check(tmp_path, key, value, "repo", state)
