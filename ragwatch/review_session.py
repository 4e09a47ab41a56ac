"""A labelling session over a run's review sample: one item at a time, every label in an append-only log.

The sample is `ragwatch.review.review_sample` (the same seeded stratified draw as `review export`,
inclusion probabilities kept). Each item is shown as tasks, one per metric:

- `statements` (a judge that verifies the answer statement by statement, e.g. faithfulness): the
  person answers yes/no per statement; the label is the share of statements marked supported, the
  metric's own definition, so it sits on the judge's scale and PPI compares like with like;
- `binary` (a pass/fail metric, or a 0-1 score without statements): yes = 1, no = 0;
- `scale` (a Likert judge, e.g. 1-5): one digit.

The judge's verdict on an item is withheld until every task of the item has a label (no anchoring);
then each statement shows the judge's verdict, its reason and where it looked (the context window
that decided and, in it, the sentence closest to the statement and the reason).

`LabelLog` is the durable store: one JSON line per event (`label`, `undo`, `skip`, `session`),
fsynced before a request is answered, appended under an exclusive file lock so that two tabs (or
two servers) never interleave. The current labels are a replay of the log: a later label of the
same item and metric wins; when it replaces a label the writer had not seen (another tab), the event
records what it replaced. Every label is validated by `ragwatch.review.validate_labels`, the
function `review import` uses, before it is written.

Example:
    >>> session = ReviewSession.start(rows, judged, LabelLog(path), run_id="...", run_name="full-1")  # doctest: +SKIP
    >>> session.label("tab-1", session.items[0].item_id, "faithfulness", statements=[1, 0])  # doctest: +SKIP
    >>> session.state("tab-1")["progress"]  # doctest: +SKIP
"""

from __future__ import annotations

import fcntl
import os
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from ragwatch.labels import MIN_LABELS, HumanLabel, labelled_estimate
from ragwatch.results import MetricInfo, MetricResult
from ragwatch.review import LABEL_PREFIX, LabelProblem, ReviewSample, review_sample, validate_labels
from ragwatch.statements import statement_verdicts

TaskKind = Literal["statements", "binary", "scale"]
EventKind = Literal["session", "label", "undo", "skip"]
DEFAULT_TARGET = 30
AGREEMENT_RESAMPLES = 1000  # bootstrap resamples of the live agreement box: fast enough per label
MAX_DIGIT_SPAN = 9  # a scale labelled with digit keys: at most 0-9
_WORD = re.compile(r"[a-z0-9]+")
# a sentence ends at . ! or ?, or at a line break unless the next line goes on in lower case (a
# hard-wrapped paragraph); code, lists and headings start their lines otherwise
_SENTENCE = re.compile(r"\S.*?(?:[.!?](?=[\s\"')\]]|$)|(?=\n(?![a-z]))|$)", re.S)
_STOP = frozenset(("a", "an", "the", "and", "or", "of", "to", "in", "on", "for", "by", "with", "is", "are", "was",
                   "were", "be", "it", "its", "this", "that", "as", "at", "from", "can", "you", "your", "not",
                   "do", "does", "which", "what", "how", "when"))


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


# --- what the page shows ---------------------------------------------------------------------------

class Passage(BaseModel):
    rank: int  # the system's own order: 1 is the passage it ranked best
    source: str
    text: str


class Pointer(BaseModel):
    """A place in the contexts: passage index and character span, and the judge window it lies in."""

    passage: int
    start: int
    end: int
    window: int | None = None
    window_passages: list[int] = Field(default_factory=list)


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


def judge_windows(passages: Sequence[str], max_chars: int) -> list[list[tuple[int, int, int]]]:
    """The context windows a statement-verifying judge read, as (passage, start, end) spans."""
    from ragwatch.judges.verify import context_window_spans

    return context_window_spans(passages, max_chars)


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


