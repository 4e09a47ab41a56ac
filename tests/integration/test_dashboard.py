"""`python run.py dashboard` serves the local ZenML dashboard on 127.0.0.1 and stops cleanly."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from tests.integration.conftest import ROOT

pytestmark = pytest.mark.integration


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_dashboard_serves_and_stops() -> None:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "run.py"), "dashboard", "--port", str(port), "--duration", "90"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    status = None
    deadline = time.monotonic() + 80
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as response:
                status = response.status
                break
        except OSError:
            time.sleep(1)
    output, _ = process.communicate(timeout=120)
    assert status == 200, output[-3000:]
    assert process.returncode == 0
    assert f"http://127.0.0.1:{port}" in output and "dashboard stopped" in output
