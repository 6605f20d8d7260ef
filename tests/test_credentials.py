"""Credentials: each store through a fake of its command or library, the fall-through, the plaintext file's
checks, the auth CLI against a fake forge, git's credential-helper protocol, and the launch scope."""
from __future__ import annotations

import io
import json
import os
import stat
import subprocess
import sys
import textwrap
import time
import types
from pathlib import Path
from typing import Any

import pytest

import forge
import madtea
from fakeforge import FakeForge

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "c0ffee0ddba11f00d5eedcafe0123456789abcde"
HOST = "git.example.test"


# --------------------------------------------------------------------------- fakes

def _tool(bin_dir: Path, name: str, body: str) -> Path:
    """An executable Python script called *name* in *bin_dir*."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    path = bin_dir / name
    path.write_text(f"#!{sys.executable}\n" + textwrap.dedent(body), encoding="utf-8")
    path.chmod(0o755)
    return path


SECRET_TOOL = """
import json, os, sys
DATA, LOG = {data!r}, {log!r}
args = sys.argv[1:]
with open(LOG, "a") as log:
    log.write(json.dumps(args) + "\\n")
items = json.load(open(DATA)) if os.path.exists(DATA) else {{}}
def key(attrs):
    pairs = dict(zip(attrs[::2], attrs[1::2]))
    return pairs.get("service", "") + "|" + pairs.get("host", "")
if args[0] == "lookup":
    value = items.get(key(args[1:]))
    if value is None:
        sys.exit(1)
    sys.stdout.write(value)
elif args[0] == "store":
    attrs = [a for a in args[1:] if not a.startswith("--label")]
    items[key(attrs)] = sys.stdin.read()
    json.dump(items, open(DATA, "w"))
elif args[0] == "clear":
    items.pop(key(args[1:]), None)
    json.dump(items, open(DATA, "w"))
"""

SECURITY = """
import json, os, shlex, sys
DATA, LOG = {data!r}, {log!r}
args = sys.argv[1:]
with open(LOG, "a") as log:
    log.write(json.dumps(args) + "\\n")
items = json.load(open(DATA)) if os.path.exists(DATA) else {{}}
def opts(words):
    found = {{}}
    i = 0
    while i < len(words):
        if words[i].startswith("-") and i + 1 < len(words) and not words[i + 1].startswith("-"):
            found[words[i]] = words[i + 1]
            i += 2
        else:
            found[words[i]] = True
            i += 1
    return found
if args == ["-i"]:
    for line in sys.stdin:
        words = shlex.split(line)
        if words and words[0] == "add-generic-password":
            o = opts(words[1:])
            items[o["-s"] + "|" + o["-a"]] = o["-w"]
    json.dump(items, open(DATA, "w"))
elif args[0] == "find-generic-password":
    o = opts(args[1:])
    value = items.get(o["-s"] + "|" + o["-a"])
    if value is None:
        sys.stderr.write("security: SecKeychainSearchCopyNext: The specified item could not be found.\\n")
        sys.exit(44)
    print(value)
elif args[0] == "delete-generic-password":
    o = opts(args[1:])
    if items.pop(o["-s"] + "|" + o["-a"], None) is None:
        sys.exit(44)
    json.dump(items, open(DATA, "w"))
"""

HANG = """
import time
time.sleep(60)
"""

BROKEN = """
import sys
sys.stderr.write("Cannot autolaunch D-Bus without X11 $DISPLAY\\n")
sys.exit(1)
"""


class FakeKeychain:
    """A fake of a command-line store: its data file and the argv of every call."""

    def __init__(self, root: Path, name: str, script: str) -> None:
        self.data = root / f"{name}.json"
        self.log = root / f"{name}.argv"
        self.path = _tool(root / "bin", name, script.format(data=str(self.data), log=str(self.log)))

    def items(self) -> dict[str, str]:
        return json.loads(self.data.read_text()) if self.data.exists() else {}

    def argv(self) -> list[list[str]]:
        return [json.loads(line) for line in self.log.read_text().splitlines()] if self.log.exists() else []


@pytest.fixture
def only_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """PATH = the given fake bin folder(s), then a folder holding just git: no real credential tool is found."""
    git_dir = tmp_path / "gitbin"
    git_dir.mkdir()
    real_git = subprocess.run(["sh", "-c", "command -v git"], capture_output=True, text=True).stdout.strip()
    (git_dir / "git").symlink_to(real_git)

    def use(*folders: Path) -> None:
        monkeypatch.setenv("PATH", os.pathsep.join([*(str(f) for f in folders), str(git_dir)]))

    use()
    return use


@pytest.fixture
def secret_tool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, only_path) -> FakeKeychain:
    fake = FakeKeychain(tmp_path / "secret-tool", "secret-tool", SECRET_TOOL)
    only_path(fake.path.parent)
    monkeypatch.setenv("MADTEA_CREDENTIAL_STORES", "secret-tool,file")
    return fake


@pytest.fixture
def notes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every diagnostic forge emits."""
    seen: list[str] = []
    monkeypatch.setattr(forge, "_diagnostic", seen.append)
    monkeypatch.setattr(forge, "_REPORTED", set())
    return seen


