"""The CLI surface as people use it: arguments as a shell gives them (paths relative to its directory, files to
read, flags as gh takes them), gh's and tea's command shapes, words written for a person, plain views, and
refusals that never end in a traceback."""
from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import gitops
import madtea
import test_chain
from helpers import cli
from remote_env import Env, child_env, env  # noqa: F401 - fixtures
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


# --------------------------------------------------------------------------- flags as gh takes them

def test_list_flags_repeat_and_take_commas(env: Env, monkeypatch, capsys) -> None:
    for name in ("bug", "enhancement", "docs"):
        env.forge.create_label("acme", "web", name)
    code, out, err = cli(monkeypatch, capsys, env.clone, "issue", "create", "-t", "Two of each", "-l", "bug",
                          "-l", "enhancement", "-a", "alice", "-a", "bob", "--json")
    assert code == 0, err
    number = int(re.search(r'"number": (\d+)', out).group(1))
    assert env.label_names(number) == {"bug", "enhancement"}
    assert sorted(env.issue(number).assignees) == ["alice", "bob"]
    code, out, err = cli(monkeypatch, capsys, env.clone, "issue", "edit", str(number), "--add-label", "docs,bug",
                          "--remove-label", "enhancement")
    assert code == 0, err
    assert env.label_names(number) == {"bug", "docs"}


def test_no_flag_swallows_the_positionals_after_it() -> None:
    """The README's own finish line: --closes takes one value, the file after it stays a file."""
    parser = madtea.build_parser()
    ns = madtea._cli_parse(parser, ["finish", "--title", "Fix login redirect", "--squash", "--closes", "12",
                                    "src/login.py"])
    assert ns.closes == ["12"] and ns.files == ["src/login.py"] and ns.style == "squash"
    ns = madtea._cli_parse(parser, ["finish", "-t", "x", "--closes", "12,14", "--closes", "15", "a.py", "b,c.py"])
    assert ns.closes == ["12", "14", "15"] and ns.files == ["a.py", "b,c.py"]  # a comma in a path is the path's
    ns = madtea._cli_parse(parser, ["worktree", "add", "../wt", "--carry", "a,b.txt", "-b", "topic"])
    assert ns.carry == ["a,b.txt"] and ns.path == "../wt"


def test_usage_shows_a_required_positional_as_required() -> None:
    parser = madtea.build_parser()
    usage = {words: _usage(parser, words) for words in (("issue", "view"), ("issue", "close"), ("pr", "view"),
                                                         ("label", "create"), ("log",))}
    assert re.search(r"\sNUMBER$", usage[("issue", "view")]) and "[NUMBER]" not in usage[("issue", "view")]
    assert "NUMBERS [NUMBERS ...]" in usage[("issue", "close")]
    assert "[NUMBER]" in usage[("pr", "view")]  # gh: no number is the current branch's pull request
    assert usage[("label", "create")].rstrip().endswith(" NAME") and "[REF]" in usage[("log",)]


def _usage(parser, words) -> str:
    import argparse
    current = parser
    for word in words:
        current = [a for a in current._actions if isinstance(a, argparse._SubParsersAction)][0].choices[word]
    return " ".join(current.format_usage().split())


# --------------------------------------------------------------------------- gh's and tea's command shapes

def test_a_noun_without_a_verb_and_help_noun_print_the_nouns_help(capsys) -> None:
    assert madtea.main(["issue"]) == 0
    bare = capsys.readouterr().out
    assert madtea.main(["help", "issue"]) == 0
    assert capsys.readouterr().out == bare and "create" in bare and "usage: madtea issue" in bare
    assert madtea.main(["help", "pr", "merge"]) == 0
    assert "--squash" in capsys.readouterr().out
    assert madtea.main(["auth"]) == 0 and "login" in capsys.readouterr().out
    assert madtea.main(["help"]) == 0 and "issue" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exited:
        madtea.main(["help", "isue"])
    assert exited.value.code == 2 and "did you mean 'issue'" in capsys.readouterr().err


def test_teas_plural_nouns_are_aliases(env: Env, monkeypatch, capsys) -> None:
    env.forge.create_issue("acme", "web", "Plural", "by tea's name")
    code, out, err = cli(monkeypatch, capsys, env.clone, "issues", "list")
    assert code == 0 and "Plural" in out, err
    code, out, err = cli(monkeypatch, capsys, env.clone, "pulls", "list")
    assert code == 0, err


# --------------------------------------------------------------------------- words for people

# What only an agent reads: tool names, key=value arguments, the agent's view of who acts and where it runs.
AGENT_DIALECT = re.compile(r"madt_|\baction=|(?<![A-Z_])\b[a-z_]+=(?!\S*`)|\bthe user\b|\blaunch (?:repo|checkout)|"
                           r"nothing left to verify|Only a person can continue|"
                           # words a person cannot act on: calls, servers and clients are an agent's
                           r"\bcall again\b|\bsame call\b|\b[Tt]his call\b|\bthe call\b|\bserver (?:was )?launched\b|"
                           r"\bclient that\b")


def _dialect(text: str) -> list[str]:
    # A shell step the rules name (`GIT_EDITOR=true git ...`) is a command, not dialect; so is a help's example
    # line (`  $ madtea api ... -f state=closed`).
    return AGENT_DIALECT.findall(re.sub(r"`[^`]*`|^  \$ madtea .*$", "", text, flags=re.M))


def test_every_rule_refusal_reads_as_words_for_a_person() -> None:
    """Every refusal the rules can produce on the CLI, rendered for it: no agent dialect."""
    count = 0
    for label, refusal in itertools.chain(test_chain.local_refusals("cli"), test_chain.remote_refusals("cli"),
                                          test_chain.argument_refusals()):
        if refusal.code == "BAD_ARGUMENT" and "action" in refusal.message and "madt_" in refusal.message:
            continue  # an unknown action: argparse chooses the verb on the CLI, so this is the agent's alone
        text = madtea.render_text(madtea.refusal_result(refusal), "cli")
        assert not _dialect(text), (label, text)
        count += 1
    assert count > 500


