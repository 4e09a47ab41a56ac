"""A digest of the installed ragwatch code and its data files: what a step's cache key must include when
its output depends on library code that is not among the step's parameters (ZenML hashes the step's own
source, not the code it calls).

Example:
    >>> len(code_version())
    16
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from ragwatch.config import content_hash

SUFFIXES = (".py", ".json", ".jsonl", ".yaml")  # code and shipped data (calibrations); not caches or bytecode


@lru_cache(maxsize=4)
def code_version(root: Path | None = None) -> str:
    """sha256 (16 hex digits) of every code and data file under `root` (the ragwatch package), by relative path."""
    return content_hash(root or Path(__file__).resolve().parent, SUFFIXES)[:16]
