"""madtea's exec-time ``git``: first on the agent's PATH, it judges the argv git really receives.

Each test runs real bash, real interpreters and real git, as an agent's shell would after Claude Code's
session start put the shim first on PATH: the test process plays the harness (its own PATH has no shim),
the shell and everything it starts have the shim first. What git really did is read from the repository.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import gitops
import guard
from topologies import make_bare, make_repo, run_git

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the exec-time git reads /proc (Linux only)")


@pytest.fixture
def shim() -> Path:
    folder = guard.shim_folder(create=True)
    assert folder is not None
    return Path(folder)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    top = make_repo(tmp_path / "repo", files={"a.py": "a\n", "b.txt": "b\n"})
    (top / "a.py").write_text("work in progress\n")
    return top


def agent(line: str, cwd: Path, shim: Path, path: str | None = None,
          **env: str) -> subprocess.CompletedProcess[str]:
    """*line* run by bash as the agent's shell runs it: the shim first on PATH."""
    full = {**os.environ, "PATH": path or f"{shim}{os.pathsep}{os.environ.get('PATH', os.defpath)}", **env}
    return subprocess.run([shutil.which("bash") or "bash", "-c", line], cwd=cwd, env=full, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)


def held(done: subprocess.CompletedProcess[str], repo: Path, says: str) -> None:
    """git refused with the hook's own text, and the work in progress is still there."""
    assert done.returncode != 0 and says in done.stderr, (done.returncode, done.stderr)
    assert (repo / "a.py").read_text() == "work in progress\n"


def test_the_folder_holds_one_marked_git_and_finds_itself_first(shim: Path, repo: Path) -> None:
    assert sorted(os.listdir(shim)) == ["git"]
    assert gitops.SHIM_MARK in (shim / "git").read_bytes()[:256]
    assert agent("command -v git", repo, shim).stdout.strip() == str(shim / "git")


def test_an_interpreters_string_is_judged_when_git_runs(shim: Path, repo: Path) -> None:
    done = agent("""python3 -c 'import os; raise SystemExit(os.system("git reset --hard") >> 8)'""", repo, shim)
    held(done, repo, "git reset --hard discards uncommitted changes")


def test_the_argv0_of_bash_c_is_judged(shim: Path, repo: Path, tmp_path: Path) -> None:
    remote = make_bare(tmp_path / "remote.git")
    run_git(repo, "remote", "add", "origin", str(remote))
    done = agent("bash -c '$0 push -q origin main' git", repo, shim)
    assert done.returncode != 0 and "madt_push" in done.stderr, done.stderr
    assert run_git(remote, "for-each-ref") == ""  # nothing reached the remote


def test_a_script_on_disk_is_judged(shim: Path, repo: Path, tmp_path: Path) -> None:
    script = tmp_path / "tidy.sh"
    script.write_text("#!/bin/sh\ngit checkout -- .\n")
    script.chmod(0o755)
    held(agent(str(script), repo, shim), repo, "Checking out paths")
    program = tmp_path / "tidy.py"  # an interpreter's script the agent wrote: what it starts is the agent's
    program.write_text("import subprocess, sys\nsys.exit(subprocess.run(['git'] + sys.argv[1:]).returncode)\n")
    held(agent(f"python3 {program} checkout -- a.py", repo, shim), repo, "Checking out paths")


def test_a_shell_renamed_copied_or_linked_still_passes_the_call_up(shim: Path, repo: Path, tmp_path: Path) -> None:
    """Only the real git's children run unjudged: a shell that calls itself git, or a copy of one, is a shell."""
    bash = shutil.which("bash") or "/bin/bash"
    shutil.copy(bash, tmp_path / "tool")
    (tmp_path / "bin").mkdir()
    shutil.copy(bash, tmp_path / "bin" / "git")
    (tmp_path / "git-sh").symlink_to(bash)
    for line in ("bash -c 'echo -n git > /proc/$$/comm; git checkout -- a.py; true'",
                 "(exec -a tool bash -c 'git checkout -- a.py; true')",
                 f"{tmp_path / 'tool'} -c 'git checkout -- a.py; true'",
                 f"{tmp_path / 'bin' / 'git'} -c 'git checkout -- a.py; true'",
                 f"{tmp_path / 'git-sh'} -c 'git checkout -- a.py; true'"):
        held(agent(f"{line}; exit 1", repo, shim), repo, "Checking out paths")


