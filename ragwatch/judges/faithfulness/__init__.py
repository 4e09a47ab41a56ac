"""The faithfulness judge: is every claim of the answer supported by the retrieved contexts?

One idea, one module per job, in the order a run goes through them:
- `judge.py`: `FaithfulnessJudge`, its options block and its registration as the judge `faithfulness`.
- `split.py`: the answer as statements (the splitting prompt, or the answer's sentences).
- `verify_evidence.py`: the default verifier (`verify: evidence`): each statement against its best
  context sentences, evidence ids before the verdict, a careful reader's rules, then the support model.
- `verify.py`: the window verifier (`verify: batched | per_statement`): all contexts, create-and-refine;
  also what the `support` judge and the review page's context windows use.
- `evidence.py`: context sentences, lexical support and key terms (no LLM).
- `support_model.py`: `SupportModel`, P(yes) and lexical support combined into P(supported), its cut-off.
- `calibrations.py`: the fitted support model and measured agreement shipped per judge model and prompt.
- `level.py`: the headline, the calibrated level with its interval, fitted on `calibration_data/`
  (package data: labelled statements with the shipped verifier's features).

Example:
    >>> from ragwatch.judges.faithfulness import FaithfulnessJudge  # doctest: +SKIP
    >>> result = FaithfulnessJudge(llm, statements="sentences").evaluate(samples, answers)  # doctest: +SKIP
"""

from ragwatch.judges.faithfulness.judge import (
    PROMPT_VERSION,
    FaithfulnessJudge,
    FaithfulnessOptions,
    StatementSource,
    VerifyChoice,
)
from ragwatch.judges.faithfulness.split import (
    MIN_STATEMENT_WORDS,
    SPLIT_SYSTEM,
    STATEMENT_CHARS,
    answer_statements,
    split_prompt,
    statements_schema,
)

__all__ = [
    "MIN_STATEMENT_WORDS",
    "PROMPT_VERSION",
    "SPLIT_SYSTEM",
    "STATEMENT_CHARS",
    "FaithfulnessJudge",
    "FaithfulnessOptions",
    "StatementSource",
    "VerifyChoice",
    "answer_statements",
    "split_prompt",
    "statements_schema",
]
