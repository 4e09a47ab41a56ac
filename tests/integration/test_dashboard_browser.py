"""The ZenML dashboard in a real browser, on a temporary store: a `full` run, then the daily
`evaluate`; `python run.py dashboard` serves them, headless Chromium logs in as `default` and opens
each run. Both graphs draw (every step of the run is a visible node; the dashboard's "There was an
error loading the DAG visualization" fails the test), and the `evaluate` run's `report` and
`comparisons` artifacts render their pages with the gate's verdict. A control: when the server's
graph endpoint fails, the check does notice.

Retrieval only: no LLM, a few seconds per pipeline. The browser logic is
`orchestration/dashboard_browser.py`, shared with `scripts/dashboard_check.py`. Debian's Chromium
driven by Playwright; skipped with the reason when either is missing. The screenshots are kept as
reports/dashboard-evaluate-dag.png and reports/dashboard-comparisons.png (the copies in docs/images/
are one such run's).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from zenml.client import Client

from ragwatch_zenml.commands.dashboard_browser import (
    DAG_ERROR,
    DashboardBrowser,
    DashboardError,
    artifact_node,
    chromium_path,
)
from ragwatch_zenml.commands.runner import run_pipeline
from tests.integration.conftest import ROOT
from tests.integration.test_dashboard_dag import retrieval_only_config

try:
    import playwright.sync_api
except ImportError:  # pragma: no cover - the dev requirements pin it
    playwright = None

pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,  # two pipelines, a server start and a browser: about a minute on 2 shared cores
    pytest.mark.skipif(chromium_path() is None, reason="Chromium is not installed: apt-get install -y "
                       "--no-install-recommends chromium"),
    pytest.mark.skipif(playwright is None, reason="the playwright package is not installed: "
                       "pip install -r requirements/dev.txt"),
]
SCREENSHOTS = ROOT / "reports"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def serve_dashboard(tmp_path: Path) -> Iterator[str]:
    """`python run.py dashboard` on a free port (the session's temporary store); its URL.

    Started after the runs: `zenml login --local` points the store's client config at the server,
    which a client starting up meanwhile would follow. Stopped with SIGINT, as Ctrl-C stops it, so
    it stops its server and points the client back at the local store; killed if it does not stop.
    """
    port = _free_port()
    log = tmp_path / "dashboard.log"
    with log.open("w") as out:  # a file, not a pipe: the server's access log would fill a pipe nobody reads
        # SIGINT back to its default: a shell's background job inherits it ignored, and then Python
        # never raises KeyboardInterrupt; its own session, so that a kill reaches the zenml server too
        process = subprocess.Popen([sys.executable, str(ROOT / "run.py"), "dashboard", "--port", str(port),
                                    "--duration", "600"], stdout=out, stderr=subprocess.STDOUT, cwd=ROOT,
                                   start_new_session=True,
                                   preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"the dashboard did not start:\n{log.read_text()[-3000:]}")
            time.sleep(0.5)
        yield url
    finally:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGINT)
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)  # the group this fixture created: run.py and its server
                process.wait(timeout=30)


def test_both_runs_draw_and_the_report_and_comparisons_render(tmp_path: Path, tiny_corpus: Path) -> None:
    started = time.monotonic()
    config = retrieval_only_config(tmp_path, tiny_corpus, "ragwatch-dashboard-browser")
    full = run_pipeline("full", config)
    daily = run_pipeline("evaluate", config)  # after full: loaders fed by the lookup steps, mostly cached
    assert daily.gate is not None and daily.gate.status == "promote"  # same inputs: nothing changed
    verdict = "Gate: PROMOTED"
    pipelines_s = time.monotonic() - started

    with serve_dashboard(tmp_path) as url, DashboardBrowser(url, "default", "", timeout_s=60) as browser:
        for outcome in (full, daily):
            steps = browser.open_run(str(outcome.run.id))  # raises on the dashboard's DAG error
            expected = set(Client().get_pipeline_run(outcome.run.id).steps)
            assert set(steps) == expected, (outcome.pipeline, sorted(expected - set(steps)))
        assert {"latest_index_version", "load_index", "track_evaluation", "build_report_step"} <= set(steps)
        browser.screenshot(SCREENSHOTS / "dashboard-evaluate-dag.png")

        report = browser.visualization_text(artifact_node("build_report_step", "report"), verdict)
        assert f"ragwatch evaluation: {daily.run.name}" in report
        comparisons = browser.visualization_text(artifact_node("track_evaluation", "comparisons"), verdict)
        assert "ragwatch: this run compared" in comparisons
        assert f"vs previous run {full.run.name}" in comparisons and f"vs production {full.run.name}" in comparisons
        browser.screenshot(SCREENSHOTS / "dashboard-comparisons.png")

        # the control: a graph the server cannot draw is reported, not passed over
        browser.page.route("**/runs/*/dag*", lambda route: route.fulfill(status=500, body="{}"))
        with pytest.raises(DashboardError, match=DAG_ERROR):
            browser.open_run(str(daily.run.id))

    print(f"dashboard browser test: pipelines {pipelines_s:.1f} s, all {time.monotonic() - started:.1f} s")
    for name in ("dashboard-evaluate-dag.png", "dashboard-comparisons.png"):
        assert (SCREENSHOTS / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
