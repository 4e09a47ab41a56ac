"""Active against uniform labelling: the width and coverage of the prediction-powered interval.

The population is the judge's real score distribution: labelled RAG statements with the verifier's
P(supported) (a features file, one statement a line: `item_id`, a label and a probability), grouped
into the answers they came from. Each replicate draws a run of N answers from them (with
replacement: the answers are a sample of what the system writes), draws n of them for labelling by
each design, and computes the prediction-powered estimate of the readers' mean item faithfulness
(`ragwatch.statistics.ppi.ppi_mean`, labels weighted by 1 / inclusion probability):
- uniform: a simple random sample (every item n/N);
- active: `ragwatch.statistics.active` (probability proportional to the item's label spread,
  `ragwatch.review.spread`, with a uniform floor), the design `review serve` and `review export` use.
The truth is the readers' mean item faithfulness over all the labelled answers (what the run's items
are a sample of). Reported per design and n: mean interval width, coverage and bias, and the root
mean squared error of the estimate around the simulated run's own mean label. The width carries
the sampling of the run's N items too, which no labelling reduces (about 2 * 1.96 * sd(y) / sqrt(N));
the RMSE shows what the labels themselves buy. The simulation is `ragwatch.simulation.active_labels`.

The judge's item score is the mean P(supported) of its statements (`--score mean`, the level
estimate) or the share of statements it calls supported (`--score share`, the verdict share; the
row's `verdict`, else P(supported) at its `threshold` or `--threshold`).

Usage:
    python -m benchmarks active_labels --features /work/helpers/data/features_default_dev.jsonl
    python -m benchmarks active_labels --features F --score share --items 65 --reps 4000 --json out.json
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ragwatch.review.spread import probs_spread
from ragwatch.simulation.active_labels import Cell, simulate
from ragwatch.statistics.active import DEFAULT_FLOOR

PROB_KEYS = ("p_calibrated", "p_supported", "p", "probability")
TRUE_LABELS = {"1", "true", "supported", "faithful", "yes"}
FALSE_LABELS = {"0", "false", "unsupported", "hallucinated", "no"}


@dataclass
class Answer:
    """One answer: its statements' P(supported), verdicts and reader labels (1 supported, 0 not)."""

    probs: np.ndarray
    verdicts: np.ndarray
    labels: np.ndarray

    def score(self, how: str) -> float:
        return float(self.probs.mean()) if how == "mean" else float(self.verdicts.mean())

    def spread(self, score: float) -> tuple[float, float]:
        """(spread, noise), as `ragwatch.review.spread` computes them for a judged item."""
        return probs_spread(self.probs.tolist(), score)


def read_answers(path: Path, threshold: float = 0.5) -> list[Answer]:
    """Statements of a features file grouped by answer (system and item id); statements without an
    agreed label are left out. A statement a rule decided without a probability counts as 1 or 0."""
    by_item: dict[str, tuple[list[float], list[float], list[float]]] = {}
    for line_no, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        row = json.loads(line)
        label = str(row.get("label")).strip().lower()
        if label not in TRUE_LABELS | FALSE_LABELS:
            continue
        prob = next((row[k] for k in PROB_KEYS if row.get(k) is not None), None)
        verdict = row.get("verdict")
        if prob is None and verdict is None:
            raise ValueError(f"{path}:{line_no}: no probability (one of {PROB_KEYS}) and no verdict")
        prob = float(verdict) if prob is None else min(max(float(prob), 0.0), 1.0)
        cut = float(row.get("threshold") or threshold)
        item = f"{row.get('system') or ''}/{row.get('item_id') or row.get('id') or line_no}"
        probs, verdicts, labels = by_item.setdefault(item, ([], [], []))
        probs.append(prob)
        verdicts.append(float(verdict) if verdict is not None else float(prob >= cut))
        labels.append(1.0 if label in TRUE_LABELS else 0.0)
    if len(by_item) < 5:
        raise ValueError(f"{path}: {len(by_item)} labelled answers; the simulation needs at least 5")
    return [Answer(np.array(p), np.array(v), np.array(y)) for p, v, y in by_item.values()]


def table(cells: Sequence[Cell]) -> str:
    by = {(c.design, c.n): c for c in cells}
    lines = ["| labels | uniform width | active width | active / uniform | uniform coverage | active coverage "
             "| uniform RMSE | active RMSE | active bias |", "|---|---|---|---|---|---|---|---|---|"]
    for n in sorted({c.n for c in cells}):
        u, a = by[("uniform", n)], by[("active", n)]
        lines.append(f"| {n} | {u.width:.3f} | {a.width:.3f} | {a.width / u.width:.2f} | {u.coverage:.3f} | "
                     f"{a.coverage:.3f} | {u.rmse:.3f} | {a.rmse:.3f} | {a.bias:+.4f} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--features", type=Path, required=True, help="statements with label and P(supported)")
    parser.add_argument("--score", choices=("mean", "share"), default="mean")
    parser.add_argument("--threshold", type=float, default=0.5, help="cut-off of rows with no verdict or threshold")
    parser.add_argument("--items", type=int, default=65, help="answers per simulated run (the default run: 65)")
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--floor", type=float, default=DEFAULT_FLOOR)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    answers = read_answers(args.features, args.threshold)
    f = np.array([a.score(args.score) for a in answers])
    y = np.array([float(a.labels.mean()) for a in answers])
    spread, noise = np.array([a.spread(s) for a, s in zip(answers, f, strict=True)]).T
    cells = simulate(f, y, spread, noise, items=args.items, reps=args.reps, seed=args.seed, floor=args.floor)
    n_statements = sum(a.labels.size for a in answers)
    print(f"{len(answers)} labelled answers ({n_statements} statements) of {args.features}; judge score: "
          f"{args.score} P(supported); readers' mean item faithfulness {y.mean():.3f}, judge's {f.mean():.3f}; "
          f"runs of {args.items} answers, {args.reps} replicates, floor {args.floor}, 95% intervals\n")
    print(table(cells))
    if args.json:
        args.json.write_text(json.dumps([c.__dict__ for c in cells], indent=1))
    low = [c for c in cells if c.coverage < 0.93]
    if low:
        print("\ncoverage below 0.93: " + ", ".join(f"{c.design} n={c.n} {c.coverage:.3f}" for c in low))
    return 1 if low else 0


if __name__ == "__main__":
    raise SystemExit(main())
