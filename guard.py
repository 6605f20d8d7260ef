"""Every refusal decision madtea makes, and the text of each refusal.

Functions here take facts (paths, common dirs, origins, caller signals, repo
state) and return a decision or raise :class:`Refusal`; they start no process
and touch no network. The hook's shell-command classifier lives here too.
"""
from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Protocol, Sequence

import gitops


__all__ = [
    "Refusal", "RepoFacts", "RepoState", "Signal", "Target", "call", "render_call", "did_you_mean",
    "check_arguments", "check_not_option", "check_dir", "not_a_repo", "distinct_children",
    "check_local", "check_signals", "check_workspace", "check_foreign", "declared_files",
    "contribution_flow", "continue_rail", "slug", "RemoteCall", "check_remote",
]

# --- wrong-repo guard and rules (lead) ---

Call = dict  # {"tool": "madt_x", "args": {...}}: a next step, as data

DO_NOT_SWEEP = "Do not retry with blanket staging; name the files."


class Refusal(Exception):
    """An expected refusal: a stable code, one plain sentence of why, and the way on.

    ``next`` holds the calls that continue the chain, as data; ``user_action``
    says what only a person can do. Every refusal carries one or the other.
    """

    def __init__(self, code: str, message: str, *, target: str | None = None,
                 next: Sequence[Call] = (), user_action: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.target = target
        self.next = tuple(next)
        self.user_action = user_action


def call(tool: str, **args: Any) -> Call:
    """A next step as data; arguments whose value is None are left out."""
    return {"tool": tool, "args": {k: v for k, v in args.items() if v is not None}}


def render_call(step: Call) -> str:
    """``madt_commit dir="/x" files=["a.py"] title="fix"``: what a refusal names."""
    parts = [step["tool"]]
    for key, value in step["args"].items():
        parts.append(f"{key}={json.dumps(value, ensure_ascii=False)}")
    return " ".join(parts)


# --------------------------------------------------------------------------- parameters

class ParamSpec(Protocol):
    name: str
    type: str          # str | int | bool | strs | number | numbers | enum | json
    required: bool
    choices: tuple[str, ...]


# A short, closed table of reflex words. No open-ended alias matching: a
# confident wrong guess is worse than a refusal.
_REFLEX = {
    "commit_message": "title", "message": "title", "msg": "title", "subject": "title",
    "query": "q", "search": "q",
    "repo": "owner_repo", "repository": "owner_repo",
    "directory": "dir", "path_to_repo": "dir", "repo_path": "dir", "cwd": "dir",
    "paths": "files", "file": "files",
}


def did_you_mean(name: str, known: Iterable[str]) -> str | None:
    """The one real parameter a mistyped *name* most likely meant, if any."""
    known = list(known)
    reflex = _REFLEX.get(name.lower())
    if reflex in known:
        return reflex
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.75)
    return close[0] if close else None


def _liberal_numbers(value: Any) -> list[int] | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return [value]
    if isinstance(value, str):
        value = [p for p in re.split(r"[\s,]+", value.strip().lstrip("#")) if p]
    if isinstance(value, (list, tuple)):
        out = []
        for item in value:
            if isinstance(item, bool):
                return None
            if isinstance(item, str) and item.strip().lstrip("#").isdigit():
                item = int(item.strip().lstrip("#"))
            if not isinstance(item, int) or item < 1:
                return None
            out.append(item)
        return out
    return None


def _bad(tool: str, action: str | None, name: str, expected: str, value: Any) -> Refusal:
    where = f"{tool} action={action}" if action else tool
    shown = json.dumps(value, ensure_ascii=False, default=str)[:80]
    return Refusal("BAD_ARGUMENT", f"{where}: {name} must be {expected}, not {shown}.",
                   target=where, next=(), user_action=None)


