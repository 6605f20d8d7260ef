"""Every git write on madtea's terms: the settings people keep in their configuration do not make a push,
fetch or pull write more, or other, than it names (real git, real bare remotes)."""
from __future__ import annotations

from pathlib import Path

import pytest

import gitops
from topologies import commit_files, make_bare, make_clone, make_pushed_repo, make_repo, run_git


def _repo(path: Path) -> gitops.Repo:
    found = gitops.discover(path)
    assert found is not None
    return found


def _refs(repo: Path) -> dict[str, str]:
    """Every ref of *repo* (branches, tags, remote-tracking, the rest) and what it points at."""
    out = run_git(repo, "for-each-ref", "--format=%(refname) %(objectname)")
    return dict(line.split(" ", 1) for line in out.splitlines() if line)


def _origin_moves(bare: Path, tmp_path: Path, files: dict[str, str] | None = None) -> Path:
    """Another clone of *bare* that pushed one more commit to main; returned."""
    other = make_clone(str(bare), tmp_path / "other")
    commit_files(other, files or {"o.txt": "o\n"}, "origin moves on")
    run_git(other, "push", "-q", "origin", "main")
    return other


@pytest.fixture
def pushed(tmp_path: Path, hermetic_seal: Path) -> tuple[Path, Path]:
    """A clone ``work`` of the bare ``origin.git`` whose main is there, on a branch ``feat`` one commit ahead."""
    bare = make_bare(tmp_path / "origin.git")
    seed = make_repo(tmp_path / "seed", origin=str(bare))
    run_git(seed, "push", "-q", "origin", "main")
    work = make_clone(str(bare), tmp_path / "work")
    run_git(work, "switch", "-q", "-c", "feat")
    commit_files(work, {"feat.txt": "feat\n"}, "feat work")
    return work, bare


def test_push_names_the_sha_it_read_and_returns_it(pushed):
    work, bare = pushed
    first = run_git(work, "rev-parse", "feat")
    commit_files(work, {"feat.txt": "more\n"}, "a later commit")
    result = gitops.push(_repo(work), "feat", sha=first)
    assert result.new_sha == first
    assert run_git(bare, "rev-parse", "refs/heads/feat") == first
    assert run_git(work, "rev-parse", "refs/remotes/origin/feat") == first


def test_push_follow_tags_sends_no_tag(pushed):
    work, bare = pushed
    run_git(work, "config", "push.followTags", "true")
    run_git(work, "tag", "-a", "-m", "release", "v1")
    gitops.push(_repo(work), "feat")
    assert run_git(bare, "tag", "--list") == ""
    assert run_git(bare, "rev-parse", "refs/heads/feat") == run_git(work, "rev-parse", "feat")


@pytest.mark.parametrize("setting", [("submodule.recurse", "true"), ("push.recurseSubmodules", "on-demand")])
def test_push_never_pushes_a_submodule(tmp_path, hermetic_seal, setting):
    work, _bare = _with_submodule(tmp_path)
    sub_bare = tmp_path / "sub.git"
    sub = work / "sub"
    run_git(sub, "switch", "-q", "-c", "subwork")
    commit_files(sub, {"s.txt": "s\n"}, "sub work")
    run_git(work, "add", "sub")
    run_git(work, "commit", "-q", "-m", "bump sub")
    run_git(work, "config", *setting)
    before = _refs(sub_bare)
    result = gitops.push(_repo(work), "main")
    assert result.new_sha == run_git(work, "rev-parse", "main")
    assert _refs(sub_bare) == before


def test_a_mirror_remote_pushes_the_one_branch(pushed):
    work, bare = pushed
    run_git(bare, "branch", "keep", "main")
    run_git(work, "config", "remote.origin.mirror", "true")
    gitops.push(_repo(work), "feat")
    assert {"refs/heads/main", "refs/heads/keep", "refs/heads/feat"} <= set(_refs(bare))


def test_a_push_option_from_the_config_is_not_sent(pushed):
    work, bare = pushed
    run_git(bare, "config", "receive.advertisePushOptions", "true")
    hook = bare / "hooks" / "post-receive"
    hook.write_text("#!/bin/sh\necho \"$GIT_PUSH_OPTION_COUNT\" > \"$GIT_DIR/options-seen\"\n")
    hook.chmod(0o755)
    run_git(work, "config", "push.pushOption", "ci.skip")
    gitops.push(_repo(work), "feat")
    assert (bare / "options-seen").read_text().strip() in ("", "0")


