"""PPI++ mean: hand-worked cases, edge cases, and a coverage simulation (no LLM)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from ragwatch.statistics.ppi import power_tuned_lambda, ppi_mean


def test_hand_worked_case():
    # 6 judged items, 3 labelled (items 0, 1, 2), equal weights.
    f_all = np.array([1.0, 0.0, 1.0, 1.0, 0.0, 1.0])
    y = np.array([1.0, 0.0, 0.0])
    f_lab = f_all[:3]
    # Var(f_all) with ddof=1: mean 2/3, squared deviations 4*(1/9) + 2*(4/9) = 12/9, / 5 = 4/15.
    # Cov(y, f_lab) with ddof=1: means 1/3 and 2/3; products (2/3)(1/3) + (-1/3)(-2/3) + (-1/3)(1/3)
    # = 2/9 + 2/9 - 1/9 = 1/3, / 2 = 1/6.  lambda = (1/6) / (4/15) = 0.625.
    lam = power_tuned_lambda(y, f_lab, f_all, np.ones(3))
    assert lam == pytest.approx(0.625)
    est = ppi_mean(y, f_lab, f_all)
    # point = 0.625 * 4/6 + mean(y - 0.625 f_lab) = 0.41667 + (0.375 - 0 - 0.625)/3 = 0.41667 - 0.08333
    assert est.estimate == pytest.approx(0.625 * 4 / 6 + (0.375 + 0.0 - 0.625) / 3)
    # rectifier e = [0.375, 0, -0.625], mean -1/12; s^2 = sum (e - m)^2 / 2
    e = np.array([0.375, 0.0, -0.625])
    s2_e = ((e - e.mean()) ** 2).sum() / 2
    s2_y = ((y - y.mean()) ** 2).sum() / 2  # 1/3
    var = (1 - 3 / 6) * s2_e / 3 + s2_y / 6
    half = stats.t.ppf(0.975, 2) * math.sqrt(var)
    assert (est.ci_low, est.ci_high) == pytest.approx((est.estimate - half, est.estimate + half))
    # labelled only: mean 1/3, variance s2_y / n (the two terms add up to it)
    only_half = stats.t.ppf(0.975, 2) * math.sqrt(s2_y / 3)
    assert est.labelled_only == pytest.approx(1 / 3)
    assert est.labelled_only_ci == pytest.approx((1 / 3 - only_half, 1 / 3 + only_half))


def test_fixed_lambda_zero_is_labels_only_and_one_is_classic_ppi():
    rng = np.random.default_rng(1)
    f_all = rng.uniform(size=50)
    y = (f_all[:10] > 0.5).astype(float)
    assert ppi_mean(y, f_all[:10], f_all, lam=0.0).estimate == pytest.approx(y.mean())
    classic = ppi_mean(y, f_all[:10], f_all, lam=1.0)
    assert classic.estimate == pytest.approx(f_all.mean() + (y - f_all[:10]).mean())


def test_weights_undo_a_stratified_sample():
    # Population of 100: 20 items with f=1 (all truly 1), 80 with f=0 (all truly 0); true mean 0.2.
    # 10 labels from each stratum: inclusion 10/20 and 10/80, weights 2 and 8.
    f_all = np.r_[np.ones(20), np.zeros(80)]
    y = np.r_[np.ones(10), np.zeros(10)]
    f_lab = y.copy()
    w = np.r_[np.full(10, 2.0), np.full(10, 8.0)]
    weighted = ppi_mean(y, f_lab, f_all, weights=w, lam=0.0)
    assert weighted.estimate == pytest.approx(0.2)  # unweighted labels would say 0.5
    assert ppi_mean(y, f_lab, f_all, lam=0.0).estimate == pytest.approx(0.5)


def test_constant_judge_gets_lambda_zero_and_everything_labelled_is_classical():
    y = np.array([1.0, 0.0, 1.0, 1.0])
    est = ppi_mean(y, np.ones(4), np.ones(10))
    assert est.lam == 0.0 and est.estimate == pytest.approx(0.75)
    full = ppi_mean(y, np.array([0.9, 0.1, 0.8, 0.7]), np.array([0.9, 0.1, 0.8, 0.7]))
    assert full.estimate == pytest.approx(0.75)
    assert (full.ci_low, full.ci_high) == pytest.approx(full.labelled_only_ci)


def test_bounds_clip_and_bad_input_says_what_to_do():
    est = ppi_mean([1.0, 1.0, 1.0, 0.0], [1.0, 1.0, 1.0, 0.0], [1.0] * 3 + [0.0] + [1.0] * 6, bounds=(0.0, 1.0))
    assert 0.0 <= est.ci_low <= est.estimate <= est.ci_high <= 1.0
    with pytest.raises(ValueError, match="at least 2"):
        ppi_mean([1.0], [1.0], [1.0, 0.0])
    with pytest.raises(ValueError, match="align"):
        ppi_mean([1.0, 0.0], [1.0], [1.0, 0.0])
    with pytest.raises(ValueError, match="every judged item"):
        ppi_mean([1.0, 0.0, 1.0], [1.0, 0.0, 1.0], [1.0, 0.0])
    with pytest.raises(ValueError, match="inclusion probability"):
        ppi_mean([1.0, 0.0], [1.0, 0.0], [1.0, 0.0, 1.0], weights=[1.0, 0.0])


def _simulate(n_labels: int, reps: int, *, stratified: bool = False, seed: int = 0) -> dict[str, float]:
    """Biased, noisy judge on 1,000 items; truth = the population mean of the human labels (0.55)."""
    rng = np.random.default_rng(seed)
    big_n, p = 1000, 0.55
    hits = {"ppi": 0, "judge": 0, "labels": 0}
    narrower = 0
    for _ in range(reps):
        y_all = (rng.uniform(size=big_n) < p).astype(float)
        f_all = np.clip(0.35 + 0.5 * y_all + rng.normal(0, 0.2, big_n), 0, 1)  # mean ~0.62: biased
        if stratified:
            # 70% of the labels from the items the judge scores low (where its errors hide)
            low = np.flatnonzero(f_all < 0.6)
            high = np.flatnonzero(f_all >= 0.6)
            n_low = min(int(0.7 * n_labels), low.size)
            pick = np.r_[rng.choice(low, n_low, replace=False), rng.choice(high, n_labels - n_low, replace=False)]
            w = np.r_[np.full(n_low, low.size / n_low), np.full(n_labels - n_low, high.size / (n_labels - n_low))]
        else:
            pick, w = rng.choice(big_n, n_labels, replace=False), None
        est = ppi_mean(y_all[pick], f_all[pick], f_all, weights=w, bounds=(0.0, 1.0))
        hits["ppi"] += est.ci_low <= p <= est.ci_high
        hits["labels"] += est.labelled_only_ci[0] <= p <= est.labelled_only_ci[1]
        half = 1.96 * f_all.std(ddof=1) / math.sqrt(big_n)
        hits["judge"] += abs(f_all.mean() - p) <= half
        narrower += (est.ci_high - est.ci_low) < (est.labelled_only_ci[1] - est.labelled_only_ci[0])
    out = {k: v / reps for k, v in hits.items()}
    out["narrower"] = narrower / reps
    return out


@pytest.mark.parametrize("n_labels", [50, 100, 200])
def test_simulation_coverage_and_width(n_labels: int):
    result = _simulate(n_labels, reps=500, seed=n_labels)
    assert result["ppi"] >= 0.93, result
    assert result["judge"] <= 0.2, result  # the biased judge alone is confidently wrong
    assert result["narrower"] == 1.0, result  # an informative judge always narrows the interval


def test_simulation_stratified_labels_weighted_back():
    result = _simulate(100, reps=500, stratified=True, seed=7)
    assert result["ppi"] >= 0.93, result
    assert result["labels"] >= 0.93, result
