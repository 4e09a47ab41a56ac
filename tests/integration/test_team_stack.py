"""The loop on a team's stack: a ZenML server on MariaDB, artifacts in S3 (moto), two client processes.

`scripts/team_stack.py up` starts the three servers in a temporary directory on free ports. A first
client (the admin user) runs the full pipeline with the tiny model; a second client (the CI service
account's API key) runs `watch --once` (a second evaluation) and `compare` and loads `eval_results` back. The test then
looks past ZenML: the metadata rows are in MariaDB, the artifact files in the bucket.
Skipped, with the reason, where MariaDB or moto's server cannot be had.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.conftest import ROOT, write_config

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SCRIPT = ROOT / "scripts" / "team_stack.py"
MODEL_NAME = "ragwatch-test-rag"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _stack_cli(state_dir: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "RAGWATCH_TEAM_STACK_DIR": str(state_dir)}
    return subprocess.run([sys.executable, str(SCRIPT), *args], env=env, capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


def _client_env(state_dir: Path, *, ci: bool) -> dict[str, str]:
    """The process environment `eval "$(scripts/team_stack.sh env [--ci])"` gives a shell."""
    result = _stack_cli(state_dir, "env", *(["--ci"] if ci else []), timeout=60)
    assert result.returncode == 0, result.stderr
    exported = dict(line.removeprefix("export ").split("=", 1) for line in result.stdout.splitlines())
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZENML_STORE_")}
    return {**env, **exported}


def _run(command: list[str], env: dict[str, str], timeout: float = 1500) -> subprocess.CompletedProcess:
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout, cwd=ROOT)


@pytest.fixture(scope="module")
def team_stack(tmp_path_factory: pytest.TempPathFactory):
    if not (shutil.which("mariadbd") or Path("/usr/sbin/mariadbd").exists()):
        pytest.skip("MariaDB is not installed (no mariadbd): run `scripts/team_stack.sh install` "
                    "(apt-get install -y --no-install-recommends mariadb-server) to include this test")
    state_dir = tmp_path_factory.mktemp("team_stack")
    ports = ["--db-port", str(_free_port()), "--server-port", str(_free_port()), "--s3-port", str(_free_port())]
    up = _stack_cli(state_dir, "up", *ports)
    if up.returncode != 0 and "could not install moto" in up.stderr:
        _stack_cli(state_dir, "down")
        pytest.skip(f"moto's S3 server cannot be installed here: {up.stderr[-500:]}")
    try:
        assert up.returncode == 0, up.stderr[-4000:]
        yield state_dir, json.loads((state_dir / "state.json").read_text())
    finally:
        down = _stack_cli(state_dir, "down", timeout=120)
        assert down.returncode == 0, down.stderr


READ_BACK = """
import json
from zenml.client import Client
client = Client()
run = client.list_pipeline_runs(sort_by="desc:created", size=1).items[0]
frame = run.steps["collect_results"].outputs["eval_results"][0]
table = frame.load()
production = client.get_model_version({model!r}, "production")
print(json.dumps({{"run": run.name, "rows": len(table), "uri": frame.uri,
                  "production": production.name, "user": client.active_user.name,
                  "stack": client.active_stack_model.name}}))
"""


@pytest.mark.timeout(3000)  # four pipeline processes through a server; slow on a loaded 2-core machine
def test_full_loop_on_the_team_stack(team_stack, tiny_corpus: Path, tmp_path: Path) -> None:
    state_dir, state = team_stack
    # The point here is the server, MariaDB and S3, not the judges: the labelled set and one
    # embedding judge keep the LLM work to the tiny model's answers.
    config = write_config(tmp_path / "cfg", tiny_corpus, synthetic=False, judges={"enabled": ["similarity"]})

    # First client: the admin user runs the full pipeline on the team stack.
    admin = _client_env(state_dir, ci=False)
    full = _run([sys.executable, "run.py", "full", "--config", str(config)], admin)
    assert full.returncode == 0, (full.stdout + full.stderr)[-4000:]
    assert "gate: PROMOTED" in full.stdout

    # Second client: the CI service account (API key only) watches, compares and reads back.
    ci = _client_env(state_dir, ci=True)
    assert "ZENML_STORE_API_KEY" in ci and "ZENML_STORE_PASSWORD" not in ci
    watch = _run([sys.executable, "run.py", "watch", "--once", "--config", str(config)], ci)
    assert watch.returncode in (0, 1), (watch.stdout + watch.stderr)[-4000:]
    compare = _run([sys.executable, "run.py", "compare", "--config", str(config)], ci)
    assert compare.returncode == 0, (compare.stdout + compare.stderr)[-4000:]
    assert "vs previous" in compare.stdout
    read = _run([sys.executable, "-c", READ_BACK.format(model=MODEL_NAME)], ci)
    assert read.returncode == 0, read.stderr[-4000:]
    found = json.loads(read.stdout.strip().splitlines()[-1])
    assert found["user"] == "ragwatch-ci" and found["stack"] == "team"
    assert found["rows"] > 0 and found["production"].startswith("cfg-")
    assert found["uri"].startswith("s3://ragwatch/artifacts/")

    # Past ZenML: the metadata is in MariaDB, the artifact files are in the bucket.
    import boto3
    import pymysql

    connection = pymysql.connect(host="127.0.0.1", port=state["db_port"], user="zenml",
                                 password=state["db_password"], database="zenml")
    with connection.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM pipeline_run")
        (runs,) = cursor.fetchone()
        cursor.execute("SELECT COUNT(*) FROM artifact_version WHERE uri = %s", (found["uri"],))
        (rows_for_uri,) = cursor.fetchone()
    connection.close()
    assert runs >= 2 and rows_for_uri == 1
    s3 = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{state['s3_port']}", aws_access_key_id="team-stack",
                      aws_secret_access_key="team-stack", region_name="us-east-1")
    key = found["uri"].removeprefix("s3://ragwatch/")
    listed = s3.list_objects_v2(Bucket="ragwatch", Prefix=key)
    assert listed.get("KeyCount", 0) > 0, f"no object under {found['uri']}"


def test_status_reports_the_running_servers(team_stack) -> None:
    state_dir, _ = team_stack
    status = _stack_cli(state_dir, "status", timeout=60)
    assert status.returncode == 0, status.stdout + status.stderr
    assert status.stdout.count("running") == 3
