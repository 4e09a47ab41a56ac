"""Judge calibration: loaders, sampling, the support judge and the agreement report, with mock LLMs."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable
from typing import Any

import pytest
from sklearn.metrics import balanced_accuracy_score, cohen_kappa_score, f1_score

from ragwatch.calibration import (
    DEFAULT_DATASET,
    FAITHFUL,
    HALLUCINATED,
    REPO_ROOT,
    CalibrationItem,
    CalibrationSettings,
    SupportJudge,
    calibrate,
    load_calibration_set,
    load_jsonl,
    parse_label,
    run_calibration,
    stratified_sample,
    to_eval_pairs,
)
from ragwatch.llm import LLMClient, LLMSettings
from ragwatch.results import ItemScore, MetricResult

SAMPLE = REPO_ROOT / DEFAULT_DATASET


pytestmark = pytest.mark.usefixtures("isolated_cache")  # a fresh LLM cache per test


class ScriptedLLM(LLMClient):
    """The real client; each prompt gets its own litellm `mock_response` from `script(messages, schema)`."""

    def __init__(self, script: Callable[[list[dict[str, str]], Any], str]) -> None:
        super().__init__(LLMSettings(model="openai/mock-judge", cache=False, max_retries=0, max_repairs=1))
        self.script = script
        self.seen: list[list[dict[str, str]]] = []

    def generate_many(self, prompts, *, schema=None, desc=None, **overrides):  # type: ignore[override]
        self.seen += prompts
        return [self.generate(p, schema=schema, mock_response=self.script(p, schema), **overrides)
                for p in prompts]


def _user(messages: list[dict[str, str]]) -> str:
    return messages[-1]["content"]


def _knows_atlantis_is_fiction(messages, schema) -> str:
    if "Atlantis" in _user(messages):
        return json.dumps({"verdict": "no", "reason": "Atlantis is not a real place."})
    if "GARBLE" in _user(messages):
        return "this is not json"
    return json.dumps({"verdict": "yes", "reason": "Correct."})


def _item(i: int, answer: str, faithful: bool, contexts: list[str] | None = None) -> CalibrationItem:
    return CalibrationItem(id=f"i{i}", question=f"Question {i}?", answer=answer, faithful=faithful,
                           contexts=contexts or [])


# --- data ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(("value", "faithful"), [
    ("faithful", True), ("Hallucinated", False), (True, True), (False, False), (1, True), (0, False),
    ("yes", True), ("no", False), ("supported", True), ("incorrect", False),
])
def test_parse_label(value, faithful):
    assert parse_label(value) is faithful


def test_parse_label_rejects_unknown_words_with_the_accepted_ones():
    with pytest.raises(ValueError, match="faithful/hallucinated"):
        parse_label("maybe")


def test_generic_jsonl_loader(tmp_path):
    path = tmp_path / "set.jsonl"
    rows = [
        {"id": "a", "context": "Paris is in France.", "question": "Where?", "answer": "France",
         "label": "faithful"},
        {"id": "b", "context": ["c1", "c2"], "claim": "The sky is green.", "label": 0, "source": "x"},
        {"question": "q", "answer": "a", "context": None, "label": "yes"},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    items = load_calibration_set(path)
    assert [it.id for it in items] == ["a", "b", "3"]
    assert items[0].contexts == ["Paris is in France."] and items[0].faithful
    assert items[1].answer == "The sky is green." and items[1].contexts == ["c1", "c2"]
    assert items[1].label == HALLUCINATED and items[1].metadata == {"source": "x"}
    assert items[2].contexts == [] and items[2].label == FAITHFUL


@pytest.mark.parametrize(("line", "message"), [
    ('{"question": "q", "label": "yes"}', "needs a string answer: one of the columns answer, claim"),
    ('{"answer": "a"}', "needs a label .* in one of the columns label, human_label, passing"),
    ('{"answer": "a", "label": "perhaps"}', ":1: unknown label"),
    ("{not json", "not valid JSON"),
])
def test_generic_loader_errors_name_the_line(tmp_path, line, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(ValueError, match=message):
        load_jsonl(path)


def test_missing_file_says_what_to_pass(tmp_path):
    with pytest.raises(FileNotFoundError, match="JSONL"):
        load_calibration_set(tmp_path / "nope.jsonl")


def test_shipped_halueval_slice_loads_balanced():
    items = load_calibration_set(SAMPLE)
    assert len(items) == 200
    assert sum(not it.faithful for it in items) == 100
    assert all(it.question and it.answer and not it.contexts for it in items)
    assert SAMPLE.with_suffix(".LICENSE").is_file()


def test_stratified_sample_is_seeded_and_keeps_proportions():
    items = [_item(i, "a", faithful=i % 4 != 0) for i in range(100)]  # 25% hallucinated
    picked = stratified_sample(items, 20, seed=1)
    assert len(picked) == 20 and sum(not it.faithful for it in picked) == 5
    assert picked == stratified_sample(items, 20, seed=1)
    assert picked != stratified_sample(items, 20, seed=2)
    assert sum(not it.faithful for it in stratified_sample(items, 20, seed=1, balanced=True)) == 10
    assert stratified_sample(items, None) == items


# --- the support judge ----------------------------------------------------------------------------
def test_support_judge_scores_fails_explicitly_and_fences_the_response():
    llm = ScriptedLLM(_knows_atlantis_is_fiction)
    items = [_item(1, "Paris is the capital of France.", True), _item(2, "Atlantis is in Greece.", False),
             _item(3, "GARBLE", True), _item(4, "   ", True)]
    result = SupportJudge(llm, use_logprobs=False).evaluate(*to_eval_pairs(items))
    assert [it.score for it in result.items[:2]] == [1.0, 0.0]
    assert result.items[0].details["reason"] == "Correct."
    assert "judge call failed" in result.items[2].error
    assert result.items[3].error == "empty answer: nothing to judge"
    assert (result.n_scored, result.n_failed) == (2, 2)
    assert "<<<BEGIN RESPONSE>>>\nAtlantis is in Greece.\n<<<END RESPONSE>>>" in _user(llm.seen[1])
    assert len(llm.seen) == 3  # the empty answer never reached the judge


def test_support_judge_checks_against_contexts_with_the_faithfulness_verifier():
    def verifier(messages, schema):  # the answer is the one statement of the faithfulness verification
        assert "verdicts" in schema.model_fields
        supported = "<<<BEGIN STATEMENT 1>>>\nParis is in France.\n<<<END STATEMENT 1>>>" in _user(messages)
        return json.dumps({"verdicts": [{"verdict": "yes" if supported else "no", "reason": "checked"}]})

    llm = ScriptedLLM(verifier)
    items = [_item(1, "Paris is in France.", True, ["doc one"]), _item(2, "Paris is in Peru.", False, ["doc one"])]
    result = SupportJudge(llm, use_logprobs=False).evaluate(*to_eval_pairs(items))
    assert [it.score for it in result.items] == [1.0, 0.0] and result.items[0].details["reason"] == "checked"
    assert "<<<BEGIN CONTEXT PASSAGE 1>>>\ndoc one\n<<<END CONTEXT PASSAGE 1>>>" in _user(llm.seen[0])
    assert result.info.binary and result.info.prompt_version == "support-v2"


def test_support_judge_reads_its_verdict_from_p_yes_when_given_a_threshold(monkeypatch):
    from ragwatch.judges import JudgesConfig, build_judges, support

    # greedy token "no", P(yes) 0.7: the cut-off, when there is one, decides
    monkeypatch.setattr(support, "yes_probability_at", lambda gen, json_key: 0.7)
    llm = ScriptedLLM(lambda messages, schema: json.dumps({"verdict": "no", "reason": "r"}))
    pairs = to_eval_pairs([_item(1, "An answer.", True)])
    greedy = SupportJudge(llm).evaluate(*pairs).items[0]
    cut = SupportJudge(llm, support_threshold=0.6).evaluate(*pairs).items[0]
    config = {"enabled": ["support"], "use_logprobs": True, "support": {"support_threshold": 0.8}}
    (registered,) = build_judges(JudgesConfig.model_validate(config), llm)
    high = registered.evaluate(*pairs).items[0]
    assert greedy.score == 0.0 and greedy.details.pop("judged_key")  # what was judged: the answer's key
    assert greedy.details == {"greedy_verdict": "no", "reason": "r", "weighted_score": 0.7}
    assert cut.score == 1.0 and cut.passed is True
    assert registered.support_threshold == 0.8 and high.score == 0.0


# --- calibrate -------------------------------------------------------------------------------------
class StubJudge:
    """Fixed scores and weighted scores per item: the calibration arithmetic under test, no LLM."""

    name = "stub"

    def __init__(self, scores: list[float | None], weighted: list[float | None]) -> None:
        self.scores, self.weighted = scores, weighted

    def evaluate(self, samples, answers) -> MetricResult:
        items = []
        for s, score, w in zip(samples, self.scores, self.weighted, strict=True):
            if score is None:
                items.append(ItemScore(item_id=s.id, error="judge call failed: timeout"))
            else:
                details = {} if w is None else {"weighted_score": w}
                items.append(ItemScore(item_id=s.id, score=score, details=details))
        return MetricResult.from_items(self.name, items, details={"usage": {"model": "stub-model"}})


def test_calibrate_matches_sklearn_for_greedy_and_weighted():
    truth = [True, True, True, False, False, True, False, True, False, True]
    greedy = [1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0, None, 0.0, 1.0]
    weighted = [0.9, 0.6, 0.4, 0.2, 0.45, 0.8, 0.1, None, 0.7, None]
    items = [_item(i, "a", t) for i, t in enumerate(truth)]
    report = calibrate(StubJudge(greedy, weighted), items, resamples=200)
    assert report.n_items == 10 and report.n_failed == 1 and report.model == "stub-model"
    assert report.items[7].error == "judge call failed: timeout"
    for mode, scores in (("greedy", greedy), ("weighted", weighted)):
        kept = [(t, s) for t, s in zip(truth, scores, strict=True) if s is not None]
        y = [FAITHFUL if t else HALLUCINATED for t, _ in kept]
        p = [FAITHFUL if s >= 0.5 else HALLUCINATED for _, s in kept]
        m = report.modes[mode]
        assert m.n == len(kept)
        assert m.accuracy.value == pytest.approx(sum(a == b for a, b in zip(y, p, strict=True)) / len(y))
        assert m.balanced_accuracy.value == pytest.approx(balanced_accuracy_score(y, p))
        assert m.cohen_kappa.value == pytest.approx(cohen_kappa_score(y, p))
        assert m.f1_hallucinated.value == pytest.approx(f1_score(y, p, pos_label=HALLUCINATED))
        for est in (m.accuracy, m.balanced_accuracy, m.f1_hallucinated, m.cohen_kappa):
            assert est.ci_low <= est.value <= est.ci_high and math.isfinite(est.ci_low)
    assert report.modes["greedy"].confusion == {"tp": 3, "fp": 1, "fn": 1, "tn": 4}
    md = report.to_markdown()
    assert "| greedy | 9 |" in md and "| weighted | 8 |" in md and "timeout" in md


def test_calibrate_without_logprobs_says_why_weighted_is_missing():
    items = [_item(i, "a", i % 2 == 0) for i in range(4)]
    report = calibrate(StubJudge([1.0, 0.0, 1.0, 1.0], [None] * 4), items, resamples=100)
    assert report.modes["weighted"] is None and "logprobs" in report.unavailable["weighted"]
    assert "logprobs" in report.to_markdown()


def test_the_calibration_judge_comes_from_the_registry_with_the_settings_model():
    from ragwatch.calibration import build_calibration_judge
    from ragwatch.judges import JudgesConfig

    # a model whose registry entry declares a P(yes) cut-off: calibration still reads the greedy verdict
    settings = CalibrationSettings(llm=LLMSettings(model="local/qwen2.5-coder-1.5b-instruct", cache=False))
    items = [_item(1, "An answer.", True)]
    judge = build_calibration_judge(settings, items, llm=None)
    assert isinstance(judge, SupportJudge) and judge.support_threshold is None
    assert judge.judge_model == settings.llm.model and judge.use_logprobs
    with pytest.raises(ValueError, match="verdict: greedy"):
        JudgesConfig.model_validate({"support": {"verdict": "greedy", "support_threshold": 0.5}})


def test_run_calibration_on_the_shipped_slice_with_a_mock_judge():
    def halluc_detector(messages, schema):  # says "no" to one response in three, by length parity
        return json.dumps({"verdict": "no" if len(_user(messages)) % 3 == 0 else "yes", "reason": "r"})

    llm = ScriptedLLM(halluc_detector)
    report = run_calibration(CalibrationSettings(limit=12, seed=3, resamples=100), llm=llm)
    assert report.judge == "support" and report.n_items == 12 and report.n_failed == 0
    assert report.label_counts == {FAITHFUL: 6, HALLUCINATED: 6}
    assert report.modes["greedy"].n == 12


def test_auto_picks_faithfulness_when_every_item_has_contexts(tmp_path):
    path = tmp_path / "ctx.jsonl"
    path.write_text("\n".join(json.dumps({"id": str(i), "context": "The sky is blue.", "question": "Sky?",
                                          "answer": "The sky is blue." if i % 2 else "The sky is green.",
                                          "label": bool(i % 2)}) for i in range(6)))

    def script(messages, schema):
        if schema is not None and "statements" in schema.model_fields:
            answer = _user(messages).split("<<<BEGIN ANSWER>>>\n")[1].split("\n<<<END ANSWER>>>")[0]
            return json.dumps({"statements": [answer]})
        verdict = "yes" if "The sky is blue.\n<<<END STATEMENT" in _user(messages) else "no"
        if "checks" in schema.model_fields:  # faithfulness: evidence first, one call per answer
            return json.dumps({"checks": [{"evidence": [1] if verdict == "yes" else [], "verdict": verdict}]})
        if "verdicts" in schema.model_fields:
            return json.dumps({"verdicts": [{"verdict": verdict, "reason": "checked"}]})
        return json.dumps({"verdict": verdict, "reason": "checked"})

    report = run_calibration(
        CalibrationSettings(dataset=str(path), limit=None, use_logprobs=False, resamples=100),
        llm=ScriptedLLM(script),
    )
    assert report.judge == "faithfulness"
    assert report.modes["greedy"].accuracy.value == 1.0
    with pytest.raises(ValueError, match="judge: support"):
        run_calibration(CalibrationSettings(judge="faithfulness", limit=4), llm=ScriptedLLM(script))


def test_settings_reject_unknown_keys():
    with pytest.raises(ValueError, match="datset"):
        CalibrationSettings.model_validate({"datset": "x.jsonl"})


# --- other formats: QAGS-style (context + claim), TruthfulQA-style (question + answer), ragas, LlamaIndex
FORMAT_ROWS = {
    "qags.jsonl": [{"context": "The van was robbed in Glasgow.", "claim": "A van was robbed.", "label": "supported",
                    "votes_yes": 3, "votes": 3},
                   {"context": "The van was robbed in Glasgow.", "claim": "A bank was robbed.",
                    "label": "unsupported", "votes_yes": 0, "votes": 3}],
    "truthfulqa.jsonl": [{"question": "Can sharks get cancer?", "answer": "Yes.", "label": "true"},
                         {"question": "What is under Denver Airport?", "answer": "A city.", "label": "false"}],
    "ragas.jsonl": [{"user_input": "q1", "response": "r1", "retrieved_contexts": ["c1"], "reference": "ref",
                     "human_label": 1},
                    {"user_input": "q2", "response": "r2", "retrieved_contexts": ["c2", "c3"], "reference": "ref",
                     "human_label": 0}],
    "llamaindex.jsonl": [{"query": "q1", "response": "r1", "contexts": ["c1"], "reference_answer": "ref",
                          "passing": True},
                         {"query": "q2", "response": "r2", "contexts": ["c2"], "passing": False}],
}


@pytest.mark.parametrize("name", sorted(FORMAT_ROWS))
def test_common_formats_load_without_code(tmp_path, name):
    path = tmp_path / name
    path.write_text("".join(json.dumps(row) + "\n" for row in FORMAT_ROWS[name]))
    items = load_calibration_set(path)
    assert [it.faithful for it in items] == [True, False]
    assert all(it.answer for it in items)
    if name in ("qags.jsonl", "ragas.jsonl", "llamaindex.jsonl"):
        assert all(it.contexts for it in items)
    if name == "ragas.jsonl":
        assert items[1].contexts == ["c2", "c3"] and items[0].question == "q1" and items[0].reference_answer == "ref"
    if name == "qags.jsonl":
        assert items[0].metadata == {"votes_yes": 3, "votes": 3}


def test_csv_with_ragas_columns_and_list_cells(tmp_path):
    path = tmp_path / "ragas.csv"
    path.write_text('user_input,response,retrieved_contexts,label\nq,"r, with comma","[""c1"", ""c2""]",yes\n'
                    "q2,r2,plain context,no\n")
    items = load_calibration_set(path)
    assert items[0].contexts == ["c1", "c2"] and items[0].answer == "r, with comma" and items[0].faithful
    assert items[1].contexts == ["plain context"] and not items[1].faithful


def test_threshold_is_tuned_on_one_half_and_reported_on_the_other():
    from ragwatch.calibration import choose_threshold
    from ragwatch.calibration.threshold import split_halves
    from ragwatch.statistics.cutoff import best_threshold

    # P(yes) of a judge that ranks well but never goes below 0.5: a 0.5 cut calls everything faithful
    rng = random.Random(0)
    labels = [i % 2 == 0 for i in range(80)]
    scores = [0.75 + rng.uniform(0, 0.2) if y else 0.6 + rng.uniform(0, 0.2) for y in labels]
    first, second = split_halves(labels, seed=1)
    assert not set(first) & set(second) and len(first) + len(second) == 80
    assert sum(labels[i] for i in first) == 20
    assert best_threshold([0.1, 0.2, 0.8, 0.9], [False, False, True, True]) == (0.5, 1.0)
    choice = choose_threshold(scores, labels, seed=1, resamples=200)
    assert 0.6 < choice.threshold < 0.95 and choice.tuned_on == choice.reported_on == 40
    assert choice.balanced_accuracy.value > 0.7  # at 0.5 it would be exactly 0.5
    assert choose_threshold([0.1, 0.9, 0.5], [True, False, True]) is None  # too few labels to split


def test_write_threshold_replaces_the_line_and_says_what_changed(tmp_path):
    from ragwatch.calibration import CalibrationReport, choose_threshold
    from ragwatch.calibration.running import write_threshold

    labels = [i % 2 == 0 for i in range(40)]
    scores = [0.9 - 0.01 * i if y else 0.7 - 0.01 * i for i, y in enumerate(labels)]
    report = CalibrationReport(judge="support", model="m", dataset="d", n_items=40, n_failed=0, threshold=0.5,
                               label_counts={}, modes={}, items=[],
                               threshold_choice=choose_threshold(scores, labels, resamples=100))
    config = tmp_path / "calibrate.yaml"
    config.write_text("# comment kept\ndataset: x.jsonl\nthreshold: 0.5\nlimit: 60\n")
    message = write_threshold(config, report)
    assert "was 0.5" in message and str(report.threshold_choice.threshold) in message
    text = config.read_text()
    assert text.startswith("# comment kept\n") and "limit: 60" in text
    assert f"threshold: {report.threshold_choice.threshold}  # tuned" in text
    with pytest.raises(ValueError, match="no tuned threshold"):
        write_threshold(config, report.model_copy(update={"threshold_choice": None}))
