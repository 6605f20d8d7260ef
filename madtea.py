"""madtea: a safe forge tool for Gitea and Forgejo (skeleton; filled in below)."""
from __future__ import annotations

__all__ = ["main", "__version__"]
__version__ = "0.1.0"


def main(argv: list[str] | None = None) -> int:
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
