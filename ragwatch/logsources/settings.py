"""What a log is as configuration: where it is, its format, its column names, the Phoenix server it
comes from, and how a length of time is written ("1d")."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ragwatch.rows import data_suffix

LogFormat = Literal["auto", "jsonl", "csv", "openinference", "langfuse", "phoenix"]
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class LogColumns(_Strict):
    """Which column holds what (a dotted name reaches into a JSON object: `"meta.version"`)."""

    question: str = "question"
    """Column of the question."""
    answer: str = "answer"
    """Column of the answer as it was given."""
    contexts: str = "contexts"
    """Column of the retrieved contexts (a list of strings or of objects; JSON-encoded in CSV)."""
    timestamp: str = "timestamp"
    """Column of the answer's time (ISO 8601)."""
    trace_id: str = "trace_id"
    """Column of the trace id (a repeated id keeps its first row)."""
    reference_answer: str = "reference_answer"
    """Column of an optional reference answer."""
    feedback: str = "feedback"
    """Column of optional user feedback (thumbs or a rating)."""
    feedback_scale: str = "feedback_scale"
    """Column of a rating's scale, when rows carry one."""
    system_version: str = "system_version"
    """Column of the model/prompt/system version that answered."""
    relevant: str = "relevant"
    """Column of known relevant context ids, when any."""
    context_text: str = "text"
    """Field of a context object holding its text."""
    context_id: str = "id"
    """Field of a context object holding its id."""
    context_source: str = "source"
    """Field of a context object holding its source."""


def parse_duration(text: str) -> timedelta:
    """"1d", "12h", "30m", "2w" -> a timedelta; ValueError says the form."""
    match = _DURATION.match(str(text))
    if match is None:
        raise ValueError(f"a window length is a number and a unit (s, m, h, d, w), e.g. 1d or 12h; got {text!r}")
    value = timedelta(**{_UNITS[match.group(2)]: float(match.group(1))})
    if value <= timedelta(0):
        raise ValueError(f"a window length must be positive, got {text!r}")
    return value


class PhoenixSource(_Strict):
    """A running Arize Phoenix server to pull spans from (`format: phoenix`; its REST API, no Phoenix
    package needed here) and to write the monitor's verdicts back to, as span annotations."""

    url: str = "http://127.0.0.1:6006"
    """The Phoenix server."""
    project: str = "default"
    """The Phoenix project whose spans are read."""
    annotate: bool = True
    """Write each evaluated trace's verdict back as a span annotation."""
    annotation_name: str = "ragwatch"
    """The annotation's name in Phoenix."""


class LogSettings(_Strict):
    """Where the log is and how to read it. `format: auto` reads .csv as CSV and .jsonl as JSONL (either may be .gz);
    trace exports (`openinference`, `langfuse`) are named; `phoenix` pulls from a Phoenix server."""

    path: str = ""
    """The log file (required unless `format: phoenix`)."""
    format: LogFormat = "auto"
    """auto (by extension), jsonl, csv, openinference, langfuse or phoenix."""
    phoenix: PhoenixSource | None = None
    """The Phoenix server to read from (`format: phoenix`)."""
    columns: LogColumns = Field(default_factory=LogColumns)
    """JSONL / CSV column names."""
    feedback_scale: tuple[float, float] | None = None
    """The scale of numeric ratings that do not carry one."""
    feedback_scores: list[str] = Field(default_factory=lambda: ["user_feedback", "user-feedback", "feedback",
                                                                "thumbs", "rating"])
    """Langfuse score names read as user feedback."""

    @model_validator(mode="after")
    def _format_known(self) -> LogSettings:
        if self.format == "phoenix":
            self.phoenix = self.phoenix or PhoenixSource()
            return self
        if not self.path:
            raise ValueError("logs.path: the log file is required (or format: phoenix with a phoenix: {url} block)")
        if self.format == "auto" and data_suffix(self.path) not in (".csv", ".jsonl", ".ndjson"):
            raise ValueError(f"logs.format: cannot tell the format of {self.path!r} from its extension; "
                             "set format: jsonl, csv, openinference or langfuse")
        return self
