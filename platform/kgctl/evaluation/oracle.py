"""Round-trip oracle: a deterministic agent (oracle_agent) builds each ground-truth paper
through the compiled MCP tools (a real in-process client session); this module drives it over a
benchmark, exports the call traces and collects the findings: ground-truth values the tools
cannot express, and calls they rejected.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from pydantic import BaseModel, ConfigDict

from kgctl.errors import InputError
from kgctl.evaluation.schema import record_schema
from kgctl.ontology.ir import OntologyIR
from kgctl.store.base import GraphStore
from kgctl.store.iris import paper_id as make_paper_id
from kgctl.store.trace import trace_jsonl


class PaperBuild(BaseModel):
    """What building one paper did: calls made, calls rejected, findings."""

    model_config = ConfigDict(frozen=True)
    paper: str
    calls: int
    rejected: int
    findings: tuple[Any, ...]  # what the tools cannot hold, as the oracle agent reports it


def load_paper(root: Path, paper: str) -> dict[str, dict[str, Any]]:
    """The raw ground-truth JSON of one paper by category (missing categories left out)."""
    docs = {}
    for category in record_schema().categories:
        path = root / category / f"{paper}.json"
        if not path.is_file():
            continue
        try:
            docs[category] = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InputError(f"{path}: not readable JSON ({exc})") from exc
    return docs


def benchmark_papers(root: Path) -> list[str]:
    """Paper ids present in any category folder of a benchmark."""
    return sorted({p.stem for c in record_schema().categories
                   for p in (root / c).glob("*.json")})


async def build_papers(client: Client, root: Path, papers: Iterable[str], *,
                       step: Callable[[str], None] | None = None) -> list[PaperBuild]:
    """Build every paper through `client` (a session on the instantiation server)."""
    schema = record_schema()
    if schema.oracle is None:
        raise InputError("the record schema has no oracle agent")
    builds = []
    listing = await client.list_tools()
    required = {t.name: frozenset(t.input_schema.get("required") or ()) for t in listing.tools}
    for paper in papers:
        docs = load_paper(root, paper)
        await client.call_tool("select_paper", {"paper_id": paper})
        agent = schema.oracle(client, paper)
        agent.required = required
        for category in schema.categories:  # in the schema's order: later ones link earlier
            if category in docs:
                await getattr(agent, category)(docs[category])
        builds.append(PaperBuild(paper=paper, calls=agent.calls, rejected=agent.rejected,
                                 findings=tuple(agent.findings)))
        if step:
            step(paper)
    return builds


def run_oracle(store: GraphStore, root: Path, *, papers: Iterable[str] | None = None,
               traces: Path | None = None, step: Callable[[str], None] | None = None,
               ir: OntologyIR | None = None) -> list[PaperBuild]:
    """Build `papers` (default: all of the benchmark at `root`) into `store` through a real
    in-process MCP session on the tools of `ir` (default: the default pack's); each paper is
    rebuilt from scratch; traces go to `traces`."""
    from kgctl.instantiation.server import build_server
    from kgctl.ontology import default_ir

    chosen = list(papers) if papers is not None else benchmark_papers(root)
    for paper in chosen:
        if store.has_paper(make_paper_id(paper)):
            store.drop(make_paper_id(paper))
    server = build_server(ir or default_ir(), store)

    async def main() -> list[PaperBuild]:
        async with Client(server) as client:
            return await build_papers(client, root, chosen, step=step)

    builds = anyio.run(main)
    if traces is not None:
        traces.mkdir(parents=True, exist_ok=True)
        for paper in chosen:
            (traces / f"{paper}.jsonl").write_text(
                trace_jsonl(store.trace(make_paper_id(paper))), encoding="utf-8")
    return builds

