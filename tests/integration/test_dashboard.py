"""`python run.py dashboard` serves the local ZenML dashboard on 127.0.0.1 and stops cleanly, also on SIGTERM."""

from __future__ import annotations

import signal
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


def port_is_open(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def test_dashboard_serves_and_stops_on_sigterm() -> None:
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
    process.send_signal(signal.SIGTERM)  # what a service manager or `kill` sends; the server must not outlive it
    output, _ = process.communicate(timeout=60)
    assert status == 200, output[-3000:]
    assert process.returncode == 0
    assert f"http://127.0.0.1:{port}" in output and "dashboard stopped" in output
    assert not port_is_open(port), "the ZenML server outlived `run.py dashboard`"
