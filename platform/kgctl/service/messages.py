"""Messages between the serving process and its worker and writer processes: one pickle
each, after its length, on a stream socket pair (the processes are our own).

>>> ours, theirs = socket.socketpair()
>>> send(ours, ("ask", b"x" * 100_000))
>>> value = receive(theirs)
>>> value[0], len(value[1])
('ask', 100000)
"""

from __future__ import annotations

import pickle
import socket
import struct
from typing import Any

SIZE = struct.Struct("!Q")


def frame(value: Any) -> bytes:
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    return SIZE.pack(len(data)) + data


def send(sock: socket.socket, value: Any) -> None:
    sock.sendall(frame(value))  # in one write: one wake-up of the reader


def receive(sock: socket.socket) -> Any | None:
    """The next message (blocking); None once the other end closed."""
    head = sock.recv(SIZE.size, socket.MSG_WAITALL)
    if len(head) < SIZE.size:
        return None
    size = SIZE.unpack(head)[0]
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(min(size - len(data), 1 << 20))
        if not chunk:
            return None
        data += chunk
    return pickle.loads(data)
