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

The synthetic answers: 1-6 statements (1 + Poisson(1.5), capped), each with a reader's P(supported)
`sigmoid(mu + a + sharpness * u)` (`a` the answer's quality, N(0, 0.7); `u` N(0, 1)); `mu` sets the
level. The judges:
- `weak`, `medium`, `sharp`: calibrated (the judge reports the readers' P), sharpness 0.7, 1.5, 3;
- `overconfident`: reports sigmoid(2.5 logit P) (its errors are larger than it says);
- `correlated`: calibrated per statement, but a reader's labels of one answer's statements share one
  uniform draw with probability sqrt(0.4) (errors that come by answer, which a per-statement
  calibration does not see).

Usage:
    python benchmarks/label_plan_accuracy.py                       # writes benchmarks/results/label_plan_accuracy.md
    python benchmarks/label_plan_accuracy.py --reps 50 --no-write  # a quick look
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ragwatch.results import LEVEL_ITEM_KEY, ItemScore, MetricInfo, MetricResult  # noqa: E402
from ragwatch.review.labelled import labelled_estimate  # noqa: E402
from ragwatch.review.labels import HumanLabel  # noqa: E402
from ragwatch.review.plan import plan_width  # noqa: E402
from ragwatch.review.sample import review_sample  # noqa: E402

METRIC = "faithfulness"
JUDGES: dict[str, dict[str, float]] = {
    "weak": {"sharpness": 0.7},
    "medium": {"sharpness": 1.5},
    "sharp": {"sharpness": 3.0},
    "overconfident": {"sharpness": 1.5, "overconfidence": 2.5},
    "correlated": {"sharpness": 1.5, "rho": 0.4},
}
LEVELS = (0.6, 0.8, 0.9)
ANSWER_SD = 0.7
MAX_STATEMENTS = 6
WITHIN = 0.2  # the Done-when: the width reached within 20% of the promised one
RESULTS = ROOT / "benchmarks" / "results" / "label_plan_accuracy.md"


@dataclass
class Population:
    """One simulated run: per answer, the readers' P per statement, the judge's, and the readers' labels."""

    true_p: list[np.ndarray]
    judge_p: list[np.ndarray]
    labels: np.ndarray  # the readers' share of supported statements per answer


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def draw_population(n: int, mu: float, judge: dict[str, float], rng: np.random.Generator) -> Population:
    sizes = np.minimum(1 + rng.poisson(1.5, n), MAX_STATEMENTS)
    quality = rng.normal(0, ANSWER_SD, n)
    share = np.sqrt(judge.get("rho", 0.0))
    true_p, judge_p, labels = [], [], np.empty(n)
    for i, m in enumerate(sizes):
        logit = mu + quality[i] + judge["sharpness"] * rng.normal(size=m)
        p = _sigmoid(logit)
        shared = rng.random() if share else 0.0
        u = np.where(rng.random(m) < share, shared, rng.random(m))
        labels[i] = float((u < p).mean())
        true_p.append(p)
        judge_p.append(_sigmoid(judge.get("overconfidence", 1.0) * logit))
    return Population(true_p=true_p, judge_p=judge_p, labels=labels)


def level_mu(level: float, judge: dict[str, float], rng: np.random.Generator, answers: int = 200_000
             ) -> tuple[float, float]:
    """The `mu` that puts the readers' mean item faithfulness at `level`, and that mean (over `answers`)."""
    m = np.minimum(1 + rng.poisson(1.5, answers), MAX_STATEMENTS)
    a = rng.normal(0, ANSWER_SD, m.size)
    z = rng.normal(size=(m.size, MAX_STATEMENTS))
    mask = np.arange(MAX_STATEMENTS)[None, :] < m[:, None]

    def mean(mu: float) -> float:
        p = _sigmoid(mu + a[:, None] + judge["sharpness"] * z)
        return float(((p * mask).sum(1) / m).mean())

    low, high = -6.0, 8.0
    for _ in range(50):
        mid = (low + high) / 2
        low, high = (mid, high) if mean(mid) < level else (low, mid)
    return (low + high) / 2, mean((low + high) / 2)


def metric_result(pop: Population) -> MetricResult:
    """The run's faithfulness as the judge scores it: each answer's statements with their calibrated
    P(supported), its level value the mean of them (what the shipped faithfulness judge writes)."""
    items = []
    for i, p in enumerate(pop.judge_p):
        verdicts = [{"statement": f"s{j}", "verdict": bool(q >= 0.5), "p_supported": float(q)} for j, q in enumerate(p)]
        level = float(p.mean())
        items.append(ItemScore(item_id=f"q{i}", score=level, details={
            "verdicts": verdicts, LEVEL_ITEM_KEY: level, "judged_key": f"k{i}"}))
    return MetricResult.from_items(METRIC, items, info=MetricInfo(scale=(0.0, 1.0), family="judge",
                                                                  prompt_version="sim"))


def label_draw(result: MetricResult, pop: Population, n: int, seed: int) -> dict[str, HumanLabel]:
    """`n` answers drawn as `review serve --n n --seed seed` draws them, labelled by the readers."""
    rows = [{"item_id": it.item_id, "question": "", "answer": ""} for it in result.items]
    sample = review_sample(rows, {METRIC: result}, n=n, seed=seed, metric_names=[METRIC])
    out = {}
    for row in sample.rows:
        index = int(row["item_id"][1:])
        out[row["item_id"]] = HumanLabel(item_id=row["item_id"], metric=METRIC, value=float(pop.labels[index]),
                                         inclusion_prob=row["inclusion_prob"], judged_key=f"k{index}")
    return out


@dataclass
class Cell:
    judge: str
    level: float
    flow: str
    width: float
    labels: float  # mean labels planned
    ratio_mean: float
    ratio_p05: float
    ratio_p95: float
    within: float  # share of replicates whose width is within 20% of the promise
    coverage: float
    infeasible: int  # replicates where no count gave the width
    reps: int


def simulate(judge_name: str, level: float, *, width: float, items: int, reps: int, pilot: int, seed: int,
             truth_answers: int = 200_000) -> list[Cell]:
    judge = JUDGES[judge_name]
    rng = np.random.default_rng(seed)
    mu, truth = level_mu(level, judge, rng, truth_answers)
    out: dict[str, list[tuple[int, float, bool]]] = {"calibration": [], "pilot": []}
    skipped = {"calibration": 0, "pilot": 0}
    for rep in range(reps):
        pop = draw_population(items, mu, judge, rng)
        result = metric_result(pop)
        flows = {"calibration": None, "pilot": label_draw(result, pop, pilot, seed=10_000 + rep)}
        for flow, pilot_labels in flows.items():
            plan = plan_width(result, width, labels=pilot_labels)
            k = plan.chosen.labels
            if k is None:
                skipped[flow] += 1
                continue
            est, _ = labelled_estimate(result, label_draw(result, pop, k, seed=rep))
            assert est is not None
            out[flow].append((k, (est.ci_high - est.ci_low) / width, est.ci_low <= truth <= est.ci_high))
    cells = []
    for flow, rows in out.items():
        ratios = np.array([r[1] for r in rows])
        cells.append(Cell(judge=judge_name, level=level, flow=flow, width=width,
                          labels=float(np.mean([r[0] for r in rows])) if rows else float("nan"),
                          ratio_mean=float(ratios.mean()) if rows else float("nan"),
                          ratio_p05=float(np.quantile(ratios, 0.05)) if rows else float("nan"),
                          ratio_p95=float(np.quantile(ratios, 0.95)) if rows else float("nan"),
                          within=float((np.abs(ratios - 1) <= WITHIN).mean()) if rows else float("nan"),
                          coverage=float(np.mean([r[2] for r in rows])) if rows else float("nan"),
                          infeasible=skipped[flow], reps=len(rows)))
    return cells


def table(cells: list[Cell]) -> str:
    lines = ["| judge | level | flow | width wanted | labels planned (mean) | reached / promised: mean [p5, p95] "
             "| within 20% | coverage | replicates |", "|---|---|---|---|---|---|---|---|---|"]
    for c in cells:
        lines.append(f"| {c.judge} | {c.level:.1f} | {c.flow} | {c.width:.2f} | {c.labels:.1f} | {c.ratio_mean:.3f} "
                     f"[{c.ratio_p05:.3f}, {c.ratio_p95:.3f}] | {c.within:.2f} | {c.coverage:.3f} | {c.reps}"
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
            f"`python benchmarks/label_plan_accuracy.py --items {args.items} --width {args.width} --reps {args.reps} "
            f"--pilot {args.pilot} --seed {args.seed}` ({time.strftime('%Y-%m-%d')}, "
            f"{time.time() - started:.0f} s).\n\n"
            "Per judge and level: the plan's label count drawn actively, the interval the product computes "
            "(`review.labelled`), its width over the width promised, and its coverage of the readers' level. "
            "See the module doc for the simulated judges and the two flows.\n\n" + text + "\n")
        print(f"wrote {RESULTS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
