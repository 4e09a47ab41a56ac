"""`run.py init`: a config for your documents, labelled set and system that runs as written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from orchestration.init import InitAnswers, ask, init_command, labels_import, parse_system, write_config
from ragwatch.config_loader import ConfigError
from ragwatch.estimate import estimate_pipeline, format_estimate
from ragwatch.preflight import preflight

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGWATCH_CACHE_DIR", str(tmp_path / "cache"))
    docs = tmp_path / "mine" / "docs"
    docs.mkdir(parents=True)
    shutil.copy(ROOT / "data" / "sample" / "zenml_docs" / "component-guide" / "orchestrators" / "local.md", docs)
    (tmp_path / "mine" / "qa.jsonl").write_text("".join(
        json.dumps({"query": f"What does the local orchestrator do ({i})?", "ground_truth": "It runs steps locally."})
        + "\n" for i in range(3)), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_init_writes_a_config_that_preflights_and_estimates(project, capsys):
    out = project / "configs" / "ragwatch.yaml"
    assert init_command(["mine/docs"], "mine/qa.jsonl", "http:http://127.0.0.1:9/rag", str(out)) == 0
    printed = capsys.readouterr().out
    assert f"full --estimate --config {Path('configs/ragwatch.yaml')}" in printed
    assert f"full --config {Path('configs/ragwatch.yaml')}" in printed
    text = out.read_text(encoding="utf-8")
    assert "paths: [../mine/docs]" in text and "#" in text  # relative to the file, commented
    config = preflight("full", out)
    assert config.evaluate.system.rag.kind == "http" and config.evaluate.system.rag.http.url == "http://127.0.0.1:9/rag"
    (imported,) = config.testset.imports
    assert imported.columns.question == "query" and imported.columns.reference_answer == "ground_truth"
    assert not config.testset.synthetic
    estimate = estimate_pipeline("full", config)
    # the HTTP system answers outside ragwatch, but its answers are judged: faithfulness's calls are counted
    judge_calls = sum(r.calls for r in estimate.rows if r.role == "judge")
    assert judge_calls == 3, format_estimate(estimate)


def test_init_with_the_builtin_system_and_no_labels(project):
    out = write_config(InitAnswers(docs=["mine/docs"]), project / "ragwatch.yaml")
    config = preflight("full", out)
    assert config.testset.synthetic and config.evaluate.system.rag.kind == "builtin"
    assert config.evaluate.judges.llm.model.endswith("qwen2.5-coder-1.5b-instruct")  # the shipped judge


def test_init_checks_before_it_writes(project):
    with pytest.raises(ConfigError, match=r"nope does not exist(.|\n)*nothing written"):
        write_config(InitAnswers(docs=["nope"]), project / "bad.yaml")
    assert not (project / "bad.yaml").exists() and not list(project.glob(".bad.yaml*"))
    write_config(InitAnswers(docs=["mine/docs"]), project / "ok.yaml")
    with pytest.raises(ConfigError, match="exists"):
        write_config(InitAnswers(docs=["mine/docs"]), project / "ok.yaml")
    with pytest.raises(ConfigError, match="no documents"):
        write_config(InitAnswers(), project / "none.yaml")


def test_system_and_labels_are_read_or_refused(tmp_path):
    assert parse_system("callable:my_rag.app:answer") == {"kind": "callable", "callable": "my_rag.app:answer"}
    for bad in ("http:localhost", "callable:nofunction", "grpc:x"):
        with pytest.raises(ConfigError, match="--system"):
            parse_system(bad)
    csv = tmp_path / "qa.csv"
    csv.write_text("user_input,reference,retrieved_contexts\nWhat?,That.,[]\n", encoding="utf-8")
    assert labels_import(csv) == {"format": "csv", "columns": {
        "question": "user_input", "reference_answer": "reference", "contexts": "retrieved_contexts", "relevant": None}}
    csv.write_text("anchor,positive\nWhat?,That.\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="no question column among"):
        labels_import(csv)
    assert labels_import(Path("rag_dataset.json")) == {"format": "llamaindex"}
    with pytest.raises(ConfigError, match=r"a \.jsonl, \.csv"):
        labels_import(Path("qa.xlsx"))


def test_init_asks_on_a_terminal(project):
    replies = iter(["", "mine/docs", "", "http:http://127.0.0.1:9/rag"])
    answers = ask(lambda _: next(replies))
    assert answers == InitAnswers(docs=["mine/docs"], labels=None, system="http:http://127.0.0.1:9/rag")
