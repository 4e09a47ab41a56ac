"""Changing a judge setting re-runs the judges only: retrieval, answers and keyword tests come from the cache.

Each evaluate step receives only its part of the config, so the step cache keys on what the step uses.
The system under test is a Python callable and the judge a mock model, so no local LLM is needed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from zenml.client import Client

from ragwatch_zenml.commands.runner import run_pipeline
from tests.integration.conftest import write_config

pytestmark = [pytest.mark.integration, pytest.mark.slow]

MOCK_JUDGE = {
    "model": "openai/mock-judge",
    "cache": False,
    "extra": {"mock_response": json.dumps({"reasoning": "matches the reference", "score": 3})},
}
# a callable is asked on every evaluate unless it names its version: this one does, so its answers cache
SYSTEM = {"model_name": "ragwatch-cache-rag",
          "rag": {"kind": "callable", "callable": "fixed_rag:answer", "cache_key": "fixed-v1"}}


def _config(directory: Path, corpus: Path, threshold: float | None) -> Path:
    judges = {"llm": MOCK_JUDGE, "enabled": ["correctness", "similarity"], "correctness": {"threshold": threshold}}
    return write_config(directory, corpus, synthetic=False, system=SYSTEM, judges=judges,
                        gate={"gated_metrics": ["similarity"]})


def test_changing_a_judge_setting_reuses_retrieval_and_answers(tmp_path: Path, tiny_corpus: Path,
                                                               oracle_module) -> None:
    oracle_module({"*": "The local orchestrator is the default orchestrator of ZenML."})
    first = run_pipeline("full", _config(tmp_path, tiny_corpus, threshold=4.0))
    assert first.metrics.metrics["correctness"].info.threshold == 4.0

    second = run_pipeline("full", _config(tmp_path, tiny_corpus, threshold=None))  # same files, new judges
    run = Client().get_pipeline_run(second.run.id)
    for name in ("evaluate_retrieval_step", "generate_answers", "run_e2e_tests_step"):
        assert run.steps[name].status == "cached", name
    assert run.steps["judge_answers_step"].status == "completed"
    correctness = second.metrics.metrics["correctness"]
    assert correctness.info.threshold is None and correctness.score == 3.0
    assert all(item.passed is None for item in correctness.items)  # threshold: null is honoured
