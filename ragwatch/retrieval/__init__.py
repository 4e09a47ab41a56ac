"""Retrieval metrics: which retrieved chunks (or documents) are relevant, and how well each ranking did.

- `matching`: `MatchSettings`, labels matched against a ranking (`judge`), labels against the index;
- `ranking`: document rankings (MaxP), a system's contexts as a ranking;
- `measures`: per-question measures (hit rate, recall, precision, nDCG, MRR, AP);
- `evaluate`: `evaluate_retrieval` -> `RetrievalReport`, `compare_retrievers`;
- `embedding_cache`: `RememberedEmbedder` (each query embedded once across modes).

Example:
    >>> rankings = index.search_many([s.question for s in samples], 10, "hybrid", embedder)
    >>> report = evaluate_retrieval(samples, rankings, ks=(1, 5, 10))
    >>> report.metrics["hit_rate@5"].score, report.metrics["mrr"].ci_low
"""

from ragwatch.retrieval.embedding_cache import RememberedEmbedder
from ragwatch.retrieval.evaluate import (
    DEFAULT_KS,
    NO_LABELS,
    QuestionRow,
    RetrievalReport,
    compare_retrievers,
    evaluate_retrieval,
    retrieval_infos,
)
from ragwatch.retrieval.matching import (
    CorpusLabels,
    Judgement,
    MatchSettings,
    judge,
    label_paths,
    normalize_path,
    paths_match,
    text_overlap,
    unmatched_labels,
)
from ragwatch.retrieval.measures import (
    average_precision,
    first_relevant_rank,
    hit_at_k,
    ndcg_at_k,
    precision_at_k,
    question_measures,
    recall_at_k,
    reciprocal_rank,
)
from ragwatch.retrieval.ranking import document_ranking, hits_from_contexts, rankings_with_documents

__all__ = [
    "DEFAULT_KS",
    "NO_LABELS",
    "CorpusLabels",
    "Judgement",
    "MatchSettings",
    "QuestionRow",
    "RememberedEmbedder",
    "RetrievalReport",
    "average_precision",
    "compare_retrievers",
    "document_ranking",
    "evaluate_retrieval",
    "first_relevant_rank",
    "hit_at_k",
    "hits_from_contexts",
    "judge",
    "label_paths",
    "ndcg_at_k",
    "normalize_path",
    "paths_match",
    "precision_at_k",
    "question_measures",
    "rankings_with_documents",
    "recall_at_k",
    "reciprocal_rank",
    "retrieval_infos",
    "text_overlap",
    "unmatched_labels",
]
