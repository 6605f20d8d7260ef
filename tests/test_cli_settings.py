"""gh's habits at a person's terminal: ``config get/set/list`` and the settings madtea honours (pager, browser,
editor, prompt), ``repo clone``, and a create that asks for its title and body at a terminal but never waits
for one anywhere else."""
from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path


import madtea
from helpers import cli
from remote_env import Env, child_env, env  # noqa: F401 - fixtures
from test_cli import _recorder


def _config_file() -> Path:
    return Path(os.environ["XDG_CONFIG_HOME"]) / "madtea" / "config.json"


# --------------------------------------------------------------------------- config get / set / list

def test_config_sets_gets_and_lists_settings_in_a_private_file_keeping_its_hosts(hermetic_seal: Path,
                                                                                  monkeypatch, capsys) -> None:
    where = hermetic_seal / "home"
    path = _config_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    hosts = {"forge.example.test": {"api_url": "https://forge.example.test/api/v1"}}
    path.write_text(json.dumps({"hosts": hosts}), encoding="utf-8")
    path.chmod(0o644)  # written by hand, readable by others
    code, out, err = cli(monkeypatch, capsys, where, "config", "list")
    assert code == 0, err
    assert out.splitlines() == ["git_protocol=https", "editor=", "prompt=enabled", "pager=", "browser="]  # gh's order
    assert cli(monkeypatch, capsys, where, "config", "set", "editor", "vim -f")[0] == 0
    assert cli(monkeypatch, capsys, where, "config", "set", "prompt", "disabled")[0] == 0
    code, out, err = cli(monkeypatch, capsys, where, "config", "get", "editor")
    assert code == 0 and out == "vim -f\n", err
    code, out, err = cli(monkeypatch, capsys, where, "config", "list")
    assert out.splitlines() == ["git_protocol=https", "editor=vim -f", "prompt=disabled", "pager=", "browser="], out
    saved = json.loads(path.read_text(encoding="utf-8"))
    assert saved == {"hosts": hosts, "editor": "vim -f", "prompt": "disabled"}  # the hosts a person wrote stay
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # private from then on
    assert [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")] == []  # one rename, nothing left


def test_config_refuses_an_unknown_setting_a_token_and_a_value_it_does_not_take(hermetic_seal: Path, monkeypatch,
                                                                                 capsys) -> None:
    where = hermetic_seal / "home"
    code, out, err = cli(monkeypatch, capsys, where, "config", "set", "colour", "always")
    assert code == 1 and "no setting named 'colour'" in err and "git_protocol, editor, prompt, pager, browser" in err
    assert "Nothing was changed" in err and "madtea config list" in err
    code, out, err = cli(monkeypatch, capsys, where, "config", "get", "colour")
    assert code == 1 and "git_protocol, editor, prompt, pager, browser" in err and "Nothing was changed" not in err
    code, out, err = cli(monkeypatch, capsys, where, "config", "set", "oauth_token", "s3cr3t-value")
    assert code == 1 and "tokens are never kept in madtea's config" in err and "madtea auth login" in err
    assert "s3cr3t-value" not in err
    code, out, err = cli(monkeypatch, capsys, where, "config", "set", "prompt", "sometimes")
    assert code == 1 and "enabled or disabled" in err and "madtea config set prompt enabled" in err
    assert not _config_file().exists()  # nothing was written
    _config_file().parent.mkdir(parents=True, exist_ok=True)
    _config_file().write_text("{not json", encoding="utf-8")  # a broken file is said, never overwritten
    code, out, err = cli(monkeypatch, capsys, where, "config", "set", "pager", "more")
    assert code == 1 and "not valid JSON" in err and _config_file().read_text(encoding="utf-8") == "{not json"


def test_the_configured_pager_comes_after_madtea_pager_and_before_pager(env: Env, monkeypatch, capsys,
                                                                         tmp_path: Path) -> None:
    number = env.forge.create_issue("acme", "web", "Long", "\n".join(f"line {i}" for i in range(40)))["number"]
    configured, by_config = _recorder(tmp_path, "configured-pager")
    theirs, by_pager = _recorder(tmp_path, "pager")
    madtea.config_set("pager", f"{configured} --from-config")
    monkeypatch.setenv("LINES", "20")
    monkeypatch.setenv("PAGER", str(theirs))
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    code, out, err = cli(monkeypatch, capsys, env.clone, "issue", "view", str(number))  # MADTEA_PAGER="" wins
    assert code == 0 and "line 39" in out and not by_config.exists() and not by_pager.exists()
    monkeypatch.delenv("MADTEA_PAGER")
    code, out, err = cli(monkeypatch, capsys, env.clone, "issue", "view", str(number))
    paged = by_config.read_text()
    assert code == 0 and paged.startswith("--from-config\n") and "line 39" in paged and "line 39" not in out
    assert not by_pager.exists()  # the setting comes before PAGER, as gh's does


def test_web_opens_the_configured_browser(env: Env, monkeypatch, capsys, tmp_path: Path) -> None:
    import webbrowser
    configured, by_config = _recorder(tmp_path, "configured-browser")
    theirs, by_browser = _recorder(tmp_path, "browser")
    monkeypatch.setenv("BROWSER", str(theirs))
    monkeypatch.setattr(webbrowser, "_tryorder", None)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True, raising=False)
    madtea.config_set("browser", f"{configured} --new-tab")
    code, out, err = cli(monkeypatch, capsys, env.clone, "issue", "list", "--web")
    assert code == 0, err
    assert by_config.read_text().splitlines()[0] == f"--new-tab {out.strip()}" and not by_browser.exists()


