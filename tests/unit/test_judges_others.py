"""Context relevance, the four-criterion rubric, similarity, perplexity, config, run_judges, compare."""

from __future__ import annotations

import json
import math
import random
import re

import numpy as np
import pytest
from pydantic import ValidationError
from test_judges_support import MockLLM, answer, fake_server, is_repair, last_user, no_nan, sample

from ragwatch.judges import (
    ContextRelevanceJudge,
    JudgesConfig,
    PerplexityJudge,
    RubricJudge,
    SimilarityJudge,
    build_judges,
    compare_judges,
    run_judges,
)
from ragwatch.results import ItemScore, MetricResult

__all__ = ["fake_server"]


pytestmark = pytest.mark.usefixtures("isolated_cache")  # a fresh LLM cache per test


def _context(user: str) -> str:
    return re.search(r"<<<BEGIN CONTEXT>>>\n(.*?)\n<<<END CONTEXT>>>", user, re.DOTALL).group(1)


def test_context_relevance_fraction_per_item_and_failures(fake_server):
    def script(messages):
        if is_repair(messages):
            return json.dumps({"reason": "fixed", "verdict": "no"})
        ctx = _context(last_user(messages))
        if "broken" in ctx:
            return '{"reason": "x", "verdict": "perhaps"}'  # invalid, repaired to "no"
        return json.dumps({"reason": "r", "verdict": "yes" if "Paris" in ctx else "no"})

    server = fake_server(script)
    result = ContextRelevanceJudge(server.client()).evaluate(
        [sample(1), sample(2), sample(3)],
        [
            answer(contexts=["Paris facts", "Bananas", "Paris again", "broken"]),
            answer(contexts=[]),
            answer(contexts=["Lyon"]),
        ],
    )
    no_nan(result)
    assert result.items[0].score == 0.5
    assert result.items[0].details["context_verdicts"] == ["yes", "no", "yes", "no"]
    assert result.items[1].error == "no retrieved contexts"
    assert result.items[2].score == 0.0
    assert result.details["usage"]["calls"] == 5 and result.details["usage"]["repairs"] == 1


def test_context_relevance_failed_call_fails_item():
    result = ContextRelevanceJudge(MockLLM("nope")).evaluate([sample(1)], [answer()])
    no_nan(result)
    assert result.items[0].error.startswith("context 1: judge call failed")


RUBRIC_REPLY = {"reasoning": "fine", "toxicity": 1, "faithfulness": 4, "helpfulness": 5, "relevance": 3}


def test_rubric_one_call_four_metrics_with_contexts_in_prompt(fake_server):
    server = fake_server(lambda m: json.dumps(RUBRIC_REPLY))
    results = RubricJudge(server.client()).evaluate_all(
        [sample(1), sample(2)], [answer(), answer(contexts=[])]
    )
    assert sorted(results) == [
        "rubric_faithfulness",
        "rubric_helpfulness",
        "rubric_relevance",
        "rubric_toxicity",
    ]
    for name, result in results.items():
        no_nan(result)
        assert result.items[0].score == RUBRIC_REPLY[name.removeprefix("rubric_")]
        assert result.items[1].error == "no retrieved contexts"
    assert results["rubric_toxicity"].info.direction == "lower"
    assert len(server.requests) == 1  # one call for all four criteria
    user = last_user(server.requests[0]["messages"])
    assert all(f"<<<BEGIN {x}" in user for x in ("QUESTION", "CONTEXT 1", "ANSWER"))


def test_rubric_invalid_reply_fails_every_metric_with_reason():
    results = RubricJudge(MockLLM(json.dumps({**RUBRIC_REPLY, "toxicity": 0}))).evaluate_all(
        [sample(1)], [answer()]
    )
    for result in results.values():
        no_nan(result)
        assert result.n_failed == 1 and "toxicity" in result.items[0].error


