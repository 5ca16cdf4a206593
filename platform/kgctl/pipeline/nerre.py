"""`kgctl demo` of a pack whose benchmark is NERRE-scored: replay its ground-truth traces
through the compiled tools, read the graphs out in the NERRE layout and score them beside the
published predictions shipped with the benchmark (predictions.json, report.json and a small
report.html in the work folder).
"""

from __future__ import annotations

import html
import json
import time
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from kgctl.evaluation.nerre import load_json_list, score_doping
from kgctl.evaluation.nerre_readout import missing_links, read_predictions
from kgctl.evaluation.readout import readout_folder
from kgctl.evaluation.scorer import Counts
from kgctl.packs import Pack
from kgctl.store.base import GraphStore

PREDICTIONS = "predictions.json"
REPORT_HTML = "report.html"
REPORT_JSON = "report.json"


class NerreDemo(BaseModel):
    model_config = ConfigDict(frozen=True)
    benchmark: str
    papers: int
    calls: int
    refused: int
    scores: dict[str, dict[str, Counts]]  # "round trip" and each published prediction set
    missing: tuple[str, ...]  # gold links the round trip lost
    html: Path
    json_path: Path
    seconds: dict[str, float]

    def lines(self) -> list[str]:
        out = [f"source: round trip of the {self.benchmark} ground-truth traces (the ceiling "
               "of T-Box + tools + read-out, not an extraction score)",
               f"replayed {self.papers} paper traces: {self.calls} tool calls, {self.refused} "
               f"refused, in {self.seconds.get('replay', 0):.1f} s"]
        for name, scores in self.scores.items():
            out += [f"{name:12} {kind:9s} P {c.precision:.3f} R {c.recall:.3f} F1 {c.f1:.3f}"
                    for kind, c in scores.items()]
        out.append(f"gold links lost by the round trip: {len(self.missing)}")
        out += [f"  {m}" for m in self.missing]
        out.append(f"report: {self.html} (and {self.json_path})")
        return out


def run_nerre_demo(store: GraphStore, pack: Pack, *, workdir: Path, traces: list[Path],
                   progress: Callable[[str], None] | None = None) -> NerreDemo:
    from kgctl.agent.aio import run_sync
    from kgctl.agent.replay import replay_traces
    from kgctl.pipeline.demo import compile_all

    name, benchmark = pack.benchmark()
    _compiled, (ir, surface), _plan = compile_all(pack=pack)
    started = time.perf_counter()
    reports = run_sync(lambda: replay_traces(traces, ir=ir, store=store, surface=surface,
                                             replace=True, progress=progress))
    seconds = {"replay": round(time.perf_counter() - started, 3)}
    gold = load_json_list(pack.root / benchmark.path)
    pred = read_predictions(store, gold, readout_folder(pack.root))
    scores = {"round trip": score_doping(gold, pred)}
    for label, path in benchmark.predictions.items():
        scores[label] = score_doping(gold, load_json_list(pack.root / path))
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / PREDICTIONS).write_text(json.dumps(pred, indent=1, ensure_ascii=False),
                                       encoding="utf-8")
    result = NerreDemo(
        benchmark=name, papers=len(reports), calls=sum(r.calls for r in reports),
        refused=sum(len(r.refused) for r in reports), scores=scores,
        missing=tuple(missing_links(gold, pred)), html=workdir / REPORT_HTML,
        json_path=workdir / REPORT_JSON, seconds=seconds)
    result.json_path.write_text(result.model_dump_json(indent=2) + "\n", encoding="utf-8")
    result.html.write_text(_page(result), encoding="utf-8")
    return result


def _page(r: NerreDemo) -> str:
    rows = "".join(
        f"<tr><td>{html.escape(name)}</td><td>{kind}</td><td>{c.precision:.3f}</td>"
        f"<td>{c.recall:.3f}</td><td>{c.f1:.3f}</td><td>{c.tp}</td><td>{c.fp}</td>"
        f"<td>{c.fn}</td></tr>" for name, s in r.scores.items() for kind, c in s.items())
    lost = "".join(f"<li>{html.escape(m)}</li>" for m in r.missing)
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>kgctl demo: "
            f"{html.escape(r.benchmark)}</title></head><body><h1>kgctl demo: "
            f"{html.escape(r.benchmark)}</h1><p>{html.escape(r.lines()[0])}</p><table border=1>"
            "<tr><th>predictions</th><th>kind</th><th>P</th><th>R</th><th>F1</th><th>TP</th>"
            f"<th>FP</th><th>FN</th></tr>{rows}</table><h2>Gold links lost by the round trip"
            f"</h2><ul>{lost}</ul></body></html>\n")
