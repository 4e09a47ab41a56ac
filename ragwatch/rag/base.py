"""What every system under test shares: its settings, the `RAGSystem` protocol, fingerprints, and the
parsing of an external system's reply (dotted fields, contexts as strings or objects)."""

from __future__ import annotations

import hashlib
import json
import threading
from collections import Counter
from collections.abc import Sequence
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ragwatch.rag.tracing import TraceSettings
from ragwatch.types import RagAnswer, RetrievedContext

RetrievalMode = Literal["vector", "bm25", "hybrid"]

DEFAULT_PROMPT_TEMPLATE = (
    "Context information is below.\n"
    "---------------------\n"
    "{context}\n"
    "---------------------\n"
    "Given the context information and not prior knowledge, answer the query.\n"
    "Query: {question}\n"
    "Answer: "
)


class HttpSettings(BaseModel):
    """How to call a RAG endpoint: POST `{question_field: question, **extra_body}` as JSON.

    Response fields are dotted paths (`"data.answer"`). The contexts field holds a list of strings
    or of objects whose text/id/source/score sit under the `context_*_field` names. Headers come
    from environment variables only (`headers_env={"Authorization": "RAG_TOKEN"}`), so no secret
    lands in a config file or a fingerprint.
    """

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    url: str
    """The endpoint that answers one question per POST (http:// or https://)."""
    timeout_s: float = 60.0
    """Seconds before one request times out (then retried)."""
    max_retries: int = 3
    """Retries on 408/429/5xx, timeouts and connection errors before the item fails."""
    backoff_s: float = 0.5
    """First backoff delay in seconds; doubles per retry (a Retry-After header wins)."""
    concurrency: int = 4
    """Requests in flight at most."""
    question_field: str = "question"
    """JSON key of the question in the request body."""
    extra_body: dict[str, Any] = Field(default_factory=dict)
    """Constant keys added to every request body."""
    answer_field: str = "answer"
    """Dotted path of the answer in the reply (`data.answer`)."""
    contexts_field: str | None = "contexts"
    """Dotted path of the contexts list in the reply (null: the system reports none)."""
    context_text_field: str = "text"
    """Key of a context object's text."""
    context_id_field: str = "id"
    """Key of a context object's id."""
    context_source_field: str = "source"
    """Key of a context object's source (document, URL)."""
    context_score_field: str = "score"
    """Key of a context object's retrieval score."""
    headers_env: dict[str, str] = Field(default_factory=dict)
    """Request header -> name of the environment variable holding its value (no secret in the config)."""

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"http.url must start with http:// or https://, got {value!r}")
        return value

    @field_validator("concurrency")
    @classmethod
    def _positive(cls, value: int) -> int:
        if value < 1:
            raise ValueError("http.concurrency must be at least 1")
        return value


