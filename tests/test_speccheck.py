"""The spec checker catches requests the official Gitea / Forgejo specs do not allow.

Each check runs against both specs; without the spec files (a user's own
clone) they are skipped with the reason, and that path is tested too.
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import fakeforge
import speccheck

FLAVOURS = ("gitea", "forgejo")
TESTS_DIR = Path(__file__).resolve().parent
JSON = "application/json"
ISSUES = "/api/v1/repos/acme/web/issues"


@pytest.fixture(params=FLAVOURS)
def checker(request: pytest.FixtureRequest) -> speccheck.SpecChecker:
    reason = speccheck.spec_skip_reason(request.param)
    if reason:
        pytest.skip(reason)
    found = speccheck.checker_for(request.param)
    assert found is not None
    return found


def check(checker: speccheck.SpecChecker, method: str, path: str, query: object = (),
          body: object = None, content_type: str | None = JSON) -> list[str]:
    raw = json.dumps(body).encode() if body is not None and not isinstance(body, bytes) else body
    return checker.check(method, path, query, raw, content_type if raw is not None else None)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- accepted

MULTIPART = (
    b'--XyZ\r\nContent-Disposition: form-data; name="attachment"; filename="notes.txt"\r\n'
    b"Content-Type: text/plain\r\n\r\nhello\r\n--XyZ--\r\n"
)

VALID = [
    ("GET", "/api/v1/version", (), None),
    ("GET", ISSUES, [("state", "all"), ("labels", "bug,ui"), ("type", "pulls"), ("page", "2"), ("limit", "50")], None),
    ("POST", ISSUES, (), {"title": "Crash", "body": "It crashes", "labels": [1, 2], "milestone": 3}),
    ("PATCH", ISSUES + "/7", (), {"state": "closed", "due_date": "2026-02-01T00:00:00Z", "milestone": None}),
    ("POST", ISSUES + "/7/labels", (), {"labels": ["bug", "ui"]}),
    ("POST", ISSUES + "/7/comments", (), {"body": "Thanks"}),
    ("PATCH", "/api/v1/repos/acme/web/issues/comments/4", (), {"body": "Edited"}),
    ("POST", "/api/v1/repos/acme/web/labels", (), {"name": "bug", "color": "#ee0701"}),
    ("POST", "/api/v1/repos/acme/web/pulls", (), {"head": "feature", "base": "main", "title": "Add it"}),
    ("POST", "/api/v1/repos/acme/web/pulls/3/merge", (),
     {"Do": "squash", "MergeTitleField": "Title", "MergeMessageField": "Body", "head_commit_id": "a" * 40,
      "delete_branch_after_merge": True, "force_merge": False}),
    ("GET", "/api/v1/repos/acme/web/pulls/3.diff", (), None),
    ("GET", "/api/v1/repos/acme/web/pulls", [("labels", "1"), ("labels", "2"), ("state", "open")], None),
    ("GET", "/api/v1/notifications", [("status-types", "unread"), ("status-types", "pinned"), ("all", "true")], None),
    ("PUT", "/api/v1/notifications", [("to-status", "read")], None),
    ("GET", "/api/v1/repos/acme/web/branches/feature%2Fx", (), None),
    ("GET", "/api/v1/repos/issues/search", [("q", "crash"), ("created", "true")], None),
    ("POST", "/api/v1/repos/acme/web/wiki/new", (), {"title": "Home", "content_base64": "aGk="}),
]


@pytest.mark.parametrize("method, path, query, body", VALID, ids=[f"{m} {p}" for m, p, _, _ in VALID])
def test_correct_requests_pass(checker: speccheck.SpecChecker, method: str, path: str, query: object,
                               body: object) -> None:
    assert check(checker, method, path, query, body) == []


def test_multipart_upload_checked_by_its_form_fields(checker: speccheck.SpecChecker) -> None:
    path = "/api/v1/repos/acme/web/releases/1/assets"
    assert checker.check("POST", path, [("name", "notes.txt")], MULTIPART, "multipart/form-data; boundary=XyZ") == []
    unknown = MULTIPART.replace(b'name="attachment"', b'name="file"')
    problems = checker.check("POST", path, (), unknown, "multipart/form-data; boundary=XyZ")
    assert any("form field 'file' is not declared" in p for p in problems)
    not_a_file = MULTIPART.replace(b'; filename="notes.txt"', b"")
    problems = checker.check("POST", path, (), not_a_file, "multipart/form-data; boundary=XyZ")
    assert any("'attachment' must be a file part" in p for p in problems)


def test_the_most_specific_template_wins(checker: speccheck.SpecChecker) -> None:
    op, _, _ = checker.match("GET", "/api/v1/repos/issues/search")
    assert op is not None and op.operation_id == "issueSearchIssues"
    op, values, _ = checker.match("GET", "/api/v1/repos/acme/web/pulls/12.patch")
    assert op is not None and op.operation_id == "repoDownloadPullDiffOrPatch"
    assert values == {"owner": "acme", "repo": "web", "index": "12", "diffType": "patch"}


# --------------------------------------------------------------------------- caught

def test_unknown_operation(checker: speccheck.SpecChecker) -> None:
    [problem] = check(checker, "GET", "/api/v1/repos/acme/web/frobnicate")
    assert problem.startswith("GET /api/v1/repos/acme/web/frobnicate (no operation): no operation in the ")
    [problem] = check(checker, "POST", "/api/v1/version")
    assert "POST /version is not an operation (the spec allows GET)" in problem


def test_issue_create_without_title(checker: speccheck.SpecChecker) -> None:
    assert check(checker, "POST", ISSUES, (), {"body": "no title"}) == [
        "POST /repos/{owner}/{repo}/issues (issueCreateIssue): body: missing required field 'title'"]


def test_wrong_query_type(checker: speccheck.SpecChecker) -> None:
    assert check(checker, "GET", ISSUES, [("limit", "abc")]) == [
        "GET /repos/{owner}/{repo}/issues (issueListIssues): query parameter 'limit': must be an integer, got 'abc'"]


def test_unknown_query_parameter(checker: speccheck.SpecChecker) -> None:
    [problem] = check(checker, "GET", ISSUES, [("per_page", "10")])
    assert problem.startswith("GET /repos/{owner}/{repo}/issues (issueListIssues): query parameter 'per_page' "
                              "is not declared (declared: ")


def test_query_enum_and_array_items(checker: speccheck.SpecChecker) -> None:
    [problem] = check(checker, "GET", ISSUES, [("state", "merged")])
    assert "query parameter 'state': must be one of" in problem
    [problem] = check(checker, "GET", "/api/v1/repos/acme/web/pulls", [("labels", "bug")])
    assert "query parameter 'labels' item: must be an integer, got 'bug'" in problem
    [problem] = check(checker, "GET", ISSUES, [("q", "a"), ("q", "b")])
    assert "'q' is given 2 times but is not an array" in problem


def test_path_parameter_type(checker: speccheck.SpecChecker) -> None:
    [problem] = check(checker, "GET", ISSUES + "/first")
    assert problem == ("GET /repos/{owner}/{repo}/issues/{index} (issueGetIssue): "
                       "path parameter index: must be an integer, got 'first'")


def test_body_types_and_undeclared_fields(checker: speccheck.SpecChecker) -> None:
    problems = check(checker, "POST", ISSUES, (), {"title": "x", "labels": ["bug"], "colour": "red"})
    assert any("body.labels[0] must be an integer, got string" in p for p in problems)
    assert any("field 'colour' is not declared (the server would silently ignore it)" in p for p in problems)
    [problem] = check(checker, "PATCH", ISSUES + "/1", (), {"due_date": "tomorrow"})
    assert "body.due_date must be an RFC 3339 date-time" in problem


def test_merge_body_needs_the_camelcase_names(checker: speccheck.SpecChecker) -> None:
    problems = check(checker, "POST", "/api/v1/repos/acme/web/pulls/3/merge", (),
                     {"do": "merge", "merge_title_field": "t"})
    assert any("missing required field 'Do'" in p for p in problems)
    assert any("field 'do' is not declared; the spec spells it 'Do'" in p for p in problems)
    assert any("field 'merge_title_field' is not declared" in p for p in problems)
    [problem] = check(checker, "POST", "/api/v1/repos/acme/web/pulls/3/merge", (), {"Do": "octopus"})
    assert "body.Do must be one of" in problem


def test_content_type_and_json_problems(checker: speccheck.SpecChecker) -> None:
    [problem] = check(checker, "POST", ISSUES, (), {"title": "x"}, content_type=None)
    assert "a body was sent without a Content-Type" in problem
    [problem] = check(checker, "POST", ISSUES, (), {"title": "x"}, content_type="application/xml")
    assert "Content-Type application/xml is not accepted" in problem
    [problem] = check(checker, "POST", ISSUES, (), b"{not json", content_type=JSON)
    assert "the body is not valid JSON" in problem
    [problem] = check(checker, "GET", ISSUES, (), {"title": "x"})
    assert "the operation takes no request body, but one was sent" in problem


# --------------------------------------------------------------------------- flavour differences

@pytest.fixture
def gitea_checker() -> speccheck.SpecChecker:
    return _checker("gitea")


@pytest.fixture
def forgejo_checker() -> speccheck.SpecChecker:
    return _checker("forgejo")


def _checker(flavour: str) -> speccheck.SpecChecker:
    reason = speccheck.spec_skip_reason(flavour)
    if reason:
        pytest.skip(reason)
    found = speccheck.checker_for(flavour)
    assert found is not None
    return found


def test_query_tokens_are_gitea_only(gitea_checker: speccheck.SpecChecker,
                                     forgejo_checker: speccheck.SpecChecker) -> None:
    assert gitea_checker.check("GET", "/api/v1/user", [("token", "t")]) == []
    [problem] = forgejo_checker.check("GET", "/api/v1/user", [("token", "t")])
    assert "query parameter 'token' is not declared" in problem


def test_operations_one_flavour_lacks(gitea_checker: speccheck.SpecChecker,
                                      forgejo_checker: speccheck.SpecChecker) -> None:
    lock = "/api/v1/repos/acme/web/issues/1/lock"
    assert gitea_checker.check("PUT", lock, (), b"{}", JSON) == []
    assert "(no operation)" in forgejo_checker.check("PUT", lock, (), b"{}", JSON)[0]
    jobs = "/api/v1/repos/acme/web/actions/runs/1/jobs"
    assert gitea_checker.check("GET", jobs) == []
    assert "(no operation)" in forgejo_checker.check("GET", jobs)[0]


def test_milestone_by_name_is_gitea_only(gitea_checker: speccheck.SpecChecker,
                                         forgejo_checker: speccheck.SpecChecker) -> None:
    path = "/api/v1/repos/acme/web/milestones/v1.0"
    assert gitea_checker.check("GET", path) == []
    [problem] = forgejo_checker.check("GET", path)
    assert "path parameter id: must be an integer, got 'v1.0'" in problem


def test_label_removal_by_name_is_forgejo_only(gitea_checker: speccheck.SpecChecker,
                                               forgejo_checker: speccheck.SpecChecker) -> None:
    path = "/api/v1/repos/acme/web/issues/1/labels/bug"
    assert forgejo_checker.check("DELETE", path) == []
    assert "must be an integer" in gitea_checker.check("DELETE", path)[0]


def test_undeclared_keys_helper(gitea_checker: speccheck.SpecChecker) -> None:
    assert speccheck.undeclared_keys(gitea_checker, "Label", {"id": 1, "name": "bug", "colour": "x"}) == ["colour"]


# --------------------------------------------------------------------------- specs absent

def test_absent_specs_skip_with_a_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(speccheck.SPECS_ENV, str(tmp_path))
    for flavour in FLAVOURS:
        reason = speccheck.spec_skip_reason(flavour)
        assert reason is not None
        assert str(tmp_path) in reason and speccheck.SPECS_ENV in reason and "skipped" in reason
        assert speccheck.checker_for(flavour) is None
    with fakeforge.FakeForge("gitea") as forge:
        assert forge.spec_skip_reason is not None and str(tmp_path) in forge.spec_skip_reason
        status, _, _ = forge.call("GET", "/repos/acme/web/issues", query={"limit": "abc"})
        assert status == 200
        assert forge.violations == []  # nothing to check against: no false failure


def test_env_var_points_at_another_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reason = speccheck.spec_skip_reason("gitea")
    if reason:
        pytest.skip(reason)
    (tmp_path / "gitea-swagger-v1.json").write_bytes(speccheck.spec_path("gitea").read_bytes())
    monkeypatch.setenv(speccheck.SPECS_ENV, str(tmp_path))
    assert speccheck.spec_path("gitea") == tmp_path / "gitea-swagger-v1.json"
    found = speccheck.checker_for("gitea")
    assert found is not None and found.version == "1.25.4"


# --------------------------------------------------------------------------- the fixture turns violations into failures

def test_teardown_fails_on_a_violation(tmp_path_factory: pytest.TempPathFactory) -> None:
    if speccheck.spec_skip_reason("gitea"):
        pytest.skip(speccheck.spec_skip_reason("gitea") or "")
    fixture = fakeforge.forge_fixture("gitea", tmp_path_factory)
    forge = next(fixture)
    forge.call("POST", "/repos/acme/web/issues", json_body={"body": "no title"})
    with pytest.raises(pytest.fail.Exception) as failure:
        next(fixture)
    message = str(failure.value)
    assert "requests the official API spec does not allow" in message
    assert "POST /repos/{owner}/{repo}/issues (issueCreateIssue): body: missing required field 'title'" in message


def test_teardown_passes_when_clean_or_taken(tmp_path_factory: pytest.TempPathFactory) -> None:
    fixture = fakeforge.forge_fixture("forgejo", tmp_path_factory)
    forge = next(fixture)
    forge.call("GET", "/repos/acme/web/issues", query={"limit": "abc"})
    forge.take_violations()
    with pytest.raises(StopIteration):
        next(fixture)


@pytest.mark.slow  # a pytest run of its own: not in the fast lane
def test_pytest_reports_the_violation_as_a_teardown_error(tmp_path: Path) -> None:
    if speccheck.spec_skip_reason("gitea"):
        pytest.skip(speccheck.spec_skip_reason("gitea") or "")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "conftest.py").write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(TESTS_DIR)!r})
        from fakeforge import gitea_forge  # noqa: F401
    """))
    (tmp_path / "tests" / "test_client.py").write_text(textwrap.dedent("""
        def test_lists_with_a_bad_limit(gitea_forge):
            status, _, _ = gitea_forge.call("GET", "/repos/acme/web/issues", query={"limit": "many"})
            assert status == 200  # the fake still answers as the real server would
    """))
    # Its own --basetemp: without it the inner pytest prunes the machine's older /tmp/pytest-of-* runs as it
    # exits, and on a reused CI machine that is whole earlier suites (it ran past the timeout there).
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W", "ignore",
         f"--basetemp={tmp_path / 'inner'}", str(tmp_path / "tests")],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "1 passed, 1 error" in result.stdout
    assert "ERROR at teardown of test_lists_with_a_bad_limit" in result.stdout
    assert ("GET /repos/{owner}/{repo}/issues (issueListIssues): query parameter 'limit': "
            "must be an integer, got 'many'") in result.stdout
