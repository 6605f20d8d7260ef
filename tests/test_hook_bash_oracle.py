"""A second shell oracle, written apart from the hook: bash and a recording git decide what a line does.

The lines come from bash's grammar (bash(1): quoting, expansions, compound commands,
redirections, here-documents, builtins such as eval, exec, hash, trap, coproc) and git's
documentation (git(1)'s options and environment, the git-config keys and variables whose
value git runs as a command, git-remote-ext), never from the hook's own tables. Each line is
run by bash in a private mount namespace whose ``git`` (``/usr/bin/git`` and every program
in ``/usr/lib/git-core``) is a recorder: it reads its argv as git(1) says git does (argv[0]
``git-<cmd>``, global options, ``-c``, ``--config-env``, ``GIT_CONFIG_COUNT``/``KEY_n``/
``VALUE_n``, ``GIT_CONFIG_PARAMETERS``, aliases, shell aliases), records the command git
would run, does nothing to any repository, and runs what git itself would run for that
command: an editor, an external diff, an ssh command, an ``ext::`` transport, an upload or
receive pack command. What it recorded decides the truth: a line that made git do one of
DESIGN §7's denied acts is dangerous, any other line is a read. The hook must deny every
dangerous line and let at least 99 % of the reads through.

    MADTEA_BASH_ORACLE_SEED=S moves the corpus; the full corpus runs in the slow lane, a sample
    of every template runs in the fast one.
"""
from __future__ import annotations

import json
import os
import random
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from helpers import classify

SEED = int(os.environ.get("MADTEA_BASH_ORACLE_SEED", "32"))
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable


def _can_bind() -> bool:
    if sys.platform != "linux" or not shutil.which("unshare") or not shutil.which("bash"):
        return False
    return subprocess.run(["unshare", "-rm", "true"], capture_output=True, check=False).returncode == 0


CC = shutil.which("cc") or shutil.which("gcc")
pytestmark = pytest.mark.skipif(not _can_bind() or CC is None,
                                reason="the oracle binds a recording git (a C program) in a private mount namespace")

# --------------------------------------------------------------------------- the acts (git's argv after "git")

# DESIGN §7's table: what the hook must hold back, and reads it must let run.
DANGER = [["push"], ["push", "origin", "feat"], ["push", "--force"], ["reset", "--hard"], ["stash", "drop"],
          ["stash", "clear"], ["branch", "-D", "feat"], ["branch", "-m", "feat", "f2"], ["checkout", "--", "a.py"],
          ["checkout", "feat"], ["checkout", "-b", "topic"], ["checkout", "--orphan", "o"], ["restore", "a.py"],
          ["add", "a.py"], ["stage", "a.py"], ["commit", "-m", "x", "a.py"], ["switch", "feat"], ["rebase", "main"],
          ["clean", "-fd"], ["pull"], ["tag", "-d", "v1"], ["worktree", "remove", "../wt"], ["gc", "--prune=now"]]
READ = [["status"], ["log", "-1"], ["diff", "--stat"], ["show", "HEAD"], ["branch"], ["rev-parse", "HEAD"],
        ["stash", "list"], ["remote", "-v"], ["ls-files"], ["tag", "-l"], ["describe", "--always"], ["blame", "a.py"],
        ["config", "--get", "user.name"], ["push", "--dry-run"], ["clean", "-n"], ["restore", "--staged", "a.py"],
        ["reset", "--soft", "HEAD"], ["checkout", "-h"]]


