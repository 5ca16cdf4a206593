"""The chemistry server under names and structures that would keep it busy: work beyond the
bounds is refused before any parsing, a call that runs past the deadline is stopped (its worker
killed and replaced), and another session's calls go on meanwhile."""

from __future__ import annotations

import json
import time

import anyio
import pytest
from mcp import Client

from kgctl.chemistry.bounds import MAX_ATOMS, MAX_EXPANSION, expansion
from kgctl.chemistry.server import build_server
from kgctl.chemistry.workers import Pool

pytest.importorskip("rdkit")
DEADLINE_S = 1.0


def dendrimer(levels: int, core: str = "methyl") -> str:
    """A name whose structure (and OPSIN's work) triples with every level."""
    for _ in range(levels):
        core = f"tris({core})methyl"
    return f"tetrakis({core})methane"


def _envelope(result) -> dict:
    assert result.is_error
    return json.loads(result.content[0].text)


@pytest.fixture(scope="module")
def pool():
    with Pool(size=2, deadline=DEADLINE_S) as workers:
        yield workers


def test_work_beyond_the_bounds_is_refused_with_its_size_only(pool):
    name = dendrimer(10)  # 143 characters; a minute of OPSIN's time
    assert len(name) < 150 and expansion(name) > MAX_EXPANSION

    async def main() -> list[dict]:
        async with Client(build_server(pool)) as client:
            calls = [("parse_names", {"names": [name]}),
                     ("derive_building_units", {"metal_names": ["CuCl2"],
                                                "linker_names": ["x", name]}),
                     ("describe_structure", {"smiles": "c1" + "c" * MAX_ATOMS + "c1"}),
                     ("parse_names", {"names": ["y" * 1500]})]
            return [_envelope(await client.call_tool(*call)) for call in calls]

    started = time.perf_counter()
    names, units, ring, long = anyio.run(main)
    assert time.perf_counter() - started < 30  # refused at once (a busy machine: the workers start)
    assert (names["code"], names["field"], names["value"]) == ("too_large", "names[0]",
                                                               expansion(name))
    assert units["field"] == "linker_names[1]"
    assert (ring["code"], ring["value"]) == ("too_large", MAX_ATOMS + 2)
    assert (long["code"], long["field"], long["value"]) == ("too_large", "names.0", 1500)
    assert "yyy" not in json.dumps(long)


def test_a_call_past_the_deadline_is_stopped_and_others_go_on(pool):
    # within the bounds one by one, but twenty of them keep OPSIN busy for seconds
    heavy = [dendrimer(5, core) for core in ("methyl", "ethyl", "propyl", "butyl", "pentyl",
                                             "hexyl", "heptyl", "octyl", "nonyl", "decyl")]
    heavy += [name.replace("methane", "silane") for name in heavy]
    light: list[float] = []

    async def other(client: Client, stop: anyio.Event) -> None:
        while not stop.is_set():
            started = time.perf_counter()
            result = await client.call_tool("describe_structure", {"smiles": "CCO"})
            light.append(time.perf_counter() - started)
            assert not result.is_error and result.structured_content["formula"] == "C2H6O"

    async def main() -> tuple[dict, float, dict]:
        server = build_server(pool)
        async with Client(server) as slow, Client(server) as fast:
            await fast.call_tool("parse_names", {"names": ["ethanol"]})  # the pool is warm
            stop = anyio.Event()
            async with anyio.create_task_group() as group:
                group.start_soon(other, fast, stop)
                started = time.perf_counter()
                stopped = await slow.call_tool("parse_names", {"names": heavy})
                took = time.perf_counter() - started
                stop.set()
            after = await slow.call_tool("parse_names", {"names": ["terephthalic acid"]})
            return _envelope(stopped), took, after.structured_content

    stopped, took, after = anyio.run(main)
    assert stopped["code"] == "timeout" and "1 s" in stopped["message"]
    assert took < DEADLINE_S + 2.0
    assert light and max(light) < DEADLINE_S  # never queued behind the stopped call
    assert after["structure"]["formula"] == "C8H6O4"  # served again
