"""A digest of the installed ragwatch code and its data files: what a step's cache key must include when
its output depends on library code that is not among the step's parameters (ZenML hashes the step's own
source, not the code it calls).

Example:
    >>> len(code_version())
    16
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

SUFFIXES = (".py", ".json", ".jsonl", ".yaml")  # code and shipped data (calibrations); not caches


@lru_cache(maxsize=4)
def code_version(root: Path | None = None) -> str:
    """sha256 (16 hex digits) of every code and data file under `root` (the ragwatch package), by relative path."""
    root = root or Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for file in sorted(p for p in root.rglob("*") if p.suffix in SUFFIXES and "__pycache__" not in p.parts):
        digest.update(file.relative_to(root).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(file.read_bytes()).digest())
    return digest.hexdigest()[:16]
