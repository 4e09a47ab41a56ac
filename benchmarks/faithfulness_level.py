"""Which faithfulness level is closer to what careful readers find, and steadier: measured, cross-fitted.

Input: labelled RAG answer statements with the verifier's features (one JSON record a line: answer_id
or item_id, label, p_judge, lexical, no_claim, absent_terms, ...; optionally system), as
`scripts/refit_faithfulness_calibration.py` ships them. Candidates (`ragwatch.statistics.level`):
the verdict share (today's headline), `pcc` (mean calibrated P(supported), a plain maximum-likelihood
logistic fit), `acc` (Rogan-Gladen: the verdict share corrected by sensitivity and specificity),
`pacc` (the same correction of the mean probability) and `em` (calibrated probabilities adjusted to
the run's prevalence). The verdicts are the shipped verifier's: a class-balanced logistic fit, its
cut-off of best balanced accuracy, under the rules, refitted on each training part.

1. cross-fitted by answer (folds of answers, repeated with other seeds): each method's level of the
   held-out answers against the readers' mean item faithfulness of those answers; bias, mean absolute
   error, RMSE, and how often the method's 95% interval (run items and calibration refits resampled)
   covers the readers' figure;
2. prevalence far from the fitting data: each held-out part resampled to 20% and 80% supported
   statements (60 statements a draw, each its own item), error against the draw's own truth;
3. with a `system` field naming 2+ systems: fitted on the others, measured on each system in turn;
4. the whole set, cross-fitted: every answer's level from a model that never saw it, against the
   readers' mean item faithfulness, as the headline would print it.

    python benchmarks/faithfulness_level.py --data ragwatch/judges/faithfulness/calibration_data/*.jsonl
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ragwatch.judges.faithfulness.level import LEVEL_FEATURES, calibration_set, verdict_of  # noqa: E402
from ragwatch.judges.faithfulness.support_model import SupportModel, feature_vector  # noqa: E402
from ragwatch.statistics.level import (  # noqa: E402
    METHODS,
    estimate_level,
    fit_logistic,
    item_weights,
    levels,
    predict_logistic,
)

VERDICT_FEATURES = ("judge_logit", "lexical")  # the shipped verdict model's inputs
FEATS = [LEVEL_FEATURES]  # the level model's inputs (`--features` changes them for a run)
FEATURE_SETS = (("judge_logit", "lexical"), ("judge_logit", "lexical", "vetoed"),
                ("judge_logit", "lexical", "vetoed", "uncited"), ("judge_logit", "lexical", "vetoed", "missing_terms"),
                ("lexical", "vetoed"))
CANDIDATES = ("verdict_share", *METHODS)


def load_records(paths: Sequence[Path]) -> list[dict[str, Any]]:
    """Records with a reference label, in one shape (answer_id, label: bool, system, raw features)."""
    out = []
    for path in paths:
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            r = json.loads(line)
            r = {**r.get("features", {}), **{k: v for k, v in r.items() if k != "features"}}
            label = r.get("label")
            if isinstance(label, str):
                if label not in ("supported", "unsupported"):
                    continue
                label = label == "supported"
            if label is None:
                continue
            system = str(r.get("system") or "default")
            answer = r.get("answer_id") or f"{system}/{r['item_id']}"
            out.append({**r, "label": bool(label), "answer_id": str(answer), "system": system})
    return out


def verdict_model(records: Sequence[dict[str, Any]]) -> SupportModel:
    """The shipped verdicts' model: class-balanced logistic fit, cut-off of best balanced accuracy."""
    from ragwatch.calibration.threshold import best_threshold

    x = np.array([feature_vector(r, VERDICT_FEATURES) for r in records])
    y = np.array([r["label"] for r in records])
    w = np.where(y, len(y) / (2 * y.sum()), len(y) / (2 * (~y).sum()))
    coef = fit_logistic(x, y, w)[0]
    weights = dict(zip(VERDICT_FEATURES, map(float, coef[1:]), strict=True))
    model = SupportModel(intercept=float(coef[0]), weights=weights)
    cutoff, _ = best_threshold([model.predict(r) for r in records], [r["label"] for r in records])
    return model.model_copy(update={"cutoff": float(cutoff)})


