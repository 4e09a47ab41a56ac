"""Which faithfulness level is closer to what careful readers find, and steadier: measured, cross-fitted.

Input: labelled RAG answer statements with the verifier's features (one JSON record a line: answer_id
or item_id, label, p_judge, lexical, no_claim, absent_terms, ...; optionally system), as
`scripts/refit_faithfulness_calibration.py` ships them. Candidates (`ragwatch.statistics.level`):
the verdict share (today's headline), `pcc` (mean calibrated P(supported), a plain maximum-likelihood
logistic fit), `acc` (Rogan-Gladen: the verdict share corrected by sensitivity and specificity),
`pacc` (the same correction of the mean probability), `em` (calibrated probabilities adjusted to
the run's prevalence) and `blend` (the mean of pcc and pacc). The verdicts are the shipped verifier's:
a class-balanced logistic fit, its cut-off of best balanced accuracy, under the rules, refitted on each
training part.

1. cross-fitted by answer (folds of answers, repeated with other seeds): each method's level of the
   held-out answers against the readers' mean item faithfulness of those answers; bias, mean absolute
   error, RMSE, and how often the method's 95% interval covers the readers' figure (the interval as the
   run prints it: calibration refits, run items and the readers' Bernoulli residual resampled); the
   same per system of the held-out answers (a pooled fit can be biased for one of its systems);
2. prevalence far from the fitting data: each held-out part resampled to 20% and 80% supported
   statements (60 statements a draw, each its own item), error against the draw's own truth, and the
   coverage of the intervals of the first `--interval-draws` draws of each part;
3. with a `system` field naming 2+ systems: fitted on the others, measured on each system in turn,
   the interval carrying the between-system bias measured on the others (leave-one-system-out; with
   one other system it cannot be measured and the interval is [0, 1]) and, for contrast, without it;
4. the whole set, cross-fitted: every answer's level from a model that never saw it, against the
   readers' mean item faithfulness, as the headline would print it;
5. the between-system bias the shipped run would carry for an unseen system (all systems);
6. per scenario and method: RMSE and interval coverage side by side.

Any number of files of any number of systems (the `system` field; else `default`):

    python benchmarks/faithfulness_level.py --data data/judge_dev/rag_statements/features.jsonl \
        data/judge_dev/rag_statements/features_new.jsonl
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

from ragwatch.judges.faithfulness.fit import read_labelled  # noqa: E402
from ragwatch.judges.faithfulness.level import LEVEL_FEATURES, calibration_set, verdict_of  # noqa: E402
from ragwatch.judges.faithfulness.support_model import SupportModel, feature_vector  # noqa: E402
from ragwatch.statistics.level import (  # noqa: E402
    METHODS,
    LevelEstimate,
    Transfer,
    estimate_level,
    fit_logistic,
    item_weights,
    levels,
    predict_logistic,
    system_transfer,
)

VERDICT_FEATURES = ("judge_logit", "lexical")  # the shipped verdict model's inputs
FEATS = [LEVEL_FEATURES]  # the level model's inputs (`--features` changes them for a run)
FEATURE_SETS = (("judge_logit", "lexical"), ("judge_logit", "lexical", "vetoed"),
                ("judge_logit", "lexical", "vetoed", "uncited"), ("judge_logit", "lexical", "vetoed", "missing_terms"),
                ("lexical", "vetoed"))
CANDIDATES = ("verdict_share", *METHODS)


def verdict_model(records: Sequence[dict[str, Any]]) -> SupportModel:
    """The shipped verdicts' model: class-balanced logistic fit, cut-off of best balanced accuracy."""
    from ragwatch.statistics.cutoff import best_threshold

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


def interval(parts: dict[str, Any], test: Sequence[dict[str, Any]], items: Sequence[Any], method: str, *,
             resamples: int, seed: int, transfer: Transfer | None = None) -> LevelEstimate | None:
    """The method's level and interval as a run prints it; None where the method cannot correct."""
    x = np.array([feature_vector(r, FEATS[0]) for r in test])
    v = np.array([verdict_of(r, parts["verdict_model"], None) for r in test])
    try:
        return estimate_level(parts["cal"], x, np.array(items), method=method, verdicts=v, resamples=resamples,
                              seed=seed, transfer=transfer)
    except ValueError:
        return None


