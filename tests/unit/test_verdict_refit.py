"""benchmarks/verdict_refit.py: agreement with answer-resampled intervals (coverage by simulation), the
candidate fit and its cut-off under the rules, and held-out fits that never see what they score."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from benchmarks import verdict_refit as vr
from ragwatch.statistics.agreement import balanced_accuracy, cohen_kappa


def records(n_answers: int = 40, systems: tuple[str, ...] = ("A", "B", "C"), seed: int = 0) -> list[dict[str, Any]]:
    """Statements whose label follows lexical support (with noise), 3 an answer, some vetoed."""
    rng = np.random.default_rng(seed)
    out = []
    for a in range(n_answers):
        system = systems[a % len(systems)]
        for k in range(3):
            label = bool(rng.random() < 0.5)
            lexical = float(np.clip(rng.normal(0.7 if label else 0.4, 0.15), 0, 1))
            out.append({"answer_id": f"{system}/{a}", "system": system, "label": label, "lexical": lexical,
                        "p_judge": float(rng.uniform(0.3, 0.99)), "no_claim": False, "uncited": False,
                        "missing_terms": 0, "absent_terms": k == 2 and a % 5 == 0})
    return out


def test_agreement_point_values_are_the_library_measures() -> None:
    y = [True, False, True, True, False, False, True, False]
    v = [True, False, False, True, True, False, True, False]
    est = vr.agreement(y, v, ["a", "a", "b", "b", "c", "c", "d", "d"], resamples=200)
    assert est.kappa[0] == pytest.approx(cohen_kappa(y, v))
    assert est.balanced_accuracy[0] == pytest.approx(balanced_accuracy(y, v))
    assert (est.n, est.n_answers) == (8, 4)
    assert est.kappa[1] <= est.kappa[0] <= est.kappa[2]
    assert est.balanced_accuracy[1] <= est.balanced_accuracy[0] <= est.balanced_accuracy[2]


def test_agreement_rejects_misaligned_input() -> None:
    with pytest.raises(ValueError, match="one of each"):
        vr.agreement([True, False], [True], ["a", "b"])


def test_answer_bootstrap_covers_the_true_balanced_accuracy() -> None:
    """Answers of 1-5 statements sharing an answer-level effect (so statements of an answer are not
    independent): the 95% interval covers the population's balanced accuracy in >= 0.90 of runs."""
    rng = np.random.default_rng(1)
    sens, spec, covered, runs = 0.8, 0.7, 0, 300
    for run in range(runs):
        sizes = rng.integers(1, 6, size=50)
        answers = np.repeat(np.arange(50), sizes)
        shift = rng.normal(0, 0.1, size=50)[answers]  # answer-level: some answers are easier to read
        y = rng.random(len(answers)) < 0.5
        u = rng.random(len(y))
        v = np.where(y, u < np.clip(sens + shift, 0, 1), u > np.clip(spec + shift, 0, 1))
        est = vr.agreement(y, v, answers.astype(str), resamples=400, seed=run)
        covered += est.balanced_accuracy[1] <= (sens + spec) / 2 <= est.balanced_accuracy[2]
    assert covered / runs >= 0.90


def test_fit_chooses_a_cutoff_and_the_rules_veto() -> None:
    data = records()
    model = vr.fit_verdict_model(data, vr.Candidate(("judge_logit", "lexical"), balanced=True))
    assert model.weights["lexical"] > 0 and 0 < model.cutoff < 1
    v = vr.verdicts(model, data)
    assert not any(v[i] for i, r in enumerate(data) if r["absent_terms"])
    assert vr.measure(data, v, 0).balanced_accuracy[0] > 0.7


def test_fit_needs_both_labels() -> None:
    data = [dict(r, label=True) for r in records(6)]
    with pytest.raises(ValueError, match="one class only"):
        vr.fit_verdict_model(data, vr.CANDIDATES[0])


def test_held_out_fits_never_see_what_they_score(monkeypatch: pytest.MonkeyPatch) -> None:
    data = records()
    seen: list[set[str]] = []
    fit = vr.fit_verdict_model

    def spy(train: list[dict[str, Any]], candidate: vr.Candidate, rule: str = "balanced_accuracy") -> Any:
        seen.append({r["answer_id"] for r in train})
        return fit(train, candidate, rule)

    from ragwatch.judges.faithfulness import fit as fit_module  # the fit the benchmark runs is the package's

    monkeypatch.setattr(fit_module, "fit_verdict_model", spy)
    vr.cross_fitted(data, vr.CANDIDATES[0], folds=5)
    assert len(seen) == 5 and all(len(s) < 40 for s in seen)
    assert set.union(*[{a for a in {r["answer_id"] for r in data} if a not in s} for s in seen]) == \
        {r["answer_id"] for r in data}  # every answer was left out of some fit
    seen.clear()
    held = vr.leave_one_system_out(data, vr.CANDIDATES[0])
    assert [{a.split("/")[0] for a in s} for s in seen] == [{"B", "C"}, {"A", "C"}, {"A", "B"}]
    assert [c.split(":")[0] for c in held.chosen] == ["A", "B", "C"]
    assert all(held.scores[i] == -1 for i, r in enumerate(data) if r["absent_terms"])


