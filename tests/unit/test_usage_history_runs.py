"""Runs that overlap stay apart: each run's usage history counts its own calls only."""

from __future__ import annotations

import os
import subprocess
import sys
import time

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
