"""The shipped verdicts' agreement with careful readers, held out by system and by corpus.

The calibration's own figure (`run.py calibrate-fit`) scores each system by a fit that never saw it. A
new user's documents are a corpus the fit never saw either, so this also leaves one corpus out at a
time: every statement of a corpus is scored by a support model (inputs chosen and fitted, cut-off
chosen) on the other corpora's statements only. Per left-out group and pooled: balanced accuracy and
Cohen's kappa of the verdicts (95% bootstrap over answers), ROC AUC of P(supported), and the readers'
mean item faithfulness beside the held-out verdict model's mean P(supported) of the same items (a
rough view of the level, which has its own model: `benchmarks/faithfulness_level.py`).

One reading of each statement text is kept (`fit.distinct_statements`, the shipped verdict model's systems
first, then the files in the order given: list planted sets last, their untouched statements are copies).

    python benchmarks/held_out_agreement.py --features F1.jsonl F2.jsonl ... --labels L.jsonl \
        --corpus S0,S1,S2,S3,P=zenml --corpus S4,S5,P2=python --out benchmarks/results/held_out_agreement.md
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from ragwatch.judges.faithfulness.calibrations import CALIBRATIONS, FaithfulnessCalibration
from ragwatch.judges.faithfulness.fit import (
    SHIPPED_RULE,
    balanced_accuracy_of,
    distinct_statements,
    interval,
    kappa_of,
    leave_one_system_out,
    merge,
    read_jsonl,
    read_labelled_rows,
    replicate_counts,
    unseen_agreement,
)
from ragwatch.judges.faithfulness.level import read_records
from ragwatch.statistics.agreement import roc_auc

RESAMPLES = 1000
ONE_CLASS = "undefined: the readers give one label"  # e.g. a planted set, once its copies are left out


def corpus_map(specs: list[str]) -> dict[str, str]:
    """`S0,S1=zenml` ... -> system -> corpus."""
    out: dict[str, str] = {}
    for spec in specs:
        systems, _, corpus = spec.partition("=")
        if not corpus:
            raise SystemExit(f"--corpus takes SYSTEMS=NAME (e.g. S0,S1=zenml), got {spec!r}")
        out.update({s.strip(): corpus for s in systems.split(",") if s.strip()})
    return out


def item_mean(values: np.ndarray, answers: list[str]) -> float:
    per: dict[str, list[float]] = defaultdict(list)
    for v, a in zip(values, answers, strict=True):
        per[a].append(float(v))
    return float(np.mean([np.mean(v) for v in per.values()]))


def table(records: list[dict[str, Any]], group_of: dict[str, str], title: str) -> list[str]:
    grouped = [{**r, "system": group_of[r["system"]]} for r in records]
    held = leave_one_system_out(grouped, None, SHIPPED_RULE)
    y = np.array([r["label"] for r in grouped], dtype=bool)
    answers = [r["answer_id"] for r in grouped]
    scores = np.where(held.scores < 0, 0.0, held.scores)  # a vetoed statement: P(supported) 0
    lines = [f"### Held out by {title}", "",
             "| left out | statements (answers) | readers: supported | balanced accuracy [95%] | kappa [95%] | "
             "ROC AUC | readers' mean item faithfulness | verdict model's mean P(supported) |",
             "|---|---|---|---|---|---|---|---|"]
    for name in [*sorted(set(group_of[r["system"]] for r in records)), "pooled"]:
        idx = [i for i, r in enumerate(grouped) if name == "pooled" or r["system"] == name]
        sub_answers = [answers[i] for i in idx]
        counts, n_answers = replicate_counts(y[idx], [held.verdicts[idx]], sub_answers, RESAMPLES, 0)
        one_class = y[idx].all() or not y[idx].any()
        b, k = (ONE_CLASS, ONE_CLASS) if one_class else (
            "{:.2f} [{:.2f}, {:.2f}]".format(*interval(balanced_accuracy_of(counts[0]))),
            "{:.2f} [{:.2f}, {:.2f}]".format(*interval(kappa_of(counts[0]))))
        auc = ONE_CLASS if one_class else f"{roc_auc(y[idx].tolist(), scores[idx].tolist()):.2f}"
        lines.append(f"| {name} | {len(idx)} ({n_answers}) | {y[idx].mean():.2f} | {b} | {k} | {auc} | "
                     f"{item_mean(y[idx], sub_answers):.3f} | {item_mean(scores[idx], sub_answers):.3f} |")
    lines += ["", "Support model per left-out group (chosen on the others): " + "; ".join(held.chosen), ""]
    return lines


def shipped_on_unseen(records: list[dict[str, Any]], shipped: FaithfulnessCalibration, fitted: set[str]) -> list[str]:
    """The shipped verdicts themselves (no refit) on the systems their support model was never fitted on: what
    every run prints as the judge's agreement (`fit.unseen_agreement`)."""
    assert shipped.support_model is not None
    lines = [f"### The shipped verdicts on systems they were never fitted on (fitted on {', '.join(sorted(fitted))})",
             "", "| systems | statements | balanced accuracy [95%] | kappa [95%] |", "|---|---|---|---|"]
    unseen = sorted({r["system"] for r in records} - fitted)
    groups = [(s, {s}) for s in unseen] + [("all of them", set(unseen))]
    under_test = {s for s in unseen if s in shipped.systems}
    if under_test and under_test != set(unseen):
        groups.append((f"the systems under test ({', '.join(sorted(under_test))}; what a run prints)", under_test))
    for name, members in groups:
        rows = [r for r in records if r["system"] in members]
        if len({r["label"] for r in rows}) < 2:
            lines.append(f"| {name} | {len(rows)} | {ONE_CLASS} | {ONE_CLASS} |")
            continue
        a = unseen_agreement(rows, shipped.support_model, resamples=RESAMPLES, data=name)
        lines.append(f"| {name} | {a.n} | {a.balanced_accuracy:.2f} [{a.balanced_accuracy_ci[0]:.2f}, "
                     f"{a.balanced_accuracy_ci[1]:.2f}] | {a.kappa:.2f} [{a.kappa_ci[0]:.2f}, {a.kappa_ci[1]:.2f}] |")
    return [*lines, ""]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--features", type=Path, nargs="+", required=True)
    parser.add_argument("--labels", type=Path, nargs="*", default=[])
    parser.add_argument("--corpus", action="append", default=[], metavar="SYSTEMS=NAME")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    shipped = next(c for c in CALIBRATIONS if c.fit_data)
    fitted = {r["system"] for r in read_records(shipped.fit_data)}
    # one reading of each statement text: a planted set's untouched statements are copies of its source's
    features, copies = distinct_statements([r for p in args.features for r in read_jsonl(p)], fitted)
    labels = [r for p in args.labels for r in read_jsonl(p)]
    merged, dropped = merge(features, labels)
    dropped["a copy of a statement already kept (the same text at the same lexical support)"] += copies
    records = read_labelled_rows(merged)
    systems = sorted({r["system"] for r in records})
    corpora = corpus_map(args.corpus)
    missing = [s for s in systems if s not in corpora]
    if corpora and missing:
        raise SystemExit(f"systems {missing} have no --corpus")
    lines = [f"{len(records)} labelled statements of systems {', '.join(systems)}; left out: {dict(dropped)}", ""]
    lines += table(records, {s: s for s in systems}, "system")
    lines += shipped_on_unseen(records, shipped, fitted)
    if corpora:
        lines += table(records, corpora, "corpus")
    text = "\n".join(lines)
    print(text)
    if args.out:
        command = "python benchmarks/held_out_agreement.py " + " ".join(sys.argv[1:] if argv is None else argv)
        args.out.write_text(f"    {command}\n\n{text}\n")


if __name__ == "__main__":
    main()
