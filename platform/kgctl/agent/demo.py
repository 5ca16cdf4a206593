"""The main job, ``kgctl demo``: compile -> replay the bundled MOP-30 traces (or extract the
user's papers with an LLM) into an embedded store -> evaluate against MOP-30 -> report.

Runs on a fresh install without an API key or a server; the graph it leaves can be queried with
``kgctl serve`` / ``kgctl query`` afterwards.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from kgctl.agent.replay import ReplayReport, replay_traces
from kgctl.assets import asset_dir
from kgctl.compiler import ToolSurface, compile_tools
from kgctl.compiler.plan import Plan, compile_plan
from kgctl.errors import InputError
from kgctl.evaluation.loader import Loaded, load_benchmark
from kgctl.evaluation.readout import read_out_loaded
from kgctl.evaluation.report import Report, score
from kgctl.grounding.paths import default_reference
from kgctl.ontology import OntologyIR, default_ir
from kgctl.store.base import GraphStore

BENCHMARK = "mop30"
TRACE_FOLDER = "traces"
TRACE_PATTERNS = ("*.jsonl", "*.trace.json")
STORE_FOLDER = "store"
REPORT_HTML = "report.html"
REPORT_JSON = "report.json"


class Grounding(BaseModel):
    model_config = ConfigDict(frozen=True)
    reference: Path
    built: bool  # the reference store was built in this run
    entities: int
    grounded: int
    seconds: float

    @property
    def share(self) -> float:
        return self.grounded / self.entities if self.entities else 0.0


class Compiled(BaseModel):
    model_config = ConfigDict(frozen=True)
    classes: int
    properties: int
    tools: int
    plan_steps: int
    seconds: float


class DemoResult(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)
    compiled: Compiled
    replays: list[ReplayReport]
    report: Report
    papers: list[str]
    html: Path
    json_path: Path
    store_path: Path
    seconds: dict[str, float]
    grounding: Grounding | None = None


def bundled_traces(folder: Path | None = None) -> list[Path]:
    """The bundled demo traces, sorted; a clear error when there are none."""
    folder = folder or asset_dir("benchmarks") / BENCHMARK / TRACE_FOLDER
    found = sorted({p for pattern in TRACE_PATTERNS for p in folder.glob(pattern)})
    if not found:
        raise InputError(
            f"no demo traces in {folder}: they are produced by the round-trip oracle "
            f"(kgctl eval oracle --benchmark {BENCHMARK}); or run `kgctl demo --llm PAPER...` "
            "to extract your own papers"
        )
    return found


def compile_all() -> tuple[Compiled, tuple[OntologyIR, ToolSurface], Plan]:
    started = time.perf_counter()
    ir = default_ir()
    surface = compile_tools(ir)
    plan = compile_plan(ir, surface=surface)
    compiled = Compiled(classes=len(ir.classes), properties=len(ir.properties),
                        tools=len(surface.tools), plan_steps=len(plan.steps),
                        seconds=round(time.perf_counter() - started, 3))
    return compiled, (ir, surface), plan


def run_replay_demo(
    store: GraphStore,
    *,
    workdir: Path,
    store_path: Path,
    traces: list[Path] | None = None,
    progress: Callable[[str], None] | None = None,
    reference: Path | None = None,
) -> DemoResult:
    """Compile, replay every trace, read the graphs out with the fixed queries and score."""
    from kgctl.agent.aio import run_sync

    timings: dict[str, float] = {}
    traces = traces if traces is not None else bundled_traces()
    compiled, (ir, surface), _plan = compile_all()
    timings["compile"] = compiled.seconds
    started = time.perf_counter()
    replays = run_sync(lambda: replay_traces(traces, ir=ir, store=store, surface=surface,
                                             replace=True, progress=progress))
    timings["replay"] = round(time.perf_counter() - started, 3)
    papers = [r.paper_id for r in replays]
    report, timings["evaluate"] = evaluate(store, papers)
    html, json_path = write_reports(report, workdir)
    grounding = ground_species(store, papers, reference=reference or default_reference())
    timings["grounding"] = grounding.seconds
    return DemoResult(compiled=compiled, replays=replays, report=report, papers=papers,
                      html=html, json_path=json_path, store_path=store_path, seconds=timings,
                      grounding=grounding)


def ground_species(store: GraphStore, papers: list[str], *, reference: Path) -> Grounding:
    """Link the chemical inputs/outputs of `papers` to the reference KG (owl:sameAs).

    The reference store is built from the bundled tables when there is none at `reference`
    yet; its label index is cached where `kgctl ground` caches it.
    """
    from kgctl.grounding.harvest import harvest_index
    from kgctl.grounding.matcher import Matcher
    from kgctl.grounding.materialise import materialise
    from kgctl.grounding.reference import build_reference, read_rows, table_paths
    from kgctl.grounding.sources import EmbeddedSource
    from kgctl.grounding.spec import load_spec

    started = time.perf_counter()
    built = not reference.is_dir()
    if built:
        reference.parent.mkdir(parents=True, exist_ok=True)
        build_reference(reference, read_rows(table_paths()))
    spec = load_spec("species")
    index = harvest_index(EmbeddedSource(reference), spec)
    decisions = materialise(store, Matcher(index, spec.thresholds), spec, papers)
    return Grounding(reference=reference, built=built, entities=len(decisions),
                     grounded=sum(d.match is not None for d in decisions),
                     seconds=round(time.perf_counter() - started, 3))


def evaluate(store: GraphStore, papers: list[str]) -> tuple[Report, float]:
    """Score the given papers of the store against their MOP-30 ground truth."""
    started = time.perf_counter()
    gold = load_benchmark(asset_dir("benchmarks") / BENCHMARK)
    scored = sorted(p for p in papers if p in gold.docs)
    if not scored:
        raise InputError(f"none of the papers ({', '.join(papers[:3])} ...) is in the "
                         f"{BENCHMARK} benchmark, so there is nothing to score")
    gold_part = Loaded(docs={p: gold.docs[p] for p in scored},
                       problems=tuple(q for q in gold.problems if q.paper in scored))
    pred = read_out_loaded(store, scored)
    return score(gold_part, pred), round(time.perf_counter() - started, 3)


def write_reports(report: Report, workdir: Path) -> tuple[Path, Path]:
    from kgctl.evaluation.html import write_html

    workdir.mkdir(parents=True, exist_ok=True)
    html, json_path = workdir / REPORT_HTML, workdir / REPORT_JSON
    write_html(report, html, title=f"kgctl demo: {BENCHMARK}")
    report.write_json(json_path)
    return html, json_path