def fit_parts(train: Sequence[dict[str, Any]]) -> dict[str, Any]:
    vm = verdict_model(train)
    cal = calibration_set(train, vm, features=FEATS[0])
    return {"verdict_model": vm, "cal": cal, "coef": fit_logistic(cal.x, cal.y)[0]}


def point_levels(parts: dict[str, Any], test: Sequence[dict[str, Any]], items: Sequence[Any]) -> dict[str, float]:
    """Every candidate's level of `test` (statements of `items`) from a fit on other answers."""
    cal, coef = parts["cal"], parts["coef"]
    x = np.array([feature_vector(r, FEATS[0]) for r in test])
    v = np.array([verdict_of(r, parts["verdict_model"], None) for r in test], dtype=float)
    w = item_weights(np.asarray(items))
    out = {"verdict_share": float(w[0] @ v)}
    for m in METHODS:
        out[m] = float(levels(m, predict_logistic(coef, x), w, p_cal=predict_logistic(coef, cal.x), y_cal=cal.y,
                              w_cal=np.ones((1, len(cal.y))), v_run=v, v_cal=cal.verdicts)[0])
    return out


def truth(test: Sequence[dict[str, Any]], items: Sequence[Any]) -> float:
    return float(item_weights(np.asarray(items))[0] @ np.array([r["label"] for r in test], dtype=float))


def answer_folds(records: Sequence[dict[str, Any]], n_folds: int, seed: int) -> list[list[dict[str, Any]]]:
    answers = sorted({r["answer_id"] for r in records})
    random.Random(seed).shuffle(answers)
    fold_of = {a: i % n_folds for i, a in enumerate(answers)}
    return [[r for r in records if fold_of[r["answer_id"]] == k] for k in range(n_folds)]


def error_row(errors: dict[str, list[float]], covered: dict[str, list[bool]] | None = None,
              widths: dict[str, list[float]] | None = None) -> list[str]:
    lines = ["| method | bias | MAE | RMSE | SD of error | 95% interval covers | mean width |",
             "|---|---|---|---|---|---|---|"]
    for m in CANDIDATES:
        e = np.array([x for x in errors[m] if np.isfinite(x)])
        cov = covered.get(m) if covered else None
        wid = widths.get(m) if widths else None
        lines.append(f"| {m} | {e.mean():+.3f} | {np.abs(e).mean():.3f} | {np.sqrt((e ** 2).mean()):.3f} | "
                     f"{e.std():.3f} | {f'{np.mean(cov):.2f} ({len(cov)})' if cov else '-'} | "
                     f"{f'{np.mean(wid):.3f}' if wid else '-'} |")
    return lines


SUMMARY: dict[str, dict[str, float]] = {}  # scenario -> method -> RMSE, for the closing table


def _rmse(errors: dict[str, list[float]]) -> dict[str, float]:
    return {m: float(np.sqrt(np.nanmean(np.square(e)))) for m, e in errors.items()}


