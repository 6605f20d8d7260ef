"""madtea: a safe forge tool for Gitea and Forgejo.

One registry of operations feeds two thin surfaces: an MCP stdio server for
coding agents (``madtea mcp``) and a CLI for people (``madtea <noun> <verb>``).
Every repo-scoped call passes the guard before its handler runs. ``madtea
hook`` steers an agent's raw ``git`` commands before they run.
"""
from __future__ import annotations

import contextvars
import dataclasses
import json
import os
import sys
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

# python -m puts the caller's cwd first on sys.path, and a user's repository
# may hold its own guard.py or forge.py: load our siblings from our own folder.
_HERE = os.path.dirname(os.path.realpath(__file__))
sys.path[:] = [_HERE] + [p for p in sys.path if os.path.realpath(p or os.curdir) != _HERE]

import gitops  # noqa: E402  (after the path fix above)
import guard  # noqa: E402

__all__ = ["main", "run", "Context", "Result", "REGISTRY", "Op", "Param", "build_parser", "build_server",
           "warn", "notice", "__version__"]
__version__ = "0.1.0"

# --- results and diagnostics (lead) ---

class Result:
    """What a call did: text for people and agents, data for programs, and its diagnostics."""

    __slots__ = ("text", "data", "error", "notes")

    def __init__(self, text: str, data: Any = None, *, error: dict[str, Any] | None = None) -> None:
        self.text = text
        self.data = data
        self.error = error          # {"code", "target", "next", "user_action"} on a refusal
        self.notes: list[tuple[str, str]] = []

    @property
    def is_error(self) -> bool:
        return self.error is not None


_NOTES: contextvars.ContextVar[list[tuple[str, str]] | None] = contextvars.ContextVar("madtea_notes", default=None)


def warn(text: str) -> None:
    """The one diagnostics emitter: into the current result, or to stderr outside a call."""
    _emit("warning", text)


def notice(text: str) -> None:
    _emit("notice", text)


def _emit(severity: str, text: str) -> None:
    sink = _NOTES.get()
    if sink is None:
        sys.stderr.write(f"{severity}: {text}\n")
    else:
        sink.append((severity, text))


def refusal_result(refusal: guard.Refusal) -> Result:
    error = {"code": refusal.code, "target": refusal.target, "next": list(refusal.next),
             "user_action": refusal.user_action}
    return Result(refusal.message, error=error)


def error_result(code: str, message: str, target: str | None = None, *, user_action: str | None = None,
                 next: Sequence[dict[str, Any]] = ()) -> Result:
    if not next and user_action is None:
        user_action = "Tell the user what failed; madtea changed nothing further."
    return Result(message, error={"code": code, "target": target, "next": list(next), "user_action": user_action})


def closing(text: str) -> str:
    """The terminal-closure line of a result that ends a unit of work."""
    return f"{text}; nothing left to verify for this step."



# --- registry (lead) ---

@dataclasses.dataclass(frozen=True)
class Param:
    """One parameter, declared once for both surfaces."""

    name: str
    type: str = "str"             # str | int | bool | strs | number | numbers | enum | json
    description: str = ""
    required: bool = False
    choices: tuple[str, ...] = ()
    positional: bool = False      # CLI shape: positional rather than --flag
    short: str | None = None      # CLI short flag
    flag: str | None = None       # CLI long flag, when it is not the name
    cli_only: bool = False        # a CLI convenience with no MCP twin


@dataclasses.dataclass(frozen=True)
class Op:
    """One operation: a tool and action on MCP, a noun and verb on the CLI."""

    tool: str
    action: str | None
    cli: tuple[str, ...]
    summary: str
    params: tuple[Param, ...]
    handler: Callable[["Invocation"], Result]
    kind: str                     # "local" (targets a checkout by dir=) or "remote" (by owner_repo)
    mutating: bool
    destructive: bool = False     # can overwrite or remove existing data
    idempotent: bool = False
    batch: str | None = None      # the action that takes several numbers, if any

    @property
    def specs(self) -> dict[str, Param]:
        return {p.name: p for p in self.params if not p.cli_only}

    @property
    def where(self) -> str:
        return f"{self.tool} action={self.action}" if self.action else self.tool


DIR = Param("dir", description="Absolute path of the repository to act on (a checkout or linked worktree). "
            "Leave it out to act on the server's launch repo.")
OWNER_REPO = Param("owner_repo", flag="repo", short="R",
                   description="The repository on the forge, as owner/repo or host/owner/repo (not a URL). "
                   "Leave it out to use the launch repo's origin.")
JSON_OUT = Param("json", "bool", "Print the structured result as JSON.", cli_only=True)

REGISTRY: list[Op] = []
TOOL_SUMMARIES: dict[str, str] = {}


def operation(tool: str, action: str | None = None, *, cli: tuple[str, ...], summary: str,
              params: Sequence[Param] = (), kind: str, mutating: bool, destructive: bool = False,
              idempotent: bool = False, batch: str | None = None) -> Callable[[Callable[..., Result]], Callable[..., Result]]:
    """Declare an operation; the decorated function is its service."""
    def register(handler: Callable[..., Result]) -> Callable[..., Result]:
        common = (DIR,) if kind == "local" else (OWNER_REPO,)
        REGISTRY.append(Op(tool, action, cli, summary, tuple(params) + common + (JSON_OUT,), handler,
                           kind, mutating, destructive, idempotent, batch))
        return handler
    return register


def tool_ops(tool: str) -> list[Op]:
    return [op for op in REGISTRY if op.tool == tool]


