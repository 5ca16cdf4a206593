"""``kgctl eval``: score JSON records, read a store out and score it, NERRE and Eunomia scores."""

from __future__ import annotations

import json
from pathlib import Path

import click

from kgctl.assets import asset_dir
from kgctl.errors import DataRejected, InputError
from kgctl.evaluation.loader import Loaded, load_benchmark
from kgctl.evaluation.report import Report, score_both, summary_lines
from kgctl.evaluation.source import source_for
from kgctl.packs import bundled_names, domain_option, load_pack
from kgctl.progress import progress_bar


def _emit(report: Report, *, as_json: bool, html: Path | None, out: Path | None) -> None:
    _write(report, html=html, out=out)
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
        return
    for line in summary_lines(report):
        click.echo(line)


def _write(report: Report, *, html: Path | None, out: Path | None) -> None:
    """The HTML and JSON files asked for; a path that cannot be written is one error."""
    try:
        if out is not None:
            report.write_json(out)
        if html is not None:
            from kgctl.evaluation.html import write_html

            write_html(report, html)
    except OSError as exc:
        raise InputError(f"cannot write {exc.filename}: {exc.strerror}") from None


def _load_scorable(root: Path, side: str) -> Loaded:
    """A records folder with at least one readable document; else one error (exit 2)."""
    if not root.exists():
        raise InputError(f"no such {side} folder: {root}")
    loaded = load_benchmark(root)
    if not loaded.docs:
        first = loaded.problems[0] if loaded.problems else None
        raise InputError(f"no readable {side} record under {root}"
                         + (f"; first problem: {first}" if first else ""))
    return loaded


@click.group(name="eval")
def command() -> None:
    """Evaluate extracted graphs against benchmarks.

    Example: kgctl eval score --gold gold --pred runs/out --json
    """


@command.command(name="score")
@click.option("--gold", "gold", type=click.Path(path_type=Path), required=True,
              help="folder of <category>/<paper>.json gold records")
@click.option("--pred", "pred", type=click.Path(path_type=Path), required=True,
              help="folder of <category>/<paper>.json predicted records")
@click.option("--json", "as_json", is_flag=True, help="print the full report as JSON")
@click.option("--html", type=click.Path(path_type=Path), help="also write an HTML report")
@click.option("--out", type=click.Path(path_type=Path), help="also write the JSON report")
def score_command(*, gold: Path, pred: Path, as_json: bool, html: Path | None,
                  out: Path | None) -> None:
    """Score JSON records against JSON records.

    Exit 2 when a folder is missing or holds no readable record; exit 1 (after the report)
    when some files could not be read or validated.

    Example: kgctl eval score --gold gold --pred runs/out --html report.html
    """
    gold_docs, pred_docs = _load_scorable(gold, "gold"), _load_scorable(pred, "pred")
    source = source_for("records", origin=str(pred))
    _emit(score_both(gold_docs, pred_docs, source=source), as_json=as_json, html=html, out=out)
    unreadable = len(gold_docs.problems) + len(pred_docs.problems)
    if unreadable:
        raise DataRejected(f"{unreadable} input file(s) could not be read or validated "
                           "(listed as problems); their records were not scored")


@command.command(name="run")
@click.option("--store", "store_path", type=click.Path(path_type=Path), help="store folder")
@click.option("--endpoint", help="SPARQL endpoint URL instead of a store folder")
@domain_option
@click.option("--benchmark", help="benchmark of the domain pack (default: its first)")
@click.option("--json", "as_json", is_flag=True, help="print the full report as JSON")
@click.option("--html", type=click.Path(path_type=Path), help="also write an HTML report")
@click.option("--out", type=click.Path(path_type=Path), help="also write the JSON report")
@click.option("--entity", metavar="NAME|IRI",
              help="only the papers that used this entity under any of its names (its "
                   "canonical identity, `kgctl store merge`)")