def cross_fitted(records: list[dict[str, Any]], *, folds: int, repeats: int, resamples: int) -> list[str]:
    errors: dict[str, list[float]] = {m: [] for m in CANDIDATES}
    covered: dict[str, list[bool]] = {m: [] for m in METHODS}
    widths: dict[str, list[float]] = {m: [] for m in METHODS}
    shifted: dict[float, dict[str, list[float]]] = {p: {m: [] for m in CANDIDATES} for p in (0.2, 0.8)}
    rng = np.random.default_rng(0)
    for rep in range(repeats):
        parts_of = answer_folds(records, folds, seed=rep)
        for k, test in enumerate(parts_of):
            train = [r for j, p in enumerate(parts_of) if j != k for r in p]
            parts = fit_parts(train)
            items = [r["answer_id"] for r in test]
            t = truth(test, items)
            for m, value in point_levels(parts, test, items).items():
                errors[m].append(value - t)
            x = np.array([feature_vector(r, FEATS[0]) for r in test])
            v = np.array([verdict_of(r, parts["verdict_model"], None) for r in test])
            for m in METHODS:
                try:
                    est = estimate_level(parts["cal"], x, np.array(items), method=m, verdicts=v,
                                         resamples=resamples, seed=rep * 100 + k)
                except ValueError:
                    continue
                covered[m].append(est.ci_low <= t <= est.ci_high)
                widths[m].append(est.ci_high - est.ci_low)
            pos = [r for r in test if r["label"]]
            neg = [r for r in test if not r["label"]]
            if not pos or not neg:
                continue
            for prevalence, errs in shifted.items():
                for _ in range(10):
                    n_pos = rng.binomial(60, prevalence)
                    draw = ([pos[i] for i in rng.integers(len(pos), size=n_pos)]
                            + [neg[i] for i in rng.integers(len(neg), size=60 - n_pos)])
                    ids = list(range(len(draw)))
                    t_draw = truth(draw, ids)
                    for m, value in point_levels(parts, draw, ids).items():
                        errs[m].append(value - t_draw)
    SUMMARY["cross-fitted"] = _rmse(errors)
    SUMMARY.update({f"resampled to {p:.0%}": _rmse(e) for p, e in shifted.items()})
    out = [f"### 1. Cross-fitted by answer ({folds} folds x {repeats} seeds; the held-out answers' level against "
           f"their readers' mean item faithfulness; intervals of {resamples} replicates)", "",
           *error_row(errors, covered, widths)]
    for prevalence, errs in shifted.items():
        out += ["", f"### 2. Held-out parts resampled to {prevalence:.0%} supported (60 statements a draw, "
                f"10 draws a part)", "", *error_row(errs)]
    return out


def by_system(records: list[dict[str, Any]], resamples: int) -> list[str]:
    systems = sorted({r["system"] for r in records})
    if len(systems) < 2:
        return ["", "### 3. Fit on the other systems, test on one: needs records of 2+ systems (a `system` field)"]
    out = ["", "### 3. Fitted on the other systems, measured on each (items = its answers)", "",
           "| test system | statements (answers) | readers' mean item faithfulness | "
           + " | ".join(f"{m} [95% interval]" if m in METHODS else m for m in CANDIDATES) + " |",
           "|---|---|---|" + "---|" * len(CANDIDATES)]
    for system in systems:
        test = [r for r in records if r["system"] == system]
        train = [r for r in records if r["system"] != system]
        parts = fit_parts(train)
        items = [r["answer_id"] for r in test]
        values = point_levels(parts, test, items)
        x = np.array([feature_vector(r, FEATS[0]) for r in test])
        v = np.array([verdict_of(r, parts["verdict_model"], None) for r in test])
        cells = []
        for m in CANDIDATES:
            if m not in METHODS:
                cells.append(f"{values[m]:.3f}")
                continue
            try:
                est = estimate_level(parts["cal"], x, np.array(items), method=m, verdicts=v, resamples=resamples)
                cells.append(f"{est.estimate:.3f} [{est.ci_low:.3f}, {est.ci_high:.3f}]")
            except ValueError:
                cells.append("-")
        SUMMARY[f"system {system} unseen"] = {m: abs(values[m] - truth(test, items)) for m in CANDIDATES}
        out.append(f"| {system} | {len(test)} ({len(set(items))}) | {truth(test, items):.3f} | "
                   + " | ".join(cells) + " |")
    return out


def whole_set(records: list[dict[str, Any]], folds: int) -> list[str]:
    """Each fold of answers estimated by a fit without it, the folds' levels weighted by their answers:
    one level over all answers, as the headline would print it."""
    values: dict[str, list[float]] = {m: [] for m in CANDIDATES}
    n_answers = len({r["answer_id"] for r in records})
    for seed in range(5):
        parts_of = answer_folds(records, folds, seed=seed)
        total = dict.fromkeys(CANDIDATES, 0.0)
        for k, test in enumerate(parts_of):
            train = [r for j, p in enumerate(parts_of) if j != k for r in p]
            items = [r["answer_id"] for r in test]
            share = len(set(items)) / n_answers
            for m, value in point_levels(fit_parts(train), test, items).items():
                total[m] += share * value
        for m in CANDIDATES:
            values[m].append(total[m])
    items = [r["answer_id"] for r in records]
    line = ", ".join(f"{m} {np.mean(v):.3f}" for m, v in values.items())
    return ["", f"### 4. The whole set, each fold of answers estimated by a fit without it ({folds} folds, 5 seeds)",
            "", f"readers' mean item faithfulness {truth(records, items):.3f} over {n_answers} answers "
            f"({len(records)} statements, {np.mean([r['label'] for r in records]):.0%} supported); {line}"]


