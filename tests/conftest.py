"""Shared test configuration.

``SHARED`` is ``../shared`` beside the checkout (real papers, gold labels, real vaults).  Tests
that need it use the ``shared`` fixture, which skips with a reason only when the folder is absent;
in CI it is always present, so those tests always run there.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PLUGIN = REPO / "plugin"
SCRIPTS = PLUGIN / "scripts"
SHARED = Path(os.environ.get("EPISTEME_SHARED", REPO.parent / "shared")).resolve()

if str(PLUGIN) not in sys.path:
    sys.path.insert(0, str(PLUGIN))

# The fake Anthropic Messages API (fixture ``fake_anthropic``); it also keeps every test away from
# the real APIs (see tests/fake_anthropic.py).  The fake OpenAI-compatible Chat Completions server
# (fixture ``fake_openai``, tests/fake_openai.py) stands in for OpenAI and local servers.
pytest_plugins = ["fake_anthropic", "fake_openai", "ingested_wiki", "uibrowser"]
# ingested_wiki: session fixtures ``embedder``, ``ingested_template``, ``ingested_papers`` and a
# per-test copy ``ingested_wiki`` of a wiki with real papers ingested (cached across workers).
# uibrowser: ``browser`` (Debian's Chromium via Playwright, per module) and ``page`` for the UI tests.


@pytest.fixture(scope="session")
def shared() -> Path:
    """The ``../shared`` folder, or skip when it is absent (never in CI)."""
    if not (SHARED / "data").is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"../shared is missing in CI (looked in {SHARED})")
        pytest.skip(f"../shared not present at {SHARED}")
    return SHARED


@pytest.fixture(scope="session")
def papers_dir(shared: Path) -> Path:
    return shared / "data" / "papers"


@pytest.fixture(scope="session")
def vaults_dir(shared: Path) -> Path:
    return shared / "data" / "vaults"
