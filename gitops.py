"""Every git process madtea starts, and what it can learn about a repo without one.

The file opens with stand-ins for the standard library, then follows a git call:

  stand-ins               ``record`` (with ``field`` and ``replace``) for
                          dataclasses, ``to_json``/``from_json`` on json's C
                          accelerator, and ``_thread``'s lock for threading's:
                          ``madtea hook`` imports this module before every shell
                          command an agent runs; without ``record`` or the JSON
                          pair it measured over its start-up goal, and with
                          threading's lock within a tenth of it
  errors                  ``rule_at`` (the rule an expected failure names),
                          GitError and its typed kinds, ToolFailed
  the running call        Call and CALL: one call's deadline, progress and cancel
  the funnel              ``git()``, its time limit and children; ``run_tool()``
  remote URLs             RemoteId, parsed from a remote's URL
  discovery               Repo and ``discover``; the filesystem-only readers
                          (gitfiles, config, refs, operations in progress)
  status, commits and history, remotes, branches, worktrees, containment
                          one section per group of git operations
  private files           ``write_private`` and ``read_private``, the one writer
                          and one capped reader of madtea's own small files
                          (tokens, logins, the release key's pin, an update's
                          journal, the hook's record and its CLI table)

``git()`` is the only place a git subprocess is started: an argument list, an
explicit working directory, stdin closed, and an environment from which every
repo-selecting variable of the caller has been removed. ``discover`` resolves a
repository once, by git itself; every operation below passes the resulting
``Repo`` to the funnel, which pins git to its git dir and work tree, so git never
rediscovers another repository on the way.

``run_tool()`` starts the few programs that are not git (the credential
tools, ssh-keygen, a staged copy of madtea) the same way: its own session, a
time limit that kills its process group, and failures as :class:`ToolFailed`.

The filesystem-only helpers (``fs_find_repo``, ``read_origin``, ``nested_repos``,
``operation_in_progress``, ``default_branch``) start no process at all: the
agent hook and the nested-repo scan run them on every call and must stay fast.
"""
from __future__ import annotations

__all__ = [
    "MODULES",
    "rule_at",
    "GitError",
    "GitTimeout",
    "GitCancelled",
    "Call",
    "CALL",
    "PushRejected",
    "LeaseRejected",
    "NotFastForward",
    "NothingToCommit",
    "RefMoved",
    "UnsafeSetting",
    "BranchCheckedOut",
    "BranchExists",
    "PathExists",
    "NotACommit",
    "NoSuchBranch",
    "NoSuchPath",
    "OutsideSparse",
    "LocalChanges",
    "GitResult",
    "git",
    "git_timeout",
    "real_git",
    "SHIM_MARK",
    "env_seconds",
    "end_children",
    "running_children",
    "call_count",
    "reject_option",
    "ToolFailed",
    "ToolMissing",
    "run_tool",
    "hide_userinfo",
    "RemoteId",
    "parse_remote_url",
    "Repo",
    "discover",
    "NoWorkTree",
    "Unpinnable",
    "fs_find_repo",
    "fs_worktree_home",
    "fs_names",
    "read_origin",
    "nested_repos",
    "nested_origins",
    "operation_in_progress",
    "Status",
    "status",
    "default_branch",
    "origin_head",
    "remote_head",
    "remote_urls",
    "fs_branches",
    "packed_refs",
    "common_dir_of",
    "fs_checked_out",
    "fs_branches_in_use",
    "branches_in_use",
    "blob_ids", "changed_paths",
    "carry_files",
    "Commit",
    "PushResult",
    "PullResult",
    "Worktree",
    "add",
    "commit",
    "log",
    "push",
    "interrupted_pushes",
    "pushes_running",
    "remote_branch_sha",
    "fetch",
    "fetch_pull_head",
    "clone",
    "fetch_refspecs",
    "check_tracking",
    "pull_ff",
    "branch_create",
    "switch",
    "name_unborn",
    "branch_delete",
    "worktree_list",
    "worktree_add",
    "worktree_remove",
    "containment",
    "unpushed",
    "upstream",
    "unreferenced",
    "head_sha",
    "ref_exists",
    "local_branches",
    "ref_snapshot",
    "ref_moves",
    "state_snapshot",
    "local_remote_dir",
    "git_version",
    "record",
    "field",
    "replace",
    "to_json",
    "from_json",
    "UnsafeFile",
    "write_private",
    "read_private",
    "sync_file",
    "sync_folder",
]

import _thread
import contextvars
import os
import time as _time

# The hook imports this module before every shell command an agent runs:
# pathlib (which imports urllib), dataclasses (which imports inspect), re and
# json (which import enum and functools) and collections cost more than the
# hook's whole decision, so Path and re are imported where they are used (a
# pattern is a string, compiled by re on first use and kept in re's cache), the
# value types below are declared with ``record`` and JSON goes through
# ``to_json`` and ``from_json``.
# The four files madtea is, spelled once: what a person copies, what an update replaces, what the hook's copy
# of the CLI table is keyed by. (madtea.py's start, which runs before it may import this module, and
# pyproject.toml's py-modules are checked against it by the tests.)
MODULES = ("madtea.py", "guard.py", "forge.py", "gitops.py")

TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess
    from collections.abc import Callable, Iterator, Mapping, Sequence
    from pathlib import Path
    from types import FrameType
    from typing import Any, ClassVar, NoReturn, Protocol, TypeAlias, TypeVar

    # JSON as madtea reads and writes it: a forge's answers and the payloads sent to it, a tool call's arguments
    # and the result carried back, madtea's own small files. The one Any madtea names: the other modules import it.
    Json: TypeAlias = Any

    class _Recorded(Protocol):
        """An instance of a class ``_record`` made: what its methods read of it."""

        _record_fields: ClassVar[tuple[str, ...]]
        _record_names: ClassVar[frozenset[str]]
        _record_defaults: ClassVar[dict[str, object]]
        _record_plain: ClassVar[dict[str, object]]

    _R = TypeVar("_R", bound=_Recorded)

# --------------------------------------------------------------------------- stand-ins

class _Factory:
    """A field default made afresh for each instance, as ``field(default_factory=...)``."""

    __slots__ = ("make",)

    def __init__(self, make: Callable[[], object]) -> None:
        self.make = make


def _field(*, default_factory: Callable[[], object]) -> _Factory:
    return _Factory(default_factory)


def _record(cls: type | None = None, /, *, frozen: bool = False) -> type | Callable[[type], type]:
    """``@dataclass`` for madtea's value types, without importing dataclasses.

    Fields are the class's own annotations (after those of a record it
    extends), in order; a class attribute is the field's default. It gives
    ``__init__``, ``__repr__`` and ``__eq__``, and with *frozen* ``__hash__``
    and no assignment. Type checkers see the real ``dataclass``.
    """
    def wrap(cls: type) -> type:
        base = next((b for b in cls.__mro__[1:] if "_record_fields" in b.__dict__), None)
        names = list(base.__dict__["_record_fields"]) if base else []
        names += [n for n in cls.__dict__.get("__annotations__", {}) if n not in names]
        defaults = dict(base.__dict__["_record_defaults"]) if base else {}
        defaults.update({n: cls.__dict__[n] for n in names if n in cls.__dict__})
        for name, default in defaults.items():
            if isinstance(default, _Factory):
                delattr(cls, name)
        made = {"_record_fields": tuple(names), "_record_names": frozenset(names), "_record_defaults": defaults,
                "_record_plain": {n: d for n, d in defaults.items() if not isinstance(d, _Factory)},
                "__init__": _record_init, "__repr__": _record_repr, "__eq__": _record_eq,
                "__hash__": None}  # as dataclass: mutable and equal means unhashable
        if frozen:
            made |= {"__hash__": _record_hash, "__setattr__": _record_frozen, "__delattr__": _record_frozen}
        for name, value in made.items():
            setattr(cls, name, value)
        return cls
    return wrap if cls is None else wrap(cls)


def _record_init(self: _Recorded, *args: object, **kwargs: object) -> None:
    cls = type(self)
    names = cls._record_fields
    if len(args) > len(names):
        raise TypeError(f"{cls.__name__}() takes {len(names)} arguments but {len(args)} were given")
    values = dict(cls._record_plain)
    values.update(zip(names, args))
    if kwargs:
        wrong = (kwargs.keys() - cls._record_names) | (kwargs.keys() & set(names[:len(args)]))
        if wrong:
            raise TypeError(f"{cls.__name__}() got an unexpected or repeated argument {sorted(wrong)[0]!r}")
        values.update(kwargs)
    if len(values) < len(names):
        for name in names:
            if name not in values:
                default = cls._record_defaults.get(name)
                if not isinstance(default, _Factory):
                    raise TypeError(f"{cls.__name__}() missing argument {name!r}")
                values[name] = default.make()
    self.__dict__.update(values)


def _record_repr(self: _Recorded) -> str:
    return f"{type(self).__name__}(" + ", ".join(f"{n}={self.__dict__[n]!r}" for n in self._record_fields) + ")"


def _record_values(self: _Recorded) -> tuple[object, ...]:
    return tuple(self.__dict__[n] for n in self._record_fields)


def _record_eq(self: _Recorded, other: object) -> object:
    if other.__class__ is not self.__class__:
        return NotImplemented
    return _record_values(self) == _record_values(other)


def _record_hash(self: _Recorded) -> int:
    return hash(_record_values(self))


def _record_frozen(self: object, name: str, *value: object) -> NoReturn:
    raise AttributeError(f"cannot assign to field {name!r} of a frozen {type(self).__name__}")


def _replace(obj: _R, /, **changes: object) -> _R:
    """A copy of a record with some fields changed, as ``dataclasses.replace``."""
    return type(obj)(**{n: obj.__dict__[n] for n in obj._record_fields} | changes)


if TYPE_CHECKING:
    from dataclasses import dataclass as record, field, replace
else:
    record, field, replace = _record, _field, _replace


# The json package imports re, enum and functools, a third of the hook's time; its own C accelerator
# does not. These two call the accelerator as json does and hand anything else to json itself, so a
# result or an error is always json's own.
_JSON_CONSTANTS = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}


class _JsonContext:
    strict, object_hook, object_pairs_hook = True, None, None
    parse_float, parse_int, parse_constant = float, int, _JSON_CONSTANTS.__getitem__


def _json_refused(value: object) -> NoReturn:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def to_json(value: object, *, ensure_ascii: bool = True, separators: tuple[str, str] = (", ", ": "),
            default: Callable[[object], object] | None = None) -> str:
    """``json.dumps(value, ensure_ascii=..., separators=..., default=...)``."""
    try:
        import _json
        quote = _json.encode_basestring_ascii if ensure_ascii else _json.encode_basestring
        encode = _json.make_encoder({}, default or _json_refused, quote, None, separators[1], separators[0],
                                    False, False, True)
        return "".join(encode(value, 0))
    except Exception:  # no accelerator, or a value json itself must judge
        import json
        return json.dumps(value, ensure_ascii=ensure_ascii, separators=separators, default=default)


def from_json(text: str) -> Json:
    """``json.loads(text)`` for a str."""
    try:
        import _json
        start, end = len(text) - len(text.lstrip(" \t\n\r")), len(text.rstrip(" \t\n\r"))
        # typeshed names the scanner type as its context; json itself passes its decoder, as this passes _JsonContext
        value, stop = _json.make_scanner(_JsonContext())(text, start)  # type: ignore[arg-type]
        if stop == end:
            return value
    except Exception:  # no accelerator, or text json itself must judge
        pass
    import json
    return json.loads(text)


# Variables that let the caller's environment choose a different repository,
# index or object store than the one ``cwd`` names.
_REPO_SELECTING = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
)
# GIT_CONFIG redirects ``git config`` alone: a check made with ``git config`` would read another file than
# the push or pull it checks. Every other variable that chooses git's configuration (GIT_CONFIG_GLOBAL,
# GIT_CONFIG_SYSTEM, GIT_CONFIG_NOSYSTEM, GIT_CONFIG_COUNT/KEY/VALUE, GIT_CONFIG_PARAMETERS) is read by every
# git command alike, so it is kept: the check and the act see one configuration.
_ONE_COMMAND_CONFIG = ("GIT_CONFIG",)
_FIXED_ENV = {
    "GIT_TERMINAL_PROMPT": "0",  # a prompt would hang: stdin is closed or is the MCP protocol
    "GIT_EDITOR": "true",
    "GIT_SEQUENCE_EDITOR": "true",
    "GIT_LITERAL_PATHSPECS": "1",  # a declared file named "*.py" or ":(top)" means that file only
    "LC_ALL": "C",  # stderr is matched against git's English messages
}
_SSH_BATCH = "ssh -o BatchMode=yes"
_HEX_SHA = r"[0-9a-f]{40}(?:[0-9a-f]{24})?"

DEFAULT_TIMEOUT = 120.0  # seconds of wall clock for one git child, its own children included
TIMEOUT_ENV = "MADTEA_GIT_TIMEOUT"  # seconds, overriding DEFAULT_TIMEOUT (and CLONE_TIMEOUT)
CLONE_TIMEOUT = 3600.0  # seconds a person's whole clone may take: a large repository outlasts DEFAULT_TIMEOUT

_calls = 0
_calls_lock = _thread.allocate_lock()
# Every running child, git or a tool, by pid (its process group id too: each starts a new
# session), so a shutting-down server can end them; they are outside its own group.
_children: dict[int, object] = {}
_closing: list[bool] = []  # non-empty once end_children ran: nothing more starts


# --------------------------------------------------------------------------- errors

def rule_at(frame: FrameType | None) -> str:
    """The rule an expected failure built in *frame* comes from: the function building it (a comprehension or
    a lambda is part of the function it stands in). guard's refusals and forge's errors carry it as ``rule``."""
    while frame is not None and frame.f_code.co_name.startswith("<"):
        frame = frame.f_back
    return frame.f_code.co_name if frame is not None else "unknown"


class GitError(Exception):
    """A git command failed; carries its argv (no secrets), exit status and stderr."""

    def __init__(self, argv: Sequence[str], returncode: int, stderr: str) -> None:
        self.argv = [hide_userinfo(str(a)) for a in argv]
        self.returncode = returncode
        self.stderr = hide_userinfo(stderr)
        super().__init__(self.argv, returncode, self.stderr)

    @property
    def subcommand(self) -> str:
        """The git subcommand that failed (``push`` for ``git -c x=y push ...``)."""
        return _subcommand(self.argv)

    def __str__(self) -> str:
        head = f"git {_subcommand(self.argv)} failed (exit {self.returncode})"
        detail = _first_lines(self.stderr)
        return f"{head}: {detail}" if detail else head


class GitTimeout(GitError):
    """A git command ran past its timeout; its whole process group was killed.

    ``by_call`` is true when the limit was the running call's deadline rather than git's own timeout.
    """

    def __init__(self, argv: Sequence[str], seconds: float, by_call: bool = False) -> None:
        super().__init__(argv, -1, f"timed out after {seconds:g} s")
        self.seconds = seconds
        self.by_call = by_call