def _coerce(tool: str, action: str | None, spec: ParamSpec, value: Any) -> Any:
    kind = spec.type
    if kind in ("str", "enum"):
        if isinstance(value, (int, float)) and not isinstance(value, bool) and kind == "str":
            value = str(value)
        if not isinstance(value, str):
            raise _bad(tool, action, spec.name, "a string", value)
        if "\x00" in value:
            raise _bad(tool, action, spec.name, "free of NUL bytes", value)
        if kind == "enum" and value not in spec.choices:
            raise _bad(tool, action, spec.name, "one of " + ", ".join(spec.choices), value)
        return value
    if kind == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        raise _bad(tool, action, spec.name, "true or false", value)
    if kind == "int":
        numbers = _liberal_numbers(value)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
        if numbers is None or len(numbers) != 1:
            raise _bad(tool, action, spec.name, "a whole number", value)
        return numbers[0]
    if kind in ("number", "numbers"):
        numbers = _liberal_numbers(value)
        if not numbers:
            raise _bad(tool, action, spec.name, "an issue or PR number such as 12", value)
        return numbers
    if kind == "strs":
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise _bad(tool, action, spec.name, "a list of strings", value)
        if any("\x00" in v for v in value):
            raise _bad(tool, action, spec.name, "free of NUL bytes", value)
        return list(value)
    return value  # json: any shape, checked by its handler


def check_arguments(tool: str, action: str | None, specs: Mapping[str, ParamSpec],
                    raw: Mapping[str, Any], *, batch_action: str | None = None) -> dict[str, Any]:
    """Strict names, liberal shapes, hard arity: the arguments a handler may trust.

    ``number`` and ``numbers`` are one identifier: a single-target action takes
    ``numbers=[N]`` as ``number=N`` and refuses several.
    """
    where = f"{tool} action={action}" if action else tool
    out: dict[str, Any] = {}
    for name, value in raw.items():
        if name == "action":
            continue
        spec = specs.get(name)
        if spec is None and name in ("number", "numbers"):
            spec = specs.get("numbers" if name == "number" else "number")
        if spec is None:
            guess = did_you_mean(name, specs)
            hint = f" Did you mean {guess}?" if guess else ""
            known = ", ".join(sorted(specs)) or "none"
            raise Refusal("UNKNOWN_PARAMETER",
                          f"{where} has no parameter {name!r}.{hint} Its parameters are: {known}.",
                          target=where, next=(call(tool, **_with_action(action, {guess: value}))
                                              ,) if guess else (),
                          user_action=None if guess else f"Call {tool} again using only: {known}.")
        if value is None:
            continue
        out[spec.name] = _coerce(tool, action, spec, value)
    if "number" in specs and "number" in out and isinstance(out["number"], list):
        numbers = out["number"]
        if len(numbers) != 1:
            other = f" Use {tool} action={batch_action} for several." if batch_action else ""
            raise Refusal("BAD_ARGUMENT",
                          f"{where} acts on one number, but {len(numbers)} were given "
                          f"({', '.join(map(str, numbers))}).{other}",
                          target=where,
                          next=tuple(call(tool, **_with_action(action, {"number": n})) for n in numbers[:1]))
        out["number"] = numbers[0]
    for name, spec in specs.items():
        if spec.required and name not in out:
            raise Refusal("BAD_ARGUMENT", f"{where} needs {name}.", target=where,
                          user_action=f"Call {tool} again with {name} set.")
    return out


def _with_action(action: str | None, args: dict[str, Any]) -> dict[str, Any]:
    return ({"action": action} if action else {}) | {k: v for k, v in args.items() if k}


def check_not_option(value: str, name: str, where: str) -> str:
    """Values that start with '-' are never handed to git, where they would read as options."""
    if value.startswith("-"):
        raise Refusal("BAD_ARGUMENT", f"{where}: {name} {value!r} starts with '-', which git would read as an option.",
                      target=where, user_action=f"Call {where.split()[0]} again with a {name} that does not start with '-'.")
    return value


def check_dir(raw: str, tool: str) -> Path:
    """A ``dir=`` value: any absolute path; never relative, empty or blank."""
    stripped = raw.strip()
    if not stripped:
        raise Refusal("BAD_ARGUMENT", f"{tool}: dir is empty; it must be the absolute path of a git repository.",
                      target=tool, next=(), user_action=f"Call {tool} again with dir set to an absolute path, or without dir.")
    if stripped != raw:
        raise Refusal("BAD_ARGUMENT", f"{tool}: dir {raw!r} has leading or trailing white space.",
                      target=tool, next=(call(tool, dir=stripped),))
    if not Path(raw).is_absolute():
        raise Refusal("BAD_ARGUMENT", f"{tool}: dir {raw!r} is relative; the server cannot know what it is relative to.",
                      target=tool, user_action=f"Call {tool} again with dir set to the absolute path of the repository.")
    return Path(raw)