def run_command(*, store_path: Path | None, endpoint: str | None, domain: str | None,
                benchmark: str | None, as_json: bool, html: Path | None,
                out: Path | None, entity: str | None) -> None:
    """Read every benchmark paper out of a store with the fixed queries and score it.

    Example: kgctl eval run --store kg.db --html report.html

    Example: kgctl eval run --store kg.db --entity pyridine --json
    """
    from kgctl.evaluation.readout import read_out_loaded
    from kgctl.store import open_store
    from kgctl.store.entities import papers_using

    if (store_path is None) == (endpoint is None):
        raise InputError("give exactly one of --store PATH or --endpoint URL")
    pack = load_pack(domain)
    benchmark, spec = pack.benchmark(benchmark)
    gold = load_benchmark(pack.root / spec.path)
    store = open_store(path=store_path, endpoint=endpoint, create=False)
    try:
        if entity is not None:
            gold = gold.only(papers_using(store, entity))
            if not gold.docs:
                raise InputError(f"no benchmark paper in the store used {entity!r}")
        docs, problems = {}, []
        with progress_bar(quiet=as_json) as progress:
            for paper in progress.track(sorted(gold.docs), description="reading out"):
                part = read_out_loaded(store, [paper], folder=pack.part("readout"))
                docs.update(part.docs)
                problems.extend(part.problems)
    finally:
        store.close()
    source = source_for("store", benchmark=benchmark, origin=endpoint or str(store_path))
    report = score_both(gold, Loaded(docs=docs, problems=tuple(problems)), source=source)
    _emit(report, as_json=as_json, html=html, out=out)


@command.command(name="nerre")
@click.option("--pred", "pred", type=click.Path(path_type=Path),
              help="decoded predictions (NERRE inference_decoded_json.json layout)")
@click.option("--store", "store_path", type=click.Path(path_type=Path),
              help="read the predictions out of this store instead (the domain pack's NERRE "
                   "read-out), scored beside the pack's published predictions")
@click.option("--out", type=click.Path(path_type=Path),
              help="with --store: also write the predictions read out (NERRE layout)")
@click.option("--gold", "gold", type=click.Path(path_type=Path),
              help="gold test file (default: the test split of the domain pack's NERRE "
                   "benchmark)")
@domain_option
@click.option("--json", "as_json", is_flag=True, help="print the scores as JSON")
def nerre_command(*, pred: Path | None, store_path: Path | None, out: Path | None,
                  gold: Path | None, domain: str | None, as_json: bool) -> None:
    """Word-level NERRE doping scores (hosts, dopants, host-dopant links).

    \b
    Examples:
      kgctl eval nerre --pred predictions.json
      kgctl eval nerre --domain nerre-doping --store kgctl-data/store --out predictions.json
    """
    from kgctl.evaluation.nerre import load_json_list, score_doping

    if (pred is None) == (store_path is None):
        raise InputError("give exactly one of --pred FILE or --store PATH")
    gold_path = gold or nerre_gold(domain)
    gold_docs = load_json_list(gold_path)
    runs = {}
    if store_path is not None:
        runs = {"store": _store_predictions(store_path, gold_docs, domain, out)}
        runs.update(_published(domain))
    else:
        runs = {"pred": load_json_list(pred)}
    scores = {name: score_doping(gold_docs, docs) for name, docs in runs.items()}
    if as_json:
        data = {name: {k: c.summary() for k, c in s.items()} for name, s in scores.items()}
        click.echo(json.dumps(data["pred"] if pred is not None else data, indent=2))
        return
    for name, s in scores.items():
        for kind, c in s.items():
            click.echo(f"{name + ' ' if store_path else ''}{kind:9s} P {c.precision:.3f} "
                       f"R {c.recall:.3f} F1 {c.f1:.3f} (TP {c.tp} FP {c.fp} FN {c.fn})")


def _store_predictions(store_path: Path, gold: list[dict], domain: str | None,
                       out: Path | None) -> list[dict]:
    from kgctl.evaluation.nerre_readout import read_predictions
    from kgctl.evaluation.readout import readout_folder
    from kgctl.store import open_store

    pack = _nerre_pack(domain)
    store = open_store(path=store_path, create=False)
    try:
        docs = read_predictions(store, gold, readout_folder(pack.root))
    finally:
        store.close()
    if out is not None:
        out.write_text(json.dumps(docs, indent=1, ensure_ascii=False), encoding="utf-8")
    return docs


def _published(domain: str | None) -> dict[str, list[dict]]:
    from kgctl.evaluation.nerre import load_json_list

    pack = _nerre_pack(domain)
    return {label: load_json_list(pack.root / path)
            for b in pack.manifest.benchmarks.values() if b.kind == "nerre"
            for label, path in b.predictions.items()}


def _nerre_pack(domain: str | None):
    """The pack with a NERRE benchmark: `domain`, else the first bundled one that has one."""
    for name in [domain] if domain else bundled_names():
        pack = load_pack(name)
        if any(b.kind == "nerre" for b in pack.manifest.benchmarks.values()):
            return pack
    raise InputError(f"{'domain ' + repr(domain) if domain else 'no bundled domain'} has no "
                     "NERRE benchmark; give --gold FILE")


