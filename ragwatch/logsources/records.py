"""The one record of a logged answer, and what reading a log found.

Every log format (JSONL / CSV with named columns, Langfuse trace exports, OpenInference spans) is
turned into `LogRecord`s plus `BadRow`s: a row or trace that cannot be evaluated is never dropped in
silence, it comes back with its line (or trace id) and the reason, counted by `outcome`.

Outcomes (the keys of `LogReadResult.counts`):
- `kept`: evaluated as it was answered;
- `malformed`: not a record (bad JSON, no question, a bad timestamp, a bad feedback value);
- `duplicate_trace_id`: a trace id seen before; the first occurrence is kept;
- `missing_contexts`: no contexts field (or a span tree without a retriever span): what was retrieved
  is unknown, so nothing can be judged against it. An empty list is a retrieval that found nothing
  and is kept;
- `empty_answer`: kept, but as a failed answer (every metric counts it as a failed item, with this reason);
  it is also listed among the bad rows, named with its line (or trace) and why (e.g. no answer field).

"First twenty named, then counts": `describe` names the first 20 bad rows and counts the rest per
outcome. A log with nothing to evaluate is refused by `require_answers` saying why: an empty file, or
each kind of bad row with its count and reason, and what the reader expected beside what it found.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, Field, model_validator

Outcome = Literal["kept", "malformed", "duplicate_trace_id", "missing_contexts", "empty_answer"]
OUTCOMES: tuple[Outcome, ...] = ("kept", "malformed", "duplicate_trace_id", "missing_contexts", "empty_answer")
EMPTY_ANSWER = "the logged answer is empty"
NAMED = 20  # bad rows named one by one; the rest are counted
_NOUNS = {"line": "row", "trace": "trace", "item": "item", "span": "span"}
T = TypeVar("T")


class LogContext(BaseModel):
    """One passage the system retrieved and answered with."""

    text: str
    id: str | None = None
    source: str | None = None
    score: float | None = None


class Feedback(BaseModel):
    """A user's verdict on an answer: thumbs (`value` 0 or 1) or a rating on `scale`."""

    kind: Literal["thumbs", "rating"]
    value: float
    scale: tuple[float, float] = (0.0, 1.0)

    @model_validator(mode="after")
    def _on_scale(self) -> Feedback:
        low, high = self.scale
        if not high > low:
            raise ValueError(f"a feedback scale needs low < high, got {self.scale}")
        if not low <= self.value <= high:
            raise ValueError(f"feedback {self.value} is outside its scale {self.scale}")
        if self.kind == "thumbs" and self.value not in (0.0, 1.0):
            raise ValueError(f"thumbs feedback is 0 (down) or 1 (up), got {self.value}")
        return self

    @property
    def share(self) -> float:
        """The value on 0..1 (thumbs up = 1; a rating rescaled from its scale)."""
        low, high = self.scale
        return (self.value - low) / (high - low)


class LogRecord(BaseModel):
    """One logged answer: what was asked, what was retrieved, what was said, and when."""

    trace_id: str
    question: str
    answer: str
    contexts: list[LogContext] = Field(default_factory=list)
    timestamp: datetime
    reference_answer: str | None = None
    feedback: Feedback | None = None
    system_version: str | None = None
    relevant: list[str] = Field(default_factory=list)  # relevant chunk ids / sources, when the log knows them
    where: str = ""  # "line 12" or "trace abc": where it was read
    metadata: dict[str, Any] = Field(default_factory=dict)
    no_answer: str | None = None  # why the log gave no answer (e.g. the row has no answer field), when it gave none

    @model_validator(mode="after")
    def _aware(self) -> LogRecord:
        if self.timestamp.tzinfo is None:  # a naive time in a log is read as UTC, the logging default
            self.timestamp = self.timestamp.replace(tzinfo=UTC)
        return self

    @property
    def answer_error(self) -> str | None:
        if self.answer.strip():
            return None
        return f"{EMPTY_ANSWER}: {self.no_answer}" if self.no_answer else EMPTY_ANSWER


class BadRow(BaseModel):
    """A row or trace that could not be evaluated, and why."""

    where: str  # "line 7", "trace 4bf9..."
    outcome: Outcome
    reason: str