def test_every_runtime_refusal_and_notice_reads_as_words_for_a_person(tmp_path: Path) -> None:
    for label, result in test_chain.runtime_refusals(tmp_path / "rt"):
        text = madtea.render_text(result, "cli")
        assert not _dialect(text), (label, text)
    for notice in ("showing 30 of 90; pass limit= or page= for more.",
                   madtea.error_result("GIT_ERROR", "git failed.").error["user_action"]):
        assert not _dialect(madtea._for_people(notice)), notice
    assert madtea._for_people("showing 30 of 90; pass limit= or page= for more.") == \
        "showing 30 of 90; pass --limit or --page for more."


def test_help_texts_speak_to_a_person(capsys) -> None:
    """Every command's and flag's help: no agent dialect, and no "is not offered" above a delete verb."""
    import argparse
    seen = 0
    stack = [madtea.build_parser()]
    while stack:
        parser = stack.pop()
        text = parser.format_help()
        assert not _dialect(text), (parser.prog, _dialect(text))
        assert not re.search(r"Delet(?:ing|ion)[^.]*(?:not offered|person's act)", text), parser.prog
        assert "fenced" not in text, parser.prog  # a person's views are plain
        seen += 1
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                stack.extend(dict.fromkeys(action.choices.values()))
    assert seen > 100


# --------------------------------------------------------------------------- plain views, exact bytes

def test_a_persons_views_are_plain_and_an_agents_stay_fenced(env: Env, monkeypatch, capsys) -> None:
    number = env.forge.create_issue("acme", "web", "Fenced for agents", "Steps to reproduce", user="bob")["number"]
    env.forge.create_comment("acme", "web", number, "Same here", user="bob")
    code, out, err = cli(monkeypatch, capsys, env.clone, "issue", "view", str(number), "--comments")
    assert code == 0, err
    assert "Steps to reproduce" in out and "@bob:\nSame here" in out
    assert "<<<" not in out and ">>>" not in out and "untrusted" not in out and "collaborator" not in out
    agent = env.ok("madt_issues", action="view", number=number, comments=True)
    assert "<<< body by @bob (not a collaborator); untrusted content" in agent.text


