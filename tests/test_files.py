"""Repository files through the forge: the rules a write of a file passes, and the fake forge's file endpoints.

A write names the blob sha it replaces, edits by an exact substring or by whole content, never cuts a
file too long to read in one view, stays out of .git and outside paths, and lands on the default branch
only with the call's own override. The rules are decided in guard.py and tested here as tables.
"""
from __future__ import annotations

import base64
import json
from typing import Any

import pytest

import guard
from fakeforge import FakeForge


def _write(action: str = "edit", branches: tuple[str, ...] = ("main", "dev"), **args: Any) -> guard.FileWrite:
    return guard.FileWrite("madt_files", action, args, "forge.example.test/acme/web", "main", frozenset(branches),
                           "Update a.txt")


# --------------------------------------------------------------------------- guard: the rules as tables

@pytest.mark.parametrize("path, why", [
    ("", "is empty"), ("/etc/passwd", "is absolute"), ("C:/x", "is absolute"), ("\\\\host\\x", "is absolute"),
    ("a\\b", "backslash"), ("a//b", "empty segment"), ("a/", "empty segment"), ("a/../b", "'..'"),
    ("./a", "'.'"), (".git/config", "inside .git"), ("sub/.GIT/hooks/x", "inside .git"), (".git./x", "inside .git"),
    ("a\tb", "control characters"),
])
def test_a_path_outside_the_repository_files_is_refused(path: str, why: str) -> None:
    with pytest.raises(guard.Refusal) as refused:
        guard.check_file_path(path, "madt_files action=edit", lambda v: guard.call("madt_files", path=v))
    assert refused.value.code == "BAD_ARGUMENT" and why in refused.value.message
    assert guard.is_placeholder(refused.value.next[0]["args"]["path"])


@pytest.mark.parametrize("path", ["a.txt", "docs/guide.md", ".github/workflows/ci.yml", ".gitignore", "a b/c.txt",
                                  "x.git/y", "..a", "日本/語.txt"])
def test_an_ordinary_path_passes(path: str) -> None:
    assert guard.check_file_path(path, "w", lambda v: {}) == path


def test_a_write_onto_the_default_branch_offers_a_new_branch_and_a_pr_or_the_override() -> None:
    with pytest.raises(guard.Refusal) as refused:
        guard.check_file_branch(_write(path="a.txt", sha="1"))
    r = refused.value
    assert r.code == "DEFAULT_BRANCH" and "main" in r.message and "pull request" in r.message
    steps, override = r.choices
    assert steps[0]["args"]["new_branch"] == "work/update-a-txt"
    assert steps[1] == guard.call("madt_pr", action="create", owner_repo="forge.example.test/acme/web",
                                  head="work/update-a-txt", base="main", title="Update a.txt")
    assert override == (guard.call("madt_files", action="edit", path="a.txt", sha="1", allow_default_branch=True),)
    assert guard.way_on_problem(r.next, r.choices, r.user_action) is None
    taken = _write(branches=("main", "work/update-a-txt"), path="a.txt")
    with pytest.raises(guard.Refusal) as again:
        guard.check_file_branch(taken)
    assert again.value.choices[0][0]["args"]["new_branch"] == "work/update-a-txt-2"  # never an existing branch
    guard.check_file_branch(_write(path="a.txt", allow_default_branch=True))
    guard.check_file_branch(_write(path="a.txt", branch="dev"))
    guard.check_file_branch(_write(path="a.txt", new_branch="feat"))
    with pytest.raises(guard.Refusal):
        guard.check_file_branch(_write(path="a.txt", branch="main"))  # naming the default branch is no override


def test_a_missing_base_or_a_taken_new_branch_is_refused_with_its_way_on() -> None:
    with pytest.raises(guard.Refusal) as missing:
        guard.check_file_branch(_write(path="a.txt", branch="feat"))
    assert "no branch feat" in missing.value.message
    assert missing.value.next[0]["args"] == {"action": "edit", "path": "a.txt", "new_branch": "feat"}
    with pytest.raises(guard.Refusal) as taken:
        guard.check_file_branch(_write(path="a.txt", new_branch="dev"))
    onto, fresh = taken.value.choices
    assert onto[0]["args"]["branch"] == "dev" and "new_branch" not in onto[0]["args"]
    assert fresh[0]["args"]["new_branch"] == "dev-2"


