"""Chunks to a searchable index: embeddings (`embeddings`), BM25 text analysis (`bm25`), exact top-k and
rank fusion (`topk`), the `Index` with its vector, BM25 and hybrid search (`index`) and its errors
(`errors`). Nothing here measures anything."""