def test_main_writes_the_table_with_the_command(tmp_path: Path) -> None:
    data = tmp_path / "features.jsonl"
    data.write_text("".join(json.dumps(dict(r, answer_id=None, item_id=r["answer_id"].split("/")[1],
                                            label="supported" if r["label"] else "unsupported")) + "\n"
                            for r in records(30)))
    out = tmp_path / "refit.md"
    assert vr.main(["--data", str(data), "--out", str(out), "--resamples", "50", "--seeds", "1"]) == 0
    text = out.read_text()
    assert text.startswith("    python benchmarks/verdict_refit.py --data")
    assert "previous, A" in text and "shipped now, A" in text
    assert "Leave one system out" in text and "SupportModel(" in text
    assert "ROC AUC" in text and "called unsupported / readers'" in text and "### 7. Cut-off rules" in text


def test_cutoff_rules_choose_what_they_say() -> None:
    """Scores that separate the classes imperfectly: balanced accuracy's cut-off calls more unsupported than
    the readers find; `prevalence` matches the readers; the capped rule never calls more than they do."""
    rng = np.random.default_rng(3)
    y = rng.random(400) < 0.5
    s = np.clip(np.where(y, rng.normal(0.65, 0.15, 400), rng.normal(0.45, 0.15, 400)), 0.001, 0.999)
    s[:20] = -1.0  # vetoed: unsupported at any cut-off
    for rule in vr.CUTOFF_RULES:
        cut = vr.cutoff_by(rule, s, y)
        called = float((s < cut).mean())
        if rule == "prevalence":
            assert called == pytest.approx((~y).mean(), abs=0.01)
        if rule == "balanced_accuracy_capped":
            assert called <= (~y).mean()
            best = max(balanced_accuracy(y, s >= c) for c in np.unique(s) if (s < c).mean() <= (~y).mean())
            assert balanced_accuracy(y, s >= cut) == pytest.approx(best)
        if rule == "kappa":
            assert cohen_kappa(y, s >= cut) >= max(cohen_kappa(y, s >= c) for c in np.linspace(0.05, 0.95, 91)) - 1e-9
    with pytest.raises(ValueError, match="unknown cut-off rule"):
        vr.cutoff_by("median", s, y)


def test_auc_is_the_rank_measure_and_its_interval_covers() -> None:
    """Point: the share of (supported, unsupported) pairs ranked right (ties half); the answer-resampled 95%
    interval covers the population AUC of a binormal model in >= 0.90 of runs."""
    y = np.array([True, True, False, False, True])
    s = np.array([0.9, 0.4, 0.4, 0.1, 0.7])
    est = vr.agreement(y, s >= 0.5, list("aabbc"), resamples=100, scores=s)
    assert est.auc is not None and est.auc[0] == pytest.approx((1 + 1 + 0.5 + 1 + 1 + 1) / 6)
    assert est.false_alarms == pytest.approx(1 / 3)
    rng = np.random.default_rng(5)
    covered, runs = 0, 200
    truth = 0.7602  # P(N(1, 1) > N(0, 1)) = Phi(1 / sqrt 2)
    for run in range(runs):
        answers = np.repeat(np.arange(60), 3)
        y = rng.random(len(answers)) < 0.5
        s = rng.normal(y.astype(float), 1.0)
        est = vr.agreement(y, s > 0.5, answers.astype(str), resamples=300, seed=run, scores=s)
        covered += est.auc[1] <= truth <= est.auc[2]
    assert covered / runs >= 0.90


def test_main_needs_two_systems(tmp_path: Path) -> None:
    data = tmp_path / "features.jsonl"
    data.write_text("".join(json.dumps(dict(r, system="A")) + "\n" for r in records(6)))
    with pytest.raises(SystemExit, match="needs 2\\+"):
        vr.main(["--data", str(data)])


def test_paired_difference_of_identical_verdicts_is_zero_and_sees_a_better_one() -> None:
    data = records()
    y = [r["label"] for r in data]
    answers = [r["answer_id"] for r in data]
    noisy = np.array([lab if i % 3 else not lab for i, lab in enumerate(y)])
    same = vr.paired_difference(y, noisy, noisy, answers, resamples=200)
    assert same["kappa"] == (0.0, 0.0, 0.0) and same["balanced_accuracy"] == (0.0, 0.0, 0.0)
    better = vr.paired_difference(y, noisy, np.array(y), answers, resamples=200)
    assert better["kappa"][1] > 0 and better["balanced_accuracy"][1] > 0
