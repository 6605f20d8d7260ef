"""Attachments: files uploaded to an issue or a comment, only from the work tree over MCP, settled once.

Each test runs against the fake forge (both flavours) and real git, through the MCP dispatcher and the CLI.
"""
from __future__ import annotations

from typing import Any

from remote_env import Env, env  # noqa: F401 - fixtures


# --------------------------------------------------------------------------- attachment uploads

def _issue_with_comment(env: Env) -> int:
    env.forge.create_issue("acme", "web", "Crash", "see the log")
    return int(env.forge.create_comment("acme", "web", 1, "more")["id"])


def test_files_in_the_work_tree_are_attached_to_an_issue_and_a_comment(env: Env) -> None:
    comment = _issue_with_comment(env)
    (env.clone / "logs").mkdir()
    (env.clone / "logs" / "crash.log").write_bytes(b"boom\x00\xff" * 7)
    (env.clone / "shot.png").write_bytes(b"\x89PNG....")
    made = env.ok("madt_issues", action="attach", number=1, files=["logs/crash.log", str(env.clone / "shot.png")])
    assert made.text == "Attached crash.log (42 bytes), shot.png (8 bytes) to #1 in acme/web."
    assert [(a.name, a.data) for a in env.issue(1).attachments] == [("crash.log", b"boom\x00\xff" * 7),
                                                                   ("shot.png", b"\x89PNG....")]
    on_comment = env.ok("madt_issues", action="attach", number=1, comment_id=comment, files=["shot.png"])
    assert "to comment" in on_comment.text
    listed = env.ok("madt_issues", action="attachments", number=1, comment_id=comment)
    assert [r["name"] for r in listed.data] == ["shot.png"]
    assert [r["name"] for r in env.ok("madt_issues", action="attachments", number=1).data] == ["crash.log", "shot.png"]
    out = env.cli("issue", "attach", "1", "logs/crash.log", "--comment-id", str(comment))
    assert out.returncode == 0 and "Attached crash.log (42 bytes) to comment" in out.stdout, out.stderr
    assert len(env.forge.find_requests("POST")) == 4


def test_over_mcp_only_work_tree_files_that_hold_no_credentials_are_uploaded(env: Env, tmp_path: Any) -> None:
    _issue_with_comment(env)
    outside = tmp_path / "id_ed25519"
    outside.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("plain", encoding="utf-8")
    (env.clone / "link.txt").symlink_to(tmp_path / "notes.txt")
    (env.clone / ".env").write_text("TOKEN=x", encoding="utf-8")
    (env.clone / "deploy.pem").write_text("x", encoding="utf-8")
    (env.clone / "notes.md").write_text("key:\n-----BEGIN RSA PRIVATE KEY-----\nMII\n", encoding="utf-8")
    for files, code in (([str(outside)], "OUT_OF_SCOPE"), ([str(tmp_path / "notes.txt")], "OUT_OF_SCOPE"),
                        (["../notes.txt"], "OUT_OF_SCOPE"), (["link.txt"], "OUT_OF_SCOPE"),
                        ([".git/config"], "USER_ACTION_REQUIRED"), ([".env"], "USER_ACTION_REQUIRED"),
                        (["deploy.pem"], "USER_ACTION_REQUIRED"), (["notes.md"], "USER_ACTION_REQUIRED"),
                        (["missing.txt"], "BAD_ARGUMENT"), (["logs"], "BAD_ARGUMENT")):
        refused = env.refused(code, "madt_issues", action="attach", number=1, files=files)
        assert "BEGIN" not in refused.text and "TOKEN=x" not in refused.text, files
    assert not env.forge.find_requests("POST") and not env.issue(1).attachments
    # The command line takes a person's path from anywhere, but never a credential file.
    out = env.cli("issue", "attach", "1", str(tmp_path / "notes.txt"))
    assert out.returncode == 0 and "Attached notes.txt (5 bytes)" in out.stdout, out.stderr
    for path in (str(outside), ".env"):
        out = env.cli("issue", "attach", "1", path)
        assert out.returncode != 0 and "may hold credentials" in out.stdout + out.stderr, out.stderr
    assert [a.name for a in env.issue(1).attachments] == ["notes.txt"]


def test_a_lost_upload_answer_is_settled_by_the_attachment_list(env: Env) -> None:
    _issue_with_comment(env)
    (env.clone / "a.txt").write_text("hello", encoding="utf-8")
    env.forge.inject("drop-after", method="POST", path_contains="/assets")
    made = env.ok("madt_issues", action="attach", number=1, files=["a.txt"])
    assert made.text.startswith("Attached a.txt (5 bytes) to #1") and len(env.issue(1).attachments) == 1
    env.forge.inject("drop", method="POST", path_contains="/assets")
    lost = env.refused("FORGE_UNAVAILABLE", "madt_issues", action="attach", number=1, files=["a.txt"])
    [look] = lost.error["next"]
    assert (look["tool"], look["args"]["action"], look["args"]["number"]) == ("madt_issues", "attachments", 1)
    assert len(env.issue(1).attachments) == 1 and len(env.forge.find_requests("POST", "/assets")) == 2


def test_an_attachment_is_downloaded_renamed_and_only_a_person_deletes_it(env: Env, tmp_path: Any) -> None:
    e = env
    number = _issue_with_comment(env)
    (e.clone / "notes.txt").write_text("hello\n")
    e.ok("madt_issues", action="attach", number=number, files=["notes.txt"])
    listed = e.ok("madt_issues", action="attachments", number=number).data
    aid = listed[0]["id"]
    saved = tmp_path / "copy.txt"
    done = e.ok("madt_issues", action="download", number=number, attachment_id=aid, output=str(saved))
    assert saved.read_bytes() == b"hello\n" and done.data["size"] == 6
    e.refused("PATH_EXISTS", "madt_issues", action="download", number=number, attachment_id=aid, output=str(saved))
    renamed = e.ok("madt_issues", action="edit_attachment", number=number, attachment_id=aid, name="notes-v2.txt")
    assert "to notes-v2.txt" in renamed.text
    assert e.ok("madt_issues", action="attachments", number=number).data[0]["name"] == "notes-v2.txt"
    bad = e.refused("BAD_ARGUMENT", "madt_issues", action="edit_attachment", number=number, attachment_id=aid,
                    name="../x")
    assert "../x" in bad.text
    refused = e.refused("USER_ACTION_REQUIRED", "madt_issues", action="delete_attachment", number=number,
                        attachment_id=aid)
    assert "/issues/" in refused.error["user_action"]
    assert e.ok("madt_issues", action="attachments", number=number).data  # still there
    out = e.cli("issue", "delete-attachment", str(number), "--attachment-id", str(aid))
    assert out.returncode != 0 and "terminal" in out.stderr  # no terminal: nothing deleted
    assert e.ok("madt_issues", action="attachments", number=number).data
