"""Metrics of the system as it runs: contexts used at its own k, and lexical checks of its answers."""

from __future__ import annotations

import pytest

from ragwatch.checks.system_metrics import (
    AVAILABILITY,
    CONTEXT_PRECISION,
    CONTEXT_RECALL,
    CONTEXT_SUPPORT,
    HIT_RATE,
    MRR,
    REFERENCE_COVERAGE,
    content_words,
    reported_top_k,
    system_metrics,
)
from ragwatch.decision.compare import compare_runs
from ragwatch.decision.gate import gate_decision
from ragwatch.decision.thresholds import GateThresholds
from ragwatch.report.verdicts import reason_lines
from ragwatch.retrieval import MatchSettings
from ragwatch.types import EvalSample, RagAnswer, RelevantItem, RetrievedContext

MATCH = MatchSettings(on="document")
PAGES = ["docs/a.md", "docs/b.md", "docs/c.md", "docs/d.md"]
TEXT = {p: f"page {p} explains the {p[5]}-orchestrator configuration in detail" for p in PAGES}


def sample(i: int, page: str) -> EvalSample:
    return EvalSample(id=f"q{i}", question=f"question {i}?", reference_answer=f"The {page[5]}-orchestrator "
                      "configuration", relevant=[RelevantItem(kind="document", value=page)])


def answer(question: str, ranked_pages: list[str], text: str | None = None) -> RagAnswer:
    contexts = [RetrievedContext(text=TEXT[p], source=p, chunk_id=p) for p in ranked_pages]
    return RagAnswer(question=question, answer=text if text is not None else TEXT[ranked_pages[0]],
                     contexts=contexts)


def test_metrics_read_the_contexts_the_system_used():
    samples = [sample(0, "docs/a.md"), sample(1, "docs/b.md")]
    answers = [answer("q0", ["docs/a.md", "docs/c.md"]), answer("q1", ["docs/c.md", "docs/b.md"])]
    m = system_metrics(samples, answers, match=MATCH, k=2)
    assert m[HIT_RATE].score == 1.0 and m[HIT_RATE].info.binary
    assert m[MRR].score == pytest.approx((1 + 0.5) / 2)
    assert m[CONTEXT_RECALL].score == 1.0 and m[CONTEXT_PRECISION].score == 0.5
    assert m[HIT_RATE].info.k == 2 and m[HIT_RATE].info.family == "system"
    assert m[HIT_RATE].items[1].details["relevant_at"] == [2]
    # the system's own k: at k=1 the second question's relevant page is not used
    at_one = system_metrics(samples, answers, match=MATCH, k=1)
    assert at_one[HIT_RATE].score == 0.5 and at_one[CONTEXT_PRECISION].score == 0.5


def test_a_top_k_cut_blocks_the_gate_when_enough_questions():
    samples = [sample(i, PAGES[i % 4]) for i in range(60)]
    # the relevant page is ranked first for two thirds of the questions, second for the rest
    rankings = [[PAGES[i % 4], PAGES[(i + 1) % 4], PAGES[(i + 2) % 4]] if i % 3 else
                [PAGES[(i + 1) % 4], PAGES[i % 4], PAGES[(i + 2) % 4]] for i in range(60)]
    top3 = system_metrics(samples, [answer(s.id, r) for s, r in zip(samples, rankings, strict=True)], match=MATCH, k=3)
    top1 = system_metrics(samples, [answer(s.id, r[:1]) for s, r in zip(samples, rankings, strict=True)], match=MATCH,
                          k=1)
    assert top3[HIT_RATE].score == 1.0 and top1[HIT_RATE].score == pytest.approx(40 / 60)
    th = GateThresholds(default_allowed_drop=0.05, gated_metrics=[HIT_RATE])
    decision = gate_decision(compare_runs(top1, top3, thresholds=th), th)
    assert not decision.promote and "system/hit_rate regressed" in reason_lines(decision)[0]


