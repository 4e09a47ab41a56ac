"""A sampled item as the review page shows it: what to label (tasks) and the judge's view.

Each item is shown as tasks, one per metric:

- `statements` (a judge that verifies the answer statement by statement, e.g. faithfulness): the
  person answers yes/no per statement; the label is the share of statements marked supported, the
  metric's own definition, so it sits on the judge's scale and PPI compares like with like;
- `binary` (a pass/fail metric, or a 0-1 score without statements): yes = 1, no = 0;
- `scale` (a Likert judge, e.g. 1-5): one digit.

The judge's view (`ReviewItem.judge`) is for the page to withhold until every task of the item has
a label (no anchoring); then each statement shows the judge's verdict, its reason and where it
looked (`ragwatch.review.hints`).

Example:
    >>> item = build_item(0, sample.rows[0], source_row, judged, sample.metrics)  # doctest: +SKIP
    >>> [task.kind for task in item.tasks]  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from ragwatch.results import MetricInfo, MetricResult
from ragwatch.review.hints import Pointer, judge_pointer, judge_windows, reading_hints
from ragwatch.statements import statement_verdicts

TaskKind = Literal["statements", "binary", "scale"]
MAX_DIGIT_SPAN = 9  # a scale labelled with digit keys: at most 0-9


class Passage(BaseModel):
    rank: int  # the system's own order: 1 is the passage it ranked best
    source: str
    text: str


class StatementJudge(BaseModel):
    supported: bool | None
    p_supported: float | None = None
    reason: str = ""
    pointer: Pointer | None = None


class Task(BaseModel):
    """One metric to label on one item."""

    metric: str
    kind: TaskKind
    scale: tuple[float, float]
    question: str  # what the person is asked
    statements: list[str] = Field(default_factory=list)
    statement_spans: list[tuple[int, int] | None] = Field(default_factory=list)  # each statement in the answer
    hints: list[list[Pointer]] = Field(default_factory=list)  # per statement: where to start reading


class JudgeView(BaseModel):
    score: float
    verdict: str  # e.g. "2 of 3 statements supported", "4 / 5", "pass"
    reason: str = ""
    statements: list[StatementJudge] = Field(default_factory=list)
    support_threshold: float | None = None  # the P(supported) cut-off that decided each statement


class ReviewItem(BaseModel):
    index: int
    item_id: str
    stratum: str
    inclusion_prob: float
    question: str
    answer: str
    reference_answer: str = ""
    passages: list[Passage]
    tasks: list[Task]
    judge: dict[str, JudgeView]  # withheld from the page until the item is labelled


def task_kind(result: MetricResult, details: dict[str, Any]) -> TaskKind:
    """How a person labels this metric (see the module doc); ValueError when the page cannot."""
    info = result.info
    if info.scale is None:
        raise ValueError(f"{result.name} has no bounded scale to label on a page; use `review export`")
    low, high = info.scale
    if (low, high) == (0.0, 1.0) and details.get("statements") and details.get("verdicts"):
        return "statements"
    if info.binary or (low, high) == (0.0, 1.0):
        return "binary"
    if float(low).is_integer() and float(high).is_integer() and 1 <= high - low <= MAX_DIGIT_SPAN:
        return "scale"
    raise ValueError(f"{result.name}: a scale of {low:g}-{high:g} has no key per value; use `review export`")


def _statement_spans(answer: str, statements: Sequence[str]) -> list[tuple[int, int] | None]:
    """Where each statement stands in the answer (statements from sentences are substrings)."""
    spans: list[tuple[int, int] | None] = []
    pos = 0
    for statement in statements:
        at = answer.find(statement, pos)
        if at < 0:
            at = answer.find(statement)
        spans.append((at, at + len(statement)) if at >= 0 else None)
        pos = at + len(statement) if at >= 0 else pos
    return spans


def build_item(index: int, row: dict[str, Any], source_row: dict[str, Any], judged: dict[str, MetricResult],
               metrics: Sequence[str]) -> ReviewItem:
    """One sampled row (`review_sample`) as the page shows it; `source_row` is the run's `eval_results` row."""
    texts = [str(t) for t in row.get("contexts") or []]
    sources = list(source_row.get("context_sources") or [])
    passages = [Passage(rank=k + 1, source=str(sources[k]) if k < len(sources) and sources[k] else "", text=t)
                for k, t in enumerate(texts)]
    answer = str(row.get("answer") or "")
    tasks: list[Task] = []
    judge: dict[str, JudgeView] = {}
    for name in metrics:
        result = judged[name]
        item = next((it for it in result.items if it.item_id == row["item_id"] and it.ok), None)
        if item is None or item.score is None:
            continue  # this metric did not score the item: nothing to compare a label with
        details = item.details or {}
        kind = task_kind(result, details)
        scale = result.info.scale or (0.0, 1.0)
        if kind == "statements":
            statements = [str(s) for s in details["statements"]]
            tasks.append(Task(metric=name, kind=kind, scale=scale, statements=statements,
                              statement_spans=_statement_spans(answer, statements),
                              hints=[reading_hints(texts, st) for st in statements],
                              question="Is each statement supported by the contexts?"))
            judge[name] = _statement_judge(item.score, details, texts, result.details)
        else:
            question = (f"Does the answer pass on {name}?" if kind == "binary"
                        else f"Your {name} score, {scale[0]:g} to {scale[1]:g}?")
            tasks.append(Task(metric=name, kind=kind, scale=scale, question=question))
            verdict = _verdict_text(item.score, result.info, kind)
            judge[name] = JudgeView(score=item.score, verdict=verdict, reason=str(details.get("reason", "")))
    return ReviewItem(index=index, item_id=row["item_id"], stratum=row["stratum"],
                      inclusion_prob=float(row["inclusion_prob"]), question=str(row.get("question") or ""),
                      answer=answer, reference_answer=str(row.get("reference_answer") or ""),
                      passages=passages, tasks=tasks, judge=judge)


def _verdict_text(score: float, info: MetricInfo, kind: TaskKind) -> str:
    if kind == "binary":
        cut = info.threshold if info.threshold is not None else 0.5
        return f"{'pass' if score >= cut else 'fail'} ({score:.2f})"
    return f"{score:g} / {(info.scale or (0, 0))[1]:g}"


def _statement_judge(score: float, details: dict[str, Any], passages: list[str],
                     run_details: dict[str, Any]) -> JudgeView:
    """The judge's view of each statement, read from its typed verdicts, with where it looked."""
    verdicts = statement_verdicts(details)
    max_chars = int(run_details.get("max_context_tokens") or 1500) * 4  # the judge's own window size
    windows = judge_windows(passages, max_chars) if passages else []
    out = [StatementJudge(supported=v.verdict, p_supported=v.p_supported, reason=v.reason,
                          pointer=judge_pointer(passages, windows, v)) for v in verdicts]
    supported = sum(1 for s in out if s.supported)
    cuts = {v.threshold for v in verdicts if v.threshold is not None}
    cut = cuts.pop() if len(cuts) == 1 else run_details.get("support_threshold")
    has_probs = any(v.p_supported is not None for v in verdicts)
    return JudgeView(score=score, verdict=f"{supported} of {len(out)} statements supported ({score:.2f})",
                     reason=str(details.get("reason", "")), statements=out,
                     support_threshold=float(cut) if cut is not None and has_probs else None)
