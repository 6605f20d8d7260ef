"""A copy of madtea's own source as a git repository with release tags, built and signed with generated keys."""
from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from topologies import commit_files, run_git

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("madtea.py", "guard.py", "forge.py", "gitops.py", "README.md", "pyproject.toml", "setup.py",
           "MANIFEST.in", "release/versioning.py", "release/release.py", "bin/madtea")


def release_tool() -> ModuleType:
    """release/release.py, imported as a module."""
    if "madtea_release_tool" in sys.modules:
        return sys.modules["madtea_release_tool"]
    spec = importlib.util.spec_from_file_location("madtea_release_tool", ROOT / "release" / "release.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["madtea_release_tool"] = module
    spec.loader.exec_module(module)
    return module


def source_repo(path: Path) -> Path:
    """madtea's source files in a fresh repository on main, one commit, no tags."""
    path.mkdir(parents=True)
    run_git(path, "init", "-q", "-b", "main")
    for rel in SOURCES:
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / rel, path / rel)
    run_git(path, "add", "--", *SOURCES)
    run_git(path, "commit", "-q", "-m", "feat: madtea")
    return path


def tag(repo: Path, name: str) -> None:
    run_git(repo, "tag", "-a", name, "-m", f"madtea {name}")


def change(repo: Path, message: str, name: str = "NOTES.md") -> str:
    """One more commit with *message* (touching a file that is not shipped)."""
    previous = (repo / name).read_text(encoding="utf-8") if (repo / name).exists() else ""
    return commit_files(repo, {name: previous + message + "\n"}, message)


def keypair(path: Path, comment: str = "release") -> Path:
    """A fresh ed25519 key without a passphrase; returns the private key's path."""
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)], check=True,
                   stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    return path


def dry_run(repo: Path, out: Path, key: Path | None, *extra: str) -> subprocess.CompletedProcess[str]:
    """``release/release.py --dry-run`` of *repo* into *out*, zipapp and archive only unless *extra* says more."""
    argv = [sys.executable, str(repo / "release" / "release.py"), "--dry-run", "--repo", str(repo),
            "--out", str(out), *(["--key", str(key)] if key else []), *(extra or ("--copies-only",))]
    return subprocess.run(argv, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
