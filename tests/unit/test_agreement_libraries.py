"""Agreement measures against scikit-learn and SciPy on the project's labelled data, and the edge cases
where the libraries say NaN (or raise) and ours return the documented `undefined` value instead.

The fixtures are the shipped faithfulness calibration statements (reference label, the judge's P(yes),
lexical overlap) and the answer-relevance labels (two readers' 1-5 grades). The pinned bootstrap
intervals were computed by the hand-written measures these functions replaced: a library-backed
measure must reproduce them.
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import spearmanr
from sklearn.metrics import (
    accuracy_score,
    balanced_accuracy_score,
    cohen_kappa_score,
    f1_score,
    hamming_loss,
    roc_auc_score,
)

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

ROOT = Path(__file__).resolve().parents[2]
STATEMENTS = (ROOT / "ragwatch" / "judges" / "faithfulness" / "calibration_data"
              / "qwen2.5-coder-1.5b-instruct__faithfulness-v6__features-v2.jsonl")
RELEVANCE = ROOT / "data" / "judge_dev" / "answer_relevance" / "labels.jsonl"


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def statements() -> dict[str, list]:
    rows = [r for r in _jsonl(STATEMENTS) if r["p_judge"] is not None]
    return {"label": [bool(r["label"]) for r in rows], "p": [float(r["p_judge"]) for r in rows],
            "verdict": [r["p_judge"] >= 0.5 for r in rows], "lexical": [float(r["lexical"]) for r in rows]}


@pytest.fixture(scope="module")
def grades() -> tuple[list[int], list[int]]:
    rows = _jsonl(RELEVANCE)
    return [int(r["grade_reader_1"]) for r in rows], [int(r["grade_reader_2"]) for r in rows]


def _quiet(fn, *args, **kwargs):
    """Call with every warning an error: our measures must not leak a library's warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return fn(*args, **kwargs)


def test_pass_fail_measures_match_sklearn_on_the_calibration_statements(statements):
    y, v, p = statements["label"], statements["verdict"], statements["p"]
    assert _quiet(cohen_kappa, y, v) == pytest.approx(cohen_kappa_score(y, v), abs=1e-12)
    assert _quiet(balanced_accuracy, y, v) == pytest.approx(balanced_accuracy_score(y, v), abs=1e-12)
    assert _quiet(accuracy, y, v) == pytest.approx(accuracy_score(y, v), abs=1e-12)
    assert _quiet(hamming_distance, y, v) == pytest.approx(hamming_loss(y, v), abs=1e-12)
    for positive in (True, False):
        assert _quiet(f1, y, v, positive=positive) == pytest.approx(f1_score(y, v, pos_label=positive), abs=1e-12)
        expected_auc = roc_auc_score(np.asarray(y) == positive, p)
        assert _quiet(roc_auc, y, p, positive=positive) == pytest.approx(expected_auc, abs=1e-12)
    assert _quiet(spearman, p, statements["lexical"]) == pytest.approx(
        spearmanr(p, statements["lexical"]).statistic, abs=1e-12)


def test_graded_measures_match_sklearn_on_the_readers_grades(grades):
    a, b = grades
    for weights in (None, "linear", "quadratic"):
        assert _quiet(cohen_kappa, a, b, weights=weights) == pytest.approx(
            cohen_kappa_score(a, b, weights=weights), abs=1e-12)
    assert _quiet(weighted_kappa, a, b) == pytest.approx(cohen_kappa_score(a, b, weights="quadratic"), abs=1e-12)
    assert _quiet(spearman, a, b) == pytest.approx(spearmanr(a, b).statistic, abs=1e-12)
    assert _quiet(balanced_accuracy, a, b) == pytest.approx(balanced_accuracy_score(a, b), abs=1e-12)
    for grade in (1, 3, 5):
        expected = f1_score(a, b, labels=[grade], average=None)[0]
        assert _quiet(f1, a, b, positive=grade) == pytest.approx(expected, abs=1e-12)


# (measure, fixture columns, keyword arguments) -> (value, 2.5%, 97.5%) from the hand-written measures,
# 500 resamples, seed 0.
PINNED = [
    ("cohen_kappa", ("label", "verdict"), {}, (-0.0375374682960572, -0.09324547266018822, 0.01749808270382509)),
    ("balanced_accuracy", ("label", "verdict"), {}, (0.4816542709037638, 0.4552897019881372, 0.5087677577350961)),
    ("f1", ("label", "verdict"), {"positive": False},
     (0.08484848484848485, 0.03053997194950915, 0.14591172460804355)),
    ("roc_auc", ("label", "p"), {}, (0.5185034933513636, 0.44902896252551766, 0.5838961620087448)),
    ("spearman", ("p", "lexical"), {}, (-0.023300752463478142, -0.14460644762924588, 0.10414852901098422)),
    ("weighted_kappa", ("grade1", "grade2"), {}, (0.8832807570977919, 0.8244694090827823, 0.9294212930437445)),
    ("cohen_kappa", ("grade1", "grade2"), {"weights": "linear"},
     (0.7780941418792028, 0.6982097567096098, 0.8506112716558132)),
    ("spearman", ("grade1", "grade2"), {}, (0.8769116825092854, 0.8090807679580827, 0.9286261581143171)),
]
MEASURES = {f.__name__: f for f in (cohen_kappa, weighted_kappa, balanced_accuracy, f1, roc_auc, spearman)}


