"""include and includeIf are read as git reads them: origin is wherever git sees it, and an origin that moves
inside a call (an include that follows the branch) is refused before anything reaches it. Real git."""
from __future__ import annotations

from pathlib import Path

import pytest

import gitops
import guard
import madtea
from topologies import make_repo, run_git

A = "https://forge.example.test/acme/web.git"
B = "https://forge.example.test/evil/other.git"


def _facts(repo: Path) -> guard.RepoFacts:
    found = gitops.discover(repo)
    assert found is not None
    return madtea.repo_facts(found)


def test_a_harmless_include_does_not_hide_origin(tmp_path: Path, hermetic_seal: Path) -> None:
    repo = make_repo(tmp_path / "web", origin=A)
    (tmp_path / "extra.config").write_text("[core]\n\tlongpaths = true\n")
    run_git(repo, "config", "include.path", str(tmp_path / "extra.config"))
    facts = _facts(repo)
    assert facts.origin is not None and facts.origin.full == gitops.parse_remote_url(A).full
    assert madtea.origin_problem(facts) != "has no origin remote"


def test_origin_set_only_in_an_included_file_is_origin(tmp_path: Path, hermetic_seal: Path) -> None:
    repo = make_repo(tmp_path / "web")
    (tmp_path / "remote.config").write_text(f'[remote "origin"]\n\turl = {A}\n')
    run_git(repo, "config", "include.path", str(tmp_path / "remote.config"))
    assert gitops.read_origin(_facts(repo).common_dir) == A
    assert _facts(repo).origin is not None


def test_an_included_insteadof_fails_closed(tmp_path: Path, hermetic_seal: Path) -> None:
    repo = make_repo(tmp_path / "web", origin=A)
    (tmp_path / "rewrite.config").write_text(f'[url "{B}"]\n\tinsteadOf = {A}\n')
    run_git(repo, "config", "include.path", str(tmp_path / "rewrite.config"))
    assert _facts(repo).origin is None


def _onbranch_origin(tmp_path: Path) -> Path:
    """A repository on feat whose origin is A, except on main, where an includeIf written before the remote
    section names B first."""
    repo = make_repo(tmp_path / "web")
    (tmp_path / "main-only.config").write_text(f'[remote "origin"]\n\turl = {B}\n')
    config = Path(run_git(repo, "rev-parse", "--absolute-git-dir")) / "config"
    config.write_text(f'[includeIf "onbranch:main"]\n\tpath = {tmp_path / "main-only.config"}\n'
                      + config.read_text() + f'[remote "origin"]\n\turl = {A}\n')
    run_git(repo, "switch", "-q", "-c", "feat")
    return repo


def test_an_onbranch_include_is_read_for_the_branch_checked_out(tmp_path: Path, hermetic_seal: Path) -> None:
    repo = _onbranch_origin(tmp_path)
    assert gitops.read_origin(_facts(repo).common_dir) == A
    run_git(repo, "switch", "-q", "main")
    assert gitops.read_origin(_facts(repo).common_dir) == B


def test_origin_moved_by_a_switch_inside_a_call_is_refused(tmp_path: Path, hermetic_seal: Path) -> None:
    repo = make_repo(tmp_path / "web")
    for branch, url in (("feat", A), ("main", B)):  # origin is named only by includes that follow the branch
        (tmp_path / f"{branch}.config").write_text(f'[remote "origin"]\n\turl = {url}\n')
        run_git(repo, "config", f"includeIf.onbranch:{branch}.path", str(tmp_path / f"{branch}.config"))
    run_git(repo, "switch", "-q", "-c", "feat")
    facts = _facts(repo)  # resolved on feat, as a call resolves its target once
    t = guard.Target("madt_finish", None, {}, True, "mcp", facts, facts, False)
    written, _fetch, _push = gitops.remote_urls(facts)
    guard.check_origin_unchanged(t, written)  # on feat: the origin the call began with
    run_git(repo, "switch", "-q", "main")  # finish's way home
    written, fetch, _push = gitops.remote_urls(facts)
    guard.check_remote_urls(t, written, fetch[:1], push=False)  # git's own addresses agree with each other
    with pytest.raises(guard.Refusal) as caught:
        guard.check_origin_unchanged(t, written)
    assert "evil/other" in caught.value.message and caught.value.user_action