class GitCancelled(GitError):
    """The call this git command belonged to was cancelled: it was ended (or never started) with its process group."""

    def __init__(self, argv: Sequence[str], started: bool) -> None:
        super().__init__(argv, -1, f"{'ended' if started else 'not started'}: the call was cancelled")


class ToolFailed(Exception):
    """A program that is not git did not run to its end; ``reason`` says how, after the program's name."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"{name} {reason}")
        self.name, self.reason = name, reason


class ToolMissing(ToolFailed):
    """The program is not on PATH, or not at the path given."""


class PushRejected(GitError):
    """The remote refused the update; ``kind`` is "non-fast-forward", "lease", "remote" or "other"."""

    def __init__(self, argv: Sequence[str], returncode: int, stderr: str, *, reason: str, kind: str) -> None:
        super().__init__(argv, returncode, stderr)
        self.reason = reason
        self.kind = kind

    def __str__(self) -> str:
        return f"git push rejected ({self.reason})"


class LeaseRejected(PushRejected):
    """The remote branch is no longer at the sha the lease expected."""


class NotFastForward(GitError):
    """``pull --ff-only`` found diverged history; nothing was changed."""


class NothingToCommit(GitError):
    """The declared files carry no change to commit."""


class NoSpace(GitError):
    """The disk that holds the repository is full, or its quota spent: git stopped part way. *staged* is what
    the index holds of the declared files now; *free* the bytes left there, when known."""

    def __init__(self, argv: Sequence[str], returncode: int, stderr: str) -> None:
        super().__init__(argv, returncode, stderr)
        self.quota = "Disk quota exceeded" in stderr
        self.staged: tuple[str, ...] = ()
        self.free: int | None = None
        self.disk = ""


class RefMoved(GitError):
    """A compare-and-swap ref update found the ref elsewhere than expected (or gone)."""


class UnsafeSetting(GitError):
    """A git setting would make a write do more, or other, than madtea asked, and no per-call option turns it
    off: the setting (``remote.origin.fetch``), its value, and what it would do."""

    def __init__(self, argv: Sequence[str], setting: str, value: str, effect: str) -> None:
        super().__init__(argv, -1, f"{setting}={value} {effect}")
        self.setting = setting
        self.value = value
        self.effect = effect


class BranchCheckedOut(GitError):
    """The branch is checked out in a worktree, so deleting it would orphan that HEAD."""

    def __init__(self, argv: Sequence[str], branch: str, worktree: Path, how: str = "checked out") -> None:
        super().__init__(argv, -1, f"branch {branch!r} is {how} at {worktree}")
        self.branch = branch
        self.worktree = worktree
        self.how = how  # "checked out", "being rebased" or "being bisected"


class BranchExists(GitError):
    """A branch of that name exists already; nothing was created."""

    def __init__(self, argv: Sequence[str], returncode: int, stderr: str, *, branch: str) -> None:
        super().__init__(argv, returncode, stderr)
        self.branch = branch


class PathExists(GitError):
    """A worktree path that is already there (a file, or a directory with something in it)."""

    def __init__(self, argv: Sequence[str], returncode: int, stderr: str, *, path: str) -> None:
        super().__init__(argv, returncode, stderr)
        self.path = path


class NotACommit(GitError):
    """A ref, start point or commit-ish names no commit (an unborn HEAD names none yet)."""

    def __init__(self, argv: Sequence[str], returncode: int, stderr: str, *, ref: str | None) -> None:
        super().__init__(argv, returncode, stderr)
        self.ref = ref


class NoSuchPath(GitError):
    """A declared path is neither in the working tree nor known to git; nothing was staged."""

    def __init__(self, argv: Sequence[str], returncode: int, stderr: str) -> None:
        super().__init__(argv, returncode, stderr)
        import re
        self.paths = tuple(m.group(1) for m in re.finditer(_NO_PATH, stderr))


class OutsideSparse(GitError):
    """Declared paths lie outside the sparse checkout's rules; git staged none of the declared files."""

    def __init__(self, argv: Sequence[str], returncode: int, stderr: str) -> None:
        super().__init__(argv, returncode, stderr)
        import re
        found = re.search(_OUTSIDE_SPARSE, stderr)
        listed = found.group(1).splitlines() if found else []
        self.paths = tuple(p.strip() for p in listed if p.strip() and not p.startswith("hint:"))


class NoSuchBranch(NotACommit):
    """A call that needs a local branch named one that is not there."""


class LocalChanges(GitError):
    """A switch or pull would overwrite uncommitted changes to ``paths``; nothing was changed."""

    def __init__(self, argv: Sequence[str], returncode: int, stderr: str) -> None:
        super().__init__(argv, returncode, stderr)
        self.paths = tuple(line.strip() for line in stderr.splitlines() if line.startswith("\t") and line.strip())


_CHECKED_OUT = r"'(.+)' is already (?:checked out|used by worktree) at '(.+)'"
_OUTSIDE_SPARSE = (r"outside of your sparse-checkout definition, so will not be\s+updated in the index:\n"
                   r"((?:(?!hint:)[^\n]*\n?)*)")
_NO_SPACE = r"No space left on device|Out of diskspace|Disk quota exceeded"
_REF_TAKEN = r"cannot lock ref 'refs/heads/([^'\n]+)': reference already exists"
_NO_PATH = r"pathspec '([^'\n]*)' did not match any files?"
_NO_COMMIT = (r"invalid reference|not a valid object name|bad revision|unknown revision|"
              r"couldn't find remote ref|is not a commit|needed a single revision")


def _failure(argv: Sequence[str], returncode: int, stderr: str, *, ref: str | None = None,
             branch: str | None = None, path: str | None = None) -> GitError:
    """The typed error for a failure git explains in a way madtea foresees; a plain GitError otherwise."""
    import re
    if "would be overwritten by" in stderr:
        return LocalChanges(argv, returncode, stderr)
    if re.search(_NO_SPACE, stderr):
        return NoSpace(argv, returncode, stderr)
    if re.search(_OUTSIDE_SPARSE, stderr):
        return OutsideSparse(argv, returncode, stderr)
    if re.search(_NO_PATH, stderr):
        return NoSuchPath(argv, returncode, stderr)
    checked_out = re.search(_CHECKED_OUT, stderr)
    if checked_out:
        from pathlib import Path
        return BranchCheckedOut(argv, checked_out.group(1), Path(checked_out.group(2)))
    taken = re.search(_REF_TAKEN, stderr)
    if taken:  # the loser of a race for a new branch's name: git's own check passed, its lock did not
        return BranchExists(argv, returncode, stderr, branch=branch or taken.group(1))
    if branch is not None and "a branch named" in stderr and "already exists" in stderr:
        return BranchExists(argv, returncode, stderr, branch=branch)
    if path is not None and "already exists" in stderr:
        return PathExists(argv, returncode, stderr, path=path)
    if re.search(_NO_COMMIT, stderr):
        return NotACommit(argv, returncode, stderr, ref=ref)
    return GitError(argv, returncode, stderr)


# --------------------------------------------------------------------------- the running call

class Call:
    """One tool call's controls over the work it starts: a deadline, progress, and a cancel.

    The server sets one in :data:`CALL` for the thread that runs a call. ``git()`` reads it: no child
    starts after a cancel or past the deadline, every child's process group is held so :meth:`cancel`
    can end it, and transport commands stream git's ``--progress`` lines to it. forge's funnel reads
    the same one: it holds each request's connection and its retry waits the same way.
    """

    def __init__(self, deadline: float | None = None, reporting: bool = False) -> None:
        import threading

        self.deadline = deadline        # time.monotonic() by which the call must answer; None: no call limit
        self.reporting = reporting      # the client asked for progress
        self._cancelled = threading.Event()
        self._lock = threading.Lock()
        self._stops: dict[int, Callable[[], None]] = {}
        self._next = 0
        self.said: tuple[int, str] = (0, "")  # (how many messages so far, the latest)
        self._step = ""
        # The client's person, when it can ask one: (message, form schema) -> (action, content).
        self.ask: Callable[[str, dict[str, Json]], tuple[str, dict[str, Json] | None]] | None = None

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def remaining(self) -> float | None:
        return None if self.deadline is None else self.deadline - _time.monotonic()

    def progress(self, text: str) -> None:
        """Tell the client which step the call is on now (kept only when it asked for progress)."""
        if self.reporting and text:
            with self._lock:
                self._step = text[:200]
                self.said = (self.said[0] + 1, self._step)

    def detail(self, text: str) -> None:
        """Tell the client what the current step is doing (git's counters, a forge request or its retry)."""
        if self.reporting and text:
            with self._lock:
                self.said = (self.said[0] + 1, f"{self._step} — {text[:200]}" if self._step else text[:200])

    def hold(self, stop: Callable[[], None]) -> int:
        """Run *stop* if the call is cancelled while it is held (at once, if it already was)."""
        with self._lock:
            self._next += 1
            key = self._next
            self._stops[key] = stop
        if self.cancelled:
            self.release(key)
            stop()
        return key

    def release(self, key: int) -> None:
        with self._lock:
            self._stops.pop(key, None)

    def wait(self, seconds: float) -> bool:
        """Sleep up to *seconds*; True (at once) when the call is cancelled."""
        return self._cancelled.wait(max(0.0, seconds))

    def cancel(self) -> None:
        """End everything the call holds now and start nothing more."""
        self._cancelled.set()
        with self._lock:
            stops = list(self._stops.values())
            self._stops.clear()
        for stop in stops:
            stop()


CALL: contextvars.ContextVar[Call | None] = contextvars.ContextVar("madtea_call", default=None)

# Lines git rewrites in place while it counts (objects, deltas), on its own side or the remote's:
# reported as progress, left out of the stderr kept for messages.
_PROGRESS_LINE = (r"(?:remote: )?(?:(?:Enumerating|Counting|Compressing|Writing|Receiving|Resolving|"
                  r"Unpacking|Finding) (?:objects|deltas|sources)|Total \d+|Delta compression)")


# --------------------------------------------------------------------------- the funnel

@record(frozen=True)
class GitResult:
    returncode: int
    stdout: bytes
    stderr: bytes

    @property
    def text(self) -> str:
        """stdout decoded (undecodable bytes replaced), trailing newlines stripped."""
        return _decode(self.stdout).rstrip("\n")

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def git(
    *args: str | os.PathLike[str],
    cwd: str | os.PathLike[str] | None = None,
    repo: Repo | None = None,
    check: bool = True,
    input: bytes | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    progress: bool = False,
) -> GitResult:
    """Run ``git *args`` on *repo* (pinned to its git dir and work tree), or in *cwd*, and capture its
    output as bytes.

    A call for a resolved repository passes *repo*: git is then told which git dir and work tree
    to use and discovers nothing, so a ``core.worktree``, a bare repository inside a work tree or
    a separate git dir can never turn it towards another repository. *cwd* alone is for the
    resolution itself and for calls that name no repository.

    Raises :class:`GitError` on a non-zero exit when *check* is true, and
    :class:`GitTimeout` (whatever *check* says) when *timeout* (default
    :func:`git_timeout`) or the running call's deadline runs out;
    :class:`GitCancelled` when the call is cancelled. After
    :func:`end_children` nothing starts. With *progress*, a call that asked
    for progress gets git's own progress lines as they come.
    """
    argv, where, env = _git_argv(args, cwd, repo, env)
    call = CALL.get()
    timeout, by_call = _git_budget(call, timeout)
    _count_call()
    _git_may_start(argv, call, timeout, by_call)
    streamed = progress and call is not None and call.reporting
    proc, err_pipe = _git_spawn(argv, where, env, input, streamed)
    out, err = _git_collect(proc, argv, input, timeout, by_call, call, err_pipe)
    return _git_result(proc, argv, out, err, call, check)


# The first line of madtea's exec-time ``git`` (guard's shim) carries this mark: madtea's own git children, and
# the shim itself, look past any PATH entry whose ``git`` holds it, so neither ever runs through a shim.
SHIM_MARK = b"madtea-git-shim"
_real_git: tuple[str, str | None] | None = None


def real_git() -> str | None:
    """The absolute path of the first ``git`` on PATH that is not madtea's shim (None: no git on PATH).

    A shim found twice on PATH, or under another name for the same folder, is skipped each time, so
    nothing that asks here can loop. Cached per PATH value."""
    global _real_git
    path = os.environ.get("PATH", os.defpath)
    if _real_git is not None and _real_git[0] == path:
        return _real_git[1]
    found: str | None = None
    for folder in path.split(os.pathsep):
        candidate = os.path.join(os.path.abspath(folder or "."), "git")
        if os.path.isdir(candidate) or not os.access(candidate, os.X_OK):
            continue
        try:
            with open(candidate, "rb") as fh:
                head = fh.read(256)
        except OSError:
            continue
        if SHIM_MARK not in head:
            found = candidate
            break
    _real_git = (path, found)
    return found


def _git_argv(args: tuple[str | os.PathLike[str], ...], cwd: str | os.PathLike[str] | None, repo: Repo | None,
              env: Mapping[str, str] | None
              ) -> tuple[list[str], str | os.PathLike[str], Mapping[str, str] | None]:
    """The argv, the directory to run in and the environment, with a resolved *repo* pinned by GIT_DIR and
    GIT_WORK_TREE so that nothing git discovers can turn the call towards another repository."""
    argv = ["git", *(os.fspath(a) for a in args)]
    if repo is not None:
        env = {**(env or {}), "GIT_DIR": os.fspath(repo.git_dir), "GIT_WORK_TREE": os.fspath(repo.top)}
        cwd = repo.top if cwd is None else cwd
    if cwd is None:
        raise TypeError("git() needs the repo it acts on, or a cwd")
    return argv, cwd, env


def _git_budget(call: Call | None, timeout: float | None) -> tuple[float, bool]:
    """The seconds git may run and whether the running call's deadline, not git's own limit, sets them:
    the timeout message names which one ran out."""
    timeout = git_timeout() if timeout is None else timeout
    left = call.remaining() if call is not None else None
    by_call = left is not None and left < timeout
    if by_call:
        timeout = max(0.0, left or 0.0)
    return timeout, by_call


def _git_may_start(argv: list[str], call: Call | None, timeout: float, by_call: bool) -> None:
    """Refuse to start a child that shutdown, a cancel or a spent deadline would only have to end."""
    if _closing:
        raise GitError(argv, -1, "not started: madtea is shutting down")
    if call is not None and call.cancelled:
        raise GitCancelled(argv, started=False)
    if by_call and timeout <= 0:
        raise GitTimeout(argv, 0, by_call=True)


