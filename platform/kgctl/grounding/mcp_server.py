"""MCP grounding server: ranked candidates with evidence for extraction agents (no sampling).

The label index may load in the background (`build_server(factory)`): `initialize` answers at
once and the first lookup waits for the index. Refusals are feedback envelopes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from mcp_types import CallToolResult
from pydantic import BaseModel, ConfigDict, Field

from kgctl.errors import InputError
from kgctl.feedback import Envelope
from kgctl.grounding.matcher import MAX_NAME_CHARS, Candidate, LookupResult, Matcher
from kgctl.grounding.spec import IdentifierKind
from kgctl.toolserver.limits import Limits
from kgctl.toolserver.server import READ, ToolServer, error_result, ok_result

MAX_K = 50
LIMITS = Limits(max_text=MAX_NAME_CHARS)
INSTRUCTIONS = ("Ground chemical names to reference species. lookup_species returns the accepted "
                "match (null when no candidate passes the threshold and margin) and ranked "
                "candidates.")


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


def build_server(matcher: Matcher | Callable[[], Matcher]) -> ToolServer:
    """lookup_species, lookup_identifier and describe_species over `matcher` (or the matcher a
    factory loads, in the background)."""
    loaded: list[Matcher] = [] if callable(matcher) else [matcher]
    server = ToolServer("kgctl-grounding", instructions=INSTRUCTIONS, limits=LIMITS,
                        setup=(lambda: loaded.append(matcher())) if callable(matcher) else None)

    @server.tool(annotations=READ)
    def lookup_species(name: str, k: int = Field(default=10, ge=1, le=MAX_K)
                       ) -> Annotated[CallToolResult, LookupResult]:
        """Ground one chemical name: accepted match or null, and the top-k candidates."""
        try:
            return ok_result(loaded[0].lookup(name, k=k))
        except InputError as exc:
            return error_result(Envelope(code="invalid_name", field="name", message=str(exc),
                                         hint="give one chemical name"))

    @server.tool(annotations=READ)
    def lookup_identifier(kind: IdentifierKind, value: str
                          ) -> Annotated[CallToolResult, IdentifierHits]:
        """Species carrying an identifier (inchikey, inchi, smiles, cas, cid, formula)."""
        try:
            hits = loaded[0].lookup_identifier(kind, value)
        except InputError as exc:
            return error_result(Envelope(code="invalid_identifier", field="value", value=value,
                                         message=str(exc)))
        return ok_result(IdentifierHits(kind=kind, value=value, candidates=tuple(hits)))

    @server.tool(annotations=READ)
    def describe_species(iri: str) -> Annotated[CallToolResult, SpeciesDescription]:
        """Labels and identifiers of one reference species."""
        index = loaded[0].index
        entity = index.entity_id.get(iri)
        if entity is None:
            return error_result(Envelope(code="not_found", field="iri", value=iri,
                                         message="no reference species has this IRI",
                                         hint="take an IRI from lookup_species"))
        rows = (index.pair_entity == entity).nonzero()[0]
        labels = tuple(sorted({index.pair_text[i] for i in rows}))
        identifiers = {kind: sorted(v for v, es in values.items() if entity in es)
                       for kind, values in index.identifiers.items()}
        return ok_result(SpeciesDescription(iri=iri, label=index.display[entity], labels=labels,
                                            identifiers={k: v for k, v in identifiers.items()
                                                         if v}))

    return server
