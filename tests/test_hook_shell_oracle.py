"""The hook's shell oracle: bash decides what a line runs, and the hook must agree.

Lines are generated from a grammar (the deny table's forms and the reads, each in
git's own spellings, behind wrappers, inside shell constructs), seeded and
bounded, and each is run by real bash in a sandbox whose ``git`` (also as
``/usr/bin/git`` and ``/usr/lib/git-core/git-<sub>``, bound over the real ones in
a private mount namespace), ``madtea`` (and its launchers), ``gh``, ``tea`` and
``rm`` only record their arguments. A line that ran a denied form must be
denied; a line generated from reads that ran only reads must not be. Every
recorded run must be one the generator made, so a wrong label cannot hide.

Wrappers that are not installed here, or that would need a password or another
user (``sudo``, ``doas``, ``su``, ``runuser``, ``unbuffer``, ``chronic``,
``parallel``, ``uv``, ``poetry``, ``pipenv``, ``pipx``, ``direnv``,
``nix-shell``, ``busybox``, ``py``) are small recorders of their documented
syntax that run the command they were given; the rest are the real programs.

    MADTEA_ORACLE_LINES=N (default 1200) and MADTEA_ORACLE_SEED=S widen or move the corpus.
"""
from __future__ import annotations

import json
import os
import random
import re
import shlex
import shutil
import stat
import subprocess
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import guard
from helpers import classify

ROOT = Path(__file__).resolve().parent.parent
SEED = int(os.environ.get("MADTEA_ORACLE_SEED", "22"))
LINES = int(os.environ.get("MADTEA_ORACLE_LINES", "1200"))
SEP, END = "\x1f", "\x1e"

pytestmark = pytest.mark.skipif(shutil.which("bash") is None or sys.platform == "win32",
                                reason="the oracle runs lines with bash")

# --------------------------------------------------------------------------- the forms, as argv