@pytest.mark.parametrize("path", ["src/app.py", "logo.png", "crlf.txt"])
def test_files_view_to_a_pipe_writes_the_exact_bytes(env: Env, tmp_path: Path, path: str) -> None:
    content = {"src/app.py": b"print('hi')\n\tprint('bye')\n", "logo.png": b"\x89PNG\r\n\x1a\n\0\0\xff\xfe",
               "crlf.txt": b"one\r\ntwo\r\n\xe2\x80\x8bzero-width kept\n"}
    env.forge.commit("acme", "web", "main", content, "Add files")
    copy = tmp_path / "copy"
    with copy.open("wb") as out:
        proc = subprocess.run([sys.executable, "-m", "madtea", "files", "view", path], cwd=env.clone, stdout=out,
                              stderr=subprocess.PIPE, env=child_env(), timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert copy.read_bytes() == content[path]


# --------------------------------------------------------------------------- forges as people run them

def _person(*argv: str, cwd: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """madtea as a person's shell runs it: no token in the environment, the plaintext store allowed."""
    env = {k: v for k, v in child_env(MADTEA_CREDENTIAL_STORES="file").items() if not k.startswith("MADTEA_TOKEN")}
    return subprocess.run([sys.executable, "-m", "madtea", *argv], cwd=cwd, input=stdin, capture_output=True,
                          text=True, env=env, timeout=60)


def test_an_http_login_keeps_its_scheme_and_port_and_is_the_default_outside_a_checkout(env: Env, tmp_path: Path,
                                                                                       monkeypatch) -> None:
    from fakeforge import DEFAULT_TOKEN
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    env.forge.create_issue("acme", "web", "Reached over http", "")
    host = env.forge.url.removeprefix("http://")
    login = _person("auth", "login", "--hostname", env.forge.url, "--with-token", "--insecure-storage",
                    cwd=outside, stdin=DEFAULT_TOKEN)
    assert login.returncode == 0 and f"Logged in to {host} as alice" in login.stdout, login.stderr
    assert "plain text" in login.stderr  # said once, at login
    for repo in (f"{host}/acme/web", "acme/web"):
        listed = _person("issue", "list", "-R", repo, cwd=outside)
        assert listed.returncode == 0 and "Reached over http" in listed.stdout, (repo, listed.stderr)
        assert "plain text" not in listed.stderr and "plaintext" not in listed.stderr  # not on every command
    token = _person("auth", "token", cwd=outside)
    assert token.returncode == 0 and token.stdout.strip() == DEFAULT_TOKEN, token.stderr
    status = _person("auth", "status", cwd=outside)
    assert status.returncode == 0 and "plain text" in status.stderr and f"{host}: logged in as alice" in status.stdout
    monkeypatch.delenv("MADTEA_TOKEN")
    monkeypatch.setenv("MADTEA_CREDENTIAL_STORES", "file")
    agent = env.ok("madt_issues", action="list", owner_repo=f"{host}/acme/web")  # the token from the file
    assert "Reached over http" in agent.text and not agent.notes


def test_end_of_input_at_the_token_prompt_is_a_clean_exit(tmp_path: Path, monkeypatch, capsys) -> None:
    import getpass

    def eof(prompt: str = "") -> str:
        raise EOFError
    monkeypatch.setattr(getpass, "getpass", eof)
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True, raising=False)
    code = madtea.main(["auth", "login", "--hostname", "https://forge.example.test"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and "nothing was stored" in err  # gh's status for a cancel
    assert "https://forge.example.test/user/settings/applications" in err and "write:issue" in err


# --------------------------------------------------------------------------- --json everywhere

def test_json_everywhere_errors_included(env: Env, monkeypatch, capsys) -> None:
    import json
    code, out, err = cli(monkeypatch, capsys, env.clone, "issue", "view", "99999", "--json")
    assert code == 1
    error = json.loads(out)["error"]
    assert error["code"] == "NOT_FOUND_OR_NO_ACCESS" and "99999" in error["message"]
    assert not _dialect(json.dumps(error))
    code, out, err = cli(monkeypatch, capsys, env.clone, "doctor", "--json")
    rows = json.loads(out)
    assert {"status", "topic", "detail"} <= set(rows[0]) and any(r["topic"] == "git" for r in rows)
    code, out, err = cli(monkeypatch, capsys, env.clone, "auth", "status", "--json")
    status = json.loads(out)
    assert status["environment"] == ["MADTEA_TOKEN"] or status["hosts"], status
    number = env.forge.create_issue("acme", "web", "As JSON", "body")["number"]
    code, out, err = cli(monkeypatch, capsys, env.clone, "issue", "view", str(number), "--json")
    assert code == 0 and json.loads(out)["title"] == "As JSON"


# --------------------------------------------------------------------------- gh's pull request habits

def test_pr_checkout_then_view_diff_and_review_without_a_number(env: Env, monkeypatch, capsys) -> None:
    from fakeforge import open_pull
    number = open_pull(env.forge, "feature")
    real_git, resolved = gitops.git, []

    def recording_git(*args: Any, **kwargs: Any) -> gitops.GitResult:
        resolved.extend(["resolve"] if "--absolute-git-dir" in args else [])
        return real_git(*args, **kwargs)

    monkeypatch.setattr(gitops, "git", recording_git)
    code, out, err = cli(monkeypatch, capsys, env.clone, "pr", "checkout", str(number))
    monkeypatch.setattr(gitops, "git", real_git)
    assert code == 0 and f"Checked out PR #{number}" in out, err
    assert len(resolved) == 1  # the repository is resolved by git once, for the forge and the checkout alike
    assert run_git(env.clone, "branch", "--show-current") == "feature"
    assert run_git(env.clone, "rev-parse", "HEAD") == env.forge.git("acme", "web", "rev-parse", "feature")
    code, out, err = cli(monkeypatch, capsys, env.clone, "pr", "view")  # the current branch's pull request
    assert code == 0 and f"#{number} " in out, err
    code, out, err = cli(monkeypatch, capsys, env.clone, "pr", "diff")
    assert code == 0 and "app.py" in out, err
    code, out, err = cli(monkeypatch, capsys, env.clone, "pr", "view", "--web")
    assert code == 0 and re.fullmatch(rf"https?://\S+/acme/web/pulls/{number}", out.strip()), out
    code, out, err = cli(monkeypatch, capsys, env.clone, "pr", "review", "--comment", "-b", "Looks fine")
    assert code == 0, err
    code, out, err = cli(monkeypatch, capsys, env.clone, "pr", "review", str(number), "--comment", "-b", "Fix")
    assert code == 0, err
    events = [r.state for r in env.repo.issues[number].pull.reviews]
    assert events == ["COMMENT", "COMMENT"], events
    parser = madtea.build_parser()
    for flag, event in (("--approve", "approve"), ("--request-changes", "request_changes")):
        assert madtea._cli_parse(parser, ["pr", "review", "3", flag]).event == event
    run_git(env.clone, "switch", "-q", "-c", "lonely")
    code, out, err = cli(monkeypatch, capsys, env.clone, "pr", "view")
    assert code == 1 and "lonely" in err and "madtea pr create" in err and "--head lonely" in err
    assert not _dialect(err)


def test_a_long_text_comes_from_a_file_or_standard_input_with_F(env: Env, tmp_path: Path, monkeypatch,
                                                               capsys) -> None:
    notes = tmp_path / "notes.md"
    notes.write_bytes(b"## Changes\r\n\r\n- one\n")
    code, out, err = cli(monkeypatch, capsys, env.clone, "release", "create", "v1.0.0", "-F", str(notes))
    assert code == 0, err
    body = [r.body for r in env.repo.releases.values() if r.tag_name == "v1.0.0"]
    assert body == ["## Changes\r\n\r\n- one\n"]  # the file's bytes, no newline translation
    page = tmp_path / "page.md"
    page.write_text("Welcome, from a file.\n")
    code, out, err = cli(monkeypatch, capsys, env.clone, "wiki", "create", "Home", "--body-file", str(page))
    assert code == 0, err
    code, out, err = cli(monkeypatch, capsys, env.clone, "wiki", "view", "Home")
    assert "Welcome, from a file." in out
    issue = env.forge.create_issue("acme", "web", "Commented from stdin", "")["number"]
    monkeypatch.setattr(sys, "stdin", __import__("io").TextIOWrapper(__import__("io").BytesIO(b"from stdin\n")))
    code, out, err = cli(monkeypatch, capsys, env.clone, "issue", "comment", str(issue), "-F", "-")
    assert code == 0, err
    assert any(env.forge.comment_body(c) == "from stdin\n" for c in env.issue(issue).comment_ids)


# --------------------------------------------------------------------------- the README, run

README = Path(__file__).resolve().parent.parent / "README.md"
# Placeholders the README writes for a reader to fill, and what this test fills them with.
PLACEHOLDERS = {"/abs/path/": "{tmp}/", "HOST/OWNER/REPO": "{host}/acme/web", "OWNER/REPO": "acme/web",
                "HOST": "{host}", "vX.Y.Z": "v1.0.0", "…": "x"}
SERVING = {"mcp", "hook", "update"}  # these serve a client or reach a release server: not a person's one-liner


def readme_commands() -> list[str]:
    """Every `madtea …` line of the README's sh blocks, in order."""
    blocks = re.findall(r"```(?:sh|bash|shell|console)\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    return [line.strip().removeprefix("$ ") for block in blocks for line in block.splitlines()
            if re.match(r"\s*(?:\$ )?madtea\s", line)]


def test_every_readme_command_line_parses_and_runs_against_the_fake_forge(env: Env, tmp_path: Path) -> None:
    import shlex
    lines = readme_commands()
    assert any(line.startswith("madtea finish") for line in lines) and len(lines) >= 8
    from fakeforge import open_pull
    env.forge.create_label("acme", "web", "bug")
    for n in range(11):
        env.forge.create_issue("acme", "web", f"Issue {n + 1}", "", labels=["bug"])
    assert open_pull(env.forge, "feat/readme") == 12
    assert open_pull(env.forge, "feat/docs") == 13  # the README's pull request named by its branch
    (env.clone / "src").mkdir()
    (env.clone / "tests").mkdir()
    (env.clone / "src" / "login.py").write_text("redirect = '/home'\n")
    (env.clone / "tests" / "test_login.py").write_text("def test_login(): pass\n")
    (env.clone / "notes.md").write_text("Seen on every login since the upgrade.\n")
    host = env.forge.url.removeprefix("http://")
    ran, codes = 0, {}
    for line in lines:
        words = shlex.split(line)
        if words[1] in SERVING:
            continue
        filled = []
        for word in words[1:]:
            for placeholder, value in PLACEHOLDERS.items():
                word = word.replace(placeholder, value.format(tmp=tmp_path, host=host))
            filled.append(word)
        proc = env.cli(*filled, stdin=subprocess.DEVNULL)
        shown = f"{line}\n{proc.stdout}{proc.stderr}"
        assert proc.returncode != 2 and "usage:" not in proc.stderr, shown  # argparse's own refusal
        assert not proc.stderr.startswith(("BAD_ARGUMENT", "UNKNOWN_PARAMETER")), shown
        assert "Traceback" not in proc.stderr, shown
        assert not _dialect(proc.stdout + proc.stderr), shown  # words for a person, refusals included
        codes[words[1]] = proc.returncode
        ran += 1
    assert ran >= 8
    # Past the committing-on-main refusal (the README's lines are examples, not one script), the work lands.
    assert codes["finish"] == 0 and codes["issue"] == 0 and codes["issues"] == 0 and codes["pr"] == 0, codes
    assert run_git(env.clone, "branch", "--show-current") == "feat/readme"  # pr checkout 12 switched to it
    assert [r.state for r in env.repo.issues[12].pull.reviews] == ["COMMENT"]


# --------------------------------------------------------------------------- the smaller things a person meets

def test_views_name_assignees_milestone_mergeability_and_release_assets(env: Env, monkeypatch, capsys) -> None:
    import json
    from fakeforge import open_pull
    milestone = env.forge.create_milestone("acme", "web", "v1")["id"]
    issue = env.forge.create_issue("acme", "web", "Owned", "", assignees=["bob"], milestone=milestone)["number"]
    code, out, err = cli(monkeypatch, capsys, env.clone, "issue", "view", str(issue))
    assert code == 0 and "assignees: @bob; milestone: v1" in out, out
    code, out, err = cli(monkeypatch, capsys, env.clone, "issue", "view", str(issue), "--json")
    data = json.loads(out)
    assert "updated" not in data and data["updated_at"] and data["assignees"] == ["bob"]
    number = open_pull(env.forge, "feat/merge-me")
    code, out, err = cli(monkeypatch, capsys, env.clone, "pr", "view", str(number))
    assert "mergeable: yes" in out and "True" not in out
    assert cli(monkeypatch, capsys, env.clone, "pr", "merge", str(number), "--squash")[0] == 0
    code, out, err = cli(monkeypatch, capsys, env.clone, "pr", "view", str(number), "--json")
    assert json.loads(out)["mergeable"] is None and json.loads(out)["state"] == "merged"
    code, out, err = cli(monkeypatch, capsys, env.clone, "pr", "view", str(number))
    assert "merged at " in out and "mergeable" not in out
    code, out, err = cli(monkeypatch, capsys, env.clone, "release", "create", "v2.0.0")
    assert code == 0, err
    asset = env.clone / "app.tar.gz"
    asset.write_bytes(b"x" * 120)
    assert cli(monkeypatch, capsys, env.clone, "release", "upload", "v2.0.0", "app.tar.gz")[0] == 0
    code, out, err = cli(monkeypatch, capsys, env.clone, "release", "list")
    zoned = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(Z|[+-]\d\d:\d\d)"  # a pipe reads the forge's time, zone and all
    assert re.search(rf"v2\.0\.0  v2\.0\.0  published {zoned}  1 asset", out), out  # the title is the tag
    code, out, err = cli(monkeypatch, capsys, env.clone, "release", "view", "v2.0.0")
    assert "asset app.tar.gz (120 bytes) http" in out, out


def test_an_abbreviated_sha_names_the_version_a_file_edit_replaces(env: Env, monkeypatch, capsys) -> None:
    env.forge.commit("acme", "web", "dev", {"src/app.py": "print('dev')\n"}, "Dev work", start="main")
    sha = env.forge.git("acme", "web", "rev-parse", "dev:src/app.py")
    code, out, err = cli(monkeypatch, capsys, env.clone, "files", "edit", "src/app.py", "--sha", sha[:12], "--branch",
                          "dev", "--replace-old", "dev", "--replace-new", "cli")
    assert code == 0, err
    assert env.forge.git("acme", "web", "show", "dev:src/app.py") == "print('cli')"
    code, out, err = cli(monkeypatch, capsys, env.clone, "files", "edit", "src/app.py", "--sha", sha[:12], "--branch",
                          "dev", "--replace-old", "cli", "--replace-new", "again")
    assert code == 1 and "STALE_BODY" in err  # that prefix names the old version now


def test_a_whole_body_edit_without_updated_at_shows_the_follow_up_command(env: Env, monkeypatch, capsys) -> None:
    number = env.forge.create_issue("acme", "web", "Edit me", "old body")["number"]
    code, out, err = cli(monkeypatch, capsys, env.clone, "issue", "edit", str(number), "-b", "new body")
    assert code == 1 and "--updated-at" in err and "updated_at" not in err.replace("--updated-at", "")
    assert f"Then: madtea issue edit {number} --body 'new body'" in err and "--updated-at '<" in err


def test_a_usage_error_under_json_is_json(capsys) -> None:
    import json
    with pytest.raises(SystemExit) as exited:
        madtea.main(["issue", "view", "--json"])
    error = json.loads(capsys.readouterr().out)["error"]
    assert exited.value.code == 2 and error["code"] == "BAD_ARGUMENT" and "NUMBER" in error["message"]
    with pytest.raises(SystemExit):
        madtea.main(["issue", "viwe", "3", "--json"])
    assert "did you mean 'view'" in json.loads(capsys.readouterr().out)["error"]["message"]
    with pytest.raises(SystemExit):
        madtea.main(["issue", "view"])
    assert "usage:" in capsys.readouterr().err  # without --json, argparse's own words


def _notices() -> list[str]:
    """Every notice and warning madtea emits, as written in its source (values shown as X)."""
    import ast
    tree = ast.parse(Path(madtea.__file__).read_text(encoding="utf-8"))
    texts = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("notice", "warn") \
                and node.args:
            parts = node.args[0].values if isinstance(node.args[0], ast.JoinedStr) else [node.args[0]]
            texts.append("".join(p.value if isinstance(p, ast.Constant) and isinstance(p.value, str) else "X"
                                 for p in parts))
    return texts


def test_every_notice_reads_as_words_for_a_person() -> None:
    notices = _notices()
    assert len(notices) > 25 and any("pass limit= or page=" in n for n in notices)
    for text in notices:
        assert not _dialect(madtea._for_people(text)), (text, madtea._for_people(text))


# --------------------------------------------------------------------------- values stay as typed

def test_a_typed_value_is_never_rewritten_as_a_flag(env: Env, monkeypatch, capsys) -> None:
    """name=value in what a person typed, or in what the forge returned, is a value: only madtea's own words
    (``pass limit=``) become flags."""
    env.forge.create_label("acme", "web", "kind=feature")
    code, out, err = cli(monkeypatch, capsys, env.clone, "issue", "create", "-t", "T", "-l", "type=bug")
    assert code == 1
    assert "no label type=bug" in err and "kind=feature" in err and "--type" not in err and "--kind" not in err
    assert "madtea label create type=bug --repo acme/web" in err
    assert "madtea issue create --title T --label type=bug" in err
    code, out, err = cli(monkeypatch, capsys, env.clone, "issue", "create", "-t", "T", "-l", "type=bug", "--json")
    error = json.loads(out)["error"]
    assert "type=bug" in error["message"] and "--type" not in str(error)
    code, out, err = cli(monkeypatch, capsys, env.clone, "files", "view", "docs/state=closed.md")
    assert code == 1 and "docs/state=closed.md" in err and "--state" not in err
    code, out, err = cli(monkeypatch, capsys, env.clone, "api", "/repos/acme/web/topics", "-X", "PUT",
                         "--input", "name=x")
    assert code == 1 and "name=x" in err and "--name" not in err
    code, out, err = cli(monkeypatch, capsys, env.clone, "api", "/repos/acme/web/topics", "-X", "PUT", "-F", "name")
    assert code == 1 and "'name'" in err and "--name" not in err
    assert madtea._for_people("showing 30 of 90; pass limit= or page= for more.") == \
        "showing 30 of 90; pass --limit or --page for more."


def test_a_way_on_names_the_real_file_as_the_shell_needs_it(tmp_path: Path, monkeypatch) -> None:
    """A value a terminal would show escaped is written in bash's $'...' quoting, which names the real file."""
    name = "evil\x1b]0;title\x07\u202e\u0085 it's.txt"
    command = madtea.cli_render({"tool": "madt_add", "args": {"files": [name, "plain.txt", "a b.txt"]}})
    assert madtea.for_terminal(command) == command  # nothing in it for the terminal to escape
    assert command.endswith(" plain.txt 'a b.txt'") and "?" not in command
    (tmp_path / name).write_text("x")
    word = command.removeprefix("madtea add ").rsplit(" plain.txt", 1)[0]
    listed = subprocess.run(["bash", "-c", f"ls -- {word}"], cwd=tmp_path, capture_output=True,
                            env={"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"})
    assert listed.returncode == 0 and listed.stdout.rstrip(b"\n") == name.encode(), listed
    # A terminal whose encoding cannot show a character gets its escape, never the '?' it would print instead.
    import io
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(io.BytesIO(), encoding="ascii"))
    step = {"tool": "madt_add", "args": {"files": ["caf\u00e9.txt"]}}
    assert madtea.cli_render(step) == "madtea add $'caf\\u00e9.txt'"


def test_pr_create_on_a_branch_with_an_open_pull_request_says_so_and_exits_1(env: Env) -> None:
    """gh's answer: the pull request already exists, exit 1; the title and body typed are shown in the way on, never
    lost in a silent reuse. --reuse answers with the open one."""
    env.forge.commit("acme", "web", "feat-x", {"x.txt": "x\n"}, "Work on x", start="main")
    number = env.forge.create_pull("acme", "web", "feat-x", title="First words")["number"]
    run_git(env.clone, "fetch", "-q")
    run_git(env.clone, "switch", "-q", "feat-x")
    done = subprocess.run([sys.executable, "-m", "madtea", "pr", "create", "-t", "Better words", "-F", "-"],
                          cwd=env.clone, input="The body I typed", capture_output=True, text=True,
                          env=child_env(), timeout=60)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert f"already has an open pull request from feat-x into main: #{number}" in done.stderr
    assert f"madtea pr edit {number} --repo acme/web --title 'Better words' --body 'The body I typed'" in done.stderr
    assert "madtea pr create --title 'Better words' --body 'The body I typed' --reuse" in done.stderr
    assert env.issue(number).title == "First words"
    reused = env.cli("pr", "create", "-t", "Better words", "--reuse")
    assert reused.returncode == 0 and f"Reused the open PR #{number}" in reused.stdout


def test_a_command_that_needs_a_login_exits_4_as_ghs_do(env: Env) -> None:
    done = _person("issue", "create", "-t", "Needs a login", cwd=env.clone)
    assert done.returncode == 4 and done.stderr.startswith("AUTH_MISSING:"), done.stderr
    assert "madtea auth login" in done.stderr and "Traceback" not in done.stderr
    assert _person("issue", "view", "999", cwd=env.clone, stdin="").returncode == 1  # any other failure is 1


def test_whoami_and_doctor_speak_to_a_person(env: Env) -> None:
    for argv in (["whoami"], ["doctor"]):
        done = env.cli(*argv)
        assert "Traceback" not in done.stderr and done.stdout, (argv, done.stderr)
        assert not _dialect(done.stdout + done.stderr), (argv, _dialect(done.stdout + done.stderr))
    assert f"(the checkout at {env.clone})" in env.cli("whoami").stdout


def test_at_me_is_the_credentials_own_login(env: Env, monkeypatch, capsys) -> None:
    """gh's @me: the user the token belongs to, in every flag that names a user."""
    me = json.loads(env.forge.call("GET", "/user")[2])["login"]
    code, out, err = cli(monkeypatch, capsys, env.clone, "issue", "create", "-t", "Mine", "-a", "@me", "--json")
    assert code == 0, err
    number = json.loads(out)["number"]
    assert env.issue(number).assignees == [me]
    env.forge.create_issue("acme", "web", "Not mine", user="bob")
    for flags in (["--author", "@me"], ["--assignee", "@me"]):
        code, out, err = cli(monkeypatch, capsys, env.clone, "issue", "list", *flags, "--json")
        assert code == 0, (flags, err)
        assert [row["title"] for row in json.loads(out)] == ["Mine"], flags


# --------------------------------------------------------------------------- gh's conventions

def test_json_takes_the_fields_to_print_as_gh_does(env: Env, monkeypatch, capsys) -> None:
    first = env.forge.create_issue("acme", "web", "First\x1b]0;title\x07", "body")["number"]
    second = env.forge.create_issue("acme", "web", "Second", "body")["number"]
    code, out, err = cli(monkeypatch, capsys, env.clone, "issue", "list", "--json", "number,title")
    assert code == 0, err
    rows = json.loads(out)
    assert all(list(row) == ["number", "title"] for row in rows) and {r["number"] for r in rows} >= {first, second}
    assert "\\u001b]0;title\\u0007" in out and "\x1b" not in out  # the JSON sink escapes what it prints
    code, out, err = cli(monkeypatch, capsys, env.clone, "issue", "view", "--json", "title,state", str(second))
    assert code == 0 and json.loads(out) == {"title": "Second", "state": "open"}, err
    code, out, err = cli(monkeypatch, capsys, env.clone, "issue", "view", str(second), "--json")
    assert code == 0 and {"number", "title", "state", "body"} <= set(json.loads(out))  # bare: the whole result
    code, out, err = cli(monkeypatch, capsys, env.clone, "issue", "list", "--json", "number,nope")
    error = json.loads(out)["error"]
    assert code == 1 and error["code"] == "BAD_ARGUMENT" and "'nope'" in error["message"]
    assert {"number", "title", "state"} <= set(error["fields"])


def test_times_are_relative_at_a_terminal_and_zoned_elsewhere(env: Env, monkeypatch, capsys) -> None:
    number = env.forge.create_issue("acme", "web", "Timed", "body")["number"]
    code, out, err = cli(monkeypatch, capsys, env.clone, "issue", "list", "--json", "number,updated")
    stamp = next(r["updated"] for r in json.loads(out) if r["number"] == number)
    assert code == 0 and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(Z|[+-]\d\d:\d\d)", stamp), stamp  # zone kept
    code, out, err = cli(monkeypatch, capsys, env.clone, "issue", "list")  # a pipe: the zoned time, whole
    line = next(l for l in out.splitlines() if l.startswith(f"#{number} "))
    assert code == 0 and line.endswith(f" {stamp}"), line
    monkeypatch.setenv("PAGER", "cat")
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    code, out, err = cli(monkeypatch, capsys, env.clone, "issue", "list")  # a person: how long ago, as gh says it
    line = next(l for l in out.splitlines() if l.startswith(f"#{number} "))
    assert code == 0 and re.search(r" (about \d+ (minute|hour|day|month|year)s? ago|less than a minute ago)$", line)
    assert stamp[:4] not in line, line


def test_a_relative_time_reads_as_gh_s() -> None:
    import datetime
    now = datetime.datetime(2026, 6, 1, 12, 0, tzinfo=datetime.timezone.utc)
    token = madtea._TIMES.set("relative")
    try:
        shown = {t: madtea.shown_time(t, now) for t in ("2026-06-01T11:59:30Z", "2026-06-01T11:00:00Z",
                                                         "2026-06-01T12:00:00+02:00", "2026-05-29T12:00:00-05:00",
                                                         "2026-02-01T12:00:00Z", "2023-06-01T12:00:00Z",
                                                         "2026-06-01T10:00:00", "not a time")}
    finally:
        madtea._TIMES.reset(token)
    assert shown == {"2026-06-01T11:59:30Z": "less than a minute ago", "2026-06-01T11:00:00Z": "about 1 hour ago",
                     "2026-06-01T12:00:00+02:00": "about 2 hours ago", "2026-05-29T12:00:00-05:00": "about 2 days ago",
                     "2026-02-01T12:00:00Z": "about 4 months ago", "2023-06-01T12:00:00Z": "about 3 years ago",
                     "2026-06-01T10:00:00": "2026-06-01T10:00:00", "not a time": "not a time"}  # no zone: not guessed
    assert madtea.shown_time("2026-06-01T12:00:00+02:00") == "2026-06-01T12:00:00+02:00"  # not at a terminal: whole


def _recorder(tmp_path: Path, name: str) -> tuple[Path, Path]:
    """A program that writes what it is given (its arguments, then its standard input) to a file."""
    record = tmp_path / f"{name}.out"
    script = tmp_path / name
    script.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$*\" > {record}\ncat >> {record}\n")
    script.chmod(0o755)
    return script, record


def test_a_long_text_at_a_terminal_goes_through_the_pager(env: Env, monkeypatch, capsys, tmp_path: Path) -> None:
    number = env.forge.create_issue("acme", "web", "Long", "\n".join(f"line {i}" for i in range(40)))["number"]
    mine, by_madtea = _recorder(tmp_path, "madtea-pager")
    theirs, by_pager = _recorder(tmp_path, "pager")
    monkeypatch.setenv("LINES", "20")
    monkeypatch.setenv("MADTEA_PAGER", f"{mine} --flag")
    monkeypatch.setenv("PAGER", str(theirs))
    code, out, err = cli(monkeypatch, capsys, env.clone, "issue", "view", str(number))  # a pipe: never paged
    assert code == 0 and "line 39" in out and not by_madtea.exists() and not by_pager.exists()
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    code, out, err = cli(monkeypatch, capsys, env.clone, "issue", "view", str(number))
    paged = by_madtea.read_text()
    assert code == 0 and paged.startswith("--flag\n") and "line 39" in paged and "line 39" not in out
    monkeypatch.delenv("MADTEA_PAGER")
    code, out, err = cli(monkeypatch, capsys, env.clone, "issue", "view", str(number))  # then PAGER
    assert code == 0 and "line 39" in by_pager.read_text() and "line 39" not in out
    by_pager.unlink()
    code, out, err = cli(monkeypatch, capsys, env.clone, "issue", "view", "--json", "title", str(number))
    assert code == 0 and json.loads(out) == {"title": "Long"} and not by_pager.exists()  # JSON is a script's
    for off in ("", "cat"):
        monkeypatch.setenv("PAGER", off)
        code, out, err = cli(monkeypatch, capsys, env.clone, "issue", "view", str(number))
        assert code == 0 and "line 39" in out and not by_pager.exists()
    monkeypatch.setenv("PAGER", str(theirs))
    monkeypatch.setenv("LINES", "200")
    code, out, err = cli(monkeypatch, capsys, env.clone, "issue", "view", str(number))  # fits the screen
    assert code == 0 and "line 39" in out and not by_pager.exists()
    monkeypatch.delenv("PAGER")
    assert madtea.pager_command() == ["less", "-FRX"]


def test_web_opens_a_list_s_page_and_a_new_pull_request_s_compare_page(env: Env, monkeypatch, capsys,
                                                                       tmp_path: Path) -> None:
    import webbrowser
    browser, opened = _recorder(tmp_path, "browser")
    monkeypatch.setenv("BROWSER", str(browser))
    monkeypatch.setattr(webbrowser, "_tryorder", None)  # the browsers are read from BROWSER again
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True, raising=False)
    before = env.issue_count()
    code, out, err = cli(monkeypatch, capsys, env.clone, "issue", "list", "--web", "--state", "closed")
    assert code == 0, err
    url = out.strip()
    assert url.endswith("/acme/web/issues?state=closed") and url.startswith("http"), out
    assert opened.read_text().split("\n")[0] == url  # the browser was given the address
    run_git(env.clone, "switch", "-c", "feat/web")
    code, out, err = cli(monkeypatch, capsys, env.clone, "pr", "create", "--web")
    assert code == 0 and out.strip().endswith("/acme/web/compare/main...feat/web"), (out, err)
    assert opened.read_text().split("\n")[0] == out.strip()
    code, out, err = cli(monkeypatch, capsys, env.clone, "issue", "create", "--web", "-t", "not made")
    assert code == 0 and out.strip().endswith("/acme/web/issues/new") and env.issue_count() == before  # nothing made
    opened.unlink()
    monkeypatch.setattr(sys.stdout, "isatty", lambda: False)
    code, out, err = cli(monkeypatch, capsys, env.clone, "pr", "list", "--web")  # a pipe: the address alone
    assert code == 0 and out.strip().endswith("/acme/web/pulls") and not opened.exists()


