"""The query-building MCP server: registers the retrieval tools on a ``ToolServer``.

Containers are keyed by the MCP session (see ``kgctl.toolserver.sessions``). Requests without a
session (the stateless protocol over HTTP) share one namespace whose container ids are
unguessable tokens, so a container is reachable only by the client it was returned to. A
rejected step becomes an ``is_error`` result carrying the feedback envelope. The engine (store
and indexes) may be built in the background, so ``initialize`` answers at once; calls take
turns on it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Annotated

from mcp.server.mcpserver import Context
from mcp_types import CallToolResult, ToolAnnotations
from pydantic import BaseModel, Field

from kgctl.retrieval.containers import STATELESS
from kgctl.retrieval.engine import QueryEngine
from kgctl.retrieval.feedback import Rejected
from kgctl.toolserver.limits import Limits
from kgctl.toolserver.server import READ, ToolServer, error_result, ok_result

INSTRUCTIONS = (
    "Answer questions over the knowledge graph by building a query step by step; classes and "
    "properties are those of the loaded ontology and of the data. Explore with "
    "list_classes / describe_class / find_entities / describe_entity; start a container with "
    "new_query(template) and refine it with the filter_* / add_* / group_by / aggregate tools. "
    "Every step is checked against the schema and dry-run on the data; a rejected step returns "
    "feedback (code, field, allowed values, ranked options) and changes nothing. Finish with "
    "execute_query."
)
LIMITS = Limits(max_text=1_000)  # labels, IRIs and values: fuzzy matching grows with length
# container steps change only the session's draft query, never the graph
STEP = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=False,
                       open_world_hint=False)

QueryId = Annotated[str, Field(description="container id returned by new_query, e.g. 'q1'")]
Variable = Annotated[str, Field(description="a variable of the container, without '?'")]
PropertyName = Annotated[str, Field(description="property of the loaded ontology or the data: "
                                                "a CURIE (prefix:name) or full IRI")]
ClassName = Annotated[str, Field(description="class of the loaded ontology or the data: a CURIE "
                                             "(prefix:name) or full IRI, as list_classes shows")]


def build_server(engine: QueryEngine | Callable[[], QueryEngine], *,
                 name: str = "kgctl-query") -> ToolServer:
    """The retrieval tools over `engine` (or the engine a factory builds, in the background)."""
    built: list[QueryEngine] = [] if callable(engine) else [engine]
    turn = threading.Lock()

    def setup() -> None:
        built.append(engine())

    server = ToolServer(name, instructions=INSTRUCTIONS, limits=LIMITS,
                        setup=setup if callable(engine) else None)

    def guarded(step: Callable[[QueryEngine], BaseModel]) -> CallToolResult:
        try:
            with turn:
                return ok_result(step(built[0]))
        except Rejected as rejected:
            return error_result(rejected.feedback)

    def key(ctx: Context) -> str:
        return server.session_key(ctx) or STATELESS

    def list_templates() -> CallToolResult:
        """Templates new_query can start from (core definitions of the main entities)."""
        return guarded(lambda e: e.list_templates())

    def list_classes(include_empty: bool = False) -> CallToolResult:
        """Ontology classes with their instance counts in the graph."""
        return guarded(lambda e: e.list_classes(include_empty=include_empty))

    def describe_class(class_name: ClassName) -> CallToolResult:
        """Properties of a class (out and in) with ranges, units and instance counts."""
        return guarded(lambda e: e.describe_class(class_name))

    def find_entities(label: str, class_name: ClassName | None = None,
                      k: int = 5) -> CallToolResult:
        """Fuzzy lookup of entities by the graph's own labels (rdfs:label, skos:prefLabel,
        foaf:name, ... as the data uses them); ranked candidates, flagged ambiguous when the best
        two are close; no_match when nothing is close enough."""
        return guarded(lambda e: e.find_entities(label, class_name=class_name, k=k))

    def describe_entity(iri: str) -> CallToolResult:
        """Types, labels and statements of one entity."""
        return guarded(lambda e: e.describe_entity(iri))

    def new_query(template: str, ctx: Context) -> CallToolResult:
        """Start a query container from a template; returns its id and SPARQL."""
        return guarded(lambda e: e.new_query(key(ctx), template))

    def filter_by_entity(query_id: QueryId, variable: Variable, entities: list[str],
                         ctx: Context) -> CallToolResult:
        """Restrict a variable to given entity IRIs (from find_entities, or any IRI the data
        uses, also untyped ones or vocabulary terms)."""
        return guarded(lambda e: e.filter_by_entity(key(ctx), query_id, variable, entities))

    def filter_by_value(query_id: QueryId, variable: Variable, value: str | float | bool,
                        ctx: Context, property: PropertyName | None = None, match: str = "exact",
                        op: str = "=", ignore_case: bool = True) -> CallToolResult:
        """Filter on a literal property (string: match exact|contains|regex, or language with
        a tag as value, e.g. 'en'; number, date, time, duration: op; boolean),
        on the label of the node an object property points to, or (no property) on the
        variable's own value. op '!=' negates (with a property: no matching value); ordering
        ops apply to numbers only."""
        return guarded(lambda e: e.filter_by_value(
            key(ctx), query_id, variable, value, property=property, match=match, op=op,
            ignore_case=ignore_case))

    def filter_by_quantity(query_id: QueryId, variable: Variable, property: PropertyName,
                           unit: str, ctx: Context, minimum: float | None = None,
                           maximum: float | None = None) -> CallToolResult:
        """Range on a quantity of the ontology's unit model (value + unit nodes), in any unit:
        values stored in other convertible units match too."""
        return guarded(lambda e: e.filter_by_quantity(
            key(ctx), query_id, variable, property, unit, minimum=minimum, maximum=maximum))

    def add_path_constraint(query_id: QueryId, variable: Variable, target_class: ClassName,
                            ctx: Context, option: int | None = None,
                            target_variable: str | None = None,
                            mode: str = "required") -> CallToolResult:
        """Join a new (or given) variable of target_class by the shortest path of the schema
        graph mined from the data and the ontology; every candidate is dry-run, and ties come
        back as options ranked by how often the data uses them (choose with option=<rank>).
        mode: required | optional | exclude (keep only rows with no such path)."""
        return guarded(lambda e: e.add_path_constraint(
            key(ctx), query_id, variable, target_class, option=option,
            target_variable=target_variable, mode=mode))

    def convert_quantity(query_id: QueryId, variable: Variable, property: PropertyName,
                         unit: str, ctx: Context, name: str | None = None) -> CallToolResult:
        """New numeric variable: the quantity's value converted to `unit` from whatever unit
        it is stored in (for aggregate, order_by, filter_by_value)."""
        return guarded(lambda e: e.convert_quantity(
            key(ctx), query_id, variable, property, unit, name=name))

    def add_provenance(query_id: QueryId, variable: Variable, ctx: Context,
                       name: str | None = None) -> CallToolResult:
        """New variable: the named graph (e.g. the paper or data file) that states the entity
        of `variable`."""
        return guarded(lambda e: e.add_provenance(key(ctx), query_id, variable, name=name))

    def nest_query(query_id: QueryId, ctx: Context) -> CallToolResult:
        """Turn the query into a sub-select whose columns become the variables of a new outer
        query, to aggregate over aggregates (e.g. the mean of per-group counts)."""
        return guarded(lambda e: e.nest_query(key(ctx), query_id))

    def add_triple(query_id: QueryId, subject: Variable, property: PropertyName, ctx: Context,
                   object: str | None = None, mode: str = "required",
                   inverse: bool = False) -> CallToolResult:
        """Schema-checked triple pattern (mode: required|optional|exclude); object is an
        existing or new variable name."""
        return guarded(lambda e: e.add_triple(
            key(ctx), query_id, subject, property, object=object, mode=mode,
            inverse=inverse))

    def group_by(query_id: QueryId, variables: list[str], ctx: Context) -> CallToolResult:
        """Group the answer by variables (other selected variables are sampled)."""
        return guarded(lambda e: e.group_by(key(ctx), query_id, variables))

    def aggregate(query_id: QueryId, function: str, ctx: Context, variable: str | None = None,
                  distinct: bool = False, alias: str | None = None,
                  having_op: str | None = None,
                  having_value: float | None = None) -> CallToolResult:
        """Add COUNT|SUM|AVG|MIN|MAX|SAMPLE|GROUP_CONCAT, optionally with a HAVING bound."""
        return guarded(lambda e: e.aggregate(
            key(ctx), query_id, function, variable=variable, distinct=distinct,
            alias=alias, having_op=having_op, having_value=having_value))

    def select(query_id: QueryId, variables: list[str], ctx: Context,
               distinct: bool = True) -> CallToolResult:
        """Set the projected variables (and aggregate aliases), in order; group keys left out
        stay in GROUP BY and are hidden (the reply says so)."""
        return guarded(lambda e: e.select(key(ctx), query_id, variables,
                                             distinct=distinct))

    def order_by(query_id: QueryId, variable: Variable, ctx: Context, descending: bool = False,
                 limit: int | None = None) -> CallToolResult:
        """Order the answer (typed values by value) and optionally keep the first `limit`
        rows (a complete top-k answer is not truncated)."""
        return guarded(lambda e: e.order_by(key(ctx), query_id, variable,
                                               descending=descending, limit=limit))

    def undo(query_id: QueryId, ctx: Context) -> CallToolResult:
        """Revert the container's last committed step."""
        return guarded(lambda e: e.undo(key(ctx), query_id))

    def show_query(query_id: QueryId, ctx: Context) -> CallToolResult:
        """The container's current SPARQL and variables."""
        return guarded(lambda e: e.show_query(key(ctx), query_id))

    def execute_query(query_id: QueryId, ctx: Context, limit: int = 100) -> CallToolResult:
        """Run the container's query; rows of text values."""
        return guarded(lambda e: e.execute_query(key(ctx), query_id, limit=limit))

    for tool in (list_templates, list_classes, describe_class, find_entities, describe_entity,
                 show_query, execute_query):
        server.add_tool(tool, annotations=READ)
    for tool in (new_query, filter_by_entity, filter_by_value, filter_by_quantity,
                 convert_quantity, add_path_constraint, add_triple, add_provenance, group_by,
                 aggregate, nest_query, select, order_by, undo):
        server.add_tool(tool, annotations=STEP)
    return server


TOOL_NAMES = (
    "list_templates", "list_classes", "describe_class", "find_entities", "describe_entity",
    "new_query", "filter_by_entity", "filter_by_value", "filter_by_quantity",
    "convert_quantity", "add_path_constraint", "add_triple", "add_provenance", "group_by",
    "aggregate", "nest_query", "select", "order_by", "undo", "show_query", "execute_query",
)