# git's argv after the word git (global options included), per form. Spellings use git's own
# option rules: unique prefixes, --no- negations, bundles.
GIT_DENY: list[list[str]] = [
    ["reset", "--hard"], ["reset", "--har"], ["reset", "--h", "HEAD"], ["reset", "-q", "--hard"],
    ["clean", "-f"], ["clean", "--forc"], ["clean", "-fdx"], ["clean", "-n", "--no-dry-run", "-f"],
    ["clean", "--dry-run", "--no-dry-run", "--force"],
    ["restore", "a.py"], ["restore", "--staged", "--work", "a.py"], ["restore", "--ours", "a.py"],
    ["restore", "-s", "HEAD", "a.py"],
    ["checkout", "--", "a.py"], ["checkout", "--theirs", "a.py"], ["checkout", "--ours", "a.py"],
    ["checkout", "-m", "a.py"], ["checkout", "--conflict=merge", "a.py"], ["checkout", "HEAD", "--", "a.py"],
    ["checkout", "."], ["checkout", "feat"], ["checkout", "@{-1}"], ["checkout", "-"], ["switch", "feat"],
    ["switch", "-c", "topic"], ["checkout", "-b", "topic"], ["checkout", "-fb", "topic"],
    ["add", "a.py"], ["add", "-A"], ["add", "--al"], ["add", "."], ["add", "-n", "--no-dry-run", "a.py"],
    ["commit", "-m", "x", "a.py"], ["commit", "-am", "x"], ["commit", "--amen", "--no-edit"],
    ["commit", "--dry-run", "--no-dry-run", "-m", "x"],
    ["branch", "topic"], ["branch", "-D", "feat"], ["branch", "-df", "feat"], ["branch", "--delete", "--force", "feat"],
    ["branch", "--del", "feat"], ["branch", "-m", "feat", "f2"],
    ["worktree", "add", "../wtx"], ["worktree", "remove", "../wt"], ["worktree", "prune"],
    ["push"], ["push", "origin", "feat"], ["push", "--dry-run", "--no-dry-run"], ["push", "-n", "--no-dry-run"],
    ["push", "--force"], ["push", "-f", "origin", "feat"], ["push", "--mirror"], ["push", "origin", "+feat"],
    ["push", "--del", "origin", "feat"],
    ["pull"], ["pull", "--rebase"], ["rebase", "main"], ["rebase", "-i", "HEAD~2"],
    ["stash", "drop"], ["stash", "clear"],
    ["update-ref", "--stdin"], ["update-ref", "-d", "refs/stash"], ["update-ref", "-d", "refs/heads/feat"],
    ["checkout-index", "-f", "-a"], ["checkout-index", "-fa"], ["checkout-index", "--force", "--all"],
    ["read-tree", "-u", "--reset", "HEAD"],
    ["fetch", "origin", "+refs/heads/*:refs/heads/*"], ["fetch", "origin", "+main:main"],
    ["reflog", "expire", "--expire=now", "--all"], ["gc", "--prune=now"],
    ["rm", "-rf", "."], ["rm", "-f", "a.py"], ["tag", "-d", "v1"], ["tag", "--delete", "v1"],
    ["-c", "http.extraHeader=Authorization: token abc123", "fetch"],
    ["-c", "http.https://h.example/.extraheader=Authorization: Basic eDp5", "ls-remote", "origin"],
    ["remote", "add", "up", "https://u:tok@h.example/o/r.git"],
    ["config", "http.extraHeader", "Authorization: token abc123"],
]
GIT_READ: list[list[str]] = [
    ["status"], ["log", "--oneline", "-3"], ["diff"], ["show", "HEAD"], ["branch"], ["tag", "-l"], ["stash", "list"],
    ["rev-parse", "HEAD"], ["commit", "--help"], ["push", "-h"], ["add", "-h"], ["rebase", "--help"],
    ["worktree", "add", "--help"], ["branch", "-D", "--help"], ["stash", "drop", "--help"], ["reset", "--hard", "-h"],
    ["clean", "-fh"], ["checkout", "-h"], ["push", "--dry-run"], ["push", "-n", "origin", "feat"], ["clean", "-n"],
    ["clean", "-f", "--dry-run"], ["reset", "--soft", "HEAD~1"], ["restore", "--staged", "a.py"], ["fetch"],
    ["fetch", "origin", "main"], ["merge", "feat"], ["gc"], ["reflog"], ["tag", "v9"], ["checkout", "v1"],
    ["rm", "--cached", "a.py"], ["update-ref", "refs/remotes/origin/x", "HEAD"], ["reset", "--keep", "HEAD"],
    ["config", "--get", "user.name"], ["remote", "-v"], ["cat-file", "-p", "HEAD"], ["commit", "--dry-run"],
    ["add", "--dry-run", "a.py"], ["add", "-n", "."], ["rebase", "--abort"], ["merge", "--continue"],
    ["log", "--grep", "git push --force"], ["commit", "-h"], ["help", "reset"],
]
# global options git reads before the subcommand
GIT_GLOBALS: list[list[str]] = [
    [], [], [], ["-c", "core.pager=cat"], ["-C", "."], ["--git-dir=.git"], ["--work-tree=."], ["--no-pager"], ["-P"],
    ["--exec-path=/usr/lib/git-core"], ["-c", "color.ui=never", "-C", "."], ["--git-dir", ".git", "--work-tree", "."],
    ["--literal-pathspecs"],
]
# madtea's argv after the program, and its launchers (a prefix of shell text)
MADTEA_DENY: list[list[str]] = [["pr", "merge", "3"], ["update"], ["update", "--from", "x.pyz"], ["auth", "token"],
                                ["issue", "list"], ["auth", "login"], ["pulls", "merge", "3"]]
MADTEA_READ: list[list[str]] = [["--version"], ["--help"], ["pr", "merge", "--help"], ["issue", "list", "-h"]]
MADTEA_LAUNCHERS = ["madtea", "python3 bin/madtea", 'python3 "$PLUGIN_ROOT/bin/madtea"', "uv run madtea",
                    "uv run --with rich madtea", "uv tool run madtea", "uvx madtea", "poetry run madtea",
                    "pipenv run madtea", "pipx run madtea", "python3 madtea.pyz", "py madtea.pyz",
                    "python3 madtea-1.2.3.pyz", "python3 -m madtea", '"$(which madtea)"', "`command -v madtea`",
                    "./bin/madtea", "python3 -I bin/madtea"]
OTHER_DENY: dict[str, list[list[str]]] = {
    "gh": [["pr", "merge", "3"], ["repo", "delete", "o/r", "--yes"], ["release", "delete", "v1"]],
    "tea": [["pr", "merge", "3"], ["pulls", "merge", "3"], ["releases", "delete", "v1"]],
    "rm": [["-rf", ".git"], ["-r", "-f", ".git/"], ["-fr", "./.git"]],
}
OTHER_READ: dict[str, list[list[str]]] = {
    "gh": [["pr", "list"], ["pr", "view", "3"]],
    "tea": [["pulls", "list"], ["issues"]],
    "rm": [["-f", "out.txt"]],
}
# the ways to write the word git (bind: needs the recording git bound over /usr/bin/git)
GIT_WORDS = ["git", "git", "git", "'git'", '"git"', "\\git", "g\\it", "gi''t", 'g"i"t', "$'git'", "$'\\x67it'",
             "command git", "env git", '"$(which git)"', "`which git`", "/usr/bin/git", "builtin command git"]
