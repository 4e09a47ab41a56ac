"""Progress off a terminal: a log line about every 10%, none for a handful of items."""

from __future__ import annotations

import functools
import logging
import threading

from pydantic import BaseModel

from ragwatch.judges import engine
from ragwatch.judges.engine import Call, LLMJudge, Score
from ragwatch.llm.types import Generation
from ragwatch.progress import Progress
from ragwatch.results import MetricInfo
from ragwatch.types import EvalSample, RagAnswer


def test_lines_every_tenth_when_not_a_terminal(caplog):
    now = [0.0]
    progress = Progress(200, "judge x", terminal=False, clock=lambda: now[0])
    with caplog.at_level(logging.INFO, logger="ragwatch.progress"):
        for _ in range(200):
            now[0] += 0.5
            progress.update()
    lines = [r.getMessage() for r in caplog.records if r.name == "ragwatch.progress"]
    assert len(lines) == 10
    assert lines[0] == "judge x: 20/200 (10%) in 10s, about 90s left"
    assert lines[-1] == "judge x: 200/200 done in 100s"


def test_no_lines_for_a_few_items_or_on_a_terminal(caplog):
    with caplog.at_level(logging.INFO, logger="ragwatch.progress"):
        with Progress(5, "tiny", terminal=False) as progress:
            for _ in range(5):
                progress.update()
        with Progress(100, "bar", terminal=True) as progress:
            progress.update(100)
    assert not [r for r in caplog.records if r.name == "ragwatch.progress"]


def test_a_few_slow_items_get_a_line_at_most_every_slow_line_interval(caplog):
    now = [0.0]
    with (caplog.at_level(logging.INFO, logger="ragwatch.progress"),
          Progress(8, "judge faithfulness stage 1", terminal=False, clock=lambda: now[0]) as progress):
        for _ in range(8):
            now[0] += 20.0  # 20 s per item: 160 s in all
            progress.update()
    lines = [r.getMessage() for r in caplog.records if r.name == "ragwatch.progress"]
    assert lines[0] == "judge faithfulness stage 1: 2/8 (25%) in 40s, about 120s left"
    assert len(lines) == 4 and lines[-1] == "judge faithfulness stage 1: 8/8 done in 160s"


def test_lines_pass_a_root_logger_at_warning(monkeypatch):
    records = []

    class Collect(logging.Handler):
        def emit(self, record):
            records.append(record.getMessage())

    root = logging.getLogger()
    handler = Collect()
    monkeypatch.setattr(root, "level", logging.WARNING)  # as ZenML leaves it with verbosity WARN
    monkeypatch.setattr(logging.getLogger("ragwatch.progress"), "level", logging.NOTSET)
    root.addHandler(handler)
    try:
        progress = Progress(20, "answers", terminal=False)
        progress.update(20)
    finally:
        root.removeHandler(handler)
    assert records == ["answers: 20/20 done in 0s"]


# ------------------------------------------------------------------ one bar per judge (the engine)
def test_grow_keeps_one_sequence_and_says_done_once_at_the_end(caplog):
    now = [0.0]
    progress = Progress(40, "judge j", terminal=False, clock=lambda: now[0], unit="calls")
    progress.more_may_come = True
    with caplog.at_level(logging.INFO, logger="ragwatch.progress"):
        for _ in range(40):
            now[0] += 1.0
            progress.update()
        progress.grow(10)  # a second stage: only the undecided items go on
        for _ in range(10):
            now[0] += 1.0
            progress.update()
        progress.close()
    lines = [r.getMessage() for r in caplog.records if r.name == "ragwatch.progress"]
    assert [line for line in lines if "done" in line] == ["judge j: 50/50 calls done in 50s"]
    assert lines[-1] == "judge j: 50/50 calls done in 50s"
    assert "judge j: 40/40 calls" not in " ".join(lines)  # the end of stage 1 is not the end


class _Reply(BaseModel):
    ok: bool


class _Reply2(BaseModel):
    ok: bool
    why: str


class _TwoSchemaJudge(LLMJudge):
    """Stage 1: one call per item, in two schemas (two concurrent batches, as the faithfulness judge's
    verdict schemas for answers of 1 and 2 statements); stage 2 for every third item."""

    def __init__(self, llm) -> None:
        self.llm = llm
        self.metrics = {"two": MetricInfo(scale=(0.0, 1.0))}

    def plan(self, sample, answer):
        schema = _Reply if int(sample.id) % 2 else _Reply2
        yield [Call([{"role": "user", "content": sample.question}], schema)]
        if int(sample.id) % 3 == 0:
            yield [Call([{"role": "user", "content": "again " + sample.question}], _Reply)]
        return Score(score=1.0)


class _ClockLLM:
    """Every call takes `seconds` of a fake clock, one at a time (a local model), and advances the
    progress it is handed as the client does."""

    settings = None

    def __init__(self, now: list[float], seconds: float) -> None:
        self.now, self.seconds, self.lock = now, seconds, threading.Lock()

    def generate_many(self, prompts, *, schema=None, system=None, desc=None, **overrides):
        # as LLMClient.generate_many: a bar of its own, unless handed one to advance
        bar = desc if isinstance(desc, Progress) else Progress(len(prompts), desc or "fake", terminal=False,
                                                                 clock=lambda: self.now[0])
        out = []
        for _ in prompts:
            with self.lock:
                self.now[0] += self.seconds
            out.append(Generation(text="{}", model="fake"))
            bar.update()
        return out


def test_a_judge_reads_as_one_sequence_with_an_estimate_that_holds(caplog, monkeypatch):
    now = [0.0]
    monkeypatch.setattr(engine, "Progress", functools.partial(Progress, terminal=False, clock=lambda: now[0]))
    samples = [EvalSample(id=str(i), question=f"question {i}") for i in range(60)]
    answers = [RagAnswer(question=s.question, answer="an answer") for s in samples]
    with caplog.at_level(logging.INFO, logger="ragwatch.progress"):
        result = engine.run_judge(_TwoSchemaJudge(_ClockLLM(now, 5.0)), samples, answers)["two"]
    assert result.n_scored == 60
    lines = [(r.created, r.getMessage()) for r in caplog.records if r.name == "ragwatch.progress"]
    messages = [m for _, m in lines]
    assert messages and all(m.startswith("judge two: ") for m in messages), messages  # one label, no stages
    assert messages[-1] == "judge two: 80/80 calls done in 400s"
    counts = [int(m.split(": ")[1].split("/")[0]) for m in messages]
    assert counts == sorted(counts)  # one count that only goes up, not a count per batch
    # the estimate covers the calls known when the line is written: stage 1 ends at 300 s; the stage-2
    # calls (items still undecided) become known then, and grow the total from 60 to 80
    for message in messages[:-1]:
        done, total = (int(x) for x in message.split(": ")[1].split(" ")[0].split("/"))
        elapsed = float(message.split(" in ")[1].split("s")[0])
        left = float(message.split("about ")[1].split("s")[0])
        if done >= 0.2 * total:
            actual = (300.0 if total == 60 else 400.0) - elapsed
            assert actual / 2 <= left <= 2 * actual, message
    assert {int(m.split("/")[1].split(" ")[0]) for m in messages} == {60, 80}
