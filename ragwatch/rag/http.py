"""A system under test behind an HTTP endpoint: bounded concurrency, retries, answers in input order."""

from __future__ import annotations

import os
import random
import time
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ragwatch.rag.base import (
    CallLog,
    HttpSettings,
    SystemCalls,
    canonical_fingerprint,
    check_questions,
    dig,
    error_text,
    parse_contexts,
)
from ragwatch.types import RagAnswer

if TYPE_CHECKING:
    import httpx


_RETRY_STATUS = {408, 429, 500, 502, 503, 504}


class Unreachable(RuntimeError):
    """Every attempt for one question failed to connect or timed out: no reply was ever received."""


class HttpRAG:
    """A RAG behind an HTTP endpoint; bounded concurrency, answers in input order.

    Retries with exponential backoff (and jitter, honouring Retry-After) on 408/429/5xx, timeouts and
    connection errors; other 4xx, a reply that is not JSON or lacks the answer field fail the item
    with the reason at once. `calls()` counts every attempt, retry, error and timeout of the last
    `answer_many` (`SystemCalls`).
    """

    def __init__(self, settings: HttpSettings) -> None:
        self.settings = settings
        missing = [env for env in settings.headers_env.values() if not os.environ.get(env)]
        if missing:
            raise ValueError(f"http.headers_env names unset environment variables: {missing}; export them "
                             "before the run")
        self._headers = {"Content-Type": "application/json"}
        self._headers.update({name: os.environ[env] for name, env in settings.headers_env.items()})
        self._log = CallLog(f"http {settings.url}")

    def _post(self, client: httpx.Client, question: str) -> Any:
        """The JSON reply; raises RuntimeError with the reason when the item fails."""
        import httpx

        s = self.settings
        body = {**s.extra_body, s.question_field: question}
        reason, retry_after, replied = "", None, False
        for attempt in range(s.max_retries + 1):
            if attempt:
                time.sleep(self._delay(attempt, retry_after))
                self._log.count("retries")
            retry_after = None
            self._log.count("calls")
            try:
                response = client.post(s.url, json=body, headers=self._headers, timeout=s.timeout_s)
            except httpx.TimeoutException:
                self._log.count("timeouts")
                reason = f"timed out after {s.timeout_s:g} s"
                continue
            except httpx.TransportError as exc:
                self._log.count("errors")
                reason = f"connection failed: {error_text(exc)}"
                continue
            replied = True
            if response.status_code >= 400:
                self._log.count("errors")
            if response.status_code in _RETRY_STATUS:
                reason = f"HTTP {response.status_code}: {response.text[:200]}"
                retry_after = response.headers.get("Retry-After")
                continue
            if response.status_code >= 400:
                raise RuntimeError(f"HTTP {response.status_code} from {s.url}: {response.text[:300]}")
            try:
                return response.json()
            except ValueError as exc:
                self._log.count("errors")
                raise RuntimeError(f"reply is not JSON ({exc}): {response.text[:200]!r}") from exc
        failure = RuntimeError if replied else Unreachable
        raise failure(f"{s.url} failed after {s.max_retries + 1} attempts; last: {reason}")

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
            answer = dig(reply, s.answer_field)
            raw_contexts = None
            if s.contexts_field:
                try:
                    raw_contexts = dig(reply, s.contexts_field)
                except KeyError:
                    raw_contexts = None  # contexts are optional: a system may not report them
            contexts = parse_contexts(raw_contexts, s.context_text_field, s.context_id_field,
                                      s.context_source_field, s.context_score_field)
        except (RuntimeError, KeyError, ValueError, ValidationError) as exc:
            message = exc.args[0] if isinstance(exc, KeyError) else str(exc)
            self._log.question("unreachable" if isinstance(exc, Unreachable) else "error",
                               message.rpartition("; last: ")[2])
            return RagAnswer(question=question, error=f"http: {message}",
                             timings={"total_s": time.perf_counter() - started})
        self._log.question()
        return RagAnswer(question=question, answer="" if answer is None else str(answer), contexts=contexts,
                         timings={"total_s": time.perf_counter() - started})

    def answer(self, question: str) -> RagAnswer:
        return self.answer_many([question])[0]

    def answer_many(self, questions: list[str]) -> list[RagAnswer]:
        questions = check_questions(questions)
        if not questions:
            return []
        import httpx  # with rich and click ~0.3 s: config validation needs none of it

        self._log = CallLog(self._log.target)
        with httpx.Client() as client, ThreadPoolExecutor(self.settings.concurrency) as pool:
            return list(pool.map(lambda q: self._answer(client, q), questions))

    def calls(self) -> SystemCalls:
        """The attempts, retries, errors and timeouts of the last `answer_many`."""
        return self._log.snapshot()

    def describe(self) -> dict[str, Any]:
        config = self.settings.model_dump()
        config["headers_env"] = sorted(config["headers_env"])  # header names only, never values
        return {"kind": "http", **config}

    def fingerprint(self) -> str:
        # timeouts, retries and concurrency change how we call, not what the system answers
        keep = {k: v for k, v in self.describe().items()
                if k not in ("timeout_s", "max_retries", "backoff_s", "concurrency")}
        return canonical_fingerprint(keep)
