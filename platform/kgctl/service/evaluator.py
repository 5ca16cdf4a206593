"""The query worker process: accepts connections and answers their reads itself, from a
read-only view of the store (docs/service.md, "How queries are stopped"). A request is taken
off its connection only once whole (until then it is peeked at), so the owning process can
move a connection at any moment; requests that change the store are handed over unread."""

from __future__ import annotations

import asyncio
import heapq
import itertools
import mmap
import os
import select
import socket
import struct
import time
from pathlib import Path

from pyoxigraph import Store

from kgctl.service import messages
from kgctl.service.app import DIRECT_PATHS, create_app
from kgctl.service.config import ServiceConfig
from kgctl.service.dataset import Dataset
from kgctl.service.exchange import Request, drive, exchange, simple_response
from kgctl.service.execution import query_timeout
from kgctl.service.framing import CONTINUE, PEEK_BYTES, Framer, Malformed, TooLarge, parse, whole
from kgctl.service.protocol import may_write, needs_writer
from kgctl.service.views import view_path
from kgctl.service.worker_state import WorkerState, full, generation, watched, written

RECEIVE_BUFFER = 2 * PEEK_BYTES  # so a whole request fits before anything is read
VIEW_WAIT_S = 10.0  # longest wait for a checkpoint holding the writes made (then 503)
VIEW_POLL_S = 0.001
WATCH_STALE_S = 2.0  # /healthz fails when the watchdog's last round is older
KEEP_ALIVE_S = 75.0  # pooling clients (SPARQLWrapper, httpx) must not race an idle close
WATCH = select.EPOLLIN | select.EPOLLET | select.EPOLLRDHUP
SO_TIMESTAMP = 29  # Linux: each peek says when its newest bytes arrived (set on the listener)
TIMEVAL = struct.Struct("=qq")
STAMP_SPACE = socket.CMSG_SPACE(TIMEVAL.size)
HTTP_BAD_REQUEST = 400
HTTP_REQUEST_TIMEOUT = 408
HTTP_UNAVAILABLE = 503
BUSY = simple_response(HTTP_UNAVAILABLE, b"error: server busy: too many connections; retry "
                       b"later\n", keep_alive=False)


def open_view(views: str, generation: int) -> Store:
    """The checkpoint of `generation` in the directory `views`, read-only: complete before its
    generation was published, and never written (kgctl.service.views)."""
    return Store.read_only(str(view_path(views, generation)))


IDLE, HEAD, BODY = "idle", "head", "body"  # what a connection is waiting for
TIMED_OUT = {HEAD: "request headers not received in time",
             BODY: "request body not received in time"}


class Connection:
    """A client connection this worker serves. Its deadline travels with it: the owning
    process knows it (from "opened", "waiting", "released" and "take") and hands it on."""

    def __init__(self, sock: socket.socket, ident: int, waiting: str, deadline: float) -> None:
        self.sock, self.ident, self.waiting, self.deadline = sock, ident, waiting, deadline
        self.client, self.server = _address(sock, peer=True), _address(sock)
        self.framer = Framer(PEEK_BYTES)  # the request being received
        self.continued = False  # 100 Continue sent for it
        self.timer = 0  # which armed timer is current (older ones are ignored)
        self.reported = waiting != IDLE  # the owning process knows of a HEAD or BODY wait

    def clock(self) -> tuple[int, str, float]:
        return self.ident, self.waiting or IDLE, self.deadline


