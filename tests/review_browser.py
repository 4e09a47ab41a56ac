"""What the browser tests of the review page share: `python run.py review serve` as a separate process
(so it can be killed like a real one) and the page opened in headless Chromium from Debian, driven by
Playwright (the pinned Python package) through `executable_path`.

A test module adds `NEEDS_BROWSER` to its `pytestmark` (skipped with the reason when Chromium or
Playwright is missing) and `pytest.mark.usefixtures("no_review_server_left")` (tests/integration/conftest.py),
which kills what `STARTED` holds when the test ends.

Example:
    >>> server = Server(free_port())  # doctest: +SKIP
    >>> with review_page(server.url, width=1280, height=800) as page:  # doctest: +SKIP
    ...     page.wait_for_selector("ol.statements li")
"""

from __future__ import annotations

import json
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

try:
    from playwright.sync_api import sync_playwright
except ImportError:  # pragma: no cover - the dev requirements pin it
    sync_playwright = None

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]
NEEDS_BROWSER = [
    pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed: apt-get install -y "
                       "--no-install-recommends chromium"),
    pytest.mark.skipif(sync_playwright is None, reason="the playwright package is not installed: "
                       "pip install -r requirements/dev.txt"),
]
STARTED: list[subprocess.Popen] = []  # every server a test started, killed if the test failed


def kill_started() -> None:
    """Kill every server still running (a failing test must not leave one behind)."""
    for proc in STARTED:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    STARTED.clear()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`python run.py review serve` as a separate process (so it can be killed like a real one)."""

    def __init__(self, port: int, *extra: str,
                 choose: tuple[str, ...] = ("--metric", "faithfulness", "--metric", "correctness", "--n", "12")
                 ) -> None:
        self.port = port
        self.proc = subprocess.Popen(
            [sys.executable, str(ROOT / "run.py"), "review", "serve", *choose, "--port", str(port),
             "--reviewer", "tester", *extra],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
        STARTED.append(self.proc)
        self.lines: list[str] = []
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                raise AssertionError(f"review serve exited {self.proc.wait()}:\n{''.join(self.lines)}")
            self.lines.append(line)
            if line.startswith("open http://"):
                return
        raise AssertionError("review serve did not start:\n" + "".join(self.lines))

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def state(self) -> dict:
        with urllib.request.urlopen(self.url + "api/state?tab=test", timeout=30) as res:
            return json.loads(res.read())

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)

    def stop(self) -> str:
        self.proc.send_signal(signal.SIGTERM)
        out, _ = self.proc.communicate(timeout=120)
        assert self.proc.returncode == 0, "".join(self.lines) + out
        return "".join(self.lines) + out


@contextmanager
def review_page(url: str, *, width: int, height: int) -> Iterator[Any]:
    """A headless Chromium page opened on `url`; the browser is closed when the block ends."""
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            page.goto(url)
            yield page
        finally:
            browser.close()