@pytest.mark.parametrize(("name", "columns", "kwargs", "expected"), PINNED,
                         ids=[f"{name}-{cols[0]}" for name, cols, _, _ in PINNED])
def test_bootstrap_intervals_are_the_hand_written_ones(statements, grades, name, columns, kwargs, expected):
    data = {**statements, "grade1": grades[0], "grade2": grades[1]}
    est = _quiet(with_interval, MEASURES[name], data[columns[0]], data[columns[1]], resamples=500, seed=0,
                 **kwargs)
    assert (est.value, est.ci_low, est.ci_high) == pytest.approx(expected, abs=1e-12)


# Where the libraries give NaN or raise, ours give the documented `undefined` (rule 3: never NaN).
UNDEFINED = [
    ("kappa, both raters constant and identical", cohen_kappa, (["yes"] * 5, ["yes"] * 5), {}),
    ("weighted kappa, one grade everywhere", weighted_kappa, ([3] * 4, [3] * 4), {}),
    ("spearman, one side constant", spearman, ([3, 3, 3], [1, 2, 3]), {}),
    ("spearman, both constant", spearman, ([1.0, 1.0], [2.0, 2.0]), {}),
    ("f1, positive label nowhere", f1, ([0, 0, 0], [0, 0, 0]), {"positive": 1}),
    ("roc auc, only positives", roc_auc, ([True, True], [0.1, 0.9]), {}),
    ("roc auc, only negatives", roc_auc, ([0.0, 0.0, 0.0], [0.1, 0.5, 0.9]), {"positive": 1.0}),
]


@pytest.mark.parametrize(("case", "measure", "args", "kwargs"), UNDEFINED, ids=[u[0] for u in UNDEFINED])
def test_undefined_cases_give_the_placeholder_silently(case, measure, args, kwargs):
    default = _quiet(measure, *args, **kwargs)
    assert math.isfinite(default)
    assert _quiet(measure, *args, **kwargs, undefined=-7.0) == -7.0
    assert default == {"roc_auc": 0.5}.get(measure.__name__, 0.0)
    est = _quiet(with_interval, measure, *args, resamples=50, **kwargs)
    assert (est.value, est.ci_low, est.ci_high) == (default, default, default)


def test_the_libraries_say_nan_or_raise_there():
    """Why the guards stay: what scikit-learn and SciPy return on the undefined cases above."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert math.isnan(cohen_kappa_score(["yes"] * 5, ["yes"] * 5))
        assert math.isnan(spearmanr([3, 3, 3], [1, 2, 3]).statistic)
        try:
            auc = roc_auc_score([True, True], [0.1, 0.9])
        except ValueError:
            auc = math.nan
        assert math.isnan(auc)


def test_labels_of_any_hashable_type_and_numeric_positives():
    # bool labels with positive=1 and float labels with positive=1.0 (calibration/human.py) count as one label
    assert f1([True, False, True], [True, True, True], positive=1) == pytest.approx(0.8)
    assert roc_auc([1.0, 0.0, 1.0], [0.9, 0.2, 0.4], positive=1.0) == 1.0
    assert roc_auc(["faithful", "hallucinated", "faithful"], [0.9, 0.2, 0.1], positive="faithful") == 0.5
    assert cohen_kappa([1.0, 0.0, 1.0, 1.0], [1, 0, 0, 1]) == pytest.approx(0.5)
    # a class only the predictions use is not a class of balanced accuracy (sklearn warns there; we do not)
    assert _quiet(balanced_accuracy, [1, 1, 0, 0], [1, 2, 0, 0]) == pytest.approx(0.75)
    # one item
    assert _quiet(accuracy, ["a"], ["a"]) == 1.0
    assert _quiet(f1, ["a"], ["b"], positive="a") == 0.0


def test_bad_input_still_says_what_to_do():
    with pytest.raises(ValueError, match="mixed types"):
        cohen_kappa([1, "a"], [1, 1])
    with pytest.raises(ValueError, match="same items"):
        f1([1, 0], [1])
    with pytest.raises(ValueError, match="same items"):
        roc_auc([True, False], [0.5])
    with pytest.raises(ValueError, match="finite"):
        roc_auc([True, False], [0.5, float("nan")])
    with pytest.raises(ValueError, match="numeric"):
        spearman(["a", "b"], [1.0, 2.0])
    with pytest.raises(ValueError, match="weights must be"):
        cohen_kappa([1, 2], [1, 2], weights="cubic")  # type: ignore[arg-type]


def test_bootstrap_on_a_small_sample_never_gives_nan():
    # most resamples of 3 items hold one class only: skipped, never counted as NaN
    for measure, a, b in ((cohen_kappa, [1, 0, 1], [1, 0, 1]), (roc_auc, [True, False, True], [0.9, 0.1, 0.5]),
                          (spearman, [1.0, 2.0, 2.0], [1.0, 2.0, 3.0]), (f1, [1, 0, 0], [0, 0, 1])):
        est = _quiet(with_interval, measure, a, b, resamples=200)
        assert all(math.isfinite(x) for x in (est.value, est.ci_low, est.ci_high)), measure.__name__
