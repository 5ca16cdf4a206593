"""The service's HTTP connections in process, without sockets: `Room` as a pure state machine,
and `Connection` (uvicorn's httptools protocol) fed bytes by hand on a real event loop, over a
transport that records what it is given, an app that records what it is asked and `Reads`
that record what they are handed (requests to /query and /c; the app gets the others).

The socket tests (test_service_connections.py, test_service_limits.py) send some of the same
bytes to a live server."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from functools import partial

import pytest
import uvicorn
import uvloop
from service_helpers import Responses
from uvicorn.server import ServerState

from kgctl.service import connections
from kgctl.service.asgi import Head, Reply
from kgctl.service.connections import MAX_HEAD_BYTES, Connection
from kgctl.service.room import EVICT_AFTER_S, Room, connection_cap

BOUND_S = 10.0  # how long a test waits for something that takes milliseconds
SLOW_S = 60.0  # a timeout that a test must never reach
TIMEOUT_S = 0.05  # a timeout that a test waits for
CHUNKED = (b"POST /query HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/sparql-query"
           b"\r\nTransfer-Encoding: chunked\r\n\r\n")
GET = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
FORWARDED = frozenset({"/query", "/c"})


# --- Room -------------------------------------------------------------------------------------


def test_room_holds_up_to_its_cap_and_refuses_the_next_while_none_waited_long() -> None:
    room = Room(cap=2)
    assert room.opened("a", now=0.0) == (None, False)
    assert room.opened("b", now=0.1) == (None, False)
    assert room.opened("c", now=EVICT_AFTER_S - 0.01) == (None, True)
    assert room.held == {"a", "b"} and list(room.waiting) == ["a", "b"]


def test_room_evicts_the_longest_waiting_first() -> None:
    room = Room(cap=2)
    room.opened("a", now=0.0)
    room.opened("b", now=0.5)
    assert room.opened("c", now=EVICT_AFTER_S) == ("a", False)  # waited exactly the minimum
    assert room.opened("d", now=0.5 + EVICT_AFTER_S) == ("b", False)
    assert room.opened("e", now=0.6 + EVICT_AFTER_S) == (None, True)  # "c" waited 0.6 s
    assert room.held == {"c", "d"} and list(room.waiting) == ["c", "d"]


def test_a_busy_connection_is_never_evicted() -> None:
    room = Room(cap=2)
    room.opened("a", now=0.0)
    room.opened("b", now=0.5)
    room.busy("a")
    assert room.opened("c", now=10.0) == ("b", False)
    room.busy("c")
    assert room.opened("d", now=100.0) == (None, True)  # every one held is busy
    assert room.held == {"a", "c"} and not room.waiting


def test_a_connection_waiting_again_goes_to_the_end_of_the_line() -> None:
    room = Room(cap=2)
    room.opened("a", now=0.0)
    room.opened("b", now=0.5)
    room.busy("a")
    room.waits("a", now=0.7)  # answered: kept alive, waiting since 0.7
    assert list(room.waiting) == ["b", "a"]
    assert room.opened("c", now=0.5 + EVICT_AFTER_S) == ("b", False)
    assert room.opened("d", now=0.6 + EVICT_AFTER_S) == (None, True)  # "a" waited 0.9 s
    assert room.opened("d", now=0.7 + EVICT_AFTER_S) == ("a", False)


def test_a_closed_connection_frees_its_place_and_is_not_put_back() -> None:
    room = Room(cap=1)
    room.opened("a", now=0.0)
    room.closed("a")
    room.waits("a", now=0.1)  # its last response ended after it closed: nothing changes
    assert not room.held and not room.waiting
    assert room.opened("b", now=0.2) == (None, False)
    room.closed("c")  # never held: nothing to do
    assert room.held == {"b"}


def test_answers_not_taken_are_held_within_the_bound_cutting_the_longest_holding_first() -> None:
    room = Room(cap=10, memory=100)
    for name in "abcd":
        room.opened(name, now=0.0)
    assert room.holds("a", 40) == room.holds("b", 40) == []
    assert room.holds("a", 0) == []  # "a" took its answer
    assert room.holds("c", 50) == [] and room.holds("a", 30) == ["b"]  # 120 held: "b" is cut
    assert room.holds("d", 100) == ["c", "a"] and room.unsent == {"d": 100}
    assert room.held == {"d"}  # those cut are closed
    room.closed("d")
    assert room.unsent == {}
    unbounded = Room(cap=1)
    unbounded.opened("a", now=0.0)
    assert unbounded.holds("a", 10**12) == []


def test_read_bodies_are_held_within_the_bound_cutting_off_the_one_grown_least_lately() -> None:
    room = Room(cap=10, memory=100)
    for name in "abc":
        room.opened(name, now=0.0)
    assert room.receives("a", 40) == room.receives("b", 40) == []
    assert room.receives("a", 10) == []  # "a" grew last
    room.handed("a", 50)  # its body went to a worker: held, but no longer arriving
    assert room.receives("c", 30) == ["b"] and room.bodies == 80 and "b" not in room.held
    assert room.receives("c", 30) is None  # the rest is its own and a handed body: refused
    room.answered(50)
    assert room.receives("c", 30) == [] and room.bodies == 60
    room.closed("c")
    assert room.bodies == 0 and not room.arriving
    assert Room(cap=1).receives("a", 10**12) == []  # no bound


def test_bytes_held_stay_within_the_bound_through_10000_random_steps() -> None:
    """Bodies arriving, handed to workers and answered, answers held and taken, connections
    cut off or closed, in random order: what the room counts is what is held, never past the
    bound, and a connection cut off holds nothing."""
    rng, memory = random.Random(7), 1000
    room, names = Room(cap=100, memory=memory), [f"c{n}" for n in range(12)]
    arriving, unsent, handed = dict.fromkeys(names, 0), dict.fromkeys(names, 0), []

    def gone(name: str) -> None:
        arriving[name] = unsent[name] = 0

    for name in names:
        room.opened(name, now=0.0)
    for _ in range(10_000):
        name, step = rng.choice(names), rng.randrange(6)
        if name not in room.held:
            room.opened(name, now=0.0)
        elif step == 0:
            size = rng.randrange(1, 400)
            cut = room.receives(name, size)
            if cut is None:  # refused: the connection ends
                room.closed(name)
                gone(name)
            else:
                freed = [arriving[other] for other in cut]
                for other in cut:
                    gone(other)
                arriving[name] += size
                assert not cut or room.bodies + freed[-1] > memory  # none cut needlessly
        elif step == 1 and arriving[name]:
            room.handed(name, arriving[name])
            handed.append(arriving[name])
            arriving[name] = 0
        elif step == 2 and handed:
            room.answered(handed.pop(rng.randrange(len(handed))))
        elif step == 3:
            unsent[name] = rng.choice((0, rng.randrange(1, 600)))
            cut = room.holds(name, unsent[name])
            freed = [unsent[other] for other in cut]
            for other in cut:
                gone(other)
            assert not cut or sum(unsent.values()) + freed[-1] > memory
        elif step == 4:
            room.closed(name)
            gone(name)
        assert room.bodies == sum(arriving.values()) + sum(handed) <= memory
        assert room.arriving == {n: b for n, b in arriving.items() if b}
        assert room.unsent == {n: b for n, b in unsent.items() if b}
        assert sum(unsent.values()) <= memory
        assert set(room.arriving) | set(room.unsent) <= room.held


@pytest.mark.parametrize(("descriptors", "cap"), [(1024, 768), (4096, 3840), (20000, 18750)])
def test_the_connection_cap_keeps_descriptors_spare(descriptors: int, cap: int) -> None:
    assert connection_cap(descriptors) == cap


# --- Connection, in process --------------------------------------------------------------------


class Transport:
    """What a Connection writes and whether it closed; closing tells the protocol at the next
    turn of the loop, as asyncio's transports do."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop, self.written, self.protocol, self.writes = loop, bytearray(), None, 0
        self.closed, self.paused, self.lost = asyncio.Event(), False, False

    def write(self, data: bytes) -> None:
        assert not self.closed.is_set(), "written after close"
        self.written += data
        self.writes += 1

    def close(self) -> None:
        self.closed.set()
        if not self.lost:
            self.lost = True
            self.loop.call_soon(self.protocol.connection_lost, None)

    def abort(self) -> None:
        self.close()

    def get_write_buffer_size(self) -> int:  # what a client that reads nothing left
        return len(self.written) if self.protocol.flow.write_paused else 0

    def write_eof(self) -> None:  # a refusal: nothing more is written (the socket closes
        self.closed.set()  # when the client ends, or after a linger)

    def is_closing(self) -> bool:
        return self.closed.is_set()

    def get_extra_info(self, name: str, default=None):
        return {"peername": ("127.0.0.1", 40000), "sockname": ("127.0.0.1", 8000)}.get(
            name, default)

    def pause_reading(self) -> None:
        self.paused = True

    def resume_reading(self) -> None:
        self.paused = False

    def responses(self) -> list[tuple[int, bytes]]:
        """The responses written so far, whole ones only (an interim 100 is one)."""
        parsed = Responses()
        parsed.feed(bytes(self.written))
        return parsed.done


