"""`review export` without `--run` takes the newest run that evaluated its system: a run that could not
evaluate (exit 3) and a `--quick` look are passed over, and the printout says which run it took."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from zenml.enums import ExecutionStatus

from ragwatch_zenml.commands import review


def _run(name: str, *, status: str = "promote", quick: bool = False, judged: bool = True,
         state: ExecutionStatus = ExecutionStatus.COMPLETED) -> SimpleNamespace:
    return SimpleNamespace(name=name, id=f"id-{name}", status=state, run_metadata={"gate": {"status": status}},
                           tags=[SimpleNamespace(name="quick")] if quick else [],
                           steps={review.JUDGE_STEP: object()} if judged else {})


def test_the_newest_evaluated_run_is_taken_and_the_newer_ones_passed_over_are_named(monkeypatch):
    runs = [_run("quick-look", quick=True), _run("outage", status="not_evaluated"),
            _run("retrieval-only", judged=False), _run("running", state=ExecutionStatus.RUNNING),
            _run("good", status="regressed"), _run("older")]
    monkeypatch.setattr(review, "evaluation_runs", lambda: runs)
    found, line = review.newest_reviewable_run()
    assert found.name == "good"  # a regressed run evaluated its system: its items are worth labelling
    assert line.startswith("run good: the newest evaluated run")
    assert "quick-look (a --quick look)" in line and "outage (could not evaluate its system)" in line
    assert review.find_run(None) is found


def test_no_evaluated_run_says_which_were_passed_over_and_what_to_do(monkeypatch):
    monkeypatch.setattr(review, "evaluation_runs", lambda: [_run("quick-look", quick=True)])
    with pytest.raises(ValueError, match=r"passed over: quick-look \(a --quick look\)\).*--run"):
        review.newest_reviewable_run()
    monkeypatch.setattr(review, "evaluation_runs", lambda: [])
    with pytest.raises(ValueError, match=r"no evaluated run with judged items to review: run `python run\.py`"):
        review.find_run(None)


def test_export_prints_the_run_it_picked(monkeypatch, tmp_path):
    monkeypatch.setattr(review, "evaluation_runs", lambda: [_run("quick-look", quick=True), _run("good")])
    monkeypatch.setattr(review, "run_items", lambda run: (_ROWS, _JUDGED))
    _, _, summary = review.export_review(None, n=2, out_dir=tmp_path)
    assert summary.splitlines()[0] == ("review export: run good: the newest evaluated run; newer runs passed over: "
                                       "quick-look (a --quick look) (--run picks another)")
    assert "items of run good" in summary.splitlines()[1]


def _judged():
    from ragwatch.results import ItemScore, MetricInfo, MetricResult

    items = [ItemScore(item_id=f"q{i}", score=float(i % 2)) for i in range(4)]
    info = MetricInfo(family="judge", judge_model="m", scale=(0.0, 1.0), binary=True, prompt_version="v1")
    return {"correctness/pass": MetricResult.from_items("correctness/pass", items, info=info)}


_ROWS = [{"item_id": f"q{i}", "question": f"question {i}?", "answer": "an answer", "correctness/pass": float(i % 2)}
         for i in range(4)]
_JUDGED = _judged()
