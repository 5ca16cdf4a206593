"""Start query worker processes quickly: fork them from a small single-threaded process.

The service process is multi-threaded (event loop, writer, RocksDB), so it must not fork
itself; ``multiprocessing``'s fork server re-imports the main module in every child. This
spawner is started once with pyoxigraph already imported; for each socket handed to it, it
forks a worker that serves requests on that socket and answers the worker's pid. It ends when
the service closes its control socket; workers end when the service closes theirs.
"""

from __future__ import annotations

import os
import signal
import socket
import struct
import subprocess
import sys
import threading

from kgctl.service.evaluator import serve
from kgctl.service.execution import Limits

PID = struct.Struct("!q")


class Spawner:
    """The service's handle on the spawner process."""

    def __init__(self, store_path: str, limits: Limits) -> None:
        ours, theirs = socket.socketpair()
        self._process = subprocess.Popen(
            [sys.executable, "-m", "kgctl.service.spawner", store_path,
             limits.model_dump_json(), str(theirs.fileno())], pass_fds=[theirs.fileno()])
        theirs.close()
        self._control, self._lock = ours, threading.Lock()

    def spawn(self, worker_socket: socket.socket) -> int:
        """Fork a worker serving `worker_socket`; its pid (blocking: call it from a thread)."""
        with self._lock:
            socket.send_fds(self._control, [b"w"], [worker_socket.fileno()])
            answer = self._control.recv(PID.size, socket.MSG_WAITALL)
        if len(answer) != PID.size:
            raise OSError("the worker spawner stopped")
        return PID.unpack(answer)[0]

    def close(self) -> None:
        self._control.close()
        self._process.wait()


def main(store_path: str, limits_json: str, control_fd: int) -> None:
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps finished workers
    limits = Limits.model_validate_json(limits_json)
    control = socket.socket(fileno=control_fd)
    while True:
        try:
            _, fds, _, _ = socket.recv_fds(control, 1, 1)
        except OSError:
            return
        if not fds:
            return
        pid = os.fork()
        if pid == 0:
            control.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            try:
                serve(socket.socket(fileno=fds[0]), store_path, limits)
            finally:
                os._exit(0)
        os.close(fds[0])
        control.sendall(PID.pack(pid))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
