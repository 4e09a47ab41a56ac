"""Fixtures shared by the unit tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def isolated_cache(tmp_path, monkeypatch):
    """A fresh, empty `$RAGWATCH_CACHE_DIR` for one test: no LLM reply cached by another test is reused.

    Opt in per file with `pytestmark = pytest.mark.usefixtures("isolated_cache")`. Not autouse: the
    other unit tests keep the session cache (`tests/conftest.py`), whose `models/` holds the packaged
    models some of them load.
    """
    monkeypatch.setenv("RAGWATCH_CACHE_DIR", str(tmp_path / "cache"))
