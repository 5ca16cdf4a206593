"""The HTTP server under the app: a TCP listener, uvicorn on uvloop + httptools, slow-client
timeouts.

The listening socket is created with ``IPPROTO_TCP`` so asyncio sets ``TCP_NODELAY`` on every
accepted connection (with protocol 0 it does not, and uvicorn's separate header and body
writes meet Nagle's algorithm plus delayed ACK: a 40 ms stall per response).
"""

from __future__ import annotations

import asyncio
import socket

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from kgctl.errors import InputError

# clients that pool connections (SPARQLWrapper, httpx) must not race the server closing an
# idle one; uvicorn's 5 s default lost one request in 5,000 under the load benchmark
KEEP_ALIVE_S = 75
DEFAULT_HEADER_TIMEOUT_S = 10.0
BACKLOG = 2048
REQUEST_TIMEOUT = (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
                   b"content-length: 43\r\nconnection: close\r\n\r\n"
                   b"error: request headers not received in time\n")


def listen(host: str, port: int) -> socket.socket:
    """A bound TCP listening socket, or one clear error (port taken, unknown host)."""
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(BACKLOG)
    except OSError as exc:
        raise InputError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock


class Corked:
    """A transport that joins the writes of one event-loop step into one: uvicorn writes a
    response's head and body separately, which would cost two segments and two wakeups of
    the client."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport, self._loop = transport, loop
        self._pending: list[bytes] = []

    def write(self, data: bytes) -> None:
        if not self._pending:
            self._loop.call_soon(self._flush)
        self._pending.append(data)

    def _flush(self) -> None:
        if self._pending:
            data = b"".join(self._pending)
            self._pending.clear()
            if not self._transport.is_closing():
                self._transport.write(data)

    def close(self) -> None:
        self._flush()
        self._transport.close()

    def __getattr__(self, name: str):
        return getattr(self._transport, name)


def guarded_protocol(header_timeout_s: float) -> type[HttpToolsProtocol]:
    """uvicorn's httptools protocol that closes a connection whose request headers do not
    arrive within `header_timeout_s` (from connect, or from the first byte of a request)."""

    class Guarded(HttpToolsProtocol):
        _header_timer: asyncio.TimerHandle | None = None

        def _arm(self) -> None:
            self._disarm()
            self._header_timer = self.loop.call_later(header_timeout_s, self._too_slow)

        def _disarm(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _too_slow(self) -> None:
            if not self.transport.is_closing():
                self.transport.write(REQUEST_TIMEOUT)
                self.transport.close()

        def connection_made(self, transport) -> None:  # type: ignore[override]
            sock = transport.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            super().connection_made(Corked(transport, self.loop))
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._arm()

        def on_headers_complete(self) -> None:
            self._disarm()
            super().on_headers_complete()

    return Guarded


def uvicorn_server(app, *, header_timeout_s: float = DEFAULT_HEADER_TIMEOUT_S
                   ) -> uvicorn.Server:
    """A uvicorn server for `app` on uvloop and httptools (run with ``sockets=[listen(...)]``)."""
    config = uvicorn.Config(app, loop="uvloop", http=guarded_protocol(header_timeout_s),
                            lifespan="on", log_level="warning", access_log=False,
                            timeout_keep_alive=KEEP_ALIVE_S, backlog=BACKLOG,
                            proxy_headers=False)  # no proxy in front: client addresses as seen
    return uvicorn.Server(config)