class Tally:
    """Errors, interval coverage and widths per candidate, for one scenario."""

    def __init__(self) -> None:
        self.errors: dict[str, list[float]] = {m: [] for m in CANDIDATES}
        self.covered: dict[str, list[bool]] = {m: [] for m in METHODS}
        self.widths: dict[str, list[float]] = {m: [] for m in METHODS}

    def points(self, values: dict[str, float], t: float) -> None:
        for m, value in values.items():
            self.errors[m].append(value - t)

    def interval(self, method: str, est: LevelEstimate | None, t: float) -> None:
        if est is not None:
            self.covered[method].append(est.ci_low <= t <= est.ci_high)
            self.widths[method].append(est.ci_high - est.ci_low)

    def rows(self) -> list[str]:
        return error_row(self.errors, self.covered, self.widths)

    def summary(self) -> dict[str, tuple[float, float | None, int]]:
        """method -> (RMSE, coverage or None, number of intervals)."""
        out = {}
        for m, e in self.errors.items():
            e = np.array([x for x in e if np.isfinite(x)])
            cov = self.covered.get(m) or []
            out[m] = (float(np.sqrt(np.mean(e ** 2))) if len(e) else float("inf"),
                      float(np.mean(cov)) if cov else None, len(cov))
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


SUMMARY: dict[str, Tally] = {}  # scenario -> its tally, for the closing table


def cross_fitted(records: list[dict[str, Any]], *, folds: int, repeats: int, resamples: int,
                 interval_draws: int) -> list[str]:
    overall = Tally()
    per_system: dict[str, Tally] = {s: Tally() for s in sorted({r["system"] for r in records})}
    shifted: dict[float, Tally] = {p: Tally() for p in (0.2, 0.8)}
    rng = np.random.default_rng(0)
    for rep in range(repeats):
        parts_of = answer_folds(records, folds, seed=rep)
        for k, test in enumerate(parts_of):
            train = [r for j, p in enumerate(parts_of) if j != k for r in p]
            parts = fit_parts(train)
            groups = [("all", overall, test)]
            if len(per_system) > 1:
                groups += [(s, per_system[s], [r for r in test if r["system"] == s]) for s in per_system]
            for _name, tally, rows in groups:
                if not rows:
                    continue
                items = [r["answer_id"] for r in rows]
                t = truth(rows, items)
                tally.points(point_levels(parts, rows, items), t)
                for m in METHODS:
                    tally.interval(m, interval(parts, rows, items, m, resamples=resamples, seed=rep * 100 + k), t)
            pos = [r for r in test if r["label"]]
            neg = [r for r in test if not r["label"]]
            if not pos or not neg:
                continue
            for prevalence, tally in shifted.items():
                for d in range(10):
                    n_pos = rng.binomial(60, prevalence)
                    draw = ([pos[i] for i in rng.integers(len(pos), size=n_pos)]
                            + [neg[i] for i in rng.integers(len(neg), size=60 - n_pos)])
                    ids = list(range(len(draw)))
                    t_draw = truth(draw, ids)
                    tally.points(point_levels(parts, draw, ids), t_draw)
                    if d < interval_draws:
                        for m in METHODS:
                            tally.interval(m, interval(parts, draw, ids, m, resamples=resamples, seed=d), t_draw)
    SUMMARY["cross-fitted"] = overall
    if len(per_system) > 1:
        SUMMARY.update({f"cross-fitted, answers of {s}": t for s, t in per_system.items()})
    SUMMARY.update({f"resampled to {p:.0%}": t for p, t in shifted.items()})
    out = [f"### 1. Cross-fitted by answer ({folds} folds x {repeats} seeds; the held-out answers' level against "
           f"their readers' mean item faithfulness; intervals of {resamples} replicates)", "", *overall.rows()]
    if len(per_system) > 1:
        for s, tally in per_system.items():
            out += ["", f"#### 1.{s}: the held-out answers of system {s} only (fitted on all systems' other answers)",
                    "", *tally.rows()]
    for prevalence, tally in shifted.items():
        out += ["", f"### 2. Held-out parts resampled to {prevalence:.0%} supported (60 statements a draw, "
                f"10 draws a part; intervals of the first {interval_draws})", "", *tally.rows()]
    return out


