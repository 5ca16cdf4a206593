"""`ToolServer`: the `MCPServer` every kgctl MCP server is built on.

What it adds, the same on all three servers:
- every refusal is an `is_error` result carrying a `kgctl.feedback.Envelope` as JSON text (and
  as structured content, unless the tool publishes an output schema): input limits (checked
  before any work), unknown tools, unknown arguments, type errors, and failures (in mcp 2.x
  raw exceptions would become protocol errors or SDK prose, so the result is built here);
- per-session state keys (`keys`), the version in `serverInfo`; prompts and resources are
  advertised only by a server that `offers` them;
- lazy loading: `setup` (heavy work: compiling tools, loading an index) runs in a background
  thread, started when an HTTP server starts or once a stdio client's `initialize` has been
  answered (so the answer does not share the CPU with it); listing or calling tools waits.
"""

from __future__ import annotations

import difflib
import logging
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext, suppress
from typing import Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from mcp_types import (
    CallToolResult,
    DiscoverResult,
    NotificationParams,
    RequestParams,
    TextContent,
    ToolAnnotations,
)
from mcp_types import Prompt as MCPPrompt
from mcp_types import Resource as MCPResource
from mcp_types import Tool as MCPTool
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import BaseModel, ConfigDict, ValidationError

from kgctl import __version__
from kgctl.errors import KgctlError, StoreError
from kgctl.feedback import Envelope
from kgctl.toolserver.limits import Limits, check_arguments
from kgctl.toolserver.sessions import SessionKeys, SessionStates, StateT

log = logging.getLogger("kgctl.toolserver")

READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                       open_world_hint=False)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                        open_world_hint=False)
DESTRUCTIVE = ToolAnnotations(read_only_hint=False, destructive_hint=True,
                              idempotent_hint=False, open_world_hint=False)
# pydantic error types -> envelope codes
_CODES = {"missing": "required_missing", "literal_error": "enum_value", "enum": "enum_value",
          "greater_than_equal": "range", "less_than_equal": "range", "greater_than": "range",
          "less_than": "range", "extra_forbidden": "unknown_argument"}
_TOO_LONG = {"string_too_long": "characters", "too_long": "items"}
_EMPTY = ("prompts/list", "prompts/get", "resources/list", "resources/read",
          "resources/templates/list")
DEFAULT_LIMITS = Limits()
_SHOWN = 80  # characters of a refused value echoed back


def error_result(envelope: Envelope) -> CallToolResult:
    """The one error shape: the envelope as JSON text and as structured content (the latter
    dropped by `ToolServer.call_tool` for tools with an output schema)."""
    return CallToolResult(content=[TextContent(type="text", text=envelope.to_json())],
                          structured_content=envelope.model_dump(mode="json"), is_error=True)


def ok_result(result: BaseModel) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=result.model_dump_json())],
                          structured_content=result.model_dump(mode="json"))


class _RawArguments(ArgModelBase):
    """SDK-side argument model that keeps every argument as given (the adapter checks them)."""

    model_config = ConfigDict(extra="allow", arbitrary_types_allowed=True)

    def model_dump_one_level(self) -> dict[str, Any]:
        return {"arguments": dict(self.model_extra or {})}


