"""A store written before a move still loads: artifacts whose materializer or type ZenML recorded under an
old import path (`steps.materializers.X` before the ZenML half moved into `ragwatch_zenml`,
`ragwatch.compare.GateDecision` before `decision/`) load in a fresh process, as the classes of today."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]

SAVE = """
from ragwatch_zenml.env import configure_environment, ensure_repository
configure_environment(); ensure_repository()
from zenml import save_artifact
from ragwatch.artifacts import RunComparisons
from ragwatch.decision.gate import GateDecision
from ragwatch_zenml.steps.materializers import RunComparisonsMaterializer
gate = GateDecision(promote=False, status="regressed", reasons=[])
save_artifact(RunComparisons(previous_run="r1", gate=gate), name="old_comparisons",
              materializer=RunComparisonsMaterializer)
save_artifact(gate, name="old_gate")
"""

LOAD = """
import json, sys
from ragwatch_zenml.env import configure_environment
configure_environment()
from zenml.client import Client
comparisons = Client().get_artifact_version("old_comparisons").load()
gate = Client().get_artifact_version("old_gate").load()
from ragwatch.artifacts import RunComparisons
from ragwatch.decision.gate import GateDecision
assert type(comparisons) is RunComparisons and type(gate) is GateDecision, (type(comparisons), type(gate))
stand_in = sys.modules["steps"]
print(json.dumps({"previous_run": comparisons.previous_run, "status": gate.status,
                  "materializer": sys.modules["steps.materializers"].__name__,
                  "stand_in_is_empty": [n for n in vars(stand_in) if not n.startswith("__")] == ["materializers"]}))
"""


def _python(code: str, store: Path, cwd: Path) -> str:
    env = {**os.environ, "ZENML_CONFIG_PATH": str(store)}
    done = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


def _source(module: str, attribute: str) -> str:
    return json.dumps({"module": module, "attribute": attribute, "type": "user"})


def test_artifacts_recorded_under_old_paths_load(tmp_path: Path) -> None:
    store = tmp_path / "zenml"
    _python(SAVE, store, ROOT)
    with sqlite3.connect(store / "local_stores" / "default_zen_store" / "zenml.db") as db:
        rows = dict(db.execute("select name, artifact_version.id from artifact_version "
                               "join artifact on artifact.id = artifact_version.artifact_id").fetchall())
        recorded = db.execute("select materializer from artifact_version where id = ?",
                              (rows["old_comparisons"],)).fetchone()[0]
        assert json.loads(recorded)["module"] == "ragwatch_zenml.steps.materializers"  # what runs record now
        # as the store of an older version recorded them
        db.execute("update artifact_version set materializer = ? where id = ?",
                   (_source("steps.materializers", "RunComparisonsMaterializer"), rows["old_comparisons"]))
        db.execute("update artifact_version set data_type = ? where id = ?",
                   (_source("ragwatch.compare", "GateDecision"), rows["old_gate"]))
    # from a directory with no `steps` package of its own, as a user of the installed package stands
    loaded = json.loads(_python(LOAD, store, tmp_path))
    assert loaded == {"previous_run": "r1", "status": "regressed",
                      "materializer": "ragwatch_zenml.steps.materializers", "stand_in_is_empty": True}


def test_a_real_steps_package_wins_over_the_stand_in(tmp_path: Path) -> None:
    """A user's own top-level `steps/` is imported as theirs; the old materializer path is not grafted onto it."""
    (tmp_path / "steps").mkdir()
    (tmp_path / "steps" / "__init__.py").write_text("MINE = True\n")
    code = ("import ragwatch, steps, importlib\nassert steps.MINE\n"
            "try:\n    importlib.import_module('steps.materializers')\n"
            "except ModuleNotFoundError:\n    print('mine')\n")
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "mine", done.stderr[-2000:]
