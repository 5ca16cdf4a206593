"""The query worker process: answers read requests from a read-only view of the store.

It reads framed requests from its socket, reopens the view when the owning process says the
store has changed (a RocksDB read-only view is a snapshot taken when it is opened), and writes
one framed answer per request. It has no timer: the owning process kills it at the deadline.
"""

from __future__ import annotations

import pickle
import socket
import struct
import time

from pyoxigraph import Store

from kgctl.service.execution import Answer, GraphRequest, Limits, QueryRequest, answer

FRAME = struct.Struct("!Q")
OPEN_ATTEMPTS = 5
OPEN_RETRY_S = 0.02
RECV_BYTES = 1 << 16


def send_frame(sock: socket.socket, payload: bytes) -> None:
    sock.sendall(FRAME.pack(len(payload)) + payload)  # one write: the reader wakes once


class FrameReader:
    """Reads length-prefixed frames from a socket, a large recv at a time."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock, self._buffer = sock, bytearray()

    def next(self) -> bytes | None:
        """The next frame, or None once the other end has closed the socket."""
        while True:
            if len(self._buffer) >= FRAME.size:
                end = FRAME.size + FRAME.unpack_from(self._buffer)[0]
                if len(self._buffer) >= end:
                    frame = bytes(self._buffer[FRAME.size:end])
                    del self._buffer[:end]
                    return frame
            chunk = self._sock.recv(RECV_BYTES)
            if not chunk:
                return None
            self._buffer += chunk


def open_view(store_path: str) -> Store:
    """A read-only view; retried, since the writer may be switching files while it opens."""
    for attempt in range(OPEN_ATTEMPTS):
        try:
            return Store.read_only(store_path)
        except OSError:
            if attempt == OPEN_ATTEMPTS - 1:
                raise
            time.sleep(OPEN_RETRY_S)
    raise AssertionError("unreachable")


def serve(sock: socket.socket, store_path: str, limits: Limits) -> None:
    """The worker's main loop (until the owning process closes the socket)."""
    store, seen = open_view(store_path), 0
    send_frame(sock, pickle.dumps(time.process_time()))  # ready; CPU time spent starting up
    frames = FrameReader(sock)
    while (frame := frames.next()) is not None:
        generation, request = pickle.loads(frame)
        request: QueryRequest | GraphRequest
        if generation != seen:
            store, seen = open_view(store_path), generation
        reply: Answer = answer(store, request, limits)
        # the CPU time used so far lets the owner tell a computing query from a waiting one
        send_frame(sock, pickle.dumps((reply.status, reply.media_type, reply.body,
                                       time.process_time()), protocol=pickle.HIGHEST_PROTOCOL))