class App:
    """An ASGI app that reads each request's body whole and answers 200 with its path and
    body; it records the messages it received, by request."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, list[dict]]] = []
        self.reading = asyncio.Event()
        self.delay_s = 0.0  # how long it takes to answer, once the body is read
        self.reads_body = True  # False: it answers without reading the body (as /healthz)

    async def __call__(self, scope, receive, send) -> None:
        received: list[dict] = []
        self.requests.append((scope["path"], received))
        self.reading.set()
        while self.reads_body:
            message = await receive()
            received.append(message)
            if message["type"] == "http.disconnect":
                return
            if not message.get("more_body"):
                break
        await asyncio.sleep(self.delay_s)
        body = scope["path"].encode() + b" " + b"".join(m["body"] for m in received)
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-length", b"%d" % len(body))]})
        await send({"type": "http.response.body", "body": body})


class Reads:
    """Takes the requests to FORWARDED paths and answers them as `app` would (after its
    delay); records what it was handed."""

    max_body = 64

    def __init__(self, app: App) -> None:
        self.app, self.requests = app, []

    def takes(self, method: str, path: str, content_type: str | None) -> bool:
        return path in FORWARDED

    def submit(self, head: Head, body: bytes, answered: Callable[[Reply], None]) -> None:
        self.requests.append((head, body))
        reply = (200, [(b"content-type", b"text/plain")], head.path.encode() + b" " + body)
        asyncio.get_running_loop().call_later(self.app.delay_s, answered, reply)


class Peer:
    """One connection: a Connection made as the service makes it, its transport, app and
    reads."""

    def __init__(self, room: Room | None = None, *, header_timeout_s: float = SLOW_S,
                 body_timeout_s: float = SLOW_S) -> None:
        room = Room(cap=100) if room is None else room
        self.loop = asyncio.get_running_loop()
        self.app = App()
        self.reads = Reads(self.app)
        protocol = partial(Connection, room=room, reads=self.reads,
                           header_timeout_s=header_timeout_s, body_timeout_s=body_timeout_s)
        config = uvicorn.Config(  # as kgctl.service.server builds it
            self.app, http=protocol, loop="none", lifespan="off", interface="asgi3",
            log_config=None, log_level="warning", access_log=False, server_header=False,
            proxy_headers=False, timeout_keep_alive=int(header_timeout_s) or 1)
        config.load()
        self.state = ServerState()
        self.connection: Connection = config.http_protocol_class(
            config=config, server_state=self.state, app_state={}, _loop=self.loop)
        self.transport = Transport(self.loop)
        self.transport.protocol = self.connection
        self.connection.connection_made(self.transport)

    def send(self, data: bytes) -> None:
        self.connection.data_received(data)

    async def until(self, condition: Callable[[], bool]) -> None:
        """Run the loop until `condition()` holds (at most BOUND_S)."""
        async with asyncio.timeout(BOUND_S):
            while not condition():
                await asyncio.sleep(0.001)

    async def settled(self) -> None:
        """Run the loop until the app's tasks ended (and what they scheduled ran)."""
        await self.until(lambda: not self.state.tasks)
        await asyncio.sleep(0)

    async def closed(self) -> None:
        """Run the loop until the connection closed (and the protocol was told)."""
        async with asyncio.timeout(BOUND_S):
            await self.transport.closed.wait()
        await asyncio.sleep(0)  # connection_lost runs

    def statuses(self) -> list[int]:
        return [status for status, _ in self.transport.responses()]

    def app_got_nothing(self) -> bool:
        """Whether neither the app nor the reads got a request they could act on: the app not
        called, or told only of a disconnect (it is called once a head is read, before the
        body is); the reads never handed one."""
        return not self.reads.requests and all(
            received in ([], [{"type": "http.disconnect"}]) for _, received in self.app.requests)


