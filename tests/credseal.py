"""Seal the credential stores: no test reaches the machine's real keychain.

Only the plaintext file (which lives under the test's temporary home) stays
enabled; a test that exercises another backend turns it on explicitly, with a
fake of its command or library. The variable reaches CLI subprocesses and the
git credential helper too, since they inherit the test's environment.
"""
from __future__ import annotations

from pathlib import Path

import pytest

__all__ = ["sealed_credential_stores"]


@pytest.fixture(autouse=True)
def sealed_credential_stores(hermetic_seal: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MADTEA_CREDENTIAL_STORES", "file")