def test_set_upstream_records_the_branch_s_upstream(pushed):
    work, _bare = pushed
    gitops.push(_repo(work), "feat", set_upstream=True)
    assert run_git(work, "config", "branch.feat.remote") == "origin"
    assert run_git(work, "config", "branch.feat.merge") == "refs/heads/feat"


def test_a_fetch_refspec_onto_local_branches_is_refused_before_a_push(pushed):
    work, bare = pushed
    run_git(work, "config", "--add", "remote.origin.fetch", "+refs/heads/*:refs/heads/*")
    before = _refs(bare)
    with pytest.raises(gitops.UnsafeSetting) as caught:
        gitops.push(_repo(work), "feat")
    assert caught.value.setting == "remote.origin.fetch"
    assert "refs/heads/feat" in caught.value.effect
    assert _refs(bare) == before


def test_a_forced_fetch_refspec_never_moves_a_local_branch_on_pull(pushed, tmp_path):
    work, bare = pushed
    other = _origin_moves(bare, tmp_path)
    run_git(work, "switch", "-q", "main")
    commit_files(work, {"mine.txt": "unpushed\n"}, "unpushed work on main")
    mine = run_git(work, "rev-parse", "main")
    run_git(work, "switch", "-q", "feat")
    run_git(work, "config", "--add", "remote.origin.fetch", "+refs/heads/*:refs/heads/*")
    run_git(work, "config", "pull.rebase", "true")
    feat = run_git(work, "rev-parse", "feat")
    with pytest.raises(gitops.NotFastForward):  # feat and origin/main diverged: nothing merges, nothing rebases
        gitops.pull_ff(_repo(work), "main")
    assert run_git(work, "rev-parse", "main") == mine
    assert run_git(work, "rev-parse", "feat") == feat
    assert not (Path(run_git(work, "rev-parse", "--absolute-git-dir")) / "rebase-merge").exists()
    assert run_git(work, "rev-parse", "refs/remotes/origin/main") == run_git(other, "rev-parse", "main")
    gitops.fetch(_repo(work))
    assert run_git(work, "rev-parse", "main") == mine


@pytest.mark.parametrize("setting", [("pull.rebase", "true"), ("pull.ff", "false"), ("branch.main.rebase", "true"),
                                     ("merge.ff", "false")])
def test_pull_fast_forwards_whatever_pull_and_merge_settings_say(pushed, tmp_path, setting):
    work, bare = pushed
    other = _origin_moves(bare, tmp_path)
    run_git(work, "switch", "-q", "main")
    run_git(work, "config", *setting)
    result = gitops.pull_ff(_repo(work), "main")
    assert result.after == run_git(other, "rev-parse", "main")
    assert run_git(work, "rev-list", "--count", "--merges", "HEAD") == "0"


@pytest.mark.parametrize("setting", [("merge.autoStash", "true"), ("rebase.autoStash", "true")])
def test_pull_never_stashes(pushed, tmp_path, setting):
    work, bare = pushed
    _origin_moves(bare, tmp_path, {"README.md": "changed there\n"})
    run_git(work, "switch", "-q", "main")
    (work / "README.md").write_text("changed here\n")
    run_git(work, "config", *setting)
    with pytest.raises(gitops.LocalChanges):
        gitops.pull_ff(_repo(work), "main")
    assert run_git(work, "stash", "list") == ""
    assert (work / "README.md").read_text() == "changed here\n"