NEEDS_BIND = ("/usr/bin/git", "/usr/lib/git-core/", "bash -l")

# wrappers: shell text put before a command (a string: {cmd} is its shell text; a callable: wraps it)
WRAPPERS = [
    "", "", "", "", "time -p ", "/usr/bin/time -f %e ", "timeout --signal KILL 10 ", "timeout -s KILL 10 ",
    "timeout 10 ",
    "sudo -Eu bob ", "sudo -u bob -E ", "sudo -- ", "doas -u bob ", "stdbuf -o L ", "stdbuf -oL -eL ",
    "nice --adjustment 5 ", "nice -n 5 ", "ionice --class 3 ", "ionice -c 3 ", "taskset 0x1 ", "chrt -f 10 ",
    "chrt -o 0 ", "setsid ", "flock oracle.lock ", "chronic ", "unbuffer ", "strace -f -o /dev/null ",
    "env ", "env -u HOME ", "env FOO=1 ", "FOO=1 ", "nohup ", "command ", "xargs --max-args 1 ", "xargs -n 1 ",
    "busybox ", "uv run ", "poetry run ", "pipenv run ", "direnv exec . ", "runuser -u bob -- ", "runit ",
    "runit --flag value ", "exec ",
]
# wrappers that take the command as one string
STRING_WRAPPERS = [
    "bash -c {q}", "sh -c {q}", "bash -o pipefail -c {q}", "bash -O extglob -c {q}", "busybox sh -c {q}",
    "script -qec {q} /dev/null", "script -qc {q} /dev/null", "su -c {q} bob", "su bob -c {q}", "runuser bob -c {q}",
    "flock oracle.lock -c {q}", "nix-shell -p git --run {q}", "eval {q}", "parallel ::: {q}", "bash -lc {q}",
    "runit sh -c {q}", "git submodule foreach {q}", "bash -ec {q}",
]
# shell constructs: {c} is the command's text, {q} the same quoted as one word
CONSTRUCTS = [
    "{c}", "{c}", "{c}", "a=($({c}))", "x=${{x:-$({c})}}", "echo $(( $({c}) ))", "f() ( {c} ); f", "f() {{ {c}; }}; f",
    "function f {{ {c}; }}; f", "( {c} )", "{{ {c}; }}", "if true; then {c}; fi", "for i in 1; do {c}; done",
    "while true; do {c}; break; done", "case x in x) {c};; esac", "true && {c}", "false || {c}", "{c} | cat",
    "echo | {c}", "x=$({c})", "x=`{c}`", 'echo "$({c})"', "[[ -n $({c}) ]]", "cat <({c})", ": > >({c}); wait $!",
    "bash <(echo {q})", "source <(echo {q})", ". <(echo {q})", "bash < <(echo {q})", "echo {q} | bash",
    "bash <<'EOF'\n{c}\nEOF", "bash -s <<< {q}", "! {c}", "{c} &\nwait", "{{ {c}; }} 2>/dev/null",
    "{c} 2>&1 | head -1", "(exec {c})", "trap {q} EXIT", "echo start\n{c}", "sh -c {q}",
    "bash -c {qq}", "eval {q}", "printf '%s\\n' {q} | sh", "cat <<'EOF' | bash\n{c}\nEOF",
    ". /dev/stdin <<< {q}", "bash /dev/stdin <<< {q}", "echo \"$(case x in x) {c};; esac)\"",
    "f() {{ ( {c} ); }}; f",
]
ALIAS = "shopt -s expand_aliases\nalias g={word}\ng {args}"


@dataclass
class Line:
    text: str
    denied: bool  # generated from a denied form
    needs_bind: bool = False
    labels: dict[tuple[str, ...], str] = field(default_factory=dict)


def _git_text(word: str, argv: list[str]) -> str:
    return word + "".join(" " + shlex.quote(a) for a in argv)


