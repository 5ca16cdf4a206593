"""Fields of what OpenAI-compatible servers answer, read the same way whichever server sent
them: the context window in a model listing, tool calls in their varying shapes."""

from __future__ import annotations

import json
from typing import Any


def window_from(data: object, model: str) -> int | None:
    """A context window in a ``/models`` listing (the entry of ``model``, else the only one) or a
    llama.cpp ``/props`` answer.

    >>> window_from({"data": [{"id": "m", "meta": {"n_ctx": 8192, "n_ctx_train": 131072}}]}, "x")
    8192
    >>> window_from({"data": [{"id": "a", "max_model_len": 4096}, {"id": "b"}]}, "a")
    4096
    >>> window_from({"default_generation_settings": {"n_ctx": 2048}}, "m")
    2048
    """
    if not isinstance(data, dict):
        return None
    entries = [e for e in data.get("data") or [] if isinstance(e, dict)]
    mine = [e for e in entries if e.get("id") == model] or (entries if len(entries) == 1 else [])
    for entry in [*mine, data.get("default_generation_settings"), data]:
        if not isinstance(entry, dict):
            continue
        meta = entry.get("meta") if isinstance(entry.get("meta"), dict) else {}
        for value in (meta.get("n_ctx"), entry.get("max_model_len"), entry.get("n_ctx"),
                      entry.get("context_length"), entry.get("context_window")):
            if isinstance(value, int) and value > 0:
                return value
    return None


def normal_call(call: dict[str, Any], index: int) -> dict[str, Any]:
    """A tool call with a string id and its arguments as a JSON string (some servers send an
    object, or no id).

    >>> normal_call({"function": {"name": "t", "arguments": {"a": 1}}}, 0)["function"]
    {'name': 't', 'arguments': '{"a": 1}'}
    """
    function = dict(call.get("function") or {})
    arguments = function.get("arguments")
    if not isinstance(arguments, str):
        function["arguments"] = "" if arguments is None else json.dumps(arguments,
                                                                         ensure_ascii=False)
    function["name"] = str(function.get("name") or "")
    return {"id": str(call.get("id") or f"call_{index}"), "type": "function",
            "function": function}
