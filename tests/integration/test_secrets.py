"""API keys can come from a ZenML secret; the environment wins, and nothing else sees the value."""

from __future__ import annotations

import os

import pytest
from zenml.client import Client

from ragwatch_zenml.steps.secrets import export_api_keys

pytestmark = pytest.mark.integration


def test_secret_values_become_environment_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAGWATCH_TEST_KEY", raising=False)
    monkeypatch.setenv("RAGWATCH_PRESET_KEY", "from-env")
    Client().create_secret(
        "ragwatch_test_keys", values={"RAGWATCH_TEST_KEY": "sk-from-secret", "RAGWATCH_PRESET_KEY": "from-secret"}
    )
    try:
        exported = export_api_keys("ragwatch_test_keys")
        assert exported == ["RAGWATCH_TEST_KEY"]
        assert os.environ["RAGWATCH_TEST_KEY"] == "sk-from-secret"
        assert os.environ["RAGWATCH_PRESET_KEY"] == "from-env"
    finally:
        os.environ.pop("RAGWATCH_TEST_KEY", None)
        Client().delete_secret("ragwatch_test_keys")
    assert export_api_keys("no_such_secret") == []