def test_fetch_writes_remote_tracking_refs_only(pushed, tmp_path):
    work, bare = pushed
    other = make_clone(str(bare), tmp_path / "other")
    run_git(other, "tag", "-a", "-m", "t", "v9")
    run_git(other, "push", "-q", "origin", "v9")
    run_git(other, "push", "-q", "origin", "main:gone")
    gitops.fetch(_repo(work))
    run_git(other, "push", "-q", "origin", ":gone")
    run_git(work, "tag", "local-only")
    for key, value in (("fetch.prune", "true"), ("fetch.pruneTags", "true"), ("remote.origin.tagOpt", "--tags"),
                       ("fetch.recurseSubmodules", "yes")):
        run_git(work, "config", key, value)
    before = _refs(work)
    gitops.fetch(_repo(work))
    after = _refs(work)
    assert "refs/tags/v9" not in after  # no tag is followed or fetched
    assert after["refs/tags/local-only"] == before["refs/tags/local-only"]  # nor pruned
    assert "refs/remotes/origin/gone" in after  # nothing is pruned
    assert {k for k in after if after[k] != before.get(k)} <= {k for k in after if k.startswith("refs/remotes/")}


def test_no_hook_runs_on_a_push_or_fetch(pushed, tmp_path):
    work, _bare = pushed
    seen = tmp_path / "hook-ran"
    body = f"#!/bin/sh\necho \"$0\" >> '{seen}'\nexit 0\n"
    commit_files(work, {"x.txt": "x\n"}, "more")
    for folder in (Path(run_git(work, "rev-parse", "--absolute-git-dir")) / "hooks", work / ".husky"):
        folder.mkdir(exist_ok=True)
        for name in ("pre-push", "reference-transaction"):
            (folder / name).write_text(body)
            (folder / name).chmod(0o755)
    gitops.push(_repo(work), "feat")
    gitops.fetch(_repo(work))
    run_git(work, "config", "core.hooksPath", ".husky")
    run_git(work, "commit", "-q", "--allow-empty", "-m", "more")  # git itself runs the hook (the test's own check)
    assert seen.read_text().count("reference-transaction") >= 1
    seen.unlink()
    gitops.push(_repo(work), "feat")
    gitops.fetch(_repo(work), branches=["main"])
    assert not seen.exists()


def test_git_config_in_the_environment_is_not_handed_to_git(pushed, tmp_path, monkeypatch):
    work, _bare = pushed
    elsewhere = tmp_path / "elsewhere.config"
    elsewhere.write_text("[remote \"origin\"]\n\turl = https://forge.example.test/else/where.git\n")
    run_git(work, "config", "remote.origin.pushurl", "https://forge.example.test/other/repo.git")
    monkeypatch.setenv("GIT_CONFIG", str(elsewhere))
    _written, _fetch, pushes = gitops.remote_urls(_repo(work))
    assert pushes == ["https://forge.example.test/other/repo.git"]


def test_madt_push_names_the_setting_it_cannot_neutralise(tmp_path, hermetic_seal):
    from helpers import refused
    repo = make_pushed_repo(tmp_path)
    run_git(repo, "switch", "-q", "-c", "feat")
    commit_files(repo, {"f.txt": "f\n"}, "feat")
    run_git(repo, "config", "--add", "remote.origin.fetch", "+refs/heads/*:refs/heads/*")
    result = refused("USER_ACTION_REQUIRED", "madt_push", repo, branch="feat")
    assert "remote.origin.fetch" in result.text and "+refs/heads/*:refs/heads/*" in result.text
    assert "remote.origin.fetch" in result.error["user_action"] and result.error["rule"] == "unsafe_setting"
    assert run_git(tmp_path / "origin.git", "branch", "--list", "feat") == ""


def test_madt_pull_of_another_branch_leaves_local_main_where_it_was(tmp_path, hermetic_seal):
    from helpers import ok
    repo = make_pushed_repo(tmp_path)
    other = _origin_moves(tmp_path / "origin.git", tmp_path)
    commit_files(repo, {"mine.txt": "unpushed\n"}, "unpushed work on main")
    mine = run_git(repo, "rev-parse", "main")
    run_git(repo, "switch", "-q", "-c", "topic", "HEAD~1")
    run_git(repo, "config", "--add", "remote.origin.fetch", "+refs/heads/*:refs/heads/*")
    result = ok("madt_pull", repo, branch="main")
    assert run_git(repo, "rev-parse", "main") == mine
    assert run_git(repo, "rev-parse", "topic") == run_git(other, "rev-parse", "main")
    assert result.data["to"] == run_git(other, "rev-parse", "main")