def find_op(tool: str, action: Any) -> Op:
    ops = tool_ops(tool)
    if not ops:
        raise guard.Refusal("BAD_ARGUMENT", f"There is no tool named {tool}.", target=tool,
                            user_action="Use one of the madt_* tools the server lists.")
    if len(ops) == 1 and ops[0].action is None:
        if action is not None:
            raise guard.Refusal("UNKNOWN_PARAMETER", f"{tool} takes no action parameter.", target=tool,
                                user_action=f"Call {tool} again without action.")
        return ops[0]
    by_action = {op.action: op for op in ops}
    if action in by_action:
        return by_action[action]
    choices = ", ".join(str(a) for a in by_action)
    if action is None:
        raise guard.Refusal("BAD_ARGUMENT", f"{tool} needs action: one of {choices}.", target=tool,
                            user_action=f"Call {tool} again with action set to one of: {choices}.")
    guess = guard.did_you_mean(str(action), [str(a) for a in by_action])
    return_next = (guard.call(tool, action=guess),) if guess else ()
    raise guard.Refusal("BAD_ARGUMENT", f"{tool} has no action {action!r}; its actions are: {choices}.",
                        target=tool, next=return_next,
                        user_action=None if guess else f"Call {tool} again with action set to one of: {choices}.")



# --- services: local git (lead) ---

TOOL_SUMMARIES.update({
    "madt_worktrees": "Linked worktrees of a repository: list them, add one, or remove one that holds no unsaved work.",
})

FILES = Param("files", "strs", "The exact paths to stage, relative to the repository (a named sub-directory is "
              "allowed; '.' and the repository root are not). Not a glob.", positional=True)


def _grepo(inv: Invocation) -> gitops.Repo:
    r = inv.repo
    return gitops.Repo(r.top, r.git_dir, r.common_dir)


def _files_list(files: Sequence[str]) -> str:
    shown = ", ".join(files[:10]) + (f" and {len(files) - 10} more" if len(files) > 10 else "")
    return f"{len(files)} file{'s' if len(files) != 1 else ''}: {shown}"


def _ref_arg(inv: Invocation, name: str) -> str | None:
    value = inv.args.get(name)
    return guard.check_not_option(value, name, inv.op.where) if value else None


@operation("madt_status", cli=("status",), kind="local", mutating=False, idempotent=True,
           summary="Show the repository, branch, upstream and working-tree changes (read-only).")
def status_op(inv: Invocation) -> Result:
    st = gitops.status(_grepo(inv))
    op = gitops.operation_in_progress(inv.repo.git_dir)
    lines = [f"{inv.repo.describe()} ({st.branch or 'detached HEAD'})"]
    if st.upstream:
        lines.append(f"upstream {st.upstream}: {st.ahead} ahead, {st.behind} behind")
    for label, paths in (("conflicted", st.conflicted), ("staged", st.staged),
                         ("modified", st.modified), ("untracked", st.untracked)):
        if paths:
            lines.append(f"{label}: " + ", ".join(paths))
    if not (st.conflicted or st.staged or st.modified or st.untracked):
        lines.append("working tree clean")
    if op:
        lines.append(f"a {op} is in progress")
    data = {"repo": inv.repo.name, "path": str(inv.repo.top), "branch": st.branch, "head": st.head,
            "upstream": st.upstream, "ahead": st.ahead, "behind": st.behind, "staged": st.staged,
            "modified": st.modified, "untracked": st.untracked, "conflicted": st.conflicted, "operation": op}
    return Result("\n".join(lines), data)


@operation("madt_log", cli=("log",), kind="local", mutating=False, idempotent=True,
           summary="Show recent commits of a branch or ref (read-only).",
           params=(Param("ref", description="The branch, tag or commit to start from (default: HEAD).",
                         positional=True),
                   Param("limit", "int", "How many commits to show (default 20, at most 200).", short="n")))
def log_op(inv: Invocation) -> Result:
    ref = _ref_arg(inv, "ref") or "HEAD"
    limit = max(1, min(int(inv.args.get("limit") or 20), 200))
    entries = gitops.log(_grepo(inv), ref, limit)
    lines = [f"{e.sha[:9]} {e.date[:10]} {e.author}: {e.subject}" for e in entries]
    data = [{"sha": e.sha, "author": e.author, "date": e.date, "subject": e.subject} for e in entries]
    return Result("\n".join(lines) or f"no commits on {ref}", data)


@operation("madt_add", cli=("add",), kind="local", mutating=True, idempotent=True,
           summary="Stage exactly the named files; nothing else is swept in.", params=(FILES,))
def add_op(inv: Invocation) -> Result:
    files = guard.declared_files(inv.target)
    gitops.add(_grepo(inv), files)
    return Result(f"Staged {_files_list(files)} in {inv.identity()}.", {"staged": files})


@operation("madt_commit", cli=("commit",), kind="local", mutating=True,
           summary="Commit exactly the named files with a title; anything else already staged stays staged.",
           params=(FILES,
                   Param("title", description="The commit subject line — not `message`.", required=True, short="t"),
                   Param("body", description="The commit body, after a blank line (optional).", short="b"),
                   Param("allow_default_branch", "bool",
                         "Commit even though the checkout is on its default branch (this call only).")))
def commit_op(inv: Invocation) -> Result:
    files = guard.declared_files(inv.target)
    sha = gitops.commit(_grepo(inv), files, inv.args["title"], inv.args.get("body"))
    return Result(f"Committed {sha[:9]} on {inv.state.branch or 'detached HEAD'} ({_files_list(files)}) "
                  f"in {inv.identity()}.", {"sha": sha, "files": files, "branch": inv.state.branch})


@operation("madt_push", cli=("push",), kind="local", mutating=True,
           summary="Push a branch to origin; never a blind force push.",
           params=(Param("branch", description="The local branch to push (default: the current branch).",
                         positional=True),
                   Param("force_with_lease", description="Overwrite the remote branch only if it is still at "
                         "this sha (the one you based your work on); a plain force push is not offered."),
                   Param("set_upstream", "bool", "Record origin/<branch> as the branch's upstream.", short="u")))