class QueryWorker:
    def __init__(self, control: socket.socket, listener: socket.socket, block: mmap.mmap,
                 slot: int, views: str, config: ServiceConfig) -> None:
        self._control, self._listener = control, listener
        self._block, self._state = block, WorkerState(block, slot)
        self._views, self._config = views, config
        self._epoll = select.epoll()
        self._connections: dict[int, Connection] = {}
        self._timers: list[tuple[float, int, int, int]] = []
        self._ids = itertools.count(1)
        self._buffer = bytearray(PEEK_BYTES + 1)  # one buffer for every read: no allocation
        self._view = memoryview(self._buffer)
        self._tick = itertools.count()
        self._loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self._loop)
        self._seen = generation(block)
        self._app = self._open_app(self._seen)
        self._state.clear()

    def _open_app(self, seen: int):
        view = open_view(self._views, seen)
        return create_app(Dataset(view, Path(self._views)), self._config,
                          healthy=self._watched)

    def _watched(self) -> bool:
        """Whether the owning process's watchdog ran lately (else deadlines go unenforced)."""
        return time.monotonic() - watched(self._block) < WATCH_STALE_S

    def serve(self) -> None:
        """Serve until the owning process closes the control socket or retires this worker."""
        self._epoll.register(self._control.fileno(), select.EPOLLIN)
        messages.send(self._control, time.process_time())  # ready; CPU time starting up
        while True:
            for fd, _ in self._epoll.poll(self._next_timer()):
                if fd == self._listener.fileno():
                    self._accept()
                elif fd == self._control.fileno():
                    if not self._from_owner():
                        return
                elif (connection := self._connections.get(fd)) is not None:
                    if not self._read(connection):
                        return
            self._expire()

    # connections

    def _accept(self) -> None:
        try:
            sock, _ = self._listener.accept()
        except (BlockingIOError, InterruptedError):
            return  # another worker took it
        except OSError:
            return
        if full(self._block):  # no room in the owning process: say so rather than drop it
            with sock:
                try:
                    sock.send(BUSY)
                except OSError:
                    pass
            return
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_BUFFER)
        connection = Connection(sock, os.getpid() << 32 | next(self._ids), HEAD,
                                time.monotonic() + self._config.header_timeout_s)
        messages.send(self._control, ("opened", connection.clock()), [sock.fileno()])
        self._watch(connection)

    def _from_owner(self) -> bool:
        message = messages.receive(self._control)
        if message is None:
            return False
        (kind, value), fds = message
        if kind == "accept":  # a spare until now
            self._epoll.register(self._listener.fileno(), select.EPOLLIN)
        elif kind == "adopt":
            sock = socket.socket(fileno=fds[0])
            sock.setblocking(False)
            ident, waiting, deadline = value
            if waiting == IDLE:
                deadline = time.monotonic() + KEEP_ALIVE_S
            self._watch(Connection(sock, ident, waiting, deadline))
        elif kind == "refuse":  # the owning process could not hold it
            for connection in list(self._connections.values()):
                if connection.ident == value:
                    self._refuse(connection, HTTP_UNAVAILABLE, "server busy: too many "
                                 "connections; retry later")
        elif kind == "release":  # give `value` connections back, idle ones first
            chosen = sorted(self._connections.values(), key=lambda c: c.waiting != IDLE)[:value]
            for connection in chosen:
                self._forget(connection)
                connection.sock.close()
            messages.send(self._control, ("released", [c.clock() for c in chosen]))
        return True

    def _watch(self, connection: Connection) -> None:
        self._connections[connection.sock.fileno()] = connection
        self._epoll.register(connection.sock.fileno(), WATCH)  # reports data already there
        self._arm(connection)

    def _forget(self, connection: Connection) -> None:
        fd = connection.sock.fileno()
        self._epoll.unregister(fd)
        del self._connections[fd]
        connection.timer = -1

    def _close(self, connection: Connection, last_words: bytes = b"") -> None:
        """Say `last_words` and close (the owning process still holds the connection, so
        shut it down: the client sees the end at once)."""
        try:
            if last_words:
                connection.sock.send(last_words)
            connection.sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        self._forget(connection)
        connection.sock.close()
        messages.send(self._control, ("closed", connection.ident))

    def _refuse(self, connection: Connection, status: int, message: str) -> None:
        self._close(connection, simple_response(status, f"error: {message}\n".encode(),
                                                keep_alive=False))

    # requests

    def _read(self, connection: Connection) -> bool:
        """Answer every whole request waiting on `connection`; False once retired."""
        while True:
            try:
                size, stamps, _, _ = connection.sock.recvmsg_into(
                    [self._buffer], STAMP_SPACE, socket.MSG_PEEK)
            except BlockingIOError:
                return True
            except OSError:
                size, stamps = 0, []
            data = self._view[:size].tobytes()
            if not data:
                self._close(connection)
                return True
            try:
                request = whole(data, client=connection.client, server=connection.server) \
                    if connection.framer.fresh else None
                end = size if request is not None else self._request_end(connection, data)
                if end is None:  # not whole yet (or handed over): wait for more
                    return True
                request = request or parse(data[:end], keep_open=True,
                                           client=connection.client, server=connection.server)
            except TooLarge as exc:
                self._refuse(connection, exc.status, str(exc))
                return True
            except Malformed as exc:
                self._refuse(connection, HTTP_BAD_REQUEST, f"malformed HTTP request: {exc}")
                return True
            if needs_writer(request.method, _path(request.target), request.header(b"content-type"),
                            request.body):
                self._hand_over(connection)
                return True
            fresh = self._reopen_if_changed()
            connection.sock.recv_into(self._buffer, end)  # now take it off the connection
            connection.framer, connection.continued = Framer(PEEK_BYTES), False
            since = arrived(stamps)
            connection.waiting = ""
            if not fresh:
                self._refuse(connection, HTTP_UNAVAILABLE, "the store is being rewritten; "
                             "retry")
                return True
            if time.monotonic() - since >= self._config.timeout_s:  # it waited out its time
                problem = query_timeout(self._config.timeout_s)
                self._refuse(connection, problem.status, str(problem))
                return True
            if not self._answer(connection, request, since):
                self._close(connection)
            if self._state.retiring():
                return False
            if connection.timer < 0:
                return True
            self._wait(connection, IDLE)
            if size == end:  # nothing else was there: new bytes will raise a new event
                return True

    def _request_end(self, connection: Connection, data: bytes) -> int | None:
        framer = connection.framer
        try:
            end = framer.feed(data)
        except TooLarge:
            if framer.head is None or not may_write(framer.head.method.decode("latin-1"),
                                                    _path(framer.head.target)):
                raise
            self._hand_over(connection)  # a large upload: the owning process reads it
            return None
        if end is None:
            self._wait(connection, HEAD if framer.head is None else BODY)
            if framer.expects_continue and not connection.continued:
                connection.continued = True
                connection.sock.send(CONTINUE)
        return end

    def _reopen_if_changed(self) -> bool:
        """Open the newest view if the store changed; False if that failed (the next request
        tries again)."""
        wanted = written(self._block)
        deadline = time.monotonic() + VIEW_WAIT_S
        while generation(self._block) < wanted:  # a write this request must see
            if time.monotonic() > deadline:
                return False
            time.sleep(VIEW_POLL_S)
        if generation(self._block) != self._seen:
            seen = generation(self._block)
            try:
                self._app = self._open_app(seen)
            except OSError:
                return False
            self._seen = seen
        return True

    def _answer(self, connection: Connection, request: Request, since: float) -> bool:
        """Answer `request` on `connection`; whether the connection may carry another."""
        self._state.begin(connection.ident, time.monotonic(), time.process_time(), since)
        answering = exchange(self._app, request, Output(connection.sock, self._state).write)
        try:
            if _path(request.target) in DIRECT_PATHS:
                return drive(answering, self._loop)
            return self._loop.run_until_complete(answering)
        finally:
            self._state.end()

    def _hand_over(self, connection: Connection) -> None:
        """Give a request that may change the store, unread, to the owning process."""
        self._forget(connection)
        messages.send(self._control, ("take", connection.clock()))
        connection.sock.close()

    # timers

    def _wait(self, connection: Connection, waiting: str) -> None:
        """Start the clock for what `connection` now waits for (unless it already runs: a
        client trickling bytes does not reset it). The owning process is told of HEAD and
        BODY waits (requests that did not arrive whole) and of their end."""
        if waiting == connection.waiting and connection.timer > 0:
            return
        connection.waiting = waiting
        seconds = {IDLE: KEEP_ALIVE_S, HEAD: self._config.header_timeout_s,
                   BODY: self._config.body_timeout_s}[waiting]
        connection.deadline = time.monotonic() + seconds
        self._arm(connection)
        if waiting != IDLE or connection.reported:
            connection.reported = waiting != IDLE
            messages.send(self._control, ("waiting", connection.clock()))

    def _arm(self, connection: Connection) -> None:
        """Close `connection` at its deadline (with a 408 unless it was idle)."""
        connection.timer = next(self._tick) + 1
        heapq.heappush(self._timers, (connection.deadline, connection.timer,
                                      connection.sock.fileno(), connection.ident))

    def _next_timer(self) -> float:
        return max(0.0, self._timers[0][0] - time.monotonic()) if self._timers else -1

    def _expire(self) -> None:
        now = time.monotonic()
        while self._timers and self._timers[0][0] <= now:
            _, tick, fd, ident = heapq.heappop(self._timers)
            connection = self._connections.get(fd)
            if connection is None or connection.ident != ident or connection.timer != tick:
                continue
            if connection.waiting in TIMED_OUT:
                self._refuse(connection, HTTP_REQUEST_TIMEOUT, TIMED_OUT[connection.waiting])
            else:
                self._close(connection)


