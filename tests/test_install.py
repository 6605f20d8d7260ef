"""What a newcomer runs first: the README's commands, CI, the stdlib-only CLI, the copied-files install."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MODULES = ("madtea.py", "guard.py", "forge.py", "gitops.py")


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    setup = text.split("## Set-up", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```sh\n(.*?)```", setup, re.S)]


def _python(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env or dict(os.environ), text=True,
                          capture_output=True, timeout=60, stdin=subprocess.DEVNULL)


def test_readme_setup_is_two_commands_and_ci_runs_the_test_command_verbatim() -> None:
    commands = _readme_commands()
    assert len(commands) == 2
    install, test = commands
    assert "pipx install" in install and "madtea\" doctor" in install
    assert "pytest" in test
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert test in ci.splitlines()


def test_help_and_version_use_the_standard_library_alone(tmp_path: Path) -> None:
    """The four files copied into a bare folder run with no site-packages at all (-S -I)."""
    for name in MODULES:
        shutil.copy(ROOT / name, tmp_path / name)
    helped = subprocess.run([sys.executable, "-S", "-I", str(tmp_path / "madtea.py"), "--help"], text=True,
                            capture_output=True, timeout=60, cwd=tmp_path, stdin=subprocess.DEVNULL)
    assert helped.returncode == 0, helped.stderr
    assert "status" in helped.stdout and "issue" in helped.stdout
    version = subprocess.run([sys.executable, "-S", "-I", str(tmp_path / "madtea.py"), "--version"], text=True,
                             capture_output=True, timeout=60, cwd=tmp_path, stdin=subprocess.DEVNULL)
    assert version.stdout.startswith("madtea ")


def test_version_is_the_parsers_answer_without_building_the_parser(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    probe = ("import sys, madtea\n"
             "try:\n    madtea.build_parser().parse_args(['--version'])\nexcept SystemExit as exit:\n"
             "    assert exit.code == 0\n"
             "del sys.modules['argparse']\n"
             "madtea.build_parser = None\n"
             "assert madtea.main(['--version']) == 0\n"
             "assert 'argparse' not in sys.modules\n")
    out = _python("-c", probe, cwd=tmp_path, env=env)
    assert out.returncode == 0, out.stderr
    parsed, fast = out.stdout.splitlines()
    assert parsed == fast and parsed.startswith("madtea ")


def test_importing_madtea_imports_neither_mcp_nor_the_network_stack(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    probe = ("import sys, madtea; bad = [m for m in ('mcp', 'forge', 'ssl', 'urllib.request', 'argparse') "
             "if m in sys.modules]; print(bad)")
    out = _python("-c", probe, cwd=tmp_path, env=env)
    assert out.stdout.strip() == "[]", out.stderr


def test_madtea_loads_its_own_siblings_from_a_repo_that_has_its_own(shadowing_repo) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = _python("-m", "madtea", "status", cwd=shadowing_repo.repo, env=env)
    assert out.returncode == 0, out.stderr
    assert "shadow" not in out.stderr.lower() or "Traceback" not in out.stderr
    assert str(shadowing_repo.repo) in out.stdout


def test_cli_errors_are_text_and_exit_status_never_tracebacks(single_repo) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = _python("-m", "madtea", "add", ".", cwd=single_repo.repo, env=env)
    assert out.returncode == 1
    assert out.stderr.startswith("UNDECLARED_FILES:") and "Traceback" not in out.stderr
    assert out.stdout == ""


def test_mcp_on_a_terminal_explains_itself(tmp_path: Path) -> None:
    """Started by hand, `madtea mcp` says what it is instead of hanging (a pty stands in for the terminal)."""
    import pty

    env = dict(os.environ, PYTHONPATH=str(ROOT))
    main, child = pty.openpty()
    proc = subprocess.run([sys.executable, "-m", "madtea", "mcp"], stdin=child, capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=30)
    os.close(main)
    os.close(child)
    assert proc.returncode == 2
    assert "MCP stdio server" in proc.stderr


def test_doctor_reports_where_you_stand(single_repo) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = _python("-m", "madtea", "doctor", cwd=single_repo.repo, env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "python" in out.stdout and "git" in out.stdout and str(single_repo.repo) in out.stdout
    assert "forge.example.test/acme/web" in out.stdout
    assert "single repository" in out.stdout


def test_doctor_outside_a_repo(not_a_repo) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = _python("-m", "madtea", "doctor", cwd=not_a_repo, env=env)
    assert "not inside a git repository" in out.stdout


def test_doctor_in_a_workspace(umbrella) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = _python("-m", "madtea", "doctor", cwd=umbrella.top, env=env)
    assert "other repositories" in out.stdout


def test_doctor_on_a_linked_worktree(linked_worktree) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = _python("-m", "madtea", "doctor", cwd=linked_worktree.worktree, env=env)
    assert f"{linked_worktree.worktree} (linked worktree)" in out.stdout


def test_doctor_through_a_symlink_names_the_real_repository(symlinked_repo) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = _python("-m", "madtea", "doctor", cwd=symlinked_repo.link, env=env)
    assert str(symlinked_repo.real) in out.stdout


def test_doctor_names_an_operation_in_progress(mid_operations) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = _python("-m", "madtea", "doctor", cwd=mid_operations.merge, env=env)
    assert "a merge is in progress" in out.stdout


def test_doctor_says_where_the_credential_lives_never_the_token(single_repo) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT), MADTEA_TOKEN="canary-token-value-1234")
    out = _python("-m", "madtea", "doctor", cwd=single_repo.repo, env=env)
    assert "the environment variable MADTEA_TOKEN" in out.stdout
    assert "canary-token-value-1234" not in out.stdout + out.stderr


def test_doctor_on_the_foreign_topology_reports_the_home_repo(foreign_repo) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = _python("-m", "madtea", "doctor", cwd=foreign_repo.foreign, env=env)
    assert str(foreign_repo.foreign) in out.stdout and "forge.example.test/acme/lib" in out.stdout


def _doctor_rows(cwd: Path, **env: str) -> dict[str, str]:
    full = dict(os.environ, PYTHONPATH=str(ROOT), **env)
    out = _python("-m", "madtea", "doctor", cwd=cwd, env=full)
    rows = {}
    for line in out.stdout.splitlines():
        status, topic, detail = line[:4].strip(), line[6:20].strip(), line[20:].strip()
        rows[topic] = f"{status} {detail}"
    return rows


def test_doctor_says_when_madtea_is_not_on_path(tmp_path: Path) -> None:
    rows = _doctor_rows(tmp_path, PATH="/usr/bin:/bin")
    assert rows["PATH"].startswith("warn madtea is not on PATH")
    # Run from files (this checkout), not a package: no pipx or pip advice that does not apply to it.
    assert "pipx" not in rows["PATH"] and "launcher to PATH" in rows["PATH"]
    assert "madtea[mcp]" not in rows["mcp"]
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "madtea").write_text("#!/bin/sh\n")
    (shim / "madtea").chmod(0o755)
    rows = _doctor_rows(tmp_path, PATH=f"{shim}:/usr/bin:/bin")
    assert rows["PATH"] == f"ok madtea is {shim / 'madtea'}"


def test_doctor_finds_the_gemini_extension_as_gemini_installs_it(tmp_path: Path) -> None:
    home = Path(os.environ["HOME"])
    assert _doctor_rows(tmp_path)["Gemini CLI"].startswith("info not installed")
    installed = home / ".gemini" / "extensions" / "madtea"
    installed.mkdir(parents=True)
    shutil.copy(ROOT / "integrations" / "gemini" / "gemini-extension.json", installed)
    (installed / "hooks").mkdir()
    shutil.copy(ROOT / "integrations" / "gemini" / "hooks" / "hooks.json", installed / "hooks")
    assert _doctor_rows(tmp_path)["Gemini CLI"] == f"ok the madtea extension is installed in {installed}"


def test_doctor_reports_the_codex_hook_untrusted_until_trusted(tmp_path: Path) -> None:
    codex = Path(os.environ["HOME"]) / ".codex"
    codex.mkdir()
    rows = _doctor_rows(tmp_path)
    assert rows["Codex hook"].startswith("info not installed") and rows["Codex server"].startswith("info not")
    shutil.copy(ROOT / "integrations" / "codex-hooks.json", codex / "hooks.json")
    config = (ROOT / "integrations" / "codex-config.toml").read_text(encoding="utf-8")
    (codex / "config.toml").write_text(config, encoding="utf-8")
    rows = _doctor_rows(tmp_path)
    assert rows["Codex hook"].startswith("warn installed") and "not trusted" in rows["Codex hook"]
    assert rows["Codex server"].startswith("ok configured")
    # what Codex's /hooks screen records when the user trusts the hook
    (codex / "config.toml").write_text(
        config + f'\n[hooks.state."{codex / "hooks.json"}:pre_tool_use:0:0"]\ntrusted_hash = "sha256:00"\n',
        encoding="utf-8")
    assert _doctor_rows(tmp_path)["Codex hook"] == f"ok installed in {codex / 'hooks.json'} and trusted"
    (codex / "config.toml").write_text(config.replace('"SSH_AUTH_SOCK", ', ""), encoding="utf-8")
    assert _doctor_rows(tmp_path)["Codex server"].startswith("warn configured, but env_vars lacks SSH_AUTH_SOCK")


# --------------------------------------------------------------------------- the CLI as newcomers meet it

def _cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return _python("-m", "madtea", *args, cwd=cwd, env=dict(os.environ, PYTHONPATH=str(ROOT), **(env or {})))


@pytest.mark.parametrize("command", ["mcp", "hook"])
def test_help_of_the_stdin_commands_prints_help_without_reading_stdin(tmp_path: Path, command: str) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-m", "madtea", command, "--help"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=env)
    try:
        code = proc.wait(timeout=30)  # stdin stays open: a command reading it would never end
    finally:
        proc.kill()
        out, err = proc.communicate()
    assert code == 0, err
    assert out.startswith(f"usage: madtea {command}") and "stdin" in out


def test_hook_with_stray_words_still_answers_the_event(tmp_path: Path) -> None:
    """An argument error would exit 2, which every harness takes as a block: the hook ignores stray words."""
    event = json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash", "cwd": str(tmp_path),
                        "tool_input": {"command": "ls"}})
    proc = subprocess.run([sys.executable, "-m", "madtea", "hook", "--verbose"], input=event, text=True,
                          capture_output=True, cwd=tmp_path, timeout=60, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert (proc.returncode, proc.stderr) == (0, "")


@pytest.mark.parametrize("args,usage,hint", [
    (["issue", "list", "--lable", "bug"], "usage: madtea issue list", "did you mean --label?"),
    (["commit", "--titel", "x", "a.txt"], "usage: madtea commit", "did you mean --title?"),
    (["isue", "list"], "usage: madtea [", "did you mean 'issue'?"),
    (["issue", "lsit"], "usage: madtea issue [", "did you mean 'list'?"),
    (["mcp", "--hepl"], "usage: madtea mcp", "did you mean --help?"),
])
def test_a_misspelling_gets_its_subcommand_usage_and_a_did_you_mean(tmp_path: Path, args: list[str], usage: str,
                                                                     hint: str) -> None:
    out = _cli(*args, cwd=tmp_path)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.startswith(usage) and hint in out.stderr, out.stderr


def test_cli_help_speaks_cli(tmp_path: Path) -> None:
    commit = _cli("commit", "--help", cwd=tmp_path).stdout
    assert "--dir DIR" in commit and "launch repo" not in commit and "current directory" in commit
    assert "launch repo" not in _cli("issue", "list", "--help", cwd=tmp_path).stdout
    worktree = _cli("worktree", "add", "--help", cwd=tmp_path).stdout
    assert "--new-branch" in worktree and "--b " not in worktree


def test_a_closed_pipe_ends_quietly(single_repo) -> None:
    """`madtea status | head` with the reader gone: no BrokenPipeError traceback."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    read, write = os.pipe()
    os.close(read)  # the reader has gone before madtea writes
    try:
        proc = subprocess.run([sys.executable, "-m", "madtea", "status"], stdout=write, stderr=subprocess.PIPE,
                              stdin=subprocess.DEVNULL, cwd=single_repo.repo, env=env, timeout=60)
    finally:
        os.close(write)
    assert proc.returncode == 141
    assert b"Traceback" not in proc.stderr and b"BrokenPipeError" not in proc.stderr, proc.stderr