def _fake_keyring(store: dict[tuple[str, str], str], *, delay: float = 0.0) -> types.ModuleType:
    module = types.ModuleType("keyring")
    errors = types.ModuleType("keyring.errors")

    class PasswordDeleteError(Exception):
        pass

    errors.PasswordDeleteError = PasswordDeleteError
    module.errors = errors

    def get_password(service: str, user: str) -> str | None:
        time.sleep(delay)
        return store.get((service, user))

    def set_password(service: str, user: str, password: str) -> None:
        store[(service, user)] = password

    def delete_password(service: str, user: str) -> None:
        if store.pop((service, user), None) is None:
            raise PasswordDeleteError("not found")

    module.get_password, module.set_password, module.delete_password = get_password, set_password, delete_password
    return module


class FakeAdvapi32:
    """advapi32's four credential functions, over ctypes structures, as Windows would run them."""

    def __init__(self) -> None:
        import ctypes

        self.ctypes = ctypes
        self.items: dict[tuple[str, int], tuple[bytes, str]] = {}
        self.kept: list[Any] = []
        self.freed = 0
        self.error = 0

    def CredWriteW(self, ref: Any, flags: int) -> bool:  # the Windows name
        cred = ref._obj
        blob = self.ctypes.string_at(cred.CredentialBlob, cred.CredentialBlobSize)
        self.items[(cred.TargetName, cred.Type)] = (blob, cred.UserName)
        return True

    def CredReadW(self, target: str, kind: int, flags: int, ref: Any) -> bool:
        found = self.items.get((target, kind))
        if found is None:
            self.error = 1168
            return False
        blob, user = found
        buffer = (self.ctypes.c_ubyte * len(blob)).from_buffer_copy(blob)
        cred = forge._credential_struct()()
        cred.TargetName, cred.Type, cred.UserName = target, kind, user
        cred.CredentialBlobSize = len(blob)
        cred.CredentialBlob = self.ctypes.cast(buffer, self.ctypes.POINTER(self.ctypes.c_ubyte))
        self.kept += [buffer, cred]
        ref._obj.contents = cred
        return True

    def CredDeleteW(self, target: str, kind: int, flags: int) -> bool:
        if self.items.pop((target, kind), None) is None:
            self.error = 1168
            return False
        return True

    def CredFree(self, pointer: Any) -> None:
        self.freed += 1


# --------------------------------------------------------------------------- the seal itself

def test_the_seal_leaves_only_the_plaintext_file_under_the_temporary_home(hermetic_seal: Path) -> None:
    assert [s.name for s in forge.credential_stores()] == ["file"]
    assert forge.hosts_path().is_relative_to(hermetic_seal)
    assert forge.token_for(HOST, HOST) == (None, "none")


# --------------------------------------------------------------------------- each backend

def test_secret_tool_round_trip_keeps_the_token_out_of_argv(secret_tool: FakeKeychain) -> None:
    store = forge.SecretToolStore()
    assert store.available()
    assert store.get(HOST) is None
    store.set(HOST, TOKEN)
    assert secret_tool.items() == {f"madtea|{HOST}": TOKEN}  # stdin stored as is: no trailing newline
    assert store.get(HOST) == TOKEN
    assert store.delete(HOST) is True
    assert store.delete(HOST) is False
    assert secret_tool.items() == {}
    calls = secret_tool.argv()
    assert ["store", f"--label=madtea: {HOST}", "service", "madtea", "host", HOST] in calls
    assert ["lookup", "service", "madtea", "host", HOST] in calls
    assert not any(TOKEN in word for call in calls for word in call)


def test_security_takes_the_token_on_stdin_and_reads_it_back(tmp_path: Path, only_path) -> None:
    fake = FakeKeychain(tmp_path, "security", SECURITY)
    only_path(fake.path.parent)
    store = forge.SecurityStore()
    assert store.available() and store.get(HOST) is None
    store.set(HOST, TOKEN)
    assert fake.items() == {f"madtea|{HOST}": TOKEN}
    assert store.get(HOST) == TOKEN
    assert store.delete(HOST) is True and store.delete(HOST) is False
    assert ["-i"] in fake.argv()
    assert not any(TOKEN in word for call in fake.argv() for word in call)
    with pytest.raises(forge.StoreFailure, match="quotes"):
        store.set(HOST, 'abc"; delete-keychain')


def test_windows_credential_manager_through_ctypes() -> None:
    api = FakeAdvapi32()
    store = forge.WinCredStore(api, last_error=lambda: api.error)
    assert store.available()
    assert store.get(HOST) is None
    store.set(HOST, TOKEN)
    ((target, kind), (blob, user)), = api.items.items()
    assert (target, kind, user) == (f"madtea:{HOST}", forge.CRED_TYPE_GENERIC, "madtea")
    assert blob == TOKEN.encode("utf-16-le")
    assert store.get(HOST) == TOKEN
    assert api.freed == 1  # every successful read is freed
    assert store.delete(HOST) is True and store.delete(HOST) is False
    with pytest.raises(forge.StoreFailure, match="longer"):
        store.set(HOST, "x" * 2000)


def test_windows_store_is_absent_elsewhere() -> None:
    assert forge.WinCredStore().available() is (sys.platform == "win32")


