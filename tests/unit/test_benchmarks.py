"""The measurement tools' one entry point (`python -m benchmarks NAME`), run as a user runs it; `lab/` imported
by nothing; and no `sys.path` edit in the code outside tests."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHARED = {"rag_statements"}  # modules the tools import, not tools of their own
TOOLS = sorted(p.stem for p in (ROOT / "benchmarks").glob("*.py")
               if not p.name.startswith("_") and p.stem not in SHARED)
# Files issue 42 holds (its engineers run and edit them): each still edits sys.path, until they are free.


def _benchmarks(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "benchmarks", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)


def test_the_listing_names_every_tool_with_what_it_measures() -> None:
    done = _benchmarks()
    assert done.returncode == 0, done.stderr
    listed = {line.split()[0]: line for line in done.stdout.splitlines()[2:] if line.strip()}
    assert sorted(listed) == TOOLS
    assert "coverage and median width by simulation" in listed["interval_width"]


def test_an_unknown_name_is_refused_and_a_lab_study_is_pointed_to() -> None:
    done = _benchmarks("no_such_tool")
    assert done.returncode == 2 and "no tool named 'no_such_tool'" in done.stderr and "gate_power" in done.stderr
    done = _benchmarks("search", "--help")
    assert done.returncode == 2 and "python -m lab.search" in done.stderr
    done = _benchmarks("rag_statements")
    assert done.returncode == 2 and "a module the tools share" in done.stderr


@pytest.mark.parametrize("name", TOOLS)
def test_every_tool_answers_help_through_the_entry_point(name: str) -> None:
    """Each tool starts from the entry point with no sys.path edit: its imports resolve, its options parse."""
    done = _benchmarks(name, "--help")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage:" in done.stdout


def test_the_exit_code_and_arguments_are_the_tools() -> None:
    done = _benchmarks("feedback_ppi_coverage", "--reps", "not-a-number")
    assert done.returncode == 2 and "invalid int value" in done.stderr


def _python_files(*folders: str) -> list[Path]:
    return [p for folder in folders for p in sorted((ROOT / folder).rglob("*.py"))] + [ROOT / "run.py"]


def test_nothing_imports_lab() -> None:
    importers = []
    for path in _python_files("ragwatch", "benchmarks", "scripts", "tests", "lab"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n == "lab" or n.startswith("lab.") for n in names):
                importers.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not importers, f"lab/ holds one-off studies that nothing imports: {importers}"


def _edits_sys_path(tree: ast.AST) -> list[int]:
    """Lines that change `sys.path`: a call of one of its methods, or an assignment to it or a slice of it."""
    def is_sys_path(node: ast.AST) -> bool:
        return (isinstance(node, ast.Attribute) and node.attr == "path" and isinstance(node.value, ast.Name)
                and node.value.id == "sys")

    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and is_sys_path(node.func.value):
            lines.append(node.lineno)
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, ast.AugAssign) else []
        for target in targets:
            if is_sys_path(target) or (isinstance(target, ast.Subscript) and is_sys_path(target.value)):
                lines.append(node.lineno)
    return sorted(lines)


def test_the_detector_sees_every_way_of_editing_sys_path() -> None:
    source = "import sys\nsys.path.insert(0, 'a')\nsys.path[:0] = ['b']\nsys.path += ['c']\nsys.path.append('d')\n"
    assert _edits_sys_path(ast.parse(source)) == [2, 3, 4, 5]
    assert _edits_sys_path(ast.parse("import sys\nprint(sys.path)\n")) == []


def test_no_sys_path_edit_outside_tests() -> None:
    found = {}
    for path in _python_files("ragwatch", "benchmarks", "lab", "scripts"):
        lines = _edits_sys_path(ast.parse(path.read_text(encoding="utf-8")))
        if lines:
            found[str(path.relative_to(ROOT))] = lines
    assert not found, (f"sys.path edited in {found}: run tools as `python -m benchmarks NAME` or "
                            "`python -m lab.NAME` from the root, and import through the package")
