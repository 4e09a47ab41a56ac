"""Coverage of the corrected-level difference's interval (`ragwatch.monitoring.judge_drift.corrected_diff`) by
simulation: two windows of answers, each judged by its own judge, and an anchor of labelled items both
judges scored; the judges err on the answers as on the anchor (the correction's assumption).

Each repetition draws the windows' true verdicts (levels `p_old`, `p_new`), each judge's verdicts from its
true and false positive rates, and the anchor's verdicts of both judges from one uniform draw per item
(so the two judges' verdicts on an item are related, as a judge's versions are). It counts how often the
interval at each confidence holds the true difference `p_new - p_old`, and the median width.

    .venv/bin/python benchmarks/judge_drift_coverage.py --reps 1000 --out benchmarks/results/judge_drift_coverage.md
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from ragwatch.monitoring.judge_drift import corrected_diff

# (old judge's true/false positive rates, new judge's)
SETTINGS = [((0.85, 0.30), (0.85, 0.30)), ((0.85, 0.30), (0.97, 0.60)), ((0.90, 0.10), (0.70, 0.30)),
            ((0.95, 0.05), (0.95, 0.05))]


def coverage(old: tuple[float, float], new: tuple[float, float], *, n: int, pos: int, neg: int, reps: int,
             confidence: float, p_old: float = 0.70, p_new: float = 0.62, resamples: int = 2000
             ) -> tuple[float, float]:
    """(share of repetitions whose interval holds the true difference, median width)."""
    rng = np.random.default_rng(1)
    labels = np.array([1] * pos + [0] * neg)
    covered, widths = 0, []
    for rep in range(reps):
        def window(p: float, rates: tuple[float, float]) -> np.ndarray:
            truth = rng.random(n) < p
            return np.where(truth, rng.random(n) < rates[0], rng.random(n) < rates[1]).astype(float)

        u = rng.random(pos + neg)
        anchor_old = np.where(labels == 1, u < old[0], u < old[1]).astype(float)
        anchor_new = np.where(labels == 1, u < new[0], u < new[1]).astype(float)
        got = corrected_diff(window(p_new, new), window(p_old, old), labels, anchor_new, anchor_old,
                             resamples=resamples, seed=rep)
        _, low, high = got.interval(confidence)
        covered += low <= p_new - p_old <= high
        widths.append(high - low)
    return covered / reps, float(np.median(widths))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--n", type=int, default=90, help="answers per window")
    parser.add_argument("--anchor", type=int, default=40, help="anchor items (half of each label)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    lines = [f"# Corrected-level difference: coverage by simulation ({args.reps} repetitions)", "",
             f"Windows of {args.n} answers (true levels 0.70 -> 0.62), an anchor of {args.anchor // 2} + "
             f"{args.anchor // 2} labelled items; `python benchmarks/judge_drift_coverage.py --reps {args.reps}`.", "",
             "| old judge TPR/FPR | new judge TPR/FPR | 99% coverage | median width | 95% coverage | median width "
             "| 90% coverage | median width |", "|---|---|---|---|---|---|---|---|"]
    for old, new in SETTINGS:
        cells = []
        for confidence in (0.99, 0.95, 0.90):
            cov, width = coverage(old, new, n=args.n, pos=args.anchor // 2, neg=args.anchor // 2, reps=args.reps,
                                  confidence=confidence)
            cells += [f"{cov:.3f}", f"{width:.2f}"]
        lines.append(f"| {old[0]:.2f}/{old[1]:.2f} | {new[0]:.2f}/{new[1]:.2f} | " + " | ".join(cells) + " |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