def denied_act(sub: str | None, args: list[str]) -> bool:
    """DESIGN §7's deny table, read from the document: does git doing *sub args* fall under it?"""
    if sub is None or any(a in ("-h", "--help") for a in args[:args.index("--") if "--" in args else None]):
        return False
    shorts = "".join(a[1:] for a in args if a.startswith("-") and not a.startswith("--"))
    longs = [a.split("=", 1)[0] for a in args if a.startswith("--")]
    pos = [a for a in args if not a.startswith("-")]
    dry = "n" in shorts and sub in ("add", "push", "clean") or "--dry-run" in longs
    if sub in ("add", "stage", "commit", "push", "pull", "switch"):
        return not dry
    if sub == "rebase":
        return not {"--continue", "--abort", "--skip", "--quit", "--edit-todo", "--show-current-patch"} & set(longs)
    if sub == "checkout":
        return bool(pos) or "--" in args or bool({"b", "B"} & set(shorts)) or "--orphan" in longs
    if sub == "branch":
        listing = bool({"l", "a", "r", "v"} & set(shorts)) or bool({"--list", "--all", "--show-current"} & set(longs))
        return bool(set("dDmMcC") & set(shorts)) or bool({"--delete", "--move", "--copy"} & set(longs)) or \
            bool(pos) and not listing
    if sub == "reset":
        return "--hard" in longs
    if sub == "clean":
        return ("f" in shorts or "--force" in longs) and not dry
    if sub == "restore":
        return not (("S" in shorts or "--staged" in longs) and not ("W" in shorts or "--worktree" in longs))
    if sub == "stash":
        return bool(pos) and pos[0] in ("drop", "clear")
    if sub == "worktree":
        return bool(pos) and pos[0] in ("add", "remove", "prune")
    if sub == "tag":
        return "d" in shorts or "--delete" in longs
    if sub == "gc":
        return any(a in ("--prune=now", "--prune=all") for a in args)
    return False


# --------------------------------------------------------------------------- the recording git

# git(1) and git-config(1), as a program: it never touches a repository; it records the command
# git would run and runs what git itself runs for it.
_RECORDER = r'''
import os, shlex, subprocess, sys, json
LOG = @LOG@
BUILTINS = set(@BUILTINS@)
env = os.environ
def record(**what):
    with open(LOG, "a") as fh:
        fh.write(json.dumps(what) + "\n")
def shell(cmd, *args):  # how git runs a configured command: through sh, with "$@" after it
    subprocess.run(["sh", "-c", cmd + ' "$@"', cmd, *args], stdin=subprocess.DEVNULL)
argv0 = os.path.basename(env.pop("ORACLE_ARGV0", sys.argv[0]))
args = sys.argv[1:]
config = []
for item in shlex.split(env.get("GIT_CONFIG_PARAMETERS", "")):
    key, _, value = item.partition("=")
    config.append((key.lower(), value))
for i in range(int(env.get("GIT_CONFIG_COUNT", "0") or 0)):
    config.append((env.get("GIT_CONFIG_KEY_%d" % i, "").lower(), env.get("GIT_CONFIG_VALUE_%d" % i, "")))
if argv0.startswith("git-"):
    args = [argv0[4:]] + args
else:
    while args and args[0].startswith("-"):
        opt = args.pop(0)
        name, eq, value = opt.partition("=")
        if name in ("-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix",
                    "--attr-source") and not eq:
            value = args.pop(0) if args else ""
        if name == "-c":
            key, _, val = value.partition("=")
            config.append((key.lower(), val))
        elif name == "--config-env":
            key, _, var = value.rpartition("=")
            config.append((key.lower(), env.get(var, "")))
        elif name in ("-h", "--help", "--version", "-v", "--exec-path", "--html-path", "--man-path", "--info-path",
                      "--list-cmds") and not (name == "--exec-path" and eq):
            record(sub=None, args=[opt] + args)
            sys.exit(0)
def get(key, default=None):
    found = [v for k, v in config if k == key]
    return found[-1] if found else default
seen = set()
while args and args[0] not in BUILTINS and get("alias." + args[0].lower()) is not None and args[0] not in seen:
    seen.add(args[0])
    value = get("alias." + args[0].lower())
    if value.startswith("!"):
        record(sub="!alias", args=args)
        if len(args) > 1:
            shell(value[1:], *args[1:])
        else:
            subprocess.run(["sh", "-c", value[1:]], stdin=subprocess.DEVNULL)
        sys.exit(0)
    args = shlex.split(value) + args[1:]
sub, rest = (args[0], args[1:]) if args else (None, [])
record(sub=sub, args=rest, argv0=argv0)
if sub is None or any(a in ("-h", "--help") for a in rest):
    sys.exit(0)
opts = [a for a in rest if a.startswith("-")]
pos = [a for a in rest if not a.startswith("-")]
def editor(sequence=False):
    found = (env.get("GIT_SEQUENCE_EDITOR") or get("sequence.editor")) if sequence else None
    term = env.get("TERM")
    return found or env.get("GIT_EDITOR") or get("core.editor") or \
        (env.get("VISUAL") if term and term != "dumb" else None) or env.get("EDITOR")
def message_given():
    short = "".join(a[1:] for a in opts if not a.startswith("--"))
    return any(c in short for c in "mFC") or any(a.split("=")[0] in ("--message", "--file", "--reuse-message",
                                                                      "--no-edit", "--fixup") for a in opts)
run_editor = (sub == "commit" and not message_given() and "--dry-run" not in opts) or \
    (sub == "tag" and any(a in ("-a", "-s", "--annotate", "--sign") for a in opts) and not message_given()) or \
    (sub == "merge" and ("-e" in opts or "--edit" in opts))
if run_editor and editor():
    shell(editor(), ".git/COMMIT_EDITMSG")
if sub == "rebase" and ("-i" in opts or "--interactive" in opts) and editor(True):
    shell(editor(True), ".git/rebase-merge/git-rebase-todo")
if sub == "diff" and "--no-ext-diff" not in opts and "--stat" not in opts:
    external = env.get("GIT_EXTERNAL_DIFF") or get("diff.external")
    if external:
        shell(external, "a.py", "/tmp/old", "0" * 40, "100644", "a.py", "0" * 40, "100644")
if sub in ("fetch", "pull", "push", "ls-remote", "clone", "archive"):
    urls = pos[:1]
    for i, a in enumerate(rest):
        if a.startswith("--remote="):
            urls = [a.split("=", 1)[1]]
    for url in urls:
        proto = url.split("::", 1)[0] if "::" in url else url.split("://", 1)[0] if "://" in url else \
            ("ssh" if ":" in url.split("/", 1)[0] else "file")
        allow = get("protocol.%s.allow" % proto) or get("protocol.allow") or \
            ("always" if proto in env.get("GIT_ALLOW_PROTOCOL", "").split(":") else None)
        if proto == "ext" and allow == "always":
            words, word, i, text = [], "", 0, url[5:]
            while i < len(text):
                if text[i] == "%" and i + 1 < len(text):
                    word += {" ": " ", "%": "%", "s": "git-upload-pack", "S": "upload-pack"}.get(text[i + 1], "")
                    i += 2
                    continue
                if text[i] == " ":
                    words.append(word); word = ""
                else:
                    word += text[i]
                i += 1
            words.append(word)
            subprocess.run(words, stdin=subprocess.DEVNULL)
        elif proto == "ssh":
            ssh = env.get("GIT_SSH_COMMAND") or get("core.sshcommand")
            if ssh:
                shell(ssh, "h.example", "git-upload-pack 'r'")
            elif env.get("GIT_SSH"):
                subprocess.run([env["GIT_SSH"], "h.example", "git-upload-pack 'r'"], stdin=subprocess.DEVNULL)
        elif proto == "file":
            names = ("--receive-pack", "--exec") if sub == "push" else ("--upload-pack", "-u") if sub == "clone" \
                else ("--upload-pack",)
            for i, a in enumerate(rest):
                name, eq, value = a.partition("=")
                if name in names:
                    shell(value if eq else (rest[i + 1] if i + 1 < len(rest) else ""), url)
'''

