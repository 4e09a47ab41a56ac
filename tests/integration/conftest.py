"""Fixtures for pipeline tests: a tiny corpus and configs that run with the tiny local model.

Reports stay out of the checkout: a config from `write_config` sets `reports_dir` beside itself, and a
run whose config sets none writes to a directory of the test session (`session_reports`), never to the
checkout's reports/ (whose latest.html is the page of the user's last real run).
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data" / "sample" / "zenml_docs"
TINY_DOCS = [
    "component-guide/orchestrators/orchestrators.md",
    "component-guide/orchestrators/local.md",
    "how-to/build-pipelines/use-failure-success-hooks.md",
]
TINY_MODEL = "local/smollm2-135m-instruct"


@pytest.fixture(scope="session", autouse=True)
def session_reports(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Where a run whose config sets no `reports_dir` writes its reports during the tests."""
    from ragwatch_zenml.commands import runner

    directory = tmp_path_factory.mktemp("reports")
    default, runner.REPORTS_DIR = runner.REPORTS_DIR, directory
    yield directory
    runner.REPORTS_DIR = default


@pytest.fixture(scope="session")
def tiny_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    corpus = tmp_path_factory.mktemp("corpus")
    for relative in TINY_DOCS:
        target = corpus / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(SAMPLE / relative, target)
    return corpus


LABELLED = [
    {"id": "local-default", "question": "Which orchestrator does ZenML use by default?",
     "reference_answer": "The local orchestrator is the default orchestrator of ZenML; it runs pipelines locally.",
     "relevant": ["component-guide/orchestrators/local.md"]},
    {"id": "failure-hooks", "question": "How do I run code when a step of my pipeline fails?",
     "reference_answer": "Attach a failure hook to the step (on_failure); ZenML calls it when the step fails.",
     "relevant": ["how-to/build-pipelines/use-failure-success-hooks.md"]},
    {"id": "orchestrator-role", "question": "What does an orchestrator do in a ZenML stack?",
     "reference_answer": "The orchestrator runs the steps of a pipeline, locally by default and remotely otherwise.",
     "relevant": ["component-guide/orchestrators/orchestrators.md"]},
]


def write_config(directory: Path, corpus: Path, *, synthetic: bool = True, **evaluate_overrides) -> Path:
    """A full-pipeline config for the tiny corpus and the tiny model; overrides merge into `evaluate`;
    reports go to `directory`/reports.

    The evaluation set is a small labelled JSONL set (so every run has judged items, whatever the
    tiny model writes) plus, with `synthetic`, pairs the tiny model generates.
    """
    directory.mkdir(parents=True, exist_ok=True)
    labelled = directory / "labelled.jsonl"
    labelled.write_text("".join(json.dumps(row) + "\n" for row in LABELLED))
    tables = directory / "e2e.yaml"
    tables.write_text(
        yaml.safe_dump(
            {
                "bad_answers": {"cases": [{"question": "What is the default orchestrator in ZenML?",
                                           "bad_words": ["Flyte"]}]},
                "good_responses": {"cases": [{"question": "Which orchestrator runs pipelines locally?",
                                              "good_words": ["local"]}]},
            }
        )
    )
    llm = {"model": TINY_MODEL, "max_tokens": 96}
    evaluate = {
        "system": {"model_name": "ragwatch-test-rag", "generator": llm,
                   "rag": {"top_k": 2, "max_context_chars": 1200}},
        "retrieval": {"modes": ["vector", "bm25", "hybrid"], "ks": [1, 3, 5]},
        "e2e": {"tables": str(tables)},
        "judges": {"llm": {**llm, "max_tokens": 160}, "enabled": ["correctness", "faithfulness", "similarity"],
                   "faithfulness": {"max_statements": 2}},
        "gate": {"default_allowed_drop": 0.0, "gated_metrics": ["similarity", "e2e_failure_rate"]},
    }
    for key, value in evaluate_overrides.items():
        evaluate[key] = {**evaluate.get(key, {}), **value} if isinstance(value, dict) else value
    config = {
        "reports_dir": str(directory / "reports"),
        "ingest": {"corpus": {"paths": [str(corpus)]}, "chunking": {"max_tokens": 160, "overlap_tokens": 20}},
        "testset": {
            "synthetic": synthetic,
            "generator": {**llm, "max_tokens": 200},
            "testset": {"n_chunks": 2, "questions_per_chunk": 1, "kinds": ["factual"], "min_chunk_tokens": 20},
            "handwritten_retrieval_cases": None,
            "imports": [{"format": "jsonl", "path": str(labelled), "relevance_kind": "document"}],
        },
        "evaluate": evaluate,
    }
    path = directory / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.fixture
def oracle_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A user's own RAG system as a Python callable: returns the answers it is told to."""
    answers_file = tmp_path / "answers.json"
    module = tmp_path / "fixed_rag.py"
    module.write_text(
        "import json, pathlib\n"
        f"ANSWERS = pathlib.Path({str(answers_file)!r})\n"
        "def answer(question):\n"
        "    table = json.loads(ANSWERS.read_text())\n"
        "    return {'answer': table.get(question, table.get('*', '')), 'contexts': ['The local orchestrator "
        "is the default orchestrator of ZenML.']}\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    # each test's module reads its own answers file: never the one an earlier test imported
    monkeypatch.delitem(sys.modules, "fixed_rag", raising=False)

    def set_answers(table: dict[str, str]) -> None:
        answers_file.write_text(json.dumps(table))

    return set_answers


@pytest.fixture
def no_review_server_left() -> Iterator[None]:
    """A failing test must not leave a `review serve` process (tests/review_browser.py) running."""
    yield
    from tests.review_browser import kill_started  # imported here: only the browser tests need playwright

    kill_started()