def test_inline_code_and_the_agents_own_python_are_judged_however_started(shim: Path, repo: Path) -> None:
    """Options run together (``-Ic``), a script named from a folder it leaves, ``-m`` on the agent's module or on
    a module that runs the code it is given."""
    code = 'import os; os.system("git checkout -- a.py")'
    (repo / "fix.py").write_text(code + "\n")
    (repo / "away.py").write_text('import os; os.chdir("/usr"); os.system("git -C %s checkout -- a.py" % '
                                  'os.environ["R"])\n')
    for line in (f"python3 -Ic '{code} #/node_modules/x'", "R=$PWD python3 away.py", "python3 -m fix",
                 "python3 -m runpy fix", f"printf '{code}\\n' | python3 -m code",
                 f"python3 -m timeit -n1 -s '{code}' pass"):
        held(agent(f"{line}; exit 1", repo, shim), repo, "Checking out paths")


def test_a_git_command_the_agent_wrote_is_judged_inside(shim: Path, repo: Path, tmp_path: Path) -> None:
    """``git tidy`` runs a ``git-tidy`` found in git's exec path or on PATH: one the agent wrote is its script."""
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "git-tidy").write_text("#!/bin/sh\ngit checkout -- a.py\n")
    (tmp_path / "mine" / "git-tidy").chmod(0o755)
    for line in (f"GIT_EXEC_PATH={tmp_path / 'mine'} git tidy", f"git --exec-path={tmp_path / 'mine'} tidy",
                 f"PATH={tmp_path / 'mine'}:$PATH git tidy"):
        held(agent(f"{line}; exit 1", repo, shim), repo, "Checking out paths")


def test_a_terminal_multiplexers_command_is_judged(shim: Path, repo: Path, tmp_path: Path) -> None:
    """tmux's server leaves the agent's shell behind (its parent is init): what it runs is still the agent's."""
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    tmux = f"tmux -S {tmp_path / 'sock'}"
    agent(f"{tmux} new -d 'git checkout -- a.py; {tmux} wait-for -S done'; {tmux} wait-for done; {tmux} kill-server",
          repo, shim)
    assert (repo / "a.py").read_text() == "work in progress\n"


def test_consoles_with_a_shell_escape_pass_the_call_up(shim: Path, repo: Path) -> None:
    consoles = {"gdb": "gdb -batch -ex 'shell git checkout -- a.py'",
                "sqlite3": "sqlite3 :memory: '.shell git checkout -- a.py'"}
    present = {name: line for name, line in consoles.items() if shutil.which(name)}
    if not present:
        pytest.skip("neither gdb nor sqlite3 is installed")
    for line in present.values():
        held(agent(f"{line}; exit 1", repo, shim), repo, "Checking out paths")


def test_aliases_are_expanded_as_git_expands_them(shim: Path, repo: Path) -> None:
    held(agent("python3 -c 'import subprocess; raise SystemExit(subprocess.run([\"git\", \"w\"]).returncode)'",
               repo, shim, GIT_CONFIG_COUNT="1", GIT_CONFIG_KEY_0="alias.w", GIT_CONFIG_VALUE_0="reset --hard"),
         repo, "git reset --hard")
    run_git(repo, "config", "alias.undo", "checkout --")  # from the repository's own config file
    held(agent("cmd=undo; git $cmd a.py", repo, shim), repo, "Checking out paths")
    run_git(repo, "config", "alias.wipe", "!git reset -q --hard")  # a shell alias: its text is judged
    held(agent("x=wipe; git $x", repo, shim), repo, "git reset --hard")
    run_git(repo, "config", "alias.status", "reset --hard")  # never hides a builtin, as in git
    assert agent("git status --short", repo, shim).stdout.strip() == "M a.py"


def test_reads_run_as_git_and_say_nothing(shim: Path, repo: Path) -> None:
    done = agent("python3 -c 'import subprocess; subprocess.run([\"git\", \"status\", \"--short\"])'; "
                 "git log --oneline | wc -l; git diff --stat", repo, shim)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout.splitlines()[:2] == [" M a.py", "1"]


