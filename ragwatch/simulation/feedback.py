"""The monitor's prediction-powered level from user feedback, simulated through its own code
(`attach_feedback`): windows of answers with a true user verdict, a judge score correlated with it and
feedback on a random fifth, and how often the level's 95% interval holds the truth.

`SETTINGS` are the windows `benchmarks/feedback_ppi_coverage.py` reports; its module doc says how a
window is drawn. The "NOT AT RANDOM" settings break the level's assumption on purpose.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ragwatch.logsources.records import Feedback
from ragwatch.monitoring.feedback import attach_feedback
from ragwatch.monitoring.settings import FeedbackSettings
from ragwatch.results import ItemScore, MetricInfo, MetricResult
from ragwatch.types import EvalSample

CUTS = np.array([-0.5, 0.25, 1.0, 1.75])  # latent -> 1..5 (a served answer with signal 2 is mostly >= 4)
RATING_P = np.array([0.1, 0.15, 0.2, 0.3, 0.25])  # the true 1-5 ratings' distribution (mean 3.45)


@dataclass(frozen=True)
class Setting:
    """One kind of window: its feedback, size, the judge's signal and who rates."""

    name: str
    kind: str  # "thumbs" or "rating"
    n: int  # answers judged in the window
    p: float = 0.8  # thumbs: share of answers that served the user
    signal: float = 2.0  # how strongly the judge follows the verdict (0: not at all)
    unhappy_click: float = 1.0  # how much likelier a down answer is to be rated (1: at random)

    @property
    def truth(self) -> float:
        return self.p if self.kind == "thumbs" else float((RATING_P * np.arange(1, 6)).sum())


SETTINGS = [
    Setting("thumbs, good judge", "thumbs", 90),
    Setting("thumbs, good judge", "thumbs", 200),
    Setting("thumbs, good judge", "thumbs", 500),
    Setting("thumbs, good judge, p=0.95", "thumbs", 90, p=0.95),
    Setting("thumbs, good judge, p=0.5", "thumbs", 200, p=0.5),
    Setting("thumbs, weak judge", "thumbs", 200, signal=0.7),
    Setting("thumbs, judge unrelated", "thumbs", 200, signal=0.0),
    Setting("ratings 1-5, good judge", "rating", 90, signal=0.8),
    Setting("ratings 1-5, good judge", "rating", 500, signal=0.8),
    Setting("NOT AT RANDOM: thumbs, good judge, the unhappy rate 3x as often", "thumbs", 200, unhappy_click=3.0),
    Setting("NOT AT RANDOM: thumbs, weak judge, the unhappy rate 3x as often", "thumbs", 200, signal=0.7,
            unhappy_click=3.0),
]


def _window(setting: Setting, rng: np.random.Generator) -> tuple[dict[str, MetricResult], list[EvalSample]]:
    """One window: the judge's answer_relevance items and the answers with feedback on a fifth."""
    n = setting.n
    if setting.kind == "thumbs":
        verdict = (rng.random(n) < setting.p).astype(float)  # 1 = served
        centred = 2 * verdict - 1
    else:
        verdict = rng.choice(np.arange(1, 6), size=n, p=RATING_P).astype(float)
        centred = verdict - 3
    judge = 1 + np.searchsorted(CUTS, setting.signal * centred + rng.standard_normal(n))
    weight = np.where(centred < 0, setting.unhappy_click, 1.0) if setting.kind == "thumbs" else np.ones(n)
    rated = rng.choice(n, size=round(n / 5), replace=False, p=weight / weight.sum())
    items = [ItemScore(item_id=f"a{i}", score=float(s)) for i, s in enumerate(judge)]
    result = MetricResult.from_items("answer_relevance", items, info=MetricInfo(scale=(1.0, 5.0)))
    has = set(rated.tolist())
    samples = []
    for i in range(n):
        feedback = None
        if i in has:
            feedback = (Feedback(kind="thumbs", value=verdict[i]) if setting.kind == "thumbs"
                        else Feedback(kind="rating", value=verdict[i], scale=(1.0, 5.0)))
        samples.append(EvalSample(id=f"a{i}", question="q", kind="logged",
                                  metadata={"feedback": feedback.model_dump() if feedback else None}))
    return {"answer_relevance": result}, samples


def coverage(setting: Setting, reps: int, seed: int = 0) -> dict[str, float]:
    """Coverage of the truth by the level's 95% interval, its mean width, the labels-alone interval's
    mean width, mean lambda, and how often the raw judge mean's and the feedback share's intervals cover it."""
    rng = np.random.default_rng(seed)
    hits = judge_hits = share_hits = 0
    widths, alone, lams = [], [], []
    for _ in range(reps):
        metrics, samples = _window(setting, rng)
        _, summary = attach_feedback(metrics, samples, FeedbackSettings())
        if not summary.levels:
            raise RuntimeError(f"no level in {setting}: {summary.skipped}")
        level = summary.levels[0]
        hits += level.ci_low <= setting.truth <= level.ci_high
        judge_hits += (level.judge_ci_low or 0) <= setting.truth <= (level.judge_ci_high or 0)
        share = summary.figures[0]  # on 0..1 of the scale
        low, high = (1 + 4 * share.ci_low, 1 + 4 * share.ci_high) if setting.kind == "rating" else \
            (share.ci_low, share.ci_high)
        share_hits += low <= setting.truth <= high
        widths.append(level.ci_high - level.ci_low)
        alone.append(level.labels_only_ci[1] - level.labels_only_ci[0])
        lams.append(level.lam)
    return {"coverage": hits / reps, "width": float(np.mean(widths)), "labels_only_width": float(np.mean(alone)),
            "lambda": float(np.mean(lams)), "judge_mean_covers": judge_hits / reps,
            "share_covers": share_hits / reps}