# The program bound over git: a script's interpreter never sees the argv[0] it was run under, so a small
# C program hands it on (``exec -a git-stash git drop`` must reach the recorder as git-stash).
_WRAPPER = r"""
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char **argv) {
    char **args = calloc(argc + 3, sizeof(char *));
    setenv("ORACLE_ARGV0", argv[0], 1);
    args[0] = PYTHON; args[1] = "-S"; args[2] = RECORDER;
    for (int i = 1; i < argc; i++) args[i + 2] = argv[i];
    execv(PYTHON, args);
    return 127;
}
"""

_DRIVER = r"""
i=0
while IFS= read -r -d '' line; do
  rm -rf "$SCRATCH"; cp -r "$TEMPLATE" "$SCRATCH"; : > "$LOG"
  (cd "$SCRATCH" && timeout 10 bash -c "$line" </dev/null >/dev/null 2>&1)
  mv "$LOG" "$LOGS/$i"
  i=$((i+1))
done < "$LINES"
"""


def _write(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = Path(os.path.realpath(tmp_path_factory.mktemp("bash-oracle")))
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(base), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": str(base / "gitconfig"), "LC_ALL": "C"}
    (base / "gitconfig").write_text("[user]\n\tname = T\n\temail = t@example.invalid\n[init]\n\tdefaultBranch = main\n")
    repo = base / "repo"  # where the hook judges: a real repository, as the agent's shell would be in
    repo.mkdir()
    for args in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "first"], ["branch", "feat"], ["tag", "v1"],
                 ["worktree", "add", "-q", "-b", "w", "../wt"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)
    (repo / "a.py").write_text("a\n")
    template = base / "template"  # where bash runs a line: a fresh copy each time (the recorder changes nothing)
    template.mkdir()
    (template / "a.py").write_text("a\n")
    (template / "Makefile").write_text("all:\n\t@true\n")
    builtins = subprocess.run(["git", "--list-cmds=builtins"], capture_output=True, text=True,
                              check=True).stdout.split()
    core = base / "core"
    core.mkdir()
    log = base / "current.log"
    (base / "recorder.py").write_text(_RECORDER.replace("@LOG@", repr(str(log))).replace(
        "@BUILTINS@", repr(sorted(builtins))))
    (base / "wrapper.c").write_text(_WRAPPER)
    subprocess.run([CC, "-O", "-o", str(core / "git"), f"-DPYTHON={json.dumps(PYTHON)}",
                    f"-DRECORDER={json.dumps(str(base / 'recorder.py'))}", str(base / "wrapper.c")], check=True)
    for name in builtins:
        os.symlink("git", core / f"git-{name}")
    return {"base": base, "repo": repo, "template": template, "core": core, "log": log}


