"""MCP grounding server: ranked candidates with evidence for extraction agents (no sampling).

Tool names follow the grounding spec (`lookup_<spec name>`, `describe_<spec name>`,
`lookup_identifier` over the kinds it declares). The label index may load in the background
(`build_server(factory, ...)`): `initialize` answers at once and the first lookup waits for the
index. Refusals are feedback envelopes.
"""

# no `from __future__ import annotations`: the identifier kinds are a Literal made per server
from collections.abc import Callable
from typing import Annotated, Literal

from mcp_types import CallToolResult
from pydantic import BaseModel, ConfigDict, Field

from kgctl.errors import InputError
from kgctl.feedback import Envelope
from kgctl.grounding.matcher import MAX_NAME_CHARS, Candidate, LookupResult, Matcher
from kgctl.toolserver.limits import Limits
from kgctl.toolserver.server import READ, ToolServer, error_result, ok_result

MAX_K = 50
LIMITS = Limits(max_text=MAX_NAME_CHARS)
INSTRUCTIONS = ("Ground names to reference entities ({entity}). lookup_{entity} returns the "
                "accepted match (null when no candidate passes the threshold and margin) and "
                "ranked candidates.")


class IdentifierHits(BaseModel):
    model_config = ConfigDict(frozen=True)
    kind: str
    value: str
    candidates: tuple[Candidate, ...]


class EntityDescription(BaseModel):
    model_config = ConfigDict(frozen=True)
    iri: str
    label: str
    labels: tuple[str, ...]
    identifiers: dict[str, list[str]]


def build_server(matcher: Matcher | Callable[[], Matcher], *, entity: str = "entity",
                 kinds: tuple[str, ...] = ()) -> ToolServer:
    """lookup_<entity>, lookup_identifier (of `kinds`) and describe_<entity> over `matcher` (or
    the matcher a factory loads, in the background); `entity` is the grounding spec's name."""
    loaded: list[Matcher] = [] if callable(matcher) else [matcher]
    server = ToolServer("kgctl-grounding", instructions=INSTRUCTIONS.format(entity=entity),
                        limits=LIMITS,
                        setup=(lambda: loaded.append(matcher())) if callable(matcher) else None)
    kind_type = Literal[kinds] if kinds else str

    @server.tool(name=f"lookup_{entity}", annotations=READ,
                 description=f"Ground one name to a reference {entity}: accepted match or null, "
                             "and the top-k candidates.")
    def lookup(name: str, k: int = Field(default=10, ge=1, le=MAX_K)
               ) -> Annotated[CallToolResult, LookupResult]:
        try:
            return ok_result(loaded[0].lookup(name, k=k))
        except InputError as exc:
            return error_result(Envelope(code="invalid_name", field="name", message=str(exc),
                                         hint="give one name"))

    @server.tool(annotations=READ, description=f"Reference {entity} entries carrying an "
                 f"identifier ({', '.join(kinds) or 'a kind the grounding spec declares'}).")
    def lookup_identifier(kind: kind_type, value: str
                          ) -> Annotated[CallToolResult, IdentifierHits]:
        try:
            hits = loaded[0].lookup_identifier(kind, value)
        except InputError as exc:
            return error_result(Envelope(code="invalid_identifier", field="value", value=value,
                                         message=str(exc)))
        return ok_result(IdentifierHits(kind=kind, value=value, candidates=tuple(hits)))

    @server.tool(name=f"describe_{entity}", annotations=READ,
                 description=f"Labels and identifiers of one reference {entity}.")
    def describe(iri: str) -> Annotated[CallToolResult, EntityDescription]:
        index = loaded[0].index
        entity = index.entity_id.get(iri)
        if entity is None:
            return error_result(Envelope(code="not_found", field="iri", value=iri,
                                         message=f"no reference {entity} has this IRI",
                                         hint=f"take an IRI from lookup_{entity}"))
        rows = (index.pair_entity == entity).nonzero()[0]
        labels = tuple(sorted({index.pair_text[i] for i in rows}))
        identifiers = {kind: sorted(v for v, es in values.items() if entity in es)
                       for kind, values in index.identifiers.items()}
        return ok_result(EntityDescription(iri=iri, label=index.display[entity], labels=labels,
                                            identifiers={k: v for k, v in identifiers.items()
                                                         if v}))

    return server