def push_op(inv: Invocation) -> Result:
    branch = _ref_arg(inv, "branch") or inv.state.branch
    if branch is None:
        raise guard.Refusal("BAD_ARGUMENT", f"{inv.repo.describe()} is on a detached HEAD; name the branch to push.",
                            target=inv.repo.describe(), user_action="Call madt_push again with branch set.")
    lease = _ref_arg(inv, "force_with_lease")
    try:
        pushed = gitops.push(_grepo(inv), branch, lease_sha=lease, set_upstream=bool(inv.args.get("set_upstream")))
    except gitops.LeaseRejected as exc:
        raise guard.Refusal("LEASE_REJECTED",
                            f"origin/{branch} is no longer at {lease[:9]}; someone pushed since you based your work "
                            f"on it, so nothing was overwritten ({exc.stderr.strip()[:120]}).",
                            target=inv.repo.describe(),
                            user_action="Fetch and look at the new remote commits before choosing a new lease.") from None
    except gitops.PushRejected:
        raise guard.Refusal("LEASE_REJECTED" if lease else "BAD_ARGUMENT",
                            f"origin refused {branch}: the remote branch has commits yours does not. Nothing was "
                            f"overwritten.", target=inv.repo.describe(),
                            next=(guard.call("madt_pull", dir=str(inv.repo.top), branch=branch),)) from None
    return Result(f"Pushed {branch} to origin ({pushed.new_sha[:9]}) from {inv.identity()}.",
                  {"branch": branch, "sha": pushed.new_sha, "previous": pushed.old_sha})


@operation("madt_pull", cli=("pull",), kind="local", mutating=True, idempotent=True,
           summary="Fast-forward the current branch from origin; never a merge or rebase.",
           params=(Param("branch", description="The remote branch to pull (default: the current branch's own).",
                         positional=True),))
def pull_op(inv: Invocation) -> Result:
    branch = _ref_arg(inv, "branch") or inv.state.branch
    if branch is None:
        raise guard.Refusal("BAD_ARGUMENT", f"{inv.repo.describe()} is on a detached HEAD; switch to a branch first.",
                            target=inv.repo.describe(), user_action="Call madt_switch with the branch to pull into.")
    pulled = gitops.pull_ff(_grepo(inv), branch)
    old, new = pulled.before, pulled.after or ""
    moved = "already up to date" if old == new else f"{(old or '0')[:9]}..{new[:9]} (fast-forward)"
    return Result(f"Pulled origin/{branch} into {inv.state.branch}: {moved}, in {inv.identity()}.",
                  {"branch": inv.state.branch, "from": old, "to": new})


@operation("madt_branch_create", cli=("branch", "create"), kind="local", mutating=True,
           summary="Create a local branch at a start point, optionally switching to it.",
           params=(Param("name", description="The new branch's name.", required=True, positional=True),
                   Param("start_point", description="Where the branch starts (default: HEAD).", positional=True),
                   Param("checkout", "bool", "Switch to the new branch after creating it.", short="c")))
def branch_create_op(inv: Invocation) -> Result:
    name = _ref_arg(inv, "name")
    start = _ref_arg(inv, "start_point") or "HEAD"
    sha = gitops.branch_create(_grepo(inv), name, start)
    text = f"Created branch {name} at {sha[:9]} in {inv.identity()}."
    if inv.args.get("checkout"):
        gitops.switch(_grepo(inv), name)
        text += f" Switched to {name}."
    return Result(text, {"branch": name, "sha": sha, "checked_out": bool(inv.args.get("checkout"))})


def _proof_target(inv: Invocation) -> str:
    return inv.state.default_branch


def _contained(inv: Invocation, branch: str) -> str | None:
    repo = _grepo(inv)
    default = inv.state.default_branch
    for target in (default, f"refs/remotes/origin/{default}"):
        if gitops.ref_exists(repo, target):
            proof = gitops.containment(repo, branch, target)
            if proof:
                return proof
    return None


_PROOFS = {"ancestor": "its tip is in {t}", "patch-id": "every commit's patch is already in {t}",
           "squash": "its changes landed in {t} as a squash merge"}


@operation("madt_branch_delete", cli=("branch", "delete"), kind="local", mutating=True, destructive=True,
           summary="Delete a local branch whose work is proven to be in the default branch; there is no force form.",
           params=(Param("name", description="The branch to delete.", required=True, positional=True),))
def branch_delete_op(inv: Invocation) -> Result:
    name = _ref_arg(inv, "name")
    repo = _grepo(inv)
    if not gitops.ref_exists(repo, f"refs/heads/{name}"):
        raise guard.Refusal("BAD_ARGUMENT", f"{inv.repo.describe()} has no local branch {name}.",
                            target=inv.repo.describe(), next=(guard.call("madt_status", dir=str(inv.repo.top)),))
    checked_out = [w for w in gitops.worktree_list(repo) if w.branch == name]
    if checked_out:
        raise guard.Refusal("BAD_ARGUMENT", f"{name} is checked out at {checked_out[0].path}; a checked-out "
                            f"branch is never deleted.", target=inv.repo.describe(),
                            user_action="Switch that checkout to another branch first, or leave the branch.")
    proof = _contained(inv, name)
    default = inv.state.default_branch
    if proof is None:
        raise guard.Refusal("NOT_CONTAINED",
                            f"{name} in {inv.repo.describe()} has work that is not in {default}: its tip is not an "
                            f"ancestor, its patches are not there, and it does not match a squash merge. Deleting it "
                            f"would lose that work.", target=inv.repo.describe(),
                            user_action=f"Ask the user whether the unmerged work on {name} may be discarded; "
                            f"only a person deletes it.")
    sha = gitops.head_sha(repo, f"refs/heads/{name}")
    gitops.branch_delete(repo, name, sha)
    return Result(closing(f"Deleted branch {name} (was {sha[:9]}) in {inv.identity()}; "
                          f"{_PROOFS[proof].format(t=default)}"), {"branch": name, "sha": sha, "proof": proof})


