"""The token budget of the compiled surface: part of the compile, enforced here (counts are
deterministic, so this is a plain test, not a timing)."""

from __future__ import annotations

import importlib.util
import json
import shutil

import anyio
import pytest
from click.testing import CliRunner
from mcp import Client
from mcp.server.mcpserver import MCPServer

from kgctl.agent.tools import SEARCH_TOOL, add_agent_tools
from kgctl.compiler import compile_tools
from kgctl.compiler.budget import (
    CLIENT_RESERVE,
    STEP_BUDGET,
    SURFACE_BUDGET,
    plan_budget,
    system_message,
    tool_tokens,
)
from kgctl.compiler.plan import compile_plan
from kgctl.ontology import default_ir, load_ir
from kgctl.papers.ingest import Document, Section
from kgctl.store import EmbeddedStore
from kgctl.tokens import count_tokens

DOPING = "tests/data/ontology/doping.ttl"


def _report(ir):
    surface = compile_tools(ir)
    plan = compile_plan(ir, surface=surface)
    return plan_budget(plan, surface), plan, surface


def test_bundled_ontologies_fit_the_budget() -> None:
    report, plan, surface = _report(default_ir())
    assert report.tokenizer == "o200k_base"
    assert report.surface_tokens <= SURFACE_BUDGET == 20_000
    assert len(report.steps) == len(plan.steps) == 5
    for step in report.steps:
        assert step.per_turn <= STEP_BUDGET == 6_000, step
        assert step.verify_per_turn <= STEP_BUDGET, step
    assert report.over_budget() == []


def test_counts_are_the_tokenizer_packages_own() -> None:
    """count_tokens loads the wheel's Rust tokenizer by itself (the package reads rank tables
    it never uses): its counts are the package's encoding's, special spellings as text."""
    import bpe_openai

    encoding = bpe_openai.get_encoding("o200k_base")
    _, plan, surface = _report(default_ir())
    tool = surface.get("create_heat_chill")
    for text in ("", "hello world", "<|endoftext|> and <|endofprompt|>", "１２℃ – naïve\n\n",
                 plan.system_prompt, tool.description, json.dumps(tool.input_schema)):
        assert count_tokens(text) == len(encoding.encode(text, disallowed_special=())), text


def test_the_measure_is_what_a_client_is_sent() -> None:
    """A tool costs its MCP listing entry; a step its tools plus its system message."""
    report, plan, surface = _report(default_ir())
    tool = surface.get("create_heat_chill")
    entry = {"name": tool.name, "description": tool.description,
             "inputSchema": tool.input_schema}
    assert tool_tokens(tool) == count_tokens(json.dumps(entry, ensure_ascii=False))
    step = plan.step("sequence")
    cost = next(s for s in report.steps if s.step == "sequence")
    assert cost.tool_tokens == sum(tool_tokens(surface.get(n)) for n in step.tools)
    assert cost.system_tokens == count_tokens(f"{plan.system_prompt}\n\n{step.prompt}")
    assert system_message(plan, "sequence").endswith(step.prompt)
    assert report.surface_tokens == sum(tool_tokens(t) for t in surface.tools)


def test_the_agents_search_tool_fits_its_reserve() -> None:
    server = MCPServer("agent-tools")
    text = "Experimental. A paragraph."
    document = Document(paper_id="p", text=text, sections=(
        Section(title="Experimental", start=0, end=len(text), source="p.txt"),))
    add_agent_tools(server, document=document, store=EmbeddedStore(), paper_id="p")

    async def listed() -> list:
        async with Client(server) as client:
            return [t for t in (await client.list_tools()).tools if t.name == SEARCH_TOOL]

    [tool] = anyio.run(listed)
    entry = {"name": tool.name, "description": tool.description,
             "inputSchema": tool.input_schema}
    assert count_tokens(json.dumps(entry, ensure_ascii=False)) <= CLIENT_RESERVE


