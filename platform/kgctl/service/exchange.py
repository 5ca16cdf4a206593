"""One HTTP/1.1 exchange: an ASGI app answers one complete request (``receive`` has nothing
to wait for), the response is framed and handed to a write function.

>>> request = Request(method="HEAD", target=b"/x?a=1", version="1.1",
...                   headers=[(b"host", b"h")], body=b"", keep_alive=True)
>>> scope(request)["path"], scope(request)["query_string"]
('/x', b'a=1')
>>> simple_response(404, b"error: no\\n", keep_alive=False).split(b"\\r\\n")[0]
b'HTTP/1.1 404 Not Found'
"""

from __future__ import annotations

import asyncio
import sys
import time
import traceback
from collections.abc import Callable, Coroutine
from email.utils import formatdate
from http import HTTPStatus
from typing import Any, NamedTuple, TypeVar
from urllib.parse import unquote

from kgctl.service.asgi import Handler

HTTP_SERVER_ERROR = 500
TEXT = b"text/plain; charset=utf-8"
NO_BODY_STATUSES = frozenset({204, 304})
Write = Callable[[bytes], object]
T = TypeVar("T")


class Request(NamedTuple):
    """A complete HTTP request as the front door parsed it (header names lower-case)."""

    method: str
    target: bytes
    version: str
    headers: list[tuple[bytes, bytes]]
    body: bytes
    keep_alive: bool
    client: tuple[str, int] | None = None
    server: tuple[str, int] | None = None

    def header(self, name: bytes) -> str | None:
        for key, value in self.headers:
            if key == name:
                return value.decode("latin-1")
        return None


def scope(request: Request) -> dict:
    path, _, query = request.target.partition(b"?")
    return {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.4"},
            "http_version": request.version, "method": request.method, "scheme": "http",
            "path": unquote(path.decode("latin-1")), "raw_path": path, "query_string": query,
            "root_path": "", "headers": request.headers, "client": request.client,
            "server": request.server, "state": {}}


_date: tuple[int, bytes] = (0, b"")


def date_header() -> bytes:
    """The Date header value, made once a second."""
    global _date
    now = int(time.time())
    if _date[0] != now:
        _date = (now, formatdate(now, usegmt=True).encode())
    return _date[1]


def head(status: int, headers: list[tuple[bytes, bytes]], *, keep_alive: bool) -> bytes:
    lines = [b"HTTP/1.1 %d %s" % (status, HTTPStatus(status).phrase.encode()),
             b"date: " + date_header()]
    lines += [name + b": " + value for name, value in headers]
    if not keep_alive:
        lines.append(b"connection: close")
    return b"\r\n".join(lines) + b"\r\n\r\n"


def simple_response(status: int, body: bytes, *, keep_alive: bool,
                    media_type: bytes = TEXT) -> bytes:
    """A whole response with a small body (refusals written outside any app)."""
    return head(status, [(b"content-type", media_type),
                         (b"content-length", str(len(body)).encode())],
                keep_alive=keep_alive) + body


class Exchange:
    """The response side of one request: frames what the app sends and writes it."""

    def __init__(self, request: Request, write: Write) -> None:
        self.request, self.write = request, write
        self.keep_alive = request.keep_alive
        self.delivered = self.head_written = self.complete = self.chunked = False
        self.bodiless = request.method == "HEAD"
        self.status, self.headers = HTTP_SERVER_ERROR, []

    async def receive(self) -> dict:
        if not self.delivered:
            self.delivered = True
            return {"type": "http.request", "body": self.request.body, "more_body": False}
        await asyncio.get_running_loop().create_future()  # nothing more will come
        raise AssertionError("unreachable")

    async def send(self, message: dict) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
            self.headers = [(k.lower(), v) for k, v in message.get("headers", [])]
            self.bodiless |= self.status in NO_BODY_STATUSES
        elif message["type"] == "http.response.body" and not self.complete:
            body, more = message.get("body", b""), message.get("more_body", False)
            prefix = b"" if self.head_written else self._head(body, more)
            self.head_written = True
            self.write(prefix + self._frame(body, more))
            self.complete = not more

    def _head(self, body: bytes, more: bool) -> bytes:
        headers = self.headers
        if not self.bodiless and all(k != b"content-length" for k, _ in headers):
            if not more:
                headers = headers + [(b"content-length", str(len(body)).encode())]
            elif self.request.version == "1.1":
                self.chunked = True
                headers = headers + [(b"transfer-encoding", b"chunked")]
            else:
                self.keep_alive = False  # HTTP/1.0 and no length: closing ends the body
        return head(self.status, headers, keep_alive=self.keep_alive)

    def _frame(self, body: bytes, more: bool) -> bytes:
        if self.bodiless:
            return b""
        if not self.chunked:
            return body
        chunk = b"%x\r\n%s\r\n" % (len(body), body) if body else b""
        return chunk + (b"" if more else b"0\r\n\r\n")


async def exchange(app: Handler, request: Request, write: Write) -> bool:
    """Answer `request` with `app`; whether the connection may carry another request."""
    response = Exchange(request, write)
    try:
        await app(scope(request), response.receive, response.send)
    except OSError:  # the client went away while the answer was written
        return False
    except Exception:  # a fault of ours: logged, and the client gets a 500 if it can
        traceback.print_exc(file=sys.stderr)
        if response.head_written:
            return False
        response.write(simple_response(HTTP_SERVER_ERROR, b"error: internal server error\n",
                                       keep_alive=response.keep_alive))
        return response.keep_alive
    if not response.complete:  # the app ended without a whole answer
        if not response.head_written:
            response.write(simple_response(HTTP_SERVER_ERROR, b"error: no response\n",
                                           keep_alive=response.keep_alive))
            return response.keep_alive
        return False
    return response.keep_alive


def drive(coroutine: Coroutine[Any, Any, T], loop: asyncio.AbstractEventLoop) -> T:
    """Run `coroutine` to its end: at once when it never waits (no event loop round trip),
    else on `loop` from where it stopped. Use it only for code that needs no task of its own
    before it first waits (plain handlers; not ones that start threads through anyio)."""
    asyncio._set_running_loop(loop)  # what it creates belongs to `loop`
    try:
        waiting_on = coroutine.send(None)
    except StopIteration as done:
        return done.value
    finally:
        asyncio._set_running_loop(None)
    return loop.run_until_complete(_resume(coroutine, waiting_on))


async def _resume(coroutine: Coroutine[Any, Any, T], waiting_on: Any) -> T:
    """Go on with a coroutine that stopped to wait on `waiting_on` (a future or None)."""
    while True:
        if waiting_on is not None:
            waiting_on._asyncio_future_blocking = False
            try:
                await waiting_on
            except BaseException:  # the coroutine gets it when resumed
                pass
        try:
            waiting_on = coroutine.send(None)
        except StopIteration as done:
            return done.value
