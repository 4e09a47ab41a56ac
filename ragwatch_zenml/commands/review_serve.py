"""`python run.py review serve`: the review page for one run, its labels saved as `human_labels`.

The run and its judged items are found as `review export` finds them (`orchestration.review`); the
sample is the export's. Every label is first fsynced to an append-only log under the state
directory (`.ragwatch/review_labels/<run>-<id>.labels.jsonl`, or `$RAGWATCH_STATE_DIR`); a
background thread then merges what changed since its last save into the system's latest
`human_labels` and saves a new version exactly as `review import` does (`review.save_labels`):
the same validation, metadata and model link. It waits `SYNC_DELAY_S` after a label so a quick run
of keys becomes one version. What it last saved is noted beside the log (`.synced.json`); on start
every event after that is saved first, so a killed server loses nothing.

Example:
    >>> serve_review(run=None, metrics=["faithfulness"], port=8239)  # doctest: +SKIP
"""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragwatch.review import (
    DEFAULT_TARGET,
    Design,
    HumanLabels,
    LabelLog,
    ReviewApp,
    ReviewSession,
    attach,
    make_server,
    remove_labels,
    replay,
)
from ragwatch_zenml.commands.review import find_run, model_name_of, run_items, save_labels
from ragwatch_zenml.commands.scheduling import state_dir
from ragwatch_zenml.readback import evaluation_runs, latest_human_labels

SYNC_DELAY_S = 1.0
RETRY_S = 10.0
LATEST_EVERY_S = 15.0
DEFAULT_PORT = 8239


def log_path_for(run: Any) -> Path:
    return state_dir() / "review_labels" / f"{run.name}-{str(run.id)[:8]}.labels.jsonl"


class ArtifactSync:
    """Saves the log's new labels to `human_labels` shortly after they are given (one thread).

    Every ZenML call of the server goes through `zenml_lock`: the HTTP threads only read the
    cached `latest` description, and the report through `report()`.
    """

    def __init__(self, session: ReviewSession, source_run: Any, *, delay_s: float = SYNC_DELAY_S) -> None:
        self.session, self.source_run, self.delay_s = session, source_run, delay_s
        self.model_name = model_name_of(source_run)
        self.marker = session.log.path.with_suffix(".synced.json")
        saved = json.loads(self.marker.read_text()) if self.marker.is_file() else {}
        self.synced_seq: int = int(saved.get("seq", 0))
        self.version: str | None = saved.get("version")
        self.error: str | None = None
        self.latest: dict[str, Any] | None = None
        self._latest_at = 0.0
        self._latest_run: Any = None
        self.zenml_lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="human-labels-sync", daemon=True)

    # the thread ---------------------------------------------------------------------------------
    def start(self) -> None:
        self._thread.start()

    def notify(self) -> None:
        self._wake.set()

    def stop(self) -> None:
        """Stop the thread and save what is left."""
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout=60)
        self.sync()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(timeout=LATEST_EVERY_S)
            if self._stop.is_set():
                return
            if self._wake.is_set():
                self._wake.clear()
                time.sleep(self.delay_s)  # a quick run of keys becomes one artifact version
            try:
                self.sync()
                self.refresh_latest()
            except Exception as exc:  # a store hiccup must not end the page: the log keeps every label
                self.error = f"{type(exc).__name__}: {exc}"
                self._wake.wait(timeout=RETRY_S)

    def status(self) -> dict[str, Any]:
        last = replay(self.session.log.events()).last_seq
        return {"version": self.version, "synced_seq": self.synced_seq, "pending": last > self.synced_seq,
                "error": self.error}

    # saving -------------------------------------------------------------------------------------
    def sync(self) -> str | None:
        """Save the labels changed since the last save; returns the new version, or None when none was needed."""
        with self.zenml_lock:
            events = self.session.log.events()
            if not events or events[-1].seq <= self.synced_seq:
                return None
            before = replay([e for e in events if e.seq <= self.synced_seq]).current
            now = replay(events).current
            changed = [e for key, e in now.items() if key not in before or before[key].seq != e.seq]
            removed = [key for key in before if key not in now]
            last = events[-1].seq
            version = None
            if changed or removed:
                version = self._save(changed, removed)
            self.synced_seq, self.error = last, None
            if version is not None:
                self.version = version
            tmp = self.marker.with_suffix(".tmp")
            tmp.write_text(json.dumps({"seq": self.synced_seq, "version": self.version}))
            tmp.replace(self.marker)
            return version

    def _save(self, changed: list[Any], removed: list[tuple[str, str]]) -> str:
        source = self.session.source
        labels, problems = self.session.human_labels(changed)
        previous, _ = latest_human_labels(self.model_name)
        merged = (previous or HumanLabels()).merge(labels, source=source)
        if removed:  # undone on the page: only labels this log gave are taken back
            merged = remove_labels(merged, removed, source=source)
        return save_labels(merged, self.source_run, file=source, problems=len(problems), via="review serve")

    # what the page links to ---------------------------------------------------------------------
    def refresh_latest(self, force: bool = False) -> None:
        """The newest evaluation of this system and its human-label estimates (cached ~15 s)."""
        if not force and time.monotonic() - self._latest_at < LATEST_EVERY_S:
            return
        with self.zenml_lock:
            self._latest_at = time.monotonic()
            for run in evaluation_runs(limit=20):
                if run.model_version is None or str(run.model_version.model.name) != self.model_name:
                    continue
                if str(run.status).lower().endswith("running"):
                    continue
                metadata = run.run_metadata.get("human_labels") or {}
                labelled = {m: {k: e.get(k) for k in ("score", "ci_low", "ci_high", "n_labels", "n_items")}
                            for m, e in (metadata.get("metrics") or {}).items()}
                self._latest_run = run
                self.latest = {"run": str(run.name), "created": str(run.created), "labelled": labelled}
                return

    def report(self) -> str | None:
        """The HTML report of the newest evaluation of this system."""
        self.refresh_latest()
        with self.zenml_lock:
            run = self._latest_run
            if run is None or "build_report_step" not in run.steps:
                return None
            return str(run.steps["build_report_step"].outputs["report"][0].load())