def test_a_step_prompt_is_cut_to_its_allowance_and_the_rest_is_lazy() -> None:
    """The sequence step's comments do not all fit: they are cut, describe_tool keeps them."""
    ir = default_ir()
    _, plan, surface = _report(ir)
    heat = ir.classes[ir.prefixes["ontosyn"] + "HeatChill"].comment
    assert " ".join(heat.split())[:300] not in plan.step("sequence").prompt
    from kgctl.compiler.prompts import tool_guide

    guide = tool_guide(ir, surface.get("create_heat_chill"))
    assert guide[0]["guidance"] == " ".join(heat.split())
    [sealed] = tool_guide(ir, surface.get("create_heat_chill"), "is_sealed")
    comment = ir.properties[ir.prefixes["ontosyn"] + "isSealed"].comment
    assert sealed["property"] == "ontosyn:isSealed"
    assert sealed["guidance"] == " ".join(comment.split())  # in full for one argument
    excerpt = next(r for r in guide[1:] if r["argument"] == "is_sealed")["guidance"]
    assert len(excerpt) < len(sealed["guidance"]) and excerpt.endswith("…")
    units = next(r for r in guide[1:] if r["argument"] == "target_temperature")["units"]
    assert "degreeCelsius" in units


def test_another_ontology_is_measured_too() -> None:
    report, plan, _ = _report(load_ir([DOPING]))
    assert [s.step for s in report.steps] == [s.id for s in plan.steps]
    assert report.over_budget() == []


def test_cli_prints_the_budget_with_the_tokenizer_named() -> None:
    from kgctl.cli import cli

    result = CliRunner().invoke(cli, ["compile", "--plan", "--budget"])
    assert result.exit_code == 0, result.output
    assert "o200k_base" in result.output and "per turn" in result.output
    assert "sequence" in result.output
    data = json.loads(CliRunner().invoke(cli, ["compile", "--budget", "--json"]).output)
    assert data["tokenizer"] == "o200k_base"
    assert {s["step"] for s in data["steps"]} >= {"core", "parts", "sequence"}


def test_over_budget_is_reported_and_the_cli_exits_1(monkeypatch) -> None:
    from kgctl.cli import cli
    from kgctl.compiler import budget

    _, plan, surface = _report(default_ir())
    tight = plan_budget(plan, surface, step_budget=1_000)
    assert "sequence per turn: " in "\n".join(tight.over_budget())
    original = budget.plan_budget
    monkeypatch.setattr(budget, "plan_budget",
                        lambda plan, surface: original(plan, surface, step_budget=1_000))
    result = CliRunner().invoke(cli, ["compile", "--budget"])
    assert result.exit_code == 1
    assert "over budget: core per turn" in result.output


def test_external_tools_fit_the_tokens_their_profile_states() -> None:
    """The profile states what a step's external tools cost (the compile cannot list another
    server's tools); the real server's listing must fit that figure."""
    from kgctl.agent.external import tool_servers

    report, plan, _ = _report(default_ir())
    cbu = next(s for s in report.steps if s.step == "ontosynthesis")
    assert cbu.external_tokens == 200
    assert cbu.per_turn == cbu.tool_tokens + cbu.system_tokens + 200 + CLIENT_RESERVE

    async def reach():
        async with tool_servers(plan) as servers:
            return servers

    servers = anyio.run(reach)
    installed = all(importlib.util.find_spec(m) for m in ("rdkit", "py2opsin"))
    if servers.unavailable and not (installed and shutil.which("java")):
        pytest.skip(f"chemistry is not installed: {servers.unavailable}")
    assert servers.unavailable == {}  # installed: a renamed tool must not hide here
    offers = [e for step in plan.steps for e in step.external]
    assert len(offers) == 1  # the chemistry tools of the CBU step
    for offer in offers:
        listed = [servers.listing[name] for name in offer.tools]
        entries = [{"name": t.name, "description": t.description,
                    "inputSchema": t.input_schema} for t in listed]
        assert sum(count_tokens(json.dumps(e, ensure_ascii=False)) for e in entries
                   ) <= offer.tokens
