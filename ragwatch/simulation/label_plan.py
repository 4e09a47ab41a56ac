"""The budget planner's promise, simulated through the product's code: synthetic runs whose readers'
level is known, labels planned for a wanted width (`ragwatch.review.plan.plan_width`), drawn as
`review serve` draws them, and the interval `ragwatch.review.labelled` reports.

The answers: 1-6 statements (1 + Poisson(1.5), capped), each with a reader's P(supported)
`sigmoid(mu + a + sharpness * u)` (`a` the answer's quality, N(0, 0.7); `u` N(0, 1)); `mu` sets the
level. The judges (`JUDGES`): calibrated at three sharpnesses, one overconfident against its
calibration, one whose readers' labels are correlated within an answer. `benchmarks/label_plan_accuracy.py`
runs every judge and level; `tests/unit/test_label_plan.py` a fast subset.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ragwatch.results import LEVEL_ITEM_KEY, ItemScore, MetricInfo, MetricResult
from ragwatch.review.labelled import labelled_estimate
from ragwatch.review.labels import HumanLabel
from ragwatch.review.plan import plan_width
from ragwatch.review.sample import review_sample

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


@dataclass
class Population:
    """One simulated run: per answer, the readers' P per statement, the judge's, and the readers' labels."""

    true_p: list[np.ndarray]
    judge_p: list[np.ndarray]
    labels: np.ndarray  # the readers' share of supported statements per answer


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def draw_population(n: int, mu: float, judge: dict[str, float], rng: np.random.Generator) -> Population:
    """`n` answers of a run at `mu`, judged by `judge` and labelled by the simulated readers."""
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
    """One judge, level and flow over the replicates: labels planned, width reached / promised, coverage. The
    measures are None when no replicate could be planned (`reps` 0: every one is counted in `infeasible`)."""

    judge: str
    level: float
    flow: str
    width: float
    labels: float | None  # mean labels planned
    ratio_mean: float | None
    ratio_p05: float | None
    ratio_p95: float | None
    within: float | None  # share of replicates whose width is within 20% of the promise
    coverage: float | None
    infeasible: int  # replicates where no count gave the width
    reps: int


def simulate(judge_name: str, level: float, *, width: float, items: int, reps: int, pilot: int, seed: int,
             truth_answers: int = 200_000) -> list[Cell]:
    """Both flows for one judge and level: `calibration` (planned before any label) and `pilot` (planned
    again on `pilot` labels drawn first)."""
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
        measures = dict(labels=float(np.mean([r[0] for r in rows])), ratio_mean=float(ratios.mean()),
                        ratio_p05=float(np.quantile(ratios, 0.05)), ratio_p95=float(np.quantile(ratios, 0.95)),
                        within=float((np.abs(ratios - 1) <= WITHIN).mean()),
                        coverage=float(np.mean([r[2] for r in rows]))) if rows else dict.fromkeys(
            ("labels", "ratio_mean", "ratio_p05", "ratio_p95", "within", "coverage"))
        cells.append(Cell(judge=judge_name, level=level, flow=flow, width=width, **measures,
                          infeasible=skipped[flow], reps=len(rows)))
    return cells