def nerre_gold(domain: str | None) -> Path:
    """The gold file of a pack's NERRE benchmark (no domain: the first bundled pack's)."""
    pack = _nerre_pack(domain)
    return next(pack.root / b.path for b in pack.manifest.benchmarks.values()
                if b.kind == "nerre")


@command.command(name="eunomia")
@click.option("--pred", "pred", type=click.Path(path_type=Path), required=True,
              help="predicted (doi, mof, label) rows: CSV with a header, or a JSON list")
@click.option("--gold", "gold", type=click.Path(path_type=Path),
              help="gold CSV (default: the bundled Eunomia water-stability ground truth)")
@click.option("--json", "as_json", is_flag=True, help="print the scores as JSON")
def eunomia_command(*, pred: Path, gold: Path | None, as_json: bool) -> None:
    """Water-stability ternary accuracy and yield on the Eunomia benchmark.

    Example: kgctl eval eunomia --pred runs/water_stability.csv --json
    """
    from kgctl.evaluation.eunomia import GOLD_FILE, load_gold, load_predictions, score_stability

    gold_path = gold or asset_dir("benchmarks") / "eunomia" / GOLD_FILE
    s = score_stability(load_gold(gold_path), load_predictions(pred))
    if as_json:
        click.echo(json.dumps(s.to_dict(), indent=2))
        return
    click.echo(f"accuracy {s.accuracy:.3f} ({s.correct}/{s.gold_mofs} MOFs)  "
               f"yield {s.yield_:.3f} ({s.definite_correct}/{s.gold_definite} Stable/Unstable)")
    click.echo(f"unmatched predictions {s.unmatched_predictions}, "
               f"duplicate predictions {s.duplicate_predictions}")


@command.command(name="oracle")
@domain_option
@click.option("--benchmark", help="benchmark of the domain pack (default: its first)")
@click.option("--store", "store_path", type=click.Path(path_type=Path),
              help="store folder the papers are built into (created if missing)")
@click.option("--endpoint", help="SPARQL endpoint URL of a remote store instead")
@click.option("--traces", type=click.Path(path_type=Path),
              help="also write each paper's call trace as <paper>.jsonl into this folder")
@click.option("--paper", "papers", multiple=True, help="build only this paper (repeatable)")
@click.option("--json", "as_json", is_flag=True, help="print the report and findings as JSON")
@click.option("--html", type=click.Path(path_type=Path), help="also write an HTML report")
def oracle_command(*, domain: str | None, benchmark: str | None, store_path: Path | None,
                   endpoint: str | None,
                   traces: Path | None,
                   papers: tuple[str, ...], as_json: bool, html: Path | None) -> None:
    """Round-trip oracle: ground truth -> MCP tool calls -> graph -> read-out -> scores.

    Every shortfall is listed: values the tools cannot express and calls they rejected.

    Example: kgctl eval oracle --store kg.db --traces traces --html oracle.html
    """

    from kgctl.evaluation.oracle import benchmark_papers, run_oracle
    from kgctl.evaluation.readout import read_out_loaded
    from kgctl.ontology import pack_ir
    from kgctl.store import open_store

    if (store_path is None) == (endpoint is None):
        raise InputError("give exactly one of --store PATH or --endpoint URL")
    pack = load_pack(domain)
    benchmark, spec = pack.benchmark(benchmark)
    root = pack.root / spec.path
    known = benchmark_papers(root)
    chosen = list(papers) or known
    unknown = sorted(set(chosen) - set(known))
    if unknown:
        raise InputError(f"not a {benchmark} paper: {', '.join(unknown)}")
    if html is not None and not html.parent.is_dir():  # before any paper is built
        raise InputError(f"no folder {html.parent} for the HTML report")
    gold = load_benchmark(root).only(chosen)
    store = open_store(path=store_path, endpoint=endpoint)
    try:
        with progress_bar(quiet=as_json) as progress:
            task = progress.add_task("building papers", total=len(chosen))
            builds = run_oracle(store, root, papers=chosen, traces=traces,
                                step=lambda _: progress.advance(task), ir=pack_ir(pack.root))
        report = score_both(gold, read_out_loaded(store, chosen, folder=pack.part("readout")),
                            source=source_for("round_trip", benchmark=benchmark))
    finally:
        store.close()
    findings = [f for b in builds for f in b.findings]
    if as_json:
        click.echo(json.dumps(report.to_dict() | {
            "oracle": {"calls": sum(b.calls for b in builds),
                       "rejected": sum(b.rejected for b in builds),
                       "findings": [f.model_dump() | {"text": str(f)} for f in findings]}},
            indent=2, ensure_ascii=False))
        _write(report, html=html, out=None)
        return
    _emit(report, as_json=False, html=html, out=None)
    click.echo(f"oracle: {sum(b.calls for b in builds)} calls, "
               f"{sum(b.rejected for b in builds)} rejected, {len(findings)} finding(s)")
    for finding in findings:
        click.echo(f"  shortfall: {finding}")


