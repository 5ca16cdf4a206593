"""The query-building MCP server: registers the retrieval tools with ``MCPServer``.

Containers are keyed by the MCP session: the transport's session id when it has one (streamable
HTTP), else the connection object (stdio, in-process, initialize handshake). Stateless requests
(2026-07-28 protocol, no session) share one namespace whose container ids are unguessable
tokens, so a container is reachable only by the client it was returned to. A rejected step
becomes an ``is_error`` result whose structured content is the feedback record.
"""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Callable
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult, TextContent
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, Field

from kgctl.retrieval.containers import STATELESS
from kgctl.retrieval.engine import QueryEngine
from kgctl.retrieval.feedback import Rejected

INSTRUCTIONS = (
    "Answer questions over the knowledge graph by building a query step by step. Explore with "
    "list_classes / describe_class / find_entities / describe_entity; start a container with "
    "new_query(template) and refine it with the filter_* / add_* / group_by / aggregate tools. "
    "Every step is checked against the schema and dry-run on the data; a rejected step returns "
    "feedback (code, field, allowed values, ranked options) and changes nothing. Finish with "
    "execute_query."
)

QueryId = Annotated[str, Field(description="container id returned by new_query, e.g. 'q1'")]
Variable = Annotated[str, Field(description="a variable of the container, without '?'")]
PropertyName = Annotated[str, Field(description="property CURIE, e.g. 'ontosyn:hasOrder'")]
ClassName = Annotated[str, Field(description="class CURIE, e.g. 'ontosyn:ChemicalSynthesis'")]


class SessionKeys:
    """Stable text keys for MCP sessions, without keeping connections alive."""

    def __init__(self) -> None:
        self._keys: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
        self._counter = itertools.count(1)

    def of(self, ctx: Context) -> str:
        connection = ctx.session._connection  # the per-connection object behind the session
        if getattr(connection, "session_id", None):
            return "http:" + connection.session_id
        if connection.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return STATELESS
        if connection not in self._keys:
            self._keys[connection] = f"conn:{next(self._counter)}"
        return self._keys[connection]


