"""The local ZenML dashboard on 127.0.0.1, started in the foreground and stopped cleanly."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

DEFAULT_PORT = 8237


def run_location(pipeline: str, run_name: str, run_id: object, nodes: list[tuple[str, str, str]],
                 metadata: list[str]) -> list[str]:
    """Where a run is in the dashboard (`python run.py dashboard`): the path through the pages, the run's
    direct address, then each node to open (node, step, what its Visualization shows) and the metadata keys."""
    path = f"Projects > default > Pipelines > {pipeline} > {run_name}"
    return [
        f"open it in the dashboard: python run.py dashboard  (local ZenML server), then {path}",
        f"  (or http://127.0.0.1:{DEFAULT_PORT}/projects/default/runs/{run_id})",
        *(f"  node '{node}' (step {step}) > Visualization: {what}" for node, step, what in nodes),
        f"  Metadata: {', '.join(repr(k) for k in metadata)} (same keys in every run, to read side by side)",
    ]


def zenml_cli() -> list[str]:
    executable = Path(sys.executable).with_name("zenml")
    return [str(executable)] if executable.exists() else [shutil.which("zenml") or "zenml"]


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def run_dashboard(port: int = DEFAULT_PORT, duration_s: float | None = None) -> int:
    """Serve the dashboard until Ctrl-C, SIGTERM or SIGHUP (or `duration_s`), then stop the server and
    log out. Every way of stopping runs the same cleanup: a server left behind would hold the port."""
    from ragwatch_zenml.env import skip_dashboard_survey

    skip_dashboard_survey()  # open on the runs, not on the first-run account form of a fresh store
    url = f"http://127.0.0.1:{port}"
    command = [*zenml_cli(), "login", "--local", "--blocking", "--ip-address", "127.0.0.1", "--port", str(port)]
    print(f"starting the ZenML dashboard at {url} (store: {os.environ.get('ZENML_CONFIG_PATH')}); "
          "Ctrl-C stops it", flush=True)
    # SIGINT too: a shell starts a background job with SIGINT ignored, and Ctrl-C must still stop it
    previous = {sig: signal.signal(sig, _interrupt) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    server = subprocess.Popen(command)
    try:
        deadline = None if duration_s is None else time.monotonic() + duration_s
        while server.poll() is None and (deadline is None or time.monotonic() < deadline):
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        if server.poll() is None:
            server.terminate()
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
        # The client was pointed at the local server: point it back at the local store.
        subprocess.call([*zenml_cli(), "logout", "--local"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    print("dashboard stopped", flush=True)
    return 0
