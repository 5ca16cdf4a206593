"""The transport options every `... serve` / `... mcp` command shares, and running a server.

Over stdio the server has one client. Over streamable HTTP it serves several: each client
opens a session (the initialize handshake; the `Mcp-Session-Id` header) and the server keeps
that session's state apart from every other's; idle sessions are dropped.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

import click

from kgctl.errors import InputError
from kgctl.toolserver.sessions import MAX_SESSIONS, SESSION_IDLE_SECONDS

ENDPOINT_PATH = "/mcp"
MAX_REQUEST_BYTES = 4 * 1024 * 1024  # larger HTTP bodies are refused by the transport (413)


def transport_options(default_port: int) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """--transport, --host, --port and --session-idle, with this server's default port."""

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
        ]):
            fn = option(fn)
        return fn

    return decorate


def serve(server: Any, *, transport: str, host: str, port: int, session_idle: float) -> None:
    """Run `server` (a ToolServer) until interrupted; over HTTP, print the endpoint first."""
    if transport == "stdio":
        server.run("stdio")
        return
    check_port(host, port)
    server.share(session_idle)
    click.echo(f"MCP endpoint: http://{host}:{port}{ENDPOINT_PATH} (streamable HTTP, "
               f"{server.name}; Ctrl-C stops)", err=True)
    server.run("streamable-http", host=host, port=port, streamable_http_path=ENDPOINT_PATH,
               session_idle_timeout=session_idle, max_sessions=MAX_SESSIONS,
               max_request_body_size=MAX_REQUEST_BYTES)


def check_port(host: str, port: int) -> None:
    """A clear error, before the endpoint is announced, when `host:port` cannot be bound."""
    try:
        socket.create_server((host, port)).close()
    except OSError as exc:
        raise InputError(f"cannot listen on {host}:{port}: {exc.strerror or exc} (another "
                         "server there? choose another --port)") from None
