"""Plain ASGI pieces for the hot path: reading a request's headers and body, answering in
one message, and a front door that hands the SPARQL endpoints their requests before the
framework's routing and middleware layers see them.

>>> scope = {"headers": [(b"host", b"example.org"), (b"Accept", b"text/csv")]}
>>> header(scope, b"accept"), header(scope, b"authorization")
('text/csv', None)
>>> content_type("text/csv"), content_type("application/sparql-results+json")
(b'text/csv; charset=utf-8', b'application/sparql-results+json')
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any

from starlette.requests import ClientDisconnect

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
Handler = Callable[[Scope, Receive, Send], Awaitable[None]]


class BodyTooLarge(Exception):
    """The request body passed the limit given to `read_body`."""


def header(scope: Scope, name: bytes) -> str | None:
    """The value of the request header `name` (lower-case bytes), or None."""
    for key, value in scope["headers"]:
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


async def respond(send: Send, status: int, media_type: str | None, body: bytes = b"",
                  headers: Mapping[str, str] | None = None) -> None:
    """Answer with `body` in one start and one body message (with its Content-Length)."""
    raw = [(b"content-length", str(len(body)).encode())]
    if media_type is not None:
        raw.append((b"content-type", content_type(media_type)))
    raw += [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


class Front:
    """ASGI app: HTTP requests to a path in `direct` go to its handler, everything else (other
    paths, lifespan) to `rest`."""

    def __init__(self, direct: Mapping[str, Handler], rest: Handler) -> None:
        self.direct, self.rest = dict(direct), rest

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        handler = self.direct.get(scope["path"]) if scope["type"] == "http" else None
        await (handler or self.rest)(scope, receive, send)
