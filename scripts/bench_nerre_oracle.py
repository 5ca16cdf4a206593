"""NERRE doping round trip (the ceiling of T-Box + tools + read-out, not an extraction score):
replay the nerre-doping pack's ground-truth traces through its compiled tools into an embedded
store, read the graphs out in the NERRE layout and score them with `score_doping`.

Prints the share of gold host/dopant links recovered, the three NERRE scores, and every gold
link the tools could not hold. Run: python scripts/bench_nerre_oracle.py
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from kgctl.agent.aio import run_sync
from kgctl.agent.replay import replay_traces
from kgctl.evaluation.nerre import load_json_list, score_doping
from kgctl.evaluation.nerre_readout import missing_links, read_predictions
from kgctl.ontology import pack_ir
from kgctl.packs import load_pack
from kgctl.store import EmbeddedStore


def main() -> None:
    pack = load_pack("nerre-doping")
    _, benchmark = pack.benchmark()
    gold = load_json_list(pack.root / benchmark.path)
    traces = sorted((pack.root / benchmark.traces).glob("*.jsonl"))
    with tempfile.TemporaryDirectory() as tmp:
        store = EmbeddedStore(Path(tmp) / "store")
        reports = run_sync(lambda: replay_traces(traces, ir=pack_ir(pack.root), store=store))
        pred = read_predictions(store, gold, pack.part("readout"))
        store.close()
    scores = score_doping(gold, pred)
    links = scores["links"]
    calls = sum(r.calls for r in reports)
    refused = sum(len(r.refused) for r in reports)
    print(f"replayed {len(reports)} papers: {calls} calls, {refused} refused")
    print(f"gold links recovered: {links.tp}/{links.tp + links.fn} = "
          f"{links.tp / (links.tp + links.fn):.4f}")
    print(json.dumps({k: c.summary() for k, c in scores.items()}, indent=1))
    lost = missing_links(gold, pred)
    print(f"gold links the tools cannot hold: {len(lost)}")
    for line in lost:
        print("  ", line)


if __name__ == "__main__":
    main()