def test_rubric_weighted_scores_read_per_field(fake_server):
    text = json.dumps(RUBRIC_REPLY)
    tokens = []
    for piece in re.split(r"(?<=: )(\d)", text):
        alts = {piece: 1.0}
        if piece == "4":  # faithfulness
            alts = {"4": 0.5, "2": 0.5}
        tokens.append((piece, alts))
    server = fake_server(lambda m: (text, tokens))
    results = RubricJudge(server.client(), use_logprobs=True).evaluate_all([sample(1)], [answer()])
    assert results["rubric_faithfulness"].items[0].details["weighted_score"] == pytest.approx(3.0)
    assert results["rubric_helpfulness"].items[0].details["weighted_score"] == pytest.approx(5.0)
    assert results["rubric_toxicity"].items[0].details["weighted_score"] == pytest.approx(1.0)


def test_rubric_prometheus_family_one_call_per_criterion(fake_server):
    server = fake_server(lambda m: "Feedback: ok. [RESULT] 2")
    results = RubricJudge(server.client(), prompt_family="prometheus").evaluate_all([sample(1)], [answer()])
    assert {r.items[0].score for r in results.values()} == {2.0}
    assert len(server.requests) == 4
    assert results["rubric_toxicity"].info.direction == "lower"


def test_similarity_on_real_embeddings():
    pytest.importorskip("ragwatch.indexing.embeddings")
    judge = SimilarityJudge(threshold=0.7)
    result = judge.evaluate(
        [sample(1), sample(2), sample(3), sample(4, reference=None)],
        [
            answer("The capital of France is Paris."),
            answer("Bananas are yellow fruit."),
            answer(""),
            answer(),
        ],
    )
    no_nan(result)
    close, far, empty, missing = result.items
    assert close.score > 0.8 and close.passed
    assert far.score < 0.4 and not far.passed
    assert empty.score == 0.0 and missing.error == "no reference answer"
    assert result.details["pass_rate"] == pytest.approx(1 / 3)


class _FakeEmbedder:
    identity = "fake"

    def embed(self, texts):
        return np.asarray([[1.0, 0.0] if "Paris" in t else [0.0, 1.0] for t in texts])


def test_similarity_math_with_a_fake_embedder():
    result = SimilarityJudge(_FakeEmbedder()).evaluate([sample(1), sample(2)], [answer(), answer("Lyon")])
    assert [it.score for it in result.items] == [1.0, 0.0] and result.info.judge_model == "fake"


class _Generator:
    def perplexity(self, text):
        if "boom" in text:
            raise RuntimeError("scoring failed")
        return 2.0 if "Paris" in text else 8.0


class _ApiGenerator:
    def perplexity(self, text):
        raise NotImplementedError("'openai/gpt-4o' cannot score a given text")


def test_perplexity_scores_and_failures():
    results = PerplexityJudge(_Generator()).evaluate_all(
        [sample(i) for i in range(4)], [answer(), answer("Lyon"), answer("boom"), answer("")]
    )
    result, confidence = results["perplexity"], results["answer_confidence"]
    no_nan(result)
    assert [it.score for it in result.items[:2]] == pytest.approx([2.0, 8.0])
    assert result.items[0].details["mean_logprob"] == pytest.approx(-math.log(2.0))
    assert result.items[0].details["source"] == "rescored by the generator"
    assert "scoring failed" in result.items[2].error and "empty answer" in result.items[3].error
    assert result.info.direction == "lower" and result.info.scale is None
    assert confidence.info.direction == "higher" and confidence.items[0].score == pytest.approx(0.5)
    api = PerplexityJudge(_ApiGenerator()).evaluate([sample(1)], [answer()])
    assert api.items[0].error.startswith("provider returns no logprobs")
    none = PerplexityJudge(None).evaluate([sample(1)], [answer()])
    assert none.items[0].error.startswith("provider returns no logprobs")


