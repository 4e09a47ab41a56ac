"""Structured output: the `response_format` to ask for, and parsing/validating a reply.

Example:
    >>> class Verdict(BaseModel):
    ...     verdict: Literal["yes", "no"]
    >>> parse_reply('```json\\n{"verdict": "yes"}\\n```', Verdict)
    (Verdict(verdict='yes'), None)
"""

from __future__ import annotations

import copy
import functools
import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from ragwatch.llm.models import is_local

Mode = Literal["grammar", "json_schema", "json_object"]

_FENCE = re.compile(r"^\s*```[A-Za-z0-9_-]*\s*\n?(.*?)\n?\s*```\s*$", re.DOTALL)


@functools.lru_cache(maxsize=256)
def _schema_json(schema: type[BaseModel]) -> str:
    return json.dumps(schema.model_json_schema())


def schema_json(schema: type[BaseModel]) -> dict[str, Any]:
    """The schema's JSON schema (a fresh copy; building one costs ~1 ms, so it is memoized)."""
    return json.loads(_schema_json(schema))


@functools.lru_cache(maxsize=64)
def output_mode(model: str) -> Mode:
    """How a provider enforces a schema: llama.cpp grammar, API json_schema, or bare JSON mode."""
    if is_local(model):
        return "grammar"
    try:
        import litellm

        if litellm.supports_response_schema(model=model):
            return "json_schema"
    except Exception:  # unknown model strings make litellm raise; JSON mode is the safe fallback
        pass
    return "json_object"


def response_format(schema: type[BaseModel], mode: Mode) -> dict[str, Any]:
    """The `response_format` argument for litellm in the given mode."""
    if mode == "grammar":
        # llama-cpp-python reads only type "json_object" and compiles `schema` into a grammar
        return {"type": "json_object", "schema": schema_json(schema)}
    if mode == "json_schema":
        return {
            "type": "json_schema",
            "json_schema": {
                "name": schema.__name__,
                "schema": strict_schema(schema_json(schema)),
                "strict": True,
            },
        }
    return {"type": "json_object"}


def strict_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Make a pydantic JSON schema acceptable to OpenAI strict mode: closed objects, all keys required."""
    out = copy.deepcopy(schema)

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            node.pop("default", None)
            if node.get("type") == "object" and "properties" in node:
                node["additionalProperties"] = False
                node["required"] = list(node["properties"])
            for value in node.values():
                visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)

    visit(out)
    return out


def schema_hint(schema: type[BaseModel]) -> str:
    """An instruction for providers that cannot enforce the schema themselves (JSON mode)."""
    return "Reply with only a JSON object (no prose, no code fences) that matches this JSON schema:\n" + json.dumps(
        schema_json(schema), separators=(",", ":")
    )


def strip_fences(text: str) -> str:
    match = _FENCE.match(text)
    return match.group(1).strip() if match else text.strip()


def parse_reply(text: str, schema: type[BaseModel]) -> tuple[BaseModel | None, str | None]:
    """(validated instance, None) or (None, a short reason the reply does not fit the schema)."""
    body = strip_fences(text)
    if not body:
        return None, "the reply is empty"
    try:
        return schema.model_validate_json(body), None
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '<root>'}: {err['msg']}" for err in exc.errors()[:5]
        )
        return None, f"the reply does not match the schema ({problems})"


def repair_messages(reply: str, problem: str) -> list[dict[str, str]]:
    """The turns appended to the conversation to re-ask after an invalid reply."""
    return [
        {"role": "assistant", "content": reply},
        {
            "role": "user",
            "content": f"That reply is invalid: {problem}. Answer again with only the corrected JSON object.",
        },
    ]