def test_results_name_every_ref_they_moved(tmp_path, hermetic_seal):
    from helpers import ok
    repo = make_pushed_repo(tmp_path)
    run_git(repo, "switch", "-q", "-c", "feat")
    run_git(repo, "tag", "-a", "-m", "t", "v1")
    run_git(repo, "config", "push.followTags", "true")
    sha = commit_files(repo, {"f.txt": "f\n"}, "feat")
    pushed = ok("madt_push", repo, branch="feat")
    url = run_git(repo, "remote", "get-url", "origin")
    assert pushed.data["moved"] == [{"ref": f"{url}: refs/heads/feat", "from": None, "to": sha, "meant": True},
                                    {"ref": "refs/remotes/origin/feat", "from": None, "to": sha, "meant": True}]
    assert "refs/remotes/origin/feat" in pushed.text and "Also moved" not in pushed.text
    other = _origin_moves(tmp_path / "origin.git", tmp_path)
    run_git(repo, "switch", "-q", "main")
    pulled = ok("madt_pull", repo, branch="main")
    new = run_git(other, "rev-parse", "main")
    assert {m["ref"] for m in pulled.data["moved"]} == {"refs/heads/main", "refs/remotes/origin/main"}
    assert all(m["to"] == new and m["meant"] for m in pulled.data["moved"])


def _with_submodule(tmp_path: Path) -> tuple[Path, Path]:
    """A clone ``work`` of the bare ``origin.git`` whose main holds a populated submodule ``sub``; (work, bare)."""
    sub_bare = make_bare(tmp_path / "sub.git")
    sub_seed = make_repo(tmp_path / "subseed", origin=str(sub_bare))
    run_git(sub_seed, "push", "-q", "origin", "main")
    bare = make_bare(tmp_path / "origin.git")
    seed = make_repo(tmp_path / "seed", origin=str(bare))
    run_git(seed, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub_bare), "sub")
    run_git(seed, "commit", "-q", "-m", "add sub")
    run_git(seed, "push", "-q", "origin", "main")
    work = make_clone(str(bare), tmp_path / "work")
    run_git(work, "-c", "protocol.file.allow=always", "submodule", "update", "-q", "--init")
    return work, bare


@pytest.mark.parametrize("tool", ["madt_push", "madt_pull"])
def test_the_remote_s_refs_and_submodules_are_checked_and_a_move_nobody_asked_for_is_named(
        tmp_path, hermetic_seal, monkeypatch, tool):
    """While the push or pull runs, another process moves a branch of the bare remote and one of the
    submodule: the result names both as moves this call did not ask for, and the one it meant as meant."""
    from helpers import ok
    work, bare = _with_submodule(tmp_path)
    url = run_git(work, "remote", "get-url", "origin")
    if tool == "madt_push":
        run_git(work, "switch", "-q", "-c", "feat")
        sha = commit_files(work, {"feat.txt": "feat\n"}, "feat work")
        act, args, meant = "push", {"branch": "feat"}, {f"{url}: refs/heads/feat": sha,
                                                       "refs/remotes/origin/feat": sha}
    else:
        other = _origin_moves(bare, tmp_path)
        sha = run_git(other, "rev-parse", "main")
        act, args, meant = "pull_ff", {"branch": "main"}, {"refs/heads/main": sha, "refs/remotes/origin/main": sha}
    real = getattr(gitops, act)

    def meanwhile(*a, **k):
        run_git(bare, "branch", "stray", "main~1")
        run_git(work / "sub", "branch", "stray-sub")
        return real(*a, **k)
    monkeypatch.setattr(gitops, act, meanwhile)
    result = ok(tool, work, dir=str(work), **args)
    moved = {m["ref"]: m for m in result.data["moved"]}
    stray, stray_sub = f"{url}: refs/heads/stray", "sub: refs/heads/stray-sub"
    assert set(moved) == set(meant) | {stray, stray_sub}, moved
    assert all(moved[r]["meant"] and moved[r]["to"] == s for r, s in meant.items()), moved
    assert not moved[stray]["meant"] and moved[stray]["to"] == run_git(bare, "rev-parse", "stray")
    assert not moved[stray_sub]["meant"] and moved[stray_sub]["from"] is None
    unasked = result.text.partition("not by this call's request")[2]
    assert stray in unasked and stray_sub in unasked, result.text