def _command(rng: random.Random, denied: bool) -> tuple[str, tuple[str, ...]]:
    """One command's shell text and the record it leaves when it runs."""
    roll = rng.random()
    if roll < 0.72:
        form = rng.choice(GIT_DENY if denied else GIT_READ)
        globals_ = [] if form[0].startswith("-") else rng.choice(GIT_GLOBALS)
        word = rng.choice(GIT_WORDS)
        sub_binary = not globals_ and not form[0].startswith("-") and rng.random() < 0.08
        if sub_binary:
            return _git_text(f"/usr/lib/git-core/git-{form[0]}", form[1:]), ("git", *form)
        return _git_text(word, globals_ + form), ("git", *globals_, *form)
    if roll < 0.88:
        form = rng.choice(MADTEA_DENY if denied else MADTEA_READ)
        return rng.choice(MADTEA_LAUNCHERS) + "".join(" " + shlex.quote(a) for a in form), ("madtea", *form)
    program = rng.choice(sorted(OTHER_DENY))
    form = rng.choice((OTHER_DENY if denied else OTHER_READ)[program])
    return program + "".join(" " + shlex.quote(a) for a in form), (program, *form)


def _wrapped(rng: random.Random, text: str, denied: bool) -> str:
    if rng.random() < 0.45:
        wrapper = rng.choice(WRAPPERS)
        if wrapper.startswith("xargs") and not denied:
            wrapper = ""  # xargs appends its input, which the hook cannot see: a read given paths may destroy
        return wrapper + text
    if rng.random() < 0.5:
        return rng.choice(STRING_WRAPPERS).format(q=shlex.quote(text))
    return text


def _constructed(rng: random.Random, text: str) -> str:
    shape = rng.choice(CONSTRUCTS)
    if shape == "bash -c {qq}":  # nested sh -c, to a depth of six
        for _ in range(rng.randint(2, 6)):
            text = rng.choice(["sh", "bash", "dash"]) + " -c " + shlex.quote(text)
        return text
    if ("\nEOF" in shape and "EOF" in text) or ("`" in shape and "`" in text):
        shape = "{c}"
    return shape.format(c=text, q=shlex.quote(text))


def generate(n: int, seed: int) -> list[Line]:
    rng = random.Random(seed)
    lines: list[Line] = []
    while len(lines) < n:
        denied = rng.random() < 0.6
        text, record = _command(rng, denied)
        if rng.random() < 0.06 and record[0] == "git" and text.startswith(("git ", "'git' ")):
            word, _, args = text.partition(" ")
            line_text = ALIAS.format(word=word, args=args)
        else:
            line_text = _constructed(rng, _wrapped(rng, text, denied))
            if rng.random() < 0.15:
                line_text = _constructed(rng, line_text)
        labels = {record: "deny" if denied else "read"}
        lines.append(Line(line_text, denied, any(b in line_text for b in NEEDS_BIND), labels))
    return lines


# The spellings the issues listed as getting through, literally.
REGRESSIONS_DENY = [
    "git reset --har", "git clean --forc", "git restore --staged --work a.py", "git checkout --ours a.py",
    "git checkout --theirs a.py", "git checkout -m a.py", "git checkout --conflict=merge a.py",
    "git restore --ours a.py", "git push --dry-run --no-dry-run", "git clean -n --no-dry-run -f",
    "git checkout @{-1}", "git update-ref --stdin", "git update-ref -d refs/stash", "/usr/lib/git-core/git-commit -m x",
    "time -p git push", "/usr/bin/time -f %e git push", "timeout --signal KILL 10 git push", "sudo -Eu bob git push",
    "doas -u bob git push", "stdbuf -o L git push", "nice --adjustment 5 git push", "ionice --class 3 git push",
    "xargs --max-args 1 git push", "taskset 0x1 git push", "chrt -f 10 git push", "bash -o pipefail -c 'git push'",
    "bash -O extglob -c 'git push'", "busybox sh -c 'git push'", "setsid git push", "flock oracle.lock git push",
    "chronic git push", "unbuffer git push", "strace -f -o /dev/null git push", "script -qc 'git push' /dev/null",
    "su -c 'git push' bob", "runuser -u bob -- git push", "parallel ::: 'git push'", "uv run git push",
    "poetry run git push", "pipenv run git push", "direnv exec . git push", "nix-shell --run 'git push'",
    "git submodule foreach 'git commit -am x'", "a=($(git commit -m x a.py))", "x=${x:-$(git push)}",
    "echo $(( $(git push) ))", "f() ( git push ); f", "bash <(echo 'git push')", "source <(echo 'git push')",
    "shopt -s expand_aliases\nalias g=git\ng push",
    'python3 "$PLUGIN_ROOT/bin/madtea" pr merge 3', "python3 bin/madtea pr merge 3", "uv run madtea pr merge 3",
    "uv tool run madtea pr merge 3", "poetry run madtea pr merge 3", "pipx run madtea pr merge 3",
    "echo yes | script -qec 'madtea update --from X' /dev/null", "unbuffer madtea update", "py madtea.pyz update",
    "$(which madtea) update", "git checkout-index -f -a", "git read-tree -u --reset HEAD",
    "git fetch origin '+refs/heads/*:refs/heads/*'", "git reflog expire --expire=now --all", "git gc --prune=now",
    "git rm -rf .", "git tag -d v1", "git -c http.extraHeader='Authorization: token abc123' fetch", "rm -rf .git",
    "gh pr merge 3", "tea pr merge 3", "gh repo delete o/r --yes",
]


