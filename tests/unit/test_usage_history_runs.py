"""Runs that overlap stay apart: each run's usage history counts its own calls only."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from ragwatch.llm.history import RUN_ID_ENV, StageRecord, read_history, record_stage, start_run
from ragwatch.llm.types import Usage

OTHER = """
from ragwatch.llm.history import StageRecord, record_stage
from ragwatch.llm.types import Usage
record_stage(StageRecord.of("openai/other-endpoint", "judge faithfulness", Usage(calls=1280, cost_usd=0.17), 9.0))
"""


def test_another_process_calls_are_not_this_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGWATCH_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv(RUN_ID_ENV, raising=False)
    since = time.time()
    mine = start_run()
    assert os.environ[RUN_ID_ENV] == mine
    record_stage(StageRecord.of("openai/judge", "judge faithfulness", Usage(calls=3, cost_usd=0.01), 1.0))
    env = {**os.environ, RUN_ID_ENV: "another-run"}  # an evaluate started by a scheduler, same machine
    subprocess.run([sys.executable, "-c", OTHER], env=env, check=True, cwd=os.getcwd())
    everything = read_history(since=since)
    assert sorted(r.calls for r in everything) == [3, 1280]  # one file, both processes
    own = read_history(since=since, run_id=mine)
    assert [(r.calls, r.run_id) for r in own] == [(3, mine)]
    assert [r.calls for r in read_history(since=since, run_id="another-run")] == [1280]


# ------------------------------------------------------------------ a stage's rate, robust to load
from ragwatch.llm.history import RATE_RUNS, stage_rate  # noqa: E402

JUDGE, ANSWERS = "judge faithfulness stage 1", "rag answers"
LOCAL_JUDGE, HOSTED = "local/qwen2.5-coder-1.5b-instruct", "gpt-4o-mini"


def run_records(t: float, run: str, per_call: float, *, calls: int = 65, model: str = LOCAL_JUDGE,
                stage: str = JUDGE, pieces: int = 1, failures: int = 0, prompt: int = 0) -> list[StageRecord]:
    """One run's records of a stage: `pieces` batches whose wall times add up to `per_call` x calls."""
    share = calls // pieces
    sizes = [share] * (pieces - 1) + [calls - share * (pieces - 1)]
    # latency sums the calls' waits for a slot: far above the wall time with 4 calls in flight
    return [StageRecord(time=t + k, model=model, stage=stage, requests=n, calls=n, failures=failures if k == 0 else 0,
                        prompt_tokens=n * prompt, latency_s=n * n / 8 * per_call, wall_s=n * per_call, run_id=run)
            for k, n in enumerate(sizes)]


def test_the_rate_is_seconds_of_wall_per_call_summed_over_a_runs_batches():
    records = run_records(100.0, "a", 4.5, calls=65, pieces=3)
    rate = stage_rate(records, LOCAL_JUDGE, JUDGE)
    assert rate is not None and rate.runs == 1 and rate.calls == 65
    assert rate.seconds_per_call == pytest.approx(4.5)  # not the latency, which counts the wait for a slot
    assert "1 runs" not in rate.describe() and "4.50 s/call: that run (65 calls" in rate.describe()


def test_runs_under_load_mixed_in_do_not_move_the_rate_off_the_idle_one():
    """Idle runs take 4.5 s per call; runs beside other work 2-6x that. Newest last, loaded ones the majority,
    the newest among them: the rate is still an idle run's, where a mean of the newest would be 3x off."""
    idle = [4.4, 4.5, 4.7]
    loaded = [9.1, 13.0, 27.5, 11.2, 19.9, 16.0]
    order = [loaded[0], idle[0], loaded[1], loaded[2], idle[1], loaded[3], idle[2], loaded[4], loaded[5]]
    records = [r for k, per_call in enumerate(order) for r in run_records(1000.0 * k, f"run{k}", per_call)]
    rate = stage_rate(records, LOCAL_JUDGE, JUDGE)
    assert rate is not None and rate.runs == len(order)
    assert rate.seconds_per_call in idle
    assert rate.seconds_per_call == pytest.approx(4.5, rel=0.05)
    newest_mean = sum(order[-3:]) / 3  # a mean of the newest three runs: nearly 3x the idle time
    assert newest_mean > 2.5 * rate.seconds_per_call
    assert (rate.fastest, rate.slowest) == (min(order), max(order))
    assert f"the 0.25 quantile of {len(order)} runs" in rate.describe()