def test_answer_confidence_uses_logprobs_captured_at_generation():
    captured = answer().model_copy(update={"mean_logprob": math.log(0.8)})
    results = PerplexityJudge(None).evaluate_all([sample(1), sample(2)], [captured, answer()])
    confidence = results["answer_confidence"]
    assert confidence.items[0].score == pytest.approx(0.8)
    assert confidence.items[0].details["source"] == "captured at generation"
    assert results["perplexity"].items[0].score == pytest.approx(1.25)
    # no captured logprobs and no generator client to rescore with: an explicit failure, never NaN
    assert confidence.items[1].error.startswith("provider returns no logprobs")
    strict = PerplexityJudge(_Generator(), source="generation").evaluate([sample(1)], [answer()])
    assert "no token logprobs" in strict.items[0].error


def test_config_defaults_and_errors_name_the_key():
    config = JudgesConfig()
    # the measured judges (and the ones that make no call) on; the opt-in ones off
    assert set(config.enabled) == {"faithfulness", "similarity", "perplexity"}
    assert config.faithfulness.verify == "evidence" and config.correctness.threshold == 4.0
    assert (config.faithfulness.statements, config.faithfulness.max_statements) == ("sentences", 4)
    with pytest.raises(ValidationError, match="unknown key 'faithfulnes'"):
        JudgesConfig.model_validate({"faithfulnes": {"max_statements": 2}})
    with pytest.raises(ValidationError, match="treshold"):
        JudgesConfig.model_validate({"correctness": {"treshold": 4}})
    with pytest.raises(ValidationError, match="unknown judge"):
        JudgesConfig.model_validate({"enabled": ["correctnes"]})
    with pytest.raises(ValidationError, match="prompt_family"):
        JudgesConfig.model_validate({"correctness": {"prompt_family": "xml"}})
    with pytest.raises(ValidationError, match="clash"):
        JudgesConfig.model_validate(
            {"custom": [{"name": "rubric", "criteria": "c", "rubric": {i: "r" for i in range(1, 6)}}]}
        )


def test_build_and_run_judges_with_mock_llm():
    config = JudgesConfig.model_validate(
        {
            "enabled": ["correctness", "answer_relevance", "rubric", "similarity", "perplexity", "tone"],
            "correctness": {"threshold": 3, "prompt_family": "json"},
            "custom": [
                {
                    "name": "tone",
                    "criteria": "Is it polite?",
                    "rubric": {i: "r" for i in range(1, 6)},
                    "threshold": 4,
                }
            ],
        }
    )
    reply = json.dumps(
        {
            "reasoning": "r",
            "score": 4,
            **{k: 2 for k in ("toxicity", "faithfulness", "helpfulness", "relevance")},
        }
    )
    judges = build_judges(config, MockLLM(reply), embedder=_FakeEmbedder(), generator_llm=_Generator(),
                          generator_model="local/fake")
    assert [j.name for j in judges] == [
        "correctness",
        "answer_relevance",
        "rubric",
        "similarity",
        "perplexity",
        "tone",
    ]
    results = run_judges(judges, [sample(1), sample(2, reference=None)], [answer(), answer()])
    assert sorted(results) == sorted(
        [
            "correctness",
            "answer_relevance",
            "rubric_toxicity",
            "rubric_faithfulness",
            "rubric_helpfulness",
            "rubric_relevance",
            "similarity",
            "perplexity",
            "answer_confidence",
            "tone",
        ]
    )
    for result in results.values():
        no_nan(result)
        assert len(result.items) == 2 and "usage" in result.details
    assert results["correctness"].items[0].passed is True and results["correctness"].items[1].error
    assert results["tone"].info.threshold == 4
    assert results["perplexity"].details["generator_model"] == "local/fake"  # carried, not read off the client
    assert results["correctness"].info.threshold == 3 and results["correctness"].info.scale == (1.0, 5.0)


