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

import hashlib
import importlib
import inspect
import json
import os
import random
import re
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ragwatch.types import RagAnswer, RetrievedContext, SearchHit

if TYPE_CHECKING:
    import httpx

    from ragwatch.embeddings import Embedder
    from ragwatch.index import Index
    from ragwatch.llm.client import LLMClient

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

    model_config = ConfigDict(extra="forbid")

    url: str
    timeout_s: float = 60.0
    max_retries: int = 3
    backoff_s: float = 0.5
    concurrency: int = 4
    question_field: str = "question"
    extra_body: dict[str, Any] = Field(default_factory=dict)
    answer_field: str = "answer"
    contexts_field: str | None = "contexts"
    context_text_field: str = "text"
    context_id_field: str = "id"
    context_source_field: str = "source"
    context_score_field: str = "score"
    headers_env: dict[str, str] = Field(default_factory=dict)

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
    """Which system answers the questions, and how the built-in one retrieves and prompts."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["builtin", "callable", "http"] = "builtin"
    retrieval_mode: RetrievalMode = "hybrid"
    top_k: int = 5
    prompt_template: str = DEFAULT_PROMPT_TEMPLATE
    # ~4 characters per token: 6000 characters keep the prompt near 1.6k tokens, inside small windows
    max_context_chars: int = 6000
    callable: str | None = None
    http: HttpSettings | None = None

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
        return self


@runtime_checkable
class RAGSystem(Protocol):
    """What the evaluation needs from a system under test."""

    def answer(self, question: str) -> RagAnswer: ...

    def answer_many(self, questions: list[str]) -> list[RagAnswer]: ...

    def fingerprint(self) -> str: ...

    def describe(self) -> dict[str, Any]: ...


def canonical_fingerprint(config: dict[str, Any]) -> str:
    """sha256 of the canonical JSON (sorted keys, no whitespace) of a configuration."""
    text = json.dumps(config, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _check_questions(questions: Sequence[str]) -> list[str]:
    if isinstance(questions, str):
        raise TypeError("answer_many takes a list of questions; for one question call answer()")
    bad = [i for i, q in enumerate(questions) if not isinstance(q, str)]
    if bad:
        raise TypeError(f"questions must be strings; items {bad[:5]} are not")
    return list(questions)


# ---------------------------------------------------------------- built-in


def _fence(text: str) -> str:
    # a fence longer than any backtick run inside, so code blocks in a chunk cannot close it
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def format_contexts(hits: Sequence[SearchHit], max_chars: int) -> tuple[str, list[RetrievedContext]]:
    """Numbered, fenced context blocks within `max_chars` of chunk text (the last one may be cut;
    the rest are left out). Returns the prompt text and the contexts actually shown."""
    blocks: list[str] = []
    used: list[RetrievedContext] = []
    budget = max_chars
    for n, hit in enumerate(hits, start=1):
        if budget <= 0:
            break
        text = hit.chunk.text[:budget]
        budget -= len(text)
        fence = _fence(text)
        blocks.append(f"[{n}] source: {hit.chunk.source}\n{fence}\n{text}\n{fence}")
        used.append(RetrievedContext(text=text, chunk_id=hit.chunk.id, source=hit.chunk.source,
                                     score=hit.score))
    return "\n\n".join(blocks), used


def build_prompt(template: str, question: str, context: str) -> str:
    # replace, not str.format: templates may hold braces (JSON examples) and contexts hold code
    return template.replace("{question}", question).replace("{context}", context)


class BuiltinRAG:
    """Retrieve top-k chunks from the index (batched), prompt the generator, answer.

    `retrieval_s` in each answer's timings is the batch's retrieval time divided by its size.
    """

    def __init__(self, index: Index, embedder: Embedder | None, llm: LLMClient,
                 settings: RagSettings | None = None) -> None:
        self.settings = settings or RagSettings()
        if self.settings.retrieval_mode != "bm25" and embedder is None:
            raise ValueError(
                f"retrieval_mode {self.settings.retrieval_mode!r} needs an embedder (the one the index was "
                "built with): pass embedder=get_embedder(...), or use retrieval_mode='bm25'"
            )
        self.index, self.embedder, self.llm = index, embedder, llm

    def retrieve_many(self, questions: list[str], k: int | None = None,
                      mode: RetrievalMode | None = None) -> list[list[SearchHit]]:
        """Top-k hits per question (one batched search), for retrieval-only evaluation."""
        questions = _check_questions(questions)
        if not questions:
            return []
        mode = mode or self.settings.retrieval_mode
        return self.index.search_many(questions, k or self.settings.top_k, mode, self.embedder)

    def answer(self, question: str) -> RagAnswer:
        return self.answer_many([question])[0]

    def answer_many(self, questions: list[str], **overrides: Any) -> list[RagAnswer]:
        """Answers in input order; `overrides` go to `LLMClient.generate_many` (e.g. mock_response)."""
        questions = _check_questions(questions)
        if not questions:
            return []
        started = time.perf_counter()
        rankings = self.retrieve_many(questions)
        retrieval_s = (time.perf_counter() - started) / len(questions)
        prompts, shown = [], []
        for question, hits in zip(questions, rankings, strict=True):
            context, used = format_contexts(hits, self.settings.max_context_chars)
            prompts.append(build_prompt(self.settings.prompt_template, question, context))
            shown.append(used)
        from ragwatch.llm.logprobs import mean_logprob, supports_logprobs

        if supports_logprobs(self.llm.settings):  # answer confidence at no extra call
            overrides.setdefault("logprobs", True)
        generations = self.llm.generate_many(prompts, desc="rag answers", **overrides)
        return [
            RagAnswer(
                question=question,
                answer=gen.text if gen.ok else "",
                contexts=used,
                timings={"retrieval_s": retrieval_s, "generation_s": gen.latency_s},
                error=None if gen.ok else f"generation failed: {gen.error}",
                mean_logprob=mean_logprob(gen) if gen.ok else None,
            )
            for question, used, gen in zip(questions, shown, generations, strict=True)
        ]

    def describe(self) -> dict[str, Any]:
        llm = self.llm.settings
        return {
            "kind": "builtin",
            "retrieval_mode": self.settings.retrieval_mode,
            "top_k": self.settings.top_k,
            "embedding": getattr(self.embedder, "identity", None),
            "index": self.index.fingerprint,
            "generator": {"model": llm.model, "api_base": llm.api_base, "temperature": llm.temperature,
                          "max_tokens": llm.max_tokens, "seed": llm.seed},
            "prompt_template": self.settings.prompt_template,
            "max_context_chars": self.settings.max_context_chars,
        }

    def fingerprint(self) -> str:
        return canonical_fingerprint(self.describe())


# ---------------------------------------------------------------- shared parsing of external replies


def _dig(obj: Any, path: str) -> Any:
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


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


# ---------------------------------------------------------------- callable


def load_callable(target: str) -> Callable[[str], Any]:
    """Import `"package.module:function"` (attributes may be dotted: `"mod:obj.method"`)."""
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"callable must look like 'package.module:function', got {target!r}")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"cannot import module {module_name!r} for callable {target!r}: {exc}. "
                         "Is it installed or on PYTHONPATH?") from exc
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"module {module_name!r} has no attribute {attr!r} (callable {target!r})")
        obj = getattr(obj, part)
    if not callable(obj):
        raise ValueError(f"{target!r} is a {type(obj).__name__}, not a callable")
    return obj


class CallableRAG:
    """Your own RAG in Python: `fn(question) -> RagAnswer | {"answer", "contexts"} | str`.

    Calls run one after another (user code need not be thread-safe). The fingerprint includes a
    hash of the function's source when it can be read, so editing the function marks a new system.
    """

    def __init__(self, target: str | Callable[[str], Any]) -> None:
        if isinstance(target, str):
            self.target, self.fn = target, load_callable(target)
        else:
            self.fn = target
            name = getattr(target, "__qualname__", repr(target))
            self.target = f"{getattr(target, '__module__', '?')}:{name}"

    def _convert(self, question: str, result: Any) -> RagAnswer:
        if isinstance(result, RagAnswer):
            return result if result.question == question else result.model_copy(update={"question": question})
        if isinstance(result, str):
            return RagAnswer(question=question, answer=result)
        if isinstance(result, dict):
            if "answer" not in result:
                raise ValueError(f"the returned dict has no 'answer' key (keys: {sorted(result)})")
            return RagAnswer(question=question, answer=str(result["answer"]),
                             contexts=parse_contexts(result.get("contexts")))
        raise TypeError(f"returned a {type(result).__name__}; return a RagAnswer, a dict with 'answer' "
                        "(and optionally 'contexts'), or a string")

    def answer(self, question: str) -> RagAnswer:
        started = time.perf_counter()
        try:
            answer = self._convert(question, self.fn(question))
        except Exception as exc:  # one broken item must not sink the run
            return RagAnswer(question=question, error=f"callable {self.target} failed: {_error_text(exc)}",
                             timings={"total_s": time.perf_counter() - started})
        timings = {"total_s": time.perf_counter() - started, **answer.timings}
        return answer.model_copy(update={"timings": timings})

    def answer_many(self, questions: list[str]) -> list[RagAnswer]:
        return [self.answer(q) for q in _check_questions(questions)]

    def describe(self) -> dict[str, Any]:
        try:
            source_sha = hashlib.sha256(inspect.getsource(self.fn).encode()).hexdigest()
        except (OSError, TypeError):
            source_sha = None
        return {"kind": "callable", "target": self.target, "source_sha256": source_sha}

    def fingerprint(self) -> str:
        return canonical_fingerprint(self.describe())


# ---------------------------------------------------------------- HTTP

_RETRY_STATUS = {408, 429, 500, 502, 503, 504}


class HttpRAG:
    """A RAG behind an HTTP endpoint; bounded concurrency, answers in input order.

    Retries with exponential backoff (and jitter, honouring Retry-After) on 408/429/5xx, timeouts and
    connection errors; other 4xx, a reply that is not JSON or lacks the answer field fail the item
    with the reason at once.
    """

    def __init__(self, settings: HttpSettings) -> None:
        self.settings = settings
        missing = [env for env in settings.headers_env.values() if not os.environ.get(env)]
        if missing:
            raise ValueError(f"http.headers_env names unset environment variables: {missing}; export them "
                             "before the run")
        self._headers = {"Content-Type": "application/json"}
        self._headers.update({name: os.environ[env] for name, env in settings.headers_env.items()})

    def _post(self, client: httpx.Client, question: str) -> Any:
        """The JSON reply; raises RuntimeError with the reason when the item fails."""
        import httpx

        s = self.settings
        body = {**s.extra_body, s.question_field: question}
        reason, retry_after = "", None
        for attempt in range(s.max_retries + 1):
            if attempt:
                time.sleep(self._delay(attempt, retry_after))
            retry_after = None
            try:
                response = client.post(s.url, json=body, headers=self._headers, timeout=s.timeout_s)
            except httpx.TimeoutException:
                reason = f"timed out after {s.timeout_s:g} s"
                continue
            except httpx.TransportError as exc:
                reason = f"connection failed: {_error_text(exc)}"
                continue
            if response.status_code in _RETRY_STATUS:
                reason = f"HTTP {response.status_code}: {response.text[:200]}"
                retry_after = response.headers.get("Retry-After")
                continue
            if response.status_code >= 400:
                raise RuntimeError(f"HTTP {response.status_code} from {s.url}: {response.text[:300]}")
            try:
                return response.json()
            except ValueError as exc:
                raise RuntimeError(f"reply is not JSON ({exc}): {response.text[:200]!r}") from exc
        raise RuntimeError(f"{s.url} failed after {s.max_retries + 1} attempts; last: {reason}")

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        if retry_after:
            try:
                return min(float(retry_after), 30.0)
            except ValueError:
                pass
        return self.settings.backoff_s * 2 ** (attempt - 1) * (1 + random.random() * 0.25)

    def _answer(self, client: httpx.Client, question: str) -> RagAnswer:
        s = self.settings
        started = time.perf_counter()
        try:
            reply = self._post(client, question)
            answer = _dig(reply, s.answer_field)
            raw_contexts = None
            if s.contexts_field:
                try:
                    raw_contexts = _dig(reply, s.contexts_field)
                except KeyError:
                    raw_contexts = None  # contexts are optional: a system may not report them
            contexts = parse_contexts(raw_contexts, s.context_text_field, s.context_id_field,
                                      s.context_source_field, s.context_score_field)
        except (RuntimeError, KeyError, ValueError, ValidationError) as exc:
            message = exc.args[0] if isinstance(exc, KeyError) else str(exc)
            return RagAnswer(question=question, error=f"http: {message}",
                             timings={"total_s": time.perf_counter() - started})
        return RagAnswer(question=question, answer="" if answer is None else str(answer), contexts=contexts,
                         timings={"total_s": time.perf_counter() - started})

    def answer(self, question: str) -> RagAnswer:
        return self.answer_many([question])[0]

    def answer_many(self, questions: list[str]) -> list[RagAnswer]:
        questions = _check_questions(questions)
        if not questions:
            return []
        import httpx  # with rich and click ~0.3 s: config validation needs none of it

        with httpx.Client() as client, ThreadPoolExecutor(self.settings.concurrency) as pool:
            return list(pool.map(lambda q: self._answer(client, q), questions))

    def describe(self) -> dict[str, Any]:
        config = self.settings.model_dump()
        config["headers_env"] = sorted(config["headers_env"])  # header names only, never values
        return {"kind": "http", **config}

    def fingerprint(self) -> str:
        # timeouts, retries and concurrency change how we call, not what the system answers
        keep = {k: v for k, v in self.describe().items()
                if k not in ("timeout_s", "max_retries", "backoff_s", "concurrency")}
        return canonical_fingerprint(keep)


# ---------------------------------------------------------------- factory


def build_rag(settings: RagSettings | None = None, index: Index | None = None,
              embedder: Embedder | None = None, llm: LLMClient | None = None) -> RAGSystem:
    """The system `settings.kind` names; the built-in one needs the index, the generator LLM and
    (unless retrieval_mode is bm25) the embedder the index was built with."""
    settings = settings or RagSettings()
    if settings.kind == "callable":
        assert settings.callable is not None  # checked by RagSettings
        return CallableRAG(settings.callable)
    if settings.kind == "http":
        assert settings.http is not None
        return HttpRAG(settings.http)
    if index is None or llm is None:
        raise ValueError("the built-in RAG needs index= (Index.build/Index.load) and llm= (LLMClient); "
                         "or set kind: callable / http to evaluate your own system")
    return BuiltinRAG(index, embedder, llm, settings)