def _bash_completes(script: Path, *words: str) -> list[str]:
    """What bash offers, with madtea's completion loaded, for the command line *words* (the last being typed)."""
    line = " ".join(f"'{w}'" for w in ("madtea", *words))
    done = subprocess.run(["bash", "--norc", "--noprofile", "-c", f'source "$1"; COMP_WORDS=({line}); '
                           f'COMP_CWORD={len(words)}; _madtea; printf "%s\\n" "${{COMPREPLY[@]}}"', "-", str(script)],
                          capture_output=True, text=True, check=True)
    return [w for w in done.stdout.split("\n") if w]


def test_completion_covers_every_command_verb_and_flag(tmp_path: Path, capsys) -> None:
    assert madtea.main(["completion", "bash"]) == 0
    script = tmp_path / "madtea.bash"
    script.write_text(capsys.readouterr().out)
    assert _bash_completes(script, "pr", "cr") == ["create"]
    assert _bash_completes(script, "issues", "list", "--sta") == ["--state"]  # an alias completes as its command
    assert _bash_completes(script, "pr", "create", "-t", "x", "--dr") == ["--draft"]
    assert {"issue", "pr", "completion", "auth", "help"} <= set(_bash_completes(script, ""))
    assert _bash_completes(script, "auth", "lo") == ["login", "logout"]  # a command's own subcommands, too
    for op in madtea.REGISTRY:  # generated from the registry: every command and every flag of it
        *head, last = op.cli
        assert last in _bash_completes(script, *head, last[:2]), op.cli
    flags = _bash_completes(script, "issue", "create", "--")
    assert {"--title", "--label", "--body-file", "--json", "--web"} <= set(flags)
    assert madtea.main(["completion", "zsh"]) == 0
    zsh = capsys.readouterr().out
    assert zsh.startswith("#compdef madtea\n") and "bashcompinit" in zsh and "complete -o default -F _madtea" in zsh
    assert madtea.main(["completion", "fish"]) == 0
    fish = capsys.readouterr().out.splitlines()
    assert "complete -c madtea -n '__fish_use_subcommand' -a issue -d 'Issues'" in fish
    assert ("complete -c madtea -n '__fish_use_subcommand' -a help -d 'Show the help of a command, e.g. madtea help "
            "issue'") in fish
    assert ("complete -c madtea -n '__fish_seen_subcommand_from pr; and __fish_seen_subcommand_from create' -l draft"
            in fish)
    subprocess.run(["bash", "-n", str(script)], check=True)