def test_an_agent_may_read_the_settings_but_not_change_them(tmp_path: Path) -> None:
    from helpers import classify
    denied = classify("madtea config set editor 'sh -c evil'", str(tmp_path))
    assert denied.kind == "deny" and "person's act" in denied.text and "madtea config set" in denied.text
    for command in ("madtea config get editor", "madtea config list"):
        assert classify(command, str(tmp_path)).kind == "allow", command


# --------------------------------------------------------------------------- a create's title and body

def _at_a_terminal(argv: list[str], cwd: Path, typed: str, **extra: str) -> tuple[int, str, str]:
    """``madtea *argv*`` with its standard input and output on a real pseudo-terminal, *typed* at it."""
    import pty
    import select
    import subprocess
    master, slave = pty.openpty()
    child = subprocess.Popen([sys.executable, "-m", "madtea", *argv], cwd=cwd, stdin=slave, stdout=slave,
                             stderr=subprocess.PIPE, env=child_env(**extra))
    os.close(slave)
    shown = b""
    try:
        os.write(master, typed.encode())
        while select.select([master], [], [], 60)[0]:  # a hang detector, not a timing assertion
            try:
                chunk = os.read(master, 4096)
            except OSError:  # the child ended: the terminal is gone
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(master)
        child.kill() if child.poll() is None else None
    assert child.stderr is not None
    err = child.stderr.read().decode()
    code = child.wait(timeout=60)
    assert "Traceback" not in err
    return code, shown.decode(errors="replace"), err


def _editor(tmp_path: Path, body: str) -> tuple[Path, Path]:
    """A fake editor: keeps what it was opened on, then writes *body* above the file's own lines, in place."""
    seen = tmp_path / "editor-saw.md"
    script = tmp_path / "fake-editor"
    script.write_text(f"#!/bin/sh\ncp \"$1\" {seen}\n"
                      f"stat -c %a \"$1\" \"$(dirname \"$1\")\" > {tmp_path}/editor-mode\n"
                      f"printf '%s' \"$1\" > {tmp_path}/editor-path\n"
                      f"{{ printf '%s\\n' '{body}'; cat \"$1\"; }} > \"$1.new\"\n"
                      "cat \"$1.new\" > \"$1\"\nrm \"$1.new\"\n")
    script.chmod(0o755)
    return script, seen


