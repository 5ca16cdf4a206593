"""The main job, ``kgctl demo``: compile a domain pack -> replay its ground-truth traces (or
extract the user's papers with an LLM) into an embedded store -> evaluate against its benchmark
-> ground (when the pack has grounding specs) and deduplicate -> report.

Runs on a fresh install without an API key or a server; the graph it leaves can be queried with
``kgctl serve`` / ``kgctl query`` afterwards.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from kgctl.agent.replay import ReplayReport, replay_traces
from kgctl.compiler import ToolSurface, compile_tools
from kgctl.compiler.plan import Plan, compile_plan
from kgctl.errors import InputError
from kgctl.evaluation.loader import Loaded, load_benchmark
from kgctl.evaluation.readout import read_out_loaded
from kgctl.evaluation.report import Report, score_both
from kgctl.evaluation.source import Source, source_for
from kgctl.grounding.paths import default_reference
from kgctl.ontology import OntologyIR, pack_ir
from kgctl.packs import Pack
from kgctl.papers.formats import TRACE_FORMAT
from kgctl.pipeline.demo_report import DedupSummary, GroundingSummary, RoleSummary, sections
from kgctl.store.base import GraphStore
from kgctl.store.merged import rebuild

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


def pack_traces(pack: Pack) -> Path | None:
    """The ground-truth traces folder of the pack's first benchmark, if it has one."""
    benchmarks = pack.manifest.benchmarks
    return pack.path(next(iter(benchmarks.values())).traces) if benchmarks else None


def bundled_traces(pack: Pack | None = None, folder: Path | None = None) -> list[Path]:
    """The pack's (default: the default pack's) ground-truth traces, or those of `folder`,
    sorted; a clear error when there are none."""
    from kgctl.packs import load_pack

    pack = pack or load_pack()
    folder = folder or pack_traces(pack)
    found = sorted({p for pattern in TRACE_PATTERNS for p in folder.glob(pattern)}) \
        if folder else []
    if not found:
        raise InputError(
            f"no demo traces in {folder or 'the domain pack ' + repr(pack.name)}: give "
            "--traces FOLDER, or run `kgctl demo --llm PAPER...` to extract your own papers"
        )
    return found


def pack_files(pack: Pack) -> list[Path]:
    """The T-Box and profile files of a pack, as an evaluation's source names them."""
    from kgctl.ontology.profile import profile_beside

    files = []
    for ttl in pack.ontology_paths():
        files.append(ttl)
        profile = profile_beside(ttl)
        if pack.profile_paths() is None and profile.is_file():
            files.append(profile)
    return files + (pack.profile_paths() or [])


def compile_all(ir: OntologyIR | None = None, *, pack: Pack | None = None
                ) -> tuple[Compiled, tuple[OntologyIR, ToolSurface], Plan]:
    """Compile an IR (default: the pack's) into tools and plan (with the pack's plan hints
    when the IR is the pack's)."""
    from kgctl.compiler.plan import load_hints
    from kgctl.packs import load_pack

    started = time.perf_counter()
    if ir is None:
        pack = pack or load_pack()
        ir = pack_ir(pack.root)
    surface = compile_tools(ir)
    hints_file = pack.part("plan_hints") if pack is not None else None
    hints = load_hints(hints_file, ir) if hints_file is not None else None
    plan = compile_plan(ir, surface=surface, hints=hints)
    compiled = Compiled(classes=len(ir.classes), properties=len(ir.properties),
                        tools=len(surface.tools), plan_steps=len(plan.steps),
                        seconds=round(time.perf_counter() - started, 3))
    return compiled, (ir, surface), plan


def run_replay_demo(
    store: GraphStore,
    pack: Pack,
    *,
    workdir: Path,
    store_path: Path,
    traces: list[Path] | None = None,
    progress: Callable[[str], None] | None = None,
    reference: Path | None = None,
    phase: Callable[[str], None] = lambda _what: None,
) -> DemoResult:
    """Compile, replay every trace, read the graphs out with the fixed queries and score;
    ground (when the pack has grounding specs) and deduplicate. `phase` is told what starts."""
    from kgctl.agent.aio import run_sync

    timings: dict[str, float] = {}
    traces = traces if traces is not None else bundled_traces(pack)
    phase(f"compiling the {pack.name} ontologies into tools")
    compiled, (ir, surface), _plan = compile_all(pack=pack)
    timings["compile"] = compiled.seconds
    phase(f"replaying {len(traces)} traces through the compiled tools")
    started = time.perf_counter()
    replays = run_sync(lambda: replay_traces(traces, ir=ir, store=store, surface=surface,
                                             replace=True, progress=progress))
    timings["replay"] = round(time.perf_counter() - started, 3)
    papers = [r.paper_id for r in replays]
    phase("reading the graphs out with the fixed queries and scoring them")
    report, timings["evaluate"] = evaluate(store, papers, pack,
                                           source=trace_source(traces, pack))
    grounding = None
    if pack.part("grounding") is not None:
        grounding = ground_species(store, papers, pack,
                                   reference=reference or default_reference(), phase=phase)
        timings["grounding"] = grounding.seconds
    phase("deduplicating entities across papers")
    started = time.perf_counter()
    dedup = deduplicate(store, pack, ir)
    timings["dedup"] = round(time.perf_counter() - started, 3)
    phase("merging grounding and dedup links into one identity per entity")
    started = time.perf_counter()
    rebuild(store)
    timings["merge"] = round(time.perf_counter() - started, 3)
    html, json_path = write_reports(report, workdir, pack, grounding=grounding, dedup=dedup)
    return DemoResult(compiled=compiled, replays=replays, report=report, papers=papers,
                      html=html, json_path=json_path, store_path=store_path, seconds=timings,
                      grounding=grounding, dedup=dedup)


