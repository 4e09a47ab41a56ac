"""`calibrate`'s level check: the judge's faithfulness level beside the readers' own, on a labelled file.

The headline faithfulness of a run is a level (`ragwatch.judges.faithfulness.level`): the mean over
answers of the expected supported share of their statements. On a labelled file of statements (one
labelled statement a line, as `data/judge_dev/rag_statements/calibrate.jsonl`), the same estimate is
made from the judge's readings and set beside what the labels say: the mean over answers of the share
of their statements labelled supported. Statements are grouped into answers by an `answer_id` or
`item_id` column, else by their id without a trailing statement number (`<answer>-s3`, `<answer>#3`);
without either, each statement is its own answer.

Example:
    >>> check = level_check(judge, items, result)  # doctest: +SKIP
    >>> check.describe()  # doctest: +SKIP
    'level 0.47 [0.36, 0.58] ...; labels: mean item faithfulness 0.46 over 31 answers'
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from ragwatch.calibration.loaders import CalibrationItem
from ragwatch.judges.faithfulness.level import statement_level
from ragwatch.judges.faithfulness.verify_evidence import features_of
from ragwatch.results import MetricResult
from ragwatch.statements import statement_verdicts
from ragwatch.statistics.level import LevelEstimate

_STATEMENT_SUFFIX = re.compile(r"(-s|#)\d+$")


class LevelCheck(BaseModel):
    """The judge's level (with its interval) and the labels' mean item faithfulness, on the same answers."""

    level: LevelEstimate
    labels_mean: float
    n_answers: int
    n_statements: int

    def describe(self) -> str:
        lv = self.level
        inside = "inside" if lv.ci_low <= self.labels_mean <= lv.ci_high else "OUTSIDE"
        share = "" if lv.verdict_share is None else f"; verdict share {lv.verdict_share:.3f} (not a level)"
        return (f"faithfulness level (the headline's estimator, {lv.method}) {lv.estimate:.3f} "
                f"[{lv.ci_low:.3f}, {lv.ci_high:.3f}] over {self.n_answers} answers ({self.n_statements} statements); "
                f"labels: mean item faithfulness {self.labels_mean:.3f}, "
                f"difference {lv.estimate - self.labels_mean:+.3f}, "
                f"{inside} the interval{share}. The interval resamples the answers, refits the calibration "
                f"({lv.n_calibration} labelled statements, {lv.n_calibration_groups} answers) resampled by answer "
                f"and draws the readers' labels around the calibrated P(supported)"
                + ("." if lv.transfer is None else
                   f"; the transfer to another system is not measured ({lv.transfer.note}): [0, 1]."
                   if lv.transfer.sd == float("inf") else
                   f"; it carries a between-system bias (sd {lv.transfer.sd:.3f}, {lv.transfer.df} systems).")
                )


def answer_of(item: CalibrationItem) -> str:
    """The answer a labelled statement belongs to (see the module doc)."""
    for key in ("answer_id", "item_id"):
        if item.metadata.get(key) not in (None, ""):
            return str(item.metadata[key])
    return _STATEMENT_SUFFIX.sub("", item.id)


def level_check(judge: Any, items: Sequence[CalibrationItem], result: MetricResult) -> LevelCheck | None:
    """The level of the judged statements by answer, beside the labels; None when the judge has no
    calibration with labelled statements (no level is made for it) or nothing was judged."""
    calibration = getattr(judge, "calibration", None)
    if calibration is None or calibration.level_data is None:
        return None
    raws, answers, verdicts, labels = [], [], [], {}
    for item, scored in zip(items, result.items, strict=True):
        if not scored.ok:
            continue
        answer = answer_of(item)
        for v in statement_verdicts(scored.details):
            raws.append(features_of(v))
            answers.append(answer)
            verdicts.append(bool(v.verdict))
            labels.setdefault(answer, []).append(float(item.faithful))
    if not raws:
        return None
    # a labelled file of any system: not known to be one the calibration data holds (its interval
    # carries the between-system bias)
    level = statement_level(raws, answers, verdicts, calibration, threshold=getattr(judge, "support_threshold", None),
                            system=None)
    means = [sum(v) / len(v) for v in labels.values()]
    return LevelCheck(level=level, labels_mean=sum(means) / len(means), n_answers=len(labels),
                      n_statements=len(raws))
