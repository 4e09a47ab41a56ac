"""Faithfulness: statement splitting, per-statement verification, create-and-refine over windows."""

from __future__ import annotations

import json
import re

import pytest
from test_judges_support import MockLLM, answer, fake_server, is_repair, last_user, no_nan, sample

from ragwatch.judges import FaithfulnessJudge, verify_statements
from ragwatch.judges.faithfulness.verify import (
    VERIFY_BATCH_SYSTEM,
    VERIFY_SYSTEM,
    VerdictReply,
    context_windows,
    split_text,
    verdicts_schema,
)
from ragwatch.judges.faithfulness.verify_evidence import prompt_statements
from ragwatch.statements import statement_verdicts

# the judge splits the answer into claims (the fake servers answer the splitting call); the options' default
# takes the answer's sentences
LLM_SPLIT = {"statements": "llm", "max_statements": 8}

__all__ = ["fake_server"]


pytestmark = pytest.mark.usefixtures("isolated_cache")  # a fresh LLM cache per test


def _scores(item) -> list[int]:
    return [int(bool(v.verdict)) for v in statement_verdicts(item.details)]


def _between(text: str, label: str) -> list[str]:
    return re.findall(rf"<<<BEGIN {label}[^>]*>>>\n(.*?)\n<<<END {label}", text, flags=re.DOTALL)


def _verdict(statement: str, context: str) -> tuple[str, str]:
    key = statement.split()[0]
    verdict = "yes" if key in context else "no"
    return verdict, f"{key} {'found' if verdict == 'yes' else 'missing'}"


def oracle(messages):
    """A judge that splits answers on '. ' and says yes when a statement's key word is in the context;
    per-statement prompts get one verdict, batched prompts one verdict per numbered statement."""
    user = last_user(messages)
    if "Split the ANSWER" in user:
        ans = _between(user, "ANSWER")[0]
        return json.dumps({"statements": [s.strip(" .") + "." for s in ans.split(". ") if s.strip(" .")]})
    sentences = _between(user, "SENTENCES")
    if sentences:  # the evidence verifier: cite the numbered sentences that hold the key word
        shown = re.findall(r"^\[(\d+)\] (.*)$", sentences[0], flags=re.M)
        checks = []
        for st in prompt_statements(user):
            cited = [int(i) for i, text in shown if st.split()[0] in text]
            checks.append({"evidence": cited[:3], "verdict": "yes" if cited else "no"})
        return json.dumps({"checks": checks})
    context = " ".join(_between(user, "CONTEXT"))
    numbered = re.findall(r"<<<BEGIN STATEMENT \d+>>>\n(.*?)\n<<<END", user, flags=re.DOTALL)
    if numbered:
        pairs = [_verdict(st, context) for st in numbered]
        return json.dumps({"verdicts": [{"verdict": v, "reason": r} for v, r in pairs]})
    verdict, reason = _verdict(_between(user, "STATEMENT")[0], context)
    return json.dumps({"verdict": verdict, "reason": reason})


def test_statement_by_statement_score_and_details(fake_server):
    server = fake_server(oracle)
    judge = FaithfulnessJudge(server.client(), verify="per_statement", **LLM_SPLIT)
    result = judge.evaluate(
        [sample(1), sample(2)],
        [
            answer(
                "Paris is the capital. Paris has the Louvre. Berlin is large.",
                contexts=["Paris: capital, Louvre."],
            ),
            answer("Paris is the capital.", contexts=["Paris is the capital of France."]),
        ],
    )
    no_nan(result)
    first = result.items[0]
    assert first.score == pytest.approx(2 / 3)
    assert first.details["statements"] == [
        "Paris is the capital.",
        "Paris has the Louvre.",
        "Berlin is large.",
    ]
    assert _scores(first) == [1, 1, 0]
    assert statement_verdicts(first.details)[2].reason == "Berlin missing"
    assert result.items[1].score == 1.0
    assert [it.score for it in result.items] == [pytest.approx(2 / 3), 1.0]
    assert result.details["usage"]["calls"] == 2 + 4  # one split per item, one verification per statement
    assert result.info.scale == (0.0, 1.0) and result.info.prompt_version.startswith("faithfulness")