BAD_SIZES = [b"-6", b"+6", b"+5", b" 6", b"6 ", b"\t6", b"0x6", b"0x10", b"6 6", b"", b"g",
             b"-0", b"6\x00", b"6\r", b"-FFFFFFFF", b"1" * 17, b"F" * 17, b"1" * 30, b"F" * 40,
             b"6 ;ext", b"5"]


@pytest.mark.parametrize("size", BAD_SIZES, ids=repr)
def test_a_malformed_chunk_size_is_answered_400_and_the_app_gets_no_body(size: bytes) -> None:
    """`5` announces less than the data sent: the chunk's end is where its data goes on."""
    async def scenario() -> None:
        peer = Peer()
        peer.send(CHUNKED + size + b"\r\nASK {}\r\n0\r\n\r\n")
        await peer.closed()
        await peer.settled()
        assert peer.statuses() == [400]
        assert b"malformed HTTP request" in peer.transport.responses()[0][1]
        assert peer.app_got_nothing()
    uvloop.run(scenario())


def test_a_refused_client_still_sending_gets_its_answer_and_the_connection_ends(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Closed with unread bytes, a socket is reset and the client may lose the answer: the
    refusal ends the writing side, what comes after is dropped, and the socket closes after
    a linger."""
    monkeypatch.setattr(connections, "LINGER_S", 0.05)

    async def scenario() -> None:
        peer = Peer()
        peer.send(CHUNKED + b"-6\r\n")
        await peer.closed()
        peer.send(b"ASK {}\r\n" * 1000)  # still sending: nothing more is answered
        async with asyncio.timeout(BOUND_S):
            while not peer.transport.lost:
                await asyncio.sleep(0.01)
        assert peer.statuses() == [400] and peer.app_got_nothing()
    uvloop.run(scenario())


def test_a_request_that_arrives_whole_is_answered_and_starts_no_clock() -> None:
    async def scenario() -> None:
        peer = Peer()
        assert peer.connection.timer is not None  # the head's, from the connection's opening
        peer.send(CHUNKED + b"3;name=value;q=\"a b\"\r\nASK\r\n3\r\n {}\r\n0\r\n\r\n")
        assert peer.connection.timer is None
        await peer.until(lambda: len(peer.transport.responses()) == 1)
        assert peer.transport.responses() == [(200, b"/query ASK {}")]
        assert peer.connection.timer is None and not peer.transport.is_closing()
        peer.transport.close()
        await peer.closed()
    uvloop.run(scenario())


def test_a_request_with_trailers_answered_after_the_header_timeout_is_answered() -> None:
    """Trailers are head-like lines after the body: they must not start the next request's
    clock while this one is being answered."""
    async def scenario() -> None:
        peer = Peer(header_timeout_s=TIMEOUT_S)
        peer.app.delay_s = 4 * TIMEOUT_S
        peer.send(CHUNKED + b"6\r\nASK {}\r\n0\r\nX-Trailer: 1\r\n\r\n")
        await peer.until(lambda: peer.transport.responses() or peer.transport.is_closing())
        assert peer.transport.responses() == [(200, b"/query ASK {}")]
        peer.transport.close()
        await peer.closed()
    uvloop.run(scenario())


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
    b"POST /q HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\nabc",
    b"POST /q HTTP/1.1\r\nHost: h\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n",
    b"POST /q HTTP/1.1\r\nHost: h\r\nTransfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n",
    b"GET /q HTTP/1.1\r\nHost: h\r\nX: a\r\n b\r\n\r\n",
    b"GET /q HTTP/1.1\nHost: h\n\n",
    b"GET /q HTTP/1.1\r\nHost: h\rX: 1\r\n\r\n",
    b"GET /q HTTP/1.1\r\nHost: h\r\nX: a\x00b\r\n\r\n",
    b"NOT HTTP AT ALL\r\n\r\n",
    b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
], ids=["cl-te", "te-cl", "two-lengths", "same-length-twice", "length-list", "signed-length",
        "huge-length", "te-twice", "te-not-last-chunked", "te-not-chunked",
        "space-before-colon", "folded-te", "obs-fold", "bare-lf", "bare-cr", "nul-in-value",
        "not-http", "http2-preface"])
def test_smuggling_and_malformed_heads_are_answered_400_and_the_app_gets_nothing(head: bytes
                                                                                ) -> None:
    assert_refused(head)


def assert_refused(data: bytes, status: int = 400) -> None:
    """`data` is answered `status` and the connection closed; the app gets nothing of it."""
    async def scenario() -> None:
        peer = Peer()
        peer.send(data)
        await peer.closed()
        await peer.settled()
        assert peer.statuses() == [status] and peer.app_got_nothing()
    uvloop.run(scenario())


@pytest.mark.parametrize("codings", [b"gzip, chunked", b"identity,chunked",
                                     b"gzip\r\nTransfer-Encoding: chunked"], ids=repr)
def test_a_coding_before_chunked_is_answered_501_and_the_app_gets_nothing(codings: bytes
                                                                         ) -> None:
    assert_refused(b"POST /q HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: " + codings
                   + b"\r\n\r\n3\r\nabc\r\n0\r\n\r\n", 501)


@pytest.mark.parametrize("trailer", [b"X Y\r\n\r\n", b"X: a\x00b\r\n\r\n", b": v\r\n\r\n",
                                     b"X: y\r\n z\r\n\r\n"], ids=repr)
def test_bad_trailers_are_answered_400_and_the_body_never_reaches_the_app(trailer: bytes
                                                                          ) -> None:
    assert_refused(CHUNKED + b"6\r\nASK {}\r\n0\r\n" + trailer)


@pytest.mark.parametrize("head", [
    b"GET /q HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
    b"GET /q HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n",
    b"DELETE /store?graph=urn:g HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer t\r\n"
    b"Connection: Upgrade\r\nUpgrade: h2c\r\n\r\n",
    b"CONNECT h:80 HTTP/1.1\r\nHost: h:80\r\n\r\n",
], ids=["websocket", "h2c", "h2c-delete", "connect"])
def test_protocol_upgrades_are_answered_400_and_the_app_is_never_started(head: bytes) -> None:
    """Not even on the head alone: a read would run in the serving process, a write without a
    body (DELETE) would be made, then answered 400."""
    async def scenario() -> None:
        peer = Peer()
        peer.send(head)
        await peer.closed()
        await peer.settled()
        assert peer.statuses() == [400] and peer.app.requests == [] and not peer.reads.requests
    uvloop.run(scenario())


HUGE = MAX_HEAD_BYTES + 4096


@pytest.mark.parametrize("head", [
    b"GET / HTTP/1.1\r\nHost: h\r\nX: " + b"y" * HUGE + b"\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: h\r\n" + b"".join(b"X-%d: %s\r\n" % (i, b"y" * 1000)
                                                 for i in range(HUGE // 1000)),
    b"GET /" + b"y" * HUGE,
    b"GET / HTTP/1.1\r\nHost: h\r\nX: " + b"y" * HUGE,
    b"GET / HTTP/1.1\r\nHost: h\r\n" + b"X" * HUGE,
    CHUNKED + b"0\r\nX: " + b"y" * HUGE,
], ids=["whole", "many-headers", "long-target", "long-value", "long-name", "long-trailer"])
def test_a_head_over_64_kb_is_answered_431_as_it_arrives(head: bytes) -> None:
    """In 4 KB pieces, as a socket would bring them: refused once the bound is passed, not
    when (or if) the head ends."""
    async def scenario() -> None:
        peer = Peer()
        for start in range(0, len(head), 4096):
            if peer.transport.is_closing():
                break
            peer.send(head[start:start + 4096])
        assert peer.transport.is_closing(), f"{len(head)} bytes of head taken, no 431"
        await peer.closed()
        assert peer.statuses() == [431] and peer.app_got_nothing()
    uvloop.run(scenario())


def test_a_head_trickled_a_byte_at_a_time_is_cut_off_at_the_header_timeout() -> None:
    """Bytes keep coming, but the head is not whole in time: 408, though the connection was
    never silent."""
    async def scenario() -> None:
        started = asyncio.get_running_loop().time()
        peer = Peer(header_timeout_s=TIMEOUT_S)
        head = b"GET /healthz HTTP/1.1\r\nHost: h\r\nX: " + b"y" * 10_000 + b"\r\n\r\n"

        async def trickle() -> None:
            for byte in head:
                if peer.transport.is_closing():
                    return
                peer.send(bytes([byte]))
                await asyncio.sleep(TIMEOUT_S / 10)
        feeding = asyncio.ensure_future(trickle())
        await peer.closed()
        await feeding
        assert peer.statuses() == [408] and peer.app.requests == []
        assert b"request headers not received in time" in peer.transport.responses()[0][1]
        assert asyncio.get_running_loop().time() - started >= TIMEOUT_S * 0.9  # timer grain
    uvloop.run(scenario())


def test_a_body_not_finished_in_time_is_answered_408_and_never_handed_on() -> None:
    async def scenario() -> None:
        peer = Peer(body_timeout_s=TIMEOUT_S)
        assert peer.connection.timer is not None
        peer.send(b"POST /query HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\nASK")
        assert peer.connection.timer is not None  # now the body's
        started = asyncio.get_running_loop().time()
        await peer.closed()
        await peer.settled()
        assert peer.statuses() == [408]
        assert b"request body not received in time" in peer.transport.responses()[0][1]
        assert peer.reads.requests == [] and peer.app.requests == []
        assert asyncio.get_running_loop().time() - started >= TIMEOUT_S * 0.9
    uvloop.run(scenario())


def test_a_request_answered_before_its_late_body_gets_no_second_answer() -> None:
    """Its connection cannot carry another request: it is closed, with no 408 after the 200
    (a client would take it for the answer to its next request)."""
    async def scenario() -> None:
        peer = Peer(body_timeout_s=TIMEOUT_S)
        peer.app.reads_body = False
        peer.send(b"GET /healthz HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\nabc")
        await peer.closed()
        assert peer.transport.responses() == [(200, b"/healthz ")]
    uvloop.run(scenario())


def test_the_next_request_on_a_kept_alive_connection_has_its_own_head_clock() -> None:
    """After a response, a connection may stay silent (uvicorn's keep-alive limit closes it);
    once the next request's first bytes come, its head must be whole within the timeout."""
    async def scenario() -> None:
        peer = Peer(header_timeout_s=TIMEOUT_S)
        peer.send(GET)
        await peer.until(lambda: len(peer.transport.responses()) == 1)
        peer.send(GET[:-4])  # the next head, all but its end
        await peer.closed()
        assert peer.statuses() == [200, 408]
    uvloop.run(scenario())


@pytest.mark.parametrize("start", [b"G", b"GET", b"GET "], ids=repr)
def test_a_kept_alive_connection_that_starts_a_request_and_stops_is_cut_off(start: bytes
                                                                            ) -> None:
    """The first bytes of a request, before any of its target: they stop uvicorn's
    keep-alive clock, so the head's must start."""
    async def scenario() -> None:
        peer = Peer(header_timeout_s=TIMEOUT_S)
        peer.send(GET)
        await peer.until(lambda: len(peer.transport.responses()) == 1)
        peer.send(start)
        assert peer.connection.timer or peer.connection.timeout_keep_alive_task, \
            "no clock runs: the connection is held for ever"
        await peer.closed()
        assert peer.statuses() == [200, 408]
    uvloop.run(scenario())


@pytest.mark.parametrize("path", ["/query", "/b"], ids=["handed-on", "app"])
def test_expect_100_continue_gets_its_interim_answer_when_the_body_is_wanted(path: str
                                                                           ) -> None:
    async def scenario() -> None:
        peer = Peer()
        peer.send(f"POST {path} HTTP/1.1\r\nHost: h\r\nContent-Length: 6\r\n".encode()
                  + b"Expect: 100-continue\r\n\r\n")
        await peer.until(lambda: peer.transport.written)
        assert peer.statuses() == [100] and not peer.reads.requests
        peer.send(b"ASK {}")
        await peer.until(lambda: len(peer.transport.responses()) == 2)
        assert peer.transport.responses()[1] == (200, path.encode() + b" ASK {}")
        peer.transport.close()
        await peer.closed()
    uvloop.run(scenario())


def test_http_1_0_with_chunked_framing_is_read_then_the_connection_closed() -> None:
    """llhttp reads it; RFC 9112 (6.1) asks that the connection then be closed, and it is
    (uvicorn keeps no HTTP/1.0 connection alive)."""
    async def scenario() -> None:
        peer = Peer()
        peer.send(CHUNKED.replace(b"HTTP/1.1", b"HTTP/1.0") + b"2\r\nab\r\n0\r\n\r\n" + GET)
        await peer.closed()
        assert peer.transport.responses() == [(200, b"/query ab")]
    uvloop.run(scenario())


@pytest.mark.parametrize("delay_s", [0.0, TIMEOUT_S], ids=["at-once", "slow"])
def test_pipelined_requests_are_answered_in_order(delay_s: float) -> None:
    """Handed on (/query, /c) and run on the app (the others), mixed."""
    async def scenario() -> None:
        peer = Peer()
        peer.app.delay_s = delay_s
        post = b"POST /b HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc"
        chunked = CHUNKED.replace(b"/query", b"/c") + b"2\r\nde\r\n0\r\n\r\n"
        query = b"GET /query?x HTTP/1.1\r\nHost: h\r\n\r\n"
        peer.send(query + GET.replace(b"/healthz", b"/a") + post + chunked + query + GET)
        await peer.until(lambda: len(peer.transport.responses()) == 6)
        assert peer.transport.responses() == [
            (200, b"/query "), (200, b"/a "), (200, b"/b abc"), (200, b"/c de"),
            (200, b"/query "), (200, b"/healthz ")]
        assert [head.query_string for head, _ in peer.reads.requests] == [b"x", b"", b"x"]
        assert peer.connection.timer is None
        peer.transport.close()
        await peer.closed()
    uvloop.run(scenario())


@pytest.mark.parametrize("path", [b"/b", b"/c"], ids=["app", "handed-on"])
@pytest.mark.parametrize("later", [b"NOT HTTP\r\n\r\n", CHUNKED + b"-6\r\n",
                                   b"POST /c HTTP/1.1\r\nHost: h\r\nContent-Length: 65\r\n\r\n"],
                         ids=["garbage", "bad-chunk", "too-large"])
def test_a_refusal_waits_for_the_answers_owed_before_it_and_takes_nothing_back(
        path: bytes, later: bytes) -> None:
    """Bytes refused on a connection while requests before them are still being answered
    (a write, say): those are answered first, each as asked, then the refusal; the refused
    request never runs."""
    async def scenario() -> None:
        peer = Peer()
        peer.app.delay_s = 0.05
        post = b"POST " + path + b" HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc"
        peer.send(post + post)
        await peer.until(lambda: peer.app.requests or peer.reads.requests)
        peer.send(later)
        assert peer.statuses() == []  # nothing answered yet, the refusal least of all
        await peer.closed()
        assert peer.transport.responses()[:2] == [(200, path + b" abc")] * 2
        assert peer.statuses()[2:] == [413 if b"65" in later else 400]
        assert len(peer.app.requests) + len(peer.reads.requests) == 2
    uvloop.run(scenario())


def aged(room: Room, peer: Peer) -> None:
    """Make `peer` look as if it had been waiting for a request for EVICT_AFTER_S more."""
    room.waiting[peer.connection] -= EVICT_AFTER_S


def test_at_the_cap_a_connection_that_sent_nothing_gives_way_with_a_408() -> None:
    async def scenario() -> None:
        room = Room(cap=1)
        silent = Peer(room)
        aged(room, silent)
        newcomer = Peer(room)
        await silent.closed()
        assert silent.statuses() == [408]
        assert b"the server is full" in silent.transport.responses()[0][1]
        assert room.held == {newcomer.connection} and newcomer.connection.timer is not None
        newcomer.send(GET)
        await newcomer.until(lambda: newcomer.statuses() == [200])
        newcomer.transport.close()
        await newcomer.closed()
        assert not room.held
    uvloop.run(scenario())


@pytest.mark.parametrize("began", [False, True], ids=["silent", "began-a-request"])
def test_a_connection_that_gave_way_lingers_briefly_unless_it_began_a_request(
        began: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Evicted ones lingering as long as other refusals, a flood of silent connections ran the
    serving process out of descriptors (new ones were then closed unanswered); one that began
    a request may still be sending it, and closed early it would lose its 408 to a reset."""
    monkeypatch.setattr(connections, "LINGER_S", SLOW_S)
    monkeypatch.setattr(connections, "FULL_LINGER_S", TIMEOUT_S)

    async def scenario() -> None:
        room = Room(cap=1, beyond=1)
        evicted = Peer(room)
        if began:
            evicted.send(b"GET /healthz HTTP/1.1\r\n")
        aged(room, evicted)
        newcomer = Peer(room)
        await evicted.closed()  # its 408 written and its writing side ended
        assert evicted.statuses() == [408]
        await asyncio.sleep(4 * TIMEOUT_S)
        assert evicted.transport.lost is not began
        newcomer.transport.close()
        await newcomer.closed()
    uvloop.run(scenario())


def test_refused_for_room_past_the_linger_budget_they_close_once_answered() -> None:
    async def scenario() -> None:
        room = Room(cap=1, beyond=1)
        Peer(room)
        lingering, closed = Peer(room), Peer(room)  # both refused 503: one may linger
        await closed.closed()
        await asyncio.sleep(0)
        assert closed.transport.lost and not lingering.transport.lost
        assert closed.statuses() == lingering.statuses() == [503]
        assert room.lingering == {lingering.connection}
    uvloop.run(scenario())


def test_the_room_lends_at_most_its_budget_to_lingering_connections() -> None:
    room = Room(cap=1, beyond=2)
    assert [room.linger(name) for name in "abc"] == [True, True, False]
    room.closed("a")
    assert room.linger("c") and room.lingering == {"b", "c"}


def test_at_the_cap_a_kept_alive_connection_gives_way_quietly() -> None:
    async def scenario() -> None:
        room = Room(cap=1)
        idle = Peer(room)
        idle.send(GET)
        await idle.until(lambda: idle.statuses() == [200])
        assert list(room.waiting) == [idle.connection]  # waiting for its next request
        aged(room, idle)
        newcomer = Peer(room)
        await idle.closed()
        assert idle.statuses() == [200]  # nothing more written: a client may retry on it
        assert room.held == {newcomer.connection}
        newcomer.transport.close()
        await newcomer.closed()
    uvloop.run(scenario())


def test_at_the_cap_a_connection_that_began_its_next_request_gives_way_with_a_408() -> None:
    """A request begun is owed a status: closed without one, a client cannot tell whether
    an update it sent was made."""
    async def scenario() -> None:
        room = Room(cap=1)
        idle = Peer(room)
        idle.send(GET)
        await idle.until(lambda: idle.statuses() == [200])
        idle.send(b"POST /update HTTP/1.1\r\nHost: h\r\n")  # the rest of its head is late
        aged(room, idle)
        newcomer = Peer(room)
        await idle.closed()
        assert idle.statuses() == [200, 408]
        newcomer.transport.close()
        await newcomer.closed()
    uvloop.run(scenario())


@pytest.mark.parametrize("busy", [True, False], ids=["busy", "waited-under-a-second"])
def test_at_the_cap_a_newcomer_is_answered_503_when_no_one_may_give_way(busy: bool) -> None:
    async def scenario() -> None:
        room = Room(cap=1)
        held = Peer(room)
        if busy:
            held.send(b"POST /query HTTP/1.1\r\nHost: h\r\nContent-Length: 6\r\n\r\nASK")
            assert held.connection not in room.waiting  # however long it has been busy
        newcomer = Peer(room)
        await newcomer.closed()
        assert newcomer.statuses() == [503] and newcomer.app.requests == []
        assert b"server full" in newcomer.transport.responses()[0][1]
        assert room.held == {held.connection} and not held.transport.is_closing()
        if busy:
            held.send(b" {}")
            await held.until(lambda: held.statuses() == [200])
        held.transport.close()
        await held.closed()
    uvloop.run(scenario())


# --- requests handed on (the reads) ----------------------------------------------------------


def test_a_request_handed_on_is_answered_in_one_write_and_kept_alive() -> None:
    async def scenario() -> None:
        peer = Peer()
        peer.send(b"GET /query?query=ASK HTTP/1.1\r\nHost: h\r\nAccept: text/csv\r\n\r\n")
        await peer.until(lambda: peer.transport.written)
        assert peer.transport.writes == 1 and peer.transport.responses() == [(200, b"/query ")]
        [(head, body)] = peer.reads.requests
        assert (head.method, head.path, head.query_string, body) == ("GET", "/query",
                                                                     b"query=ASK", b"")
        assert (b"accept", b"text/csv") in head.headers and head.http_version == "1.1"
        assert head.client == ("127.0.0.1", 40000) and not peer.app.requests
        assert not peer.transport.is_closing() and peer.connection in peer.connection.room.waiting
        peer.transport.close()
        await peer.closed()
    uvloop.run(scenario())


def test_a_percent_encoded_path_is_routed_by_what_it_decodes_to() -> None:
    async def scenario() -> None:
        peer = Peer()
        peer.send(b"GET /%71uery HTTP/1.1\r\nHost: h\r\n\r\n")
        await peer.until(lambda: peer.transport.written)
        [(head, _)] = peer.reads.requests
        assert (head.path, head.raw_path) == ("/query", b"/%71uery")
        peer.transport.close()
        await peer.closed()
    uvloop.run(scenario())


def test_a_head_request_handed_on_gets_the_length_and_no_body() -> None:
    async def scenario() -> None:
        peer = Peer()
        peer.send(b"HEAD /query HTTP/1.1\r\nHost: h\r\n\r\n" + GET)
        await peer.until(lambda: b"/healthz" in peer.transport.written)
        head, _, rest = bytes(peer.transport.written).partition(b"\r\n\r\n")
        assert b"content-length: 7" in head and rest.startswith(b"HTTP/1.1 200")
        peer.transport.close()
        await peer.closed()
    uvloop.run(scenario())


@pytest.mark.parametrize("request_", [
    b"GET /query HTTP/1.0\r\n\r\n",
    b"GET /query HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
], ids=["http-1.0", "connection-close"])
def test_a_request_handed_on_that_ends_its_connection_is_answered_then_closed(request_: bytes
                                                                             ) -> None:
    async def scenario() -> None:
        peer = Peer()
        peer.send(request_ + GET)
        await peer.closed()
        assert peer.transport.responses() == [(200, b"/query ")] and not peer.app.requests
        assert b"connection: close" in bytes(peer.transport.written).lower()
    uvloop.run(scenario())


def test_a_reply_saying_connection_close_closes_the_connection() -> None:
    async def scenario() -> None:
        peer = Peer()
        peer.reads.submit = lambda head, body, answered: answered(
            (413, [(b"connection", b"close")], b"too large"))
        peer.send(b"GET /query HTTP/1.1\r\nHost: h\r\n\r\n")
        await peer.closed()
        assert peer.statuses() == [413]
    uvloop.run(scenario())


@pytest.mark.parametrize("body", [
    b"Content-Length: 65\r\n\r\n",  # refused from its announced length, before any body
    b"Transfer-Encoding: chunked\r\n\r\n" + (b"20\r\n" + b"x" * 32 + b"\r\n") * 3,
], ids=["announced", "chunked"])
def test_a_body_over_the_bound_is_answered_413_and_never_handed_on(body: bytes) -> None:
    async def scenario() -> None:
        peer = Peer()
        peer.send(b"POST /query HTTP/1.1\r\nHost: h\r\n" + body)
        await peer.closed()
        assert peer.statuses() == [413] and peer.app_got_nothing()
        assert b"request body over 64 bytes" in peer.transport.responses()[0][1]
    uvloop.run(scenario())


def test_a_reply_coming_after_the_client_went_is_dropped() -> None:
    async def scenario() -> None:
        peer = Peer()
        peer.app.delay_s = TIMEOUT_S
        peer.send(b"GET /query HTTP/1.1\r\nHost: h\r\n\r\n")
        peer.transport.close()
        await peer.closed()
        await asyncio.sleep(2 * TIMEOUT_S)  # the reply comes: the transport asserts no write
        assert peer.transport.written == b"" and len(peer.reads.requests) == 1
    uvloop.run(scenario())


def test_the_request_after_an_answer_not_yet_taken_waits_until_it_drains() -> None:
    """A client that sends requests and reads no answer does not make the server hold more
    than one answer for it."""
    async def scenario() -> None:
        peer = Peer()
        query = b"GET /query HTTP/1.1\r\nHost: h\r\n\r\n"
        peer.connection.pause_writing()  # the transport's buffer is full
        peer.send(query + query)
        await peer.until(lambda: peer.transport.writes == 1)
        await asyncio.sleep(TIMEOUT_S)
        assert len(peer.reads.requests) == 1
        peer.connection.resume_writing()
        await peer.until(lambda: len(peer.transport.responses()) == 2)
        assert len(peer.reads.requests) == 2
        peer.transport.close()
        await peer.closed()
    uvloop.run(scenario())


def test_clients_that_take_no_answer_are_cut_off_past_the_bound_the_longest_holding_first() -> None:
    async def scenario() -> None:
        room = Room(cap=10, memory=150)
        first, second, third = Peer(room), Peer(room), Peer(room)
        for peer in (first, second, third):
            peer.connection.pause_writing()  # its client reads nothing
            peer.send(b"GET /query HTTP/1.1\r\nHost: h\r\n\r\n")
            await peer.until(lambda peer=peer: peer.transport.writes == 1)
        await first.closed()
        size = len(second.transport.written)  # each answer: 2 fit within the bound, not 3
        assert 2 * size <= 150 < 3 * size
        assert room.unsent == {second.connection: size, third.connection: size}
        assert not second.transport.is_closing() and not third.transport.is_closing()
        second.connection.resume_writing()  # its client took its answer
        await second.until(lambda: second.connection not in room.unsent)
        for peer in (second, third):
            peer.transport.close()
            await peer.closed()
        assert room.unsent == {}
    uvloop.run(scenario())


def test_bodies_past_the_bound_cut_off_the_stalled_one_or_are_refused_and_count_until_answered(
        ) -> None:
    async def scenario() -> None:
        room = Room(cap=10, memory=100)
        post = b"POST /query HTTP/1.1\r\nHost: h\r\nContent-Length: 60\r\n\r\n"
        first, second, third = (Peer(room) for _ in range(3))
        first.app.delay_s = 4 * TIMEOUT_S
        first.send(post + b"a" * 60)
        await first.until(lambda: len(first.reads.requests) == 1)
        first.transport.close()  # its body counts until its answer comes, client or not
        await first.closed()
        second.send(post + b"b" * 20)  # 80 bytes held; it stalls
        third.send(post + b"c" * 30)  # 110 would be held: the stalled one is cut off
        await second.closed()
        assert second.transport.written == b"" and room.bodies == 90
        third.send(b"c" * 10)  # exactly the bound
        assert room.bodies == 100 and not third.transport.is_closing()
        third.send(b"c")  # past it, and only its own body is arriving: refused
        await third.closed()
        assert third.statuses() == [503] and b"server busy" in third.transport.written
        third.transport.close()  # its linger ends
        await asyncio.sleep(0)
        assert room.bodies == 60
        await first.until(lambda: room.bodies == 0)
    uvloop.run(scenario())


@pytest.mark.parametrize(("target", "host"), [
    (b"http://evil.example/query?query=x", b"evil.example"),
    (b"http://127.0.0.1:7878/query", b"127.0.0.1:7878"),
    (b"http://user@[::1]:7878/query?x=1", b"user@[::1]:7878"),
])
def test_an_absolute_form_target_is_the_host_the_request_is_for(target: bytes, host: bytes
                                                                ) -> None:
    """RFC 9112 3.2.2: its authority replaces the Host header, which the guard then checks."""
    async def scenario() -> None:
        peer = Peer()
        peer.send(b"GET " + target + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        await peer.until(lambda: peer.reads.requests)
        head, _ = peer.reads.requests[0]
        assert head.path == "/query" and [v for k, v in head.headers if k == b"host"] == [host]
        peer.transport.close()
        await peer.closed()
    uvloop.run(scenario())


def test_an_absolute_form_target_without_a_path_is_answered_400() -> None:
    assert_refused(b"GET http://127.0.0.1?query=x HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