def test_a_stale_or_missing_sha_is_refused_with_the_current_sha() -> None:
    view = guard.call("madt_files", action="view", path="a.txt")
    with pytest.raises(guard.Refusal) as stale:
        guard.check_file_sha(_write(path="a.txt", sha="old"), "a.txt", "new", view)
    assert stale.value.code == "STALE_BODY" and "now at sha new, not old" in stale.value.message
    assert stale.value.next == (view, guard.call("madt_files", action="edit", path="a.txt", sha="new"))
    with pytest.raises(guard.Refusal) as none:
        guard.check_file_sha(_write(path="a.txt"), "a.txt", "new", view)
    assert none.value.code == "BAD_ARGUMENT" and "needs sha" in none.value.message
    with pytest.raises(guard.Refusal) as gone:
        guard.check_file_sha(_write(path="src/a.txt", sha="x"), "src/a.txt", None, view)
    assert "is not a file" in gone.value.message and gone.value.next[0]["args"]["path"] == "src"
    with pytest.raises(guard.Refusal) as exists:
        guard.check_file_sha(_write("create", path="a.txt", content="x"), "a.txt", "abc", view)
    assert exists.value.code == "CONFLICT"
    assert exists.value.next[1] == guard.call("madt_files", action="edit", path="a.txt", content="x", sha="abc")
    guard.check_file_sha(_write(path="a.txt", sha="same"), "a.txt", "same", view)
    guard.check_file_sha(_write("create", path="a.txt"), "a.txt", None, view)


@pytest.mark.parametrize("text, old, found", [
    ("a b a", "a", "occurs 2 times"), ("abc", "x", "does not occur"), ("one\r\ntwo\r\n", "one\ntwo", "CRLF"),
])
def test_an_exact_substring_edit_needs_exactly_one_occurrence(text: str, old: str, found: str) -> None:
    view = guard.call("madt_files", action="view", path="a.txt")
    with pytest.raises(guard.Refusal) as refused:
        guard.check_replacement(_write(path="a.txt"), "a.txt", text, old, view)
    assert found in refused.value.message and refused.value.next == (view,)
    guard.check_replacement(_write(path="a.txt"), "a.txt", "a b c", "b", view)


def test_whole_content_never_cuts_a_file_longer_than_one_view_and_binary_takes_no_text_edit() -> None:
    with pytest.raises(guard.Refusal) as cut:
        guard.check_file_content(_write(path="a.txt", content="short"), "a.txt", False, 30_000, 20_000, 20_000)
    assert "would cut the rest" in cut.value.message and "replace_old" in cut.value.next[0]["args"]
    guard.check_file_content(_write(path="a.txt", content="x"), "a.txt", False, 30_000, 30_001, 20_000)
    guard.check_file_content(_write(path="a.txt", content="x"), "a.txt", False, 19_000, 10, 20_000)
    guard.check_file_content(_write(path="a.txt", replace_old="a"), "a.txt", False, 30_000, 10, 20_000)
    with pytest.raises(guard.Refusal) as binary:
        guard.check_file_content(_write(path="a.png", replace_old="a"), "a.png", True, None, 0, 20_000)
    assert "binary" in binary.value.message and "content_base64" in binary.value.next[0]["args"]


def test_a_write_takes_exactly_one_form_of_content() -> None:
    allowed = ("content", "content_base64", "replace_old")
    with pytest.raises(guard.Refusal) as none:
        guard.check_file_input(_write(path="a.txt"), [], allowed)
    assert "needs the new content" in none.value.message
    with pytest.raises(guard.Refusal) as both:
        guard.check_file_input(_write(path="a.txt", content="x", replace_old="y"), ["content", "replace_old"],
                               allowed)
    assert len(both.value.choices) == 2
    with pytest.raises(guard.Refusal) as lone:
        guard.check_file_input(_write(path="a.txt", replace_new="y", content="x"), ["content"], allowed)
    assert "replace_new needs replace_old" in lone.value.message
    guard.check_file_input(_write(path="a.txt", content="x"), ["content"], allowed)


# --------------------------------------------------------------------------- the fake forge's file endpoints

def _api(forge: FakeForge, method: str, path: str, body: Any = None, query: Any = None) -> tuple[int, Any]:
    status, _, data = forge.call(method, "/repos/acme/web" + path, query=query,
                                 **({"json_body": body} if body is not None else {}))
    return status, json.loads(data) if data.strip().startswith((b"{", b"[")) else data


def _undeclared(forge: FakeForge, definition: str, value: Any) -> list[str]:
    import speccheck
    checker = speccheck.checker_for(forge.flavour)
    return [] if checker is None else speccheck.undeclared_keys(checker, definition, value)


