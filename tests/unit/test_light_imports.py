"""Validating a config imports no heavy library, so `run.py` answers a typo in about a second.

litellm, scipy, pandas and ZenML each take one to several seconds to import (tens on a loaded
machine); config models and preflight need none of them, so they are imported where they are used.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("litellm", "zenml", "scipy", "sklearn", "pandas", "matplotlib", "onnxruntime", "tokenizers", "pymupdf")
CHECK = "bad = [m for m in {heavy!r} if m in sys.modules]; print(bad)"


def _heavy_after(code: str) -> list[str]:
    """The heavy modules loaded by `code` in a fresh interpreter (the list it printed last)."""
    script = f"import sys\n{code}\n{CHECK.format(heavy=HEAVY)}"
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return ast.literal_eval(done.stdout.strip().splitlines()[-1])


def test_the_check_sees_a_heavy_import():
    # the control: the same probe reports a heavy module once code that needs it runs
    code = "import ragwatch.preflight\nfrom ragwatch.decision.compare import Comparison\nComparison().to_frame()"
    assert _heavy_after(code) == ["pandas"]


def test_preflight_of_every_bundled_pipeline_imports_nothing_heavy():
    code = "\n".join([
        "from ragwatch.preflight import preflight",
        *(f"preflight({name!r}, {str(ROOT / 'configs' / f'{name}.yaml')!r})"
          for name in ("ingest", "testset", "evaluate", "full")),
    ])
    assert _heavy_after(code) == []


def test_importing_preflight_imports_nothing_heavy():
    assert _heavy_after("import ragwatch.preflight") == []


def _run_cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key != "RAGWATCH_DEBUG"}  # no traceback wanted
    return subprocess.run([sys.executable, "-X", "importtime", str(ROOT / "run.py"), *args], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=120)


def _imported(stderr: str) -> set[str]:
    """Top-level package names from `-X importtime` lines."""
    return {line.rsplit("|", 1)[1].strip().split(".")[0] for line in stderr.splitlines()
            if line.startswith("import time:") and line.count("|") == 2}


def _messages(stderr: str) -> str:
    return "\n".join(line for line in stderr.splitlines() if not line.startswith("import time:"))


@pytest.mark.parametrize("command", ["evaluate", "compare"])
def test_run_py_names_a_bad_key_without_a_traceback_or_heavy_imports(tmp_path, command):
    (tmp_path / "bad.yaml").write_text("evaluate:\n  top_kk: 3\n")
    done = _run_cli(tmp_path, command, "--config", "bad.yaml")
    assert done.returncode == 2, done.stderr[-2000:]
    messages = _messages(done.stderr)
    assert "evaluate.top_kk: unknown key" in messages
    assert "Traceback" not in messages
    imported = _imported(done.stderr)
    assert "pydantic" in imported  # the probe reads real import lines
    assert not imported & set(HEAVY)


def test_run_py_names_a_missing_corpus_path_without_heavy_imports(tmp_path):
    (tmp_path / "c.yaml").write_text("ingest:\n  corpus:\n    paths: [no_such_docs]\n")
    done = _run_cli(tmp_path, "ingest", "--config", "c.yaml")
    assert done.returncode == 2, done.stderr[-2000:]
    messages = _messages(done.stderr)
    assert f"{tmp_path / 'no_such_docs'} does not exist" in messages
    assert "Traceback" not in messages
    assert not _imported(done.stderr) & set(HEAVY)