@operation("madt_switch", cli=("switch",), kind="local", mutating=True, idempotent=True,
           summary="Switch the checkout to an existing branch.",
           params=(Param("branch", description="The branch to switch to.", required=True, positional=True),))
def switch_op(inv: Invocation) -> Result:
    branch = _ref_arg(inv, "branch")
    try:
        gitops.switch(_grepo(inv), branch)
    except gitops.GitError as exc:
        if "would be overwritten" in exc.stderr or "overwritten by checkout" in exc.stderr:
            raise guard.Refusal("DIRTY_TREE", f"Switching {inv.repo.describe()} to {branch} would overwrite "
                                f"uncommitted changes, so nothing was switched.", target=inv.repo.describe(),
                                next=(guard.call("madt_status", dir=str(inv.repo.top)),),
                                user_action="Commit the changes with madt_commit on the current branch first.") from None
        raise
    return Result(f"Switched {inv.repo.describe()} to {branch}.", {"branch": branch})


_WT_PARAMS = (Param("path", description="Absolute path of the worktree to add or remove.", positional=True),
              Param("commit_ish", description="What the new worktree checks out (add only; default HEAD). "
                    "An existing branch is checked out; no branch is created unless b is given.", positional=True),
              Param("b", description="Create this new branch for the worktree (add only), like git's -b."))


@operation("madt_worktrees", "list", cli=("worktree", "list"), kind="local", mutating=False, idempotent=True,
           summary="List the repository's worktrees.", params=())
def worktree_list_op(inv: Invocation) -> Result:
    trees = gitops.worktree_list(_grepo(inv))
    lines = [f"{w.path} {w.branch or 'detached'} {(w.head or '')[:9]}" for w in trees]
    return Result("\n".join(lines), [{"path": str(w.path), "branch": w.branch, "head": w.head} for w in trees])


def _worktree_path(inv: Invocation) -> str:
    raw = inv.args.get("path")
    if not raw:
        raise guard.Refusal("BAD_ARGUMENT", f"{inv.op.where} needs path: the worktree's absolute path.",
                            target=inv.repo.describe(), user_action=f"Call {inv.op.tool} again with path set.")
    return str(guard.check_dir(raw, inv.op.tool))


@operation("madt_worktrees", "add", cli=("worktree", "add"), kind="local", mutating=True,
           summary="Add a linked worktree at path, checking out commit_ish, or a new branch b.", params=_WT_PARAMS)
def worktree_add_op(inv: Invocation) -> Result:
    path = _worktree_path(inv)
    commit_ish = _ref_arg(inv, "commit_ish")
    new_branch = _ref_arg(inv, "b")
    gitops.worktree_add(_grepo(inv), path, commit_ish, new_branch)
    what = f"new branch {new_branch}" if new_branch else (commit_ish or "HEAD")
    return Result(f"Added worktree {path} on {what} for {inv.repo.describe()}.",
                  {"path": path, "branch": new_branch or commit_ish})


@operation("madt_worktrees", "remove", cli=("worktree", "remove"), kind="local", mutating=True, destructive=True,
           summary="Remove a linked worktree that holds no uncommitted or unpushed work.", params=_WT_PARAMS)
def worktree_remove_op(inv: Invocation) -> Result:
    path = _worktree_path(inv)
    trees = {os.path.realpath(w.path): w for w in gitops.worktree_list(_grepo(inv))}
    tree = trees.get(os.path.realpath(path))
    if tree is None or os.path.realpath(path) == str(inv.repo.top) and not inv.repo.is_linked:
        raise guard.Refusal("BAD_ARGUMENT", f"{path} is not a linked worktree of {inv.repo.describe()}.",
                            target=inv.repo.describe(),
                            next=(guard.call("madt_worktrees", action="list", dir=str(inv.repo.top)),))
    wt = gitops.discover(Path(path))
    if wt is not None:
        st = gitops.status(wt)
        unpushed = gitops.unpushed(wt, st.branch) if st.branch else 0
        if st.staged or st.modified or st.untracked or st.conflicted or unpushed:
            what = "uncommitted changes" if (st.staged or st.modified or st.untracked or st.conflicted) else \
                f"{unpushed} unpushed commit{'s' if unpushed != 1 else ''}"
            raise guard.Refusal("UNSAVED_WORK", f"The worktree {path} holds {what}; removing it would lose them.",
                                target=path, next=(guard.call("madt_status", dir=path),),
                                user_action="Commit and push that work (madt_commit, madt_push), or ask the user "
                                "whether it may be discarded.")
    gitops.worktree_remove(_grepo(inv), path)
    return Result(closing(f"Removed worktree {path} of {inv.repo.describe()}; its branch "
                          f"{tree.branch or '(detached)'} is kept"), {"path": path})


@operation("madt_prune", cli=("prune",), kind="local", mutating=True, destructive=True,
           summary="Delete local branches whose work is proven to be in the default branch.",
           params=(Param("dry_run", "bool", "Only list what would be deleted.", short="n"),))
def prune_op(inv: Invocation) -> Result:
    repo = _grepo(inv)
    default = inv.state.default_branch
    busy = {w.branch for w in gitops.worktree_list(repo)}
    deleted, kept = [], []
    for branch in gitops.local_branches(repo):
        if branch == default or branch in busy:
            continue
        proof = _contained(inv, branch)
        if proof is None:
            kept.append(branch)
            continue
        if not inv.args.get("dry_run"):
            gitops.branch_delete(repo, branch, gitops.head_sha(repo, f"refs/heads/{branch}"))
        deleted.append((branch, proof))
    verb = "Would delete" if inv.args.get("dry_run") else "Deleted"
    lines = [f"{verb} {b} ({_PROOFS[p].format(t=default)})" for b, p in deleted] or [f"No branch is proven contained in {default}."]
    if kept:
        lines.append("Kept (work not proven in " + default + "): " + ", ".join(kept))
    text = "\n".join(lines)
    if not inv.args.get("dry_run"):
        text += "\n" + closing(f"Pruned {len(deleted)} branch{'es' if len(deleted) != 1 else ''} in {inv.identity()}")
    return Result(text, {"deleted": [b for b, _ in deleted], "kept": kept, "dry_run": bool(inv.args.get("dry_run"))})