def feature_sets(records: list[dict[str, Any]], folds: int) -> list[str]:
    """How well each feature set's calibration model predicts held-out statements (cross-fitted by answer)."""
    out = ["### 0. The level model's inputs: held-out log loss and Brier score (cross-fitted by answer, 5 seeds)", "",
           "| features | log loss | Brier | mean P on supported / unsupported |", "|---|---|---|---|"]
    y = np.array([r["label"] for r in records], dtype=float)
    base = float(np.mean(y))
    out.append(f"| none (the prevalence) | {-np.mean(y * np.log(base) + (1 - y) * np.log(1 - base)):.4f} | "
               f"{np.mean((y - base) ** 2):.4f} | - |")
    for feats in FEATURE_SETS:
        losses, briers, sep = [], [], []
        for seed in range(5):
            p = np.zeros(len(records))
            index = {id(r): i for i, r in enumerate(records)}
            for k, test in enumerate(parts := answer_folds(records, folds, seed)):
                train = [r for j, q in enumerate(parts) if j != k for r in q]
                cal = calibration_set(train, features=feats)
                coef = fit_logistic(cal.x, cal.y)[0]
                x = np.array([feature_vector(r, feats) for r in test])
                p[[index[id(r)] for r in test]] = predict_logistic(coef, x)[0]
            p = np.clip(p, 1e-6, 1 - 1e-6)
            losses.append(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))
            briers.append(np.mean((y - p) ** 2))
            sep.append((p[y == 1].mean(), p[y == 0].mean()))
        s1, s0 = np.mean(sep, axis=0)
        out.append(f"| {', '.join(feats)} | {np.mean(losses):.4f} | {np.mean(briers):.4f} | {s1:.3f} / {s0:.3f} |")
    return [*out, ""]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, nargs="+", required=True, help="labelled statements with features")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=10, help="cross-fitting seeds")
    parser.add_argument("--resamples", type=int, default=300, help="bootstrap replicates per interval")
    parser.add_argument("--features", nargs="+", help=f"the level model's inputs (default: {LEVEL_FEATURES})")
    args = parser.parse_args(argv)
    if args.features:
        FEATS[0] = tuple(args.features)
    records = load_records(args.data)
    if len({r["answer_id"] for r in records}) < 2 * args.folds:
        sys.exit(f"{len(records)} labelled statements of {len({r['answer_id'] for r in records})} answers: too few "
                 f"for {args.folds} folds of answers")
    print(f"{len(records)} labelled statements, {len({r['answer_id'] for r in records})} answers, systems: "
          f"{sorted({r['system'] for r in records})}; level features {FEATS[0]}\n")
    lines = feature_sets(records, args.folds)
    lines += cross_fitted(records, folds=args.folds, repeats=args.repeats, resamples=args.resamples)
    lines += by_system(records, args.resamples)
    lines += whole_set(records, args.folds)
    lines += ["", "### 5. Error per scenario (RMSE; for an unseen system its absolute error) and their mean", "",
              "| scenario | " + " | ".join(CANDIDATES) + " |", "|---|" + "---|" * len(CANDIDATES)]
    lines += [f"| {s} | " + " | ".join(f"{e[m]:.3f}" for m in CANDIDATES) + " |" for s, e in SUMMARY.items()]
    lines.append("| mean | " + " | ".join(f"{np.mean([e[m] for e in SUMMARY.values()]):.3f}" for m in CANDIDATES)
                 + " |")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
