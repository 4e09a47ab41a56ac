"""The Phoenix round trip with the real server: `phoenix serve` on 127.0.0.1 (SQLite in a temp
directory), logged answers sent to it as OpenInference traces, `python run.py monitor` pulling a window
of spans through Phoenix's REST API, evaluating them and writing its verdicts back as span annotations.

Phoenix lives in its own venv (requirements/phoenix.txt): `RAGWATCH_PHOENIX_PYTHON` names its python
(default: `.phoenix-venv/bin/python` in the checkout). Skipped, with how to install it, when it is absent.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

import run

ROOT = Path(__file__).resolve().parents[2]
LOG = ROOT / "tests" / "data" / "logs" / "answers.jsonl"
PYTHON = Path(os.environ.get("RAGWATCH_PHOENIX_PYTHON", ROOT / ".phoenix-venv" / "bin" / "python"))
INSTALL = ("python -m venv .phoenix-venv && .phoenix-venv/bin/pip install -r requirements/phoenix.txt "
           "(or set RAGWATCH_PHOENIX_PYTHON to a python that has arize-phoenix)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory):
    if not PYTHON.is_file() or subprocess.run([str(PYTHON), "-c", "import phoenix.otel, phoenix.server"],
                                              capture_output=True).returncode != 0:
        pytest.skip(f"arize-phoenix is not installed at {PYTHON}: {INSTALL}")
    work = tmp_path_factory.mktemp("phoenix")
    port, grpc = _free_port(), _free_port()
    env = {**os.environ, "PHOENIX_WORKING_DIR": str(work), "PHOENIX_HOST": "127.0.0.1", "PHOENIX_PORT": str(port),
           "PHOENIX_GRPC_PORT": str(grpc), "PHOENIX_TELEMETRY_ENABLED": "false"}
    server = subprocess.Popen([str(PYTHON), "-m", "phoenix.server.main", "serve"], env=env, cwd=work,
                              stdout=(work / "server.log").open("w"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(240):
            try:
                _get(f"{url}/v1/projects")
                break
            except OSError:
                if server.poll() is not None:
                    pytest.fail(f"phoenix serve exited: {(work / 'server.log').read_text()[-2000:]}")
                time.sleep(0.5)
        else:
            pytest.fail("phoenix serve did not answer within 120 s")
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.mark.integration
@pytest.mark.slow
def test_phoenix_round_trip(phoenix, tmp_path, capsys):
    sent = subprocess.run([str(PYTHON), str(ROOT / "scripts" / "phoenix_send_traces.py"), str(LOG),
                           "--url", phoenix, "--project", "ragwatch-test"], capture_output=True, text=True, check=True)
    assert "sent 8 traces" in sent.stdout
    config = tmp_path / "monitor.yaml"
    config.write_text(yaml.safe_dump({"logs": {"format": "phoenix", "feedback_scale": [1, 5],
                                               "phoenix": {"url": phoenix, "project": "ragwatch-test"}},
                                      "window": {"length": "1d", "budget": 50},
                                      "reports_dir": str(tmp_path / "reports")}))
    for _ in range(20):  # the traces reach Phoenix's database a moment after the exporter returns
        if len(_get(f"{phoenix}/v1/projects/ragwatch-test/spans?limit=100")["data"]) >= 23:
            break
        time.sleep(0.5)
    assert run.main(["monitor", "--config", str(config)]) == 0
    out = capsys.readouterr().out
    assert "project ragwatch-test: 7 kept" in out and "1 missing contexts" in out
    assert "a span tree without a retriever span" in out
    assert "generator: 0 calls" in out and "wrote the verdict of 3 traces back" in out
    roots = [s for s in _get(f"{phoenix}/v1/projects/ragwatch-test/spans?limit=100")["data"]
             if s["parent_id"] is None and s["start_time"].startswith("2026-11-21")]
    query = "&".join(f"span_ids={s['context']['span_id']}" for s in roots)
    annotations = _get(f"{phoenix}/v1/projects/ragwatch-test/span_annotations?{query}")["data"]
    assert len(annotations) == 3 and {a["name"] for a in annotations} == {"ragwatch"}
    assert all("unpaired" in a["result"]["explanation"] for a in annotations)