def _git_spawn(argv: list[str], cwd: str | os.PathLike[str], env: Mapping[str, str] | None, input: bytes | None,
               streamed: bool) -> tuple[subprocess.Popen[bytes], tuple[int, int] | None]:
    """Start git; with *streamed*, its stderr goes to a pipe read as it comes (returned as its two ends)."""
    # Imported here, not at the top: the hook imports this module for its
    # filesystem helpers only and must not pay for subprocess on every event.
    import subprocess

    err_read, err_write = os.pipe() if streamed else (-1, -1)
    try:
        proc = subprocess.Popen(
            argv,
            executable=real_git() or argv[0],  # never madtea's own shim: madtea's git is already judged
            cwd=os.fspath(cwd),
            env=_child_env(env),
            stdin=subprocess.DEVNULL if input is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err_write if streamed else subprocess.PIPE,
            # A new session has no controlling terminal, so nothing git runs
            # (ssh, a credential helper) can open /dev/tty and wait for a person;
            # it also gives a process group to kill on timeout or cancel.
            start_new_session=True,
        )
    except OSError as exc:  # git missing, or cwd gone
        if streamed:
            os.close(err_read)
            os.close(err_write)
        raise GitError(argv, -1, str(exc)) from exc
    return proc, (err_read, err_write) if streamed else None


def _git_collect(proc: subprocess.Popen[bytes], argv: list[str], input: bytes | None, timeout: float, by_call: bool,
                 call: Call | None, err_pipe: tuple[int, int] | None) -> tuple[bytes, bytes]:
    """Hold the child where shutdown and a cancel can end it, wait for it within *timeout*, and give its
    stdout and stderr; whatever ends the wait early ends the child's whole group first."""
    import subprocess

    held = call.hold(lambda: _end_group(proc.pid)) if call is not None else 0
    reader = _progress_reader(*err_pipe, call) if err_pipe is not None and call is not None else None
    try:
        out, err = _communicate(proc, input, timeout)
    except subprocess.TimeoutExpired:
        raise GitTimeout(argv, timeout, by_call=by_call) from None
    finally:
        if call is not None:
            call.release(held)
        if reader is not None:
            err = reader()
    return out, err


def _git_result(proc: subprocess.Popen[bytes], argv: list[str], out: bytes, err: bytes, call: Call | None,
                check: bool) -> GitResult:
    """Map how the child ended: shutdown and a cancel are told apart from git's own failure."""
    if _closing and proc.returncode < 0:
        raise GitError(argv, proc.returncode, "ended: madtea is shutting down")
    if call is not None and call.cancelled:
        _kill_group(proc.pid)  # whatever of its group outlived the leader
        if proc.returncode != 0:
            raise GitCancelled(argv, started=True)
    result = GitResult(proc.returncode, out, err)
    if check and proc.returncode != 0:
        raise GitError(argv, proc.returncode, _decode(err))
    return result


def _progress_reader(fd: int, write_end: int, call: Call) -> Callable[[], bytes]:
    """Read a child's stderr from *fd* as it comes: each progress line goes to *call*; the rest is kept.

    Returns a function that waits for the end of the stream and gives the kept bytes.
    """
    import threading

    os.close(write_end)  # the child holds its own copy; the stream ends when the child's group closes it
    kept: list[bytes] = []

    def read() -> None:
        pending = b""
        with open(fd, "rb", buffering=0) as stream:
            while chunk := stream.read(4096):
                *lines, pending = (pending + chunk).split(b"\n")
                for line in lines:
                    *rewritten, last = line.split(b"\r")
                    for each in rewritten:
                        _progress_line(each + b"\r", call, kept)
                    _progress_line(last, call, kept)
                *rewritten, pending = pending.split(b"\r")
                for each in rewritten:
                    _progress_line(each + b"\r", call, kept)
        _progress_line(pending, call, kept)

    thread = threading.Thread(target=read, name="madtea-git-progress", daemon=True)
    thread.start()

    def done() -> bytes:
        thread.join(5.0)
        return b"\n".join(kept) + (b"\n" if kept else b"")
    return done


def _progress_line(raw: bytes, call: Call, kept: list[bytes]) -> None:
    """One stderr line: progress (rewritten in place, or a counter's last state) is said, not kept."""
    import re
    text = _decode(raw).strip("\r").strip()
    if not text:
        return
    counting = raw.endswith(b"\r") or bool(re.match(_PROGRESS_LINE, text))
    call.detail(f"git: {text}")
    if not counting:
        kept.append(raw.rstrip(b"\r"))


def _end_group(pid: int) -> None:
    """End a cancelled call's child: its whole group at once (SIGTERM lets git drop its lock files), then
    SIGKILL for anything still there a moment later."""
    import signal
    import threading

    _kill_group(pid, getattr(signal, "SIGTERM", 15))
    timer = threading.Timer(0.5, _kill_group, (pid,))
    timer.daemon = True
    timer.start()


def git_timeout() -> float:
    """The wall-clock limit of one git child: ``MADTEA_GIT_TIMEOUT`` seconds, else the default."""
    return env_seconds(TIMEOUT_ENV, DEFAULT_TIMEOUT)


def env_seconds(name: str, default: float, below: float = 86400.0) -> float:
    """The seconds the environment variable *name* sets, when it is a number above 0 and below *below*;
    else *default*."""
    try:
        seconds = float(os.environ.get(name, ""))
    except ValueError:
        return default
    return seconds if 0 < seconds < below else default


def running_children() -> list[int]:
    """The pids (and process group ids) of the children (git or a tool) running now."""
    with _calls_lock:
        return list(_children)


def end_children(grace: float = 1.0) -> int:
    """End every running child (git or a tool) and its process group, and start no more; returns how many there were.

    SIGTERM first, so git removes its lock files (an index.lock left behind
    would block the next commit); whatever is still running after *grace*
    seconds is killed.
    """
    import signal
    import time

    _closing.append(True)
    groups = running_children()
    for pid in groups:
        _kill_group(pid, getattr(signal, "SIGTERM", 15))
    give_up = time.monotonic() + grace
    while running_children() and time.monotonic() < give_up:
        time.sleep(0.02)
    for pid in groups:  # the leaders that exited may have left children in their group
        _kill_group(pid)
    return len(groups)


def call_count() -> int:
    """How many git processes this module has started (for the benchmarks)."""
    return _calls


def reject_option(value: str, what: str) -> str:
    """Return *value*, or raise ValueError if git could read it as an option."""
    if value.startswith("-"):
        raise ValueError(f"{what} must not start with '-': {value!r}")
    if "\0" in value:
        raise ValueError(f"{what} must not contain a NUL byte")
    return value


def _count_call() -> None:
    global _calls
    with _calls_lock:
        _calls += 1


def _child_env(extra: Mapping[str, str] | None) -> dict[str, str]:
    # madtea's tokens never reach git or what git runs (hooks, helpers): git
    # transport gets its credential from madtea's helper, which reads it itself.
    env = {k: v for k, v in os.environ.items()
           if k.upper() not in _REPO_SELECTING and k.upper() not in _ONE_COMMAND_CONFIG
           and not k.upper().startswith("MADTEA_TOKEN")}
    env.update(_FIXED_ENV)
    if "GIT_SSH_COMMAND" not in env and "GIT_SSH" not in env:
        env["GIT_SSH_COMMAND"] = _SSH_BATCH
    if extra:
        env.update(extra)
    return env


def _kill_group(pid: int, signo: int | None = None) -> None:
    import signal

    try:
        if hasattr(os, "killpg"):
            os.killpg(pid, signo or signal.SIGKILL)  # git's own children (ssh, helpers) too
        else:  # Windows: no process groups; os.kill terminates the process
            os.kill(pid, signal.SIGTERM)
    except OSError:
        pass  # already gone


def _communicate(proc: subprocess.Popen[bytes], input: bytes | None, timeout: float) -> tuple[bytes, bytes]:
    """Wait for a child within *timeout* where :func:`end_children` can reach it, and give its stdout and
    stderr; whatever ends the wait early (past *timeout*: ``TimeoutExpired``) ends its whole group first."""
    import subprocess

    with _calls_lock:
        _children[proc.pid] = proc
    try:
        if _closing:  # end_children ran between the caller's check and the registration
            _kill_group(proc.pid)
        return proc.communicate(input, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc.pid)
        proc.communicate()
        raise
    except BaseException:
        _kill_group(proc.pid)
        raise
    finally:
        with _calls_lock:
            _children.pop(proc.pid, None)


def run_tool(argv: Sequence[str], *, timeout: float, stdin: bytes | None = None,
             cwd: str | os.PathLike[str] | None = None) -> tuple[int, bytes, bytes]:
    """(exit status, stdout, stderr) of a program that is not git, run as git is: its own session, bytes out.

    Raises :class:`ToolMissing` when it is not there, and :class:`ToolFailed` when it cannot be started,
    runs past *timeout* seconds (its whole process group is killed) or is ended by a signal;
    :func:`end_children` ends it as it ends git.
    """
    import subprocess

    name = os.path.basename(argv[0])
    if _closing:
        raise ToolFailed(name, "was not started: madtea is shutting down")
    try:
        proc = subprocess.Popen(list(argv), cwd=cwd, stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    except FileNotFoundError:
        raise ToolMissing(name, "is not on PATH" if name == argv[0] else f"is not at {argv[0]}") from None
    except OSError as exc:
        raise ToolFailed(name, f"could not be started ({exc.strerror or exc})") from None
    try:
        out, err = _communicate(proc, stdin, timeout)
    except subprocess.TimeoutExpired:
        raise ToolFailed(name, f"did not answer within {timeout:g} s") from None
    if proc.returncode < 0:
        raise ToolFailed(name, "was ended: madtea is shutting down" if _closing else
                         f"was ended by signal {-proc.returncode}")
    return proc.returncode, out, err


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


# Anchored at "://" and stopped at the next "/", so the match is linear in the text
# (a scheme pattern in front was tried at every letter: quadratic in a long value).
_USERINFO = r"://[^/@\s]+@"


def hide_userinfo(text: str) -> str:
    """*text* with user:password@ of every URL as ``***@``: a token must never reach an error text."""
    import re
    return re.sub(_USERINFO, "://***@", text)


def _subcommand(argv: Sequence[str]) -> str:
    it = iter(argv[1:])
    for arg in it:
        if arg in ("-c", "-C"):
            next(it, None)
        elif not arg.startswith("-"):
            return arg
    return "(none)"


def _first_lines(stderr: str, limit: int = 3) -> str:
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip() and not ln.startswith("hint:")]
    return " / ".join(lines[:limit])


# --------------------------------------------------------------------------- remote URLs

