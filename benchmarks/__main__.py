"""`python -m benchmarks [NAME [ARGS...]]`: the one entry point of the maintained measurement tools.

With no name, lists every tool (each `benchmarks/*.py` that runs as a script; the others are modules the
tools share) with the first line of its docstring. With a
name, runs `benchmarks/NAME.py ARGS...` as a script in a child process whose `PYTHONPATH` starts with
the repository root, so a tool imports `ragwatch` and the tests' fake LLM server
(`tests.fake_llm_server`) without an installed package or a `sys.path` edit; the exit code is the tool's.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def _runs_as_script(tree: ast.Module) -> bool:
    """Whether a module ends in `if __name__ == "__main__":`, i.e. is a tool rather than a shared module."""
    return any(isinstance(node, ast.If) and isinstance(node.test, ast.Compare)
               and isinstance(node.test.left, ast.Name) and node.test.left.id == "__name__" for node in tree.body)


def tools() -> dict[str, Path]:
    """Every maintained tool by name: the modules of `benchmarks/` that run as a script."""
    return {p.stem: p for p in sorted(HERE.glob("*.py"))
            if not p.name.startswith("_") and _runs_as_script(ast.parse(p.read_text(encoding="utf-8")))}


def summary(path: Path) -> str:
    """The first line of a tool's docstring, read without importing it."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    return doc.strip().splitlines()[0] if doc.strip() else "(no docstring)"


def listing() -> str:
    found = tools()
    width = max(map(len, found))
    return "\n".join(["usage: python -m benchmarks NAME [ARGS...]   (NAME --help: its options)", "",
                      *(f"  {name:<{width}}  {summary(path)}" for name, path in found.items())])


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(listing())
        return 0
    name, rest = argv[0].removesuffix(".py"), argv[1:]
    path = tools().get(name)
    if path is None:
        if (ROOT / "lab" / f"{name}.py").exists():
            hint = f"lab/{name}.py is a one-off study, not a maintained tool: python -m lab.{name}"
        elif (HERE / f"{name}.py").exists():
            hint = f"benchmarks/{name}.py is a module the tools share, not a tool"
        else:
            hint = f"the tools: {', '.join(tools())}"
        print(f"python -m benchmarks: no tool named {name!r}; {hint}", file=sys.stderr)
        return 2
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return subprocess.call([sys.executable, str(path), *rest], env=env)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
