"""The one adapter between compiled tools and the MCP SDK.

Every compiled tool is registered on a `ToolServer` with its compiled input schema published,
while every argument reaches our checkers as given and a deviation comes back as a feedback
envelope (`is_error=True`). The tools, the plan's step prompts and the ontology summary
resource are compiled in the background (`initialize` does not wait for them); the store is
opened in the server lifespan. All sessions share one `Instantiator`, which takes one call at a
time.

Paper binding is per MCP session: `select_paper` binds the calling session only; a session
that has not chosen starts on the server's `paper_id=` / `--paper`. Every result names its
paper.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from functools import partial
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts import Prompt
from mcp.server.mcpserver.prompts.base import Message, UserMessage
from mcp.server.mcpserver.resources import TextResource
from mcp_types import CallToolResult
from pydantic import Field

from kgctl.compiler import ToolSpec, ToolSurface, compile_tools
from kgctl.compiler.plan import compile_plan
from kgctl.errors import KgctlError, StoreError
from kgctl.instantiation.engine import Instantiator
from kgctl.instantiation.findings import Feedback, Finding, Rejected, ToolResult
from kgctl.instantiation.values import MAX_CALL_BYTES, MAX_ITEMS, MAX_TEXT
from kgctl.ontology.ir import OntologyIR
from kgctl.ontology.summary import summary_lines
from kgctl.store.base import GraphStore
from kgctl.store.iris import paper_id as make_paper_id
from kgctl.toolserver.limits import Limits
from kgctl.toolserver.server import DESTRUCTIVE, READ, WRITE, ToolServer, error_result, ok_result

SERVER_NAME = "kgctl-instantiation"
SUMMARY_URI = "kgctl://ontology/summary"
LIMITS = Limits(max_call_bytes=MAX_CALL_BYTES, max_text=MAX_TEXT, max_items=MAX_ITEMS)
ANNOTATIONS = {"read": READ, "create": WRITE, "add": WRITE, "link": WRITE, "repair": DESTRUCTIVE}
INSTRUCTIONS = (
    "Tools compiled from the ontology. Call select_paper first: the paper binding belongs to "
    "this session. Write tools validate before writing; a refused call returns a JSON envelope "
    "(code, field, allowed, hint): fix and retry.")
PaperArg = Annotated[str, Field(description="DOI or paper id")]


class _Binding:
    def __init__(self, paper: str | None) -> None:
        self.paper = paper


class _Engine:
    """The shared Instantiator of one server run (store opened in the lifespan)."""

    def __init__(self) -> None:
        self.ir: OntologyIR | None = None
        self.surface: ToolSurface | None = None
        self.store: GraphStore | None = None
        self.instance: Instantiator | None = None
        self.lock = threading.Lock()

    def get(self, feedback: bool) -> Instantiator:
        with self.lock:
            if self.store is None or self.ir is None:
                raise StoreError("server is not running")
            if self.instance is None:
                self.instance = Instantiator(self.ir, self.store, surface=self.surface,
                                             feedback=feedback)
            return self.instance


def build_server(ir: OntologyIR | Callable[[], OntologyIR],
                 store: GraphStore | Callable[[], GraphStore], *, feedback: bool = True,
                 paper_id: str | None = None, surface: ToolSurface | None = None) -> ToolServer:
    """An MCP server exposing the compiled tools of `ir` (or of the IR a factory loads),
    compiled in the background unless `surface` is given, over `store` (a store, or a factory
    opened in the lifespan and closed after)."""
    default = make_paper_id(paper_id) if paper_id else None
    engine = _Engine()

    @asynccontextmanager
    async def lifespan(_: MCPServer) -> AsyncIterator[None]:
        opened = store() if callable(store) else store
        engine.store = opened
        try:
            yield None
        finally:
            with engine.lock:
                engine.store, engine.instance = None, None
            if callable(store):
                opened.close()

    def setup() -> None:
        engine.ir = ir() if callable(ir) else ir
        engine.surface = surface or compile_tools(engine.ir)
        for spec in engine.surface.tools:
            _register(server, spec, engine, bindings, feedback)
        _add_guides(server, engine.ir, engine.surface)

    server = ToolServer(SERVER_NAME, instructions=INSTRUCTIONS, limits=LIMITS, setup=setup,
                        lifespan=lifespan, offers=("prompts", "resources"))
    bindings = server.session_states(lambda: _Binding(default))

    def select_paper(paper_id: PaperArg, ctx: Context) -> Annotated[CallToolResult, ToolResult]:
        """Bind this session to a paper (a DOI or paper id); every later call of this session
        reads and writes that paper's graph. Other sessions keep their own binding."""
        try:
            pid = make_paper_id(paper_id)
        except ValueError:
            return error_result(Feedback.from_findings([Finding(
                code="datatype", field="paper_id", value=paper_id,
                message="not a DOI or paper id")]))
        bindings.get(server.session_key(ctx)).paper = pid
        return ok_result(ToolResult(paper=pid, tool="select_paper",
                                    summary=f"this session is bound to paper {pid}"))

    server.add_tool(select_paper, annotations=READ)
    return server


