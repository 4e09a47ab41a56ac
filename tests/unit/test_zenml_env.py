"""The store's own config file records the analytics choice, so the `zenml` CLI run by hand obeys it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ragwatch.zenml.env import record_analytics_choice


def test_an_existing_store_file_is_turned_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = tmp_path / "zenml"
    store.mkdir()
    (store / "config.yaml").write_text(yaml.safe_dump({"analytics_opt_in": True, "user_id": "u-1"}))
    monkeypatch.setenv("ZENML_CONFIG_PATH", str(store))
    monkeypatch.setenv("ZENML_ANALYTICS_OPT_IN", "false")
    record_analytics_choice()
    assert yaml.safe_load((store / "config.yaml").read_text()) == {"analytics_opt_in": False, "user_id": "u-1"}


def test_a_store_not_created_yet_starts_with_the_choice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = tmp_path / "fresh"
    monkeypatch.setenv("ZENML_CONFIG_PATH", str(store))
    monkeypatch.setenv("ZENML_ANALYTICS_OPT_IN", "false")
    record_analytics_choice()
    assert yaml.safe_load((store / "config.yaml").read_text()) == {"analytics_opt_in": False}


def test_a_user_who_opts_in_is_recorded_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZENML_CONFIG_PATH", str(tmp_path))
    monkeypatch.setenv("ZENML_ANALYTICS_OPT_IN", "true")
    record_analytics_choice()
    assert yaml.safe_load((tmp_path / "config.yaml").read_text())["analytics_opt_in"] is True
