"""The CLI surface: arguments as a shell gives them (paths relative to its directory, files to read) and
its refusals, which never end in a traceback."""
from __future__ import annotations

from pathlib import Path

import madtea
from topologies import make_pushed_repo, run_git


def test_the_cli_takes_relative_paths_from_the_shell_directory(tmp_path: Path, hermetic_seal: Path,
                                                             monkeypatch, capsys) -> None:
    make_pushed_repo(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert madtea.main(["worktree", "add", "--dir", "web", "web-feat", "-b", "feat"]) == 0, capsys.readouterr()
    assert (tmp_path / "web-feat" / ".git").is_file()
    assert run_git(tmp_path / "web-feat", "branch", "--show-current") == "feat"
    assert madtea.main(["status", "--dir", "web-feat"]) == 0
    assert "(feat)" in capsys.readouterr().out


def test_an_unreadable_body_file_is_a_refusal_not_a_traceback(tmp_path: Path, hermetic_seal: Path, capsys) -> None:
    code = madtea.main(["issue", "create", "--title", "t", "--body-file", str(tmp_path / "missing.md"),
                        "--repo", "acme/web"])
    err = capsys.readouterr().err
    assert code == 1 and "BAD_ARGUMENT" in err and "Traceback" not in err and "missing.md" in err