def not_a_repo(tool: str, path: str) -> Refusal:
    return Refusal("BAD_ARGUMENT", f"{tool}: {path} is not inside a git repository.", target=path,
                   user_action=f"Call {tool} again with dir set to the absolute path of a git repository.")


# --------------------------------------------------------------------------- facts

@dataclass(frozen=True)
class RepoFacts:
    """What the guard knows of one repository: where it is and whom it belongs to."""

    top: Path
    git_dir: Path
    common_dir: Path
    origin: gitops.RemoteId | None = None

    @property
    def is_linked(self) -> bool:
        return self.git_dir != self.common_dir

    @property
    def name(self) -> str:
        return self.origin.slug if self.origin else self.top.name

    def describe(self) -> str:
        return f"{self.name} @ {self.top}"


@dataclass(frozen=True)
class Signal:
    """Independent evidence of which repository the caller means. It can refuse, never redirect."""

    source: str
    repo: RepoFacts | None = None     # a path signal, resolved
    name: str | None = None           # an owner/repo or host/owner/repo signal
    confirms_workspace: bool = False  # only an explicit intent hint confirms inside a workspace

    def describe(self) -> str:
        return self.repo.describe() if self.repo else str(self.name)


def same_repo(a: RepoFacts, b: RepoFacts) -> bool:
    return a.common_dir == b.common_dir


def _name_matches(name: str, repo: RepoFacts) -> bool:
    if repo.origin is None:
        return False
    want = name.strip().strip("/").casefold().removesuffix(".git")
    if want.count("/") >= 2:
        return want == repo.origin.full.casefold() or want == f"{repo.origin.host}/{repo.origin.slug}".casefold()
    return want == repo.origin.slug.casefold()


def signal_agrees(signal: Signal, repo: RepoFacts) -> bool:
    if signal.repo is not None:
        return same_repo(signal.repo, repo)
    return signal.name is not None and _name_matches(signal.name, repo)


def distinct_children(launch: RepoFacts, children: Iterable[tuple[Path, gitops.RemoteId | None]]) -> list[Path]:
    """Nested repositories that are not the launch repo under another path.

    A child with no origin, or one that cannot be parsed, counts as distinct:
    when in doubt the structural check fails closed.
    """
    out = []
    for path, origin in children:
        if origin is None or launch.origin is None or origin.key != launch.origin.key:
            out.append(path)
    return out


# --------------------------------------------------------------------------- the wrong-repo guard

@dataclass(frozen=True)
class RepoState:
    """The target's state, as far as the rules for this call need it."""

    branch: str | None
    default_branch: str
    operation: str | None = None
    dirty_tracked: bool | None = None   # None: not gathered for this call
    conflicted: tuple[str, ...] = ()


@dataclass(frozen=True)
class Target:
    """A repo-scoped call with everything the guard needs to decide on it."""

    tool: str
    action: str | None
    args: Mapping[str, Any]
    mutating: bool
    surface: str                        # "mcp" or "cli"
    launch: RepoFacts | None            # the server's (or the shell's) cwd repo
    target: RepoFacts                   # where the call would land
    explicit: bool                      # dir= (local) or owner_repo (remote) was given
    nested: tuple[Path, ...] = ()       # distinct nested repos of the launch repo
    signals: tuple[Signal, ...] = ()
    remote: bool = False
    state: RepoState | None = None

    @property
    def foreign(self) -> bool:
        """A target outside the launch repo; with no launch repo, every target is foreign."""
        return self.launch is None or not same_repo(self.launch, self.target)

    @property
    def where(self) -> str:
        return f"{self.tool} action={self.action}" if self.action else self.tool

    def retry(self, **changes: Any) -> Call:
        args = dict(self.args) | changes
        return call(self.tool, **_with_action(self.action, args))