def run_lines(oracle: dict[str, Path], lines: list[str]) -> list[list[dict[str, object]]]:
    """Run each line with bash, git being the recorder; what git was asked to do, per line."""
    base = oracle["base"]
    work = base / f"run{len(list(base.glob('run*')))}"
    logs = work / "logs"
    logs.mkdir(parents=True)
    (work / "lines").write_bytes(b"".join(line.encode() + b"\0" for line in lines))
    (work / "driver.sh").write_text(_DRIVER)
    env = {"PATH": f"/usr/bin:/bin:{os.environ.get('PATH', '')}", "HOME": str(base), "LC_ALL": "C",
           "LOGS": str(logs), "LINES": str(work / "lines"), "LOG": str(oracle["log"]),
           "TEMPLATE": str(oracle["template"]), "SCRATCH": str(work / "scratch")}
    inner = (f"mount --bind {oracle['core']}/git /usr/bin/git && mount --bind {oracle['core']} /usr/lib/git-core "
             f"&& exec bash {work / 'driver.sh'}")
    subprocess.run(["unshare", "-rm", "bash", "-c", inner], env=env, check=True, timeout=1800, capture_output=True)
    return [[json.loads(r) for r in (logs / str(i)).read_text().splitlines() if r] for i in range(len(lines))]


# --------------------------------------------------------------------------- the grammar

def _have(tool: str) -> bool:
    return shutil.which(tool, path="/usr/bin:/bin") is not None