def trace_source(traces: list[Path], pack: Pack | None = None) -> Source:
    """What replaying these traces measures: the pack's (default: the default pack's)
    ground-truth traces give the round trip; agent run traces give extraction by their model;
    anything else is a plain replay."""
    from kgctl.packs import load_pack

    pack = pack or load_pack()
    bundled, benchmark, files = pack_traces(pack), pack.benchmark()[0], pack_files(pack)
    if traces and bundled and all(_same_file(t, bundled / t.name) for t in traces):
        return source_for("round_trip", benchmark=benchmark, ontology=files)
    runs = [_agent_run(t) for t in traces]
    if runs and all(r is not None for r in runs):
        models = sorted({r[0] for r in runs if r})
        servers = sorted({r[1] for r in runs if r})
        return source_for("extraction", benchmark=benchmark, model=", ".join(models),
                          server=", ".join(servers), ontology=files)
    folders = sorted({str(t.parent) for t in traces})
    return source_for("replay", benchmark=benchmark, origin=", ".join(folders), ontology=files)


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


def deduplicate(store: GraphStore, pack: Pack, ir: OntologyIR) -> list[DedupSummary]:
    """Cross-paper dedup of the demo graphs with the pack's specs (writes the dedup graph)."""
    from kgctl.dedup.commands import types_in
    from kgctl.dedup.job import run
    from kgctl.dedup.spec import pack_specs

    specs = pack_specs(pack.root, ir=ir, present=types_in(store))
    return [DedupSummary.model_validate(s.model_dump())
            for s in run(store, specs, domain=pack.root)]


def ground_species(store: GraphStore, papers: list[str], pack: Pack, *, reference: Path,
                   phase: Callable[[str], None] = lambda _what: None) -> GroundingSummary:
    """Link the entities of `papers` the pack's first grounding spec names to the reference KG
    (owl:sameAs).

    The pack's `reference` hook builds the reference store when there is none at `reference`
    yet; its label index is cached where `kgctl ground` caches it.
    """
    from kgctl.grounding.harvest import harvest_index
    from kgctl.grounding.matcher import Matcher
    from kgctl.grounding.materialise import materialise
    from kgctl.grounding.sources import EmbeddedSource
    from kgctl.grounding.spec import load_spec

    started = time.perf_counter()
    build = pack.hook("reference")
    if build is None and not reference.is_dir():
        raise InputError(f"no reference store at {reference}, and domain {pack.name!r} names "
                         "no 'reference' hook to build one")
    if build is not None and not reference.is_dir():
        phase(f"building the reference KG at {reference} (first run only: a few minutes)")
    built = bool(build(reference)) if build is not None else False
    spec = next(load_spec(p, domain=pack.root)
                for p in sorted(pack.part("grounding").glob("*.yaml")))
    phase("indexing the reference KG's labels (cached after the first run)")
    index = harvest_index(EmbeddedSource(reference), spec)
    phase(f"grounding the {len(papers)} paper graphs against the reference KG")
    decisions = materialise(store, Matcher(index, spec.thresholds), spec, papers)
    methods = Counter(d.match.method for d in decisions if d.match is not None)
    source = {s.cls: s for s in spec.sources}
    by_role: dict[str, list] = {}
    for d in decisions:
        by_role.setdefault(source[d.source_class].role_of(d.names), []).append(d)
    return GroundingSummary(
        reference=reference, built=built, entities=len(decisions),
        grounded=sum(methods.values()), seconds=round(time.perf_counter() - started, 3),
        by_method=dict(methods), ungrounded=_ungrounded(decisions),
        by_role={role: RoleSummary(entities=len(ds), grounded=sum(d.match is not None
                                                                    for d in ds),
                                   ungrounded=_ungrounded(ds))
                 for role, ds in sorted(by_role.items())})


def _ungrounded(decisions: list) -> tuple[str, ...]:
    return tuple(sorted({d.names[0] for d in decisions if d.match is None and d.names}))


def evaluate(store: GraphStore, papers: list[str], pack: Pack, *,
             source: Source | None = None) -> tuple[Report, float]:
    """Score the given papers of the store against the ground truth of the pack's benchmark
    (both scorers)."""
    started = time.perf_counter()
    name, benchmark = pack.benchmark()
    gold = load_benchmark(pack.root / benchmark.path)
    scored = sorted(p for p in papers if p in gold.docs)
    if not scored:
        raise InputError(f"none of the papers ({', '.join(papers[:3])} ...) is in the "
                         f"{name} benchmark, so there is nothing to score")
    gold_part = Loaded(docs={p: gold.docs[p] for p in scored},
                       problems=tuple(q for q in gold.problems if q.paper in scored))
    pred = read_out_loaded(store, scored, folder=pack.part("readout"))
    return score_both(gold_part, pred, source=source), round(time.perf_counter() - started, 3)


def write_reports(report: Report, workdir: Path, pack: Pack, *,
                  grounding: GroundingSummary | None = None,
                  dedup: list[DedupSummary] | None = None) -> tuple[Path, Path]:
    """report.html and report.json, each opening with the source of the figures."""
    import json

    from kgctl.evaluation.html import write_html
    from kgctl.pipeline.demo_report import extras_json

    workdir.mkdir(parents=True, exist_ok=True)
    html, json_path = workdir / REPORT_HTML, workdir / REPORT_JSON
    write_html(report, html, title=f"kgctl demo: {pack.benchmark()[0]}",
               sections=sections(grounding, dedup))
    data = report.to_dict() | extras_json(grounding, dedup)
    json_path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return html, json_path