def test_long_contexts_are_refined_over_windows_not_truncated(fake_server):
    server = fake_server(oracle)
    filler = "Nothing relevant here at all. " * 40  # ~1200 chars per passage
    contexts = [filler + "Paris is the capital.", filler, filler + "Louvre is a museum in Paris."]
    judge = FaithfulnessJudge(server.client(), max_context_tokens=400, verify="per_statement", **LLM_SPLIT)
    result = judge.evaluate(
        [sample(1)], [answer("Paris is the capital. Louvre is a museum. Rome is old.", contexts)]
    )
    item = result.items[0]
    assert item.details["windows"] == 3
    assert _scores(item) == [1, 1, 0]
    assert [v.window for v in statement_verdicts(item.details)] == [1, 3, 3]  # Louvre found only in the last window
    verify = [r["messages"] for r in server.requests if "<<<BEGIN STATEMENT>>>" in last_user(r["messages"])]
    assert len(verify) == 3 + 2 + 2  # window 1: all; windows 2 and 3: the two not yet supported
    refine = [last_user(m) for m in verify if "CONTEXT PART 3 OF 3" in last_user(m)]
    assert refine and all("verdict was NO" in u and "<<<BEGIN EARLIER REASON>>>" in u for u in refine)
    # every character of the contexts reached the judge in some window
    seen = "".join("".join(_between(last_user(m), "CONTEXT")) for m in verify)
    assert all(c.strip() in seen or c[:1000] in seen for c in contexts)


def test_context_windows_split_oversized_passages_without_loss():
    text = ("Sentence one is here. " * 100).strip()
    pieces = split_text(text, 300)
    assert "".join(pieces) == text and all(len(p) <= 300 for p in pieces)
    windows = context_windows(["short a", text, "short b"], 300)
    assert "".join("".join(w) for w in windows) == "short a" + text + "short b"
    assert all(sum(len(p) for p in w) <= 300 for w in windows)


def test_unscorable_items_fail_with_reasons(fake_server):
    def script(messages):
        user = last_user(messages)
        if "Split the ANSWER" in user:
            return json.dumps(
                {"statements": []} if "I don't know" in user else {"statements": ["Paris is big."]}
            )
        return json.dumps({"verdict": "yes", "reason": "ok"})

    server = fake_server(script)
    result = FaithfulnessJudge(server.client(), verify="per_statement", **LLM_SPLIT).evaluate(
        [sample(i) for i in range(5)],
        [
            answer("  "),
            answer(contexts=[]),
            answer("I don't know."),
            answer(error="timeout"),
            answer("Paris."),
        ],
    )
    no_nan(result)
    errors = [it.error for it in result.items]
    assert errors[0] == "empty answer: no statements to verify"
    assert errors[1] == "no retrieved contexts to verify against"
    assert errors[2] == "the judge found no statements in the answer"
    assert "timeout" in errors[3]
    assert result.items[4].score == 1.0 and result.n_scored == 1 and result.n_failed == 4
    assert result.details["usage"]["calls"] == 2 + 1  # empty/no-context/failed answers never reach the LLM


def test_invalid_verdict_repaired_and_failed_verdict_fails_item(fake_server):
    def script(messages):
        user = last_user(messages)
        if "Split the ANSWER" in user:
            return json.dumps({"statements": ["Paris is big.", "Rome is old."]})
        statement = "".join(_between(messages[-3]["content"] if is_repair(messages) else user, "STATEMENT"))
        if "Rome" in statement:
            return "I cannot decide."  # also on the repair turn
        if is_repair(messages):
            return json.dumps({"verdict": "yes", "reason": "fixed"})
        return json.dumps({"verdict": "maybe", "reason": "r"})

    server = fake_server(script)
    judge = FaithfulnessJudge(server.client(max_repairs=1), verify="per_statement", **LLM_SPLIT)
    result = judge.evaluate([sample(1)], [answer("Paris. Rome.")])
    no_nan(result)
    # statement 1 was repaired to yes; statement 2 stays unparsable after its repair -> the item fails
    assert result.n_failed == 1
    assert "statement 2" in result.items[0].error and "Rome is old." in result.items[0].error
    assert result.items[0].details["statements"] == ["Paris is big.", "Rome is old."]
    assert result.details["usage"]["repairs"] == 2


