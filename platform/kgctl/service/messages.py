"""Messages between the owning process and its query workers: one pickled object per
datagram of a ``SOCK_SEQPACKET`` socket pair, with file descriptors attached (the client
connection a worker answers). A message too large for one datagram travels in a memfd.

>>> ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
>>> send(ours, ("ask", b"x" * 100_000))
>>> value, fds = receive(theirs)
>>> value[0], len(value[1]), fds
('ask', 100000, [])
"""

from __future__ import annotations

import os
import pickle
import socket
from typing import Any

INLINE_BYTES = 32 * 1024  # a datagram must fit the socket's send buffer
IN_MEMFD = b"\0"  # marks a message whose pickle is in the last descriptor
MAX_FDS = 4


def pair() -> tuple[socket.socket, socket.socket]:
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)


def send(sock: socket.socket, value: Any, fds: list[int] | tuple[int, ...] = ()) -> None:
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    if len(data) <= INLINE_BYTES:
        socket.send_fds(sock, [data], list(fds))
        return
    memfd = os.memfd_create("kgctl-message")
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(memfd, view):]
        socket.send_fds(sock, [IN_MEMFD], [*fds, memfd])
    finally:
        os.close(memfd)


def receive(sock: socket.socket) -> tuple[Any, list[int]] | None:
    """The next message and the descriptors sent with it; None once the other end closed.
    On a non-blocking socket, BlockingIOError when there is none yet."""
    data, fds, _, _ = socket.recv_fds(sock, INLINE_BYTES + 1, MAX_FDS)
    if not data:
        for fd in fds:
            os.close(fd)
        return None
    if data == IN_MEMFD:
        memfd = fds.pop()
        try:
            data = os.pread(memfd, os.fstat(memfd).st_size, 0)
        finally:
            os.close(memfd)
    return pickle.loads(data), fds