class RagSettings(BaseModel):
    """Which system answers the questions, and how the built-in one retrieves and prompts.

    `cache_key`: a version of your own (callable or HTTP) system, e.g. its deployed release or model
    version (`cache_key: "v2025-11-26"`). Unset (the default), your system is asked on every
    `evaluate`, since what answers behind a URL or a function can change without the config changing.
    Set, its answers are reused from the step cache while this key, the rest of the config and the
    evaluation set are unchanged: change the key when you deploy. The built-in system needs none: its
    answers are a function of its config and index, which the cache keys on.
    """

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    kind: Literal["builtin", "callable", "http", "logged"] = "builtin"
    """Who answers: the built-in system over the index, your Python callable, your HTTP endpoint, or a log's
    recorded answers (`logged`: ragwatch/rag/logged.py)."""
    retrieval_mode: RetrievalMode = "hybrid"
    """Built-in system: vector, BM25 or hybrid (reciprocal rank fusion) retrieval."""
    top_k: int = 5
    """Built-in system: contexts retrieved per question."""
    prompt_template: str = DEFAULT_PROMPT_TEMPLATE
    """Built-in system: the prompt, with `{context}` and `{question}` slots."""
    # ~4 characters per token: 6000 characters keep the prompt near 1.6k tokens, inside small windows
    max_context_chars: int = 6000
    """Built-in system: contexts are cut to this many characters in the prompt."""
    callable: str | None = None
    """kind callable: `package.module:function` taking a question."""
    http: HttpSettings | None = None
    """kind http: the endpoint and the shape of its request and reply."""
    cache_key: str | None = None
    """callable / http: your system's version (a release, a model version); set, answers are cached per
    version; unset, the system is asked on every evaluate."""
    trace: TraceSettings | None = None
    """Built-in system: send each answer to Phoenix (OTLP/HTTP) as an OpenInference trace; off when null."""

    @field_validator("top_k", "max_context_chars")
    @classmethod
    def _positive(cls, value: int) -> int:
        if value < 1:
            raise ValueError(f"must be at least 1, got {value}")
        return value

    @field_validator("prompt_template")
    @classmethod
    def _has_slots(cls, value: str) -> str:
        missing = [slot for slot in ("{context}", "{question}") if slot not in value]
        if missing:
            raise ValueError(f"prompt_template must contain {' and '.join(missing)}")
        return value

    @model_validator(mode="after")
    def _target_given(self) -> RagSettings:
        if self.kind == "callable" and not self.callable:
            raise ValueError('kind "callable" needs callable: "package.module:function"')
        if self.kind == "http" and self.http is None:
            raise ValueError('kind "http" needs an http block with at least url: "http://host/path"')
        if self.kind == "builtin" and self.cache_key is not None:
            raise ValueError("cache_key is for a system of your own (kind callable or http); the built-in "
                             "system's answers are cached on its config and index: remove cache_key")
        if self.cache_key is not None and not self.cache_key.strip():
            raise ValueError("cache_key is empty: give your system's version (e.g. \"v2025-11-26\") or remove "
                             "the key to ask the system on every evaluate")
        return self

    @property
    def asked_every_run(self) -> bool:
        """True when answers must never come from the step cache: a system of the user's own with no
        `cache_key` (what answers behind it can change while the config does not)."""
        return self.kind != "builtin" and self.cache_key is None

    @property
    def target(self) -> str:
        """Which system this is, whatever its settings: "builtin", "callable <module:function>" or
        "http <url>". Runs of the same target (and ZenML model) share a history: previous run, production."""
        if self.kind == "http":
            assert self.http is not None
            return f"http {self.http.url}"
        if self.kind == "callable":
            return f"callable {self.callable}"
        return "builtin"


@runtime_checkable
class RAGSystem(Protocol):
    """What the evaluation needs from a system under test."""

    def answer(self, question: str) -> RagAnswer: ...

    def answer_many(self, questions: list[str]) -> list[RagAnswer]: ...

    def fingerprint(self) -> str: ...

    def describe(self) -> dict[str, Any]: ...

    def calls(self) -> SystemCalls: ...