def test_split_reply_that_fails_is_explicit():
    result = FaithfulnessJudge(MockLLM("not json"), **LLM_SPLIT).evaluate([sample(1)], [answer()])
    no_nan(result)
    assert result.items[0].error.startswith("splitting the answer into statements: judge call failed")


def test_statement_count_is_bounded_by_schema():
    judge = FaithfulnessJudge(MockLLM(json.dumps({"statements": ["a", "b", "c"]})), statements="llm", max_statements=2)
    schema = judge.schema.model_json_schema()
    assert schema["properties"]["statements"]["maxItems"] == 2
    result = judge.evaluate([sample(1)], [answer()])
    assert "judge call failed" in result.items[0].error  # 3 > 2 statements is invalid, never truncated


def test_weighted_score_is_mean_p_yes(fake_server):
    def script(messages):
        user = last_user(messages)
        if "Split the ANSWER" in user:
            return json.dumps({"statements": ["Paris is big.", "Rome is old."]})
        yes = "Paris" in "".join(_between(user, "STATEMENT"))
        prefix, tail = '{"verdict": "', '", "reason": "r"}'
        word = "yes" if yes else "no"
        alts = {"yes": 0.8, "no": 0.2} if yes else {"no": 0.9, "yes": 0.1}
        return prefix + word + tail, [(prefix, {prefix: 1.0}), (word, alts), (tail, {tail: 1.0})]

    server = fake_server(script)
    judge = FaithfulnessJudge(server.client(), use_logprobs=True, verify="per_statement", **LLM_SPLIT)
    result = judge.evaluate([sample(1)], [answer()])
    item = result.items[0]
    assert item.score == 0.5 and [v.p_supported for v in statement_verdicts(item.details)] == pytest.approx([0.8, 0.1])
    assert item.details["weighted_score"] == pytest.approx(0.45) and result.details[
        "weighted"
    ] == pytest.approx(0.45)


ANSWERS = [
    ("Paris is the capital. Paris has the Louvre. Berlin is large.", ["Paris: capital, Louvre."]),
    ("Paris is the capital.", ["Paris is the capital of France."]),
    ("Rome is old. Madrid is sunny.", ["Madrid: sunny.", "Lisbon: windy."]),
]


def _run(server, verify, **kwargs):
    judge = FaithfulnessJudge(server.client(), verify=verify, **LLM_SPLIT, **kwargs)
    return judge.evaluate([sample(i) for i in range(len(ANSWERS))], [answer(a, contexts=c) for a, c in ANSWERS])


def test_batched_verification_is_one_call_per_window_with_the_same_verdicts(fake_server):
    server = fake_server(oracle)
    batched = _run(server, "batched")
    calls = batched.details["usage"]["calls"]
    per_statement = _run(server, "per_statement")
    assert calls == 3 + 3  # one split and ONE verification call per item (one window each)
    assert per_statement.details["usage"]["calls"] == 3 + 6
    for a, b in zip(batched.items, per_statement.items, strict=True):
        assert _scores(a) == _scores(b)
        assert [v.reason for v in statement_verdicts(a.details)] == [v.reason for v in statement_verdicts(b.details)]
    first = batched.items[0]
    assert _scores(first) == [1, 1, 0] and first.score == pytest.approx(2 / 3)
    # a report reader can check the score against the per-statement reasons
    assert "Berlin missing" in first.details["reason"] and "2 of 3" in first.details["reason"]
    assert batched.details["verify"] == "batched"


def test_batched_refines_only_unsupported_statements_over_windows(fake_server):
    server = fake_server(oracle)
    filler = "Nothing relevant here at all. " * 40
    contexts = [filler + "Paris is the capital.", filler, filler + "Louvre is a museum in Paris."]
    judge = FaithfulnessJudge(server.client(), max_context_tokens=400, verify="batched", **LLM_SPLIT)
    result = judge.evaluate(
        [sample(1)], [answer("Paris is the capital. Louvre is a museum. Rome is old.", contexts)]
    )
    item = result.items[0]
    assert _scores(item) == [1, 1, 0]
    assert [v.window for v in statement_verdicts(item.details)] == [1, 3, 3]
    users = [last_user(r["messages"]) for r in server.requests]
    verify = [u for u in users if "<<<BEGIN STATEMENT 1>>>" in u]
    assert len(verify) == 3  # one call per window
    assert verify[1].count("<<<BEGIN STATEMENT") == 2 and "verdict for STATEMENT 1 was NO" in verify[1]