def test_a_create_at_a_terminal_asks_for_the_title_and_opens_the_editor_for_the_body(env: Env,
                                                                                   tmp_path: Path) -> None:
    editor, seen = _editor(tmp_path, "Steps: log in, then out.")
    before = env.issue_count()
    temp = tmp_path / "temp"
    temp.mkdir()
    code, shown, err = _at_a_terminal(["issue", "create"], env.clone, "Crash on logout\n", EDITOR=str(editor),
                                      TMPDIR=str(temp))
    assert code == 0, (shown, err)
    assert "Title of the issue: " in shown and "Created issue #" in shown
    assert "<!--" in seen.read_text()  # it opened on the template
    assert (tmp_path / "editor-mode").read_text().split() == ["600", "700"]  # a private file in a private folder
    number = max(n for n, i in env.repo.issues.items() if i.pull is None)
    assert env.issue_count() == before + 1
    assert env.issue(number).title == "Crash on logout"
    assert env.issue(number).body == "Steps: log in, then out."  # the comment lines left out
    assert "madtea-body-" in (tmp_path / "editor-path").read_text() and not list(temp.iterdir())  # removed after


def test_pr_create_at_a_terminal_takes_the_editor_configured_unless_git_editor_is_set(env: Env,
                                                                                      tmp_path: Path) -> None:
    from topologies import run_git
    env.forge.commit("acme", "web", "feat-y", {"y.txt": "y\n"}, "Work on y", start="main")
    run_git(env.clone, "fetch", "-q")
    run_git(env.clone, "switch", "-q", "feat-y")
    configured, seen = _editor(tmp_path, "Configured words.")
    (tmp_path / "visual").mkdir()
    theirs, theirs_seen = _editor(tmp_path / "visual", "VISUAL words.")
    madtea.config_set("editor", str(configured))
    code, shown, err = _at_a_terminal(["pr", "create"], env.clone, "Add y\n", VISUAL=str(theirs),
                                      EDITOR=str(theirs))
    assert code == 0 and "Title of the pull request: " in shown, (shown, err)
    pull = max(env.repo.issues.values(), key=lambda i: i.number)
    assert pull.pull is not None and pull.title == "Add y" and pull.body == "Configured words."
    assert seen.exists() and not theirs_seen.exists()
    assert madtea.editor_command({"GIT_EDITOR": "ed", "VISUAL": "vim"}) == "ed"  # git's own comes first
    assert madtea.editor_command({"VISUAL": "vim", "EDITOR": "nano"}) == str(configured)
    madtea.config_set("editor", "")
    assert madtea.editor_command({"VISUAL": "vim -f", "EDITOR": "nano"}) == "vim -f"


def test_an_empty_title_at_a_terminal_cancels_with_exit_2_and_creates_nothing(env: Env, tmp_path: Path) -> None:
    editor, seen = _editor(tmp_path, "never")
    before = env.issue_count()
    code, shown, err = _at_a_terminal(["issue", "create"], env.clone, "\n", EDITOR=str(editor))
    assert code == 2 and "No title was typed, so nothing was created." in err, (shown, err)
    assert env.issue_count() == before and not seen.exists()
    code, shown, err = _at_a_terminal(["issue", "create", "-t", "Given"], env.clone, "",
                                      EDITOR=f"{editor}; exit 3")  # an editor that fails sends nothing
    assert code == 1 and "ended (exit status 3)" in err and env.issue_count() == before, (shown, err)
    code, shown, err = _at_a_terminal(["issue", "create", "-t", "No body", "--body", ""], env.clone, "",
                                      EDITOR=str(editor))
    assert code == 0 and env.issue_count() == before + 1 and not seen.exists(), (shown, err)  # no editor asked


def test_without_a_terminal_a_missing_title_is_refused_at_once_never_waited_for(env: Env) -> None:
    import subprocess
    before = env.issue_count()
    for argv in (["issue", "create", "-b", "words"], ["pr", "create"]):
        child = subprocess.Popen([sys.executable, "-m", "madtea", *argv], cwd=env.clone, stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env())
        code = child.wait(timeout=60)  # its standard input stays open: a prompt would wait for ever
        out, err = child.communicate()
        assert code == 1 and "needs --title" in err and "--title TITLE" in err and "Traceback" not in err, err
        assert "Title" not in out
    assert env.issue_count() == before
    done = env.cli("issue", "create", "-t", "No body asked for")  # a title alone, in a pipe: no body, no editor
    assert done.returncode == 0 and env.issue_count() == before + 1, done.stderr


