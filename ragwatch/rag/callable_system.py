"""A system under test of your own in Python: `module:function` called once per question."""

from __future__ import annotations

import hashlib
import importlib
import inspect
import time
from collections.abc import Callable
from typing import Any

from ragwatch.rag.base import (
    CallLog,
    FailureKind,
    SystemCalls,
    canonical_fingerprint,
    check_questions,
    error_text,
    parse_contexts,
)
from ragwatch.types import RagAnswer


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
    `calls()` counts the calls and exceptions of the last `answer_many`.
    """

    def __init__(self, target: str | Callable[[str], Any]) -> None:
        if isinstance(target, str):
            self.target, self.fn = target, load_callable(target)
        else:
            self.fn = target
            name = getattr(target, "__qualname__", repr(target))
            self.target = f"{getattr(target, '__module__', '?')}:{name}"
        self._log = CallLog(f"callable {self.target}")

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
        self._log.count("calls")
        try:
            answer = self._convert(question, self.fn(question))
        except Exception as exc:  # one broken item must not sink the run
            self._log.count("errors")
            self._log.question(_failure_kind(exc), error_text(exc))
            return RagAnswer(question=question, error=f"callable {self.target} failed: {error_text(exc)}",
                             timings={"total_s": time.perf_counter() - started})
        timings = {"total_s": time.perf_counter() - started, **answer.timings}
        self._log.question()
        return answer.model_copy(update={"timings": timings})

    def answer_many(self, questions: list[str]) -> list[RagAnswer]:
        questions = check_questions(questions)
        self._log = CallLog(self._log.target)
        return [self.answer(q) for q in questions]

    def calls(self) -> SystemCalls:
        """The calls and exceptions of the last `answer_many`."""
        return self._log.snapshot()

    def describe(self) -> dict[str, Any]:
        try:
            source_sha = hashlib.sha256(inspect.getsource(self.fn).encode()).hexdigest()
        except (OSError, TypeError):
            source_sha = None
        return {"kind": "callable", "target": self.target, "source_sha256": source_sha}

    def fingerprint(self) -> str:
        return canonical_fingerprint(self.describe())


def _failure_kind(exc: Exception) -> FailureKind:
    """A connection or timeout error inside the user's function (their client could not reach their
    service) is "unreachable"; any other exception is the system's own error."""
    name = type(exc).__name__
    if isinstance(exc, ConnectionError | TimeoutError) or "Connect" in name or "Timeout" in name:
        return "unreachable"
    return "error"