def canonical_fingerprint(config: dict[str, Any]) -> str:
    """sha256 of the canonical JSON (sorted keys, no whitespace) of a configuration."""
    text = json.dumps(config, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def check_questions(questions: Sequence[str]) -> list[str]:
    if isinstance(questions, str):
        raise TypeError("answer_many takes a list of questions; for one question call answer()")
    bad = [i for i, q in enumerate(questions) if not isinstance(q, str)]
    if bad:
        raise TypeError(f"questions must be strings; items {bad[:5]} are not")
    return list(questions)


def dig(obj: Any, path: str) -> Any:
    """Follow a dotted path through dicts (and list indices); KeyError names the missing part."""
    for part in path.split("."):
        if isinstance(obj, dict) and part in obj:
            obj = obj[part]
        elif isinstance(obj, list) and part.isdigit() and int(part) < len(obj):
            obj = obj[int(part)]
        else:
            keys = sorted(obj) if isinstance(obj, dict) else type(obj).__name__
            raise KeyError(f"no field {part!r} (of {path!r}) in the reply; available: {keys}")
    return obj


def parse_contexts(raw: Any, text_field: str = "text", id_field: str = "id", source_field: str = "source",
                   score_field: str = "score") -> list[RetrievedContext]:
    """A list of strings or of objects with text/id/source/score fields -> `RetrievedContext`s."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ValueError(f"contexts must be a list of strings or objects, got {type(raw).__name__}")
    out = []
    for i, item in enumerate(raw):
        if isinstance(item, str):
            out.append(RetrievedContext(text=item))
        elif isinstance(item, RetrievedContext):
            out.append(item)
        elif isinstance(item, dict):
            if text_field not in item:
                raise ValueError(f"context {i} has no {text_field!r} field (fields: {sorted(item)})")
            score = item.get(score_field)
            out.append(RetrievedContext(
                text=str(item[text_field]),
                chunk_id=None if item.get(id_field) is None else str(item[id_field]),
                source=None if item.get(source_field) is None else str(item[source_field]),
                score=None if score is None else float(score),
            ))
        else:
            raise ValueError(f"context {i} is a {type(item).__name__}; expected a string or an object")
    return out


def error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


FailureKind = Literal["unreachable", "error", "budget"]


class SystemCalls(BaseModel):
    """How the system under test was called in one run.

    `calls`: requests sent (HTTP: every attempt; a callable: every call; the built-in system: every
    generation); `retries`: attempts after an item's first; `errors` and `timeouts`: attempts that
    failed (a timeout is not counted as an error); `answered` / `failed`: questions. `failures`:
    failed questions by kind: "unreachable" (every attempt failed to connect or timed out),
    "budget" (the LLM budget refused the call), "error" (anything else: an HTTP error status, a reply
    without the answer field, an exception); `reasons`: failed questions by their last reason.
    """

    target: str = ""
    questions: int = 0
    calls: int = 0
    retries: int = 0
    errors: int = 0
    timeouts: int = 0
    answered: int = 0
    failed: int = 0
    failures: dict[str, int] = Field(default_factory=dict)
    reasons: dict[str, int] = Field(default_factory=dict)
    keyword_tests: int = 0  # of `questions`, those the handcrafted keyword tests asked

    def plus(self, other: SystemCalls | None, *, keyword_tests: bool = False) -> SystemCalls:
        """These calls and `other`'s (of the same system) in one count; `keyword_tests`: `other`'s questions
        were the keyword tests', so an outage they alone saw is "could not evaluate" too."""
        if other is None:
            return self
        merged = {key: getattr(self, key) + getattr(other, key)
                  for key in ("questions", "calls", "retries", "errors", "timeouts", "answered", "failed")}
        return SystemCalls(
            target=self.target or other.target, **merged,
            failures=dict(Counter(self.failures) + Counter(other.failures)),
            reasons=dict(Counter(self.reasons) + Counter(other.reasons)),
            keyword_tests=self.keyword_tests + (other.questions if keyword_tests else other.keyword_tests),
        )

    def line(self) -> str:
        """One line, e.g. "28 requests for 20 questions, 5 errors and 4 timeouts retried, 20 answered"."""
        noun = "requests" if self.target.startswith("http") else "calls"
        text = f"{self.calls} {noun} for {self.questions} questions"
        if self.keyword_tests:
            text += f" ({self.keyword_tests} of them keyword tests)"
        trouble = [f"{n} {word}" for n, word in ((self.errors, "errors"), (self.timeouts, "timeouts")) if n]
        if trouble:
            text += f", {' and '.join(trouble)}" + (f" ({self.retries} retries)" if self.retries else "")
        text += f", {self.answered} answered"
        if self.failed:
            top = max(self.reasons.items(), key=lambda kv: kv[1])[0] if self.reasons else "?"
            text += f", {self.failed} failed (most often: {top})"
        return text


class CallLog:
    """Thread-safe counts of a system's calls, turned into `SystemCalls` after a batch."""

    def __init__(self, target: str) -> None:
        self.target = target
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()
        self._failures: Counter[str] = Counter()
        self._reasons: Counter[str] = Counter()

    def count(self, what: Literal["calls", "retries", "errors", "timeouts"], n: int = 1) -> None:
        with self._lock:
            self._counts[what] += n

    def question(self, failure: FailureKind | None = None, reason: str = "") -> None:
        """One question done: answered (no `failure`) or failed of that kind, for `reason`."""
        with self._lock:
            if failure is None:
                self._counts["answered"] += 1
                return
            self._counts["failed"] += 1
            self._failures[failure] += 1
            self._reasons[reason[:120]] += 1

    def snapshot(self) -> SystemCalls:
        with self._lock:
            c = self._counts
            return SystemCalls(target=self.target, questions=c["answered"] + c["failed"], calls=c["calls"],
                               retries=c["retries"], errors=c["errors"], timeouts=c["timeouts"],
                               answered=c["answered"], failed=c["failed"], failures=dict(self._failures),
                               reasons=dict(self._reasons))
