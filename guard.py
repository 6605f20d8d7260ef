"""Every refusal decision madtea makes, and the text of each refusal.

Functions here take facts (paths, common dirs, origins, caller signals, repo
state) and return a decision or raise :class:`Refusal`; they start no process
and touch no network. The hook's shell-command classifier lives here too.
"""
from __future__ import annotations

__all__: list[str] = []

# --- wrong-repo guard and rules (lead) ---


# --- hook classifier (hook helper) ---
