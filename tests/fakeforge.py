"""A faithful fake Gitea / Forgejo API v1 server for madtea's tests.

``FakeForge`` runs the standard library's ``ThreadingHTTPServer`` on
``127.0.0.1:0`` in a daemon thread.  It keeps issues, pull requests, labels,
milestones, comments, releases, notifications, wiki pages and (Gitea only)
Actions runs in memory, and keeps code in **real bare git repositories** under
a temporary folder (``<bare_root>/<owner>/<repo>.git``): branches and tags are
read with git, and pull requests are merged with git in a throw-away worktree.

Tests push over a plain local path while the remote still reads as http:
``remote_url(owner, repo)`` is ``http://127.0.0.1:PORT/owner/repo.git`` and
``rewrite_git_urls()`` adds ``url.<bare_root>/.insteadOf`` for that prefix to
the test's global git config.

The behaviours reproduced (auth errors, pagination with ``Link`` built from a
ROOT_URL that differs from the dial address, 201 on issue edit, empty 200 on
merge, Go-struct 409 bodies, Forgejo's differences, ...) are the ones listed in
``../shared/reference/gitea-api.md`` and, endpoint by endpoint, in the forge contract read from the servers'
source (``forge_contract.py``).  The fake plays a named release (``FakeForge("gitea-1.21")``,
``"forgejo-11"``; a bare flavour is its newest): the endpoints that answer are the ones the contract gives
that release, and a request to a path the contract does not list fails the test.  Every ``/api/v1`` request is checked
against the official spec (``speccheck``); violations are recorded, the fake
still answers as the real server would, and the pytest fixtures fail the test
at teardown when any violation was recorded.

Fault injection (``inject``) covers 5xx, 429 with ``Retry-After``, slow and
HTML answers, truncated bodies, dropped connections and "performed, then too
slow to answer" creates.
"""
from __future__ import annotations

__all__ = [
    "FakeForge",
    "RecordedRequest",
    "Fault",
    "Repo",
    "ActionRun",
    "FAULT_KINDS",
    "DEFAULT_ROOT_URL",
    "DEFAULT_USER",
    "DEFAULT_TOKEN",
    "DEFAULT_OWNER",
    "DEFAULT_REPO",
    "assert_no_violations",
    "gitea_forge",
    "forgejo_forge",
    "fake_forge",
]

import base64
import email.parser
import fnmatch
import email.policy
import hashlib
import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import traceback
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit

import pytest

import forge_contract
import speccheck

# --------------------------------------------------------------------------- constants

DEFAULT_ROOT_URL = "http://forge.example.test/"
DEFAULT_USER = "alice"
DEFAULT_TOKEN = "alice-token"
DEFAULT_OWNER = "acme"
DEFAULT_REPO = "web"

VERSIONS = {flavour: forge_contract.VERSION_STRINGS[f"{flavour}-{list(lines)[-1]}"]  # each flavour's newest
            for flavour, lines in forge_contract.RELEASES.items()}
DEFAULT_PAGING_NUM = 30
MAX_RESPONSE_ITEMS = 50
_EPOCH = 1767225600  # 2026-01-01T00:00:00Z, the same instant as the test seal's git dates
_ZERO_SHA = "0" * 40
_FORGEJO_NOT_FOUND = "The target couldn't be found."
_MERGE_STYLES = ("merge", "rebase", "rebase-merge", "squash", "fast-forward-only", "manually-merged")
_WIP_PREFIXES = ("WIP:", "[WIP]")
_LEVELS = {"none": 0, "read": 1, "write": 2, "admin": 3, "owner": 4}
_COLOR_RE = re.compile(r"^#?(?:[0-9a-fA-F]{6}|[0-9a-fA-F]{3})$")
FAULT_KINDS = (
    "500", "502", "503", "429", "slow", "html", "truncated", "drop", "drop-after", "create-then-timeout",
    "null-404", "trickle", "trickle-head",
)
_MISSING: Any = object()