def test_a_line_the_reader_cannot_finish_is_held(shim: Path, repo: Path) -> None:
    run_git(repo, "config", "alias.deep", "!echo " + "$(" * 70 + "git status" + ")" * 70)
    done = agent("x=deep; git $x", repo, shim)
    assert done.returncode != 0 and "could not read this command to its end" in done.stderr, done.stderr
    run_git(repo, "config", "alias.odd", "checkout 'a.py")  # a quote git itself could not close
    done = agent("x=odd; git $x", repo, shim)
    assert done.returncode != 0 and "could not check this command" in done.stderr, done.stderr


def test_madteas_own_git_never_passes_through_the_shim(shim: Path, repo: Path, monkeypatch: pytest.MonkeyPatch
                                                       ) -> None:
    monkeypatch.setenv("PATH", f"{shim}{os.pathsep}{shim}{os.pathsep}{os.environ['PATH']}")
    assert gitops.real_git() == shutil.which("git", path=os.environ["PATH"].split(os.pathsep, 2)[2])
    gitops.git("checkout", "--", "a.py", cwd=repo)  # the shim would refuse this form; madtea's git is judged already
    assert (repo / "a.py").read_text() == "a\n"


def test_no_loop_when_the_shim_is_on_path_twice_or_under_another_name(shim: Path, repo: Path,
                                                                       tmp_path: Path) -> None:
    alias = tmp_path / "another-name"
    alias.symlink_to(shim)
    path = os.pathsep.join([str(shim), str(alias), str(shim), os.environ["PATH"]])
    done = agent("git --version", repo, shim, path=path)
    assert done.returncode == 0 and done.stdout.startswith("git version"), done.stderr
    done = agent("git status --short", repo, shim, path=os.pathsep.join([str(shim), str(alias)]))
    assert done.returncode == 127 and "no git on PATH" in done.stderr  # only shims on PATH: an error, no loop


def test_a_missing_or_broken_madtea_lets_git_run(shim: Path, repo: Path, tmp_path: Path) -> None:
    for name, guard_text in (("gone", None), ("broken", "raise SyntaxError('half an update')\n")):
        folder = tmp_path / name
        (folder / "modules").mkdir(parents=True)
        if guard_text is not None:
            (folder / "modules" / "guard.py").write_text(guard_text)
        program = guard._SHIM_PROGRAM.format(python=sys.executable, mark=gitops.SHIM_MARK.decode(),
                                             here=repr(str(folder / "modules")))
        (folder / "git").write_text(program)
        (folder / "git").chmod(0o755)
        (repo / "a.py").write_text("work in progress\n")
        done = agent("git checkout -- a.py", repo, folder / "git", path=f"{folder}{os.pathsep}{os.environ['PATH']}")
        assert done.returncode == 0, (name, done.stderr)
        assert (repo / "a.py").read_text() == "a\n", name  # git ran, as if no shim were there


def test_gits_own_hooks_run_the_git_they_run(shim: Path, repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho formatted >> b.txt && git add b.txt\n")  # a formatter that re-stages
    hook.chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim}{os.pathsep}{os.environ['PATH']}")  # what the hook inherits
    gitops.git("commit", "-q", "-am", "via madtea", cwd=repo)
    assert run_git(repo, "show", "HEAD:b.txt") == "b\nformatted"


