"""The Prometheus prompt family: absolute grading with a score rubric, parsed from free text.

The judge replies "Feedback: ... [RESULT] n"; `parse_prometheus` reads the last `[RESULT] n`.
Any Likert judge (correctness, answer relevance, the rubric, custom rubrics) can use this family
with `prompt_family="prometheus"` instead of the default JSON schema.

Example:
    >>> parse_prometheus("Feedback: accurate and complete. [RESULT] 5")
    ('accurate and complete.', 5)
    >>> parse_prometheus("I think it is good") is None
    True
"""

from __future__ import annotations

import re

from ragwatch.judges.base import DATA_RULE, fence

PROMPT_VERSION = "prometheus-absolute-v1"

SYSTEM = (
    "You are a fair judge assistant tasked with providing clear, objective feedback "
    "based on specific criteria."
)

# The Prometheus 2 absolute-grading template (kept close to verbatim: the model was trained on it),
# plus rule 5, the data rule.
TEMPLATE = "\n".join(
    [
        "###Task Description:",
        "An instruction (might include an Input inside it), a response to evaluate,{reference_clause} "
        "and a score rubric representing an evaluation criterion are given.",
        "1. Write a detailed feedback that assesses the quality of the response strictly based on the "
        "given score rubric, not evaluating in general.",
        "2. After writing a feedback, write a score that is an integer between 1 and 5. "
        "You should refer to the score rubric.",
        '3. The output format should look as follows: "Feedback: (write a feedback for criteria) '
        '[RESULT] (an integer number between 1 and 5)"',
        "4. Please do not generate any other opening, closing, and explanations.",
        "5. {data_rule}",
        "",
        "###The instruction to evaluate:",
        "{instruction}",
        "",
        "###Response to evaluate:",
        "{response}",
        "{reference_block}",
        "###Score Rubrics:",
        "[{criterion}]",
        "{rubric}",
        "",
        "###Feedback: ",
    ]
)

REPAIR = (
    "Your reply did not end with '[RESULT] n' where n is an integer from 1 to 5. "
    "Reply again in exactly this format: Feedback: (your feedback) [RESULT] (an integer from 1 to 5)"
)

_RESULT = re.compile(r"\[RESULT\]\s*\(?\s*([1-5])\b")


def parse_prometheus(text: str) -> tuple[str, int] | None:
    """(feedback, score) from a Prometheus-style reply, or None when no `[RESULT] n` (n in 1..5)."""
    matches = list(_RESULT.finditer(text or ""))
    if not matches:
        return None
    last = matches[-1]
    feedback = text[: last.start()].strip()
    feedback = re.sub(r"^(###)?\s*Feedback\s*:\s*", "", feedback, flags=re.IGNORECASE).strip()
    return feedback, int(last.group(1))


def format_reply(feedback: str, score: int) -> str:
    """A reply in the Prometheus format (used to render few-shot examples)."""
    return f"Feedback: {feedback} [RESULT] {score}"


def render(
    *,
    question: str,
    answer: str,
    criterion: str,
    rubric: dict[int, str],
    reference: str | None = None,
    contexts: list[str] | None = None,
) -> str:
    """The Prometheus absolute-grading prompt, every untrusted text fenced."""
    instruction = fence("QUESTION", question)
    if contexts is not None:
        instruction += "\nRetrieved context the response was based on:\n" + "\n".join(
            fence(f"CONTEXT {i}", c) for i, c in enumerate(contexts, start=1)
        )
    reference_block = (
        f"\n###Reference Answer (Score 5):\n{fence('REFERENCE ANSWER', reference)}\n" if reference else ""
    )
    return TEMPLATE.format(
        reference_clause=" a reference answer that gets a score of 5," if reference else "",
        data_rule=DATA_RULE,
        instruction=instruction,
        response=fence("RESPONSE", answer),
        reference_block=reference_block,
        criterion=criterion,
        rubric="\n".join(f"Score {k}: {rubric[k]}" for k in sorted(rubric)),
    )
