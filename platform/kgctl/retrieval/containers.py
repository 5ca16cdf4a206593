"""Query containers: per-session, bounded in number and idle age, with an undo history.

>>> now = [0.0]
>>> reg = ContainerRegistry(max_per_session=2, max_idle_seconds=60, clock=lambda: now[0])
>>> a = reg.create("s1", "draft-a"); b = reg.create("s1", "draft-b"); c = reg.create("s1", "c")
>>> a.id, c.id, reg.get("s1", "q1") is None, reg.get("s2", "q3") is None
('q1', 'q3', True, True)
>>> reg.get("s1", "q3").current
'c'
>>> now[0] = 61.0
>>> reg.get("s1", "q3") is None
True
"""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

DraftT = TypeVar("DraftT")

MAX_CONTAINERS_PER_SESSION = 32
MAX_SESSIONS = 256
MAX_IDLE_SECONDS = 3600.0
MAX_HISTORY = 64
# Requests without a session (stateless protocol) share this namespace; their container ids are
# unguessable tokens, so only the client that created a container can reach it.
STATELESS = "stateless"
STATELESS_CAPACITY_FACTOR = 8
_TOKEN_BYTES = 16


@dataclass
class Container(Generic[DraftT]):
    id: str
    history: list[DraftT]
    touched: float = 0.0

    @property
    def current(self) -> DraftT:
        return self.history[-1]

    def push(self, draft: DraftT) -> None:
        self.history.append(draft)
        del self.history[1:-MAX_HISTORY]  # keep the initial draft and the newest steps

    def undo(self) -> bool:
        if len(self.history) == 1:
            return False
        self.history.pop()
        return True


@dataclass
class _Session(Generic[DraftT]):
    containers: OrderedDict[str, Container[DraftT]] = field(default_factory=OrderedDict)
    issued: int = 0


class ContainerRegistry(Generic[DraftT]):
    """Containers keyed by (session, id); the least recently used go first when full."""

    def __init__(self, *, max_per_session: int = MAX_CONTAINERS_PER_SESSION,
                 max_sessions: int = MAX_SESSIONS, max_idle_seconds: float = MAX_IDLE_SECONDS,
                 clock: Callable[[], float] = time.monotonic):
        self.max_per_session = max_per_session
        self.max_sessions = max_sessions
        self.max_idle = max_idle_seconds
        self._clock = clock
        self._sessions: OrderedDict[str, _Session[DraftT]] = OrderedDict()

    def create(self, session: str, draft: DraftT) -> Container[DraftT]:
        now = self._expire()
        state = self._sessions.setdefault(session, _Session())
        self._sessions.move_to_end(session)
        while len(self._sessions) > self.max_sessions:
            self._sessions.popitem(last=False)
        state.issued += 1
        cid = (f"q-{secrets.token_urlsafe(_TOKEN_BYTES)}" if session == STATELESS
               else f"q{state.issued}")
        container = Container(id=cid, history=[draft], touched=now)
        state.containers[container.id] = container
        limit = self.max_per_session * (STATELESS_CAPACITY_FACTOR if session == STATELESS else 1)
        while len(state.containers) > limit:
            state.containers.popitem(last=False)
        return container

    def get(self, session: str, container_id: str) -> Container[DraftT] | None:
        now = self._expire()
        state = self._sessions.get(session)
        container = state.containers.get(container_id) if state else None
        if container is not None:
            container.touched = now
            state.containers.move_to_end(container_id)
            self._sessions.move_to_end(session)
        return container

    def ids(self, session: str) -> list[str]:
        self._expire()
        state = self._sessions.get(session)
        return list(state.containers) if state and session != STATELESS else []

    def _expire(self) -> float:
        # An emptied session keeps its counter, so ids are never reused within a session.
        now = self._clock()
        for name in list(self._sessions):
            state = self._sessions[name]
            for cid in [c.id for c in state.containers.values() if now - c.touched > self.max_idle]:
                del state.containers[cid]
        return now
