"""The version madtea reports, from the release tag at build time.

A release is an annotated tag ``vX.Y.Z`` on the default branch, so no commit
exists only to bump a number. Builds stamp the version into the built copy of
``madtea.py``; the source keeps ``0.0.0+unknown``, which is what a plain copy
of the source files reports. Used by ``setup.py`` and ``release/release.py``.
"""
from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gitops import GitResult

__all__ = ["UNKNOWN", "TAG_GLOB", "parse", "describe", "stamp", "version_of", "git_funnel"]

UNKNOWN = "0.0.0+unknown"
TAG_GLOB = "v[0-9]*.[0-9]*.[0-9]*"
_TAG = re.compile(r"v(\d+)\.(\d+)\.(\d+)")
_LINE = re.compile(r'^__version__ = "[^"\n]*"', re.M)


def parse(tag: str) -> tuple[int, int, int] | None:
    """(X, Y, Z) of a release tag ``vX.Y.Z``; None for anything else."""
    match = _TAG.fullmatch(tag)
    return (int(match[1]), int(match[2]), int(match[3])) if match else None


def git_funnel(root: Path) -> Callable[..., GitResult]:
    """``gitops.git``, the one git funnel, imported from the tree at *root* (the tree being built or released)."""
    sys.path.insert(0, str(root))
    try:
        import gitops
    finally:
        sys.path.pop(0)
    return gitops.git


def _git(root: Path, *args: str) -> str | None:
    result = git_funnel(root)(*args, cwd=root, check=False, timeout=30)
    return result.text.strip() if result.ok else None


def describe(root: Path) -> str:
    """The version of the tree at *root*.

    In order: ``MADTEA_BUILD_VERSION`` (the release tool sets it), an sdist's
    PKG-INFO, then git: ``X.Y.Z`` on a release tag with a clean tree, else
    ``X.Y.(Z+1).devN+gSHA`` (N commits after ``vX.Y.Z``; ``.dirty`` when the
    tree has changes), ``0.0.0.devN+gSHA`` with no release tag yet, and
    ``0.0.0+unknown`` with neither git nor metadata.
    """
    forced = os.environ.get("MADTEA_BUILD_VERSION", "").strip()
    if forced:
        return forced
    info = root / "PKG-INFO"
    if info.is_file():
        for line in info.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("Version:"):
                return line.split(":", 1)[1].strip()
    if not (root / ".git").exists():
        return UNKNOWN
    described = _git(root, "describe", "--match", TAG_GLOB, "--long", "--dirty", "--abbrev=12")
    if described:
        match = re.fullmatch(r"(v\d+\.\d+\.\d+)-(\d+)-g([0-9a-f]+)(-dirty)?", described)
        if match and parse(match[1]):
            x, y, z = parse(match[1])  # type: ignore[misc]
            count, sha, dirty = int(match[2]), match[3], bool(match[4])
            if count == 0 and not dirty:
                return f"{x}.{y}.{z}"
            return f"{x}.{y}.{z + 1}.dev{count}+g{sha}" + (".dirty" if dirty else "")
    head = _git(root, "rev-parse", "--short=12", "HEAD")
    commits = _git(root, "rev-list", "--count", "HEAD")
    if not head or not commits:
        return UNKNOWN
    changed = _git(root, "status", "--porcelain", "--untracked-files=no")
    return f"0.0.0.dev{commits}+g{head}" + (".dirty" if changed else "")


def stamp(source: str, version: str) -> str:
    """*source* of madtea.py with its ``__version__`` line set to *version*."""
    if not re.fullmatch(r"[0-9A-Za-z.+\-]+", version):
        raise ValueError(f"not a version: {version!r}")
    stamped, count = _LINE.subn(f'__version__ = "{version}"', source)
    if count != 1:
        raise ValueError("madtea.py must hold exactly one __version__ line")
    return stamped


def version_of(source: str) -> str | None:
    """The version stamped in *source* (the text of a madtea.py)."""
    match = _LINE.search(source)
    return match[0].split('"')[1] if match else None
