"""A logged feedback value -> `Feedback`: thumbs (up/down, true/false, 1/0, +1/-1, emoji) or a rating
with its scale (`{"rating": 4, "scale": [1, 5]}`, or a number with the configured scale).

Example:
    >>> parse_feedback("thumbs_up").value
    1.0
    >>> parse_feedback({"rating": 4, "scale": [1, 5]}).share
    0.75
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ragwatch.logsources.records import Feedback

_UP = {"up", "thumbs_up", "thumbsup", "+1", "👍", "positive", "yes", "true", "good", "like"}
_DOWN = {"down", "thumbs_down", "thumbsdown", "-1", "👎", "negative", "no", "false", "bad", "dislike"}


def parse_feedback(value: Any, scale: Sequence[float] | None = None) -> Feedback | None:
    """None for no feedback; ValueError saying what is accepted for a value that is not feedback."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, str) and value.strip()[:1] in "{[":
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ValueError(f"feedback {value!r} looks like JSON but is not ({exc.msg})") from exc
    if isinstance(value, dict):
        return _from_object(value, scale)
    if isinstance(value, bool):
        return Feedback(kind="thumbs", value=float(value))
    if isinstance(value, str):
        word = value.strip().lower()
        if word in _UP:
            return Feedback(kind="thumbs", value=1.0)
        if word in _DOWN:
            return Feedback(kind="thumbs", value=0.0)
        try:
            value = float(word)
        except ValueError:
            raise ValueError(f"feedback {value!r} is neither thumbs (up/down, true/false, 1/0) nor a number "
                             "(a rating, with its scale)") from None
    if isinstance(value, (int, float)):
        if scale is not None:
            return Feedback(kind="rating", value=float(value), scale=_scale(scale))
        if value in (1, 0, -1):
            return Feedback(kind="thumbs", value=1.0 if value == 1 else 0.0)
        raise ValueError(f"feedback {value} is a rating without a scale: log {{\"rating\": {value}, \"scale\": "
                         "[1, 5]}} or set the log's feedback_scale")
    raise ValueError(f"feedback of type {type(value).__name__} is not understood")


def _from_object(value: dict[str, Any], scale: Sequence[float] | None) -> Feedback:
    if "thumbs" in value:
        thumbs = parse_feedback(value["thumbs"])
        if thumbs is None or thumbs.kind != "thumbs":
            raise ValueError(f"feedback thumbs {value['thumbs']!r} is not up/down")
        return thumbs
    number = value.get("rating", value.get("value", value.get("score")))
    if number is None:
        raise ValueError(f"feedback object needs 'thumbs' or 'rating' (with 'scale'); got keys {sorted(value)}")
    given = value.get("scale", scale)
    if given is None:
        return parse_feedback(number)  # type: ignore[return-value]  # 1/0/-1 or up/down without a scale
    return Feedback(kind="rating", value=float(number), scale=_scale(given))


def _scale(scale: Any) -> tuple[float, float]:
    if isinstance(scale, str):
        scale = json.loads(scale)
    if not isinstance(scale, (list, tuple)) or len(scale) != 2:
        raise ValueError(f"a rating scale is [low, high], got {scale!r}")
    return float(scale[0]), float(scale[1])