# --- services: remote (lead) ---

# --- dispatcher (lead) ---

@dataclasses.dataclass
class Context:
    """Where a call comes from: the surface, its launch directory and any client roots."""

    surface: str                         # "mcp" or "cli"
    launch_dir: Path
    roots: list[str] | None = None       # the client's advertised roots; None when unknown


@dataclasses.dataclass
class Invocation:
    """One guarded call, handed to its service function."""

    op: Op
    args: dict[str, Any]
    ctx: Context
    target: guard.Target | None = None   # local-git calls: the repository and its state

    @property
    def repo(self) -> guard.RepoFacts:
        assert self.target is not None
        return self.target.target

    @property
    def state(self) -> guard.RepoState:
        assert self.target is not None and self.target.state is not None
        return self.target.state

    def identity(self) -> str:
        """``owner/repo @ /abs/path (branch)``: every mutation says where it landed."""
        branch = self.target.state.branch if self.target and self.target.state else None
        return f"{self.repo.describe()} ({branch or 'detached HEAD'})"


def repo_facts(repo: gitops.Repo) -> guard.RepoFacts:
    url = gitops.read_origin(repo.common_dir)
    return guard.RepoFacts(repo.top, repo.git_dir, repo.common_dir, gitops.parse_remote_url(url) if url else None)


def _launch_repo(ctx: Context) -> guard.RepoFacts | None:
    repo = gitops.fs_find_repo(ctx.launch_dir)
    return repo_facts(repo) if repo else None


def _path_signal(source: str, path: str, confirms: bool = False) -> guard.Signal | None:
    repo = gitops.fs_find_repo(Path(path))
    return guard.Signal(source, repo=repo_facts(repo), confirms_workspace=confirms) if repo else None


def _signals(op: Op, ctx: Context) -> tuple[guard.Signal, ...]:
    """Independent evidence of the caller's repository: the intent hint, roots, the agent's shell cwd."""
    if ctx.surface != "mcp":
        return ()
    found: list[guard.Signal | None] = []
    hint = os.environ.get("MADTEA_CALLER_REPO", "").strip()
    if hint:
        if os.path.isabs(hint):
            found.append(_path_signal("MADTEA_CALLER_REPO", hint, confirms=True))
        else:
            found.append(guard.Signal("MADTEA_CALLER_REPO", name=hint, confirms_workspace=True))
    if op.kind == "local" and op.mutating and ctx.roots is not None and len(ctx.roots) == 1:
        root = ctx.roots[0]
        path = urllib_path(root)
        if path:
            found.append(_path_signal("the client's workspace root", path))
    shell_cwd = caller_cwd_signal()
    if shell_cwd:
        found.append(_path_signal("the agent's shell directory", shell_cwd))
    return tuple(s for s in found if s is not None)


def urllib_path(uri: str) -> str | None:
    """A file:// root as a local path; anything else is no signal."""
    if uri.startswith("file://"):
        from urllib.parse import unquote, urlsplit  # only MCP calls with roots get here
        parts = urlsplit(uri)
        return unquote(parts.path) if parts.netloc in ("", "localhost") else None
    return uri if os.path.isabs(uri) else None


def _nested(launch: guard.RepoFacts) -> tuple[Path, ...]:
    children = []
    for path in gitops.nested_repos(launch.top):
        repo = gitops.fs_find_repo(path)
        url = gitops.read_origin(repo.common_dir) if repo else None
        children.append((path, gitops.parse_remote_url(url) if url else None))
    return tuple(guard.distinct_children(launch, children))


def _state(repo: guard.RepoFacts) -> guard.RepoState:
    """Branch, default branch, operation in progress and dirtiness: one git call."""
    grepo = gitops.Repo(repo.top, repo.git_dir, repo.common_dir)
    st = gitops.status(grepo)
    return guard.RepoState(st.branch, gitops.default_branch(grepo), st.operation, st.dirty_tracked,
                           tuple(st.conflicted))


def _resolve_local(op: Op, args: dict[str, Any], ctx: Context) -> guard.Target:
    launch = _launch_repo(ctx)
    if "dir" in args:
        path = guard.check_dir(args["dir"], op.tool)
        repo = gitops.discover(path) if path.exists() else None
        if repo is None:
            raise guard.not_a_repo(op.tool, str(path))
        target = repo_facts(repo)
        explicit = True
    else:
        if launch is None:
            raise guard.Refusal("BAD_ARGUMENT",
                                f"{op.where}: the server was launched outside any git repository "
                                f"({ctx.launch_dir}), so there is no repository to act on without dir=.",
                                target=str(ctx.launch_dir),
                                user_action=f"Call {op.tool} again with dir set to the absolute path of the repository.")
        target, explicit = launch, False
    needs_nested = ctx.surface == "mcp" and op.mutating and not explicit
    state = _state(target) if op.mutating else None
    return guard.Target(op.tool, op.action, args, op.mutating, ctx.surface, launch, target, explicit,
                        nested=_nested(target) if needs_nested else (), signals=_signals(op, ctx),
                        state=state)


