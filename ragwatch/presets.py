"""A config block with defaults of its own role: what a block gets when a file leaves it out, and
what a block a file sets only in part is filled with.

`LLMSettings` is one model for every role, but the judge is a different model from the generator
and each role has its own reply bound: `preset(LLMSettings, model=JUDGE_MODEL, max_tokens=384)` is
the judge's block. A file that writes `llm: {model: gpt-4o-mini}` keeps `max_tokens: 384`; a key the
file sets always wins.

Example:
    >>> from pydantic import BaseModel
    >>> class Inner(BaseModel):
    ...     a: int = 1
    ...     b: int = 2
    >>> class Outer(BaseModel):
    ...     inner: preset(Inner, b=5)  # type: ignore[valid-type]
    >>> Outer().inner.b, Outer(inner={"a": 3}).inner.b, Outer(inner={"b": 7}).inner.b
    (5, 5, 7)
"""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, BeforeValidator, Field

M = TypeVar("M", bound=BaseModel)


def preset(cls: type[M], /, **values: Any) -> Any:
    """The annotated type of a `cls` field whose defaults are `values` (validated once, here)."""
    cls(**values)  # a wrong preset fails at import, not in a user's run

    def fill(data: Any) -> Any:
        return {**values, **data} if isinstance(data, dict) else data

    return Annotated[cls, BeforeValidator(fill), Field(default_factory=lambda: cls(**values))]