def _batched_with_logprobs(p_yes: list[float]):
    """A batched reply whose verdict tokens carry P(yes) (statement k: p_yes[k])."""

    def script(messages):
        user = last_user(messages)
        if "Split the ANSWER" in user:
            return json.dumps({"statements": [f"Claim {k}." for k in range(len(p_yes))]})
        text, tokens = '{"verdicts": [', [('{"verdicts": [', {'{"verdicts": [': 1.0})]
        for k, p in enumerate(p_yes):
            head, tail = ('' if k == 0 else ', ') + '{"verdict": "', '", "reason": "r"}'
            word = "yes" if p >= 0.5 else "no"
            text += head + word + tail
            tokens += [(head, {head: 1.0}), (word, {"yes": p, "no": 1 - p}), (tail, {tail: 1.0})]
        text += "]}"
        tokens.append(("]}", {"]}": 1.0}))
        return text, tokens

    return script


def test_batched_logprobs_give_p_supported_per_statement_and_threshold_decides(fake_server):
    server = fake_server(_batched_with_logprobs([0.9, 0.3, 0.6]))
    judge = FaithfulnessJudge(server.client(), use_logprobs=True, support_threshold=0.7, verify="batched",
                              **LLM_SPLIT)
    item = judge.evaluate([sample(1)], [answer("Claims.")]).items[0]
    assert [v.p_supported for v in statement_verdicts(item.details)] == pytest.approx([0.9, 0.3, 0.6])
    assert _scores(item) == [1, 0, 0]  # 0.6 < 0.7: not supported, greedy "yes" aside
    assert item.details["weighted_score"] == pytest.approx(0.6)


def test_verify_statements_is_public_and_reads_probabilities(fake_server):
    server = fake_server(_batched_with_logprobs([0.2, 0.8]))
    verdicts = verify_statements(server.client(), "some article", ["Claim 0.", "Claim 1."], support_threshold=0.5)
    assert [v.verdict for v in verdicts] == [False, True]
    assert [v.p_supported for v in verdicts] == pytest.approx([0.2, 0.8])
    assert all(v.reason == "r" and v.window == 1 for v in verdicts)


def test_verdict_is_decoded_before_its_reason():
    # a verdict written after its reason reads P(yes) ~ 1 whatever the claim: the schema (which
    # grammar-constrained decoding follows) and both prompts must put the verdict first
    assert list(VerdictReply.model_json_schema()["properties"]) == ["verdict", "reason"]
    item = verdicts_schema(2).model_json_schema()["$defs"]["VerdictReply"]
    assert list(item["properties"]) == ["verdict", "reason"]
    for system in (VERIFY_SYSTEM, VERIFY_BATCH_SYSTEM):
        assert system.index('"verdict"') < system.index('"reason"')


def test_sentence_statements_make_one_call_per_item_and_tell_the_verifier_the_question(fake_server):
    server = fake_server(oracle)
    judge = FaithfulnessJudge(server.client(), statements="sentences", verify="batched")
    result = judge.evaluate(
        [sample(1), sample(2)],
        [answer("Paris is the capital. Paris has the Louvre.\n- Berlin is large and old.",
                contexts=["Paris: capital, Louvre."]),
         answer("Paris is the capital.", contexts=["Paris is the capital of France."])],
    )
    no_nan(result)
    assert result.details["usage"]["calls"] == 2  # no split call: one verification per item
    assert result.items[0].details["statements"] == [
        "Paris is the capital.", "Paris has the Louvre.", "Berlin is large and old."]
    assert [it.score for it in result.items] == [pytest.approx(2 / 3), 1.0]
    users = [last_user(r["messages"]) for r in server.requests]
    assert all("Split the ANSWER" not in u for u in users)
    # the two items' calls run concurrently: their order at the server is not fixed
    assert sorted(q for u in users for q in _between(u, "QUESTION")) == [
        "Question 1: what is the capital of France?", "Question 2: what is the capital of France?"]
    assert result.details["statements_from"] == "sentences"


