"""Judge calibration: how far a judge agrees with people, and at which cut-off to read it.

- `loaders`: labelled sets in the generic, ragas, LlamaIndex and HaluEval formats -> `CalibrationItem`.
- `report`: `calibrate` (agreement with intervals, greedy vs probability-weighted).
- `threshold`: the weighted-mode cut-off chosen on one split and reported on the other.
- `running`: `CalibrationSettings` and `run_calibration`, what `python run.py calibrate` runs.
- `injection`: how far a prompt injection planted in an answer or a context inflates a judge's score.

The judges it runs are the project's own (`ragwatch.judges`: `support`, `faithfulness`); like the
labels, the injection harness measures a judge and scores no answer, so it lives here, not in `judges/`.

Example:
    >>> report = run_calibration(CalibrationSettings(limit=60))  # doctest: +SKIP
    >>> print(report.to_markdown())  # doctest: +SKIP
"""

from ragwatch.calibration.injection import PAYLOADS as INJECTIONS
from ragwatch.calibration.injection import InjectionResult, measure_injection
from ragwatch.calibration.loaders import (
    FAITHFUL,
    HALLUCINATED,
    CalibrationItem,
    load_calibration_set,
    load_halueval_general,
    load_jsonl,
    parse_label,
    stratified_sample,
    to_eval_pairs,
)
from ragwatch.calibration.report import CalibrationItemResult, CalibrationReport, ModeMetrics, calibrate
from ragwatch.calibration.running import (
    DEFAULT_DATASET,
    REPO_ROOT,
    CalibrationSettings,
    build_calibration_judge,
    resolve_dataset,
    run_calibration,
)
from ragwatch.calibration.threshold import ThresholdChoice, choose_threshold
from ragwatch.judges.support import PROMPT_VERSION, SupportJudge, SupportVerdict

__all__ = [
    "DEFAULT_DATASET", "FAITHFUL", "HALLUCINATED", "INJECTIONS", "PROMPT_VERSION", "REPO_ROOT",
    "CalibrationItem", "CalibrationItemResult", "CalibrationReport", "CalibrationSettings", "InjectionResult",
    "ModeMetrics", "SupportJudge", "SupportVerdict", "ThresholdChoice", "build_calibration_judge", "calibrate",
    "choose_threshold", "load_calibration_set", "load_halueval_general", "load_jsonl", "measure_injection",
    "parse_label", "resolve_dataset", "run_calibration", "stratified_sample", "to_eval_pairs",
]
