"""Config files: relative paths resolve against the file that sets them; neutral defaults; preflight."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragwatch.config import FullConfig
from ragwatch.config_loader import ConfigError, load_config
from ragwatch.preflight import preflight

ROOT = Path(__file__).resolve().parents[2]


def test_paths_resolve_against_the_file_that_sets_them(tmp_path, monkeypatch):
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "base.yaml").write_text("ingest:\n  corpus:\n    paths: [docs, '*.md']\n")
    project = tmp_path / "project"
    project.mkdir()
    (project / "ragwatch.yaml").write_text(
        "include: [../shared/base.yaml]\n"
        "testset:\n  imports:\n    - {format: jsonl, path: data/qa.jsonl}\n"
        "evaluate:\n  e2e: {tables: /abs/tables.yaml}\n"
        "reports_dir: out\n"
    )
    monkeypatch.chdir(tmp_path)  # the current directory plays no part
    config = load_config(project / "ragwatch.yaml", FullConfig)
    assert config.ingest.corpus.paths == [str(shared / "docs"), str(shared / "*.md")]
    assert config.testset.imports[0].path == str(project / "data" / "qa.jsonl")
    assert config.evaluate.e2e.tables == "/abs/tables.yaml"
    assert config.reports_dir == str(project / "out")


def test_defaults_are_neutral():
    config = FullConfig()
    assert config.ingest.corpus.paths == []
    assert config.testset.handwritten_retrieval_cases is None
    assert config.evaluate.e2e.tables is None
    assert config.evaluate.retrieval.match.url_rewrites == []
    assert config.evaluate.gate.gated_metrics is None  # every metric the user has, none it lacks


def test_bundled_sample_keeps_its_own_settings():
    config = load_config(ROOT / "configs" / "full.yaml", FullConfig)
    assert config.ingest.corpus.paths == [str(ROOT / "configs" / "../data/sample/zenml_docs"),
                                          str(ROOT / "configs" / "../data/sample/pdf")]
    assert all(Path(p).is_dir() for p in config.ingest.corpus.paths)
    assert Path(config.testset.handwritten_retrieval_cases).is_file()
    assert Path(config.testset.zenml_qa).is_file() and config.testset.write_reference_answers
    assert Path(config.evaluate.e2e.tables).is_file()
    assert config.evaluate.retrieval.match.url_rewrites


def test_retrieval_only_turns_every_llm_off():
    config = FullConfig.model_validate({"retrieval_only": True, "testset": {"write_reference_answers": True}})
    assert not config.testset.synthetic and not config.evaluate.e2e.enabled
    assert not config.testset.write_reference_answers
    assert config.evaluate.judges.enabled == [] and config.evaluate.judge_panel == []


def test_preflight_lists_every_missing_input_with_its_resolved_path(tmp_path):
    (tmp_path / "c.yaml").write_text(
        "ingest:\n  corpus:\n    paths: [docs, 'missing/*.md']\n"
        "testset:\n  synthetic: false\n  imports:\n    - {format: jsonl, path: qa.jsonl}\n"
        "    - {format: hf_disk, path: hf}\n"
    )
    with pytest.raises(ConfigError) as info:
        preflight("full", tmp_path / "c.yaml")
    text = str(info.value)
    assert f"{tmp_path / 'docs'} does not exist" in text
    assert f"the glob {tmp_path / 'missing/*.md'} matches no file" in text
    assert f"testset.imports[0] (jsonl): {tmp_path / 'qa.jsonl'} is not a file" in text
    assert f"{tmp_path / 'hf'} is not a directory" in text
    # a pipeline checks only what it reads
    (tmp_path / "qa.jsonl").write_text(json.dumps({"question": "q?", "relevant": ["a.md"]}) + "\n")
    (tmp_path / "hf").mkdir()
    assert preflight("testset", tmp_path / "c.yaml").testset.imports[0].path == str(tmp_path / "qa.jsonl")


def test_preflight_reads_labelled_rows_and_names_the_empty_set(tmp_path):
    (tmp_path / "qa.jsonl").write_text(json.dumps({"q": "no question column"}) + "\n")
    (tmp_path / "c.yaml").write_text("testset:\n  imports:\n    - {format: jsonl, path: qa.jsonl}\n")
    with pytest.raises(ConfigError, match="no usable row"):
        preflight("testset", tmp_path / "c.yaml")
    (tmp_path / "empty.yaml").write_text("retrieval_only: true\n")
    with pytest.raises(ConfigError, match="the evaluation set would be empty"):
        preflight("testset", tmp_path / "empty.yaml")
    with pytest.raises(ConfigError, match=r"ingest.corpus.paths is empty"):
        preflight("ingest", tmp_path / "empty.yaml")
