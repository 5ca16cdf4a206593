"""Plain ASGI pieces for the hot path: reading a request's headers and body, answering in
one message, a front door that hands the SPARQL endpoints their requests before the
framework's routing and middleware layers see them, and a request's head as it travels to
the process that answers it, with the answer gathered whole.

>>> scope = {"headers": [(b"host", b"example.org"), (b"Accept", b"text/csv")]}
>>> header(scope, b"accept"), header(scope, b"authorization")
('text/csv', None)
>>> content_type("text/csv"), content_type("application/sparql-results+json")
(b'text/csv; charset=utf-8', b'application/sparql-results+json')
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any, NamedTuple

from starlette.requests import ClientDisconnect

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
Handler = Callable[[Scope, Receive, Send], Awaitable[None]]
Reply = tuple[int, list[tuple[bytes, bytes]], bytes]  # status, headers, body


class Head(NamedTuple):
    """What an HTTP request's scope holds besides its body."""

    method: str
    path: str
    raw_path: bytes
    query_string: bytes
    headers: list[tuple[bytes, bytes]]  # names in lower case
    http_version: str
    scheme: str
    client: tuple[str, int] | None
    server: tuple[str, int | None] | None
    root_path: str

    def scope(self) -> Scope:
        return {**self._asdict(), "type": "http", "state": {},
                "asgi": {"version": "3.0", "spec_version": "2.4"}}


class BodyTooLarge(Exception):
    """The request body passed the limit given to `read_body`."""


def header(scope: Scope | Head, name: bytes) -> str | None:
    """The value of the request header `name` (lower-case bytes), or None."""
    headers = scope.headers if isinstance(scope, Head) else scope["headers"]
    for key, value in headers:
        if key.lower() == name:
            return value.decode("latin-1")
    return None


def content_type(media_type: str) -> bytes:
    """`media_type` as a Content-Type value: text types say their charset."""
    if media_type.startswith("text/") and "charset" not in media_type:
        media_type += "; charset=utf-8"
    return media_type.encode("latin-1")


async def read_body(receive: Receive, limit: int, length: str | None = None) -> bytes:
    """The whole request body; BodyTooLarge as soon as it passes `limit` bytes (or its
    announced `length` does), ClientDisconnect if the client went away before its end."""
    if length is not None and length.strip().isdigit() and int(length) > limit:
        raise BodyTooLarge(f"request body over {limit} bytes")
    chunks, size, more = [], 0, True
    while more:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnect()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(f"request body over {limit} bytes")
        chunks.append(chunk)
        more = message.get("more_body", False)
    return b"".join(chunks)


def reply(status: int, media_type: str | None, body: bytes = b"",
          headers: Mapping[str, str] | None = None) -> Reply:
    """A whole answer, with its Content-Length."""
    raw = [(b"content-length", str(len(body)).encode())]
    if media_type is not None:
        raw.append((b"content-type", content_type(media_type)))
    raw += [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items()]
    return status, raw, body


def refusal(status: int, message: str, headers: Mapping[str, str] | None = None) -> Reply:
    """A refusal: an ``error:`` line a person can act on."""
    return reply(status, "text/plain", f"error: {message}\n".encode(), headers)


async def send_reply(send: Send, whole: Reply) -> None:
    """Answer with `whole` in one start and one body message."""
    status, headers, body = whole
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def keep(tasks: set[asyncio.Task], coroutine) -> None:
    """Run `coroutine` as a task that `tasks` holds until it ends (the loop holds it weakly)."""
    task = asyncio.ensure_future(coroutine)
    tasks.add(task)
    task.add_done_callback(tasks.discard)


class Front:
    """ASGI app: HTTP requests to a path in `direct` go to its handler, everything else (other
    paths, lifespan) to `rest`."""

    def __init__(self, direct: Mapping[str, Handler], rest: Handler) -> None:
        self.direct, self.rest = dict(direct), rest

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        handler = self.direct.get(scope["path"]) if scope["type"] == "http" else None
        await (handler or self.rest)(scope, receive, send)


class Gathered:
    """An app's answer to a request whose body is known whole, gathered whole."""

    def __init__(self, body: bytes) -> None:
        self.status, self.headers, self.body = 0, [], []
        self.pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive(self) -> dict:
        if self.pending:
            return self.pending.pop()
        return await asyncio.get_running_loop().create_future()  # nothing more comes

    async def send(self, message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            self.status, self.headers = message["status"], list(message.get("headers", []))
        elif message["type"] == "http.response.body":
            self.body.append(bytes(message.get("body", b"")))

    def reply(self) -> Reply | None:
        """(status, headers, body), or None when the app never started a response."""
        return (self.status, self.headers, b"".join(self.body)) if self.status else None
