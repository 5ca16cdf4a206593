"""End to end: an OpenAI-compatible server (scripted, on loopback) drives the retrieval tools
through the real ``openai`` client and a real MCP client session."""

from __future__ import annotations

import json

import anyio
from mcp import Client
from openai import AsyncOpenAI
from retrieval_helpers import ScriptedChatServer, mop30_engine, reference

from kgctl.retrieval.server import TOOL_NAMES, build_server

MAX_TURNS = 20


def last_tool_result(messages) -> dict:
    return json.loads([m for m in messages if m["role"] == "tool"][-1]["content"])


def qid(messages) -> str:
    for m in reversed([m for m in messages if m["role"] == "tool"]):
        data = json.loads(m["content"])
        if "query_id" in data:
            return data["query_id"]
    raise AssertionError("no query container yet")


async def agent_loop(chat_url: str, server, question: str) -> tuple[str, list[dict]]:
    llm = AsyncOpenAI(base_url=chat_url, api_key="not-needed", max_retries=0)
    async with Client(server, mode="legacy") as mcp:
        listed = await mcp.list_tools()
        tools = [{"type": "function", "function": {"name": t.name, "description": t.description,
                                                   "parameters": t.input_schema}}
                 for t in listed.tools]
        assert {t.name for t in listed.tools} == set(TOOL_NAMES)
        messages: list[dict] = [{"role": "user", "content": question}]
        results: list[dict] = []
        for _ in range(MAX_TURNS):
            reply = await llm.chat.completions.create(model="scripted", messages=messages,
                                                      tools=tools)
            msg = reply.choices[0].message
            if not msg.tool_calls:
                return msg.content, results
            messages.append(msg.model_dump(exclude_none=True))
            for call in msg.tool_calls:
                result = await mcp.call_tool(call.function.name,
                                             json.loads(call.function.arguments))
                results.append({"tool": call.function.name, "is_error": result.is_error,
                                "data": result.structured_content})
                messages.append({"role": "tool", "tool_call_id": call.id,
                                 "content": result.content[0].text})
    raise AssertionError("agent did not finish")


PREFIXES = """PREFIX ontosyn: <https://www.theworldavatar.com/kg/OntoSyn/>
PREFIX om-2: <http://www.ontology-of-units-of-measure.org/resource/om-2/>
PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
"""


def test_agent_answers_questions_through_mcp():
    engine = mop30_engine()
    server = build_server(engine)
    turns = [
        # Q1: which chemicals are used in the synthesis of VMOP-1?
        lambda m: [("find_entities", {"label": "synthesis 1: VMOP-1",
                                      "class_name": "ontosyn:ChemicalSynthesis"})],
        lambda m: [("new_query", {"template": "chemical_input"})],
        lambda m: [("filter_by_entity", {"query_id": qid(m), "variable": "synthesis",
                                         "entities": [json.loads(next(
                                             x["content"] for x in m if x["role"] == "tool"
                                         ))["candidates"][0]["value"]]})],
        lambda m: [("select", {"query_id": qid(m), "variables": ["name"]})],
        lambda m: [("execute_query", {"query_id": qid(m)})],
        lambda m: "VOSO4, terephthalic acid, DMF and methanol",
    ]
    turns2 = [
        # Q2: heated above 100 °C; first a wrong property (rejected), then the fix
        lambda m: [("new_query", {"template": "step"})],
        lambda m: [("filter_by_quantity", {"query_id": qid(m), "variable": "step",
                                           "property": "ontosyn:hasTemperature",
                                           "unit": "°C", "minimum": 100})],
        lambda m: [("filter_by_quantity", {"query_id": qid(m), "variable": "step",
                                           "property": next(
                                               a for a in last_tool_result(m)["allowed"]
                                               if a.endswith("hasTargetTemperature")),
                                           "unit": "°C", "minimum": 100})],
        lambda m: [("add_triple", {"query_id": qid(m), "subject": "synthesis",
                                   "property": "rdfs:label", "object": "syn_label"})],
        lambda m: [("select", {"query_id": qid(m), "variables": ["syn_label"]})],
        lambda m: [("execute_query", {"query_id": qid(m)})],
        lambda m: "the syntheses listed",
    ]

    async def main():
        with ScriptedChatServer(turns) as chat:
            answer, results = await agent_loop(chat.url, server, "Chemicals in VMOP-1?")
            assert len(chat.requests) == 6 and chat.requests[0]["tools"]
        assert answer.startswith("VOSO4")
        rows = results[-1]["data"]["rows"]
        chemicals = reference(PREFIXES + 'SELECT DISTINCT ?n WHERE { ?s rdfs:label '
                              '"synthesis 1: VMOP-1" ; ontosyn:hasChemicalInput/rdfs:label ?n }')
        assert chemicals and sorted({(r[0],) for r in rows}, key=str) == chemicals
        with ScriptedChatServer(turns2) as chat:
            _, results = await agent_loop(chat.url, server, "Heated above 100 °C?")
        rejected = results[1]
        assert rejected["is_error"] and rejected["data"]["code"] == "unknown_property"
        assert rejected["data"]["retryable"] and rejected["data"]["sparql"]
        assert not results[2]["is_error"]
        hot = reference(PREFIXES + """SELECT DISTINCT ?l WHERE {
          ?s rdfs:label ?l ; ontosyn:hasSynthesisStep/ontosyn:hasTargetTemperature ?t .
          ?t om-2:hasNumericalValue ?v ; om-2:hasUnit ?u .
          VALUES (?u ?o) { (om-2:degreeCelsius 0.0) (om-2:kelvin -273.15) }
          FILTER(?v + ?o >= 100) }""")
        rows = results[-1]["data"]["rows"]
        assert len(hot) > 10 and sorted({(r[0],) for r in rows}, key=str) == hot

    anyio.run(main)
