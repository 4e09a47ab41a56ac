"""A gated metric this config does not measure, through `run.py`: inherited from an included file it is a
warning said once and the gate decides on what was measured (an unchanged system is promoted, exit 0);
listed by the user's own file it is a config error before the run (exit 2, naming the key)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml

from ragwatch_zenml import cli
from tests.integration.conftest import write_config

pytestmark = pytest.mark.integration

ANSWER = "The local orchestrator is the default orchestrator of ZenML; it runs pipelines locally."


def _mine(directory: Path, base: Path, **evaluate) -> Path:
    """The user's own file: it includes the team's `base` and changes only what `evaluate` says."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "mine.yaml"
    path.write_text(yaml.safe_dump({"include": [str(base)], "evaluate": evaluate}))
    return path


def test_an_unchanged_system_with_judges_and_keyword_tests_off_is_promoted_and_an_own_gated_one_exits_2(
        tmp_path: Path, tiny_corpus: Path, oracle_module, capsys) -> None:
    oracle_module({"*": ANSWER})
    # the team's file gates a judge and the keyword tests; the user's own file turns both off
    base = write_config(tmp_path / "team", tiny_corpus, synthetic=False,
                        system={"model_name": "ragwatch-unmeasured-rag",
                                "rag": {"kind": "callable", "callable": "fixed_rag:answer"}},
                        gate={"gated_metrics": ["system/hit_rate", "similarity", "e2e_failure_rate"]})
    mine = _mine(tmp_path / "user", base, judges={"enabled": []}, e2e={"enabled": False})

    assert cli.main(["full", "--config", str(mine)]) == 0  # the first production baseline
    capsys.readouterr()
    assert cli.main(["evaluate", "--config", str(mine)]) == 0  # unchanged: promoted, not a regression
    out = capsys.readouterr().out
    verdict = next(line for line in out.splitlines() if line.startswith(("Same as", "No clear", "Better")))
    assert "Gate: PROMOTED." in verdict and "regress" not in verdict.lower(), verdict
    assert "Not measured by this config, not gated: similarity, e2e_failure_rate" in verdict
    # said once, as a warning naming the setting to change
    assert out.count("gated metric 'similarity' is not measured by this config") == 1, out
    assert "evaluate.judges.enabled" in out and "evaluate.e2e.enabled" in out
    assert "NOT PROMOTED" not in out and "matches no metric in either run" not in out

    # the user's own file lists a metric this config never measures: refused before any pipeline starts
    explicit = _mine(tmp_path / "explicit", base, judges={"enabled": []},
                     gate={"gated_metrics": ["system/hit_rate", "faithfulness"]})
    started = time.monotonic()
    assert cli.main(["evaluate", "--config", str(explicit)]) == 2
    captured = capsys.readouterr()
    message = captured.out + captured.err
    assert "evaluate.gate.gated_metrics: 'faithfulness' is never measured by this config" in message
    assert "evaluate.judges.enabled" in message
    assert time.monotonic() - started < 30  # preflight: no pipeline ran