def by_system(records: list[dict[str, Any]], resamples: int) -> list[str]:
    systems = sorted({r["system"] for r in records})
    if len(systems) < 2:
        return ["", "### 3. Fit on the other systems, test on one: needs records of 2+ systems (a `system` field)"]
    out = ["", "### 3. Fitted on the other systems, measured on each (items = its answers; the interval carries "
           "the between-system bias measured on the other systems, as a run of an unseen system would: with one "
           "other system it cannot be measured and the interval is [0, 1])", "",
           "| test system | statements (answers) | readers' mean item faithfulness | "
           + " | ".join(f"{m} [95% interval]" if m in METHODS else m for m in CANDIDATES) + " |",
           "|---|---|---|" + "---|" * len(CANDIDATES)]
    carried, bare = Tally(), Tally()
    notes = []
    for system in systems:
        test = [r for r in records if r["system"] == system]
        train = [r for r in records if r["system"] != system]
        parts = fit_parts(train)
        items = [r["answer_id"] for r in test]
        t = truth(test, items)
        values = point_levels(parts, test, items)
        carried.points(values, t)
        bare.points(values, t)
        cells = []
        for m in CANDIDATES:
            if m not in METHODS:
                cells.append(f"{values[m]:.3f}")
                continue
            transfer = system_transfer(parts["cal"], method=m, resamples=resamples)
            est = interval(parts, test, items, m, resamples=resamples, seed=0, transfer=transfer)
            carried.interval(m, est, t)
            bare.interval(m, interval(parts, test, items, m, resamples=resamples, seed=0), t)
            cells.append("-" if est is None else f"{est.estimate:.3f} [{est.ci_low:.3f}, {est.ci_high:.3f}]")
            if m == "pcc":
                notes.append(f"- {system} left out, pcc's transfer from {sorted({r['system'] for r in train})}: "
                             f"sd {transfer.sd:.3f}, {transfer.df} df ({transfer.note})")
        out.append(f"| {system} | {len(test)} ({len(set(items))}) | {t:.3f} | " + " | ".join(cells) + " |")
    SUMMARY["leave-one-system-out, transfer carried"] = carried
    SUMMARY["leave-one-system-out, as if seen (no transfer)"] = bare
    return [*out, "", *notes]


def shipped_transfer(records: list[dict[str, Any]], resamples: int) -> list[str]:
    """What a run of a system the data does not hold carries, per method (fit on all the data)."""
    parts = fit_parts(records)
    out = ["", "### 5. The between-system bias an unseen system's run carries (all systems; leave-one-system-out)",
           "", "| method | sd | df | error per left-out system | sampling variance per system |",
           "|---|---|---|---|---|"]
    for m in METHODS:
        tr = system_transfer(parts["cal"], method=m, resamples=resamples)
        errs = ", ".join(f"{s} {e:+.3f}" for s, e in tr.errors.items())
        var = ", ".join(f"{s} {v:.4f}" for s, v in tr.sampling_variances.items())
        out.append(f"| {m} | {tr.sd:.3f} | {tr.df} | {errs} | {var} |")
    return out


def residual_check(records: list[dict[str, Any]], folds: int) -> list[str]:
    """Do an answer's statements vary together beyond their features? Cross-fitted residuals Y - P per
    answer: the observed sum of squared answer-mean residuals against what independent labels and
    comonotone labels (the interval's conservative bound) predict."""
    obs, indep, como = [], [], []
    for seed in range(5):
        parts_of = answer_folds(records, folds, seed)
        o = i = c = 0.0
        for k, test in enumerate(parts_of):
            train = [r for j, q in enumerate(parts_of) if j != k for r in q]
            cal = calibration_set(train, features=FEATS[0])
            coef = fit_logistic(cal.x, cal.y)[0]
            for answer in sorted({r["answer_id"] for r in test}):
                rows = [r for r in test if r["answer_id"] == answer]
                p = predict_logistic(coef, np.array([feature_vector(r, FEATS[0]) for r in rows]))[0]
                y = np.array([r["label"] for r in rows], dtype=float)
                o += (y - p).mean() ** 2
                i += (p * (1 - p)).sum() / len(p) ** 2
                c += np.sqrt(p * (1 - p)).mean() ** 2
        obs.append(o)
        indep.append(i)
        como.append(c)
    return ["", "### 7. The readers' residual within answers (cross-fitted, 5 seeds)", "",
            f"sum over answers of the squared mean residual Y - P: observed {np.mean(obs):.2f}; independent labels "
            f"predict {np.mean(indep):.2f}; comonotone labels (rho = 1, the bound) {np.mean(como):.2f}"]


