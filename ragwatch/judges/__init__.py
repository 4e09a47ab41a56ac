"""LLM judges: one per file (prompt + pydantic output schema + scoring), all calls through `LLMClient`.

Example:
    >>> from ragwatch.judges import JudgesConfig, build_judges, run_judges  # doctest: +SKIP
    >>> config = JudgesConfig()  # doctest: +SKIP
    >>> results = run_judges(build_judges(config, LLMClient(config.llm)), samples, answers)  # doctest: +SKIP
"""

from ragwatch.judges.base import FewShotExample, Judge, fence, run_judges
from ragwatch.judges.compare import compare_judges
from ragwatch.judges.config import JudgesConfig, build_judges
from ragwatch.judges.correctness import CorrectnessJudge
from ragwatch.judges.custom import CustomRubric, CustomRubricJudge, load_custom_rubrics, parse_custom_rubrics
from ragwatch.judges.faithfulness import FaithfulnessJudge
from ragwatch.judges.injection import inject, injection_inflation
from ragwatch.judges.likert import Criterion, LikertJudge
from ragwatch.judges.perplexity import PerplexityJudge
from ragwatch.judges.prometheus import parse_prometheus
from ragwatch.judges.relevance import AnswerRelevanceJudge, ContextRelevanceJudge
from ragwatch.judges.rubric import RubricJudge
from ragwatch.judges.similarity import SimilarityJudge

__all__ = [
    "AnswerRelevanceJudge",
    "ContextRelevanceJudge",
    "CorrectnessJudge",
    "Criterion",
    "CustomRubric",
    "CustomRubricJudge",
    "FaithfulnessJudge",
    "FewShotExample",
    "Judge",
    "JudgesConfig",
    "LikertJudge",
    "PerplexityJudge",
    "RubricJudge",
    "SimilarityJudge",
    "build_judges",
    "compare_judges",
    "fence",
    "inject",
    "injection_inflation",
    "load_custom_rubrics",
    "parse_custom_rubrics",
    "parse_prometheus",
    "run_judges",
]