class LogReadResult(BaseModel):
    """The records of one log and everything that was not kept, with counts per outcome.

    `expected` and `found` are the reader's words for the shape it reads and the shape the file had
    (e.g. "columns question, answer, ..." and "columns q, a"): said when nothing could be kept.
    """

    source: str
    format: str
    records: list[LogRecord] = Field(default_factory=list)
    bad: list[BadRow] = Field(default_factory=list)  # every row not kept, and the empty answers (kept, failed)
    expected: str = ""
    found: str = ""

    @property
    def counts(self) -> dict[str, int]:
        counts = Counter(b.outcome for b in self.bad)
        counts["kept"] = len(self.records)
        counts["empty_answer"] = sum(1 for r in self.records if r.answer_error)  # kept as failed answers
        return {o: counts.get(o, 0) for o in OUTCOMES}

    def describe(self, limit: int = NAMED) -> str:
        """What was read: counts per outcome, then the first `limit` bad rows with their reason, then
        the count of the rest per outcome."""
        counts = self.counts
        head = (f"{self.source} ({self.format}): {counts['kept']} answers kept"
                + "".join(f", {n} {o.replace('_', ' ')}" for o, n in counts.items() if o != "kept" and n))
        same: dict[tuple[str, str], list[str]] = {}  # rows that share outcome and reason are named on one line
        for b in self.bad[:limit]:
            same.setdefault((b.outcome, b.reason), []).append(b.where)
        lines = [head] + [f"  {', '.join(wheres)}: {outcome.replace('_', ' ')}: {reason}"
                          for (outcome, reason), wheres in same.items()]
        if len(self.bad) > limit:
            rest = Counter(b.outcome.replace("_", " ") for b in self.bad[limit:])
            lines.append(f"  ... and {len(self.bad) - limit} more: " + ", ".join(f"{n} {o}" for o, n in rest.items()))
        return "\n".join(lines)

    def reject(self, where: str, reason: str, outcome: Outcome = "malformed") -> None:
        """Count a row or trace as not kept, with where it was read and why."""
        self.bad.append(BadRow(where=where, outcome=outcome, reason=reason))

    def why_nothing(self) -> str:
        """Why no answer was kept: an empty log (what was found: "0 bytes", "a header line only"), or each
        kind of bad row with its count and reason (the one reason they share, else the first), and the
        shape expected beside the one found."""
        if not self.bad:
            return f"an empty log ({self.found})" if self.found else "an empty log"
        groups: dict[str, list[BadRow]] = {}
        for b in self.bad:
            groups.setdefault(b.outcome, []).append(b)
        why = []
        for outcome, rows in sorted(groups.items(), key=lambda g: -len(g[1])):
            noun = _NOUNS.get(rows[0].where.split(" ")[0], "row")  # "line 7" is a row, "trace ab" a trace
            what = f"{len(rows)} {noun}{'' if len(rows) == 1 else 's'} {outcome.replace('_', ' ')}"
            reasons = Counter(b.reason for b in rows)
            common, n = reasons.most_common(1)[0]
            other = next(b for b in rows if b.reason != common) if len(reasons) > 1 else None
            why.append(f"{what}: {common}" if other is None else
                       f"{what}, {n} of them: {common} (others, e.g. {other.where}: {other.reason})")
        shape = f"expected {self.expected}; found {self.found}" if self.expected and self.found else ""
        return "; ".join(why) + (f". {shape[:1].upper()}{shape[1:]}" if shape else "")

    def require_answers(self) -> LogReadResult:
        """This result, when it kept an answer; else ValueError saying why nothing is usable, with the
        counts and the first bad rows."""
        if self.records:
            return self
        raise ValueError(f"{self.source}: no answer to evaluate: {self.why_nothing()}\n{self.describe()}")


def parse_timestamp(value: Any) -> datetime:
    """ISO 8601 (a trailing Z allowed), or seconds / milliseconds since the epoch."""
    if isinstance(value, datetime):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = value / 1000 if value > 1e11 else value  # milliseconds since the epoch are > 1e11
        return datetime.fromtimestamp(seconds, tz=UTC)
    if isinstance(value, str) and value.strip():
        text = value.strip()
        try:
            return datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
        except ValueError:
            pass
        try:
            return parse_timestamp(float(text))
        except ValueError:
            pass
    raise ValueError(f"timestamp {value!r} is not ISO 8601 (e.g. 2026-11-20T14:03:00Z) nor epoch seconds")


def collect(result: LogReadResult, items: Iterable[tuple[str, T | str]], read: Callable[[T, str], LogRecord | str]
            ) -> LogReadResult:
    """Each log item, `(where, raw)` in log order, read into `result`: the one loop of every log reader.

    A raw item that is a string is the reason it is not a row (as `ragwatch.rows.read_rows` gives a bad
    line): `malformed`. `read(raw, where)` returns a record, or a string for a row that parsed but has no
    contexts (`missing_contexts`); a ValueError or TypeError it raises is `malformed` with its message.
    The first record of each trace id is kept, the rest become `duplicate_trace_id` bad rows; a kept
    record without an answer is named too (`empty_answer`, with why). Bad rows come in log order.
    """
    first: dict[str, str] = {}
    for where, raw in items:
        if isinstance(raw, str):
            result.reject(where, raw)
            continue
        try:
            record = read(raw, where)
        except (ValueError, TypeError) as exc:
            result.reject(where, str(exc))
            continue
        if isinstance(record, str):
            result.reject(where, record, "missing_contexts")
            continue
        if record.trace_id in first:
            result.reject(where, f"trace id {record.trace_id!r} was first read at {first[record.trace_id]}; "
                                 "the first is kept", "duplicate_trace_id")
            continue
        first[record.trace_id] = where
        result.records.append(record)
        if record.answer_error:
            result.reject(where, f"{record.answer_error}: kept as a failed answer", "empty_answer")
    return result


def string_list(value: Any, name: str) -> list[str]:
    """A list of ids or sources: a list, a JSON list in a string, or one string; ValueError otherwise."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip().startswith("[") else [value]
        except json.JSONDecodeError as exc:
            raise ValueError(f"{name} is not a JSON list ({exc.msg})") from exc
    if not isinstance(value, list):
        raise ValueError(f"{name} must be a list of ids or sources, got {type(value).__name__}")
    return [str(v) for v in value]