def own_system(records: list[dict[str, Any]], *, folds: int, repeats: int, resamples: int) -> list[str]:
    """A run of a system the calibration holds: the pooled fit against one with the system's own
    intercept (`CalibrationSet.with_system_column`), cross-fitted by answer, per system."""
    systems = sorted({r["system"] for r in records})
    if len(systems) < 2:
        return []
    tallies = {(s, own): Tally() for s in systems for own in (False, True)}
    for rep in range(repeats):  # the same folds as section 1
        parts_of = answer_folds(records, folds, seed=rep)
        for k, test in enumerate(parts_of):
            train = [r for j, p in enumerate(parts_of) if j != k for r in p]
            parts = fit_parts(train)
            for s in systems:
                rows = [r for r in test if r["system"] == s]
                if not rows or s not in parts["cal"].system_names():
                    continue
                items = [r["answer_id"] for r in rows]
                t = truth(rows, items)
                x = np.array([feature_vector(r, FEATS[0]) for r in rows])
                v = np.array([verdict_of(r, parts["verdict_model"], None) for r in rows])
                for own in (False, True):
                    cal = parts["cal"].with_system_column(s) if own else parts["cal"]
                    xr = np.hstack([x, np.ones((len(rows), 1))]) if own else x
                    values = {}
                    for m in METHODS:
                        try:
                            est = estimate_level(cal, xr, np.array(items), method=m, verdicts=v,
                                                 resamples=resamples, seed=rep * 100 + k)
                        except ValueError:
                            est = None
                        values[m] = float("inf") if est is None else est.estimate
                        tallies[(s, own)].interval(m, est, t)
                    tallies[(s, own)].errors.update({m: tallies[(s, own)].errors[m] + [values[m] - t]
                                                     for m in METHODS})
    out = ["", f"### 1b. A system the calibration holds: pooled fit or the system's own intercept (cross-fitted "
           f"by answer, {repeats} seeds, the held-out answers of each system)", "",
           "| system | fit | " + " | ".join(f"{m} bias / RMSE / covers" for m in METHODS) + " |",
           "|---|---|" + "---|" * len(METHODS)]
    for (s, own), tally in tallies.items():
        cells = []
        for m in METHODS:
            e = np.array([x for x in tally.errors[m] if np.isfinite(x)])
            cov = tally.covered[m]
            cells.append(f"{e.mean():+.3f} / {np.sqrt((e ** 2).mean()):.3f} / "
                         f"{np.mean(cov):.2f}" if len(e) and cov else "-")
        out.append(f"| {s} | {'own intercept' if own else 'pooled'} | " + " | ".join(cells) + " |")
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
    parser.add_argument("--interval-draws", type=int, default=2,
                        help="resampled-prevalence draws per part whose interval is computed")
    parser.add_argument("--features", nargs="+", help=f"the level model's inputs (default: {LEVEL_FEATURES})")
    args = parser.parse_args(argv)
    if args.features:
        FEATS[0] = tuple(args.features)
    records = read_labelled(args.data)
    if len({r["answer_id"] for r in records}) < 2 * args.folds:
        sys.exit(f"{len(records)} labelled statements of {len({r['answer_id'] for r in records})} answers: too few "
                 f"for {args.folds} folds of answers")
    print(f"{len(records)} labelled statements, {len({r['answer_id'] for r in records})} answers, systems: "
          f"{sorted({r['system'] for r in records})}; level features {FEATS[0]}\n")
    lines = feature_sets(records, args.folds)
    lines += cross_fitted(records, folds=args.folds, repeats=args.repeats, resamples=args.resamples,
                          interval_draws=args.interval_draws)
    lines += own_system(records, folds=args.folds, repeats=min(args.repeats, 5), resamples=args.resamples)
    lines += by_system(records, args.resamples)
    lines += whole_set(records, args.folds)
    lines += shipped_transfer(records, args.resamples)
    lines += ["", "### 6. Per scenario: RMSE (for one unseen system its absolute error) / 95% interval coverage "
              "(number of intervals)", "",
              "| scenario | " + " | ".join(CANDIDATES) + " |", "|---|" + "---|" * len(CANDIDATES)]
    for scenario, tally in SUMMARY.items():
        cells = []
        for rmse, cov, n in tally.summary().values():
            cells.append(f"{rmse:.3f}" + ("" if cov is None else f" / {cov:.2f} ({n})"))
        lines.append(f"| {scenario} | " + " | ".join(cells) + " |")
    means = {m: np.mean([t.summary()[m][0] for t in SUMMARY.values()]) for m in CANDIDATES}
    lines.append("| mean RMSE | " + " | ".join(f"{v:.3f}" for v in means.values()) + " |")
    lines += residual_check(records, args.folds)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
