"""The index's errors, below both `ragwatch.indexing.index` and `ragwatch.indexing.bm25` (which raises one
when BM25 cannot be set up), so that neither imports the other to get them. `ragwatch.indexing.index` exports them too.
"""

from __future__ import annotations


class RagIndexError(ValueError):
    """Base class of index errors (not `IndexError`, which is a builtin with another meaning)."""


class EmbeddingMismatchError(RagIndexError):
    """The query embedder's vector space is not the one the index was built with."""


class EmptyIndexError(RagIndexError):
    """The index holds no chunks."""


class CorruptIndexError(RagIndexError):
    """A saved index is incomplete or inconsistent."""
