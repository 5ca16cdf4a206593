"""Tool calls that a model wrote as text in its message content instead of the ``tool_calls``
field, in the forms common open models use: ``<tool_call>{...}</tool_call>`` blocks (Qwen,
Hermes), a bare JSON object or list (Llama 3), ``[TOOL_CALLS]`` (Mistral), fenced JSON. A call
is an object with a string ``name`` and ``arguments`` (or ``parameters``), an object or a JSON
string; anything else in the text is left alone.

>>> [c["function"] for c in calls_in_text('<tool_call>{"name": "t", "arguments": {"a": 1}}'
...                                       '</tool_call>', turn=2)]
[{'name': 't', 'arguments': '{"a": 1}'}]
>>> [c["function"]["name"] for c in calls_in_text('<tool_call>{"name": "t", "arguments": {'
...                                               '</tool_call>', turn=1)]
['t']
>>> calls_in_text('I found {"name": "copper"} in the text.', turn=1)
[]
"""

from __future__ import annotations

import json
import re
from typing import Any

_TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
_FENCED = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)
_MISTRAL = "[TOOL_CALLS]"
_NAME = re.compile(r'"name"\s*:\s*"([^"]+)"')


def calls_in_text(content: str | None, *, turn: int) -> list[dict[str, Any]]:
    """Tool calls written in a message's text, as ``tool_calls`` entries with ids of the form
    ``text_<turn>_<n>``; empty when there are none.

    >>> [c["id"] for c in calls_in_text('[{"name": "a", "parameters": {}}, '
    ...                                 '{"name": "b", "arguments": "{}"}]', turn=3)]
    ['text_3_0', 'text_3_1']
    """
    if not content or not content.strip():
        return []
    text = content.strip()
    if "<tool_call>" in text:  # a tagged block is meant as a call even when its JSON is broken
        found = [call for chunk in _TAGGED.findall(text)
                 for call in (_calls_in(chunk) or _broken(chunk))]
        return _entries(found, turn)
    elif _MISTRAL in text:
        candidates = [text.split(_MISTRAL, 1)[1]]
    elif fenced := _FENCED.findall(text):
        candidates = fenced
    else:
        candidates = [text]
    return _entries([call for chunk in candidates for call in _calls_in(chunk)], turn)


def _entries(found: list[tuple[str, str]], turn: int) -> list[dict[str, Any]]:
    return [
        {"id": f"text_{turn}_{i}", "type": "function",
         "function": {"name": name, "arguments": arguments}}
        for i, (name, arguments) in enumerate(found)
    ]


def _calls_in(chunk: str) -> list[tuple[str, str]]:
    try:
        value = json.loads(chunk)
    except ValueError:
        return []
    items = value if isinstance(value, list) else [value]
    calls = [_call(item) for item in items]
    # all or nothing: a list that is not entirely calls is data, not calls
    return [c for c in calls if c is not None] if all(c is not None for c in calls) else []


def _broken(chunk: str) -> list[tuple[str, str]]:
    """A tagged call whose JSON does not parse: its name, and the text as the arguments (which
    then come back to the model as malformed)."""
    match = _NAME.search(chunk)
    return [(match[1], chunk)] if match else []


def _call(item: object) -> tuple[str, str] | None:
    if isinstance(item, dict) and isinstance(item.get("function"), dict):
        return _call(item["function"])  # the {"function": {"name", "arguments"}} shape
    if not isinstance(item, dict) or not isinstance(item.get("name"), str):
        return None
    arguments = item.get("arguments", item.get("parameters"))
    if isinstance(arguments, str):
        return item["name"], arguments
    if isinstance(arguments, dict):
        return item["name"], json.dumps(arguments, ensure_ascii=False)
    return None
