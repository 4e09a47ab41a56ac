"""Agreement measures against scikit-learn and scipy on random labels."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import spearmanr
from sklearn.metrics import balanced_accuracy_score, cohen_kappa_score, f1_score, roc_auc_score

from ragwatch.statistics.agreement import (
    accuracy,
    balanced_accuracy,
    cohen_kappa,
    f1,
    hamming_distance,
    roc_auc,
    spearman,
    weighted_kappa,
    with_interval,
)


def _paired(elements: st.SearchStrategy, min_size: int = 1, max_size: int = 40):
    def two_lists(n: int) -> st.SearchStrategy:
        same = st.lists(elements, min_size=n, max_size=n)
        return st.tuples(same, same)

    return st.integers(min_size, max_size).flatmap(two_lists)


LABELS = st.sampled_from(["faithful", "hallucinated", "unsure"])
SCORES = st.sampled_from([1, 2, 3, 4, 5])
FAST = settings(max_examples=100, deadline=None)


def _sk(fn, *args, **kwargs) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(fn(*args, **kwargs))


@FAST
@given(_paired(LABELS))
def test_cohen_kappa_matches_sklearn(pair):
    a, b = pair
    expected = _sk(cohen_kappa_score, a, b)
    got = cohen_kappa(a, b)
    assert math.isfinite(got)
    if math.isnan(expected):  # sklearn: undefined when both raters are constant and identical
        assert got == 0.0 and len(set(a) | set(b)) == 1
    else:
        assert got == pytest.approx(expected, abs=1e-9)


@FAST
@given(_paired(SCORES, min_size=2), st.sampled_from(["linear", "quadratic"]))
def test_weighted_kappa_matches_sklearn(pair, weights):
    a, b = pair
    expected = _sk(cohen_kappa_score, a, b, weights=weights)
    got = weighted_kappa(a, b, weights=weights, undefined=math.nan)
    assert (math.isnan(expected) and math.isnan(got)) or got == pytest.approx(expected, abs=1e-9)


@FAST
@given(_paired(st.floats(-5, 5, allow_nan=False), min_size=2))
def test_spearman_matches_scipy(pair):
    a, b = pair
    expected = _sk(lambda x, y: spearmanr(x, y).statistic, a, b)
    got = spearman(a, b)
    if math.isnan(expected):
        assert got == 0.0
    else:
        assert got == pytest.approx(expected, abs=1e-9)


@FAST
@given(_paired(st.booleans()))
def test_accuracy_hamming_balanced_f1_match_sklearn(pair):
    y_true, y_pred = pair
    assert accuracy(y_true, y_pred) == pytest.approx(np.mean(np.array(y_true) == np.array(y_pred)))
    assert hamming_distance(y_true, y_pred) == pytest.approx(1 - accuracy(y_true, y_pred))
    assert balanced_accuracy(y_true, y_pred) == pytest.approx(_sk(balanced_accuracy_score, y_true, y_pred))
    for positive in (True, False):
        expected = _sk(f1_score, y_true, y_pred, pos_label=positive, labels=[True, False], zero_division=0.0)
        assert f1(y_true, y_pred, positive=positive) == pytest.approx(expected)


@FAST
@given(_paired(LABELS))
def test_f1_and_balanced_accuracy_on_string_labels(pair):
    y_true, y_pred = pair
    per_label = f1_score(y_true, y_pred, labels=["hallucinated"], average=None, zero_division=0.0)
    expected = float(per_label[0])
    assert f1(y_true, y_pred, positive="hallucinated") == pytest.approx(expected)
    assert balanced_accuracy(y_true, y_pred) == pytest.approx(_sk(balanced_accuracy_score, y_true, y_pred))


def test_degenerate_inputs_are_defined_and_documented():
    assert cohen_kappa(["yes"] * 5, ["yes"] * 5) == 0.0
    assert cohen_kappa(["yes"] * 5, ["yes"] * 5, undefined=1.0) == 1.0
    assert spearman([3, 3, 3], [1, 2, 3]) == 0.0
    assert f1([0, 0], [0, 0], positive=1) == 0.0
    assert balanced_accuracy([1, 1, 1], [1, 0, 1]) == pytest.approx(2 / 3)


def test_bad_input_says_what_to_do():
    with pytest.raises(ValueError, match="same items"):
        cohen_kappa([1, 0], [1])
    with pytest.raises(ValueError, match="at least one"):
        accuracy([], [])
    with pytest.raises(ValueError, match="finite"):
        spearman([1.0, float("nan")], [1.0, 2.0])


def test_with_interval_brackets_the_value_and_is_seeded():
    rng = np.random.default_rng(3)
    truth = rng.integers(0, 2, 80)
    pred = np.where(rng.random(80) < 0.8, truth, 1 - truth)
    est = with_interval(cohen_kappa, truth, pred, seed=1)
    assert est.ci_low <= est.value <= est.ci_high
    assert 0.3 < est.value < 0.9 and est.ci_high - est.ci_low > 0.05
    assert est == with_interval(cohen_kappa, truth, pred, seed=1)
    assert est.n == 80
    f1_est = with_interval(f1, truth, pred, positive=1)
    assert f1_est.value == pytest.approx(_sk(f1_score, truth, pred))


def test_with_interval_on_undefined_measure_never_gives_nan():
    est = with_interval(cohen_kappa, ["a"] * 6, ["a"] * 6)
    assert (est.value, est.ci_low, est.ci_high) == (0.0, 0.0, 0.0)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.booleans(), st.integers(0, 5)), min_size=2, max_size=40).filter(
        lambda rows: len({label for label, _ in rows}) == 2
    )
)
def test_roc_auc_matches_sklearn(rows: list[tuple[bool, int]]) -> None:
    labels, scores = [r[0] for r in rows], [float(r[1]) for r in rows]
    assert roc_auc(labels, scores) == pytest.approx(roc_auc_score(labels, scores), abs=1e-12)


def test_roc_auc_one_class_is_the_undefined_value() -> None:
    assert roc_auc([True, True], [0.1, 0.9]) == 0.5
