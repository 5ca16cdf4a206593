r"""Where an HTTP/1.1 request ends in the bytes received so far, and the request itself.

A query worker only takes a request off its connection once the whole request is there (it
reads with ``MSG_PEEK`` until then), so a connection can move to another worker with nothing
lost. This finds the end (head, then a Content-Length or chunked body); httptools parses.

>>> head = b"POST /q HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\n"
>>> request_end(head + b"ab", 100), request_end(head + b"abcGET", 100)
(None, 51)
>>> request_end(b"GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n0\r\n\r\n", 100)
58
>>> request_end(b"GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n-6\r\nab", 100)
Traceback (most recent call last):
...
kgctl.service.framing.Malformed: bad chunk size
>>> parse(head + b"abc", keep_open=True).body
b'abc'
"""

from __future__ import annotations

import re

import httptools

from kgctl.service.exchange import Request

HTTP_TOO_LARGE = 413
HTTP_HEADERS_TOO_LARGE = 431
HEAD_END = b"\r\n\r\n"
MAX_HEAD_BYTES = 64 * 1024
PEEK_BYTES = 256 * 1024  # the largest request read whole before any of it is taken
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
_LENGTH = re.compile(rb"\r\ncontent-length[ \t]*:[ \t]*(\d+)[ \t]*(?=\r\n)", re.IGNORECASE)
_CHUNKED = re.compile(rb"\r\ntransfer-encoding[ \t]*:[^\r\n]*chunked", re.IGNORECASE)
# RFC 9112 chunk-size: hex digits only (no sign, space or prefix), then optional extensions;
# 15 digits bound it far above any body limit
_CHUNK_SIZE = re.compile(rb"([0-9A-Fa-f]{1,15})(?:;[^\r\n]*)?")


class Malformed(Exception):
    """Not an HTTP/1.1 request this server can read."""


class TooLarge(Exception):
    """The request's head (431) or body (413) passes its bound."""

    def __init__(self, message: str, *, status: int = HTTP_TOO_LARGE) -> None:
        super().__init__(message)
        self.status = status


def head_end(data: bytes) -> int | None:
    end = data.find(HEAD_END, 0, MAX_HEAD_BYTES)
    if end < 0:
        if len(data) > MAX_HEAD_BYTES:
            raise TooLarge(f"request head over {MAX_HEAD_BYTES} bytes",
                           status=HTTP_HEADERS_TOO_LARGE)
        return None
    return end + len(HEAD_END)


def body_length(head: bytes) -> int | None:
    """The Content-Length of a head; None for a chunked body."""
    if _CHUNKED.search(head):
        return None
    lengths = set(_LENGTH.findall(head))
    if len(lengths) > 1:
        raise Malformed("conflicting Content-Length headers")
    return int(lengths.pop()) if lengths else 0


def request_end(data: bytes, max_body: int) -> int | None:
    """The offset just past the first request in `data`, None while it is incomplete."""
    end = head_end(data)
    if end is None:
        return None
    length = body_length(data[:end])
    if length is None:
        return _chunked_end(data, end, max_body)
    if length > max_body:
        raise TooLarge(f"request body over {max_body} bytes")
    return end + length if len(data) >= end + length else None


def _chunked_end(data: bytes, at: int, max_body: int) -> int | None:
    size = 0
    while True:
        line_end = data.find(b"\r\n", at)
        if line_end < 0:
            return None
        size_line = _CHUNK_SIZE.fullmatch(data, at, line_end)
        if size_line is None:
            raise Malformed("bad chunk size")
        chunk = int(size_line.group(1), 16)
        size += chunk
        if size > max_body:
            raise TooLarge(f"request body over {max_body} bytes")
        at = line_end + 2
        if chunk == 0:  # trailers end with an empty line
            end = data.find(b"\r\n", at)
            while end > at:
                at = end + 2
                end = data.find(b"\r\n", at)
            return at + 2 if end == at else None
        at += chunk + 2
        if len(data) < at:
            return None
        if data[at - 2:at] != b"\r\n":
            raise Malformed("chunk longer than its size")


class _Collector:
    def __init__(self) -> None:
        self.url, self.headers, self.body, self.complete = b"", [], [], False

    def on_url(self, url: bytes) -> None:
        self.url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name.lower(), value))

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self) -> None:
        self.complete = True


def head_fields(head: bytes) -> list[tuple[bytes, bytes]]:
    """The header fields of a request head (names lower-case), its body not needed."""
    collector = _Collector()
    try:
        httptools.HttpRequestParser(collector).feed_data(head)
    except httptools.HttpParserUpgrade:
        pass
    except httptools.HttpParserError as exc:
        raise Malformed(str(exc)) from None
    return collector.headers


def parse(data: bytes, *, keep_open: bool, client=None, server=None) -> Request:
    """The request in `data` (exactly one, as `request_end` delimited it); `keep_open` False
    when the connection cannot carry another request whatever the client asks."""
    collector = _Collector()
    parser = httptools.HttpRequestParser(collector)
    try:
        parser.feed_data(data)
    except httptools.HttpParserUpgrade:
        pass  # upgrades are not offered: the request is answered as plain HTTP/1.1
    except httptools.HttpParserError as exc:
        raise Malformed(str(exc)) from None
    if not collector.complete:
        raise Malformed("incomplete request")
    return Request(method=parser.get_method().decode("latin-1"), target=collector.url,
                   version=parser.get_http_version(), headers=collector.headers,
                   body=b"".join(collector.body),
                   keep_alive=keep_open and parser.should_keep_alive(),
                   client=client, server=server)