def test_verification_without_a_question_keeps_the_measured_prompt():
    """`verify_statements` (what benchmarks/judge_choice.py measures) sends no QUESTION block."""
    from ragwatch.judges.faithfulness.verify import verify_batch_prompt

    prompt = verify_batch_prompt(["The mayor resigned."], ["An article."], 0, 1)
    assert "QUESTION" not in prompt and "STATEMENT 1" in prompt


@pytest.mark.parametrize(("text", "limit", "expected"), [
    ("Use e.g. the CLI. Version 0.60.0 works fine here.", 8, ["Use e.g. the CLI.", "Version 0.60.0 works fine here."]),
    ("One two three four. Five six seven eight. Nine ten eleven twelve.", 2,
     ["One two three four. Five six seven eight.", "Nine ten eleven twelve."]),
    ("1. Install the integration first\n2. Register the stack component", 4,
     ["Install the integration first", "Register the stack component"]),
    ("   ", 4, []),
])
def test_answer_sentences_as_statements(text, limit, expected):
    from ragwatch.judges.faithfulness import answer_statements

    assert answer_statements(text, limit) == expected


def test_evidence_verification_cites_sentences_and_is_one_call_per_answer(fake_server):
    server = fake_server(oracle)
    result = FaithfulnessJudge(server.client(), statements="sentences").evaluate(
        [sample(1)], [answer("Paris is the capital city. Paris has the Louvre museum. Berlin is a large city.",
                             contexts=["Rome is old. Paris is the capital of France.", "Paris has the Louvre."])])
    item = result.items[0]
    assert result.details["usage"]["calls"] == 1 and result.details["verify"] == "evidence"
    assert _scores(item) == [1, 1, 0] and item.score == pytest.approx(2 / 3)
    verdicts = statement_verdicts(item.details)
    # sentences, not passages: "Rome is old." shares the first passage but holds no "Paris"
    assert verdicts[0].evidence_text == ["Paris is the capital of France.", "Paris has the Louvre."]
    assert verdicts[0].evidence == [2, 3]
    # a name no context holds, as the subject of its sentence: the rule decides, whatever the judge cited
    assert verdicts[2].evidence == [] and verdicts[2].rule == "not in any retrieved context: Berlin"
    assert verdicts[2].features.absent_names == ["Berlin"] and verdicts[2].missing_terms == ["Berlin"]
    assert result.info.prompt_version == "faithfulness-v6"


@pytest.mark.parametrize(("statement", "contexts", "kind", "terms"), [
    ("The purpose of Airflow is to retrieve documents.", ["The purpose of RAG is to retrieve documents."],
     "name", ["Airflow"]),
    ("Dagster provides a built-in materializer.", ["ZenML provides a built-in materializer."], "name", ["Dagster"]),
    ("It runs on Google Cloud Storage.", ["It runs on Google Cloud and on object storage."], "name",
     ["Google Cloud Storage"]),
    ("The delay is 10 seconds.", ["delay: 10"], "quantity", ["10 seconds"]),
    ("Call it with 'fast mode' on.", ["Call it with slow mode on."], "quoted", ["fast mode"]),
])
def test_terms_no_context_holds_by_kind(statement, contexts, kind, terms):
    from ragwatch.judges.faithfulness.terms import absent_terms

    assert absent_terms(statement, contexts)[kind] == terms


@pytest.mark.parametrize(("statement", "contexts"), [
    ("Ingesting data is the first step.", ["ingest the documents"]),  # a sentence's first word: not a name
    ("**Prepare Your Data**: list the documents.", ["Prepare the data and list the documents."]),
    ("The Service Connectors of ZenML's stack hold credentials.",
     ["A service connector holds credentials of a zenml stack"]),
    ("Pre-trained models are used.", ["pretrained models"]),  # hyphenation, plural
    ("Replace it with your OpenAI API key", ["--api_key=<YOUR_API_KEY> for openai"]),  # identifier parts
    ("ZenML provides a built-in [CloudpickleMaterial", ["zenml ships the CloudpickleMaterializer"]),  # cut off mid-word
])
def test_names_the_contexts_hold_in_another_form_are_not_absent(statement, contexts):
    from ragwatch.judges.faithfulness.features import statement_features

    features = statement_features(statement, contexts)
    assert not features.absent_terms and features.absent_names == []