def test_prompt_disabled_makes_a_terminal_act_as_a_pipe(env: Env, tmp_path: Path) -> None:
    editor, seen = _editor(tmp_path, "never")
    madtea.config_set("prompt", "disabled")
    code, shown, err = _at_a_terminal(["issue", "create"], env.clone, "A title\n", EDITOR=str(editor))
    assert code == 1 and "needs --title" in err and "Title of the issue" not in shown, (shown, err)
    code, shown, err = _at_a_terminal(["issue", "create", "-t", "Quiet"], env.clone, "", EDITOR=str(editor))
    assert code == 0 and not seen.exists(), (shown, err)  # no editor either
    code, shown, err = _at_a_terminal(["auth", "login", "--hostname", env.forge.url], env.clone, "")
    assert code == 1 and "Prompting is turned off" in err and "--with-token" in err, (shown, err)  # nor a token


# --------------------------------------------------------------------------- repo clone

def test_repo_clone_names_the_repository_three_ways_and_keeps_no_token_in_the_clone(env: Env, tmp_path: Path,
                                                                                    monkeypatch, capsys) -> None:
    from fakeforge import DEFAULT_TOKEN
    from topologies import run_git
    import gitops
    host = env.forge.host
    handed: list[dict[str, str]] = []
    real_clone = gitops.clone

    def clone(url: str, dest: str, flags: object = (), env: dict[str, str] | None = None) -> None:
        handed.append(dict(env or {}))
        real_clone(url, dest, flags, env=env)  # type: ignore[arg-type]
    monkeypatch.setattr(gitops, "clone", clone)
    for named, folder in (("acme/web", "one"), (f"{host}/acme/web", "two"),
                          (f"{env.forge.url}/acme/web/src/branch/main", "three")):
        code, out, err = cli(monkeypatch, capsys, env.clone, "repo", "clone", named, str(tmp_path / folder))
        assert code == 0 and f"Cloned acme/web from {host} into {tmp_path / folder}" in out, (named, err)
        copy = tmp_path / folder
        assert run_git(copy, "config", "remote.origin.url") == env.forge.remote_url()  # the forge as madtea dials it
        assert run_git(copy, "rev-parse", "HEAD") == run_git(env.clone, "rev-parse", "origin/main")
        config = (copy / ".git" / "config").read_text()
        assert DEFAULT_TOKEN not in config and "credential" not in config and "@" not in config
    for given in handed:  # git was handed madtea's helper for this host, in its environment only
        assert given["MADTEA_GIT_CREDENTIAL_HOST"] == host and given["GIT_TERMINAL_PROMPT"] == "0"
        assert any("auth git-credential" in v for k, v in given.items() if k.startswith("GIT_CONFIG_VALUE_"))
        assert DEFAULT_TOKEN not in json.dumps(given)


def test_repo_clone_passes_git_flags_after_a_double_dash_and_refuses_what_would_run_a_program(env: Env,
                                                                                              tmp_path: Path) -> None:
    from topologies import run_git
    env.forge.commit("acme", "web", "side", {"side.txt": "side\n"}, "Work on the side", start="main")
    copy = tmp_path / "copy"
    done = env.cli("repo", "clone", "acme/web", str(copy), "--", "--origin", "upstream", "-b", "side")
    assert done.returncode == 0, done.stderr
    assert run_git(copy, "branch", "--show-current") == "side" and (copy / "side.txt").exists()
    assert run_git(copy, "remote") == "upstream"
    for flags in (["-u", "touch pwned"], ["--upload=touch pwned"], ["-qc", "core.pager=x"],
                  ["--template", str(tmp_path)], ["--conf", "x=y"]):
        done = env.cli("repo", "clone", "acme/web", str(tmp_path / "refused"), "--", *flags)
        assert done.returncode == 1 and "does not pass it on; nothing was cloned" in done.stderr, (flags, done.stderr)
        assert not (tmp_path / "refused").exists()