@record(frozen=True)
class RemoteId:
    """Where a remote URL points: host, optional port, sub-path prefix, owner/repo.

    ``key`` is the identity used to decide "same repository": case-folded
    ``host/owner/repo`` without port or prefix, because the same forge repo is
    reached over https on 443 under a sub-path and over ssh on another port
    without one. Two forges on one host that differ only by port compare equal.
    """

    host: str  # lower-case; an IPv6 address without brackets
    port: int | None
    owner: str
    repo: str  # without ".git"
    path_prefix: str  # "" or the segments before owner, e.g. "gitea"
    scheme: str  # "https" | "http" | "ssh" (scp-style is "ssh")

    @property
    def slug(self) -> str:
        return f"{self.owner}/{self.repo}"

    @property
    def netloc(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port is None else f"{host}:{self.port}"

    @property
    def full(self) -> str:
        return f"{self.netloc}/{self.slug}"

    @property
    def key(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}/{self.owner}/{self.repo}".casefold()


_SCHEMES = {"https": "https", "http": "http", "ssh": "ssh", "git+ssh": "ssh", "ssh+git": "ssh"}
_HOSTNAME = r"[A-Za-z0-9][A-Za-z0-9._-]*"
_IPV6 = r"[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*(?:%[A-Za-z0-9._-]+)?"
_PORT = r"[0-9]{1,5}"
_NAME = r"[A-Za-z0-9._-]+"
# scp-style is git's rule: a colon before the first slash; brackets allow IPv6.
_SCP = r"(?s)(?:[^@/:\[\]]+@)?(\[[^\]/]+\]|[^:/\[\]@]+):(.*)"


_SPACE_OR_CONTROL = r"[\s\x00-\x1f]"  # \s is str.isspace's set


def parse_remote_url(url: str) -> RemoteId | None:
    """Parse an https/http, ssh:// or scp-style remote URL; None for anything else.

    Local paths, ``file://`` and ``git://`` URLs, and URLs whose owner or repo
    is not a plain forge name give None; callers treat None as "unknown".
    """
    if url in _PARSED_URLS:
        return _PARSED_URLS[url]  # a RemoteId or None: both immutable
    if len(_PARSED_URLS) >= 4096:
        _PARSED_URLS.clear()
    parsed = _PARSED_URLS[url] = _parse_remote_url(url.strip())
    return parsed


# The guard parses the origin of every nested repository before each mutating call.
_PARSED_URLS: dict[str, RemoteId | None] = {}


def _parse_remote_url(url: str) -> RemoteId | None:
    import re
    if not url or re.search(_SPACE_OR_CONTROL, url):
        return None
    scheme, sep, rest = url.partition("://")
    if sep:
        return _parse_scheme_url(scheme.lower(), rest)
    return _parse_scp(url)


def _parse_scheme_url(scheme: str, rest: str) -> RemoteId | None:
    kind = _SCHEMES.get(scheme)
    authority, slash, path = rest.partition("/")
    if kind is None or not slash or authority.startswith("-"):
        return None
    host_port = _split_host_port(authority.rpartition("@")[2])
    if host_port is None:
        return None
    path = path.split("?", 1)[0].split("#", 1)[0]
    return _build_remote(kind, host_port[0], host_port[1], path)


def _parse_scp(url: str) -> RemoteId | None:
    if url.startswith(("/", ".", "~")) or "\\" in url:
        return None
    import re
    match = re.fullmatch(_SCP, url)
    if match is None:
        return None
    host, path = match.group(1), match.group(2)
    if url.startswith("-") or path.startswith("-"):
        return None  # git hands ssh no host or path that reads as an option ("strange hostname/pathname")
    if len(host) == 1 and "@" not in url:
        return None  # "C:/work/repo" is a Windows drive, not a host called C
    if host.startswith("["):
        host = host[1:-1]
        if not re.fullmatch(_IPV6, host):
            return None
    elif not re.fullmatch(_HOSTNAME, host):
        return None
    return _build_remote("ssh", host.lower(), None, path)


def _split_host_port(text: str) -> tuple[str, int | None] | None:
    import re
    if text.startswith("["):
        host, bracket, tail = text[1:].partition("]")
        if not bracket or not re.fullmatch(_IPV6, host):
            return None
    else:
        host, colon, port = text.partition(":")
        tail = colon + port
        if not re.fullmatch(_HOSTNAME, host):
            return None
    if tail in ("", ":"):
        return host.lower(), None
    if not tail.startswith(":") or not re.fullmatch(_PORT, tail[1:]) or not 0 < int(tail[1:]) < 65536:
        return None
    return host.lower(), int(tail[1:])


def _build_remote(kind: str, host: str, port: int | None, path: str) -> RemoteId | None:
    segments = [s for s in path.split("/") if s]
    if len(segments) < 2 or any(s in (".", "..") for s in segments):
        return None
    *prefix, owner, repo = segments
    if repo.endswith(".git"):
        repo = repo[: -len(".git")]
    import re
    if not (re.fullmatch(_NAME, owner) and re.fullmatch(_NAME, repo)):
        return None
    return RemoteId(host, port, owner, repo, "/".join(prefix), kind)


# --------------------------------------------------------------------------- discovery

@record(frozen=True)
class Repo:
    """A work tree: its top level, its git dir, and the common dir it shares with
    its other worktrees. All three are realpaths, so they compare as identities."""

    top: Path
    git_dir: Path
    common_dir: Path

    @property
    def is_linked(self) -> bool:
        """True for a linked worktree (``git worktree add``), False for a main one."""
        return self.git_dir != self.common_dir


class NoWorkTree(GitError):
    """The path is in a repository that has no work tree there: a bare repository, or inside a git dir."""

    def __init__(self, argv: Sequence[str], git_dir: Path, *, bare: bool) -> None:
        super().__init__(argv, 128, "this operation must be run in a work tree")
        self.git_dir = git_dir
        self.bare = bare


class Unpinnable(GitError):
    """The repository's work tree (``core.worktree``) lies in another repository's work tree: git would
    read and write that repository's files for this one, so no call can be pinned to it safely."""

    def __init__(self, argv: Sequence[str], git_dir: Path, work_tree: Path, other: Path) -> None:
        super().__init__(argv, 128, f"the work tree {work_tree} of {git_dir} belongs to the repository {other}")
        self.git_dir = git_dir
        self.work_tree = work_tree
        self.other = other


_RESOLVE = ("rev-parse", "--path-format=absolute", "--absolute-git-dir", "--git-common-dir",
            "--is-bare-repository", "--is-inside-git-dir", "--show-toplevel")


def discover(path: str | os.PathLike[str]) -> Repo | None:
    """The repository whose work tree holds *path*, as git itself resolves it (one git call); None
    outside any repository. Every later call for it is pinned to what this returns.

    Raises :class:`NoWorkTree` in a bare repository or inside a git dir, :class:`Unpinnable` when
    the work tree lies in another repository's, and :class:`GitError` for other failures, such as
    git's "dubious ownership" refusal, which must reach the caller as git worded it.
    """
    from pathlib import Path
    start = Path(os.path.realpath(path))
    if start.is_file():
        start = start.parent
    if not start.is_dir():
        return None
    # --show-toplevel comes last: outside a work tree it fails after the lines before it are printed.
    result = git(*_RESOLVE, cwd=start, check=False)
    # Paths, not display text: fsdecode keeps undecodable bytes round-trippable.
    lines = os.fsdecode(result.stdout).rstrip("\n").split("\n") if result.stdout else []
    argv = ["git", *_RESOLVE]
    if result.returncode != 0:
        err = _decode(result.stderr)
        if "not a git repository" in err:
            return None
        if "must be run in a work tree" in err and len(lines) == 4:
            raise NoWorkTree(argv, Path(os.path.realpath(lines[0])), bare=lines[2] == "true")
        raise GitError(argv, result.returncode, err)
    if len(lines) != 5:
        raise GitError(argv, 0, f"unexpected rev-parse output: {lines!r}")
    git_dir, common, top = (Path(os.path.realpath(p)) for p in (lines[0], lines[1], lines[4]))
    # A submodule's git dir (super/.git/modules/S) sets core.worktree, so git finds a work tree from inside
    # it: git's own answer says where the path is (--is-inside-git-dir, "false" at the git dir's top there).
    if lines[3] == "true" or start == git_dir or git_dir in start.parents:
        raise NoWorkTree(argv, git_dir, bare=False)
    found = fs_find(top)
    if found is not None and found[1] != str(git_dir):
        # core.worktree names a folder another repository owns (its top, or a folder in it)
        raise Unpinnable(argv, git_dir, top, Path(found[0]))
    return Repo(top, git_dir, common)


def fs_find_repo(path: str | os.PathLike[str]) -> Repo | None:
    """Like :func:`discover`, from the filesystem alone (no subprocess).

    Walks up from *path* to the first ``.git`` directory or ``gitdir:`` file
    and follows ``commondir``. It ignores ``GIT_CEILING_DIRECTORIES``,
    ``core.worktree`` and safe.directory; git itself remains the authority.
    """
    found = fs_find(path)
    if found is None:
        return None
    from pathlib import Path
    return Repo(Path(found[0]), Path(found[1]), Path(found[2]))


def fs_worktree_home(top: str | os.PathLike[str]) -> str:
    """Where new worktrees of the repository at *top* go: beside it, but never inside another repository's
    working tree (a nested child's parent folder is its umbrella's work tree)."""
    home = os.path.dirname(os.fspath(top))
    for _ in range(32):
        outer = fs_find(home)
        if outer is None:
            return home
        home = os.path.dirname(outer[0])
    return home


def fs_names(folder: str | os.PathLike[str]) -> frozenset[str]:
    """The names in *folder* (none when it cannot be read)."""
    try:
        return frozenset(os.listdir(folder))
    except OSError:
        return frozenset()


def fs_find(path: str | os.PathLike[str]) -> tuple[str, str, str] | None:
    """:func:`fs_find_repo` as plain strings (top, git dir, common dir): the hook's form, without pathlib."""
    start = os.path.realpath(path)
    if not os.path.exists(start):
        return None  # as discover: a missing path is in no repo, whatever encloses it
    top = start
    while True:
        dotgit = os.path.join(top, ".git")
        if os.path.isdir(dotgit):
            if _looks_like_git_dir(dotgit):
                # top is real (start is, and so are its parents): only a symlinked .git needs resolving
                return _fs_repo(start, top, os.path.realpath(dotgit) if os.path.islink(dotgit) else dotgit)
        elif os.path.isfile(dotgit):
            git_dir = _read_gitfile(dotgit)
            # git stops at a broken .git file instead of looking further up
            return None if git_dir is None else _fs_repo(start, top, git_dir)
        parent = os.path.dirname(top)
        if parent == top:
            return None
        top = parent


def _fs_repo(start: str, top: str, git_dir: str) -> tuple[str, str, str] | None:
    if start == git_dir or start.startswith(git_dir.rstrip(os.sep) + os.sep):
        return None  # inside the git dir itself: there is no work tree here
    return top, git_dir, common_dir_of(git_dir)


def _looks_like_git_dir(path: str) -> bool:
    return os.path.isfile(os.path.join(path, "HEAD")) and (
        os.path.isdir(os.path.join(path, "objects")) or os.path.isfile(os.path.join(path, "commondir")))


def _read_gitfile(dotgit: str) -> str | None:
    text = _read_text(dotgit)
    if text is None or not text.startswith("gitdir:"):
        return None
    git_dir = os.path.realpath(os.path.join(os.path.dirname(dotgit), text[len("gitdir:"):].strip()))
    return git_dir if _looks_like_git_dir(git_dir) else None


def common_dir_of(git_dir: str) -> str:
    """The common dir a git dir names in its ``commondir`` file (a linked worktree's), else the git dir."""
    text = _read_text(os.path.join(git_dir, "commondir"))
    if not text or not text.strip():
        return git_dir
    return os.path.realpath(os.path.join(git_dir, text.strip()))


def _read_text(path: str | os.PathLike[str]) -> str | None:
    try:
        with open(path, "rb") as fh:
            return fh.read().decode("utf-8", errors="replace")
    except OSError:
        return None


def nested_repos(top: str | os.PathLike[str]) -> list[Path]:
    """Direct children of *top* that hold a ``.git`` directory or file (depth 1, no subprocess).

    Deeper repos are not looked for: the scan runs before every mutating call
    and must stay cheap in a workspace of hundreds of repos.
    """
    from pathlib import Path
    return [Path(path) for path in _nested_paths(top)]


def nested_origins(top: str | os.PathLike[str]) -> list[tuple[Path, RemoteId | None]]:
    """Each of :func:`nested_repos` with its origin as :func:`fs_find` and :func:`read_origin` find it.

    A child that holds its own git dir is its own top, so the walk up and the realpath of each
    child (the larger part of the scan's time in a workspace of hundreds) are done only when a
    child is a symlink or its ``.git`` is not a plain git dir.
    """
    from pathlib import Path
    top_real = os.path.realpath(top)
    found: list[tuple[Path, RemoteId | None]] = []
    for path in _nested_paths(top):
        dotgit = os.path.join(path, ".git")
        if os.path.dirname(path) == top_real and not os.path.islink(path) and not os.path.islink(dotgit) \
                and os.path.isdir(dotgit) and _looks_like_git_dir(dotgit):
            repo: tuple[str, str, str] | None = (path, dotgit, common_dir_of(dotgit))
        else:
            repo = fs_find(path)
        url = read_origin(repo[2]) if repo else None
        found.append((Path(path), parse_remote_url(url) if url else None))
    return found


def _nested_paths(top: str | os.PathLike[str]) -> list[str]:
    found: list[str] = []
    try:
        entries = list(os.scandir(top))
    except OSError:
        return found
    for entry in entries:
        try:
            if entry.name != ".git" and entry.is_dir() and os.path.lexists(os.path.join(entry.path, ".git")):
                found.append(entry.path)
        except OSError:
            continue  # unreadable child: skip rather than fail the whole scan
    return sorted(found)  # siblings: the order of their names, as the order of their Paths


def operation_in_progress(git_dir: str | os.PathLike[str]) -> str | None:
    """The stopped operation in this worktree, read from files in its git dir.

    One of "rebase", "am", "merge", "cherry-pick", "revert", "bisect", or None.
    A rebase is named before a merge because a rebase replaying a merge leaves
    both marks, and ``git rebase --continue`` is the way on.
    """
    d = os.fspath(git_dir)
    if os.path.isdir(os.path.join(d, "rebase-merge")):
        return "rebase"
    if os.path.isdir(os.path.join(d, "rebase-apply")):
        return "am" if os.path.exists(os.path.join(d, "rebase-apply", "applying")) else "rebase"
    for marker, name in (("MERGE_HEAD", "merge"), ("CHERRY_PICK_HEAD", "cherry-pick"), ("REVERT_HEAD", "revert")):
        if os.path.isfile(os.path.join(d, marker)):
            return name
    return _sequencer_operation(d) or ("bisect" if os.path.isfile(os.path.join(d, "BISECT_LOG")) else None)


def _sequencer_operation(git_dir: str) -> str | None:
    # A multi-commit cherry-pick or revert whose conflict was committed by hand
    # keeps going from sequencer/todo; there is no *_HEAD file then.
    text = _read_text(os.path.join(git_dir, "sequencer", "todo"))
    for line in (text or "").splitlines():
        word = line.split(maxsplit=1)[0] if line.strip() else "#"
        if word.startswith("#"):
            continue
        return {"pick": "cherry-pick", "p": "cherry-pick", "revert": "revert"}.get(word)
    return None


def read_origin(common_dir: str | os.PathLike[str], git_dir: str | os.PathLike[str] | None = None) -> str | None:
    """The first ``remote.origin.url`` as git reads it for the worktree whose git dir is *git_dir* (the main
    one's when None), as written (before ``insteadOf``).

    No subprocess for a config file that includes nothing: the file is what git reads. With an ``include`` or
    ``includeIf`` (which may set the address, or set it only on some branch or in some folder), git itself is
    asked, in that worktree, so origin is wherever git sees it. None when absent, when the file is malformed,
    and when it rewrites URLs (``insteadOf``), since git's origin may then differ from what it says.
    """
    entries = _config_entries(os.path.join(common_dir, "config")) or []
    # insteadOf rewrites the URL: the written address is not the one git uses, and an unknown origin fails closed.
    if any((s, k) == ("url", "insteadof") for s, _, k, _ in entries):
        return None
    if any(v is None and s in ("remote", "branch", "url") for s, _, _, v in entries):
        return None  # a valueless url, pushurl or merge makes git refuse to read any remote
    if any(s in ("include", "includeif") for s, _, _, _ in entries):
        return _git_origin(os.fspath(git_dir if git_dir is not None else common_dir))
    return next((v for s, sub, k, v in entries if (s, sub, k) == ("remote", "origin", "url")), None)


def _git_origin(git_dir: str) -> str | None:
    """``remote.origin.url`` as git reads it with every include resolved, in the worktree of *git_dir*; None when
    git names none, or an included file rewrites URLs."""
    found = git("config", "-z", "--get-regexp", r"^(remote\.origin\.url|url\..*\.insteadof)$", cwd=git_dir,
                env={"GIT_DIR": git_dir}, check=False)
    entries = [rec.partition(b"\n") for rec in found.stdout.split(b"\0") if rec] if found.ok else []
    if any(key != b"remote.origin.url" or not sep for key, sep, _ in entries):
        return None
    return _decode(entries[0][2]) if entries else None


_ConfigEntries = list[tuple[str, str | None, str, str | None]]
_CONFIGS: dict[str, tuple[tuple[int, ...], _ConfigEntries | None]] = {}


def _config_entries(path: str | os.PathLike[str]) -> _ConfigEntries | None:
    """The entries of the config file *path* in order; None when it is missing, unreadable or malformed (git
    would refuse it too)."""
    path = os.fspath(path)
    try:
        st = os.stat(path)
    except OSError:
        return None
    # A long-running server checks the same nested repos before every mutating call: a config
    # file whose identity, size and times are unchanged is not parsed again. As git does for its
    # index, a file changed in the last seconds is not remembered: a rewrite within one tick of
    # the file system's clock could keep every one of those.
    key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    known = _CONFIGS.get(path)
    if known is not None and known[0] == key:
        return known[1]
    text = _read_text(path)
    try:
        entries = list(_parse_config(text)) if text is not None else None
    except ValueError:
        entries = None
    if _time.time() - max(st.st_mtime, st.st_ctime) > 2:
        if len(_CONFIGS) >= 4096:
            _CONFIGS.clear()
        _CONFIGS[path] = (key, entries)
    return entries


def _config_values(path: str | os.PathLike[str], section: str, subsection: str | None, key: str) -> list[str]:
    return [v for s, sub, k, v in _config_entries(path) or []
            if (s, sub, k) == (section, subsection, key) and v is not None]


def _parse_config(text: str) -> Iterator[tuple[str, str | None, str, str | None]]:
    """Yield (section, subsection, key, value) following git's config grammar.

    Section and key names are case-insensitive (lower-cased here); a quoted
    subsection is case-sensitive; a key without "=" is boolean true (None).
    """
    parser = _ConfigParser(text.lstrip("\ufeff"))
    section: tuple[str, str | None] | None = None
    while True:
        c = parser.skip_blank()
        if c == "":
            return
        if c in "#;":
            parser.skip_line()
        elif c == "[":
            section = parser.header()
        elif c.isalpha() and section is not None:
            key, value = parser.entry()
            yield section[0], section[1], key, value
        else:
            raise ValueError(f"bad config line {parser.line}")


_SPACE = r"\s"


class _ConfigParser:
    """A cursor over config text; a port of the relevant parts of git's config.c."""

    def __init__(self, text: str) -> None:
        self.text = text.replace("\r\n", "\n")
        self.pos = 0
        self.line = 1

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def take(self) -> str:
        c = self.peek()
        self.pos += len(c)
        self.line += c == "\n"
        return c

    def skip_blank(self) -> str:
        text, pos = self.text, self.pos
        end = len(text)
        while pos < end and text[pos].isspace():
            pos += 1
        self.line += text.count("\n", self.pos, pos)
        self.pos = pos
        return self.peek()

    def skip_line(self) -> None:
        end = self.text.find("\n", self.pos)
        self.pos, self.line = (len(self.text), self.line) if end < 0 else (end + 1, self.line + 1)

    def header(self) -> tuple[str, str | None]:
        self.take()  # "["
        name = ""
        while self.peek().isalnum() or self.peek() in (".", "-"):
            name += self.take()
        if self.peek() == "]":
            self.take()
            base, dot, legacy = name.lower().partition(".")
            return base, (legacy if dot else None)
        if not name or not self.peek().isspace():
            raise ValueError(f"bad section header on line {self.line}")
        self.skip_blank()
        return name.lower(), self._quoted_subsection()

    def _quoted_subsection(self) -> str:
        if self.take() != '"':
            raise ValueError(f"bad section header on line {self.line}")
        sub = ""
        while (c := self.take()) != '"':
            if c in ("", "\n"):
                raise ValueError(f"unterminated subsection on line {self.line}")
            sub += self.take() if c == "\\" else c
        if self.take() != "]":
            raise ValueError(f"bad section header on line {self.line}")
        return sub

    def entry(self) -> tuple[str, str | None]:
        text, start, end = self.text, self.pos, len(self.text)
        pos = start
        while pos < end and (text[pos].isalnum() or text[pos] == "-"):
            pos += 1
        key = text[start:pos]
        while pos < end and text[pos] in " \t":
            pos += 1
        self.pos = pos
        if self.peek() in ("", "\n"):
            return key.lower(), None
        if self.take() != "=":
            raise ValueError(f"bad config line {self.line}")
        return key.lower(), self.value()

    def value(self) -> str:
        # Unquoted whitespace runs become spaces and the ends are trimmed;
        # "#" and ";" start a comment outside quotes, as in git.
        end = self.text.find("\n", self.pos)
        rest = self.text[self.pos:] if end < 0 else self.text[self.pos:end]
        if not any(c in rest for c in '\\"#;'):  # the common line: nothing to unquote or unescape
            import re
            self.skip_line()
            return re.sub(_SPACE, " ", rest.strip())  # as below: each inner white-space character is one space
        buf = ""
        quote = comment = False
        spaces = 0
        while (c := self.take()) not in ("", "\n"):
            if comment:
                continue
            if c.isspace() and not quote:
                spaces += bool(buf)
                continue
            if not quote and c in "#;":
                comment = True
                continue
            buf += " " * spaces
            spaces = 0
            if c == "\\":
                buf += self._escape()
            elif c == '"':
                quote = not quote
            else:
                buf += c
        if quote:
            raise ValueError(f"unterminated quote on line {self.line}")
        return buf

    def _escape(self) -> str:
        c = self.take()
        if c == "\n":
            return ""  # line continuation
        escapes = {"t": "\t", "b": "\b", "n": "\n", "\\": "\\", '"': '"'}
        if c not in escapes:
            raise ValueError(f"bad escape on line {self.line}")
        return escapes[c]


def default_branch(repo: Repo) -> str:
    """The repo's default branch, read from files (no subprocess).

    ``refs/remotes/origin/HEAD`` first (a symbolic ref, which git never packs);
    else ``init.defaultBranch`` (repo, then global config), "main" or "master",
    whichever exists locally or on origin; else the configured name or "main".
    """
    common = repo.common_dir
    head = (_read_text(common / "refs" / "remotes" / "origin" / "HEAD") or "").strip()
    prefix = "ref: refs/remotes/origin/"
    if head.startswith(prefix) and head[len(prefix):]:
        return head[len(prefix):]
    configured = _configured_default_branch(common)
    for name in dict.fromkeys(n for n in (configured, "main", "master") if n):
        if _fs_ref_exists(common, f"refs/heads/{name}") or _fs_ref_exists(common, f"refs/remotes/origin/{name}"):
            return name
    return configured or "main"


def origin_head(repo: Repo) -> str | None:
    """The branch ``refs/remotes/origin/HEAD`` names: origin's default as git last learnt it (clone, set-head).

    In the files ref store a symbolic ref is always its own file (git never packs one), so the file is
    git's own record and no process is started; another ref store is asked through git.
    """
    prefix = "refs/remotes/origin/"
    if os.path.isdir(os.path.join(repo.common_dir, "reftable")):
        result = git("symbolic-ref", "-q", "refs/remotes/origin/HEAD", repo=repo, check=False)
        text = result.text if result.ok else ""
    else:
        text = (_read_text(os.path.join(repo.common_dir, "refs", "remotes", "origin", "HEAD")) or "").strip()
        text = text[len("ref: "):] if text.startswith("ref: ") else ""
    return text[len(prefix):] or None if text.startswith(prefix) else None


def remote_head(repo: Repo, remote: str = "origin", env: Mapping[str, str] | None = None,
                timeout: float = 20.0) -> str | None:
    """The branch *remote*'s HEAD names, asked of the remote itself; None when it does not answer or names none."""
    args = ("ls-remote", "--symref", "--", reject_option(remote, "remote"), "HEAD")
    try:
        result = git(*args, repo=repo, check=False, env=env, timeout=min(timeout, git_timeout()))
    except GitTimeout:
        return None
    for line in result.text.splitlines() if result.ok else ():
        target, _, name = line.partition("\t")
        if name == "HEAD" and target.startswith("ref: refs/heads/"):
            return target[len("ref: refs/heads/"):] or None
    return None


def remote_urls(repo: Repo, remote: str = "origin") -> tuple[str | None, list[str], list[str]]:
    """*remote*'s address as its config writes it, and the addresses git will fetch from and push to (after
    ``insteadOf``, ``pushInsteadOf`` and ``pushurl``). (None, [], []) without such a remote.

    One git call where git's config (every scope, includes resolved by git) holds no rule that rewrites an
    address: git then uses the written addresses themselves, the first to fetch and each to push. With a
    rule, git itself lists the addresses it uses (a second call).
    """
    reject_option(remote, "remote")
    written: str | None = None
    if remote.isascii() and all(c.isalnum() or c in "_.-" for c in remote):  # the same in a config regexp
        keys = rf"^(remote\.{remote.replace('.', r'[.]')}\.(url|pushurl)|url\..*\.(insteadof|pushinsteadof))$"
        found = git("config", "-z", "--get-regexp", keys, repo=repo, check=False)
        entries = [rec.partition(b"\n") for rec in found.stdout.split(b"\0") if rec] if found.ok else []
        urls = [_decode(value) for key, sep, value in entries if sep and key == f"remote.{remote}.url".encode()]
        written = urls[-1].splitlines()[-1] if urls and urls[-1] else None
        plain = all(sep for _key, sep, _value in entries) and not any("\n" in url for url in urls)
        if urls and plain and len(urls) == len(entries):
            return written, urls[:1], urls
        if not plain or found.returncode not in (0, 1):
            written = _written_url(repo, remote)
    else:
        written = _written_url(repo, remote)
    listed = git("remote", "-v", repo=repo, check=False)
    fetch: list[str] = []
    push: list[str] = []
    for line in listed.text.splitlines() if listed.ok else ():
        name, _, rest = line.partition("\t")
        url, _, kind = rest.rpartition(" ")
        if name == remote and kind in ("(fetch)", "(push)"):
            (fetch if kind == "(fetch)" else push).append(url)
    return written, fetch, push


def _written_url(repo: Repo, remote: str) -> str | None:
    written = git("config", "--get", f"remote.{remote}.url", repo=repo, check=False)
    return written.text.splitlines()[-1] if written.ok and written.text else None


def _configured_default_branch(common: Path) -> str | None:
    for config in (common / "config", *_global_configs()):
        values = _config_values(config, "init", None, "defaultbranch")
        if values:
            return values[-1]  # git's rule for single-valued keys: the last one wins
    return None


def _global_configs() -> list[Path]:
    """Global config files, highest precedence first (the system file is not read)."""
    from pathlib import Path
    if os.environ.get("GIT_CONFIG_GLOBAL"):
        return [Path(os.environ["GIT_CONFIG_GLOBAL"])]
    home = Path(os.path.expanduser("~"))
    xdg = os.environ.get("XDG_CONFIG_HOME") or str(home / ".config")
    return [home / ".gitconfig", Path(xdg) / "git" / "config"]


def fs_branches(common_dir: str | os.PathLike[str]) -> frozenset[str]:
    """Short names of the local branches, read from files (loose refs and packed-refs)."""
    from pathlib import Path
    common = Path(common_dir)
    heads = common / "refs" / "heads"
    names = {p.relative_to(heads).as_posix() for p in heads.rglob("*") if p.is_file()} if heads.is_dir() else set()
    names.update(ref[len("refs/heads/"):] for ref in packed_refs(common) if ref.startswith("refs/heads/"))
    return frozenset(names)


def packed_refs(common_dir: str | os.PathLike[str]) -> list[str]:
    """The full names of the refs in the repository's ``packed-refs`` file (none when it has none)."""
    text = _read_text(os.path.join(common_dir, "packed-refs")) or ""
    return [line.partition(" ")[2] for line in text.splitlines() if line and not line.startswith(("#", "^"))]


def fs_checked_out(common_dir: str | os.PathLike[str]) -> frozenset[str]:
    """Branches that a worktree of the repository (the main one or a linked one) holds, from files: checked out,
    or being rebased or bisected there (git's own state files; ``git worktree list`` shows those as detached)."""
    return frozenset(fs_branches_in_use(common_dir))


def fs_branches_in_use(common_dir: str | os.PathLike[str]) -> dict[str, tuple[str, str]]:
    """branch -> (the git dir of the worktree that holds it, how: "checked out", "being rebased" or "being
    bisected"), read from each worktree's own files as git reads them to refuse ``git branch -d``: its HEAD,
    ``rebase-merge/head-name`` and ``update-refs``, ``rebase-apply/head-name`` and ``BISECT_START``."""
    import re
    common = os.fspath(common_dir)
    dirs = [common]
    try:
        dirs += [os.path.join(common, "worktrees", name) for name in sorted(os.listdir(os.path.join(common,
                                                                                                   "worktrees")))]
    except OSError:
        pass
    out: dict[str, tuple[str, str]] = {}
    for gitdir in dirs:
        head = (_read_text(os.path.join(gitdir, "HEAD")) or "").strip()
        if head.startswith("ref: refs/heads/"):
            out.setdefault(head[len("ref: refs/heads/"):], (gitdir, "checked out"))
        for name in ("rebase-merge/head-name", "rebase-apply/head-name"):
            held = (_read_text(os.path.join(gitdir, name)) or "").strip()
            if held.startswith("refs/heads/"):
                out.setdefault(held[len("refs/heads/"):], (gitdir, "being rebased"))
        for line in (_read_text(os.path.join(gitdir, "rebase-merge", "update-refs")) or "").splitlines():
            if line.startswith("refs/heads/"):
                out.setdefault(line[len("refs/heads/"):], (gitdir, "being rebased"))
        start = (_read_text(os.path.join(gitdir, "BISECT_START")) or "").strip()
        if start and not re.fullmatch(_HEX_SHA, start):
            out.setdefault(start.removeprefix("refs/heads/"), (gitdir, "being bisected"))
    return out


def branches_in_use(repo: Repo) -> dict[str, tuple[Path, str]]:
    """branch -> (the worktree that holds it, how), as :func:`fs_branches_in_use` reads it, with each worktree's
    path as git lists it."""
    from pathlib import Path
    held = fs_branches_in_use(repo.common_dir)
    if not held:
        return {}
    trees = worktree_list(repo)
    common = os.path.realpath(repo.common_dir)
    tops: dict[str, Path] = {common: trees[0].path} if trees else {}
    for gitdir in {g for g, _ in held.values()} - {os.fspath(repo.common_dir)}:
        link = (_read_text(os.path.join(gitdir, "gitdir")) or "").strip()
        tops[os.path.realpath(gitdir)] = Path(os.path.realpath(os.path.dirname(link))) if link else Path(gitdir)
    return {branch: (tops.get(os.path.realpath(gitdir), Path(gitdir)), how) for branch, (gitdir, how) in held.items()}


def fs_came_from(git_dir: str | os.PathLike[str]) -> str | None:
    """The branch this worktree's HEAD was last moved away from by a checkout or switch, from its reflog's
    newest line (``checkout: moving from <branch> to <where>``); None when HEAD moved some other way since."""
    path = os.path.join(os.fspath(git_dir), "logs", "HEAD")
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - 4096))
            lines = fh.read().splitlines()
    except OSError:
        return None
    message = _decode(lines[-1]).partition("\t")[2] if lines else ""
    moved = message.removeprefix("checkout: moving from ")
    if moved == message:
        return None
    source, _, _ = moved.partition(" to ")
    return source or None


