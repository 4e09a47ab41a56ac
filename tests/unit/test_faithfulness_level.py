"""The faithfulness level (`ragwatch.judges.faithfulness.level`): the headline is the calibrated level,
the verdict share stays beside it, `calibrate` sets the level beside the labels, the data ships."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ragwatch.calibration.level import answer_of, level_check
from ragwatch.calibration.loaders import CalibrationItem
from ragwatch.judges.faithfulness import level as fl
from ragwatch.judges.faithfulness.calibrations import CALIBRATIONS, FaithfulnessCalibration
from ragwatch.judges.faithfulness.support_model import SupportModel, feature_vector
from ragwatch.judges.faithfulness.verify_evidence import features_of
from ragwatch.results import ItemScore, JudgeAgreement, MetricInfo, MetricResult
from ragwatch.statements import StatementVerdict
from ragwatch.statistics.level import fit_logistic, predict_logistic

SUPPORT = SupportModel(intercept=-1.5, weights={"judge_logit": 0.15, "lexical": 2.2}, cutoff=0.44)


def _records(n_answers: int, rng: np.random.Generator) -> list[dict]:
    out = []
    for a in range(n_answers):
        for k in range(int(rng.integers(1, 4))):
            y = bool(rng.random() < 0.55)
            out.append({"answer_id": f"a{a}", "label": y, "p_judge": float(rng.uniform(0.3, 0.9)),
                        "lexical": float(np.clip(rng.normal(0.3 + 0.35 * y, 0.15), 0, 1)),
                        "no_claim": False, "absent_terms": bool(not y and k == 2)})
    return out


@pytest.fixture
def calibration(monkeypatch) -> FaithfulnessCalibration:
    records = _records(40, np.random.default_rng(0))
    monkeypatch.setattr(fl, "read_records", lambda name: records)
    fl._shipped_set.cache_clear()
    fl._shipped_transfer.cache_clear()
    agreement = JudgeAgreement(kappa=0.5, kappa_ci=(0.3, 0.7), balanced_accuracy=0.75,
                               balanced_accuracy_ci=(0.65, 0.85),
                               n=len(records), data="synthetic", labels="synthetic")
    return FaithfulnessCalibration(model="m", prompt_version="p", support_model=SUPPORT, agreement=agreement,
                                   level_data="synthetic.jsonl")


def _verdict(lexical: float, p_judge: float = 0.7, rule: str | None = None) -> StatementVerdict:
    p = SUPPORT.predict({"p_judge": p_judge, "lexical": lexical})
    return StatementVerdict(statement="s", verdict=p >= SUPPORT.cutoff and rule is None, p_supported=p,
                            p_judge=p_judge, threshold=SUPPORT.cutoff, lexical_support=lexical, rule=rule,
                            evidence=[1])


def _result(lexicals: list[list[float]]) -> MetricResult:
    items = []
    for i, lex in enumerate(lexicals):
        verdicts = [_verdict(x) for x in lex]
        share = sum(bool(v.verdict) for v in verdicts) / len(verdicts)
        items.append(ItemScore(item_id=f"q{i}", score=share, details={
            "verdicts": [v.model_dump() for v in verdicts], "weighted_score": 0.5}))
    items.append(ItemScore(item_id="failed", error="no contexts"))
    return MetricResult.from_items("faithfulness", items, details={"weighted": 0.5, "n_weighted": 3},
                                   info=MetricInfo(family="judge"))


def test_the_headline_is_the_level_and_the_verdict_share_stays_beside_it(calibration) -> None:
    result = _result([[0.9, 0.1], [0.2], [0.8, 0.7, 0.1], [0.05, 0.1], [0.95]] * 4)
    leveled = fl.with_level(result, calibration, resamples=200)
    assert leveled.details["verdict_share"] == result.score
    assert leveled.details["verdict_share_ci"] == [result.ci_low, result.ci_high]
    assert "weighted" not in leveled.details  # the class-balanced mean is not shown as a figure
    assert leveled.ci_low <= leveled.score <= leveled.ci_high
    level = leveled.details["level"]
    assert (level["n_items"], level["n_units"], level["n_calibration_groups"]) == (20, 36, 40)
    assert "refitting" in leveled.ci_method and "20 items" in leveled.ci_method
    assert [it.score for it in leveled.items] == [it.score for it in result.items] and leveled.n_failed == 1
    # the level is the mean over items of the calibrated P(supported): recompute it by hand
    cal = fl.calibration_set(fl.read_records("x"))
    coef = fit_logistic(cal.x, cal.y)[0]
    item_means = []
    for it in result.items[:-1]:
        x = np.array([feature_vector(features_of(StatementVerdict.model_validate(v)), fl.LEVEL_FEATURES)
                      for v in it.details["verdicts"]])
        item_means.append(predict_logistic(coef, x)[0].mean())
    assert [it.details["calibrated_share"] for it in leveled.items[:-1]] == pytest.approx(item_means)
    if fl.LEVEL_METHOD == "pcc":
        assert leveled.score == pytest.approx(np.mean(item_means))


def test_without_calibration_data_the_verdict_share_stays_the_score(calibration) -> None:
    result = _result([[0.9], [0.1]])
    assert fl.with_level(result, None) is result
    assert fl.with_level(result, calibration.model_copy(update={"level_data": None})) is result


def test_the_printout_names_the_verdict_share(calibration) -> None:
    from ragwatch.report.summary import summary_text

    leveled = fl.with_level(_result([[0.9, 0.1], [0.2], [0.8]] * 5), calibration, resamples=100)
    text = summary_text({"faithfulness": leveled}, {}, None, ["faithfulness"])
    assert f"{leveled.score:.3f} (verdict share {leveled.details['verdict_share']:.3f})" in text
    assert "weighted" not in text


def test_calibrate_sets_the_level_beside_the_labels_mean_item_faithfulness(calibration) -> None:
    class Judge:
        support_threshold = None

    Judge.calibration = calibration
    lexicals = [0.9, 0.1, 0.8, 0.2, 0.7]
    items = [CalibrationItem(id=f"ans{k // 2}-s{k % 2}", answer="s", contexts=["c"], faithful=lex > 0.5)
             for k, lex in enumerate(lexicals)]
    result = MetricResult.from_items("faithfulness", [
        ItemScore(item_id=it.id, score=1.0, details={"verdicts": [_verdict(lex).model_dump()]})
        for it, lex in zip(items, lexicals, strict=True)])
    check = level_check(Judge(), items, result)
    assert check is not None and (check.n_answers, check.n_statements) == (3, 5)
    assert check.labels_mean == pytest.approx((0.5 + 0.5 + 1.0) / 3)
    text = check.describe()
    assert "mean item faithfulness 0.667" in text and f"{check.level.estimate:.3f}" in text
    assert level_check(type("NoCal", (), {"calibration": None})(), items, result) is None


def test_statements_are_grouped_into_their_answers() -> None:
    assert answer_of(CalibrationItem(id="syn-abc-s3", answer="x", faithful=True)) == "syn-abc"
    assert answer_of(CalibrationItem(id="sys/q1#0", answer="x", faithful=True)) == "sys/q1"
    assert answer_of(CalibrationItem(id="z", answer="x", faithful=True, metadata={"item_id": "q9"})) == "q9"


def test_every_shipped_calibration_data_file_is_there_and_well_formed() -> None:
    shipped = [c for c in CALIBRATIONS if c.level_data is not None]
    assert shipped, "the default judge's calibration ships its labelled statements"
    for c in shipped:
        records = fl.read_records(c.level_data)
        assert len(records) >= 20 and {bool(r["label"]) for r in records} == {True, False}
        assert all(json.dumps(r) for r in records)
    with pytest.raises(FileNotFoundError, match="refit"):
        fl.read_records("no-such-file.jsonl")


def test_the_calibrate_report_prints_the_level_check(calibration) -> None:
    from ragwatch.calibration.report import calibrate

    lexicals = [0.9, 0.1, 0.8, 0.2, 0.7, 0.6]
    items = [CalibrationItem(id=f"ans{k // 2}-s{k % 2}", answer="s", contexts=["c"], faithful=lex > 0.5)
             for k, lex in enumerate(lexicals)]

    class Judge:
        name = "faithfulness"
        support_threshold = None

        def evaluate(self, samples, answers):
            return MetricResult.from_items("faithfulness", [
                ItemScore(item_id=it.id, score=float(lex > 0.5), details={"verdicts": [_verdict(lex).model_dump()]})
                for it, lex in zip(items, lexicals, strict=True)])

    Judge.calibration = calibration
    report = calibrate(Judge(), items, resamples=100)
    assert report.level is not None and report.level.n_answers == 3
    assert "mean item faithfulness" in report.to_markdown()


def test_an_unseen_system_carries_the_between_system_bias(monkeypatch, calibration) -> None:
    records = [{**r, "system": "S0" if int(r["answer_id"][1:]) % 2 else "S1"}
               for r in _records(40, np.random.default_rng(0))]
    monkeypatch.setattr(fl, "read_records", lambda name: records)
    fl._shipped_set.cache_clear()
    fl._shipped_transfer.cache_clear()
    result = _result([[0.9, 0.1], [0.2], [0.8, 0.7, 0.1], [0.05, 0.1], [0.95]] * 4)
    seen = fl.with_level(result, calibration, resamples=200, system="S0")
    unseen = fl.with_level(result, calibration, resamples=200)  # a system not known to be one of them
    assert seen.details["level"]["calibration_systems"] == ["S0", "S1"] and seen.details["level"]["transfer"] is None
    transfer = unseen.details["level"]["transfer"]
    assert transfer["df"] == 2 and set(transfer["errors"]) == {"S0", "S1"} and transfer["sd"] >= 0
    assert "between-system bias" in unseen.ci_method and "own intercept shift" not in unseen.ci_method
    # every run's point is the pooled fit's (a paired comparison of two systems differences one model's values);
    # a run of one of the data's systems has an interval reaching over that of a fit with its own intercept shift
    assert unseen.score == seen.score
    assert "system S0, one of them: the interval reaches from this level (the pooled fit" in seen.ci_method
    own = seen.details["level"]["own_system"]
    assert own["system"] == "S0" and own["estimate"] != seen.score
    assert seen.ci_low <= min(own["ci"][0], seen.score) and seen.ci_high >= max(own["ci"][1], seen.score)
    assert "own_system" not in unseen.details["level"]
    assert fl.system_of({"answer_id": "S3/q1"}) == "S3" and fl.system_of({"answer_id": "q1"}) == "default"


def test_a_run_is_levelled_as_its_system_only_when_its_fingerprint_is_a_calibration_system() -> None:
    from ragwatch.judges.faithfulness import FaithfulnessJudge
    from ragwatch.judges.faithfulness.calibrations import CALIBRATIONS

    shipped = CALIBRATIONS[0]
    # the labelled systems whose configs are in the repository; the planted sets (P, P2) have none
    assert set(shipped.systems) == {"S0", "S1", "S2", "S3", "S4", "S5"}
    assert shipped.system_code(shipped.systems["S1"]) == "S1"
    assert shipped.system_code("0" * 64) is None and shipped.system_code(None) is None
    judge = FaithfulnessJudge(None, model=f"local/{shipped.model}", use_logprobs=True,
                              system_fingerprint=shipped.systems["S0"])
    assert judge.calibration is not None and judge.calibration.system_code(judge.system_fingerprint) == "S0"
