"""The transport options every `... serve` / `... mcp` command shares, and running a server.

Over stdio the server has one client. Over streamable HTTP it serves several: each client
opens a session (the initialize handshake; the `Mcp-Session-Id` header) and the server keeps
that session's state apart from every other's; idle sessions are dropped, and which sessions
are kept when many are open is `admission.SessionPolicy`'s choice.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

import anyio
import click
import uvicorn

from kgctl.errors import InputError
from kgctl.toolserver.admission import CLIENT_SESSIONS, MAX_SESSIONS, SessionPolicy
from kgctl.toolserver.gate import SessionGate
from kgctl.toolserver.sessions import SESSION_IDLE_SECONDS

ENDPOINT_PATH = "/mcp"
MAX_REQUEST_BYTES = 4 * 1024 * 1024  # larger HTTP bodies are refused by the transport (413)


def transport_options(default_port: int) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """--transport, --host, --port and the session options, with this server's default port."""

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        for option in reversed([
            click.option("--transport", type=click.Choice(["stdio", "http"]), default="stdio",
                         show_default=True,
                         help="stdio: one client; http: streamable HTTP, several clients"),
            click.option("--host", default="127.0.0.1", show_default=True,
                         help="HTTP: address to bind"),
            click.option("--port", type=click.IntRange(1, 65535), default=default_port,
                         show_default=True, help="HTTP: port to bind"),
            click.option("--session-idle", type=click.FloatRange(min=1), show_default=True,
                         default=SESSION_IDLE_SECONDS,
                         help="HTTP: seconds after which an idle session is dropped"),
            click.option("--max-sessions", type=click.IntRange(min=1), default=MAX_SESSIONS,
                         show_default=True, expose_value=False, callback=_remember,
                         help="HTTP: sessions open at a time"),
            click.option("--client-sessions", type=click.IntRange(min=1),
                         default=CLIENT_SESSIONS, show_default=True, expose_value=False,
                         callback=_remember,
                         help="HTTP: sessions one client (address + Mcp-Client-Id) may hold"),
        ]):
            fn = option(fn)
        return fn

    return decorate


def _remember(ctx: click.Context, param: click.Parameter, value: int) -> int:
    # the session options reach `serve` through the context, not each command's signature
    ctx.meta[f"kgctl.{param.name}"] = value
    return value


def serve(server: Any, *, transport: str, host: str, port: int, session_idle: float) -> None:
    """Run `server` (a ToolServer) until interrupted; over HTTP, print the endpoint first."""
    ctx = click.get_current_context(silent=True)
    meta = ctx.meta if ctx is not None else {}
    max_sessions = meta.get("kgctl.max_sessions", MAX_SESSIONS)
    client_sessions = meta.get("kgctl.client_sessions", CLIENT_SESSIONS)
    if transport == "stdio":
        server.run("stdio")
        return
    check_port(host, port)
    server.share(session_idle)
    app = server.streamable_http_app(  # the SDK's own cap: a backstop behind the policy's
        streamable_http_path=ENDPOINT_PATH, session_idle_timeout=session_idle,
        max_sessions=2 * max_sessions, max_request_body_size=MAX_REQUEST_BYTES, host=host)
    policy = SessionPolicy(max_sessions=max_sessions, per_client=client_sessions,
                           idle_seconds=session_idle)
    gate = SessionGate(app, policy, ENDPOINT_PATH, f"{host}:{port}")
    config = uvicorn.Config(gate, host=host, port=port, log_level="warning")
    click.echo(f"MCP endpoint: http://{host}:{port}{ENDPOINT_PATH} (streamable HTTP, "
               f"{server.name}; Ctrl-C stops)", err=True)
    anyio.run(uvicorn.Server(config).serve)


def check_port(host: str, port: int) -> None:
    """A clear error, before the endpoint is announced, when `host:port` cannot be bound."""
    try:
        socket.create_server((host, port)).close()
    except OSError as exc:
        raise InputError(f"cannot listen on {host}:{port}: {exc.strerror or exc} (another "
                         "server there? choose another --port)") from None