class ToolServer(MCPServer):
    """An `MCPServer` with kgctl's error shape, limits, session state and lazy `setup`."""

    def __init__(self, name: str, *, instructions: str, limits: Limits = DEFAULT_LIMITS,
                 setup: Callable[[], None] | None = None, offers: tuple[str, ...] = (),
                 lifespan: Callable[[MCPServer], AbstractAsyncContextManager[Any]] | None = None
                 ) -> None:
        super().__init__(name, instructions=instructions, version=__version__,
                         log_level="WARNING", lifespan=self._lifespan)
        self.limits, self.keys = limits, SessionKeys()
        self._inner_lifespan = lifespan
        self._states: list[SessionStates[Any]] = []
        self._setup, self._setup_error = setup, None
        self._setup_lock = threading.Lock()
        self._loaded = threading.Event()
        self._setup_thread: threading.Thread | None = None
        if setup is None:
            self._loaded.set()
        for method in _EMPTY:  # advertise prompts / resources only when offered
            if method.split("/")[0] not in offers:
                self._lowlevel_server._request_handlers.pop(method, None)
        self._lowlevel_server.add_notification_handler(
            "notifications/initialized", NotificationParams, self._initialized)

    # -- registration -------------------------------------------------------------------------
    def add_raw_tool(self, fn: Callable[..., Any], *, name: str, description: str,
                     input_schema: dict[str, Any], annotations: ToolAnnotations) -> None:
        """Register `fn(arguments: dict, ctx)` under a published `input_schema`; every argument
        the schema names reaches `fn` as given, so the adapter's own checkers judge values."""
        self.add_tool(fn, name=name, description=description, annotations=annotations)
        tool = self._tool_manager.get_tool(name)
        tool.parameters = input_schema
        tool.fn_metadata.arg_model = _RawArguments

    def session_states(self, factory: Callable[[], StateT]) -> SessionStates[StateT]:
        """Per-session state of this server, dropped after the sessions' idle time."""
        states = SessionStates(factory)
        self._states.append(states)
        return states

    def session_key(self, ctx: Context) -> str | None:
        return self.keys.of(ctx.session._connection)

    def share(self, idle_seconds: float) -> None:
        """Serve several clients (HTTP): stateless requests get no session, discovery
        advertises the handshake protocols only (so clients open a session), and session
        state is dropped after `idle_seconds`, like the transport's sessions."""
        self.keys.shared = True
        for states in self._states:
            states.max_idle = idle_seconds
        low = self._lowlevel_server

        async def discover(ctx: Any, params: RequestParams) -> DiscoverResult:
            return DiscoverResult(supported_versions=list(HANDSHAKE_PROTOCOL_VERSIONS),
                                  capabilities=low.get_capabilities(),
                                  instructions=low.instructions)

        low.add_request_handler("server/discover", RequestParams, discover)

    # -- lazy loading ---------------------------------------------------------------------------
    @asynccontextmanager
    async def _lifespan(self, app: MCPServer) -> AsyncIterator[Any]:
        if self.keys.shared:  # an HTTP server loads before its first client comes
            self._warm_up()
        inner = self._inner_lifespan(app) if self._inner_lifespan else nullcontext()
        try:
            async with inner as value:
                yield value
        finally:  # a process that exits while setup runs in a native library aborts
            if self._setup_thread is not None:
                await anyio.to_thread.run_sync(self._setup_thread.join)

    async def _initialized(self, ctx: Any, params: NotificationParams) -> None:
        # a stdio client waits for `initialize`: load once it has been answered
        self._warm_up()

    def _warm_up(self) -> None:
        if not self._loaded.is_set() and self._setup_thread is None:
            self._setup_thread = threading.Thread(target=self._run_setup, name="kgctl-setup",
                                                  daemon=True)
            self._setup_thread.start()

    def _run_setup(self) -> None:
        with self._setup_lock:
            setup, self._setup = self._setup, None
            if setup is None:
                return
            try:
                setup()
            except Exception as exc:  # reported to every call as an envelope, and logged once
                self._setup_error = exc
                log.error("error: %s", exc)
            finally:
                self._loaded.set()

    async def ready(self) -> None:
        """Wait until `setup` has run; raise what it raised."""
        if not self._loaded.is_set():
            await anyio.to_thread.run_sync(self._run_setup)
        if self._setup_error is not None:
            raise self._setup_error

    # -- the MCP surface ------------------------------------------------------------------------
    async def list_tools(self) -> list[MCPTool]:
        with suppress(Exception):  # a failed setup: the tools that did register are listed
            await self.ready()
        return await super().list_tools()

    async def list_prompts(self) -> list[MCPPrompt]:
        with suppress(Exception):  # prompts may be registered by `setup`
            await self.ready()
        return await super().list_prompts()

    async def get_prompt(self, name: str, arguments: dict[str, Any] | None = None,
                         context: Context | None = None) -> Any:
        with suppress(Exception):
            await self.ready()
        return await super().get_prompt(name, arguments, context)

    async def list_resources(self) -> list[MCPResource]:
        with suppress(Exception):  # resources may be registered by `setup`
            await self.ready()
        return await super().list_resources()

    async def read_resource(self, uri: Any, context: Context | None = None) -> Any:
        with suppress(Exception):
            await self.ready()
        return await super().read_resource(uri, context)

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        context: Context | None = None) -> Any:
        result = await self._call(name, arguments, context)
        tool = self._tool_manager.get_tool(name)
        if getattr(result, "is_error", False) and tool is not None and tool.output_schema:
            # clients validate any structured content against the output schema, errors too
            # (the TypeScript SDK does): the envelope then travels as the JSON text only
            result = result.model_copy(update={"structured_content": None})
        return result

    async def _call(self, name: str, arguments: dict[str, Any], context: Context | None) -> Any:
        refused = self._over_limits(name, arguments)  # before any work, setup included
        if refused is None:
            try:
                await self.ready()
            except Exception as exc:  # noqa: BLE001
                return error_result(Envelope(code="unavailable", message=f"the server could "
                                             f"not load: {exc}", retryable=False))
            refused = self._unknown(name, arguments)
        if refused is not None:
            return error_result(refused)
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            return error_result(_failure(name, exc))

    def refusal(self, name: str, arguments: dict[str, Any]) -> Envelope | None:
        """What `call_tool` refuses before a tool runs (input limits, unknown tool or
        argument), for a caller that runs the tool's handler in process; after `ready`."""
        return self._over_limits(name, arguments) or self._unknown(name, arguments)

    def _over_limits(self, name: str, arguments: dict[str, Any]) -> Envelope | None:
        return check_arguments({"tool": name, **arguments} if len(name) > self.limits.max_text
                               else arguments, self.limits)

    def _unknown(self, name: str, arguments: dict[str, Any]) -> Envelope | None:
        tool = self._tool_manager.get_tool(name)
        if tool is None:
            return _unknown_tool(name, [t.name for t in self._tool_manager.list_tools()])
        known = tool.parameters.get("properties", {})
        unknown = sorted(set(arguments) - set(known))
        return _unknown_argument(name, unknown[0], sorted(known)) if unknown else None


