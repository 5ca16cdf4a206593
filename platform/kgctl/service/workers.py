"""The query workers: long-lived processes that answer the reads, one request at a time, each
over a read-only view of the store, and the serving process's driver of them. A request
travels over a socket pair; its deadline is the serving process's, which kills the worker
when it passes (pyoxigraph cannot interrupt a query, a process can be killed). The decisions
(which worker, when to stop or replace one) are `kgctl.service.pool`'s."""

from __future__ import annotations

import asyncio
import ctypes
import multiprocessing
import os
import pickle
import resource
import signal
import socket
import sys
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from pyoxigraph import Store

from kgctl.service.asgi import Gathered, Handler, Head, Reply, keep, refusal
from kgctl.service.config import ServiceConfig
from kgctl.service.hosts import HostGuard
from kgctl.service.messages import SIZE, frame, send
from kgctl.service.pool import FROZEN_CHECK_S, Job, Kill, Pool, Promote, Retire, Run, Spawn, Stop

TICK_S = 0.01  # while a query waits or runs
STALE_S = 2.0  # /healthz fails once a watchdog step has failed for this long
START_RETRY_S = 1.0
PR_SET_PDEATHSIG = 1


def view_path(root: str | Path, generation: int) -> Path:
    return Path(root) / str(generation)


# --- in the worker process -------------------------------------------------------------------


def work(channel: socket.socket, views: str, generation: int, config: ServiceConfig) -> None:
    """A worker: answers the requests its channel brings with the service's app over the
    view each names, until the channel closes."""
    # the fork server hands each child a descriptor that keeps the fork server running while
    # the child lives: closed, the fork server ends with the serving process (even one killed
    # by SIGKILL), and this worker with the fork server
    os.closerange(3, channel.fileno())
    os.closerange(channel.fileno() + 1, os.sysconf("SC_OPEN_MAX"))
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops the service, which ends it
    limit = config.worker_memory_mb << 20  # bytes
    resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
    from kgctl.service.app import HTTP_SERVER_ERROR, QUERY_PATHS, create_app, query_reader
    from kgctl.service.dataset import Dataset

    def opened(generation: int) -> tuple[Handler, Callable[[Head, bytes], Reply] | None]:
        dataset = Dataset(Store.read_only(str(view_path(views, generation))))
        return (HostGuard(create_app(dataset, config), allowed=config.allowed_hosts),
                query_reader(dataset, config))

    loop = asyncio.new_event_loop()
    app, read = opened(generation)
    send(channel, None)  # ready
    stream = channel.makefile("rb")
    while size := stream.read(SIZE.size):
        wanted, fields, body = pickle.loads(stream.read(SIZE.unpack(size)[0]))
        head = Head._make(fields)
        try:
            if wanted != generation:
                (app, read), generation = opened(wanted), wanted
            if read is not None and head.path in QUERY_PATHS:
                reply = read(head, body)
            else:
                gathered = Gathered(body)
                loop.run_until_complete(app(head.scope(), gathered.receive, gathered.send))
                reply = gathered.reply()
        except Exception:  # a fault of ours: logged, the client gets a 500
            traceback.print_exc(file=sys.stderr)
            reply = None
        send(channel, reply or refusal(HTTP_SERVER_ERROR, "internal server error"))


def die_with_parent() -> None:
    """SIGKILL this process when the fork server that made it ends (it ends with the serving
    process, even one killed by SIGKILL): nothing would watch this worker's deadline."""
    parent = os.getppid()
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # it ended before the request took effect
        os._exit(1)


# --- in the serving process -------------------------------------------------------------------


class Channel(asyncio.Protocol):
    """The serving process's end of one worker's socket pair."""

    def __init__(self, workers: Workers, worker: Worker) -> None:
        self.workers, self.worker, self.buffer = workers, worker, bytearray()

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        replies, start = [], 0
        with memoryview(self.buffer) as view:  # a large answer is not copied again
            while len(view) - start >= SIZE.size:
                end = start + SIZE.size + SIZE.unpack_from(view, start)[0]
                if len(view) < end:
                    break
                replies.append(pickle.loads(view[start + SIZE.size:end]))  # our own process's
                start = end
        del self.buffer[:start]
        for reply in replies:
            self.workers.replied(self.worker, reply)

    def connection_lost(self, exc) -> None:
        self.workers.gone(self.worker)


@dataclass(eq=False)
class Worker:
    process: multiprocessing.process.BaseProcess
    pidfd: int
    channel: asyncio.Transport | None = None  # to the worker
    job: Job | None = None
    ready: bool = False


