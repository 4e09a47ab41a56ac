"""What the two trace readers (OpenInference spans, Langfuse traces) share: loading a JSON or JSONL
export, flattening nested attributes to dotted keys, and reading a question or an answer out of an
input/output value that may be a string, a JSON string, an object or a chat message list."""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ragwatch.logsources.records import LogReadResult
from ragwatch.rows import json_object, open_bytes, text_lines

QUESTION_KEYS = ("question", "query", "query_str", "input", "user_input", "text", "content")
ANSWER_KEYS = ("answer", "output", "response", "result", "text", "content", "completion")


Loaded = tuple[str, dict[str, Any], str | None]  # where, the object, why it is unusable (bytes not UTF-8) or None


def load_objects(path: Path, result: LogReadResult, list_keys: tuple[str, ...]) -> list[Loaded]:
    """The objects of a JSON file (one object, a list, or a list under one of `list_keys`) or of a JSONL
    file (one per line), each with where it was read; what is not an object becomes a malformed bad row.
    An object holding bytes that are not UTF-8 comes back with that reason, so the reader can refuse the
    whole trace it belongs to (and only that one). Sets `result.found` to the shape the file had."""
    try:
        with open_bytes(path) as handle:
            text: str | None = handle.read().decode("utf-8-sig", errors="surrogateescape")
    except (EOFError, gzip.BadGzipFile, zlib.error):
        text = None  # a cut gzip file: read line by line, keeping the lines before the cut
    data = None
    if text is not None:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            if text.lstrip().startswith("["):  # a JSON list (JSONL lines are objects) that does not parse
                result.reject("the file", f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); "
                                          "a JSON list must parse as a whole (or write JSONL: one object per line)")
                result.found = "a JSON list that does not parse"
                return []
    items: Iterable[tuple[str, dict[str, Any] | str, str | None]]
    if data is None:  # JSONL: one object per line, each decoded on its own
        items = ((f"line {number}", json_object(line) if line.strip() else "", error)
                 for number, line, error in text_lines(path) if line.strip() or error)
    else:
        if isinstance(data, dict):
            key = next((k for k in list_keys if isinstance(data.get(k), list)), None)
            data = data[key] if key else [data]
        if not isinstance(data, list):
            raise ValueError(f"{path}: expected a JSON object, a list of objects or JSONL, "
                             f"found a JSON {type(data).__name__}")
        items = ((f"item {i}", obj if isinstance(obj, dict) else f"expected a JSON object, got {type(obj).__name__}",
                  _undecodable(obj)) for i, obj in enumerate(data))
    out: list[Loaded] = []
    for where, obj, error in items:
        if isinstance(obj, str):  # the reason it is not an object (bad bytes first: they are the cause)
            result.reject(where, error or obj)
        else:
            out.append((where, obj, error))
    result.found = _found(out, text)
    return out


def _undecodable(value: Any, where: str = "") -> str | None:
    """Where an object holds bytes that were not UTF-8 (decoded as lone surrogates), or None."""
    if isinstance(value, str):
        byte = next((ord(ch) - 0xDC00 for ch in value if "\udc80" <= ch <= "\udcff"), None)
        return None if byte is None else (f"undecodable bytes: byte 0x{byte:02x} in {where or 'a value'} is not UTF-8 "
                                          "(save the file as UTF-8)")
    if isinstance(value, dict):
        pairs: Iterable[tuple[str, Any]] = value.items()
    elif isinstance(value, list):
        pairs = ((str(i), v) for i, v in enumerate(value))
    else:
        return None
    for key, item in pairs:
        if found := _undecodable(item, f"{where}.{key}" if where else key):
            return found
    return None


def _found(objects: list[Loaded], text: str | None) -> str:
    if objects:
        return f"objects with fields {', '.join(map(repr, list(objects[0][1])[:12]))} (the first, {objects[0][0]})"
    if text is None or text.strip():
        return "no JSON object"
    return "only blank lines" if text else "0 bytes"


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