def _fs_ref_exists(common: Path, ref: str) -> bool:
    if (common / ref).is_file():
        return True
    return ref in packed_refs(common)


# --------------------------------------------------------------------------- status

@record
class Status:
    """The state of one work tree, from one ``git status`` call."""

    branch: str | None  # None when HEAD is detached
    head: str | None  # None on an unborn branch
    upstream: str | None = None
    ahead: int = 0
    behind: int = 0
    staged: list[str] = field(default_factory=list)
    modified: list[str] = field(default_factory=list)
    untracked: list[str] = field(default_factory=list)
    conflicted: list[str] = field(default_factory=list)
    operation: str | None = None  # see operation_in_progress

    @property
    def dirty_tracked(self) -> bool:
        """Tracked changes (staged, modified or conflicted); untracked files do not count."""
        return bool(self.staged or self.modified or self.conflicted)

    @property
    def clean(self) -> bool:
        return not (self.dirty_tracked or self.untracked)


def status(repo: Repo) -> Status:
    """Branch, upstream, ahead/behind and changed paths, in one git call."""
    args = ("status", "--porcelain=v2", "-z", "--branch", "--untracked-files=all")
    # GIT_OPTIONAL_LOCKS=0: a read must not take index.lock from under the
    # user's own git running at the same moment.
    result = git(*args, repo=repo, env={"GIT_OPTIONAL_LOCKS": "0"})
    return _parse_status(result.stdout, operation_in_progress(repo.git_dir))