def test_tools_that_run_git_inside_themselves_run(shim: Path, repo: Path) -> None:
    """pre-commit's stash and restore (``git checkout -- .``), a build's ``git describe``."""
    pre_commit = shutil.which("pre-commit", path=os.path.dirname(sys.executable))
    if pre_commit is None:
        pytest.skip("pre-commit is not installed (pip install 'madtea[test]')")
    (repo / ".pre-commit-config.yaml").write_text(
        "repos:\n- repo: local\n  hooks:\n  - id: fix\n    name: fix\n    entry: sed -i s/bad/good/\n"
        "    language: system\n    files: \\.txt$\n")
    (repo / "c.txt").write_text("bad\n")
    run_git(repo, "add", ".pre-commit-config.yaml", "c.txt")
    (repo / "b.txt").write_text("b\nnot staged\n")
    (repo / ".tools").symlink_to(os.path.dirname(pre_commit))  # named from the directory, as agents often do
    done = agent(f".tools/{os.path.basename(pre_commit)} run", repo, shim)
    assert "Stashing unstaged files" in done.stdout and "Restored changes" in done.stdout, done.stdout + done.stderr
    assert (repo / "c.txt").read_text() == "good\n" and (repo / "b.txt").read_text() == "b\nnot staged\n"
    assert (repo / "a.py").read_text() == "work in progress\n"
    run_git(repo, "tag", "v1.2")
    (repo / "Makefile").write_text("all:\n\t@echo version $$(git describe --tags --dirty)\n")
    done = agent("make", repo, shim)
    assert done.stdout.strip() == "version v1.2-dirty", done.stderr


