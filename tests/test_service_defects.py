"""Regressions of the service's process model, checked in process (no server): a slow reader
on a descriptor past 1,023, and a retire order racing a worker's own state writes."""

from __future__ import annotations

import os
import resource
import socket
import threading

import pytest

from kgctl.service.evaluator import Output
from kgctl.service.worker_state import WorkerState, states_block

HIGH_FD = 1500
ANSWER_BYTES = 8_000_000


@pytest.mark.skipif(resource.getrlimit(resource.RLIMIT_NOFILE)[0] <= HIGH_FD,
                    reason="needs a descriptor limit above 1,500")
def test_an_answer_to_a_slow_reader_past_descriptor_1023_is_delivered_whole() -> None:
    ours, theirs = socket.socketpair()
    os.dup2(ours.fileno(), HIGH_FD)
    ours.close()
    high = socket.socket(fileno=HIGH_FD)
    high.setblocking(False)
    received = bytearray()

    def read_slowly() -> None:
        while len(received) < ANSWER_BYTES:
            chunk = theirs.recv(65536)
            if not chunk:
                return
            received.extend(chunk)

    reader = threading.Thread(target=read_slowly)
    reader.start()
    data = os.urandom(ANSWER_BYTES)
    try:
        Output(high, WorkerState(states_block(1), 0)).write(data)
    finally:
        high.close()
        reader.join(30)
        theirs.close()
    assert bytes(received) == data


class RacingBlock(bytearray):
    """A state block where the owning process retires the worker in the middle of any read
    the worker makes of it (as if it froze the worker right then)."""

    owner: WorkerState | None = None
    retired = False

    def __getitem__(self, index):
        value = super().__getitem__(index)
        if self.owner is not None and not self.retired:
            self.retired = True
            self.owner.retire()
        return value


def test_a_worker_writing_its_state_never_undoes_a_retire_order() -> None:
    """The owning process may retire a worker at any moment of the worker's own writes."""
    block = RacingBlock(len(states_block(2)))
    worker, owner = WorkerState(block, 1), WorkerState(block, 1)
    for write in (lambda: worker.begin(7, 1.0, 0.5), worker.writing, worker.end):
        owner.clear()
        block.owner, block.retired = owner, False
        write()
        block.owner = None
        if not block.retired:  # the write never read the slot: the order comes after it
            owner.retire()
        assert owner.retiring()