def test_another_models_records_and_another_stage_are_not_this_rate():
    records = (run_records(0.0, "a", 4.5) + run_records(10.0, "b", 0.3, model=HOSTED)
               + run_records(20.0, "c", 3.4, stage=ANSWERS) + run_records(30.0, "d", 0.2, model=HOSTED, stage=ANSWERS))
    assert stage_rate(records, LOCAL_JUDGE, JUDGE).seconds_per_call == pytest.approx(4.5)
    assert stage_rate(records, HOSTED, JUDGE).seconds_per_call == pytest.approx(0.3)
    assert stage_rate(records, LOCAL_JUDGE, ANSWERS).seconds_per_call == pytest.approx(3.4)
    assert stage_rate(records, "local/qwen2.5-0.5b-instruct", JUDGE) is None  # none of this model: no rate


def test_only_the_newest_runs_count_and_failed_or_batch_runs_never():
    old_fast = [r for k in range(5) for r in run_records(float(k), f"old{k}", 1.0)]  # other hardware, long ago
    new = [r for k in range(RATE_RUNS) for r in run_records(1000.0 + k, f"new{k}", 5.0 + k / 10)]
    refused = run_records(5000.0, "refused", 0.01, failures=60)  # a refused connection fails in milliseconds
    batch = [r.model_copy(update={"batch": True, "wall_s": 0.5}) for r in run_records(6000.0, "batch", 1.0)]
    rate = stage_rate(old_fast + new + refused + batch, LOCAL_JUDGE, JUDGE)
    assert rate is not None and rate.runs == RATE_RUNS and rate.first >= 1000.0
    assert 5.0 <= rate.seconds_per_call <= 5.3


def test_records_without_a_run_id_are_runs_of_their_own(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGWATCH_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv(RUN_ID_ENV, raising=False)
    for per_call in (4.5, 12.0, 30.0):
        record_stage(StageRecord.of(LOCAL_JUDGE, JUDGE, Usage(calls=10), wall_s=10 * per_call))
    rate = stage_rate(read_history(), LOCAL_JUDGE, JUDGE)
    assert rate is not None and rate.runs == 3 and rate.seconds_per_call == pytest.approx(4.5)
    assert read_history(path=tmp_path / "usage" / "history.jsonl") == read_history()


def test_runs_of_unlike_calls_are_not_the_rate_while_alike_ones_exist():
    """A test suite's runs of the same model and stage on tiny prompts are fast; the config's runs read 600
    tokens a call. Timing 600-token calls reads the alike runs; with none alike, all runs, and says so."""
    tiny = [r for k in range(6) for r in run_records(100.0 + k, f"test{k}", 0.4, prompt=40)]
    real = [r for k, s in enumerate([4.6, 9.0]) for r in run_records(200.0 + k, f"real{k}", s, prompt=600)]
    rate = stage_rate(tiny + real, LOCAL_JUDGE, JUDGE, prompt_tokens=640)
    assert rate.seconds_per_call == pytest.approx(4.6) and rate.runs == 2 and not rate.unlike
    assert stage_rate(tiny + real, LOCAL_JUDGE, JUDGE).seconds_per_call == pytest.approx(0.4)  # unfiltered
    fallback = stage_rate(tiny, LOCAL_JUDGE, JUDGE, prompt_tokens=640)
    assert fallback.unlike and "differ from these by more than 2x" in fallback.describe()
