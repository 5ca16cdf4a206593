"""Session admission on a shared MCP server: one client flooding it with sessions it keeps
alive evicts its own idle sessions, never another client's, and never refuses another client.

The policy's rules are table-tested on a fake clock; the flood runs over real streamable HTTP
against `kgctl chem mcp` (it needs no store) with small caps, driven by raw HTTP (the flood) and
the official SDK client (the other client)."""

from __future__ import annotations

import anyio
import httpx
import pytest
from mcp import Client
from mcp_helpers import http_server

from kgctl.toolserver.admission import SessionPolicy

MAX, PER_CLIENT = 6, 4
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "flood", "version": "0"}}}
PING = {"jsonrpc": "2.0", "id": 2, "method": "ping"}


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0  # every event happens one second after the last
        return self.now


def _open(policy: SessionPolicy, client: str, name: str) -> tuple[str, ...]:
    decision = policy.admit(client, f"ticket-{name}")
    assert decision.admitted, (client, name)
    policy.opened(f"ticket-{name}", name)
    return decision.evict


def test_a_flood_evicts_only_its_own_sessions_and_busy_ones_are_kept():
    policy = SessionPolicy(max_sessions=MAX, per_client=PER_CLIENT, idle_seconds=1e9,
                           clock=Clock())
    assert _open(policy, "b", "b0") == ()
    evicted = [v for n in range(20) for v in _open(policy, "a", f"a{n}")]
    assert evicted == [f"a{n}" for n in range(16)]  # its own least recently used, in order
    assert policy.held("a") == PER_CLIENT and policy.held("b") == 1
    assert _open(policy, "c", "c0") == ()
    assert _open(policy, "d", "d0") == ("a16",)  # full: the biggest holder pays
    policy.touch("a17")
    assert _open(policy, "e", "e0") == ("a18",)  # a17 was used more recently
    for session in ("a17", "a19", "b0", "c0", "d0", "e0"):
        policy.begin(session)
    assert not policy.admit("g", "ticket-g").admitted  # every session busy: refused
    assert not policy.admit("a", "ticket-a").admitted
    policy.end("c0")
    policy.end("b0")
    assert _open(policy, "g", "g0") == ("c0",)  # one session each: the least recently used
    assert len(policy) == MAX


def test_sessions_idle_too_long_are_closed_and_failed_opens_hold_nothing():
    clock = Clock()
    policy = SessionPolicy(max_sessions=MAX, per_client=PER_CLIENT, idle_seconds=10, clock=clock)
    _open(policy, "a", "a0")
    policy.begin("a0")
    assert policy.admit("a", "t").admitted and policy.held("a") == 2
    policy.opened("t", None)  # the initialize failed: nothing held
    assert policy.held("a") == 1
    clock.now += 100
    assert _open(policy, "b", "b0") == ()  # a0 is busy: kept however long it takes
    policy.end("a0")
    clock.now += 100
    assert _open(policy, "b", "b1") == ("a0", "b0")
    policy.closed("b1")
    assert len(policy) == 0 and policy.held("b") == 0


async def _flood(client: httpx.AsyncClient, url: str, n: int) -> list[str]:
    sessions = []
    for _ in range(n):
        answer = await client.post(url, json=INIT, headers=ACCEPT)
        assert answer.status_code == 200, answer.text
        sessions.append(answer.headers["mcp-session-id"])
    return sessions


async def _ping(client: httpx.AsyncClient, url: str, session: str) -> int:
    answer = await client.post(url, json=PING, headers={**ACCEPT, "mcp-session-id": session})
    return answer.status_code


@pytest.mark.parametrize("named", [True, False])
def test_a_flooding_client_never_locks_out_another(named):
    """`named`: the flood names itself (Mcp-Client-Id) and the other client does not; else both
    come from one address unnamed, i.e. are one client, and the flood's oldest session goes."""
    args = ["chem", "mcp", "--max-sessions", str(MAX), "--client-sessions", str(PER_CLIENT)]

    async def main(url: str) -> None:
        headers = {"mcp-client-id": "flood"} if named else {}
        async with httpx.AsyncClient(headers=headers, timeout=30) as flood:
            sessions = await _flood(flood, url, 3 * MAX)
            for session in sessions[-PER_CLIENT:]:  # kept alive, like a ping every 20 s
                assert await _ping(flood, url, session) == 200
            assert await _ping(flood, url, sessions[0]) == 404  # evicted by its own flood
            async with Client(url) as other:
                answer = await other.call_tool("describe_structure", {"smiles": "CCO"})
                assert not answer.is_error and answer.structured_content["formula"] == "C2H6O"
                live = [await _ping(flood, url, s) for s in sessions[-PER_CLIENT:]]
                assert live.count(404) == (0 if named else 1)
                if not named:  # one client: its own next session would evict `other`'s
                    return
                await _flood(flood, url, 2 * MAX)  # flooding again leaves `other` alone
                answer = await other.call_tool("describe_structure", {"smiles": "CCN"})
                assert not answer.is_error, answer.content[0].text

    with http_server(args) as url:
        anyio.run(main, url)