def closest_sentences(spans: Sequence[tuple[int, int, int]], passages: Sequence[str], statement: str,
                      reason: str = "", *, top: int = 1, min_shared: float = 1.0) -> list[Pointer]:
    """The `top` sentences within `spans` sharing most words with the statement (the judge's reason
    counts half), best first; none shares fewer than `min_shared`."""
    target, hint = _words(statement), _words(reason) - _words(statement)
    scored: list[tuple[float, int, int, int]] = []
    for p, start, end in spans:
        for m in _SENTENCE.finditer(passages[p], start, end):
            words = _words(m.group())
            score = len(words & target) + 0.5 * len(words & hint)
            if score >= min_shared:
                scored.append((-score, p, m.start(), m.end()))
    return [Pointer(passage=p, start=a, end=b) for _, p, a, b in sorted(scored)[:top]]


def reading_hints(passages: Sequence[str], statement: str) -> list[Pointer]:
    """Where to start reading for a statement: the two sentences sharing most of its words.

    Computed from the statement alone (never from the judge's output), so showing it before the
    person answers gives nothing of the judge's verdict away; it only saves a scan of the contexts.
    """
    spans = [(p, 0, len(text)) for p, text in enumerate(passages)]
    return closest_sentences(spans, passages, statement, top=2, min_shared=min(2.0, len(_words(statement))))


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
    """The judge's view of each statement, read from its typed verdicts; the pointer is the first
    sentence it cited (evidence verification), else the closest sentence in the window that decided."""
    verdicts = statement_verdicts(details)
    max_chars = int(run_details.get("max_context_tokens") or 1500) * 4  # the judge's own window size
    windows = judge_windows(passages, max_chars) if passages else []
    out = []
    for v in verdicts:
        pointer = _cited_pointer(passages, v.evidence_text)
        if pointer is None:
            w = v.window
            spans = windows[w - 1] if w is not None and 0 < w <= len(windows) else [
                span for window in windows for span in window]
            found = closest_sentences(spans, passages, v.statement, v.reason)
            pointer = found[0].model_copy(update={"window": w, "window_passages": sorted({p for p, _, _ in spans})}
                                          ) if found else None
        out.append(StatementJudge(supported=v.verdict, p_supported=v.p_supported, reason=v.reason, pointer=pointer))
    supported = sum(1 for s in out if s.supported)
    cuts = {v.threshold for v in verdicts if v.threshold is not None}
    cut = cuts.pop() if len(cuts) == 1 else run_details.get("support_threshold")
    has_probs = any(v.p_supported is not None for v in verdicts)
    return JudgeView(score=score, verdict=f"{supported} of {len(out)} statements supported ({score:.2f})",
                     reason=str(details.get("reason", "")), statements=out,
                     support_threshold=float(cut) if cut is not None and has_probs else None)


def _cited_pointer(passages: Sequence[str], cited: Sequence[str]) -> Pointer | None:
    """Where the first cited sentence sits in the passages (None when nothing was cited or found)."""
    for text in cited:
        for p, passage in enumerate(passages):
            at = passage.find(text)
            if at >= 0:
                return Pointer(passage=p, start=at, end=at + len(text), window_passages=[p])
    return None


# --- the log ---------------------------------------------------------------------------------------

class LabelEvent(BaseModel):
    """One line of the log. `seq` is its line number (1-based), assigned under the file lock."""

    seq: int = 0
    at: str = ""
    kind: EventKind
    tab: str = ""
    item_id: str = ""
    metric: str = ""
    value: float | None = None
    statements: list[int] | None = None
    stratum: str = ""
    inclusion_prob: float | None = None
    reviewer: str | None = None
    previous: int | None = None  # seq of the label this one replaced (undo restores it)
    replaced: dict[str, Any] | None = None  # set when it replaced a label the writer had not seen
    undoes: int | None = None
    params: dict[str, Any] | None = None  # a session header: run, metrics, n, seed

    @property
    def key(self) -> tuple[str, str]:
        return (self.item_id, self.metric)


