"""The forge behaviour contract: every endpoint madtea calls, as the servers' own source decides it.

One entry per endpoint (method and path under ``/api/v1``). For each server, Gitea and Forgejo: the first
release line of the supported range that has it (``None``: no release of that flavour in the range has it),
the handler (file and function) that decides its status codes, error bodies, paging and fields, the statuses
that function writes itself, and how it pages. Statuses decided before the handler runs are the same for every
repository endpoint and come from the router (``MIDDLEWARE``). ``NOTES`` holds, per endpoint, the behaviours a
client must get right that the handler's signature does not show, each citing the function that decides it.

Read from the servers' source at these tags (the newest patch release of each line):

- Gitea 1.21.11, 1.22.6, 1.23.8, 1.24.7, 1.25.4 (go-gitea/gitea; the handlers cited are 1.25.4's);
- Forgejo 11.0.15, 12.0.4, 13.0.5, 14.0.5, 15.0.3 (codeberg forgejo/forgejo; the handlers cited are 15.0.3's).

An endpoint's presence in a release was read from that tag's route table as its API document renders it
(``templates/swagger/v1_json.tmpl``, which ``routers/api/v1/api.go`` registers against); a handler's file and
function from the ``swagger:operation`` comment that heads it; its own statuses and paging from its body
(``http.Status*``, ``APIErrorNotFound``, ``GetListOptions``, ``SetLinkHeader``, ``SetTotalCountHeader``).
Nothing of the servers' code is copied here, only where it lives and what it decides.

The fake forge (tests/fakeforge.py) serves exactly the endpoints a release has by this table, and madtea's
own version gate (``forge.SINCE``) is checked against it (tests/test_forge_contract.py).
"""
from __future__ import annotations

import re
from typing import NamedTuple

GITEA_RELEASES = {"1.21": ("v1.21.11", "acdcfcc6ebfe762657aa866ccbb8d9f8bd906639"),
                  "1.22": ("v1.22.6", "8eefa1f6dedf2488db2c9e12c916e8e51f673160"),
                  "1.23": ("v1.23.8", "cccd54999a6c3b9f2573d2ba20d83d7c4cac77c3"),
                  "1.24": ("v1.24.7", "99053ce4fa2b45f1bca5837418c0c57f793ca824"),
                  "1.25": ("v1.25.4", "369830bada2fd8826a5135cb2fc66660a9bef708")}
FORGEJO_RELEASES = {"11": ("v11.0.15", "a32151caf6b539640578f203a6feb51bb5603160"),
                    "12": ("v12.0.4", "39aca9766ba2d3bb89881813a2e36299920ff1ca"),
                    "13": ("v13.0.5", "fb73f467c03b2bec6b3940789f08162378f2d186"),
                    "14": ("v14.0.5", "df982912e8c78fcda3d9bf7427e17e4b4984a210"),
                    "15": ("v15.0.3", "f6d4219f10a29dd6d59dfb5d8e44b7ff7aed4274")}
RELEASES = {"gitea": GITEA_RELEASES, "forgejo": FORGEJO_RELEASES}
# The version string each release's GET /version answers (Forgejo's names the Gitea API it follows:
# GITEA_COMPATIBILITY in its Makefile, gitea-1.22.0 in 11 to 15).
VERSION_STRINGS = {f"gitea-{line}": tag[1:] for line, (tag, _) in GITEA_RELEASES.items()} | \
    {f"forgejo-{line}": f"{tag[1:]}+gitea-1.22.0" for line, (tag, _) in FORGEJO_RELEASES.items()}

# Decided before any handler runs (routers/api/v1/api.go, both flavours): reqToken (401 "token is required"),
# apiAuth (401 on a bad token), tokenRequiresScopes (403 naming the scope), repoAssignment (404 for a
# repository that is missing or that the caller cannot see: a private one answers 404, not 401, to a request
# without a token), reqRepoWriter/reqRepoReader/reqAdmin (403), mustNotBeArchived (423), bind (422 for the
# first binding error), and the router itself (a plain-text 404 for a path no release registers).
MIDDLEWARE = {
    "gitea": ("routers/api/v1/api.go", ("reqToken", "apiAuth", "tokenRequiresScopes", "repoAssignment",
                                        "reqRepoWriter", "mustNotBeArchived", "bind")),
    "forgejo": ("routers/api/v1/api.go", ("reqToken", "apiAuth", "tokenRequiresScopes", "repoAssignment",
                                          "reqRepoWriter", "mustNotBeArchived", "bind")),
}


class S(NamedTuple):
    """One server's side of an endpoint."""

    since: str  # the first release line in the range that has it ("1.24", "12")
    file: str  # the handler's file in that server's source
    function: str  # the handler
    statuses: tuple[int, ...]  # the statuses the handler writes itself (besides MIDDLEWARE's)
    paging: str  # "link+total": Link and X-Total-Count; "total": X-Total-Count only; "limit": paged, no count
    #              headers; "none": one answer, not paged


class E(NamedTuple):
    """One endpoint: its method and path under /api/v1 (``{name*}`` spans several segments)."""

    method: str
    path: str
    gitea: S | None
    forgejo: S | None

    @property
    def key(self) -> str:
        return f"{self.method} {self.path}"

    def side(self, flavour: str) -> S | None:
        return self.gitea if flavour == "gitea" else self.forgejo


