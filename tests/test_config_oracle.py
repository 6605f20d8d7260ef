"""Where madtea reads git's own files by hand, git reads the same generated files and must agree.

madtea reads a repository's config without starting git in two places that decide writes: the
nested-repository scan (each child's origin, before every dir-less mutation) and every target's
origin (its owner/repo). Generated config files (sections and subsections with quotes and escapes,
legacy ``[section.sub]`` headers, key case, continuation lines, comments, several values, booleans,
CRLF and a byte-order mark, includes and ``includeIf``, ``url.<base>.insteadOf``) are read by madtea
and by ``git config`` / ``git remote get-url``:

- where git accepts a file, madtea's entries are git's ``--list`` entries, or madtea gives up (a file
  it cannot read names no origin, which fails closed);
- where git rejects a file, madtea names no origin;
- an origin madtea reads is the one git uses (after includes and ``insteadOf``), or none: a
  disagreement may only ever make a child look distinct (DESIGN §3.0), never the same repository;
- an ssh or scp origin's host, port and path are the ones git hands to ssh;
- the hook's reading of a name as a branch, tag or remote-tracking ref (loose or packed) is git's.

Seeded and bounded (``MADTEA_CONFIG_EXAMPLES`` for longer runs).
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import gitops
import guard
from topologies import HOST, git_bytes, run_git

pytestmark = pytest.mark.slow  # property-based, a git process per example: not in the fast lane
EXAMPLES = int(os.environ.get("MADTEA_CONFIG_EXAMPLES", "300"))  # read before the seal clears MADTEA_*
ORACLE = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                  suppress_health_check=list(HealthCheck))

# --------------------------------------------------------------------------- generated config text

URLS = (f"https://{HOST}/acme/web.git", f"git@{HOST}:acme/web.git", f"https://{HOST}/acme/other.git",
        f"ssh://git@{HOST}:2222/acme/web", "gh:acme/web", f"https://{HOST}/Acme/Web", "/srv/git/web.git")
SUBSECTIONS = ("origin", "Origin", "upstream", "or\\\"igin", "or\\\\igin", "o r", "origin.x", "", "\\o\\rigin")
SECTIONS = ("remote", "Remote", "REMOTE", "init", "core", "user", "branch", "url")
KEYS = ("url", "URL", "Url", "pushurl", "fetch", "defaultBranch", "defaultbranch", "name", "insteadOf",
        "x-y", "k2", "2k", "a_b")
VALUE_PARTS = (*URLS, " ", "  ", "\t", '"', '"a b"', "#c", ";c", "\\t", "\\n", "\\\\", '\\"', "\\x", "\\\n",
               "\\\r\n", "main", "trunk", "é", "=", "[", "]")


@st.composite
def values(draw: st.DrawFn) -> str:
    return "".join(draw(st.lists(st.sampled_from(VALUE_PARTS), min_size=0, max_size=4)))


@st.composite
def headers(draw: st.DrawFn) -> str:
    section = draw(st.sampled_from(SECTIONS))
    form = draw(st.integers(0, 3))
    if form == 0:
        return f"[{section}]"
    if form == 1:
        return f"[{section}.{draw(st.sampled_from(('origin', 'Origin', 'main')))}]"
    sub = draw(st.sampled_from(SUBSECTIONS + URLS))
    pad = draw(st.sampled_from((" ", "  ", "\t")))
    return f"[{section}{pad}\"{sub}\"]" + draw(st.sampled_from(("", " # after", "x")))


@st.composite
def entries(draw: st.DrawFn) -> str:
    indent = draw(st.sampled_from(("", "\t", "  ")))
    key = draw(st.sampled_from(KEYS))
    form = draw(st.integers(0, 5))
    if form == 0:
        return f"{indent}{key}"  # a boolean true
    equals = draw(st.sampled_from((" = ", "=", " =", "= ", "\t=\t")))
    return f"{indent}{key}{equals}{draw(values())}"


@st.composite
def config_texts(draw: st.DrawFn) -> str:
    lines = []
    for _ in range(draw(st.integers(0, 8))):
        kind = draw(st.integers(0, 9))
        if kind <= 2:
            lines.append(draw(headers()))
        elif kind <= 7:
            lines.append(draw(entries()))
        elif kind == 8:
            lines.append(draw(st.sampled_from(("# a comment", "; another", "", "   ", '# [remote "origin"]'))))
        else:
            lines.append(draw(st.sampled_from(('[remote "origin"] url = ' + URLS[0], "[core]bare = false"))))
    newline = draw(st.sampled_from(("\n", "\n", "\r\n")))
    bom = draw(st.sampled_from(("", "", "\ufeff")))
    return bom + newline.join(lines) + draw(st.sampled_from(("", newline)))


def _git_list(path: Path) -> list[tuple[str, str | None]] | None:
    """``git config --list`` of the file as (key, value) pairs, in order; None when git rejects the file."""
    out = git_bytes(path.parent, "config", "--file", str(path), "--no-includes", "--list", "-z")
    if out.returncode != 0:
        return None
    pairs: list[tuple[str, str | None]] = []
    for rec in out.stdout.decode("utf-8", errors="replace").split("\0"):
        if rec:
            key, newline, value = rec.partition("\n")
            pairs.append((key, value if newline else None))
    return pairs


def _madtea_list(text: str) -> list[tuple[str, str | None]] | None:
    try:
        parsed = list(gitops._parse_config(text))
    except ValueError:
        return None
    return [(".".join(p for p in (s, sub, k) if p is not None), v) for s, sub, k, v in parsed]


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    return tmp_path / "config"


@ORACLE
@given(text=config_texts())
def test_a_config_file_reads_as_git_config_lists_it(scratch: Path, text: str) -> None:
    scratch.write_bytes(text.encode("utf-8"))
    by_git, by_madtea = _git_list(scratch), _madtea_list(text)
    if by_git is None:
        assert gitops._config_values(scratch, "remote", "origin", "url") == [], (
            f"git rejects this file, yet madtea reads an origin from it:\n{text!r}")
        return
    if by_madtea is not None:
        assert by_madtea == by_git, f"madtea and git read this file differently:\n{text!r}"


@ORACLE
@given(text=config_texts())
def test_an_origin_read_from_a_file_is_the_one_git_reads_or_none(scratch: Path, text: str) -> None:
    scratch.write_bytes(text.encode("utf-8"))
    mine = gitops._config_values(scratch, "remote", "origin", "url")
    out = git_bytes(scratch.parent, "config", "--file", str(scratch), "--no-includes", "--get-all",
                    "remote.origin.url")
    theirs = out.stdout.decode("utf-8", errors="replace").splitlines() if out.returncode == 0 else []
    assert not mine or mine[:1] == theirs[:1], f"madtea reads origin {mine[:1]}, git {theirs[:1]}:\n{text!r}"


# --------------------------------------------------------------------------- a repository's origin, in context

INCLUDED = ('[remote "origin"]\n\turl = https://forge.example.test/acme/other.git\n',
            '[remote "origin"]\n\tpushurl = https://forge.example.test/acme/other.git\n',
            '[url "https://forge.example.test/acme/other"]\n\tinsteadOf = https://forge.example.test/acme/web\n',
            "[user]\n\tname = Nobody\n")


@st.composite
def repo_configs(draw: st.DrawFn) -> tuple[str, str]:
    """(the repository's own config after its [core] section, an included file's text)."""
    parts = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.integers(0, 5))
        if kind <= 1:
            parts.append(f'[remote "origin"]\n\turl = {draw(st.sampled_from(URLS))}\n')
        elif kind == 2:
            parts.append(draw(st.sampled_from(("[include]\n\tpath = included\n",
                                               '[includeIf "gitdir:**/child/"]\n\tpath = ../../included\n',
                                               '[includeIf "onbranch:main"]\n\tpath = ../../included\n'))))
        elif kind == 3:
            base = draw(st.sampled_from((f"https://{HOST}/acme/other.git", f"git@{HOST}:acme/",
                                         f"https://{HOST}/acme/")))
            prefix = draw(st.sampled_from((f"https://{HOST}/acme/web.git", "gh:", f"git@{HOST}:acme/",
                                           f"https://{HOST}/acme/")))
            parts.append(f'[url "{base}"]\n\tinsteadOf = {prefix}\n')
        elif kind == 4:
            parts.append(draw(config_texts()) + "\n")
        else:
            parts.append(f'[Remote "origin"]\n\tURL = {draw(st.sampled_from(URLS))}\n')
    return "".join(parts), draw(st.sampled_from(INCLUDED))


@pytest.fixture
def child(tmp_path: Path) -> Path:
    repo = tmp_path / "child"
    repo.mkdir()
    run_git(repo, "init", "-q", "-b", "main")
    return repo


def _key(url: str | None) -> str | None:
    parsed = gitops.parse_remote_url(url) if url else None
    return parsed.key if parsed else None


@ORACLE
@given(config=repo_configs())
def test_a_childs_origin_never_looks_more_like_the_launch_repo_than_git_says(child: Path,
                                                                           config: tuple[str, str]) -> None:
    own, included = config
    (child.parent / "included").write_text(included, encoding="utf-8")
    (child / ".git" / "included").write_text(included, encoding="utf-8")
    path = child / ".git" / "config"
    path.write_bytes(("[core]\n\trepositoryformatversion = 0\n\tbare = false\n" + own).encode("utf-8"))
    os.utime(path, (1, 1))  # an old file, so the origin cache sees each rewrite as the new file it is
    os.chmod(path, stat.S_IRUSR | stat.S_IWUSR)
    mine = gitops.read_origin(child / ".git")
    got = git_bytes(child, "remote", "get-url", "origin")
    theirs = got.stdout.decode("utf-8", errors="replace").strip() if got.returncode == 0 else None
    assert _key(mine) is None or _key(mine) == _key(theirs), (
        f"madtea reads the origin {mine!r}, git uses {theirs!r}:\n{own}")
    # The decision the scan makes with it: a child git sees as another repository is never hidden.
    launch = guard.RepoFacts(child.parent, child.parent / ".git", child.parent / ".git",
                             gitops.parse_remote_url(f"https://{HOST}/acme/web.git"))
    madtea_distinct = guard.distinct_children(launch, [(child, gitops.parse_remote_url(mine) if mine else None)])
    git_distinct = _key(theirs) is None or _key(theirs) != launch.origin.key  # type: ignore[union-attr]
    assert madtea_distinct or not git_distinct, f"madtea hides a child git reads as {theirs!r}:\n{own}"


# --------------------------------------------------------------------------- the host git dials

SSH_URLS = st.builds(
    lambda scheme, user, host, port, owner, repo, suffix: (
        f"ssh://{user}{host}{port}/{owner}/{repo}{suffix}" if scheme else f"{user}{host}:{owner}/{repo}{suffix}"),
    st.booleans(), st.sampled_from(("git@", "", "a.b@", "-x@")),
    st.sampled_from((HOST, "Forge.Example.Test", "[::1]", "localhost", "-oProxyCommand=x", "h_st", "1.2.3.4")),
    st.sampled_from(("", ":2222", ":0", ":65536", ":x")), st.sampled_from(("acme", "Acme", "a.b", "-a", "~u")),
    st.sampled_from(("web", "web.git", "we b", "w%2F", "..")), st.sampled_from(("", ".git", "/", "/.git", ".git/")))


@pytest.fixture
def dial_recorder(tmp_path: Path) -> tuple[Path, Path]:
    log = tmp_path / "ssh.log"
    script = tmp_path / "fake-ssh"
    script.write_text(f'#!/bin/sh\nfor a in "$@"; do printf "%s\\n" "$a"; done > {log}\nexit 1\n', encoding="utf-8")
    script.chmod(0o755)
    return script, log


@ORACLE
@given(url=SSH_URLS)
def test_an_ssh_origin_names_the_host_and_path_git_hands_to_ssh(dial_recorder: tuple[Path, Path], tmp_path: Path,
                                                                url: str) -> None:
    script, log = dial_recorder
    log.unlink(missing_ok=True)
    parsed = gitops.parse_remote_url(url)
    if parsed is None:
        return  # no origin: the caller fails closed
    git_bytes(tmp_path, "ls-remote", url, GIT_SSH_COMMAND=str(script), GIT_SSH_VARIANT="ssh",
              GIT_ALLOW_PROTOCOL="ssh")
    assert log.exists(), f"madtea reads {url!r} as {parsed.full}, but git dials no ssh host for it"
    argv = log.read_text(encoding="utf-8").splitlines()
    command = argv[-1]  # git-upload-pack '<path>'
    host = argv[-2]
    port = argv[argv.index("-p") + 1] if "-p" in argv else None
    assert host.rpartition("@")[2].strip("[]").lower() == parsed.host.lower().strip("[]"), (url, argv, parsed)
    assert (int(port) if port else None) in (parsed.port, None if parsed.port in (None, 22) else -1), (url, argv)
    path = command.split(" ", 1)[1].strip("'").strip("/").removesuffix("/").removesuffix(".git").removesuffix("/")
    assert path.casefold() == f"{parsed.owner}/{parsed.repo}".casefold(), (url, command, parsed)


# --------------------------------------------------------------------------- the hook's refs, read from files

NAMES = ("main", "feat", "a/b", "v1", "origin/main", "upstream/feat", "x")


@st.composite
def ref_histories(draw: st.DrawFn) -> list[tuple[str, str]]:
    ops = ("branch", "tag", "origin", "upstream", "delete-branch", "delete-tag", "pack")
    return draw(st.lists(st.tuples(st.sampled_from(ops), st.sampled_from(NAMES[:4] + ("x",))), max_size=8))


def _git_ref_kind(repo: Path, name: str) -> str | None:
    def has(ref: str) -> bool:
        return git_bytes(repo, "rev-parse", "-q", "--verify", ref).returncode == 0
    for kind, ref in (("branch", f"refs/heads/{name}"), ("tag", f"refs/tags/{name}"),
                      ("tracking", f"refs/remotes/{name}")):
        if has(ref):
            return kind
    remotes = [r for r in ("origin", "upstream") if has(f"refs/remotes/{r}/{name}")]
    return f"remote:{remotes[0]}" if remotes else None


@pytest.fixture
def refs_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "refs"
    repo.mkdir()
    run_git(repo, "init", "-q", "-b", "main")
    run_git(repo, "commit", "-q", "--allow-empty", "-m", "root")
    return repo


@settings(ORACLE, max_examples=max(1, EXAMPLES // 5))  # a dozen git processes per example
@given(history=ref_histories())
def test_the_hook_reads_each_ref_as_git_resolves_it(refs_repo: Path, history: list[tuple[str, str]]) -> None:
    repo = refs_repo
    for ref in run_git(repo, "for-each-ref", "--format=%(refname)").splitlines():
        if ref != "refs/heads/main":
            run_git(repo, "update-ref", "-d", ref)
    for op, name in history:
        ref = {"branch": f"refs/heads/{name}", "tag": f"refs/tags/{name}", "origin": f"refs/remotes/origin/{name}",
               "upstream": f"refs/remotes/upstream/{name}", "delete-branch": f"refs/heads/{name}",
               "delete-tag": f"refs/tags/{name}"}.get(op)
        if op == "pack":
            run_git(repo, "pack-refs", "--all")
        elif op.startswith("delete"):
            if name != "main":
                run_git(repo, "update-ref", "-d", ref or "", check=False)
        else:
            run_git(repo, "update-ref", ref or "", "HEAD", check=False)  # a/b beside a: git refuses, as here
    common = str(repo / ".git")
    for name in NAMES:
        assert guard._ref_kind(common, name) == _git_ref_kind(repo, name), (name, history)
