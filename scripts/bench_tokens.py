"""Benchmark: tokens a model must read for the bundled ontologies, per tool and per plan step.

The measure is `kgctl.compiler.budget` (o200k_base): a tool costs its MCP listing entry
`{"name", "description", "inputSchema"}` as JSON; a plan step's fixed cost per turn is its
tools + its system message + the reserve for the client's own tools. The script prints the
current figures (computed now), the figures of the same measure on the surface as it was
before the compact surface (recorded below: the surface of 54b573d, measured by this script at
commit 557c459, which adds only the measure; its per-turn figures there include a 300-token
reserve, 150 more than today's, which the table below subtracts), and the ratio; then the most
expensive tools, and the cost of the agent's own tool (evidence search) through a real MCP
listing against the reserve; then the same figures for every ontology of the third-party
corpus (tests/ontologies, as `scripts/bench_ontologies.py` loads it).

    python scripts/bench_tokens.py
"""

from __future__ import annotations

import asyncio
import json

from kgctl.compiler.budget import CLIENT_RESERVE, plan_budget, tool_tokens
from kgctl.compiler.plan import compile_plan
from kgctl.compiler.tools import compile_tools
from kgctl.ontology import default_ir
from kgctl.tokens import TOKENIZER, count_tokens

# measured at 54b573d: surface 40 tools, 59,495 tokens; per step (tools, tool specs, system
# message, per turn, verification pass), with today's 150-token client reserve
BEFORE_SURFACE = 59_495
BEFORE = {
    "core": (6, 6_102, 2_428, 8_680, 10_494),
    "parts": (7, 6_347, 2_998, 9_495, 11_346),
    "sequence": (19, 34_389, 9_253, 43_792, 49_256),
    "ontosynthesis": (8, 3_935, 1_201, 5_286, 6_995),
    "ontospecies_subgraph": (18, 12_318, 1_644, 14_112, 15_997),
}
TOP_TOOLS = 8


def agent_tool_tokens() -> int:
    """Tokens of the agent's own tool offered beside every step (evidence search), as a real
    MCP client lists it."""
    from mcp import Client
    from mcp.server.mcpserver import MCPServer

    from kgctl.agent.tools import SEARCH_TOOL, add_agent_tools
    from kgctl.papers.ingest import Document, Section
    from kgctl.store import EmbeddedStore

    server = MCPServer("agent-tools")
    text = "Experimental. A paragraph."
    document = Document(paper_id="p", text=text,
                        sections=(Section(title="Experimental", start=0, end=len(text),
                                              source="p.txt"),))
    add_agent_tools(server, document=document, store=EmbeddedStore(), paper_id="p")

    async def listing() -> int:
        async with Client(server) as client:
            tools = [t for t in (await client.list_tools()).tools if t.name == SEARCH_TOOL]
            return sum(count_tokens(json.dumps({"name": t.name, "description": t.description,
                                                "inputSchema": t.input_schema},
                                               ensure_ascii=False)) for t in tools)
    return asyncio.run(listing())


def main() -> None:
    ir = default_ir()
    surface = compile_tools(ir)
    report = plan_budget(compile_plan(ir, surface=surface), surface)
    print(f"tokenizer {TOKENIZER}")
    print(f"surface: {report.surface_tools} tools, {report.surface_tokens} tokens "
          f"(before {BEFORE_SURFACE}; {report.surface_tokens / BEFORE_SURFACE:.2f} x; "
          f"budget {report.surface_budget})")
    print("\nbefore (54b573d, recorded):")
    print(f"{'step':<24}{'tools':>6}{'tool specs':>12}{'system':>8}{'per turn':>10}{'verify':>8}")
    for step, row in BEFORE.items():
        print(f"{step:<24}" + "".join(f"{v:>{w}}" for v, w in zip(row, (6, 12, 8, 10, 8),
                                                                   strict=True)))
    print("\nnow (computed):")
    print("\n".join(report.table().splitlines()[3:]))
    worst = max(s.per_turn for s in report.steps)
    before_worst = max(row[3] for row in BEFORE.values())
    print(f"\nlargest step per turn: {worst} (before {before_worst}; "
          f"{worst / before_worst:.2f} x; budget {report.step_budget})")
    print("\nmost expensive tools:")
    for tool in sorted(surface.tools, key=tool_tokens, reverse=True)[:TOP_TOOLS]:
        print(f"  {tool_tokens(tool):>6}  {tool.name}")
    print(f"\nagent's search tool through an MCP listing: {agent_tool_tokens()} tokens "
          f"(reserve {CLIENT_RESERVE})")
    over = report.over_budget()
    print("within budget" if not over else "OVER BUDGET: " + "; ".join(over))
    corpus()


def corpus() -> None:
    """The same measure on every ontology of tests/ontologies (no profile)."""
    from bench_ontologies import ONTOLOGIES, load

    print("\ncorpus (tests/ontologies, no profile):")
    print(f"{'ontology':<21}{'tools':>6}{'listing':>9}{'steps':>7}{'max/turn':>10}"
          f"{'max verify':>12}  budget")
    for name in ONTOLOGIES:
        ir = load(name)
        surface = compile_tools(ir)
        report = plan_budget(compile_plan(ir, surface=surface), surface)
        print(f"{name:<21}{report.surface_tools:>6}{report.surface_tokens:>9}"
              f"{len(report.steps):>7}{max(s.per_turn for s in report.steps):>10}"
              f"{max(s.verify_per_turn for s in report.steps):>12}  "
              + ("within" if not report.over_budget() else "OVER"))


if __name__ == "__main__":
    main()