# Each template: the shell text around one git act. {c} the act as a command ("git push origin feat"),
# {a} its argv after git, {sub} and {rest} its subcommand and the rest, {commas} its argv joined by
# commas (for braces), {py} the argv as a Python list, {js} the argv after git as a JavaScript array,
# {pct} the command escaped for git-remote-ext.
CLASSES: dict[str, list[str]] = {
    # an interpreter running a string it was handed
    "interpreter": [
        "python3 -c 'import os; os.system(\"{c}\")'", "python3 -c 'import subprocess; subprocess.run({py})'",
        "python3 -c 'import subprocess; subprocess.call(\"{c}\", shell=True)'",
        "python3 -c 'import os; os.popen(\"{c}\").read()'", "python3 - <<'PY'\nimport os\nos.system('{c}')\nPY",
        "python3 -c 'import os; os.execvp(\"git\", {py})'", "perl -e 'system(\"{c}\")'", "perl -e 'qx({c})'",
        "perl -e 'exec \"{c}\"'", "node -e 'require(\"child_process\").execSync(\"{c}\")'",
        "node -e 'require(\"child_process\").spawnSync(\"git\", {js})'", "awk 'BEGIN{{system(\"{c}\")}}'",
        "awk 'BEGIN {{ print \"{c}\" | \"sh\" }}'", "echo x | awk '{{ system(\"{c}\") }}'", "sed -n '1e {c}' a.py",
        "echo x | sed 's/.*/{c}/e'", "vim -es -c '!{c}' -c 'qa!'", "make -f - <<'MK'\nall:\n\t{c}\nMK",
        "make -s -f /dev/stdin <<< $'all:\\n\\t{c}'", "tclsh <<< 'exec {c}'",
        "echo 'import os; os.system(\"{c}\")' | python3", "awk 'BEGIN {{ \"{c}\" | getline x }}'",
        "python3 -c 'import subprocess; subprocess.check_call(\"{c}\".split())'",
    ],
    # a shell reading its commands from stdin or a file descriptor
    "shell-stdin": [
        "(bash) <<< '{c}'", "{{ sh; }} <<'EOF'\n{c}\nEOF", "bash /dev/fd/0 <<< '{c}'",
        "echo '{c}' | tee /dev/null | sh", "printf '%s\\n' '{c}' > >(bash); wait $!", "bash -s <<< '{c}'",
        "sh < <(echo '{c}')", "cat <<'EOF' | (sh)\n{c}\nEOF", "echo '{c}' | bash -s -- x", "bash 0<<<'{c}'",
        "dash /dev/stdin <<'EOF'\n{c}\nEOF", "echo '{c}' > >(sh); wait $!", "echo '{c}' | {{ bash; }}",
        "echo '{c}' | env bash", "exec 3<<<'{c}'; bash /dev/fd/3", "bash <<< \"$(echo '{c}')\"",
        "echo '{c}' | cat | cat | sh", "x='{c}'; bash <<< \"$x\"",
    ],
    # git running a command the line hands it (git-config(1), git(1) ENVIRONMENT, git-remote-ext(1))
    "git-runs-a-command": [
        "git -c diff.external='{c} #' diff", "GIT_EXTERNAL_DIFF='{c} #' git diff",
        "git -c core.editor='{c} #' tag -a v2", "GIT_EDITOR='{c} #' git tag -a v2", "EDITOR='{c} #' git tag -a v2",
        "GIT_EDITOR='{c} #' git merge -e feat", "GIT_SSH_COMMAND='{c} #' git ls-remote ssh://h.example/r",
        "git -c core.sshCommand='{c} #' fetch h.example:r", "GIT_SSH_COMMAND='{c} #' git clone ssh://h.example/r x",
        "git -c protocol.ext.allow=always ls-remote 'ext::sh -c {pct}'",
        "git -c protocol.allow=always fetch 'ext::sh -c {pct}'", "git ls-remote --upload-pack='{c} #' .",
        "git fetch --upload-pack='{c} #' .", "git clone -u '{c} #' . x", "git -c alias.x='!{c}' x",
        "git -c alias.x='!f() {{ {c}; }}; f' x", "export GIT_EXTERNAL_DIFF='{c} #'; git diff",
        "git -c diff.external='sh -c \"{c}\" #' diff",
    ],
    # bash's brace expansion (bash(1) "Brace Expansion")
    "brace-expansion": [
        "git {{{commas}}}", "{{git,{commas}}}", "git {sub} {{{restcommas},}}", "eval git {{{commas}}}",
        "git {{{sub},}} {rest}", "{{git,}} {a}", "x=({{git,{commas}}}); \"${{x[@]}}\"",
    ],
    # the program name git is run under (git(1): git-<command>)
    "argv0": [
        "(exec -a git-{sub} git {rest})", "bash -c 'exec -a git-{sub} git \"$@\"' _ {rest}",
        "hash -p /usr/bin/git x; x {a}", "/usr/lib/git-core/git-{sub} {rest}",
        "ln -sf /usr/bin/git ./git-{sub} && ./git-{sub} {rest}", "(exec -a git-{sub} /usr/bin/git {rest})",
        "x() {{ exec -a git-{sub} git \"$@\"; }}; (x {rest})", "hash -p /usr/lib/git-core/git-{sub} y; y {rest}",
    ],
    # aliases and config given in the environment or on git's command line (git(1) ENVIRONMENT, --config-env)
    "config-from-the-line": [
        "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.w GIT_CONFIG_VALUE_0='{a}' git w",
        "export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.w GIT_CONFIG_VALUE_0='{a}'; git w",
        "GIT_CONFIG_PARAMETERS=\"'alias.w'='{a}'\" git w", "W='{a}' git --config-env=alias.w=W w",
        "export W='{a}'; git --config-env alias.w=W w", "git -c alias.a=b -c alias.b='{a}' a",
        "git -c alias.w='{a}' w",
        "GIT_CONFIG_COUNT=2 GIT_CONFIG_KEY_0=alias.v GIT_CONFIG_VALUE_0=w GIT_CONFIG_KEY_1=alias.w "
        "GIT_CONFIG_VALUE_1='{a}' git v",
        "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.w GIT_CONFIG_VALUE_0='!{c}' git w",
        "env GIT_CONFIG_PARAMETERS=\"'alias.w'='{a}'\" git w",
    ],
    # nesting deeper than a reader may follow
    "depth": [
        "eval " * 26 + "{c}", "echo " + "$(" * 30 + "{c}" + ")" * 30, "eval " * 40 + "{c}",
        "( " * 70 + "{c}" + " )" * 70, "x=" + "$(echo " * 12 + "$({c})" + ")" * 12,
    ],
    # classes the hook's issue did not list
    "prefix-builtins": [
        "command {c}", "builtin command {c}", "command -p {c}", "exec {c}", "time {c}", "time -p {c}",
        "nohup {c} >/dev/null 2>&1", "timeout 5 {c}", "timeout -s KILL 5 {c}", "nice -n 1 {c}", "stdbuf -oL {c}",
        "setsid -w {c}", "flock /tmp/oracle.lock {c}", "flock /tmp/oracle.lock -c '{c}'",
        "script -qc '{c}' /dev/null", "script -q -c '{c}' /dev/null", "sh -c '{c}' & wait",
    ],
    "traps-coprocs-functions": [
        "trap '{c}' EXIT", "trap '{c}' EXIT; true", "coproc {c}; wait", "coproc W {{ {c}; }}; wait",
        "f() {{ {c}; }}; f", "f() {{ git \"$@\"; }}; f {a}", "g() {{ \"$@\"; }}; g {c}",
        "function h {{ {c}; }}; h", "f() ( {c} ); f", "f() {{ eval \"$1\"; }}; f '{c}'",
    ],
    "expansions-in-words": [
        "git $(echo {sub}) {rest}", "$(echo git) {a}", "git {a} $(true)", "`echo git` {a}", "git {a} $((0))x",
        "x=git; $x {a}", "set -- {a}; git \"$@\"", "a=({a}); git \"${{a[@]}}\"", "git ${{X:-{sub}}} {rest}",
        "IFS=,; x='git,{commas}'; $x", "read -r x <<< '{c}'; $x", "printf -v x '{c}'; $x", "declare x='{c}'; $x",
        "while read -r c; do $c; done <<< '{c}'", "IFS= read -r line <<< '{c}'; eval \"$line\"",
    ],
    "compound-and-case": [
        "case x in (x) {c};; esac", "case x in y|x) {c};; esac", "case x in *) {c};; esac",
        "if {c}; then :; fi", "while ! {c}; do break; done", "until {c}; do break; done", "! {c}", "{c} || true",
        "true && {c}", "x=$({c})", "[ -n \"$({c})\" ]", "for i in 1; do {c}; done",
        "select x in a; do {c}; break; done <<< 1",
        "[[ $({c}) ]]",
    ],
    "wrappers-that-run-strings": [
        "env -iS '{c}'", "env -S '{c}'", "env -u X -S'{c}'", "echo {rest} | xargs git {sub}", "echo {a} | xargs git",
        "printf '%s\\n' {sub} | xargs -I@ git @ {rest}", "find . -maxdepth 0 -exec {c} \\;",
        "find a.py -execdir {c} \\;", "git -C . {a}", "git --git-dir=.git {a}", "git --no-pager {a}",
        "git -c color.ui=never {a}", "xargs -a <(echo {rest}) git {sub}",
    ],
    "scripts-written-on-the-line": [
        "echo '{c}' > s.sh; bash s.sh", "printf '%s\\n' '{c}' > s.sh && . ./s.sh",
        "cat > s.sh <<'EOF'\n{c}\nEOF\nsh s.sh",
        "echo '{c}' > s.sh; chmod +x s.sh; ./s.sh", "echo '{c}' >> s.sh; source s.sh",
        "tee s.sh <<< '{c}' >/dev/null; bash s.sh",
    ],
}

