"""The agent loop through the real openai client (against a scripted local server) and a real
MCP session: feedback reaches the model, repaired calls are written, limits and HTTP errors."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel
from pyoxigraph import Literal, NamedNode, Triple

sys.path.insert(0, str(Path(__file__).parent))  # helper modules beside the tests
from agent_helpers import FakeLLM, Reply, last_tool_result, tool_messages  # noqa: E402

from kgctl.agent.aio import run_sync  # noqa: E402
from kgctl.agent.ingest import load_document  # noqa: E402
from kgctl.agent.llm import ChatClient, LLMError, LLMSettings, Price  # noqa: E402
from kgctl.agent.loop import run_paper  # noqa: E402
from kgctl.agent.tools import add_agent_tools  # noqa: E402
from kgctl.agent.trace import AgentTrace  # noqa: E402
from kgctl.compiler.plan import Plan, PlanStep  # noqa: E402
from kgctl.store import CallRecord, EmbeddedStore, utc_now  # noqa: E402
from kgctl.store.iris import mint_iri  # noqa: E402

DATA = Path(__file__).parent / "data" / "agent"
LABEL = NamedNode("http://www.w3.org/2000/01/rdf-schema#label")
THING = "http://example.org/Thing"


class Written(BaseModel):
    iri: str


def dev_server(store: EmbeddedStore, paper: str) -> MCPServer:
    server = MCPServer("dev")

    def create_thing(label: str, order: int, evidence: dict | None = None) -> Written:
        """Create a thing at a position (from 1)."""
        if order < 1:
            raise ToolError(json.dumps({"status": "rejected", "code": "range", "field": "order",
                                        "value": order, "allowed": [1], "retryable": True}))
        iri = mint_iri(paper, THING, label)
        store.write(paper, insert=[Triple(iri, LABEL, Literal(label))], record=CallRecord(
            paper_id=paper, seq=0, tool="create_thing",
            arguments={"label": label, "order": order}, iris=(iri.value,), time=utc_now()))
        return Written(iri=iri.value)

    server.add_tool(create_thing)
    return server


PLAN = Plan(
    ontologies=("dev.ttl",), top_level=(THING,), system_prompt="Use the tools.",
    steps=(PlanStep(id="core", title="Things", goal="Record things", classes=(THING,),
                    read=("experimental",), tools=("create_thing",), prompt="Things only.",
                    verify="- labels are verbatim"),),
)


def run(fake: FakeLLM, store: EmbeddedStore, tmp_path: Path, **settings) -> AgentTrace:
    document = load_document(DATA / "paper.md")
    server = dev_server(store, document.paper_id)
    add_agent_tools(server, document=document, store=store, paper_id=document.paper_id)
    options = {"backoff_base_s": 0.01, "prices": {"fake-model": Price(input=1.0, output=2.0)}}
    llm = LLMSettings(base_url=fake.base_url, model="fake-model", api_key="k",
                      **(options | settings))

    async def go() -> AgentTrace:
        chat = ChatClient(llm)
        try:
            async with Client(server) as client:
                return await run_paper(document, PLAN, tools=client, chat=chat,
                                       trace_path=tmp_path / "trace.json", max_iterations=6)
        finally:
            await chat.close()

    return run_sync(go)


def test_feedback_reaches_the_model_and_the_repaired_call_is_written(tmp_path: Path) -> None:
    def after_malformed(request: dict) -> Reply:
        feedback = last_tool_result(request)
        assert feedback["code"] == "malformed_arguments"
        return Reply(tool_calls=[("create_thing", '{"label": "MOP-1", "order": 0}')])

    def after_rejection(request: dict) -> Reply:
        text = tool_messages(request)[-1]["content"]
        assert '"code": "range"' in text and '"field": "order"' in text
        return Reply(tool_calls=[
            ("search_paper", '{"query": "heated days", "k": 1}'),
            ("create_thing", '{"label": "MOP-1", "order": 1}'),
        ])

    def review(request: dict) -> Reply:
        assert "Verification pass" in request["messages"][-1]["content"]
        assert "MOP-1" in request["messages"][-1]["content"]
        return Reply(content="all verified")

    script = [
        Reply(tool_calls=[("create_thing", '{"label": "MOP-1", "order": ')]),  # malformed
        after_malformed,
        after_rejection,
        Reply(content="done"),
        review,
    ]
    store = EmbeddedStore(None)
    with FakeLLM(script) as fake:
        trace = run(fake, store, tmp_path)
    assert fake.script == []  # every scripted turn was used
    # the request carried only the plan step's tools plus evidence search
    offered = {t["function"]["name"] for t in fake.requests[0]["tools"]}
    assert offered == {"create_thing", "search_paper"}
    assert fake.requests[0]["temperature"] == 0
    # exactly one thing written, by the repaired call
    triples = list(store.triples("paper"))
    assert [t.object.value for t in triples] == ["MOP-1"]
    calls = trace.steps[0].calls
    assert [(c.tool, c.is_error) for c in calls] == [
        ("create_thing", True), ("create_thing", True), ("search_paper", False),
        ("create_thing", False), ("review_writes", False)]
    assert calls[0].arguments is None and calls[0].raw_arguments.endswith('"order": ')
    assert json.loads(calls[2].result)["passages"][0]["text"].startswith("Synthesis of MOP-1")
    assert [c.tool for c in trace.accepted_calls()] == ["create_thing"]
    # accounting: 5 requests of 100 + 20 tokens, priced at 1 and 2 USD per million
    assert trace.usage.requests == 5 and trace.usage.prompt_tokens == 500
    assert trace.usage.cost_usd == pytest.approx((500 * 1 + 100 * 2) / 1e6)
    saved = AgentTrace.load(tmp_path / "trace.json")
    assert saved.status == "complete" and saved.steps[0].calls == calls


def test_iteration_limit_stops_a_step(tmp_path: Path) -> None:
    looping = [Reply(tool_calls=[("search_paper", '{"query": "copper"}')]) for _ in range(10)]
    store = EmbeddedStore(None)
    with FakeLLM(looping) as fake:
        trace = run(fake, store, tmp_path)
    assert trace.steps[0].status == "iteration_limit"
    assert len(fake.requests) == 6  # max_iterations, and no verification pass after a limit
    assert list(store.triples("paper")) == []


def test_http_errors_are_retried_with_backoff(tmp_path: Path) -> None:
    script = [
        Reply(status=429, headers={"retry-after-ms": "10"}),
        Reply(status=500),
        Reply(delay=1.5),  # longer than the client timeout
        Reply(content="nothing to record"),
        Reply(content="verified"),
    ]
    store = EmbeddedStore(None)
    with FakeLLM(script) as fake:
        trace = run(fake, store, tmp_path, timeout_s=0.5)
    assert trace.usage.retries == 3 and trace.usage.requests == 2
    assert len(fake.requests) == 5  # 3 failed attempts, the step, its verification


@pytest.mark.parametrize("status, message", [
    (401, "OPENAI_API_KEY"), (404, "KGCTL_MODEL"), (503, "still failing after 2 retries")])
def test_unrecoverable_http_errors_end_in_one_message(tmp_path: Path, status: int,
                                                      message: str) -> None:
    store = EmbeddedStore(None)
    with FakeLLM([Reply(status=status) for _ in range(3)]) as fake:
        with pytest.raises(LLMError, match=message):
            run(fake, store, tmp_path, max_retries=2)
    assert AgentTrace.load(tmp_path / "trace.json").status == "failed"
