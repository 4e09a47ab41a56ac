"""LLM judges: each declared once in its own file, all run by one engine (`engine.py`).

A judge file declares its prompt(s), pydantic input/output models, how a reply becomes a score and
its typed `MetricInfo`, and registers itself by name (`registry.register_judge`); `JudgesConfig`
validates each judge's options block against the model it registered. Every LLM call goes through
`LLMClient`.

Two of the scorers here give no LLM verdict: `similarity` (embedding cosine between answer and
reference) and `perplexity` / `answer_confidence` (the generator's own token probabilities). They are
declared and run like the judges so that they fail, batch, cost and report the same way; measuring
the judges themselves (human labels, prompt injection) is `ragwatch.calibration`.

Example:
    >>> from ragwatch.judges import JudgesConfig, build_judges, run_judges  # doctest: +SKIP
    >>> config = JudgesConfig()  # doctest: +SKIP
    >>> results = run_judges(build_judges(config, LLMClient(config.llm)), samples, answers)  # doctest: +SKIP
"""

from ragwatch.judges.base import FewShotExample, Judge, fence
from ragwatch.judges.config import JudgesConfig, build_judges
from ragwatch.judges.correctness import CorrectnessJudge
from ragwatch.judges.custom import CustomRubric, CustomRubricJudge, load_custom_rubrics, parse_custom_rubrics
from ragwatch.judges.engine import Call, LLMJudge, Score, gather, run_judge, run_judges, unavailable_metrics
from ragwatch.judges.faithfulness import FaithfulnessJudge
from ragwatch.judges.faithfulness.verify import StatementVerdict, verify_statements
from ragwatch.judges.likert import Criterion, LikertJudge
from ragwatch.judges.model_comparison import compare_judges
from ragwatch.judges.perplexity import PerplexityJudge
from ragwatch.judges.prometheus import parse_prometheus
from ragwatch.judges.registry import JudgeDeps, JudgeOptions, register_judge
from ragwatch.judges.relevance import AnswerRelevanceJudge, ContextRelevanceJudge
from ragwatch.judges.rubric import RubricJudge
from ragwatch.judges.similarity import SimilarityJudge
from ragwatch.judges.support import SupportJudge

__all__ = [
    "AnswerRelevanceJudge",
    "Call",
    "ContextRelevanceJudge",
    "CorrectnessJudge",
    "Criterion",
    "CustomRubric",
    "CustomRubricJudge",
    "FaithfulnessJudge",
    "FewShotExample",
    "Judge",
    "JudgeDeps",
    "JudgeOptions",
    "JudgesConfig",
    "LLMJudge",
    "LikertJudge",
    "PerplexityJudge",
    "RubricJudge",
    "Score",
    "SimilarityJudge",
    "StatementVerdict",
    "SupportJudge",
    "build_judges",
    "compare_judges",
    "fence",
    "gather",
    "load_custom_rubrics",
    "parse_custom_rubrics",
    "parse_prometheus",
    "register_judge",
    "run_judge",
    "run_judges",
    "unavailable_metrics",
    "verify_statements",
]
