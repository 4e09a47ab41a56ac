"""Active labelling: inclusion probabilities, the draw, the weighted PPI estimate, labels needed (no LLM)."""

from __future__ import annotations

import numpy as np
import pytest

from ragwatch.results import ItemScore, MetricInfo, MetricResult
from ragwatch.review.sample import review_sample
from ragwatch.review.spread import label_spread
from ragwatch.simulation import active_labels
from ragwatch.statistics.active import active_probabilities, draw_pps, labels_needed
from ragwatch.statistics.ppi import ppi_mean


def test_probabilities_follow_the_spread_with_a_floor_and_sum_to_n():
    spread = np.array([0.5, 0.4, 0.1, 0.0, 0.0, 0.3])
    probs = active_probabilities(spread, 2, floor=0.2)
    assert probs.sum() == pytest.approx(2.0)
    assert (probs > 0).all() and (probs <= 1).all()
    assert probs[0] > probs[1] > probs[5] > probs[2] > probs[3] == probs[4]
    assert probs[3] == pytest.approx(2 * 0.2 / 6)  # a sure judge's item keeps the floor's share
    # more draws than a large spread allows: that item is taken for sure, the rest shared likewise
    capped = active_probabilities(np.array([10.0, 0.1, 0.1, 0.1]), 2, floor=0.2)
    assert capped[0] == 1.0 and capped.sum() == pytest.approx(2.0)
    assert capped[1] == pytest.approx(capped[2]) == pytest.approx(1 / 3)
    assert (active_probabilities(spread, 6) == 1.0).all() and (active_probabilities(spread, 9) == 1.0).all()
    assert active_probabilities(np.zeros(4), 2) == pytest.approx(np.full(4, 0.5))  # no spread: uniform


def test_bad_probabilities_input_says_what_to_do():
    with pytest.raises(ValueError, match="floor"):
        active_probabilities(np.ones(3), 1, floor=0.0)
    with pytest.raises(ValueError, match=">= 0"):
        active_probabilities(np.array([0.2, -1.0]), 1)
    with pytest.raises(ValueError, match="whole number"):
        draw_pps(np.array([0.5, 0.7]), np.random.default_rng(0))


def test_the_draw_has_n_distinct_items_each_with_its_probability():
    rng = np.random.default_rng(0)
    probs = active_probabilities(rng.uniform(size=15) ** 2, 6)
    counts = np.zeros(15)
    reps = 20000
    for _ in range(reps):
        chosen = draw_pps(probs, rng)
        assert chosen.size == 6 and np.unique(chosen).size == 6
        counts[chosen] += 1
    # binomial standard error at 20000 draws is at most 0.0035
    assert np.abs(counts / reps - probs).max() < 0.015


def test_weighted_ppi_under_active_sampling_is_unbiased_and_covers():
    rng = np.random.default_rng(7)
    big_n, n, reps = 80, 15, 1000
    p = np.r_[np.full(50, 0.95), rng.uniform(0.3, 0.7, big_n - 50)]  # sure of most items, unsure of 30
    # a fixed run (the finite population's mean is the truth); readers find less than the judge says
    y = (rng.uniform(size=big_n) < np.r_[np.full(50, 0.95), 0.7 * p[50:]]).astype(float)
    spread = np.sqrt(p * (1 - p))
    probs = active_probabilities(spread, n)
    est_active, est_labels_only, est_plain, covered = [], [], [], 0
    for _ in range(reps):
        chosen = draw_pps(probs, rng)
        est = ppi_mean(y[chosen], p[chosen], p, weights=1 / probs[chosen])
        est_active.append(est.estimate)
        covered += est.ci_low <= y.mean() <= est.ci_high
        est_labels_only.append(ppi_mean(y[chosen], p[chosen], p, weights=1 / probs[chosen], lam=0.0).estimate)
        est_plain.append(ppi_mean(y[chosen], p[chosen], p, lam=0.0).estimate)  # ignoring the design
    for estimates in (est_active, est_labels_only):
        se = np.std(estimates) / np.sqrt(reps)
        assert abs(np.mean(estimates) - y.mean()) < 4 * se + 0.01  # Hajek: unbiased up to O(1/n)
    assert covered / reps >= 0.93
    se = np.std(est_plain) / np.sqrt(reps)
    assert abs(np.mean(est_plain) - y.mean()) > 5 * se  # unweighted labels of an active draw are biased