def run(tool: str, raw: Mapping[str, Any], ctx: Context) -> Result:
    """Dispatch one call: find the operation, check its arguments, guard it, run it, report."""
    notes: list[tuple[str, str]] = []
    token = _NOTES.set(notes)
    try:
        result = _run(tool, raw, ctx)
    except guard.Refusal as refusal:
        result = refusal_result(refusal)
    except gitops.GitError as exc:
        result = error_result("GIT_ERROR", f"git failed: {exc}", user_action="Read git's message above; "
                              "madtea stopped at that step and changed nothing after it.")
    except Exception as exc:  # noqa: BLE001 - the boundary: no traceback reaches a caller
        forge_error = _forge_error(exc)
        if forge_error is None:
            result = error_result("INTERNAL_ERROR", f"madtea hit an internal error ({type(exc).__name__}: {exc}).",
                                  user_action="Report this to the madtea maintainers with the call you made.")
        else:
            result = forge_error
    finally:
        _NOTES.reset(token)
    result.notes = notes + result.notes
    return result


def _run(tool: str, raw: Mapping[str, Any], ctx: Context) -> Result:
    if not isinstance(raw, Mapping):
        raise guard.Refusal("BAD_ARGUMENT", f"{tool}: arguments must be an object.", target=tool,
                            user_action=f"Call {tool} again with named arguments.")
    op = find_op(tool, raw.get("action"))
    args = guard.check_arguments(op.tool, op.action, op.specs, raw, batch_action=op.batch)
    invocation = Invocation(op, args, ctx)
    if op.kind == "local":
        invocation.target = _resolve_local(op, args, ctx)
        guard.check_local(invocation.target)
    return op.handler(invocation)


def _forge_error(exc: Exception) -> Result | None:
    """A forge answer as a coded result; None when *exc* is not one."""
    forge = sys.modules.get("forge")
    if forge is None or not isinstance(exc, getattr(forge, "ForgeError", ())):
        return None
    code = getattr(exc, "code", "FORGE_UNAVAILABLE")
    user_action = {"AUTH_MISSING": "Ask the user to log in for this host with `madtea auth login`.",
                   "SCOPE_MISSING": "Ask the user for a token with the scope the forge names."}.get(code)
    return error_result(code, str(exc), getattr(exc, "target", None), user_action=user_action)



# --- CLI (lead) ---

def _cli_flag(p: Param) -> list[str]:
    names = [f"--{(p.flag or p.name).replace('_', '-')}"]
    return ([f"-{p.short}"] if p.short else []) + names


def _add_cli_param(parser: Any, p: Param) -> None:
    many = p.type in ("strs", "numbers")
    if p.positional:
        nargs = "*" if many else "?"
        parser.add_argument(p.name, nargs=nargs, help=p.description, metavar=p.name.upper())
        return
    kwargs: dict[str, Any] = {"dest": p.name, "help": p.description}
    if p.type == "bool":
        kwargs["action"] = "store_true"
        kwargs["default"] = None
    elif many:
        kwargs["nargs"] = "+"
    if p.choices:
        kwargs["choices"] = p.choices
    parser.add_argument(*_cli_flag(p), **kwargs)


def build_parser() -> Any:
    """The CLI, generated from the registry: ``madtea <noun> [<verb>] ...``."""
    import argparse  # the hook path never builds the CLI

    parser = argparse.ArgumentParser(prog="madtea", description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action="version", version=f"madtea {__version__}")
    nouns = parser.add_subparsers(dest="noun", metavar="<command>")
    groups: dict[str, Any] = {}
    for op in REGISTRY:
        head, *rest = op.cli
        if not rest:
            sub = nouns.add_parser(head, help=op.summary, description=op.summary)
        else:
            if head not in groups:
                group = nouns.add_parser(head, help=TOOL_SUMMARIES.get(op.tool, op.summary),
                                         description=TOOL_SUMMARIES.get(op.tool, op.summary))
                groups[head] = group.add_subparsers(dest="verb", metavar="<verb>", required=True)
            sub = groups[head].add_parser(rest[0], help=op.summary, description=op.summary)
        for p in op.params:
            _add_cli_param(sub, p)
        sub.set_defaults(_op=op)
    for name, (summary, fn) in CLI_EXTRAS.items():
        fn(nouns.add_parser(name, help=summary, description=summary))
    return parser


# CLI-only commands with no MCP twin (serving, hooks, diagnostics): name -> (summary, configure).
CLI_EXTRAS: dict[str, tuple[str, Callable[[Any], None]]] = {}


def cli_render(step: Mapping[str, Any]) -> str:
    """A next step in the syntax of the surface that shows it: the CLI shows CLI commands."""
    if "shell" in step:
        return str(step["shell"])
    args = dict(step.get("args", {}))
    try:
        op = find_op(step["tool"], args.pop("action", None))
    except guard.Refusal:
        return guard.render_call(step)
    words = ["madtea", *op.cli]
    specs = {p.name: p for p in op.params}
    for key, value in args.items():
        p = specs.get(key)
        if p is None:
            continue
        values = value if isinstance(value, list) else [value]
        if p.positional:
            words += [shlex_quote(str(v)) for v in values]
        elif p.type == "bool":
            words += [_cli_flag(p)[-1]] if value else []
        else:
            words += [_cli_flag(p)[-1]] + [shlex_quote(str(v)) for v in values]
    return " ".join(words)


def shlex_quote(text: str) -> str:
    import shlex
    return shlex.quote(text)


def render_text(result: Result, surface: str) -> str:
    """The whole text a caller reads: diagnostics, the outcome, and the way on."""
    parts = []
    if surface == "mcp":
        parts += [f"[{sev}] {text}" for sev, text in result.notes]
    parts.append(result.text)
    if result.error:
        show = guard.render_call if surface == "mcp" else cli_render
        steps = [s for s in result.error.get("next") or []]
        for step in steps:
            parts.append("Next: " + (f"run `{step['shell']}`" if "shell" in step else show(step)))
        if result.error.get("user_action"):
            parts.append("Ask: " + result.error["user_action"] if not steps else
                         "Otherwise: " + result.error["user_action"])
        parts.insert(0 if surface == "cli" else len(result.notes), f"{result.error['code']}:")
    return "\n".join(p for p in parts if p)


