"""Ground-truth traces and paper texts of the nerre-doping pack, made from its test.json.

Each abstract becomes one paper: its text (title as sentence [0], then the abstract's
sentences, each numbered as the gold file orders them) in benchmark/papers/<paper>.txt, and
the calls of the compiled tools that write its gold hosts, dopants and links, made through a
real in-process MCP session on an embedded store and exported as benchmark/traces/<paper>.jsonl
(none for an abstract without gold entities).
Run: python scripts/nerre_traces.py   (rewrites both folders)
"""

from __future__ import annotations

import json
import sys

import anyio
from mcp import Client

from kgctl.instantiation.server import build_server
from kgctl.ontology import pack_ir
from kgctl.packs import load_pack
from kgctl.store import EmbeddedStore
from kgctl.store.iris import paper_id
from kgctl.store.trace import trace_jsonl


def paper_text(abstract: dict) -> str:
    return "\n".join(f"[{n}] {s['sentence_text']}"
                     for n, s in enumerate(abstract["doping_sentences"])) + "\n"


def calls(abstract: dict) -> list[tuple[str, dict]]:
    """The tool calls that write one abstract's gold graph, sentence by sentence."""
    out: list[tuple[str, dict]] = []
    for n, s in enumerate(abstract["doping_sentences"]):
        sentence = {"sentence_number": n}
        hosts, dopants = s.get("basemats") or {}, s.get("dopants") or {}
        for tool, entities in (("create_host_material", hosts), ("create_dopant", dopants)):
            for label in entities.values():
                out.append((tool, {"label": label, "mentioned_in": [sentence]}))
        for d, bs in (s.get("dopants2basemats") or {}).items():
            for b in bs or ():
                if d in dopants and b in hosts:
                    args = {"dopant": {"label": dopants[d], "mentioned_in": [sentence]},
                            "host": {"label": hosts[b], "mentioned_in": [sentence]},
                            "stated_in": sentence}
                    if s.get("doping_modifiers"):
                        args["modifier"] = list(s["doping_modifiers"])
                    out.append(("create_doping", args))
    return out


async def build(client: Client, abstracts: list[dict]) -> list[str]:
    refused = []
    for abstract in abstracts:
        pid = paper_id(abstract["doi"])
        await client.call_tool("select_paper", {"paper_id": pid})
        for tool, args in calls(abstract):
            result = await client.call_tool(tool, args)
            if result.is_error:
                refused.append(f"{pid} {tool} {json.dumps(args)}: "
                               f"{result.content[0].text[:200]}")
    return refused


def main() -> int:
    pack = load_pack("nerre-doping")
    _, benchmark = pack.benchmark()
    abstracts = json.loads((pack.root / benchmark.path).read_text(encoding="utf-8"))
    papers, traces = pack.root / benchmark.papers, pack.root / benchmark.traces
    papers.mkdir(exist_ok=True)
    traces.mkdir(exist_ok=True)
    store = EmbeddedStore()
    server = build_server(pack_ir(pack.root), store)

    async def run() -> list[str]:
        async with Client(server) as client:
            return await build(client, abstracts)

    refused = anyio.run(run)
    for abstract in abstracts:
        pid = paper_id(abstract["doi"])
        (papers / f"{pid}.txt").write_text(paper_text(abstract), encoding="utf-8")
        trace = traces / f"{pid}.jsonl"
        trace.unlink(missing_ok=True)
        if calls(abstract):  # an abstract with no gold entity has no trace
            trace.write_text(trace_jsonl(store.trace(pid)), encoding="utf-8")
    print(f"{len(abstracts)} papers, {sum(len(calls(a)) for a in abstracts)} calls, "
          f"{len(refused)} refused")
    for line in refused:
        print("  refused:", line)
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main())
