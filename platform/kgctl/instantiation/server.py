"""The one adapter between compiled tools and the MCP SDK.

Every compiled tool is registered with `MCPServer.add_tool`; its published input schema is the
compiled one, while the SDK-side parameters accept anything so that every deviation reaches
our checkers and comes back as a feedback envelope (`is_error=True`, JSON text) instead of an
SDK validation message. The store is opened in the server lifespan.

Paper binding: a server is bound to one paper at a time (`paper_id=` / `--paper`); the
`select_paper` tool switches it for the whole server. Every result names its paper.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from mcp_types import CallToolResult, TextContent
from pydantic import ConfigDict

from kgctl.compiler import ToolSpec, ToolSurface, compile_tools
from kgctl.errors import KgctlError
from kgctl.instantiation.engine import Instantiator
from kgctl.instantiation.findings import Feedback, Finding, Rejected, ToolResult
from kgctl.ontology.ir import OntologyIR
from kgctl.store.base import GraphStore
from kgctl.store.iris import paper_id as make_paper_id

SERVER_NAME = "kgctl-instantiation"
_SELECT = ToolSpec(name="select_paper", action="session", toolset="session",
                   description="Bind this server to a paper (a DOI or paper id); every later "
                               "call reads and writes that paper's graph.",
                   input_schema={"type": "object", "additionalProperties": False,
                                 "required": ["paper_id"],
                                 "properties": {"paper_id": {"type": "string",
                                                             "description": "DOI or paper id"}}})


class _Session:
    def __init__(self, paper: str | None) -> None:
        self.paper = paper
        self.engine: Instantiator | None = None


def build_server(ir: OntologyIR, store: GraphStore | Callable[[], GraphStore], *,
                 feedback: bool = True, paper_id: str | None = None,
                 surface: ToolSurface | None = None) -> MCPServer:
    """An MCP server exposing the compiled tools of `ir` over `store` (a store, or a factory
    opened in the lifespan and closed after)."""
    surface = surface or compile_tools(ir)
    session = _Session(make_paper_id(paper_id) if paper_id else None)

    @asynccontextmanager
    async def lifespan(_: MCPServer) -> AsyncIterator[None]:
        opened = store() if callable(store) else store
        session.engine = Instantiator(ir, opened, surface=surface, feedback=feedback)
        try:
            yield None
        finally:
            session.engine = None
            if callable(store):
                opened.close()

    server = MCPServer(SERVER_NAME, lifespan=lifespan, instructions=(
        "Tools compiled from the ontology. Write tools validate before writing; a refused call "
        "returns a JSON envelope (code, field, allowed, hint): fix and retry."))
    for spec in (*surface.tools, _SELECT):
        _register(server, spec, session)
    return server


class _RawArguments(ArgModelBase):
    """SDK-side argument model that keeps every argument as given (checked by us)."""

    model_config = ConfigDict(extra="allow", arbitrary_types_allowed=True)

    def model_dump_one_level(self) -> dict[str, Any]:
        return {"arguments": dict(self.model_extra or {})}


def _register(server: MCPServer, spec: ToolSpec, session: _Session) -> None:
    async def run(arguments: dict[str, Any]) -> Annotated[CallToolResult, ToolResult]:
        given = {k: v for k, v in arguments.items() if v is not None}
        try:
            result = _dispatch(spec, session, given)
        except Rejected as exc:
            return _error(exc.feedback)
        except KgctlError as exc:
            return _error(Feedback.from_findings([Finding(
                code="store_error", field="", message=str(exc), retryable=False)]))
        return CallToolResult(content=[TextContent(type="text", text=result.model_dump_json())],
                              structured_content=result.model_dump(mode="json"))

    server.add_tool(run, name=spec.name, description=spec.description)
    # publish the compiled schema; every argument reaches our checkers (see module doc)
    tool = server._tool_manager.get_tool(spec.name)
    tool.parameters = spec.input_schema
    tool.fn_metadata.arg_model = _RawArguments


def _dispatch(spec: ToolSpec, session: _Session, given: dict[str, Any]) -> ToolResult:
    if session.engine is None:
        raise KgctlError("server is not running")
    if spec.action == "session":
        return _select(session, given)
    if session.paper is None:
        raise Rejected([Finding(code="no_paper", field="paper_id", message="no paper selected",
                                hint="call select_paper first")])
    return session.engine.call(spec.name, session.paper, given)


def _select(session: _Session, given: dict[str, Any]) -> ToolResult:
    raw = given.get("paper_id")
    try:
        pid = make_paper_id(str(raw)) if isinstance(raw, str) else None
    except ValueError:
        pid = None
    if pid is None:
        raise Rejected([Finding(code="datatype", field="paper_id", value=raw,
                                message="not a DOI or paper id")])
    session.paper = pid
    return ToolResult(paper=pid, tool="select_paper", summary=f"bound to paper {pid}")


def _error(feedback: Feedback) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=feedback.to_json())],
                          is_error=True)
