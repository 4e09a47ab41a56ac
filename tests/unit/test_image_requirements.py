"""The parent image's requirements, checked offline against this environment: requirements/runtime-lock.txt
is base.txt's closure, every pin accepts the image's Python, none is test or docs tooling, and every
package the product imports is in it (the image has nothing else)."""

from __future__ import annotations

import ast
import fnmatch
import importlib.metadata as metadata
import importlib.util
import re
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
TOOLING = re.compile(r"^(mkdocs.*|pymdown.*|pytest.*|ruff|playwright|hypothesis)$")
# Installed in the image beside the runtime lock (deploy/image/Dockerfile): module -> where it comes from.
BESIDE_THE_LOCK = {"llama_cpp": "the portable llama-cpp-python wheel"}


def _lock_tool():
    spec = importlib.util.spec_from_file_location("lock_requirements", ROOT / "scripts" / "lock_requirements.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


LOCKS = _lock_tool()


def test_the_committed_locks_are_the_closure_of_base_and_dev():
    runtime, dev = LOCKS.render_locks()
    assert LOCKS.RUNTIME_LOCK.read_text(encoding="utf-8") == runtime, (
        "requirements/runtime-lock.txt is not base.txt's closure in this environment: "
        "run .venv/bin/python scripts/lock_requirements.py (after installing base.txt and dev.txt)")
    assert LOCKS.DEV_LOCK.read_text(encoding="utf-8") == dev, (
        "requirements/dev-lock.txt is not dev.txt's closure less the runtime lock: "
        "run .venv/bin/python scripts/lock_requirements.py")


def test_the_locks_do_not_overlap_and_pin_every_direct_requirement():
    runtime, dev = LOCKS.read_pins(LOCKS.RUNTIME_LOCK), LOCKS.read_pins(LOCKS.DEV_LOCK)
    assert not set(runtime) & set(dev)
    for name, pins in (("base.txt", runtime), ("dev.txt", {**runtime, **dev})):
        for requirement in LOCKS.read_requirements(LOCKS.REQUIREMENTS / name):
            pinned = pins.get(canonicalize_name(requirement.name))
            assert pinned, f"{requirement.name} ({name}) is in no lock"
            assert requirement.specifier.contains(pinned[1], prereleases=True), (requirement, pinned)


def test_every_runtime_pin_accepts_the_image_python():
    problems = LOCKS.python_problems(LOCKS.read_pins(LOCKS.RUNTIME_LOCK), LOCKS.IMAGE_PYTHON)
    assert not problems, (f"the parent image's Python {LOCKS.IMAGE_PYTHON} cannot install these pins of "
                          "requirements/runtime-lock.txt:\n" + "\n".join(problems))


def test_the_python_check_names_the_pin_that_broke_the_image():
    # pymdown-extensions 13.1.2 (docs tooling, Requires-Python >= 3.11.5) once sat in the image's lock.
    try:
        version = metadata.version("pymdown-extensions")
    except metadata.PackageNotFoundError:
        pytest.skip("pymdown-extensions (requirements/dev-lock.txt) is not installed here")
    requires = metadata.metadata("pymdown-extensions").get("Requires-Python") or ""
    problems = LOCKS.python_problems({"pymdown-extensions": ("pymdown-extensions", version)}, "3.11.2")
    if "3.11.5" not in requires:
        pytest.skip(f"pymdown-extensions {version} here asks for Python {requires or 'anything'}")
    assert problems == [f"pymdown-extensions=={version}: Requires-Python {requires} excludes Python 3.11.2"]
    assert LOCKS.python_problems({"pymdown-extensions": ("pymdown-extensions", version)}, "3.11.7") == []


def test_the_runtime_lock_holds_no_test_or_docs_tooling():
    runtime, dev = LOCKS.read_pins(LOCKS.RUNTIME_LOCK), LOCKS.read_pins(LOCKS.DEV_LOCK)
    tooling = sorted(name for name, _ in runtime.values() if TOOLING.match(canonicalize_name(name)))
    assert not tooling, f"test or docs tooling in requirements/runtime-lock.txt (the image): {tooling}"
    for tool in ("mkdocs", "mkdocs-material", "pymdown-extensions", "pytest", "ruff", "playwright", "hypothesis"):
        assert tool in dev, f"{tool} left the dev lock"


def _product_files() -> tuple[set[str], list[Path]]:
    """The modules `pip install .` installs (pyproject.toml): their top-level names and their files."""
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    patterns = setuptools.get("packages", {}).get("find", {}).get("include", ["*"])
    packages = [path for path in sorted(ROOT.iterdir()) if (path / "__init__.py").is_file()
                and any(fnmatch.fnmatch(path.name, pattern) for pattern in patterns)]
    modules = [ROOT / f"{name}.py" for name in setuptools.get("py-modules", [])]
    names = {path.name for path in packages} | {path.stem for path in modules}
    return names, [file for package in packages for file in sorted(package.rglob("*.py"))] + modules


def _optional(node: ast.AST) -> bool:
    """A block whose imports the product runs without: `if TYPE_CHECKING:` or `try: ... except ImportError`."""
    if isinstance(node, ast.If):
        return "TYPE_CHECKING" in ast.unparse(node.test)
    if isinstance(node, ast.Try):
        return any(handler.type is not None and re.search(r"\b(ImportError|ModuleNotFoundError)\b",
                                                          ast.unparse(handler.type)) for handler in node.handlers)
    return False


def _required_imports(tree: ast.AST) -> set[str]:
    """Top-level names of the absolute imports outside optional blocks (late imports count)."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
        for child in ast.iter_child_nodes(node):
            if _optional(child):
                # only the guarded body is optional: an else branch, a handler or a finally still runs
                rest = getattr(child, "orelse", []) + getattr(child, "finalbody", [])
                for part in [*getattr(child, "handlers", []), ast.Module(rest, [])]:
                    visit(part)
                continue
            visit(child)

    visit(tree)
    return found


def test_every_package_the_product_imports_is_in_the_runtime_lock():
    first_party, files = _product_files()
    assert "ragwatch" in first_party and files
    locked = set(LOCKS.read_pins(LOCKS.RUNTIME_LOCK)) | set(LOCKS.read_pins(LOCKS.REQUIREMENTS / "models.txt"))
    providers = metadata.packages_distributions()
    missing = []
    for file in files:
        for module in sorted(_required_imports(ast.parse(file.read_text(encoding="utf-8")))):
            if module in first_party or module in sys.stdlib_module_names or module in BESIDE_THE_LOCK:
                continue
            distributions = {canonicalize_name(name) for name in providers.get(module, [])}
            if not distributions & locked:
                where = ", ".join(sorted(distributions)) or "no installed distribution"
                missing.append(f"{file.relative_to(ROOT)} imports {module} ({where})")
    assert not missing, ("the parent image lacks what the product imports: add it to requirements/base.txt and "
                         "run scripts/lock_requirements.py, or guard an optional import:\n" + "\n".join(missing))


def test_the_import_scan_counts_late_imports_and_skips_optional_ones():
    source = """
import json, numpy.linalg
from typing import TYPE_CHECKING
if TYPE_CHECKING:
    from playwright.sync_api import Page
else:
    import yaml
try:
    import onnxruntime
except ImportError:
    import tokenizers
finally:
    import scipy
def later():
    from sklearn.metrics import f1_score
    from . import sibling
"""
    assert _required_imports(ast.parse(source)) == {"json", "numpy", "typing", "yaml", "tokenizers", "scipy",
                                                    "sklearn"}
