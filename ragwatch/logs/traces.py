"""What the two trace readers (OpenInference spans, Langfuse traces) share: loading a JSON or JSONL
export, flattening nested attributes to dotted keys, and reading a question or an answer out of an
input/output value that may be a string, a JSON string, an object or a chat message list."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ragwatch.logs.records import LogReadResult
from ragwatch.rows import open_text, read_rows

QUESTION_KEYS = ("question", "query", "query_str", "input", "user_input", "text", "content")
ANSWER_KEYS = ("answer", "output", "response", "result", "text", "content", "completion")


def load_objects(path: Path, result: LogReadResult, list_keys: tuple[str, ...]) -> list[tuple[str, dict[str, Any]]]:
    """The objects of a JSON file (one object, a list, or a list under one of `list_keys`) or of a JSONL
    file (one per line, read by `read_rows`), each with where it was read; what is not an object becomes
    a malformed bad row."""
    with open_text(path) as handle:
        text = handle.read()
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        data = None
    items: Iterable[tuple[str, dict[str, Any] | str]]
    if data is None:  # JSONL: one object per line
        items = ((f"line {number}", row) for number, row in read_rows(path, csv_format=False))
    else:
        if isinstance(data, dict):
            key = next((k for k in list_keys if isinstance(data.get(k), list)), None)
            data = data[key] if key else [data]
        if not isinstance(data, list):
            raise ValueError(f"{path}: expected a JSON object, a list of objects or JSONL")
        items = ((f"item {i}", obj if isinstance(obj, dict) else f"expected a JSON object, got {type(obj).__name__}")
                 for i, obj in enumerate(data))
    out = []
    for where, obj in items:
        if isinstance(obj, str):  # the reason it is not an object
            result.reject(where, obj)
        else:
            out.append((where, obj))
    return out


def flatten(obj: Any, prefix: str = "", out: dict[str, Any] | None = None) -> dict[str, Any]:
    """Nested objects and lists -> dotted keys (`{"a": {"b": [x]}}` -> `{"a.b.0": x}`); a key that is
    already dotted stays as it is, so flat and nested exports read the same."""
    out = {} if out is None else out
    if isinstance(obj, dict):
        for key, value in obj.items():
            flatten(value, f"{prefix}.{key}" if prefix else str(key), out)
    elif isinstance(obj, list) and obj and all(isinstance(v, dict) for v in obj):
        for i, value in enumerate(obj):
            flatten(value, f"{prefix}.{i}", out)
    else:
        out[prefix] = obj
    return out


def maybe_json(value: Any) -> Any:
    if isinstance(value, str) and value.strip()[:1] in "{[":
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def text_of(value: Any, keys: tuple[str, ...]) -> str | None:
    """A question or an answer out of an input/output value: the string itself, the first of `keys`
    in an object, or the last message's content in a chat message list."""
    value = maybe_json(value)
    if value is None:
        return None
    if isinstance(value, str):
        return value if value.strip() else None
    if isinstance(value, list) and value:
        last = value[-1]
        if isinstance(last, dict):
            return text_of(last.get("content", last.get("message")), keys)
        return text_of(last, keys)
    if isinstance(value, dict):
        for key in keys:
            if key in value:
                return text_of(value[key], keys)
        if "messages" in value:
            return text_of(value["messages"], keys)
        if "choices" in value:
            return text_of(value["choices"], keys)
    return None
