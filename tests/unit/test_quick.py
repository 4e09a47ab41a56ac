"""`--quick`: the same config on about a dozen items, marked as a run that decides nothing; and the
estimate saying when its time has no history to stand on."""

from __future__ import annotations

from pathlib import Path

import pytest

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
    assert not quick.evaluate.e2e.enabled and not quick.evaluate.promote and quick.evaluate.quick
    assert quick.evaluate.system.model_name == "ragwatch-rag-quick"  # never the real system's baseline
    # the same system, models and judges as the full run; the judge asked only where its reply can change a verdict
    assert quick.evaluate.system.rag == full.evaluate.system.rag
    assert quick.evaluate.judges.llm == full.evaluate.judges.llm
    assert quick.evaluate.judges.enabled == full.evaluate.judges.enabled
    assert quick.evaluate.judges.faithfulness.cascade and not full.evaluate.judges.faithfulness.cascade
    assert full.testset.zenml_qa and full.evaluate.promote and not full.evaluate.quick  # the original is untouched
    assert "cannot decide anything" in quick_banner(11) and "11 items" in quick_banner(11)


def test_quick_samples_the_users_labelled_sets_first():
    config = FullConfig.model_validate({"testset": {"imports": [
        ImportSettings(format="jsonl", path="a.jsonl").model_dump(),
        ImportSettings(format="csv", path="b.csv", limit=500).model_dump()]}})
    quick = quick_config(config)
    assert not quick.testset.synthetic
    assert [(i.sample, i.limit) for i in quick.testset.imports] == [(6, None), (6, None)]


def _row(seconds_per_call: float | None) -> Estimate:
    from ragwatch.llm.history import StageRate

    rate = None if seconds_per_call is None else StageRate(
        model="local/x", stage="judge faithfulness stage 1", seconds_per_call=seconds_per_call, runs=1, calls=10,
        first=0.0, last=0.0, fastest=seconds_per_call, slowest=seconds_per_call)
    count = StageCount("judge", "judge faithfulness stage 1", "local/x", requests=10, prompt_tokens=5000,
                       completion_tokens=400.0, rate=rate)
    return Estimate(pipeline="evaluate", rows=[estimate_row(count, LLMSettings(model="local/qwen2.5-0.5b-instruct"))])


def test_the_estimate_says_when_its_time_has_no_history_to_stand_on():
    guessed = format_estimate(_row(None))
    assert "no history to stand on (1 of 1 stages, 100% of the total)" in guessed
    assert "s?" in guessed.splitlines()[3] or "m?" in guessed.splitlines()[3]
    measured = format_estimate(_row(2.0))
    assert "no history to stand on" not in measured
    assert _row(2.0).rows[0].wall_s == 10 * 2.0  # 10 calls at the stage's recorded 2 s of wall per call


