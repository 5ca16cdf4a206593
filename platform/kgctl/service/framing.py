r"""Where an HTTP/1.1 request ends in the bytes received so far (h11, fed each new byte once
as the peek grows), and the request itself (httptools, which also refuses what request
smuggling relies on): docs/service.md, "HTTP framing".

>>> head = b"POST /q HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\n"
>>> framer = Framer(100)
>>> framer.feed(head + b"ab"), framer.head_end, framer.feed(head + b"abcGET")
(None, 48, 51)
>>> chunked = b"GET / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
>>> request_end(chunked + b"2\r\nab\r\n0\r\n\r\n", 100)
67
>>> request_end(chunked + b"-6\r\nab", 100)
Traceback (most recent call last):
...
kgctl.service.framing.Malformed: illegal chunk header: bytearray(b'-6\r\n')
>>> parse(head + b"abc", keep_open=True).body
b'abc'
"""

from __future__ import annotations

import h11
import httptools

from kgctl.service.exchange import Request

HTTP_TOO_LARGE = 413
HTTP_HEADERS_TOO_LARGE = 431
MAX_HEAD_BYTES = 64 * 1024
PEEK_BYTES = 256 * 1024  # the largest request read whole before any of it is taken
MAX_CHUNK = 1 << 64  # a size no HTTP implementation represents: malformed, not too large
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"


class Malformed(Exception):
    """Not an HTTP/1.1 request this server can read."""


class TooLarge(Exception):
    """The request's head (431) or body (413) passes its bound."""

    def __init__(self, message: str, *, status: int = HTTP_TOO_LARGE) -> None:
        super().__init__(message)
        self.status = status


class Framer:
    """The first request of a byte stream, read by h11 from a peek that grows (each call
    gets the same bytes as the last and maybe more; new bytes alone are fed). A request over
    `max_bytes` is refused as soon as its length or a chunk size announces it."""

    def __init__(self, max_bytes: int) -> None:
        self._h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD_BYTES)
        self._max, self._fed, self._body = max_bytes, 0, 0
        self.head: h11.Request | None = None
        self.head_end: int | None = None  # offset just past the head, once it is there
        self.length: int | None = None  # Content-Length; None for a chunked body
        self.end: int | None = None

    @property
    def fresh(self) -> bool:
        """Whether nothing was fed yet."""
        return self._fed == 0

    @property
    def expects_continue(self) -> bool:
        """Whether the client waits for ``100 Continue`` before sending its body."""
        return self._h11.they_are_waiting_for_100_continue

    def feed(self, data: bytes) -> int | None:
        """The offset just past the request in `data`, None while it is incomplete."""
        if self.end is not None or len(data) == self._fed:
            return self.end
        try:
            if self.head is None:  # the head must end within its bound
                self._receive(data[:MAX_HEAD_BYTES])
                if self.head is None and len(data) >= MAX_HEAD_BYTES:
                    raise TooLarge(f"request head over {MAX_HEAD_BYTES} bytes",
                                   status=HTTP_HEADERS_TOO_LARGE)
            if self.head is not None:
                self._receive(data)
        except h11.RemoteProtocolError as exc:
            raise Malformed(str(exc)) from None
        if self.end is None and self._fed > self._max:  # framing bytes count too
            raise TooLarge(f"request over {self._max} bytes")
        return self.end

    def _receive(self, data: bytes) -> None:
        if len(data) > self._fed:
            self._h11.receive_data(data[self._fed:])
            self._fed = len(data)
        while self.end is None and (event := self._h11.next_event()) is not h11.NEED_DATA:
            if isinstance(event, h11.Request):
                self.head, self.head_end = event, self._offset()
                fields = dict(event.headers.raw_items()) if len(event.headers) > 0 else {}
                self.length = None if b"transfer-encoding" in {n.lower() for n in fields} \
                    else next((int(v) for n, v in fields.items()
                               if n.lower() == b"content-length"), 0)
            elif isinstance(event, h11.Data):
                self._body += len(event.data)
            elif isinstance(event, h11.EndOfMessage):
                self.end = self._offset()
        self._check_size()

    def _offset(self) -> int:
        return self._fed - len(self._h11.trailing_data[0])

    def _check_size(self) -> None:
        if self.head_end is None:
            return
        body = self.length
        if body is None:
            # h11 keeps the size of the chunk it reads to itself: a huge chunk is refused on
            # its size line, not after waiting for its bytes
            body = self._body + getattr(self._h11._reader, "_bytes_in_chunk", 0)
            if body >= MAX_CHUNK:
                raise Malformed("chunk size overflow")
        if self.head_end + body > self._max:
            raise TooLarge(f"request over {self._max} bytes")


def request_end(data: bytes, max_bytes: int) -> int | None:
    """The offset just past the first request in `data`, None while it is incomplete."""
    return Framer(max_bytes).feed(data)


class _Collector:
    def __init__(self) -> None:
        self.url, self.headers, self.body, self.begun, self.complete = b"", [], [], 0, False

    def on_message_begin(self) -> None:
        self.begun += 1

    def on_url(self, url: bytes) -> None:
        self.url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name.lower(), value))

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self) -> None:
        self.complete = True


def parse(data: bytes, *, keep_open: bool, client=None, server=None) -> Request:
    """The request in `data` (exactly one, as a `Framer` delimited it); `keep_open` False
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
    return _request(parser, collector, keep_open and parser.should_keep_alive(), client, server)


def whole(data: bytes, *, client=None, server=None) -> Request | None:
    r"""The request in `data` when llhttp reads exactly one there, whole, with nothing begun
    after it, a head within its bound and a Host header (HTTP/1.1); else None, and a `Framer`
    delimits it (the common case, one small request per peek, costs no h11 reading).

    >>> whole(b"GET /q HTTP/1.1\r\nHost: h\r\n\r\n").target
    b'/q'
    >>> [whole(b"GET /q HTTP/1.1\r\nHost: h\r\n\r\nGET"), whole(b"GET /q HTTP/1.1\r\n\r\n")]
    [None, None]
    """
    if len(data) > MAX_HEAD_BYTES:
        return None
    collector = _Collector()
    parser = httptools.HttpRequestParser(collector)
    try:
        parser.feed_data(data)
    except (httptools.HttpParserError, httptools.HttpParserUpgrade):  # the Framer decides
        return None
    if not collector.complete or collector.begun != 1 or (
            parser.get_http_version() != "1.0" and all(k != b"host" for k, _ in collector.headers)):
        return None
    return _request(parser, collector, parser.should_keep_alive(), client, server)


def _request(parser, collector: _Collector, keep_alive: bool, client, server) -> Request:
    return Request(method=parser.get_method().decode("latin-1"), target=collector.url,
                   version=parser.get_http_version(), headers=collector.headers,
                   body=b"".join(collector.body), keep_alive=keep_alive,
                   client=client, server=server)
