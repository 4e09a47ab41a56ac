"""Do the shipped faithfulness verdicts agree with careful readers, and would a refit agree better, held out?

From feature files only (no model is run: the judge's P(yes) and the model-free features of every
statement were recorded by `benchmarks/statement_features.py`), labelled statements of several
systems under test (a `system` field; disagreements of the two readers carry no label and are
dropped):

1. the shipped support model as it is (`ragwatch/judges/faithfulness/calibrations.py`) and the one
   shipped before it (fitted on S0 only), their verdicts under the verifier's rules, per system:
   Cohen's kappa and balanced accuracy against the readers;
2. candidate verdict models (logistic on the judge's logit and lexical support, plus the model-free
   features uncited / missing_terms / vetoed; class-balanced or plain fit; the cut-off of best
   balanced accuracy of the verdicts under the rules, chosen on the fitting data only), held out two
   ways: cross-fitted by answer over all systems (5 folds: every statement's verdict from a model
   that never saw its answer) and leave-one-system-out (fitted on the other systems, measured on the
   one left out; what an unseen system gets), with the candidate also chosen on the fitting systems
   only; on the systems the previous model never saw, that held-out refit minus the previous model.

Every interval is a 95% bootstrap over answers (the statements of an answer resampled together).
Writes the tables to `--out` with the command on top.

    python benchmarks/verdict_refit.py --data data/judge_dev/rag_statements/features.jsonl \
        data/judge_dev/rag_statements/features_new.jsonl --out benchmarks/results/verdict_refit.md
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ragwatch.judges.faithfulness.calibrations import CALIBRATIONS
from ragwatch.judges.faithfulness.fit import (  # the fit itself: this benchmark compares its choices
    CANDIDATES,
    CUTOFF_RULES,
    RESAMPLES,
    SHIPPED_RULE,
    Candidate,
    HeldOut,
    balanced_accuracy_of,
    choose,
    cross_fitted,
    cutoff_by,
    fit_verdict_model,
    interval,
    kappa_of,
    leave_one_system_out,
    read_labelled,
    replicate_counts,
    support_scores,
    verdicts,
)
from ragwatch.judges.faithfulness.support_model import SupportModel

__all__ = ["CANDIDATES", "CUTOFF_RULES", "Candidate", "HeldOut", "choose", "cross_fitted", "cutoff_by",
           "fit_verdict_model", "leave_one_system_out", "support_scores", "verdicts"]

# The support model shipped until 2026-11-26, fitted on the 72 statements of S0 (the default) only: the
# baseline an unseen system is compared on (S1, S2 were never part of its fit)
PREVIOUS = SupportModel(intercept=-1.5374, weights={"judge_logit": 0.1412, "lexical": 2.1731}, cutoff=0.4367)
PREVIOUS_FITTED_ON = {"S0", "default"}
@dataclass(frozen=True)
class Agreement:
    """Kappa and balanced accuracy of verdicts against labels, each with its 95% interval over answers, and
    the ROC AUC of the scores behind them when given."""

    kappa: tuple[float, float, float]
    balanced_accuracy: tuple[float, float, float]
    n: int
    n_answers: int
    share: float  # verdict share (supported)
    truth: float  # readers' share of supported statements
    auc: tuple[float, float, float] | None = None
    false_alarms: float = float("nan")  # share of the readers' supported statements called unsupported

    def cells(self) -> str:
        k, b = self.kappa, self.balanced_accuracy
        auc = "-" if self.auc is None else f"{self.auc[0]:.2f} [{self.auc[1]:.2f}, {self.auc[2]:.2f}]"
        return (f"{k[0]:.2f} [{k[1]:.2f}, {k[2]:.2f}] | {b[0]:.2f} [{b[1]:.2f}, {b[2]:.2f}] | {auc} | "
                f"{self.n} ({self.n_answers}) | {1 - self.share:.2f} / {1 - self.truth:.2f} | {self.false_alarms:.2f}")


def agreement(labels: Sequence[bool], predicted: Sequence[bool], answers: Sequence[str], *,
              resamples: int = RESAMPLES, seed: int = 0, scores: Sequence[float] | None = None) -> Agreement:
    """Kappa and balanced accuracy (and with `scores`, ROC AUC) with percentile bootstrap intervals that
    resample answers (the statements of an answer together); replicates where a measure is undefined are
    skipped."""
    y, v = np.asarray(labels, dtype=bool), np.asarray(predicted, dtype=bool)
    counts, n_groups = replicate_counts(y, [v], answers, resamples, seed)
    kappa, bal = kappa_of(counts[0]), balanced_accuracy_of(counts[0])
    auc = None if scores is None else interval(_auc_replicates(y, np.asarray(scores, float), answers, resamples, seed))
    return Agreement(kappa=interval(kappa), balanced_accuracy=interval(bal), n=len(y), n_answers=n_groups,
                     share=float(v.mean()), truth=float(y.mean()), auc=auc,
                     false_alarms=float((~v[y]).mean()) if y.any() else float("nan"))


def _auc_replicates(y: np.ndarray, scores: np.ndarray, answers: Sequence[str], resamples: int,
                    seed: int) -> np.ndarray:
    """ROC AUC (ties count half) of all statements, then of each replicate drawing answers as
    `_replicate_counts` does (same seed, same draws); NaN where a replicate lacks a class."""
    if len(scores) != len(y):
        raise ValueError(f"{len(y)} labels but {len(scores)} scores: pass one of each a statement")
    _, group = np.unique(np.asarray(answers), return_inverse=True)
    n_groups = int(group.max()) + 1
    drawn = np.random.default_rng(seed).multinomial(n_groups, np.full(n_groups, 1 / n_groups), size=resamples)
    weights = np.vstack([np.ones(len(y)), drawn[:, group]])
    pos, neg = scores[y], scores[~y]
    wins = (pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])
    w_pos, w_neg = weights[:, y], weights[:, ~y]
    with np.errstate(divide="ignore", invalid="ignore"):
        return ((w_pos @ wins) * w_neg).sum(axis=1) / (w_pos.sum(axis=1) * w_neg.sum(axis=1))


def paired_difference(labels: Sequence[bool], first: Sequence[bool], second: Sequence[bool], answers: Sequence[str],
                      *, resamples: int = RESAMPLES, seed: int = 0) -> dict[str, tuple[float, float, float]]:
    """`second` minus `first` in kappa and balanced accuracy on the same statements, with a paired
    95% interval (both scored on the same resampled answers)."""
    y = np.asarray(labels, dtype=bool)
    counts, _ = replicate_counts(y, [np.asarray(first, bool), np.asarray(second, bool)], answers, resamples, seed)
    return {"kappa": interval(kappa_of(counts[1]) - kappa_of(counts[0])),
            "balanced_accuracy": interval(balanced_accuracy_of(counts[1]) - balanced_accuracy_of(counts[0]))}


def measure(records: Sequence[dict[str, Any]], predicted: np.ndarray, resamples: int,
            scores: np.ndarray | None = None) -> Agreement:
    return agreement([r["label"] for r in records], predicted, [r["answer_id"] for r in records], resamples=resamples,
                     scores=scores)


HEADER = ["| verdicts | kappa [95%] | balanced accuracy [95%] | ROC AUC [95%] | statements (answers) "
          "| called unsupported / readers' | supported called unsupported |", "|---|---|---|---|---|---|---|"]


def per_system(name: str, records: list[dict[str, Any]], predicted: np.ndarray, resamples: int,
               scores: np.ndarray | None = None) -> list[str]:
    """One row for all statements and one per system."""
    rows = [f"| {name}, all | {measure(records, predicted, resamples, scores).cells()} |"]
    for system in sorted({r["system"] for r in records}):
        keep = np.array([r["system"] == system for r in records])
        part = [r for r, k in zip(records, keep, strict=True) if k]
        rows.append(f"| {name}, {system} | "
                    f"{measure(part, predicted[keep], resamples, None if scores is None else scores[keep]).cells()} |")
    return rows


def cutoff_rules(records: list[dict[str, Any]], candidate: Candidate, resamples: int) -> list[str]:
    """The shipped candidate under each cut-off rule, held out by system, and the cut-off each gives on all."""
    lines = ["", f"### 7. Cut-off rules for the shipped inputs ({candidate.name}), held out by system (the weights "
             "and the cut-off fitted on the other systems, the cut-off by the rule; `all` pools the three held-out "
             "parts); the cut-off each rule gives fitted on all", "", *HEADER]
    cutoffs, held = [], {}
    for rule in CUTOFF_RULES:
        held[rule] = leave_one_system_out(records, candidate, rule).verdicts
        scores = leave_one_system_out(records, candidate, rule).scores if rule == CUTOFF_RULES[0] else None
        lines += per_system(f"{rule}{' (shipped)' if rule == SHIPPED_RULE else ''}", records, held[rule],
                            resamples, scores)
        cutoffs.append(f"{rule}: {fit_verdict_model(records, candidate, rule).cutoff:.4f}")
    labels, answers = [r["label"] for r in records], [r["answer_id"] for r in records]
    base = CUTOFF_RULES[0]
    lines += ["", f"Each rule minus `{base}`, held out by system, paired over answers (ROC AUC does not depend on "
              "the cut-off: the same weights under every rule)", "",
              "| rule | kappa difference [95%] | balanced accuracy difference [95%] |", "|---|---|---|"]
    for rule in CUTOFF_RULES[1:]:
        d = paired_difference(labels, held[base], held[rule], answers, resamples=resamples)
        k, b = d["kappa"], d["balanced_accuracy"]
        lines.append(f"| {rule} | {k[0]:+.3f} [{k[1]:+.3f}, {k[2]:+.3f}] | {b[0]:+.3f} [{b[1]:+.3f}, {b[2]:+.3f}] |")
    return [*lines, "", "Cut-off fitted on all: " + "; ".join(cutoffs)]


def report(records: list[dict[str, Any]], *, folds: int, resamples: int, seeds: int,
           rule: str = SHIPPED_RULE) -> tuple[list[str], Candidate]:
    """The tables (every fit's cut-off by `rule`), and the candidate chosen on all by best cross-fitted kappa."""
    systems = sorted({r["system"] for r in records})
    shipped = CALIBRATIONS[0]
    lines = [f"{len(records)} labelled statements, {len({r['answer_id'] for r in records})} answers; "
             + ", ".join(f"{s}: {sum(r['system'] == s for r in records)}" for s in systems), "",
             f"### 1. Support models as they are: the one shipped until 2026-11-26 (`previous`, fitted on S0's 72: "
             f"{PREVIOUS.weights}, intercept {PREVIOUS.intercept}, cut-off {PREVIOUS.cutoff}) and the one shipped "
             f"now ({shipped.model} / {shipped.prompt_version}: {shipped.support_model.weights}, intercept "
             f"{shipped.support_model.intercept}, cut-off {shipped.support_model.cutoff}; in-sample wherever it "
             "was fitted)", "", *HEADER,
             *per_system("previous", records, verdicts(PREVIOUS, records), resamples,
                         support_scores(PREVIOUS, records)),
             *per_system("shipped now", records, verdicts(shipped.support_model, records), resamples,
                         support_scores(shipped.support_model, records))]
    loso_rows, cf_rows, scores = [], [], {}
    for cand in CANDIDATES:
        held = leave_one_system_out(records, cand, rule)
        loso = held.verdicts
        loso_rows += per_system(cand.name, records, loso, resamples, held.scores)
        per = [measure([r for r in records if r["system"] == s],
                       loso[np.array([r["system"] == s for r in records])], 0) for s in systems]
        pooled = measure(records, loso, 0)
        scores[cand] = (pooled.kappa[0], pooled.balanced_accuracy[0], min(a.kappa[0] for a in per),
                        min(a.balanced_accuracy[0] for a in per))
        fitted = [cross_fitted(records, cand, folds=folds, seed=s, rule=rule) for s in range(seeds)]
        cf = [measure(records, v, 0) for v in fitted]
        cf_rows.append(f"| {cand.name} | {np.mean([a.kappa[0] for a in cf]):.3f} | "
                       f"{np.mean([a.balanced_accuracy[0] for a in cf]):.3f} | "
                       f"{measure(records, fitted[0], resamples).cells()} |")
    best = max(CANDIDATES, key=lambda c: (scores[c][0], scores[c][1]))
    held = leave_one_system_out(records, None, rule)
    nested = held.verdicts
    loso_rows += per_system("candidate chosen on the fitting systems", records, nested, resamples, held.scores)
    loso_rows.append(f"| (chosen: {'; '.join(held.chosen)}) | | | | | | |")
    lines += ["", f"Every fit's cut-off by the rule `{rule}` (section 7 compares the rules).", "",
              f"### 2. Leave one system out (fitted on the other {len(systems) - 1}, measured on the one left out; "
              "`all` pools the three held-out parts)", "", *HEADER, *loso_rows,
              "", "### 3. Leave one system out, summary: pooled and the worst unseen system", "",
              "| candidate | pooled kappa | pooled balanced accuracy | worst system's kappa "
              "| worst system's bal. acc. |",
              "|---|---|---|---|---|",
              *[f"| {c.name}{' **(best)**' if c == best else ''} | {s[0]:.3f} | {s[1]:.3f} | {s[2]:.3f} | {s[3]:.3f} |"
                for c, s in scores.items()],
              "", f"### 4. Cross-fitted by answer over all systems ({folds} folds; mean over {seeds} fold seeds, "
              "then seed 0 with 95% intervals)", "",
              "| candidate | mean kappa | mean bal. acc. | seed 0: kappa [95%] | balanced accuracy [95%] | ROC AUC "
              "| statements (answers) | called unsupported / readers' | supported called unsupported |",
              "|---|---|---|---|---|---|---|---|---|", *cf_rows]
    unseen = [i for i, r in enumerate(records) if r["system"] not in PREVIOUS_FITTED_ON]
    if unseen:
        lines += ["", *unseen_comparison([records[i] for i in unseen], PREVIOUS, nested[unseen], resamples)]
    final = choose(records, rule)
    model = fit_verdict_model(records, final, rule)
    lines += ["", f"### 6. The candidate chosen the same way on all {len(records)} (best cross-fitted kappa: "
              f"{final.name}; leave-one-system-out best: {best.name}), fitted on all", "",
              f"`SupportModel(intercept={model.intercept:.4f}, weights="
              + "{" + ", ".join(f'"{k}": {v:.4f}' for k, v in model.weights.items()) + "}"
              + f", cutoff={model.cutoff:.4f})`", *cutoff_rules(records, final, resamples)]
    return lines, final


def unseen_comparison(part: list[dict[str, Any]], previous: SupportModel, refit: np.ndarray,
                      resamples: int) -> list[str]:
    """The held-out refit minus the previous model on systems that model never saw, paired by answer."""
    old = verdicts(previous, part)
    diff = paired_difference([r["label"] for r in part], old, refit, [r["answer_id"] for r in part],
                             resamples=resamples)
    k, b = diff["kappa"], diff["balanced_accuracy"]
    return [f"### 5. On the systems the previous model never saw ({', '.join(sorted({r['system'] for r in part}))}): "
            "the refit chosen on the fitting systems minus the previous model, paired over answers", "", *HEADER,
            f"| previous | {measure(part, old, resamples).cells()} |",
            f"| refit, system left out | {measure(part, refit, resamples).cells()} |",
            f"| difference | {k[0]:+.3f} [{k[1]:+.3f}, {k[2]:+.3f}] | {b[0]:+.3f} [{b[1]:+.3f}, {b[2]:+.3f}] | | | | |"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, nargs="+", required=True,
                        help="feature files of labelled statements (statement_features.py output with a label)")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seeds", type=int, default=5, help="fold seeds of the cross-fitting")
    parser.add_argument("--resamples", type=int, default=RESAMPLES, help="bootstrap replicates per interval")
    parser.add_argument("--rule", choices=CUTOFF_RULES, default=SHIPPED_RULE,
                        help="how every fit's cut-off is chosen on its fitting data (section 7 compares them all)")
    parser.add_argument("--out", type=Path, help="also write the tables here (markdown)")
    args = parser.parse_args(argv)
    records = read_labelled(args.data)
    systems = {r["system"] for r in records}
    if len(systems) < 2:
        sys.exit(f"records of {len(systems)} system(s) {sorted(systems)}: leaving one system out needs 2+; "
                 "pass feature files with a `system` field naming each system under test")
    lines, _ = report(records, folds=args.folds, resamples=args.resamples, seeds=args.seeds, rule=args.rule)
    command = "python benchmarks/verdict_refit.py " + shlex.join(sys.argv[1:] if argv is None else argv)
    text = "\n".join([f"    {command}", "", *lines]) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