def check_signals(t: Target) -> None:
    """Refuse when independent evidence says the caller meant another repository."""
    if t.explicit or t.surface != "mcp":
        return
    for signal in t.signals:
        if signal_agrees(signal, t.target):
            continue
        key = "owner_repo" if t.remote else "dir"
        steps = []
        if signal.repo is not None:
            steps.append(t.retry(**{key: _identity(signal.repo, key)}))
        elif key == "owner_repo":
            steps.append(t.retry(owner_repo=signal.name))
        steps.append(t.retry(**{key: _identity(t.target, key)}))
        raise Refusal("WRONG_REPO",
                      f"This call would land on {t.target.describe()}, the server's launch repo, but "
                      f"{signal.source} points at {signal.describe()}. Name the repository you mean "
                      f"with {key}=.", target=t.target.describe(), next=tuple(steps))


def _identity(repo: RepoFacts, key: str) -> str:
    if key == "dir":
        return str(repo.top)
    return repo.origin.full if repo.origin else repo.name


def check_workspace(t: Target) -> None:
    """Fail closed on a dir-less mutation in a workspace that holds other repositories."""
    if t.explicit or t.surface != "mcp" or not t.mutating or not t.nested:
        return
    if any(s.confirms_workspace and signal_agrees(s, t.target) for s in t.signals):
        return
    names = ", ".join(str(p) for p in t.nested[:5]) + (" …" if len(t.nested) > 5 else "")
    raise Refusal("MULTI_REPO_WORKSPACE",
                  f"The server's launch repo {t.target.describe()} contains other git repositories "
                  f"({names}), so a call without dir= cannot tell which one you mean. Pass dir= with the "
                  f"absolute path of the repository to change.",
                  target=t.target.describe(),
                  next=(t.retry(dir=str(t.target.top)),) + tuple(t.retry(dir=str(p)) for p in t.nested[:5]))


# --------------------------------------------------------------------------- the foreign-target contract

def slug(text: str, fallback: str = "work") -> str:
    """A branch-name-safe slug of a title, for suggested next calls."""
    words = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return words[:40].rstrip("-") or fallback


def _suggested_branch(t: Target) -> str:
    for key in ("branch", "b", "name"):
        value = t.args.get(key)
        if isinstance(value, str) and value and not value.startswith("-"):
            return value
    title = t.args.get("title")
    return "work/" + slug(title) if isinstance(title, str) and title else "work/contribution"


def contribution_flow(t: Target) -> tuple[Call, ...]:
    """The sanctioned way to work in someone else's repository: a worktree, then finish by branch."""
    branch = _suggested_branch(t)
    path = str(t.target.top.parent / f"{t.target.top.name}-{slug(branch)}")
    return (call("madt_worktrees", action="add", dir=str(t.target.top), path=path, b=branch),
            call("madt_finish", dir=str(t.target.top), branch=branch))


_PRIMARY_IMMUTABLE = {"madt_commit", "madt_add", "madt_switch", "madt_pull", "madt_prune"}


def check_foreign(t: Target) -> None:
    """On another repository's checkout, never sweep up or move a stranger's work."""
    if t.remote or not t.foreign:
        return
    primary = not t.target.is_linked
    whose = "another repository's main checkout" if primary else "a worktree of another repository"
    if t.tool == "madt_finish" and not t.args.get("branch"):
        branch = t.state.branch if t.state and t.state.branch else _suggested_branch(t)
        raise Refusal("FOREIGN_TARGET",
                      f"{t.target.describe()} is {whose}, so madt_finish takes only the branch= form, "
                      f"which commits, switches and pulls nothing there.",
                      target=t.target.describe(), next=(call("madt_finish", dir=str(t.target.top), branch=branch,
                                                              title=t.args.get("title")),))
    if t.tool == "madt_push" and not t.args.get("branch"):
        branch = t.state.branch if t.state and t.state.branch else None
        raise Refusal("FOREIGN_TARGET",
                      f"{t.target.describe()} is {whose}, so madt_push must name the branch to push.",
                      target=t.target.describe(),
                      next=(t.retry(branch=branch),) if branch else (),
                      user_action=None if branch else "Call madt_push again with branch set to the branch to push.")
    if primary and (t.tool in _PRIMARY_IMMUTABLE or (t.tool, t.action) == ("madt_worktrees", "remove")
                    or (t.tool == "madt_branch_create" and t.args.get("checkout"))):
        raise Refusal("FOREIGN_PRIMARY",
                      f"{t.target.describe()} is {whose}; its working tree belongs to its owner, so "
                      f"{t.where} does not change it. Work in a worktree of your own and finish by branch.",
                      target=t.target.describe(), next=contribution_flow(t))
    if not primary and t.tool == "madt_prune":
        raise Refusal("FOREIGN_TARGET",
                      f"{t.target.describe()} is {whose}; pruning its branches is its owner's housekeeping.",
                      target=t.target.describe(),
                      user_action="Ask the person who owns that repository to prune its branches.")
    if not primary and t.tool == "madt_branch_create" and t.state and t.state.dirty_tracked:
        raise Refusal("FOREIGN_TARGET",
                      f"{t.target.describe()} is {whose} and has modified or staged tracked files; a new "
                      f"branch there could carry its owner's unfinished work.",
                      target=t.target.describe(), next=contribution_flow(t))


