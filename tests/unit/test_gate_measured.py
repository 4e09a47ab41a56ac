"""Which gated metrics a config measures (`ragwatch.measured`) and the preflight error for a gated
metric the user's own file lists and this config never measures (no pipeline, no ZenML)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ragwatch.config import FullConfig
from ragwatch.config_loader import ConfigError
from ragwatch.judges.perplexity import PerplexityJudge
from ragwatch.measured import not_measured, sources, unknown, unmeasured_gated
from ragwatch.preflight import preflight

FULL = Path(__file__).resolve().parents[2] / "configs" / "full.yaml"


def evaluate(**keys) -> FullConfig:
    return FullConfig.model_validate(keys)


def test_each_source_says_why_it_is_off_and_the_setting_to_change() -> None:
    off = evaluate(evaluate={"judges": {"enabled": []}, "e2e": {"enabled": False, "tables": "t.yaml"}}).evaluate
    assert "evaluate.judges.enabled: []" in not_measured("faithfulness", off)
    assert "add similarity" in not_measured("similarity", off)
    assert "evaluate.e2e.enabled: false" in not_measured("e2e_failure_rate/bad_answers", off)
    assert not_measured("answer_confidence", off) is not None  # the perplexity judge makes it
    assert not_measured("rubric_helpfulness", off) is not None  # a rubric's criterion
    for measured in ("system/hit_rate", "answer/context_support", "hybrid/hit_rate@3", "vector/mrr", "system/*"):
        assert not_measured(measured, off) is None, measured
    on = evaluate(evaluate={"e2e": {"tables": "t.yaml"}}).evaluate
    assert not_measured("faithfulness", on) is None and not_measured("e2e_failure_rate", on) is None
    assert "evaluate.e2e.tables" in not_measured("e2e_failure_rate", evaluate().evaluate)
    only = evaluate(retrieval_only=True)
    why = not_measured("system/hit_rate", only.evaluate, retrieval_only=True)
    assert why is not None and "retrieval_only" in why
    assert "retrieval_only" in not_measured("faithfulness", only.evaluate, retrieval_only=True)
    # a pattern any running source matches is measured; one no source matches is a typo, with a hint
    assert not_measured("*", off) is None
    assert unknown("sytem/mrr", off) == "did you mean system/mrr?" and unknown("system/mrr", off) is None


def test_the_perplexity_source_names_every_metric_its_judge_reports() -> None:
    config = evaluate().evaluate
    (source,) = [s for s in sources(config) if "perplexity" in s.names]
    assert all(source.makes(name) for name in PerplexityJudge().metrics)


def test_unmeasured_gated_names_each_gated_pattern_this_run_does_not_measure() -> None:
    config = evaluate(evaluate={"judges": {"enabled": []}, "gate": {
        "gated_metrics": ["system/hit_rate", "faithfulness", "perplexity", "nonsense_metric"]}}).evaluate
    why = unmeasured_gated(config, unavailable={"perplexity": "not available for this system (no logprobs)"})
    assert set(why) == {"faithfulness", "perplexity", "nonsense_metric"}
    assert why["perplexity"].startswith("not available for this system")
    assert why["nonsense_metric"].startswith("it names no metric ragwatch makes")


def _write(path: Path, data: dict) -> Path:
    path.write_text(yaml.safe_dump(data))
    return path


def test_preflight_refuses_only_what_the_users_own_file_gates(tmp_path: Path) -> None:
    # inherited from configs/full.yaml (it gates faithfulness and e2e_failure_rate): the gate's warning, later
    inherited = _write(tmp_path / "inherited.yaml", {"include": [str(FULL)], "evaluate": {"judges": {"enabled": []}}})
    assert "faithfulness" in preflight("evaluate", inherited).evaluate.gate.gated_metrics
    # listed by the user's own file: an error before the run, naming the key, the metric and the setting
    own = _write(tmp_path / "own.yaml", {"include": [str(FULL)], "evaluate": {
        "judges": {"enabled": []}, "gate": {"gated_metrics": ["system/hit_rate", "faithfulness", "sytem/mrr"]}}})
    with pytest.raises(ConfigError) as error:
        preflight("evaluate", own)
    message = str(error.value)
    assert ("evaluate.gate.gated_metrics: 'faithfulness' is never measured by this config: the faithfulness judge "
            "is not enabled (evaluate.judges.enabled: [])") in message
    assert "'sytem/mrr' names no metric ragwatch makes (did you mean system/mrr?)" in message
    assert "system/hit_rate" not in message
    with pytest.raises(ConfigError, match="'faithfulness' is never measured"):
        preflight("full", own)
    assert preflight("ingest", own) is not None  # ingest gates nothing
    # the same list in an included file the user's own file only includes: not theirs, not refused
    team = _write(tmp_path / "team.yaml", {"include": [str(FULL)], "evaluate": {
        "gate": {"gated_metrics": ["system/hit_rate", "faithfulness"]}}})
    mine = _write(tmp_path / "mine.yaml", {"include": [str(team)], "evaluate": {"judges": {"enabled": []}}})
    assert preflight("evaluate", mine).evaluate.gate.gated_metrics == ["system/hit_rate", "faithfulness"]
