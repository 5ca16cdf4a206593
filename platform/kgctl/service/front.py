"""The front door of the service: reads HTTP/1.1 requests on every connection, with limits.

Each connection is read here, in the process that owns the store, whatever answers it: a
request is parsed (httptools) within a header and a body timeout and a size bound, then handed
whole to `answer`, one request of a connection at a time (pipelined ones wait their turn, and
reading pauses meanwhile). A query worker may write the response straight to the connection;
this process keeps its own descriptor of it, so it can still answer when a worker is stopped.
"""

from __future__ import annotations

import asyncio
import socket
import sys
import traceback
from collections import deque
from collections.abc import Awaitable, Callable

import httptools

from kgctl.service.exchange import Request, simple_response

KEEP_ALIVE_S = 75.0  # pooling clients (SPARQLWrapper, httpx) must not race an idle close
MAX_HEAD_BYTES = 64 * 1024
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
HTTP_BAD_REQUEST = 400
HTTP_REQUEST_TIMEOUT = 408
HTTP_TOO_LARGE = 413
HTTP_HEADERS_TOO_LARGE = 431
Answer = Callable[["Connection", Request], Awaitable[bool]]


class Limits:
    """How long a client may take to send a request, and how large it may be."""

    def __init__(self, *, header_timeout_s: float, body_timeout_s: float,
                 max_body_bytes: int) -> None:
        self.header_timeout_s, self.body_timeout_s = header_timeout_s, body_timeout_s
        self.max_body_bytes = max_body_bytes


class Connection(asyncio.Protocol):
    """One client connection: parses its requests and has them answered in order."""

    def __init__(self, answer: Answer, limits: Limits) -> None:
        self._answer, self._limits = answer, limits
        self._loop = asyncio.get_running_loop()
        self._queue: deque[Request] = deque()
        self._busy = self.closed = False
        self._timer: asyncio.TimerHandle | None = None
        self._in_message = False

    # the connection

    def connection_made(self, transport) -> None:  # type: ignore[override]
        self.transport: asyncio.Transport = transport
        sock = transport.get_extra_info("socket")
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.fd = sock.fileno()
        self._client = _address(transport.get_extra_info("peername"))
        self._server = _address(transport.get_extra_info("sockname"))
        self._parser = httptools.HttpRequestParser(self)
        self._arm(self._limits.header_timeout_s, "request headers not received in time")

    def data_received(self, data: bytes) -> None:
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            pass  # upgrades are not offered: the request is answered as plain HTTP/1.1
        except httptools.HttpParserError:
            self._refuse(HTTP_BAD_REQUEST, "malformed HTTP request")

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._disarm()

    # the parser's callbacks

    def on_message_begin(self) -> None:
        self._in_message = True
        self._url, self._headers, self._body = b"", [], []
        self._head_size = self._body_size = 0
        if not self._busy:
            self._arm(self._limits.header_timeout_s, "request headers not received in time")

    def on_url(self, url: bytes) -> None:
        self._url += url
        self._grow_head(len(url))

    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers.append((name.lower(), value))
        self._grow_head(len(name) + len(value))

    def on_headers_complete(self) -> None:
        if self._busy:
            return
        self._disarm()
        headers = dict(self._headers)
        length = headers.get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self._limits.max_body_bytes:
            self._refuse(HTTP_TOO_LARGE, f"request body over {self._limits.max_body_bytes} bytes")
            return
        if length not in (None, b"0") or b"chunked" in headers.get(b"transfer-encoding", b""):
            self._arm(self._limits.body_timeout_s, "request body not received in time")
            if headers.get(b"expect", b"").lower() == b"100-continue":
                self.transport.write(CONTINUE)

    def on_body(self, body: bytes) -> None:
        self._body_size += len(body)
        if self._body_size > self._limits.max_body_bytes:
            self._refuse(HTTP_TOO_LARGE, f"request body over {self._limits.max_body_bytes} bytes")
            return
        self._body.append(body)

    def on_message_complete(self) -> None:
        self._in_message = False
        if self.closed:
            return
        self._queue.append(Request(
            method=self._parser.get_method().decode("latin-1"), target=self._url,
            version=self._parser.get_http_version(), headers=self._headers,
            body=b"".join(self._body), keep_alive=self._parser.should_keep_alive(),
            client=self._client, server=self._server))
        if not self._busy:
            self._disarm()
            self._busy = True
            self.transport.pause_reading()
            self._loop.create_task(self._serve())

    # answering

    async def _serve(self) -> None:
        while self._queue and not self.closed:
            request = self._queue.popleft()
            try:
                keep_alive = await self._answer(self, request)
            except Exception:  # a fault of ours: logged; the connection cannot go on
                traceback.print_exc(file=sys.stderr)
                keep_alive = False
            if not keep_alive:
                self.closed = True
                self.transport.close()
        self._busy = False
        if self.closed:
            return
        self.transport.resume_reading()
        if self._in_message:
            self._arm(self._limits.header_timeout_s, "request not received in time")
        else:
            self._arm(KEEP_ALIVE_S, None)

    def _grow_head(self, size: int) -> None:
        self._head_size += size
        if self._head_size > MAX_HEAD_BYTES:
            self._refuse(HTTP_HEADERS_TOO_LARGE, f"request head over {MAX_HEAD_BYTES} bytes")

    def _refuse(self, status: int, message: str) -> None:
        """Answer `status` with `message` and close (just close while a response is on its
        way: the two must not interleave)."""
        if self.closed:
            return
        if not self._busy:
            self.transport.write(simple_response(status, f"error: {message}\n".encode(),
                                                 keep_alive=False))
        self.closed = True
        self._disarm()
        self.transport.close()

    def _arm(self, seconds: float, message: str | None) -> None:
        """Close the connection after `seconds` (with a 408 saying `message` if given)."""
        self._disarm()
        self._timer = self._loop.call_later(seconds, self._expire, message)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _expire(self, message: str | None) -> None:
        self._timer = None
        if message is None:
            self.closed = True
            self.transport.close()
        else:
            self._refuse(HTTP_REQUEST_TIMEOUT, message)


def _address(address) -> tuple[str, int] | None:
    return (address[0], address[1]) if isinstance(address, tuple) else None