ENDPOINTS: tuple[E, ...] = (
    E("GET", "/version",
      S("1.21", "routers/api/v1/misc/version.go", "Version", (200,), "none"),
      S("11", "routers/api/v1/misc/version.go", "Version", (200,), "none")),
    E("GET", "/settings/api",
      S("1.21", "routers/api/v1/settings/settings.go", "GetGeneralAPISettings", (200,), "none"),
      S("11", "routers/api/v1/settings/settings.go", "GetGeneralAPISettings", (200,), "none")),
    E("GET", "/user",
      S("1.21", "routers/api/v1/user/user.go", "GetAuthenticatedUser", (200,), "none"),
      S("11", "routers/api/v1/user/user.go", "GetAuthenticatedUser", (200,), "none")),
    E("GET", "/user/repos",
      S("1.21", "routers/api/v1/user/repo.go", "ListMyRepos", (200, 500), "link+total"),
      S("11", "routers/api/v1/user/repo.go", "ListMyRepos", (200, 422, 500), "link+total")),
    E("POST", "/user/repos",
      S("1.21", "routers/api/v1/repo/repo.go", "Create", (422,), "none"),
      S("11", "routers/api/v1/repo/repo.go", "Create", (422,), "none")),
    E("POST", "/orgs/{org}/repos",
      S("1.21", "routers/api/v1/repo/repo.go", "CreateOrgRepo", (403, 404, 422, 500), "none"),
      S("11", "routers/api/v1/repo/repo.go", "CreateOrgRepo", (403, 404, 422, 500), "none")),
    E("GET", "/orgs/{org}/repos",
      S("1.21", "routers/api/v1/user/repo.go", "ListOrgRepos", (), "none"),
      S("11", "routers/api/v1/user/repo.go", "ListOrgRepos", (), "none")),
    E("GET", "/users/{username}/repos",
      S("1.21", "routers/api/v1/user/repo.go", "ListUserRepos", (), "none"),
      S("11", "routers/api/v1/user/repo.go", "ListUserRepos", (), "none")),
    E("GET", "/notifications",
      S("1.21", "routers/api/v1/notify/user.go", "ListNotifications", (200, 500), "total"),
      S("11", "routers/api/v1/notify/user.go", "ListNotifications", (200, 500), "total")),
    E("PUT", "/notifications",
      S("1.21", "routers/api/v1/notify/user.go", "ReadNotifications", (400, 500), "none"),
      S("11", "routers/api/v1/notify/user.go", "ReadNotifications", (400, 500), "none")),
    E("GET", "/notifications/threads/{id}",
      S("1.21", "routers/api/v1/notify/threads.go", "GetThread", (200, 500), "none"),
      S("11", "routers/api/v1/notify/threads.go", "GetThread", (200, 500), "none")),
    E("PATCH", "/notifications/threads/{id}",
      S("1.21", "routers/api/v1/notify/threads.go", "ReadThread", (500,), "none"),
      S("11", "routers/api/v1/notify/threads.go", "ReadThread", (500,), "none")),
    E("GET", "/repos/search",
      S("1.21", "routers/api/v1/repo/repo.go", "Search", (200, 422, 500), "link+total"),
      S("11", "routers/api/v1/repo/repo.go", "Search", (200, 422, 500), "link+total")),
    E("GET", "/user/orgs",
      S("1.21", "routers/api/v1/org/org.go", "ListMyOrgs", (), "none"),
      S("11", "routers/api/v1/org/org.go", "ListMyOrgs", (), "none")),
    E("GET", "/users/search",
      S("1.21", "routers/api/v1/user/user.go", "Search", (200, 500), "link+total"),
      S("11", "routers/api/v1/user/user.go", "Search", (200, 500), "link+total")),
    E("GET", "/orgs/{org}/teams/search",
      S("1.21", "routers/api/v1/org/team.go", "SearchTeam", (200, 500), "link+total"),
      S("11", "routers/api/v1/org/team.go", "SearchTeam", (200, 500), "link+total")),
    E("GET", "/packages/{owner}",
      S("1.21", "routers/api/v1/packages/package.go", "ListPackages", (200, 500), "link+total"),
      S("11", "routers/api/v1/packages/package.go", "ListPackages", (200, 500), "link+total")),
    E("GET", "/packages/{owner}/{type}/{name}",
      S("1.24", "routers/api/v1/packages/package.go", "ListPackageVersions", (200, 500), "link+total"),
      None),
    E("GET", "/repos/issues/search",
      S("1.21", "routers/api/v1/repo/issue.go", "SearchIssues", (200, 400, 422, 500), "link+total"),
      S("11", "routers/api/v1/repo/issue.go", "SearchIssues", (200, 400, 422, 500), "link+total")),
    E("GET", "/repos/{owner}/{repo}",
      S("1.21", "routers/api/v1/repo/repo.go", "Get", (200, 500), "none"),
      S("11", "routers/api/v1/repo/repo.go", "Get", (200, 500), "none")),
    E("PATCH", "/repos/{owner}/{repo}",
      S("1.21", "routers/api/v1/repo/repo.go", "Edit", (200, 500), "none"),
      S("11", "routers/api/v1/repo/repo.go", "Edit", (200, 500), "none")),
    E("DELETE", "/repos/{owner}/{repo}",
      S("1.21", "routers/api/v1/repo/repo.go", "Delete", (204, 403, 500), "none"),
      S("11", "routers/api/v1/repo/repo.go", "Delete", (204, 403, 500), "none")),
    E("GET", "/repos/{owner}/{repo}/forks",
      S("1.21", "routers/api/v1/repo/fork.go", "ListForks", (200, 500), "total"),
      S("11", "routers/api/v1/repo/fork.go", "ListForks", (200, 500), "total")),
    E("POST", "/repos/{owner}/{repo}/forks",
      S("1.21", "routers/api/v1/repo/fork.go", "CreateFork", (202, 403, 409, 422, 500), "none"),
      S("11", "routers/api/v1/repo/fork.go", "CreateFork", (202, 403, 409, 422, 500), "none")),
    E("GET", "/repos/{owner}/{repo}/branches",
      S("1.21", "routers/api/v1/repo/branch.go", "ListBranches", (200, 500), "link+total"),
      S("11", "routers/api/v1/repo/branch.go", "ListBranches", (200, 500), "link+total")),
    E("POST", "/repos/{owner}/{repo}/branches",
      S("1.21", "routers/api/v1/repo/branch.go", "CreateBranch", (201, 403, 404, 409, 500), "none"),
      S("11", "routers/api/v1/repo/branch.go", "CreateBranch", (201, 403, 404, 409, 500), "none")),
    E("GET", "/repos/{owner}/{repo}/branches/{branch*}",
      S("1.21", "routers/api/v1/repo/branch.go", "GetBranch", (200, 404, 500), "none"),
      S("11", "routers/api/v1/repo/branch.go", "GetBranch", (200, 404, 500), "none")),
    E("DELETE", "/repos/{owner}/{repo}/branches/{branch*}",
      S("1.21", "routers/api/v1/repo/branch.go", "DeleteBranch", (204, 403, 404, 500), "none"),
      S("11", "routers/api/v1/repo/branch.go", "DeleteBranch", (204, 403, 404, 500), "none")),
    E("PATCH", "/repos/{owner}/{repo}/branches/{branch*}",
      S("1.23", "routers/api/v1/repo/branch.go", "RenameBranch", (204, 403, 404, 422, 500), "none"),
      S("11", "routers/api/v1/repo/branch.go", "UpdateBranch", (204, 403, 404, 422, 500), "none")),
    E("GET", "/repos/{owner}/{repo}/commits",
      S("1.21", "routers/api/v1/repo/commits.go", "GetAllCommits", (200, 404, 409, 422, 500), "link+total"),
      S("11", "routers/api/v1/repo/commits.go", "GetAllCommits", (200, 404, 409, 500), "link+total")),
    E("GET", "/repos/{owner}/{repo}/git/commits/{sha}.{diffType}",
      S("1.21", "routers/api/v1/repo/commits.go", "DownloadCommitDiffOrPatch", (404, 500), "none"),
      S("11", "routers/api/v1/repo/commits.go", "DownloadCommitDiffOrPatch", (404, 500), "none")),
    E("GET", "/repos/{owner}/{repo}/git/commits/{sha}",
      S("1.21", "routers/api/v1/repo/commits.go", "GetSingleCommit", (422,), "none"),
      S("11", "routers/api/v1/repo/commits.go", "GetSingleCommit", (422,), "none")),
    E("GET", "/repos/{owner}/{repo}/tags",
      S("1.21", "routers/api/v1/repo/tag.go", "ListTags", (200, 500), "total"),
      S("11", "routers/api/v1/repo/tag.go", "ListTags", (200, 500), "link+total")),
    E("POST", "/repos/{owner}/{repo}/tags",
      S("1.21", "routers/api/v1/repo/tag.go", "CreateTag", (201, 404, 409, 422, 500), "none"),
      S("11", "routers/api/v1/repo/tag.go", "CreateTag", (201, 404, 409, 422, 500), "none")),
    E("GET", "/repos/{owner}/{repo}/tags/{tag*}",
      S("1.21", "routers/api/v1/repo/tag.go", "GetTag", (200, 404), "none"),
      S("11", "routers/api/v1/repo/tag.go", "GetTag", (200, 404, 500), "none")),
    E("DELETE", "/repos/{owner}/{repo}/tags/{tag*}",
      S("1.21", "routers/api/v1/repo/tag.go", "DeleteTag", (204, 404, 409, 422, 500), "none"),
      S("11", "routers/api/v1/repo/tag.go", "DeleteTag", (204, 404, 409, 422, 500), "none")),
    E("GET", "/repos/{owner}/{repo}/commits/{ref}/status",
      S("1.21", "routers/api/v1/repo/status.go", "GetCombinedCommitStatusByRef", (200, 500), "total"),
      S("11", "routers/api/v1/repo/status.go", "GetCombinedCommitStatusByRef", (200, 500), "total")),
    E("GET", "/repos/{owner}/{repo}/contents",
      S("1.21", "routers/api/v1/repo/file.go", "GetContentsList", (), "none"),
      S("11", "routers/api/v1/repo/file.go", "GetContentsList", (), "none")),
    E("POST", "/repos/{owner}/{repo}/contents",
      S("1.21", "routers/api/v1/repo/file.go", "ChangeFiles", (201, 422), "none"),
      S("11", "routers/api/v1/repo/file.go", "ChangeFiles", (201, 422), "none")),
    E("GET", "/repos/{owner}/{repo}/contents/{filepath*}",
      S("1.21", "routers/api/v1/repo/file.go", "GetContents", (200,), "limit"),
      S("11", "routers/api/v1/repo/file.go", "GetContents", (200, 404, 500), "none")),
    E("POST", "/repos/{owner}/{repo}/contents/{filepath*}",
      S("1.21", "routers/api/v1/repo/file.go", "CreateFile", (201, 422), "none"),
      S("11", "routers/api/v1/repo/file.go", "CreateFile", (201, 422), "none")),
    E("PUT", "/repos/{owner}/{repo}/contents/{filepath*}",
      S("1.21", "routers/api/v1/repo/file.go", "UpdateFile", (200, 422), "none"),
      S("11", "routers/api/v1/repo/file.go", "UpdateFile", (200, 422), "none")),
    E("DELETE", "/repos/{owner}/{repo}/contents/{filepath*}",
      S("1.21", "routers/api/v1/repo/file.go", "DeleteFile", (200, 204), "none"),
      S("11", "routers/api/v1/repo/file.go", "DeleteFile", (200, 204, 400, 403, 404, 500), "none")),
    E("GET", "/repos/{owner}/{repo}/raw/{filepath*}",
      S("1.21", "routers/api/v1/repo/file.go", "GetRawFile", (404, 500), "none"),
      S("11", "routers/api/v1/repo/file.go", "GetRawFile", (404, 500), "none")),
    E("GET", "/repos/{owner}/{repo}/git/trees/{sha}",
      S("1.21", "routers/api/v1/repo/tree.go", "GetTree", (200, 400), "total"),
      S("11", "routers/api/v1/repo/tree.go", "GetTree", (200, 400), "total")),
    E("GET", "/repos/{owner}/{repo}/collaborators/{collaborator}",
      S("1.21", "routers/api/v1/repo/collaborators.go", "IsCollaborator", (204, 404, 422, 500), "none"),
      S("11", "routers/api/v1/repo/collaborators.go", "IsCollaborator", (204, 404, 422, 500), "none")),
    E("GET", "/repos/{owner}/{repo}/issues",
      S("1.21", "routers/api/v1/repo/issue.go", "ListIssues", (200, 404, 422, 500), "link+total"),
      S("11", "routers/api/v1/repo/issue.go", "ListIssues", (200, 404, 422, 500), "link+total")),
    E("POST", "/repos/{owner}/{repo}/issues",
      S("1.21", "routers/api/v1/repo/issue.go", "CreateIssue", (201, 400, 403, 412, 422, 500), "none"),
      S("11", "routers/api/v1/repo/issue.go", "CreateIssue", (201, 400, 403, 412, 422, 500), "none")),
    E("GET", "/repos/{owner}/{repo}/issues/comments",
      S("1.21", "routers/api/v1/repo/issue_comment.go", "ListRepoIssueComments", (200, 404, 422, 500), "total"),
      S("11", "routers/api/v1/repo/issue_comment.go", "ListRepoIssueComments", (200, 404, 422, 500), "total")),
    E("GET", "/repos/{owner}/{repo}/issues/comments/{id}",
      S("1.21", "routers/api/v1/repo/issue_comment.go", "GetIssueComment", (200, 204, 404, 500), "none"),
      S("11", "routers/api/v1/repo/issue_comment.go", "GetIssueComment", (200, 204, 500), "none")),
    E("PATCH", "/repos/{owner}/{repo}/issues/comments/{id}",
      S("1.21", "routers/api/v1/repo/issue_comment.go", "EditIssueComment", (), "none"),
      S("11", "routers/api/v1/repo/issue_comment.go", "EditIssueComment", (), "none")),
    E("DELETE", "/repos/{owner}/{repo}/issues/comments/{id}",
      S("1.21", "routers/api/v1/repo/issue_comment.go", "DeleteIssueComment", (), "none"),
      S("11", "routers/api/v1/repo/issue_comment.go", "DeleteIssueComment", (), "none")),
    E("GET", "/repos/{owner}/{repo}/issues/{index}",
      S("1.21", "routers/api/v1/repo/issue.go", "GetIssue", (200, 404, 500), "none"),
      S("11", "routers/api/v1/repo/issue.go", "GetIssue", (200, 404, 500), "none")),
    E("PATCH", "/repos/{owner}/{repo}/issues/{index}",
      S("1.21", "routers/api/v1/repo/issue.go", "EditIssue", (201, 400, 403, 404, 412, 500), "none"),
      S("11", "routers/api/v1/repo/issue.go", "EditIssue", (201, 400, 403, 404, 412, 500), "none")),
    E("DELETE", "/repos/{owner}/{repo}/issues/{index}",
      S("1.21", "routers/api/v1/repo/issue.go", "DeleteIssue", (204, 404, 500), "none"),
      S("11", "routers/api/v1/repo/issue.go", "DeleteIssue", (204, 404, 500), "none")),
    E("GET", "/repos/{owner}/{repo}/issues/{index}/comments",
      S("1.21", "routers/api/v1/repo/issue_comment.go", "ListIssueComments", (200, 404, 422, 500), "total"),
      S("11", "routers/api/v1/repo/issue_comment.go", "ListIssueComments", (200, 404, 422, 500), "total")),
    E("POST", "/repos/{owner}/{repo}/issues/{index}/comments",
      S("1.21", "routers/api/v1/repo/issue_comment.go", "CreateIssueComment", (201, 403, 404, 500), "none"),
      S("11", "routers/api/v1/repo/issue_comment.go", "CreateIssueComment", (201, 403, 404, 500), "none")),
    E("PATCH", "/repos/{owner}/{repo}/issues/{index}/comments/{id}",
      S("1.21", "routers/api/v1/repo/issue_comment.go", "EditIssueCommentDeprecated", (), "none"),
      S("11", "routers/api/v1/repo/issue_comment.go", "EditIssueCommentDeprecated", (), "none")),
    E("DELETE", "/repos/{owner}/{repo}/issues/{index}/comments/{id}",
      S("1.21", "routers/api/v1/repo/issue_comment.go", "DeleteIssueCommentDeprecated", (), "none"),
      S("11", "routers/api/v1/repo/issue_comment.go", "DeleteIssueCommentDeprecated", (), "none")),
    E("GET", "/repos/{owner}/{repo}/issues/{index}/timeline",
      S("1.21", "routers/api/v1/repo/issue_comment.go", "ListIssueCommentsAndTimeline", (200, 422, 500), "total"),
      S("11", "routers/api/v1/repo/issue_comment.go", "ListIssueCommentsAndTimeline", (200, 404, 422, 500), "total")),
    E("GET", "/repos/{owner}/{repo}/issues/{index}/labels",
      S("1.21", "routers/api/v1/repo/issue_label.go", "ListIssueLabels", (200, 404, 500), "none"),
      S("11", "routers/api/v1/repo/issue_label.go", "ListIssueLabels", (200, 404, 500), "none")),
    E("POST", "/repos/{owner}/{repo}/issues/{index}/labels",
      S("1.21", "routers/api/v1/repo/issue_label.go", "AddIssueLabels", (200, 500), "none"),
      S("11", "routers/api/v1/repo/issue_label.go", "AddIssueLabels", (200, 500), "none")),
    E("PUT", "/repos/{owner}/{repo}/issues/{index}/labels",
      S("1.21", "routers/api/v1/repo/issue_label.go", "ReplaceIssueLabels", (200, 500), "none"),
      S("11", "routers/api/v1/repo/issue_label.go", "ReplaceIssueLabels", (200, 500), "none")),
    E("DELETE", "/repos/{owner}/{repo}/issues/{index}/labels",
      S("1.21", "routers/api/v1/repo/issue_label.go", "ClearIssueLabels", (204, 403, 404, 500), "none"),
      S("11", "routers/api/v1/repo/issue_label.go", "ClearIssueLabels", (204, 403, 404, 500), "none")),
    E("DELETE", "/repos/{owner}/{repo}/issues/{index}/labels/{id}",
      S("1.21", "routers/api/v1/repo/issue_label.go", "DeleteIssueLabel", (204, 403, 404, 422, 500), "none"),
      S("11", "routers/api/v1/repo/issue_label.go", "DeleteIssueLabel", (200, 204, 403, 404, 422, 500), "none")),
    E("PUT", "/repos/{owner}/{repo}/issues/{index}/lock",
      S("1.24", "routers/api/v1/repo/issue_lock.go", "LockIssue", (204, 403, 404, 500), "none"),
      None),
    E("DELETE", "/repos/{owner}/{repo}/issues/{index}/lock",
      S("1.24", "routers/api/v1/repo/issue_lock.go", "UnlockIssue", (204, 403, 404, 500), "none"),
      None),
    E("GET", "/repos/{owner}/{repo}/labels",
      S("1.21", "routers/api/v1/repo/label.go", "ListLabels", (200, 500), "total"),
      S("11", "routers/api/v1/repo/label.go", "ListLabels", (200, 500), "total")),
    E("POST", "/repos/{owner}/{repo}/labels",
      S("1.21", "routers/api/v1/repo/label.go", "CreateLabel", (201, 422, 500), "none"),
      S("11", "routers/api/v1/repo/label.go", "CreateLabel", (201, 422, 500), "none")),
    E("GET", "/repos/{owner}/{repo}/labels/{id}",
      S("1.21", "routers/api/v1/repo/label.go", "GetLabel", (200, 404, 500), "none"),
      S("11", "routers/api/v1/repo/label.go", "GetLabel", (200, 404, 500), "none")),
    E("PATCH", "/repos/{owner}/{repo}/labels/{id}",
      S("1.21", "routers/api/v1/repo/label.go", "EditLabel", (200, 404, 422, 500), "none"),
      S("11", "routers/api/v1/repo/label.go", "EditLabel", (200, 404, 422, 500), "none")),
    E("DELETE", "/repos/{owner}/{repo}/labels/{id}",
      S("1.21", "routers/api/v1/repo/label.go", "DeleteLabel", (204, 500), "none"),
      S("11", "routers/api/v1/repo/label.go", "DeleteLabel", (204, 500), "none")),
    E("GET", "/repos/{owner}/{repo}/milestones",
      S("1.21", "routers/api/v1/repo/milestone.go", "ListMilestones", (200, 500), "total"),
      S("11", "routers/api/v1/repo/milestone.go", "ListMilestones", (200, 500), "total")),
    E("POST", "/repos/{owner}/{repo}/milestones",
      S("1.21", "routers/api/v1/repo/milestone.go", "CreateMilestone", (201, 500), "none"),
      S("11", "routers/api/v1/repo/milestone.go", "CreateMilestone", (201, 500), "none")),
    E("GET", "/repos/{owner}/{repo}/milestones/{id}",
      S("1.21", "routers/api/v1/repo/milestone.go", "GetMilestone", (200,), "none"),
      S("11", "routers/api/v1/repo/milestone.go", "GetMilestone", (200,), "none")),
    E("PATCH", "/repos/{owner}/{repo}/milestones/{id}",
      S("1.21", "routers/api/v1/repo/milestone.go", "EditMilestone", (200, 500), "none"),
      S("11", "routers/api/v1/repo/milestone.go", "EditMilestone", (200, 500), "none")),
    E("DELETE", "/repos/{owner}/{repo}/milestones/{id}",
      S("1.21", "routers/api/v1/repo/milestone.go", "DeleteMilestone", (204, 500), "none"),
      S("11", "routers/api/v1/repo/milestone.go", "DeleteMilestone", (204, 500), "none")),
    E("GET", "/repos/{owner}/{repo}/pulls",
      S("1.21", "routers/api/v1/repo/pull.go", "ListPullRequests", (200, 400, 500), "link+total"),
      S("11", "routers/api/v1/repo/pull.go", "ListPullRequests", (200, 400, 500), "link+total")),
    E("POST", "/repos/{owner}/{repo}/pulls",
      S("1.21", "routers/api/v1/repo/pull.go", "CreatePullRequest", (201, 400, 403, 404, 409, 422, 500), "none"),
      S("11", "routers/api/v1/repo/pull.go", "CreatePullRequest", (201, 400, 403, 404, 409, 422, 500), "none")),
    E("GET", "/repos/{owner}/{repo}/pulls/{index}.{diffType}",
      S("1.21", "routers/api/v1/repo/pull.go", "DownloadPullDiffOrPatch", (404, 500), "none"),
      S("11", "routers/api/v1/repo/pull.go", "DownloadPullDiffOrPatch", (404, 500), "none")),
    E("GET", "/repos/{owner}/{repo}/pulls/{index}",
      S("1.21", "routers/api/v1/repo/pull.go", "GetPullRequest", (200, 404, 500), "none"),
      S("11", "routers/api/v1/repo/pull.go", "GetPullRequest", (200, 404, 500), "none")),
    E("PATCH", "/repos/{owner}/{repo}/pulls/{index}",
      S("1.21", "routers/api/v1/repo/pull.go", "EditPullRequest", (201, 400, 403, 404, 409, 412, 422, 500), "none"),
      S("11", "routers/api/v1/repo/pull.go", "EditPullRequest", (201, 400, 403, 404, 409, 412, 422, 500), "none")),
    E("GET", "/repos/{owner}/{repo}/pulls/{index}/merge",
      S("1.21", "routers/api/v1/repo/pull.go", "IsPullRequestMerged", (204, 404, 500), "none"),
      S("11", "routers/api/v1/repo/pull.go", "IsPullRequestMerged", (204, 404, 500), "none")),
    E("POST", "/repos/{owner}/{repo}/pulls/{index}/merge",
      S("1.21", "routers/api/v1/repo/pull.go", "MergePullRequest", (200, 201, 404, 405, 409, 500), "none"),
      S("11", "routers/api/v1/repo/pull.go", "MergePullRequest", (200, 201, 403, 404, 405, 409, 500), "none")),
    E("GET", "/repos/{owner}/{repo}/pulls/{index}/reviews",
      S("1.21", "routers/api/v1/repo/pull_review.go", "ListPullReviews", (200, 404, 500), "total"),
      S("11", "routers/api/v1/repo/pull_review.go", "ListPullReviews", (200, 404, 500), "total")),
    E("POST", "/repos/{owner}/{repo}/pulls/{index}/reviews",
      S("1.21", "routers/api/v1/repo/pull_review.go", "CreatePullReview", (200, 404, 422, 500), "none"),
      S("11", "routers/api/v1/repo/pull_review.go", "CreatePullReview", (200, 404, 500), "none")),
    E("GET", "/repos/{owner}/{repo}/pulls/{index}/files",
      S("1.21", "routers/api/v1/repo/pull.go", "GetPullRequestFiles", (200, 404, 500), "link+total"),
      S("11", "routers/api/v1/repo/pull.go", "GetPullRequestFiles", (200, 404, 500), "link+total")),
    E("GET", "/repos/{owner}/{repo}/pulls/{index}/reviews/{id}",
      S("1.21", "routers/api/v1/repo/pull_review.go", "GetPullReview", (200, 500), "none"),
      S("11", "routers/api/v1/repo/pull_review.go", "GetPullReview", (200, 500), "none")),
    E("POST", "/repos/{owner}/{repo}/pulls/{index}/reviews/{id}",
      S("1.21", "routers/api/v1/repo/pull_review.go", "SubmitPullReview", (200, 422, 500), "none"),
      S("11", "routers/api/v1/repo/pull_review.go", "SubmitPullReview", (200, 422, 500), "none")),
    E("GET", "/repos/{owner}/{repo}/pulls/{index}/reviews/{id}/comments",
      S("1.21", "routers/api/v1/repo/pull_review.go", "GetPullReviewComments", (200, 500), "none"),
      S("11", "routers/api/v1/repo/pull_review.go", "GetPullReviewComments", (200, 500), "none")),
    E("POST", "/repos/{owner}/{repo}/pulls/{index}/reviews/{id}/comments",
      None,
      S("11", "routers/api/v1/repo/pull_review.go", "CreatePullReviewComment", (200, 500), "none")),
    E("POST", "/repos/{owner}/{repo}/pulls/{index}/reviews/{id}/dismissals",
      S("1.21", "routers/api/v1/repo/pull_review.go", "DismissPullReview", (), "none"),
      S("11", "routers/api/v1/repo/pull_review.go", "DismissPullReview", (), "none")),
    E("POST", "/repos/{owner}/{repo}/pulls/{index}/requested_reviewers",
      S("1.21", "routers/api/v1/repo/pull_review.go", "CreateReviewRequests", (), "none"),
      S("11", "routers/api/v1/repo/pull_review.go", "CreateReviewRequests", (), "none")),
    E("DELETE", "/repos/{owner}/{repo}/pulls/{index}/requested_reviewers",
      S("1.21", "routers/api/v1/repo/pull_review.go", "DeleteReviewRequests", (), "none"),
      S("11", "routers/api/v1/repo/pull_review.go", "DeleteReviewRequests", (), "none")),
    E("POST", "/repos/{owner}/{repo}/pulls/{index}/update",
      S("1.21", "routers/api/v1/repo/pull.go", "UpdatePullRequest", (200, 403, 404, 409, 422, 500), "none"),
      S("11", "routers/api/v1/repo/pull.go", "UpdatePullRequest", (200, 403, 404, 409, 422, 500), "none")),
    E("GET", "/repos/{owner}/{repo}/pulls/{base}/{head}",
      S("1.22", "routers/api/v1/repo/pull.go", "GetPullRequestByBaseHead", (200, 404, 500), "none"),
      S("11", "routers/api/v1/repo/pull.go", "GetPullRequestByBaseHead", (200, 404, 500), "none")),
    E("GET", "/repos/{owner}/{repo}/releases",
      S("1.21", "routers/api/v1/repo/release.go", "ListReleases", (200, 500), "link+total"),
      S("11", "routers/api/v1/repo/release.go", "ListReleases", (200, 500), "link+total")),
    E("POST", "/repos/{owner}/{repo}/releases",
      S("1.21", "routers/api/v1/repo/release.go", "CreateRelease", (201, 404, 409, 422, 500), "none"),
      S("11", "routers/api/v1/repo/release.go", "CreateRelease", (201, 404, 409, 422, 500), "none")),
    E("GET", "/repos/{owner}/{repo}/releases/latest",
      S("1.21", "routers/api/v1/repo/release.go", "GetLatestRelease", (200, 404, 500), "none"),
      S("11", "routers/api/v1/repo/release.go", "GetLatestRelease", (200, 404, 500), "none")),
    E("GET", "/repos/{owner}/{repo}/releases/tags/{tag*}",
      S("1.21", "routers/api/v1/repo/release_tags.go", "GetReleaseByTag", (200, 404, 500), "none"),
      S("11", "routers/api/v1/repo/release_tags.go", "GetReleaseByTag", (200, 404, 500), "none")),
    E("DELETE", "/repos/{owner}/{repo}/releases/tags/{tag*}",
      S("1.21", "routers/api/v1/repo/release_tags.go", "DeleteReleaseByTag", (204, 404, 422, 500), "none"),
      S("11", "routers/api/v1/repo/release_tags.go", "DeleteReleaseByTag", (204, 404, 422, 500), "none")),
    E("GET", "/repos/{owner}/{repo}/releases/{id}",
      S("1.21", "routers/api/v1/repo/release.go", "GetRelease", (200, 404, 500), "none"),
      S("11", "routers/api/v1/repo/release.go", "GetRelease", (200, 404, 500), "none")),
    E("PATCH", "/repos/{owner}/{repo}/releases/{id}",
      S("1.21", "routers/api/v1/repo/release.go", "EditRelease", (200, 404, 500), "none"),
      S("11", "routers/api/v1/repo/release.go", "EditRelease", (200, 404, 500), "none")),
    E("DELETE", "/repos/{owner}/{repo}/releases/{id}",
      S("1.21", "routers/api/v1/repo/release.go", "DeleteRelease", (204, 404, 422, 500), "none"),
      S("11", "routers/api/v1/repo/release.go", "DeleteRelease", (204, 404, 422, 500), "none")),
    E("GET", "/repos/{owner}/{repo}/releases/{id}/assets",
      S("1.21", "routers/api/v1/repo/release_attachment.go", "ListReleaseAttachments", (200, 404, 500), "none"),
      S("11", "routers/api/v1/repo/release_attachment.go", "ListReleaseAttachments", (200, 404, 500), "none")),
    E("POST", "/repos/{owner}/{repo}/releases/{id}/assets",
      S("1.21", "routers/api/v1/repo/release_attachment.go", "CreateReleaseAttachment",
        (201, 400, 404, 413, 500), "none"),
      S("11", "routers/api/v1/repo/release_attachment.go", "CreateReleaseAttachment", (201, 400, 404, 500), "none")),
    E("GET", "/repos/{owner}/{repo}/wiki/pages",
      S("1.21", "routers/api/v1/repo/wiki.go", "ListWikiPages", (200, 500), "total"),
      S("11", "routers/api/v1/repo/wiki.go", "ListWikiPages", (200, 500), "total")),
    E("POST", "/repos/{owner}/{repo}/wiki/new",
      S("1.21", "routers/api/v1/repo/wiki.go", "NewWikiPage", (201, 400, 500), "none"),
      S("11", "routers/api/v1/repo/wiki.go", "NewWikiPage", (201, 400, 500), "none")),
    E("GET", "/repos/{owner}/{repo}/wiki/page/{pageName}",
      S("1.21", "routers/api/v1/repo/wiki.go", "GetWikiPage", (200,), "none"),
      S("11", "routers/api/v1/repo/wiki.go", "GetWikiPage", (200,), "none")),
    E("PATCH", "/repos/{owner}/{repo}/wiki/page/{pageName}",
      S("1.21", "routers/api/v1/repo/wiki.go", "EditWikiPage", (200, 400, 500), "none"),
      S("11", "routers/api/v1/repo/wiki.go", "EditWikiPage", (200, 400, 500), "none")),
    E("DELETE", "/repos/{owner}/{repo}/wiki/page/{pageName}",
      S("1.21", "routers/api/v1/repo/wiki.go", "DeleteWikiPage", (204, 404, 500), "none"),
      S("11", "routers/api/v1/repo/wiki.go", "DeleteWikiPage", (204, 404, 500), "none")),
    E("GET", "/repos/{owner}/{repo}/actions/runs",
      S("1.25", "routers/api/v1/repo/action.go", "ListWorkflowRuns", (), "none"),
      S("12", "routers/api/v1/repo/action.go", "ListActionRuns", (200, 400, 500), "limit")),
    E("GET", "/repos/{owner}/{repo}/actions/runs/{run}",
      S("1.25", "routers/api/v1/repo/action.go", "GetWorkflowRun", (200, 404, 500), "none"),
      S("12", "routers/api/v1/repo/action.go", "GetActionRun", (200, 404, 500), "none")),
    E("GET", "/repos/{owner}/{repo}/actions/runs/{run}/jobs",
      S("1.25", "routers/api/v1/repo/action.go", "ListWorkflowRunJobs", (400,), "none"),
      None),
    E("GET", "/repos/{owner}/{repo}/actions/workflows",
      S("1.24", "routers/api/v1/repo/action.go", "ActionsListRepositoryWorkflows", (200, 500), "none"),
      None),
    E("GET", "/repos/{owner}/{repo}/actions/jobs/{job_id}/logs",
      S("1.24", "routers/api/v1/repo/actions_run.go", "DownloadActionsRunJobLogs", (404, 500), "none"),
      None),
    E("GET", "/repos/{owner}/{repo}/actions/artifacts",
      S("1.24", "routers/api/v1/repo/action.go", "GetArtifacts", (200, 500), "limit"),
      None),
    E("GET", "/repos/{owner}/{repo}/actions/runs/{run}/artifacts",
      S("1.24", "routers/api/v1/repo/action.go", "GetArtifactsOfRun", (200, 500), "limit"),
      None),
    E("GET", "/repos/{owner}/{repo}/actions/artifacts/{artifact_id}",
      S("1.24", "routers/api/v1/repo/action.go", "GetArtifact", (200, 404, 500), "none"),
      None),
    E("GET", "/repos/{owner}/{repo}/actions/artifacts/{artifact_id}/zip",
      S("1.24", "routers/api/v1/repo/action.go", "DownloadArtifact", (302, 404, 500), "none"),
      None),
    E("POST", "/repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches",
      S("1.24", "routers/api/v1/repo/action.go", "ActionsDispatchWorkflow", (204, 403, 404, 422, 500), "none"),
      S("11", "routers/api/v1/repo/action.go", "DispatchWorkflow", (201, 204, 400, 404, 500), "none")),
    E("GET", "/repos/{owner}/{repo}/actions/secrets",
      S("1.22", "routers/api/v1/repo/action.go", "ListActionsSecrets", (200, 500), "total"),
      S("11", "routers/api/v1/repo/action.go", "ListActionsSecrets", (200, 500), "total")),
    E("PUT", "/repos/{owner}/{repo}/actions/secrets/{secretname}",
      S("1.21", "routers/api/v1/repo/action.go", "CreateOrUpdateSecret", (201, 204, 400, 404, 500), "none"),
      S("11", "routers/api/v1/repo/action.go", "CreateOrUpdateSecret", (201, 204, 400, 404, 500), "none")),
    E("DELETE", "/repos/{owner}/{repo}/actions/secrets/{secretname}",
      S("1.21", "routers/api/v1/repo/action.go", "DeleteSecret", (204, 400, 404, 500), "none"),
      S("11", "routers/api/v1/repo/action.go", "DeleteSecret", (204, 400, 404, 500), "none")),
    E("GET", "/repos/{owner}/{repo}/actions/variables",
      S("1.22", "routers/api/v1/repo/action.go", "ListVariables", (200, 500), "total"),
      S("11", "routers/api/v1/repo/action.go", "ListVariables", (200, 500), "total")),
    E("GET", "/repos/{owner}/{repo}/actions/variables/{variablename}",
      S("1.22", "routers/api/v1/repo/action.go", "GetVariable", (200, 404, 500), "none"),
      S("11", "routers/api/v1/repo/action.go", "GetVariable", (200, 404, 500), "none")),
    E("POST", "/repos/{owner}/{repo}/actions/variables/{variablename}",
      S("1.22", "routers/api/v1/repo/action.go", "CreateVariable", (201, 400, 409, 500), "none"),
      S("11", "routers/api/v1/repo/action.go", "CreateVariable", (204, 400, 409, 500), "none")),
    E("PUT", "/repos/{owner}/{repo}/actions/variables/{variablename}",
      S("1.22", "routers/api/v1/repo/action.go", "UpdateVariable", (204, 400, 404, 500), "none"),
      S("11", "routers/api/v1/repo/action.go", "UpdateVariable", (204, 400, 404, 500), "none")),
    E("DELETE", "/repos/{owner}/{repo}/actions/variables/{variablename}",
      S("1.22", "routers/api/v1/repo/action.go", "DeleteVariable", (204, 400, 404, 500), "none"),
      S("11", "routers/api/v1/repo/action.go", "DeleteVariable", (204, 400, 404, 500), "none")),
    E("GET", "/repos/{owner}/{repo}/issues/{index}/times",
      S("1.21", "routers/api/v1/repo/issue_tracked_time.go", "ListTrackedTimes", (200, 403, 404, 422, 500), "total"),
      S("11", "routers/api/v1/repo/issue_tracked_time.go", "ListTrackedTimes", (200, 403, 404, 422, 500), "total")),
    E("POST", "/repos/{owner}/{repo}/issues/{index}/times",
      S("1.21", "routers/api/v1/repo/issue_tracked_time.go", "AddTime", (200, 400, 403, 404, 500), "none"),
      S("11", "routers/api/v1/repo/issue_tracked_time.go", "AddTime", (200, 400, 403, 404, 500), "none")),
    E("POST", "/repos/{owner}/{repo}/issues/{index}/stopwatch/start",
      S("1.21", "routers/api/v1/repo/issue_stopwatch.go", "StartIssueStopwatch", (201, 409, 500), "none"),
      S("11", "routers/api/v1/repo/issue_stopwatch.go", "StartIssueStopwatch", (201, 500), "none")),
    E("POST", "/repos/{owner}/{repo}/issues/{index}/stopwatch/stop",
      S("1.21", "routers/api/v1/repo/issue_stopwatch.go", "StopIssueStopwatch", (201, 409, 500), "none"),
      S("11", "routers/api/v1/repo/issue_stopwatch.go", "StopIssueStopwatch", (201, 500), "none")),
    E("GET", "/repos/{owner}/{repo}/issues/{index}/assets",
      S("1.21", "routers/api/v1/repo/issue_attachment.go", "ListIssueAttachments", (200, 500), "none"),
      S("11", "routers/api/v1/repo/issue_attachment.go", "ListIssueAttachments", (200, 500), "none")),
    E("POST", "/repos/{owner}/{repo}/issues/{index}/assets",
      S("1.21", "routers/api/v1/repo/issue_attachment.go", "CreateIssueAttachment", (201, 413, 422, 500), "none"),
      S("11", "routers/api/v1/repo/issue_attachment.go", "CreateIssueAttachment", (201, 403, 422, 500), "none")),
    E("GET", "/repos/{owner}/{repo}/issues/comments/{id}/assets",
      S("1.21", "routers/api/v1/repo/issue_comment_attachment.go", "ListIssueCommentAttachments", (200, 500), "none"),
      S("11", "routers/api/v1/repo/issue_comment_attachment.go", "ListIssueCommentAttachments", (200, 500), "none")),
    E("POST", "/repos/{owner}/{repo}/issues/comments/{id}/assets",
      S("1.21", "routers/api/v1/repo/issue_comment_attachment.go", "CreateIssueCommentAttachment",
        (201, 403, 413, 422, 500), "none"),
      S("11", "routers/api/v1/repo/issue_comment_attachment.go", "CreateIssueCommentAttachment",
        (201, 403, 422, 500), "none")),
    E("DELETE", "/repos/{owner}/{repo}/issues/{index}/stopwatch/delete",
      S("1.21", "routers/api/v1/repo/issue_stopwatch.go", "DeleteIssueStopwatch", (204, 409, 500), "none"),
      S("11", "routers/api/v1/repo/issue_stopwatch.go", "DeleteIssueStopwatch", (204, 500), "none")),
    E("GET", "/user/stopwatches",
      S("1.21", "routers/api/v1/repo/issue_stopwatch.go", "GetStopwatches", (200, 500), "total"),
      S("11", "routers/api/v1/repo/issue_stopwatch.go", "GetStopwatches", (200, 500), "total")),
    E("GET", "/user/times",
      S("1.21", "routers/api/v1/repo/issue_tracked_time.go", "ListMyTrackedTimes", (200, 422, 500), "total"),
      S("11", "routers/api/v1/repo/issue_tracked_time.go", "ListMyTrackedTimes", (200, 422, 500), "total")),
    E("GET", "/repos/{owner}/{repo}/times",
      S("1.21", "routers/api/v1/repo/issue_tracked_time.go", "ListTrackedTimesByRepository",
        (200, 400, 403, 404, 422, 500), "total"),
      S("11", "routers/api/v1/repo/issue_tracked_time.go", "ListTrackedTimesByRepository",
        (200, 400, 403, 404, 422, 500), "total")),
    E("DELETE", "/repos/{owner}/{repo}/issues/{index}/times/{id}",
      S("1.21", "routers/api/v1/repo/issue_tracked_time.go", "DeleteTime", (204, 400, 403, 404, 500), "none"),
      S("11", "routers/api/v1/repo/issue_tracked_time.go", "DeleteTime", (204, 400, 403, 404, 500), "none")),
    E("GET", "/repos/{owner}/{repo}/issues/{index}/assets/{attachment_id}",
      S("1.21", "routers/api/v1/repo/issue_attachment.go", "GetIssueAttachment", (200,), "none"),
      S("11", "routers/api/v1/repo/issue_attachment.go", "GetIssueAttachment", (200,), "none")),
    E("PATCH", "/repos/{owner}/{repo}/issues/{index}/assets/{attachment_id}",
      S("1.21", "routers/api/v1/repo/issue_attachment.go", "EditIssueAttachment", (201, 422, 500), "none"),
      S("11", "routers/api/v1/repo/issue_attachment.go", "EditIssueAttachment", (201, 500), "none")),
    E("DELETE", "/repos/{owner}/{repo}/issues/{index}/assets/{attachment_id}",
      S("1.21", "routers/api/v1/repo/issue_attachment.go", "DeleteIssueAttachment", (204, 500), "none"),
      S("11", "routers/api/v1/repo/issue_attachment.go", "DeleteIssueAttachment", (204, 500), "none")),
    E("GET", "/repos/{owner}/{repo}/issues/comments/{id}/assets/{attachment_id}",
      S("1.21", "routers/api/v1/repo/issue_comment_attachment.go", "GetIssueCommentAttachment", (200, 404), "none"),
      S("11", "routers/api/v1/repo/issue_comment_attachment.go", "GetIssueCommentAttachment", (200, 404), "none")),
    E("PATCH", "/repos/{owner}/{repo}/issues/comments/{id}/assets/{attachment_id}",
      S("1.21", "routers/api/v1/repo/issue_comment_attachment.go", "EditIssueCommentAttachment",
        (201, 422, 500), "none"),
      S("11", "routers/api/v1/repo/issue_comment_attachment.go", "EditIssueCommentAttachment", (201, 500), "none")),
    E("DELETE", "/repos/{owner}/{repo}/issues/comments/{id}/assets/{attachment_id}",
      S("1.21", "routers/api/v1/repo/issue_comment_attachment.go", "DeleteIssueCommentAttachment", (204, 500), "none"),
      S("11", "routers/api/v1/repo/issue_comment_attachment.go", "DeleteIssueCommentAttachment", (204, 500), "none")),
    E("DELETE", "/repos/{owner}/{repo}/pulls/{index}/reviews/{id}",
      S("1.21", "routers/api/v1/repo/pull_review.go", "DeletePullReview", (204, 403, 404, 500), "none"),
      S("11", "routers/api/v1/repo/pull_review.go", "DeletePullReview", (204, 403, 404, 500), "none")),
    E("GET", "/repos/{owner}/{repo}/wiki/revisions/{pageName}",
      S("1.21", "routers/api/v1/repo/wiki.go", "ListPageRevisions", (200, 500), "total"),
      S("11", "routers/api/v1/repo/wiki.go", "ListPageRevisions", (200, 500), "total")),
    E("GET", "/orgs/{org}/labels",
      S("1.21", "routers/api/v1/org/label.go", "ListLabels", (200, 500), "total"),
      S("11", "routers/api/v1/org/label.go", "ListLabels", (200, 500), "total")),
    E("GET", "/packages/{owner}/{type}/{name}/{version}",
      S("1.21", "routers/api/v1/packages/package.go", "GetPackage", (200, 500), "none"),
      S("11", "routers/api/v1/packages/package.go", "GetPackage", (200, 500), "none")),
    E("GET", "/repos/{owner}/{repo}/statuses/{sha}",
      S("1.21", "routers/api/v1/repo/status.go", "GetCommitStatuses", (), "none"),
      S("11", "routers/api/v1/repo/status.go", "GetCommitStatuses", (), "none")),
    E("POST", "/repos/{owner}/{repo}/statuses/{sha}",
      S("1.21", "routers/api/v1/repo/status.go", "NewCommitStatus", (201, 400, 500), "none"),
      S("11", "routers/api/v1/repo/status.go", "NewCommitStatus", (201, 400, 404, 500), "none")),
    E("GET", "/repos/{owner}/{repo}/commits/{ref}/statuses",
      S("1.21", "routers/api/v1/repo/status.go", "GetCommitStatusesByRef", (), "none"),
      S("11", "routers/api/v1/repo/status.go", "GetCommitStatusesByRef", (), "none")),
    E("DELETE", "/repos/{owner}/{repo}/pulls/{index}/merge",
      S("1.21", "routers/api/v1/repo/pull.go", "CancelScheduledAutoMerge", (204, 403, 404, 500), "none"),
      S("11", "routers/api/v1/repo/pull.go", "CancelScheduledAutoMerge", (204, 403, 404, 500), "none")),
    E("GET", "/repos/{owner}/{repo}/actions/jobs/{job_id}",
      S("1.25", "routers/api/v1/repo/action.go", "GetWorkflowJob", (200, 404, 500), "none"),
      None),
    E("GET", "/repos/{owner}/{repo}/actions/tasks",
      S("1.23", "routers/api/v1/repo/action.go", "ListActionTasks", (200, 500), "limit"),
      S("11", "routers/api/v1/repo/action.go", "ListActionTasks", (200, 400, 500), "limit")),
)