def test_evidence_rules_overrule_a_yes(fake_server):
    """A number no context holds, or a statement without a claim, is unsupported whatever the judge says
    (the claim-less one without a call); a yes citing nothing or an id never shown keeps the judge's
    verdict but the record says it cited nothing."""
    def judge(messages):
        n = len(prompt_statements(last_user(messages)))
        replies = [{"evidence": [], "verdict": "yes"}, {"evidence": [99], "verdict": "yes"},
                   {"evidence": [1], "verdict": "yes"}]
        return json.dumps({"checks": replies[:n]})

    from ragwatch.judges.engine import drive, gather
    from ragwatch.judges.faithfulness.verify_evidence import EvidenceVerifier

    server = fake_server(judge)
    statements = ["ZenML retries steps on failure by default.", "ZenML retries steps three times.",
                  "Retries default to 5 attempts in ZenML steps.", "{% hint %}"]
    verifier = EvidenceVerifier(support_model=None, use_logprobs=False)
    plan = verifier.plan(["Retries default to 3 attempts in ZenML steps."], statements)
    outcome, gens = drive(gather({"a": plan}), server.client())
    verdicts = outcome["a"][0]
    assert len(gens) == 1  # the claim-less statement needed no call
    assert [v.verdict for v in verdicts] == [True, True, False, False]
    assert verdicts[0].evidence == [] and verdicts[0].reason == "cites no context sentence"
    assert verdicts[1].evidence == []  # id 99 was never shown: it cites nothing
    assert verdicts[2].rule == "not in any retrieved context: 5" and verdicts[2].missing_terms == ["5"]
    assert verdicts[2].evidence == [1]  # the judge's citation is kept for the reader
    assert verdicts[3].rule == "makes no checkable claim"


def test_a_support_model_combines_the_judge_with_lexical_evidence():
    from ragwatch.judges.faithfulness.evidence import Sentence
    from ragwatch.judges.faithfulness.features import statement_features
    from ragwatch.judges.faithfulness.support_model import SupportModel
    from ragwatch.judges.faithfulness.verify_evidence import EvidenceVerifier

    model = SupportModel(intercept=-4.0, weights={"judge_logit": 1.0, "lexical": 6.0}, cutoff=0.5)
    verifier = EvidenceVerifier(support_model=model)
    contexts = ["Steps are cached by default."]
    cited = [Sentence(id=1, text=contexts[0], passage=1)]

    def decide(statement):
        return verifier.decide(statement, statement_features(statement, contexts, p_judge=0.6,
                                                             cited=[contexts[0]]), cited)

    copied, reworded = decide("Steps are cached by default."), decide("Caching applies to steps by default.")
    assert copied.lexical_support == 1.0 and reworded.lexical_support < 0.5
    assert copied.verdict and not reworded.verdict  # the same P(yes), different lexical support
    assert copied.p_judge == 0.6 and copied.threshold == 0.5
    assert copied.p_supported == pytest.approx(model.predict({"p_judge": 0.6, "lexical": 1.0}))


def test_the_support_model_reads_the_citations_as_features_of_records_them():
    from ragwatch.judges.faithfulness.evidence import Sentence
    from ragwatch.judges.faithfulness.features import features_of, statement_features
    from ragwatch.judges.faithfulness.support_model import SupportModel
    from ragwatch.judges.faithfulness.verify_evidence import EvidenceVerifier

    model = SupportModel(intercept=-1.0, weights={"lexical": 3.0, "uncited": -1.0, "missing_terms": 0.5}, cutoff=0.5)
    verifier = EvidenceVerifier(support_model=model)
    contexts = ["Steps are cached.", "The StepCache of v2 keeps them."]
    cited = [Sentence(id=1, text=contexts[0], passage=1)]
    statement = "Steps are cached by StepCache in v2."

    def decide(evidence):
        return verifier.decide(statement, statement_features(statement, contexts, p_judge=0.7,
                                                             cited=[s.text for s in evidence]), evidence)

    for evidence in (cited, []):
        v = decide(evidence)
        assert v.p_supported == pytest.approx(model.predict(features_of(v)))
        assert features_of(v)["uncited"] is (not evidence)
    assert decide(cited).features.missing_terms == 2  # the cited sentence lacks both key terms
    assert decide(cited).p_supported != pytest.approx(decide([]).p_supported)  # citing nothing moves P(supported)