def test_repo_clone_refuses_a_folder_that_is_not_empty_and_a_repository_that_is_not_there(env: Env,
                                                                                          tmp_path: Path) -> None:
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine\n")
    done = env.cli("repo", "clone", "acme/web", str(busy))
    assert done.returncode == 1 and f"{busy} already exists and is not empty" in done.stderr, done.stderr
    assert sorted(p.name for p in busy.iterdir()) == ["notes.txt"]
    (tmp_path / "empty").mkdir()
    assert env.cli("repo", "clone", "acme/web", str(tmp_path / "empty")).returncode == 0  # an empty one is fine
    done = env.cli("repo", "clone", "acme/nothing-here", str(tmp_path / "none"))
    assert done.returncode == 1 and "Traceback" not in done.stderr and not (tmp_path / "none").exists()
    done = env.cli("repo", "clone", "https://user:pw@forge.example.test/acme/web", str(tmp_path / "none"))
    assert done.returncode == 1 and "is not the web address of a repository" in done.stderr, done.stderr


def test_a_body_written_in_the_editor_is_kept_when_the_create_then_fails(env: Env, tmp_path: Path) -> None:
    import re
    editor, seen = _editor(tmp_path, "Words worth keeping.")
    before = env.issue_count()
    temp = tmp_path / "temp"
    temp.mkdir()
    code, shown, err = _at_a_terminal(["issue", "create", "-l", "no-such-label"], env.clone, "A title\n",
                                      EDITOR=str(editor), TMPDIR=str(temp))
    assert code == 1 and env.issue_count() == before and "no-such-label" in err, (shown, err)
    kept = Path(re.search(r"The body you wrote is kept in (\S+); give it back with -F ", err).group(1))
    assert kept.read_text() == "Words worth keeping." and stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert kept.parent.parent == temp and stat.S_IMODE(kept.parent.stat().st_mode) == 0o700
    code, shown, err = _at_a_terminal(["issue", "create", "-t", "A title", "-F", str(kept)], env.clone, "")
    assert code == 0 and env.issue_count() == before + 1, (shown, err)


def test_repo_clone_outside_a_checkout_uses_the_one_login_and_names_the_folder_after_the_repository(
        env: Env, tmp_path: Path) -> None:
    from fakeforge import DEFAULT_TOKEN
    from test_cli import _person
    from topologies import run_git
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    login = _person("auth", "login", "--hostname", env.forge.url, "--with-token", "--insecure-storage",
                    cwd=outside, stdin=DEFAULT_TOKEN)
    assert login.returncode == 0, login.stderr
    done = _person("repo", "clone", "acme/web", cwd=outside)  # gh's habit: OWNER/REPO on the forge logged in to
    assert done.returncode == 0 and f"into {outside / 'web'}" in done.stdout, done.stderr
    assert run_git(outside / "web", "config", "remote.origin.url") == env.forge.remote_url()
    again = _person("repo", "clone", "acme/web", cwd=outside)
    assert again.returncode == 1 and "already exists and is not empty" in again.stderr


def test_repo_clone_over_ssh_when_git_protocol_says_so(env: Env, tmp_path: Path, monkeypatch, capsys) -> None:
    from topologies import run_git
    code, out, err = cli(monkeypatch, capsys, env.clone, "api", "/repos/acme/web", "--json")
    ssh_url = json.loads(out)["ssh_url"]
    assert ssh_url.startswith("git@"), ssh_url
    prefix = ssh_url.split(":")[0] + ":"  # git@HOST: reaches the bare repositories on disk, as the forge's ssh would
    run_git(tmp_path, "config", "--global", "--add", f"url.{env.forge.bare_root.as_posix().rstrip('/')}/.insteadOf",
            prefix)
    assert cli(monkeypatch, capsys, env.clone, "config", "set", "git_protocol", "ssh")[0] == 0
    code, out, err = cli(monkeypatch, capsys, env.clone, "repo", "clone", "acme/web", str(tmp_path / "over-ssh"))
    assert code == 0, err
    assert run_git(tmp_path / "over-ssh", "config", "remote.origin.url") == ssh_url
    code, out, err = cli(monkeypatch, capsys, env.clone, "config", "set", "git_protocol", "git")
    assert code == 1 and "https or ssh" in err