def _parse_status(raw: bytes, operation: str | None) -> Status:
    st = Status(branch=None, head=None, operation=operation)
    fields = iter(raw.split(b"\0"))
    for field_ in fields:
        rec = _decode(field_)
        if rec.startswith("# "):
            _status_header(st, rec[2:])
        elif rec.startswith(("1 ", "2 ")):
            parts = rec.split(" ", 8 if rec[0] == "1" else 9)
            _status_change(st, parts[1], parts[-1])
            if rec[0] == "2":
                next(fields, None)  # the rename's original path
        elif rec.startswith("u "):
            st.conflicted.append(rec.split(" ", 10)[-1])
        elif rec.startswith("? "):
            st.untracked.append(rec[2:])
    return st


def _status_header(st: Status, rec: str) -> None:
    name, _, value = rec.partition(" ")
    if name == "branch.oid":
        st.head = None if value == "(initial)" else value
    elif name == "branch.head":
        st.branch = None if value == "(detached)" else value
    elif name == "branch.upstream":
        st.upstream = value
    elif name == "branch.ab":
        ahead, behind = value.split()
        st.ahead, st.behind = int(ahead), -int(behind)


def _status_change(st: Status, xy: str, path: str) -> None:
    if xy[0] != ".":
        st.staged.append(path)
    if xy[1] != ".":
        st.modified.append(path)


# --------------------------------------------------------------------------- commits and history

@record(frozen=True)
class Commit:
    sha: str
    parents: tuple[str, ...]
    author: str
    email: str
    date: str  # strict ISO 8601, author date
    subject: str
    body: str


def add(repo: Repo, files: Sequence[str]) -> None:
    """Stage exactly *files* (there is no "everything" form)."""
    _add(repo, _declared(repo, files))


def _add(repo: Repo, paths: Sequence[str]) -> None:
    result = git("add", "--", *paths, repo=repo, check=False)
    if result.returncode != 0:
        raise _failure(["git", "add", "--", *paths], result.returncode, _decode(result.stderr))


def commit(repo: Repo, files: Sequence[str], title: str, body: str | None = None) -> str:
    """Stage exactly *files* and commit only them; return the new commit's sha.

    ``commit -- <files>`` commits those paths alone, so whatever else was
    already staged stays staged and out of this commit.
    """
    paths = _declared(repo, files)
    if not title.strip():
        raise ValueError("a commit needs a non-empty title")
    try:
        _add(repo, paths)
        # The message goes on stdin: an argument is bounded by the system, a message is not.
        message = title + (f"\n\n{body}" if body and body.strip() else "")
        result = git("commit", "--file=-", "--", *paths, repo=repo, check=False,
                     input=message.encode("utf-8", "surrogateescape"))
        if result.returncode != 0:
            argv = ["git", "commit", "--file=-", "--", *paths]
            out = _decode(result.stdout) + _decode(result.stderr)
            if result.returncode == 1 and "nothing" in out and "to commit" in out:
                raise NothingToCommit(argv, 1, "the declared files have no changes to commit")
            failed = _failure(argv, result.returncode, _decode(result.stderr) or out)
            raise failed if isinstance(failed, NoSpace) else GitError(argv, result.returncode,
                                                                      _decode(result.stderr) or out)
    except NoSpace as exc:
        exc.disk, exc.free, exc.staged = str(repo.git_dir), _free(repo.git_dir), _staged_of(repo, paths)
        raise
    return git("rev-parse", "--verify", "HEAD", repo=repo).text


def _free(path: str | os.PathLike[str]) -> int | None:
    import shutil
    try:
        return shutil.disk_usage(path).free
    except OSError:
        return None


def _staged_of(repo: Repo, paths: Sequence[str]) -> tuple[str, ...]:
    """Which staged paths the declared *paths* name (a path, or a file under a declared folder)."""
    try:
        staged = status(repo).staged
    except GitError:
        return ()
    return tuple(s for s in staged if any(s == p.rstrip("/") or s.startswith(p.rstrip("/") + "/") for p in paths))


def _declared(repo: Repo, files: Sequence[str]) -> list[str]:
    if isinstance(files, (str, bytes)):
        raise TypeError("files must be a list of paths, not one string")
    paths = [os.fspath(f) for f in files]
    if not paths:
        raise ValueError("name the files to stage; there is no blanket form")
    for p in paths:
        if not p or "\0" in p:
            raise ValueError(f"bad file path: {p!r}")
        if os.path.normpath(os.path.join(repo.top, p)) == str(repo.top):
            raise ValueError(f"{p!r} names the whole work tree; name the files instead")
    return paths


_LOG_FORMAT = "%H%x1f%P%x1f%an%x1f%ae%x1f%aI%x1f%s%x1f%b"


def log(repo: Repo, ref: str = "HEAD", limit: int = 20) -> list[Commit]:
    """Up to *limit* commits reachable from *ref*, newest first; [] on an unborn branch."""
    reject_option(ref, "ref")
    if limit < 0:
        raise ValueError("limit must not be negative")
    args = ("log", "-z", "--no-show-signature", f"--max-count={limit}", f"--format={_LOG_FORMAT}",
            "--end-of-options", ref, "--")
    result = git(*args, repo=repo, check=False)
    if result.returncode != 0:
        err = _decode(result.stderr)
        if ref == "HEAD" and _unborn(repo):
            return []
        raise _failure(["git", *args], result.returncode, err, ref=ref)
    return [_parse_commit(rec) for rec in _decode(result.stdout).split("\0") if rec.strip("\n")]


def _unborn(repo: Repo) -> bool:
    """HEAD names a branch that has no commit yet (read from files)."""
    head = (_read_text(repo.git_dir / "HEAD") or "").strip()
    return head.startswith("ref: ") and not _fs_ref_exists(repo.common_dir, head[len("ref: "):])


def _parse_commit(rec: str) -> Commit:
    sha, parents, author, email, date, subject, body = rec.strip("\n").split("\x1f", 6)
    return Commit(sha, tuple(parents.split()), author, email, date, subject, body.strip("\n"))


def head_sha(repo: Repo, ref: str = "HEAD") -> str | None:
    """The commit *ref* names, or None when it does not resolve (e.g. an unborn HEAD)."""
    reject_option(ref, "ref")
    result = git("rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}",
                 repo=repo, check=False)
    return result.text if result.returncode == 0 else None


def ref_exists(repo: Repo, ref: str) -> bool:
    """True when *ref* resolves: a full name (``refs/heads/x``) or a short one (``main``)."""
    reject_option(ref, "ref")
    args = ("rev-parse", "--verify", "--quiet", "--end-of-options", ref)
    return git(*args, repo=repo, check=False).returncode == 0


def ref_snapshot(repo: Repo) -> dict[str, str]:
    """Every ref of the repository (branches, tags, remote-tracking refs, notes, the stash) and the object it
    names (a symbolic ref: ``ref: <the ref it names>``), as git lists them: what a write is checked against,
    before and after."""
    # A symbolic ref (origin/HEAD) is recorded as the ref it names: it moves only when it names another ref.
    out = git("for-each-ref", "--format=%(refname)%00%(if)%(symref)%(then)ref: %(symref)%(else)%(objectname)%(end)",
              repo=repo).stdout
    refs = (os.fsdecode(line).partition("\0") for line in out.splitlines() if line)
    return {name: sha for name, _, sha in refs}


def _refs_at(git_dir: str, prefix: str) -> dict[str, str]:
    """Every ref of the repository whose git dir is *git_dir*, as :func:`ref_snapshot` names them, each under
    *prefix*; nothing when git cannot read it there (gone, not a repository, not safe to read)."""
    out = git("--git-dir", git_dir, "for-each-ref",
              "--format=%(refname)%00%(if)%(symref)%(then)ref: %(symref)%(else)%(objectname)%(end)",
              cwd=git_dir, check=False)
    refs = (os.fsdecode(line).partition("\0") for line in out.stdout.splitlines() if line) if out.ok else ()
    return {f"{prefix}{name}": sha for name, _, sha in refs}


def local_remote_dir(repo: Repo, url: str) -> str | None:
    """The git dir an address names when it is a folder on this machine (a path, or ``file://``), as git reads
    it (relative to the work tree's top, ``<path>/.git`` for a non-bare one); None for any other transport."""
    path = url.removeprefix("file://") if url.startswith("file://") else url
    if "://" in path or (":" in path.split("/", 1)[0] and not os.path.isabs(path)):
        return None  # another transport, or the scp-like host:path form
    where = os.path.join(repo.top, os.path.expanduser(path))
    for candidate in (os.path.join(where, ".git"), where):
        if os.path.isfile(os.path.join(candidate, "HEAD")):
            return os.path.realpath(candidate)
    return None


def state_snapshot(repo: Repo, remote_urls: Sequence[str] = ()) -> dict[str, str]:
    """:func:`ref_snapshot`, and the refs git shows without a transport beside it: each populated submodule's
    (``<path>: refs/...``, read in its own git dir) and those of each remote at *remote_urls* that is a folder on
    this machine (``<url>: refs/...``). What a push or pull is checked against, before and after."""
    state = ref_snapshot(repo)
    staged = git("ls-files", "-z", "--stage", repo=repo, check=False)
    for rec in staged.stdout.split(b"\0") if staged.ok else ():
        meta, _, path = rec.partition(b"\t")
        if meta.startswith(b"160000 "):
            sub = os.path.join(repo.top, os.fsdecode(path))
            found = fs_find_repo(sub) if os.path.exists(os.path.join(sub, ".git")) else None
            if found is not None and str(found.top) == os.path.realpath(sub):
                state |= _refs_at(str(found.git_dir), f"{os.fsdecode(path)}: ")
    for url in dict.fromkeys(remote_urls):
        far = local_remote_dir(repo, url)
        if far is not None and far != str(repo.common_dir):
            state |= _refs_at(far, f"{url}: ")
    return state


def ref_moves(before: Mapping[str, str], after: Mapping[str, str]) -> list[tuple[str, str | None, str | None]]:
    """(ref, old, new) for each ref created (old None), deleted (new None) or moved between two snapshots."""
    return [(ref, before.get(ref), after.get(ref)) for ref in sorted(set(before) | set(after))
            if before.get(ref) != after.get(ref)]


def local_branches(repo: Repo) -> list[str]:
    """Short names of every local branch, sorted."""
    out = git("for-each-ref", "--format=%(refname)", "refs/heads/", repo=repo).stdout
    return sorted(os.fsdecode(line)[len("refs/heads/"):] for line in out.splitlines() if line)


def git_version() -> str | None:
    """git's version ("2.39.5"), or None when git cannot be run."""
    try:
        text = git("--version", cwd=os.path.abspath(os.sep)).text
    except GitError:
        return None
    return text.removeprefix("git version ").strip() or None


# --------------------------------------------------------------------------- remotes

@record(frozen=True)
class PushResult:
    remote: str
    branch: str
    outcome: str  # "created" | "fast-forward" | "forced" | "up-to-date"
    old_sha: str | None  # the remote branch before the push; None when it was created
    new_sha: str  # the remote branch after the push


@record(frozen=True)
class PullResult:
    before: str | None
    after: str | None

    @property
    def updated(self) -> bool:
        return self.before != self.after


# What a push, fetch or pull does is also what git's configuration says it does; each write below names exactly
# what it writes and turns off, for that call alone, every setting that would make it write more or other
# (the table and the reasons: the "every git write on madtea's terms" decision record).
#
# On every call that reaches a remote (a credential may be in play):
#   core.hooksPath=/dev/null  no hook runs (pre-push, reference-transaction, post-merge): a hook is the
#                             repository's code, and it would run beside madtea's credential helper
#   core.askPass=             git never runs an askpass program (which would also inherit that environment)
#   remote.<r>.mirror=false   a mirror remote would push every ref, deleting what is not local
#   push.pushOption=          no push option the configuration adds is sent
_TRANSPORT_ENV = {"GIT_ASKPASS": ""}  # over core.askPass and SSH_ASKPASS, in git's order


def _transport_config(remote: str) -> list[str]:
    return ["-c", "core.hooksPath=/dev/null", "-c", "core.askPass=", "-c", f"remote.{remote}.mirror=false",
            "-c", "push.pushOption="]


def _transport_env(env: Mapping[str, str] | None) -> dict[str, str]:
    return {**(env or {}), **_TRANSPORT_ENV}


def fetch_refspecs(repo: Repo, remote: str = "origin") -> list[str]:
    """*remote*'s configured fetch refspecs (``remote.<name>.fetch``), in git's order, from every scope."""
    found = git("config", "-z", "--get-all", f"remote.{remote}.fetch", repo=repo, check=False)
    return [_decode(v) for v in found.stdout.split(b"\0") if v] if found.ok else []


def _mapped(refspec: str, ref: str) -> str | None:
    """Where the fetch *refspec* maps *ref* (a glob maps its one ``*``); None when it does not match."""
    src, colon, dst = refspec.lstrip("+").partition(":")
    if refspec.startswith("^") or not colon or not dst:
        return None
    if "*" not in src:
        return dst if src == ref else None
    head, _, tail = src.partition("*")
    if not (ref.startswith(head) and ref.endswith(tail) and len(ref) >= len(head) + len(tail)):
        return None
    return dst.replace("*", ref[len(head):len(ref) - len(tail)], 1)


def check_tracking(repo: Repo, remote: str, ref: str) -> None:
    """Raise :class:`UnsafeSetting` when a push of *ref* would make git update a ref outside ``refs/remotes/``:
    git moves the "remote-tracking" ref the configured fetch refspecs name after every push, and no push
    option turns that off."""
    for refspec in fetch_refspecs(repo, remote):
        dst = _mapped(refspec, ref)
        if dst is not None and not dst.startswith("refs/remotes/"):
            raise UnsafeSetting(["git", "push", remote, ref], f"remote.{remote}.fetch", refspec,
                                f"makes every push of {ref} also move {dst}, a ref that is not a remote-tracking "
                                f"ref")