def _nested(text: str, depth: int) -> str:
    for _ in range(depth):
        text = "sh -c " + shlex.quote(text)
    return text


REGRESSIONS_DENY.append(_nested("git push", 5))
REGRESSIONS_READ = [
    "git commit --help", "git push -h", "git add -h", "git rebase --help", "git worktree add --help",
    "git branch -D --help", "git stash drop --help", "git status", "runit git status", "echo git push",
    "grep -r 'git push --force' .", "git log --grep 'git push'", "madtea --version", "gh pr list",
]


def _labelled(text: str, denied: bool) -> Line:
    return Line(text, denied, any(b in text for b in NEEDS_BIND))


# --------------------------------------------------------------------------- the sandbox

_RECORD = f"""#!/bin/bash
printf -v _rec '%s{SEP}' "${{0##*/}}" "$@"
printf '%s{END}' "$_rec" >> "$ORACLE_LOG"
"""
_GIT = _RECORD + """
# git submodule foreach runs its command with sh in each submodule (here: one, in place)
if [ "$1" = submodule ] && [ "$2" = foreach ]; then
  shift 2; while [ "${1#-}" != "$1" ]; do shift; done; sh -c "$*"
fi
"""
_PY_RECORD = f"""import os, sys
with open(os.environ["ORACLE_LOG"], "a") as fh:
    fh.write("{SEP}".join(["madtea"] + sys.argv[1:]) + "{SEP}{END}")
"""
# emulated wrappers, each by its documented syntax: record nothing, run the command
_STUBS = {
    "sudo": 'while getopts ":AbC:D:Eeg:HiKklnPp:r:SsT:t:U:u:Vvh:" o; do :; done; shift $((OPTIND-1))\n'
            'while [[ "$1" == *=* ]]; do export "$1"; shift; done; exec "$@"',
    "doas": 'while getopts ":a:C:Lnsu:" o; do :; done; shift $((OPTIND-1)); exec "$@"',
    "su": 'cmd=; while [ $# -gt 0 ]; do case "$1" in -c|--command) cmd=$2; shift;; -s|-g|-G|-w) shift;; esac; shift; '
          'done; [ -n "$cmd" ] && exec bash -c "$cmd"',
    "runuser": 'cmd=; run=; while [ $# -gt 0 ]; do case "$1" in -c|--command) cmd=$2; shift;; '
               '-u|--user) run=1; shift;; '
               '--) shift; break;; -*) ;; *) [ -n "$run" ] && break;; esac; shift; done\n'
               '[ -n "$cmd" ] && exec bash -c "$cmd"; [ -n "$run" ] && exec "$@"',
    "unbuffer": '[ "$1" = -p ] && shift; exec "$@"',
    "chronic": 'while [ "${1#-}" != "$1" ]; do shift; done; exec "$@"',
    "parallel": 'while [ "$1" != ":::" ] && [ $# -gt 0 ]; do shift; done; shift; for c in "$@"; do bash -c "$c"; done',
    "uv": 'shift; [ "$1" = run ] && shift\nwhile [ "${1#-}" != "$1" ]; do case "$1" in --with|--python|-p|--from|'
          '--directory|--project) shift;; esac; shift; done; exec "$@"',
    "uvx": 'while [ "${1#-}" != "$1" ]; do case "$1" in --with|--from|--python) shift;; esac; shift; done; exec "$@"',
    "poetry": 'shift; exec "$@"',
    "pipenv": 'shift; exec "$@"',
    "pipx": 'shift; exec "$@"',
    "direnv": 'shift; cd "$1" && shift && exec "$@"',
    "nix-shell": 'while [ $# -gt 0 ]; do case "$1" in --run|--command) exec bash -c "$2";; esac; shift; done',
    "busybox": 'exec "$@"',
    "py": 'while [ "${1#-}" != "$1" ]; do shift; done; exec python3 "$@"',
    "runit": 'while [ "${1#-}" != "$1" ]; do shift 2; done; exec "$@"',
}
_GIT_SUBS = sorted({form[0] for form in GIT_DENY + GIT_READ if not form[0].startswith("-")} | {"submodule"})


