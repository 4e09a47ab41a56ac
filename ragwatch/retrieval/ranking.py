"""What is ranked: chunk rankings as document rankings (MaxP), and a system's contexts as a ranking.

When a question's relevance is by document (document paths or URLs), the chunk ranking becomes a
document ranking first: each document takes the rank of its best chunk ("MaxP"), so a long
document's later chunks do not take ranking slots and count as misses. This is how
document-labelled benchmarks (BEIR, MS MARCO documents) are scored. `MatchSettings.rank_unit`
chooses: `auto` (documents for document/URL labels, chunks for chunk-id and text labels),
`document` or `chunk`. Search deeper than the largest k for this (`rankings_with_documents`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Literal

from ragwatch.retrieval.matching import Label, MatchSettings
from ragwatch.types import Chunk, RetrievedContext, SearchHit


def document_ranking(hits: Sequence[SearchHit]) -> list[SearchHit]:
    """A chunk ranking as a document ranking: each document once, at its best chunk's position
    (MaxP), ranked 1..n. The chunk kept is that best chunk, so labels still match it.

    >>> [h.chunk.document_id for h in document_ranking(hits)]  # a a b a c -> a b c  # doctest: +SKIP
    """
    seen: set[str] = set()
    out: list[SearchHit] = []
    for hit in hits:
        key = hit.chunk.document_id or hit.chunk.source
        if key in seen:
            continue
        seen.add(key)
        out.append(SearchHit.model_construct(chunk=hit.chunk, score=hit.score, rank=len(out) + 1))
    return out


def _n_documents(hits: Sequence[SearchHit]) -> int:
    return len({h.chunk.document_id or h.chunk.source for h in hits})


def rankings_with_documents(
    search: Callable[[list[str], int], list[list[SearchHit]]], queries: Sequence[str], k: int, *, limit: int
) -> list[list[SearchHit]]:
    """Chunk rankings deep enough to hold `k` distinct documents each (or all `limit` chunks), so
    that the document ranking's top k is exact. `search(queries, depth)` returns chunk rankings.

    >>> rankings_with_documents(lambda qs, d: index.search_many(qs, d, "bm25"), questions, 10,
    ...                         limit=len(index))  # doctest: +SKIP
    """
    queries = list(queries)
    depth = min(limit, max(k * 4, k))
    rankings = search(queries, depth)
    while depth < limit:
        short = [i for i, r in enumerate(rankings) if len(r) >= depth and _n_documents(r) < k]
        if not short:
            break
        depth = min(limit, depth * 4)
        for i, deeper in zip(short, search([queries[i] for i in short], depth), strict=True):
            rankings[i] = deeper
    return rankings


def rank_unit_for(labels: Sequence[Label], match: MatchSettings) -> Literal["document", "chunk"]:
    """`document` when every label is a document/URL (and `rank_unit` is auto), else `chunk`."""
    if match.rank_unit != "auto":
        return match.rank_unit
    return "document" if labels and all(lb.kind in ("document", "url") for lb in labels) else "chunk"


def hits_from_contexts(contexts: Sequence[RetrievedContext]) -> list[SearchHit]:
    """Turn the contexts a RAG system reported into a ranking, so an external system's retrieval
    (callable or HTTP) is evaluated like the built-in one. Missing ids are derived from the text."""
    hits = []
    for rank, ctx in enumerate(contexts, start=1):
        cid = ctx.chunk_id or hashlib.sha256(ctx.text.encode()).hexdigest()[:16]
        chunk = Chunk(id=cid, document_id=ctx.source or cid, source=ctx.source or "", text=ctx.text,
                      start=0, end=len(ctx.text))
        hits.append(SearchHit(chunk=chunk, score=ctx.score if ctx.score is not None else 0.0, rank=rank))
    return hits