def push(repo: Repo, branch: str, remote: str = "origin", lease_sha: str | None = None,
         set_upstream: bool = False, env: Mapping[str, str] | None = None, sha: str | None = None) -> PushResult:
    """Push one commit to ``refs/heads/<branch>`` on *remote*, and nothing else; never a blind force.

    The commit is *sha*, or what ``refs/heads/<branch>`` holds when this starts, read once: git is
    told ``<sha>:refs/heads/<branch>``, so a branch that moves while the push runs does not change what
    is sent. The result's ``new_sha`` is that commit. No tag, submodule, mirror or push option goes
    along, no hook runs, and :func:`check_tracking` refuses a configuration that would make git move a
    ref other than a remote-tracking one afterwards.

    With *lease_sha*, the push may rewrite the remote branch only if it is
    still at that sha (``""`` means "must not exist yet"); a moved branch
    raises :class:`LeaseRejected`. Without it, only fast-forwards happen.
    With *set_upstream*, a successful push records ``<remote>/<branch>`` as the branch's upstream.
    *env* reaches the git child only (the transport's credential helper).
    """
    import re
    reject_option(branch, "branch")
    reject_option(remote, "remote")
    ref = f"refs/heads/{branch}"
    local = sha if sha is not None else head_sha(repo, ref)
    if local is None:
        raise NoSuchBranch(["git", "push", remote, ref], -1, f"there is no local branch {branch!r}", ref=branch)
    if not re.fullmatch(_HEX_SHA, local):
        raise ValueError(f"a push sends a full commit sha, not {local!r}")
    check_tracking(repo, remote, ref)
    options = ["--porcelain", "--no-follow-tags", "--recurse-submodules=no", "--no-signed",
               "--no-force-if-includes", *_progress_option()]
    if lease_sha is not None:
        if lease_sha and not re.fullmatch(_HEX_SHA, lease_sha):
            raise ValueError(f"a lease needs a full commit sha, not {lease_sha!r}")
        options.append(f"--force-with-lease={ref}:{lease_sha}")
    # core.abbrev=no: the porcelain summary then carries full old..new shas.
    argv = [*_transport_config(remote), "-c", "core.abbrev=no", "push", *options, "--", remote, f"{local}:{ref}"]
    # The mark outlives a push that never ended by itself (a timeout, a cancel, a
    # shutdown, a killed process), which may or may not have reached the remote;
    # while the push runs, the pid in it and the set below say it is in flight.
    mark = _push_mark(repo, branch)
    try:
        with open(mark, "w", encoding="utf-8") as handle:
            handle.write(f"{branch}\n{local}\n{os.getpid()}\n")
    except OSError:
        pass  # the push itself still runs; only the later report is lost
    with _calls_lock:
        _pushing.add(mark)
    try:
        result = git(*argv, repo=repo, check=False, env=_transport_env(env), progress=True)
    finally:
        with _calls_lock:
            _pushing.discard(mark)
    try:
        os.unlink(mark)
    except OSError:
        pass
    pushed = _push_outcome(["git", *argv], result, remote, branch, f"{local}:{ref}", local)
    if set_upstream:
        git("config", f"branch.{branch}.remote", remote, repo=repo)
        git("config", f"branch.{branch}.merge", ref, repo=repo)
    return pushed


_pushing: set[str] = set()  # the marks of the pushes this process is running now


def _progress_option() -> list[str]:
    """git's --progress when the running call asked for progress (git prints none to a pipe otherwise)."""
    call = CALL.get()
    return ["--progress"] if call is not None and call.reporting else []


def _push_mark(repo: Repo, branch: str) -> str:
    return os.path.join(os.fspath(repo.git_dir), "madtea-push-" + branch.encode("utf-8").hex())


def interrupted_pushes(repo: Repo) -> list[tuple[str, str]]:
    """(branch, sha it was pushing) for each push from this worktree that ended without finishing, read from files."""
    return [(branch, sha) for branch, sha, running in _push_marks(repo) if not running]


def pushes_running(repo: Repo) -> list[tuple[str, str]]:
    """(branch, sha) for each push from this worktree that a live madtea process is running now."""
    return [(branch, sha) for branch, sha, running in _push_marks(repo) if running]


def settle_push_marks(repo: Repo, branch: str, landed: str) -> int:
    """Clear this worktree's marks of interrupted pushes of *branch* whose sha *landed* holds (origin has it, or
    it was merged): their outcome is known. A push still in flight keeps its mark. Returns how many it cleared."""
    cleared = 0
    for name, sha, running in _push_marks(repo):
        try:
            known = name == branch and not running and (sha == landed or is_ancestor(repo, sha, landed))
        except GitError:
            known = False  # a sha this repository no longer has: only a push settles it
        if known:
            try:
                os.unlink(_push_mark(repo, branch))
                cleared += 1
            except OSError:
                pass  # gone already, or not ours to remove: status goes on reading it
    return cleared


def _push_marks(repo: Repo) -> list[tuple[str, str, bool]]:
    import re
    found = []
    try:
        names = sorted(n for n in os.listdir(os.fspath(repo.git_dir)) if n.startswith("madtea-push-"))
    except OSError:
        return []
    for name in names:
        path = os.path.join(os.fspath(repo.git_dir), name)
        lines = (_read_text(path) or "").splitlines()
        if len(lines) >= 2 and re.fullmatch(_HEX_SHA, lines[1]):
            pid = int(lines[2]) if len(lines) >= 3 and lines[2].isdigit() else 0
            with _calls_lock:
                ours = path in _pushing
            # Another process's pid that is alive is taken as its push in flight (a reused pid is
            # indistinguishable without reaching the remote, which a local read never does).
            running = ours if pid == os.getpid() else pid > 0 and _process_alive(pid)
            found.append((lines[0], lines[1], running))
    return found


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # it exists, under another user
    return True


def remote_branch_sha(repo: Repo, branch: str, remote: str = "origin",
                      env: Mapping[str, str] | None = None) -> str | None:
    """The sha *remote* has for ``refs/heads/<branch>`` now (a fresh read), or None when it has no such branch."""
    reject_option(branch, "branch")
    reject_option(remote, "remote")
    out = git("ls-remote", "--", remote, f"refs/heads/{branch}", repo=repo, env=env).text
    for line in out.splitlines():
        sha, _, name = line.partition("\t")
        if name == f"refs/heads/{branch}":
            return sha
    return None


def _push_outcome(argv: list[str], result: GitResult, remote: str, branch: str, refspec: str,
                  local: str) -> PushResult:
    # --porcelain prints "<flag>\t<from>:<to>\t<summary>" for each ref, on stdout.
    line = next((ln for ln in result.text.splitlines() if f"\t{refspec}\t" in ln), None)
    if line is None:  # nothing was attempted: no such remote, no access, ...
        raise GitError(argv, result.returncode or -1, _decode(result.stderr) or result.text)
    flag, _, summary = line.split("\t", 2)
    if flag == "!":
        raise _rejection(argv, result, summary)
    if flag == "*":
        return PushResult(remote, branch, "created", None, local)
    if flag == "=":
        return PushResult(remote, branch, "up-to-date", local, local)
    old, _, new = summary.split(" ", 1)[0].replace("...", "..").partition("..")
    return PushResult(remote, branch, "forced" if flag == "+" else "fast-forward", old, new)


def _rejection(argv: list[str], result: GitResult, summary: str) -> PushRejected:
    reason = summary[summary.find("(") + 1: summary.rfind(")")] if "(" in summary else summary
    kind = _rejection_kind(summary, reason)
    cls = LeaseRejected if kind == "lease" else PushRejected
    return cls(argv, result.returncode, _decode(result.stderr) or summary, reason=reason, kind=kind)


def _rejection_kind(summary: str, reason: str) -> str:
    if reason == "stale info":
        return "lease"
    if summary.startswith("[remote rejected]"):
        return "remote"
    if reason in ("non-fast-forward", "fetch first"):
        return "non-fast-forward"
    return "other"


# A fetch writes the remote-tracking refs it names and nothing else: --refmap= drops the configured fetch
# refspecs (a "+refs/heads/*:refs/heads/*" would force-move local branches), and no tag is followed, no
# remote-tracking ref or tag pruned, no submodule fetched, no maintenance started.
_FETCH_OPTIONS = ("--no-tags", "--no-prune", "--recurse-submodules=no", "--no-auto-maintenance", "--refmap=")


def fetch(repo: Repo, remote: str = "origin", env: Mapping[str, str] | None = None,
          branches: Sequence[str] = ()) -> None:
    """Update *remote*'s remote-tracking refs ``refs/remotes/<remote>/<branch>``, for *branches* or for every
    branch; no local branch or tag is written, nothing is pruned. *env* reaches the git child only."""
    reject_option(remote, "remote")
    specs = [f"+refs/heads/{reject_option(b, 'branch')}:refs/remotes/{remote}/{b}" for b in branches] or \
        [f"+refs/heads/*:refs/remotes/{remote}/*"]
    git(*_transport_config(remote), "fetch", *_FETCH_OPTIONS, *_progress_option(), "--", remote, *specs,
        repo=repo, env=_transport_env(env), progress=True)


def fetch_pull_head(repo: Repo, number: int, branch: str, remote: str = "origin",
                    env: Mapping[str, str] | None = None) -> None:
    """Create local *branch* at pull request *number*'s head on *remote*, or fast-forward it there (never forced:
    git refuses a branch that would lose commits, and the checked-out one)."""
    refspec = f"refs/pull/{int(number)}/head:refs/heads/{reject_option(branch, 'branch')}"
    argv = [*_transport_config(remote), "fetch", *_FETCH_OPTIONS, *_progress_option(), "--",
            reject_option(remote, "remote"), refspec]
    result = git(*argv, repo=repo, check=False, env=_transport_env(env), progress=True)
    if result.returncode != 0:
        raise _failure(["git", *argv], result.returncode, _decode(result.stderr), ref=branch)


def clone(url: str, dest: str | os.PathLike[str], flags: Sequence[str] = (),
          env: Mapping[str, str] | None = None) -> None:
    """``git clone [flags] -- url dest`` from *dest*'s parent folder, no hook run while it clones; *env* (the
    credential helper madtea hands git) reaches the git child only, never the new repository's config."""
    dest = os.path.abspath(dest)
    argv = ["-c", "core.hooksPath=/dev/null", "-c", "core.askPass=", "clone", *flags, *_progress_option(), "--",
            url, dest]
    result = git(*argv, cwd=os.path.dirname(dest), check=False, env=_transport_env(env), progress=True,
                 timeout=env_seconds(TIMEOUT_ENV, CLONE_TIMEOUT))
    if result.returncode != 0:
        raise _failure(["git", *argv], result.returncode, _decode(result.stderr))


def _fetch_one(repo: Repo, remote: str, source: str, env: Mapping[str, str] | None) -> tuple[list[str], str]:
    """Fetch one remote ref; a branch lands on its remote-tracking ref. The argv and the commit fetched, read
    from this worktree's FETCH_HEAD as the fetch itself wrote it."""
    spec = source
    if source.startswith("refs/heads/"):
        spec = f"+{source}:refs/remotes/{remote}/{source[len('refs/heads/'):]}"
    argv = [*_transport_config(remote), "fetch", *_FETCH_OPTIONS, "--write-fetch-head", *_progress_option(), "--",
            remote, spec]
    result = git(*argv, repo=repo, check=False, env=_transport_env(env), progress=True)
    if result.returncode != 0:
        raise _failure(["git", *argv], result.returncode, _decode(result.stderr), ref=source)
    import re
    line = (_read_text(repo.git_dir / "FETCH_HEAD") or "").partition("\n")[0]
    sha = line.partition("\t")[0]
    if not re.fullmatch(_HEX_SHA, sha):
        raise GitError(["git", *argv], -1, f"the fetch of {source} left no commit to merge")
    return argv, sha


def pull_ff(repo: Repo, branch: str | None = None, remote: str = "origin",
            env: Mapping[str, str] | None = None) -> PullResult:
    """Fast-forward the checked-out branch to *remote*'s *branch* (a branch name or a full ref; the
    checked-out branch's upstream, else its own name, when None).

    A fetch that writes only the remote-tracking ref, then a fast-forward-only merge of exactly the commit
    fetched: no configured rebase, autostash, submodule update or signature check takes part.
    Raises :class:`NotFastForward`, changing nothing, when histories diverged.
    """
    reject_option(remote, "remote")
    if branch is not None:
        reject_option(branch, "branch")
    current = git("symbolic-ref", "-q", "--short", "HEAD", repo=repo, check=False).text or None
    if branch is None:
        merge = git("config", "--get", f"branch.{current}.merge", repo=repo, check=False).text if current else ""
        branch = merge or current
        if branch is None:
            raise GitError(["git", "pull"], -1, "HEAD is detached and no branch was named")
    source = branch if branch.startswith("refs/") else f"refs/heads/{reject_option(branch, 'branch')}"
    before = head_sha(repo)
    _argv, sha = _fetch_one(repo, remote, source, env)
    args = ["-c", "submodule.recurse=false", "merge", "--ff-only", "--no-autostash", "--no-verify-signatures",
            "--no-stat", "--no-edit", sha]
    result = git(*args, repo=repo, check=False)
    if result.returncode != 0:
        err = _decode(result.stderr)
        if "Not possible to fast-forward" in err or "Diverging branches" in err:
            raise NotFastForward(["git", *args], result.returncode, err)
        raise _failure(["git", *args], result.returncode, err, ref=branch)
    return PullResult(before, head_sha(repo))


# --------------------------------------------------------------------------- branches

def branch_create(repo: Repo, name: str, start_point: str = "HEAD") -> str:
    """Create branch *name* at *start_point* without tracking; return its sha.

    No upstream is set: a feature branch started from origin/main must not
    count origin/main as the place it is pushed to.
    """
    reject_option(name, "branch name")
    sha = head_sha(repo, reject_option(start_point, "start point"))
    if sha is None:
        raise NotACommit(["git", "branch", name, start_point], -1, f"{start_point!r} is not a commit",
                         ref=start_point)
    argv = ["branch", "--no-track", "--", name, sha]
    result = git(*argv, repo=repo, check=False)
    if result.returncode != 0:
        raise _failure(["git", *argv], result.returncode, _decode(result.stderr), branch=name)
    return sha


def name_unborn(repo: Repo, name: str) -> None:
    """Point an unborn HEAD at branch *name* (still without a commit); what is staged stays staged."""
    reject_option(name, "branch name")
    full = git("check-ref-format", "--branch", name, repo=repo, check=False)
    if full.returncode != 0:
        raise GitError(["git", "check-ref-format", "--branch", name], full.returncode, f"{name!r} is not a valid "
                       f"branch name")
    git("symbolic-ref", "HEAD", f"refs/heads/{name}", repo=repo)


def switch(repo: Repo, branch: str) -> None:
    """Check out an existing local branch; never creates one, never discards changes."""
    argv = ["switch", "--no-guess", "--no-recurse-submodules", "--", reject_option(branch, "branch")]
    result = git(*argv, repo=repo, check=False)
    if result.returncode != 0:
        raise _failure(["git", *argv], result.returncode, _decode(result.stderr), ref=branch)


def switch_detach(repo: Repo, commit: str) -> None:
    """Detach the worktree's HEAD at *commit*; never discards changes (git refuses a switch that would)."""
    argv = ["switch", "--detach", "--end-of-options", reject_option(commit, "commit")]
    result = git(*argv, repo=repo, check=False)
    if result.returncode != 0:
        raise _failure(["git", *argv], result.returncode, _decode(result.stderr), ref=commit)