# What the handler's signature does not show, per endpoint: each behaviour cites the function deciding it.
NOTES: dict[str, tuple[str, ...]] = {
    "GET /repos/{owner}/{repo}/contents/{filepath*}": (
        "Gitea: a file over [api] DEFAULT_MAX_BLOB_SIZE (10 MiB) has content null and no encoding "
        "(services/repository/files/content.go GetBlobBySHA returns before reading it).",
        "Forgejo 11-15: the same file has encoding base64 and content \"\" (services/repository/files/content.go "
        "GetBlobBySHA: content starts empty and is read only up to the limit; 13+ drops git.BlobTooLargeError).",
        "An LFS file's content is its pointer text, in both (the blob in git is the pointer); Gitea 1.25 also "
        "names lfs_oid and lfs_size (parsePossibleLfsPointerBuffer).",
    ),
    "PUT /repos/{owner}/{repo}/contents/{filepath*}": (
        "The sha to replace is the git blob's: for an LFS path, the pointer's blob sha, which GET contents "
        "shows as sha (services/repository/files/update.go, ChangeRepoFiles).",
    ),
    "POST /repos/{owner}/{repo}/wiki/new": (
        "The page name is the title with spaces as '-'; a title holding a '-' (or ending in .md) is stored "
        "with the marker '.-' appended: 'release-notes' is the page 'release-notes.-' (services/wiki/wiki_path.go "
        "UserTitleToWebPath, escapeSegToWeb). The answer's sub_url is the name to read it by.",
    ),
    "GET /repos/{owner}/{repo}/wiki/page/{pageName}": (
        "The name is read as a web path: '-' is a space unless the segment ends in '.-' "
        "(services/wiki/wiki_path.go WebPathFromRequest, unescapeSegment).",
    ),
    "PATCH /repos/{owner}/{repo}/wiki/page/{pageName}": (
        "An edit of a page that does not exist creates it and answers 200 like an edit "
        "(routers/api/v1/repo/wiki.go EditWikiPage calls wiki_service.EditWikiPage, which adds the file).",
    ),
    "GET /repos/{owner}/{repo}/issues": (
        "milestones= and labels= take names (or ids); a name that matches nothing is dropped from the "
        "filter, so a typo lists every issue (routers/api/v1/repo/issue.go ListIssues: "
        "GetMilestonesByRepoIDANDNames / GetLabelIDsInRepoByNames). created_by= an unknown user is a 404 in "
        "Gitea and Forgejo alike (GetUserIDFromQuery / user_model.GetUserByName).",
    ),
    "GET /repos/{owner}/{repo}/pulls": (
        "poster= (the author filter) exists from Gitea 1.23; Gitea 1.21 and 1.22 ignore it and list every "
        "pull request (routers/api/v1/repo/pull.go ListPullRequests). Forgejo 11-15 have it. base_branch= "
        "from Gitea 1.24, never in Forgejo. milestone= is an id, labels= ids.",
    ),
    "POST /repos/{owner}/{repo}/pulls/{index}/merge": (
        "A closed pull request is a 404 (pull_service.ErrIsClosed, routers/api/v1/repo/pull.go "
        "MergePullRequest: APIErrorNotFound), though GET of it answers 200.",
        "Success is 200 with an empty body; 201 when auto-merge was scheduled; a merge conflict is 409 with "
        "a Go struct body and no message.",
        "Forgejo: a merged pull request whose branch cannot be deleted afterwards answers 403.",
    ),
    "POST /repos/{owner}/{repo}/issues/{index}/assets": (
        "A file type outside [attachment] ALLOWED_TYPES is 422 (upload.Verify in "
        "routers/api/v1/repo/issue_attachment.go CreateIssueAttachment); an earlier file of the same "
        "attach stays attached.",
    ),
    "POST /repos/{owner}/{repo}/issues/comments/{id}/assets": (
        "The same 422 for a disallowed file type (issue_comment_attachment.go CreateIssueCommentAttachment).",
    ),
    "GET /repos/{owner}/{repo}/actions/runs": (
        "Gitea 1.25 answers {total_count, workflow_runs} (routers/api/v1/shared/action.go ListRuns); "
        "Forgejo 12+ its own shape (ListActionRuns). Gitea 1.21-1.24 and Forgejo 11 have no runs list; "
        "the router answers a plain 404.",
    ),
    "GET /repos/{owner}/{repo}/actions/secrets": (
        "Listing secrets (names only) exists from Gitea 1.22; setting and deleting one from 1.21.",
        "Secrets and variables are the owner's: reqOwner (routers/api/v1/api.go, addActionsRoutes) answers 403 "
        "\"user should be the owner of the repo\" to anyone else but a site admin, a collaborator with admin "
        "access too (Forgejo: reqOwner(unit.TypeActions), 404 when Actions are off).",
    ),
    "GET /repos/{owner}/{repo}/issues/{index}/comments": (
        "Not paged: every comment, with X-Total-Count (issue_comment.go ListIssueComments).",
    ),
    "GET /repos/{owner}/{repo}": (
        "A private repository answers 404 to a request without a token, as to one whose token cannot see it "
        "(services/context/repo.go via repoAssignment).",
    ),
}


