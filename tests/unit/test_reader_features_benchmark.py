"""The reader-feature candidates of `benchmarks/reader_features.py`: what each measures on a known statement, that
a contraction does not move the normalised ones, and that the fit reads them only inside `candidate_inputs`."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))  # the tool imports its siblings

import reader_features as rf

from ragwatch.judges.faithfulness import support_model

CONTEXTS = ["ZenML caches steps by default. A step is not cached when its code changes."]


def test_support_of_what_the_statement_adds_to_the_question():
    question = "Does ZenML cache steps?"
    echo = rf.reader_features("ZenML caches steps and uploads them to Airflow.", question, CONTEXTS)
    assert echo["novel_support"] == pytest.approx(0.0)  # uploads, airflow: not in the contexts
    assert echo["content_support"] == pytest.approx(0.6)  # zenml, cache, step are; upload, airflow are not
    right = rf.reader_features("ZenML caches steps by default.", question, CONTEXTS)
    assert right["novel_support"] == pytest.approx(1.0) and right["best_sentence"] == pytest.approx(1.0)


def test_a_negation_on_one_side_and_an_unfinished_statement():
    f = rf.reader_features("ZenML does not cache steps by default.", "", CONTEXTS)
    assert f["negation_mismatch"] == 1.0 and f["truncated"] == 0.0
    assert rf.truncated("Run `zenml up") and rf.truncated("The step is cached when") and not rf.truncated("Done.")


def test_contractions_leave_the_normalised_measures_where_they_were():
    plain = rf.reader_features("A step is not cached when its code changes.", "", CONTEXTS)
    short = rf.reader_features("A step isn't cached when its code changes.", "", CONTEXTS)
    for name in ("content_support", "anchored_support", "best_sentence", "negation_mismatch"):
        assert short[name] == pytest.approx(plain[name]), name
    assert rf.reword(rf.STYLE_2, "You cannot do not") == "You can't don't"


def test_the_support_model_reads_a_candidate_only_inside_the_block():
    model = support_model.SupportModel(intercept=0.0, weights={"novel_support": 2.0})
    with rf.candidate_inputs(("novel_support",)):
        assert model.predict({"novel_support": 1.0}) == pytest.approx(1 / (1 + 2.718281828459045 ** -2))
    with pytest.raises(ValueError, match="unknown support-model features"):
        model.predict({"novel_support": 1.0})
