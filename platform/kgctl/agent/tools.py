"""The agent's own MCP tools, added beside the compiled graph tools of a paper's server.

``search_paper`` returns evidence passages (MMR over lexical vectors) with the offsets a
write call can cite; ``review_writes`` lists the accepted calls of this paper with their
evidence (from the store's provenance) for the verification pass. Neither writes anything.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from kgctl.agent.search import DEFAULT_K, DEFAULT_LAMBDA, Hit, PassageIndex
from kgctl.papers.ingest import Document
from kgctl.store.base import Evidence, GraphStore

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

SEARCH_TOOL = "search_paper"
REVIEW_TOOL = "review_writes"
AGENT_TOOLS = (SEARCH_TOOL, REVIEW_TOOL)


class SearchResult(BaseModel):
    model_config = ConfigDict(frozen=True)
    query: str
    passages: list[Hit]


class WrittenCall(BaseModel):
    model_config = ConfigDict(frozen=True)
    seq: int
    tool: str
    arguments: dict[str, Any]
    iris: list[str]
    evidence: Evidence | None = None


class Review(BaseModel):
    model_config = ConfigDict(frozen=True)
    paper_id: str
    calls: list[WrittenCall]


def add_agent_tools(
    server: MCPServer,
    *,
    document: Document | None,
    store: GraphStore,
    paper_id: str,
    lam: float = DEFAULT_LAMBDA,
) -> None:
    """Register the search (when a document is given) and review tools on a server."""
    if document is not None:
        index = PassageIndex(document)

        def search_paper(query: str, k: int = DEFAULT_K) -> SearchResult:
            """Find the passages of this paper that best answer a query (diverse top-k, with
            section and character offsets to cite as evidence)."""
            return SearchResult(query=query, passages=index.search(query, k=k, lam=lam))

        server.add_tool(search_paper, name=SEARCH_TOOL)

    def review_writes(tools: list[str] | None = None) -> Review:
        """List the accepted calls written for this paper so far (optionally only those of some
        tools), with their arguments, the IRIs they wrote and their evidence."""
        wanted = set(tools or ())
        calls = [
            WrittenCall(seq=r.seq, tool=r.tool, iris=list(r.iris), evidence=r.evidence,
                        arguments={k: v for k, v in r.arguments.items() if k != "evidence"})
            for r in store.trace(paper_id)
            if not wanted or r.tool in wanted
        ]
        return Review(paper_id=paper_id, calls=calls)

    server.add_tool(review_writes, name=REVIEW_TOOL)
