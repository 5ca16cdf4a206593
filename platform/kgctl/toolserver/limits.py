"""Input limits of every tool, checked on the raw arguments before any work is done.

A refusal is an envelope that names the offending argument and its size, never echoes it.

>>> limits = Limits(max_text=10)
>>> check_arguments({"name": "benzene", "tags": ["a", "b"]}, limits) is None
True
>>> env = check_arguments({"filters": [{"label": "x" * 50}]}, limits)
>>> env.code, env.field, env.value
('too_large', 'filters[0].label', 50)
>>> check_arguments({"ids": list(range(300))}, Limits()).field
'ids'
>>> check_arguments({"a": "y" * 9_000, "b": "z" * 9_000}, Limits(max_call_bytes=16_000,
...                                                                 max_text=10_000)).field
'arguments'
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict

from kgctl.feedback import Envelope

MAX_CALL_BYTES = 64_000  # JSON size of one call's arguments
MAX_TEXT = 4_000  # characters in one string (a key or a value)
MAX_ITEMS = 200  # items of one list, or keys of one object
MAX_DEPTH = 8  # nesting of lists and objects
_HINT = "shorten it, or split the content over several calls"


class Limits(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    max_call_bytes: int = MAX_CALL_BYTES
    max_text: int = MAX_TEXT
    max_items: int = MAX_ITEMS
    max_depth: int = MAX_DEPTH


def check_arguments(arguments: dict[str, Any], limits: Limits) -> Envelope | None:
    """The first limit the arguments break, as an envelope; None when they are within all."""
    stack: list[tuple[str, Any, int]] = [("", arguments, 0)]
    while stack:
        path, value, depth = stack.pop()
        if isinstance(value, str) and len(value) > limits.max_text:
            return _too_large(path, len(value), f"text of {len(value)} characters; at most "
                                                f"{limits.max_text}")
        if not isinstance(value, dict | list):
            continue
        if depth >= limits.max_depth:
            return _too_large(path or "arguments", depth, f"nested deeper than "
                                                         f"{limits.max_depth} levels")
        if len(value) > limits.max_items:
            return _too_large(path or "arguments", len(value), f"{len(value)} items; at most "
                                                              f"{limits.max_items}")
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in items:
            if isinstance(key, str) and len(key) > limits.max_text:
                return _too_large(path or "arguments", len(key), "argument name too long")
            child = f"{path}[{key}]" if isinstance(value, list) else \
                (f"{path}.{key}" if path else str(key))
            stack.append((child, item, depth + 1))
    size = len(json.dumps(arguments, ensure_ascii=False, default=str).encode())
    if size > limits.max_call_bytes:
        return _too_large("arguments", size, f"call of {size} bytes; at most "
                                             f"{limits.max_call_bytes}")
    return None


def _too_large(field: str, size: int, message: str) -> Envelope:
    return Envelope(code="too_large", field=field, value=size, message=message, hint=_HINT)