@command.command(name="evidence")
@click.option("--store", "store_path", type=click.Path(path_type=Path), required=True,
              help="store folder holding the paper")
@click.option("--paper", required=True, help="paper id (see `kgctl store papers`)")
@click.option("--text", "text_file", type=click.Path(path_type=Path),
              help="the paper file (PDF, Markdown, text), when its text is not in the store")
@click.option("--out", type=click.Path(path_type=Path), required=True,
              help="HTML file to write (self-contained)")
@click.option("--json", "as_json", is_flag=True, help="print the located quotes as JSON")
def evidence_command(*, store_path: Path, paper: str, text_file: Path | None, out: Path,
                     as_json: bool) -> None:
    """Write the evidence view of an extracted paper: its text with every quote highlighted
    and linked to the call and entities behind it; quotes not in the text are flagged.

    Example: kgctl eval evidence --store kgctl-data/store --paper 10.1021_ic050460z --out ev.html
    """
    from kgctl.errors import StoreError
    from kgctl.evaluation.evidence import view_from_store
    from kgctl.evaluation.evidence_page import render_page
    from kgctl.papers.ingest import load_document
    from kgctl.store import open_store

    text = load_document(text_file, paper_id=paper).text if text_file else None
    store = open_store(path=store_path, create=False)
    try:
        if not store.has_paper(paper):
            raise StoreError(f"unknown paper: {paper!r} (see `kgctl store papers`)")
        view = view_from_store(store, paper, text=text)
    finally:
        store.close()
    try:
        out.write_text(render_page(view), encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write {out}: {exc.strerror}") from None
    if as_json:
        click.echo(json.dumps(view.model_dump(mode="json", exclude={"text"})
                              | {"flagged": [s.seq for s in view.flagged]}, indent=2))
        return
    click.echo(f"{paper}: {len(view.spans)} quotes, {len(view.flagged)} not in the text, "
               f"{len(view.without_evidence)} calls without a quote; wrote {out}")
    if view.text is None:
        click.echo("note: the paper text is not stored; give --text FILE to place the quotes")


@command.command(name="runs")
@click.argument("folder", type=click.Path(path_type=Path))
@click.option("--store", "store_path", type=click.Path(path_type=Path),
              help="store the run wrote into (adds each paper's final graph size)")
@click.option("--html", type=click.Path(path_type=Path),
              help="HTML file (default FOLDER/run-report.html)")
@click.option("--out", type=click.Path(path_type=Path),
              help="JSON file (default FOLDER/run-report.json)")
@click.option("--json", "as_json", is_flag=True, help="print the report as JSON")
def runs_command(*, folder: Path, store_path: Path | None, html: Path | None,
                 out: Path | None, as_json: bool) -> None:
    """Run report of `kgctl extract`: per paper and step, model turns, tokens, cost, calls
    accepted / refused (by code) / repaired, time and graph size, with a batch summary.

    Example: kgctl eval runs kgctl-data/runs --store kgctl-data/store
    """
    from kgctl.evaluation.runs_page import write_run_report
    from kgctl.papers.formats import TRACE_SUFFIX
    from kgctl.store import open_store

    if not folder.is_dir():
        raise InputError(f"no such run folder: {folder}")
    if not any(folder.glob(f"*{TRACE_SUFFIX}")):
        raise InputError(f"no run traces (*{TRACE_SUFFIX}) in {folder}")
    store = open_store(path=store_path, create=False) if store_path is not None else None
    try:
        report = write_run_report(folder, store=store, html_path=html, json_path=out)
    except OSError as exc:
        raise InputError(f"cannot write the run report: {exc.strerror}: {exc.filename}") from None
    finally:
        if store is not None:
            store.close()
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
        return
    click.echo(f"source: {report.source.first_line}")
    b = report.batch()
    cost = "n/a" if b["cost_usd"] is None else f"{b['cost_usd']:.4f}"
    click.echo(f"{b['papers']} papers {b['by_status']}: {b['turns']} turns, tokens "
               f"{b['prompt_tokens']}/{b['completion_tokens']}, cost {cost} USD; calls "
               f"{b['accepted']} accepted, {b['refused']} refused, {b['repaired']} repaired")
    for problem in report.problems:
        click.echo(f"  problem: {problem}")
