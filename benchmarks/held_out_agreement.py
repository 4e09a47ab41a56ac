"""The shipped verdicts' agreement with careful readers, held out by system and by corpus.

The calibration's own figure (`run.py calibrate-fit`) scores each system by a fit that never saw it. A
new user's documents are a corpus the fit never saw either, so this also leaves one corpus out at a
time: every statement of a corpus is scored by a support model (inputs chosen and fitted, cut-off
chosen) on the other corpora's statements only. Per left-out group and pooled: balanced accuracy and
Cohen's kappa of the verdicts (95% bootstrap over answers), ROC AUC of P(supported), and the readers'
mean item faithfulness beside the held-out verdict model's mean P(supported) of the same items (a
rough view of the level, which has its own model: `benchmarks/faithfulness_level.py`).

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

from ragwatch.judges.faithfulness.fit import (
    SHIPPED_RULE,
    balanced_accuracy_of,
    interval,
    kappa_of,
    leave_one_system_out,
    merge,
    read_jsonl,
    read_labelled_rows,
    replicate_counts,
)
from ragwatch.statistics.agreement import roc_auc

RESAMPLES = 1000


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
        b, k = interval(balanced_accuracy_of(counts[0])), interval(kappa_of(counts[0]))
        auc = roc_auc(y[idx].tolist(), scores[idx].tolist())
        lines.append(f"| {name} | {len(idx)} ({n_answers}) | {y[idx].mean():.2f} | "
                     f"{b[0]:.2f} [{b[1]:.2f}, {b[2]:.2f}] | "
                     f"{k[0]:.2f} [{k[1]:.2f}, {k[2]:.2f}] | {auc:.2f} | {item_mean(y[idx], sub_answers):.3f} | "
                     f"{item_mean(scores[idx], sub_answers):.3f} |")
    lines += ["", "Support model per left-out group (chosen on the others): " + "; ".join(held.chosen), ""]
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--features", type=Path, nargs="+", required=True)
    parser.add_argument("--labels", type=Path, nargs="*", default=[])
    parser.add_argument("--corpus", action="append", default=[], metavar="SYSTEMS=NAME")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    features = [r for p in args.features for r in read_jsonl(p)]
    labels = [r for p in args.labels for r in read_jsonl(p)]
    merged, dropped = merge(features, labels)
    records = read_labelled_rows(merged)
    systems = sorted({r["system"] for r in records})
    corpora = corpus_map(args.corpus)
    missing = [s for s in systems if s not in corpora]
    if corpora and missing:
        raise SystemExit(f"systems {missing} have no --corpus")
    lines = [f"{len(records)} labelled statements of systems {', '.join(systems)}; left out: {dict(dropped)}", ""]
    lines += table(records, {s: s for s in systems}, "system")
    if corpora:
        lines += table(records, corpora, "corpus")
    text = "\n".join(lines)
    print(text)
    if args.out:
        command = "python benchmarks/held_out_agreement.py " + " ".join(sys.argv[1:] if argv is None else argv)
        args.out.write_text(f"    {command}\n\n{text}\n")


if __name__ == "__main__":
    main()
