"""Reference answers written from a labelled question's passage: which samples get one, provenance,
and failures kept explicit (the fake OpenAI-compatible server answers; our logic is the point)."""

from __future__ import annotations

import json
from typing import Any

from fake_llm_server import FakeLLMServer, first_user_text

from ragwatch.evalset.references import PROMPT_VERSION, needs_reference, write_reference_answers
from ragwatch.llm import LLMClient, LLMSettings
from ragwatch.types import EvalSample


def _reply(body: dict[str, Any]) -> str:
    prompt = first_user_text(body)
    if "Which port" in prompt:
        return json.dumps({"answer": "   "})  # an empty answer is a failure, not a reference
    return json.dumps({"answer": "Steps  pass artifacts\nto each other."})


def test_only_questions_with_a_passage_and_no_answer_get_a_reference() -> None:
    samples = [
        EvalSample(id="a", question="How do steps share data?", reference_contexts=["Steps pass artifacts."]),
        EvalSample(id="b", question="What is ZenML?", reference_answer="An MLOps framework.",
                   reference_contexts=["ZenML is an MLOps framework."]),
        EvalSample(id="c", question="Where is the guide?"),  # retrieval only: nothing to write from
        EvalSample(id="d", question="Which port does the dashboard use?", reference_contexts=["Port 8237."]),
    ]
    assert [needs_reference(s) for s in samples] == [True, False, False, True]
    with FakeLLMServer(responder=_reply) as server:
        llm = LLMClient(LLMSettings(model="openai/fake", api_base=server.base_url, cache=False))
        filled, failures = write_reference_answers(samples, llm)
        assert server.calls == 2
    assert [s.id for s in filled] == ["a", "b", "c", "d"]
    assert filled[0].reference_answer == "Steps pass artifacts to each other."
    assert filled[0].metadata["reference_by"] == "ai:openai/fake"
    assert filled[0].metadata["reference_prompt_version"] == PROMPT_VERSION
    assert filled[1] == samples[1] and filled[2] == samples[2]
    assert filled[3].reference_answer is None
    assert [(f.sample_id, f.reason) for f in failures] == [("d", "the generator wrote an empty answer")]
