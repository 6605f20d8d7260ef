"""madtea: a safe forge tool for Gitea and Forgejo.

One registry of operations feeds two thin surfaces: an MCP stdio server for
coding agents (``madtea mcp``) and a CLI for people (``madtea <noun> <verb>``).
Every repo-scoped call passes the guard before its handler runs. ``madtea
hook`` steers an agent's raw ``git`` commands before they run.
"""
from __future__ import annotations

import os
import sys

# python -m puts the caller's cwd first on sys.path, and a user's repository
# may hold its own guard.py or forge.py: load our siblings from our own folder.
_HERE = os.path.dirname(os.path.realpath(__file__))
sys.path[:] = [_HERE] + [p for p in sys.path if os.path.realpath(p or os.curdir) != _HERE]

__all__ = ["main", "__version__"]
__version__ = "0.1.0"

# --- results and diagnostics (lead) ---

# --- registry (lead) ---

# --- services: local git (lead) ---

# --- services: remote (lead) ---

# --- dispatcher (lead) ---

# --- CLI (lead) ---

# --- MCP server (lead) ---

# --- hook (hook helper) ---

# --- main (lead) ---


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if args[:1] == ["hook"]:
        return hook_main()  # noqa: F821  (defined in the hook section)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
