"""The service's HTTP connections: uvicorn's httptools protocol (llhttp frames every request),
with what a public endpoint needs besides: a time limit on a request's head and on its body,
a bound on the head's size, the serving process's bounds (kgctl.service.room); and a lane
past uvicorn's ASGI cycle for the requests a query worker answers (most of them)."""

from __future__ import annotations

import asyncio
from functools import partial
from types import SimpleNamespace
from typing import TYPE_CHECKING
from urllib.parse import unquote

import httptools
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from kgctl.service.asgi import Head, Reply, keep
from kgctl.service.execution import HTTP_BAD_REQUEST, HTTP_UNAVAILABLE
from kgctl.service.room import Room

if TYPE_CHECKING:
    from kgctl.service.server import Reads

MAX_HEAD_BYTES = 64 * 1024
LINGER_S = 2.0  # a refused connection is read (and the bytes dropped) this long at most
FULL_LINGER_S = 0.1  # the same for one refused for want of room that sent nothing yet
HTTP_REQUEST_TIMEOUT = 408
HTTP_TOO_LARGE = 413
HTTP_HEAD_TOO_LARGE = 431
HTTP_NOT_IMPLEMENTED = 501
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"


class Forward:
    """A request that `Reads` answers, in the seat uvicorn keeps for a request's cycle: one
    pipelined behind it waits for it, and it for one before it (uvicorn starts it then, by
    `run_asgi`). Its body is gathered here; no task runs for it, and nothing it refers to
    refers to it (a cycle would keep its body until a full collection)."""

    message_event = SimpleNamespace(set=lambda: None)  # set when the client goes: none waits

    def __init__(self, head: Head, keep_alive: bool, expect_100: bool) -> None:
        self.head, self.keep_alive, self.expect_100 = head, keep_alive, expect_100
        self.body, self.more_body, self.started = bytearray(), True, False
        self.disconnected = self.response_started = self.response_complete = False

    async def run_asgi(self, connection: Connection) -> None:
        connection.begin(self)


def response(status: int, headers: list[tuple[bytes, bytes]], body: bytes, *,
             head: bool = False, keep_alive: bool = True) -> bytes:
    """A whole HTTP/1.1 response (one write, one segment on the wire).

    >>> whole = response(200, [(b"content-type", b"text/plain")], b"ok", keep_alive=False)
    >>> whole.split(b"\\r\\n")  # doctest: +NORMALIZE_WHITESPACE
    [b'HTTP/1.1 200 OK', b'content-type: text/plain', b'content-length: 2',
     b'connection: close', b'', b'ok']
    """
    lines = [STATUS_LINE[status]]
    for name, value in headers:
        lines += [name, b": ", value, b"\r\n"]
    if not any(name == b"content-length" for name, _ in headers):
        lines.append(b"content-length: %d\r\n" % len(body))
    if not keep_alive:
        lines.append(b"connection: close\r\n")
    lines.append(b"\r\n")
    if not head:
        lines.append(body)
    return b"".join(lines)