def serve_review(run: str | None = None, metrics: Sequence[str] | None = None, *, n: int = DEFAULT_TARGET,
                 seed: int = 0, port: int = DEFAULT_PORT, reviewer: str | None = None,
                 duration_s: float | None = None, design: Design = "active") -> int:
    """Serve the review page until Ctrl-C (or `duration_s`); ValueError on bad input (exit 2)."""
    server = make_server(port)  # first: a taken port is reported before the run is loaded
    try:
        found = find_run(run)
        rows, judged = run_items(found)
        model_name_of(found)  # labels belong to a system: refuse a run without a model version now
        log = LabelLog(log_path_for(found))
        session = ReviewSession.start(rows, judged, log, run_id=str(found.id), run_name=str(found.name), n=n,
                                      metrics=metrics, seed=seed, reviewer=reviewer, design=design)
        if not session.items:
            raise ValueError(f"run {found.name}: no sampled item has a judge score to compare labels with")
        sync = ArtifactSync(session, found)
        caught_up = sync.sync()  # labels a killed server had not saved yet
        sync.refresh_latest(force=True)
        attach(server, ReviewApp(session, on_change=sync.notify, latest=lambda: sync.latest, report=sync.report,
                                 status=sync.status))
    except BaseException:
        server.server_close()
        raise
    state = session.state()
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    print(f"review of run {found.name}: {state['labelled']} of {state['target']} items labelled "
          f"({', '.join(session.sample.metrics)}; seed {seed}; {session.sample.describe()})",
          flush=True)
    if caught_up:
        print(f"saved labels the last session had not: human_labels version {caught_up}", flush=True)
    print(f"labels go to {log.path} and the human_labels artifact of {sync.model_name}\n"
          f"open {url} (Ctrl-C stops)", flush=True)

    def stop(*_: Any) -> None:
        threading.Thread(target=server.shutdown, daemon=True).start()

    in_main = threading.current_thread() is threading.main_thread()  # signals can be set there only
    previous_term = signal.signal(signal.SIGTERM, stop) if in_main else None
    timer = threading.Timer(duration_s, stop) if duration_s else None
    if timer:
        timer.start()
    sync.start()
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        if timer:
            timer.cancel()
        if in_main:
            signal.signal(signal.SIGTERM, previous_term)
        server.server_close()
        sync.stop()
    final = session.state()
    print(f"review stopped: {final['labelled']} of {final['target']} items labelled"
          + (f"; human_labels version {sync.version}" if sync.version else ""), flush=True)
    return 0