class LabelLog:
    """An append-only JSONL file of `LabelEvent`s; safe across threads and processes (flock)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.touch(exist_ok=True)
        self._lock = threading.Lock()
        self._events: list[LabelEvent] = []
        self._offset = 0
        self._lines = 0
        self.skipped_lines: list[int] = []  # a line cut short by a kill mid-write is ignored, not fatal

    def _read_new(self, handle: Any) -> None:
        handle.seek(self._offset)
        data = handle.read()
        end = data.rfind(b"\n") + 1  # only whole lines: a writer may be mid-line in another process
        for raw in data[:end].split(b"\n")[:-1]:
            self._lines += 1
            try:
                event = LabelEvent.model_validate_json(raw)
            except ValueError:
                self.skipped_lines.append(self._lines)
                continue
            self._events.append(event.model_copy(update={"seq": self._lines}))
        self._offset += end

    def events(self) -> list[LabelEvent]:
        """Every event so far, including those other processes appended."""
        with self._lock, self.path.open("rb") as handle:
            fcntl.flock(handle, fcntl.LOCK_SH)
            try:
                self._read_new(handle)
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
            return list(self._events)

    def append(self, event: LabelEvent, check: Any = None) -> LabelEvent:
        """Write `event` (seq and time assigned) durably; `check(events)` runs under the lock first
        and may return an updated event (e.g. filled with what it replaces) or raise."""
        with self._lock, self.path.open("a+b") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                self._read_new(handle)
                if check is not None:
                    event = check(list(self._events)) or event
                event = event.model_copy(update={"at": event.at or _now()})
                # seq is not written: it is the line number, assigned on reading
                line = (event.model_dump_json(exclude_defaults=True, exclude={"seq"}) + "\n").encode()
                if not self._ends_with_newline(handle):
                    line = b"\n" + line  # a line torn by a kill mid-write stays a line of its own
                handle.seek(0, os.SEEK_END)
                handle.write(line)
                handle.flush()
                os.fsync(handle.fileno())
                self._read_new(handle)
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
            return self._events[-1]

    def _ends_with_newline(self, handle: Any) -> bool:
        size = handle.seek(0, os.SEEK_END)
        if size == 0:
            return True
        handle.seek(size - 1)
        return handle.read(1) == b"\n"


@dataclass
class LabelState:
    """The log replayed: the current label per (item, metric), skipped items, the last header."""

    current: dict[tuple[str, str], LabelEvent] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)  # item -> seq of its last skip
    params: dict[str, Any] | None = None
    last_seq: int = 0


def replay(events: Sequence[LabelEvent]) -> LabelState:
    by_seq = {e.seq: e for e in events}
    state = LabelState()
    for event in events:
        state.last_seq = event.seq
        if event.kind == "session":
            state.params = event.params
        elif event.kind == "skip":
            state.skipped[event.item_id] = event.seq
        elif event.kind == "label":
            state.current[event.key] = event
            state.skipped.pop(event.item_id, None)
        elif event.kind == "undo":
            now = state.current.get(event.key)
            if now is None or now.seq != event.undoes:
                continue  # already replaced by a later label: nothing of this tab's left to undo
            before = by_seq.get(now.previous) if now.previous else None
            if before is not None and before.kind == "label":
                state.current[event.key] = before
            else:
                state.current.pop(event.key)
    return state


# --- the session -----------------------------------------------------------------------------------

class ReviewSession:
    """The sampled items of one run, the log of their labels, and what the page needs from both."""

    def __init__(self, sample: ReviewSample, items: list[ReviewItem], judged: dict[str, MetricResult],
                 log: LabelLog, *, run_name: str, reviewer: str | None = None) -> None:
        self.sample, self.items, self.judged, self.log = sample, items, judged, log
        self.run_name, self.reviewer = run_name, reviewer
        self.by_id = {item.item_id: item for item in items}
        self.source = log.path.name  # what `human_labels` records as the labels' source
        self._cache: dict[str, tuple[int, Any]] = {}

    @classmethod
    def start(cls, rows: Sequence[dict[str, Any]], judged: dict[str, MetricResult], log: LabelLog, *,
              run_id: str, run_name: str, n: int = DEFAULT_TARGET, metrics: Sequence[str] | None = None,
              seed: int = 0, reviewer: str | None = None) -> ReviewSession:
        """Draw the review sample (as `review export` does) and open or continue its log."""
        sample = review_sample(rows, judged, n=n, metric_names=metrics, seed=seed, run_id=run_id)
        by_id = {row["item_id"]: row for row in rows}
        items = [build_item(k, row, by_id[row["item_id"]], judged, sample.metrics)
                 for k, row in enumerate(sample.rows)]
        items = [item for item in items if item.tasks]
        for k, item in enumerate(items):
            item.index = k
        params = {"run_id": run_id, "run_name": run_name, "metrics": sample.metrics, "n": n, "seed": seed,
                  "stratified_by": sample.stratified_by, "strata": sample.strata}
        if replay(log.events()).params != params:
            log.append(LabelEvent(kind="session", params=params, reviewer=reviewer))
        return cls(sample, items, judged, log, run_name=run_name, reviewer=reviewer)

    # reading ------------------------------------------------------------------------------------
    def labelled_state(self) -> LabelState:
        return replay(self.log.events())

    def is_done(self, item: ReviewItem, state: LabelState) -> bool:
        return all((item.item_id, task.metric) in state.current for task in item.tasks)

    def next_index(self, state: LabelState, after: int = -1) -> int | None:
        """The first item after `after` (wrapping) that is neither labelled nor skipped, else the
        first skipped one; None when every item is labelled."""
        order = [self.items[(after + 1 + k) % len(self.items)] for k in range(len(self.items))]
        for item in order:
            if not self.is_done(item, state) and item.item_id not in state.skipped:
                return item.index
        skipped = [item for item in self.items if not self.is_done(item, state)]
        return min(skipped, key=lambda it: state.skipped.get(it.item_id, 0)).index if skipped else None

    def item_view(self, index: int, state: LabelState | None = None) -> dict[str, Any]:
        """An item for the page: the judge's view only once every task has a label."""
        if not 0 <= index < len(self.items):
            raise IndexError(f"no item {index}: the sample has {len(self.items)}")
        state = state or self.labelled_state()
        item = self.items[index]
        view = item.model_dump(exclude={"judge"})
        view["labels"] = {task.metric: _label_view(state.current[(item.item_id, task.metric)])
                          for task in item.tasks if (item.item_id, task.metric) in state.current}
        revealed = self.is_done(item, state)
        view["judge"] = {m: j.model_dump() for m, j in item.judge.items()} if revealed else None
        view["skipped"] = item.item_id in state.skipped
        return view

    def state(self, tab: str = "") -> dict[str, Any]:
        """Progress, agreement and estimates so far, and which item to show next."""
        state = self.labelled_state()
        done = sum(1 for item in self.items if self.is_done(item, state))
        return {
            "run": self.run_name, "run_id": self.sample.run_id, "metrics": self.sample.metrics,
            "seed": self.sample.seed, "stratified_by": self.sample.stratified_by, "strata": self.sample.strata,
            "target": len(self.items), "labelled": done, "seq": state.last_seq,
            "next": self.next_index(state),
            "items": [{"index": item.index, "done": self.is_done(item, state),
                       "skipped": item.item_id in state.skipped} for item in self.items],
            "agreement": self._cached("agreement", state, self.agreement),
            "estimates": self._cached("estimates", state, self.estimates),
            "can_undo": self._last_own_label(state, tab) is not None,
            "log": str(self.log.path),
        }

    def _cached(self, name: str, state: LabelState, compute: Any) -> Any:
        seq, value = self._cache.get(name, (-1, None))
        if seq != state.last_seq:
            value = compute(state)
            self._cache[name] = (state.last_seq, value)
        return value

    # writing ------------------------------------------------------------------------------------
    def label(self, tab: str, item_id: str, metric: str, *, value: Any = None,
              statements: Sequence[Any] | None = None, seen: int | None = None) -> dict[str, Any]:
        """Store one label (validated as `review import` validates); `seen` is the seq of the label of
        this item and metric the tab showed (0: none). Replacing another label the tab had not seen
        is allowed (the last write wins) and recorded in the event and the answer's `notice`."""
        item = self.by_id.get(item_id)
        if item is None:
            raise ValueError(f"item {item_id!r} is not in this review sample")
        task = next((t for t in item.tasks if t.metric == metric), None)
        if task is None:
            raise ValueError(f"item {item_id!r} has no {metric!r} to label; it has "
                             f"{[t.metric for t in item.tasks]}")
        marks: list[int] | None = None
        if task.kind == "statements":
            if statements is None or len(statements) != len(task.statements):
                raise ValueError(f"{metric} is labelled statement by statement: send {len(task.statements)} "
                                 "yes/no marks")
            if any(s not in (0, 1, True, False) for s in statements):
                raise ValueError("a statement mark is 1 (supported) or 0 (not supported)")
            marks = [int(s) for s in statements]
            value = sum(marks) / len(marks)
        labels, problems = self._validate([(0, self._row(item, metric, value))])
        if problems:
            raise ValueError(str(problems[0]).removeprefix("line 0, "))
        draft = LabelEvent(kind="label", tab=tab, item_id=item_id, metric=metric, value=labels[0].value,
                           statements=marks, stratum=item.stratum, inclusion_prob=item.inclusion_prob,
                           reviewer=self.reviewer)

        def check(events: list[LabelEvent]) -> LabelEvent:
            now = replay(events).current.get(draft.key)
            update: dict[str, Any] = {"previous": now.seq if now else None}
            if now is not None and seen is not None and now.seq != seen:
                update["replaced"] = {"seq": now.seq, "value": now.value, "tab": now.tab, "at": now.at,
                                      "reviewer": now.reviewer}
            return draft.model_copy(update=update)

        event = self.log.append(draft, check)
        notice = None
        if event.replaced:
            notice = (f"another tab had labelled this item {metric} = {event.replaced['value']:g} at "
                      f"{event.replaced['at']}; your {event.value:g} replaces it (recorded in the log)")
        return {"event": event.model_dump(), "notice": notice, "item": self.item_view(item.index)}

    def undo(self, tab: str) -> dict[str, Any]:
        """Take back this tab's last label that is still current (an earlier label it replaced returns)."""
        target: LabelEvent | None = None

        def check(events: list[LabelEvent]) -> LabelEvent:
            nonlocal target
            target = self._last_own_label(replay(events), tab)
            if target is None:
                raise LookupError("nothing to undo: this tab has no label that is still current")
            return LabelEvent(kind="undo", tab=tab, item_id=target.item_id, metric=target.metric,
                              undoes=target.seq, reviewer=self.reviewer)

        event = self.log.append(LabelEvent(kind="undo", tab=tab), check)
        index = self.by_id[event.item_id].index
        return {"event": event.model_dump(), "index": index, "item": self.item_view(index)}

    def skip(self, tab: str, item_id: str) -> dict[str, Any]:
        if item_id not in self.by_id:
            raise ValueError(f"item {item_id!r} is not in this review sample")
        event = self.log.append(LabelEvent(kind="skip", tab=tab, item_id=item_id, reviewer=self.reviewer))
        return {"event": event.model_dump()}

    def _last_own_label(self, state: LabelState, tab: str) -> LabelEvent | None:
        own = [e for e in state.current.values() if e.tab == tab and tab]
        return max(own, key=lambda e: e.seq) if own else None

    # labels as `review import` sees them -----------------------------------------------------------
    def _row(self, item: ReviewItem, metric: str, value: Any) -> dict[str, Any]:
        return {"item_id": item.item_id, "run_id": self.sample.run_id, "stratum": item.stratum,
                "inclusion_prob": item.inclusion_prob, "reviewer": self.reviewer or "",
                LABEL_PREFIX + metric: value}

    def _validate(self, rows: list[tuple[int, dict[str, Any]]]) -> tuple[list[HumanLabel], list[LabelProblem]]:
        return validate_labels(rows, self.judged, source=self.source)

    def human_labels(self, events: Sequence[LabelEvent]) -> tuple[list[HumanLabel], list[LabelProblem]]:
        """`events` (label events, e.g. the current ones) as validated `HumanLabel`s; `line` is the log line."""
        rows = []
        for event in events:
            row = {"item_id": event.item_id, "run_id": self.sample.run_id, "stratum": event.stratum or "all",
                   "inclusion_prob": event.inclusion_prob or 1.0, "reviewer": event.reviewer or "",
                   LABEL_PREFIX + event.metric: event.value}
            rows.append((event.seq, row))
        return self._validate(rows)

    # figures ------------------------------------------------------------------------------------
    def agreement(self, state: LabelState) -> list[dict[str, Any]]:
        """Judge vs the labels so far, per metric: accuracy and Cohen's kappa (weighted for Likert), with n."""
        from ragwatch.statistics.agreement import accuracy, cohen_kappa, weighted_kappa, with_interval

        out = []
        for metric in self.sample.metrics:
            human: list[float] = []
            judge: list[float] = []
            items = 0
            kind: TaskKind | None = None
            for item in self.items:
                event = state.current.get((item.item_id, metric))
                task = next((t for t in item.tasks if t.metric == metric), None)
                if event is None or task is None:
                    continue
                items += 1
                kind = task.kind
                view = item.judge[metric]
                if task.kind == "statements" and event.statements is not None:
                    for mark, st in zip(event.statements, view.statements, strict=False):
                        if st.supported is not None:
                            human.append(float(mark))
                            judge.append(float(st.supported))
                elif task.kind == "binary":
                    info = self.judged[metric].info
                    cut = info.threshold if info.threshold is not None else 0.5
                    human.append(float(event.value or 0.0))
                    judge.append(float(view.score >= cut))
                else:
                    human.append(float(event.value or 0.0))
                    judge.append(float(round(view.score)))
            row: dict[str, Any] = {"metric": metric, "kind": kind, "items": items, "n": len(human),
                                   "unit": "statements" if kind == "statements" else "items"}
            if len(human) >= MIN_LABELS:
                kw = {"resamples": AGREEMENT_RESAMPLES, "seed": 0}
                row["accuracy"] = with_interval(accuracy, human, judge, **kw).model_dump()
                kappa = weighted_kappa if kind == "scale" else cohen_kappa
                row["kappa"] = with_interval(kappa, human, judge, **kw).model_dump()
                row["kappa_name"] = "weighted kappa" if kind == "scale" else "Cohen's kappa"
            out.append(row)
        return out

    def estimates(self, state: LabelState) -> list[dict[str, Any]]:
        """Per metric, the prediction-powered estimate the next `evaluate` reports from these labels
        (`ragwatch.labels.labelled_estimate` on this run's scores), or why there is none yet."""
        labels, _ = self.human_labels(list(state.current.values()))
        out = []
        for metric in self.sample.metrics:
            result = self.judged[metric]
            by_item = {lab.item_id: lab for lab in labels if lab.metric == metric}
            estimate, reason = labelled_estimate(result, by_item)
            row: dict[str, Any] = {"metric": metric, "judge": result.score, "judge_ci": [result.ci_low, result.ci_high],
                                   "n_labels": len(by_item), "n_items": result.n_scored}
            if estimate is not None:
                row.update(score=estimate.score, ci=[estimate.ci_low, estimate.ci_high],
                           labelled_only_ci=list(estimate.labelled_only_ci or []) or None)
            else:
                row["reason"] = reason
            out.append(row)
        return out


def _label_view(event: LabelEvent) -> dict[str, Any]:
    return {"value": event.value, "statements": event.statements, "seq": event.seq, "tab": event.tab,
            "at": event.at, "replaced": event.replaced}
