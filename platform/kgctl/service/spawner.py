"""Fork query workers from a small single-threaded process started once with the worker's
code imported (the service process has threads, so it must not fork; multiprocessing's fork
server re-imports the main module in every child)."""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import socket
import struct
import subprocess
import sys
import threading

from kgctl.service.config import ServiceConfig
from kgctl.service.worker_state import block_size, states_block

PR_SET_PDEATHSIG = 1
PID = struct.Struct("!q")
SLOT = struct.Struct("!I")
MEGABYTE = 1 << 20


class Spawner:
    """The service's handle on the spawner process, and the workers' shared state block."""

    def __init__(self, views: str, config: ServiceConfig, listener: socket.socket,
                 slots: int) -> None:
        ours, theirs = socket.socketpair()
        memfd = os.memfd_create("kgctl-worker-states")
        os.ftruncate(memfd, block_size(slots))
        self.block = states_block(slots, memfd)
        fds = [theirs.fileno(), memfd, listener.fileno()]
        # the config (with the update token) goes through a pipe, never the command line
        self._process = subprocess.Popen(
            [sys.executable, "-m", "kgctl.service.spawner", views, *map(str, fds),
             str(slots)], pass_fds=fds, stdin=subprocess.PIPE,
            start_new_session=True)  # Ctrl-C stops the service; the workers end with it
        assert self._process.stdin is not None
        with self._process.stdin as pipe:
            pipe.write(config.model_dump_json().encode())
        theirs.close()
        os.close(memfd)
        self._control, self._lock = ours, threading.Lock()

    def spawn(self, worker_socket: socket.socket, slot: int) -> int:
        """Fork a worker taking orders on `worker_socket`, in state slot `slot`; its pid
        (blocking: call it from a thread)."""
        with self._lock:
            socket.send_fds(self._control, [SLOT.pack(slot)], [worker_socket.fileno()])
            answer = self._control.recv(PID.size, socket.MSG_WAITALL)
        if len(answer) != PID.size:
            raise OSError("the worker spawner stopped")
        return PID.unpack(answer)[0]

    def close(self) -> None:
        self._control.close()
        self._process.wait()


def die_with_parent() -> None:
    """SIGKILL this process when its parent ends, even by SIGKILL: a worker must not go on
    computing when nothing watches its deadline any more."""
    parent = os.getppid()
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # it ended before the request took effect
        os._exit(1)


def main(views: str, control_fd: int, states_fd: int, listener_fd: int,
         slots: int) -> None:
    die_with_parent()
    from kgctl.service.evaluator import serve  # imported once, before any fork

    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps finished workers
    config = ServiceConfig.model_validate_json(sys.stdin.buffer.read())
    block = states_block(slots, states_fd)
    listener = socket.socket(fileno=listener_fd)
    listener.setblocking(False)
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
            die_with_parent()
            control.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            limit = config.worker_memory_mb * MEGABYTE
            resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
            try:
                serve(socket.socket(fileno=fds[0]), listener, block, SLOT.unpack(data)[0],
                      views, config)
            finally:
                os._exit(0)
        os.close(fds[0])
        control.sendall(PID.pack(pid))


if __name__ == "__main__":
    main(sys.argv[1], *map(int, sys.argv[2:6]))