def test_answer_support_and_reference_coverage():
    s = sample(0, "docs/a.md")
    grounded = answer("q0", ["docs/a.md"])
    off = answer("q0", ["docs/a.md"], text="Kubeflow pipelines require Kubernetes clusters")
    short = answer("q0", ["docs/a.md"], text="The a-orchestrator")
    assert system_metrics([s], [grounded], match=MATCH)[CONTEXT_SUPPORT].score == 1.0
    off_support = system_metrics([s], [off], match=MATCH)[CONTEXT_SUPPORT]
    assert off_support.score == 0.0 and "kubeflow" in off_support.items[0].details["unsupported_words"]
    full = system_metrics([s], [grounded], match=MATCH)[REFERENCE_COVERAGE].score
    cut = system_metrics([s], [short], match=MATCH)[REFERENCE_COVERAGE].score
    assert full == 1.0 and cut == pytest.approx(1 / 2)  # "a-orchestrator" of {a-orchestrator, configuration}


def test_failures_are_explicit_with_reasons():
    unlabelled = EvalSample(id="u", question="?", reference_answer="x y")
    failed = RagAnswer(question="?", error="timeout")
    m = system_metrics([unlabelled, sample(1, "docs/b.md")],
                       [answer("u", ["docs/a.md"], text="the of and"), failed], match=MATCH, k=3)
    # a question without labels is skipped with its reason, apart from the failed answer
    assert (m[HIT_RATE].n_scored, m[HIT_RATE].n_failed, m[HIT_RATE].n_skipped) == (0, 1, 1)
    errors = {it.item_id: it.error for it in m[HIT_RATE].items}
    assert "no relevance labels" in errors["u"] and "timeout" in errors["q1"]
    assert [it.skipped for it in m[HIT_RATE].items] == [True, False]
    coverage = system_metrics([EvalSample(id="n", question="?")], [answer("n", ["docs/a.md"], text="local")],
                              match=MATCH)[REFERENCE_COVERAGE]
    assert (coverage.n_failed, coverage.n_skipped) == (0, 1) and "no reference answer" in coverage.items[0].error
    assert "no content words" in m[CONTEXT_SUPPORT].items[0].error


def test_bad_input_says_what_to_do():
    with pytest.raises(ValueError, match="in the order of the samples"):
        system_metrics([sample(0, "docs/a.md")], [])
    with pytest.raises(ValueError, match="top_k"):
        system_metrics([], [], k=0)


def test_content_words_drop_function_words():
    assert content_words("The local orchestrator is the DEFAULT.") == {"local", "orchestrator", "default"}


def test_the_k_is_what_the_system_reported_it_ran_with():
    assert reported_top_k({"kind": "builtin", "top_k": 3}) == 3
    # a system of the user's own reports none: every context it returned counts
    assert reported_top_k({"kind": "http"}) is None and reported_top_k({"top_k": True}) is None


def _availability(n: int, failed: int):
    samples = [sample(i, PAGES[i % 4]) for i in range(n)]
    answers = [RagAnswer(question=s.question, error="connection failed") if i < failed
               else answer(s.question, [PAGES[i % 4]]) for i, s in enumerate(samples)]
    return {AVAILABILITY: system_metrics(samples, answers, match=MATCH)[AVAILABILITY]}


def test_availability_scores_a_failed_question_zero_with_its_reason():
    m = _availability(20, 1)[AVAILABILITY]
    assert (m.score, m.n_scored, m.n_failed) == (0.95, 20, 0)  # a failure is the measurement, not unscored
    assert m.info.family == "system" and m.info.binary and m.info.higher_is_better
    assert m.items[0].score == 0.0 and m.items[0].details["reason"] == "connection failed"
    assert m.ci_low < 0.95 < m.ci_high and m.ci_method


@pytest.mark.parametrize(("n", "failed", "status"), [
    (20, 0, "promote"),   # no change
    (20, 1, "hold"),      # one question in twenty: too few items to decide, held and named (min_n 30)
    (20, 5, "regressed"),  # a real rise in failures blocks
    (40, 1, "promote"),   # enough items, and one failure does not show a drop beyond 0
    (40, 8, "regressed"),
])
def test_availability_gates_a_rise_in_unanswered_questions(n, failed, status):
    gate = GateThresholds(per_metric={"system/*": 0.0}, gated_metrics=[AVAILABILITY])
    comparison = compare_runs(_availability(n, failed), _availability(n, 0), thresholds=gate)
    decision = gate_decision(comparison, gate)
    assert decision.status == status, reason_lines(decision)
    if status != "promote":
        assert AVAILABILITY in reason_lines(decision)[0]
