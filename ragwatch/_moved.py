"""Modules that moved: their old import paths still import, as the new module itself.

ZenML records an artifact's type by its import path (`ragwatch.labels.HumanLabels` for the
`human_labels` artifacts saved before the review package existed) and pickle records classes the
same way, so a store written before a move must still load. `install()` (run by `ragwatch/__init__`)
puts a finder first on `sys.meta_path` that answers an old path (or a module below it) with the
module now at the new path: the same module object, so the same classes (`isinstance` and pickle
agree). Keep a line only while stores name its old path: user code imports the new paths.

An old package that no longer exists (`steps`, `ragwatch.logs`) is answered only while no real package
of that name can be imported (a user's own `steps/` wins), and then as an empty package holding just
the moved modules below it.

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
from importlib.machinery import ModuleSpec, PathFinder
from types import ModuleType

MOVED: dict[str, str] = {  # old module path -> new module path: only those stored artifacts name
    # artifact types (ZenML's `data_type`) of runs saved before the regrouping
    "ragwatch.compare": "ragwatch.decision.gate",  # GateDecision was born in compare.py (gate.py has its rows too)
    "ragwatch.documents": "ragwatch.corpus.documents",  # LoadResult
    "ragwatch.gate": "ragwatch.decision.gate",  # GateDecision
    "ragwatch.index": "ragwatch.indexing.index",  # Index
    "ragwatch.labels": "ragwatch.review.labels",  # HumanLabels
    "ragwatch.testset": "ragwatch.evalset.synthetic",  # Testset
    # monitor artifacts saved before ragwatch/logs/ was split (`ragwatch.logs` itself: an empty stand-in)
    "ragwatch.logs.monitor": "ragwatch.monitoring.monitor",  # WindowEvaluation, MonitorReport
    "ragwatch.logs.records": "ragwatch.logsources.records",  # LogReadResult
    "ragwatch.logs.window": "ragwatch.logsources.window",  # LogWindow
    # materializers of runs saved before the ZenML half moved into the package (`steps` was top-level)
    "steps.materializers": "ragwatch_zenml.steps.materializers",
    "steps.monitor_materializers": "ragwatch_zenml.steps.monitor_materializers",
}


class MovedModules(MetaPathFinder, Loader):
    """Imports an old module path as the module at its new path (see the module doc)."""

    def __init__(self, moved: Mapping[str, str]) -> None:
        self.moved = dict(moved)
        # the packages above old paths: empty stand-ins holding only the moved modules, if they are gone
        parents = {old.rsplit(".", end)[0] for old in self.moved for end in range(1, old.count(".") + 1)}
        self.stand_ins = parents - {"ragwatch"} - set(self.moved)

    def new_name(self, name: str) -> str | None:
        """Where `name` lives now, or None when it did not move."""
        below = [old for old in self.moved if name == old or name.startswith(old + ".")]
        if not below:
            return None
        old = max(below, key=len)  # the nearest move: a module moved apart from its old package
        return self.moved[old] + name[len(old):]

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        if fullname in self.stand_ins:
            if PathFinder.find_spec(fullname, path) is not None:
                return None  # a real package of that name: it wins
            return ModuleSpec(fullname, self, is_package=True)
        new = self.new_name(fullname)
        parent = fullname.rpartition(".")[0]
        stand_in = sys.modules.get(parent)
        if new is None or (parent in self.stand_ins and getattr(stand_in, "__loader__", None) is not self):
            return None  # below a real package of the old name: not ours
        return ModuleSpec(fullname, self, loader_state=new)

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        if spec.loader_state is None:
            return None  # a stand-in package: the default empty module
        module = importlib.import_module(spec.loader_state)
        # the import system is about to set this alias spec on the shared module: keep its own to restore
        spec.loader_state = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        if module.__spec__ is not None and module.__spec__.loader_state is not None:
            module.__spec__ = module.__spec__.loader_state


def install() -> None:
    """Put the finder for `MOVED` first on `sys.meta_path`, once."""
    if not any(isinstance(finder, MovedModules) for finder in sys.meta_path):
        sys.meta_path.insert(0, MovedModules(MOVED))
