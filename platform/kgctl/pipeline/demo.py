"""The main job, ``kgctl demo``: compile -> replay the bundled MOP-30 traces (or extract the
user's papers with an LLM) into an embedded store -> evaluate against MOP-30 -> report.

Runs on a fresh install without an API key or a server; the graph it leaves can be queried with
``kgctl serve`` / ``kgctl query`` afterwards.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from kgctl.agent.demo_report import DedupSummary, GroundingSummary, sections
from kgctl.agent.replay import ReplayReport, replay_traces
from kgctl.agent.trace import TRACE_FORMAT
from kgctl.assets import asset_dir
from kgctl.compiler import ToolSurface, compile_tools
from kgctl.compiler.plan import Plan, compile_plan
from kgctl.errors import InputError
from kgctl.evaluation.loader import Loaded, load_benchmark
from kgctl.evaluation.readout import read_out_loaded
from kgctl.evaluation.report import Report, score_both
from kgctl.evaluation.source import Source, source_for
from kgctl.grounding.paths import default_reference
from kgctl.ontology import OntologyIR, default_ir
from kgctl.store.base import GraphStore

BENCHMARK = "mop30"
TRACE_FOLDER = "traces"
TRACE_PATTERNS = ("*.jsonl", "*.trace.json")
STORE_FOLDER = "store"
REPORT_HTML = "report.html"
REPORT_JSON = "report.json"


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
    grounding: GroundingSummary | None = None
    dedup: list[DedupSummary] | None = None


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


def compile_all(ir: OntologyIR | None = None
                ) -> tuple[Compiled, tuple[OntologyIR, ToolSurface], Plan]:
    started = time.perf_counter()
    ir = ir or default_ir()
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
    report, timings["evaluate"] = evaluate(store, papers, source=trace_source(traces))
    grounding = ground_species(store, papers, reference=reference or default_reference())
    timings["grounding"] = grounding.seconds
    started = time.perf_counter()
    dedup = deduplicate(store)
    timings["dedup"] = round(time.perf_counter() - started, 3)
    html, json_path = write_reports(report, workdir, grounding=grounding, dedup=dedup)
    return DemoResult(compiled=compiled, replays=replays, report=report, papers=papers,
                      html=html, json_path=json_path, store_path=store_path, seconds=timings,
                      grounding=grounding, dedup=dedup)


def trace_source(traces: list[Path]) -> Source:
    """What replaying these traces measures: the bundled (ground-truth) traces give the round
    trip; agent run traces give extraction by their model; anything else is a plain replay."""
    bundled = asset_dir("benchmarks") / BENCHMARK / TRACE_FOLDER
    if traces and all(_same_file(t, bundled / t.name) for t in traces):
        return source_for("round_trip", benchmark=BENCHMARK)
    runs = [_agent_run(t) for t in traces]
    if runs and all(r is not None for r in runs):
        models = sorted({r[0] for r in runs if r})
        servers = sorted({r[1] for r in runs if r})
        return source_for("extraction", benchmark=BENCHMARK, model=", ".join(models),
                          server=", ".join(servers))
    folders = sorted({str(t.parent) for t in traces})
    return source_for("replay", benchmark=BENCHMARK, origin=", ".join(folders))


def _same_file(path: Path, other: Path) -> bool:
    return other.is_file() and path.read_bytes() == other.read_bytes()


def _agent_run(path: Path) -> tuple[str, str] | None:
    """(model, server) of an agent run trace, None for any other file."""
    import json

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if isinstance(data, dict) and data.get("format") == TRACE_FORMAT:
        return str(data.get("model")), str(data.get("base_url"))
    return None


def deduplicate(store: GraphStore) -> list[DedupSummary]:
    """Cross-paper dedup of the demo graphs with the bundled specs (writes the dedup graph)."""
    from kgctl.dedup.job import run
    from kgctl.dedup.spec import load_specs

    return [DedupSummary.model_validate(s.model_dump()) for s in run(store, load_specs())]


def ground_species(store: GraphStore, papers: list[str], *, reference: Path
                   ) -> GroundingSummary:
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
    methods = Counter(d.match.method for d in decisions if d.match is not None)
    return GroundingSummary(
        reference=reference, built=built, entities=len(decisions),
        grounded=sum(methods.values()), seconds=round(time.perf_counter() - started, 3),
        by_method=dict(methods),
        ungrounded=tuple(sorted({d.names[0] for d in decisions
                                 if d.match is None and d.names})))


def evaluate(store: GraphStore, papers: list[str], *, source: Source | None = None
             ) -> tuple[Report, float]:
    """Score the given papers of the store against their MOP-30 ground truth (both scorers)."""
    started = time.perf_counter()
    gold = load_benchmark(asset_dir("benchmarks") / BENCHMARK)
    scored = sorted(p for p in papers if p in gold.docs)
    if not scored:
        raise InputError(f"none of the papers ({', '.join(papers[:3])} ...) is in the "
                         f"{BENCHMARK} benchmark, so there is nothing to score")
    gold_part = Loaded(docs={p: gold.docs[p] for p in scored},
                       problems=tuple(q for q in gold.problems if q.paper in scored))
    pred = read_out_loaded(store, scored)
    return score_both(gold_part, pred, source=source), round(time.perf_counter() - started, 3)


def write_reports(report: Report, workdir: Path, *, grounding: GroundingSummary | None = None,
                  dedup: list[DedupSummary] | None = None) -> tuple[Path, Path]:
    """report.html and report.json, each opening with the source of the figures."""
    import json

    from kgctl.agent.demo_report import extras_json
    from kgctl.evaluation.html import write_html

    workdir.mkdir(parents=True, exist_ok=True)
    html, json_path = workdir / REPORT_HTML, workdir / REPORT_JSON
    write_html(report, html, title=f"kgctl demo: {BENCHMARK}",
               sections=sections(grounding, dedup))
    data = report.to_dict() | extras_json(grounding, dedup)
    json_path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return html, json_path
