"""gh's habits at a person's terminal: ``config get/set/list`` and the settings madtea honours (pager, browser,
editor, prompt), ``repo clone``, and a create that asks for its title and body at a terminal but never waits
for one anywhere else."""
from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path


import madtea
from helpers import cli
from remote_env import Env, child_env, env  # noqa: F401 - fixtures
from test_cli import _recorder


def _config_file() -> Path:
    return Path(os.environ["XDG_CONFIG_HOME"]) / "madtea" / "config.json"


# --------------------------------------------------------------------------- config get / set / list

def test_config_sets_gets_and_lists_settings_in_a_private_file_keeping_its_hosts(hermetic_seal: Path,
                                                                                  monkeypatch, capsys) -> None:
    where = hermetic_seal / "home"
    path = _config_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    hosts = {"forge.example.test": {"api_url": "https://forge.example.test/api/v1"}}
    path.write_text(json.dumps({"hosts": hosts}), encoding="utf-8")
    path.chmod(0o644)  # written by hand, readable by others
    code, out, err = cli(monkeypatch, capsys, where, "config", "list")
    assert code == 0 and out.splitlines() == ["editor=", "pager=", "browser=", "prompt=enabled"], (out, err)
    assert cli(monkeypatch, capsys, where, "config", "set", "editor", "vim -f")[0] == 0
    assert cli(monkeypatch, capsys, where, "config", "set", "prompt", "disabled")[0] == 0
    code, out, err = cli(monkeypatch, capsys, where, "config", "get", "editor")
    assert code == 0 and out == "vim -f\n", err
    code, out, err = cli(monkeypatch, capsys, where, "config", "list")
    assert out.splitlines() == ["editor=vim -f", "pager=", "browser=", "prompt=disabled"], out
    saved = json.loads(path.read_text(encoding="utf-8"))
    assert saved == {"hosts": hosts, "editor": "vim -f", "prompt": "disabled"}  # the hosts a person wrote stay
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # private from then on
    assert [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")] == []  # one rename, nothing left


def test_config_refuses_an_unknown_setting_a_token_and_a_value_it_does_not_take(hermetic_seal: Path, monkeypatch,
                                                                                 capsys) -> None:
    where = hermetic_seal / "home"
    code, out, err = cli(monkeypatch, capsys, where, "config", "set", "colour", "always")
    assert code == 1 and "no setting named 'colour'" in err and "editor, pager, browser, prompt" in err
    assert "Nothing was changed" in err and "madtea config list" in err
    code, out, err = cli(monkeypatch, capsys, where, "config", "get", "colour")
    assert code == 1 and "editor, pager, browser, prompt" in err and "Nothing was changed" not in err
    code, out, err = cli(monkeypatch, capsys, where, "config", "set", "oauth_token", "s3cr3t-value")
    assert code == 1 and "tokens are never kept in madtea's config" in err and "madtea auth login" in err
    assert "s3cr3t-value" not in err
    code, out, err = cli(monkeypatch, capsys, where, "config", "set", "prompt", "sometimes")
    assert code == 1 and "enabled or disabled" in err and "madtea config set prompt enabled" in err
    assert not _config_file().exists()  # nothing was written
    _config_file().parent.mkdir(parents=True, exist_ok=True)
    _config_file().write_text("{not json", encoding="utf-8")  # a broken file is said, never overwritten
    code, out, err = cli(monkeypatch, capsys, where, "config", "set", "pager", "more")
    assert code == 1 and "not valid JSON" in err and _config_file().read_text(encoding="utf-8") == "{not json"


def test_the_configured_pager_comes_after_madtea_pager_and_before_pager(env: Env, monkeypatch, capsys,
                                                                         tmp_path: Path) -> None:
    number = env.forge.create_issue("acme", "web", "Long", "\n".join(f"line {i}" for i in range(40)))["number"]
    configured, by_config = _recorder(tmp_path, "configured-pager")
    theirs, by_pager = _recorder(tmp_path, "pager")
    madtea.config_set("pager", f"{configured} --from-config")
    monkeypatch.setenv("LINES", "20")
    monkeypatch.setenv("PAGER", str(theirs))
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    code, out, err = cli(monkeypatch, capsys, env.clone, "issue", "view", str(number))  # MADTEA_PAGER="" wins
    assert code == 0 and "line 39" in out and not by_config.exists() and not by_pager.exists()
    monkeypatch.delenv("MADTEA_PAGER")
    code, out, err = cli(monkeypatch, capsys, env.clone, "issue", "view", str(number))
    paged = by_config.read_text()
    assert code == 0 and paged.startswith("--from-config\n") and "line 39" in paged and "line 39" not in out
    assert not by_pager.exists()  # the setting comes before PAGER, as gh's does


def test_web_opens_the_configured_browser(env: Env, monkeypatch, capsys, tmp_path: Path) -> None:
    import webbrowser
    configured, by_config = _recorder(tmp_path, "configured-browser")
    theirs, by_browser = _recorder(tmp_path, "browser")
    monkeypatch.setenv("BROWSER", str(theirs))
    monkeypatch.setattr(webbrowser, "_tryorder", None)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True, raising=False)
    madtea.config_set("browser", f"{configured} --new-tab")
    code, out, err = cli(monkeypatch, capsys, env.clone, "issue", "list", "--web")
    assert code == 0, err
    assert by_config.read_text().splitlines()[0] == f"--new-tab {out.strip()}" and not by_browser.exists()


def test_an_agent_may_read_the_settings_but_not_change_them(tmp_path: Path) -> None:
    from helpers import classify
    denied = classify("madtea config set editor 'sh -c evil'", str(tmp_path))
    assert denied.kind == "deny" and "person's act" in denied.text and "madtea config set" in denied.text
    for command in ("madtea config get editor", "madtea config list"):
        assert classify(command, str(tmp_path)).kind == "allow", command
