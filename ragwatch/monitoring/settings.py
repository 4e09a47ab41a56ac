"""The `monitor` configuration: which log, which windows, what is measured, and what counts as drift.

Example (configs/monitor.yaml):
    logs: {path: ../data/sample/logs/answers.jsonl.gz, format: jsonl}
    window: {length: 1d, budget: 150, seed: 0}
    drift: {tolerance: 0.1}
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ragwatch.judges.config import JudgesConfig
from ragwatch.logsources.settings import LogSettings
from ragwatch.logsources.window import WindowSettings
from ragwatch.retrieval import MatchSettings

# What a user cannot see, a user's verdict cannot label: they never read the retrieved passages.
NEVER_FEEDBACK_LABELS = ("faithfulness", "context_relevance", "support")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class MonitorWindow(WindowSettings):
    """The window evaluated (`length`, ending at `at`: default the end of the last logged day, UTC),
    compared with the window before it and with a reference window (`reference`: its start; default
    the first window of the log). Each is sampled to `budget` answers (seeded)."""

    reference: str | None = None
    """When the reference window starts, an ISO date or time (null: the first window of the log)."""
    by_system_version: bool = True  # versions inside the window are also compared as systems
    """Compare the system versions logged inside the window with each other too."""

    @model_validator(mode="after")
    def _has_length(self) -> MonitorWindow:
        if self.length is None:
            raise ValueError("window.length: the monitor compares windows of a length (e.g. 1d or 12h); "
                             "null (the whole log) is for a pipeline config's logs.window")
        return self


class AnchorSettings(_Strict):
    """The labelled anchor re-judged with each window's judge, so that a change of the judge (a new model
    or prompt, a provider's silent change) is told from a change of the system (docs/monitoring.md)."""

    enabled: bool = True
    """Re-judge the anchor with each window's judge (only judges with anchor labels: faithfulness and
    answer_relevance from the shipped reference labels, or the metric your own file labels)."""
    path: str | None = None
    """Your own labelled file (JSONL/CSV: question, answer, contexts, label); null: the shipped reference labels."""
    format: Literal["auto", "jsonl", "halueval"] = "auto"
    """Its format, as `calibrate --labels` reads it (generic, ragas and LlamaIndex columns, or HaluEval)."""
    metric: str | None = None
    """The judged metric your file labels (null: faithfulness when every item has contexts, else answer_relevance)."""
    size: int = Field(default=40, ge=10)
    """Anchor items judged per window: a seeded sample, the same items every time (half of each label
    where the labels allow)."""
    seed: int = 0
    """The anchor sample's seed."""


class DriftSettings(_Strict):
    """"drift": the interval of the difference excludes 0 (Holm over the window's metrics: `confidence`
    holds for the whole window); "no drift": the interval at `1 - 2 (1 - confidence)` lies within
    +-tolerance (a share of the metric's scale: 0.1 is 0.1 on a 0-1 metric, 0.4 on a 1-5 one; two
    one-sided tests, each metric at `confidence`); "undecided": neither."""

    tolerance: float = Field(default=0.1, gt=0, lt=1)
    """"no drift" when the interval lies within +-tolerance, a share of the metric's scale."""
    confidence: float = Field(default=0.95, gt=0.5, lt=1)
    """Confidence of "drift" for the whole window (Holm over its metrics) and of "no drift" per metric."""
    anchor: AnchorSettings = Field(default_factory=AnchorSettings)
    """The labelled anchor that tells judge drift from system drift."""


class FeedbackSettings(_Strict):
    """Which metric a user's feedback labels (None: reported beside the metrics, labelling none).

    Thumbs say "this answer served me": by default they label `answer_relevance/pass` (the answer
    relevance judge's score >= `pass_threshold`, a 0/1 metric); ratings label `answer_relevance` on its
    1-5 scale (rescaled from the rating's). Never faithfulness or context metrics: a user does not see
    the retrieved passages."""

    thumbs_metric: str | None = "answer_relevance/pass"
    """The metric thumbs up/down label (null: none)."""
    rating_metric: str | None = "answer_relevance"
    """The metric numeric ratings label, rescaled to its scale (null: none)."""
    pass_threshold: float = 4.0
    """The answer relevance score (1-5) at or above which `answer_relevance/pass` is 1."""

    @field_validator("thumbs_metric", "rating_metric")
    @classmethod
    def _not_unseen(cls, value: str | None) -> str | None:
        if value is not None and value.split("/")[0] in NEVER_FEEDBACK_LABELS:
            raise ValueError(f"user feedback cannot label {value!r}: users do not see the retrieved contexts; "
                             "choose answer_relevance, answer_relevance/pass, correctness or a rubric judge")
        return value


class MonitorConfig(_Strict):
    """The whole configuration of a monitor run (`python run.py monitor --config configs/monitor.yaml`)."""

    PATH_KEYS: ClassVar[tuple[str, ...]] = ("logs.path", "reports_dir", "drift.anchor.path")

    logs: LogSettings
    """The log: its path and format (relative paths: to this config file)."""
    window: MonitorWindow = Field(default_factory=MonitorWindow)
    """The window evaluated, the windows it is compared with, and each one's judged sample."""
    drift: DriftSettings = Field(default_factory=DriftSettings)
    """What counts as drift, no drift or undecided."""
    feedback: FeedbackSettings = Field(default_factory=FeedbackSettings)
    """Which metric users' thumbs and ratings label."""
    judges: JudgesConfig = Field(default_factory=lambda: JudgesConfig(enabled=[]))
    """The judges run on each window's sample (none by default), as `evaluate.judges`."""
    match: MatchSettings = Field(default_factory=MatchSettings)
    """How the logged contexts are matched against relevance labels, as `evaluate.retrieval.match`."""
    model_name: str = "ragwatch-logs"  # the ZenML model that versions what the monitored log is
    """The ZenML model that versions the monitored log's runs."""
    reports_dir: str | None = None
    """Where the HTML reports go (default: `reports/` under the current directory)."""