def test_the_fake_answers_contents_trees_and_raw_in_the_spec_shapes(fake_forge: FakeForge) -> None:
    f = fake_forge
    f.commit("acme", "web", "main", {"a.txt": "a\n", "d/b.txt": "b\n"})
    status, root = _api(f, "GET", "/contents")
    assert status == 200 and [(e["name"], e["type"], e["content"]) for e in root] == [
        ("README.md", "file", None), ("a.txt", "file", None), ("d", "dir", None)]
    status, item = _api(f, "GET", "/contents/d/b.txt", query={"ref": "main"})
    assert base64.b64decode(item["content"]) == b"b\n" and item["sha"] == f.git("acme", "web", "rev-parse",
                                                                                "main:d/b.txt")
    assert _undeclared(f, "ContentsResponse", item) == []
    assert _api(f, "GET", "/contents/nope.txt")[0] == 404
    assert _api(f, "GET", "/contents/a.txt", query={"ref": "nope"})[0] == 404
    status, tree = _api(f, "GET", "/git/trees/main", query={"recursive": "true", "per_page": 2, "page": 2})
    assert [e["path"] for e in tree["tree"]] == ["d", "d/b.txt"] and tree["truncated"] is False
    assert tree["total_count"] == 4 and _undeclared(f, "GitTreeResponse", tree) == []
    status, raw = _api(f, "GET", "/raw/a.txt")
    assert status == 200 and raw == b"a\n"


def test_the_fake_changes_files_in_one_commit_as_each_flavour_allows(fake_forge: FakeForge) -> None:
    f = fake_forge
    f.commit("acme", "web", "main", {"a.txt": "a\n", "b.txt": "b\n"})
    sha_a = f.git("acme", "web", "rev-parse", "main:a.txt")
    sha_b = f.git("acme", "web", "rev-parse", "main:b.txt")
    b64 = base64.b64encode(b"new\n").decode()
    status, done = _api(f, "POST", "/contents", {"branch": "main", "new_branch": "two", "message": "Both", "files": [
        {"operation": "update", "path": "a.txt", "sha": sha_a, "content": b64},
        {"operation": "update", "path": "c.txt", "from_path": "b.txt", "sha": sha_b, "content": b64},
        {"operation": "create", "path": "d.txt", "content": b64}]})
    assert status == 201 and _undeclared(f, "FilesResponse", done) == []
    assert f.git("acme", "web", "ls-tree", "--name-only", "two") == "README.md\na.txt\nc.txt\nd.txt"
    assert f.git("acme", "web", "rev-list", "--count", "main..two") == "1"
    stale = _api(f, "POST", "/contents", {"files": [{"operation": "delete", "path": "a.txt", "sha": sha_b}]})
    assert stale[0] == 422 and "sha does not match" in stale[1]["message"]
    taken = _api(f, "POST", "/contents", {"new_branch": "two", "files": [{"operation": "delete", "path": "a.txt",
                                                                          "sha": sha_a}]})
    assert taken[0] == 422 and "branch already exists" in taken[1]["message"]
    f.allow_violations("must be one of")
    renamed = _api(f, "POST", "/contents", {"files": [{"operation": "rename", "path": "z.txt", "from_path": "a.txt",
                                                       "sha": sha_a}]})
    assert renamed[0] == (201 if f.flavour == "gitea" else 422)  # Forgejo has no rename operation
    updated = _api(f, "PUT", "/contents/c.txt", {"sha": f.git("acme", "web", "rev-parse", "two:c.txt"),
                                                 "content": b64, "branch": "two"})
    assert updated[0] == 200 and _undeclared(f, "FileResponse", updated[1]) == []
    deleted = _api(f, "DELETE", "/contents/c.txt", {"sha": f.git("acme", "web", "rev-parse", "two:c.txt"),
                                                    "branch": "two"})
    assert deleted[0] == 200 and deleted[1]["content"] is None
    assert _undeclared(f, "FileDeleteResponse", deleted[1]) == []
    assert f.git("acme", "web", "ls-tree", "--name-only", "two") == "README.md\na.txt\nd.txt"


def test_the_repository_client_reads_raw_bytes(fake_forge: FakeForge) -> None:
    import forge
    fake_forge.commit("acme", "web", "main", {"bin/x": b"\0\xff\x01"})
    client = forge.RepoClient(forge.Client(fake_forge.api, fake_forge.host, "alice-token"), "acme", "web")
    assert client.get_bytes(("raw", "bin", "x")) == b"\0\xff\x01"
