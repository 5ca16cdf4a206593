"""The chemistry MCP server under calls that would keep it busy: what the caller gets, how long
it takes, and the latency of another session's calls meanwhile.

`kgctl chem mcp` over streamable HTTP (default: 2 workers, a 5 s deadline). One session sends
each attack; another calls describe_structure('CCO') and parse_names(['ethanol']) in a loop
until the attack is answered. Attacks: a 139-character dendrimer name (a minute of OPSIN's work
when parsed), twenty dendrimer names each within the bounds (seconds together), a 1,000-atom
aromatic ring SMILES, and a 1,500-character name.

    python scripts/bench_chemistry_deadlines.py
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

import anyio
from mcp import Client

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from mcp_helpers import http_server  # noqa: E402


def dendrimer(levels: int, core: str, outer: str = "tetrakis({})methane") -> str:
    for _ in range(levels):
        core = f"tris({core})methyl"
    return outer.format(core)


NAME_139 = dendrimer(10, "ethynyl", "tris({})borane")
HEAVY = [dendrimer(5, f"{alkyl}yl") for alkyl in ("meth", "eth", "prop", "but", "pent", "hex",
                                                    "hept", "oct", "non", "dec")]
ATTACKS = {
    f"{len(NAME_139)}-character dendrimer name": ("parse_names", {"names": [NAME_139]}),
    "20 dendrimer names within the bounds": ("parse_names", {"names": HEAVY + [
        n.replace("methane", "silane") for n in HEAVY]}),
    "1,000-atom aromatic ring SMILES": ("describe_structure",
                                        {"smiles": "c1" + "c" * 998 + "c1"}),
    "1,500-character name": ("parse_names", {"names": ["x" * 1500]}),
}
LIGHT = [("describe_structure", {"smiles": "CCO"}), ("parse_names", {"names": ["ethanol"]})]


async def attack(url: str, tool: str, arguments: dict) -> tuple[str, float, list[float]]:
    light: list[float] = []
    async with Client(url) as attacker, Client(url) as other:
        for call in LIGHT:  # both sessions open, the workers warm
            await other.call_tool(*call)
        done = anyio.Event()

        async def meanwhile() -> None:
            n = 0
            while not done.is_set():
                started = time.perf_counter()
                result = await other.call_tool(*LIGHT[n % len(LIGHT)])
                assert not result.is_error, result.content[0].text
                light.append(time.perf_counter() - started)
                n += 1

        async with anyio.create_task_group() as group:
            group.start_soon(meanwhile)
            await anyio.sleep(0.05)  # the other session's loop is running
            started = time.perf_counter()
            result = await attacker.call_tool(tool, arguments)
            took = time.perf_counter() - started
            done.set()
    text = result.content[0].text
    answer = json.loads(text)
    shown = (f"{answer['code']} (field {answer.get('field')}, value {answer.get('value')})"
             if result.is_error else "answered")
    assert len(text) < 1000, "the refusal echoes the input"
    return shown, took, light


def main() -> None:
    with http_server(["chem", "mcp"]) as url:
        for label, (tool, arguments) in ATTACKS.items():
            shown, took, light = anyio.run(attack, url, tool, arguments)
            print(f"{label}: {shown} in {took:.2f} s; the other session meanwhile: {len(light)} "
                  f"calls, median {statistics.median(light) * 1000:.0f} ms, max "
                  f"{max(light) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