# --------------------------------------------------------------------------- rules on every target

_BLANKET = {"", ".", "./", "*", ":/", ":", "-A", "--all"}


def declared_files(t: Target) -> list[str]:
    """The files a call stages, as paths relative to the target's top; never a blanket."""
    files = t.args.get("files") or []
    if not files:
        raise Refusal("UNDECLARED_FILES",
                      f"{t.where} on {t.target.describe()} needs files: the exact paths to stage. "
                      f"There is no stage-everything mode. {DO_NOT_SWEEP}",
                      target=t.target.describe(),
                      user_action=f"Call {t.tool} again with files set to the paths you changed (madt_status lists them).")
    out = []
    for raw in files:
        path = Path(raw) if Path(raw).is_absolute() else t.target.top / raw
        try:
            rel = Path(_normpath(path)).relative_to(t.target.top)
        except ValueError:
            raise Refusal("BAD_ARGUMENT", f"{t.where}: {raw!r} is outside {t.target.describe()}.",
                          target=t.target.describe(),
                          user_action=f"Call {t.tool} again with files inside {t.target.top}.") from None
        if raw.strip() in _BLANKET or str(rel) == ".":
            raise Refusal("UNDECLARED_FILES",
                          f"{t.where}: {raw!r} would stage the whole of {t.target.describe()}. "
                          f"Name the files (or a sub-directory) instead. {DO_NOT_SWEEP}",
                          target=t.target.describe(),
                          user_action=f"Call {t.tool} again with files set to the paths you changed (madt_status lists them).")
        out.append(rel.as_posix())
    return out


def _normpath(path: Path) -> str:
    import os.path
    return os.path.normpath(str(path))


def continue_rail(t: Target) -> tuple[Call, ...]:
    """The way out of a merge, rebase or cherry-pick in progress: stage the resolutions, then continue."""
    state = t.state
    assert state is not None and state.operation is not None
    op = state.operation
    top = str(t.target.top)
    if op == "bisect":
        return ({"shell": f"git -C {_shquote(top)} bisect reset"},)
    files = list(state.conflicted) or list(t.args.get("files") or [])
    steps: list[Call] = []
    if files:
        steps.append(call("madt_add", dir=top, files=files))
    steps.append({"shell": f"GIT_EDITOR=true git -C {_shquote(top)} {op} --continue"})
    return tuple(steps)


def _shquote(text: str) -> str:
    return text if re.fullmatch(r"[A-Za-z0-9_./:@%+=-]+", text) else "'" + text.replace("'", "'\\''") + "'"


def check_mid_operation(t: Target) -> None:
    if t.tool not in ("madt_commit", "madt_finish") or t.state is None or t.state.operation is None:
        return
    if t.tool == "madt_finish" and t.args.get("branch"):
        return  # the branch= form touches no working tree
    op = t.state.operation
    rail = continue_rail(t)
    steps = " then ".join(render_call(s) if "tool" in s else f"`{s['shell']}`" for s in rail)
    raise Refusal("MID_OPERATION",
                  f"A {op} is in progress in {t.target.describe()}; a new commit now would tangle with it. "
                  f"Finish it first: {steps}. Do not retry {t.tool} until the {op} is done.",
                  target=t.target.describe(), next=rail)