def test_the_estimate_counts_cached_answers_and_judge_calls_as_free(tmp_path, monkeypatch):
    """With the store's latest index and evaluation set, the estimate asks with the run's own prompts:
    answers (and the judge calls on them) already in the LLM cache are not calls."""
    import json
    import shutil

    import yaml

    from ragwatch.corpus.chunking import chunk_documents
    from ragwatch.corpus.documents import load_documents
    from ragwatch.estimate import LatestInputs, estimate_pipeline
    from ragwatch.evaluation import judge_answers
    from ragwatch.indexing.embeddings import get_embedder
    from ragwatch.indexing.index import Index
    from ragwatch.llm.client import LLMClient
    from ragwatch.rag.builtin import BuiltinRAG
    from ragwatch.types import EvalSample
    from tests.fake_llm_server import FakeLLMServer, schema_reply

    monkeypatch.setenv("RAGWATCH_CACHE_DIR", str(tmp_path / "cache"))
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    shutil.copy(ROOT / "data" / "sample" / "zenml_docs" / "component-guide" / "orchestrators" / "local.md", corpus)
    samples = [EvalSample(id=f"q{i}", question=f"How does the local orchestrator run step {i}?",
                          reference_answer="In the local Python process.") for i in range(3)]
    with FakeLLMServer(responder=schema_reply, lifetime_s=120) as server:
        llm = {"model": "openai/gpt-4o-mini", "api_base": server.base_url, "max_tokens": 100}
        path = tmp_path / "c.yaml"
        path.write_text(yaml.safe_dump({
            "ingest": {"corpus": {"paths": ["corpus"]}},
            "evaluate": {"system": {"generator": llm}, "e2e": {"enabled": False},
                         "judges": {"llm": llm, "enabled": ["faithfulness"]}}}))
        config = load_config(path, FullConfig)
        embedder = get_embedder(config.ingest.embedding)
        chunks = chunk_documents(load_documents(config.ingest.corpus.paths).documents, config.ingest.chunking,
                                 embedder.count_tokens, max_window=embedder.max_input_tokens)
        index = Index.build(chunks, embedder)
        system = config.evaluate.system
        before = estimate_pipeline("evaluate", config, history=[], latest=LatestInputs(index, samples))
        # a first run: answers and judge calls sent, and cached
        answers = BuiltinRAG(index, embedder, LLMClient(system.generator), system.rag).answer_many(
            [s.question for s in samples])
        judge_answers(samples, answers, config.evaluate.judges)
        sent = server.calls
        after = estimate_pipeline("evaluate", config, history=[], latest=LatestInputs(index, samples))
        assert server.calls == sent  # the estimates sent nothing
    calls = {(r.role, r.stage): (r.calls, r.cached) for r in after.rows}
    assert calls[("generator", "rag answers")] == (0, 3)
    assert all(n == 0 for n, _ in calls.values()), json.dumps({str(k): v for k, v in calls.items()})
    assert sum(r.calls for r in before.rows) == sent  # the same prompts: every call new before the run


@pytest.mark.parametrize(("argv", "quick"), [(["--quick"], True), (["--quick", "full"], True),
                                              (["full", "--quick"], True), (["evaluate", "--quick"], True),
                                              (["full"], False), ([], False)])
def test_run_py_takes_quick_before_or_after_the_command(argv, quick):
    from ragwatch_zenml import cli as run

    assert run.build_parser().parse_args(argv).quick is quick


def test_a_quick_runs_gate_says_not_applied_never_promoted_nor_a_regression():
    """The printout, the report page and the metadata's verdict all read the one label."""
    from types import SimpleNamespace

    from ragwatch.decision.gate import GateDecision, not_applied
    from ragwatch.quick import quick_gate_reason
    from ragwatch.report.summary import gate_label, summary_text, verdict_line
    from ragwatch_zenml import cli as run
    from ragwatch_zenml.commands.runner import RunOutcome

    gate = not_applied(quick_gate_reason(12))
    assert gate_label(gate) == "NOT APPLIED (--quick: 12 items cannot decide)"
    assert (gate.promote, gate.status, gate.evaluated, gate.refused) == (False, "not_applied", True, False)
    cls, line = verdict_line({}, gate)
    assert cls == "none" and line.endswith("Gate: NOT APPLIED (--quick: 12 items cannot decide).")
    assert "PROMOTED" not in summary_text({}, {}, gate) and "First evaluation" not in line
    outcome = RunOutcome(pipeline="full", run=SimpleNamespace(name="r"), seconds=1.0, gate=gate)
    assert not outcome.regressed and not outcome.not_evaluated and run.exit_code(outcome) == 0
    with pytest.raises(ValueError, match="contradicts"):
        GateDecision(promote=True, status="not_applied")
    for status in ("regressed", "hold", "needs_labels"):  # the refusals: exit 1 without --quick
        refused = RunOutcome(pipeline="full", run=None, seconds=1.0, gate=GateDecision(promote=False, status=status))
        assert refused.regressed and run.exit_code(refused) == 1 and run.exit_code(refused, quick=True) == 0
