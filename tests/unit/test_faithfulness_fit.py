"""The faithfulness calibration's fit as a product command: it reproduces the shipped calibration, and writes
the labelled data and the calibration of a judge from its feature rows."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from ragwatch.judges.faithfulness import fit
from ragwatch.judges.faithfulness.calibrations import CALIBRATIONS, FaithfulnessCalibration

SHIPPED = next(c for c in CALIBRATIONS if c.level_data)


def test_the_fit_reproduces_the_shipped_calibration_byte_for_byte():
    from importlib import resources

    folder = resources.files("ragwatch.judges.faithfulness") / "calibration_data"
    records = fit.read_labelled([folder / SHIPPED.support_data])
    fitted = {r["system"] for r in records}
    measured = set(SHIPPED.systems) - fitted  # the systems under test outside the fit (planted sets have no config)
    unseen = [r for r in fit.read_labelled([folder / SHIPPED.level_data]) if r["system"] in measured]
    refit = fit.fit_calibration(records, model=SHIPPED.model, prompt_version=SHIPPED.prompt_version,
                                features_version=SHIPPED.features_version, level_data=SHIPPED.level_data,
                                fit_data=SHIPPED.fit_data, level_about=SHIPPED.level_about,
                                systems=SHIPPED.systems, unseen=unseen, unseen_data=SHIPPED.agreement.data)
    stored = (folder / SHIPPED.support_data.replace(".jsonl", ".calibration.json")).read_text(encoding="utf-8")
    assert fit.calibration_json(refit) == stored


def test_the_shipped_level_data_holds_every_labelled_system_and_no_text():
    from ragwatch.judges.faithfulness.level import read_records

    level = read_records(SHIPPED.level_data)
    assert SHIPPED.fit_data is not None and SHIPPED.level_data != SHIPPED.fit_data
    # the six systems under test; the planted sets' untouched statements are copies of theirs, their planted
    # ones are measured apart (benchmarks/level_under_planted.py)
    assert {r["system"] for r in level} == {"S0", "S1", "S2", "S3", "S4", "S5"}
    assert all(set(r) == set(fit.LEVEL_KEYS) for r in level)
    fitted = read_records(SHIPPED.fit_data)
    assert {r["system"] for r in fitted} == {"S0", "S1", "S2"} and len(level) > len(fitted)


def test_a_calibration_stored_before_the_level_had_its_own_data_still_loads():
    old = json.loads(fit.calibration_json(SHIPPED))
    del old["fit_data"], old["level_about"]
    cal = FaithfulnessCalibration.model_validate(old)
    assert cal.fit_data is None and cal.support_data == cal.level_data


def test_the_command_calibrates_the_level_on_other_statements_than_the_verdicts(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    verdict_rows = rows()
    more = [{**r, "system": "S9", "item_id": f"x{r['item_id']}"} for r in rows(seed=1)]
    write(tmp_path / "f.jsonl", verdict_rows)
    write(tmp_path / "g.jsonl", more)
    assert fit.main(["--features", str(tmp_path / "f.jsonl"), "--level-features", str(tmp_path / "f.jsonl"),
                     str(tmp_path / "g.jsonl"), "--level-description", "four systems", "--resamples", "50"],
                    data_dir=data) == 0
    cal = FaithfulnessCalibration.model_validate_json((data / "m__p__features-v2.calibration.json").read_text())
    assert (cal.level_data, cal.fit_data, cal.level_about) == \
        ("m__p__features-v2__level.jsonl", "m__p__features-v2.jsonl", "four systems")
    level = [json.loads(line) for line in (data / cal.level_data).read_text().splitlines()]
    assert len(level) == len(verdict_rows) + len(more) and all(set(r) <= set(fit.LEVEL_KEYS) for r in level)
    assert "S9" in {r["system"] for r in level}
    assert len((data / cal.fit_data).read_text().splitlines()) == len(verdict_rows)
    readme = (data / "README.md").read_text()
    assert "## m__p__features-v2.jsonl" in readme and "## m__p__features-v2__level.jsonl" in readme
    # the support model is fitted on --features alone: the same as a fit without --level-features
    alone = fit.fit_calibration(fit.read_labelled_rows(fit.merge(verdict_rows, [])[0]), model="m", prompt_version="p",
                                features_version="features-v2", resamples=50)
    assert cal.support_model == alone.support_model
    # the printed agreement is the shipped verdicts' on the statements of systems the fit never saw (S9 here)
    assert cal.agreement is not None and cal.agreement.n == len(more) and "(S9)" in cal.agreement.data
    s9 = fit.read_labelled_rows(fit.merge(more, [])[0])
    again = fit.unseen_agreement(s9, cal.support_model, resamples=50, data=cal.agreement.data)
    assert again == cal.agreement


def test_the_shipped_agreement_is_measured_on_systems_the_verdict_model_never_saw():
    assert SHIPPED.agreement is not None and SHIPPED.fit_data is not None
    from ragwatch.judges.faithfulness.level import read_records

    fitted = {r["system"] for r in read_records(SHIPPED.fit_data)}
    unseen = [r for r in read_records(SHIPPED.level_data) if r["system"] in set(SHIPPED.systems) - fitted]
    assert SHIPPED.agreement.n == len(unseen) > 200
    assert "never fitted on" in SHIPPED.agreement.data


def test_a_copy_of_a_statement_counts_once_and_a_copy_of_a_fitted_one_is_not_unseen():
    given = [{"system": "P", "statement": "ZenML  runs pipelines."},
             {"system": "S0", "statement": "ZenML runs pipelines."},
             {"system": "S4", "statement": "Lists are mutable."}, {"system": "S5", "statement": "Lists are mutable."}]
    kept, copies = fit.distinct_statements(given, {"S0"})
    assert copies == 2 and [r["system"] for r in kept] == ["S0", "S4"]


def test_the_agreement_can_be_measured_on_the_named_systems_only(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    write(tmp_path / "f.jsonl", rows())
    s9 = [{**r, "system": "S9", "item_id": f"x{r['item_id']}"} for r in rows(seed=1)]
    planted = [{**r, "system": "P9", "item_id": f"y{r['item_id']}"} for r in rows(seed=2)]
    write(tmp_path / "g.jsonl", s9 + planted)
    args = ["--features", str(tmp_path / "f.jsonl"), "--level-features", str(tmp_path / "f.jsonl"),
            str(tmp_path / "g.jsonl"), "--resamples", "50"]
    assert fit.main([*args, "--unseen-systems", "S9"], data_dir=data) == 0
    cal = FaithfulnessCalibration.model_validate_json((data / "m__p__features-v2.calibration.json").read_text())
    assert cal.agreement is not None and cal.agreement.n == len(s9) and "(S9)" in cal.agreement.data
    assert fit.main([*args, "--unseen-systems", "S7"], data_dir=data) == 2  # no such system: an error, not 0 rows


def rows(n_answers: int = 60, seed: int = 0) -> list[dict]:
    """Feature rows of three systems where lexical support separates the labels, noisily."""
    rng = random.Random(seed)
    out = []
    for a in range(n_answers):
        for k in range(3):
            supported = rng.random() < 0.55
            lexical = min(max(rng.gauss(0.7 if supported else 0.35, 0.2), 0.0), 1.0)
            out.append({"item_id": f"q{a}", "statement_index": k, "system": f"S{a % 3}", "judge_model": "m",
                        "prompt_version": "p", "features_version": "features-v2", "verdict": True,
                        "p_judge": rng.random(), "lexical": lexical, "uncited": rng.random() < 0.2,
                        "missing_terms": rng.randint(0, 2), "label": "supported" if supported else "unsupported"})
    return out


def write(path, records) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def test_the_command_writes_the_data_and_its_calibration(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    features = rows()
    features[0]["label"] = None  # the readers disagreed: left out and counted
    write(tmp_path / "f.jsonl", features)
    write(tmp_path / "l.jsonl", [{"statement_id": "S1/q1#0", "label": "unsupported"}])  # a label file wins
    assert fit.main(["--features", str(tmp_path / "f.jsonl"), "--labels", str(tmp_path / "l.jsonl"),
                     "--system", "S0=abc", "--resamples", "200"], data_dir=data) == 0
    shipped = [json.loads(line) for line in (data / "m__p__features-v2.jsonl").read_text().splitlines()]
    assert len(shipped) == len(features) - 1
    assert next(r for r in shipped if r["statement_id"] == "S1/q1#0")["label"] is False
    cal = FaithfulnessCalibration.model_validate_json((data / "m__p__features-v2.calibration.json").read_text())
    assert (cal.model, cal.prompt_version, cal.features_version, cal.level_data, cal.systems) == \
        ("m", "p", "features-v2", "m__p__features-v2.jsonl", {"S0": "abc"})
    assert cal.support_model is not None and cal.support_model.weights["lexical"] > 0
    assert 0 < cal.verdict_cutoff < 1 and cal.agreement is not None and cal.agreement.kappa > 0.2
    assert cal.agreement.kappa_ci[0] <= cal.agreement.kappa <= cal.agreement.kappa_ci[1]
    assert "left out: 1" in (data / "README.md").read_text()
    # a second fit keeps the systems' fingerprints of the calibration it replaces
    assert fit.main(["--features", str(tmp_path / "f.jsonl"), "--resamples", "50",
                     "--data-description", "statements of two systems"], data_dir=data) == 0
    again = FaithfulnessCalibration.model_validate_json((data / "m__p__features-v2.calibration.json").read_text())
    assert again.systems == {"S0": "abc"}
    assert again.agreement is not None and again.agreement.data == "statements of two systems"


def test_the_fit_is_a_command_of_run_py():
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, str(root / "run.py"), "calibrate-fit", "--help"], capture_output=True,
                          text=True, cwd=root)
    assert done.returncode == 0 and "--features" in done.stdout and "calibrate-fit" in done.stdout


def test_bad_input_is_an_error_that_says_what_to_do(tmp_path, capsys):
    mixed = rows(6)
    mixed[0]["prompt_version"] = "q"
    write(tmp_path / "mixed.jsonl", mixed)
    assert fit.main(["--features", str(tmp_path / "mixed.jsonl")], data_dir=tmp_path) == 2
    assert "one calibration is one of each" in capsys.readouterr().err
    one = [{**r, "system": "S0"} for r in rows(30)]
    write(tmp_path / "one.jsonl", one)
    assert fit.main(["--features", str(tmp_path / "one.jsonl")], data_dir=tmp_path) == 2
    assert "needs 2+" in capsys.readouterr().err
    assert fit.main(["--features", str(tmp_path / "missing.jsonl")], data_dir=tmp_path) == 2


@pytest.mark.parametrize("rule", fit.CUTOFF_RULES)
def test_every_cutoff_rule_splits_the_scores(rule):
    scores, labels = [-1.0, 0.1, 0.2, 0.4, 0.6, 0.7, 0.9], [False, False, False, True, False, True, True]
    cut = fit.cutoff_by(rule, scores, labels)
    assert 0 < cut < 1
    if rule == "balanced_accuracy_capped":  # calls no more unsupported than the readers find
        assert sum(s < cut for s in scores) <= labels.count(False)
    with pytest.raises(ValueError, match="unknown cut-off rule"):
        fit.cutoff_by("median", scores, labels)


def test_leave_one_system_out_chooses_among_the_given_candidates_and_keeps_each_model():
    records = fit.read_labelled_rows(fit.merge(rows(), [])[0])
    only = [fit.Candidate(("lexical",), True)]
    held = fit.leave_one_system_out(records, None, fit.SHIPPED_RULE, only)
    assert sorted(held.models) == ["S0", "S1", "S2"]
    assert all(tuple(m.weights) == ("lexical",) for m in held.models.values())
    assert held.chosen == [f"S{k}: lexical, balanced" for k in range(3)]
    for system, model in held.models.items():  # each system scored by the model that never saw it
        mine = [r for r in records if r["system"] == system]
        index = [i for i, r in enumerate(records) if r["system"] == system]
        assert list(held.verdicts[index]) == list(fit.verdicts(model, mine))
