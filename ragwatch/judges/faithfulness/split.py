"""An answer as statements, the faithfulness judge's first stage.

`statements: llm` asks the judge for standalone claims (`SPLIT_SYSTEM`, `split_prompt`, a bounded
`statements_schema`; one call per answer, as ragas does); `statements: sentences` takes the answer's
sentences (`answer_statements`: the chunker's own sentence rule, no call).

Example (a piece under `MIN_STATEMENT_WORDS` words joins its neighbour):
    >>> answer_statements("ZenML runs pipelines on a schedule. Each step output is cached. It is fast.", 4)
    ['ZenML runs pipelines on a schedule.', 'Each step output is cached. It is fast.']
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field, StringConstraints, create_model

from ragwatch.corpus.chunking import split_sentences
from ragwatch.judges.base import DATA_RULE, fence

MIN_STATEMENT_WORDS = 4  # shorter sentence pieces ("Use e.g.") join their neighbour
STATEMENT_CHARS = 300

SPLIT_SYSTEM = (
    "You split an ANSWER into standalone factual statements. Each statement must be understandable on "
    "its own (replace pronouns with the names they refer to) and state one claim made by the answer. "
    "Do not add claims the answer does not make. If the answer makes no factual claim (for example "
    "'I don't know'), return an empty list. Return at most {n} statements; merge minor claims if needed.\n"
    f"{DATA_RULE}\n"
    'Reply with JSON only: {{"statements": ["<statement>", ...]}}'
)


def statements_schema(max_statements: int) -> type[BaseModel]:
    """A bounded list of bounded strings, so grammar-constrained decoding cannot run away."""
    return create_model(
        "Statements",
        statements=(
            list[Annotated[str, StringConstraints(max_length=STATEMENT_CHARS)]],
            Field(max_length=max_statements),
        ),
    )


def split_prompt(question: str, answer: str) -> str:
    return (
        f"{fence('QUESTION', question)}\n{fence('ANSWER', answer)}\n"
        "Split the ANSWER into standalone statements. Reply with the JSON object only."
    )


def answer_statements(answer: str, max_statements: int) -> list[str]:
    """The answer's sentences as statements: short pieces join a neighbour, and past
    `max_statements` consecutive sentences are grouped so that none is dropped."""
    pieces: list[str] = []
    for sentence in split_sentences(answer):
        if pieces and (len(sentence.split()) < MIN_STATEMENT_WORDS or len(pieces[-1].split()) < MIN_STATEMENT_WORDS):
            pieces[-1] = f"{pieces[-1]} {sentence}"
        else:
            pieces.append(sentence)
    if len(pieces) <= max_statements:
        return pieces
    size, extra = divmod(len(pieces), max_statements)
    groups, start = [], 0
    for g in range(max_statements):
        end = start + size + (g < extra)
        groups.append(" ".join(pieces[start:end]))
        start = end
    return groups