class Output:
    """Writes to the client, first marking the worker's state: from then on only closing the
    connection is left to the owning process if this worker is stopped."""

    def __init__(self, sock: socket.socket, state: WorkerState) -> None:
        self._sock, self._state = sock, state

    def write(self, data: bytes) -> None:
        self._state.writing()
        view = memoryview(data)
        while view:
            try:
                view = view[self._sock.send(view):]
            except BlockingIOError:  # a slow reader: wait (the deadline bounds it)
                wait_writable(self._sock)


def wait_writable(sock: socket.socket) -> None:
    """Block until `sock` takes more bytes (poll: select() fails past descriptor 1,023)."""
    poll = select.poll()
    poll.register(sock.fileno(), select.POLLOUT)
    poll.poll()


def arrived(stamps: list[tuple[int, int, bytes]]) -> float:
    """When the bytes just peeked came in (SO_TIMESTAMP of the newest), on the monotonic
    clock; now if the kernel did not say."""
    now = time.monotonic()
    for level, kind, data in stamps:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMP:
            seconds, micros = TIMEVAL.unpack_from(data)
            return min(now, now - (time.time() - seconds - micros / 1e6))
    return now


def _path(target: bytes) -> str:
    return target.partition(b"?")[0].decode("latin-1")


def _address(sock: socket.socket, peer: bool = False) -> tuple[str, int] | None:
    try:
        address = sock.getpeername() if peer else sock.getsockname()
    except OSError:
        return None
    return (address[0], address[1]) if isinstance(address, tuple) else None


def serve(control: socket.socket, listener: socket.socket, block: mmap.mmap, slot: int,
          views: str, config: ServiceConfig) -> None:
    QueryWorker(control, listener, block, slot, views, config).serve()
