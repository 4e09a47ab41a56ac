"""The faithfulness judge's calibration contract: one answer to "which cut-off and support model", one place for
its defaults, and no judge facts in the model registry."""

from __future__ import annotations

import pytest

from ragwatch.judges.faithfulness import FaithfulnessJudge, FaithfulnessOptions
from ragwatch.judges.faithfulness import calibrations as cal
from ragwatch.judges.faithfulness.calibrations import FALLBACK_CUTOFF, FaithfulnessCalibration, judge_cutoff
from ragwatch.judges.faithfulness.support_model import SupportModel
from ragwatch.judges.faithfulness.versions import (
    FEATURES_VERSION,
    PROMPT_VERSION,
    SUPPORT_PROMPT_VERSION,
    WINDOW_PROMPT_VERSIONS,
)
from ragwatch.judges.registry import JudgeDeps
from ragwatch.judges.support import PROMPT_VERSION as SUPPORT_JUDGE_PROMPT
from ragwatch.judges.support import SupportOptions
from ragwatch.judges.support import build as build_support

CODER = "local/qwen2.5-coder-1.5b-instruct"


def test_the_calibration_decides_and_an_option_overrides_it():
    shipped = cal.faithfulness_calibration(CODER, PROMPT_VERSION)
    assert shipped is not None and shipped.support_model is not None and shipped.features_version == FEATURES_VERSION
    cut = judge_cutoff(CODER, PROMPT_VERSION)
    assert (cut.cutoff, cut.support_model, cut.calibration) == (shipped.support_model.cutoff, shipped.support_model,
                                                                shipped)
    assert "calibration of qwen2.5-coder-1.5b-instruct" in cut.source
    forced = judge_cutoff(CODER, PROMPT_VERSION, option=0.3)
    assert forced.cutoff == 0.3 and forced.support_model == shipped.support_model and forced.source.startswith("option")


def test_no_calibration_falls_back_and_says_why():
    for cut, why in ((judge_cutoff("gpt-4o-mini", PROMPT_VERSION), "no calibration for judge model gpt-4o-mini"),
                     (judge_cutoff(CODER, "faithfulness-v1"), "no calibration"),
                     (judge_cutoff(CODER, PROMPT_VERSION, features_version="features-v0"), "no calibration"),
                     (judge_cutoff(CODER, PROMPT_VERSION, use_logprobs=False), "without logprobs"),
                     # measured, but no cut-off separated its verdicts
                     (judge_cutoff("local/qwen2.5-0.5b-instruct", "faithfulness-v6-batched", features_version=None),
                      "chose no cut-off")):
        assert cut.cutoff == FALLBACK_CUTOFF and cut.support_model is None and why in cut.source
    judge = FaithfulnessJudge(None, model="openai/gpt-4o-mini", use_logprobs=True)
    assert judge.details("faithfulness")["cutoff_source"].startswith(f"fallback {FALLBACK_CUTOFF}")


def test_window_verifiers_and_the_support_judge_read_the_same_calibrations():
    assert SUPPORT_JUDGE_PROMPT == SUPPORT_PROMPT_VERSION and SUPPORT_PROMPT_VERSION in WINDOW_PROMPT_VERSIONS
    windows = FaithfulnessJudge(None, model=CODER, use_logprobs=True, verify="per_statement")
    assert windows.support_threshold == 0.90 and windows.metrics["faithfulness"].agreement is None
    assert windows.details("faithfulness")["support_model"] is None
    support = build_support(SupportOptions(), JudgeDeps(model=CODER, use_logprobs=True))
    assert support.support_threshold == 0.90
    assert build_support(SupportOptions(verdict="greedy"), JudgeDeps(model=CODER, use_logprobs=True)) \
        .support_threshold is None
    assert build_support(SupportOptions(), JudgeDeps(model="gpt-4o-mini", use_logprobs=True)) \
        .support_threshold == FALLBACK_CUTOFF


def test_a_calibration_has_one_cutoff():
    with pytest.raises(ValueError, match="uses its cut-off"):
        FaithfulnessCalibration(model="m", prompt_version="p", support_model=SupportModel(intercept=0, weights={}),
                                cutoff=0.4)
    keys = [(c.model, c.prompt_version, c.features_version) for c in cal.CALIBRATIONS]
    assert len(keys) == len(set(keys)), "two calibrations answer for one judge model, prompt and features version"


def test_a_judge_is_built_from_its_options_only():
    plain = FaithfulnessJudge(None)
    assert plain.options == FaithfulnessOptions()
    assert (plain.statements, plain.max_statements) == (FaithfulnessOptions().statements,
                                                        FaithfulnessOptions().max_statements)
    one_by_one = FaithfulnessJudge(None, verify="batched", max_statements=2)
    assert one_by_one.options == FaithfulnessOptions(verify="batched", max_statements=2)
    with pytest.raises(ValueError, match="not both"):
        FaithfulnessJudge(None, FaithfulnessOptions(), verify="batched")
    with pytest.raises(ValueError, match="max_statment"):  # a wrong key is an error naming it
        FaithfulnessJudge(None, max_statment=3)
