"""MCP grounding server: ranked candidates with evidence for extraction agents (no sampling)."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, ConfigDict, Field

from kgctl.errors import KgctlError
from kgctl.grounding.matcher import Candidate, LookupResult, Matcher
from kgctl.grounding.spec import IdentifierKind

MAX_K = 50


class IdentifierHits(BaseModel):
    model_config = ConfigDict(frozen=True)
    kind: str
    value: str
    candidates: tuple[Candidate, ...]


class SpeciesDescription(BaseModel):
    model_config = ConfigDict(frozen=True)
    iri: str
    label: str
    labels: tuple[str, ...]
    identifiers: dict[str, list[str]]


def build_server(matcher: Matcher) -> MCPServer:
    """An MCPServer with lookup_species, lookup_identifier and describe_species."""
    server = MCPServer("kgctl-grounding", instructions=(
        "Ground chemical names to reference species. lookup_species returns the accepted match "
        "(null when no candidate passes the threshold and margin) and ranked candidates."))
    index = matcher.index

    @server.tool()
    def lookup_species(name: str, k: int = Field(default=10, ge=1, le=MAX_K)) -> LookupResult:
        """Ground one chemical name: accepted match or null, and the top-k candidates."""
        try:
            return matcher.lookup(name, k=k)
        except KgctlError as exc:  # the client sees the reason as an is_error result
            raise ToolError(str(exc)) from None

    @server.tool()
    def lookup_identifier(kind: IdentifierKind, value: str) -> IdentifierHits:
        """Species carrying an identifier (inchikey, inchi, smiles, cas, cid, formula)."""
        try:
            hits = matcher.lookup_identifier(kind, value)
        except KgctlError as exc:
            raise ToolError(str(exc)) from None
        return IdentifierHits(kind=kind, value=value, candidates=tuple(hits))

    @server.tool()
    def describe_species(iri: str) -> SpeciesDescription:
        """Labels and identifiers of one reference species."""
        entity = index.entity_id.get(iri)
        if entity is None:
            raise ToolError(f"unknown species {iri!r}")
        rows = (index.pair_entity == entity).nonzero()[0]
        labels = tuple(sorted({index.pair_text[i] for i in rows}))
        identifiers = {kind: sorted(v for v, es in values.items() if entity in es)
                       for kind, values in index.identifiers.items()}
        return SpeciesDescription(iri=iri, label=index.display[entity], labels=labels,
                                  identifiers={k: v for k, v in identifiers.items() if v})

    return server
