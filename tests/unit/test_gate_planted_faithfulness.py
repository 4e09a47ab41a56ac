"""The planted wrong-place faithfulness change (`tests/planted_faithfulness.py`) through the real judge,
level, compare, labels plan and gate, without ZenML or a browser: needs labels; 30 labels of the
`review serve` draw decide it REGRESSED for every seed; a no-op replay is promoted. The browser walk
of the same path is `tests/integration/test_gate_labels_browser.py`."""

from __future__ import annotations

import numpy as np
import pytest

import tests.planted_faithfulness as planted
from ragwatch.decision.compare import compare_runs
from ragwatch.decision.gate import GateDecision, gate_decision
from ragwatch.decision.labels_plan import labels_plans
from ragwatch.decision.thresholds import GateThresholds
from ragwatch.judges.faithfulness import calibrations
from ragwatch.llm.client import LLMClient
from ragwatch.llm.types import LLMSettings
from ragwatch.report.verdicts import reason_lines
from ragwatch.results import MetricResult
from ragwatch.review.labelled import attach_labelled
from ragwatch.review.labels import HumanLabel, HumanLabels
from ragwatch.review.sample import review_sample
from ragwatch.statements import statement_verdicts
from ragwatch.types import EvalSample, RagAnswer, RetrievedContext
from tests.fake_llm_server import FakeLLMServer

JUDGE = "openai/fake-judge"
TH = GateThresholds(default_allowed_drop=0.05, per_metric={"system/*": 0.0}, gated_metrics=["faithfulness"])


@pytest.fixture(scope="module")
def runs() -> tuple[MetricResult, MetricResult]:
    """(production, planted) faithfulness, judged by the weak fake judge with the shipped calibration."""
    from ragwatch.judges.faithfulness import FaithfulnessJudge

    shipped = next(c for c in calibrations.CALIBRATIONS if c.level_data)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(calibrations, "CALIBRATIONS", (*calibrations.CALIBRATIONS, shipped.model_copy(
            update={"model": JUDGE})))
        rows = planted.questions()
        samples = [EvalSample(id=r["id"], question=r["question"]) for r in rows]
        with FakeLLMServer(responder=planted.judge_reply) as server:
            llm = LLMClient(LLMSettings(model=JUDGE, api_base=server.base_url, cache=False, max_retries=0))
            judge = FaithfulnessJudge(llm, model=JUDGE, use_logprobs=True, statements="sentences", max_statements=4)
            assert judge.calibration is not None

            def run(is_planted: bool) -> MetricResult:
                answers = []
                for r in rows:
                    a = planted.answer_of(r["question"], planted=is_planted)
                    answers.append(RagAnswer(question=r["question"], answer=a["answer"],
                                             contexts=[RetrievedContext(text=c["text"]) for c in a["contexts"]]))
                return judge.evaluate_all(samples, answers)["faithfulness"]

            return run(False), run(True)


def _decide(new: MetricResult, old: MetricResult) -> GateDecision:
    comparison = compare_runs({"faithfulness": new}, {"faithfulness": old}, thresholds=TH, old_label="production")
    plans = labels_plans(comparison, {"faithfulness": new}, {"faithfulness": old}, run="R", thresholds=TH)
    return gate_decision(comparison, TH, plans=plans)


def _truth(item) -> float:
    return float(np.mean([planted.truth(v.statement) for v in statement_verdicts(item.details)]))


def test_the_weak_judge_sees_the_planted_drop_but_cannot_size_it(runs) -> None:
    production, candidate = runs
    assert candidate.details["verdict_share"] == production.details["verdict_share"] == 1.0  # invisible to verdicts
    truth = [np.mean([_truth(it) for it in r.items]) for r in runs]
    assert truth == pytest.approx([0.75, 0.75 - 32 / 48 / 4])
    decision = _decide(candidate, production)
    assert decision.status == "needs_labels", reason_lines(decision)
    reason = reason_lines(decision)[0]
    assert "32 of 48 answers changed" in reason and "--metric faithfulness --n" in reason


@pytest.mark.parametrize("seed", range(10))
def test_thirty_labels_of_the_review_draw_decide_it_regressed(runs, seed: int) -> None:
    production, candidate = runs
    rows = [{"item_id": it.item_id} for it in candidate.items]
    draw = review_sample(rows, {"faithfulness": candidate}, n=37, seed=seed)  # the gate names 37; 30 are given
    by_id = {it.item_id: it for it in candidate.items}
    labels = [HumanLabel(item_id=r["item_id"], metric="faithfulness", value=_truth(by_id[r["item_id"]]),
                         inclusion_prob=r["inclusion_prob"], judged_key=by_id[r["item_id"]].details["judged_key"])
              for r in draw.rows[:30]]
    labelled, _ = attach_labelled({"faithfulness": candidate}, HumanLabels(labels=labels))
    decision = _decide(labelled["faithfulness"], production)
    assert decision.status == "regressed" and not decision.promote, reason_lines(decision)
    assert reason_lines(decision)[0].startswith("faithfulness regressed on human labels")


def test_a_no_op_replay_is_promoted(runs) -> None:
    production, _ = runs
    assert _decide(production, production).status == "promote"
