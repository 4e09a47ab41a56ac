"""A persistent on-disk cache of successful generations (sqlite3), shared by processes.

Keys are sha256 digests of everything that shapes a reply (model, api_base, messages, schema,
sampling parameters) and never contain the API key. Failures are never stored.

Example:
    >>> cache = GenerationCache(Path("/tmp/llm-cache"))
    >>> key = cache_key({"model": "local/x", "messages": [{"role": "user", "content": "hi"}]})
    >>> cache.get(key) is None
    True
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any


def default_cache_root() -> Path:
    """`$RAGWATCH_CACHE_DIR`, else `~/.cache/ragwatch`."""
    root = os.environ.get("RAGWATCH_CACHE_DIR")
    return Path(root).expanduser() if root else Path.home() / ".cache" / "ragwatch"


def cache_key(request: dict[str, Any]) -> str:
    """A stable digest of a request description (dict keys are sorted, so order does not matter)."""
    blob = json.dumps(request, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class GenerationCache:
    """Key -> JSON value store in `<directory>/generations.sqlite3`."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / "generations.sqlite3"
        self._local = threading.local()
        with self._db() as db:
            db.execute("CREATE TABLE IF NOT EXISTS generations (key TEXT PRIMARY KEY, value TEXT, created REAL)")

    def _db(self) -> sqlite3.Connection:
        # one connection per thread (sqlite connections must not cross threads); WAL lets other
        # processes read while one writes, and synchronous=NORMAL skips the fsync per commit
        # (a crash may lose the last few entries, which are then simply recomputed)
        db = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=30.0)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            self._local.db = db
        return db

    def get(self, key: str) -> dict[str, Any] | None:
        row = self._db().execute("SELECT value FROM generations WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, key: str, value: dict[str, Any]) -> None:
        with self._db() as db:
            db.execute(
                "INSERT OR REPLACE INTO generations (key, value, created) VALUES (?, ?, ?)",
                (key, json.dumps(value, ensure_ascii=False), time.time()),
            )

    def __len__(self) -> int:
        return self._db().execute("SELECT COUNT(*) FROM generations").fetchone()[0]