class Workers:
    """Carries out a Pool's decisions on worker processes, forked by multiprocessing's fork
    server (it imports the service's code once), killed through a pidfd (never a reused
    pid). A new worker opens the view `published()` first."""

    def __init__(self, views: Path, config: ServiceConfig, published: Callable[[], int]) -> None:
        self.views, self.config, self.published = str(views), config, published
        # as many spares as seats: a burst of runaways has every seat's worker killed at once
        self.pool = Pool(config.workers, config.workers, config.timeout_s, cpu_s,
                         config.long_queries, self._stopped)
        self.context = multiprocessing.get_context("forkserver")
        self.context.set_forkserver_preload(["kgctl.service.app", __name__])
        self.starter = ThreadPoolExecutor(1)  # starts and joins processes, one at a time
        self.workers: set[Worker] = set()
        self.failing: dict[str, float] = {}  # a watchdog step -> when it began to fail
        self.ticking: asyncio.TimerHandle | None = None
        self._tasks: set[asyncio.Task] = set()
        self._closing = False

    async def start(self) -> None:
        """Start the workers and the spares; return once they are all ready."""
        await asyncio.gather(*(self._spawn() for _ in self.pool.start()))
        keep(self._tasks, self._watch())

    def healthy(self) -> bool:
        """Whether no watchdog step has failed for STALE_S (deadlines, frozen workers unkept)."""
        now = asyncio.get_running_loop().time()
        return all(now - since < STALE_S for since in self.failing.values())

    def submit(self, head: Head, body: bytes, generation: int, deadline: float,
               answered: Callable[[Reply], None]) -> None:
        """Have a worker answer the request (reading the view `generation`), or 503 past
        `deadline` (loop time): `answered` is called with it."""
        # a plain tuple: pickling a NamedTuple runs Python code for each one
        job = Job(deadline, (frame((generation, tuple(head), body)), answered))
        loop = asyncio.get_running_loop()
        self._do(self.pool.submit(job, loop.time()))
        if self.ticking is None:
            self.ticking = loop.call_later(TICK_S, self._tick)

    async def close(self) -> None:
        self._closing = True
        if self.ticking is not None:
            self.ticking.cancel()
        for task in self._tasks:
            task.cancel()
        workers = list(self.workers)
        for worker in workers:
            self._kill(worker)
        for worker in workers:
            await asyncio.get_running_loop().run_in_executor(self.starter, worker.process.join)
        self.starter.shutdown()

    def replied(self, worker: Worker, message) -> None:
        loop = asyncio.get_running_loop()
        if not worker.ready:
            worker.ready = True
            return self._do(self.pool.ready(worker, loop.time()))
        job, worker.job = worker.job, None
        if job is not None:
            job.task[1](message)
        self._do(self.pool.finished(worker, loop.time()))

    def gone(self, worker: Worker) -> None:
        """`worker`'s process ended (its channel closed)."""
        if self._closing:
            return  # `close` kills and joins it
        self.workers.discard(worker)
        if worker.ready:
            self._do(self.pool.ended(worker, asyncio.get_running_loop().time()))
        os.close(worker.pidfd)
        keep(self._tasks, self._join(worker))

    def _tick(self) -> None:
        """Keep the deadlines, every TICK_S until no query waits or runs (idle, none wakes)."""
        self._step(self.pool.tick)
        self.ticking = asyncio.get_running_loop().call_later(TICK_S, self._tick) \
            if self.pool.pending() and not self._closing else None

    async def _watch(self) -> None:
        while True:  # workers stopped by someone else are looked for even when idle
            await asyncio.sleep(FROZEN_CHECK_S)
            self._step(self.pool.check)

    def _step(self, decide) -> None:
        """Carry out `decide(now)`; a fault of ours is logged, the other step goes on, and
        /healthz fails once the step has failed for STALE_S."""
        now = asyncio.get_running_loop().time()
        try:
            self._do(decide(now))
        except Exception:
            traceback.print_exc(file=sys.stderr)
            self.failing.setdefault(decide.__name__, now)
        else:
            self.failing.pop(decide.__name__, None)

    def _do(self, actions: list) -> None:
        for action in actions:
            if isinstance(action, Run):
                action.worker.job = action.job
                action.worker.channel.write(action.job.task[0])
            elif isinstance(action, Stop):
                if action.worker is not None:
                    action.worker.job = None
                    self._kill(action.worker)
                action.job.task[1](refusal(action.status, action.message))
            elif isinstance(action, Spawn):
                if not self._closing:
                    keep(self._tasks, self._spawn())
            elif isinstance(action, Promote):
                with suppress(ProcessLookupError):
                    os.setpriority(os.PRIO_PROCESS, action.worker.process.pid, 10)
            elif isinstance(action, Kill):
                self._kill(action.worker)
            else:
                assert isinstance(action, Retire)
                action.worker.channel.close()

    async def _spawn(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            ours, theirs = socket.socketpair()
            process = self.context.Process(target=work, daemon=True, args=(
                theirs, self.views, self.published(), self.config))
            try:
                await loop.run_in_executor(self.starter, process.start)
                break
            except OSError as exc:
                print(f"error: a query worker did not start ({exc}); retrying", file=sys.stderr)
                ours.close()
                await asyncio.sleep(START_RETRY_S)
            finally:
                theirs.close()
        worker = Worker(process, os.pidfd_open(process.pid))
        self.workers.add(worker)
        ours.setblocking(False)
        worker.channel, _ = await loop.create_unix_connection(
            lambda: Channel(self, worker), sock=ours)
        if self._closing:
            self._kill(worker)

    async def _join(self, worker: Worker) -> None:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self.starter, worker.process.join)
        if not worker.ready and not self._closing:  # it died starting: try again, later
            print("error: a query worker ended before it was ready; starting another",
                  file=sys.stderr)
            await asyncio.sleep(START_RETRY_S)
            await self._spawn()

    def _kill(self, worker: Worker) -> None:
        with suppress(ProcessLookupError, OSError):  # it may have ended meanwhile
            signal.pidfd_send_signal(worker.pidfd, signal.SIGKILL)

    def _stopped(self, worker: Worker) -> bool:
        try:
            with open(f"/proc/{worker.process.pid}/stat", "rb") as stat:
                return stat.read().rsplit(b")", 1)[1].split()[0] in (b"T", b"t")
        except OSError:  # it ended meanwhile
            return False


def cpu_s(worker: Worker) -> float:
    """CPU time of `worker`'s main thread (where queries run), to the ns: /proc/<pid>/stat
    counts 10 ms ticks (a cheap query that crossed one counted as computing)."""
    try:
        with open(f"/proc/{worker.process.pid}/schedstat", "rb") as stat:
            return int(stat.read().split()[0]) / 1e9
    except OSError:  # it ended meanwhile
        return 0.0

