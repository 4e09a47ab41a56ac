"""`run.py config show`: every resolved value with the file it came from (includes too) or `default`."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragwatch.config_loader import ConfigError, read_yaml
from ragwatch.config_show import DEFAULT, DERIVED, resolved_values, show_config

ROOT = Path(__file__).resolve().parents[2]


def _project(tmp_path: Path) -> Path:
    (tmp_path / "models.yaml").write_text(
        "evaluate:\n  judges:\n    llm: {model: gpt-4o-mini, max_tokens: 300}\n    faithfulness: {max_statements: 6}\n"
        "  gate: {per_metric: {'system/*': 0.0}}\n")
    (tmp_path / "base.yaml").write_text(
        "include: [models.yaml]\ningest: {corpus: {paths: [docs]}, chunking: {max_tokens: 150}}\n"
        "evaluate:\n  judges: {llm: {max_tokens: 200}}\n")
    (tmp_path / "run.yaml").write_text(
        "include: [base.yaml]\ntestset:\n  imports: [{format: jsonl, path: qa.jsonl, seed: 3}]\n"
        "evaluate: {system: {rag: {top_k: 2}}}\n")
    return tmp_path / "run.yaml"


def test_each_value_names_the_file_that_set_it_last(tmp_path):
    config_path = _project(tmp_path)
    config, rows = resolved_values(config_path)
    origin = {key: o for key, _, o in rows}
    value = {key: v for key, v, _ in rows}
    assert origin["ingest.corpus.paths"] == str(tmp_path / "base.yaml")
    assert value["ingest.corpus.paths"] == [str(tmp_path / "docs")]  # resolved against its file
    assert origin["evaluate.judges.llm.model"] == str(tmp_path / "models.yaml")
    assert origin["evaluate.judges.llm.max_tokens"] == str(tmp_path / "base.yaml")  # base overrides models
    assert value["evaluate.judges.llm.max_tokens"] == 200
    assert origin["evaluate.system.rag.top_k"] == str(config_path)
    assert origin["testset.imports[0].seed"] == str(config_path)
    assert origin["testset.imports[0].relevance_kind"] == str(config_path)  # an item belongs to its list
    assert origin["evaluate.gate.per_metric"] == str(tmp_path / "models.yaml")  # a mapping set key by key
    assert origin["evaluate.judges.faithfulness.max_statements"] == str(tmp_path / "models.yaml")
    assert origin["evaluate.system.rag.retrieval_mode"] == DEFAULT
    assert origin["reports_dir"] == DEFAULT
    assert config.evaluate.system.rag.top_k == 2


def test_enabled_judges_show_their_default_options(tmp_path):
    (tmp_path / "c.yaml").write_text("evaluate: {judges: {enabled: [faithfulness, similarity]}}\n")
    _, rows = resolved_values(tmp_path / "c.yaml")
    keys = {key: o for key, _, o in rows}
    assert keys["evaluate.judges.faithfulness.verify"] == DEFAULT
    assert "evaluate.judges.similarity.threshold" in keys
    assert not any(k.startswith("evaluate.judges.rubric.") for k in keys)  # not enabled, no block


def test_values_changed_by_validation_say_so(tmp_path):
    (tmp_path / "c.yaml").write_text("retrieval_only: true\n")
    _, rows = resolved_values(tmp_path / "c.yaml")
    origin = {key: o for key, _, o in rows}
    assert origin["testset.synthetic"] == DERIVED and origin["evaluate.e2e.enabled"] == DERIVED
    assert origin["retrieval_only"] == str(tmp_path / "c.yaml")


def test_a_later_scalar_replaces_a_mapping_and_its_sources(tmp_path):
    (tmp_path / "a.yaml").write_text("x: {y: 1, z: 2}\n")
    (tmp_path / "b.yaml").write_text("include: [a.yaml]\nx: 5\n")
    sources: dict[str, str] = {}
    assert read_yaml(tmp_path / "b.yaml", sources=sources) == {"x": 5}
    assert sources == {"x": str(tmp_path / "b.yaml")}


def test_show_lists_only_the_pipelines_sections(tmp_path):
    text = show_config(_project(tmp_path), "ingest")
    assert "ingest.chunking.max_tokens" in text and "base.yaml" in text
    assert "evaluate." not in text and "testset." not in text
    assert "retrieval_only" in text  # top-level keys apply to every pipeline
    with pytest.raises(ValueError, match="unknown pipeline"):
        show_config(_project(tmp_path), "deploy")


def test_a_wrong_key_is_the_usual_config_error(tmp_path):
    (tmp_path / "c.yaml").write_text("evaluate: {sytem: {}}\n")
    with pytest.raises(ConfigError, match=r"evaluate\.sytem: unknown key"):
        resolved_values(tmp_path / "c.yaml")


def test_run_py_config_show_on_the_bundled_config(capsys):
    from ragwatch_zenml import cli as run

    assert run.main(["config", "show", "evaluate"]) == 0
    out = capsys.readouterr().out
    assert "evaluate.system.rag.top_k" in out and "configs/evaluate.yaml" in out
    assert run.main(["config", "show", "full"]) == 0
    out = capsys.readouterr().out  # full.yaml -> evaluate.yaml -> testset.yaml -> ingest.yaml
    assert "ingest.corpus.paths" in out and "# configs/ingest.yaml" in out
