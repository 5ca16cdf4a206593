"""The agent loop through the real openai client (against a scripted local server) and a real
MCP session on the compiled TWA tools: feedback reaches the model, the repaired call is
written, the step's tool set is enforced, iteration limits and HTTP errors are handled."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agent_helpers import PAPER, FakeLLM, Reply, core_only_plan, full_plan, run, tool_messages
from pyoxigraph import NamedNode

from kgctl.agent.llm import LLMError
from kgctl.agent.trace import AgentTrace
from kgctl.store import EmbeddedStore

SYNTHESIS_QUERY = """
PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
SELECT ?label ?product WHERE {
  ?s a ?cls ; rdfs:label ?label ; ?has ?out . ?out rdfs:label ?product .
  FILTER(?has = ?hasOutput)
}"""


def synthesis_labels(store: EmbeddedStore) -> list[tuple[str, str]]:
    onto = "https://www.theworldavatar.com/kg/OntoSyn/"
    rows = store.query(SYNTHESIS_QUERY, paper_id=PAPER, bindings={
        "cls": NamedNode(onto + "ChemicalSynthesis"),
        "hasOutput": NamedNode(onto + "hasChemicalOutput")})
    return sorted((r["label"].value, r["product"].value) for r in rows)


def test_feedback_reaches_the_model_and_the_repaired_call_is_written(tmp_path: Path) -> None:
    def after_malformed(request: dict) -> Reply:
        feedback = json.loads(tool_messages(request)[-1]["content"])
        assert feedback["code"] == "malformed_arguments"
        return Reply(tool_calls=[
            ("create_add", '{"label": "x"}'),  # a tool of another plan step
            ("create_chemical_synthesis", '{"label": "MOP-1"}'),  # misses its product
        ])

    def after_rejection(request: dict) -> Reply:
        not_offered, rejected = (json.loads(m["content"]) for m in tool_messages(request)[-2:])
        assert not_offered["code"] == "tool_not_offered"
        # the compiled tools' own feedback, as the model receives it
        assert (rejected["status"], rejected["code"], rejected["field"]) == (
            "rejected", "required_missing", "chemical_output")
        return Reply(tool_calls=[("search_paper", '{"query": "synthesis of MOP-1", "k": 1}')])

    def repaired(request: dict) -> Reply:
        hit = json.loads(tool_messages(request)[-1]["content"])["passages"][0]
        evidence = {"quote": hit["text"][:60], "section": hit["section"],
                    "start": hit["start"], "end": hit["start"] + 60}
        return Reply(tool_calls=[("create_chemical_synthesis", json.dumps(
            {"label": "MOP-1", "chemical_output": {"label": "MOP-1"}, "evidence": evidence}))])

    def verification(request: dict) -> Reply:
        last = request["messages"][-1]["content"]
        assert "Verification pass" in last and "MOP-1" in last and "Synthesis of MOP-1" in last
        offered = {t["function"]["name"] for t in request["tools"]}
        assert {"update_property", "delete_entity"} <= offered  # repair tools join here
        return Reply(content="verified")

    script = [
        Reply(tool_calls=[("create_chemical_synthesis", '{"label": "MOP-1", "chemical_')]),
        after_malformed, after_rejection, repaired, Reply(content="done"), verification,
    ]
    store = EmbeddedStore(None)
    with FakeLLM(script) as fake:
        trace = run(fake, store, tmp_path)
    assert fake.script == []  # every scripted turn was used
    offered = {t["function"]["name"] for t in fake.requests[0]["tools"]}
    assert offered == {*core_only_plan().steps[0].tools, "search_paper"}
    assert "create_add" not in offered and fake.requests[0]["temperature"] == 0
    # exactly one synthesis written, by the repaired call, with its evidence in provenance
    assert synthesis_labels(store) == [("MOP-1", "MOP-1")]
    [record] = store.trace(PAPER)
    assert record.tool == "create_chemical_synthesis"
    assert record.evidence is not None and record.evidence.quote.startswith("Synthesis of MOP-1")
    calls = trace.steps[0].calls
    assert [(c.tool, c.is_error) for c in calls] == [
        ("create_chemical_synthesis", True), ("create_add", True),
        ("create_chemical_synthesis", True), ("search_paper", False),
        ("create_chemical_synthesis", False), ("review_writes", False)]
    assert calls[0].arguments is None and calls[0].raw_arguments.endswith('"chemical_')
    assert [c.tool for c in trace.accepted_calls()] == ["create_chemical_synthesis"]
    # accounting: 6 requests of 100 + 20 tokens, priced at 1 and 2 USD per million
    assert trace.usage.requests == 6 and trace.usage.prompt_tokens == 600
    assert trace.usage.cost_usd == pytest.approx((600 * 1 + 120 * 2) / 1e6)
    saved = AgentTrace.load(tmp_path / "trace.json")
    assert saved.status == "complete" and saved.steps[0].calls == calls


def test_without_feedback_the_incomplete_call_is_written(tmp_path: Path) -> None:
    script = [Reply(tool_calls=[("create_chemical_synthesis", '{"label": "MOP-1"}')]),
              Reply(content="done")]
    store = EmbeddedStore(None)
    with FakeLLM(script, default=Reply(content="verified")) as fake:
        trace = run(fake, store, tmp_path, feedback=False)
    assert [c.is_error for c in trace.steps[0].calls if not c.local] == [False]
    assert not trace.feedback and len(store.trace(PAPER)) == 1


def test_every_plan_step_offers_only_its_tool_set(tmp_path: Path) -> None:
    plan = full_plan()
    store = EmbeddedStore(None)
    with FakeLLM([], default=Reply(content="nothing to record")) as fake:
        trace = run(fake, store, tmp_path, plan=plan)
    assert [s.step for s in trace.steps] == [s.id for s in plan.steps]
    first_requests = [r for r in fake.requests if len(r["messages"]) == 2]
    assert len(first_requests) == len(plan.steps)
    for request, step in zip(first_requests, plan.steps, strict=True):
        offered = {t["function"]["name"] for t in request["tools"]}
        assert offered == {*step.tools, "search_paper"}
        assert step.prompt in request["messages"][0]["content"]


def test_iteration_limit_stops_a_step(tmp_path: Path) -> None:
    looping = [Reply(tool_calls=[("search_paper", '{"query": "copper"}')]) for _ in range(10)]
    store = EmbeddedStore(None)
    with FakeLLM(looping) as fake:
        trace = run(fake, store, tmp_path)
    assert trace.steps[0].status == "iteration_limit"
    assert len(fake.requests) == 6  # max_iterations, and no verification pass after a limit
    assert list(store.triples(PAPER)) == []


def test_http_errors_are_retried_with_backoff(tmp_path: Path) -> None:
    script = [
        Reply(status=429, headers={"retry-after-ms": "10"}),
        Reply(status=500),
        Reply(delay=0.8),  # longer than the client timeout
        Reply(content="nothing to record"),
    ]
    store = EmbeddedStore(None)
    with FakeLLM(script) as fake:
        trace = run(fake, store, tmp_path, timeout_s=0.3, max_tokens=800)
    assert trace.usage.retries == 3 and trace.usage.requests == 1
    assert len(fake.requests) == 4  # 3 failed attempts, the step (nothing written: no review)
    # every request says how long a reply may be; the one after the timeout asks for less
    assert [r["max_tokens"] for r in fake.requests] == [800, 800, 800, 400]


@pytest.mark.parametrize("status, message", [
    (401, "OPENAI_API_KEY"), (404, "KGCTL_MODEL"), (503, "still failing after 2 retries")])
def test_unrecoverable_http_errors_end_in_one_message(tmp_path: Path, status: int,
                                                      message: str) -> None:
    store = EmbeddedStore(None)
    with FakeLLM([Reply(status=status) for _ in range(3)]) as fake:
        with pytest.raises(LLMError, match=message):
            run(fake, store, tmp_path, max_retries=2)
    assert AgentTrace.load(tmp_path / "trace.json").status == "failed"