def _ts(seconds: int | None) -> str | None:
    """Gitea's JSON time format (RFC 3339, UTC shown as Z)."""
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse_ts(text: str) -> int | None:
    try:
        return int(datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00")).timestamp())
    except ValueError:
        return None


def _go_json(obj: Any) -> bytes:
    """JSON as Go's encoding/json writes it: compact, HTML characters escaped, newline-terminated."""
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return (text + "\n").encode("utf-8")


# --------------------------------------------------------------------------- records and faults

@dataclass
class RecordedRequest:
    """One request as the fake received it."""

    method: str
    path: str  # raw path, still percent-encoded, without the query
    query: dict[str, str]  # first value of each parameter
    query_all: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes
    json: Any  # the parsed JSON body, or None
    operation: str | None = None  # spec operationId when the spec is available
    user: str | None = None  # the authenticated login

    def header(self, name: str) -> str | None:
        """A request header by case-insensitive name."""
        for key, value in self.headers.items():
            if key.lower() == name.lower():
                return value
        return None


@dataclass
class Fault:
    """A pending injected fault; see :meth:`FakeForge.inject`."""

    kind: str
    times: int = 1
    path_contains: str | None = None
    method: str | None = None
    seconds: float = 2.0
    status: int | None = None
    retry_after: int = 1
    body: bytes | None = None
    incomplete: bool = False

    def matches(self, method: str, path: str) -> bool:
        if self.times <= 0:
            return False
        if self.method and self.method.upper() != method.upper():
            return False
        return self.path_contains is None or self.path_contains in path


@dataclass
class _Response:
    status: int
    body: bytes = b""
    content_type: str | None = "application/json;charset=utf-8"
    headers: dict[str, str] = field(default_factory=dict)


class _Reply(Exception):
    """Raised inside a handler to answer at once (errors, redirects)."""

    def __init__(self, response: _Response) -> None:
        super().__init__(response.status)
        self.response = response


# --------------------------------------------------------------------------- state

@dataclass
class User:
    id: int
    login: str
    full_name: str = ""
    email: str = ""
    is_admin: bool = False
    is_org: bool = False
    password: str | None = None
    created: int = _EPOCH
    org_members: dict[str, str] = field(default_factory=dict)  # orgs only: login -> "owner" | "member"


@dataclass
class Token:
    value: str
    login: str
    scopes: tuple[str, ...] = ("all",)


@dataclass
class Label:
    id: int
    name: str
    color: str  # stored normalised: "#rrggbb"
    description: str = ""
    exclusive: bool = False
    is_archived: bool = False


@dataclass
class Milestone:
    id: int
    title: str
    description: str = ""
    state: str = "open"
    due_on: int | None = None
    created: int = _EPOCH
    updated: int = _EPOCH
    closed: int | None = None


@dataclass
class Comment:
    id: int
    repo_id: int
    issue_number: int
    user: str
    body: str
    created: int
    updated: int
    attachments: list["Asset"] = field(default_factory=list)


@dataclass
class Review:
    id: int
    user: str
    state: str
    body: str
    commit_id: str
    submitted: int
    comments: list[dict[str, Any]] = field(default_factory=list)
    dismissed: bool = False


@dataclass
class Pull:
    id: int
    head_repo_id: int
    head_branch: str
    base_branch: str
    merge_base: str = ""
    merged: bool = False
    merged_at: int | None = None
    merged_by: str | None = None
    merge_commit_sha: str | None = None
    status: str = "checking"  # "checking" | "mergeable" | "conflict"
    checked_shas: tuple[str, str] | None = None
    checks_remaining: int = 0
    allow_maintainer_edit: bool = False
    reviews: list[Review] = field(default_factory=list)
    requested: list[str] = field(default_factory=list)  # logins asked to review
    # merge_when_checks_succeed: (doer, style, message, delete branch) until the forge merges it or it is cancelled.
    # Like Gitea's pull_auto_merge row it keeps no head commit: the head as it is then is merged.
    auto_merge: tuple[str, str, str, bool] | None = None


@dataclass
class Issue:
    id: int
    number: int
    title: str
    body: str
    user: str
    created: int
    updated: int
    state: str = "open"
    closed: int | None = None
    labels: list[int] = field(default_factory=list)
    milestone: int | None = None
    assignees: list[str] = field(default_factory=list)
    locked: bool = False
    due: int | None = None
    ref: str = ""
    comment_ids: list[int] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    pull: Pull | None = None
    times: list[dict[str, Any]] = field(default_factory=list)  # tracked times: id, user, seconds, created
    stopwatches: dict[str, int] = field(default_factory=dict)  # login -> started (forge clock)
    attachments: list["Asset"] = field(default_factory=list)


@dataclass
class Asset:
    id: int
    name: str
    size: int
    uuid: str
    created: int
    data: bytes = b""


@dataclass
class Release:
    id: int
    tag_name: str
    target: str
    name: str
    body: str
    draft: bool
    prerelease: bool
    author: str
    created: int
    hide_archive_links: bool = False
    assets: list[Asset] = field(default_factory=list)


@dataclass
class WikiPage:
    title: str
    content: bytes
    revisions: list[tuple[str, str, int, str]] = field(default_factory=list)  # (sha, author, time, message)


@dataclass
class ActionJob:
    id: int
    name: str
    status: str
    conclusion: str
    log: str


@dataclass
class ActionRun:
    id: int
    number: int
    workflow: str
    title: str
    event: str
    status: str
    conclusion: str
    branch: str
    head_sha: str
    actor: str
    created: int
    jobs: list[ActionJob] = field(default_factory=list)
    artifacts: list[tuple[int, str, bytes]] = field(default_factory=list)  # (id, name, zip bytes)


@dataclass
class Notification:
    id: int
    login: str
    repo_id: int
    number: int | None
    subject_type: str  # "Issue" | "Pull" | "Commit" | "Repository"
    title: str
    unread: bool = True
    pinned: bool = False
    updated: int = _EPOCH


@dataclass
class Team:
    id: int
    org: str
    name: str
    description: str = ""
    permission: str = "read"
    members: list[str] = field(default_factory=list)


@dataclass
class Package:
    id: int
    owner: str
    type: str
    name: str
    version: str
    creator: str
    created: int
    repo_id: int | None = None


@dataclass
class Repo:
    id: int
    owner: str
    name: str
    bare: Path
    private: bool = False
    description: str = ""
    website: str = ""
    default_branch: str = "main"
    archived: bool = False
    archived_at: int | None = None
    created: int = _EPOCH
    updated: int = _EPOCH
    parent_id: int | None = None
    collaborators: dict[str, str] = field(default_factory=dict)  # login -> "read" | "write" | "admin"
    settings: dict[str, Any] = field(default_factory=dict)
    next_number: int = 1
    issues: dict[int, Issue] = field(default_factory=dict)
    labels: dict[int, Label] = field(default_factory=dict)
    milestones: dict[int, Milestone] = field(default_factory=dict)
    releases: dict[int, Release] = field(default_factory=dict)
    wiki: dict[str, WikiPage] = field(default_factory=dict)
    runs: dict[int, ActionRun] = field(default_factory=dict)
    statuses: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    protected: set[str] = field(default_factory=set)  # branch protection rules, by exact branch name
    # A protected branch's required status checks (enable_status_check), as glob patterns; [] requires every
    # context the head reports (services/pull/commit_status.go MergeRequiredContextsCommitStatus).
    required_checks: dict[str, list[str]] = field(default_factory=dict)
    secrets: dict[str, str] = field(default_factory=dict)  # write-only through the API, as on a forge
    variables: dict[str, str] = field(default_factory=dict)

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"


_REPO_SETTING_DEFAULTS: dict[str, Any] = {
    "has_issues": True,
    "has_wiki": True,
    "has_pull_requests": True,
    "has_projects": True,
    "has_releases": True,
    "has_packages": True,
    "has_actions": True,
    "allow_merge_commits": True,
    "allow_rebase": True,
    "allow_rebase_explicit": True,
    "allow_squash_merge": True,
    "allow_fast_forward_only_merge": True,
    "allow_manual_merge": False,
    "autodetect_manual_merge": False,
    "allow_rebase_update": True,
    "default_delete_branch_after_merge": False,
    "default_merge_style": "merge",
    "default_allow_maintainer_edit": False,
    "ignore_whitespace_conflicts": False,
}
_STYLE_SETTING = {
    "merge": "allow_merge_commits",
    "rebase": "allow_rebase",
    "rebase-merge": "allow_rebase_explicit",
    "squash": "allow_squash_merge",
    "fast-forward-only": "allow_fast_forward_only_merge",
    "manually-merged": "allow_manual_merge",
}


# --------------------------------------------------------------------------- git

class _GitFailed(Exception):
    def __init__(self, args: Sequence[str], result: subprocess.CompletedProcess[bytes]) -> None:
        super().__init__(f"git {' '.join(args)} failed ({result.returncode}): {result.stderr.decode(errors='replace')}")
        self.result = result


_GIT_STRIPPED = (
    "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE", "GIT_PREFIX",
)


def _git(
    *args: str,
    cwd: Path | None = None,
    git_dir: Path | None = None,
    input: bytes | None = None,
    env: Mapping[str, str] | None = None,
    check: bool = True,
) -> subprocess.CompletedProcess[bytes]:
    """Run git for the fake forge (the server's own side, not the code under test)."""
    child_env = {k: v for k, v in os.environ.items() if k not in _GIT_STRIPPED}
    child_env.update({"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", "GIT_EDITOR": "true"})
    if git_dir is not None:
        child_env["GIT_DIR"] = str(git_dir)
    if env:
        child_env.update(env)
    argv = ["git", *args]
    result = subprocess.run(
        argv, cwd=cwd, input=input, env=child_env, capture_output=True,
        stdin=None if input is not None else subprocess.DEVNULL, check=False, timeout=60,
    )
    if check and result.returncode != 0:
        raise _GitFailed(args, result)
    return result


def _out(result: subprocess.CompletedProcess[bytes]) -> str:
    return result.stdout.decode("utf-8", "replace").strip()


# --------------------------------------------------------------------------- routing

@dataclass(frozen=True)
class _Route:
    method: str
    pattern: str
    handler: str
    scope: str | None = None  # token scope category ("repository", "issue", ...)
    token: bool = False  # the route needs a signed-in caller (Gitea's reqToken)
    perm: str = "read"  # minimum repository access for repo routes
    form: bool = False  # the route binds a JSON form (Content-Type and binding errors)
    flavours: tuple[str, ...] = ("gitea", "forgejo")
    archived_ok: bool = False  # allowed on an archived repository

    def compile(self) -> re.Pattern[str]:
        pieces = []
        for part in re.split(r"(\{[^}]+\})", self.pattern):
            if part.startswith("{"):
                name = part[1:-1]
                if name.endswith("*"):
                    pieces.append(f"(?P<{name[:-1]}>.+)")
                else:
                    pieces.append(f"(?P<{name}>[^/]+?)")
            else:
                pieces.append(re.escape(part))
        return re.compile("^" + "".join(pieces) + "$")


_R = "/repos/{owner}/{repo}"
_ROUTES: tuple[_Route, ...] = (
    _Route("GET", "/version", "version"),
    _Route("GET", "/settings/api", "settings_api"),
    _Route("GET", "/user", "user_get", scope="user", token=True),
    _Route("GET", "/user/repos", "user_repos", scope="repository", token=True),
    _Route("POST", "/user/repos", "repo_create", scope="repository", token=True, form=True),
    _Route("POST", "/orgs/{org}/repos", "org_repo_create", scope="organization", token=True, form=True),
    _Route("GET", "/orgs/{org}/repos", "org_repos", scope="organization"),
    _Route("GET", "/users/{username}/repos", "users_repos", scope="user"),
    _Route("GET", "/notifications", "notifications_list", scope="notification", token=True),
    _Route("PUT", "/notifications", "notifications_read", scope="notification", token=True),
    _Route("GET", "/notifications/threads/{id}", "notification_get", scope="notification", token=True),
    _Route("PATCH", "/notifications/threads/{id}", "notification_read", scope="notification", token=True),
    _Route("GET", "/repos/search", "repos_search", scope="repository"),
    _Route("GET", "/user/orgs", "user_orgs", scope="organization", token=True),
    _Route("GET", "/users/search", "users_search", scope="user"),
    _Route("GET", "/orgs/{org}/teams/search", "teams_search", scope="organization", token=True),
    _Route("GET", "/packages/{owner}", "packages_list", scope="package"),
    _Route("GET", "/packages/{owner}/{type}/{name}", "package_versions", scope="package", flavours=("gitea",)),
    _Route("GET", "/repos/issues/search", "issues_search", scope="issue"),
    # repository
    _Route("GET", _R, "repo_get", scope="repository"),
    _Route("PATCH", _R, "repo_edit", scope="repository", token=True, perm="admin", form=True, archived_ok=True),
    _Route("DELETE", _R, "repo_delete", scope="repository", token=True, perm="admin", archived_ok=True),
    _Route("GET", _R + "/forks", "forks_list", scope="repository"),
    _Route("POST", _R + "/forks", "fork_create", scope="repository", token=True, form=True, archived_ok=True),
    _Route("GET", _R + "/branches", "branches_list", scope="repository"),
    _Route("POST", _R + "/branches", "branch_create", scope="repository", token=True, perm="write", form=True),
    _Route("GET", _R + "/branches/{branch*}", "branch_get", scope="repository"),
    _Route("DELETE", _R + "/branches/{branch*}", "branch_delete", scope="repository", token=True, perm="write"),
    _Route("PATCH", _R + "/branches/{branch*}", "branch_rename", scope="repository", token=True, perm="write",
           form=True),
    _Route("GET", _R + "/commits", "commits_list", scope="repository"),
    _Route("GET", _R + "/git/commits/{sha}.{kind}", "commit_diff", scope="repository"),
    _Route("GET", _R + "/git/commits/{sha}", "commit_get", scope="repository"),
    _Route("GET", _R + "/tags", "tags_list", scope="repository"),
    _Route("POST", _R + "/tags", "tag_create", scope="repository", token=True, perm="write", form=True),
    _Route("GET", _R + "/tags/{tag*}", "tag_get", scope="repository"),
    _Route("DELETE", _R + "/tags/{tag*}", "tag_delete", scope="repository", token=True, perm="write"),
    _Route("GET", _R + "/commits/{ref}/status", "commit_status", scope="repository"),
    _Route("GET", _R + "/commits/{ref}/statuses", "commit_statuses", scope="repository"),
    _Route("GET", _R + "/statuses/{sha}", "commit_statuses", scope="repository"),
    _Route("GET", _R + "/contents", "contents_root", scope="repository"),
    _Route("POST", _R + "/contents", "files_change", scope="repository", token=True, perm="write", form=True),
    _Route("GET", _R + "/contents/{filepath*}", "contents_get", scope="repository"),
    _Route("POST", _R + "/contents/{filepath*}", "file_create", scope="repository", token=True, perm="write",
           form=True),
    _Route("PUT", _R + "/contents/{filepath*}", "file_update", scope="repository", token=True, perm="write",
           form=True),
    _Route("DELETE", _R + "/contents/{filepath*}", "file_delete", scope="repository", token=True, perm="write",
           form=True),
    _Route("GET", _R + "/raw/{filepath*}", "raw_get", scope="repository"),
    _Route("GET", _R + "/git/trees/{sha}", "git_tree", scope="repository"),
    _Route("GET", _R + "/collaborators/{collaborator}", "collaborator_check", scope="repository"),
    # issues and comments
    _Route("GET", _R + "/issues", "issues_list", scope="issue"),
    _Route("POST", _R + "/issues", "issue_create", scope="issue", token=True, form=True),
    _Route("GET", _R + "/issues/comments", "repo_comments", scope="issue"),
    _Route("GET", _R + "/issues/comments/{id}", "comment_get", scope="issue"),
    _Route("PATCH", _R + "/issues/comments/{id}", "comment_edit", scope="issue", token=True, form=True),
    _Route("DELETE", _R + "/issues/comments/{id}", "comment_delete", scope="issue", token=True),
    _Route("GET", _R + "/issues/{index}", "issue_get", scope="issue"),
    _Route("PATCH", _R + "/issues/{index}", "issue_edit", scope="issue", token=True, form=True),
    _Route("DELETE", _R + "/issues/{index}", "issue_delete", scope="issue", token=True, perm="admin"),
    _Route("GET", _R + "/issues/{index}/comments", "comments_list", scope="issue"),
    _Route("POST", _R + "/issues/{index}/comments", "comment_create", scope="issue", token=True, form=True),
    _Route("PATCH", _R + "/issues/{index}/comments/{id}", "comment_edit", scope="issue", token=True, form=True),
    _Route("DELETE", _R + "/issues/{index}/comments/{id}", "comment_delete", scope="issue", token=True),
    _Route("GET", _R + "/issues/{index}/timeline", "timeline", scope="issue"),
    _Route("GET", _R + "/issues/{index}/labels", "issue_labels", scope="issue"),
    _Route("POST", _R + "/issues/{index}/labels", "issue_labels_add", scope="issue", token=True, form=True),
    _Route("PUT", _R + "/issues/{index}/labels", "issue_labels_replace", scope="issue", token=True, form=True),
    _Route("DELETE", _R + "/issues/{index}/labels", "issue_labels_clear", scope="issue", token=True),
    _Route("DELETE", _R + "/issues/{index}/labels/{id}", "issue_label_remove", scope="issue", token=True),
    _Route("PUT", _R + "/issues/{index}/lock", "issue_lock", scope="issue", token=True, perm="write",
           form=True, flavours=("gitea",)),
    _Route("DELETE", _R + "/issues/{index}/lock", "issue_unlock", scope="issue", token=True, perm="write",
           flavours=("gitea",)),
    # labels and milestones
    _Route("GET", _R + "/labels", "labels_list", scope="issue"),
    _Route("POST", _R + "/labels", "label_create", scope="issue", token=True, perm="write", form=True),
    _Route("GET", _R + "/labels/{id}", "label_get", scope="issue"),
    _Route("PATCH", _R + "/labels/{id}", "label_edit", scope="issue", token=True, perm="write", form=True),
    _Route("DELETE", _R + "/labels/{id}", "label_delete", scope="issue", token=True, perm="write"),
    _Route("GET", _R + "/milestones", "milestones_list", scope="issue"),
    _Route("POST", _R + "/milestones", "milestone_create", scope="issue", token=True, perm="write", form=True),
    _Route("GET", _R + "/milestones/{id}", "milestone_get", scope="issue"),
    _Route("PATCH", _R + "/milestones/{id}", "milestone_edit", scope="issue", token=True, perm="write", form=True),
    _Route("DELETE", _R + "/milestones/{id}", "milestone_delete", scope="issue", token=True, perm="write"),
    # pull requests
    _Route("GET", _R + "/pulls", "pulls_list", scope="repository"),
    _Route("POST", _R + "/pulls", "pull_create", scope="repository", token=True, form=True),
    _Route("GET", _R + "/pulls/{index}.{kind}", "pull_diff", scope="repository"),
    _Route("GET", _R + "/pulls/{index}", "pull_get", scope="repository"),
    _Route("PATCH", _R + "/pulls/{index}", "pull_edit", scope="repository", token=True, form=True),
    _Route("GET", _R + "/pulls/{index}/merge", "pull_is_merged", scope="repository"),
    _Route("POST", _R + "/pulls/{index}/merge", "pull_merge", scope="repository", token=True, form=True),
    _Route("DELETE", _R + "/pulls/{index}/merge", "pull_merge_cancel", scope="repository", token=True),
    _Route("GET", _R + "/pulls/{index}/reviews", "reviews_list", scope="repository"),
    _Route("POST", _R + "/pulls/{index}/reviews", "review_create", scope="repository", token=True, form=True),
    _Route("GET", _R + "/pulls/{index}/files", "pull_files", scope="repository"),
    _Route("GET", _R + "/pulls/{index}/reviews/{id}", "review_get", scope="repository"),
    _Route("POST", _R + "/pulls/{index}/reviews/{id}", "review_submit", scope="repository", token=True, form=True),
    _Route("GET", _R + "/pulls/{index}/reviews/{id}/comments", "review_comments", scope="repository"),
    _Route("POST", _R + "/pulls/{index}/reviews/{id}/comments", "review_comment_add", scope="repository",
           token=True, form=True, flavours=("forgejo",)),
    _Route("POST", _R + "/pulls/{index}/reviews/{id}/dismissals", "review_dismiss", scope="repository",
           token=True, perm="write", form=True),
    _Route("POST", _R + "/pulls/{index}/requested_reviewers", "reviewers_add", scope="repository", token=True,
           form=True),
    _Route("DELETE", _R + "/pulls/{index}/requested_reviewers", "reviewers_remove", scope="repository",
           token=True, form=True),
    _Route("POST", _R + "/pulls/{index}/update", "pull_update", scope="repository", token=True),
    _Route("GET", _R + "/pulls/{base}/{head}", "pull_by_branches", scope="repository"),
    # releases
    _Route("GET", _R + "/releases", "releases_list", scope="repository"),
    _Route("POST", _R + "/releases", "release_create", scope="repository", token=True, perm="write", form=True),
    _Route("GET", _R + "/releases/latest", "release_latest", scope="repository"),
    _Route("GET", _R + "/releases/tags/{tag*}", "release_by_tag", scope="repository"),
    _Route("DELETE", _R + "/releases/tags/{tag*}", "release_delete_by_tag", scope="repository", token=True,
           perm="write"),
    _Route("GET", _R + "/releases/{id}", "release_get", scope="repository"),
    _Route("PATCH", _R + "/releases/{id}", "release_edit", scope="repository", token=True, perm="write", form=True),
    _Route("DELETE", _R + "/releases/{id}", "release_delete", scope="repository", token=True, perm="write"),
    _Route("GET", _R + "/releases/{id}/assets", "assets_list", scope="repository"),
    _Route("POST", _R + "/releases/{id}/assets", "asset_upload", scope="repository", token=True, perm="write"),
    # wiki
    _Route("GET", _R + "/wiki/pages", "wiki_pages", scope="repository"),
    _Route("POST", _R + "/wiki/new", "wiki_create", scope="repository", token=True, perm="write", form=True),
    _Route("GET", _R + "/wiki/page/{name}", "wiki_get", scope="repository"),
    _Route("PATCH", _R + "/wiki/page/{name}", "wiki_edit", scope="repository", token=True, perm="write", form=True),
    _Route("DELETE", _R + "/wiki/page/{name}", "wiki_delete", scope="repository", token=True, perm="write"),
    # actions: Gitea has the GitHub-like surface; Forgejo 15 only lists runs, in its own shape
    _Route("GET", _R + "/actions/runs", "actions_runs", scope="repository"),
    _Route("GET", _R + "/actions/runs/{run}", "actions_run", scope="repository"),
    _Route("GET", _R + "/actions/runs/{run}/jobs", "actions_jobs", scope="repository", flavours=("gitea",)),
    _Route("GET", _R + "/actions/workflows", "actions_workflows", scope="repository", flavours=("gitea",)),
    _Route("GET", _R + "/actions/jobs/{job}/logs", "actions_logs", scope="repository", flavours=("gitea",)),
    _Route("GET", _R + "/actions/artifacts", "artifacts_list", scope="repository", flavours=("gitea",)),
    _Route("GET", _R + "/actions/runs/{run}/artifacts", "artifacts_list", scope="repository", flavours=("gitea",)),
    _Route("GET", _R + "/actions/artifacts/{artifact_id}", "artifact_get", scope="repository", flavours=("gitea",)),
    _Route("GET", _R + "/actions/artifacts/{artifact_id}/zip", "artifact_zip", scope="repository",
           flavours=("gitea",)),
    _Route("POST", _R + "/actions/workflows/{workflow_id}/dispatches", "workflow_dispatch", scope="repository",
           token=True, perm="write", form=True),
    _Route("GET", _R + "/actions/secrets", "secrets_list", scope="repository", token=True, perm="owner"),
    _Route("PUT", _R + "/actions/secrets/{secretname}", "secret_put", scope="repository", token=True,
           perm="owner", form=True),
    _Route("DELETE", _R + "/actions/secrets/{secretname}", "secret_delete", scope="repository", token=True,
           perm="owner"),
    _Route("GET", _R + "/actions/variables", "variables_list", scope="repository", token=True, perm="owner"),
    _Route("GET", _R + "/actions/variables/{variablename}", "variable_get", scope="repository", token=True,
           perm="owner"),
    _Route("POST", _R + "/actions/variables/{variablename}", "variable_create", scope="repository", token=True,
           perm="owner", form=True),
    _Route("PUT", _R + "/actions/variables/{variablename}", "variable_update", scope="repository", token=True,
           perm="owner", form=True),
    _Route("DELETE", _R + "/actions/variables/{variablename}", "variable_delete", scope="repository", token=True,
           perm="owner"),
    # time tracking and issue attachments
    _Route("GET", _R + "/issues/{index}/times", "times_list", scope="issue"),
    _Route("POST", _R + "/issues/{index}/times", "time_add", scope="issue", token=True, perm="write", form=True),
    _Route("POST", _R + "/issues/{index}/stopwatch/start", "stopwatch_start", scope="issue", token=True,
           perm="write"),
    _Route("POST", _R + "/issues/{index}/stopwatch/stop", "stopwatch_stop", scope="issue", token=True,
           perm="write"),
    _Route("GET", _R + "/issues/{index}/assets", "issue_assets", scope="issue"),
    _Route("POST", _R + "/issues/{index}/assets", "issue_asset_upload", scope="issue", token=True),
    _Route("GET", _R + "/issues/comments/{id}/assets", "comment_assets", scope="issue"),
    _Route("POST", _R + "/issues/comments/{id}/assets", "comment_asset_upload", scope="issue", token=True),
    _Route("DELETE", _R + "/issues/{index}/stopwatch/delete", "stopwatch_delete", scope="issue", token=True,
           perm="write"),
    _Route("GET", "/user/stopwatches", "user_stopwatches", scope="user", token=True),
    _Route("GET", "/user/times", "user_times", scope="user", token=True),
    _Route("GET", _R + "/times", "repo_times", scope="repository", token=True),
    _Route("DELETE", _R + "/issues/{index}/times/{id}", "time_delete", scope="issue", token=True),
    _Route("GET", _R + "/issues/{index}/assets/{attachment_id}", "issue_asset_get", scope="issue"),
    _Route("PATCH", _R + "/issues/{index}/assets/{attachment_id}", "issue_asset_edit", scope="issue", token=True,
           form=True),
    _Route("DELETE", _R + "/issues/{index}/assets/{attachment_id}", "issue_asset_delete", scope="issue", token=True),
    _Route("GET", _R + "/issues/comments/{id}/assets/{attachment_id}", "comment_asset_get", scope="issue"),
    _Route("PATCH", _R + "/issues/comments/{id}/assets/{attachment_id}", "comment_asset_edit", scope="issue",
           token=True, form=True),
    _Route("DELETE", _R + "/issues/comments/{id}/assets/{attachment_id}", "comment_asset_delete", scope="issue",
           token=True),
    _Route("DELETE", _R + "/pulls/{index}/reviews/{id}", "review_delete", scope="repository", token=True),
    _Route("GET", _R + "/wiki/revisions/{name}", "wiki_revisions", scope="repository"),
    _Route("GET", "/orgs/{org}/labels", "org_labels", scope="organization"),
    _Route("GET", "/packages/{owner}/{type}/{name}/{version}", "package_get", scope="package"),
)
_COMPILED = tuple((route, route.compile()) for route in _ROUTES)


def _contract_key(method: str, pattern: str) -> str:
    return method + " " + re.sub(r"\{[^}]*\}", "{}", pattern)


_BY_SHAPE = {_contract_key(e.method, e.path): e for e in forge_contract.ENDPOINTS}
#: Each route's entry in the forge contract (a route missing here is a failure of tests/test_forge_contract.py).
_CONTRACTED = {route: _BY_SHAPE[key] for route in _ROUTES
               if (key := _contract_key(route.method, route.pattern)) in _BY_SHAPE}


@dataclass
class _Ctx:
    """What a handler needs to know about the request."""

    method: str
    path: str  # raw API path after /api/v1
    raw_path: str  # raw full path
    query_all: dict[str, list[str]]
    body: bytes
    content_type: str
    params: dict[str, str]
    user: User | None
    route: _Route
    repo: Repo | None = None
    access: int = 0

    def q(self, name: str, default: str = "") -> str:
        values = self.query_all.get(name)
        return values[0] if values else default

    def q_int(self, name: str, default: int = 0) -> int:
        try:
            return int(self.q(name))
        except ValueError:
            return default

    def q_bool(self, name: str) -> bool | None:
        value = self.q(name)
        if value in ("1", "t", "T", "TRUE", "true", "True"):
            return True
        if value in ("0", "f", "F", "FALSE", "false", "False"):
            return False
        return None

    @property
    def login(self) -> str | None:
        return self.user.login if self.user else None


# --------------------------------------------------------------------------- the forge

class FakeForge:
    """A fake Gitea (1.21-1.25, 1.25.4 by default) or Forgejo (11-15, 15.0.3) API v1 server backed by real bare
    git repositories.

    Construct, then :meth:`start` (or use it as a context manager).  By default
    it holds user ``alice`` (token ``alice-token``, owner of organisation
    ``acme``), user ``bob`` (token ``bob-token``, no write access anywhere) and
    the public repository ``acme/web`` with one commit on ``main``.
    """

    def __init__(
        self,
        flavour: str = "gitea",
        *,
        root_url: str = DEFAULT_ROOT_URL,
        base_dir: Path | str | None = None,
        spec_check: bool = True,
        mergeable_delay: int = 0,
        defaults: bool = True,
    ) -> None:
        # "gitea" and "forgejo" are the newest release of each; "gitea-1.21", "forgejo-11" an older one.
        flavour, line = forge_contract.release(flavour)
        self.flavour = flavour
        #: The release line played ("1.25", "11"): which endpoints answer follows the forge contract.
        self.line = line
        self.release = f"{flavour}-{line}"
        self.root_url = root_url if root_url.endswith("/") else root_url + "/"
        self.version = forge_contract.VERSION_STRINGS[self.release]
        #: Number of reads of a new (or changed) pull request that still report
        #: ``mergeable: false`` while the "background" conflict check runs.
        self.mergeable_delay = mergeable_delay
        #: Gitea's API.DefaultMaxBlobSize (a larger file's content is left out of GetContents) and
        #: API.DefaultGitTreesPerPage (the most entries one GetTree page holds).
        self.max_blob_size = 10 * 1024 * 1024
        self.git_trees_per_page = 1000
        #: [server] LFS_START_SERVER: API writes to a path .gitattributes marks filter=lfs store a pointer in git
        #: and the bytes here, by sha256.
        self.lfs = True
        #: [attachment] ALLOWED_TYPES for issue and comment files (None: every type; the servers' default is a
        #: list of extensions, ".txt,.png,.zip,..." in setting.Attachment).
        self.attachment_allowed_types: str | None = None
        self.lfs_objects: dict[str, bytes] = {}
        self._own_dir = base_dir is None
        self.base_dir = Path(base_dir) if base_dir is not None else Path(tempfile.mkdtemp(prefix="fakeforge-"))
        self.bare_root = self.base_dir / "git"
        self.bare_root.mkdir(parents=True, exist_ok=True)
        self._work = self.base_dir / "work"
        self._work.mkdir(exist_ok=True)

        self.requests: list[RecordedRequest] = []
        self.violations: list[str] = []
        self.allowed_violations: list[str] = []
        self.internal_errors: list[str] = []
        self.dispatches: list[dict[str, Any]] = []  # workflow dispatches received: workflow, ref, inputs, run
        self.faults: list[Fault] = []
        self._allow_patterns: list[str] = []
        self.spec_skip_reason: str | None = None
        self._checker: speccheck.SpecChecker | None = None
        if spec_check:
            self.spec_skip_reason = speccheck.spec_skip_reason(flavour)
            self._checker = speccheck.checker_for(flavour)
        else:
            self.spec_skip_reason = "spec checks disabled for this fake forge"

        self._lock = threading.RLock()
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._clock = _EPOCH
        self._counters: dict[str, int] = {}
        self.users: dict[str, User] = {}
        self.tokens: dict[str, Token] = {}
        self._repos: dict[int, Repo] = {}
        self._by_name: dict[tuple[str, str], int] = {}
        self._redirects: dict[tuple[str, str], str] = {}  # old "owner/name" -> new path prefix or URL
        self._comments: dict[int, Comment] = {}
        self._notifications: dict[int, Notification] = {}
        self.teams: dict[int, Team] = {}
        self.packages: dict[int, Package] = {}
        self.org_labels: dict[str, list[Label]] = {}  # organisation login (lower-cased) -> its labels
        self._index_lag = 0.0
        self._unindexed: dict[int, float] = {}  # issue id -> when q= search first finds it (time.monotonic)
        if defaults:
            self.add_user(DEFAULT_USER, token=DEFAULT_TOKEN, full_name="Alice Example")
            self.add_user("bob", token="bob-token", full_name="Bob Example")
            self.add_org(DEFAULT_OWNER, owners=[DEFAULT_USER])
            self.add_repo(DEFAULT_OWNER, DEFAULT_REPO)

    def since(self, gitea: str | None, forgejo: str | None) -> bool:
        """Whether the release played is at least *gitea* (a Gitea) or *forgejo* (a Forgejo); None: never."""
        first = gitea if self.flavour == "gitea" else forgejo
        lines = list(forge_contract.RELEASES[self.flavour])
        return first is not None and lines.index(first) <= lines.index(self.line)

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> "FakeForge":
        """Start serving on 127.0.0.1 with an ephemeral port."""
        if self._server is not None:
            return self
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.forge = self
        # A short poll interval keeps stop() (and so every fixture teardown) fast.
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02},
                                        name=f"fakeforge-{self.flavour}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; wakes injected sleeps; removes the temporary folder if the forge made it."""
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        if self._own_dir:
            shutil.rmtree(self.base_dir, ignore_errors=True)

    def __enter__(self) -> "FakeForge":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the fake forge is not started")
        return int(self._server.server_address[1])

    @property
    def host(self) -> str:
        """``127.0.0.1:PORT``: the dial address, which differs from ROOT_URL's host on purpose."""
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (no trailing slash)."""
        return f"http://{self.host}"

    @property
    def api(self) -> str:
        """``http://127.0.0.1:PORT/api/v1``."""
        return f"{self.url}/api/v1"

    def remote_url(self, owner: str = DEFAULT_OWNER, repo: str = DEFAULT_REPO) -> str:
        """The http clone URL at the dial address: ``http://127.0.0.1:PORT/owner/repo.git``."""
        return f"{self.url}/{owner}/{repo}.git"

    def rewrite_git_urls(self, gitconfig_path: Path | str | None = None) -> None:
        """Make git reach the bare repositories through the forge's http URLs.

        Adds ``url.<bare_root>/.insteadOf`` for the dial address and for ROOT_URL
        to *gitconfig_path* (default: ``$GIT_CONFIG_GLOBAL``), so pushes and
        fetches go over the local (file) transport while ``origin`` stays http.
        """
        target = gitconfig_path or os.environ.get("GIT_CONFIG_GLOBAL")
        if not target:
            raise RuntimeError("no git config to write: pass gitconfig_path or set GIT_CONFIG_GLOBAL")
        base = self.bare_root.as_posix().rstrip("/") + "/"
        key = f"url.{base}.insteadOf"
        present = _out(_git("config", "--file", str(target), "--get-all", key, check=False)).splitlines()
        for prefix in (self.url + "/", self.root_url):
            if prefix not in present:
                _git("config", "--file", str(target), "--add", key, prefix)

    # ------------------------------------------------------------------ violations and requests

    def allow_violations(self, pattern: str) -> None:
        """Record violations containing *pattern* in ``allowed_violations`` instead of failing the test."""
        self._allow_patterns.append(pattern)

    def take_violations(self) -> list[str]:
        """Return the recorded violations and forget them (for tests that send bad requests on purpose)."""
        with self._lock:
            taken, self.violations = self.violations, []
            return taken

    def clear_requests(self) -> None:
        with self._lock:
            self.requests.clear()

    def find_requests(self, method: str | None = None, path_contains: str | None = None) -> list[RecordedRequest]:
        """Recorded requests filtered by method and a substring of the path."""
        with self._lock:
            return [
                r for r in self.requests
                if (method is None or r.method == method.upper())
                and (path_contains is None or path_contains in r.path)
            ]

    def inject(
        self,
        kind: str | int,
        times: int = 1,
        *,
        path_contains: str | None = None,
        method: str | None = None,
        seconds: float | None = None,
        status: int | None = None,
        retry_after: int = 1,
        body: bytes | str | None = None,
        incomplete: bool = False,
    ) -> Fault:
        """Make the next *times* matching requests fail in the way *kind* says.

        Kinds: ``500``/``502``/``503`` (a server or proxy error; 500 has Gitea's
        JSON body, 502/503 a proxy's HTML page), ``429`` (``Retry-After:
        retry_after``), ``"slow"`` (wait *seconds*, default 2, then answer
        normally), ``"html"`` (an HTML page with *status*, default 200),
        ``"truncated"`` (the real answer cut in half; with *incomplete* the
        Content-Length still announces the full length and the connection
        closes early), ``"drop"`` (close the connection without answering and
        without performing the request), ``"drop-after"`` (perform, then close
        without answering), ``"create-then-timeout"`` (perform, then wait
        *seconds*, default 3, before answering: longer than a client timeout),
        ``"null-404"`` (a 404 whose body is JSON ``null``, as some Gitea
        handlers answer with ``ctx.JSON(404, nil)``), ``"trickle"`` (perform,
        send the headers, then the body one byte every *seconds*) and
        ``"trickle-head"`` (the same from the status line on).
        """
        name = str(kind)
        if name not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {kind!r}; expected one of {FAULT_KINDS}")
        default_seconds = 3.0 if name == "create-then-timeout" else 2.0
        fault = Fault(
            kind=name, times=times, path_contains=path_contains, method=method,
            seconds=default_seconds if seconds is None else seconds, status=status, retry_after=retry_after,
            body=body.encode("utf-8") if isinstance(body, str) else body, incomplete=incomplete,
        )
        with self._lock:
            self.faults.append(fault)
        return fault

    def lag_search_index(self, seconds: float) -> None:
        """Hide each issue made from now on from ``q=`` search for *seconds*, as a forge's asynchronous indexer does."""
        with self._lock:
            self._index_lag = seconds

    # ------------------------------------------------------------------ a small client for tests

    def call(
        self,
        method: str,
        path: str,
        *,
        token: str | None = DEFAULT_TOKEN,
        json_body: Any = _MISSING,
        body: bytes | None = None,
        query: Mapping[str, Any] | Sequence[tuple[str, Any]] | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float = 10.0,
    ) -> tuple[int, dict[str, str], bytes]:
        """Send one request with ``http.client`` (no redirects followed); returns (status, headers, body).

        *path* is relative to ``/api/v1`` unless it already starts with ``/api/``.
        *token* goes in ``Authorization: token ...`` (None: anonymous).
        """
        full = path if path.startswith("/api/") else "/api/v1" + (path if path.startswith("/") else "/" + path)
        if query:
            pairs = list(query.items()) if isinstance(query, Mapping) else list(query)
            full += "?" + urlencode([(k, str(v)) for k, v in pairs])
        send_headers = dict(headers or {})
        if token is not None:
            send_headers.setdefault("Authorization", f"token {token}")
        payload = body
        if json_body is not _MISSING:
            payload = json.dumps(json_body).encode("utf-8")
            send_headers.setdefault("Content-Type", "application/json")
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            connection.request(method.upper(), full, body=payload, headers=send_headers)
            response = connection.getresponse()
            data = response.read()
            return response.status, {k: v for k, v in response.getheaders()}, data
        finally:
            connection.close()

    # ------------------------------------------------------------------ users and repositories

    def _next(self, kind: str) -> int:
        self._counters[kind] = self._counters.get(kind, 0) + 1
        return self._counters[kind]

    def _tick(self) -> int:
        """Advance the forge's clock by one second: every change gets a distinct ``updated_at``."""
        self._clock += 1
        return self._clock

    def add_user(
        self,
        login: str,
        *,
        token: str | None = None,
        scopes: Sequence[str] = ("all",),
        admin: bool = False,
        full_name: str = "",
        email: str | None = None,
        password: str | None = None,
    ) -> User:
        """Create a user (optionally with a token)."""
        with self._lock:
            user = User(self._next("user"), login, full_name=full_name, email=email or f"{login}@example.invalid",
                        is_admin=admin, password=password)
            self.users[login.lower()] = user
            if token:
                self.add_token(login, token, scopes=scopes)
            return user

    def add_token(self, login: str, token: str, *, scopes: Sequence[str] = ("all",)) -> Token:
        """Give *login* another access token with the given scopes (e.g. ``["read:repository"]``)."""
        with self._lock:
            record = Token(token, self.users[login.lower()].login, tuple(scopes))
            self.tokens[token] = record
            return record

    def add_org(self, name: str, *, owners: Sequence[str] = (), members: Sequence[str] = ()) -> User:
        """Create an organisation; owners get admin access to its repositories."""
        with self._lock:
            org = User(self._next("user"), name, full_name=name, email="", is_org=True)
            org.org_members = {**{m.lower(): "member" for m in members}, **{o.lower(): "owner" for o in owners}}
            self.users[name.lower()] = org
            return org

    def add_team(self, org: str, name: str, *, description: str = "", permission: str = "read",
                 members: Sequence[str] = ()) -> Team:
        """Create a team in an organisation."""
        with self._lock:
            team = Team(self._next("team"), self.users[org.lower()].login, name, description, permission,
                        [m.lower() for m in members])
            self.teams[team.id] = team
            return team

    def add_package(self, owner: str, type: str, name: str, version: str, *, creator: str = DEFAULT_USER,
                    repo: str | None = None) -> Package:
        """Publish one version of a package under *owner* (a user or organisation), optionally linked to *repo*."""
        with self._lock:
            linked = self.repo(owner, repo).id if repo else None
            package = Package(self._next("package"), self.users[owner.lower()].login, type, name, version,
                              creator, self._tick(), linked)
            self.packages[package.id] = package
            return package

    def add_org_label(self, org: str, name: str, color: str = "#00aabb", description: str = "") -> Label:
        """Give an organisation a label of its own (its repositories' issues may use it)."""
        with self._lock:
            label = Label(self._next("label"), name, color, description)
            self.org_labels.setdefault(org.lower(), []).append(label)
            return label

    def protect_branch(self, owner: str, name: str, branch: str, *,
                       status_checks: Sequence[str] | None = None) -> None:
        """Add a branch protection rule for exactly *branch*; *status_checks* (glob patterns; [] for every
        context) turns on its required status checks."""
        with self._lock:
            repo = self.repo(owner, name)
            repo.protected.add(branch)
            if status_checks is not None:
                repo.required_checks[branch] = list(status_checks)

    def add_repo(
        self,
        owner: str,
        name: str,
        *,
        private: bool = False,
        default_branch: str = "main",
        init: bool = True,
        description: str = "",
        collaborators: Mapping[str, str] | None = None,
        **settings: Any,
    ) -> Repo:
        """Create a repository with a bare git repo; *init* makes one commit (README.md) on the default branch.

        Extra keyword arguments override repository settings such as
        ``allow_manual_merge=True`` or ``default_delete_branch_after_merge=True``.
        """
        with self._lock:
            if owner.lower() not in self.users:
                raise KeyError(f"no user or organisation {owner!r}")
            if (owner.lower(), name.lower()) in self._by_name:
                raise ValueError(f"repository {owner}/{name} exists")
            unknown = set(settings) - set(_REPO_SETTING_DEFAULTS)
            if unknown:
                raise TypeError(f"unknown repository settings: {sorted(unknown)}")
            owner_login = self.users[owner.lower()].login
            bare = self.bare_root / owner_login / f"{name}.git"
            bare.parent.mkdir(parents=True, exist_ok=True)
            _git("init", "--bare", "-q", f"--initial-branch={default_branch}", str(bare))
            now = self._tick()
            repo = Repo(self._next("repo"), owner_login, name, bare, private=private, description=description,
                        default_branch=default_branch, created=now, updated=now,
                        collaborators={k.lower(): v for k, v in (collaborators or {}).items()},
                        settings={**_REPO_SETTING_DEFAULTS, **settings})
            self._repos[repo.id] = repo
            self._by_name[(owner_login.lower(), name.lower())] = repo.id
            if init:
                self.commit(owner_login, name, default_branch, {"README.md": f"# {name}\n"}, "Initial commit")
            return repo

    def repo(self, owner: str = DEFAULT_OWNER, name: str = DEFAULT_REPO) -> Repo:
        """The repository record (settings, issues, labels ...) by name."""
        with self._lock:
            return self._repos[self._by_name[(owner.lower(), name.lower())]]

    def grant(self, owner: str, name: str, login: str, level: str = "write") -> None:
        """Make *login* a collaborator with *level* ("read", "write" or "admin")."""
        if level not in ("read", "write", "admin"):
            raise ValueError(level)
        with self._lock:
            self.repo(owner, name).collaborators[login.lower()] = level

    def bare_path(self, owner: str = DEFAULT_OWNER, name: str = DEFAULT_REPO) -> Path:
        """The bare repository behind *owner/name*."""
        return self.repo(owner, name).bare

    def git(self, owner: str, name: str, *args: str) -> str:
        """Run git in the bare repository and return its stripped stdout."""
        return _out(_git(*args, git_dir=self.bare_path(owner, name)))

    def branch_sha(self, owner: str, name: str, branch: str) -> str | None:
        """The commit a branch points at in the bare repository, or None."""
        return self._ref_sha(self.repo(owner, name), f"refs/heads/{branch}")

    def commit(
        self,
        owner: str,
        name: str,
        branch: str,
        files: Mapping[str, str | bytes | None],
        message: str = "Update files",
        *,
        start: str | None = None,
        author: str = "Test Person <test@example.invalid>",
    ) -> str:
        """Commit *files* (path -> content, None deletes) onto *branch* directly in the bare repo.

        A missing branch is created from *start* (default: the default
        branch, or no parent in an empty repository).  Returns the new sha.
        """
        with self._lock:
            repo = self.repo(owner, name)
            parent = self._ref_sha(repo, f"refs/heads/{branch}")
            base = parent or (self._resolve_commit(repo, start) if start else
                              self._ref_sha(repo, f"refs/heads/{repo.default_branch}"))
            index = self._work / f"index-{uuid.uuid4().hex}"
            env = {"GIT_INDEX_FILE": str(index)}
            who, _, mail = author.partition(" <")
            env.update({"GIT_AUTHOR_NAME": who, "GIT_AUTHOR_EMAIL": mail.rstrip(">"),
                        "GIT_COMMITTER_NAME": who, "GIT_COMMITTER_EMAIL": mail.rstrip(">")})
            try:
                if base:
                    _git("read-tree", base, git_dir=repo.bare, env=env)
                else:
                    _git("read-tree", "--empty", git_dir=repo.bare, env=env)
                for path, content in files.items():
                    if content is None:  # mode 0 removes the entry (--force-remove wants a work tree)
                        _git("update-index", "--index-info", git_dir=repo.bare, env=env,
                             input=f"0 {_ZERO_SHA}\t{path}\n".encode())
                        continue
                    data = content.encode("utf-8") if isinstance(content, str) else content
                    blob = _out(_git("hash-object", "-w", "--stdin", git_dir=repo.bare, input=data))
                    _git("update-index", "--add", "--cacheinfo", f"100644,{blob},{path}", git_dir=repo.bare, env=env)
                tree = _out(_git("write-tree", git_dir=repo.bare, env=env))
                parents = ["-p", base] if base else []
                sha = _out(_git("commit-tree", tree, *parents, "-m", message, git_dir=repo.bare, env=env))
                _git("update-ref", f"refs/heads/{branch}", sha, parent or _ZERO_SHA, git_dir=repo.bare)
            finally:
                index.unlink(missing_ok=True)
            repo.updated = self._tick()
            return sha

    def rename_repo(self, owner: str, name: str, *, new_owner: str | None = None, new_name: str | None = None) -> Repo:
        """Rename (or transfer) a repository; the old name answers 301 to the new one, as Gitea does."""
        with self._lock:
            repo = self.repo(owner, name)
            self._rename(repo, new_owner or repo.owner, new_name or repo.name)
            return repo

    def redirect_repo(self, owner: str, name: str, location_prefix: str) -> None:
        """Answer requests for *owner/name* with 301 to ``location_prefix`` + the rest of the API path.

        *location_prefix* is e.g. ``http://localhost:PORT/api/v1/repos/other/web`` (another host:
        for testing that a client drops its token across hosts).
        """
        with self._lock:
            self._redirects[(owner.lower(), name.lower())] = location_prefix.rstrip("/")

    def _rename(self, repo: Repo, new_owner: str, new_name: str) -> None:
        old_key = (repo.owner.lower(), repo.name.lower())
        owner_login = self.users[new_owner.lower()].login
        new_bare = self.bare_root / owner_login / f"{new_name}.git"
        new_bare.parent.mkdir(parents=True, exist_ok=True)
        if new_bare != repo.bare:
            repo.bare.rename(new_bare)
            repo.bare = new_bare
        del self._by_name[old_key]
        repo.owner, repo.name = owner_login, new_name
        self._by_name[(owner_login.lower(), new_name.lower())] = repo.id
        self._redirects[old_key] = f"/api/v1/repos/{quote(owner_login, safe='')}/{quote(new_name, safe='')}"
        self._redirects.pop((owner_login.lower(), new_name.lower()), None)
        repo.updated = self._tick()

    # ------------------------------------------------------------------ direct state helpers

    def create_label(self, owner: str, name: str, label: str, color: str = "#ee0701", *,
                     description: str = "", exclusive: bool = False) -> dict[str, Any]:
        """Create a repository label; returns its API JSON."""
        with self._lock:
            repo = self.repo(owner, name)
            record = Label(self._next("label"), label, _normalise_color(color) or "#ee0701", description, exclusive)
            repo.labels[record.id] = record
            return self._label_json(repo, record)

    def create_milestone(self, owner: str, name: str, title: str, *, state: str = "open",
                         description: str = "") -> dict[str, Any]:
        """Create a milestone; returns its API JSON."""
        with self._lock:
            repo = self.repo(owner, name)
            now = self._tick()
            record = Milestone(self._next("milestone"), title, description, state, created=now, updated=now,
                               closed=now if state == "closed" else None)
            repo.milestones[record.id] = record
            return self._milestone_json(repo, record)

    def create_issue(self, owner: str, name: str, title: str, body: str = "", *, user: str = DEFAULT_USER,
                     labels: Sequence[str | int] = (), milestone: int | None = None, state: str = "open",
                     assignees: Sequence[str] = ()) -> dict[str, Any]:
        """Create an issue (labels by name or id); returns its API JSON."""
        with self._lock:
            repo = self.repo(owner, name)
            issue = self._new_issue(repo, title, body, self.users[user.lower()].login)
            issue.labels = self._label_ids(repo, list(labels))
            issue.milestone = milestone
            issue.assignees = [self.users[a.lower()].login for a in assignees]
            if state == "closed":
                issue.state, issue.closed = "closed", issue.created
            return self._issue_json(repo, issue, None)

    def create_comment(self, owner: str, name: str, number: int, body: str, *,
                       user: str = DEFAULT_USER) -> dict[str, Any]:
        """Comment on an issue or pull request; returns the comment's API JSON."""
        with self._lock:
            repo = self.repo(owner, name)
            comment = self._new_comment(repo, repo.issues[number], self.users[user.lower()].login, body)
            return self._comment_json(repo, comment)

    def create_pull(self, owner: str, name: str, head: str, base: str | None = None, title: str = "A change", *,
                    body: str = "", user: str = DEFAULT_USER) -> dict[str, Any]:
        """Open a same-repository pull request from branch *head*; returns its API JSON."""
        with self._lock:
            repo = self.repo(owner, name)
            base = base or repo.default_branch
            issue = self._new_pull(repo, repo, head, base, title, body, self.users[user.lower()].login)
            return self._pull_json(repo, issue, None)

    def set_pull_status(self, owner: str, name: str, number: int, status: str) -> None:
        """Force the stored conflict-check result ("checking", "mergeable" or "conflict").

        The status stays until the head or base moves, which lets a test
        reproduce a merge that the last check allowed but that now conflicts
        (a real server answers that with a 409 carrying a Go struct).
        """
        if status not in ("checking", "mergeable", "conflict"):
            raise ValueError(status)
        with self._lock:
            repo = self.repo(owner, name)
            pull = repo.issues[number].pull
            assert pull is not None, "not a pull request"
            pull.status = status
            pull.checks_remaining = 0
            pull.checked_shas = self._pull_shas(repo, repo.issues[number])

    def add_notification(self, login: str, owner: str, name: str, number: int | None = None, *,
                         subject_type: str | None = None, title: str | None = None, unread: bool = True,
                         pinned: bool = False) -> dict[str, Any]:
        """Add a notification thread for *login* about issue/PR *number* of *owner/name*."""
        with self._lock:
            repo = self.repo(owner, name)
            issue = repo.issues.get(number) if number is not None else None
            kind = subject_type or ("Pull" if issue and issue.pull else "Issue" if issue else "Repository")
            thread = Notification(self._next("notification"), self.users[login.lower()].login, repo.id, number, kind,
                                  title or (issue.title if issue else repo.full_name), unread, pinned, self._tick())
            self._notifications[thread.id] = thread
            return self._notification_json(thread, None)

    def add_action_run(self, owner: str, name: str, *, workflow: str = "ci.yml", title: str = "CI",
                       event: str = "push", status: str = "completed", conclusion: str = "success",
                       branch: str | None = None, head_sha: str | None = None, actor: str = DEFAULT_USER,
                       jobs: Sequence[tuple[str, str, str]] = (("build", "success", "build ok\n"),),
                       post_statuses: bool = False) -> ActionRun:
        """Record an Actions run with jobs given as (name, conclusion, log text); *post_statuses* adds the commit
        status each job reports on the head, as the forge's Actions do."""
        with self._lock:
            repo = self.repo(owner, name)
            branch = branch or repo.default_branch
            sha = head_sha or self._ref_sha(repo, f"refs/heads/{branch}") or _ZERO_SHA
            run = ActionRun(self._next("run"), len(repo.runs) + 1, workflow, title, event, status, conclusion,
                            branch, sha, self.users[actor.lower()].login, self._tick())
            for job_name, job_conclusion, log in jobs:
                run.jobs.append(ActionJob(self._next("job"), job_name, status, job_conclusion, log))
            repo.runs[run.id] = run
            if post_statuses:  # services/actions/commit_status.go: one status per job, "<workflow> / <job> (<event>)"
                for index, job in enumerate(run.jobs):
                    state = ("pending" if job.status != "completed" else job.conclusion
                             if job.conclusion in ("success", "failure", "skipped") else "error")
                    self.add_commit_status(owner, name, run.head_sha, state, creator=actor,
                                           context=f"{workflow.rsplit('.', 1)[0]} / {job.name} ({event})",
                                           description=f"Job {job.status}", target_url=self._html_url(
                                               repo.owner, repo.name, "actions", "runs", str(run.number),
                                               "jobs", str(index)))
            return run

    def add_artifact(self, owner: str, name: str, run_id: int, artifact: str, data: bytes) -> int:
        """Attach an artifact (its zip bytes) to an Actions run; returns its id."""
        with self._lock:
            number = self._next("artifact")
            self.repo(owner, name).runs[run_id].artifacts.append((number, artifact, data))
            return number

    def add_commit_status(self, owner: str, name: str, sha: str, state: str = "success", *,
                          context: str = "ci/build", description: str = "", target_url: str = "",
                          creator: str = DEFAULT_USER) -> None:
        """Add a commit status (as a CI system would: POST /statuses/{sha}); a pull request scheduled to merge
        when its checks succeed is merged if this status makes its head pass (services/automerge)."""
        with self._lock:
            repo = self.repo(owner, name)
            kept = repo.statuses.setdefault(sha, [])
            kept.append({"id": self._next("status"), "index": len(kept) + 1, "status": state, "context": context,
                         "description": description, "target_url": target_url, "created": self._tick(),
                         "creator": self.users[creator.lower()].login})
            self._auto_merge_scan(repo, sha)

    def comment_ids(self) -> list[int]:
        """The id of every comment on every issue and pull request, in order."""
        with self._lock:
            return sorted(self._comments)

    def comment_body(self, comment_id: int) -> str:
        """The current text of comment *comment_id*."""
        with self._lock:
            return self._comments[comment_id].body

    def issue(self, owner: str, name: str, number: int) -> dict[str, Any]:
        """An issue's current API JSON (as its poster would see it)."""
        with self._lock:
            repo = self.repo(owner, name)
            return self._issue_json(repo, repo.issues[number], None)

    def pull(self, owner: str, name: str, number: int) -> dict[str, Any]:
        """A pull request's current API JSON, without counting as a poll of the conflict check."""
        with self._lock:
            repo = self.repo(owner, name)
            return self._pull_json(repo, repo.issues[number], None, poll=False)

    def labels(self, owner: str = DEFAULT_OWNER, name: str = DEFAULT_REPO) -> list[dict[str, Any]]:
        with self._lock:
            repo = self.repo(owner, name)
            return [self._label_json(repo, label) for label in repo.labels.values()]

    # ------------------------------------------------------------------ internals: git

    def _ref_sha(self, repo: Repo, ref: str) -> str | None:
        result = _git("rev-parse", "--verify", "-q", f"{ref}^{{commit}}", git_dir=repo.bare, check=False)
        return _out(result) or None if result.returncode == 0 else None

    def _resolve_commit(self, repo: Repo, name: str) -> str | None:
        for ref in (f"refs/heads/{name}", f"refs/tags/{name}", name):
            sha = self._ref_sha(repo, ref)
            if sha:
                return sha
        return None

    def _branches(self, repo: Repo) -> list[dict[str, str]]:
        fmt = "%00".join([
            "%(refname:strip=2)", "%(objectname)", "%(authorname)", "%(authoremail)", "%(committername)",
            "%(committeremail)", "%(committerdate:iso-strict)", "%(contents)",
        ]) + "%01"
        listing = _git("for-each-ref", f"--format={fmt}", "refs/heads", git_dir=repo.bare)
        text = listing.stdout.decode("utf-8", "replace")
        keys = ("name", "sha", "author", "author_email", "committer", "committer_email", "date", "message")
        return [dict(zip(keys, record.lstrip("\n").split("\0"))) for record in text.split("\1") if record.strip()]

    def _tags(self, repo: Repo) -> list[dict[str, str]]:
        fmt = "%00".join([
            "%(refname:strip=2)", "%(objectname)", "%(*objectname)", "%(contents)", "%(creatordate:iso-strict)",
        ]) + "%01"
        text = _git("for-each-ref", "--sort=-creatordate", f"--format={fmt}", "refs/tags",
                    git_dir=repo.bare).stdout.decode("utf-8", "replace")
        keys = ("name", "id", "peeled", "message", "date")
        return [dict(zip(keys, record.lstrip("\n").split("\0"))) for record in text.split("\1") if record.strip()]

    def _commit_info(self, repo: Repo, sha: str) -> dict[str, str]:
        fmt = "%H%x00%an%x00%ae%x00%cn%x00%ce%x00%cI%x00%B"
        parts = _out(_git("log", "-1", f"--format={fmt}", sha, git_dir=repo.bare)).split("\0")
        keys = ("sha", "author", "author_email", "committer", "committer_email", "date", "message")
        return dict(zip(keys, parts))

    def _identity_env(self, login: str) -> dict[str, str]:
        user = self.users[login.lower()]
        name = user.full_name or user.login
        return {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": user.email, "GIT_COMMITTER_NAME": name,
                "GIT_COMMITTER_EMAIL": user.email}

    # ------------------------------------------------------------------ internals: access

    def _access(self, repo: Repo, user: User | None) -> int:
        """0 none, 1 read, 2 write, 3 admin, 4 owner (the owning user, an owner of the owning organisation, a site
        admin: ctx.Repo.IsOwner() or IsUserSiteAdmin): what *user* may do in *repo*."""
        if user is not None:
            if user.is_admin or user.login.lower() == repo.owner.lower():
                return 4
            owner = self.users.get(repo.owner.lower())
            role = owner.org_members.get(user.login.lower()) if owner else None
            if role == "owner":
                return 4
            level = _LEVELS[repo.collaborators.get(user.login.lower(), "none")]
            if role == "member":
                level = max(level, 1)
            if level:
                return level
        return 0 if repo.private else 1

    def _visible_repos(self, user: User | None) -> list[Repo]:
        return [repo for repo in self._repos.values() if self._access(repo, user) > 0]

    # ------------------------------------------------------------------ internals: records

    def _new_issue(self, repo: Repo, title: str, body: str, login: str) -> Issue:
        now = self._tick()
        issue = Issue(self._next("issue"), repo.next_number, title, body, login, now, now)
        repo.issues[issue.number] = issue
        repo.next_number += 1
        if self._index_lag:
            self._unindexed[issue.id] = time.monotonic() + self._index_lag
        repo.updated = now
        return issue

    def _new_pull(self, repo: Repo, head_repo: Repo, head: str, base: str, title: str, body: str, login: str) -> Issue:
        issue = self._new_issue(repo, title, body, login)
        pull = Pull(self._next("pull"), head_repo.id, head, base)
        issue.pull = pull
        self._sync_pull_ref(repo, issue)
        self._start_check(repo, issue)
        return issue

    def _new_comment(self, repo: Repo, issue: Issue, login: str, body: str) -> Comment:
        now = self._tick()
        comment = Comment(self._next("comment"), repo.id, issue.number, login, body, now, now)
        self._comments[comment.id] = comment
        issue.comment_ids.append(comment.id)
        issue.updated = now
        return comment

    def _label_ids(self, repo: Repo, labels: Sequence[str | int]) -> list[int]:
        ids = []
        for item in labels:
            if isinstance(item, int):
                if item in repo.labels:
                    ids.append(item)
                continue
            ids += [label.id for label in repo.labels.values() if label.name == item]
        return sorted(set(ids))

    def _event(self, issue: Issue, kind: str, login: str, **extra: Any) -> None:
        issue.events.append({"id": self._next("comment"), "type": kind, "user": login, "time": self._clock, **extra})

    def _notify(self, repo: Repo, issue: Issue, actor: str | None) -> None:
        """Create or refresh notification threads for everyone with write access, except the actor."""
        owner = self.users.get(repo.owner.lower())
        watchers = {login for login, level in repo.collaborators.items() if _LEVELS[level] >= 2}
        if owner is not None:
            watchers |= {login for login, role in owner.org_members.items() if role == "owner"}
            if not owner.is_org:
                watchers.add(owner.login.lower())
        for login in sorted(watchers - {(actor or "").lower()}):
            if login not in self.users:
                continue
            existing = next((n for n in self._notifications.values() if n.login.lower() == login
                             and n.repo_id == repo.id and n.number == issue.number), None)
            if existing:
                existing.unread, existing.updated, existing.title = True, self._clock, issue.title
                continue
            thread = Notification(self._next("notification"), self.users[login].login, repo.id, issue.number,
                                  "Pull" if issue.pull else "Issue", issue.title, True, False, self._clock)
            self._notifications[thread.id] = thread

    # ------------------------------------------------------------------ internals: pull request state

    def _head_repo(self, issue: Issue) -> Repo:
        assert issue.pull is not None
        return self._repos[issue.pull.head_repo_id]

    def _sync_pull_ref(self, repo: Repo, issue: Issue) -> None:
        """Keep ``refs/pull/N/head`` in the base repo at the head branch, as Gitea does on push."""
        pull = issue.pull
        assert pull is not None
        if pull.merged or issue.state == "closed":
            return
        head_repo = self._head_repo(issue)
        sha = self._ref_sha(head_repo, f"refs/heads/{pull.head_branch}")
        if sha is None:
            return
        ref = f"refs/pull/{issue.number}/head"
        if head_repo.id != repo.id and self._ref_sha(repo, sha) is None:
            _git("fetch", "-q", str(head_repo.bare), f"+refs/heads/{pull.head_branch}:{ref}", git_dir=repo.bare)
        else:
            _git("update-ref", ref, sha, git_dir=repo.bare)

    def _pull_shas(self, repo: Repo, issue: Issue) -> tuple[str, str]:
        pull = issue.pull
        assert pull is not None
        head = self._ref_sha(repo, f"refs/pull/{issue.number}/head") or _ZERO_SHA
        base = self._ref_sha(repo, f"refs/heads/{pull.base_branch}") or _ZERO_SHA
        return base, head

    def _start_check(self, repo: Repo, issue: Issue) -> None:
        pull = issue.pull
        assert pull is not None
        pull.checked_shas = self._pull_shas(repo, issue)
        base, head = pull.checked_shas
        pull.merge_base = _out(_git("merge-base", base, head, git_dir=repo.bare, check=False))
        pull.status = "checking"
        pull.checks_remaining = self.mergeable_delay
        if pull.checks_remaining <= 0:
            self._finish_check(repo, issue)

    def _finish_check(self, repo: Repo, issue: Issue) -> None:
        pull = issue.pull
        assert pull is not None and pull.checked_shas is not None
        base, head = pull.checked_shas
        result = _git("merge-tree", "--write-tree", "--no-messages", base, head, git_dir=repo.bare, check=False)
        pull.status = "mergeable" if result.returncode == 0 else "conflict"

    def _refresh_pull(self, repo: Repo, issue: Issue, *, poll: bool) -> None:
        """Re-sync the head ref; restart the conflict check when head or base moved; count a poll."""
        pull = issue.pull
        assert pull is not None
        if pull.merged or issue.state == "closed":
            return
        self._sync_pull_ref(repo, issue)
        if self._pull_shas(repo, issue) != pull.checked_shas:
            self._start_check(repo, issue)
        if poll and pull.status == "checking":
            # N polls report "checking" (mergeable false); the next one sees the result.
            if pull.checks_remaining <= 0:
                self._finish_check(repo, issue)
            else:
                pull.checks_remaining -= 1

    # ------------------------------------------------------------------ internals: JSON shapes

    def _api_url(self, *parts: str) -> str:
        return self.root_url + "api/v1/" + "/".join(quote(str(p), safe="") for p in parts)

    def _html_url(self, *parts: str) -> str:
        return self.root_url + "/".join(quote(str(p), safe="") for p in parts)

    def _user_json(self, user: User | None) -> dict[str, Any] | None:
        if user is None:
            return None
        data: dict[str, Any] = {
            "id": user.id, "login": user.login, "login_name": "", "source_id": 0,
            "full_name": user.full_name, "email": user.email,
            "avatar_url": self.root_url + "avatars/" + hashlib.md5(user.login.encode()).hexdigest(),
            "html_url": self._html_url(user.login), "language": "", "is_admin": user.is_admin,
            "last_login": _ts(user.created), "created": _ts(user.created), "restricted": False, "active": True,
            "prohibit_login": False, "location": "", "website": "", "description": "", "visibility": "public",
            "followers_count": 0, "following_count": 0, "starred_repos_count": 0,
            "username": user.login,  # Gitea's MarshalJSON adds this compatibility alias
        }
        if self.flavour == "forgejo":
            data["pronouns"] = ""
        return data

    def _login_json(self, login: str | None) -> dict[str, Any] | None:
        return self._user_json(self.users.get(login.lower())) if login else None

    def _repo_json(self, repo: Repo, viewer: User | None, *, with_parent: bool = True) -> dict[str, Any]:
        access = self._access(repo, viewer)
        s = repo.settings
        empty = not self._branches_exist(repo)
        open_issues = sum(1 for i in repo.issues.values() if i.pull is None and i.state == "open")
        open_pulls = sum(1 for i in repo.issues.values() if i.pull is not None and i.state == "open")
        parent = self._repos.get(repo.parent_id) if repo.parent_id else None
        host = urlsplit(self.root_url).hostname or "localhost"
        data: dict[str, Any] = {
            "id": repo.id, "owner": self._login_json(repo.owner), "name": repo.name, "full_name": repo.full_name,
            "description": repo.description, "empty": empty, "private": repo.private, "fork": parent is not None,
            "template": False,
            "parent": self._repo_json(parent, viewer, with_parent=False) if parent and with_parent else None,
            "mirror": False, "size": 0, "language": "", "languages_url": self._api_url("repos", repo.owner, repo.name,
                                                                                       "languages"),
            "html_url": self._html_url(repo.owner, repo.name), "url": self._api_url("repos", repo.owner, repo.name),
            "link": "", "ssh_url": f"git@{host}:{repo.owner}/{repo.name}.git",
            "clone_url": self._html_url(repo.owner, repo.name + ".git"), "original_url": "",
            "website": repo.website, "stars_count": 0,
            "forks_count": sum(1 for r in self._repos.values() if r.parent_id == repo.id), "watchers_count": 0,
            "open_issues_count": open_issues, "open_pr_counter": open_pulls,
            "release_counter": sum(1 for r in repo.releases.values() if not r.draft),
            "default_branch": repo.default_branch, "archived": repo.archived,
            "created_at": _ts(repo.created), "updated_at": _ts(repo.updated),
            "archived_at": _ts(repo.archived_at or 0),
            "permissions": {"admin": access >= 3, "push": access >= 2, "pull": access >= 1},
            "has_issues": s["has_issues"],
            "internal_tracker": {"enable_time_tracker": True, "allow_only_contributors_to_track_time": True,
                                 "enable_issue_dependencies": True},
            "has_wiki": s["has_wiki"], "has_pull_requests": s["has_pull_requests"], "has_projects": s["has_projects"],
            "has_releases": s["has_releases"], "has_packages": s["has_packages"], "has_actions": s["has_actions"],
            "ignore_whitespace_conflicts": s["ignore_whitespace_conflicts"],
            "allow_merge_commits": s["allow_merge_commits"], "allow_rebase": s["allow_rebase"],
            "allow_rebase_explicit": s["allow_rebase_explicit"], "allow_squash_merge": s["allow_squash_merge"],
            "allow_fast_forward_only_merge": s["allow_fast_forward_only_merge"],
            "allow_rebase_update": s["allow_rebase_update"],
            "default_delete_branch_after_merge": s["default_delete_branch_after_merge"],
            "default_merge_style": s["default_merge_style"],
            "default_allow_maintainer_edit": s["default_allow_maintainer_edit"],
            "avatar_url": "", "internal": False, "mirror_interval": "", "object_format_name": "sha1",
            "mirror_updated": "0001-01-01T00:00:00Z", "repo_transfer": None, "topics": [],
        }
        if self.flavour == "gitea":
            data.update({"has_code": True, "projects_mode": "all", "licenses": [],
                         "allow_manual_merge": s["allow_manual_merge"],
                         "autodetect_manual_merge": s["autodetect_manual_merge"]})
        else:
            data.update({"default_update_style": "merge", "globally_editable_wiki": False,
                         "has_wiki_contents": bool(repo.wiki), "wiki_branch": repo.default_branch})
        return data

    def _branches_exist(self, repo: Repo) -> bool:
        # Read the ref store directly: this runs for every repository rendered.
        if any(path.is_file() for path in (repo.bare / "refs" / "heads").rglob("*")):
            return True
        packed = repo.bare / "packed-refs"
        return packed.exists() and " refs/heads/" in packed.read_text(encoding="utf-8", errors="replace")

    def _label_json(self, repo: Repo, label: Label) -> dict[str, Any]:
        # Stored as "#rrggbb"; the API answers without the "#" (convert.ToLabel trims it).
        return {"id": label.id, "name": label.name, "exclusive": label.exclusive, "is_archived": label.is_archived,
                "color": label.color.lstrip("#"), "description": label.description,
                "url": self._api_url("repos", repo.owner, repo.name, "labels", str(label.id))}

    def _milestone_json(self, repo: Repo, milestone: Milestone) -> dict[str, Any]:
        issues = [i for i in repo.issues.values() if i.milestone == milestone.id]
        return {"id": milestone.id, "title": milestone.title, "description": milestone.description,
                "state": milestone.state, "open_issues": sum(1 for i in issues if i.state == "open"),
                "closed_issues": sum(1 for i in issues if i.state == "closed"),
                "created_at": _ts(milestone.created), "updated_at": _ts(milestone.updated),
                "closed_at": _ts(milestone.closed), "due_on": _ts(milestone.due_on)}

    def _issue_html(self, repo: Repo, issue: Issue) -> str:
        return self._html_url(repo.owner, repo.name, "pulls" if issue.pull else "issues", str(issue.number))

    def _issue_json(self, repo: Repo, issue: Issue, viewer: User | None) -> dict[str, Any]:
        milestone = repo.milestones.get(issue.milestone) if issue.milestone else None
        assignees = [self._login_json(a) for a in issue.assignees]
        pull = issue.pull
        data: dict[str, Any] = {
            "id": issue.id, "url": self._api_url("repos", repo.owner, repo.name, "issues", str(issue.number)),
            "html_url": self._issue_html(repo, issue), "number": issue.number,
            "user": self._login_json(issue.user), "original_author": "", "original_author_id": 0,
            "title": issue.title, "body": issue.body, "ref": issue.ref,
            "assets": [self._asset_json(a) for a in issue.attachments],
            "labels": [self._label_json(repo, repo.labels[i]) for i in issue.labels if i in repo.labels],
            "milestone": self._milestone_json(repo, milestone) if milestone else None,
            "assignee": assignees[0] if assignees else None, "assignees": assignees or None,
            "state": issue.state, "is_locked": issue.locked, "comments": len(issue.comment_ids),
            "created_at": _ts(issue.created), "updated_at": _ts(issue.updated), "closed_at": _ts(issue.closed),
            "due_date": _ts(issue.due),
            "pull_request": None if pull is None else {
                "merged": pull.merged, "merged_at": _ts(pull.merged_at), "draft": _is_wip(issue.title),
                "html_url": self._issue_html(repo, issue)},
            "repository": {"id": repo.id, "name": repo.name, "owner": repo.owner, "full_name": repo.full_name},
            "pin_order": 0,
        }
        if self.flavour == "gitea":
            data["time_estimate"] = 0
        return data

    def _branch_info(self, repo: Repo, branch: str, sha: str, viewer: User | None, base: Repo) -> dict[str, Any]:
        # A fork's head is labelled "owner:branch"; a same-repository branch is just its name.
        label = branch if repo.id == base.id else f"{repo.owner}:{branch}"
        return {"label": label, "ref": branch, "sha": sha, "repo_id": repo.id,
                "repo": self._repo_json(repo, viewer)}

    def _pull_json(self, repo: Repo, issue: Issue, viewer: User | None, *, poll: bool = True) -> dict[str, Any]:
        pull = issue.pull
        assert pull is not None
        self._refresh_pull(repo, issue, poll=poll)
        base_sha, head_sha = self._pull_shas(repo, issue)
        head_repo = self._head_repo(issue)
        additions = deletions = changed = 0
        if pull.merge_base and head_sha != _ZERO_SHA:
            numstat = _out(_git("diff", "--numstat", pull.merge_base, head_sha, git_dir=repo.bare, check=False))
            for line in filter(None, numstat.splitlines()):
                added, deleted, _ = line.split("\t", 2)
                additions += int(added) if added.isdigit() else 0
                deletions += int(deleted) if deleted.isdigit() else 0
                changed += 1
        issue_json = self._issue_json(repo, issue, viewer)
        html = issue_json["html_url"]
        data: dict[str, Any] = {
            "id": pull.id, "url": html, "number": issue.number, "user": issue_json["user"],
            "title": issue.title, "body": issue.body, "labels": issue_json["labels"],
            "milestone": issue_json["milestone"], "assignee": issue_json["assignee"],
            "assignees": issue_json["assignees"],
            "requested_reviewers": [self._login_json(login) for login in pull.requested],
            "requested_reviewers_teams": [],
            "state": issue.state, "draft": _is_wip(issue.title), "is_locked": issue.locked,
            "comments": len(issue.comment_ids), "review_comments": 0, "additions": additions,
            "deletions": deletions, "changed_files": changed, "html_url": html, "diff_url": html + ".diff",
            "patch_url": html + ".patch",
            "mergeable": pull.status == "mergeable" and not pull.merged and issue.state == "open",
            "merged": pull.merged, "merged_at": _ts(pull.merged_at), "merge_commit_sha": pull.merge_commit_sha,
            "merged_by": self._login_json(pull.merged_by), "allow_maintainer_edit": pull.allow_maintainer_edit,
            "base": self._branch_info(repo, pull.base_branch, base_sha, viewer, repo),
            "head": self._branch_info(head_repo, pull.head_branch, head_sha, viewer, repo),
            "merge_base": pull.merge_base, "due_date": issue_json["due_date"],
            "created_at": issue_json["created_at"], "updated_at": issue_json["updated_at"],
            "closed_at": issue_json["closed_at"], "pin_order": 0,
        }
        if self.flavour == "forgejo":
            data["flow"] = 0
        return data

    def _comment_json(self, repo: Repo, comment: Comment) -> dict[str, Any]:
        issue = repo.issues[comment.issue_number]
        html = self._issue_html(repo, issue)
        return {"id": comment.id, "html_url": f"{html}#issuecomment-{comment.id}",
                "pull_request_url": html if issue.pull else "", "issue_url": "" if issue.pull else html,
                "user": self._login_json(comment.user), "original_author": "", "original_author_id": 0,
                "body": comment.body, "assets": [self._asset_json(a) for a in comment.attachments],
                "created_at": _ts(comment.created),
                "updated_at": _ts(comment.updated)}

    def _release_json(self, repo: Repo, release: Release) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": release.id, "tag_name": release.tag_name, "target_commitish": release.target,
            "name": release.name, "body": release.body,
            "url": self._api_url("repos", repo.owner, repo.name, "releases", str(release.id)),
            "html_url": self._html_url(repo.owner, repo.name, "releases", "tag", release.tag_name),
            "tarball_url": self._html_url(repo.owner, repo.name, "archive", release.tag_name + ".tar.gz"),
            "zipball_url": self._html_url(repo.owner, repo.name, "archive", release.tag_name + ".zip"),
            "upload_url": self._api_url("repos", repo.owner, repo.name, "releases", str(release.id), "assets"),
            "draft": release.draft, "prerelease": release.prerelease, "created_at": _ts(release.created),
            "published_at": _ts(release.created), "author": self._login_json(release.author),
            "assets": [self._asset_json(asset) for asset in release.assets],
        }
        if self.flavour == "forgejo":
            data["hide_archive_links"] = release.hide_archive_links
            data["archive_download_count"] = {"zip": 0, "tar_gz": 0}
        return data

    def _asset_json(self, asset: Asset) -> dict[str, Any]:
        data: dict[str, Any] = {"id": asset.id, "name": asset.name, "size": asset.size, "download_count": 0,
                                "created_at": _ts(asset.created), "uuid": asset.uuid,
                                "browser_download_url": self.root_url + "attachments/" + asset.uuid}
        if self.flavour == "forgejo":
            data["type"] = "attachment"
        return data

    def _notification_json(self, thread: Notification, viewer: User | None) -> dict[str, Any]:
        repo = self._repos[thread.repo_id]
        issue = repo.issues.get(thread.number) if thread.number is not None else None
        kind = "pulls" if issue and issue.pull else "issues"
        subject_url = (self._api_url("repos", repo.owner, repo.name, kind, str(issue.number)) if issue else "")
        return {
            "id": thread.id, "repository": self._repo_json(repo, viewer),
            "subject": {"title": thread.title, "url": subject_url, "latest_comment_url": "",
                        "html_url": self._issue_html(repo, issue) if issue else self._html_url(repo.owner, repo.name),
                        "latest_comment_html_url": "", "type": thread.subject_type,
                        "state": issue.state if issue else ""},
            "unread": thread.unread, "pinned": thread.pinned, "updated_at": _ts(thread.updated),
            "url": self._api_url("notifications", "threads", str(thread.id)),
        }

    def _wiki_meta(self, repo: Repo, page: WikiPage) -> dict[str, Any]:
        sha, author, when, message = page.revisions[-1]
        user = self.users.get(author.lower())
        who = {"name": user.full_name or user.login if user else author,
               "email": user.email if user else "", "date": _ts(when)}
        sub = _wiki_sub_url(page.title)
        return {"title": page.title, "html_url": self._html_url(repo.owner, repo.name, "wiki") + "/" + sub,
                "sub_url": sub, "last_commit": {"sha": sha, "author": who, "commiter": who, "message": message}}

    def _wiki_json(self, repo: Repo, page: WikiPage) -> dict[str, Any]:
        return {**self._wiki_meta(repo, page), "content_base64": base64.b64encode(page.content).decode("ascii"),
                "commit_count": len(page.revisions), "sidebar": "", "footer": ""}

    def _payload_commit(self, repo: Repo, info: Mapping[str, str]) -> dict[str, Any]:
        def person(name: str, mail: str) -> dict[str, str]:
            mail = mail.strip("<>")
            user = next((u for u in self.users.values() if u.email == mail), None)
            return {"name": name, "email": mail, "username": user.login if user else ""}

        return {"id": info["sha"], "message": info["message"],
                "url": self._html_url(repo.owner, repo.name, "commit", info["sha"]),
                "author": person(info["author"], info["author_email"]),
                "committer": person(info["committer"], info["committer_email"]),
                "verification": {"verified": False, "reason": "gpg.error.not_signed_commit", "signature": "",
                                 "signer": None, "payload": ""},
                "timestamp": info["date"], "added": None, "removed": None, "modified": None}

    def _branch_json(self, repo: Repo, info: Mapping[str, str], access: int) -> dict[str, Any]:
        protected = info["name"] in repo.protected
        return {"name": info["name"], "commit": self._payload_commit(repo, info), "protected": protected,
                "required_approvals": 0, "enable_status_check": info["name"] in repo.required_checks,
                "status_check_contexts": list(repo.required_checks.get(info["name"], [])),
                "user_can_push": access >= (3 if protected else 2), "user_can_merge": access >= 2,
                "effective_branch_protection_name": info["name"] if protected else ""}

    def _tag_json(self, repo: Repo, info: Mapping[str, str]) -> dict[str, Any]:
        sha = info["peeled"] or info["id"]
        data: dict[str, Any] = {
            "name": info["name"], "message": info["message"], "id": info["id"],
            "commit": {"url": self._api_url("repos", repo.owner, repo.name, "git", "commits", sha), "sha": sha,
                       "created": info["date"]},
            "zipball_url": self._html_url(repo.owner, repo.name, "archive", info["name"] + ".zip"),
            "tarball_url": self._html_url(repo.owner, repo.name, "archive", info["name"] + ".tar.gz"),
        }
        if self.flavour == "forgejo":
            data["archive_download_count"] = {"zip": 0, "tar_gz": 0}
        return data

    # ------------------------------------------------------------------ request handling

    def _handle_request(self, method: str, target: str, headers: dict[str, str],
                        body: bytes) -> tuple[_Response | None, Fault | None]:
        """Record, spec-check, apply faults and route one request.

        Returns the response (None: drop the connection) and the fault to apply
        after handling (truncation, delayed answer, drop after performing).
        """
        split = urlsplit(target)
        raw_path = split.path
        pairs = parse_qsl(split.query, keep_blank_values=True)
        query_all: dict[str, list[str]] = {}
        for name, value in pairs:
            query_all.setdefault(name, []).append(value)
        content_type = next((v for k, v in headers.items() if k.lower() == "content-type"), "")
        parsed: Any = None
        if body and "json" in content_type.lower():
            try:
                parsed = json.loads(body.decode("utf-8"))
            except (UnicodeDecodeError, ValueError):
                parsed = None
        record = RecordedRequest(method, raw_path, {k: v[0] for k, v in query_all.items()}, query_all,
                                 dict(headers), body, parsed)
        with self._lock:
            self.requests.append(record)
            if raw_path == "/api/v1" or raw_path.startswith("/api/v1/"):
                self._spec_check(record, pairs, content_type)
            fault = next((f for f in self.faults if f.matches(method, raw_path)), None)
            if fault is not None:
                fault.times -= 1
                if fault.times <= 0:
                    self.faults.remove(fault)
        if fault is not None:
            answered, early = self._early_fault(fault)
            if answered:
                return early, None
        response = self._route(method, raw_path, query_all, headers, body, content_type, record)
        if fault is not None and fault.kind in ("truncated", "drop-after", "create-then-timeout", "trickle",
                                                "trickle-head"):
            return response, fault
        return response, None

    def _early_fault(self, fault: Fault) -> tuple[bool, _Response | None]:
        """(answered, response) for a fault that acts before the request is performed.

        Not answered: go on handling the request.  Answered with None: drop the connection.
        """
        kind = fault.kind
        if kind == "drop":
            return True, None
        if kind == "slow":
            self._stopping.wait(fault.seconds)
            return False, None
        if kind == "500":
            body = fault.body if fault.body is not None else _go_json({"message": "", "url": self._swagger_url()})
            return True, _Response(500, body)
        if kind in ("502", "503"):
            status = int(kind)
            title = "502 Bad Gateway" if status == 502 else "503 Service Temporarily Unavailable"
            page = f"<html>\r\n<head><title>{title}</title></head>\r\n<body>\r\n<center><h1>{title}</h1></center>\r\n" \
                   "<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"
            return True, _Response(status, fault.body if fault.body is not None else page.encode(), "text/html")
        if kind == "429":
            return True, _Response(429, fault.body if fault.body is not None else b"Too Many Requests\n",
                                   "text/plain; charset=utf-8", {"Retry-After": str(fault.retry_after)})
        if kind == "null-404":
            return True, _Response(404, b"null\n")
        if kind == "html":
            page = b"<!DOCTYPE html>\n<html><head><title>Sign In - Gitea</title></head>" \
                   b"<body><form action=\"/user/login\"></form></body></html>\n"
            return True, _Response(fault.status or 200, fault.body if fault.body is not None else page,
                                   "text/html; charset=utf-8")
        return False, None

    def _spec_check(self, record: RecordedRequest, pairs: list[tuple[str, str]], content_type: str) -> None:
        if self._checker is None:
            return
        op, _, _ = self._checker.match(record.method, record.path)
        record.operation = op.operation_id if op else None
        for problem in self._checker.check(record.method, record.path, pairs, record.body, content_type or None):
            if any(pattern in problem for pattern in self._allow_patterns):
                self.allowed_violations.append(problem)
            else:
                self.violations.append(problem)

    def _swagger_url(self) -> str:
        return self.root_url + "api/swagger"

    def _route(self, method: str, raw_path: str, query_all: dict[str, list[str]], headers: Mapping[str, str],
               body: bytes, content_type: str, record: RecordedRequest) -> _Response:
        if raw_path.startswith("/attachments/") and method in ("GET", "HEAD"):
            return self._attachment(raw_path[len("/attachments/"):], headers, query_all)
        if raw_path.startswith("/artifacts-blob/") and method in ("GET", "HEAD"):
            return self._artifact_blob(raw_path[len("/artifacts-blob/"):])
        if not raw_path.startswith("/api/v1/"):
            return _plain_not_found()
        api_path = raw_path[len("/api/v1"):]
        lookup = "GET" if method == "HEAD" else method
        route, params, other_methods = _match_route(lookup, api_path, self.flavour, self.line)
        if forge_contract.endpoint(lookup, api_path.split("?", 1)[0]) is None:
            self.violations.append(f"{method} {api_path}: an endpoint the forge contract does not list")
        warning: str | None = None
        with self._lock:
            try:
                user, token, warning = self._authenticate(headers, query_all)
                record.user = user.login if user else None
                if route is None:
                    # Go's router: an unknown path is a plain-text 404; a known path
                    # with another method is an empty 405.
                    return _Response(405, b"", None) if other_methods else _plain_not_found()
                ctx = _Ctx(method, api_path, raw_path, query_all, body, content_type, params, user, route)
                self._check_scope(route, token, method)
                if "owner" in params and "repo" in params:
                    self._assign_repo(ctx)
                if route.token and user is None:
                    raise self._error(401, "token is required")
                self._check_permission(ctx)
                response = getattr(self, "_h_" + route.handler)(ctx)
            except _Reply as reply:
                response = reply.response
            except Exception:  # a bug in the fake: answer like Gitea, and make the test fail
                self.internal_errors.append(f"{method} {raw_path}\n{traceback.format_exc()}")
                response = _Response(500, _go_json({"message": "", "url": self._swagger_url()}))
        if warning:
            response.headers["X-Gitea-Warning"] = warning
        return response

    def _attachment(self, uuid_text: str, headers: Mapping[str, str],
                    query_all: Mapping[str, list[str]]) -> _Response:
        """A release asset's bytes at its browser_download_url (a web route, outside the API and its spec)."""
        with self._lock:
            for repo in self._repos.values():
                owned = [a for r in repo.releases.values() for a in r.assets] + \
                    [a for i in repo.issues.values() for a in i.attachments]
                for asset in owned:
                    if asset.uuid == uuid_text:
                        if repo.private:
                            try:
                                user = self._authenticate(headers, query_all)[0]
                            except _Reply:
                                user = None
                            if user is None or self._access(repo, user) <= 0:
                                return _plain_not_found()
                        return _Response(200, asset.data, "application/octet-stream")
        return _plain_not_found()

    # ------------------------------------------------------------------ auth, scopes, permissions

    def _authenticate(self, headers: Mapping[str, str],
                      query_all: Mapping[str, list[str]]) -> tuple[User | None, Token | None, str | None]:
        header = next((v for k, v in headers.items() if k.lower() == "authorization"), None)
        invalid = self._error(401, "invalid username, password or token")
        if header:
            parts = header.split()
            if len(parts) == 2:
                scheme, credential = parts[0].lower(), parts[1]
                if scheme in ("token", "bearer"):
                    token = self.tokens.get(credential)
                    if token is None:
                        raise invalid
                    return self.users[token.login.lower()], token, None
                if scheme == "basic":
                    return (*self._basic_auth(credential, invalid), None)
            return None, None, None  # not a form any auth method parses: anonymous
        if self.flavour == "gitea":
            # Gitea 1.25 still honours ?token= / ?access_token= (with a warning); Forgejo removed them.
            for name in ("token", "access_token"):
                if name in query_all:
                    token = self.tokens.get(query_all[name][0])
                    if token is None:
                        raise invalid
                    warning = ("token and access_token API authentication is deprecated and will be removed "
                               "in gitea 1.23. Please use AuthorizationHeaderToken instead. Existing queries "
                               "will continue to work but without authorization.")
                    return self.users[token.login.lower()], token, warning
        return None, None, None

    def _basic_auth(self, credential: str, invalid: _Reply) -> tuple[User, Token | None]:
        try:
            login, _, password = base64.b64decode(credential).decode("utf-8").partition(":")
        except (ValueError, UnicodeDecodeError):
            raise invalid from None
        if password in ("", "x-oauth-basic"):
            token = self.tokens.get(login)
        else:
            token = self.tokens.get(password)
            if token is None:
                user = self.users.get(login.lower())
                if user is not None and user.password is not None and user.password == password:
                    return user, None
        if token is None:
            raise invalid
        return self.users[token.login.lower()], token

    def _check_scope(self, route: _Route, token: Token | None, method: str) -> None:
        if token is None or route.scope is None or "all" in token.scopes:
            return
        level = "read" if method in ("GET", "HEAD") else "write"
        needed = f"{level}:{route.scope}"
        granted = set(token.scopes)
        if needed in granted or f"write:{route.scope}" in granted:
            return
        raise self._error(403, f"token does not have at least one of required scope(s), required=[{needed}], "
                               f"token scope={','.join(token.scopes)}")

    def _assign_repo(self, ctx: _Ctx) -> None:
        owner, name = unquote(ctx.params["owner"]), unquote(ctx.params["repo"])
        key = (owner.lower(), name.lower())
        target = self._redirects.get(key)  # a renamed repo, or one a test sends elsewhere
        if target is not None:
            raise _Reply(self._redirect(ctx, target))
        repo_id = self._by_name.get(key)
        if repo_id is None:
            if owner.lower() not in self.users:
                raise self._not_found("GetUserByName", [f"user redirect does not exist [name: {owner.lower()}]"])
            raise self._not_found()
        repo = self._repos[repo_id]
        access = self._access(repo, ctx.user)
        if access == 0:
            raise self._not_found()  # private and invisible: 404, never 403
        ctx.repo, ctx.access = repo, access

    def _redirect(self, ctx: _Ctx, target: str) -> _Response:
        prefix = "/" + "/".join(ctx.raw_path.split("/")[1:6])  # /api/v1/repos/{owner}/{repo}
        location = target + ctx.raw_path[len(prefix):]
        query = urlencode([(k, v) for k, values in ctx.query_all.items() for v in values])
        if query:
            location += "?" + query
        body = b""
        if ctx.method in ("GET", "HEAD"):
            body = f'<a href="{location}">Moved Permanently</a>.\n\n'.encode()
        return _Response(301, body, "text/html; charset=utf-8" if body else None, {"Location": location})

    def _check_permission(self, ctx: _Ctx) -> None:
        if ctx.repo is None:
            return
        needed = _LEVELS[ctx.route.perm]
        if ctx.access < needed:
            if ctx.route.perm == "owner":  # reqOwner: Actions secrets and variables
                raise self._error(403, "user should be the owner of the repo")
            if ctx.route.perm == "admin":
                raise self._error(403, "user should be an owner or a site admin")
            raise self._error(403, "user should have a permission to write to a repo")
        if ctx.repo.archived and ctx.method not in ("GET", "HEAD") and not ctx.route.archived_ok:
            raise self._error(423, f"{ctx.repo.full_name} is archived")

    # ------------------------------------------------------------------ answers

    def _json(self, status: int, obj: Any, headers: Mapping[str, str] | None = None) -> _Response:
        return _Response(status, _go_json(obj), headers=dict(headers or {}))

    def _error(self, status: int, message: str) -> _Reply:
        return _Reply(self._json(status, {"message": message, "url": self._swagger_url()}))

    def _not_found(self, message: str | None = None, errors: Sequence[str] | None = None) -> _Reply:
        if self.flavour == "forgejo":
            body = {"message": _FORGEJO_NOT_FOUND, "url": self._swagger_url(), "errors": list(errors or [])}
        else:
            body = {"errors": list(errors) if errors else None, "message": message or "not found",
                    "url": self._swagger_url()}
        return _Reply(self._json(404, body))

    def _forbidden_empty(self) -> _Reply:
        return _Reply(_Response(403, b"", None))

    def _binding(self, field_name: str, error: str = "Required") -> _Reply:
        return self._error(422, f"[{field_name}]: {error}")

    def _page(self, ctx: _Ctx, items: Sequence[Any], *, link: bool = True) -> tuple[list[Any], dict[str, str]]:
        """Slice *items* as Gitea pages them and build X-Total-Count and Link from ROOT_URL."""
        page = ctx.q_int("page", 1)
        page = page if page > 0 else 1
        limit = ctx.q_int("limit", 0)
        limit = DEFAULT_PAGING_NUM if limit <= 0 else min(limit, MAX_RESPONSE_ITEMS)
        total = len(items)
        headers = {"X-Total-Count": str(total), "Access-Control-Expose-Headers": "X-Total-Count"}
        if link:
            links = self._links(ctx, total, limit, page)
            if links:
                headers["Link"] = ",".join(links)
            headers["Access-Control-Expose-Headers"] = "Link, X-Total-Count"
        return list(items[(page - 1) * limit: page * limit]), headers

    def _links(self, ctx: _Ctx, total: int, limit: int, page: int) -> list[str]:
        # services/context/api.go genAPILinks with modules/paginator semantics:
        # the current page is clamped to the last page for link purposes.
        pages = max(1, -(-total // limit))
        current = min(page, pages)

        def url(number: int) -> str:
            pairs = {k: list(v) for k, v in ctx.query_all.items()}
            pairs["page"] = [str(number)]
            query = urlencode([(k, v) for k in sorted(pairs) for v in pairs[k]])
            return f"<{self.root_url}{ctx.raw_path[1:]}?{query}>"

        links = []
        if total > current * limit:
            links.append(f'{url(current + 1)}; rel="next"')
        is_last = total == 0 or (total > (current - 1) * limit and not total > current * limit)
        if not is_last:
            links.append(f'{url(pages)}; rel="last"')
        if current != 1:
            links.append(f'{url(1)}; rel="first"')
        if current > 1:
            links.append(f'{url(current - 1)}; rel="prev"')
        return links

    def _form(self, ctx: _Ctx) -> dict[str, Any]:
        """Bind the request body as Gitea's binder does (JSON, urlencoded or multipart by Content-Type)."""
        media = ctx.content_type.lower()
        if "form-urlencoded" in media:
            return dict(parse_qsl(ctx.body.decode("utf-8", "replace"), keep_blank_values=True))
        if "multipart/form-data" in media:
            return {name: value for name, (_, value) in _multipart(ctx.body, ctx.content_type).items()}
        if "json" in media:
            if not ctx.body.strip():
                return {}
            try:
                document = json.loads(ctx.body.decode("utf-8"))
            except (UnicodeDecodeError, ValueError) as exc:
                raise self._error(422, f"[]: {exc}") from None
            if not isinstance(document, dict):
                kind = {list: "array", str: "string", bool: "bool", int: "number", float: "number"}.get(
                    type(document), "value")
                raise self._error(422, f"[]: json: cannot unmarshal {kind} into Go value of type struct")
            return document
        raise self._error(422, "[]: Empty Content-Type" if not media else "[]: Unsupported Content-Type")

    def _issue(self, ctx: _Ctx, key: str = "index") -> Issue:
        assert ctx.repo is not None
        try:
            number = int(ctx.params[key])
        except ValueError:
            raise self._not_found() from None
        issue = ctx.repo.issues.get(number)
        if issue is None:
            raise self._not_found()
        return issue

    def _pull_issue(self, ctx: _Ctx) -> Issue:
        issue = self._issue(ctx)
        if issue.pull is None:
            raise self._not_found()
        return issue

    # ================================================================== endpoints: misc and users

    def _h_version(self, ctx: _Ctx) -> _Response:
        return self._json(200, {"version": self.version})

    def _h_settings_api(self, ctx: _Ctx) -> _Response:
        data = {"max_response_items": MAX_RESPONSE_ITEMS, "default_paging_num": DEFAULT_PAGING_NUM,
                "default_git_trees_per_page": 1000, "default_max_blob_size": 10485760}
        if self.flavour == "gitea":
            data["default_max_response_size"] = 52428800
        return self._json(200, data)

    def _h_user_get(self, ctx: _Ctx) -> _Response:
        return self._json(200, self._user_json(ctx.user))

    def _h_user_repos(self, ctx: _Ctx) -> _Response:
        assert ctx.user is not None
        repos = [r for r in self._repos.values() if self._access(r, ctx.user) >= 2
                 or r.owner.lower() == ctx.user.login.lower()]
        items, headers = self._page(ctx, sorted(repos, key=lambda r: r.id))
        return self._json(200, [self._repo_json(r, ctx.user) for r in items], headers)

    def _h_org_repos(self, ctx: _Ctx) -> _Response:
        org = self.users.get(unquote(ctx.params["org"]).lower())
        if org is None or not org.is_org:
            raise self._not_found()
        repos = [r for r in self._visible_repos(ctx.user) if r.owner.lower() == org.login.lower()]
        items, headers = self._page(ctx, sorted(repos, key=lambda r: r.id))
        return self._json(200, [self._repo_json(r, ctx.user) for r in items], headers)

    def _h_users_repos(self, ctx: _Ctx) -> _Response:
        owner = self.users.get(unquote(ctx.params["username"]).lower())
        if owner is None:
            raise self._not_found("GetUserByName", [f"user redirect does not exist [name: {ctx.params['username']}]"])
        repos = [r for r in self._visible_repos(ctx.user) if r.owner.lower() == owner.login.lower()]
        items, headers = self._page(ctx, sorted(repos, key=lambda r: r.id))
        return self._json(200, [self._repo_json(r, ctx.user) for r in items], headers)

    def _h_repo_create(self, ctx: _Ctx) -> _Response:
        assert ctx.user is not None
        return self._create_repo_for(ctx, ctx.user.login)

    def _h_org_repo_create(self, ctx: _Ctx) -> _Response:
        assert ctx.user is not None
        org = self.users.get(unquote(ctx.params["org"]).lower())
        if org is None or not org.is_org:
            raise self._not_found()
        if org.org_members.get(ctx.user.login.lower()) != "owner" and not ctx.user.is_admin:
            raise self._error(403, "Given user is not owner of organization.")
        return self._create_repo_for(ctx, org.login)

    def _create_repo_for(self, ctx: _Ctx, owner: str) -> _Response:
        form = self._form(ctx)
        name = self._field(form, "name", str, "")
        if not name:
            raise self._binding("Name")
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", name) or name in (".", ".."):
            raise self._binding("Name", "AlphaDashDot")
        if (owner.lower(), name.lower()) in self._by_name:
            raise self._error(409, "The repository with the same name already exists.")
        repo = self.add_repo(owner, name, private=bool(self._field(form, "private", bool, False)),
                             default_branch=self._field(form, "default_branch", str, "") or "main",
                             init=bool(self._field(form, "auto_init", bool, False)),
                             description=self._field(form, "description", str, ""))
        return self._json(201, self._repo_json(repo, ctx.user))

    # ================================================================== endpoints: repositories

    def _h_repo_get(self, ctx: _Ctx) -> _Response:
        assert ctx.repo is not None
        return self._json(200, self._repo_json(ctx.repo, ctx.user))

    def _h_repo_edit(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None
        form = self._form(ctx)
        new_name = self._field(form, "name", str, None)
        if new_name and new_name != repo.name:
            if (repo.owner.lower(), new_name.lower()) in self._by_name:
                raise self._error(422, "repo name is already taken")
            self._rename(repo, repo.owner, new_name)
        for key in ("description", "website"):
            value = self._field(form, key, str, None)
            if value is not None:
                setattr(repo, key, value)
        branch = self._field(form, "default_branch", str, None)
        if branch:
            if self._ref_sha(repo, f"refs/heads/{branch}") is None and self._branches_exist(repo):
                raise self._not_found()
            repo.default_branch = branch
            _git("symbolic-ref", "HEAD", f"refs/heads/{branch}", git_dir=repo.bare)
        private = self._field(form, "private", bool, None)
        if private is not None:
            repo.private = private
        archived = self._field(form, "archived", bool, None)
        if archived is not None and archived != repo.archived:
            repo.archived = archived
            repo.archived_at = self._clock if archived else None
        for key, default in _REPO_SETTING_DEFAULTS.items():
            value = self._field(form, key, type(default), None)
            if value is not None:
                repo.settings[key] = value
        repo.updated = self._tick()
        return self._json(200, self._repo_json(repo, ctx.user))

    def _h_repo_delete(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None
        del self._repos[repo.id]
        del self._by_name[(repo.owner.lower(), repo.name.lower())]
        shutil.rmtree(repo.bare, ignore_errors=True)
        return _Response(204, b"", None)

    def _h_forks_list(self, ctx: _Ctx) -> _Response:
        assert ctx.repo is not None
        forks = [r for r in self._visible_repos(ctx.user) if r.parent_id == ctx.repo.id]
        items, headers = self._page(ctx, forks)
        return self._json(200, [self._repo_json(r, ctx.user) for r in items], headers)

    def _h_fork_create(self, ctx: _Ctx) -> _Response:
        source = ctx.repo
        assert source is not None and ctx.user is not None
        form = self._form(ctx)
        owner = self._field(form, "organization", str, "") or ctx.user.login
        org = self.users.get(owner.lower())
        if org is None:
            raise self._not_found()
        if org.is_org and org.org_members.get(ctx.user.login.lower()) != "owner" and not ctx.user.is_admin:
            raise self._error(403, "User is no Member of Organisation")
        name = self._field(form, "name", str, "") or source.name
        if (org.login.lower(), name.lower()) in self._by_name:
            raise self._error(409, "The repository with the same name already exists.")
        fork = self.add_repo(org.login, name, private=source.private, default_branch=source.default_branch,
                             init=False, description=source.description)
        shutil.rmtree(fork.bare)
        _git("clone", "--bare", "-q", str(source.bare), str(fork.bare))
        fork.parent_id = source.id
        return self._json(202, self._repo_json(fork, ctx.user))

    def _h_branches_list(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None
        items, headers = self._page(ctx, self._branches(repo))
        return self._json(200, [self._branch_json(repo, info, ctx.access) for info in items], headers)

    def _h_branch_get(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None
        name = unquote(ctx.params["branch"])
        info = next((b for b in self._branches(repo) if b["name"] == name), None)
        if info is None:
            raise self._not_found("Branch Not Exist", [f"branch does not exist [name: {name}]"])
        return self._json(200, self._branch_json(repo, info, ctx.access))

    def _h_branch_create(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None
        form = self._form(ctx)
        name = self._field(form, "new_branch_name", str, "")
        if not name:
            raise self._binding("BranchName")
        # CreateBranchRepoOption binds new_branch_name as Required;GitRefName;MaxSize(100): a 422 before any git.
        if len(name) > 100 or _git("check-ref-format", f"refs/heads/{name}", git_dir=repo.bare,
                                   check=False).returncode != 0:
            raise self._binding("BranchName", "GitRefNameError")
        start = self._field(form, "old_ref_name", str, "") or self._field(form, "old_branch_name", str, "") \
            or repo.default_branch
        sha = self._resolve_commit(repo, start)
        if sha is None:
            raise self._not_found("", [f"branch does not exist [name: {start}]"])
        if self._ref_sha(repo, f"refs/heads/{name}"):
            raise self._error(409, "The branch already exists.")
        _git("update-ref", f"refs/heads/{name}", sha, _ZERO_SHA, git_dir=repo.bare)
        info = next(b for b in self._branches(repo) if b["name"] == name)
        return self._json(201, self._branch_json(repo, info, ctx.access))

    def _h_branch_delete(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None
        name = unquote(ctx.params["branch"])
        if name == repo.default_branch:
            raise self._error(403, "can not delete default branch")
        if name in repo.protected:
            raise self._error(403, "branch protected")
        sha = self._ref_sha(repo, f"refs/heads/{name}")
        if sha is None:
            raise self._not_found()
        _git("update-ref", "-d", f"refs/heads/{name}", sha, git_dir=repo.bare)
        return _Response(204, b"", None)

    def _h_tags_list(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None
        items, headers = self._page(ctx, self._tags(repo))
        return self._json(200, [self._tag_json(repo, info) for info in items], headers)

    def _h_tag_create(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None and ctx.user is not None
        form = self._form(ctx)
        name = self._field(form, "tag_name", str, "")
        if not name:
            raise self._binding("TagName")
        target = self._field(form, "target", str, "") or repo.default_branch
        sha = self._resolve_commit(repo, target)
        if sha is None:
            raise self._not_found("target not found", [f"target does not exist [target: {target}]"])
        if self._ref_sha(repo, f"refs/tags/{name}"):
            raise self._error(409, "tag exists")
        self._make_tag(repo, name, sha, self._field(form, "message", str, ""), ctx.user.login)
        info = next(t for t in self._tags(repo) if t["name"] == name)
        return self._json(201 if self.flavour == "forgejo" else 200, self._tag_json(repo, info))

    def _h_tag_get(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None
        name = unquote(ctx.params["tag"])
        info = next((t for t in self._tags(repo) if t["name"] == name), None)
        if info is None:
            raise self._not_found("GetTag", [f"tag does not exist [name: {name}]"])
        return self._json(200, self._tag_json(repo, info))

    def _make_tag(self, repo: Repo, name: str, sha: str, message: str, login: str) -> None:
        if message:
            _git("tag", "-a", "-m", message, name, sha, git_dir=repo.bare, env=self._identity_env(login))
        else:
            _git("update-ref", f"refs/tags/{name}", sha, _ZERO_SHA, git_dir=repo.bare)

    def _h_tag_delete(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None
        name = unquote(ctx.params["tag"])
        if _git("rev-parse", "--verify", "-q", f"refs/tags/{name}", git_dir=repo.bare, check=False).returncode:
            raise self._not_found()
        if any(r.tag_name == name and not r.draft for r in repo.releases.values()):
            raise self._error(409, "a tag attached to a release cannot be deleted directly")
        _git("update-ref", "-d", f"refs/tags/{name}", git_dir=repo.bare)
        return _Response(204, b"", None)

    def _h_branch_rename(self, ctx: _Ctx) -> _Response:
        """RenameBranch (Forgejo: UpdateBranch): 204; the default or a protected branch needs a repository admin."""
        repo = ctx.repo
        assert repo is not None
        form = self._form(ctx)
        old, new = unquote(ctx.params["branch"]), self._field(form, "name", str, "")
        if not new:
            raise self._binding("Name")
        if (old == repo.default_branch or old in repo.protected) and ctx.access < 3:
            raise self._error(403, "User must be a repo or site admin to rename default or protected branches.")
        if old == new or self._ref_sha(repo, f"refs/heads/{new}"):
            raise self._error(422, "Cannot rename a branch using the same name or rename to a branch that "
                                   "already exists.")
        sha = self._ref_sha(repo, f"refs/heads/{old}")
        if sha is None:
            raise self._not_found("Branch doesn't exist.")
        _git("update-ref", f"refs/heads/{new}", sha, _ZERO_SHA, git_dir=repo.bare)
        _git("update-ref", "-d", f"refs/heads/{old}", sha, git_dir=repo.bare)
        if old == repo.default_branch:
            repo.default_branch = new
            _git("symbolic-ref", "HEAD", f"refs/heads/{new}", git_dir=repo.bare)
        if old in repo.protected:  # a rule named exactly after the branch follows it
            repo.protected.discard(old)
            repo.protected.add(new)
        for issue in repo.issues.values():
            pull = issue.pull
            if pull is not None and pull.base_branch == old:
                pull.base_branch = new
            if pull is not None and pull.head_repo_id == repo.id and pull.head_branch == old:
                pull.head_branch = new
        return _Response(204, b"", None)

    def _log(self, repo: Repo, rev: str, path: str = "", skip: int = 0,
             count: int | None = None) -> list[dict[str, Any]]:
        """Commits reachable from *rev* (touching *path*), newest first, as the fields the Commit JSON needs."""
        fmt = "%H%x00%P%x00%T%x00%an%x00%ae%x00%aI%x00%cn%x00%ce%x00%cI%x00%B%x01"
        args = ["log", f"--format={fmt}", f"--skip={skip}"] + ([f"--max-count={count}"] if count else [])
        text = _git(*args, rev, "--", *([path] if path else []), git_dir=repo.bare).stdout.decode("utf-8", "replace")
        keys = ("sha", "parents", "tree", "author", "author_email", "author_date", "committer", "committer_email",
                "date", "message")
        return [dict(zip(keys, record.lstrip("\n").split("\0"))) for record in text.split("\1") if record.strip()]

    def _commit_json(self, repo: Repo, info: Mapping[str, str], ctx: _Ctx, *, stat: bool,
                     files: bool) -> dict[str, Any]:
        """Gitea's convert.ToCommit: the git commit, the forge users behind its emails, and optional stats and files."""
        def api(*parts: str) -> str:
            return self._api_url("repos", repo.owner, repo.name, "git", *parts)

        def user(mail: str) -> dict[str, Any] | None:
            return self._user_json(next((u for u in self.users.values() if u.email == mail), None))

        sha = info["sha"]
        data: dict[str, Any] = {
            "url": api("commits", sha), "sha": sha, "created": info["date"],
            "html_url": self._html_url(repo.owner, repo.name, "commit", sha),
            "commit": {"url": api("commits", sha), "message": info["message"],
                       "author": {"name": info["author"], "email": info["author_email"], "date": info["author_date"]},
                       "committer": {"name": info["committer"], "email": info["committer_email"],
                                     "date": info["date"]},
                       "tree": {"url": api("trees", info["tree"]), "sha": info["tree"], "created": info["date"]},
                       "verification": {"verified": False, "reason": "gpg.error.not_signed_commit", "signature": "",
                                        "signer": None, "payload": ""}},
            "author": user(info["author_email"]), "committer": user(info["committer_email"]),
            "parents": [{"url": api("commits", p), "sha": p, "created": info["date"]}
                        for p in info["parents"].split()],
        }
        if files or stat:
            base = info["parents"].split()[0] if info["parents"] else "--root"
            names = _git("diff-tree", "-r", "-z", "--no-commit-id", "--name-status", base, sha,
                         git_dir=repo.bare).stdout.decode("utf-8", "replace").split("\0")
            status = {"A": "added", "D": "deleted", "M": "modified", "T": "modified"}
            if files:
                data["files"] = [{"filename": name, "status": status.get(code[:1], "modified")}
                                 for code, name in zip(names[0::2], names[1::2]) if code]
            if stat:
                numbers = _out(_git("diff-tree", "-r", "--no-commit-id", "--numstat", base, sha, git_dir=repo.bare))
                adds = dels = 0
                for line in numbers.splitlines():
                    a, d, _ = line.split("\t", 2)
                    adds += int(a) if a.isdigit() else 0
                    dels += int(d) if d.isdigit() else 0
                data["stats"] = {"total": adds + dels, "additions": adds, "deletions": dels}
        return data

    def _h_commits_list(self, ctx: _Ctx) -> _Response:
        """repoGetAllCommits: from sha (default: the default branch), optionally touching path; with path the
        page size is the forge's fixed commit range (50), whatever limit says."""
        repo = ctx.repo
        assert repo is not None
        if not self._branches_exist(repo):
            raise self._error(409, "Git Repository is empty.")
        rev = ctx.q("sha") or repo.default_branch
        sha = self._resolve_commit(repo, rev)
        if sha is None:
            raise self._not_found(f"sha not found [{rev}]")
        path = ctx.q("path")
        every = self._log(repo, sha, path)
        if path:
            page = max(ctx.q_int("page", 1), 1)
            items, headers = every[(page - 1) * 50: page * 50], {"X-Total-Count": str(len(every))}
        else:
            items, headers = self._page(ctx, every)
        stat, files = ctx.q_bool("stat") is not False, ctx.q_bool("files") is not False
        return self._json(200, [self._commit_json(repo, info, ctx, stat=stat, files=files) for info in items],
                          headers)

    def _h_commit_get(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None
        ref = unquote(ctx.params["sha"])
        if not re.fullmatch(r"[^\s~^:?*\[\\]+", ref) or ref.startswith("-"):
            raise self._error(422, f"no valid ref or sha: {ref}")
        sha = self._resolve_commit(repo, ref)
        if sha is None:
            raise self._not_found(f"commit doesn't exist: {ref}")
        info = self._log(repo, sha, count=1)[0]
        return self._json(200, self._commit_json(repo, info, ctx, stat=ctx.q_bool("stat") is not False,
                                                 files=ctx.q_bool("files") is not False))

    def _h_commit_diff(self, ctx: _Ctx) -> _Response:
        """A commit's diff or patch as text (Gitea routes only .diff and .patch here; any other dot is a ref)."""
        repo = ctx.repo
        assert repo is not None
        kind = ctx.params["kind"]
        if kind not in ("diff", "patch"):
            ctx.params["sha"] = f"{ctx.params['sha']}.{kind}"
            return self._h_commit_get(ctx)
        sha = self._resolve_commit(repo, unquote(ctx.params["sha"]))
        if sha is None:
            raise self._not_found()
        if kind == "patch":
            text = _git("format-patch", "--stdout", "-1", sha, git_dir=repo.bare).stdout
        else:
            text = _git("diff-tree", "-p", "--root", "--no-commit-id", sha, git_dir=repo.bare).stdout
        return _Response(200, text, "text/plain; charset=utf-8")

    # ------------------------------------------------------------------ repository files

    def _entry(self, repo: Repo, commit: str, path: str) -> tuple[str, str, str, int] | None:
        """(mode, type, sha, size) of *path* in *commit*, or None when it is not there."""
        listing = _git("ls-tree", "-z", "-l", commit, "--", path, git_dir=repo.bare, check=False)
        for record in listing.stdout.decode("utf-8", "replace").split("\0"):
            meta, _, name = record.partition("\t")
            if name == path:
                mode, kind, sha, size = meta.split()
                return mode, kind, sha, int(size) if size.isdigit() else 0
        return None

    def _contents_json(self, repo: Repo, commit: str, ref: str, path: str, entry: tuple[str, str, str, int],
                       *, with_content: bool) -> dict[str, Any]:
        """ContentsResponse: a file's content as base64 (up to the blob size limit), else metadata only."""
        mode, kind, sha, size = entry
        last = _out(_git("log", "-1", "--format=%H%x00%cI%x00%s", commit, "--", path, git_dir=repo.bare))
        last_sha, last_when, last_message = (last.split("\0") + ["", "", ""])[:3]
        shown = {"blob": "file", "tree": "dir", "commit": "submodule"}[kind]
        if mode == "120000":
            shown = "symlink"
        html = self._html_url(repo.owner, repo.name, "src", "branch", ref, path)
        item: dict[str, Any] = {
            "name": path.rsplit("/", 1)[-1], "path": path, "sha": sha, "last_commit_sha": last_sha, "type": shown,
            "size": size if kind == "blob" else 0, "encoding": None, "content": None, "target": None,
            "url": self._api_url("repos", repo.owner, repo.name, "contents", path) + f"?ref={quote(ref)}",
            "html_url": html, "git_url": self._api_url("repos", repo.owner, repo.name, "git", "blobs", sha),
            "download_url": self._html_url(repo.owner, repo.name, "raw", "branch", ref, path),
            "submodule_git_url": None, "_links": {"self": None, "git": None, "html": html}}
        if self.flavour == "gitea":
            item |= {"last_committer_date": last_when, "last_author_date": last_when,
                     "last_commit_message": last_message}
        else:
            item["last_commit_when"] = last_when
        if kind == "blob" and (with_content or shown == "symlink"):
            data = _git("cat-file", "blob", sha, git_dir=repo.bare).stdout
            if shown == "symlink":
                item["target"] = data.decode("utf-8", "replace")
            elif size <= self.max_blob_size:
                item["encoding"] = "base64"
                item["content"] = base64.b64encode(data).decode("ascii")
            elif self.flavour == "forgejo":
                # Forgejo's GetBlobBySHA: content starts "" and is read only up to the limit (Gitea leaves it null)
                item["encoding"], item["content"] = "base64", ""
        return item

    def _read_ref(self, ctx: _Ctx) -> tuple[str, str]:
        """(ref name, commit) of ``?ref=``, the default branch when absent; 404 when it names nothing."""
        repo = ctx.repo
        assert repo is not None
        ref = ctx.q("ref") or repo.default_branch
        commit = self._resolve_commit(repo, ref)
        if commit is None:
            raise self._not_found("GetCommit", [f"object does not exist [id: {ref}, rel_path: ]"])
        return ref, commit

    def _h_contents_root(self, ctx: _Ctx) -> _Response:
        return self._contents(ctx, "")

    def _h_contents_get(self, ctx: _Ctx) -> _Response:
        return self._contents(ctx, unquote(ctx.params["filepath"]).strip("/"))

    def _contents(self, ctx: _Ctx, path: str) -> _Response:
        """GetContents: a file's ContentsResponse, or a directory's entries as a list (the root without a path)."""
        repo = ctx.repo
        assert repo is not None
        ref, commit = self._read_ref(ctx)
        entry = self._entry(repo, commit, path) if path else ("040000", "tree", "", 0)
        if entry is None:
            raise self._not_found("GetContentsOrList", [f"object does not exist [id: {commit}, rel_path: {path}]"])
        if entry[1] != "tree":
            return self._json(200, self._contents_json(repo, commit, ref, path, entry, with_content=True))
        listing = _git("ls-tree", "-z", "-l", commit + (f":{path}" if path else ""), git_dir=repo.bare)
        items = []
        for record in listing.stdout.decode("utf-8", "replace").split("\0"):
            meta, _, name = record.partition("\t")
            if name:
                mode, kind, sha, size = meta.split()
                full = f"{path}/{name}" if path else name
                items.append(self._contents_json(repo, commit, ref, full, (mode, kind, sha, int(size) if
                                                 size.isdigit() else 0), with_content=False))
        return self._json(200, items)

    def _h_raw_get(self, ctx: _Ctx) -> _Response:
        """GetRawFile: a file's bytes as they are."""
        repo = ctx.repo
        assert repo is not None
        path = unquote(ctx.params["filepath"]).strip("/")
        _, commit = self._read_ref(ctx)
        entry = self._entry(repo, commit, path)
        if entry is None or entry[1] != "blob":
            raise self._not_found("GetBlobByPath", [f"object does not exist [id: {commit}, rel_path: {path}]"])
        data = _git("cat-file", "blob", entry[2], git_dir=repo.bare).stdout
        kind = "application/octet-stream" if b"\0" in data[:8000] else "text/plain; charset=utf-8"
        return _Response(200, data, kind)

    def _h_git_tree(self, ctx: _Ctx) -> _Response:
        """GetTree: a commit's (or tree's) entries, recursive on request, paged by per_page (at most 1000)."""
        repo = ctx.repo
        assert repo is not None
        name = unquote(ctx.params["sha"])
        commit = self._resolve_commit(repo, name)
        if commit is None:
            raise self._error(400, f"sha not found [{name}]")
        args = ["ls-tree", "-z", "-l", "-t", "-r"] if ctx.q_bool("recursive") else ["ls-tree", "-z", "-l"]
        listing = _git(*args, commit, git_dir=repo.bare)
        entries = []
        for record in listing.stdout.decode("utf-8", "replace").split("\0"):
            meta, _, path = record.partition("\t")
            if path:
                mode, kind, sha, size = meta.split()
                entry = {"path": path, "mode": mode, "type": kind, "sha": sha,
                         "url": self._api_url("repos", repo.owner, repo.name, "git", kind + "s", sha)}
                if kind == "blob":
                    entry["size"] = int(size)
                entries.append(entry)
        per_page = ctx.q_int("per_page", self.git_trees_per_page)
        per_page = self.git_trees_per_page if per_page <= 0 or per_page > self.git_trees_per_page else per_page
        page = max(1, ctx.q_int("page", 1))
        shown = entries[(page - 1) * per_page: page * per_page]
        tree_sha = _out(_git("rev-parse", f"{commit}^{{tree}}", git_dir=repo.bare))
        return self._json(200, {"sha": tree_sha, "url": self._api_url("repos", repo.owner, repo.name, "git",
                                                                      "trees", tree_sha),
                                "tree": shown, "truncated": len(entries) > page * per_page, "page": page,
                                "total_count": len(entries)})

    def _file_ops(self, form: Mapping[str, Any], ops: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """The file operations of a change, decoded and checked as Gitea binds them."""
        allowed = ("create", "update", "upload", "rename", "delete") if self.flavour == "gitea" else \
            ("create", "update", "delete")
        out = []
        for op in ops:
            operation = self._field(op, "operation", str, "")
            path = self._field(op, "path", str, "")
            if operation not in allowed:
                raise self._error(422, f"invalid file operation: {operation} {path}, supported operations are "
                                       f"{', '.join(allowed)}")
            clean = os.path.normpath("/" + path).lstrip("/") if path else ""
            source = self._field(op, "from_path", str, "")
            if not clean or clean == "." or ".git" in clean.split("/"):
                raise self._error(422, f"path contains a malformed path component [path: {path}]")
            data = None
            if operation != "delete":
                try:
                    data = base64.b64decode(self._field(op, "content", str, ""), validate=True)
                except ValueError:
                    raise self._error(422, "illegal base64 data at input byte 0") from None
            out.append({"operation": operation, "path": clean, "from": os.path.normpath("/" + source).lstrip("/")
                        if source else clean, "sha": self._field(op, "sha", str, ""), "data": data})
        return out

    def _change_files(self, ctx: _Ctx, form: Mapping[str, Any], ops: list[dict[str, Any]],
                      default_message: str) -> tuple[str, str]:
        """ChangeRepoFiles: check every operation against the base branch, then commit them all at once.

        Returns (the new commit, the branch it is on).
        """
        repo = ctx.repo
        assert repo is not None and ctx.user is not None
        base = self._field(form, "branch", str, "") or repo.default_branch
        target = self._field(form, "new_branch", str, "") or base
        head = self._ref_sha(repo, f"refs/heads/{base}")
        if head is None:
            raise self._not_found("GetBranch", [f"branch does not exist [name: {base}]"])
        if target != base and self._ref_sha(repo, f"refs/heads/{target}") is not None:
            raise self._error(422, f"branch already exists [name: {target}]")
        if target in repo.protected and ctx.access < 3:  # VerifyBranchProtection: ErrUserCannotCommit, 403
            raise self._error(403, f"user cannot commit to repo [user: {ctx.user.login}]")
        files: dict[str, bytes | None] = {}
        for op in ops:
            if op["operation"] in ("update", "upload", "delete", "rename"):
                found = self._entry(repo, head, op["from"])
                if found is None and op["operation"] != "upload":
                    raise self._not_found("ChangeRepoFiles", [f"object does not exist [id: {head}, "
                                                              f"rel_path: {op['from']}]"])
                current = found[2] if found else ""
                if op["sha"] and op["sha"] != current:
                    raise self._error(422, f"sha does not match [given: {op['sha']}, expected: {current}]")
                if not op["sha"] and op["operation"] != "upload":
                    raise self._error(422, "a SHA or commit ID must be proved when updating a file")
            if op["operation"] != "delete":
                found = self._entry(repo, head, op["path"])
                if found is not None and found[1] == "tree":
                    raise self._error(422, f"a directory exists where you’re trying to create a file "
                                           f"[path: {op['path']}]")
                if found is not None and (op["operation"] == "create" or op["from"] != op["path"]):
                    raise self._error(422, f"repository file already exists [path: {op['path']}]")
            if op["from"] != op["path"] or op["operation"] == "delete":
                files[op["from"]] = None
            if op["operation"] != "delete":
                files[op["path"]] = self._lfs_pointer(repo, head, op["path"], op["data"])
        message = self._field(form, "message", str, "") or default_message
        login = ctx.user.login
        sha = self.commit(repo.owner, repo.name, target, files, message, start=base,
                          author=f"{login} <{self.users[login.lower()].email}>")
        return sha, target

    def _file_commit_json(self, repo: Repo, sha: str) -> dict[str, Any]:
        info = self._commit_info(repo, sha)
        parents = _out(_git("log", "-1", "--format=%P", sha, git_dir=repo.bare)).split()
        return {"sha": sha, "message": info.get("message", ""), "created": info.get("date"),
                "url": self._api_url("repos", repo.owner, repo.name, "git", "commits", sha),
                "html_url": self._html_url(repo.owner, repo.name, "commit", sha),
                "parents": [{"sha": p, "url": self._api_url("repos", repo.owner, repo.name, "git", "commits", p)}
                            for p in parents]}

    def _file_answer(self, repo: Repo, sha: str, branch: str, path: str | None) -> dict[str, Any]:
        """FileResponse (FileDeleteResponse when *path* is None)."""
        entry = self._entry(repo, sha, path) if path else None
        content = self._contents_json(repo, sha, branch, path, entry, with_content=True) if path and entry else None
        return {"content": content, "commit": self._file_commit_json(repo, sha),
                "verification": {"verified": False, "reason": "gpg.error.not_signed_commit", "signature": "",
                                 "payload": ""}}

    def _lfs_pointer(self, repo: Repo, commit: str, path: str, data: bytes) -> bytes:
        """What an API write stores for *path*: with the LFS server on, a path .gitattributes marks filter=lfs
        gets a pointer in git and its bytes in the LFS store (services/repository/files/update.go modifyFile)."""
        if not self.lfs or not self._lfs_tracked(repo, commit, path):
            return data
        oid = hashlib.sha256(data).hexdigest()
        self.lfs_objects[oid] = data
        return f"version https://git-lfs.github.com/spec/v1\noid sha256:{oid}\nsize {len(data)}\n".encode()

    def _lfs_tracked(self, repo: Repo, commit: str, path: str) -> bool:
        """Whether the root .gitattributes at *commit* gives *path* filter=lfs (a pattern without a slash
        matches the file's name, one with a slash the whole path)."""
        import fnmatch
        found = _git("cat-file", "-p", f"{commit}:.gitattributes", git_dir=repo.bare, check=False)
        if found.returncode != 0:
            return False
        tracked = False
        for line in found.stdout.decode("utf-8", "replace").splitlines():
            pattern, *attrs = line.split()
            if line.strip() and not line.startswith("#") and any(a.startswith("filter=") for a in attrs):
                subject = path if "/" in pattern.strip("/") else path.rsplit("/", 1)[-1]
                if fnmatch.fnmatchcase(subject, pattern.strip("/")):
                    tracked = "filter=lfs" in attrs
        return tracked

    def _h_files_change(self, ctx: _Ctx) -> _Response:
        """ChangeFiles: several create, update, rename and delete operations in one commit."""
        repo = ctx.repo
        assert repo is not None
        form = self._form(ctx)
        listed = self._field(form, "files", list, [])
        if not listed:
            raise self._binding("Files")
        ops = self._file_ops(form, [op if isinstance(op, dict) else {} for op in listed])
        sha, branch = self._change_files(ctx, form, ops, "Update " + ", ".join(op["path"] for op in ops))
        answer = self._file_answer(repo, sha, branch, None)
        answer.pop("content")
        answer["files"] = [None if op["operation"] == "delete" else
                           self._contents_json(repo, sha, branch, op["path"], self._entry(repo, sha, op["path"]),
                                               with_content=True) for op in ops]
        return self._json(201, answer)

    def _h_file_create(self, ctx: _Ctx) -> _Response:
        """CreateFile: one new file committed on branch (or on new_branch, started from branch)."""
        return self._one_file(ctx, "create", 201, "Add")

    def _h_file_update(self, ctx: _Ctx) -> _Response:
        """UpdateFile: one existing file replaced (moved first when from_path names another path)."""
        return self._one_file(ctx, "update", 200, "Update")

    def _h_file_delete(self, ctx: _Ctx) -> _Response:
        """DeleteFile: one file removed."""
        return self._one_file(ctx, "delete", 200, "Delete")

    def _one_file(self, ctx: _Ctx, operation: str, status: int, verb: str) -> _Response:
        repo = ctx.repo
        assert repo is not None
        form = self._form(ctx)
        path = unquote(ctx.params["filepath"])
        if operation != "delete" and not self._has(form, "content"):
            raise self._binding("Content")
        if operation != "create" and not self._has(form, "sha"):
            raise self._binding("SHA")
        op = {"operation": operation, "path": path, "content": form.get("content"), "sha": form.get("sha"),
              "from_path": form.get("from_path") if operation == "update" else None}
        ops = self._file_ops(form, [op])
        sha, branch = self._change_files(ctx, form, ops, f"{verb} {ops[0]['path']}")
        return self._json(status, self._file_answer(repo, sha, branch, None if operation == "delete" else
                                                    ops[0]["path"]))

    def _h_collaborator_check(self, ctx: _Ctx) -> _Response:
        """IsCollaborator: 204 for an explicit collaborator only (org owners are not in that table), else 404."""
        repo = ctx.repo
        assert repo is not None
        login = unquote(ctx.params["collaborator"]).lower()
        if login not in self.users:
            raise self._error(422, f"user does not exist [uid: 0, name: {login}]")
        if login in repo.collaborators:
            return _Response(204, b"", None)
        raise self._not_found()

    def _status_json(self, repo: Repo, sha: str, status: Mapping[str, Any]) -> dict[str, Any]:
        """convert.ToCommitStatus."""
        return {"id": status["id"], "status": status["status"], "target_url": status["target_url"],
                "description": status["description"], "context": status["context"],
                "url": self._api_url("repos", repo.owner, repo.name, "statuses", sha),
                "creator": self._user_json(self.users.get(status["creator"].lower())),
                "created_at": _ts(status["created"]), "updated_at": _ts(status["created"])}

    @staticmethod
    def _latest_statuses(repo: Repo, sha: str) -> list[dict[str, Any]]:
        """models/git/commit_status.go GetLatestCommitStatus: each context's newest status, newest first."""
        latest: dict[str, dict[str, Any]] = {}
        for status in repo.statuses.get(sha, []):
            latest[status["context"]] = status
        return sorted(latest.values(), key=lambda st: st["index"], reverse=True)

    def _combine(self, states: Sequence[str]) -> str:
        """The combined state of *states* as each flavour computes it. Gitea 1.24+:
        modules/commitstatus/commit_status.go CommitStatusStates.Combine (any failure or error is failure; all
        of success, warning, skipped is success; else pending). Forgejo: models/git/commit_status.go
        CalcCommitStatus, the worst by modules/structs/commit_status.go NoBetterThan's priorities (error,
        failure, warning, pending, success; an unknown state never counts); "" with no status."""
        if self.flavour == "gitea":
            if any(st in ("failure", "error") for st in states):
                return "failure"
            good = [st for st in states if st in ("success", "warning", "skipped")]
            return "success" if good and len(good) == len(states) else "pending"
        order = ("error", "failure", "warning", "pending", "success")
        worst = states[0] if states else ""
        for st in states[1:]:
            if st in order and worst in order and order.index(st) <= order.index(worst):
                worst = st
        return worst

    def _required_state(self, repo: Repo, base: str, sha: str) -> str | None:
        """services/pull/commit_status.go GetPullRequestCommitStatusState with MergeRequiredContextsCommitStatus:
        the state of the required contexts (globs) on the head; None when the base requires no status check."""
        if base not in repo.required_checks:
            return None
        latest = self._latest_statuses(repo, sha)
        patterns = repo.required_checks[base]
        if not patterns:
            return self._combine([st["status"] for st in latest]) if latest else "pending"
        matched, every = [], True
        for pattern in patterns:
            found = [st for st in latest if fnmatch.fnmatchcase(st["context"], pattern)]
            matched += [st for st in found if st not in matched]
            every = every and bool(found)
        if not matched:
            return "pending"
        state = self._combine([st["status"] for st in matched])
        return state if every or state in ("failure", "error") else "pending"

    def _h_commit_status(self, ctx: _Ctx) -> _Response:
        """GetCombinedCommitStatusByRef: GetLatestCommitStatus paged by page/limit, and the combined state of that
        page only (the forge never combines the pages it did not return)."""
        repo = ctx.repo
        assert repo is not None
        sha = self._resolve_commit(repo, unquote(ctx.params["ref"]))
        if sha is None:
            raise self._not_found()
        latest = self._latest_statuses(repo, sha)
        items, headers = self._page(ctx, latest, link=False)
        state = self._combine([st["status"] for st in items]) if items else ""
        return self._json(200, {"state": state, "sha": sha, "total_count": len(latest),
                                "statuses": [self._status_json(repo, sha, st) for st in items],
                                "repository": self._repo_json(repo, ctx.user),
                                "commit_url": self._api_url("repos", repo.owner, repo.name, "commits", sha),
                                "url": self._api_url("repos", repo.owner, repo.name, "commits", sha, "status")},
                          headers)

    def _h_commit_statuses(self, ctx: _Ctx) -> _Response:
        """GetCommitStatusesByRef and GetCommitStatuses: every status (not only each context's latest), newest
        first by default, filtered by state, paged with Link and X-Total-Count."""
        repo = ctx.repo
        assert repo is not None
        ref = unquote(ctx.params.get("ref") or ctx.params.get("sha") or "")
        sha = self._resolve_commit(repo, ref) or ref
        kept = list(repo.statuses.get(sha, []))
        if ctx.q("state"):
            kept = [st for st in kept if st["status"] == ctx.q("state")]
        order = {"oldest": ("created", False), "leastindex": ("index", True), "highestindex": ("index", False),
                 "recentupdate": ("created", True), "leastupdate": ("created", False)}
        key, newest = order.get(ctx.q("sort"), ("created", True))
        kept.sort(key=lambda st: (st[key], st["index"]), reverse=newest)
        items, headers = self._page(ctx, kept)
        return self._json(200, [self._status_json(repo, sha, st) for st in items], headers)

    # ================================================================== endpoints: issues

    def _filter_issues(self, ctx: _Ctx, repos: Sequence[Repo], *, search: bool) -> list[tuple[Repo, Issue]]:
        state = ctx.q("state") or "open"
        kind = ctx.q("type")
        query = ctx.q("q").lower()
        found: list[tuple[Repo, Issue]] = []
        label_names = [n for n in ctx.q("labels").split(",") if n]
        milestone_keys = [m for m in ctx.q("milestones").split(",") if m]
        people = {key: self._filter_user(ctx.q(key)) for key in ("created_by", "assigned_by", "mentioned_by")}
        since, before = ctx.q("since"), ctx.q("before")
        for repo in repos:
            # Unknown label names are dropped; when none is known there is no label filter at all.
            label_ids = {l.id for l in repo.labels.values() if l.name in label_names}
            milestone_ids = set()
            for key in milestone_keys:
                match = next((m.id for m in repo.milestones.values() if m.title == key), None)
                if match is None and key.isdigit() and int(key) in repo.milestones:
                    match = int(key)
                if match is not None:
                    milestone_ids.add(match)
            for issue in repo.issues.values():
                if state != "all" and issue.state != state:
                    continue
                if kind == "issues" and issue.pull is not None or kind == "pulls" and issue.pull is None:
                    continue
                if label_ids and not label_ids <= set(issue.labels):
                    continue
                # ListIssues drops milestone names that match nothing: none known is no milestone filter at all
                if milestone_ids and issue.milestone not in milestone_ids:
                    continue
                if query and query not in issue.title.lower() and query not in issue.body.lower():
                    continue
                if query and self._unindexed.get(issue.id, 0.0) > time.monotonic():
                    continue  # not in the search index yet
                if people["created_by"] and issue.user.lower() != people["created_by"]:
                    continue
                if people["assigned_by"] and people["assigned_by"] not in {a.lower() for a in issue.assignees}:
                    continue
                if people["mentioned_by"] and f"@{people['mentioned_by']}" not in issue.body.lower():
                    continue
                if since and (_parse_ts(since) or 0) > issue.updated:
                    continue
                if before and (_parse_ts(before) or 0) < issue.updated:
                    continue
                if search and not self._search_match(ctx, issue):
                    continue
                found.append((repo, issue))
        found.sort(key=lambda pair: (pair[1].created, pair[1].id), reverse=True)
        return found

    def _filter_user(self, login: str) -> str | None:
        if not login:
            return None
        if login.lower() not in self.users:  # ListIssues' getUserIDForFilter: APIErrorNotFound(err)
            raise self._not_found(errors=[f"user redirect does not exist [name: {login.lower()}]"])
        return login.lower()

    def _search_match(self, ctx: _Ctx, issue: Issue) -> bool:
        me = ctx.login.lower() if ctx.login else None
        if ctx.q_bool("created") and (me is None or issue.user.lower() != me):
            return False
        if ctx.q_bool("assigned") and (me is None or me not in {a.lower() for a in issue.assignees}):
            return False
        if ctx.q_bool("mentioned") and (me is None or f"@{me}" not in issue.body.lower()):
            return False
        return True

    def _h_issues_list(self, ctx: _Ctx) -> _Response:
        assert ctx.repo is not None
        found = self._filter_issues(ctx, [ctx.repo], search=False)
        items, headers = self._page(ctx, found)
        return self._json(200, [self._issue_json(r, i, ctx.user) for r, i in items], headers)

    def _h_issues_search(self, ctx: _Ctx) -> _Response:
        repos = [r for r in self._visible_repos(ctx.user)
                 if not ctx.q("owner") or r.owner.lower() == ctx.q("owner").lower()]
        found = self._filter_issues(ctx, repos, search=True)
        items, headers = self._page(ctx, found)
        return self._json(200, [self._issue_json(r, i, ctx.user) for r, i in items], headers)

    def _h_issue_get(self, ctx: _Ctx) -> _Response:
        assert ctx.repo is not None
        return self._json(200, self._issue_json(ctx.repo, self._issue(ctx), ctx.user))

    def _h_issue_create(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None and ctx.user is not None
        form = self._form(ctx)
        title = self._field(form, "title", str, "")
        if not title:
            raise self._binding("Title")
        body = self._field(form, "body", str, "")
        writer = ctx.access >= 2
        assignees = self._assignees(form) if writer else []
        milestone = self._field(form, "milestone", int, 0) if writer else 0
        if milestone and milestone not in repo.milestones:
            raise self._not_found()
        labels = self._field(form, "labels", "ids", []) if writer else []
        issue = self._new_issue(repo, title, body, ctx.user.login)
        issue.labels = self._label_ids(repo, labels)
        issue.assignees = assignees
        issue.milestone = milestone or None
        issue.ref = self._field(form, "ref", str, "")
        due = self._field(form, "due_date", str, "")
        issue.due = _parse_ts(due) if due and writer else None
        if self._field(form, "closed", bool, False):
            issue.state, issue.closed = "closed", issue.created
        self._notify(repo, issue, ctx.user.login)
        return self._json(201, self._issue_json(repo, issue, ctx.user))

    def _assignees(self, form: Mapping[str, Any]) -> list[str]:
        names = list(self._field(form, "assignees", list, []) or [])
        single = self._field(form, "assignee", str, "")
        if single:
            names.append(single)
        result = []
        for name in names:
            user = self.users.get(str(name).lower())
            if user is None or user.is_org:
                raise self._error(422, f"Assignee does not exist: [name: {name}]")
            if user.login not in result:
                result.append(user.login)
        return result

    def _h_issue_edit(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None and ctx.user is not None
        issue = self._issue(ctx)
        form = self._form(ctx)
        self._edit_issue(ctx, issue, form)
        return self._json(201, self._issue_json(repo, issue, ctx.user))

    def _edit_issue(self, ctx: _Ctx, issue: Issue, form: Mapping[str, Any], *, allow_labels: bool = False) -> None:
        """EditIssue / EditPullRequest: poster or writer; fields a non-writer may not set are ignored."""
        repo = ctx.repo
        assert repo is not None and ctx.user is not None
        writer = ctx.access >= 2
        if not writer and issue.user.lower() != ctx.user.login.lower():
            raise self._forbidden_empty()
        before = json.dumps(self._issue_json(repo, issue, None), sort_keys=True)
        title = self._field(form, "title", str, "")
        if title:
            issue.title = title
        body = self._field(form, "body", str, None)
        if body is not None:
            issue.body = body
        ref = self._field(form, "ref", str, None)
        if ref is not None:
            issue.ref = ref
        if writer:
            milestone = self._field(form, "milestone", int, None)
            if milestone is not None:
                if milestone and milestone not in repo.milestones:
                    raise self._not_found()
                issue.milestone = milestone or None
            if self._has(form, "assignees") or self._has(form, "assignee"):
                issue.assignees = self._assignees(form)
            due = self._field(form, "due_date", str, "")
            if due:
                issue.due = _parse_ts(due)
            if self._field(form, "unset_due_date", bool, False):
                issue.due = None
            if allow_labels and self._has(form, "labels"):
                issue.labels = self._label_ids(repo, self._field(form, "labels", "ids", []))
        state = self._field(form, "state", str, None)
        if state is not None:
            if state not in ("open", "closed"):
                raise self._error(412, f"unknown state: {state}")
            if issue.pull is not None and issue.pull.merged:
                raise self._error(412, "cannot change state of this pull request, it was already merged")
            self._set_state(repo, issue, state, ctx.user.login)
        if json.dumps(self._issue_json(repo, issue, None), sort_keys=True) != before:
            issue.updated = self._tick()

    def _set_state(self, repo: Repo, issue: Issue, state: str, login: str) -> None:
        if state == issue.state:
            return
        if state == "open" and issue.pull is not None:
            if self._open_pull_for(repo, self._head_repo(issue), issue.pull.head_branch, issue.pull.base_branch):
                raise self._error(409, "A pull request with the same head and base branches is already open.")
        issue.state = state
        issue.closed = self._tick() if state == "closed" else None
        self._event(issue, "close" if state == "closed" else "reopen", login)

    def _h_issue_delete(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None
        issue = self._issue(ctx)
        for comment_id in issue.comment_ids:
            self._comments.pop(comment_id, None)
        del repo.issues[issue.number]
        return _Response(204, b"", None)

    # ------------------------------------------------------------------ comments

    def _h_comments_list(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None
        try:
            issue = self._issue(ctx)
        except _Reply:
            if self.flavour == "gitea":
                # Gitea 1.25 does not check IsErrIssueNotExist here: the caller gets a 500.
                raise _Reply(self._json(500, {"message": "", "url": self._swagger_url()})) from None
            raise
        comments = [self._comments[c] for c in issue.comment_ids]
        since, before = ctx.q("since"), ctx.q("before")
        if since:
            comments = [c for c in comments if c.updated >= (_parse_ts(since) or 0)]
        if before:
            comments = [c for c in comments if c.updated <= (_parse_ts(before) or 0)]
        # Not paginated at all: every comment, with only X-Total-Count.
        return self._json(200, [self._comment_json(repo, c) for c in comments],
                          {"X-Total-Count": str(len(comments)), "Access-Control-Expose-Headers": "X-Total-Count"})

    def _h_repo_comments(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None
        comments = sorted((c for c in self._comments.values() if c.repo_id == repo.id), key=lambda c: c.id)
        items, headers = self._page(ctx, comments)
        return self._json(200, [self._comment_json(repo, c) for c in items], headers)

    def _h_comment_create(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None and ctx.user is not None
        form = self._form(ctx)
        issue = self._issue(ctx)
        body = self._field(form, "body", str, "")
        if not body:
            raise self._binding("Body")
        if issue.locked and ctx.access < 2:
            raise self._error(403, "You cannot comment on a locked issue.")
        comment = self._new_comment(repo, issue, ctx.user.login, body)
        self._notify(repo, issue, ctx.user.login)
        return self._json(201, self._comment_json(repo, comment))

    def _comment(self, ctx: _Ctx) -> Comment:
        repo = ctx.repo
        assert repo is not None
        try:
            comment = self._comments.get(int(ctx.params["id"]))
        except ValueError:
            comment = None
        if comment is None or comment.repo_id != repo.id:
            raise self._not_found()
        return comment

    def _h_comment_get(self, ctx: _Ctx) -> _Response:
        assert ctx.repo is not None
        return self._json(200, self._comment_json(ctx.repo, self._comment(ctx)))

    def _h_comment_edit(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None and ctx.user is not None
        form = self._form(ctx)
        body = self._field(form, "body", str, "")
        if not body:
            raise self._binding("Body")
        comment = self._comment(ctx)
        if comment.user.lower() != ctx.user.login.lower() and ctx.access < 2:
            raise self._forbidden_empty()
        if body != comment.body:
            comment.body = body
            comment.updated = self._tick()
        return self._json(200, self._comment_json(repo, comment))

    def _h_comment_delete(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None and ctx.user is not None
        comment = self._comment(ctx)
        if comment.user.lower() != ctx.user.login.lower() and ctx.access < 2:
            raise self._forbidden_empty()
        del self._comments[comment.id]
        issue = repo.issues.get(comment.issue_number)
        if issue is not None and comment.id in issue.comment_ids:
            issue.comment_ids.remove(comment.id)
        return _Response(204, b"", None)

    def _h_timeline(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None
        issue = self._issue(ctx)
        html = self._issue_html(repo, issue)
        entries = []
        for comment_id in issue.comment_ids:
            c = self._comments[comment_id]
            entries.append((c.created, c.id, {**self._comment_json(repo, c), "type": "comment"}))
        for event in issue.events:
            entries.append((event["time"], event["id"], {
                "id": event["id"], "type": event["type"], "body": "", "user": self._login_json(event["user"]),
                "created_at": _ts(event["time"]), "updated_at": _ts(event["time"]),
                "html_url": f"{html}#issuecomment-{event['id']}",
                "issue_url": "" if issue.pull else html, "pull_request_url": html if issue.pull else "",
                **({"ref_commit_sha": event["sha"]} if "sha" in event else {})}))
        entries.sort(key=lambda e: (e[0], e[1]))
        items, headers = self._page(ctx, [e[2] for e in entries])
        return self._json(200, items, headers)

    # ------------------------------------------------------------------ issue labels and locks

    def _labels_from_body(self, ctx: _Ctx, form: Mapping[str, Any]) -> list[int]:
        """IssueLabelsOption: all ids or all names; unknown ones are silently ignored."""
        repo = ctx.repo
        assert repo is not None
        raw = self._field(form, "labels", list, []) or []
        ids: list[int] = []
        names: list[str] = []
        for item in raw:
            if isinstance(item, bool) or not isinstance(item, (int, float, str)):
                raise self._error(400, "a label must be an integer or a string")
            if isinstance(item, str):
                names.append(item)
            else:
                ids.append(int(item))
        if ids and names:
            raise self._error(400, "labels should be an array of strings or integers")
        return self._label_ids(repo, names or ids)

    def _apply_exclusive(self, repo: Repo, current: list[int], added: list[int]) -> list[int]:
        """Adding an exclusive scoped label ("kind/bug") drops the other labels of that scope."""
        result = list(current)
        for label_id in added:
            label = repo.labels[label_id]
            if label.exclusive and "/" in label.name:
                scope = label.name.rsplit("/", 1)[0]
                result = [i for i in result if not (repo.labels[i].exclusive and
                                                    repo.labels[i].name.rsplit("/", 1)[0] == scope
                                                    and "/" in repo.labels[i].name)]
            if label_id not in result:
                result.append(label_id)
        return sorted(result)

    def _h_issue_labels(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None
        issue = self._issue(ctx)
        return self._json(200, [self._label_json(repo, repo.labels[i]) for i in issue.labels])

    def _change_labels(self, ctx: _Ctx, replace: bool) -> _Response:
        repo = ctx.repo
        assert repo is not None
        form = self._form(ctx)
        issue = self._issue(ctx)
        ids = self._labels_from_body(ctx, form)
        if ctx.access < 2:
            raise self._forbidden_empty()
        issue.labels = self._apply_exclusive(repo, [] if replace else issue.labels, ids)
        issue.updated = self._tick()
        return self._json(200, [self._label_json(repo, repo.labels[i]) for i in issue.labels])

    def _h_issue_labels_add(self, ctx: _Ctx) -> _Response:
        return self._change_labels(ctx, replace=False)

    def _h_issue_labels_replace(self, ctx: _Ctx) -> _Response:
        return self._change_labels(ctx, replace=True)

    def _h_issue_labels_clear(self, ctx: _Ctx) -> _Response:
        issue = self._issue(ctx)
        if ctx.access < 2:
            raise self._forbidden_empty()
        if issue.labels:
            issue.labels = []
            issue.updated = self._tick()
        return _Response(204, b"", None)

    def _h_issue_label_remove(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None
        issue = self._issue(ctx)
        if ctx.access < 2:
            raise self._forbidden_empty()
        key = unquote(ctx.params["id"])
        label_id: int | None = None
        if key.isdigit() and int(key) in repo.labels:
            label_id = int(key)
        elif self.flavour == "forgejo":  # Forgejo also takes a label name here
            label_id = next((l.id for l in repo.labels.values() if l.name == key), None)
        if label_id is None:
            detail = f"label_id: {key}" if key.isdigit() else f"name: {key}"
            raise self._error(422, f"label does not exist [{detail}]")
        if label_id in issue.labels:
            issue.labels.remove(label_id)
            issue.updated = self._tick()
        return _Response(204, b"", None)

    def _h_issue_lock(self, ctx: _Ctx) -> _Response:
        assert ctx.user is not None
        self._form(ctx)
        issue = self._issue(ctx)
        if not issue.locked:
            issue.locked = True
            issue.updated = self._tick()
            self._event(issue, "lock", ctx.user.login)
        return _Response(204, b"", None)

    def _h_issue_unlock(self, ctx: _Ctx) -> _Response:
        assert ctx.user is not None
        issue = self._issue(ctx)
        if issue.locked:
            issue.locked = False
            issue.updated = self._tick()
            self._event(issue, "unlock", ctx.user.login)
        return _Response(204, b"", None)

    # ================================================================== endpoints: labels and milestones

    def _h_labels_list(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None
        labels = sorted(repo.labels.values(), key=lambda l: (l.name, l.id))
        items, headers = self._page(ctx, labels, link=False)  # ListLabels sets no Link header
        return self._json(200, [self._label_json(repo, l) for l in items], headers)

    def _label(self, ctx: _Ctx) -> Label:
        repo = ctx.repo
        assert repo is not None
        key = ctx.params["id"]
        label = repo.labels.get(int(key)) if key.isdigit() else None
        if label is None:
            raise self._not_found()
        return label

    def _h_label_get(self, ctx: _Ctx) -> _Response:
        assert ctx.repo is not None
        return self._json(200, self._label_json(ctx.repo, self._label(ctx)))

    def _h_label_create(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None
        form = self._form(ctx)
        name = self._field(form, "name", str, "")
        if not name:
            raise self._binding("Name")
        color = self._field(form, "color", str, "")
        if not color:
            raise self._binding("Color")
        normalised = _normalise_color(color)
        if normalised is None:
            raise self._error(422, "bad color code")
        label = Label(self._next("label"), name, normalised, self._field(form, "description", str, ""),
                      self._field(form, "exclusive", bool, False), self._field(form, "is_archived", bool, False))
        repo.labels[label.id] = label
        return self._json(201, self._label_json(repo, label))

    def _h_label_edit(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None
        form = self._form(ctx)
        label = self._label(ctx)
        name = self._field(form, "name", str, None)
        if name:
            label.name = name
        color = self._field(form, "color", str, None)
        if color is not None:
            normalised = _normalise_color(color)
            if normalised is None:
                raise self._error(422, "bad color code")
            label.color = normalised
        for key in ("description",):
            value = self._field(form, key, str, None)
            if value is not None:
                label.description = value
        for key in ("exclusive", "is_archived"):
            value = self._field(form, key, bool, None)
            if value is not None:
                setattr(label, key, value)
        return self._json(200, self._label_json(repo, label))

    def _h_label_delete(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None
        label = self._label(ctx)
        del repo.labels[label.id]
        for issue in repo.issues.values():
            if label.id in issue.labels:
                issue.labels.remove(label.id)
        return _Response(204, b"", None)

    def _h_milestones_list(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None
        state = ctx.q("state") or "open"
        name = ctx.q("name").upper()
        found = [m for m in repo.milestones.values()
                 if (state == "all" or m.state == state) and (not name or name in m.title.upper())]
        items, headers = self._page(ctx, sorted(found, key=lambda m: m.id))
        return self._json(200, [self._milestone_json(repo, m) for m in items], headers)

    def _milestone(self, ctx: _Ctx) -> Milestone:
        repo = ctx.repo
        assert repo is not None
        key = unquote(ctx.params["id"])
        if key.isdigit() and int(key) in repo.milestones:  # by id first, then by name
            return repo.milestones[int(key)]
        found = next((m for m in repo.milestones.values() if m.title == key), None)
        if found is None:
            raise self._not_found()
        return found

    def _h_milestone_get(self, ctx: _Ctx) -> _Response:
        assert ctx.repo is not None
        return self._json(200, self._milestone_json(ctx.repo, self._milestone(ctx)))

    def _h_milestone_create(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None
        form = self._form(ctx)
        now = self._tick()
        state = "closed" if self._field(form, "state", str, "") == "closed" else "open"
        due = self._field(form, "due_on", str, "")
        milestone = Milestone(self._next("milestone"), self._field(form, "title", str, ""),
                              self._field(form, "description", str, ""), state, _parse_ts(due) if due else None,
                              now, now, now if state == "closed" else None)
        repo.milestones[milestone.id] = milestone
        return self._json(201, self._milestone_json(repo, milestone))

    def _h_milestone_edit(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None
        form = self._form(ctx)
        milestone = self._milestone(ctx)
        title = self._field(form, "title", str, "")
        if title:
            milestone.title = title
        description = self._field(form, "description", str, None)
        if description is not None:
            milestone.description = description
        due = self._field(form, "due_on", str, "")
        if due:
            milestone.due_on = _parse_ts(due)
        state = self._field(form, "state", str, None)
        if state is not None:
            milestone.state = "closed" if state == "closed" else "open"
            milestone.closed = self._clock if milestone.state == "closed" else None
        milestone.updated = self._tick()
        return self._json(200, self._milestone_json(repo, milestone))

    def _h_milestone_delete(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None
        milestone = self._milestone(ctx)
        del repo.milestones[milestone.id]
        for issue in repo.issues.values():
            if issue.milestone == milestone.id:
                issue.milestone = None
        return _Response(204, b"", None)

    # ================================================================== endpoints: pull requests

    def _open_pull_for(self, repo: Repo, head_repo: Repo, head: str, base: str) -> Issue | None:
        return next((i for i in repo.issues.values() if i.pull is not None and i.state == "open"
                     and i.pull.head_repo_id == head_repo.id and i.pull.head_branch == head
                     and i.pull.base_branch == base), None)

    def _parse_head(self, repo: Repo, head: str) -> tuple[Repo, str]:
        """``branch``, ``owner:branch`` or ``owner/repo:branch`` -> (head repository, branch)."""
        if ":" not in head:
            return repo, head
        who, branch = head.split(":", 1)
        if "/" in who:
            owner, name = who.split("/", 1)
            repo_id = self._by_name.get((owner.lower(), name.lower()))
            if repo_id is None:
                raise self._not_found()
            return self._repos[repo_id], branch
        if who.lower() == repo.owner.lower():
            return repo, branch
        if who.lower() not in self.users:
            raise self._not_found("GetUserByName", [f"user redirect does not exist [name: {who.lower()}]"])
        fork = next((r for r in self._repos.values() if r.owner.lower() == who.lower()
                     and (r.parent_id == repo.id or repo.parent_id == r.id)), None)
        if fork is None:
            raise self._not_found()
        return fork, branch

    def _h_pulls_list(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None
        state = ctx.q("state") or "open"
        labels = {int(v) for v in ctx.query_all.get("labels", []) if v.isdigit()}
        milestone = ctx.q_int("milestone", 0)
        # poster= from Gitea 1.23 (older ones ignore it), base_branch= from Gitea 1.24, never in Forgejo
        poster = ctx.q("poster").lower() if self.since("1.23", "11") else ""
        if poster and poster not in self.users:  # ListPullRequests: an unknown poster is 400
            raise self._error(400, f"user redirect does not exist [name: {poster}]")
        base = ctx.q("base_branch") if self.since("1.24", None) else ""
        found = [i for i in repo.issues.values() if i.pull is not None
                 and (state == "all" or i.state == state)
                 and labels <= set(i.labels)
                 and (not milestone or i.milestone == milestone)
                 and (not poster or i.user.lower() == poster)
                 and (not base or i.pull.base_branch == base)]
        found.sort(key=lambda i: i.created, reverse=True)
        items, headers = self._page(ctx, found)
        return self._json(200, [self._pull_json(repo, i, ctx.user) for i in items], headers)

    def _h_pull_get(self, ctx: _Ctx) -> _Response:
        assert ctx.repo is not None
        return self._json(200, self._pull_json(ctx.repo, self._pull_issue(ctx), ctx.user))

    def _h_pull_by_branches(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None
        base = unquote(ctx.params["base"])
        head_repo, head = self._parse_head(repo, unquote(ctx.params["head"]))
        found = [i for i in repo.issues.values() if i.pull is not None and i.pull.base_branch == base
                 and i.pull.head_branch == head and i.pull.head_repo_id == head_repo.id]
        if not found:
            raise self._not_found()
        return self._json(200, self._pull_json(repo, max(found, key=lambda i: i.number), ctx.user))

    def _h_pull_create(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None and ctx.user is not None
        form = self._form(ctx)
        head, base, title = (self._field(form, key, str, "") for key in ("head", "base", "title"))
        for key, value in (("Head", head), ("Base", base), ("Title", title)):
            if not value:
                raise self._binding(key)
        head_repo, head_branch = self._parse_head(repo, head)
        if self._ref_sha(repo, f"refs/heads/{base}") is None:
            raise self._not_found()
        if self._ref_sha(head_repo, f"refs/heads/{head_branch}") is None:
            raise self._not_found()
        if head_repo.id == repo.id and head_branch == base:
            raise self._error(422, "Invalid PullRequest: There are no changes between the head and the base")
        existing = self._open_pull_for(repo, head_repo, head_branch, base)
        if existing is not None:
            assert existing.pull is not None
            raise self._error(409, (
                f"pull request already exists for these targets [id: {existing.pull.id}, "
                f"issue_id: {existing.number}, head_repo_id: {head_repo.id}, base_repo_id: {repo.id}, "
                f"head_branch: {head_branch}, base_branch: {base}]"))
        writer = ctx.access >= 2
        assignees = self._assignees(form) if writer else []
        milestone = self._field(form, "milestone", int, 0) if writer else 0
        if milestone and milestone not in repo.milestones:
            raise self._not_found()
        issue = self._new_pull(repo, head_repo, head_branch, base, title, self._field(form, "body", str, ""),
                               ctx.user.login)
        issue.assignees, issue.milestone = assignees, milestone or None
        if writer:
            issue.labels = self._label_ids(repo, self._field(form, "labels", "ids", []))
        due = self._field(form, "due_date", str, "")
        issue.due = _parse_ts(due) if due and writer else None
        self._notify(repo, issue, ctx.user.login)
        return self._json(201, self._pull_json(repo, issue, ctx.user, poll=False))

    def _h_pull_edit(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None and ctx.user is not None
        issue = self._pull_issue(ctx)
        pull = issue.pull
        assert pull is not None
        form = self._form(ctx)
        base = self._field(form, "base", str, "")
        if base and base != pull.base_branch:
            if ctx.access < 2 and issue.user.lower() != ctx.user.login.lower():
                raise self._forbidden_empty()
            if self._ref_sha(repo, f"refs/heads/{base}") is None:
                raise self._error(404, f"new base '{base}' not exist")
            if self._open_pull_for(repo, self._head_repo(issue), pull.head_branch, base):
                raise self._error(409, "A pull request with the same head and base branches is already open.")
            pull.base_branch = base
        maintainer = self._field(form, "allow_maintainer_edit", bool, None)
        if maintainer is not None and issue.user.lower() == ctx.user.login.lower():
            pull.allow_maintainer_edit = maintainer
        self._edit_issue(ctx, issue, form, allow_labels=True)
        return self._json(201, self._pull_json(repo, issue, ctx.user, poll=False))

    def _h_pull_is_merged(self, ctx: _Ctx) -> _Response:
        issue = self._pull_issue(ctx)
        assert issue.pull is not None
        if issue.pull.merged:
            return _Response(204, b"", None)
        raise self._not_found()

    def _h_pull_diff(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None
        kind = ctx.params["kind"]
        if kind not in ("diff", "patch"):
            return _plain_not_found()
        issue = self._pull_issue(ctx)
        pull = issue.pull
        assert pull is not None
        self._refresh_pull(repo, issue, poll=False)
        _, head = self._pull_shas(repo, issue)
        binary = ["--binary"] if ctx.q_bool("binary") else []
        if kind == "diff":
            text = _git("diff", "-M", *binary, pull.merge_base, head, git_dir=repo.bare).stdout
        else:
            text = _git("format-patch", "--stdout", "--no-signature", *binary, f"{pull.merge_base}..{head}",
                        git_dir=repo.bare).stdout
        return _Response(200, text, "text/plain; charset=utf-8")

    def _h_pull_merge(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None and ctx.user is not None
        form = self._form(ctx)  # Gitea binds (and rejects a bad "Do") before loading the pull request
        style = self._field(form, "Do", str, "")
        if not style:
            raise self._binding("Do")
        if style not in _MERGE_STYLES:
            raise self._binding("Do", "In")
        issue = self._pull_issue(ctx)
        pull = issue.pull
        assert pull is not None
        self._refresh_pull(repo, issue, poll=False)
        if pull.merged:
            raise self._error(405, "The PR is already merged")
        if issue.state == "closed":
            raise self._not_found()
        if ctx.access < 2:
            raise self._error(405, "User not allowed to merge PR")
        if style != "manually-merged":
            if _is_wip(issue.title):
                raise self._error(405, "Work in progress PRs cannot be merged")
            if pull.status != "mergeable":
                raise self._error(405, "Please try again later")
        if not repo.settings[_STYLE_SETTING[style]]:
            raise self._error(405, f"{style} is not allowed an allowed merge style for this repository")
        _, head_sha = self._pull_shas(repo, issue)
        required = self._required_state(repo, pull.base_branch, head_sha)
        if self._field(form, "merge_when_checks_succeed", bool, False) and style != "manually-merged":
            return self._schedule_merge(ctx, repo, issue, form, style, required)
        if required not in (None, "success") and style != "manually-merged":
            # services/pull/merge.go CheckPullBranchProtections: ErrDisallowedToMerge, answered 405 by the API
            raise self._error(405, "not allowed to merge [reason: Not all required status checks successful]")
        if style == "manually-merged":
            commit = self._field(form, "MergeCommitID", str, "")
            if not re.fullmatch(r"[0-9a-f]{40}", commit) or _git(
                    "merge-base", "--is-ancestor", commit, f"refs/heads/{pull.base_branch}",
                    git_dir=repo.bare, check=False).returncode != 0:
                return self._json(409, {})  # errors.New("Wrong commit ID") serialised by ctx.JSON
            self._mark_merged(repo, issue, commit, ctx.user.login)
            return _Response(200, b"", None)
        expected = self._field(form, "head_commit_id", str, "")
        if expected and expected != head_sha:
            raise self._error(409, "head out of date")
        message = self._field(form, "MergeTitleField", str, "").strip() or self._default_merge_message(
            repo, issue, style)
        extra = self._field(form, "MergeMessageField", str, "").strip()
        if extra:
            message += "\n\n" + extra
        merged_sha = self._git_merge(repo, issue, style, message, ctx.user.login)
        self._mark_merged(repo, issue, merged_sha, ctx.user.login)
        return self._after_merge_delete(ctx, repo, issue, form) or _Response(200, b"", None)

    def _schedule_merge(self, ctx: _Ctx, repo: Repo, issue: Issue, form: Mapping[str, Any], style: str,
                        required: str | None) -> _Response:
        """merge_when_checks_succeed (routers/api/v1/repo/pull.go MergePullRequest, services/automerge
        ScheduleAutoMerge): 409 when one is scheduled already; Forgejo merges at once (200) when the head already
        passes; otherwise 201, and the forge merges the head as it is whenever its checks pass, at once where the
        base requires no status check (handlePullRequestAutoMerge's IsPullCommitStatusPass)."""
        pull = issue.pull
        assert pull is not None and ctx.user is not None
        if pull.auto_merge is not None:
            raise self._error(409, f"PR is already scheduled to auto merge [pull_id: {pull.id}]")
        message = self._field(form, "MergeTitleField", str, "").strip() or self._default_merge_message(
            repo, issue, style)
        delete = bool(self._field(form, "delete_branch_after_merge", bool, False))
        if self.flavour == "forgejo" and required in (None, "success") and self._head_state(repo, issue) == \
                "success":
            self._mark_merged(repo, issue, self._git_merge(repo, issue, style, message, ctx.user.login),
                              ctx.user.login)
            return _Response(200, b"", None)
        pull.auto_merge = (ctx.user.login, style, message, delete)
        self._event(issue, "pull_scheduled_merge", ctx.user.login)
        if self.flavour == "gitea":
            self._auto_merge(repo, issue)
        return _Response(201, b"", None)

    def _head_state(self, repo: Repo, issue: Issue) -> str:
        _, head_sha = self._pull_shas(repo, issue)
        latest = self._latest_statuses(repo, head_sha)
        return self._combine([st["status"] for st in latest]) if latest else ""

    def _auto_merge(self, repo: Repo, issue: Issue) -> None:
        """handlePullRequestAutoMerge: merge the head as it is now when the base's required checks pass."""
        pull = issue.pull
        assert pull is not None
        if pull.auto_merge is None or pull.merged or issue.state != "open":
            return
        self._refresh_pull(repo, issue, poll=False)
        if pull.status == "checking":
            self._finish_check(repo, issue)
        _, head_sha = self._pull_shas(repo, issue)
        if self._required_state(repo, pull.base_branch, head_sha) not in (None, "success") \
                or pull.status != "mergeable":
            return
        login, style, message, delete = pull.auto_merge
        pull.auto_merge = None
        self._mark_merged(repo, issue, self._git_merge(repo, issue, style, message, login), login)
        if delete and pull.head_branch != self._head_repo(issue).default_branch:
            _git("update-ref", "-d", f"refs/heads/{pull.head_branch}", git_dir=self._head_repo(issue).bare,
                 check=False)

    def _auto_merge_scan(self, repo: Repo, sha: str) -> None:
        """A new commit status: the pull requests scheduled to merge whose head is *sha* are looked at again."""
        for issue in list(repo.issues.values()):
            if issue.pull is not None and issue.pull.auto_merge is not None and \
                    self._pull_shas(repo, issue)[1] == sha:
                self._auto_merge(repo, issue)

    def _h_pull_merge_cancel(self, ctx: _Ctx) -> _Response:
        """CancelScheduledAutoMerge: 404 when none is scheduled; only its scheduler or a repo admin may (403)."""
        repo = ctx.repo
        assert repo is not None and ctx.user is not None
        issue = self._pull_issue(ctx)
        pull = issue.pull
        assert pull is not None
        if pull.auto_merge is None:
            raise self._not_found()
        if pull.auto_merge[0].lower() != ctx.user.login.lower() and ctx.access < 3:
            raise self._error(403, "user has no permission to cancel the scheduled auto merge")
        pull.auto_merge = None
        self._event(issue, "pull_cancel_scheduled_merge", ctx.user.login)
        return _Response(204, b"", None)

    def _default_merge_message(self, repo: Repo, issue: Issue, style: str) -> str:
        pull = issue.pull
        assert pull is not None
        head_repo = self._head_repo(issue)
        target = pull.head_branch if head_repo.id == repo.id else f"{head_repo.full_name}:{pull.head_branch}"
        if style == "squash":
            return f"{issue.title} (#{issue.number})"
        return f"Merge pull request '{issue.title}' (#{issue.number}) from {target} into {pull.base_branch}"

    def _mark_merged(self, repo: Repo, issue: Issue, sha: str, login: str) -> None:
        pull = issue.pull
        assert pull is not None
        now = self._tick()
        pull.merged, pull.merged_at, pull.merged_by, pull.merge_commit_sha = True, now, login, sha
        issue.state, issue.closed, issue.updated = "closed", now, now
        self._event(issue, "merge_pull", login, sha=sha)
        repo.updated = now

    def _git_merge(self, repo: Repo, issue: Issue, style: str, message: str, login: str) -> str:
        """Merge with real git in a throw-away worktree of the bare repo; returns the new base tip."""
        pull = issue.pull
        assert pull is not None
        base_sha, head_sha = self._pull_shas(repo, issue)
        env = self._identity_env(login)
        tree = self._work / f"merge-{uuid.uuid4().hex}"
        _git("worktree", "add", "-q", "--detach", str(tree), base_sha, git_dir=repo.bare)

        def run(*args: str, check: bool = True, extra: Mapping[str, str] | None = None
                ) -> subprocess.CompletedProcess[bytes]:
            return _git(*args, cwd=tree, env={**env, **(extra or {})}, check=check)

        try:
            if style in ("merge", "rebase-merge"):
                target = self._rebase(run, style, head_sha, base_sha) if style == "rebase-merge" else head_sha
                if style == "rebase-merge":
                    run("checkout", "-q", "--detach", base_sha)
                self._merge_step(run, tree, style, "merge", "--no-ff", "--no-commit", target)
                run("commit", "-q", "--no-verify", "-m", message)
            elif style == "squash":
                self._merge_step(run, tree, style, "merge", "--squash", head_sha)
                poster = self._identity_env(issue.user)
                run("commit", "-q", "--no-verify", "--allow-empty", "-m", message,
                    extra={"GIT_AUTHOR_NAME": poster["GIT_AUTHOR_NAME"],
                           "GIT_AUTHOR_EMAIL": poster["GIT_AUTHOR_EMAIL"]})
            elif style == "rebase":
                self._rebase(run, style, head_sha, base_sha)
            elif style == "fast-forward-only":
                self._merge_step(run, tree, style, "merge", "--ff-only", head_sha)
            new_sha = _out(run("rev-parse", "HEAD"))
        finally:
            _git("worktree", "remove", "--force", str(tree), git_dir=repo.bare, check=False)
            shutil.rmtree(tree, ignore_errors=True)
            _git("worktree", "prune", git_dir=repo.bare, check=False)
        moved = _git("update-ref", f"refs/heads/{pull.base_branch}", new_sha, base_sha, git_dir=repo.bare,
                     check=False)
        if moved.returncode != 0:
            raise self._error(409, "merge push out of date")
        return new_sha

    def _merge_step(self, run: Callable[..., subprocess.CompletedProcess[bytes]], tree: Path, style: str,
                    *args: str) -> None:
        """Run one git merge; a failure becomes the 409 Go-struct body Gitea serialises (no "message" key)."""
        result = run(*args, check=False)
        if result.returncode == 0:
            return
        stdout = result.stdout.decode("utf-8", "replace")
        stderr = result.stderr.decode("utf-8", "replace")
        git_dir = Path(_out(run("rev-parse", "--git-dir")))
        git_dir = git_dir if git_dir.is_absolute() else tree / git_dir
        conflicted = (git_dir / "MERGE_HEAD").exists() or "CONFLICT" in stdout
        run("merge", "--abort", check=False)
        run("reset", "-q", "--hard", check=False)
        if conflicted:
            raise _Reply(self._json(409, {"Style": style, "StdOut": stdout, "StdErr": stderr, "Err": {}}))
        if "unrelated histories" in stderr:
            raise _Reply(self._json(409, {"Style": style, "StdOut": stdout, "StdErr": stderr, "Err": {}}))
        if style == "fast-forward-only":
            raise _Reply(self._json(409, {"StdOut": stdout, "StdErr": stderr, "Err": {}}))
        raise RuntimeError(f"git {' '.join(args)} failed: {stderr}")

    def _rebase(self, run: Callable[..., subprocess.CompletedProcess[bytes]], style: str, head_sha: str,
                base_sha: str) -> str:
        """Rebase the head commits onto the base; a conflict is Gitea's ErrRebaseConflicts as a 409."""
        run("checkout", "-q", "--detach", head_sha)
        result = run("rebase", "-q", base_sha, check=False)
        if result.returncode != 0:
            commit = _out(run("rev-parse", "REBASE_HEAD", check=False))
            run("rebase", "--abort", check=False)
            raise _Reply(self._json(409, {
                "Style": style, "CommitSHA": commit, "StdOut": result.stdout.decode("utf-8", "replace"),
                "StdErr": result.stderr.decode("utf-8", "replace"), "Err": {}}))
        return _out(run("rev-parse", "HEAD"))

    def _after_merge_delete(self, ctx: _Ctx, repo: Repo, issue: Issue, form: Mapping[str, Any]) -> _Response | None:
        """delete_branch_after_merge: Gitea falls back to the repo default and ignores failures;
        Forgejo takes a plain bool and answers 403 when the branch may not be deleted."""
        pull = issue.pull
        assert pull is not None
        wanted = self._field(form, "delete_branch_after_merge", bool, None)
        if wanted is None:
            wanted = repo.settings["default_delete_branch_after_merge"] if self.flavour == "gitea" else False
        if not wanted:
            return None
        head_repo = self._head_repo(issue)
        in_use = any(
            other is not issue and other.pull is not None and other.state == "open"
            and ((other.pull.head_repo_id == head_repo.id and other.pull.head_branch == pull.head_branch)
                 or (r.id == head_repo.id and other.pull.base_branch == pull.head_branch))
            for r in self._repos.values() for other in r.issues.values())
        if in_use:
            return None
        problem = None
        if pull.head_branch == head_repo.default_branch:
            problem = "can not delete default branch"
        elif self._access(head_repo, ctx.user) < 2:
            problem = "user should have a permission to write to a repo"
        if problem:
            return self._json(403, {"message": problem, "url": self._swagger_url()}) \
                if self.flavour == "forgejo" else None
        sha = self._ref_sha(head_repo, f"refs/heads/{pull.head_branch}")
        if sha is not None:
            _git("update-ref", "-d", f"refs/heads/{pull.head_branch}", sha, git_dir=head_repo.bare)
        elif self.flavour == "forgejo":
            return self._json(404, {"message": _FORGEJO_NOT_FOUND, "url": self._swagger_url(), "errors": []})
        return None

    def _h_pull_update(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None and ctx.user is not None
        issue = self._pull_issue(ctx)
        pull = issue.pull
        assert pull is not None
        style = ctx.q("style") or "merge"
        if pull.merged or issue.state == "closed":
            raise self._error(422, "pull request is closed or merged")
        head_repo = self._head_repo(issue)
        if self._access(head_repo, ctx.user) < 2 and not (
                pull.allow_maintainer_edit and ctx.access >= 2):
            raise self._error(403, "user should have permission to update the head branch")
        if style == "rebase" and not repo.settings["allow_rebase_update"]:
            raise self._error(403, "rebase update is not allowed for this repository")
        self._refresh_pull(repo, issue, poll=False)
        base_sha, head_sha = self._pull_shas(repo, issue)
        if _git("merge-base", "--is-ancestor", base_sha, head_sha, git_dir=repo.bare, check=False).returncode == 0:
            return _Response(200, b"", None)  # already up to date
        env = self._identity_env(ctx.user.login)
        tree = self._work / f"update-{uuid.uuid4().hex}"
        _git("worktree", "add", "-q", "--detach", str(tree), head_sha, git_dir=repo.bare)
        try:
            if style == "rebase":
                result = _git("rebase", "-q", base_sha, cwd=tree, env=env, check=False)
                failure = "rebase failed because of conflict"
                abort = ("rebase", "--abort")
            else:
                message = f"Merge branch '{pull.base_branch}' into {pull.head_branch}"
                result = _git("merge", "--no-ff", "-m", message, base_sha, cwd=tree, env=env, check=False)
                failure = "merge failed because of conflict"
                abort = ("merge", "--abort")
            if result.returncode != 0:
                _git(*abort, cwd=tree, env=env, check=False)
                raise self._error(409, failure)
            new_sha = _out(_git("rev-parse", "HEAD", cwd=tree))
        finally:
            _git("worktree", "remove", "--force", str(tree), git_dir=repo.bare, check=False)
            shutil.rmtree(tree, ignore_errors=True)
            _git("worktree", "prune", git_dir=repo.bare, check=False)
        if head_repo.id == repo.id:
            _git("update-ref", f"refs/heads/{pull.head_branch}", new_sha, git_dir=repo.bare)
        else:
            _git("push", "-q", "--force", str(head_repo.bare), f"{new_sha}:refs/heads/{pull.head_branch}",
                 git_dir=repo.bare)
        self._refresh_pull(repo, issue, poll=False)
        return _Response(200, b"", None)

    def _review_json(self, repo: Repo, issue: Issue, review: Review) -> dict[str, Any]:
        html = self._issue_html(repo, issue)
        return {"id": review.id, "user": self._login_json(review.user), "team": None, "state": review.state,
                "body": review.body, "commit_id": review.commit_id, "stale": False,
                "official": review.state in ("APPROVED", "REQUEST_CHANGES") and self._access(
                    repo, self.users.get(review.user.lower())) >= 2,
                "dismissed": review.dismissed, "comments_count": len(review.comments),
                "submitted_at": _ts(review.submitted),
                "updated_at": _ts(review.submitted), "html_url": f"{html}#issuecomment-{review.id}",
                "pull_request_url": html}

    def _h_reviews_list(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None
        issue = self._pull_issue(ctx)
        assert issue.pull is not None
        items, headers = self._page(ctx, issue.pull.reviews)
        return self._json(200, [self._review_json(repo, issue, r) for r in items], headers)

    def _h_review_create(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None and ctx.user is not None
        form = self._form(ctx)
        issue = self._pull_issue(ctx)
        pull = issue.pull
        assert pull is not None
        event = self._field(form, "event", str, "")
        body = self._field(form, "body", str, "")
        comments = self._field(form, "comments", list, []) or []
        own = issue.user.lower() == ctx.user.login.lower()
        states = {"APPROVED": "APPROVED", "REQUEST_CHANGES": "REQUEST_CHANGES", "COMMENT": "COMMENT"}
        state = states.get(event, "PENDING")
        if state == "APPROVED" and own:
            raise self._error(422, "approve your own pull is not allowed")
        if state == "REQUEST_CHANGES" and own:
            raise self._error(422, "reject your own pull is not allowed")
        if state in ("REQUEST_CHANGES", "COMMENT") and not body.strip() and not comments:
            raise self._error(422, f"review event {event} requires a body")
        _, head = self._pull_shas(repo, issue)
        review = Review(self._next("comment"), ctx.user.login, state, body,
                        self._field(form, "commit_id", str, "") or head, self._tick())
        review.comments = [self._code_comment(ctx.user.login, c, review) for c in comments if isinstance(c, dict)]
        pull.reviews.append(review)
        if state != "PENDING":
            pull.requested = [r for r in pull.requested if r.lower() != ctx.user.login.lower()]
        issue.updated = review.submitted
        return self._json(200, self._review_json(repo, issue, review))

    def _code_comment(self, login: str, given: Mapping[str, Any], review: Review) -> dict[str, Any]:
        """A review's inline comment as stored: Gitea wants a path, a body and one of the two line numbers."""
        path, body = given.get("path"), given.get("body")
        new, old = given.get("new_position") or 0, given.get("old_position") or 0
        if not isinstance(path, str) or not path or not isinstance(body, str) or not body.strip():
            raise self._error(422, "a review comment needs a path and a body")
        if not isinstance(new, int) or not isinstance(old, int) or (new <= 0 and old <= 0):
            raise self._error(422, "a review comment needs new_position or old_position")
        return {"id": self._next("comment"), "user": login, "path": path, "body": body, "new": new, "old": old,
                "commit_id": review.commit_id, "created": self._tick()}

    def _review(self, ctx: _Ctx, issue: Issue) -> Review:
        assert issue.pull is not None
        key = ctx.params["id"]
        found = next((r for r in issue.pull.reviews if key.isdigit() and r.id == int(key)), None)
        if found is None:
            raise self._not_found()
        return found

    def _review_comment_json(self, repo: Repo, issue: Issue, review: Review, c: Mapping[str, Any]) -> dict[str, Any]:
        html = self._issue_html(repo, issue)
        return {"id": c["id"], "body": c["body"], "user": self._login_json(c["user"]), "resolver": None,
                "pull_request_review_id": review.id, "created_at": _ts(c["created"]), "updated_at": _ts(c["created"]),
                "path": c["path"], "commit_id": c["commit_id"], "original_commit_id": c["commit_id"],
                "diff_hunk": "", "position": c["new"] if c["new"] > 0 else 0,
                "original_position": c["old"] if c["new"] <= 0 else 0,
                "html_url": f"{html}/files#issuecomment-{c['id']}", "pull_request_url": html}

    def _h_review_get(self, ctx: _Ctx) -> _Response:
        assert ctx.repo is not None
        issue = self._pull_issue(ctx)
        return self._json(200, self._review_json(ctx.repo, issue, self._review(ctx, issue)))

    def _h_review_comments(self, ctx: _Ctx) -> _Response:
        assert ctx.repo is not None
        issue = self._pull_issue(ctx)
        review = self._review(ctx, issue)
        return self._json(200, [self._review_comment_json(ctx.repo, issue, review, c) for c in review.comments])

    def _h_review_comment_add(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None and ctx.user is not None
        issue = self._pull_issue(ctx)
        review = self._review(ctx, issue)
        comment = self._code_comment(ctx.user.login, self._form(ctx), review)
        review.comments.append(comment)
        issue.updated = comment["created"]
        return self._json(200, self._review_comment_json(repo, issue, review, comment))

    def _h_review_submit(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None and ctx.user is not None
        issue = self._pull_issue(ctx)
        assert issue.pull is not None
        review = self._review(ctx, issue)
        form = self._form(ctx)
        event = self._field(form, "event", str, "")
        body = self._field(form, "body", str, "")
        if review.state != "PENDING":
            raise self._error(422, "only a pending review can be submitted")
        if review.user.lower() != ctx.user.login.lower():
            raise self._not_found()
        states = {"APPROVED": "APPROVED", "REQUEST_CHANGES": "REQUEST_CHANGES", "COMMENT": "COMMENT"}
        if event not in states:
            raise self._error(422, "review event is not valid for submit")
        own = issue.user.lower() == ctx.user.login.lower()
        if own and event in ("APPROVED", "REQUEST_CHANGES"):
            raise self._error(422, "approve or reject your own pull is not allowed")
        if event in ("REQUEST_CHANGES", "COMMENT") and not (body or review.body).strip() and not review.comments:
            raise self._error(422, f"review event {event} requires a body")
        review.state, review.body, review.submitted = states[event], body or review.body, self._tick()
        issue.pull.requested = [r for r in issue.pull.requested if r.lower() != ctx.user.login.lower()]
        issue.updated = review.submitted
        return self._json(200, self._review_json(repo, issue, review))

    def _h_review_dismiss(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None
        if ctx.access < 3:  # dismissReview: a repository admin only, before the review is even looked up
            raise self._error(403, "Must be repo admin")
        issue = self._pull_issue(ctx)
        review = self._review(ctx, issue)
        self._form(ctx)
        if review.state not in ("APPROVED", "REQUEST_CHANGES"):
            raise self._error(403, "not need to dismiss this review because it's type is not Approve or change "
                                   "request")
        review.dismissed = True
        issue.updated = self._tick()
        return self._json(200, self._review_json(repo, issue, review))

    def _h_review_delete(self, ctx: _Ctx) -> _Response:
        """DeletePullReview: its reviewer or a repository admin; 204."""
        assert ctx.user is not None
        issue = self._pull_issue(ctx)
        review = self._review(ctx, issue)
        if review.user.lower() != ctx.user.login.lower() and ctx.access < 3:
            raise self._error(403, "only admin and user itself can delete a review")
        assert issue.pull is not None
        issue.pull.reviews.remove(review)
        return _Response(204, b"", None)

    def _reviewer_logins(self, ctx: _Ctx, issue: Issue) -> list[str]:
        form = self._form(ctx)
        names = self._field(form, "reviewers", list, []) or []
        logins = []
        for name in names:
            user = self.users.get(str(name).lower())
            if user is None or user.is_org:
                raise self._error(422, f"user does not exist [uid: 0, name: {name}]")
            if user.login.lower() == issue.user.lower():
                raise self._error(422, "poster of pr can't be reviewer")
            logins.append(user.login)
        return logins

    def _h_reviewers_add(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None
        issue = self._pull_issue(ctx)
        pull = issue.pull
        assert pull is not None
        added = []
        for login in self._reviewer_logins(ctx, issue):
            if login.lower() not in (r.lower() for r in pull.requested):
                pull.requested.append(login)
            added.append(Review(self._next("comment"), login, "REQUEST_REVIEW", "", "", self._tick()))
        issue.updated = self._clock
        return self._json(201, [self._review_json(repo, issue, r) for r in added])

    def _h_reviewers_remove(self, ctx: _Ctx) -> _Response:
        issue = self._pull_issue(ctx)
        pull = issue.pull
        assert pull is not None
        gone = {login.lower() for login in self._reviewer_logins(ctx, issue)}
        pull.requested = [r for r in pull.requested if r.lower() not in gone]
        issue.updated = self._tick()
        return _Response(204, b"", None)

    def _h_pull_files(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None
        issue = self._pull_issue(ctx)
        pull = issue.pull
        assert pull is not None
        self._refresh_pull(repo, issue, poll=False)
        _, head = self._pull_shas(repo, issue)
        files: list[dict[str, Any]] = []
        if pull.merge_base and head != _ZERO_SHA:
            names = _out(_git("diff", "--name-status", "-M", "-z", pull.merge_base, head, git_dir=repo.bare,
                              check=False)).split("\0")
            counts: dict[str, tuple[int, int]] = {}
            stats = _out(_git("diff", "--numstat", "-M", "-z", pull.merge_base, head, git_dir=repo.bare,
                              check=False)).split("\0")
            at = 0
            while at < len(stats) and stats[at]:
                added, deleted, path = stats[at].split("\t", 2)
                if not path:  # a rename: the old and new paths follow
                    path, at = stats[at + 2], at + 3
                else:
                    at += 1
                counts[path] = (int(added) if added.isdigit() else 0, int(deleted) if deleted.isdigit() else 0)
            kinds = {"A": "added", "D": "deleted", "M": "modified", "R": "renamed", "C": "copied", "T": "changed"}
            index = 0
            while index < len(names) and names[index]:
                code = names[index]
                previous = names[index + 1] if code[0] in "RC" else ""
                path = names[index + 2] if code[0] in "RC" else names[index + 1]
                index += 3 if code[0] in "RC" else 2
                added, deleted = counts.get(path, (0, 0))
                html = self._html_url(repo.owner, repo.name, "src", "commit", head, path)
                files.append({"filename": path, "previous_filename": previous, "status": kinds.get(code[0], "changed"),
                              "additions": added, "deletions": deleted, "changes": added + deleted,
                              "html_url": html, "contents_url": self._api_url(
                                  "repos", repo.owner, repo.name, "contents", path) + f"?ref={head}",
                              "raw_url": self._html_url(repo.owner, repo.name, "raw", "commit", head, path)})
        items, headers = self._page(ctx, files)
        return self._json(200, items, headers)

    # ================================================================== endpoints: releases

    def _release(self, ctx: _Ctx) -> Release:
        repo = ctx.repo
        assert repo is not None
        key = ctx.params["id"]
        release = repo.releases.get(int(key)) if key.isdigit() else None
        if release is None or (release.draft and ctx.access < 2):
            raise self._not_found()
        return release

    def _h_releases_list(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None
        draft, pre = ctx.q_bool("draft"), ctx.q_bool("pre-release")
        found = [r for r in repo.releases.values()
                 if (ctx.access >= 2 or not r.draft) and (draft is None or r.draft == draft)
                 and (pre is None or r.prerelease == pre)]
        found.sort(key=lambda r: (r.created, r.id), reverse=True)
        items, headers = self._page(ctx, found)
        return self._json(200, [self._release_json(repo, r) for r in items], headers)

    def _h_release_get(self, ctx: _Ctx) -> _Response:
        assert ctx.repo is not None
        return self._json(200, self._release_json(ctx.repo, self._release(ctx)))

    def _h_release_latest(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None
        found = [r for r in repo.releases.values() if not r.draft and not r.prerelease]
        if not found:
            raise self._not_found()
        return self._json(200, self._release_json(repo, max(found, key=lambda r: (r.created, r.id))))

    def _by_tag(self, ctx: _Ctx) -> Release:
        repo = ctx.repo
        assert repo is not None
        tag = unquote(ctx.params["tag"])
        release = next((r for r in repo.releases.values() if r.tag_name == tag), None)
        if release is None or (release.draft and ctx.access < 2):
            raise self._not_found()
        return release

    def _h_release_by_tag(self, ctx: _Ctx) -> _Response:
        assert ctx.repo is not None
        return self._json(200, self._release_json(ctx.repo, self._by_tag(ctx)))

    def _h_release_create(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None and ctx.user is not None
        form = self._form(ctx)
        tag = self._field(form, "tag_name", str, "")
        if not tag:
            raise self._binding("TagName")
        if _git("check-ref-format", f"refs/tags/{tag}", git_dir=repo.bare, check=False).returncode != 0:
            raise self._error(422, "Release tag name is not valid")  # Gitea's ErrInvalidTagName
        if any(r.tag_name == tag for r in repo.releases.values()):
            raise self._error(409, "Release is has no Tag")
        target = self._field(form, "target_commitish", str, "") or repo.default_branch
        draft = self._field(form, "draft", bool, False)
        if not draft:
            self._ensure_tag(repo, tag, target, self._field(form, "tag_message", str, ""), ctx.user.login)
        release = Release(self._next("release"), tag, target, self._field(form, "name", str, ""),
                          self._field(form, "body", str, ""), draft, self._field(form, "prerelease", bool, False),
                          ctx.user.login, self._tick(), self._field(form, "hide_archive_links", bool, False))
        repo.releases[release.id] = release
        return self._json(201, self._release_json(repo, release))

    def _ensure_tag(self, repo: Repo, tag: str, target: str, message: str, login: str) -> None:
        if self._ref_sha(repo, f"refs/tags/{tag}"):
            return
        sha = self._resolve_commit(repo, target)
        if sha is None:
            raise self._not_found("target not found", [f"target does not exist [target: {target}]"])
        self._make_tag(repo, tag, sha, message, login)

    def _h_release_edit(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None and ctx.user is not None
        form = self._form(ctx)
        release = self._release(ctx)
        for key, attr in (("tag_name", "tag_name"), ("target_commitish", "target"), ("name", "name"),
                          ("body", "body")):
            value = self._field(form, key, str, None)
            if value:
                setattr(release, attr, value)
        for key in ("draft", "prerelease", "hide_archive_links"):
            value = self._field(form, key, bool, None)
            if value is not None:
                setattr(release, key, value)
        if not release.draft:
            self._ensure_tag(repo, release.tag_name, release.target, "", ctx.user.login)
        return self._json(200, self._release_json(repo, release))

    def _h_release_delete(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None
        del repo.releases[self._release(ctx).id]
        return _Response(204, b"", None)

    def _h_release_delete_by_tag(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None
        del repo.releases[self._by_tag(ctx).id]  # the tag itself stays, as on Gitea
        return _Response(204, b"", None)

    def _h_assets_list(self, ctx: _Ctx) -> _Response:
        return self._json(200, [self._asset_json(a) for a in self._release(ctx).assets])

    def _h_asset_upload(self, ctx: _Ctx) -> _Response:
        release = self._release(ctx)
        media = ctx.content_type.split(";", 1)[0].strip().lower()
        name = ctx.q("name")
        if media == "multipart/form-data":
            parts = _multipart(ctx.body, ctx.content_type)
            if "attachment" not in parts:
                raise self._error(400, "Could not get file: http: no such file")
            filename, data = parts["attachment"]
            name = name or filename or "attachment"
        elif media == "application/octet-stream":
            data = ctx.body
            if not name:
                raise self._error(400, "name is required for an octet-stream upload")
        else:
            raise self._error(400, "Could not get file: request Content-Type isn't multipart/form-data")
        asset = Asset(self._next("asset"), name, len(data), str(uuid.uuid4()), self._tick(), data)
        release.assets.append(asset)
        return self._json(201, self._asset_json(asset))

    # ================================================================== endpoints: wiki

    def _wiki_page(self, ctx: _Ctx) -> WikiPage:
        repo = ctx.repo
        assert repo is not None
        page = self._wiki_find(repo, ctx.params["name"])
        if page is None:
            raise self._not_found()
        return page

    @staticmethod
    def _wiki_find(repo: Repo, raw_name: str) -> WikiPage | None:
        """The page a request's (still escaped) name reads, as wiki_path.go WebPathFromRequest and WebPathToGitPath
        read it: "release-notes" is the page titled "release notes", "release-notes.-" the one titled
        "release-notes"."""
        wanted = _wiki_git_path(raw_name.strip("/").replace("/", "%2F"))
        return next((p for p in repo.wiki.values() if _wiki_git_path(_wiki_sub_url(p.title)) == wanted), None)

    def _h_wiki_pages(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None
        items, headers = self._page(ctx, sorted(repo.wiki.values(), key=lambda p: p.title))
        return self._json(200, [self._wiki_meta(repo, p) for p in items], headers)

    def _h_wiki_get(self, ctx: _Ctx) -> _Response:
        assert ctx.repo is not None
        return self._json(200, self._wiki_json(ctx.repo, self._wiki_page(ctx)))

    def _wiki_content(self, form: Mapping[str, Any]) -> bytes:
        try:
            return base64.b64decode(self._field(form, "content_base64", str, ""), validate=True)
        except ValueError as exc:
            raise self._error(400, f"illegal base64 data: {exc}") from None

    def _wiki_revision(self, page: WikiPage, login: str, message: str) -> None:
        when = self._tick()
        sha = hashlib.sha1(page.title.encode() + page.content + str(when).encode()).hexdigest()
        page.revisions.append((sha, login, when, message))

    def _h_wiki_revisions(self, ctx: _Ctx) -> _Response:
        """ListPageRevisions: a page's commits, newest first, 10 to a page (page= only), with their count."""
        repo = ctx.repo
        assert repo is not None
        page = self._wiki_page(ctx)
        commits = list(reversed(page.revisions))
        start = (max(ctx.q_int("page", 1), 1) - 1) * 10
        shown = [{"sha": sha, "message": message,
                  "author": {"name": login, "email": self.users[login.lower()].email if login.lower() in self.users
                             else "", "date": _ts(when)},
                  "commiter": {"name": login, "email": "", "date": _ts(when)}}
                 for sha, login, when, message in commits[start:start + 10]]
        return self._json(200, {"commits": shown, "count": len(commits)}, {"X-Total-Count": str(len(commits))})

    def _h_wiki_create(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None and ctx.user is not None
        form = self._form(ctx)
        title = self._field(form, "title", str, "").strip()
        if not title:
            raise self._error(400, "wiki page title is empty")
        if title in repo.wiki or self._wiki_find(repo, _wiki_sub_url(title)):
            raise self._error(400, f"wiki page already exists [title: {title}]")
        page = WikiPage(title, self._wiki_content(form))
        self._wiki_revision(page, ctx.user.login, self._field(form, "message", str, "") or f'Add "{title}"')
        repo.wiki[title] = page
        return self._json(201, self._wiki_json(repo, page))

    def _h_wiki_edit(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None and ctx.user is not None
        form = self._form(ctx)
        found = self._wiki_find(repo, ctx.params["name"])
        # wiki_service.EditWikiPage adds the page when it is not there: an edit of a missing page creates it
        page = found or WikiPage(_wiki_unescape(unquote(ctx.params["name"])), b"")
        if found is None:
            repo.wiki[page.title] = page
        title = self._field(form, "title", str, "").strip()
        if title and title != page.title:
            if title in repo.wiki:
                raise self._error(400, f"wiki page already exists [title: {title}]")
            del repo.wiki[page.title]
            page.title = title
            repo.wiki[title] = page
        if self._has(form, "content_base64"):
            page.content = self._wiki_content(form)
        self._wiki_revision(page, ctx.user.login, self._field(form, "message", str, "") or f'Update "{page.title}"')
        return self._json(200, self._wiki_json(repo, page))

    def _h_wiki_delete(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None
        del repo.wiki[self._wiki_page(ctx).title]
        return _Response(204, b"", None)

    # ================================================================== endpoints: actions

    def _gitea_run_json(self, repo: Repo, run: ActionRun, viewer: User | None) -> dict[str, Any]:
        url = self._api_url("repos", repo.owner, repo.name, "actions", "runs", str(run.id))
        repo_json = self._repo_json(repo, viewer)
        done = run.status == "completed"
        return {"id": run.id, "url": url,
                "html_url": self._html_url(repo.owner, repo.name, "actions", "runs", str(run.number)),
                "display_title": run.title, "path": f"{run.workflow}@refs/heads/{run.branch}", "event": run.event,
                "run_attempt": 1, "run_number": run.number, "head_sha": run.head_sha, "head_branch": run.branch,
                "status": run.status, "conclusion": run.conclusion if done else "",
                "actor": self._login_json(run.actor), "trigger_actor": self._login_json(run.actor),
                "repository": repo_json, "head_repository": repo_json, "repository_id": repo.id,
                "started_at": _ts(run.created), "completed_at": _ts(run.created + 60) if done else None}

    def _forgejo_run_json(self, repo: Repo, run: ActionRun, viewer: User | None) -> dict[str, Any]:
        status = run.conclusion if run.status == "completed" else (
            "running" if run.status == "in_progress" else "waiting")
        return {"id": run.id, "title": run.title, "repository": self._repo_json(repo, viewer),
                "html_url": self._html_url(repo.owner, repo.name, "actions", "runs", str(run.number)),
                "trigger_user": self._login_json(run.actor), "event": run.event, "trigger_event": run.event,
                "status": status, "workflow_id": run.workflow, "index_in_repo": run.number,
                "commit_sha": run.head_sha, "prettyref": run.branch, "created": _ts(run.created),
                "updated": _ts(run.created), "started": _ts(run.created), "stopped": _ts(run.created + 60),
                "duration": 60_000_000_000, "event_payload": "", "ScheduleID": 0, "approved_by": 0,
                "is_fork_pull_request": False, "is_ref_deleted": False, "need_approval": False}

    def _h_actions_runs(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None
        runs = sorted(repo.runs.values(), key=lambda r: r.id, reverse=True)
        if self.flavour == "gitea":
            for key, attr in (("event", "event"), ("branch", "branch"), ("head_sha", "head_sha"),
                              ("actor", "actor")):
                if ctx.q(key):
                    runs = [r for r in runs if str(getattr(r, attr)).lower() == ctx.q(key).lower()]
            if ctx.q("status"):
                runs = [r for r in runs if ctx.q("status") in (r.status, r.conclusion)]
            items, headers = self._page(ctx, runs)
            return self._json(200, {"total_count": len(runs),
                                    "workflow_runs": [self._gitea_run_json(repo, r, ctx.user) for r in items]},
                              headers)
        events = [e for e in ctx.q("event").split(",") if e]
        statuses = [s for s in ctx.q("status").split(",") if s]
        rendered = [self._forgejo_run_json(repo, r, ctx.user) for r in runs]
        rendered = [r for r in rendered if (not events or r["event"] in events)
                    and (not statuses or r["status"] in statuses)
                    and (not ctx.q("head_sha") or r["commit_sha"] == ctx.q("head_sha"))
                    and (not ctx.q("workflow_id") or r["workflow_id"] == ctx.q("workflow_id"))
                    and (not ctx.q("run_number") or str(r["index_in_repo"]) == ctx.q("run_number"))]
        items, headers = self._page(ctx, rendered)
        return self._json(200, {"workflow_runs": items, "total_count": len(rendered)}, headers)

    def _run(self, ctx: _Ctx) -> ActionRun:
        repo = ctx.repo
        assert repo is not None
        key = ctx.params["run"]
        run = repo.runs.get(int(key)) if key.isdigit() else None
        if run is None:
            raise self._not_found()
        return run

    def _h_actions_run(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None
        run = self._run(ctx)
        render = self._gitea_run_json if self.flavour == "gitea" else self._forgejo_run_json
        return self._json(200, render(repo, run, ctx.user))

    def _h_actions_jobs(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None
        run = self._run(ctx)
        jobs = []
        for job in run.jobs:
            done = job.status == "completed"
            jobs.append({
                "id": job.id, "url": self._api_url("repos", repo.owner, repo.name, "actions", "jobs", str(job.id)),
                "html_url": self._html_url(repo.owner, repo.name, "actions", "runs", str(run.number), "jobs",
                                           str(run.jobs.index(job))),
                "run_id": run.id, "run_url": self._api_url("repos", repo.owner, repo.name, "actions", "runs",
                                                           str(run.id)),
                "name": job.name, "labels": ["ubuntu-latest"], "run_attempt": 1, "head_sha": run.head_sha,
                "head_branch": run.branch, "status": job.status, "conclusion": job.conclusion if done else "",
                "runner_id": 1, "runner_name": "runner-1", "steps": [
                    {"name": "Run " + job.name, "number": 1, "status": job.status,
                     "conclusion": job.conclusion if done else "", "started_at": _ts(run.created),
                     "completed_at": _ts(run.created + 60) if done else None}],
                "created_at": _ts(run.created), "started_at": _ts(run.created),
                "completed_at": _ts(run.created + 60) if done else None})
        items, headers = self._page(ctx, jobs)
        return self._json(200, {"total_count": len(jobs), "jobs": items}, headers)

    def _h_actions_workflows(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None
        workflows = []
        for folder in (".gitea/workflows", ".github/workflows"):
            listing = _git("ls-tree", "--name-only", f"refs/heads/{repo.default_branch}", folder + "/",
                           git_dir=repo.bare, check=False)
            for path in _out(listing).splitlines():
                if not path.endswith((".yml", ".yaml")):
                    continue
                name = path.rsplit("/", 1)[-1]
                workflows.append({
                    "id": name, "name": name, "path": path, "state": "active",
                    "created_at": _ts(repo.created), "updated_at": _ts(repo.updated),
                    "url": self._api_url("repos", repo.owner, repo.name, "actions", "workflows", name),
                    "html_url": self._html_url(repo.owner, repo.name, "actions") + f"?workflow={name}",
                    "badge_url": self._html_url(repo.owner, repo.name, "actions", "workflows", name, "badge.svg"),
                    "deleted_at": None})
        return self._json(200, {"total_count": len(workflows), "workflows": workflows})

    def _h_actions_logs(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None
        key = ctx.params["job"]
        for run in repo.runs.values():
            for job in run.jobs:
                if key.isdigit() and job.id == int(key):
                    return _Response(200, job.log.encode("utf-8"), "text/plain; charset=utf-8")
        raise self._not_found()

    def _artifact_json(self, repo: Repo, run: ActionRun, artifact: tuple[int, str, bytes]) -> dict[str, Any]:
        number, name, data = artifact
        url = self._api_url("repos", repo.owner, repo.name, "actions", "artifacts", str(number))
        return {"id": number, "name": name, "size_in_bytes": len(data), "url": url,
                "archive_download_url": url + "/zip", "expired": False,
                "workflow_run": {"id": run.id, "repository_id": repo.id, "head_sha": run.head_sha},
                "created_at": _ts(run.created), "updated_at": _ts(run.created), "expires_at": _ts(run.created + 86400)}

    def _artifacts(self, repo: Repo) -> list[tuple[ActionRun, tuple[int, str, bytes]]]:
        return [(run, a) for run in sorted(repo.runs.values(), key=lambda r: r.id, reverse=True) for a in run.artifacts]

    def _h_artifacts_list(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None
        found = self._artifacts(repo)
        if "run" in ctx.params:
            run = self._run(ctx)
            found = [(r, a) for r, a in found if r.id == run.id]
        if ctx.q("name"):
            found = [(r, a) for r, a in found if a[1] == ctx.q("name")]
        return self._json(200, {"total_count": len(found),
                                "artifacts": [self._artifact_json(repo, r, a) for r, a in found]})

    def _artifact(self, ctx: _Ctx) -> tuple[ActionRun, tuple[int, str, bytes]]:
        assert ctx.repo is not None
        key = ctx.params["artifact_id"]
        found = next(((r, a) for r, a in self._artifacts(ctx.repo) if key.isdigit() and a[0] == int(key)), None)
        if found is None:
            raise self._not_found("artifact not found")
        return found

    def _h_artifact_get(self, ctx: _Ctx) -> _Response:
        assert ctx.repo is not None
        return self._json(200, self._artifact_json(ctx.repo, *self._artifact(ctx)))

    def _h_artifact_zip(self, ctx: _Ctx) -> _Response:
        # Gitea answers with a redirect to a signed address for the blob on its own origin (built from its
        # ROOT_URL; here relative, so the fake's address is the one reached).
        _, artifact = self._artifact(ctx)
        return _Response(302, b"", None, {"Location": f"/artifacts-blob/{artifact[0]}?sig=fake"})

    def _artifact_blob(self, key: str) -> _Response:
        with self._lock:
            for repo in self._repos.values():
                for _, (number, _name, data) in self._artifacts(repo):
                    if key.isdigit() and number == int(key):
                        return _Response(200, data, "application/zip")
        return _plain_not_found()

    def _h_workflow_dispatch(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None and ctx.user is not None
        form = self._form(ctx)
        ref = self._field(form, "ref", str, "")
        inputs = form.get("inputs") or {}
        if not isinstance(inputs, dict) or not all(isinstance(v, str) for v in inputs.values()):
            raise self._error(422, "[Inputs]: json: cannot unmarshal into Go value of type map[string]string")
        if not ref:
            raise self._binding("Ref")
        workflow = unquote(ctx.params["workflow_id"])
        sha = self._resolve_commit(repo, ref)
        if sha is None:
            raise self._error(422 if self.flavour == "gitea" else 404, f"ref {ref} not found")
        found = any(_git("cat-file", "-e", f"{sha}:{folder}/{workflow}", git_dir=repo.bare, check=False).returncode == 0
                    for folder in (".gitea/workflows", ".forgejo/workflows", ".github/workflows"))
        if not found:
            raise self._not_found(f"workflow {workflow} not found")
        branch = ref.removeprefix("refs/heads/")
        run = ActionRun(self._next("run"), len(repo.runs) + 1, workflow, workflow, "workflow_dispatch", "waiting",
                        "", branch, sha, ctx.user.login, self._tick())
        run.jobs.append(ActionJob(self._next("job"), "build", "waiting", "", ""))
        repo.runs[run.id] = run
        self.dispatches.append({"workflow": workflow, "ref": ref, "inputs": dict(inputs or {}), "run": run.id})
        if self.flavour == "forgejo" and self._field(form, "return_run_info", bool, False):
            return self._json(201, {"id": run.id, "run_number": run.number, "jobs": [j.name for j in run.jobs]})
        return _Response(204, b"", None)

    def _action_name(self, ctx: _Ctx, key: str) -> str:
        # Gitea and Forgejo keep secret and variable names upper-cased; the GITEA_ and GITHUB_ prefixes are reserved.
        name = unquote(ctx.params[key]).upper()
        if not re.fullmatch(r"[A-Z_][A-Z0-9_]*", name) or name.startswith(("GITEA_", "GITHUB_")):
            raise self._error(400, f"invalid {key.removesuffix('name')} name")
        return name

    def _h_secrets_list(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None
        items, headers = self._page(ctx, sorted(repo.secrets), link=False)
        extra = {"description": ""} if self.flavour == "gitea" else {}
        return self._json(200, [{"name": n, "created_at": _ts(repo.created)} | extra for n in items], headers)

    def _h_secret_put(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None
        name = self._action_name(ctx, "secretname")
        data = self._field(self._form(ctx), "data", str, "")
        if not data:
            raise self._binding("Data")
        existed = name in repo.secrets
        repo.secrets[name] = data
        return _Response(204 if existed else 201, b"", None)

    def _h_secret_delete(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None
        name = self._action_name(ctx, "secretname")
        if repo.secrets.pop(name, None) is None:
            raise self._not_found("secret not found")
        return _Response(204, b"", None)

    def _variable_json(self, repo: Repo, name: str) -> dict[str, Any]:
        data: dict[str, Any] = {"owner_id": 0, "repo_id": repo.id, "name": name, "data": repo.variables[name]}
        if self.flavour == "gitea":
            data["description"] = ""
        return data

    def _h_variables_list(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None
        items, headers = self._page(ctx, sorted(repo.variables), link=False)
        return self._json(200, [self._variable_json(repo, n) for n in items], headers)

    def _h_variable_get(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None
        name = self._action_name(ctx, "variablename")
        if name not in repo.variables:
            raise self._not_found("variable not found")
        return self._json(200, self._variable_json(repo, name))

    def _h_variable_create(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None
        name = self._action_name(ctx, "variablename")
        value = self._field(self._form(ctx), "value", str, "")
        if not value:
            raise self._binding("Value")
        if name in repo.variables:
            raise self._error(409, "variable name already exists")
        repo.variables[name] = value
        return _Response(201, b"", None)

    def _h_variable_update(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None
        name = self._action_name(ctx, "variablename")
        form = self._form(ctx)
        value = self._field(form, "value", str, "")
        if not value:
            raise self._binding("Value")
        if name not in repo.variables:
            raise self._not_found("variable not found")
        new_name = (self._field(form, "name", str, "") or name).upper()
        del repo.variables[name]
        repo.variables[new_name] = value
        return _Response(204, b"", None)

    def _h_variable_delete(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None
        name = self._action_name(ctx, "variablename")
        if repo.variables.pop(name, None) is None:
            raise self._not_found("variable not found")
        return _Response(204, b"", None)

    # ================================================================== endpoints: time tracking, issue attachments

    def _time_json(self, repo: Repo, issue: Issue, entry: Mapping[str, Any], viewer: User | None) -> dict[str, Any]:
        user = self.users.get(entry["user"].lower())
        return {"id": entry["id"], "created": _ts(entry["created"]), "time": entry["seconds"],
                "user_id": user.id if user else 0, "user_name": entry["user"], "issue_id": issue.id,
                "issue": self._issue_json(repo, issue, viewer)}

    def _h_times_list(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None
        issue = self._issue(ctx)
        found = [t for t in issue.times if not ctx.q("user") or t["user"].lower() == ctx.q("user").lower()]
        items, headers = self._page(ctx, found)
        return self._json(200, [self._time_json(repo, issue, t, ctx.user) for t in items], headers)

    def _track(self, issue: Issue, login: str, seconds: int, created: int | None = None) -> dict[str, Any]:
        entry = {"id": self._next("time"), "user": login, "seconds": seconds, "created": created or self._tick()}
        issue.times.append(entry)
        return entry

    def _h_time_add(self, ctx: _Ctx) -> _Response:
        repo = ctx.repo
        assert repo is not None and ctx.user is not None
        issue = self._issue(ctx)
        form = self._form(ctx)
        seconds = self._field(form, "time", int, 0)
        if not seconds:
            raise self._binding("Time")
        login = self._field(form, "user_name", str, "") or ctx.user.login
        if login.lower() != ctx.user.login.lower() and not ctx.user.is_admin:
            raise self._error(403, "user must be an admin to add time for another user")
        entry = self._track(issue, self.users[login.lower()].login if login.lower() in self.users else login,
                            seconds)
        return self._json(200, self._time_json(repo, issue, entry, ctx.user))

    def _h_stopwatch_start(self, ctx: _Ctx) -> _Response:
        assert ctx.user is not None
        issue = self._issue(ctx)
        if ctx.user.login.lower() in issue.stopwatches:
            raise self._error(409, "Cannot start a stopwatch again if it already exists")
        issue.stopwatches[ctx.user.login.lower()] = self._tick()
        return _Response(201, b"", None)

    def _h_stopwatch_stop(self, ctx: _Ctx) -> _Response:
        assert ctx.user is not None
        issue = self._issue(ctx)
        started = issue.stopwatches.pop(ctx.user.login.lower(), None)
        if started is None:
            raise self._error(409, "Cannot stop a non-existent stopwatch")
        now = self._tick()
        self._track(issue, ctx.user.login, now - started, now)
        return _Response(201, b"", None)

    def _h_issue_assets(self, ctx: _Ctx) -> _Response:
        issue = self._issue(ctx)
        return self._json(200, [self._asset_json(a) for a in issue.attachments])

    def _allowed_type(self, asset: Asset) -> None:
        """services/context/upload Verify against [attachment] ALLOWED_TYPES (when set: by extension, or */*):
        another type is 422, before anything is stored."""
        allowed = [t.strip().lower() for t in (self.attachment_allowed_types or "").replace("|", ",").split(",")
                   if t.strip()]
        extension = "." + asset.name.rsplit(".", 1)[-1].lower() if "." in asset.name else ""
        if allowed and "*/*" not in allowed and extension not in allowed:
            raise self._error(422, "This file cannot be uploaded or modified due to a forbidden file extension or "
                                   "type.")

    def _h_issue_asset_upload(self, ctx: _Ctx) -> _Response:
        issue = self._issue(ctx)
        asset = self._uploaded_file(ctx)
        self._allowed_type(asset)
        issue.attachments.append(asset)
        issue.updated = asset.created
        return self._json(201, self._asset_json(asset))

    def _h_comment_assets(self, ctx: _Ctx) -> _Response:
        return self._json(200, [self._asset_json(a) for a in self._comment(ctx).attachments])

    def _h_comment_asset_upload(self, ctx: _Ctx) -> _Response:
        comment = self._comment(ctx)
        asset = self._uploaded_file(ctx)
        self._allowed_type(asset)
        comment.attachments.append(asset)
        comment.updated = asset.created
        return self._json(201, self._asset_json(asset))

    def _h_stopwatch_delete(self, ctx: _Ctx) -> _Response:
        """DeleteIssueStopwatch: the running stopwatch is dropped, tracking nothing; 409 when none runs."""
        assert ctx.user is not None
        if self._issue(ctx).stopwatches.pop(ctx.user.login.lower(), None) is None:
            raise self._error(409, "Cannot cancel a non-existent stopwatch")
        return _Response(204, b"", None)

    def _h_user_stopwatches(self, ctx: _Ctx) -> _Response:
        """GetStopwatches: the caller's running stopwatches, across every repository."""
        assert ctx.user is not None
        me, now = ctx.user.login.lower(), self._clock
        found = [(repo, issue, issue.stopwatches[me]) for repo in self._repos.values()
                 for issue in repo.issues.values() if me in issue.stopwatches]
        items, headers = self._page(ctx, found)
        return self._json(200, [{"created": _ts(started), "seconds": now - started, "duration": f"{now - started}s",
                                 "issue_index": issue.number, "issue_title": issue.title, "repo_owner_name": repo.owner,
                                 "repo_name": repo.name} for repo, issue, started in items], headers)

    def _h_user_times(self, ctx: _Ctx) -> _Response:
        """ListMyTrackedTimes: the caller's tracked times, across every repository."""
        assert ctx.user is not None
        me = ctx.user.login.lower()
        found = [(repo, issue, t) for repo in self._repos.values() for issue in repo.issues.values()
                 for t in issue.times if t["user"].lower() == me]
        items, headers = self._page(ctx, found)
        return self._json(200, [self._time_json(repo, issue, t, ctx.user) for repo, issue, t in items], headers)

    def _h_repo_times(self, ctx: _Ctx) -> _Response:
        """ListTrackedTimesByRepository: everyone's for a writer; a reader sees only their own."""
        repo = ctx.repo
        assert repo is not None and ctx.user is not None
        who = ctx.q("user").lower()
        if ctx.access < 2 and not ctx.user.is_admin:
            if who and who != ctx.user.login.lower():
                raise self._error(403, "query by user not allowed; not enough rights")
            who = ctx.user.login.lower()
        found = [(issue, t) for issue in sorted(repo.issues.values(), key=lambda i: i.number) for t in issue.times
                 if not who or t["user"].lower() == who]
        items, headers = self._page(ctx, found)
        return self._json(200, [self._time_json(repo, issue, t, ctx.user) for issue, t in items], headers)

    def _h_time_delete(self, ctx: _Ctx) -> _Response:
        """DeleteTime: the poster of the entry or an admin; 404 for an id the issue does not hold."""
        assert ctx.user is not None
        issue = self._issue(ctx)
        key = ctx.params["id"]
        entry = next((t for t in issue.times if key.isdigit() and t["id"] == int(key)), None)
        if entry is None:
            raise self._not_found()
        if entry["user"].lower() != ctx.user.login.lower() and ctx.access < 3:
            raise self._error(403, "not allowed to delete this tracked time")
        issue.times.remove(entry)
        return _Response(204, b"", None)

    def _issue_asset(self, ctx: _Ctx, owner: Any) -> Asset:
        key = ctx.params["attachment_id"]
        found = next((a for a in owner.attachments if key.isdigit() and a.id == int(key)), None)
        if found is None:
            raise self._not_found("GetAttachmentByID", [f"attachment does not exist [id: {key}]"])
        return found

    def _asset_write(self, ctx: _Ctx, owner: Any, delete: bool) -> _Response:
        """EditIssueAttachment / DeleteIssueAttachment (and the comment forms): a writer of the repository."""
        asset = self._issue_asset(ctx, owner)
        if ctx.access < 2:
            raise self._error(403, "user should have permission to edit attachment")
        if delete:
            owner.attachments.remove(asset)
            return _Response(204, b"", None)
        name = self._field(self._form(ctx), "name", str, "")
        if name:
            asset.name = name
        return self._json(201, self._asset_json(asset))

    def _h_issue_asset_get(self, ctx: _Ctx) -> _Response:
        return self._json(200, self._asset_json(self._issue_asset(ctx, self._issue(ctx))))

    def _h_issue_asset_edit(self, ctx: _Ctx) -> _Response:
        return self._asset_write(ctx, self._issue(ctx), False)

    def _h_issue_asset_delete(self, ctx: _Ctx) -> _Response:
        return self._asset_write(ctx, self._issue(ctx), True)

    def _h_comment_asset_get(self, ctx: _Ctx) -> _Response:
        return self._json(200, self._asset_json(self._issue_asset(ctx, self._comment(ctx))))

    def _h_comment_asset_edit(self, ctx: _Ctx) -> _Response:
        return self._asset_write(ctx, self._comment(ctx), False)

    def _h_comment_asset_delete(self, ctx: _Ctx) -> _Response:
        return self._asset_write(ctx, self._comment(ctx), True)

    def _uploaded_file(self, ctx: _Ctx) -> Asset:
        """The one file of a multipart upload (field ``attachment``), named by ``name`` or its file name."""
        if not ctx.content_type.lower().startswith("multipart/form-data"):
            raise self._error(400, "Could not get file: request Content-Type isn't multipart/form-data")
        parts = _multipart(ctx.body, ctx.content_type)
        if "attachment" not in parts:
            raise self._error(400, "Could not get file: http: no such file")
        filename, data = parts["attachment"]
        return Asset(self._next("asset"), ctx.q("name") or filename or "attachment", len(data), str(uuid.uuid4()),
                     self._tick(), data)

    # ================================================================== endpoints: notifications and search

    def _h_notifications_list(self, ctx: _Ctx) -> _Response:
        assert ctx.user is not None
        statuses = set(ctx.query_all.get("status-types", [])) or {"unread", "pinned"}
        if ctx.q_bool("all"):
            statuses = {"unread", "read", "pinned"}
        kinds = {k.lower() for k in ctx.query_all.get("subject-type", [])}
        since, before = _parse_ts(ctx.q("since")) if ctx.q("since") else None, \
            _parse_ts(ctx.q("before")) if ctx.q("before") else None
        found = [n for n in self._notifications.values() if n.login.lower() == ctx.user.login.lower()
                 and _thread_status(n) in statuses and (not kinds or n.subject_type.lower() in kinds)
                 and (since is None or n.updated >= since) and (before is None or n.updated <= before)]
        found.sort(key=lambda n: (n.updated, n.id), reverse=True)
        items, headers = self._page(ctx, found, link=False)
        return self._json(200, [self._notification_json(n, ctx.user) for n in items], headers)

    def _h_notifications_read(self, ctx: _Ctx) -> _Response:
        assert ctx.user is not None
        last = _parse_ts(ctx.q("last_read_at")) if ctx.q("last_read_at") else self._clock
        statuses = set(ctx.query_all.get("status-types", [])) or {"unread"}
        if (ctx.q("all") or "").lower() == "true":
            statuses = {"unread", "read", "pinned"}
        target = ctx.q("to-status") or "read"
        changed = []
        for thread in self._notifications.values():
            if thread.login.lower() != ctx.user.login.lower() or _thread_status(thread) not in statuses:
                continue
            if last is not None and thread.updated > last:
                continue
            _set_thread_status(thread, target)
            changed.append(thread)
        return self._json(205, [self._notification_json(n, ctx.user) for n in changed])

    def _notification_thread(self, ctx: _Ctx) -> Notification:
        assert ctx.user is not None
        key = ctx.params["id"]
        thread = self._notifications.get(int(key)) if key.isdigit() else None
        if thread is None:
            raise self._not_found()
        if thread.login.lower() != ctx.user.login.lower() and not ctx.user.is_admin:
            raise self._error(403, f"only user itself and admin are allowed to read/change this thread {thread.id}")
        return thread

    def _h_notification_get(self, ctx: _Ctx) -> _Response:
        return self._json(200, self._notification_json(self._notification_thread(ctx), ctx.user))

    def _h_notification_read(self, ctx: _Ctx) -> _Response:
        thread = self._notification_thread(ctx)
        _set_thread_status(thread, ctx.q("to-status") or "read")
        return self._json(205, self._notification_json(thread, ctx.user))

    def _h_repos_search(self, ctx: _Ctx) -> _Response:
        query = ctx.q("q").lower()
        with_description = bool(ctx.q_bool("includeDesc"))
        uid = ctx.q_int("uid", 0)
        private, archived = ctx.q_bool("private"), ctx.q_bool("archived")
        mode = ctx.q("mode")
        found = []
        for repo in self._visible_repos(ctx.user):
            text = repo.name.lower() + (" " + repo.description.lower() if with_description else "")
            owner = self.users.get(repo.owner.lower())
            if query and query not in text:
                continue
            if uid and not (owner and owner.id == uid):
                continue
            if private is not None and repo.private != private:
                continue
            if archived is not None and repo.archived != archived:
                continue
            if mode == "fork" and repo.parent_id is None or mode == "source" and repo.parent_id is not None:
                continue
            found.append(repo)
        reverse = ctx.q("order") == "desc"
        sort = ctx.q("sort") or "alpha"
        keys: dict[str, Callable[[Repo], Any]] = {
            "alpha": lambda r: r.full_name.lower(), "created": lambda r: r.created,
            "updated": lambda r: r.updated, "id": lambda r: r.id}
        found.sort(key=keys.get(sort, keys["alpha"]), reverse=reverse)
        items, headers = self._page(ctx, found)
        return self._json(200, {"ok": True, "data": [self._repo_json(r, ctx.user) for r in items]}, headers)

    # ================================================================== form fields

    def _org_json(self, org: User) -> dict[str, Any]:
        return {"id": org.id, "name": org.login, "full_name": org.full_name, "email": org.email,
                "avatar_url": self.root_url + "avatars/" + hashlib.md5(org.login.encode()).hexdigest(),
                "description": "", "website": "", "location": "", "visibility": "public",
                "repo_admin_change_team_access": False, "username": org.login}

    def _h_user_orgs(self, ctx: _Ctx) -> _Response:
        """orgListCurrentUserOrgs; Forgejo answers without pagination headers."""
        assert ctx.user is not None
        login = ctx.user.login.lower()
        orgs = sorted((u for u in self.users.values() if u.is_org and login in u.org_members), key=lambda u: u.id)
        items, headers = self._page(ctx, orgs)
        return self._json(200, [self._org_json(o) for o in items], headers if self.flavour == "gitea" else None)

    def _h_users_search(self, ctx: _Ctx) -> _Response:
        """userSearch: people (never organisations) whose login or full name holds q, as {ok, data}."""
        q, uid = ctx.q("q").lower(), ctx.q_int("uid", 0)
        found = [u for u in sorted(self.users.values(), key=lambda u: u.id) if not u.is_org
                 and (not uid or u.id == uid) and (q in u.login.lower() or q in u.full_name.lower())]
        items, headers = self._page(ctx, found)
        return self._json(200, {"ok": True, "data": [self._user_json(u) for u in items]}, headers)

    def _team_json(self, team: Team) -> dict[str, Any]:
        units = ["repo.code", "repo.issues", "repo.pulls", "repo.releases", "repo.wiki"]
        return {"id": team.id, "name": team.name, "description": team.description,
                "organization": self._org_json(self.users[team.org.lower()]),
                "includes_all_repositories": False, "permission": team.permission, "units": units,
                "units_map": {u: team.permission for u in units}, "can_create_org_repo": False}

    def _h_teams_search(self, ctx: _Ctx) -> _Response:
        """teamSearch: an organisation's teams whose name (or description) holds q; members of the org only."""
        assert ctx.user is not None
        org = self.users.get(unquote(ctx.params["org"]).lower())
        if org is None or not org.is_org:
            raise self._not_found("GetOrgByName", [f"org does not exist [name: {ctx.params['org']}]"])
        if ctx.user.login.lower() not in org.org_members and not ctx.user.is_admin:
            raise self._error(403, "Must be an organization member")
        q, in_desc = ctx.q("q").lower(), ctx.q_bool("include_desc") is not False
        found = [t for t in sorted(self.teams.values(), key=lambda t: t.id) if t.org.lower() == org.login.lower()
                 and (q in t.name.lower() or (in_desc and q in t.description.lower()))]
        items, headers = self._page(ctx, found)
        return self._json(200, {"ok": True, "data": [self._team_json(t) for t in items]}, headers)

    def _package_json(self, package: Package, viewer: User | None) -> dict[str, Any]:
        repo = self._repos.get(package.repo_id) if package.repo_id else None
        return {"id": package.id, "owner": self._login_json(package.owner),
                "repository": self._repo_json(repo, viewer) if repo and self._access(repo, viewer) else None,
                "creator": self._login_json(package.creator), "type": package.type, "name": package.name,
                "version": package.version, "created_at": _ts(package.created),
                "html_url": self._html_url(package.owner, "-", "packages", package.type, package.name,
                                           package.version)}

    def _owner_packages(self, ctx: _Ctx) -> list[Package]:
        owner = self.users.get(unquote(ctx.params["owner"]).lower())
        if owner is None:
            raise self._not_found("GetUserByName", [f"user redirect does not exist [name: {ctx.params['owner']}]"])
        return sorted((p for p in self.packages.values() if p.owner.lower() == owner.login.lower()),
                      key=lambda p: -p.created)

    def _h_packages_list(self, ctx: _Ctx) -> _Response:
        """listPackages: every package *version* of an owner, newest first; type and a name substring filter."""
        kind, q = ctx.q("type"), ctx.q("q").lower()
        found = [p for p in self._owner_packages(ctx) if (not kind or p.type == kind) and q in p.name.lower()]
        items, headers = self._page(ctx, found)
        return self._json(200, [self._package_json(p, ctx.user) for p in items], headers)

    def _h_package_get(self, ctx: _Ctx) -> _Response:
        """getPackage: one version of one package."""
        kind, name, version = (unquote(ctx.params[k]) for k in ("type", "name", "version"))
        found = next((p for p in self._owner_packages(ctx) if (p.type, p.name, p.version) == (kind, name, version)),
                     None)
        if found is None:
            raise self._not_found("GetPackageByName", ["package does not exist"])
        return self._json(200, self._package_json(found, ctx.user))

    def _h_org_labels(self, ctx: _Ctx) -> _Response:
        """ListLabels of an organisation (paged, X-Total-Count only)."""
        org = self.users.get(unquote(ctx.params["org"]).lower())
        if org is None or not org.is_org:
            raise self._not_found("GetOrgByName", [f"org does not exist [name: {ctx.params['org']}]"])
        labels = sorted(self.org_labels.get(org.login.lower(), []), key=lambda l: (l.name, l.id))
        items, headers = self._page(ctx, labels, link=False)
        return self._json(200, [{"id": l.id, "name": l.name, "exclusive": l.exclusive, "is_archived": l.is_archived,
                                 "color": l.color.lstrip("#"), "description": l.description,
                                 "url": self._api_url("orgs", org.login, "labels", str(l.id))} for l in items],
                          headers)

    def _h_package_versions(self, ctx: _Ctx) -> _Response:
        """listPackageVersions (Gitea only): the versions of one package, newest first."""
        kind, name = unquote(ctx.params["type"]), unquote(ctx.params["name"])
        found = [p for p in self._owner_packages(ctx) if p.type == kind and p.name == name]
        if not found:
            raise self._not_found()
        items, headers = self._page(ctx, found)
        return self._json(200, [self._package_json(p, ctx.user) for p in items], headers)

    def _key(self, form: Mapping[str, Any], name: str) -> str | None:
        # Go's encoding/json matches keys case-insensitively (so "do" binds "Do"),
        # but "merge_title_field" does not bind "MergeTitleField".
        if name in form:
            return name
        return next((k for k in form if k.lower() == name.lower()), None)

    def _has(self, form: Mapping[str, Any], name: str) -> bool:
        key = self._key(form, name)
        return key is not None and form[key] is not None

    def _field(self, form: Mapping[str, Any], name: str, kind: Any, default: Any) -> Any:
        """A form field with Go's decoding rules: null means absent; a wrong JSON type is a 422."""
        key = self._key(form, name)
        if key is None or form[key] is None:
            return default
        value = form[key]
        if isinstance(form, _TextForm) and isinstance(value, str):
            value = _from_text(value, kind)
        ok = {
            str: lambda v: isinstance(v, str),
            bool: lambda v: isinstance(v, bool),
            int: lambda v: isinstance(v, int) and not isinstance(v, bool),
            list: lambda v: isinstance(v, list),
            "ids": lambda v: isinstance(v, list) and all(isinstance(i, int) and not isinstance(i, bool) for i in v),
        }[kind](value)
        if not ok:
            go_type = {str: "string", bool: "bool", int: "int64", list: "[]string", "ids": "[]int64"}[kind]
            raise self._error(422, f"[]: json: cannot unmarshal {_json_kind(value)} into Go struct field "
                                   f".{name} of type {go_type}")
        return value


# --------------------------------------------------------------------------- module helpers

class _TextForm(dict):  # type: ignore[type-arg]
    """Fields from a urlencoded or multipart body: every value is text."""


def _from_text(value: str, kind: Any) -> Any:
    if kind is bool and value.lower() in ("true", "false", "1", "0", "on", "off"):
        return value.lower() in ("true", "1", "on")
    if kind is int and re.fullmatch(r"-?\d+", value):
        return int(value)
    return value


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _offered(route: _Route, flavour: str, line: str) -> bool:
    """Whether release *line* of *flavour* has *route*: the forge contract says (the route's own flavours for one
    it does not list yet)."""
    entry = _CONTRACTED.get(route)
    return forge_contract.offered(entry, flavour, line) if entry else flavour in route.flavours


def _match_route(method: str, path: str, flavour: str, line: str) -> tuple[_Route | None, dict[str, str], list[str]]:
    """The first route for *path* and *method* that release *line* of *flavour* has; else the methods the path has
    there (for a 405)."""
    others: list[str] = []
    for route, regex in _COMPILED:
        if not _offered(route, flavour, line):
            continue
        found = regex.match(path)
        if not found:
            continue
        if route.method == method:
            return route, found.groupdict(), []
        others.append(route.method)
    return None, {}, others


def _plain_not_found() -> _Response:
    return _Response(404, b"404 page not found\n", "text/plain; charset=utf-8")


def _multipart(body: bytes, content_type: str) -> dict[str, tuple[str | None, bytes]]:
    """name -> (filename, data) for a multipart/form-data body."""
    head = f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode("utf-8")
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + body)
    parts: dict[str, tuple[str | None, bytes]] = {}
    if not message.is_multipart():
        return parts
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if name:
            payload = part.get_payload(decode=True)
            parts[str(name)] = (part.get_filename(), payload if isinstance(payload, bytes) else b"")
    return parts


def _normalise_color(color: str) -> str | None:
    """Gitea's label.NormalizeColor: 3 or 6 hex digits, optional '#', stored as lowercase '#rrggbb'."""
    if not _COLOR_RE.match(color):
        return None
    digits = color.lstrip("#").lower()
    if len(digits) == 3:
        digits = "".join(c * 2 for c in digits)
    return "#" + digits


def _is_wip(title: str) -> bool:
    upper = title.upper()
    return any(upper.startswith(prefix) for prefix in _WIP_PREFIXES)


def _wiki_escape(segment: str, dash_marker: bool) -> str:
    """services/wiki/wiki_path.go escapeSegToWeb: a segment holding a '-' (or ending in .md) keeps its dashes and
    gets the marker '.-'; otherwise its spaces become dashes."""
    if dash_marker or "-" in segment or segment.endswith(".md"):
        segment += ".-"
    else:
        segment = segment.replace(" ", "-")
    return quote(segment, safe="")


def _wiki_unescape(segment: str) -> str:
    """wiki_path.go unescapeSegment: the marker is dropped, else each '-' is a space."""
    segment = segment[:-2] if segment.endswith(".-") else segment.replace("-", " ")
    return unquote(segment.replace("+", " "))


def _wiki_sub_url(title: str) -> str:
    """wiki_path.go UserTitleToWebPath: the name a page titled *title* is stored and read under."""
    return _wiki_escape(title.strip(), False) or "unnamed"


def _wiki_git_path(web_path: str) -> str:
    """wiki_path.go WebPathToGitPath: the file a web path names (two names are one page when this is equal)."""
    if web_path.endswith(".md"):
        return unquote(web_path)
    return "/".join(_wiki_escape(_wiki_unescape(seg), seg.endswith(".-")).replace("%20", " ").replace("+", " ")
                    for seg in web_path.split("/")) + ".md"


def _thread_status(thread: Notification) -> str:
    return "pinned" if thread.pinned else "unread" if thread.unread else "read"


def _set_thread_status(thread: Notification, status: str) -> None:
    thread.pinned = status == "pinned"
    thread.unread = status == "unread"


# --------------------------------------------------------------------------- HTTP plumbing

class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # a handler sleeping in an injected delay must not block stop()
    forge: FakeForge

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        error = sys.exc_info()[1]
        if isinstance(error, (ConnectionError, TimeoutError, OSError)):
            return  # the client went away (timeouts, dropped connections): expected in fault tests
        self.forge.internal_errors.append(traceback.format_exc())


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # signature from the base class
        pass  # keep test output clean; every request is in forge.requests

    def _read_body(self) -> bytes:
        length = self.headers.get("Content-Length")
        if length:
            return self.rfile.read(int(length))
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        return b""

    def _drop(self) -> None:
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _serve(self) -> None:
        forge = self.server.forge
        body = self._read_body()
        response, fault = forge._handle_request(self.command, self.path, dict(self.headers.items()), body)
        if response is None or (fault is not None and fault.kind == "drop-after"):
            self._drop()
            return
        payload = response.body
        declared = len(payload)
        if fault is not None and fault.kind == "truncated":
            payload = payload[: len(payload) // 2]
            if not fault.incomplete:
                declared = len(payload)
        if fault is not None and fault.kind == "create-then-timeout":
            forge._stopping.wait(fault.seconds)
        if fault is not None and fault.kind in ("trickle", "trickle-head"):
            self._trickle(response, payload, fault)
            return
        try:
            self.send_response(response.status)
            if response.content_type:
                self.send_header("Content-Type", response.content_type)
            for name, value in response.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(declared))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(payload)
            if declared != len(payload):
                self._drop()
        except OSError:
            self.close_connection = True

    def _trickle(self, response: _Response, payload: bytes, fault: Fault) -> None:
        """Answer one byte at a time, *fault.seconds* apart, until done, the client leaves or the forge stops."""
        forge = self.server.forge
        self.close_connection = True
        head = [f"HTTP/1.1 {response.status} {self.responses.get(response.status, ('',))[0]}"]
        if response.content_type:
            head.append(f"Content-Type: {response.content_type}")
        head += [f"{name}: {value}" for name, value in response.headers.items()]
        head += [f"Content-Length: {len(payload)}", "Connection: close", "", ""]
        raw = "\r\n".join(head).encode("latin-1")
        slow = raw + payload if fault.kind == "trickle-head" else payload
        try:
            if fault.kind == "trickle":
                self.wfile.write(raw)
                self.wfile.flush()
            for index in range(len(slow)):
                if forge._stopping.wait(fault.seconds):
                    return
                self.wfile.write(slow[index:index + 1])
                self.wfile.flush()
        except OSError:
            pass  # the client gave up

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _serve


# --------------------------------------------------------------------------- a request from a test

def call(forge: FakeForge, method: str, path: str, *, token: str | None = DEFAULT_TOKEN, body: Any = None,
         query: Any = None, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], Any]:
    """One request to *forge* with *body* as JSON; returns (status, headers, parsed JSON or raw bytes)."""
    kwargs: dict[str, Any] = {"token": token, "query": query, "headers": headers}
    if body is not None:
        kwargs["json_body"] = body
    status, response_headers, raw = forge.call(method, path, **kwargs)
    try:
        parsed: Any = json.loads(raw) if raw else raw
    except ValueError:
        parsed = raw
    return status, response_headers, parsed


def get(forge: FakeForge, where: str, **query: Any) -> tuple[int, dict[str, str], Any]:
    """A GET of *where* with *query*; returns (status, headers, parsed JSON or raw bytes)."""
    return call(forge, "GET", where, query=query or None)


def open_pull(forge: FakeForge, branch: str = "feature", files: dict[str, str] | None = None, *,
              title: str = "A change") -> int:
    """A pull request titled *title* from a new commit on *branch* into main of acme/web; its number."""
    forge.commit("acme", "web", branch, files or {"app.py": "print('hi')\n", "README.md": "changed\n"},
                 f"Add {branch}")
    status, _, pull = call(forge, "POST", "/repos/acme/web/pulls", body={"head": branch, "base": "main",
                                                                         "title": title})
    assert status == 201, pull
    return int(pull["number"])


# --------------------------------------------------------------------------- pytest fixtures

_warned_missing_specs = False


def assert_no_violations(forge: FakeForge) -> None:
    """Fail the current test if the forge recorded spec violations or internal errors."""
    problems = []
    if forge.violations:
        problems.append("requests the official API spec does not allow:\n  " + "\n  ".join(forge.violations))
    if forge.internal_errors:
        problems.append("the fake forge failed internally:\n" + "\n".join(forge.internal_errors))
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)


def running_forge(flavour: str, base_dir: Path) -> Iterator[FakeForge]:
    """A started fake forge for a fixture: stopped afterwards, and the test failed on any spec violation."""
    global _warned_missing_specs
    forge = FakeForge(flavour, base_dir=base_dir)
    if forge.spec_skip_reason and not _warned_missing_specs:
        _warned_missing_specs = True
        import warnings

        warnings.warn(forge.spec_skip_reason, stacklevel=2)
    forge.start()
    if os.environ.get("GIT_CONFIG_GLOBAL"):
        forge.rewrite_git_urls()
    try:
        yield forge
    finally:
        forge.stop()
    assert_no_violations(forge)


def forge_fixture(flavour: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeForge]:
    """A started fake forge of *flavour* for a fixture to yield; its teardown fails on a spec violation."""
    yield from running_forge(flavour, tmp_path_factory.mktemp(f"forge-{flavour}"))


@pytest.fixture
def gitea_forge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeForge]:
    """A started Gitea 1.25.4 fake forge (alice/alice-token, bob/bob-token, acme/web)."""
    yield from forge_fixture("gitea", tmp_path_factory)


@pytest.fixture
def forgejo_forge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeForge]:
    """A started Forgejo 15.0.3 fake forge (alice/alice-token, bob/bob-token, acme/web)."""
    yield from forge_fixture("forgejo", tmp_path_factory)


# The releases fake_forge plays: the newest Gitea and Forgejo, or those MADTEA_FAKE_RELEASES names
# (comma-separated, e.g. "gitea-1.21,forgejo-11", to run every forge-facing test on older releases).
FAKE_RELEASES = tuple(r.strip() for r in os.environ.get("MADTEA_FAKE_RELEASES", "gitea,forgejo").split(",")
                      if r.strip())
# The oldest and newest release of each flavour the contract covers: release_forge plays each.
EDGE_RELEASES = ("gitea-1.21", "gitea-1.25", "forgejo-11", "forgejo-15")


@pytest.fixture(params=FAKE_RELEASES)
def fake_forge(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeForge]:
    """A started fake forge, once per flavour."""
    yield from forge_fixture(request.param, tmp_path_factory)


@pytest.fixture(params=EDGE_RELEASES)
def release_forge(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeForge]:
    """A started fake forge, once per release in EDGE_RELEASES (the oldest and newest of each flavour)."""
    yield from forge_fixture(request.param, tmp_path_factory)
