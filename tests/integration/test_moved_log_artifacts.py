"""A monitor's store written before `ragwatch/logs/` was split still loads: the log read, a window, a window's
evaluation and the monitor report, whose types ZenML recorded as `ragwatch.logs.<module>.<Class>` (and their
materializers as `steps.monitor_materializers`), load in a fresh process as the classes of today."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.integration.test_moved_artifacts import ROOT, _python, _source

pytestmark = pytest.mark.integration

SAVE = """
from datetime import UTC, datetime
from ragwatch_zenml.env import configure_environment, ensure_repository
configure_environment(); ensure_repository()
from zenml import save_artifact
from ragwatch.artifacts import MetricGroup
from ragwatch.logsources.records import LogReadResult
from ragwatch.logsources.window import LogWindow
from ragwatch.monitoring.monitor import MonitorReport, WindowEvaluation
from ragwatch_zenml.steps.monitor_materializers import LogWindowMaterializer, MonitorReportMaterializer
window = LogWindow(label="current", start=datetime(2026, 11, 20, tzinfo=UTC), end=datetime(2026, 11, 21, tzinfo=UTC),
                   n_population=3)
save_artifact(LogReadResult(source="answers.jsonl", format="jsonl"), name="old_log_read")
save_artifact(window, name="old_window", materializer=LogWindowMaterializer)
save_artifact(WindowEvaluation(window=window, metrics=MetricGroup(group="logged")), name="old_evaluation")
save_artifact(MonitorReport(source="answers.jsonl", counts={"kept": 3}), name="old_report",
              materializer=MonitorReportMaterializer)
"""

LOAD = """
import json
from ragwatch_zenml.env import configure_environment
configure_environment()
from zenml.client import Client
loaded = {name: Client().get_artifact_version(name).load()
          for name in ("old_log_read", "old_window", "old_evaluation", "old_report")}
print(json.dumps({name: f"{type(value).__module__}.{type(value).__name__}" for name, value in loaded.items()}
                 | {"report_counts": loaded["old_report"].counts, "window": loaded["old_window"].name}))
"""

OLD = {  # artifact -> (the type's module before the split, its class, the materializer's old module and class)
    "old_log_read": ("ragwatch.logs.records", "LogReadResult", None),
    "old_window": ("ragwatch.logs.window", "LogWindow", "LogWindowMaterializer"),
    "old_evaluation": ("ragwatch.logs.monitor", "WindowEvaluation", None),
    "old_report": ("ragwatch.logs.monitor", "MonitorReport", "MonitorReportMaterializer"),
}


def test_monitor_artifacts_recorded_under_the_old_log_paths_load(tmp_path: Path) -> None:
    store = tmp_path / "zenml"
    _python(SAVE, store, ROOT)
    with sqlite3.connect(store / "local_stores" / "default_zen_store" / "zenml.db") as db:
        ids = dict(db.execute("select name, artifact_version.id from artifact_version "
                              "join artifact on artifact.id = artifact_version.artifact_id").fetchall())
        for name, (module, cls, materializer) in OLD.items():
            recorded = json.loads(db.execute("select data_type from artifact_version where id = ?",
                                             (ids[name],)).fetchone()[0])
            assert recorded["module"].startswith(("ragwatch.logsources.", "ragwatch.monitoring."))  # today's
            db.execute("update artifact_version set data_type = ? where id = ?", (_source(module, cls), ids[name]))
            if materializer:
                db.execute("update artifact_version set materializer = ? where id = ?",
                           (_source("steps.monitor_materializers", materializer), ids[name]))
    loaded = json.loads(_python(LOAD, store, tmp_path))
    assert loaded == {"old_log_read": "ragwatch.logsources.records.LogReadResult",
                      "old_window": "ragwatch.logsources.window.LogWindow",
                      "old_evaluation": "ragwatch.monitoring.monitor.WindowEvaluation",
                      "old_report": "ragwatch.monitoring.monitor.MonitorReport",
                      "report_counts": {"kept": 3}, "window": "2026-11-20"}
