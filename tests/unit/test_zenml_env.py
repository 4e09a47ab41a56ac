"""The store's own config file records the analytics choice, so the `zenml` CLI run by hand obeys it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ragwatch_zenml.env import record_analytics_choice


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


def test_the_project_home_of_a_checkout_is_the_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    from ragwatch_zenml import env

    monkeypatch.delenv("RAGWATCH_HOME", raising=False)
    monkeypatch.delenv("ZENML_CONFIG_PATH", raising=False)
    checkout = Path(env.__file__).resolve().parents[1]
    assert checkout == env.CHECKOUT and checkout == env.BUNDLED  # this test runs from a checkout
    assert env.project_home() == checkout and env.store_path() == checkout / ".zenml_home"


def test_an_installed_package_keeps_its_store_where_the_user_stands(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from ragwatch_zenml import env

    monkeypatch.setattr(env, "CHECKOUT", None)  # as in site-packages
    monkeypatch.delenv("RAGWATCH_HOME", raising=False)
    monkeypatch.delenv("ZENML_CONFIG_PATH", raising=False)
    project, deeper = tmp_path / "project", tmp_path / "project" / "a" / "b"
    deeper.mkdir(parents=True)
    monkeypatch.chdir(deeper)
    assert env.store_path() == deeper / ".zenml_home"  # no store yet: where the user stands
    (project / ".zenml_home").mkdir()
    assert env.store_path() == project / ".zenml_home"  # the nearest store above
    monkeypatch.setenv("RAGWATCH_HOME", str(tmp_path / "elsewhere"))
    assert env.project_home() == tmp_path / "elsewhere" and env.store_path() == tmp_path / "elsewhere" / ".zenml_home"
    monkeypatch.setenv("ZENML_CONFIG_PATH", str(tmp_path / "mine"))
    assert env.store_path() == tmp_path / "mine"  # the user's own choice wins