# Lines that only read or print text naming git, per class: bash runs them and git does nothing it denies.
HARMLESS: dict[str, list[str]] = {
    "interpreter": [
        "python3 -c 'print(1)'", "python3 -c 'print(\"git push\")'", "perl -ne 'print if /git push/' a.py",
        "python3 -c 'import subprocess; subprocess.run([\"git\", \"status\"])'", "awk '/git/ {{print}}' a.py",
        "sed 's/git push/x/' a.py", "sed -n '/git/p' a.py", "node -e 'console.log(\"git push\")'", "grep git a.py",
        "grep -r 'git push' .", "echo \"git push\"", "printf 'git reset --hard\\n'", "perl -e 'print \"git push\\n\"'",
        "awk 'BEGIN{{print \"git push\"}}'", "python3 -c 'import sys; sys.stdout.write(\"git stash drop\")'",
        "vim -es -c 'echo 1' -c 'qa!'", "python3 -c 'import os; os.system(\"git status\")'",
        "perl -e 'system(\"git log -1\")'", "node -e 'require(\"child_process\").execSync(\"git diff --stat\")'",
        "awk 'BEGIN{{system(\"git status\")}}'", "sed -n '1e git status' a.py",
        "make -n -f - <<'MK'\nall:\n\tgit push\nMK",
        "python3 -c 'x = \"git push\"; print(len(x))'",
        "echo 'git push' | python3 -c 'import sys; print(sys.stdin.read())'",
    ],
    "shell-stdin": [
        "cat <<'EOF'\ngit push\nEOF", "echo 'git push' > notes.txt", "echo 'git push' | tee /dev/null",
        "wc -l <<< 'git push'",
        "bash <<< 'echo git push'", "echo 'echo git push' | sh", "grep -c git <<'EOF'\ngit reset --hard\nEOF",
        "bash <<< 'git status'", "echo 'git log -1' | sh", "(bash) <<< 'git diff --stat'",
    ],
    "git-runs-a-command": [
        "git -c diff.external=cat diff", "GIT_EDITOR=true git tag -a v2",
        "GIT_SSH_COMMAND=true git ls-remote ssh://h.example/r",
        "git -c core.editor='git status #' tag -a v2", "GIT_EXTERNAL_DIFF='git log -1 #' git diff",
        "git ls-remote --upload-pack='git status #' .", "git -c alias.x='!git status' x",
        "git -c diff.external='git push' diff --stat",
        "GIT_EDITOR='git push' git log -1", "git -c protocol.ext.allow=never ls-remote 'ext::sh -c git% push'",
    ],
    "scripts-written-on-the-line": [
        "echo 'git push' > s.sh; cat s.sh", "echo 'git status' > s.sh; bash s.sh",
        "printf 'git push\\n' > notes.md; wc -l notes.md",
    ],
}


