"""Modules that moved: their old import paths still import, as the new module itself.

ZenML records an artifact's type by its import path (`ragwatch.labels.HumanLabels` for the
`human_labels` artifacts saved before the review package existed) and pickle records classes the
same way, so a store written before a move must still load. `install()` (run by `ragwatch/__init__`)
puts a finder first on `sys.meta_path` that answers an old path (or a module below it) with the
module now at the new path: the same module object, so the same classes (`isinstance` and pickle
agree). To move a module, add one line to `MOVED`; leave no file at the old path.

Example:
    >>> import ragwatch.labels, ragwatch.review.labels
    >>> ragwatch.labels is ragwatch.review.labels
    True
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Mapping, Sequence
from importlib.abc import Loader, MetaPathFinder
from importlib.machinery import ModuleSpec
from types import ModuleType

MOVED: dict[str, str] = {  # old module path -> new module path
    "ragwatch.agreement": "ragwatch.statistics.agreement",
    "ragwatch.bm25": "ragwatch.indexing.bm25",
    "ragwatch.chunking": "ragwatch.corpus.chunking",
    "ragwatch.compare": "ragwatch.decision.compare",
    "ragwatch.datasets": "ragwatch.evalset.imported",
    "ragwatch.documents": "ragwatch.corpus.documents",
    "ragwatch.e2e": "ragwatch.checks.e2e",
    "ragwatch.embeddings": "ragwatch.indexing.embeddings",
    "ragwatch.evalsets": "ragwatch.evalset.assemble",
    "ragwatch.gate": "ragwatch.decision.gate",
    "ragwatch.index": "ragwatch.indexing.index",
    "ragwatch.index_errors": "ragwatch.indexing.errors",
    "ragwatch.markup": "ragwatch.corpus.markup",
    "ragwatch.ppi": "ragwatch.statistics.ppi",
    "ragwatch.references": "ragwatch.evalset.references",
    "ragwatch.stats": "ragwatch.statistics.intervals",
    "ragwatch.summary": "ragwatch.report.summary",
    "ragwatch.system_metrics": "ragwatch.checks.system_metrics",
    "ragwatch.testset": "ragwatch.evalset.synthetic",
    "ragwatch.thresholds": "ragwatch.decision.thresholds",
    "ragwatch.topk": "ragwatch.indexing.topk",
    "ragwatch.judges.injection": "ragwatch.calibration.injection",
    "ragwatch.judges.calibrations": "ragwatch.judges.faithfulness.calibrations",
    "ragwatch.judges.evidence": "ragwatch.judges.faithfulness.evidence",
    "ragwatch.judges.faithfulness_level": "ragwatch.judges.faithfulness.level",
    "ragwatch.judges.support_model": "ragwatch.judges.faithfulness.support_model",
    "ragwatch.judges.verify": "ragwatch.judges.faithfulness.verify",
    "ragwatch.judges.verify_evidence": "ragwatch.judges.faithfulness.verify_evidence",
    "ragwatch.labels": "ragwatch.review.labels",
    "ragwatch.review_session": "ragwatch.review.session",
    "ragwatch.review_web": "ragwatch.review.server",
}


class MovedModules(MetaPathFinder, Loader):
    """Imports an old module path as the module at its new path (see the module doc)."""

    def __init__(self, moved: Mapping[str, str]) -> None:
        self.moved = dict(moved)

    def new_name(self, name: str) -> str | None:
        """Where `name` lives now, or None when it did not move."""
        for old, new in self.moved.items():
            if name == old or name.startswith(old + "."):
                return new + name[len(old):]
        return None

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        new = self.new_name(fullname)
        return None if new is None else ModuleSpec(fullname, self, loader_state=new)

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        module = importlib.import_module(spec.loader_state)
        # the import system is about to set this alias spec on the shared module: keep its own to restore
        spec.loader_state = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        module.__spec__ = module.__spec__.loader_state  # type: ignore[union-attr]


def install() -> None:
    """Put the finder for `MOVED` first on `sys.meta_path`, once."""
    if not any(isinstance(finder, MovedModules) for finder in sys.meta_path):
        sys.meta_path.insert(0, MovedModules(MOVED))
