"""One source of defaults: a config from nothing but a corpus path gets what the project measured."""

from __future__ import annotations

import json

import pytest
from test_judges_support import MockLLM, answer, sample

from ragwatch.config import FullConfig
from ragwatch.config_loader import load_config
from ragwatch.judges import FaithfulnessJudge, build_judges, run_judges
from ragwatch.judges.faithfulness import PROMPT_VERSION as FAITHFULNESS_PROMPT
from ragwatch.judges.faithfulness.calibrations import faithfulness_calibration
from ragwatch.llm.types import JUDGE_MODEL
from ragwatch.report.summary import judge_warnings, summary_text

pytestmark = pytest.mark.usefixtures("isolated_cache")


def _from_scratch(tmp_path) -> FullConfig:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\nParis is the capital of France.\n", encoding="utf-8")
    path = tmp_path / "ragwatch.yaml"
    path.write_text("ingest:\n  corpus:\n    paths: [docs]\n", encoding="utf-8")
    return load_config(path, FullConfig)


def test_a_config_with_only_a_corpus_gets_the_calibrated_faithfulness_judge(tmp_path):
    config = _from_scratch(tmp_path)
    judges = config.evaluate.judges
    assert judges.llm.model == JUDGE_MODEL and judges.logprobs_on()
    assert judges.enabled == ["faithfulness", "perplexity", "similarity"]  # the opt-in judges stay off
    options = judges.faithfulness
    assert (options.statements, options.max_statements, options.verify) == ("sentences", 4, "evidence")
    (faithfulness,) = [j for j in build_judges(judges, llm=None) if isinstance(j, FaithfulnessJudge)]
    shipped = faithfulness_calibration(JUDGE_MODEL, FAITHFULNESS_PROMPT)
    assert shipped is not None and faithfulness.calibration == shipped
    assert faithfulness.metrics["faithfulness"].agreement == shipped.agreement
    # the built-in system and the generators as shipped
    system = config.evaluate.system
    assert (system.rag.top_k, system.rag.max_context_chars, system.generator.max_tokens) == (3, 2400, 160)
    assert config.testset.generator.max_tokens == 400 and config.testset.testset.n_chunks == 36


def test_its_printout_shows_the_measured_agreement_not_unknown(tmp_path):
    judges = _from_scratch(tmp_path).evaluate.judges.model_copy(update={"enabled": ["faithfulness"]})
    reply = json.dumps({"checks": [{"evidence": [1], "verdict": "yes"}]})
    # the judge model is the configured one; the replies come from a mock, so no model is loaded
    built = build_judges(judges, MockLLM(reply))
    metrics = run_judges(built, [sample(1)], [answer("Paris is the capital of France.",
                                                     contexts=["Paris is the capital of France."])])
    assert metrics["faithfulness"].n_scored == 1
    text = summary_text(metrics, {}, None, ["faithfulness"])
    shipped = faithfulness_calibration(JUDGE_MODEL, FAITHFULNESS_PROMPT)
    assert shipped is not None and f"Cohen's kappa {shipped.agreement.kappa:.2f}" in text
    assert not any("unknown" in w for w in judge_warnings(metrics))


def test_a_block_set_in_part_keeps_its_roles_other_defaults(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("ingest: {corpus: {paths: [.]}}\n"
                    "evaluate:\n  judges: {llm: {model: gpt-4o-mini}}\n  system: {rag: {top_k: 5}}\n", encoding="utf-8")
    config = load_config(path, FullConfig)
    assert config.evaluate.judges.llm.max_tokens == 384  # the judge's bound, not LLMSettings' 512
    assert config.evaluate.system.rag.max_context_chars == 2400 and config.evaluate.system.rag.top_k == 5
    assert config.evaluate.system.generator.max_tokens == 160
