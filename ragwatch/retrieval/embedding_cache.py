"""Query embeddings remembered across the retrieval modes of one evaluation."""

from __future__ import annotations

from typing import Any


class RememberedEmbedder:
    """An embedder that embeds each distinct text once and hands back the same vector after that.

    Retrieval evaluation searches the same questions in several modes (vector, hybrid) and again
    deeper for document ranking; query embedding is most of that time, so it is done once.

    >>> embedder = RememberedEmbedder(get_embedder(EmbeddingSettings()))  # doctest: +SKIP
    """

    def __init__(self, embedder: Any) -> None:
        self.inner = embedder
        self._vectors: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:  # identity, dim, max_input_tokens, count_tokens
        return getattr(self.inner, name)

    def embed(self, texts: list[str]) -> Any:
        import numpy as np

        new = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        if new:
            self._vectors.update(zip(new, self.inner.embed(new), strict=True))
        if not texts:
            return self.inner.embed([])
        return np.stack([self._vectors[t] for t in texts])