def check_default_branch(t: Target) -> None:
    if t.state is None:
        return
    if t.tool == "madt_commit" and not t.args.get("allow_default_branch"):
        branch = t.state.branch
    elif t.tool == "madt_finish":
        branch = t.args.get("branch") or t.state.branch
    else:
        return
    if branch is None or branch != t.state.default_branch:
        return
    new = "work/" + slug(str(t.args.get("title") or "change"))
    dir_arg = str(t.target.top) if t.explicit else None
    steps = (call("madt_branch_create", dir=dir_arg, name=new, checkout=True), t.retry())
    if t.tool == "madt_commit":
        steps = steps + (t.retry(allow_default_branch=True),)
        why = "committing onto it is almost always a mistake"
    else:
        why = "there is no feature branch to merge"
    raise Refusal("DEFAULT_BRANCH",
                  f"{t.target.describe()} is on its default branch {branch}; {why}. Create a branch first.",
                  target=t.target.describe(), next=steps)


def check_local(t: Target) -> None:
    """Every rule for a local-git call, in order; the first that fails refuses."""
    check_signals(t)
    check_workspace(t)
    check_foreign(t)
    check_mid_operation(t)
    check_default_branch(t)


# --------------------------------------------------------------------------- remote calls and the launch scope

@dataclass(frozen=True)
class RemoteCall:
    """A forge call: which repository it would reach, and what says otherwise."""

    tool: str
    action: str | None
    args: Mapping[str, Any]
    mutating: bool
    surface: str
    target: str                          # host/owner/repo
    target_host: str
    launch: RepoFacts | None
    explicit: bool
    nested_hosts: tuple[tuple[str, str], ...] = ()   # (host/owner/repo, path) on other hosts
    signals: tuple[Signal, ...] = ()

    @property
    def where(self) -> str:
        return f"{self.tool} action={self.action}" if self.action else self.tool

    def retry(self, **changes: Any) -> Call:
        return call(self.tool, **_with_action(self.action, dict(self.args) | changes))


def _signal_names(signal: Signal) -> str | None:
    if signal.repo is not None:
        return signal.repo.origin.full if signal.repo.origin else None
    return signal.name


def _remote_agrees(signal: Signal, target: str) -> bool:
    name = _signal_names(signal)
    if name is None:
        return True  # a repository with no forge origin says nothing about forge targets
    want = name.strip().strip("/").casefold().removesuffix(".git")
    have = target.casefold()
    return have == want or have.split("/", 1)[1] == want


# Writes the launch scope allows on another forge host: filing an issue there.
_CROSS_HOST_WRITES = {("madt_issues", "create")}


def check_remote(c: RemoteCall) -> None:
    """Signals, the multi-host workspace and the launch scope, for a forge call."""
    if not c.explicit and c.surface == "mcp":
        for signal in c.signals:
            if _remote_agrees(signal, c.target):
                continue
            raise Refusal("WRONG_REPO",
                          f"This call would reach {c.target}, the launch repo's origin, but {signal.source} "
                          f"points at {_signal_names(signal)}. Name the repository with owner_repo=.",
                          target=c.target,
                          next=(c.retry(owner_repo=_signal_names(signal)), c.retry(owner_repo=c.target)))
        if c.nested_hosts:
            others = ", ".join(f"{name} at {path}" for name, path in c.nested_hosts[:5])
            raise Refusal("MULTI_REPO_WORKSPACE",
                          f"The launch repo holds repositories on other forge hosts ({others}), so a call "
                          f"without owner_repo cannot tell which forge you mean.", target=c.target,
                          next=(c.retry(owner_repo=c.target),) +
                          tuple(c.retry(owner_repo=name) for name, _ in c.nested_hosts[:5]))
    launch_host = c.launch.origin.host_key if c.launch and c.launch.origin else None
    if launch_host and c.target_host != launch_host and c.mutating and (c.tool, c.action) not in _CROSS_HOST_WRITES:
        raise Refusal("OUT_OF_SCOPE",
                      f"{c.target} is on {c.target_host}, but this server was launched for {launch_host}; "
                      f"changes on another forge host are outside its scope (reading and filing an issue "
                      f"are allowed).", target=c.target,
                      user_action=f"Ask the user to run madtea from a checkout of a {c.target_host} repository "
                      f"for this change.")


# --- hook classifier (hook helper) ---
