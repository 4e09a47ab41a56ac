"""`--quick`: the same config on about a dozen items, marked as a run that decides nothing; and the
estimate saying when its time has no history to stand on."""

from __future__ import annotations

from pathlib import Path

from ragwatch.config import FullConfig
from ragwatch.config_loader import load_config
from ragwatch.estimate.dry import StageCount
from ragwatch.estimate.table import Estimate, estimate_row, format_estimate
from ragwatch.evalset.imported import ImportSettings
from ragwatch.llm.types import LLMSettings
from ragwatch.quick import QUICK_ITEMS, quick_banner, quick_config

ROOT = Path(__file__).resolve().parents[2]


def test_quick_cuts_the_bundled_run_to_a_dozen_items_that_decide_nothing():
    full = load_config(ROOT / "configs" / "full.yaml", FullConfig)
    quick = quick_config(full)
    assert quick.testset.synthetic and quick.testset.testset.n_chunks == QUICK_ITEMS
    assert quick.testset.testset.questions_per_chunk == 1 and quick.testset.zenml_qa is None
    assert not quick.evaluate.e2e.enabled and not quick.evaluate.promote
    assert quick.evaluate.system.model_name == "ragwatch-rag-quick"  # never the real system's baseline
    # the same system, models and judges as the full run
    assert quick.evaluate.system.rag == full.evaluate.system.rag and quick.evaluate.judges == full.evaluate.judges
    assert full.testset.zenml_qa and full.evaluate.promote  # the original is untouched
    assert "cannot decide anything" in quick_banner(11) and "11 items" in quick_banner(11)


def test_quick_samples_the_users_labelled_sets_first():
    config = FullConfig.model_validate({"testset": {"imports": [
        ImportSettings(format="jsonl", path="a.jsonl").model_dump(),
        ImportSettings(format="csv", path="b.csv", limit=500).model_dump()]}})
    quick = quick_config(config)
    assert not quick.testset.synthetic
    assert [(i.sample, i.limit) for i in quick.testset.imports] == [(6, None), (6, None)]


def _row(latency_s: float | None) -> Estimate:
    count = StageCount("judge", "judge faithfulness stage 1", "local/x", requests=10, prompt_tokens=5000,
                       completion_tokens=400.0, latency_s=latency_s)
    return Estimate(pipeline="evaluate", rows=[estimate_row(count, LLMSettings(model="local/qwen2.5-0.5b-instruct"))])


def test_the_estimate_says_when_its_time_has_no_history_to_stand_on():
    guessed = format_estimate(_row(None))
    assert "no history to stand on (1 of 1 stages, 100% of the total)" in guessed
    assert "s?" in guessed.splitlines()[3] or "m?" in guessed.splitlines()[3]
    measured = format_estimate(_row(2.0))
    assert "no history to stand on" not in measured
    assert _row(2.0).rows[0].wall_s == 3 * 2.0  # 10 calls, 4 at a time, 2 s each