def _cli_main(args: list[str]) -> int:
    parser = build_parser()
    ns = parser.parse_args(args)
    op: Op | None = getattr(ns, "_op", None)
    if op is None:
        if getattr(ns, "_run", None):
            return ns._run(ns)
        parser.print_help()
        return 0
    raw = {p.name: getattr(ns, p.name) for p in op.params if not p.cli_only}
    raw = {k: v for k, v in raw.items() if v is not None and v != []}
    for key in [k for k, v in raw.items() if isinstance(v, list) and op.specs[k].type not in ("strs", "numbers")]:
        raw[key] = raw[key][0] if len(raw[key]) == 1 else raw[key]
    if op.action:
        raw["action"] = op.action
    _apply_cli_extras(op, ns, raw)
    result = run(op.tool, raw, Context("cli", Path(os.getcwd())))
    for severity, text in result.notes:
        _stderr(f"{severity}: {text}", "33" if severity == "warning" else "36")
    if result.is_error:
        _stderr(render_text(result, "cli"), "31")
        return 1
    if getattr(ns, "json", None):
        print(json.dumps(result.data, indent=2, ensure_ascii=False, default=str))
    else:
        print(result.text)
    return 0


def _apply_cli_extras(op: Op, ns: Any, raw: dict[str, Any]) -> None:
    """CLI conveniences: --body-file reads the body from a file or stdin."""
    body_file = getattr(ns, "body_file", None)
    if body_file:
        raw["body"] = sys.stdin.read() if body_file == "-" else Path(body_file).read_text(encoding="utf-8")


def _stderr(text: str, colour: str) -> None:
    if sys.stderr.isatty() and not os.environ.get("NO_COLOR"):
        text = f"\033[{colour}m{text}\033[0m"
    sys.stderr.write(text + "\n")



# --- MCP server (lead) ---

INSTRUCTIONS = (
    "madtea works on Gitea and Forgejo repositories and their local checkouts. Use the madt_* tools "
    "rather than raw git for staging, committing, branching, pushing and pulling. To act on a "
    "repository other than the one this server was launched in, pass dir= (local git: its absolute "
    "path) or owner_repo= (forge: owner/repo). Declare the exact files you changed; there is no "
    "stage-everything mode. Finish a unit of work with madt_finish, which commits, pushes, opens "
    "and merges the pull request, and returns to the default branch. When a call is refused, its "
    "result names the call to make next."
)

_SCHEMA_TYPES: dict[str, dict[str, Any]] = {
    "str": {"type": "string"}, "enum": {"type": "string"}, "int": {"type": "integer"},
    "bool": {"type": "boolean"}, "strs": {"type": "array", "items": {"type": "string"}},
    "number": {"type": ["integer", "string", "array"]}, "numbers": {"type": ["integer", "string", "array"]},
    "json": {},
}


def tool_description(tool: str) -> str:
    """The description an agent reads: the tool's summary, then one line per action."""
    ops = tool_ops(tool)
    if len(ops) == 1 and ops[0].action is None:
        return ops[0].summary
    lines = [TOOL_SUMMARIES.get(tool, "")] + [f"- {op.action}: {op.summary}" for op in ops]
    return "\n".join(line for line in lines if line)


def tool_schema(tool: str) -> dict[str, Any]:
    """One input schema per tool: the action enum plus every action's parameters."""
    ops = tool_ops(tool)
    props: dict[str, Any] = {}
    required: list[str] = []
    if ops[0].action is not None:
        props["action"] = {"type": "string", "enum": [op.action for op in ops]}
        required.append("action")
    for op in ops:
        for p in op.specs.values():
            if p.name in props:
                continue
            schema = dict(_SCHEMA_TYPES[p.type])
            if p.choices:
                schema["enum"] = list(p.choices)
            schema["description"] = p.description
            props[p.name] = schema
            if p.required and len(ops) == 1:
                required.append(p.name)
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


def tool_annotations(tool: str) -> dict[str, bool]:
    """Truthful hints: read-only only if every action reads; destructive if any can overwrite or remove."""
    ops = tool_ops(tool)
    read_only = not any(op.mutating for op in ops)
    hints = {"read_only_hint": read_only, "open_world_hint": any(op.kind == "remote" for op in ops)}
    if not read_only:
        hints["destructive_hint"] = any(op.destructive for op in ops)
        hints["idempotent_hint"] = all(op.idempotent for op in ops)
    return hints


def tool_names() -> list[str]:
    return list(dict.fromkeys(op.tool for op in REGISTRY))


def _needs_roots(tool: str, raw: Mapping[str, Any]) -> bool:
    ops = tool_ops(tool)
    action = raw.get("action") if isinstance(raw, Mapping) else None
    op = next((o for o in ops if o.action == action), ops[0] if ops else None)
    return bool(op and op.kind == "local" and op.mutating and "dir" not in raw)


async def _client_roots(ctx: Any) -> list[str] | None:
    """The client's roots, when it declared the capability; any failure is simply no signal."""
    import warnings

    import anyio

    session = ctx.session
    caps = session.client_capabilities
    if caps is None or caps.roots is None or not session.can_send_request:
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with anyio.fail_after(5):
                listed = await session.list_roots()
    except Exception:  # noqa: BLE001 - roots are a hint; asking must never fail the call
        return None
    return [str(root.uri) for root in listed.roots]


