"""A labelling session over a run's review sample: one item at a time, every label in the log.

The sample is `ragwatch.review.sample.review_sample` (the same seeded stratified draw as `review
export`, inclusion probabilities kept); each item is shown as its tasks (`ragwatch.review.items`),
the judge's view withheld until the item is labelled. `label` / `undo` / `skip` append to the
`LabelLog` (`ragwatch.review.log`); every label is validated by
`ragwatch.review.files.validate_labels`, the function `review import` uses, before it is written.
`state()` has progress, live agreement with the judge and the prediction-powered preview.

Example:
    >>> session = ReviewSession.start(rows, judged, LabelLog(path), run_id="...", run_name="full-1")  # doctest: +SKIP
    >>> session.label("tab-1", session.items[0].item_id, "faithfulness", statements=[1, 0])  # doctest: +SKIP
    >>> session.state("tab-1")["labelled"]  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragwatch.results import MetricResult
from ragwatch.review.files import LabelProblem, validate_labels
from ragwatch.review.items import ReviewItem, TaskKind, build_item
from ragwatch.review.labelled import MIN_LABELS, labelled_estimate
from ragwatch.review.labels import HumanLabel
from ragwatch.review.log import LabelEvent, LabelLog, LabelState, replay
from ragwatch.review.sample import LABEL_PREFIX, Design, ReviewSample, review_sample

DEFAULT_TARGET = 30
AGREEMENT_RESAMPLES = 1000  # bootstrap resamples of the live agreement box: fast enough per label


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
              seed: int = 0, reviewer: str | None = None, design: Design = "active") -> ReviewSession:
        """Draw the review sample (as `review export` does) and open or continue its log."""
        sample = review_sample(rows, judged, n=n, metric_names=metrics, seed=seed, run_id=run_id, design=design)
        by_id = {row["item_id"]: row for row in rows}
        items = [build_item(k, row, by_id[row["item_id"]], judged, sample.metrics)
                 for k, row in enumerate(sample.rows)]
        items = [item for item in items if item.tasks]
        for k, item in enumerate(items):
            item.index = k
        params = {"run_id": run_id, "run_name": run_name, "metrics": sample.metrics, "n": n, "seed": seed,
                  "stratified_by": sample.stratified_by, "strata": sample.strata,
                  "design": sample.design}
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
        if seen is not None and (isinstance(seen, bool) or not isinstance(seen, int)):
            raise ValueError(f"seen is the seq of the label the tab showed (a whole number), not {seen!r:.40}")
        marks: list[int] | None = None
        if task.kind == "statements":
            if not isinstance(statements, list | tuple) or len(statements) != len(task.statements):
                raise ValueError(f"{metric} is labelled statement by statement: send {len(task.statements)} "
                                 "yes/no marks (statements: a list of 1 or 0)")
            if any(not isinstance(s, bool | int | float) or s not in (0, 1) for s in statements):
                raise ValueError("a statement mark is 1 (supported) or 0 (not supported)")
            marks = [int(s) for s in statements]
            value = sum(marks) / len(marks)
        elif value is None:
            raise ValueError(f"{metric} is labelled with one value: send value")
        elif isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**15:
            raise ValueError("value is far outside the metric's scale")  # float() of a huge int would overflow
        elif not isinstance(value, bool | int | float | str):
            raise ValueError(f"value is a number (or yes/no), not a {type(value).__name__}")
        labels, problems = self._validate([(0, self._row(item, metric, value))])
        if problems:
            raise ValueError(str(problems[0]).removeprefix("line 0, "))
        if not labels:  # an empty value is "not labelled" in a file; on the page it is a mistake
            raise ValueError(f"{metric} is labelled with one value: send value")
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
        (`ragwatch.review.labelled.labelled_estimate` on this run's scores), or why there is none yet."""
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
