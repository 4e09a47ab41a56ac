"""What a run will cost before it starts: calls, tokens, dollars and wall time per role and stage,
found by running the pipeline's own prompt code against clients that send nothing.

Example:
    >>> from ragwatch.estimate import estimate_pipeline, format_estimate
    >>> print(format_estimate(estimate_pipeline("full", config)))  # doctest: +SKIP
"""

from ragwatch.estimate.table import Estimate, EstimateRow, format_comparison, format_estimate
from ragwatch.estimate.workload import LatestInputs, estimate_pipeline

__all__ = ["Estimate", "EstimateRow", "LatestInputs", "estimate_pipeline", "format_comparison", "format_estimate"]
