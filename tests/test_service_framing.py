"""HTTP framing in process: h11 delimits requests in a growing peek, llhttp reads them.

The socket tests (test_service_connections.py) send the same kinds of bytes to a server."""

from __future__ import annotations

import pytest

from kgctl.service.framing import (
    HTTP_HEADERS_TOO_LARGE,
    PEEK_BYTES,
    Framer,
    Malformed,
    TooLarge,
    parse,
    request_end,
    whole,
)

CHUNKED = (b"POST /query HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/sparql-query"
           b"\r\nTransfer-Encoding: chunked\r\n\r\n")
GET = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
BAD_SIZES = [b"-6", b"+6", b"+5", b" 6", b"6 ", b"\t6", b"0x6", b"0x10", b"6 6", b"", b"g",
             b"-0", b"6\x00", b"6\r", b"-FFFFFFFF", b"1" * 17, b"F" * 17, b"1" * 30, b"F" * 40,
             b"6 ;ext", b"5"]


def read(data: bytes, max_bytes: int = PEEK_BYTES):
    """The request in `data`, as a worker frames and parses it: llhttp alone when it reads one
    whole request, else h11 delimits it first."""
    if len(data) <= max_bytes and (request := whole(data)) is not None:
        return request
    end = request_end(data, max_bytes)
    return None if end is None else parse(data[:end], keep_open=True)


@pytest.mark.parametrize("size", BAD_SIZES, ids=repr)
def test_malformed_chunk_sizes_are_refused_on_their_size_line(size: bytes) -> None:
    with pytest.raises(Malformed):
        read(CHUNKED + size + b"\r\nASK {}\r\n0\r\n\r\n")


@pytest.mark.parametrize("size", [b"-6", b"1" * 30, b"F" * 17, b"0x10"], ids=repr)
def test_a_bad_chunk_size_is_refused_before_any_chunk_data(size: bytes) -> None:
    with pytest.raises(Malformed):
        request_end(CHUNKED + size + b"\r\n", PEEK_BYTES)


@pytest.mark.parametrize("size", [b"FFFFFFFF", b"F" * 16, b"40001"], ids=repr)
def test_a_chunk_announced_over_the_bound_is_refused_before_its_data(size: bytes) -> None:
    with pytest.raises(TooLarge) as refused:
        request_end(CHUNKED + size + b"\r\n", PEEK_BYTES)
    assert refused.value.status == 413


def test_chunks_adding_up_past_the_bound_are_refused() -> None:
    chunks = b"".join(b"1000\r\n" + b"x" * 0x1000 + b"\r\n" for _ in range(70))
    with pytest.raises(TooLarge):
        request_end(CHUNKED + chunks, PEEK_BYTES)


def test_chunk_extensions_and_trailers_are_read() -> None:
    request = read(CHUNKED + b"3;name=value;q=\"a b\"\r\nASK\r\n3\r\n {}\r\n0\r\nX-T: 1\r\n\r\n")
    assert request is not None and request.body == b"ASK {}"


@pytest.mark.parametrize("trailer", [b"X Y\r\n\r\n", b"X: a\x00b\r\n\r\n", b": v\r\n\r\n",
                                     b"X: y\r\n z\r\n\r\n"], ids=repr)
def test_bad_trailers_are_refused(trailer: bytes) -> None:
    with pytest.raises(Malformed):
        read(CHUNKED + b"6\r\nASK {}\r\n0\r\n" + trailer)


@pytest.mark.parametrize("head", [
    b"POST /q HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"0\r\n\r\n",
    b"POST /q HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n"
    b"0\r\n\r\n",
    b"POST /q HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
    b"POST /q HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc",
    b"POST /q HTTP/1.1\r\nHost: h\r\nContent-Length: 3, 3\r\n\r\nabc",
    b"POST /q HTTP/1.1\r\nHost: h\r\nContent-Length: +3\r\n\r\nabc",
    b"POST /q HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999999999\r\n\r\nabc",
    b"POST /q HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n"
    b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    b"POST /q HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n",
    b"POST /q HTTP/1.1\r\nHost: h\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n",
    b"POST /q HTTP/1.1\r\nHost: h\r\nTransfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n",
    b"GET /q HTTP/1.1\r\nHost: h\r\nX: a\r\n b\r\n\r\n",
    b"GET /q HTTP/1.1\nHost: h\n\n",
    b"GET /q HTTP/1.1\r\nHost: h\rX: 1\r\n\r\n",
    b"NOT HTTP AT ALL\r\n\r\n",
], ids=["cl-te", "te-cl", "two-lengths", "same-length-twice", "length-list", "signed-length",
        "huge-length", "te-twice", "te-not-last-chunked", "space-before-colon", "folded-te",
        "obs-fold", "bare-lf", "bare-cr", "not-http"])
def test_smuggling_and_malformed_heads_are_refused(head: bytes) -> None:
    with pytest.raises((Malformed, TooLarge)):
        read(head)


@pytest.mark.parametrize("whole", [False, True])
def test_a_head_over_64_kb_is_refused_431(whole: bool) -> None:
    head = b"GET / HTTP/1.1\r\nHost: h\r\nX: " + b"y" * 70_000 + (b"\r\n\r\n" if whole else b"")
    with pytest.raises(TooLarge) as refused:
        request_end(head, PEEK_BYTES)
    assert refused.value.status == HTTP_HEADERS_TOO_LARGE


def test_a_request_fed_a_byte_at_a_time_ends_where_it_ends() -> None:
    data = CHUNKED + b"3\r\nASK\r\n3\r\n {}\r\n0\r\n\r\n" + GET
    framer, ends = Framer(PEEK_BYTES), []
    for size in range(1, len(data) + 1):
        ends.append(framer.feed(data[:size]))
    whole = len(data) - len(GET)
    assert ends[whole - 2] is None and ends[whole - 1:] == [whole] * (len(GET) + 1)
    assert parse(data[:whole], keep_open=True).body == b"ASK {}"


def test_pipelined_requests_are_delimited_one_by_one() -> None:
    post = b"POST /q HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc"
    assert whole(post + GET) is None and whole(post + b"\r\nG") is None and whole(post)
    assert request_end(post + GET + post, PEEK_BYTES) == len(post)
    assert request_end(GET + post, PEEK_BYTES) == len(GET)


def test_the_head_alone_tells_length_fields_and_continue() -> None:
    head = (b"PUT /store?default HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer t\r\n"
            b"Content-Length: 900000\r\nExpect: 100-continue\r\n\r\n")
    framer = Framer(PEEK_BYTES)
    with pytest.raises(TooLarge):
        framer.feed(head)
    assert framer.head_end == len(head) and framer.length == 900000 and framer.expects_continue
    assert dict(framer.head.headers)[b"authorization"] == b"Bearer t"
    chunked = Framer(PEEK_BYTES)
    assert chunked.feed(CHUNKED) is None and chunked.head_end and chunked.length is None
    waiting = Framer(PEEK_BYTES)
    assert waiting.feed(head.replace(b"900000", b"3")) is None and waiting.expects_continue