def test_a_terminal_that_is_not_utf8_gets_no_traceback(single_repo) -> None:
    out = _cli("doctor", cwd=single_repo.repo, env={"PYTHONIOENCODING": "ascii"})  # its rows hold an arrow
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    assert "forge.example.test/acme/web ? forge API" in out.stdout


def _setup_module():  # type: ignore[no-untyped-def]
    import importlib.util

    spec = importlib.util.spec_from_file_location("madtea_setup", ROOT / "setup.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # defines; setup() runs only as the build's __main__
    return module


def test_the_command_is_madteas_own_launcher_on_posix_and_pips_entry_point_on_windows() -> None:
    """pip makes a madtea.exe only for an entry point; elsewhere its wrapper would import re first."""
    kwargs = _setup_module().command_kwargs
    assert kwargs("nt") == {"entry_points": {"console_scripts": ["madtea = madtea:main"]}}
    assert kwargs("posix") == {"scripts": ["bin/madtea"], "entry_points": {}}
    launcher = (ROOT / "bin" / "madtea").read_text(encoding="utf-8")
    assert launcher.startswith("#!/usr/bin/env python3\n") and os.access(ROOT / "bin" / "madtea", os.X_OK)
    imports = [line.strip() for line in launcher.splitlines() if line.strip().startswith(("import ", "from "))]
    # stat: site has loaded it already, and guard needs it
    assert imports == ["import os", "import stat", "import sys", "import guard  # noqa: E402",
                       "from madtea import cli_table", "from madtea import main"], imports
    assert "bin/madtea" in (ROOT / "MANIFEST.in").read_text(encoding="utf-8").split()


def test_the_launcher_runs_madtea(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = _python(str(ROOT / "bin" / "madtea"), "--version", cwd=tmp_path, env=env)
    assert out.returncode == 0 and out.stdout.startswith("madtea "), out.stderr
    helped = _python(str(ROOT / "bin" / "madtea"), "--help", cwd=tmp_path, env=env)
    assert helped.returncode == 0 and "status" in helped.stdout, helped.stderr


def test_the_module_list_is_spelled_once_and_every_other_spelling_agrees() -> None:
    """gitops.MODULES is the list; what cannot import it (packaging, the start that runs before the siblings
    load, the release tool building another tree) must name the same four files."""
    import tomllib

    import gitops
    at_top = sorted(p.name for p in ROOT.glob("*.py") if p.name != "setup.py")
    assert sorted(gitops.MODULES) == sorted(MODULES) == at_top
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert sorted(f"{m}.py" for m in project["tool"]["setuptools"]["py-modules"]) == sorted(gitops.MODULES)
    start = (ROOT / "madtea.py").read_text(encoding="utf-8")
    stems = re.search(r'name\.split\("\."\)\[0\] in (\([^)]*\))', start)
    assert stems and sorted(f"{m}.py" for m in eval(stems[1])) == sorted(gitops.MODULES)
    release = (ROOT / "release" / "release.py").read_text(encoding="utf-8")
    spelled = re.search(r"^MODULES = (\(.*\))$", release, re.M)
    assert spelled and tuple(eval(spelled[1])) == gitops.MODULES