class Connection(HttpToolsProtocol):
    """One client connection. Its head must arrive within `header_timeout_s` of its first
    byte (of the connection, for a new one) and its body within `body_timeout_s` of the head,
    else it is answered 408 and closed; over MAX_HEAD_BYTES of head (or of chunk framing and
    trailers beyond the body's own size) is a 431. A request `reads` takes is answered in one
    write once its reply comes, any other by the ASGI app on uvicorn's cycle."""

    def __init__(self, *args, room: Room, reads: Reads, header_timeout_s: float,
                 body_timeout_s: float, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.room, self.reads = room, reads
        self.header_timeout_s, self.body_timeout_s = header_timeout_s, body_timeout_s
        self.timer: asyncio.TimerHandle | None = None
        self.in_head, self.head_bytes = True, 0  # the pieces of the head that ended
        self.served = False  # a response was sent (now kept alive, or reading another)
        # bytes received since the current request began, and how many of them were its body:
        # the rest (head, chunk framing, trailers) is bounded, also while llhttp buffers a
        # piece of it that has not ended yet
        self.raw_bytes = self.body_bytes = 0
        self.refused = False  # answered with a refusal: the connection only ends
        self.outside = False  # refused for want of room (a newcomer, or one that gave way)
        self.brief = False  # its linger is short and ends at the first bytes it sends
        self.halted: tuple[int, str] | None = None  # the answer to a parse a callback ended
        self.deferred: tuple[int, str] | None = None  # a refusal owed after earlier answers

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        victim, refused = self.room.opened(self, self.loop.time())
        if victim is not None:
            victim.give_way()
        if refused:
            self.room.closed(self)
            self.outside = True
            return self.refuse(HTTP_UNAVAILABLE, "server full: every connection it may hold "
                               "is busy; retry later")
        self._limit(self.header_timeout_s, "request headers")

    def connection_lost(self, exc) -> None:
        self._unlimit()
        self.room.closed(self)
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self.refused or self.deferred:  # what a refused client still sends is dropped
            if self.brief:
                self.transport.close()
            return
        self._unset_keepalive_if_required()
        self.raw_bytes += len(data)
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            return self.refuse(*self.halted or (HTTP_BAD_REQUEST,
                                                f"malformed HTTP request ({exc})"))
        if self.transport.is_closing():
            return
        if self.raw_bytes - self.body_bytes > MAX_HEAD_BYTES + self.body_bytes:
            return self.refuse(HTTP_HEAD_TOO_LARGE, f"request head, chunk framing or "
                               f"trailers over {MAX_HEAD_BYTES} bytes")
        # a request that arrived whole (the usual case) never starts a clock
        if self.timer is None and self.raw_bytes:
            if self.in_head:  # a head began on a kept-alive connection
                self._limit(self.header_timeout_s, "request headers")
            else:
                self._limit(self.body_timeout_s, "request body")

    def on_url(self, url: bytes) -> None:
        self._count(url)
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count(name + value)
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        if self.parser.should_upgrade():  # before uvicorn would start the app on the head
            self._halt(HTTP_BAD_REQUEST, "protocol upgrades are not supported")
        codings = b",".join(v for k, v in self.headers if k == b"transfer-encoding").lower()
        *before, last = [c.strip() for c in codings.split(b",") if c.strip()] or [b""]
        if last == b"chunked" and set(before) - {b"chunked"}:  # llhttp refuses the rest: 400
            self._halt(HTTP_NOT_IMPLEMENTED, "no transfer coding but chunked is supported")
        self.in_head, self.head_bytes = False, 0
        if not self.url.startswith((b"/", b"*")):  # absolute-form: its authority is the Host
            host = (b"host", self.url.partition(b"://")[2].split(b"/")[0].split(b"?")[0])
            self.headers[:] = [*(h for h in self.headers if h[0] != b"host"), host]  # RFC 9112
        self.room.busy(self)
        self._unlimit()
        forward = self._forward()
        if forward is None:
            return super().on_headers_complete()
        length = next((v for k, v in self.headers if k == b"content-length"), b"0")
        if length.isdigit() and int(length) > self.reads.max_body:
            self._halt(HTTP_TOO_LARGE, f"request body over {self.reads.max_body} bytes")
        earlier, self.cycle = self.cycle, forward
        if earlier is None or earlier.response_complete:
            self.begin(forward)
        else:  # pipelined: uvicorn begins it once the one before it is answered
            self.flow.pause_reading()
            self.pipeline.appendleft((forward, self))

    def _forward(self) -> Forward | None:
        """The request whose head just ended, if `reads` takes it."""
        url = httptools.parse_url(self.url)
        path = url.path.decode("ascii")
        method = self.parser.get_method().decode("ascii")
        if "%" in path:
            path = unquote(path)
        content_type = next((v for k, v in self.headers if k == b"content-type"), None)
        if not self.reads.takes(method, path, content_type and content_type.decode("latin-1")):
            return None
        version = self.parser.get_http_version()
        head = Head(method, self.root_path + path, self.root_path.encode("ascii") + url.path,
                    url.query or b"", self.headers, version, self.scheme, self.client,
                    self.server, self.root_path)
        return Forward(head, version != "1.0" and self.parser.should_keep_alive(),
                       self.expect_100_continue)

    def begin(self, forward: Forward) -> None:
        """`forward` is the request to answer now."""
        forward.started = True
        if not forward.more_body:
            return self._submit(forward)
        if forward.expect_100:
            self.transport.write(CONTINUE)

    def _submit(self, forward: Forward) -> None:
        if forward.body:
            self.room.handed(self, len(forward.body))
        self.reads.submit(forward.head, bytes(forward.body), partial(self._answer, forward))

    def _answer(self, forward: Forward, reply: Reply) -> None:
        self.room.answered(len(forward.body))
        if forward.disconnected or forward.response_complete or self.refused \
                or self.transport.is_closing():
            return  # the client went, or the connection was refused meanwhile
        status, headers, body = reply
        keep_alive = forward.keep_alive and not any(
            name == b"connection" and b"close" in value.lower() for name, value in headers)
        self.transport.write(response(status, [*self.server_state.default_headers, *headers],
                                      body, head=forward.head.method == "HEAD",
                                      keep_alive=keep_alive))
        forward.response_started = forward.response_complete = True
        if not keep_alive:
            self.transport.close()
        if self.flow.write_paused:  # a slow reader: the next request waits for it to drain
            for other in self.room.holds(self, self.transport.get_write_buffer_size()):
                other.transport.abort()  # what it held is freed at once
            keep(self.tasks, self._drained())
        else:
            self.on_response_complete()

    async def _drained(self) -> None:
        await self.flow.drain()
        self.room.holds(self, 0)
        self.on_response_complete()

    def on_body(self, body: bytes) -> None:
        self.body_bytes += len(body)
        forward = self.cycle
        if type(forward) is not Forward:
            return super().on_body(body)
        if len(forward.body) + len(body) > self.reads.max_body:
            self._halt(HTTP_TOO_LARGE, f"request body over {self.reads.max_body} bytes")
        cut = self.room.receives(self, len(body))
        if cut is None:
            self._halt(HTTP_UNAVAILABLE, "server busy: too many request bodies at once; retry "
                       "later")
        for other in cut:
            other.transport.abort()  # its body is freed at once
        forward.body += body

    def on_message_complete(self) -> None:
        self.in_head, self.raw_bytes, self.body_bytes = True, 0, 0
        self._unlimit()
        forward = self.cycle
        if type(forward) is not Forward:
            return super().on_message_complete()
        forward.more_body = False
        if forward.started:
            self._submit(forward)

    def on_response_complete(self) -> None:
        self.served, last = True, not self.pipeline
        if last:
            self.room.waits(self, self.loop.time())
        super().on_response_complete()
        if last and self.deferred:
            self.refuse(*self.deferred)

    def give_way(self) -> None:
        """Close for room: quietly when kept alive after a response and nothing of another
        request came, else with a 408."""
        if self.served and not self.raw_bytes:
            self._unlimit()
            return self.transport.close()
        self.outside = True
        self.refuse(HTTP_REQUEST_TIMEOUT, "the server is full and this connection sent no "
                    "request in time")

    def refuse(self, status: int, message: str) -> None:
        """Answer `status` (unless a response has begun) and close, after the answers owed to
        requests before the one refused (a client reads them in order)."""
        self._unlimit()
        if self.refused or self.transport.is_closing():
            return
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete:
            if self.pipeline or not cycle.more_body:  # one before it is owed its answer
                if cycle.more_body:  # the refused one waits behind it: it never runs
                    self.pipeline.popleft()
                self.deferred = (status, message)
                return
            cycle.disconnected = True  # the app's receive() sees a disconnect, its
            cycle.message_event.set()  # send() nothing more
            if cycle.response_started:
                return self.transport.close()
        self.transport.write(response(status, [*self.server_state.default_headers, (
            b"content-type", b"text/plain; charset=utf-8")], f"error: {message}\n".encode(),
            keep_alive=False))
        # closed with unread bytes, the socket would be reset and the client could lose the
        # answer: end the writing side, drop what comes, close at the client's end or soon
        self.refused = True
        self.transport.write_eof()
        if self.outside and not self.room.linger(self):
            return self.transport.close()
        # one refused for room that began a request may still be sending it: the long linger
        self.brief = self.outside and not self.raw_bytes
        self.loop.call_later(FULL_LINGER_S if self.brief else LINGER_S, self.transport.close)

    def _count(self, piece: bytes) -> None:
        """A whole piece of the head (llhttp gives a piece once it ended): past the bound, the
        parse ends here, before the app is started, and `data_received` answers 431."""
        self.head_bytes += len(piece)
        if self.head_bytes > MAX_HEAD_BYTES:
            self._halt(HTTP_HEAD_TOO_LARGE, f"request head over {MAX_HEAD_BYTES} bytes")

    def _halt(self, status: int, message: str) -> None:
        """End the parse from a callback: `data_received` answers `status`."""
        self.halted = (status, message)
        raise ValueError(message)

    def _limit(self, seconds: float, what: str) -> None:
        self._unlimit()
        self.timer = self.loop.call_later(seconds, self._late, what)

    def _late(self, what: str) -> None:
        if self.cycle is not None and self.cycle.response_complete and not self.in_head:
            return self.transport.close()  # answered before its body came: nothing owed
        self.refuse(HTTP_REQUEST_TIMEOUT, f"{what} not received in time")

    def _unlimit(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
