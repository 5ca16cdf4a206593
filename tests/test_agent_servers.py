"""What real model servers do to the agent, each against the local fake server over real HTTP:
cut-off replies, no tool calls, tool calls written as text or with arguments as an object,
malformed JSON, empty choices, context windows (read from the server, the paper in pieces, a
step that cannot fit, overflow answers), a step failing mid-way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agent_helpers import (
    PAPER,
    FakeLLM,
    Reply,
    core_only_plan,
    full_plan,
    overflow_error,
    run,
    tool_messages,
)

from kgctl.agent.aio import run_sync
from kgctl.agent.budget import estimate
from kgctl.agent.llm import ChatClient, LLMError, LLMSettings
from kgctl.agent.messages import ELIDED
from kgctl.agent.trace import AgentTrace
from kgctl.store import EmbeddedStore

SYNTHESIS = json.dumps({"label": "MOP-1", "chemical_output": {"label": "MOP-1"}})
REPLY = 1024  # the default reply budget


def written(store: EmbeddedStore) -> list[str]:
    return [r.tool for r in store.trace(PAPER)]


def long_paper(tmp_path: Path, paragraphs: int = 40) -> Path:
    body = "\n\n".join(
        f"Sample S{i} was prepared from copper nitrate ({i} mg) and isophthalic acid in DMF, "
        f"stirred for {i} hours at room temperature, filtered, washed and dried." for i in
        range(paragraphs))
    path = tmp_path / "long.md"
    path.write_text(f"# A long paper\n\n## Experimental Section\n{body}\n", encoding="utf-8")
    return path


def two_step_plan():
    plan = full_plan()
    return plan.model_copy(update={"steps": (plan.step("parts"), plan.step("core"))})


def test_a_cut_off_reply_is_not_the_answer(tmp_path: Path) -> None:
    def after_cut(request: dict) -> Reply:
        cut, note = request["messages"][-2:]
        assert "tool_calls" not in cut and "cut off at the limit of 1024 tokens" in note["content"]
        return Reply(tool_calls=[("create_chemical_synthesis", SYNTHESIS)])

    script = [Reply(tool_calls=[("create_chemical_synthesis", '{"label": "MOP-1", "chem')],
                    finish_reason="length"),
              after_cut, Reply(content="done")]
    store = EmbeddedStore(None)
    with FakeLLM(script, default=Reply(content="verified")) as fake:
        trace = run(fake, store, tmp_path)
    step = trace.steps[0]
    assert written(store) == ["create_chemical_synthesis"]
    assert [c.tool for c in step.calls if not c.local] == ["create_chemical_synthesis"]
    assert step.finish_reasons[:3] == ["length", "tool_calls", "stop"]
    assert step.status == "done" and step.accepted == 1
    assert all(r["max_tokens"] == REPLY for r in fake.requests)


def test_replies_cut_off_again_and_again_end_the_conversation(tmp_path: Path) -> None:
    cut = Reply(content="The paper describes " * 50, finish_reason="length")
    store = EmbeddedStore(None)
    with FakeLLM([cut, cut, cut]) as fake:
        trace = run(fake, store, tmp_path)
    assert len(fake.requests) == 2
    assert (trace.steps[0].status, trace.steps[0].endings) == ("empty", ["cut_off"])


def test_a_step_without_tool_calls_is_empty_and_gets_no_verification(tmp_path: Path) -> None:
    store = EmbeddedStore(None)
    with FakeLLM([Reply(content="This paper has nothing to record.")]) as fake:
        trace = run(fake, store, tmp_path)
    assert len(fake.requests) == 1  # no verification pass on nothing
    step = trace.steps[0]
    assert (step.status, step.accepted, step.endings) == ("empty", 0, ["answered"])
    assert not any(c.tool == "review_writes" for c in step.calls)
    assert trace.status == "complete" and trace.accepted_calls() == []


def test_tool_calls_in_every_form_servers_send(tmp_path: Path) -> None:
    arguments = json.loads(SYNTHESIS)
    forms = {
        "tagged": Reply(content=f'<tool_call>\n{{"name": "create_chemical_synthesis", '
                                f'"arguments": {SYNTHESIS}}}\n</tool_call>'),
        "bare json": Reply(content=json.dumps({"name": "create_chemical_synthesis",
                                               "parameters": arguments})),
        "fenced list": Reply(content="```json\n" + json.dumps(
            [{"name": "create_chemical_synthesis", "arguments": SYNTHESIS}]) + "\n```"),
        "mistral": Reply(content="[TOOL_CALLS] " + json.dumps(
            [{"name": "create_chemical_synthesis", "arguments": arguments}])),
        "object arguments, no id": Reply(raw_calls=[{"type": "function", "function": {
            "name": "create_chemical_synthesis", "arguments": arguments}}]),
    }
    ran = 0
    for form, reply in forms.items():
        store = EmbeddedStore(None)
        with FakeLLM([reply, Reply(content="done")], default=Reply(content="ok")) as fake:
            trace = run(fake, store, tmp_path)
        assert written(store) == ["create_chemical_synthesis"], form
        call = next(c for c in trace.steps[0].calls if not c.local)
        assert (call.arguments, call.is_error) == (arguments, False), form
        # the call is answered as a call: a tool message with its id follows it
        sent_back = fake.requests[1]["messages"]
        assert sent_back[-2]["tool_calls"][0]["id"] == sent_back[-1]["tool_call_id"], form
        ran += 1
    assert ran == len(forms) == 5


def test_malformed_json_in_a_tagged_call_comes_back_as_feedback(tmp_path: Path) -> None:
    def after(request: dict) -> Reply:
        feedback = json.loads(tool_messages(request)[-1]["content"])
        assert feedback["code"] == "malformed_arguments"
        return Reply(content="giving up")

    broken = '<tool_call>{"name": "create_chemical_synthesis", "arguments": {"label": </tool_call>'
    store = EmbeddedStore(None)
    with FakeLLM([Reply(content=broken), after]) as fake:
        trace = run(fake, store, tmp_path)
    assert fake.script == [] and written(store) == []
    assert trace.steps[0].refused == {"malformed_arguments": 1}
    assert trace.steps[0].status == "empty"


def test_empty_choices_are_retried_then_end_only_the_step(tmp_path: Path) -> None:
    store = EmbeddedStore(None)
    with FakeLLM([Reply(no_choices=True), Reply(content="nothing")]) as fake:
        trace = run(fake, store, tmp_path)
    assert trace.usage.retries == 1 and trace.steps[0].status == "empty"

    with FakeLLM([Reply(no_choices=True)] * 2, default=Reply(content="nothing")) as fake:
        trace = run(fake, store, tmp_path, plan=two_step_plan(), max_retries=1)
    first, second = trace.steps
    assert first.status == "failed" and "without choices" in (first.error or "")
    assert second.status == "empty" and trace.status == "complete"


def test_timeouts_that_persist_end_only_the_step(tmp_path: Path) -> None:
    store = EmbeddedStore(None)
    slow = Reply(delay=0.6, content="too late")
    with FakeLLM([slow, slow], default=Reply(content="nothing")) as fake:
        trace = run(fake, store, tmp_path, plan=two_step_plan(), max_retries=1, timeout_s=0.2)
    first, second = trace.steps
    assert first.status == "failed" and "timed out" in (first.error or "")
    assert first.usage.requests == 0 and second.status == "empty"
    assert [r["max_tokens"] for r in fake.requests[:2]] == [REPLY, REPLY // 2]


@pytest.mark.parametrize("where", ["models", "props"])
def test_the_context_window_is_read_from_the_server(where: str) -> None:
    async def ask(base_url: str, **options) -> int | None:
        chat = ChatClient(LLMSettings(base_url=base_url, model="fake", **options))
        try:
            return await chat.context_window()
        finally:
            await chat.close()

    with FakeLLM([], context_window=8192, window_at=where) as fake:
        assert run_sync(lambda: ask(fake.base_url)) == 8192
        assert run_sync(lambda: ask(fake.base_url, context_window=4096)) == 4096  # option wins
    with FakeLLM([]) as fake:  # a server that does not say
        assert run_sync(lambda: ask(fake.base_url)) is None


def test_the_paper_is_given_in_pieces_that_fit(tmp_path: Path) -> None:
    paper = long_paper(tmp_path)
    store = EmbeddedStore(None)
    with FakeLLM([], default=Reply(content="nothing")) as fake:
        fixed = run(fake, store, tmp_path, paper=paper).steps[0].fixed_tokens
    assert fixed
    window = fixed + REPLY + 2 * 400  # 400 tokens of paper per piece
    with FakeLLM([], default=Reply(content="nothing"), enforce_window=window - REPLY) as fake:
        trace = run(fake, store, tmp_path, paper=paper, window=window)
    step = trace.steps[0]
    assert fake.overflows == 0 and step.pieces == len(fake.requests) > 3
    assert step.endings == ["answered"] * step.pieces
    shown = "\n".join(r["messages"][1]["content"] for r in fake.requests)
    assert all(f"Sample S{i} was" in shown for i in range(40))  # every paragraph, once
    assert shown.count("Sample S7 was") == 1
    assert f"part 1 of {step.pieces}" in fake.requests[0]["messages"][1]["content"]


def test_a_step_that_cannot_fit_is_said_and_the_next_one_runs(tmp_path: Path) -> None:
    store = EmbeddedStore(None)
    with FakeLLM([], default=Reply(content="nothing")) as fake:
        sizes = {s.step: s.fixed_tokens for s in run(fake, store, tmp_path,
                                                      plan=two_step_plan()).steps}
    assert sizes["parts"] > sizes["core"] + 600
    window = sizes["core"] + REPLY + 600  # core fits with 300 tokens of paper, parts does not
    with FakeLLM([], default=Reply(content="nothing")) as fake:
        trace = run(fake, store, tmp_path, plan=two_step_plan(), window=window)
    parts, core = trace.steps
    assert parts.status == "too_large" and parts.usage.requests == 0
    assert f"does not fit the {window}-token context window" in (parts.error or "")
    assert core.status == "empty" and core.usage.requests >= 1
    assert {t["function"]["name"] for r in fake.requests for t in r["tools"]} == {
        *core_only_plan().steps[0].tools, "search_paper"}  # nothing of parts was sent


def test_the_server_s_own_count_decides_what_fits(tmp_path: Path) -> None:
    """llama.cpp renders the chat template and counts tokens; a model whose template is terse
    fits where the generic estimate would not."""
    paper = long_paper(tmp_path)
    store = EmbeddedStore(None)
    with FakeLLM([], default=Reply(content="nothing")) as fake:
        estimated = run(fake, store, tmp_path, paper=paper).steps[0].fixed_tokens
    window = estimated  # too small by the estimate
    with FakeLLM([], default=Reply(content="nothing"), chars_per_token=8,
                 enforce_window=window - REPLY) as fake:
        trace = run(fake, store, tmp_path, paper=paper, window=window)
    step = trace.steps[0]
    assert step.fixed_tokens < estimated and step.status == "empty"
    assert fake.overflows == 0 and step.pieces == len(fake.requests) >= 1
    assert all(fake.count(r) + REPLY <= window for r in fake.requests)
    shown = "\n".join(r["messages"][1]["content"] for r in fake.requests)
    assert all(f"Sample S{i} was" in shown for i in range(40))


def test_an_overflow_is_retried_with_a_smaller_piece(tmp_path: Path) -> None:
    paper = long_paper(tmp_path)
    store = EmbeddedStore(None)
    with FakeLLM([], default=Reply(content="nothing")) as fake:
        fixed = run(fake, store, tmp_path, paper=paper).steps[0].fixed_tokens
    # the agent is not told the window; the server refuses what does not fit
    with FakeLLM([], default=Reply(content="nothing"), enforce_window=fixed + 1500) as fake:
        trace = run(fake, store, tmp_path, paper=paper)
    step = trace.steps[0]
    assert fake.overflows == 1 and step.status == "empty" and step.pieces > 1
    sizes = [estimate(r["messages"], r["tools"]) for r in fake.requests]
    assert sizes[0] > fixed + 1500 >= max(sizes[1:])
    shown = "\n".join(r["messages"][1]["content"] for r in fake.requests[1:])
    assert all(f"Sample S{i} was" in shown for i in range(40))


def test_an_overflow_in_a_later_turn_elides_old_results(tmp_path: Path) -> None:
    def overflow_unless_elided(request: dict) -> Reply:
        if tool_messages(request)[0]["content"] != ELIDED:
            return Reply(status=400, error=overflow_error(9000, 8192))
        return Reply(content="done")

    search = Reply(tool_calls=[("search_paper", '{"query": "copper"}')])
    store = EmbeddedStore(None)
    with FakeLLM([search, search, overflow_unless_elided, overflow_unless_elided]) as fake:
        trace = run(fake, store, tmp_path)
    assert fake.script == [] and trace.steps[0].endings == ["answered"]
    last = tool_messages(fake.requests[-1])
    assert last[0]["content"] == ELIDED and last[-1]["content"] != ELIDED
    # the trace keeps what the tools really answered
    assert ELIDED not in json.dumps(trace.steps[0].messages)


def test_a_step_that_always_overflows_never_fails_the_paper(tmp_path: Path) -> None:
    def overflow_in_parts(request: dict) -> Reply:
        if "Plan step: " + full_plan().step("parts").title in request["messages"][1]["content"]:
            return Reply(status=400, error=overflow_error(50_000, 8192))
        return Reply(content="nothing")

    store = EmbeddedStore(None)
    with FakeLLM([], default=overflow_in_parts) as fake:
        trace = run(fake, store, tmp_path, plan=two_step_plan())
    parts, core = trace.steps
    assert parts.status == "failed" and "exceeds the available context size" in parts.error
    assert core.status == "empty" and trace.status == "complete"
    assert AgentTrace.load(tmp_path / "trace.json").steps[0].error == parts.error


def test_a_step_failing_mid_way_stays_in_the_trace_with_its_tokens(tmp_path: Path) -> None:
    script = [Reply(tool_calls=[("create_chemical_synthesis", SYNTHESIS)], prompt_tokens=300),
              Reply(status=401)]
    store = EmbeddedStore(None)
    with FakeLLM(script) as fake:
        with pytest.raises(LLMError, match="OPENAI_API_KEY"):
            run(fake, store, tmp_path)
    saved = AgentTrace.load(tmp_path / "trace.json")
    [step] = saved.steps
    assert saved.status == "failed" and step.status == "failed"
    assert (step.usage.requests, step.usage.prompt_tokens, step.accepted) == (1, 300, 1)
    assert "OPENAI_API_KEY" in (step.error or "") and step.seconds > 0
    assert written(store) == ["create_chemical_synthesis"]
