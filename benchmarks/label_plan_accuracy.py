"""Does the budget planner's label count buy the width it promises? A simulation through the product's code.

For each judge and metric level, each replicate draws a synthetic run of `--items` answers, plans
labels for a wanted width (`ragwatch.review.plan.plan_width`), draws that many actively
(`ragwatch.review.sample.review_sample`, what `review serve --n K` shows), labels them from the
simulated readers and computes the interval the product reports (`ragwatch.review.labelled.
labelled_estimate`). Reported: the labels planned, the width reached over the width promised (mean,
5th and 95th percentiles, the share of replicates within 20% of it) and the coverage of the readers'
level (the superpopulation's mean item faithfulness, from 200,000 simulated answers).

Two flows:
- `calibration`: planned before any label, assuming the judge's calibrated P(supported);
- `pilot`: `--pilot` labels first (an active draw of their own), the plan made again on them
  (basis `labels`), then the planned count drawn afresh.

The simulation is `ragwatch.simulation.label_plan`. The synthetic answers: 1-6 statements
(1 + Poisson(1.5), capped), each with a reader's P(supported)
`sigmoid(mu + a + sharpness * u)` (`a` the answer's quality, N(0, 0.7); `u` N(0, 1)); `mu` sets the
level. The judges:
- `weak`, `medium`, `sharp`: calibrated (the judge reports the readers' P), sharpness 0.7, 1.5, 3;
- `overconfident`: reports sigmoid(2.5 logit P) (its errors are larger than it says);
- `correlated`: calibrated per statement, but a reader's labels of one answer's statements share one
  uniform draw with probability sqrt(0.4) (errors that come by answer, which a per-statement
  calibration does not see).

Usage:
    python -m benchmarks label_plan_accuracy                       # writes benchmarks/results/label_plan_accuracy.md
    python -m benchmarks label_plan_accuracy --reps 50 --no-write  # a quick look
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from ragwatch.simulation.label_plan import JUDGES, LEVELS, Cell, simulate

RESULTS = Path(__file__).resolve().parent / "results" / "label_plan_accuracy.md"

def table(cells: list[Cell]) -> str:
    lines = ["| judge | level | flow | width wanted | labels planned (mean) | reached / promised: mean [p5, p95] "
             "| within 20% | coverage | replicates |", "|---|---|---|---|---|---|---|---|---|"]
    for c in cells:
        measured = ("no replicate could be planned | - | - | - | - " if c.labels is None else
                    f"{c.labels:.1f} | {c.ratio_mean:.3f} [{c.ratio_p05:.3f}, {c.ratio_p95:.3f}] | {c.within:.2f} | "
                    f"{c.coverage:.3f} ")
        lines.append(f"| {c.judge} | {c.level:.1f} | {c.flow} | {c.width:.2f} | {measured}| {c.reps}"
                     + (f" ({c.infeasible} infeasible)" if c.infeasible else "") + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=500, help="answers judged per run (default 500)")
    parser.add_argument("--width", type=float, default=0.10, help="the 95%% interval's wanted width (default 0.10)")
    parser.add_argument("--reps", type=int, default=200, help="replicates per judge and level (default 200)")
    parser.add_argument("--pilot", type=int, default=20, help="labels of the pilot flow's first round (default 20)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-write", action="store_true", help=f"print only; do not write {RESULTS.name}")
    args = parser.parse_args(argv)
    started = time.time()
    cells = [c for k, (name, level) in enumerate((j, lv) for j in JUDGES for lv in LEVELS)
             for c in simulate(name, level, width=args.width, items=args.items, reps=args.reps, pilot=args.pilot,
                               seed=args.seed + k)]
    text = table(cells)
    print(text)
    print(f"({time.time() - started:.0f} s)")
    if not args.no_write:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(
            "# Label plan accuracy\n\n"
            f"`python -m benchmarks label_plan_accuracy --items {args.items} --width {args.width} --reps {args.reps} "
            f"--pilot {args.pilot} --seed {args.seed}` ({time.strftime('%Y-%m-%d')}, "
            f"{time.time() - started:.0f} s).\n\n"
            "Per judge and level: the plan's label count drawn actively, the interval the product computes "
            "(`review.labelled`), its width over the width promised, and its coverage of the readers' level. "
            "See the module doc for the simulated judges and the two flows.\n\n" + text + "\n")
        print(f"wrote {RESULTS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