def _unknown_tool(name: str, names: list[str]) -> Envelope:
    near = difflib.get_close_matches(name, names, n=3, cutoff=0.5)
    return Envelope(code="unknown_tool", field="tool", value=name[:_SHOWN],
                    message=f"no tool named {name[:_SHOWN]!r}",
                    allowed=tuple(dict.fromkeys([*near, *sorted(names)])),
                    hint=f"did you mean {near[0]!r}?" if near else "list the tools first",
                    retryable=False)


def _unknown_argument(tool: str, name: str, known: list[str]) -> Envelope:
    near = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
    return Envelope(code="unknown_argument", field=name[:_SHOWN],
                    message=f"{tool} has no argument {name[:_SHOWN]!r}",
                    allowed=tuple(dict.fromkeys([*near, *known])),
                    hint=f"did you mean {near[0]!r}?" if near else "")


def _failure(tool: str, exc: ToolError) -> Envelope:
    cause = exc.__cause__
    if isinstance(cause, ValidationError):
        error = cause.errors(include_url=False)[0]
        field = ".".join(str(part) for part in error["loc"])
        allowed = error.get("ctx", {}).get("expected", ())
        if error["type"] in _TOO_LONG:  # the size only, never the text (docs/mcp.md)
            size = len(error["input"])
            return Envelope(code="too_large", field=field or None, value=size,
                            message=f"{size} {_TOO_LONG[error['type']]}; at most "
                                    f"{error.get('ctx', {}).get('max_length')}")
        return Envelope(code=_CODES.get(error["type"], "datatype"), field=field or None,
                        value=None if error["type"] == "missing" else error.get("input"),
                        message=error["msg"],
                        allowed=(allowed,) if isinstance(allowed, str) else tuple(allowed))
    if isinstance(cause, KgctlError):
        return Envelope(code="store_error" if isinstance(cause, StoreError) else "tool_error",
                        message=str(cause), retryable=False)
    if isinstance(exc, UnexpectedToolError):
        log.error("tool %s failed", tool, exc_info=cause or exc)
        return Envelope(code="internal_error", message=f"{tool} failed unexpectedly (see the "
                        "server log)", retryable=False)
    return Envelope(code="tool_error", message=str(exc), retryable=False)
