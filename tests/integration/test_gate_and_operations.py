"""The promotion gate, compare, schedules and watch, through the commands users type."""

from __future__ import annotations

from pathlib import Path

import pytest
from zenml.client import Client
from zenml.enums import ModelStages

from ragwatch_zenml import cli
from ragwatch_zenml.commands import scheduling
from ragwatch_zenml.commands.watch import WatchState, check_once
from tests.integration.conftest import write_config

pytestmark = pytest.mark.integration

GOOD = "The local orchestrator is the default orchestrator of ZenML; it runs pipelines locally."
BAD = "Flyte."


def test_gate_promotes_then_refuses_a_worse_system(tmp_path: Path, tiny_corpus: Path, oracle_module, capsys) -> None:
    oracle_module({"*": GOOD})
    good = write_config(tmp_path / "good", tiny_corpus, synthetic=False, system={"model_name": "ragwatch-gate-rag",
                                                                 "rag": {"kind": "callable",
                                                                         "callable": "fixed_rag:answer"}})
    assert cli.main(["full", "--config", str(good)]) == 0
    production = Client().get_model_version("ragwatch-gate-rag", ModelStages.PRODUCTION)

    # A deliberately worse system (same evaluation set): wrong answers everywhere.
    oracle_module({"*": BAD})
    worse = write_config(
        tmp_path / "worse", tiny_corpus, synthetic=False,
        system={"model_name": "ragwatch-gate-rag",
                "rag": {"kind": "callable", "callable": "fixed_rag:answer", "top_k": 4}},
    )
    assert cli.main(["full", "--config", str(worse)]) == 1
    out = capsys.readouterr().out
    assert "NOT PROMOTED" in out and "regress" in out.lower()
    still = Client().get_model_version("ragwatch-gate-rag", ModelStages.PRODUCTION)
    assert still.id == production.id

    assert cli.main(["compare", "--config", str(worse)]) == 0
    out = capsys.readouterr().out
    assert "similarity" in out and "regressed" in out
    assert Client().get_artifact_version("run_comparison") is not None


def test_watch_runs_once_per_change_and_survives_restart(tmp_path: Path, tiny_corpus: Path) -> None:
    config = write_config(tmp_path, tiny_corpus)
    state_file = tmp_path / "watch.json"
    calls: list[int] = []

    def evaluate() -> int:
        calls.append(1)
        return len(calls)

    changes, _ = check_once(config, evaluate, WatchState(state_file))
    assert changes == ["never evaluated by this watcher"] and len(calls) == 1
    assert check_once(config, evaluate, WatchState(state_file)) == ([], None)  # restart: no re-run
    (tiny_corpus / "new.md").write_text("# New page\n\nThe corpus changed.\n")
    try:
        changes, _ = check_once(config, evaluate, WatchState(state_file))
        assert changes == ["corpus changed"] and len(calls) == 2
    finally:
        (tiny_corpus / "new.md").unlink()


def test_local_schedule_fires_within_the_test(tmp_path: Path, tiny_corpus: Path) -> None:
    config = write_config(tmp_path, tiny_corpus)
    store = scheduling.ScheduleStore(tmp_path / "schedules.json")
    with pytest.raises(ValueError, match="fields"):
        store.add("* * *", "ingest", str(config))
    schedule = store.add("*/3 * * * * *", "ingest", str(config))
    assert [s.id for s in store.list()] == [schedule.id]
    before = len(Client().list_pipeline_runs(size=1000).items)

    runs = scheduling.serve(store, max_runs=1, timeout_s=240)  # the child runs `run.py ingest` for real

    assert runs == 1
    logs = sorted((scheduling.state_dir() / "schedule_logs").glob(f"{schedule.id}-*.log"))
    assert logs, "the scheduled run wrote no log"
    assert "finished" in logs[-1].read_text(), logs[-1].read_text()[-2000:]
    assert len(Client().list_pipeline_runs(size=1000).items) == before + 1
    assert store.remove(schedule.id) and store.list() == []