def test_config_that_cannot_be_read_is_said_never_shown_as_the_defaults(tmp_path: Path, monkeypatch,
                                                                         capsys) -> None:
    """config get and list read the file as set does: one that is not JSON, or a setting that is not text, is
    said with the file's name and the way on, never printed as if nothing were set; a value with a line break
    is refused (it would run or print a second line)."""
    import forge
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    path = forge.config_path()
    path.parent.mkdir(parents=True)
    for text, said in (("not json", "is not valid JSON"), ('{"editor": 5}', "The setting editor in the config "
                                                                             "file")):
        path.write_text(text)
        setting = (("config", "set", "pager", "less"),) if text == "not json" else ()  # nothing overwrites it
        for argv in (("config", "list"), ("config", "get", "editor"), *setting):
            code, out, err = cli(monkeypatch, capsys, tmp_path, *argv)
            assert code == 1 and not out and said in err and str(path) in err, (argv, err)
            assert f"To continue: Fix {path} (a JSON object of settings and hosts) or move it aside" in err, err
        assert path.read_text() == text
    path.write_text("{}")
    for value in ("vim\nbrowser=evil", "\x1b]0;title\x07"):
        code, out, err = cli(monkeypatch, capsys, tmp_path, "config", "set", "editor", value)
        assert code == 1 and "a setting is one line" in err and "madtea config set editor" in err, err
    assert path.read_text() == "{}"


def test_an_editor_that_is_missing_gives_back_the_title_typed(env: Env, tmp_path: Path) -> None:
    """The title typed at the prompt is in the way on when the editor then fails (not found: said so, not a bare
    status); end of input at the prompt cancels on a line of its own."""
    before = env.issue_count()
    code, shown, err = _at_a_terminal(["issue", "create"], env.clone, "My precious title\n",
                                      EDITOR=str(tmp_path / "no-such-editor"))
    assert code == 1 and "was not found (exit status 127), so nothing was created." in err, (shown, err)
    assert "madtea issue create --title 'My precious title' -F FILE" in err, err
    remover = tmp_path / "remover"
    remover.write_text('#!/bin/sh\nrm -f "$1"\n')
    remover.chmod(0o755)
    code, shown, err = _at_a_terminal(["issue", "create", "-t", "Kept"], env.clone, "", EDITOR=str(remover))
    assert code == 1 and "removed the file it was given, so nothing was created" in err and "Errno" not in err, err
    code, shown, err = _at_a_terminal(["issue", "create"], env.clone, "\x04")
    assert code == 2 and shown.endswith("Title of the issue: \r\n"), repr(shown)
    assert env.issue_count() == before


def test_a_clone_may_take_an_hour_unless_madtea_git_timeout_says_otherwise(hermetic_seal: Path, tmp_path: Path,
                                                                           monkeypatch) -> None:
    import gitops
    from topologies import make_repo
    source = make_repo(tmp_path / "source")
    given: list[float] = []
    real = gitops.git

    def git(*args: object, **options: object) -> object:
        given.append(options["timeout"])  # type: ignore[arg-type]
        return real(*args, **options)  # type: ignore[arg-type]
    monkeypatch.setattr(gitops, "git", git)
    gitops.clone(str(source), tmp_path / "copy")
    monkeypatch.setenv("MADTEA_GIT_TIMEOUT", "30")
    gitops.clone(str(source), tmp_path / "again")
    assert given == [3600.0, 30.0] and (tmp_path / "again" / ".git").is_dir()