def test_with_the_shipped_calibration_the_score_is_the_level_and_the_verdict_share_stays(fake_server):
    server = fake_server(oracle)
    judge = FaithfulnessJudge(server.client(), model="local/qwen2.5-coder-1.5b-instruct", use_logprobs=True,
                              statements="sentences")
    assert judge.calibration is not None and judge.calibration.level_data
    answers = [answer("Paris is the capital city. Berlin is a large city.", contexts=["Paris is the capital."]),
               answer("Paris has the Louvre museum.", contexts=["Paris has the Louvre museum."])]
    result = judge.evaluate([sample(1), sample(2)], answers)
    assert result.details["verdict_share"] == pytest.approx((1 / 2 + 1) / 2)  # the items' verdict shares
    assert result.details["level"]["n_items"] == 2 and "refitting" in result.ci_method
    assert result.ci_low <= result.score <= result.ci_high
    assert [it.score for it in result.items] == [0.5, 1.0]  # item scores stay verdict shares


def test_the_judge_is_asked_only_where_its_reply_can_change_a_verdict(fake_server):
    from ragwatch.judges.engine import drive, gather
    from ragwatch.judges.faithfulness.calibrations import CALIBRATIONS
    from ragwatch.judges.faithfulness.cascade import judge_replies
    from ragwatch.judges.faithfulness.evidence import Sentence, missing_terms
    from ragwatch.judges.faithfulness.features import statement_features
    from ragwatch.judges.faithfulness.verify_evidence import UNASKED, EvidenceVerifier

    sent: list[int] = []

    def judge(messages):
        n = len(prompt_statements(last_user(messages)))
        sent.append(n)
        return json.dumps({"checks": [{"evidence": [1], "verdict": "yes"}] * n})

    server = fake_server(judge)
    model = CALIBRATIONS[0].support_model
    contexts = ["Retries default to 3 attempts in ZenML steps. "
                "The StepCache keeps outputs of steps that did not change."]
    copied, unrelated, borderline = ("Retries default to 3 attempts in ZenML steps.",
                                     "Bananas grow on tall plants in warm places.",
                                     "The StepCache keeps outputs of steps for a long time.")  # lexical 1.0, 0.0, 0.556
    verifier = EvidenceVerifier(support_model=model, use_logprobs=False, cascade=True)
    (outcome, gens) = drive(gather({"a": verifier.plan(contexts, [copied, unrelated, borderline])}), server.client())
    verdicts, calls = outcome["a"]
    assert sent == [1] and len(gens) == 1 and calls == 1  # one call, with the borderline statement only
    assert [v.verdict for v in verdicts[:2]] == [True, False] and verdicts[0].reason.startswith(UNASKED)
    assert verdicts[2].p_judge is not None and verdicts[2].evidence == [1]
    # an unasked verdict is the one every reply of the judge would have led to
    shown = [Sentence(id=1, text=contexts[0], passage=1)]
    for v in verdicts[:2]:
        for reply in judge_replies(len(missing_terms(v.statement, []))):
            evidence = [] if reply["uncited"] else shown
            asked = verifier.decide(v.statement, statement_features(v.statement, contexts, p_judge=reply["p_judge"],
                                                                    cited=[s.text for s in evidence]), evidence)
            assert asked.verdict == v.verdict
    # nothing left to ask: no call at all
    sent.clear()
    (outcome, gens) = drive(gather({"a": verifier.plan(contexts, [copied, unrelated])}), server.client())
    assert sent == [] and not gens and outcome["a"][1] == 0
    assert EvidenceVerifier(support_model=None, cascade=True).cascade is False  # it needs the support model
    assert EvidenceVerifier(support_model=model).cascade is False  # off unless asked for