def test_active_is_closer_than_uniform_at_the_same_coverage():
    # seeded and small: the benchmark's simulation on a judge that is sure of most items
    rng = np.random.default_rng(3)
    m = 120
    p = np.clip(rng.beta(0.2, 0.2, m), 0.01, 0.99)
    y = (rng.uniform(size=m) < p).astype(float)
    sd = np.sqrt(p * (1 - p))
    cells = active_labels.simulate(p, y, sd, sd, items=65, sizes=(10, 30), reps=600, seed=1)
    by = {(c.design, c.n): c for c in cells}
    for c in cells:
        assert c.coverage >= 0.93, c
    # with 30 labels the active estimate is closer to the run's mean label (with 10, the tuned lambda's
    # own noise evens the designs out; benchmarks/active_labels.py shows the figures)
    assert by[("active", 30)].rmse < by[("uniform", 30)].rmse


def test_label_spread_reads_statement_probabilities_or_the_score():
    info = MetricInfo(scale=(0.0, 1.0), binary=True, threshold=0.5)
    sure = ItemScore(item_id="a", score=1.0, details={"verdicts": [
        {"statement": "x", "verdict": True, "p_supported": 1.0}]})
    assert label_spread(sure, info) == 0.0
    share = ItemScore(item_id="b", score=1.0, details={"verdicts": [
        {"statement": "x", "verdict": True, "p_supported": 0.6}]})
    assert label_spread(share, info) == pytest.approx(np.sqrt(0.24 + 0.16))  # variance + gap to the share
    likert = ItemScore(item_id="c", score=3.0)
    assert label_spread(likert, MetricInfo(scale=(1.0, 5.0))) == pytest.approx(2.0)  # midpoint: 0.5 * width 4


def test_review_sample_active_favours_unsure_items_and_records_their_probability():
    rows = [{"item_id": f"q{i}", "question": "?", "answer": "a", "contexts": []} for i in range(30)]
    items = [ItemScore(item_id=f"q{i}", score=1.0 if i < 20 else 0.5, details={"verdicts": [
        {"statement": "s", "verdict": True, "p_supported": 0.99 if i < 20 else 0.5}]}) for i in range(30)]
    metrics = {"faithfulness": MetricResult.from_items("faithfulness", items, info=MetricInfo(
        binary=True, threshold=0.5, prompt_version="f", family="judge"))}
    sample = review_sample(rows, metrics, n=8, seed=0)
    assert sample.design == "active" and len(sample.rows) == 8
    probs = {r["item_id"]: r["inclusion_prob"] for r in sample.rows}
    unsure = [p for i, p in probs.items() if int(i[1:]) >= 20]
    sure = [p for i, p in probs.items() if int(i[1:]) < 20]
    assert unsure and min(unsure) > 2 * max(sure, default=0.0)
    assert review_sample(rows, metrics, n=8, seed=0).rows == sample.rows  # seeded
    assert "active" in sample.describe()
    with pytest.raises(ValueError, match="sampling design"):
        review_sample(rows, metrics, n=8, design="random")  # type: ignore[arg-type]


def test_labels_needed_grows_as_the_gap_shrinks_and_says_none_when_labels_cannot_do_it():
    spread = np.full(60, 0.3)
    big = labels_needed(spread, 0.3)
    small = labels_needed(spread, 0.1)
    assert big is not None and small is not None and 2 <= big < small <= 60
    assert labels_needed(spread, 0.1, extra_variance=0.01) is None  # the items' own noise is too large
    assert labels_needed(spread, 0.0) is None
    # labels only count where the answer changed: fewer residuals, fewer labels
    half = np.r_[np.full(30, 0.3), np.zeros(30)]
    assert labels_needed(spread, 0.1, residual=half) < small
