"""The import graph of the code: no circles, and no arrow pointing up a layer.

Every import counts: one inside a function (a late import is still a circle a reader has to climb
back through) and one under `if TYPE_CHECKING:` (a type-only import is still a dependency a reader
follows, and the usual way a circle is hidden rather than undone).
Layers, bottom up: `ragwatch` (the core, no ZenML), then the ZenML half `ragwatch_zenml`: its
environment and read-back, `steps`, `pipelines`, `commands`, the CLI, and `run.py` (the checkout's
entry point) on top. The core never imports `ragwatch_zenml`.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[2]
LAYERS = {  # a module's layer is that of the longest prefix of its name listed here
    "ragwatch": 0,
    "ragwatch_zenml": 1,  # the package itself (a docstring)
    "ragwatch_zenml.env": 1,
    "ragwatch_zenml.readback": 2,
    "ragwatch_zenml.steps": 3,
    "ragwatch_zenml.pipelines": 4,
    "ragwatch_zenml.commands": 5,
    "ragwatch_zenml.cli": 6,
    "run": 7,
}


def layer_of(module: str) -> str:
    """The entry of `LAYERS` that `module` belongs to (the longest prefix)."""
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in LAYERS:
            return ".".join(parts[:end])
    raise KeyError(f"{module} is in no layer: add its package to LAYERS")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    files = [ROOT / "run.py", *sorted((ROOT / "ragwatch").rglob("*.py")),
             *sorted((ROOT / "ragwatch_zenml").rglob("*.py"))]
    return {_module_name(f): f for f in files}


def _imports(path: Path, name: str, known: set[str]) -> set[str]:
    """The project modules `path` imports (a `from package import name` of a submodule counts as it)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the package, one level up per extra dot
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def import_graph() -> nx.DiGraph:
    modules = _modules()
    graph = nx.DiGraph()
    for name, path in modules.items():
        graph.add_node(name)
        for target in _imports(path, name, set(modules)):
            # a package's __init__ importing its own submodules is how a package exports, not a circle
            if not (path.name == "__init__.py" and target.startswith(name + ".")):
                graph.add_edge(name, target)
    return graph


def test_the_graph_sees_the_code():
    graph = import_graph()
    assert graph.has_edge("ragwatch_zenml.steps.track", "ragwatch_zenml.readback")
    assert graph.has_edge("run", "ragwatch_zenml.cli")
    assert graph.has_edge("ragwatch.judges.faithfulness.judge", "ragwatch.judges.faithfulness.verify_evidence")


def test_the_graph_counts_type_only_and_late_imports(tmp_path):
    """The control: an import under `if TYPE_CHECKING:` and one inside a function are both edges."""
    (tmp_path / "m.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from ragwatch.fmt import fmt_num\n"
        "def f():\n    import ragwatch.results\n", encoding="utf-8")
    found = _imports(tmp_path / "m.py", "m", {"m", "ragwatch.fmt", "ragwatch.results"})
    assert found == {"ragwatch.fmt", "ragwatch.results"}


def test_no_import_circle():
    circles = [sorted(c) for c in nx.strongly_connected_components(import_graph()) if len(c) > 1]
    assert circles == [], f"import circles: {circles}"


@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_no_import_points_up_a_layer(layer):
    graph = import_graph()
    upward = [(a, b) for a, b in graph.edges if layer_of(a) == layer and LAYERS[layer_of(b)] > LAYERS[layer]]
    assert upward == []


def test_the_core_never_imports_the_zenml_half():
    """Rule 1 of the house: every metric runs from a notebook or pytest without ZenML."""
    core = [(a, b) for a, b in import_graph().edges
            if not a.startswith("ragwatch_zenml") and a != "run" and b.startswith("ragwatch_zenml")]
    assert core == []


def test_no_circle_between_the_core_packages():
    """`ragwatch.corpus` -> `ragwatch.indexing` and never back: the packages read as one flow."""
    def package(module: str) -> str:
        return ".".join(module.split(".")[:2])

    packages = nx.DiGraph()
    for a, b in import_graph().edges:
        if a.startswith("ragwatch.") and b.startswith("ragwatch.") and package(a) != package(b):
            packages.add_edge(package(a), package(b))
    circles = [sorted(c) for c in nx.strongly_connected_components(packages) if len(c) > 1]
    assert circles == [], f"package circles: {circles}"


LOG_FLOW = ("ragwatch.logsources", "ragwatch.evalset.logged", "ragwatch.monitoring")  # bottom up


def test_the_log_packages_read_bottom_up():
    """A log's sources know no use of their records, the evaluation set no monitor: each of `LOG_FLOW`
    imports only those listed before it (and the rest of the core), never one after it."""
    def rank(module: str) -> int | None:
        hits = [i for i, top in enumerate(LOG_FLOW) if module == top or module.startswith(top + ".")]
        return hits[0] if hits else None

    upward = [(a, b) for a, b in import_graph().edges
              if (ra := rank(a)) is not None and (rb := rank(b)) is not None and rb > ra]
    sources_up = [(a, b) for a, b in import_graph().edges if rank(a) == 0 and b.startswith("ragwatch.evalset")]
    assert upward == [] and sources_up == []
    assert import_graph().has_edge("ragwatch.monitoring.monitor", "ragwatch.evalset.logged")  # the control