def build_server(launch_dir: Path | None = None) -> Any:
    """The MCP server: tools generated from the registry, raw arguments seen by the dispatcher."""
    import anyio
    from mcp import types
    from mcp.server import Server

    launch = Path(launch_dir or os.getcwd())
    tools = [types.Tool(name=name, description=tool_description(name), input_schema=tool_schema(name),
                        annotations=types.ToolAnnotations(**tool_annotations(name)))
             for name in tool_names()]

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: Any) -> Any:
        raw = params.arguments or {}
        roots = await _client_roots(ctx) if _needs_roots(params.name, raw) else None
        result = await anyio.to_thread.run_sync(lambda: run(params.name, raw, Context("mcp", launch, roots)))
        structured: dict[str, Any] = {"ok": not result.is_error}
        if result.error:
            structured.update(result.error)
        elif result.data is not None:
            structured["result"] = result.data
        return types.CallToolResult(content=[types.TextContent(type="text", text=render_text(result, "mcp"))],
                                    structured_content=structured, is_error=result.is_error)

    return Server("madtea", version=__version__, instructions=INSTRUCTIONS,
                  on_list_tools=list_tools, on_call_tool=call_tool)


def serve_mcp() -> int:
    """``madtea mcp``: serve over stdio until the client hangs up."""
    if sys.stdin.isatty():
        sys.stderr.write(
            "madtea mcp is an MCP stdio server: an MCP client starts it and talks to it over stdin and "
            "stdout, so there is nothing to type here.\nWire it into a client with a server entry whose "
            "command is `madtea` and whose args are [\"mcp\"], started in the repository to work on.\n"
            "Press Ctrl-D or Ctrl-C to quit.\n")
        return 2
    try:
        import anyio
        from mcp.server.stdio import stdio_server
    except ImportError:
        sys.stderr.write("madtea mcp needs the mcp package: pip install 'madtea[mcp]' (or pip install 'mcp>=2.3,<3').\n")
        return 1
    server = build_server()

    async def serve() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(serve)
    return 0



# --- doctor (lead) ---

def doctor_report(cwd: Path) -> list[tuple[str, str, str]]:
    """Read-only checks a newcomer runs first: (status, topic, detail) rows."""
    import shutil
    import importlib.util

    rows: list[tuple[str, str, str]] = []
    rows.append(("ok" if sys.version_info >= (3, 10) else "fail", "python", sys.version.split()[0]))
    git = shutil.which("git")
    version = gitops.git_version() if git else None
    rows.append(("ok" if version else "fail", "git", version or "git is not on PATH"))
    has_mcp = importlib.util.find_spec("mcp") is not None
    rows.append(("ok" if has_mcp else "warn", "mcp",
                 "importable: `madtea mcp` can serve" if has_mcp else "not installed: pip install 'madtea[mcp]'"))
    repo = gitops.fs_find_repo(cwd)
    if repo is None:
        rows.append(("warn", "repository", f"{cwd} is not inside a git repository; MCP tools will need dir= "
                     "or owner_repo="))
        return rows + _doctor_integrations()
    facts = repo_facts(repo)
    rows.append(("ok", "repository", f"{facts.top}" + (" (linked worktree)" if facts.is_linked else "")))
    if facts.origin is None:
        url = gitops.read_origin(repo.common_dir)
        rows.append(("warn", "origin", f"{url!r} does not name a forge repository" if url else "no origin remote"))
    else:
        rows.append(("ok", "origin", f"{facts.origin.full} → forge host {facts.origin.netloc}"))
        rows.append(_doctor_credential(facts.origin.netloc))
    nested = _nested(facts)
    rows.append(("warn" if nested else "ok", "workspace",
                 f"holds {len(nested)} other repositories, so MCP mutations without dir= are refused here"
                 if nested else "single repository"))
    return rows + _doctor_integrations()


def _doctor_credential(host: str) -> tuple[str, str, str]:
    try:
        import forge
        token, source = forge.token_for(host, host)
    except Exception as exc:  # noqa: BLE001 - a report, not an action
        return ("warn", "credential", f"could not check: {exc}")
    if token:
        return ("ok", "credential", f"{host}: from {source}")
    return ("warn", "credential", f"{host}: none found; run `madtea auth login --hostname {host}`")


def _doctor_integrations() -> list[tuple[str, str, str]]:
    home = Path.home()
    found = []
    for name, path in (("Claude Code", home / ".claude" / "plugins"), ("Codex CLI", home / ".codex" / "hooks.json"),
                       ("Gemini CLI", home / ".gemini" / "extensions" / "madtea")):
        installed = path.exists() and ("madtea" in _read_small(path) if path.is_file() else
                                       any("madtea" in p.name for p in path.glob("**/*madtea*")) if path.is_dir() else False)
        found.append(("ok" if installed else "info", name, "madtea integration installed" if installed
                      else "not installed (see the README for its one install command)"))
    return found


def _read_small(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")[:100_000]
    except OSError:
        return ""


def _doctor_cli(parser: Any) -> None:
    def run_doctor(ns: Any) -> int:
        rows = doctor_report(Path(os.getcwd()))
        width = max(len(topic) for _, topic, _ in rows)
        for status, topic, detail in rows:
            print(f"{status:>4}  {topic:<{width}}  {detail}")
        return 1 if any(status == "fail" for status, _, _ in rows) else 0
    parser.set_defaults(_run=run_doctor)


CLI_EXTRAS["doctor"] = ("Check Python, git, the mcp package, this repository, its forge and credentials (read-only).",
                        _doctor_cli)
CLI_EXTRAS["mcp"] = ("Serve the madt_* tools over MCP stdio (started by an MCP client).", lambda p: None)
CLI_EXTRAS["hook"] = ("Decide on an agent's shell command (started by the agent's harness).", lambda p: None)


# --- hook (hook helper) ---

# --- main (lead) ---


def main(argv: list[str] | None = None) -> int:
    """The one entry point: ``madtea hook``, ``madtea mcp`` or a CLI command."""
    args = sys.argv[1:] if argv is None else list(argv)
    if args[:1] == ["hook"]:
        return hook_main()
    if args[:1] == ["mcp"]:
        return serve_mcp()
    try:
        return _cli_main(args)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