def _add_guides(server: ToolServer, ir: OntologyIR, surface: ToolSurface) -> None:
    """The extraction plan's step prompts as MCP prompts, the ontology summary as a resource."""
    plan = compile_plan(ir, surface=surface)
    for step in plan.steps:
        server.add_prompt(Prompt.from_function(
            _messages(plan.system_prompt, step.prompt), name=step.id, title=step.title,
            description=f"{step.goal} Tools: {', '.join(step.tools)}."))
    server.add_resource(TextResource(
        uri=SUMMARY_URI, name="ontology-summary", title="Ontology summary",
        description="classes, properties and rules the tools were compiled from",
        mime_type="text/plain", text="\n".join(summary_lines(ir)) + "\n"))


def _messages(system: str, step: str) -> Callable[[], list[Message]]:
    def messages() -> list[Message]:
        return [UserMessage(system), UserMessage(step)]

    return messages


def _register(server: ToolServer, spec: ToolSpec, engine: _Engine, bindings: Any,
              feedback: bool) -> None:
    def run(arguments: dict[str, Any], ctx: Context) -> Annotated[CallToolResult, ToolResult]:
        paper = bindings.get(server.session_key(ctx)).paper
        return run_tool(partial(engine.get, feedback), spec.name, paper, arguments)

    server.add_raw_tool(run, name=spec.name, description=spec.description,
                        input_schema=spec.input_schema, annotations=ANNOTATIONS[spec.action])


def run_tool(engine: Callable[[], Instantiator], tool: str, paper: str | None,
             arguments: dict[str, Any]) -> CallToolResult:
    """The handler of every compiled tool: one call on `paper` through the engine, a refusal
    or a store failure as the `is_error` envelope result. MCP sessions and in-process callers
    (`call_in_process`) both run it."""
    given = {k: v for k, v in arguments.items() if v is not None}
    try:
        if paper is None:
            raise Rejected([Finding(code="no_paper", field="paper_id",
                                    message="no paper selected in this session",
                                    hint="call select_paper first; over HTTP, open a "
                                         "session (initialize handshake) to keep it")])
        result = engine().call(tool, paper, given)
    except Rejected as exc:
        return error_result(exc.feedback)
    except KgctlError as exc:
        return error_result(Feedback.from_findings([Finding(
            code="store_error", field="", message=str(exc), retryable=False)]))
    return ok_result(result)


def call_in_process(server: ToolServer, engine: Instantiator, tool: str, paper: str,
                    arguments: dict[str, Any]) -> CallToolResult:
    """A call of `server`'s tool `tool` on `paper` as an MCP session bound to the paper makes
    it (the server's checks before any tool runs, then the same handler on `engine`), without
    the JSON-RPC round trip; `server` must be ready (`await server.ready()`)."""
    refused = server.refusal(tool, arguments)
    if refused is not None:
        return error_result(refused)
    return run_tool(lambda: engine, tool, paper, arguments)
