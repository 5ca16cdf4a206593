"""Every tool of the three MCP servers, through a real client session: annotations, server
identity, prompts and resources (real ones or none advertised), and one error shape (the
feedback envelope) for a type error, an unknown tool, an unknown argument and a 1 MB
argument."""

from __future__ import annotations

import json
import time
from typing import Any

import anyio
import pytest
from mcp import Client

from kgctl import __version__
from kgctl.chemistry.server import build_server as chemistry_server
from kgctl.chemistry.workers import Pool
from kgctl.compiler.plan import compile_plan
from kgctl.grounding.index import LabelIndex
from kgctl.grounding.matcher import Matcher
from kgctl.grounding.mcp_server import build_server as grounding_server
from kgctl.grounding.spec import Thresholds
from kgctl.instantiation.server import build_server as instantiation_server
from kgctl.ontology import default_ir
from kgctl.retrieval.engine import QueryEngine
from kgctl.retrieval.server import build_server as retrieval_server
from kgctl.store import EmbeddedStore

ENVELOPE_KEYS = {"status", "code", "field", "value", "message", "allowed", "hint", "retryable"}
MEGABYTE = "x" * 1_000_000
REFUSE_WITHIN_S = 10.0  # far below the minute fuzzy matching took; the figure: bench_mcp.py
THRESHOLDS = Thresholds(fuzzy_score=90, margin=3, candidates=5)
SIMPLE_TYPES = {"string", "integer", "number", "boolean", "array"}


def _servers() -> dict[str, Any]:
    ir = default_ir()
    index = LabelIndex.build([("ex:water", "label:0", "water"), ("ex:water", "cas", "7732-18-5"),
                              ("ex:ethanol", "label:0", "ethanol")])
    return {
        "kgctl-instantiation": instantiation_server(ir, EmbeddedStore(), paper_id="p1"),
        "kgctl-query": retrieval_server(QueryEngine(EmbeddedStore(), ir)),
        "kgctl-grounding": grounding_server(Matcher(index, THRESHOLDS)),
        # no call reaches a worker here: every call of this test is refused before the tool runs
        "kgctl-chemistry": chemistry_server(Pool(size=1)),
    }


def _envelope(result: Any) -> dict[str, Any]:
    assert result.is_error
    payload = json.loads(result.content[0].text)
    assert result.structured_content in (None, payload)  # none where an output schema is
    assert ENVELOPE_KEYS <= set(payload) and payload["status"] == "rejected", payload
    return payload


def _simple_properties(tool: Any) -> list[str]:
    """Arguments whose schema admits no JSON object."""
    found = []
    for name, schema in tool.input_schema.get("properties", {}).items():
        types = {schema.get("type")} | {s.get("type") for s in schema.get("anyOf", ())}
        if types & SIMPLE_TYPES and "object" not in types:
            found.append(name)
    return found


def _has(payload: dict[str, Any], codes: tuple[str, ...], field: str) -> bool:
    """The envelope, or one of its findings (instantiation reports all), names the problem."""
    return any(f["code"] in codes and f["field"] == field
               for f in (payload, *payload.get("findings", ())))


async def _check_guides(client: Client) -> None:
    steps = [step.id for step in compile_plan(default_ir()).steps]
    prompts = (await client.list_prompts()).prompts
    assert [p.name for p in prompts] == steps and len(steps) >= 3
    for prompt in prompts:
        text = (await client.get_prompt(prompt.name)).messages[-1].content.text
        assert text.startswith("Plan step: ") and prompt.title in text
    resources = (await client.list_resources()).resources
    assert [str(r.uri) for r in resources] == ["kgctl://ontology/summary"]
    summary = (await client.read_resource(resources[0].uri)).contents[0].text
    assert summary.startswith("ontologies: ontosynthesis.ttl")


async def _check_server(name: str, server: Any) -> dict[str, int]:
    counts = {"tools": 0, "type_errors": 0, "unknown_arguments": 0, "too_large": 0}
    async with Client(server) as client:
        info = client.session.discover_result or client.session.initialize_result
        assert client.session.server_info.version == __version__
        capabilities = info.capabilities
        if name == "kgctl-instantiation":  # the plan's step prompts, the ontology summary
            await _check_guides(client)
        else:  # nothing to offer: nothing advertised
            assert capabilities.prompts is None and capabilities.resources is None
        tools = (await client.list_tools()).tools
        for tool in tools:
            counts["tools"] += 1
            hints = tool.annotations
            assert hints is not None and hints.read_only_hint is not None, tool.name
            assert hints.destructive_hint is not None, tool.name
            if tool.name == "delete_entity" or tool.name.startswith("update_"):
                assert hints.destructive_hint and not hints.read_only_hint, tool.name
            if hints.read_only_hint:
                assert not hints.destructive_hint, tool.name
            unknown = _envelope(await client.call_tool(tool.name, {"no_such_argument": 1}))
            assert _has(unknown, ("unknown_argument",), "no_such_argument"), (tool.name, unknown)
            counts["unknown_arguments"] += 1
            started = time.perf_counter()
            big = _envelope(await client.call_tool(tool.name, {"label": MEGABYTE}))
            assert time.perf_counter() - started < REFUSE_WITHIN_S, tool.name
            assert big["code"] == "too_large" and big["value"] == len(MEGABYTE), (tool.name, big)
            assert len(json.dumps(big)) < 2_000  # the refused text is not echoed
            counts["too_large"] += 1
            props = _simple_properties(tool)
            if props:  # an object for every argument that takes none
                wrong = _envelope(await client.call_tool(tool.name, {
                    prop: {"wrong": 1} for prop in props}))
                assert any(_has(wrong, ("datatype", "enum_value"), p) for p in props), \
                    (tool.name, wrong)
                counts["type_errors"] += 1
        missing = _envelope(await client.call_tool("no_such_tool", {}))
        assert missing["code"] == "unknown_tool" and missing["retryable"] is False
        assert set(missing["allowed"]) == {t.name for t in tools}
    return counts


def test_every_tool_of_every_server_has_annotations_and_one_error_shape():
    counts = {name: anyio.run(_check_server, name, server)
              for name, server in _servers().items()}
    assert counts["kgctl-instantiation"]["tools"] >= 40
    assert counts["kgctl-query"]["tools"] == 21 and counts["kgctl-grounding"]["tools"] == 3
    assert counts["kgctl-chemistry"]["tools"] == 4
    for name, seen in counts.items():
        assert seen["unknown_arguments"] == seen["too_large"] == seen["tools"], name
        assert seen["type_errors"] >= seen["tools"] - 3, (name, seen)  # tools without arguments


@pytest.mark.parametrize("arguments, code", [
    ({"label": "water", "k": "five"}, "datatype"),
    ({"label": "water", "k": 1, "class_name": ["a"]}, "datatype"),
    ({}, "required_missing"),
])
def test_sdk_type_errors_become_envelopes_without_urls(arguments, code):
    server = _servers()["kgctl-query"]

    async def main() -> dict[str, Any]:
        async with Client(server) as client:
            return _envelope(await client.call_tool("find_entities", arguments))

    payload = anyio.run(main)
    assert payload["code"] == code and "https://" not in payload["message"]
