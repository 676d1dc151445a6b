"""Shared test set-up: every test session gets its own answer cache, never the user's."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True, scope="session")
def _isolated_answer_cache(tmp_path_factory):
    # The joined model stays in its own directory (RAGMETER_MODEL_DIR / ~/.cache/ragmeter/models),
    # so isolating the answer cache does not rebuild the 1.1 GB model file.
    patch = pytest.MonkeyPatch()
    patch.setenv("RAGMETER_CACHE_DIR", str(tmp_path_factory.mktemp("ragmeter-cache")))
    yield
    patch.undo()
