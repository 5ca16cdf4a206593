"""The owning process's share of the requests: those that change the store, handed over
unread by a worker, read here within the timeouts and size bounds, answered, and the
connection given back."""

from __future__ import annotations

import asyncio
import socket
import time

from kgctl.service.app import authorise
from kgctl.service.asgi import Handler
from kgctl.service.config import ServiceConfig
from kgctl.service.exchange import Request, exchange, simple_response
from kgctl.service.execution import HttpProblem
from kgctl.service.framing import CONTINUE, PEEK_BYTES, Framer, Malformed, TooLarge, parse
from kgctl.service.protocol import needs_writer

HTTP_BAD_REQUEST = 400
HTTP_REQUEST_TIMEOUT = 408
HTTP_LENGTH_REQUIRED = 411
HTTP_TOO_LARGE = 413


async def answer_write(app: Handler, sock: socket.socket, config: ServiceConfig,
                       waiting: str, deadline: float) -> bool:
    """Read one request from `sock` and answer it; whether the connection may go on. The
    connection was `waiting` for its head or body until `deadline` (time.monotonic()), or idle:
    the clock started by the worker goes on here."""
    loop = asyncio.get_running_loop()
    sock.setblocking(False)
    now = time.monotonic()
    clock = _Clock(config, head_by=deadline if waiting == "head" else now
                   + config.header_timeout_s, body_by=deadline if waiting == "body" else None)
    try:
        async with asyncio.timeout(None) as clock.limit:
            clock.reschedule()
            request = await _read(sock, config, clock)
        path = request.target.partition(b"?")[0].decode("latin-1")
        if not needs_writer(request.method, path, request.header(b"content-type"),
                            request.body):
            raise HttpProblem(HTTP_TOO_LARGE, f"a query may be at most {PEEK_BYTES} bytes")
    except TimeoutError:
        await _send(loop, sock, HTTP_REQUEST_TIMEOUT, "request not received in time")
        return False
    except HttpProblem as refusal:
        await _send(loop, sock, refusal.status, str(refusal))
        return False
    chunks: list[bytes] = []
    keep_alive = await exchange(app, request, chunks.append)
    try:
        await loop.sock_sendall(sock, b"".join(chunks))
    except OSError:
        return False
    return keep_alive


class _Clock:
    """The deadline of the request being read: its head's, then its body's."""

    def __init__(self, config: ServiceConfig, head_by: float, body_by: float | None) -> None:
        self._body_s, self.head_by, self.body_by = config.body_timeout_s, head_by, body_by
        self.limit: asyncio.Timeout | None = None

    def head_read(self) -> None:
        if self.body_by is None:
            self.body_by = time.monotonic() + self._body_s
            self.reschedule()

    def reschedule(self) -> None:
        assert self.limit is not None
        by = self.head_by if self.body_by is None else self.body_by
        self.limit.reschedule(asyncio.get_running_loop().time() + by - time.monotonic())


async def _read(sock: socket.socket, config: ServiceConfig, clock: _Clock) -> Request:
    loop = asyncio.get_running_loop()
    framer, continued = Framer(PEEK_BYTES), False
    while True:
        data = await _peek(loop, sock)
        try:
            end = framer.feed(data)
        except TooLarge as exc:
            if framer.head_end is None:
                raise HttpProblem(exc.status, str(exc)) from None
            clock.head_read()
            return await _read_large(loop, sock, data[:framer.head_end], framer, config)
        except Malformed as exc:
            raise HttpProblem(HTTP_BAD_REQUEST, f"malformed HTTP request: {exc}") from None
        if end is not None:
            await loop.sock_recv(sock, end)
            return _parse(data[:end], sock)
        if framer.head_end is not None:
            clock.head_read()
            if framer.expects_continue and not continued:
                continued = True
                await loop.sock_sendall(sock, CONTINUE)
        await _readable(loop, sock, len(data))


async def _read_large(loop, sock: socket.socket, head: bytes, framer: Framer,
                      config: ServiceConfig) -> Request:
    """A request whose body is larger than a peek: the head, then exactly its body, read only
    once the head's bearer token and length are accepted."""
    if framer.length is None:
        raise HttpProblem(HTTP_LENGTH_REQUIRED, f"a chunked body may be at most {PEEK_BYTES} "
                          "bytes; send Content-Length")
    if framer.length > config.max_bytes:
        raise HttpProblem(HTTP_TOO_LARGE, f"request body over {config.max_bytes} bytes")
    assert framer.head is not None
    token = dict(framer.head.headers).get(b"authorization", b"").decode("latin-1")
    authorise(token, config.update_token)
    await loop.sock_recv(sock, len(head))
    if framer.expects_continue:
        await loop.sock_sendall(sock, CONTINUE)
    body = bytearray()
    while len(body) < framer.length:
        chunk = await loop.sock_recv(sock, min(framer.length - len(body), 1 << 20))
        if not chunk:
            raise HttpProblem(HTTP_BAD_REQUEST, "the request body ended early")
        body += chunk
    return _parse(head + body, sock)


def _parse(data: bytes, sock: socket.socket) -> Request:
    try:
        return parse(data, keep_open=True, client=tuple(sock.getpeername()[:2]),
                     server=tuple(sock.getsockname()[:2]))
    except Malformed as exc:
        raise HttpProblem(HTTP_BAD_REQUEST, f"malformed HTTP request: {exc}") from None


async def _peek(loop, sock: socket.socket) -> bytes:
    while True:
        try:
            data = sock.recv(PEEK_BYTES + 1, socket.MSG_PEEK)
        except BlockingIOError:
            await _readable(loop, sock, 0)
            continue
        if not data:
            raise HttpProblem(HTTP_BAD_REQUEST, "the connection closed before a whole request")
        return data


async def _readable(loop, sock: socket.socket, seen: int) -> None:
    """Wait until more than `seen` bytes wait on `sock` (or it closes)."""
    while True:
        ready = loop.create_future()
        loop.add_reader(sock.fileno(), _settle, ready)
        try:
            await ready
        finally:
            loop.remove_reader(sock.fileno())
        try:
            if len(sock.recv(PEEK_BYTES + 1, socket.MSG_PEEK)) != seen:
                return
        except BlockingIOError:
            continue
        except OSError:
            return
        await asyncio.sleep(0.01)  # level-triggered: the same bytes are still there


def _settle(future: asyncio.Future) -> None:
    if not future.done():
        future.set_result(None)


async def _send(loop, sock: socket.socket, status: int, message: str) -> None:
    try:
        await loop.sock_sendall(sock, simple_response(status, f"error: {message}\n".encode(),
                                                      keep_alive=False))
    except OSError:
        pass