def test_the_most_used_commands_help_has_examples_that_parse_and_a_learn_more(capsys) -> None:
    import shlex
    parser = madtea.build_parser()
    for words in (("issue", "list"), ("issue", "view"), ("issue", "create"), ("pr", "list"), ("pr", "view"),
                  ("pr", "create"), ("api",)):
        assert madtea.main(["help", *words]) == 0
        text = capsys.readouterr().out
        examples = re.findall(r"^  \$ (madtea .+)$", text, re.M)
        assert len(examples) >= 2 and text.index("examples:") < text.index("learn more:"), text
        assert f"madtea help {words[0]}" in text.split("learn more:")[1]
        for example in examples:  # each example is a command line this CLI takes, for this very command
            ns = madtea._cli_parse(parser, shlex.split(example)[1:])
            assert ns._op.cli == words, example
        options, shared = text.split("where it acts and how it prints:")  # gh's grouped flags
        assert "--repo" in shared and "--json" in shared and "--repo" not in options, text
    assert madtea.main(["help", "issue", "close"]) == 0
    text = capsys.readouterr().out
    assert "examples:" not in text and "learn more:\n  madtea help issue" in text


def test_jq_filters_the_json_as_gh_s_and_is_refused_without_jq(env: Env, monkeypatch, capsys, tmp_path: Path) -> None:
    first = env.forge.create_issue("acme", "web", "Bell\x07 and \x1b]0;title\x07", "body")["number"]
    env.forge.create_issue("acme", "web", "Plain", "body")
    code, out, err = cli(monkeypatch, capsys, env.clone, "issue", "list", "--json", "number,title", "-q",
                         f'.[] | select(.number == {first}) | .title')
    assert code == 0 and out == "Bell^G and ^[]0;title^G\n", (out, err)  # a string unquoted, cleaned for a terminal
    code, out, err = cli(monkeypatch, capsys, env.clone, "issue", "list", "--jq", "map(.title) | sort | .[-1]")
    assert code == 0 and out == "Plain\n", (out, err)  # --jq alone reads the whole JSON
    code, out, err = cli(monkeypatch, capsys, env.clone, "issue", "list", "--jq", ".[] | .nope(")
    assert code == 1 and "jq: error" in err and not out
    before = env.issue_count()
    monkeypatch.setenv("PATH", str(tmp_path))  # no jq here
    code, out, err = cli(monkeypatch, capsys, env.clone, "issue", "create", "-t", "Not made", "--jq", ".number")
    assert code == 1 and "USER_ACTION_REQUIRED" in err and "Install jq" in err and env.issue_count() == before