@pytest.mark.slow
def test_pip_and_npm_git_dependencies_install(shim: Path, tmp_path: Path) -> None:
    pkg = make_repo(tmp_path / "pkg", files={"setup.py": "from setuptools import setup\n"
                                             "setup(name='shimpkg', version='1.0', py_modules=['shimpkg'])\n",
                                             "shimpkg.py": "X = 1\n",
                                             "package.json": '{"name": "shimpkg", "version": "1.0.0"}\n'})
    run_git(pkg, "tag", "v1")
    (pkg / "shimpkg.py").write_text("X = 2\n")
    run_git(pkg, "commit", "-qam", "two")
    env = {"GIT_ALLOW_PROTOCOL": "file", "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    for ref, x in (("v1", "1"), ("main", "2")):
        done = agent(f"{sys.executable} -m pip install -q --no-build-isolation --target {tmp_path / ref} "
                     f"git+file://{pkg}@{ref}", tmp_path, shim, **env)
        assert done.returncode == 0 and (tmp_path / ref / "shimpkg.py").read_text() == f"X = {x}\n", done.stderr
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed")
    app = tmp_path / "app"
    app.mkdir()
    (app / "package.json").write_text('{"name": "app", "version": "1.0.0"}\n')
    done = agent(f"npm install --offline --no-audit --no-fund git+file://{pkg}#v1", app, shim,
                 npm_config_cache=str(tmp_path / "npm-cache"))
    assert done.returncode == 0 and (app / "node_modules" / "shimpkg" / "shimpkg.py").read_text() == "X = 1\n", \
        done.stderr


def test_without_proc_every_git_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    real_isdir = os.path.isdir
    monkeypatch.setattr(os.path, "isdir", lambda p: False if p == "/proc/self" else real_isdir(p))
    assert guard._shim_judges(os.getpid()) is False


def test_who_wrote_the_call_is_read_from_the_command_line() -> None:
    passes = guard._shim_passes_up
    assert passes(["bash", "-c", "x"]) and passes(["-bash"]) and passes(["xargs", "git"])
    assert passes(["python3", "-c", "code"]) and passes(["python3"]) and passes(["node", "-e", "x"])
    assert passes(["perl", "-e", "x"]) and passes(["python3", "-S", "/tmp/mine.py"])
    assert not passes(["python3", "-m", "pip", "install", "x"])
    assert not passes([sys.executable, os.path.join(os.path.dirname(sys.executable), "pre-commit")])
    assert not passes(["node", "/usr/lib/node_modules/npm/bin/npm-cli.js"]) and not passes(["cargo", "build"])


def test_claude_codes_session_start_puts_the_shim_first_once(repo: Path, tmp_path: Path) -> None:
    import json

    root = Path(__file__).resolve().parent.parent
    hooks = json.loads((root / "hooks" / "hooks.json").read_text())["hooks"]["SessionStart"]
    command = hooks[0]["hooks"][0]["command"].replace("${CLAUDE_PLUGIN_ROOT}", str(root))
    env_file = tmp_path / "claude-env.sh"
    event = json.dumps({"hook_event_name": "SessionStart", "source": "startup", "session_id": "s", "cwd": str(repo)})
    for _ in range(2):  # a resumed or cleared session starts again
        done = subprocess.run(["bash", "-c", command], input=event, capture_output=True, text=True, cwd=repo,
                              env={**os.environ, "CLAUDE_ENV_FILE": str(env_file)}, timeout=60)
        assert done.returncode == 0 and done.stdout == "" and done.stderr == "", done.stderr
    shim = guard.shim_folder(create=False)
    assert shim is not None
    line = f". {env_file}; . {env_file}; command -v git; echo \"$PATH\""
    found, path = subprocess.run(["bash", "-c", line], capture_output=True, text=True, cwd=repo,
                                 timeout=60).stdout.splitlines()
    assert found == os.path.join(shim, "git") and path.split(os.pathsep).count(shim) == 1
    held(agent(f". {env_file}; python3 -c 'import os; os.system(\"git checkout -- .\")'; exit 1", repo, Path(shim),
               path=os.environ["PATH"]), repo, "Checking out paths")


def test_doctor_says_whether_git_here_is_the_exec_time_git(shim: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import madtea

    status, topic, detail = madtea._doctor_exec_git()
    assert (status, topic) == ("info", "exec-time git") and "not on this PATH" in detail
    monkeypatch.setenv("PATH", f"{shim}{os.pathsep}{os.environ['PATH']}")
    status, _, detail = madtea._doctor_exec_git()
    assert status == "ok" and str(shim / "git") in detail and str(gitops.real_git()) in detail


def test_a_command_that_names_the_session_start_is_judged_as_always(repo: Path, tmp_path: Path) -> None:
    import json

    root = Path(__file__).resolve().parent.parent
    event = {"session_id": "s", "cwd": str(repo), "hook_event_name": "PreToolUse", "tool_name": "Bash",
             "tool_input": {"command": "git push # SessionStart", "description": "x"}}
    done = subprocess.run([sys.executable, str(root / "bin" / "madtea"), "hook"], input=json.dumps(event),
                          capture_output=True, text=True, cwd=repo, timeout=60,
                          env={**os.environ, "CLAUDE_ENV_FILE": str(tmp_path / "env.sh")})
    assert done.returncode == 2 and "madt_push" in done.stderr, done.stderr
    assert not (tmp_path / "env.sh").exists()


def test_under_dontwritebytecode_the_modules_bytecode_is_kept_privately(tmp_path: Path, repo: Path) -> None:
    """The launcher (the plugin's hook runs it from a checkout) and the shim read the modules' bytecode from
    madtea's private cache folder when PYTHONDONTWRITEBYTECODE is set, rather than compile them at every start;
    nothing is written beside the modules, and a folder open to others is not used."""
    checkout = tmp_path / "plugin"
    (checkout / "bin").mkdir(parents=True)
    root = Path(guard.__file__).parent
    for name in gitops.MODULES:
        shutil.copy(root / name, checkout / name)
    shutil.copy(root / "bin" / "madtea", checkout / "bin" / "madtea")
    event = '{"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "git status"}}'
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}

    def hook() -> None:
        done = subprocess.run([sys.executable, str(checkout / "bin" / "madtea"), "hook"], input=event, env=env,
                              cwd=repo, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0 and "madt_status" in done.stdout, done.stderr

    kept = Path.home() / ".cache" / "madtea" / "bytecode"
    hook()
    assert (kept.stat().st_mode & 0o777) == 0o700
    assert [p.name for p in kept.rglob("guard.*.pyc")] and [p.name for p in kept.rglob("gitops.*.pyc")]
    assert not list(checkout.rglob("__pycache__"))
    shutil.rmtree(kept)
    kept.mkdir(mode=0o755)
    kept.chmod(0o755)
    hook()
    assert not list(kept.rglob("*.pyc"))  # open to others: its bytecode would be code madtea runs, so unused
    kept.chmod(0o700)
    folder = guard.shim_folder(create=True)  # the shim reads the same folder
    assert folder is not None
    done = agent("git status --short", repo, Path(folder), PYTHONDONTWRITEBYTECODE="1")
    assert done.returncode == 0 and "a.py" in done.stdout, done.stderr
    assert [p for p in kept.rglob("guard.*.pyc") if str(root) in str(p)]