def fast_forward(repo: Repo, branch: str, new_sha: str) -> str | None:
    """Move ``refs/heads/<branch>``, which no worktree may have checked out, forward to *new_sha*, or create it
    there; compare-and-swap against what it held. Returns what it held (None: created). Raises
    :class:`NotFastForward` when it holds commits *new_sha* lacks, :class:`RefMoved` when it moved meanwhile,
    :class:`BranchCheckedOut` when a worktree has it."""
    ref = f"refs/heads/{reject_option(branch, 'branch')}"
    argv = ["update-ref", "-m", f"madtea: fast-forward {branch}", ref, new_sha]
    for wt in worktree_list(repo):
        if wt.branch == branch:
            raise BranchCheckedOut(["git", *argv], branch, wt.path)
    old = head_sha(repo, ref)
    if old is not None and old != new_sha and not is_ancestor(repo, old, new_sha):
        raise NotFastForward(["git", *argv], 1, f"{branch} has commits that {new_sha[:9]} does not; "
                             "nothing was changed")
    if old == new_sha:
        return old
    result = git(*argv, old or "", repo=repo, check=False)
    if result.returncode != 0:
        err = _decode(result.stderr)
        cls = RefMoved if "cannot lock ref" in err or "expected" in err else GitError
        raise cls(["git", *argv], result.returncode, err)
    return old


def branch_delete(repo: Repo, name: str, expected_sha: str) -> None:
    """Delete ``refs/heads/<name>`` only if it still points at *expected_sha*.

    Raises :class:`RefMoved` when it moved or is gone, and
    :class:`BranchCheckedOut` when any worktree has it checked out, or is rebasing or bisecting it. This is no
    containment proof: callers prove the work is safe first (:func:`containment`).
    """
    reject_option(name, "branch name")
    import re
    if not re.fullmatch(_HEX_SHA, expected_sha):
        raise ValueError(f"expected_sha must be a full commit sha, not {expected_sha!r}")
    ref = f"refs/heads/{name}"
    argv = ["update-ref", "-d", ref, expected_sha]
    held = branches_in_use(repo).get(name)
    if held is not None:
        raise BranchCheckedOut(["git", *argv], name, held[0], held[1])
    result = git(*argv, repo=repo, check=False)
    if result.returncode != 0:
        err = _decode(result.stderr)
        cls = RefMoved if "expected" in err or "unable to resolve" in err else GitError
        raise cls(["git", *argv], result.returncode, err)
    # The branch's tracking config would otherwise be inherited by a later
    # branch of the same name; "no such section" is the usual, harmless answer.
    git("config", "--remove-section", f"branch.{name}", repo=repo, check=False)


# --------------------------------------------------------------------------- worktrees

@record(frozen=True)
class Worktree:
    path: Path
    head: str | None
    branch: str | None  # short name; None when detached or bare
    detached: bool = False
    bare: bool = False
    locked: bool = False
    prunable: bool = False


def worktree_list(repo: Repo) -> list[Worktree]:
    """Every worktree of the repo, the main one first."""
    result = git("worktree", "list", "--porcelain", "-z", repo=repo)
    return [_parse_worktree(rec) for rec in _worktree_records(result.stdout)]


def _worktree_records(raw: bytes) -> Iterator[dict[str, str]]:
    rec: dict[str, str] = {}
    for item in raw.split(b"\0"):
        if not item:
            if rec:
                yield rec
            rec = {}
            continue
        key, _, value = os.fsdecode(item).partition(" ")
        rec[key] = value
    if rec:
        yield rec


def _parse_worktree(rec: dict[str, str]) -> Worktree:
    from pathlib import Path
    branch = rec.get("branch")
    if branch and branch.startswith("refs/heads/"):
        branch = branch[len("refs/heads/"):]
    return Worktree(
        path=Path(os.path.realpath(rec["worktree"])),
        head=rec.get("HEAD"),
        branch=branch,
        detached="detached" in rec,
        bare="bare" in rec,
        locked="locked" in rec,
        prunable="prunable" in rec,
    )


def worktree_add(repo: Repo, path: str | os.PathLike[str], commit_ish: str | None = None,
                 new_branch: str | None = None) -> Path:
    """Add a worktree at *path* (relative paths are taken from the repo's top).

    Like ``git worktree add [-b <new_branch>] <path> [<commit-ish>]``, except
    that a branch is only ever created when *new_branch* names it: with
    neither argument the worktree is detached at HEAD, and a *commit_ish* that
    does not resolve is an error instead of a new branch guessed from a remote.
    """
    from pathlib import Path
    target = os.path.join(repo.top, os.fspath(path))
    args = ["worktree", "add"]
    if new_branch is not None:
        args += ["--no-track", "-b", reject_option(new_branch, "new branch")]
    elif commit_ish is None:
        args.append("--detach")
    if os.path.lexists(target) and not (os.path.isdir(target) and not os.path.islink(target)
                                        and not os.listdir(target)):
        # git would create the new branch before it finds the path taken, and leave it behind.
        raise PathExists(["git", *args, target], -1, f"'{target}' already exists", path=target)
    if commit_ish is not None and head_sha(repo, reject_option(commit_ish, "commit-ish")) is None:
        raise NotACommit(["git", *args, target, commit_ish], -1, f"{commit_ish!r} is not a commit", ref=commit_ish)
    argv = [*args, "--", target, *([commit_ish] if commit_ish else [])]
    result = git(*argv, repo=repo, check=False)
    if result.returncode != 0:
        raise _failure(["git", *argv], result.returncode, _decode(result.stderr), ref=commit_ish or "HEAD",
                       branch=new_branch, path=target)
    return Path(os.path.realpath(target))


def blob_ids(repo: Repo, rev: str, paths: Sequence[str]) -> dict[str, str]:
    """path -> blob id of every file at or under *paths* in *rev* (a path missing there is absent)."""
    reject_option(rev, "rev")
    out = git("ls-tree", "-r", "-z", "--full-tree", "--end-of-options", rev, "--", *paths, repo=repo).stdout
    ids = {}
    for rec in out.split(b"\0"):
        meta, _, name = rec.partition(b"\t")
        if name:
            ids[os.fsdecode(name)] = meta.split()[2].decode("ascii")
    return ids


def changed_paths(repo: Repo, commit: str, paths: Sequence[str], base: str | None = None) -> list[str]:
    """The files at or under *paths* that differ (content, mode or type) between *base* and *commit*, or
    without *base*, that *commit* changes from its first parent or adds as a root commit; sorted."""
    reject_option(commit, "commit")
    revs = (commit,) if base is None else (reject_option(base, "base"), commit)
    out = git("diff-tree", "-r", "-z", "--root", "--no-commit-id", "--name-only", "--no-renames",
              "--end-of-options", *revs, "--", *paths, repo=repo).stdout
    return sorted(os.fsdecode(name) for name in out.split(b"\0") if name)


def carry_files(src: Repo, dst_top: str | os.PathLike[str], paths: Sequence[str]) -> list[str]:
    """Copy the current content of *paths* (files, or every file under a directory) from *src*'s working
    tree into the work tree at *dst_top*; a tracked file that is gone from *src* is removed there too.
    *src* is only read. Returns the relative paths written or removed."""
    import shutil

    done = []
    tracked = set(blob_ids(src, "HEAD", paths)) if head_sha(src) else set()
    for rel in paths:
        for name in _files_under(src.top, rel):
            here, there = os.path.join(src.top, name), os.path.join(dst_top, name)
            if os.path.lexists(here):
                os.makedirs(os.path.dirname(there), exist_ok=True)
                if os.path.islink(here):
                    if os.path.lexists(there):
                        os.unlink(there)
                    os.symlink(os.readlink(here), there)
                else:
                    shutil.copy2(here, there)
                done.append(name)
        for name in sorted(t for t in tracked if t == rel or t.startswith(rel.rstrip("/") + "/")):
            there = os.path.join(dst_top, name)
            if not os.path.lexists(os.path.join(src.top, name)) and os.path.lexists(there):
                os.unlink(there)
                done.append(name)
    return done


def _files_under(top: str | os.PathLike[str], rel: str) -> list[str]:
    source = os.path.join(top, rel)
    if not os.path.isdir(source) or os.path.islink(source):
        return [rel]
    out = []
    for folder, dirs, names in os.walk(source):
        dirs[:] = [d for d in dirs if d != ".git"]  # a nested repository's store is never carried
        out += [os.path.relpath(os.path.join(folder, name), top) for name in names]
    return out


def worktree_remove(repo: Repo, path: str | os.PathLike[str], discard: bool = False) -> None:
    """Remove a worktree; git refuses one with changes or untracked files unless *discard* (a person's
    confirmed choice to lose them)."""
    force = ["--force"] if discard else []
    git("worktree", "remove", *force, "--", os.path.join(repo.top, os.fspath(path)), repo=repo)


# --------------------------------------------------------------------------- containment

# A throwaway identity for the squash probe's commit-tree, so the proof works
# for users with no identity configured; the object is never referenced.
_PROBE_IDENTITY = {
    "GIT_AUTHOR_NAME": "madtea", "GIT_AUTHOR_EMAIL": "madtea@localhost",
    "GIT_COMMITTER_NAME": "madtea", "GIT_COMMITTER_EMAIL": "madtea@localhost",
}


def containment(repo: Repo, branch: str, target: str) -> str | None:
    """How *target* already contains *branch*'s work, or None if that cannot be shown.

    "ancestor": the tip is in target's history; "patch-id": every commit's
    change is in target (rebased or cherry-picked); "squash": the branch's
    whole change landed as one commit. Errors raise :class:`GitError`: a
    proof that cannot be run is not a proof.
    """
    reject_option(branch, "branch")
    reject_option(target, "target")
    if is_ancestor(repo, branch, target):
        return "ancestor"
    if _all_in_target(repo, target, branch):
        return "patch-id"
    base = _merge_base(repo, target, branch)
    if base is None:
        return None
    probe = git("commit-tree", f"{branch}^{{tree}}", "-p", base, "-m", "squash probe",
                repo=repo, env=_PROBE_IDENTITY).text
    return "squash" if _all_in_target(repo, target, probe) else None


def is_ancestor(repo: Repo, branch: str, target: str) -> bool:
    """True when *branch* (any commit-ish) is *target* or one of its ancestors."""
    args = ("merge-base", "--is-ancestor", "--end-of-options", branch, target)
    result = git(*args, repo=repo, check=False)
    if result.returncode not in (0, 1):
        raise GitError(["git", *args], result.returncode, _decode(result.stderr))
    return result.returncode == 0


def _all_in_target(repo: Repo, target: str, head: str) -> bool:
    lines = git("cherry", "--end-of-options", target, head, repo=repo).text.splitlines()
    return bool(lines) and all(line.startswith("-") for line in lines)


def _merge_base(repo: Repo, a: str, b: str) -> str | None:
    args = ("merge-base", "--end-of-options", a, b)
    result = git(*args, repo=repo, check=False)
    if result.returncode not in (0, 1):
        raise GitError(["git", *args], result.returncode, _decode(result.stderr))
    return result.text or None


def unpushed(repo: Repo, branch: str) -> int:
    """Commits on *branch* that no remote-tracking ref has (no fetch is done).

    Counted against the branch's upstream, else ``origin/<branch>``, else
    against every remote-tracking branch.
    """
    ref = f"refs/heads/{reject_option(branch, 'branch')}"
    for base in (upstream(repo, branch), f"refs/remotes/origin/{branch}"):
        if base and ref_exists(repo, base):
            return _rev_count(repo, f"{base}..{ref}")
    return _rev_count(repo, ref, "--not", "--remotes")


def upstream(repo: Repo, branch: str) -> str | None:
    """The full ref name of *branch*'s configured upstream (``refs/remotes/origin/main``), or None."""
    ref = f"refs/heads/{reject_option(branch, 'branch')}"
    return git("for-each-ref", "--format=%(upstream)", ref, repo=repo).text or None


def unreferenced(repo: Repo, rev: str = "HEAD") -> int:
    """Commits reachable from *rev* that no branch, tag or remote-tracking ref holds.

    A detached worktree's own commits: removing the worktree would leave them
    reachable from nothing.
    """
    reject_option(rev, "rev")
    if head_sha(repo, rev) is None:
        return 0  # an unborn HEAD holds no commit
    return _rev_count(repo, rev, "--not", "--branches", "--tags", "--remotes")


def _rev_count(repo: Repo, *revs: str) -> int:
    return int(git("rev-list", "--count", *revs, "--", repo=repo).text)


# --------------------------------------------------------------------------- private files
#
# madtea's own small files (a token store, the logins, the release key's pin, an update's journal, the hook's
# record of the agent's shell) are written and read here alone, so they share one policy.

class UnsafeFile(OSError):
    """A private file that is not read, and why: another user's, readable by others, not a regular file, too large."""


def write_private(path: str | os.PathLike[str], data: bytes, *, durable: bool = True) -> None:
    """Replace *path* with *data* by one rename: a reader sees the old file or the new one, whole, 0600 from its
    creation (a missing folder is made 0700).

    *durable* syncs the file before the rename and the folder after, so a crash or a power cut leaves one of the
    two; a cache, which a lost write only makes stale, skips both. A crash before the rename leaves the new copy
    beside the file, as private as it (``.NAME.PID.RANDOM.tmp``).
    """
    folder, name = os.path.split(os.path.abspath(path))
    os.makedirs(folder, 0o700, exist_ok=True)
    temp = os.path.join(folder, f".{name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(temp, flags, 0o600)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if durable:
                sync_file(fd)
        finally:
            os.close(fd)
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise
    if durable:
        sync_folder(folder)


def read_private(path: str | os.PathLike[str], cap: int) -> bytes | None:
    """The bytes of the private file *path*, or None when there is none.

    Never through a symlink, never waiting on a fifo, never more than *cap* bytes. :class:`UnsafeFile` when it is
    not a regular file, belongs to another user, can be read by others, or holds more than *cap*; ``OSError`` when
    it cannot be opened.
    """
    import stat

    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafeFile(f"{path} is not a regular file, so it is not read")
        if hasattr(os, "getuid"):  # POSIX owners and modes; Windows files are private to the profile
            if st.st_uid != os.getuid():
                raise UnsafeFile(f"{path} belongs to another user, so it is not read")
            if st.st_mode & 0o077:
                raise UnsafeFile(f"{path} can be read by other users (mode {stat.S_IMODE(st.st_mode):04o}), so it "
                                 "is not read; make it private with chmod 600")
        data = b""
        while len(data) <= cap and (chunk := os.read(fd, cap + 1 - len(data))):
            data += chunk
        if len(data) > cap:
            raise UnsafeFile(f"{path} is larger than {cap} bytes, so it is not read")
        return data
    finally:
        os.close(fd)


def sync_file(fd: int) -> None:
    """Flush *fd*'s data to the disk; on macOS by F_FULLFSYNC, as its fsync leaves the data in the drive's cache."""
    import sys

    if sys.platform == "darwin":
        import fcntl

        try:
            fcntl.fcntl(fd, getattr(fcntl, "F_FULLFSYNC", 51))
            return
        except OSError:
            pass
    os.fsync(fd)


def sync_folder(folder: str | os.PathLike[str]) -> None:
    """Make a rename in *folder* durable; Windows cannot open a folder for that, and its renames need no such step."""
    import sys

    if sys.platform == "win32":
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
