"""One paper's tools as a live MCP client session: the compiled graph tools of the
instantiation server (bound to the paper) plus the agent's search and review tools.

The agent, the replay and the demo all talk to the graph only through this session, so
every write passes the same validation path.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from mcp import Client

from kgctl.agent.search import DEFAULT_LAMBDA
from kgctl.agent.tools import add_agent_tools
from kgctl.compiler.spec import ToolSurface
from kgctl.instantiation.server import build_server
from kgctl.ontology.ir import OntologyIR
from kgctl.papers.ingest import Document
from kgctl.store.base import GraphStore


@asynccontextmanager
async def paper_tools(
    ir: OntologyIR,
    store: GraphStore,
    paper_id: str,
    *,
    document: Document | None = None,
    feedback: bool = True,
    surface: ToolSurface | None = None,
    lam: float = DEFAULT_LAMBDA,
) -> AsyncIterator[Client]:
    """An in-process MCP client session on the paper's tools."""
    server = build_server(ir, store, feedback=feedback, paper_id=paper_id, surface=surface)
    add_agent_tools(server, document=document, store=store, paper_id=paper_id, lam=lam)
    async with Client(server) as client:
        yield client