def test_the_hook_reads_json_fields_and_jq_as_values_not_positionals() -> None:
    import guard
    table = madtea.cli_table()
    decision, text = guard._madtea_registry(["issue", "view", "--json", "title,state", "-q", ".title", "12"], table,
                                            "")
    assert decision == "deny" and "number=12" in text and "title,state" not in text and ".title" not in text, text


def test_template_prints_each_row_through_a_string_template(env: Env, monkeypatch, capsys) -> None:
    for name in ("bug", "ui"):
        env.forge.create_label("acme", "web", name)
    first = env.forge.create_issue("acme", "web", "Crash\x1b[2J", "body", labels=["bug", "ui"])["number"]
    code, out, err = cli(monkeypatch, capsys, env.clone, "issue", "list", "--template",
                         "#$number ${title} [$labels]$none")
    assert code == 0, err
    assert f"#{first} Crash^[[2J [bug, ui]$none" in out.splitlines(), out  # cleaned; an unknown name left as typed
    code, out, err = cli(monkeypatch, capsys, env.clone, "issue", "view", str(first), "--template", "$state")
    assert code == 0 and out == "open\n", out
    decision, text = guard_registry(["issue", "view", "--template", "$state", "7"])
    assert "number=7" in text and "$state" not in text, text


def guard_registry(words: list[str]) -> tuple[str, str]:
    import guard
    return guard._madtea_registry(words, madtea.cli_table(), "")
