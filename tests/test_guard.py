"""The guard's decisions as tables over facts: no git, no forge, just the rules and their texts."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

import gitops
import guard
from helpers import Spec, modules_imported, refusal, repo_facts


WEB = repo_facts("/w/web")
API = repo_facts("/w/api")
WEB_WT = repo_facts("/w/web-feature", linked=True, common="/w/web/.git")
FOREIGN = repo_facts("/x/lib")
FOREIGN_WT = repo_facts("/x/lib-wt", linked=True, common="/x/lib/.git")


def target(tool: str, args: dict | None = None, *, action: str | None = None, mutating: bool = True,
           surface: str = "mcp", launch: guard.RepoFacts | None = WEB, at: guard.RepoFacts = WEB,
           explicit: bool = False, nested: tuple[Path, ...] = (), signals: tuple[guard.Signal, ...] = (),
           branch: str | None = "feat/x", operation: str | None = None, dirty: bool = False,
           conflicted: tuple[str, ...] = ()) -> guard.Target:
    state = guard.RepoState(branch, "main", operation, dirty, conflicted)
    return guard.Target(tool, action, args or {}, mutating, surface, launch, at, explicit, nested, signals,
                        state=state)


def refused(t: guard.Target) -> guard.Refusal:
    return refusal(guard.check_local, t)


# --------------------------------------------------------------------------- arguments

SPECS = {"number": Spec("number", "number", True), "title": Spec("title"), "files": Spec("files", "strs"),
         "limit": Spec("limit", "int"), "draft": Spec("draft", "bool"),
         "state": Spec("state", "enum", choices=("open", "all"))}


@pytest.mark.parametrize("value", [441, "441", [441], ["441"], "#441"])
def test_single_number_shapes_are_liberal(value) -> None:
    assert guard.check_arguments("madt_issues", "view", SPECS, {"number": value})["number"] == 441


def test_numbers_key_is_accepted_for_a_single_target() -> None:
    assert guard.check_arguments("madt_issues", "view", SPECS, {"numbers": [7]})["number"] == 7


def test_several_numbers_on_a_single_target_are_refused_naming_the_batch_action() -> None:
    with pytest.raises(guard.Refusal) as caught:
        guard.check_arguments("madt_issues", "edit", SPECS, {"number": "441, 442"}, batch_action="close")
    assert caught.value.code == "BAD_ARGUMENT"
    assert "acts on one number, but 2 were given (441, 442)" in caught.value.message
    assert "madt_issues action=close" in caught.value.message


def test_batch_numbers_keep_every_shape() -> None:
    specs = {"numbers": Spec("numbers", "numbers", True)}
    assert guard.check_arguments("madt_issues", "close", specs, {"numbers": "441, 442"})["numbers"] == [441, 442]
    assert guard.check_arguments("madt_issues", "close", specs, {"number": 3})["numbers"] == [3]


@pytest.mark.parametrize("wrong,meant", [("commit_message", "title"), ("message", "title"), ("titel", "title"),
                                         ("query", None), ("limt", "limit")])
def test_unknown_parameter_refused_with_bounded_did_you_mean(wrong, meant) -> None:
    with pytest.raises(guard.Refusal) as caught:
        guard.check_arguments("madt_commit", None, SPECS, {wrong: "x", "files": ["a"]})
    r = caught.value
    assert r.code == "UNKNOWN_PARAMETER" and repr(wrong) in r.message
    if meant:
        assert f"Did you mean {meant}?" in r.message
        assert r.next == ({"tool": "madt_commit", "args": {meant: "x", "files": ["a"]}},)
    else:
        assert "Did you mean" not in r.message
        assert r.next == ({"tool": "madt_commit", "args": {"files": ["a"]}},)  # the same call, without it


def test_no_open_ended_alias_guessing() -> None:
    assert guard.did_you_mean("bananas", ["title", "body"]) is None
    assert guard.did_you_mean("query", ["q", "state"]) == "q"


@pytest.mark.parametrize("spec,value", [("limit", "ten"), ("draft", "yes"), ("state", "closed"), ("title", 3.5),
                                        ("files", [1, 2]), ("title", "a\x00b")])
def test_bad_values_are_refused(spec, value) -> None:
    with pytest.raises(guard.Refusal) as caught:
        guard.check_arguments("madt_x", None, SPECS, {"number": 1, spec: value})
    assert caught.value.code == "BAD_ARGUMENT" and spec in caught.value.message


def test_missing_required_parameter() -> None:
    with pytest.raises(guard.Refusal) as caught:
        guard.check_arguments("madt_issues", "view", SPECS, {})
    assert caught.value.code == "BAD_ARGUMENT" and "needs number" in caught.value.message


def test_option_looking_values_are_refused() -> None:
    with pytest.raises(guard.Refusal) as caught:
        guard.check_not_option("--upload-pack=evil", "branch", "madt_push")
    assert "starts with '-'" in caught.value.message


@pytest.mark.parametrize("raw,why", [("", "empty"), ("   ", "empty"), (" /w/web", "white space"),
                                     ("web", "relative"), ("./web", "relative")])
def test_dir_values_are_refused_clearly(raw, why) -> None:
    with pytest.raises(guard.Refusal) as caught:
        guard.check_dir(raw, "madt_commit")
    assert caught.value.code == "BAD_ARGUMENT" and why in caught.value.message


# --------------------------------------------------------------------------- signals and the workspace

def test_disagreeing_signal_refuses_naming_both_repos() -> None:
    r = refused(target("madt_commit", {"title": "t", "files": ["a"]},
                       signals=(guard.Signal("the client's workspace root", repo=API),)))
    assert r.code == "WRONG_REPO"
    assert "acme/web @ /w/web" in r.message and "acme/api @ /w/api" in r.message
    assert not r.next and r.choices == (
        ({"tool": "madt_commit", "args": {"title": "t", "files": ["a"], "dir": "/w/api"}},),
        ({"tool": "madt_commit", "args": {"title": "t", "files": ["a"], "dir": "/w/web"}},))


def test_a_name_signal_refuses_too() -> None:
    r = refused(target("madt_add", {"files": ["a"]}, signals=(guard.Signal("MADTEA_CALLER_REPO", name="acme/api"),)))
    assert r.code == "WRONG_REPO" and "acme/api" in r.message


def test_a_signal_from_another_worktree_of_the_same_repo_disagrees() -> None:
    r = refused(target("madt_add", {"files": ["a"]}, signals=(guard.Signal("root", repo=WEB_WT),)))
    assert r.code == "WRONG_REPO"
    assert r.choices[0] == ({"tool": "madt_add", "args": {"files": ["a"], "dir": str(WEB_WT.top)}},)


@pytest.mark.parametrize("signal", [guard.Signal("root", repo=WEB),
                                    guard.Signal("MADTEA_CALLER_REPO", name="acme/web"),
                                    guard.Signal("MADTEA_CALLER_REPO", name="FORGE.example.test/Acme/Web")])
def test_agreeing_signals_pass(signal) -> None:
    guard.check_local(target("madt_add", {"files": ["a"]}, signals=(signal,)))


def test_signals_never_apply_with_an_explicit_dir_or_on_the_cli() -> None:
    wrong = (guard.Signal("root", repo=API),)
    guard.check_local(target("madt_add", {"files": ["a"], "dir": "/w/web"}, explicit=True, signals=wrong))
    guard.check_local(target("madt_add", {"files": ["a"]}, surface="cli", signals=wrong))


def test_nested_workspace_fails_closed_without_dir() -> None:
    nested = (Path("/w/web/child-a"), Path("/w/web/child-b"))
    r = refused(target("madt_push", {}, nested=nested))
    assert r.code == "MULTI_REPO_WORKSPACE"
    assert "/w/web/child-a" in r.message
    dirs = [step["args"]["dir"] for [step] in r.choices]
    assert dirs == ["/w/web", "/w/web/child-a", "/w/web/child-b"]


def test_an_agreeing_root_does_not_confirm_inside_a_workspace_but_the_intent_hint_does() -> None:
    nested = (Path("/w/web/child"),)
    assert refused(target("madt_add", {"files": ["a"]}, nested=nested,
                          signals=(guard.Signal("root", repo=WEB),))).code == "MULTI_REPO_WORKSPACE"
    guard.check_local(target("madt_add", {"files": ["a"]}, nested=nested,
                             signals=(guard.Signal("MADTEA_CALLER_REPO", repo=WEB, confirms_workspace=True),)))


def test_reads_and_explicit_targets_pass_the_workspace_check() -> None:
    nested = (Path("/w/web/child"),)
    guard.check_local(target("madt_status", mutating=False, nested=nested))
    guard.check_local(target("madt_push", {"dir": "/w/web"}, explicit=True, nested=nested))


def test_distinct_children_fail_closed_on_missing_origins() -> None:
    same = gitops.parse_remote_url("git@forge.example.test:acme/web.git")
    other = gitops.parse_remote_url("ssh://git@forge.example.test:2222/acme/api.git")
    children = [(Path("/w/web/a"), same), (Path("/w/web/b"), other), (Path("/w/web/c"), None)]
    assert guard.distinct_children(WEB, children) == [Path("/w/web/b"), Path("/w/web/c")]


# --------------------------------------------------------------------------- the foreign-target contract

def foreign(tool: str, args: dict, at: guard.RepoFacts = FOREIGN, **kw) -> guard.Target:
    return target(tool, args | {"dir": str(at.top)}, at=at, explicit=True, **kw)


@pytest.mark.parametrize("tool,args", [("madt_commit", {"title": "t", "files": ["a"]}), ("madt_add", {"files": ["a"]}),
                                       ("madt_switch", {"branch": "b"}), ("madt_pull", {}), ("madt_prune", {}),
                                       ("madt_branch_create", {"name": "b", "checkout": True})])
def test_foreign_primary_is_immutable_and_forwards_to_the_worktree_flow(tool, args) -> None:
    r = refused(foreign(tool, args))
    assert r.code == "FOREIGN_PRIMARY"
    assert "acme/lib @ /x/lib" in r.message
    add, *commit, finish = r.next if tool != "madt_switch" else (*r.next, None)
    assert add["tool"] == "madt_worktrees" and add["args"]["action"] == "add" and add["args"]["dir"] == "/x/lib"
    if tool == "madt_switch":  # the worktree has the branch: that is the switch, with nothing to finish
        assert r.next == (add,) and add["args"]["commit_ish"] == "b" and "finish by branch" not in r.message
        return
    if tool == "madt_pull":  # then the pull, into the worktree
        assert finish == {"tool": "madt_pull", "args": {"dir": add["args"]["path"], "branch": "feat/x"}}, r.next
        return
    # declared files are carried into the new worktree and committed there, never in the owner's checkout
    if "files" in args:
        assert add["args"]["carry"] == args["files"]
        assert commit == [{"tool": "madt_commit", "args": {"dir": add["args"]["path"], "files": args["files"],
                                                           "title": args.get("title", "<the commit title>")}}]
    branch = add["args"]["b"]
    assert finish == {"tool": "madt_finish", "args": {"dir": "/x/lib", "branch": branch,
                                                      "title": args.get("title", "<the pull request title>")}}


def test_foreign_worktree_remove_is_immutable() -> None:
    r = refused(foreign("madt_worktrees", {"path": "/x/lib-wt"}, action="remove"))
    assert r.code == "FOREIGN_PRIMARY"


@pytest.mark.parametrize("tool,args,kw", [("madt_branch_create", {"name": "b"}, {}),
                                          ("madt_push", {"branch": "b"}, {}),
                                          ("madt_worktrees", {"path": "/x/new", "b": "b"}, {"action": "add"}),
                                          ("madt_branch_delete", {"name": "b"}, {}),
                                          ("madt_finish", {"branch": "b"}, {}),
                                          ("madt_status", {}, {"mutating": False})])
def test_foreign_primary_keeps_the_sanctioned_forms(tool, args, kw) -> None:
    guard.check_local(foreign(tool, args, **kw))


def test_finish_on_a_foreign_target_takes_only_the_branch_form() -> None:
    for at in (FOREIGN, FOREIGN_WT):
        r = refused(foreign("madt_finish", {"title": "t", "files": ["a"]}, at=at))
        assert r.code == "FOREIGN_TARGET" and "branch=" in r.message
    # In someone's worktree the branch there is finished by name; on a main checkout the current
    # branch is its owner's, so the way on is a worktree of one's own, never merging their branch.
    linked = refused(foreign("madt_finish", {"title": "t", "files": ["a"]}, at=FOREIGN_WT))
    assert linked.next[-1]["args"]["branch"] == "feat/x"
    primary = refused(foreign("madt_finish", {"title": "t", "files": ["a"]}, at=FOREIGN))
    add, commit, finish = primary.next
    assert add["args"]["action"] == "add" and finish["args"]["branch"] == add["args"]["b"] != "feat/x"
    assert commit["args"]["dir"] == add["args"]["path"] and add["args"]["carry"] == ["a"]


def test_push_on_a_foreign_target_must_name_the_branch() -> None:
    r = refused(foreign("madt_push", {}, at=FOREIGN_WT))
    assert r.code == "FOREIGN_TARGET" and r.next[0]["args"]["branch"] == "feat/x"


def test_foreign_worktree_rules() -> None:
    assert refused(foreign("madt_prune", {}, at=FOREIGN_WT)).code == "FOREIGN_TARGET"
    assert refused(foreign("madt_branch_create", {"name": "b"}, at=FOREIGN_WT, dirty=True)).code == "FOREIGN_TARGET"
    guard.check_local(foreign("madt_branch_create", {"name": "b"}, at=FOREIGN_WT, dirty=False))
    guard.check_local(foreign("madt_commit", {"title": "t", "files": ["a"]}, at=FOREIGN_WT))


def test_same_repo_linked_worktree_is_not_foreign() -> None:
    guard.check_local(target("madt_commit", {"title": "t", "files": ["a"], "dir": "/w/web-feature"}, at=WEB_WT,
                             explicit=True))


def test_launched_outside_any_repo_every_dir_target_is_foreign() -> None:
    r = refused(target("madt_add", {"files": ["a"], "dir": "/w/web"}, launch=None, explicit=True))
    assert r.code == "FOREIGN_PRIMARY"


def test_finish_branch_form_on_the_default_branch_forwards_to_a_new_branch_not_to_itself() -> None:
    r = refused(target("madt_finish", {"branch": "main", "title": "Fix it", "dir": "/w/web"}, at=WEB, explicit=True,
                       branch="main"))
    assert r.code == "DEFAULT_BRANCH" and "branch=main" in r.message
    create, finish = r.next
    assert create == {"tool": "madt_branch_create", "args": {"dir": "/w/web", "name": "work/fix-it",
                                                             "start_point": "main"}}
    assert finish == {"tool": "madt_finish", "args": {"branch": "work/fix-it", "title": "Fix it", "dir": "/w/web"}}


def test_a_switch_on_a_foreign_primary_forwards_to_a_worktree_of_that_existing_branch() -> None:
    r = refused(target("madt_switch", {"branch": "release", "dir": "/x/lib"}, at=FOREIGN, explicit=True, branch="main"))
    assert r.code == "FOREIGN_PRIMARY"
    # a switch asked for a checkout of that branch, nothing to finish: the worktree is the whole way on
    (add,) = r.next
    assert add["args"] == {"action": "add", "dir": "/x/lib", "path": "/x/lib-release", "commit_ish": "release"}
    current = refused(target("madt_switch", {"branch": "main", "dir": "/x/lib"}, at=FOREIGN, explicit=True,
                             branch="main"))
    # main is checked out there: a new branch starts from it instead
    assert current.next[0]["args"]["b"] == "work/contribution" and current.next[0]["args"]["commit_ish"] == "main"
    pull = refused(target("madt_pull", {"branch": "main", "dir": "/x/lib"}, at=FOREIGN, explicit=True, branch="main"))
    assert pull.next[0]["args"]["b"] == "work/contribution"
    # the pull the caller asked for, run in the new worktree
    assert pull.next[1] == {"tool": "madt_pull", "args": {"dir": "/x/lib-work-contribution", "branch": "main"}}


def test_finish_on_a_foreign_worktree_commits_the_declared_files_then_finishes_with_every_argument() -> None:
    wt = repo_facts("/x/lib-fix", linked=True, common="/x/lib/.git")
    args = {"files": ["a.py"], "title": "Fix", "body": "why", "style": "squash", "dir": "/x/lib-fix"}
    r = refused(target("madt_finish", args, at=wt, explicit=True, branch="fix"))
    assert r.code == "FOREIGN_TARGET"
    commit, finish = r.next
    assert commit == {"tool": "madt_commit", "args": {"dir": "/x/lib-fix", "files": ["a.py"], "title": "Fix",
                                                      "body": "why"}}
    assert finish == {"tool": "madt_finish", "args": {"title": "Fix", "body": "why", "style": "squash",
                                                      "dir": "/x/lib-fix", "branch": "fix"}}


# --------------------------------------------------------------------------- rules on every target

@pytest.mark.parametrize("files", [[], ["."], ["./"], [""], ["/w/web"], ["*"]])
def test_blanket_or_missing_files_are_refused(files) -> None:
    t = target("madt_add", {"files": files})
    with pytest.raises(guard.Refusal) as caught:
        guard.declared_files(t)
    assert caught.value.code == "UNDECLARED_FILES"
    assert "Do not retry with blanket staging" in caught.value.message


def test_declared_files_are_relative_and_stay_inside() -> None:
    t = target("madt_add", {"files": ["src", "/w/web/a.py", "b/../c.py"]})
    assert guard.declared_files(t) == ["src", "a.py", "c.py"]
    with pytest.raises(guard.Refusal) as caught:
        guard.declared_files(target("madt_add", {"files": ["../api/x.py"]}))
    assert caught.value.code == "BAD_ARGUMENT" and "outside" in caught.value.message


@pytest.mark.parametrize("op", ["merge", "rebase", "cherry-pick", "revert"])
def test_mid_operation_rail_is_locked(op) -> None:
    r = refused(target("madt_commit", {"title": "t", "files": ["a.py"]}, operation=op, conflicted=("a.py",)))
    assert r.code == "MID_OPERATION"
    assert r.message == (f"A {op} is in progress in acme/web @ /w/web; a new commit now would tangle with it. "
                         f"Finish it first: madt_add dir=\"/w/web\" files=[\"a.py\"] then "
                         f"`GIT_EDITOR=true git -C /w/web {op} --continue`. Do not retry madt_commit until the "
                         f"{op} is done.")
    assert r.next == ({"tool": "madt_add", "args": {"dir": "/w/web", "files": ["a.py"]}},
                      {"shell": f"GIT_EDITOR=true git -C /w/web {op} --continue"})


def test_bisect_rail_resets() -> None:
    r = refused(target("madt_commit", {"title": "t", "files": ["a.py"]}, operation="bisect"))
    assert r.next == ({"shell": "git -C /w/web bisect reset"},)


def test_default_branch_refused_for_commit_with_a_per_call_override() -> None:
    r = refused(target("madt_commit", {"title": "Fix login", "files": ["a"]}, branch="main"))
    assert r.code == "DEFAULT_BRANCH"
    branch_first, override = r.choices  # the override is only ever a choice, never a step after others
    assert branch_first[0] == {"tool": "madt_branch_create", "args": {"name": "work/fix-login", "checkout": True}}
    assert branch_first[1] == {"tool": "madt_commit", "args": {"title": "Fix login", "files": ["a"]}}
    assert override == ({"tool": "madt_commit", "args": {"title": "Fix login", "files": ["a"],
                                                        "allow_default_branch": True}},)
    guard.check_local(target("madt_commit", {"title": "t", "files": ["a"], "allow_default_branch": True},
                             branch="main"))


def test_default_branch_refused_for_finish_without_override() -> None:
    r = refused(target("madt_finish", {"title": "t", "files": ["a"], "allow_default_branch": True}, branch="main"))
    assert r.code == "DEFAULT_BRANCH" and "no feature branch to merge" in r.message


def test_every_refusal_has_exactly_one_way_on() -> None:
    cases = [target("madt_commit", {"title": "t", "files": ["a"]}, branch="main"),
             target("madt_push", {}, nested=(Path("/w/web/c"),)),
             foreign("madt_pull", {}), foreign("madt_prune", {}, at=FOREIGN_WT),
             target("madt_commit", {"title": "t", "files": ["a"]}, operation="merge")]
    for t in cases:
        r = refused(t)
        assert guard.way_on_problem(r.next, r.choices, r.user_action) is None, r.code


# --------------------------------------------------------------------------- forge calls

def remote(tool: str = "madt_issues", action: str = "create", *, target_full: str = "forge.example.test/acme/web",
           explicit: bool = False, mutating: bool = True, signals=(), nested_hosts=(),
           launch_host: str | None = "forge.example.test") -> guard.RemoteCall:
    return guard.RemoteCall(tool, action, {"title": "t"}, mutating, "mcp", target_full, target_full.split("/")[0],
                            launch_host, explicit, nested_hosts, signals)


def test_remote_wrong_repo_names_both_and_offers_owner_repo() -> None:
    with pytest.raises(guard.Refusal) as caught:
        guard.check_remote(remote(signals=(guard.Signal("MADTEA_CALLER_REPO", name="acme/api"),)))
    r = caught.value
    assert r.code == "WRONG_REPO" and "acme/api" in r.message and "forge.example.test/acme/web" in r.message
    assert [s["args"]["owner_repo"] for [s] in r.choices] == ["acme/api", "forge.example.test/acme/web"]


def test_remote_explicit_owner_repo_bypasses_signals() -> None:
    guard.check_remote(remote(explicit=True, signals=(guard.Signal("MADTEA_CALLER_REPO", name="acme/api"),)))


def test_remote_refuses_to_guess_the_host_in_a_multi_host_workspace() -> None:
    with pytest.raises(guard.Refusal) as caught:
        guard.check_remote(remote(nested_hosts=(("git.other.test/team/tool", "/w/web/tool"),)))
    assert caught.value.code == "MULTI_REPO_WORKSPACE"
    assert caught.value.choices[1][0]["args"]["owner_repo"] == "git.other.test/team/tool"


def test_launch_scope_refuses_writes_on_another_host_except_filing_an_issue() -> None:
    other = "git.other.test/team/tool"
    with pytest.raises(guard.Refusal) as caught:
        guard.check_remote(remote("madt_pr", "merge", target_full=other, explicit=True))
    assert caught.value.code == "OUT_OF_SCOPE" and caught.value.user_action
    guard.check_remote(remote("madt_issues", "create", target_full=other, explicit=True))
    guard.check_remote(remote("madt_issues", "view", target_full=other, explicit=True, mutating=False))


# --------------------------------------------------------------------------- the hook's pattern-free tests

_WORDS = st.text(alphabet="aZ_09=$@*#?!-.:/'é\u00b2 \n", max_size=12)


@settings(max_examples=400, deadline=None, derandomize=True, database=None)
@given(text=_WORDS, pos=st.integers(min_value=0, max_value=13))
def test_the_hooks_string_tests_agree_with_the_patterns_they_stand_for(text, pos):
    assert guard._assigns(text) == bool(re.match(r"[A-Za-z_][A-Za-z0-9_]*=", text))
    name = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-]").match(text, pos)
    assert guard._varname_end(text, pos) == (name.end() if name else None)
    quoted = text if re.fullmatch(r"[A-Za-z0-9_./:@%+=,-]+", text) else "'" + text.replace("'", "'\"'\"'") + "'"
    assert guard.shell_quote(text) == quoted
    hexed = text.translate(str.maketrans("aZ_09=$", "abcdef0"))
    assert (7 <= len(hexed) <= 40 and not hexed.strip(guard._HOOK_HEX)) == bool(re.fullmatch(r"[0-9a-f]{7,40}", hexed))
    assert guard.mentions_git_or_madtea(text + " git") and not guard.mentions_git_or_madtea(text.replace("g", ""))


def test_a_hook_decision_on_common_commands_compiles_no_pattern_and_reads_no_json_module():
    """The classifier alone, on the commands agents run most: no re, json, enum or collections import."""
    probe = ("import sys, guard\n"
             "for line in ('git status', 'git add x && git commit -m y', 'ls -la', 'npm test', 'FOO=1 make', "
             "'cd sub && git log --oneline | head -3', 'python -m pytest -q', 'echo $HOME ${X} $(date)'):\n"
             "    guard.classify_command(line, '/nowhere', lambda path: None, dict)\n")
    assert modules_imported(probe, guard) == "[]"


@settings(max_examples=400, deadline=None, derandomize=True, database=None)
@given(tail=st.text(alphabet="23.1٣x.exe\n", max_size=8), head=st.sampled_from(["python", "pytho", "xpython", ""]))
def test_the_hooks_python_name_test_agrees_with_its_pattern(head, tail):
    name = head + tail
    assert guard._python(name) == bool(re.match(r"python(?:[23](?:\.\d+)?)?(?:\.exe)?$", name)), name


@settings(max_examples=500, deadline=None, derandomize=True, database=None)
@given(st.text(max_size=12) | st.text(alphabet="ab_./:@%+=,-~'\" $", max_size=8))
def test_the_one_shell_quoter_quotes_as_shlex_does(text: str) -> None:
    import shlex
    assert guard.shell_quote(text) == shlex.quote(text)
