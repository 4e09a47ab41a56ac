"""Schedules: native ZenML schedules where the orchestrator has them, a local scheduler otherwise.

ZenML's local orchestrator refuses a `Schedule`, and OSS ZenML executes no stored schedule, so on a
local stack the schedules live in a JSON file and `python run.py schedule serve` (a long-running
APScheduler process) runs `python run.py <pipeline> --config <file>` at the cron times.

Cron expressions have 5 fields (minute hour day month weekday) or 6 with seconds first.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import uuid
from datetime import datetime
from pathlib import Path

from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.cron import CronTrigger
from pydantic import BaseModel

from ragwatch_zenml.env import project_home


def state_dir() -> Path:
    path = Path(os.environ.get("RAGWATCH_STATE_DIR") or project_home() / ".ragwatch")
    path.mkdir(parents=True, exist_ok=True)
    return path


class LocalSchedule(BaseModel):
    id: str
    cron: str
    pipeline: str
    config: str
    created: str


def cron_trigger(expression: str) -> CronTrigger:
    """A trigger from 5 fields, or 6 with seconds first; a bad expression says what is expected."""
    fields = expression.split()
    names = ["minute", "hour", "day", "month", "day_of_week"]
    if len(fields) == 6:
        names = ["second", *names]
    elif len(fields) != 5:
        raise ValueError(
            f"cron expression {expression!r} has {len(fields)} fields; give 5 (minute hour day month "
            "weekday, e.g. '0 6 * * *') or 6 with seconds first (e.g. '*/30 * * * * *')"
        )
    try:
        return CronTrigger(**dict(zip(names, fields, strict=True)), timezone="UTC")
    except ValueError as exc:
        raise ValueError(f"invalid cron expression {expression!r}: {exc}") from None


class ScheduleStore:
    """The local schedules, in `<state dir>/schedules.json`."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or state_dir() / "schedules.json"

    def list(self) -> list[LocalSchedule]:
        if not self.path.is_file():
            return []
        return [LocalSchedule.model_validate(item) for item in json.loads(self.path.read_text())]

    def _write(self, schedules: list[LocalSchedule]) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps([s.model_dump() for s in schedules], indent=2))
        tmp.replace(self.path)

    def add(self, cron: str, pipeline: str, config: str) -> LocalSchedule:
        cron_trigger(cron)  # validate before storing
        schedule = LocalSchedule(
            id=uuid.uuid4().hex[:8], cron=cron, pipeline=pipeline, config=config,
            created=datetime.now().isoformat(timespec="seconds"),
        )
        self._write([*self.list(), schedule])
        return schedule

    def remove(self, schedule_id: str) -> bool:
        schedules = self.list()
        kept = [s for s in schedules if s.id != schedule_id]
        self._write(kept)
        return len(kept) < len(schedules)


def active_orchestrator_schedulable() -> bool:
    from zenml.client import Client

    return bool(Client().active_stack.orchestrator.config.is_schedulable)


def create_native_schedule(cron: str, pipeline: str, config_path: str) -> str:
    """A ZenML schedule on an orchestrator that runs schedules itself (Kubeflow, Airflow, ...)."""
    from zenml.config.schedule import Schedule

    from ragwatch_zenml.commands.runner import PIPELINES

    if pipeline not in PIPELINES:
        raise ValueError(f"unknown pipeline {pipeline!r}; choose one of {', '.join(PIPELINES)}")
    if len(cron.split()) != 5:
        raise ValueError("native ZenML schedules take a 5-field cron expression")
    from ragwatch_zenml.commands import runner

    runner.run_pipeline(pipeline, config_path, schedule=Schedule(cron_expression=cron))
    return f"native ZenML schedule '{cron}' for {pipeline} on the active stack's orchestrator"


def run_scheduled(schedule: LocalSchedule, log_dir: Path) -> int:
    """Run one scheduled pipeline as a child process; its output goes to a log file."""
    log_dir.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    log_path = log_dir / f"{schedule.id}-{stamp}.log"
    command = [sys.executable, "-m", "ragwatch_zenml.cli", schedule.pipeline, "--config", schedule.config]
    with log_path.open("w") as log:
        return subprocess.call(command, stdout=log, stderr=subprocess.STDOUT, cwd=project_home())


def serve(store: ScheduleStore, *, max_runs: int | None = None, timeout_s: float | None = None) -> int:
    """Run the stored schedules until interrupted, `max_runs` runs happened, or `timeout_s` passed.

    Returns the number of runs started. Runs of one schedule never overlap (max_instances=1).
    """
    schedules = store.list()
    if not schedules:
        raise ValueError("no schedules: add one with `python run.py schedule add --cron ... --pipeline ...`")
    done = threading.Event()
    lock = threading.Lock()
    runs = 0

    def fire(schedule: LocalSchedule) -> None:
        nonlocal runs
        with lock:
            if max_runs is not None and runs >= max_runs:
                return
            runs += 1
        code = run_scheduled(schedule, state_dir() / "schedule_logs")
        print(f"{datetime.now():%H:%M:%S} schedule {schedule.id}: {schedule.pipeline} exited {code}", flush=True)
        if max_runs is not None and runs >= max_runs:
            done.set()

    scheduler = BackgroundScheduler(timezone="UTC")
    for schedule in schedules:
        scheduler.add_job(fire, cron_trigger(schedule.cron), args=[schedule], id=schedule.id,
                          max_instances=1, coalesce=True)
    scheduler.start()
    try:
        done.wait(timeout=timeout_s)
    except KeyboardInterrupt:
        pass
    finally:
        scheduler.shutdown(wait=True)
    return runs


def describe(schedules: list[LocalSchedule]) -> str:
    if not schedules:
        return "no local schedules"
    rows = [f"{s.id}  {s.cron:<20} {s.pipeline:<9} {s.config}  (added {s.created})" for s in schedules]
    return "\n".join(rows)
