"""Human review of judged items: one module per job, the public names exported here.

- `sample`: which items a person reviews (a seeded stratified sample of a run);
- `files`: the review file: the sample as CSV/JSONL out, a filled one read back and validated;
- `labels`: the `human_labels` collection (a later label wins, history kept);
- `labelled`: what the labels estimate (PPI++ on a run's judged metrics);
- `items`, `hints`: an item as the review page shows it, and where to read in its contexts;
- `log`: the page's append-only label log (flock, fsync) and its replay;
- `session`: the page's logic without a server (progress, live agreement, the PPI preview);
- `server`: the stdlib HTTP server and the static page (`static/`).

The ZenML side (`orchestration/review.py`, `orchestration/review_serve.py`, `steps/labels.py`,
`readback.py`) imports from here only.
"""

from ragwatch.review.files import (
    CONTEXT_SEPARATOR,
    LabelProblem,
    parse_value,
    read_label_file,
    validate_labels,
    write_review_files,
)
from ragwatch.review.labelled import attach_labelled, labelled_estimate, labelled_summary
from ragwatch.review.labels import HumanLabel, HumanLabels, remove_labels
from ragwatch.review.log import LabelEvent, LabelLog, replay
from ragwatch.review.sample import (
    BASE_COLUMNS,
    JUDGE_PREFIX,
    LABEL_PREFIX,
    MIN_PER_STRATUM,
    Design,
    ReviewSample,
    allocate,
    default_review_metrics,
    review_sample,
    stratum_of,
)
from ragwatch.review.server import PortInUseError, ReviewApp, attach, make_server
from ragwatch.review.session import DEFAULT_TARGET, ReviewSession

__all__ = [
    "BASE_COLUMNS",
    "CONTEXT_SEPARATOR",
    "DEFAULT_TARGET",
    "JUDGE_PREFIX",
    "LABEL_PREFIX",
    "MIN_PER_STRATUM",
    "Design",
    "HumanLabel",
    "HumanLabels",
    "LabelEvent",
    "LabelLog",
    "LabelProblem",
    "PortInUseError",
    "ReviewApp",
    "ReviewSample",
    "ReviewSession",
    "allocate",
    "attach",
    "attach_labelled",
    "default_review_metrics",
    "labelled_estimate",
    "labelled_summary",
    "make_server",
    "parse_value",
    "read_label_file",
    "remove_labels",
    "replay",
    "review_sample",
    "stratum_of",
    "validate_labels",
    "write_review_files",
]