def build_server(engine: QueryEngine, *, name: str = "kgctl-query") -> MCPServer:
    server = MCPServer(name, instructions=INSTRUCTIONS)
    keys = SessionKeys()

    def guarded(fn: Callable[[], BaseModel]) -> CallToolResult:
        try:
            result, is_error = fn(), False
        except Rejected as rejected:
            result, is_error = rejected.feedback, True
        return CallToolResult(content=[TextContent(type="text", text=result.model_dump_json())],
                              structured_content=result.model_dump(mode="json"),
                              is_error=is_error)

    def list_templates() -> CallToolResult:
        """Templates new_query can start from (core definitions of the main entities)."""
        return guarded(engine.list_templates)

    def list_classes(include_empty: bool = False) -> CallToolResult:
        """Ontology classes with their instance counts in the graph."""
        return guarded(lambda: engine.list_classes(include_empty=include_empty))

    def describe_class(class_name: ClassName) -> CallToolResult:
        """Properties of a class (out and in) with ranges, units and instance counts."""
        return guarded(lambda: engine.describe_class(class_name))

    def find_entities(label: str, class_name: ClassName | None = None,
                      k: int = 5) -> CallToolResult:
        """Fuzzy lookup of entities by the graph's own labels; ranked candidates, flagged
        ambiguous when the best two are close."""
        return guarded(lambda: engine.find_entities(label, class_name=class_name, k=k))

    def describe_entity(iri: str) -> CallToolResult:
        """Types, labels and statements of one entity."""
        return guarded(lambda: engine.describe_entity(iri))

    def new_query(template: str, ctx: Context) -> CallToolResult:
        """Start a query container from a template; returns its id and SPARQL."""
        return guarded(lambda: engine.new_query(keys.of(ctx), template))

    def filter_by_entity(query_id: QueryId, variable: Variable, entities: list[str],
                         ctx: Context) -> CallToolResult:
        """Restrict a variable to given entity IRIs (from find_entities)."""
        return guarded(lambda: engine.filter_by_entity(keys.of(ctx), query_id, variable,
                                                       entities))

    def filter_by_value(query_id: QueryId, variable: Variable, value: str | float | bool,
                        ctx: Context, property: PropertyName | None = None, match: str = "exact",
                        op: str = "=", ignore_case: bool = True) -> CallToolResult:
        """Filter on a literal property (string: exact|contains|regex; number: op; boolean),
        on the label of the node an object property points to, or (no property) on the
        variable's own value. op '!=' negates (with a property: no matching value); ordering
        ops apply to numbers only."""
        return guarded(lambda: engine.filter_by_value(
            keys.of(ctx), query_id, variable, value, property=property, match=match, op=op,
            ignore_case=ignore_case))

    def filter_by_quantity(query_id: QueryId, variable: Variable, property: PropertyName,
                           unit: str, ctx: Context, minimum: float | None = None,
                           maximum: float | None = None) -> CallToolResult:
        """Numeric/temporal range on an OM-2 quantity, in any unit: values stored in other
        convertible units match too (above 100 °C matches 393 K)."""
        return guarded(lambda: engine.filter_by_quantity(
            keys.of(ctx), query_id, variable, property, unit, minimum=minimum, maximum=maximum))

    def add_path_constraint(query_id: QueryId, variable: Variable, target_class: ClassName,
                            ctx: Context, option: int | None = None,
                            target_variable: str | None = None,
                            mode: str = "required") -> CallToolResult:
        """Join a new (or given) variable of target_class by the shortest schema path;
        ambiguous paths come back as ranked options to choose with option=<rank>.
        mode: required | optional | exclude (keep only rows with no such path)."""
        return guarded(lambda: engine.add_path_constraint(
            keys.of(ctx), query_id, variable, target_class, option=option,
            target_variable=target_variable, mode=mode))

    def convert_quantity(query_id: QueryId, variable: Variable, property: PropertyName,
                         unit: str, ctx: Context, name: str | None = None) -> CallToolResult:
        """New numeric variable: the quantity's value converted to `unit` from whatever unit
        it is stored in (for aggregate, order_by, filter_by_value)."""
        return guarded(lambda: engine.convert_quantity(
            keys.of(ctx), query_id, variable, property, unit, name=name))

    def add_provenance(query_id: QueryId, variable: Variable, ctx: Context,
                       name: str | None = None) -> CallToolResult:
        """New variable: the paper (named graph) that states the entity of `variable`."""
        return guarded(lambda: engine.add_provenance(keys.of(ctx), query_id, variable,
                                                     name=name))

    def nest_query(query_id: QueryId, ctx: Context) -> CallToolResult:
        """Turn the query into a sub-select whose columns become the variables of a new outer
        query, to aggregate over aggregates (e.g. the mean of per-synthesis counts)."""
        return guarded(lambda: engine.nest_query(keys.of(ctx), query_id))

    def add_triple(query_id: QueryId, subject: Variable, property: PropertyName, ctx: Context,
                   object: str | None = None, mode: str = "required",
                   inverse: bool = False) -> CallToolResult:
        """Schema-checked triple pattern (mode: required|optional|exclude); object is an
        existing or new variable name."""
        return guarded(lambda: engine.add_triple(
            keys.of(ctx), query_id, subject, property, object=object, mode=mode,
            inverse=inverse))

    def group_by(query_id: QueryId, variables: list[str], ctx: Context) -> CallToolResult:
        """Group the answer by variables (other selected variables are sampled)."""
        return guarded(lambda: engine.group_by(keys.of(ctx), query_id, variables))

    def aggregate(query_id: QueryId, function: str, ctx: Context, variable: str | None = None,
                  distinct: bool = False, alias: str | None = None,
                  having_op: str | None = None,
                  having_value: float | None = None) -> CallToolResult:
        """Add COUNT|SUM|AVG|MIN|MAX|SAMPLE|GROUP_CONCAT, optionally with a HAVING bound."""
        return guarded(lambda: engine.aggregate(
            keys.of(ctx), query_id, function, variable=variable, distinct=distinct,
            alias=alias, having_op=having_op, having_value=having_value))

    def select(query_id: QueryId, variables: list[str], ctx: Context,
               distinct: bool = True) -> CallToolResult:
        """Set the projected variables (and aggregate aliases), in order."""
        return guarded(lambda: engine.select(keys.of(ctx), query_id, variables,
                                             distinct=distinct))

    def order_by(query_id: QueryId, variable: Variable, ctx: Context, descending: bool = False,
                 limit: int | None = None) -> CallToolResult:
        """Order the answer (and optionally keep the first `limit` rows)."""
        return guarded(lambda: engine.order_by(keys.of(ctx), query_id, variable,
                                               descending=descending, limit=limit))

    def undo(query_id: QueryId, ctx: Context) -> CallToolResult:
        """Revert the container's last committed step."""
        return guarded(lambda: engine.undo(keys.of(ctx), query_id))

    def show_query(query_id: QueryId, ctx: Context) -> CallToolResult:
        """The container's current SPARQL and variables."""
        return guarded(lambda: engine.show_query(keys.of(ctx), query_id))

    def execute_query(query_id: QueryId, ctx: Context, limit: int = 100) -> CallToolResult:
        """Run the container's query; rows of text values."""
        return guarded(lambda: engine.execute_query(keys.of(ctx), query_id, limit=limit))

    for tool in (list_templates, list_classes, describe_class, find_entities, describe_entity,
                 new_query, filter_by_entity, filter_by_value, filter_by_quantity,
                 convert_quantity, add_path_constraint, add_triple, add_provenance, group_by,
                 aggregate, nest_query, select, order_by, undo, show_query, execute_query):
        server.add_tool(tool)
    return server


TOOL_NAMES = (
    "list_templates", "list_classes", "describe_class", "find_entities", "describe_entity",
    "new_query", "filter_by_entity", "filter_by_value", "filter_by_quantity",
    "convert_quantity", "add_path_constraint", "add_triple", "add_provenance", "group_by",
    "aggregate", "nest_query", "select", "order_by", "undo", "show_query", "execute_query",
)
