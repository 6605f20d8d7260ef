"""Hostile and confused calls against the review, Actions, time-tracking and people actions, on both fake
flavours: secrets of every length stay hidden without hiding madtea's own words, values that could leave
their URL segment are refused before any request, a write retried after a lost answer lands once, and
read-only, pinned and cross-host servers refuse every new write before any request."""
from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

import madtea
from remote_env import ROOT, Env, child_env, env  # noqa: F401 - fixtures

HIDDEN = "<the secret value>"


# =========================================================================== secrets of every length

def test_a_one_letter_secret_leaves_madteas_words_whole(env: Env) -> None:
    made = env.ok("madt_actions", action="set_secret", name="K", body="e")
    assert made.text.startswith("Created the secret K in acme/web;") and HIDDEN not in made.text
    assert env.repo.secrets == {"K": "e"}


@pytest.mark.parametrize("body", [["ab"], {"v": "ab"}])
def test_a_short_secret_echoed_by_a_refusal_is_hidden(env: Env, body: Any) -> None:
    refused = env.refused("BAD_ARGUMENT", "madt_actions", action="set_secret", name="K", body=body)
    assert '"ab"' not in refused.text + json.dumps(refused.error) and HIDDEN in refused.text
    assert "must be a string" in refused.text  # the rest of the sentence is left as it was


def test_a_secret_the_size_of_a_key_file_is_hidden_in_bounded_memory() -> None:
    # A kubeconfig or key bundle is tens of kilobytes; hiding its every prefix at once took gigabytes.
    probe = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
        "import madtea\n"
        "secret = 'k' * 7 + 'q' * 60_000\n"
        "result = madtea.Result('not \"' + secret[:80] + '… and ' + secret, {'echo': secret[:300]})\n"
        "done = madtea._without_secrets(result, [secret])\n"
        "assert 'kkkkkkkq' not in done.text + str(done.data), done.text[:200]\n"
        "print(done.text, done.data)\n")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=child_env(), capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "not \"<the secret value>… and <the secret value> {'echo': '<the secret value>'}"
