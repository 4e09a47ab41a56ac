"""The RAG system under test: the built-in one (index + generator LLM + prompt), a Python callable,
or an HTTP endpoint. All three answer a batch of questions with one `RagAnswer` each; a question that
fails carries `error` and never sinks the batch.

Example:
    >>> rag = build_rag(RagSettings(retrieval_mode="hybrid", top_k=5), index=index, embedder=emb, llm=llm)
    >>> answers = rag.answer_many(["How do I register a stack?"])
    >>> answers[0].answer, [c.source for c in answers[0].contexts], rag.fingerprint()
    >>> http = build_rag(RagSettings(kind="http", http=HttpSettings(url="http://127.0.0.1:8000/ask")))
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragwatch.rag.base import (
    DEFAULT_PROMPT_TEMPLATE,
    HttpSettings,
    RagSettings,
    RAGSystem,
    RetrievalMode,
    SystemCalls,
    canonical_fingerprint,
    parse_contexts,
)
from ragwatch.rag.builtin import BuiltinRAG, build_prompt, format_contexts
from ragwatch.rag.callable_system import CallableRAG, load_callable
from ragwatch.rag.http import HttpRAG
from ragwatch.rag.logged import LoggedRAG

if TYPE_CHECKING:
    from ragwatch.indexing.embeddings import Embedder
    from ragwatch.indexing.index import Index
    from ragwatch.llm.client import LLMClient

__all__ = [
    "DEFAULT_PROMPT_TEMPLATE",
    "BuiltinRAG",
    "CallableRAG",
    "HttpRAG",
    "HttpSettings",
    "LoggedRAG",
    "RAGSystem",
    "RagSettings",
    "RetrievalMode",
    "SystemCalls",
    "build_prompt",
    "build_rag",
    "canonical_fingerprint",
    "format_contexts",
    "load_callable",
    "parse_contexts",
]


def build_rag(settings: RagSettings | None = None, index: Index | None = None,
              embedder: Embedder | None = None, llm: LLMClient | None = None) -> RAGSystem:
    """The system `settings.kind` names; the built-in one needs the index, the generator LLM and
    (unless retrieval_mode is bm25) the embedder the index was built with."""
    settings = settings or RagSettings()
    if settings.kind == "callable":
        assert settings.callable is not None  # checked by RagSettings
        return CallableRAG(settings.callable)
    if settings.kind == "logged":  # the answers a log recorded; nothing is called
        return LoggedRAG()
    if settings.kind == "http":
        assert settings.http is not None
        return HttpRAG(settings.http)
    if index is None or llm is None:
        raise ValueError("the built-in RAG needs index= (Index.build/Index.load) and llm= (LLMClient); "
                         "or set kind: callable / http to evaluate your own system")
    return BuiltinRAG(index, embedder, llm, settings)
