"""Start query worker processes quickly: fork them from a small single-threaded process.

The service process is multi-threaded (event loop, writer, RocksDB), so it must not fork
itself; ``multiprocessing``'s fork server re-imports the main module in every child. This
spawner is started once with the worker's code already imported; for each socket handed to it,
it forks a worker that serves requests on that socket and answers the worker's pid. It ends
when the service closes its control socket; workers end when the service closes theirs.

Every worker has a slot in a small shared memory block where it says whether it is writing a
response: what the service may still answer for a worker it had to stop.
"""

from __future__ import annotations

import mmap
import os
import resource
import signal
import socket
import struct
import subprocess
import sys
import threading

from kgctl.service.config import ServiceConfig

PID = struct.Struct("!q")
SLOT = struct.Struct("!I")
IDLE, WRITING = 0, 1
MEGABYTE = 1 << 20


class Spawner:
    """The service's handle on the spawner process and the workers' shared state block."""

    def __init__(self, store_path: str, config: ServiceConfig, slots: int) -> None:
        ours, theirs = socket.socketpair()
        memfd = os.memfd_create("kgctl-worker-states")
        os.ftruncate(memfd, slots)
        self.states = mmap.mmap(memfd, slots)
        # the config (with the update token) goes through a pipe, never the command line
        self._process = subprocess.Popen(
            [sys.executable, "-m", "kgctl.service.spawner", store_path, str(theirs.fileno()),
             str(memfd), str(slots)], pass_fds=[theirs.fileno(), memfd], stdin=subprocess.PIPE)
        assert self._process.stdin is not None
        with self._process.stdin as pipe:
            pipe.write(config.model_dump_json().encode())
        theirs.close()
        os.close(memfd)
        self._control, self._lock = ours, threading.Lock()

    def spawn(self, worker_socket: socket.socket, slot: int) -> int:
        """Fork a worker serving `worker_socket` in `slot`; its pid (blocking: call it from a
        thread)."""
        with self._lock:
            socket.send_fds(self._control, [SLOT.pack(slot)], [worker_socket.fileno()])
            answer = self._control.recv(PID.size, socket.MSG_WAITALL)
        if len(answer) != PID.size:
            raise OSError("the worker spawner stopped")
        return PID.unpack(answer)[0]

    def close(self) -> None:
        self._control.close()
        self._process.wait()
        self.states.close()


def main(store_path: str, control_fd: int, states_fd: int, slots: int) -> None:
    from kgctl.service.evaluator import serve  # imported once, before any fork

    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps finished workers
    config = ServiceConfig.model_validate_json(sys.stdin.buffer.read())
    states = mmap.mmap(states_fd, slots)
    control = socket.socket(fileno=control_fd)
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(control, SLOT.size, 1)
        except OSError:
            return
        if not fds:
            return
        pid = os.fork()
        if pid == 0:
            control.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            limit = config.worker_memory_mb * MEGABYTE
            resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
            try:
                serve(socket.socket(fileno=fds[0]), states, SLOT.unpack(data)[0], store_path,
                      config)
            finally:
                os._exit(0)
        os.close(fds[0])
        control.sendall(PID.pack(pid))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
