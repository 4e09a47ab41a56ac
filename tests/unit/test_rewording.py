"""The rewording check (measured, not wired): the model-free skeleton and the judge's pairwise check, its
replies stubbed (the point is our logic: who is asked, how P(same) is read)."""

from __future__ import annotations

import math

import pytest

from ragwatch.judges.faithfulness.rewording import (
    changes,
    claim_terms,
    rewording_plan,
    rewording_prompt,
    same_skeleton,
)
from ragwatch.llm.types import Generation, TokenLogprob

OLD = "ZenML provides a `Client` that allows you to list 3 stacks."


def _reply(p_yes: float) -> Generation:
    """A reply {"same": "yes"|"no"} whose verdict token had P(yes) = p_yes."""
    top = {"yes": math.log(p_yes), "no": math.log(1 - p_yes)}
    token = "yes" if p_yes >= 0.5 else "no"
    return Generation(model="m", text=f'{{"same": "{token}"}}', logprobs=[
        TokenLogprob(token='{"', logprob=0.0), TokenLogprob(token="same", logprob=0.0),
        TokenLogprob(token='": "', logprob=0.0), TokenLogprob(token=token, logprob=top[token], top=top),
        TokenLogprob(token='"}', logprob=0.0)])


def _run(plan, replies: list[float]):
    """Drive a plan by hand: each stage's calls answered in order from `replies`; (outcome, calls seen)."""
    calls_seen = []
    try:
        calls = next(plan)
        while True:
            calls_seen += calls
            answers, replies = replies[:len(calls)], replies[len(calls):]
            calls = plan.send([_reply(p) for p in answers])
    except StopIteration as stop:
        return stop.value, calls_seen


def test_the_skeleton_keeps_terms_order_and_negations() -> None:
    assert claim_terms(OLD) == ["zenml", "client", "3"]
    assert same_skeleton(OLD, "ZenML offers a `Client` that lets you list 3 stacks.")
    assert not same_skeleton(OLD, "Airflow provides a `Client` that allows you to list 3 stacks.")  # a name
    assert not same_skeleton(OLD, "ZenML provides a `Client` that allows you to list 4 stacks.")  # a number
    assert not same_skeleton(OLD, "ZenML provides a `Client` that does not allow you to list 3 stacks.")
    assert not same_skeleton(OLD, "ZenML doesn't provide a `Client` that allows you to list 3 stacks.")
    assert not same_skeleton("Airflow runs before ZenML.", "ZenML runs before Airflow.")  # terms moved
    assert same_skeleton("It does not run.", "It doesn't run.")  # a contraction keeps the negation
    # a term is found as a whole word ("ai" is not inside "contains"), and every time it occurs
    assert same_skeleton("It contains a Vertex AI job.", "It includes a Vertex AI job.")
    assert not same_skeleton("Airflow triggers ZenML, and ZenML then calls Airflow.",
                             "ZenML triggers Airflow, and Airflow then calls ZenML.")


def test_the_prompt_lists_each_change() -> None:
    new = "ZenML offers a `Client` that lets you list 3 stacks."
    assert changes(OLD, new) == [("provides", "offers"), ("allows", "lets"), ("to", "")]
    prompt = rewording_prompt(OLD, new)
    assert '- "provides" -> "offers"\n- "allows" -> "lets"\n- "to" -> ""' in prompt


def test_the_judge_is_asked_only_where_the_skeleton_cannot_tell() -> None:
    pairs = [(OLD, OLD), (OLD, OLD.replace("ZenML", "Airflow")), (OLD, OLD.replace("provides", "offers"))]
    p_same, calls = _run(rewording_plan(pairs), [0.8])
    assert len(calls) == 1 and "offers" in calls[0].messages[0]["content"]
    assert p_same[0] == 1.0 and p_same[1] == 0.0 and p_same[2] == pytest.approx(0.8)
