"""`run.py init`: a config for your documents, labelled set and system that runs as written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ragwatch.config_loader import ConfigError
from ragwatch.estimate import estimate_pipeline, format_estimate
from ragwatch.preflight import preflight
from ragwatch.retrieval.matching import CorpusLabels, MatchSettings
from ragwatch_zenml.commands.init import (
    InitAnswers,
    ask,
    init_command,
    labels_import,
    parse_system,
    project_model_name,
    value_kind,
    write_config,
)

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
    # no `relevant` column: nothing to read a relevance kind from; the model is the project's, not the sample's
    assert "relevance_kind" not in text
    assert config.evaluate.system.model_name == project_model_name(out) == project.name.lower().replace("_", "-")
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


ORCHESTRATORS = ROOT / "data" / "sample" / "zenml_docs" / "component-guide" / "orchestrators"


def _labelled(project: Path, relevant: list) -> Path:
    path = project / "mine" / "labelled.jsonl"
    path.write_text("".join(json.dumps({"question": f"Question {i}?", "answer": "An answer.", "relevant": r}) + "\n"
                            for i, r in enumerate(relevant)), encoding="utf-8")
    return path


def test_init_reads_the_relevance_kind_off_the_labelled_file(project):
    docs = project / "mine" / "docs"
    for name in ("airflow.md", "kubeflow.md", "tekton.md"):
        shutil.copy(ORCHESTRATORS / name, docs)
    # document names as a team writes them: a file name, a stem, a path tail; a list or a plain string
    labels = _labelled(project, [["local.md"], "airflow", ["orchestrators/kubeflow.md", "tekton.md"]])
    out = write_config(InitAnswers(docs=["mine/docs"], labels=str(labels)), project / "ragwatch.yaml")
    text = out.read_text(encoding="utf-8")
    assert "relevance_kind: document" in text
    assert "of the 4 value(s) in column 'relevant', 4 read as files of your documents" in text
    (imported,) = preflight("full", out).testset.imports
    assert imported.relevance_kind == "document"


@pytest.mark.parametrize(("relevant", "kind"), [
    (["https://docs.zenml.io/stack-components/orchestrators/local"], "url"),
    (["The local orchestrator runs every step of your pipeline on this machine."], "text"),
    (["3f2a9c0e1b7d4a6f8e2c1d0b9a8f7e6d", "8a1f0c2e-4b3d-4c5e-9f6a-7b8c9d0e1f2a"], "chunk_id"),
])
def test_each_relevance_kind_is_recognised(project, relevant, kind):
    labels = _labelled(project, [relevant])
    out = write_config(InitAnswers(docs=["mine/docs"], labels=str(labels)), project / f"{kind}.yaml")
    assert preflight("full", out).testset.imports[0].relevance_kind == kind


def test_a_mixed_column_takes_the_majority_and_says_so(project):
    labels = _labelled(project, [["local.md"], ["local"], ["https://example.com/local"]])
    text = write_config(InitAnswers(docs=["mine/docs"], labels=str(labels)), project / "r.yaml").read_text()
    assert "relevance_kind: document" in text and "2 read as files of your documents (1 url" in text


def test_value_kind_reads_each_value_against_the_corpus():
    corpus = CorpusLabels(MatchSettings(), ["orchestrators/local.md", "guide/setup.pdf", "4983.txt"])
    assert value_kind("local.md", corpus) == value_kind("Setup", corpus) == value_kind("4983", corpus) == "document"
    assert value_kind("other/missing.md", corpus) == "document"  # a file name, named by the import's check
    assert value_kind("http://x.io/local", corpus) == "url"
    assert value_kind("a passage of five or more words", corpus) == "text"
    assert value_kind("42", corpus) is None


def test_the_model_name_is_the_projects(tmp_path):
    assert project_model_name(tmp_path / "Acme Support Bot" / "ragwatch.yaml") == "acme-support-bot"
    assert project_model_name(tmp_path / "acme_rag" / "configs" / "ragwatch.yaml") == "acme-rag"  # a configs folder
    assert project_model_name(Path("/ragwatch.yaml")) == "my-rag"
    out = write_config(InitAnswers(docs=[str(ORCHESTRATORS / "local.md")], model_name="team bot"),
                       tmp_path / "x" / "ragwatch.yaml")
    assert preflight("full", out).evaluate.system.model_name == "team bot"