def _write(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


@pytest.fixture(scope="module")
def box(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    base = Path(os.path.realpath(tmp_path_factory.mktemp("oracle")))
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(base), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": str(base / "gitconfig"), "LC_ALL": "C"}
    (base / "gitconfig").write_text("[user]\n\tname = T\n\temail = t@example.invalid\n[init]\n\tdefaultBranch = main\n")
    repo = base / "repo"
    repo.mkdir()
    for args in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "first"], ["branch", "feat"], ["tag", "v1"],
                 ["update-ref", "refs/remotes/origin/main", "HEAD"], ["worktree", "add", "-q", "-b", "w", "../wt"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)
    (repo / "a.py").write_text("a\n")
    stubs, core = base / "stubs", base / "core"
    stubs.mkdir()
    core.mkdir()
    for name in ("git", "madtea", "gh", "tea", "rm"):
        _write(stubs / name, _GIT if name == "git" else _RECORD)
    for name, body in _STUBS.items():
        _write(stubs / name, "#!/bin/bash\n" + body + "\n")
    _write(core / "git", _GIT)
    for sub in _GIT_SUBS:
        _write(core / f"git-{sub}", _RECORD.replace('"${0##*/}"', f'"git" "{sub}"'))
    for where in (repo / "bin", base / "plugin" / "bin"):
        where.mkdir(parents=True)
        _write(where / "madtea", "#!/usr/bin/env python3\n" + _PY_RECORD)
    (repo / "madtea.py").write_text(_PY_RECORD)
    for name in ("madtea.pyz", "madtea-1.2.3.pyz"):
        with zipfile.ZipFile(repo / name, "w") as zf:
            zf.writestr("__main__.py", _PY_RECORD)
    bind = subprocess.run(["unshare", "-rm", "true"], capture_output=True, check=False).returncode == 0 \
        if shutil.which("unshare") else False
    run_env = {"PATH": f"{stubs}:{env['PATH']}", "HOME": str(base), "LC_ALL": "C", "PLUGIN_ROOT": str(base / "plugin"),
               "PYTHONDONTWRITEBYTECODE": "1"}
    return {"base": base, "repo": str(repo), "stubs": stubs, "core": core, "bind": bind, "env": run_env}


_DRIVER = r"""
i=0
while IFS= read -r -d '' line; do
  export ORACLE_LOG="$LOGS/$i"; : > "$ORACLE_LOG"
  (cd "$REPO" && timeout 10 bash -c "$line" </dev/null >/dev/null 2>&1)
  i=$((i+1))
done < "$LINES"
"""


def run_lines(box: dict[str, object], lines: list[Line]) -> list[list[tuple[str, ...]]]:
    """Run each line with bash in the sandbox; what each one ran, as argv records."""
    base = Path(str(box["base"]))
    work = base / f"run{len(list(base.glob('run*')))}"
    logs = work / "logs"
    logs.mkdir(parents=True)
    (work / "lines").write_bytes(b"".join(line.text.encode() + b"\0" for line in lines))
    (work / "driver.sh").write_text(_DRIVER)
    env = dict(box["env"], LOGS=str(logs), LINES=str(work / "lines"), REPO=str(box["repo"]))  # type: ignore[arg-type]
    if box["bind"]:
        # a login shell (bash -l) resets PATH: the recorders are bound over the real git and rm as well
        rm = os.path.realpath(shutil.which("rm") or "/bin/rm")
        inner = (f"mount --bind {box['core']}/git /usr/bin/git && mount --bind {box['core']} /usr/lib/git-core "
                 f"&& mount --bind {box['stubs']}/rm {rm} && exec bash {work / 'driver.sh'}")
        cmd = ["unshare", "-rm", "bash", "-c", inner]
    else:
        cmd = ["bash", str(work / "driver.sh")]
    subprocess.run(cmd, env=env, check=True, timeout=900, capture_output=True)
    runs: list[list[tuple[str, ...]]] = []
    for i in range(len(lines)):
        data = (logs / str(i)).read_text(errors="replace")
        runs.append([tuple(rec.split(SEP)[:-1]) for rec in data.split(END) if rec])
    return runs


def _label(record: tuple[str, ...], labels: dict[tuple[str, ...], str]) -> str:
    if record[:3] == ("git", "submodule", "foreach"):
        return "wrapper"
    if record and record[0] in ("madtea.pyz", "madtea-1.2.3.pyz"):
        record = ("madtea", *record[1:])
    return labels.get(record, "unknown")


def judge(box: dict[str, object], lines: list[Line], extra: dict[tuple[str, ...], str] | None = None
          ) -> dict[str, list[str]]:
    """Run *lines* and compare the hook with what ran: bypasses, false denials, lines that ran nothing."""
    lines = [line for line in lines if box["bind"] or not line.needs_bind]
    labels: dict[tuple[str, ...], str] = dict(extra or {})
    for line in lines:
        labels.update(line.labels)
    for argv in GIT_DENY:
        labels.setdefault(("git", *argv), "deny")
    for argv in GIT_READ:
        labels.setdefault(("git", *argv), "read")
    for argv in MADTEA_DENY:
        labels.setdefault(("madtea", *argv), "deny")
    for argv in MADTEA_READ:
        labels.setdefault(("madtea", *argv), "read")
    for program, forms in OTHER_DENY.items():
        for argv in forms:
            labels.setdefault((program, *argv), "deny")
    for program, forms in OTHER_READ.items():
        for argv in forms:
            labels.setdefault((program, *argv), "read")
    runs = run_lines(box, lines)
    out: dict[str, list[str]] = {"bypass": [], "false_denial": [], "inert": [], "unknown": [], "run": []}
    for line, records in zip(lines, runs):
        kinds = [_label(r, labels) for r in records]
        if "unknown" in kinds:
            out["unknown"].append(f"{line.text!r} ran {records}")
            continue
        verdict = classify(line.text, str(box["repo"]))
        if "deny" in kinds:
            out["run"].append(line.text)
            if verdict.kind != "deny":
                out["bypass"].append(f"{line.text!r} ran {records}")
        elif line.denied:
            out["inert"].append(f"{line.text!r} ran {records}")
        else:
            out["run"].append(line.text)
            if verdict.kind == "deny":
                out["false_denial"].append(f"{line.text!r}: {verdict.text.splitlines()[0]}")
    return out


def _report(name: str, generated: int, found: dict[str, list[str]]) -> str:
    return (f"{name}: {generated} lines generated, {len(found['run'])} ran as generated, "
            f"{len(found['inert'])} ran nothing, {len(found['bypass'])} bypasses, "
            f"{len(found['false_denial'])} false denials, {len(found['unknown'])} unlabelled runs")


# --------------------------------------------------------------------------- the lanes

def test_regressions_listed_in_the_issues(box: dict[str, object]) -> None:
    lines = [_labelled(t, True) for t in REGRESSIONS_DENY] + [_labelled(t, False) for t in REGRESSIONS_READ]
    extra = {("git", "commit", "-m", "x"): "deny", ("git", "commit", "-m", "x", "a.py"): "deny",
             ("git", "commit", "-am", "x"): "deny", ("git", "push"): "deny",
             ("git", "update-ref", "-d", "refs/stash"): "deny",
             ("madtea", "pr", "merge", "3"): "deny", ("madtea", "update", "--from", "X"): "deny",
             ("madtea", "update"): "deny", ("git", "fetch", "origin", "+refs/heads/*:refs/heads/*"): "deny",
             ("git", "log", "--grep", "git push"): "read", ("git", "-c", "http.extraHeader=Authorization: token abc123",
                                                           "fetch"): "deny", ("git", "status"): "read"}
    found = judge(box, lines, extra)
    print(_report("regressions", len(lines), found))
    assert not found["unknown"], found["unknown"]
    assert not found["bypass"], "\n".join(found["bypass"])
    assert not found["false_denial"], "\n".join(found["false_denial"])
    assert len(found["inert"]) <= 3, found["inert"]


def test_generated_lines_agree_with_bash(box: dict[str, object]) -> None:
    lines = generate(LINES, SEED)
    found = judge(box, lines)
    print(_report(f"generated (seed {SEED})", len(lines), found))
    assert not found["unknown"], "\n".join(found["unknown"][:20])
    assert not found["bypass"], f"{len(found['bypass'])} bypasses:\n" + "\n".join(found["bypass"][:40])
    assert not found["false_denial"], f"{len(found['false_denial'])} false denials:\n" + \
        "\n".join(found["false_denial"][:40])
    assert len(found["run"]) >= 0.8 * len(lines), f"too few lines ran: {found['inert'][:20]}"


def test_installed_hook_agrees_on_a_sample(box: dict[str, object]) -> None:
    """The same verdicts through bin/madtea hook with a real event on stdin: exit 2 exactly when denied."""
    rng = random.Random(SEED + 1)
    lines = rng.sample(generate(400, SEED + 2), 30) + [_labelled(t, True) for t in REGRESSIONS_DENY[:10]]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for line in lines:
        event = {"session_id": "s", "transcript_path": "/dev/null", "cwd": box["repo"], "permission_mode": "default",
                 "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": "t",
                 "tool_input": {"command": line.text}}
        proc = subprocess.run([sys.executable, str(ROOT / "bin" / "madtea"), "hook"], input=json.dumps(event).encode(),
                              capture_output=True, env=env, cwd=str(box["repo"]), timeout=60, check=False)
        expected = classify(line.text, str(box["repo"]))
        assert proc.returncode == (2 if expected.kind == "deny" else 0), (line.text, proc.stderr.decode())
        assert b"Traceback" not in proc.stderr


def test_spellings_mean_what_their_labels_say(tmp_path: Path) -> None:
    """git itself takes every option spelling the grammar uses (no 'unknown', no 'ambiguous' option)."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": str(tmp_path / "gitconfig"), "LC_ALL": "C", "GIT_EDITOR": "true",
           "GIT_SEQUENCE_EDITOR": "true"}
    (tmp_path / "gitconfig").write_text("[user]\n\tname = T\n\temail = t@example.invalid\n")
    bad = []
    for argv in GIT_DENY + GIT_READ:
        if any(a in ("--help",) for a in argv) or argv[:1] == ["help"] or "http" in " ".join(argv):
            continue
        repo = tmp_path / f"r{len(bad)}-{abs(hash(tuple(argv)))}"
        subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], env=env, check=True)
        for setup in (["commit", "-q", "--allow-empty", "-m", "a"], ["branch", "feat"], ["tag", "v1"],
                      ["remote", "add", "origin", str(repo)]):
            subprocess.run(["git", *setup], cwd=repo, env=env, check=True, capture_output=True)
        (repo / "a.py").write_text("a\n")
        proc = subprocess.run(["git", *argv], cwd=repo, env=env, capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL, check=False)
        if "-h" in argv or any(a.startswith("-") and "h" in a[1:] and not a.startswith("--") for a in argv):
            if proc.returncode != 129:
                bad.append(f"git {' '.join(argv)}: help not shown ({proc.returncode})")
            continue
        if "ambiguous option" in proc.stderr or "unknown option" in proc.stderr or "unknown switch" in proc.stderr:
            bad.append(f"git {' '.join(argv)}: {proc.stderr.strip()[:120]}")
    assert not bad, "\n".join(bad)


_HELP_OPTION = re.compile(r"^(?:-([A-Za-z0-9])(?:, )?)?(?:--(?:\[no-\])?([a-z0-9][a-z0-9-]*))?(.*)$")


def _git_help_table(key: str, repo: Path) -> dict[str, str]:
    """git's own option list for ``git <key> -h``, in the hook table's notation, by option."""
    proc = subprocess.run(["git", *key.split(), "-h"], capture_output=True, text=True, check=False, cwd=repo)
    found: dict[str, str] = {}
    for line in (proc.stdout + proc.stderr).splitlines():
        if not line.startswith("    -"):
            continue
        spec = line[4:].split("  ")[0].rstrip()
        short, long, rest = _HELP_OPTION.match(spec).groups()  # type: ignore[union-attr]
        if not (short or long):
            continue
        one_bracket = rest.startswith(" [") and rest.endswith("]") and rest.count("[") == 1
        kind = "" if not rest else "?" if rest.startswith("[") or one_bracket else "="
        found[long or short] = (short or "") + ("|" if short and long else "") + (long or "") + kind
    return found


@pytest.mark.parametrize("key", sorted(guard._HOOK_GIT_OPTIONS))
def test_option_table_is_gits_own(key: str, tmp_path: Path) -> None:
    """The hook reads options from git's table: every option both know has the same short letter and
    value kind; on the git the table was taken from, the two are the same."""
    ours = {entry.rstrip("=?").rpartition("|")[2]: entry for entry in guard._HOOK_GIT_OPTIONS[key].split()}
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    theirs = _git_help_table(key, tmp_path)
    assert theirs, f"git {key} -h listed no options"
    differ = {name: (ours[name], spelling) for name, spelling in theirs.items()
              if name in ours and ours[name] != spelling}
    assert not differ, differ
    version = subprocess.run(["git", "--version"], capture_output=True, text=True, check=False).stdout
    if version.startswith("git version 2.39."):
        assert set(ours) == set(theirs), (set(ours) ^ set(theirs))