@dataclass
class Line:
    cls: str
    text: str
    made_from: str  # "danger", "read" or "harmless": what the generator meant; the recorder decides


def _fill(template: str, argv: list[str]) -> str:
    c = "git " + " ".join(argv)
    return template.format(
        c=c, a=" ".join(argv), sub=argv[0], rest=" ".join(argv[1:]), commas=",".join(argv) + "," * (len(argv) == 1),
        restcommas=",".join(argv[1:]) or "HEAD", py=json.dumps(["git", *argv]), js=json.dumps(argv),
        pct=c.replace("%", "%%").replace(" ", "% "))


_NEEDS = {"node": "node", "perl": "perl", "vim": "vim", "make": "make", "tclsh": "tclsh", "awk": "awk",
          "watch": "watch", "script": "script", "flock": "flock", "dash": "dash", "setsid": "setsid"}


def _runnable(text: str) -> bool:
    return all(_have(tool) for word, tool in _NEEDS.items() if word in text.split() or text.startswith(word))


def generate(seed: int, per_template: int) -> list[Line]:
    """Every template with *per_template* denied acts and as many reads, and every harmless line."""
    rng = random.Random(seed)
    lines: list[Line] = []
    for cls, templates in CLASSES.items():
        for template in templates:
            for made, acts in (("danger", DANGER), ("read", READ)):
                for argv in rng.sample(acts, per_template):
                    if "{rest}" in template and len(argv) == 1 and "{sub}" in template and made == "danger":
                        argv = rng.choice([a for a in acts if len(a) > 1])
                    text = _fill(template, argv)
                    if _runnable(text):
                        lines.append(Line(cls, text, made))
    for cls, texts in HARMLESS.items():
        lines.extend(Line(cls, text.replace("{{", "{").replace("}}", "}"), "harmless") for text in texts
                     if _runnable(text))
    return lines


# --------------------------------------------------------------------------- judging

@dataclass
class Tally:
    dangerous: int = 0
    bypass: int = 0
    reads: int = 0
    false_denial: int = 0
    inert: int = 0