def _pattern(path: str) -> re.Pattern[str]:
    parts = []
    for piece in re.split(r"(\{[^}]+\})", path):
        if piece.startswith("{"):
            parts.append(".+" if piece.endswith("*}") else "[^/]+")
        else:
            parts.append(re.escape(piece))
    return re.compile("^" + "".join(parts) + "$")


_COMPILED = tuple((endpoint, _pattern(endpoint.path)) for endpoint in ENDPOINTS)


def endpoint(method: str, path: str) -> E | None:
    """The contract's entry for a request (*path* under /api/v1, without its query), or None."""
    method = "GET" if method == "HEAD" else method
    path = path.split("?", 1)[0]
    found = [e for e, pattern in _COMPILED if e.method == method and pattern.match(path)]
    # The most specific entry: fewest multi-segment parameters, then the longest literal part.
    found.sort(key=lambda e: (e.path.count("*}"), -len(re.sub(r"\{[^}]+\}", "", e.path))))
    return found[0] if found else None


def release(name: str) -> tuple[str, str]:
    """("gitea", "1.21") from "gitea-1.21"; the flavour's newest line from a bare "gitea" or "forgejo"."""
    flavour, _, line = name.partition("-")
    if flavour not in RELEASES:
        raise ValueError(f"not a flavour: {name!r}")
    line = line or list(RELEASES[flavour])[-1]
    if line not in RELEASES[flavour]:
        raise ValueError(f"{flavour} {line} is outside the contract's range ({', '.join(RELEASES[flavour])})")
    return flavour, line


def _order(flavour: str, line: str) -> int:
    return list(RELEASES[flavour]).index(line)


def offered(entry: E, flavour: str, line: str) -> bool:
    """Whether release *line* of *flavour* has the endpoint."""
    side = entry.side(flavour)
    return side is not None and _order(flavour, side.since) <= _order(flavour, line)