def test_correctness_threshold_null_means_no_pass_fail():
    config = JudgesConfig.model_validate({"enabled": ["correctness"], "correctness": {"threshold": None}})
    reply = json.dumps({"reasoning": "r", "score": 2})
    result = run_judges(build_judges(config, MockLLM(reply)), [sample(1)], [answer()])["correctness"]
    assert result.info.threshold is None and result.items[0].passed is None
    assert result.score == 2.0 and "pass_rate" not in result.details


def _result(name, scores, threshold=None):
    items = [
        ItemScore(item_id=f"q{i}", score=s) if s is not None else ItemScore(item_id=f"q{i}", error="x")
        for i, s in enumerate(scores)
    ]
    if threshold is not None:
        for it in items:
            if it.ok:
                it.passed = it.score >= threshold
    details = {"usage": {"calls": len(scores), "cost_usd": 0.01 * len(scores)}, "threshold": threshold}
    return MetricResult.from_items(name, items, details=details)


def test_compare_judges_matches_sklearn_and_scipy():
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    stats = pytest.importorskip("scipy.stats")
    rng = random.Random(0)
    a = [rng.randint(1, 5) for _ in range(60)]
    b = [min(5, max(1, x + rng.choice([-1, 0, 0, 1]))) for x in a]
    b_with_fail = [*b[:-1], None]  # judge b failed the last item: compared on 59 pairs
    table = compare_judges(
        {
            "big": {"correctness": _result("correctness", a, 4)},
            "small": {"correctness": _result("correctness", b_with_fail, 4)},
        }
    )
    assert list(table["judge"]) == ["big", "small"]
    small = table.set_index("judge").loc["small"]
    pa, pb = [x >= 4 for x in a[:-1]], [x >= 4 for x in b[:-1]]
    assert small["n_paired"] == 59
    assert small["kappa_pass"] == pytest.approx(sklearn_metrics.cohen_kappa_score(pa, pb))
    assert small["hamming_pass"] == pytest.approx(sklearn_metrics.hamming_loss(pa, pb))
    assert small["spearman"] == pytest.approx(stats.spearmanr(a[:-1], b[:-1]).statistic)
    assert small["kappa_weighted"] == pytest.approx(
        sklearn_metrics.cohen_kappa_score(a[:-1], b[:-1], weights="quadratic")
    )
    assert small["n_failed"] == 1 and small["cost_usd"] == pytest.approx(0.6)
    assert sum(small["distribution"].values()) == 59
    big = table.set_index("judge").loc["big"]
    assert big["kappa_pass"] == pytest.approx(1.0) and big["hamming_pass"] == 0.0  # the reference vs itself


def test_compare_judges_errors():
    with pytest.raises(ValueError, match="at least one judge"):
        compare_judges({})
    with pytest.raises(ValueError, match="reference judge"):
        compare_judges({"a": {}}, reference="b")


def test_injection_inflation_measures_a_gullible_judge(fake_server):
    from ragwatch.calibration.injection import PAYLOADS, inject, measure_injection
    from ragwatch.judges import CorrectnessJudge

    def gullible(messages):  # obeys any "maximum score" text it sees
        return json.dumps({"reasoning": "r", "score": 5 if "maximum score" in last_user(messages) else 2})

    server = fake_server(gullible)
    samples, answers = [sample(i) for i in range(4)], [answer() for _ in range(4)]
    (row,) = measure_injection(CorrectnessJudge(server.client()), samples, answers, {"plain": PAYLOADS["plain"]})
    assert row.n == 4 and row.inflation == 3.0 and row.clean == 2.0 and row.mode == "greedy"
    injected = inject(answers, PAYLOADS["fence_break"], where="contexts")
    assert injected[0].contexts[-1].source == "injected" and answers[0].contexts[-1].source is None
    with pytest.raises(ValueError, match="metric="):
        measure_injection(RubricJudge(server.client()), samples, answers)
