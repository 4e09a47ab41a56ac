"""A log as the evaluation set: its answers, as samples that carry what was logged (the answer, the
contexts, feedback, the trace's root span), so `evaluate` measures the system as it ran (through
`ragwatch.rag.logged.LoggedRAG`) or another system answers the logged questions anew.

`LogInput` is FullConfig's `logs:` block: where the log is (`ragwatch.logsources.settings.LogSettings`)
and which of its answers (`window`, the monitor's window model; null: every answer of the log).

Example:
    >>> samples, found = logged_eval_set(LogInput(path="answers.jsonl", window={"length": "7d"}))  # doctest: +SKIP
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from pydantic import model_validator

from ragwatch.logsources.read import read_log
from ragwatch.logsources.records import LogRecord
from ragwatch.logsources.settings import LogSettings
from ragwatch.logsources.window import WindowSettings, last_window
from ragwatch.rag.logged import LOGGED_KEY
from ragwatch.types import EvalSample, RagAnswer, RelevantItem, RetrievedContext

OLD_WINDOW_KEYS = ("window", "budget", "seed")  # the flat spelling before `logs.window` was the window model


class LogInput(LogSettings):
    """A log as the evaluation set of `testset` / `evaluate` (FullConfig `logs:`): the answers of its
    `window`, sampled to the window's `budget` (seeded); no window: every answer of the whole log."""

    window: WindowSettings | None = None
    """Which answers: the window of `length` ending at `at`, sampled to `budget`, as the monitor's `window:`
    block (e.g. {length: 7d, budget: 300}; length null: the whole log); null: every answer of the whole log."""

    @model_validator(mode="before")
    @classmethod
    def _old_spelling(cls, data: Any) -> Any:
        """`window: 7d`, `budget: 300`, `seed: 1` beside `path:` still read, as the window they meant (whose
        unset budget was every answer), with a warning that names the spelling to write."""
        if not isinstance(data, dict) or not ({"budget", "seed"} & set(data) or isinstance(data.get("window"), str)):
            return data
        data = dict(data)
        if isinstance(data.get("window"), dict):
            raise ValueError("logs: budget and seed go inside logs.window (e.g. window: {length: 7d, budget: 300})")
        old = {key: data.pop(key, None) for key in OLD_WINDOW_KEYS}
        window = None if old["window"] is None and old["budget"] is None else {
            "length": old["window"], "budget": old["budget"], "seed": old["seed"] or 0}
        data["window"] = window
        warnings.warn(f"logs: `window: {old['window']}`, `budget: {old['budget']}`, `seed: {old['seed']}` is the old "
                      f"spelling of a log's window, read as `window: {window}`; write that (the monitor's window "
                      "block) instead", FutureWarning, stacklevel=2)
        return data


def logged_answer(record: LogRecord) -> RagAnswer:
    """The answer as the system gave it; an empty answer is a failed answer with its reason."""
    return RagAnswer(
        question=record.question, answer=record.answer, error=record.answer_error,
        contexts=[RetrievedContext(text=c.text, chunk_id=c.id, source=c.source, score=c.score)
                  for c in record.contexts],
    )


def _relevant(value: str) -> RelevantItem:
    kind = "url" if value.startswith(("http://", "https://")) else "document" if "/" in value or "." in value \
        else "chunk_id"
    return RelevantItem(kind=kind, value=value)


def log_samples(records: Sequence[LogRecord]) -> list[EvalSample]:
    """One evaluation sample per record (id = trace id), its logged answer in `metadata`."""
    return [EvalSample(
        id=r.trace_id, question=r.question, reference_answer=r.reference_answer, kind="logged",
        relevant=[_relevant(v) for v in r.relevant],
        metadata={LOGGED_KEY: logged_answer(r).model_dump(mode="json"), "timestamp": r.timestamp.isoformat(),
                  "system_version": r.system_version, "where": r.where,
                  "feedback": r.feedback.model_dump(mode="json") if r.feedback else None,
                  # the logged root span (OpenInference, Phoenix): the OTLP export attaches results under it
                  **({"root_span_id": r.metadata["root_span_id"]} if r.metadata.get("root_span_id") else {})},
    ) for r in records]


def logged_eval_set(settings: LogInput) -> tuple[list[EvalSample], dict[str, Any]]:
    """The evaluation set a log makes (its `window`, sampled to the window's budget) and what reading it found."""
    log = read_log(settings)
    if not log.records:
        raise ValueError(f"{settings.path}: no answer to evaluate\n{log.describe()}")
    window = last_window(log.records, settings.window or WindowSettings(length=None, budget=None))
    report = {"log": log.source, "format": log.format, **log.counts, "window": window.describe(),
              "inclusion_prob": window.inclusion_prob, "bad_rows": [b.model_dump() for b in log.bad[:20]]}
    return log_samples(window.records), report