def judge(oracle: dict[str, Path], lines: list[Line]) -> tuple[dict[str, Tally], list[str], list[str], list[str]]:
    runs = run_lines(oracle, [line.text for line in lines])
    tallies: dict[str, Tally] = {}
    bypasses: list[str] = []
    false: list[str] = []
    inert: list[str] = []
    for line, records in zip(lines, runs):
        t = tallies.setdefault(line.cls, Tally())
        dangerous = any(denied_act(r.get("sub"), list(r.get("args") or [])) for r in records)  # type: ignore[arg-type]
        verdict = classify(line.text, str(oracle["repo"]))
        if dangerous:
            t.dangerous += 1
            if verdict.kind != "deny":
                t.bypass += 1
                bypasses.append(f"[{line.cls}] {line.text!r} ran {[(r.get('sub'), r.get('args')) for r in records]}")
        else:
            t.reads += 1
            if line.made_from == "danger":
                t.inert += 1
                inert.append(f"[{line.cls}] {line.text!r} ran {records}")
            if verdict.kind == "deny":
                t.false_denial += 1
                false.append(f"[{line.cls}] {line.text!r}: {verdict.text.splitlines()[0]}")
    return tallies, bypasses, false, inert


def _table(tallies: dict[str, Tally]) -> str:
    rows = [f"{'class':28} {'dangerous':>9} {'bypasses':>8} {'reads':>6} {'denied':>6} {'inert':>5}"]
    total = Tally()
    for cls, t in tallies.items():
        rows.append(f"{cls:28} {t.dangerous:9} {t.bypass:8} {t.reads:6} {t.false_denial:6} {t.inert:5}")
        for name in ("dangerous", "bypass", "reads", "false_denial", "inert"):
            setattr(total, name, getattr(total, name) + getattr(t, name))
    rows.append(f"{'all':28} {total.dangerous:9} {total.bypass:8} {total.reads:6} {total.false_denial:6} "
                f"{total.inert:5}")
    return "\n".join(rows)


def _check(oracle: dict[str, Path], lines: list[Line]) -> None:
    tallies, bypasses, false, inert = judge(oracle, lines)
    print("\n" + _table(tallies))
    reads = sum(t.reads for t in tallies.values())
    dangerous = sum(t.dangerous for t in tallies.values())
    assert dangerous >= len(lines) // 3, f"too few lines did anything dangerous: {inert[:20]}"
    assert not bypasses, f"{len(bypasses)} bypasses:\n" + "\n".join(bypasses[:60])
    assert len(false) <= reads // 100, f"{len(false)} of {reads} reads denied:\n" + "\n".join(false[:40])


def test_recorder_reads_git_as_git_does(oracle: dict[str, Path]) -> None:
    """The recorder itself, on lines whose effect git's documentation states."""
    lines = ["git -c alias.w='reset --hard' w", "(exec -a git-stash git drop)", "git {stash,drop}",
             "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.w GIT_CONFIG_VALUE_0='push' git w",
             "git -c diff.external='git reset --hard #' diff", "git status", "git -c alias.status=push status"]
    runs = run_lines(oracle, lines)
    said = [[(r["sub"], r["args"]) for r in records] for records in runs]
    assert said[0] == [("reset", ["--hard"])]
    assert said[1] == [("stash", ["drop"])]
    assert said[2] == [("stash", ["drop"])]
    assert said[3] == [("push", [])]
    assert said[4] == [("diff", []), ("reset", ["--hard"])]
    assert said[5] == [("status", [])]
    assert said[6] == [("status", [])]  # an alias never hides a builtin


def sample(lines: list[Line], per_class: int, seed: int) -> list[Line]:
    """A few lines of each class and kind: the fast lane's share of the corpus."""
    rng = random.Random(seed)
    picked: list[Line] = []
    for cls in CLASSES:
        for made in ("danger", "read", "harmless"):
            group = [line for line in lines if line.cls == cls and line.made_from == made]
            picked += rng.sample(group, min(per_class, len(group)))
    return picked


def test_a_sample_of_every_class_agrees_with_bash(oracle: dict[str, Path]) -> None:
    lines = sample(generate(SEED, 1), 2, SEED)
    _check(oracle, lines)


@pytest.mark.slow
def test_every_template_agrees_with_bash(oracle: dict[str, Path]) -> None:
    lines = generate(SEED, 1)
    _check(oracle, lines)


@pytest.mark.slow
def test_the_whole_corpus_agrees_with_bash(oracle: dict[str, Path]) -> None:
    lines = generate(SEED + 1, 4)
    _check(oracle, lines)