def test_keyring_package_round_trip(monkeypatch: pytest.MonkeyPatch) -> None:
    data: dict[tuple[str, str], str] = {}
    monkeypatch.setitem(sys.modules, "keyring", _fake_keyring(data))
    store = forge.KeyringStore()
    assert store.available()
    store.set(HOST, TOKEN)
    assert data == {("madtea", HOST): TOKEN}
    assert store.get(HOST) == TOKEN
    assert store.delete(HOST) is True and store.delete(HOST) is False


def test_keyring_absent_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "keyring", None)
    assert not forge.KeyringStore().available()


# --------------------------------------------------------------------------- falling through

def test_a_hanging_command_falls_through_with_a_diagnostic(tmp_path: Path, only_path, notes: list[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    _tool(tmp_path / "bin", "secret-tool", HANG)
    only_path(tmp_path / "bin")
    monkeypatch.setattr(forge, "STORE_TIMEOUT", 0.5)
    monkeypatch.setenv("MADTEA_CREDENTIAL_STORES", "secret-tool,keyring")
    data = {("madtea", HOST): TOKEN}
    monkeypatch.setitem(sys.modules, "keyring", _fake_keyring(data))
    hung = forge.SecretToolStore()
    keyring = forge.KeyringStore()
    started = time.monotonic()
    assert forge.token_for(HOST, stores=[hung, keyring]) == (TOKEN, "keyring")
    assert time.monotonic() - started < 5
    assert any("secret-tool" in n and "did not answer within 0.5 s" in n for n in notes)
    # A store that hung is not asked again by this process.
    assert not hung.available()
    notes.clear()
    assert forge.token_for(HOST, stores=[hung, keyring]) == (TOKEN, "keyring")
    assert notes == []


def test_a_hanging_library_falls_through(monkeypatch: pytest.MonkeyPatch, notes: list[str]) -> None:
    monkeypatch.setattr(forge, "STORE_TIMEOUT", 0.3)
    monkeypatch.setitem(sys.modules, "keyring", _fake_keyring({("madtea", HOST): TOKEN}, delay=5))
    store = forge.KeyringStore()
    started = time.monotonic()
    assert forge.token_for(HOST, stores=[store]) == (None, "none")
    assert time.monotonic() - started < 3
    assert any("keyring" in n and "did not answer" in n for n in notes)
    assert not store.available()


def test_absent_backends_are_passed_over_quietly(only_path, monkeypatch: pytest.MonkeyPatch,
                                                 notes: list[str]) -> None:
    monkeypatch.setitem(sys.modules, "keyring", None)
    monkeypatch.delenv("MADTEA_CREDENTIAL_STORES")
    assert forge.token_for(HOST) == (None, "none")
    assert notes == []


def test_a_failing_command_is_named_and_skipped(tmp_path: Path, only_path, notes: list[str]) -> None:
    _tool(tmp_path / "bin", "secret-tool", BROKEN)
    only_path(tmp_path / "bin")
    store = forge.SecretToolStore()
    assert forge.token_for(HOST, stores=[store]) == (None, "none")
    assert [n for n in notes if "secret-tool" in n and "D-Bus" in n]
    # The same failure on the next call is not reported again, but the store is still asked.
    notes.clear()
    forge.FileStore().set(HOST, TOKEN)
    assert forge.token_for(HOST, stores=[store, forge.FileStore()]) == (TOKEN, "file")
    assert not [n for n in notes if "D-Bus" in n]


def test_store_token_picks_the_first_secure_backend_that_reads_back(secret_tool: FakeKeychain,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    data: dict[tuple[str, str], str] = {}
    monkeypatch.setitem(sys.modules, "keyring", _fake_keyring(data))
    monkeypatch.setenv("MADTEA_CREDENTIAL_STORES", "security,secret-tool,keyring,file")
    assert forge.store_token(HOST, f" {TOKEN}\n") == "secret-tool"
    assert secret_tool.items() == {f"madtea|{HOST}": TOKEN} and data == {}
    assert forge.token_for(HOST) == (TOKEN, "secret-tool")


def test_store_token_falls_to_keyring_when_the_os_store_fails(tmp_path: Path, only_path, notes: list[str],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    _tool(tmp_path / "bin", "secret-tool", BROKEN)
    only_path(tmp_path / "bin")
    data: dict[tuple[str, str], str] = {}
    monkeypatch.setitem(sys.modules, "keyring", _fake_keyring(data))
    monkeypatch.setenv("MADTEA_CREDENTIAL_STORES", "secret-tool,keyring,file")
    assert forge.store_token(HOST, TOKEN) == "keyring"
    assert data == {("madtea", HOST): TOKEN}
    assert any("secret-tool could not keep the token" in n for n in notes)


def test_no_secure_backend_refuses_and_names_the_consent_flag(only_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "keyring", None)
    monkeypatch.delenv("MADTEA_CREDENTIAL_STORES")
    with pytest.raises(forge.ForgeError) as caught:
        forge.store_token(HOST, TOKEN)
    assert caught.value.code == "NOT_SUPPORTED"
    assert "--insecure-storage" in str(caught.value) and "secret-tool: not available here" in str(caught.value)
    assert TOKEN not in str(caught.value)
    assert not forge.hosts_path().exists()


def test_a_secure_store_replaces_an_older_plaintext_copy(secret_tool: FakeKeychain, notes: list[str]) -> None:
    forge.FileStore().set(HOST, "old-plaintext-token")
    assert forge.store_token(HOST, TOKEN) == "secret-tool"
    assert forge.FileStore().hosts() == []
    assert any("removed the older plaintext copy" in n for n in notes)


def test_delete_token_cleans_every_store(secret_tool: FakeKeychain) -> None:
    forge.SecretToolStore().set(HOST, TOKEN)
    forge.FileStore().set(HOST, TOKEN)
    assert forge.delete_token(HOST) == ["secret-tool", "file"]
    assert forge.token_for(HOST) == (None, "none")


def test_bad_token_text_is_refused_without_echoing_it() -> None:
    with pytest.raises(forge.ForgeError) as caught:
        forge.check_token_text("two words")
    assert caught.value.code == "BAD_ARGUMENT" and "two words" not in str(caught.value)


# --------------------------------------------------------------------------- the plaintext file

def test_the_plaintext_file_is_private_and_announced_when_stored_not_at_every_read(notes: list[str]) -> None:
    store = forge.FileStore()
    store.set(HOST, TOKEN)
    path = forge.hosts_path()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]
    assert forge.token_for(HOST) == (TOKEN, "file")
    assert forge.token_for(HOST) == (TOKEN, "file")
    assert len(notes) == 1 and "stored in plain text" in notes[0] and str(path) in notes[0]
    assert not any(TOKEN in n for n in notes)


def test_a_group_readable_file_is_refused(notes: list[str]) -> None:
    forge.FileStore().set(HOST, TOKEN)
    forge.hosts_path().chmod(0o644)
    assert forge.token_for(HOST) == (None, "none")
    assert any("can be read by other users (mode 0644)" in n for n in notes)
    with pytest.raises(forge.StoreFailure):
        forge.FileStore().set(HOST, "another")


def test_a_file_of_another_owner_is_refused(notes: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    forge.FileStore().set(HOST, TOKEN)
    real = os.getuid()
    monkeypatch.setattr(os, "getuid", lambda: real + 1)
    assert forge.token_for(HOST) == (None, "none")
    assert any("belongs to another user" in n for n in notes)


def test_a_symlinked_file_is_not_followed(notes: list[str], tmp_path: Path) -> None:
    elsewhere = tmp_path / "planted.json"
    elsewhere.write_text(json.dumps({"hosts": {HOST: {"token": "planted"}}}))
    elsewhere.chmod(0o600)
    forge.hosts_path().parent.mkdir(parents=True, exist_ok=True)
    forge.hosts_path().symlink_to(elsewhere)
    assert forge.token_for(HOST) == (None, "none")
    assert any("cannot be opened" in n for n in notes)


def test_the_environment_comes_before_every_store(notes: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    forge.FileStore().set(HOST, "stored")
    monkeypatch.setenv("MADTEA_TOKEN", "generic-token-value")
    assert forge.token_for(HOST, HOST) == ("generic-token-value", "env:MADTEA_TOKEN")
    assert forge.token_for(HOST, "other.test") == ("stored", "file")
    monkeypatch.setenv(forge.token_env_var(HOST), "specific-token-value")
    assert forge.token_for(HOST, HOST) == ("specific-token-value", f"env:{forge.token_env_var(HOST)}")


# --------------------------------------------------------------------------- tea's config

TEA_CONFIG = """\
logins:
- name: work
  url: https://192.0.2.10
  token: 0123456789abcdef0123456789abcdef01234567
  default: true
  ssh_host: 192.0.2.10
  user: alice
  flags:
    token: not-this-one
- name: "local"
  url: 'http://127.0.0.1:{port}/'
  token: "{token}"
  user: bob # a comment
preferences:
  editor: false
"""


def test_tea_logins_are_read_from_the_yaml_subset() -> None:
    logins = forge.parse_tea_logins(TEA_CONFIG.format(port=3000, token="feed"))
    assert [(l.name, l.url, l.user, l.token) for l in logins] == [
        ("work", "https://192.0.2.10", "alice", "0123456789abcdef0123456789abcdef01234567"),
        ("local", "http://127.0.0.1:3000/", "bob", "feed")]
    assert "0123456789abcdef" not in repr(logins)
    indented = "logins:\n  - name: a\n    url: https://a.test\n    token: t1\n  - url: https://b.test\n"
    assert [(l.url, l.token) for l in forge.parse_tea_logins(indented)] == [("https://a.test", "t1")]
    assert forge.parse_tea_logins("preferences:\n  editor: false\n") == []
    assert forge.target_for_url("http://127.0.0.1:3000/").host == "127.0.0.1:3000"


# --------------------------------------------------------------------------- the auth CLI

@pytest.fixture
def gitea(tmp_path_factory: pytest.TempPathFactory):
    with FakeForge("gitea", base_dir=tmp_path_factory.mktemp("forge")) as fake:
        fake.add_token("alice", TOKEN)
        yield fake


def _clone(fake: FakeForge, where: Path, origin: str | None = None) -> Path:
    subprocess.run(["git", "clone", "-q", str(fake.bare_path()), str(where)], check=True)
    subprocess.run(["git", "-C", str(where), "remote", "set-url", "origin", origin or fake.remote_url()],
                   check=True)
    return where


def cli(*args: str, cwd: Path, stdin: str = "", env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "madtea", *args], cwd=cwd, input=stdin, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}, timeout=60)


def test_login_with_token_is_verified_then_stored(gitea: FakeForge, secret_tool: FakeKeychain,
                                                  tmp_path: Path) -> None:
    repo = _clone(gitea, tmp_path / "web")
    done = cli("auth", "login", "--with-token", cwd=repo, stdin=TOKEN + "\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"Logged in to {gitea.host} as alice; the token is in the Secret Service (secret-tool).\n"
    assert secret_tool.items() == {f"madtea|{gitea.host}": TOKEN}
    assert [r.user for r in gitea.find_requests("GET", "/api/v1/user")] == ["alice"]
    assert forge.known_logins() == {gitea.host: {"user": "alice", "store": "secret-tool", "api": gitea.api}}
    assert TOKEN not in done.stdout + done.stderr
    assert not any(TOKEN in word for call in secret_tool.argv() for word in call)


def test_login_with_a_token_the_forge_refuses_stores_nothing(gitea: FakeForge, secret_tool: FakeKeychain,
                                                             tmp_path: Path) -> None:
    repo = _clone(gitea, tmp_path / "web")
    wrong = "f" * 40
    done = cli("auth", "login", "--with-token", cwd=repo, stdin=wrong)
    assert done.returncode == 1
    assert done.stderr.startswith(f"AUTH_MISSING: The token is missing or invalid for {gitea.host}")
    assert wrong not in done.stderr + done.stdout
    assert secret_tool.items() == {} and forge.known_logins() == {}


def test_login_without_a_secure_store_refuses_unless_consented(gitea: FakeForge, tmp_path: Path,
                                                               only_path) -> None:
    repo = _clone(gitea, tmp_path / "web")
    refused = cli("auth", "login", "--with-token", "--hostname", gitea.url, cwd=tmp_path, stdin=TOKEN,
                  env={"MADTEA_CREDENTIAL_STORES": "secret-tool,file"})
    assert refused.returncode == 1
    assert refused.stderr.startswith("NOT_SUPPORTED: No secure credential store works on this machine")
    assert "--insecure-storage" in refused.stderr and not forge.hosts_path().exists()
    stored = cli("auth", "login", "--with-token", "--insecure-storage", cwd=repo, stdin=TOKEN,
                 env={"MADTEA_CREDENTIAL_STORES": "secret-tool,file"})
    assert stored.returncode == 0, stored.stderr
    assert f"the token is in the plaintext file {forge.hosts_path()}" in stored.stdout
    assert "stored in plain text" in stored.stderr
    assert stat.S_IMODE(forge.hosts_path().stat().st_mode) == 0o600


def test_login_without_with_token_needs_a_terminal(gitea: FakeForge, tmp_path: Path) -> None:
    done = cli("auth", "login", "--hostname", gitea.url, cwd=tmp_path, stdin=TOKEN)
    assert done.returncode == 1 and "--with-token" in done.stderr
    assert not gitea.find_requests("GET", "/api/v1/user")


def test_login_outside_a_repository_needs_a_hostname(tmp_path: Path) -> None:
    done = cli("auth", "login", "--with-token", cwd=tmp_path, stdin=TOKEN)
    assert done.returncode == 1
    assert "is not in a repository with a forge origin" in done.stderr and "--hostname" in done.stderr


def test_status_says_who_and_where_never_the_token(gitea: FakeForge, secret_tool: FakeKeychain,
                                                   tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = _clone(gitea, tmp_path / "web")
    assert cli("auth", "login", "--with-token", cwd=repo, stdin=TOKEN).returncode == 0
    done = cli("auth", "status", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{gitea.host}: logged in as alice; token in the Secret Service (secret-tool)\n"
    env_token = "e" * 40
    gitea.add_token("bob", env_token)
    var = forge.token_env_var(gitea.host)
    done = cli("auth", "status", cwd=repo, env={var: env_token, "MADTEA_TOKEN_ELSEWHERE_TEST": "x" * 40})
    assert done.stdout.splitlines() == [
        f"{gitea.host}: logged in as bob; token in the environment variable {var}",
        "MADTEA_TOKEN_ELSEWHERE_TEST is set in the environment (used for its own host only)"]
    assert env_token not in done.stdout + done.stderr and TOKEN not in done.stdout + done.stderr


def test_status_reports_a_rejected_and_a_missing_credential(gitea: FakeForge, tmp_path: Path) -> None:
    repo = _clone(gitea, tmp_path / "web")
    done = cli("auth", "status", cwd=repo)
    assert done.returncode == 1
    assert done.stdout == f"{gitea.host}: no credential; log in with: madtea auth login --hostname {gitea.host}\n"
    forge.FileStore().set(gitea.host, "d" * 40)
    done = cli("auth", "status", cwd=repo)
    assert done.returncode == 1
    assert done.stdout.startswith(f"{gitea.host}: token in the plaintext file {forge.hosts_path()}, but the "
                                  f"forge did not confirm it (The token is missing or invalid")
    assert "d" * 40 not in done.stdout + done.stderr


def test_status_with_nothing_known(tmp_path: Path) -> None:
    done = cli("auth", "status", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stdout == "Not logged in to any forge host; log in with: madtea auth login --hostname <host>\n"


def test_logout_and_token(gitea: FakeForge, secret_tool: FakeKeychain, tmp_path: Path) -> None:
    repo = _clone(gitea, tmp_path / "web")
    assert cli("auth", "login", "--with-token", cwd=repo, stdin=TOKEN).returncode == 0
    shown = cli("auth", "token", cwd=repo)
    assert (shown.returncode, shown.stdout) == (0, TOKEN + "\n")
    gone = cli("auth", "logout", "--hostname", gitea.host, cwd=repo)
    assert gone.stdout == f"Logged out of {gitea.host}: removed its token from the Secret Service (secret-tool).\n"
    assert secret_tool.items() == {} and forge.known_logins() == {}
    again = cli("auth", "logout", cwd=repo)
    assert again.stdout == f"No stored token for {gitea.host}; nothing was removed.\n"
    missing = cli("auth", "token", cwd=repo)
    assert missing.returncode == 1 and f"madtea auth login --hostname {gitea.host}" in missing.stderr


def test_import_tea_refuses_without_a_terminal(gitea: FakeForge, tmp_path: Path) -> None:
    tea = forge.tea_config_path()
    tea.parent.mkdir(parents=True)
    tea.write_text(TEA_CONFIG.format(port=gitea.port, token=TOKEN))
    done = cli("auth", "import-tea", cwd=tmp_path)
    assert done.returncode == 1
    assert f"  {gitea.host} as bob (tea login 'local')" in done.stdout
    assert "needs your consent at a terminal" in done.stderr
    assert TOKEN not in done.stdout + done.stderr
    assert not gitea.find_requests() and forge.known_logins() == {}


def test_import_tea_with_consent_verifies_and_stores(gitea: FakeForge, secret_tool: FakeKeychain,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    tea = forge.tea_config_path()
    tea.parent.mkdir(parents=True)
    tea.write_text(TEA_CONFIG.format(port=gitea.port, token=TOKEN))

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stdin", Terminal("yes\n"))
    assert madtea.main(["auth", "import-tea"]) == 1  # the unreachable work login is reported, not stored
    out, err = capsys.readouterr()
    assert "Type yes to import: " in err and "Type yes" not in out  # seen even with standard output piped
    assert f"{gitea.host}: imported as alice; the token is in the Secret Service (secret-tool)" in out
    assert "192.0.2.10: not imported" in out
    assert secret_tool.items() == {f"madtea|{gitea.host}": TOKEN}
    monkeypatch.setattr(sys, "stdin", Terminal("no\n"))
    assert madtea.main(["auth", "import-tea"]) == 2  # gh's status for a cancelled prompt
    assert "Nothing was imported." in capsys.readouterr().out


# --------------------------------------------------------------------------- git's credential protocol

def _helper(action: str, request: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> str:
    done = subprocess.run([sys.executable, str(ROOT / "madtea.py"), "auth", "git-credential", action],
                          input=request, capture_output=True, text=True, env={**os.environ, **(env or {})},
                          cwd=cwd, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_git_credential_get_answers_only_for_a_known_host(secret_tool: FakeKeychain) -> None:
    forge.SecretToolStore().set(HOST, TOKEN)
    forge.record_login(HOST, "alice", "secret-tool")
    assert _helper("get", f"protocol=https\nhost={HOST}\npath=acme/web.git\n\n") == \
        f"username=alice\npassword={TOKEN}\n"
    assert _helper("get", "protocol=https\nhost=elsewhere.test\n\n") == ""
    assert _helper("get", f"protocol=ssh\nhost={HOST}\n\n") == ""
    # Inside madtea's own git children the helper answers for the origin's host alone.
    assert _helper("get", f"protocol=https\nhost={HOST}\n\n", {"MADTEA_GIT_CREDENTIAL_HOST": "other.test"}) == ""


def test_git_credential_store_and_erase_persist_nothing(secret_tool: FakeKeychain) -> None:
    before = dict(secret_tool.items())
    for action in ("store", "erase"):
        assert _helper(action, f"protocol=https\nhost={HOST}\nusername=x\npassword=handed-over-secret\n\n") == ""
    assert secret_tool.items() == before
    assert forge.token_for(HOST) == (None, "none")


def test_git_credential_without_a_user_says_x_token(monkeypatch: pytest.MonkeyPatch) -> None:
    var = forge.token_env_var(HOST)
    assert _helper("get", f"protocol=https\nhost={HOST}\n\n", {var: TOKEN}) == f"username=x-token\npassword={TOKEN}\n"


def test_git_credential_reads_an_environment_token_from_its_private_file(tmp_path: Path) -> None:
    handoff = tmp_path / "handoff.json"
    handoff.write_text(json.dumps({"host": HOST, "token": TOKEN}))
    handoff.chmod(0o600)
    env = {"MADTEA_GIT_TOKEN_FILE": str(handoff), "MADTEA_GIT_CREDENTIAL_HOST": HOST}
    assert _helper("get", f"protocol=https\nhost={HOST}\n\n", env) == f"username=x-token\npassword={TOKEN}\n"
    handoff.chmod(0o644)
    assert _helper("get", f"protocol=https\nhost={HOST}\n\n", env) == ""


# --------------------------------------------------------------------------- the transport environment

def test_transport_env_names_the_helper_and_carries_no_token(gitea: FakeForge, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    repo = madtea.repo_facts(gitops_discover(_clone(gitea, tmp_path / "web")))
    monkeypatch.setenv("MADTEA_TOKEN", TOKEN)
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "http.lowSpeedTime")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "30")
    with madtea.transport_env(repo, gitea.host) as env:
        handoff = Path(env["MADTEA_GIT_TOKEN_FILE"])
        assert stat.S_IMODE(handoff.stat().st_mode) == 0o600
        assert env["GIT_CONFIG_COUNT"] == "3"
        assert (env["GIT_CONFIG_KEY_1"], env["GIT_CONFIG_VALUE_1"]) == ("credential.helper", "")
        assert env["GIT_CONFIG_KEY_2"] == "credential.helper"
        assert env["GIT_CONFIG_VALUE_2"] == madtea.helper_command()
        assert env["MADTEA_GIT_CREDENTIAL_HOST"] == gitea.host and env["GIT_TERMINAL_PROMPT"] == "0"
        assert TOKEN not in json.dumps(env)
        import gitops
        assert not any(k.startswith("MADTEA_TOKEN") for k in gitops._child_env(env))
    assert not handoff.exists()


def test_transport_to_another_host_gets_no_helper(gitea: FakeForge, tmp_path: Path) -> None:
    repo = madtea.repo_facts(gitops_discover(_clone(gitea, tmp_path / "web")))
    with madtea.transport_env(repo, "launch.example.test") as env:
        assert env["GIT_CONFIG_COUNT"] == "1" and env["GIT_CONFIG_VALUE_0"] == ""
        assert "MADTEA_GIT_CREDENTIAL_HOST" not in env


def test_helper_command_is_absolute_and_quoted() -> None:
    command = madtea.helper_command()
    assert command.startswith("!") and command.endswith(" auth git-credential")
    assert str(ROOT / "madtea.py") in command


@pytest.mark.anyio
async def test_a_store_failure_while_a_call_reads_its_token_is_in_the_result_on_both_surfaces(
        gitea: FakeForge, tmp_path: Path, only_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """forge's warnings during a call are the call's notes: the MCP result's text, the CLI's stderr."""
    from mcp.client import Client
    repo = _clone(gitea, tmp_path / "web")
    _tool(tmp_path / "bin", "secret-tool", BROKEN)
    only_path(tmp_path / "bin")
    monkeypatch.setenv("MADTEA_CREDENTIAL_STORES", "secret-tool,file")
    forge.FileStore().set(gitea.host, TOKEN)
    said = f"the credential store secret-tool failed for {gitea.host} (secret-tool lookup failed"
    monkeypatch.setattr(forge, "_REPORTED", set())
    async with Client(madtea.build_server(repo), mode="legacy") as client:
        answer = await client.call_tool("madt_issues", {"action": "list"})
    assert not answer.is_error and f"[warning] {said}" in answer.content[0].text
    monkeypatch.setattr(forge, "_REPORTED", set())
    result = madtea.run("madt_issues", {"action": "list"}, madtea.Context("cli", repo))
    assert not result.is_error and [text for severity, text in result.notes if text.startswith(said)]
    done = cli("issue", "list", cwd=repo)
    assert done.returncode == 0 and f"warning: {said}" in done.stderr, done.stderr


def gitops_discover(path: Path) -> Any:
    import gitops
    return gitops.discover(path)


# --------------------------------------------------------------------------- origins and their errors

def test_auth_missing_names_the_login_call_for_the_host(gitea: FakeForge, tmp_path: Path) -> None:
    repo = _clone(gitea, tmp_path / "web")
    result = madtea.run("madt_api_call", {"path": "/user"}, madtea.Context("mcp", repo))
    assert result.error["code"] == "AUTH_MISSING"
    assert result.error["user_action"] == (
        f"Ask the user to run `madtea auth login --hostname {gitea.host}` in their own terminal (it asks for a "
        f"token and checks it with the forge), then call again.")


def test_an_unreadable_origin_is_named_without_its_secret(tmp_path: Path) -> None:
    repo = tmp_path / "odd"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "remote", "add", "origin", "https://bob:s3cr3t@forge.test/just-one"],
                   check=True)
    result = madtea.run("madt_issues", {"action": "list"}, madtea.Context("mcp", repo))
    assert result.error["code"] == "BAD_ARGUMENT"
    assert "has an origin, https://***@forge.test/just-one, that is not a forge repository address" in result.text
    assert "s3cr3t" not in madtea.render_text(result, "mcp")


def test_a_credentialed_origin_is_warned_about_without_the_secret(gitea: FakeForge, tmp_path: Path) -> None:
    url = gitea.remote_url().replace("http://", f"http://alice:{TOKEN}@")
    repo = _clone(gitea, tmp_path / "web", origin=url)
    result = madtea.run("madt_whoami", {}, madtea.Context("mcp", repo))
    text = madtea.render_text(result, "mcp")
    assert "embeds a credential in its URL (http://***@127.0.0.1" in text
    assert TOKEN not in text and TOKEN not in json.dumps(result.data)


def test_a_token_sent_over_plain_http_to_another_machine_is_warned_about(tmp_path, monkeypatch) -> None:
    from topologies import make_repo

    repo = make_repo(tmp_path / "web", origin="http://forge.example.test/acme/web.git")
    monkeypatch.setenv("MADTEA_TOKEN", "a-token-for-the-test")
    result = madtea.run("madt_issues", {"action": "list"}, madtea.Context("mcp", repo))
    assert ("warning", "the token for forge.example.test travels unencrypted: its API address is http://, "
                       "not https://.") in result.notes
    assert "a-token-for-the-test" not in result.text


@pytest.mark.parametrize("host", ["[::1]", "[::1]:9", "LOCALHOST", "localhost.", "127.0.0.1:9", "localhost:9"])
def test_a_token_sent_over_plain_http_to_this_machine_is_not_warned_about(tmp_path, monkeypatch, host: str) -> None:
    from topologies import make_repo

    repo = make_repo(tmp_path / "web", origin=f"http://{host}/acme/web.git")
    monkeypatch.setenv("MADTEA_TOKEN", "a-token-for-the-test")
    result = madtea.run("madt_issues", {"action": "list"}, madtea.Context("mcp", repo))
    assert not [text for _, text in result.notes if "travels unencrypted" in text]


@pytest.mark.parametrize("host, loopback", [
    ("[::1]", True), ("[::1]:3000", True), ("::1", True), ("LOCALHOST", True), ("localhost.", True),
    ("localhost:3000", True), ("127.0.0.1", True), ("127.1.2.3:8123", True),
    ("forge.example.test", False), ("localhost.example", False), ("[2001:db8::1]:3000", False), ("10.0.0.1", False)])
def test_which_hosts_are_this_machine(host: str, loopback: bool) -> None:
    assert forge.is_loopback(host) is loopback


# --------------------------------------------------------------------------- the launch scope, through the tools

@pytest.fixture
def two_hosts(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A launch repo on forge A, and forge B reachable by name; each host has its own token."""
    with FakeForge("gitea", base_dir=tmp_path_factory.mktemp("a")) as a, \
            FakeForge("gitea", base_dir=tmp_path_factory.mktemp("b")) as b:
        b.add_repo("acme", "other")
        monkeypatch.setenv(forge.token_env_var(a.host), "alice-token")
        monkeypatch.setenv(forge.token_env_var(b.host), "alice-token")
        config = forge.config_path()
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(json.dumps({"hosts": {b.host: {"api_url": b.api}}}))
        repo = _clone(a, tmp_path / "launch")
        yield a, b, madtea.Context("mcp", repo)


def _b_paths(b: FakeForge) -> set[str]:
    return {r.path for r in b.find_requests()}


def test_another_host_is_read_only_through_the_confined_client(two_hosts) -> None:
    a, b, ctx = two_hosts
    target = f"{b.host}/acme/web"
    listed = madtea.run("madt_issues", {"action": "list", "owner_repo": target}, ctx)
    assert not listed.is_error, listed.text
    viewed = madtea.run("madt_repo", {"action": "view", "owner_repo": target}, ctx)
    assert not viewed.is_error, viewed.text
    assert _b_paths(b) and all(p.startswith("/api/v1/repos/acme/web") for p in _b_paths(b))


@pytest.mark.parametrize("tool, args", [
    ("madt_api_call", {"path": "/user"}),
    ("madt_api_call", {"path": "/repos/acme/other/issues"}),
    ("madt_api_call", {"path": "/repos/acme/web/../other/issues"}),
    ("madt_search", {"action": "repos", "q": "web"}),
    ("madt_notifications", {"action": "list"}),
    ("madt_repo", {"action": "list"}),
])
def test_another_host_refuses_paths_outside_its_repository(two_hosts, tool: str, args: dict[str, Any]) -> None:
    a, b, ctx = two_hosts
    before = len(b.find_requests())
    result = madtea.run(tool, {**args, "owner_repo": f"{b.host}/acme/web"}, ctx)
    assert result.is_error and result.error["code"] in ("OUT_OF_SCOPE", "BAD_ARGUMENT"), result.text
    assert all(r.path.startswith("/api/v1/repos/acme/web") for r in b.find_requests()[before:])


def test_another_host_takes_an_issue_but_no_other_write(two_hosts) -> None:
    a, b, ctx = two_hosts
    target = f"{b.host}/acme/web"
    filed = madtea.run("madt_issues", {"action": "create", "owner_repo": target, "title": "Found a bug"}, ctx)
    assert not filed.is_error, filed.text
    number = filed.data["number"]
    refused = madtea.run("madt_issues", {"action": "comment", "owner_repo": target, "number": number,
                                         "body": "more"}, ctx)
    assert refused.error["code"] == "OUT_OF_SCOPE"
    assert not b.find_requests("POST", f"/api/v1/repos/acme/web/issues/{number}/comments")
    # The launch host itself is not confined.
    own = madtea.run("madt_api_call", {"path": "/user"}, ctx)
    assert not own.is_error, own.text
