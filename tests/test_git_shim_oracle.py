"""The exec-time git alone (no hook in front) against the independent shell oracle: what git really did.

tests/test_hook_bash_oracle.py's lines and recording git, with madtea's exec-time git first on the
PATH of the shell that runs each line, as Claude Code's session start puts it. The recorder names its
process ``git``, as git's own process is named, so what git itself runs (an editor, a shell alias) is
git's child, as it would be. Each line runs twice, without and with the shim: the first run says what the
line does, the second whether git still did it. A git the shim refuses records nothing.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import gitops
import guard
import test_hook_bash_oracle as oracle_module
from test_hook_bash_oracle import DANGER, READ, Line, denied_act, generate, run_lines

pytestmark = oracle_module.pytestmark

# A recorder that names its process as git's is named: the shim reads its ancestors by name.
_NAMED = "import ctypes\ntry:\n    ctypes.CDLL(None).prctl(15, b'git', 0, 0, 0)\nexcept Exception:\n    pass\n"
# The forms git is reached by without PATH: the hook alone reads them, no PATH entry can.
WITHOUT_PATH = ("/usr/bin/git", "/git-core/", "hash -p", "command -p", "env -i", "./git-")


@pytest.fixture(scope="module")
def shim_oracle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    base = Path(os.path.realpath(tmp_path_factory.mktemp("shim-oracle")))
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(base), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": str(base / "gitconfig"), "LC_ALL": "C"}
    (base / "gitconfig").write_text("[user]\n\tname = T\n\temail = t@example.invalid\n[init]\n\tdefaultBranch = main\n")
    template = base / "template"  # a repository, as the agent's shell is in one
    template.mkdir()
    for args in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "first"], ["branch", "feat"], ["tag", "v1"]):
        subprocess.run(["git", *args], cwd=template, env=env, check=True, capture_output=True)
    (template / "a.py").write_text("a\n")
    (template / "Makefile").write_text("all:\n\t@true\n")
    (template / "run.sh").write_text('git "$@"\n')
    (template / "tool.py").write_text("import subprocess, sys\nsubprocess.run(['git'] + sys.argv[1:])\n")
    builtins = subprocess.run(["git", "--list-cmds=builtins"], capture_output=True, text=True,
                              check=True).stdout.split()
    core = base / "core"
    core.mkdir()
    log = base / "current.log"
    (base / "recorder.py").write_text(_NAMED + oracle_module._RECORDER.replace("@LOG@", repr(str(log))).replace(
        "@BUILTINS@", repr(sorted(builtins))))
    (base / "wrapper.c").write_text(oracle_module._WRAPPER)
    subprocess.run([oracle_module.CC, "-O", "-o", str(core / "git"), f"-DPYTHON={json.dumps(oracle_module.PYTHON)}",
                    f"-DRECORDER={json.dumps(str(base / 'recorder.py'))}", str(base / "wrapper.c")], check=True)
    for name in builtins:
        os.symlink("git", core / f"git-{name}")
    shim = base / "shim"
    shim.mkdir()
    here = os.path.dirname(os.path.abspath(guard.__file__))
    (shim / "git").write_text(guard._SHIM_PROGRAM.format(python=sys.executable, mark=gitops.SHIM_MARK.decode(),
                                                         here=repr(here)))
    (shim / "git").chmod(0o755)
    yield {"base": base, "repo": template, "template": template, "core": core, "log": log, "shim": shim}


def _runs(shim_oracle: dict[str, Path], lines: list[Line], with_shim: bool) -> list[list[dict[str, object]]]:
    plain = oracle_module._DRIVER
    if with_shim:  # the driver's own bash started without it, as the harness did; each line's shell has it
        oracle_module._DRIVER = f"export PATH={shim_oracle['shim']}:$PATH\n" + plain
    try:
        return run_lines(shim_oracle, [line.text for line in lines])
    finally:
        oracle_module._DRIVER = plain


def _dangerous(records: list[dict[str, object]]) -> bool:
    return any(denied_act(r.get("sub"), list(r.get("args") or [])) for r in records)  # type: ignore[arg-type]


def judge(shim_oracle: dict[str, Path], lines: list[Line]) -> tuple[int, list[str], int, list[str]]:
    """(dangerous lines, those git still did with the shim, reads, reads the shim changed)."""
    truth, shimmed = _runs(shim_oracle, lines, False), _runs(shim_oracle, lines, True)
    dangerous, reads, through, denied = 0, 0, [], []
    for line, before, after in zip(lines, truth, shimmed):
        if _dangerous(before):
            dangerous += 1
            if _dangerous(after):
                through.append(f"[{line.cls}] {line.text}")
        else:
            reads += 1
            if [r for r in before if r.get("sub") != "config"] != [r for r in after if r.get("sub") != "config"]:
                denied.append(f"[{line.cls}] {line.text}: ran {before}, with the shim {after}")
    return dangerous, through, reads, denied


UNREADABLE = {"argv0-of-bash-c": "bash -c '$0 {a}' git", "script-on-disk": "sh ./run.sh {a}",
              "python-script-argv": "python3 ./tool.py {a}", "built-at-run-time": "c=$(echo Z2l0 | base64 -d); $c {a}"}


def test_what_the_hook_cannot_read_is_judged_when_git_runs(shim_oracle: dict[str, Path]) -> None:
    lines = [Line(cls, form.format(a=" ".join(argv)), made) for cls, form in UNREADABLE.items()
             for made, acts in (("danger", DANGER[:4] + DANGER[8:9]), ("read", READ[:3]))
             for argv in acts]
    dangerous, through, reads, denied = judge(shim_oracle, lines)
    assert dangerous == 20 and reads == 12
    assert not through, "\n".join(through)
    assert not denied, "\n".join(denied)


@pytest.mark.slow
def test_the_corpus_reaches_git_only_without_path(shim_oracle: dict[str, Path]) -> None:
    # Every template of the corpus with two denied acts and two reads: half the whole corpus (four each, 1,359
    # lines), which runs every line twice for six minutes on one worker and would hold the suite's end.
    lines = generate(oracle_module.SEED + 1, 2)
    dangerous, through, reads, denied = judge(shim_oracle, lines)
    print(f"\n{dangerous} dangerous lines, {len(through)} through the shim alone; {reads} reads, {len(denied)} changed")
    assert dangerous >= len(lines) // 3
    assert [t for t in through if not any(form in t for form in WITHOUT_PATH)] == []
    # A script's interpreter never sees the argv[0] it was started under, so ``exec -a git-<cmd> git`` reaches
    # git without its subcommand: such a read fails with git's usage error. No other read may change.
    assert [d for d in denied if "exec -a git-" not in d] == [], "\n".join(denied[:40])
