"""Which MCP sessions an HTTP server keeps: a pure state machine, driven by `gate.SessionGate`.

A *client* is the remote address plus the `Mcp-Client-Id` header it may send (clients behind
one address, such as a proxy or loopback, tell themselves apart with it). The rules:
- a client holds at most `per_client` sessions: a further one evicts that client's least
  recently used idle session, and is refused only when all of its sessions are busy;
- the server holds at most `max_sessions`: a new session then evicts the least recently used
  idle session of the client holding the most sessions, so a flood evicts its own sessions
  before anyone else's;
- a session without a request for `idle_seconds` is closed;
- *busy* means a POST of the session is being served; a listening GET stream is idle.

>>> now = [0.0]
>>> policy = SessionPolicy(max_sessions=3, per_client=2, idle_seconds=60, clock=lambda: now[0])
>>> for n, client in enumerate(["flood", "flood", "other"]):
...     decision = policy.admit(client, f"t{n}")
...     policy.opened(f"t{n}", f"s{n}"); now[0] += 1
>>> policy.admit("flood", "t3")  # flood is at its quota: its least recently used goes
Admission(admitted=True, evict=('s0',))
>>> policy.opened("t3", "s3"); policy.admit("third", "t4")  # full: the biggest holder pays
Admission(admitted=True, evict=('s1',))
>>> policy.opened("t4", "s4"); policy.begin("s2"); policy.begin("s3"); policy.begin("s4")
>>> policy.admit("flood", "t5")  # full, and every session is busy
Admission(admitted=False, evict=())
>>> now[0] += 61; policy.end("s2"); now[0] += 61  # s3 and s4 stay busy: not idle
>>> policy.admit("other", "t5")
Admission(admitted=True, evict=('s2',))
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

MAX_SESSIONS = 1_000
CLIENT_SESSIONS = 100


@dataclass(frozen=True)
class Admission:
    admitted: bool
    evict: tuple[str, ...]  # sessions to close first (already forgotten here)


@dataclass
class _Session:
    client: str
    used: float
    busy: int = 0


class SessionPolicy:
    """Sessions by id (or by the ticket of one being opened), their clients and last use."""

    def __init__(self, *, max_sessions: int = MAX_SESSIONS, per_client: int = CLIENT_SESSIONS,
                 idle_seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.max_sessions, self.per_client = max_sessions, min(per_client, max_sessions)
        self.idle_seconds, self._clock = idle_seconds, clock
        self._sessions: dict[str, _Session] = {}
        self._held: Counter[str] = Counter()

    def admit(self, client: str, ticket: str) -> Admission:
        """May `client` open a session? If so it is held under `ticket` (busy) until `opened`
        names it or `closed` drops it; `evict` lists the sessions to close first."""
        now = self._clock()
        expired = self._forget([key for key, s in self._sessions.items()
                                if not s.busy and now - s.used > self.idle_seconds])
        victim = None
        if self._held[client] >= self.per_client:
            victim = self._victim(client)
        elif len(self._sessions) >= self.max_sessions:
            victim = self._victim(None)
        else:
            return self._hold(client, ticket, now, expired)
        if victim is None:
            return Admission(False, expired)
        return self._hold(client, ticket, now, (*expired, *self._forget([victim])))

    def opened(self, ticket: str, session: str | None) -> None:
        """The request held by `ticket` ended: it opened `session`, or nothing (None)."""
        state = self._sessions.pop(ticket, None)
        if state is None:
            return
        if session is None:
            self._release(state.client)
            return
        state.busy, state.used = 0, self._clock()
        self._sessions[session] = state

    def begin(self, session: str) -> None:
        """A POST of `session` is being served."""
        state = self._sessions.get(session)
        if state is not None:
            state.busy += 1
            state.used = self._clock()

    def end(self, session: str) -> None:
        """A request of `session` ended (a POST that `begin` counted, or a GET stream)."""
        state = self._sessions.get(session)
        if state is not None:
            state.busy = max(0, state.busy - 1)
            state.used = self._clock()

    def touch(self, session: str) -> None:
        state = self._sessions.get(session)
        if state is not None:
            state.used = self._clock()

    def closed(self, session: str) -> None:
        """`session` (or a ticket) ended: deleted by its client, or unknown to the transport."""
        self._forget([session])

    def __len__(self) -> int:
        return len(self._sessions)

    def held(self, client: str) -> int:
        return self._held[client]

    def _victim(self, client: str | None) -> str | None:
        """The idle session to evict: `client`'s, or else the biggest holder's; least recently
        used first. None when every candidate is busy."""
        candidates = [(-self._held[s.client], s.used, key) for key, s in self._sessions.items()
                      if not s.busy and client in (None, s.client)]
        return min(candidates)[2] if candidates else None

    def _hold(self, client: str, ticket: str, now: float, evict: tuple[str, ...]) -> Admission:
        self._sessions[ticket] = _Session(client, now, busy=1)
        self._held[client] += 1
        return Admission(True, evict)

    def _forget(self, keys: list[str]) -> tuple[str, ...]:
        for key in keys:
            state = self._sessions.pop(key, None)
            if state is not None:
                self._release(state.client)
        return tuple(keys)

    def _release(self, client: str) -> None:
        self._held[client] -= 1
        if self._held[client] <= 0:
            del self._held[client]
