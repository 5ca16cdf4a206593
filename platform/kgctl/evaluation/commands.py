"""``kgctl eval``: score JSON records, read a store out and score it, NERRE and Eunomia scores."""

from __future__ import annotations

import json
from pathlib import Path

import click

from kgctl.assets import asset_dir
from kgctl.errors import InputError
from kgctl.evaluation.loader import load_benchmark
from kgctl.evaluation.report import Report, score

BENCHMARKS = ("mop30",)


def _emit(report: Report, *, as_json: bool, html: Path | None, out: Path | None) -> None:
    if out is not None:
        report.write_json(out)
    if html is not None:
        from kgctl.evaluation.html import write_html

        write_html(report, html)
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
        return
    m = report.micro
    click.echo(f"micro P {m.precision:.3f} R {m.recall:.3f} F1 {m.f1:.3f}  "
               f"(TP {m.tp} FP {m.fp} FN {m.fn})")
    for name, c in report.categories.items():
        click.echo(f"  {name:17s} P {c.precision:.3f} R {c.recall:.3f} F1 {c.f1:.3f}")
    click.echo(f"macro F1 {report.macro['f1']:.3f}; {len(report.problems)} problem(s)")
    for problem in report.problems:
        click.echo(f"  problem: {problem}")


@click.group(name="eval")
def command() -> None:
    """Evaluate extracted graphs against benchmarks.

    Example: kgctl eval score --gold benchmarks/mop30 --pred runs/out --json
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

    Example: kgctl eval score --gold benchmarks/mop30 --pred runs/out --html report.html
    """
    _emit(score(load_benchmark(gold), load_benchmark(pred)), as_json=as_json, html=html, out=out)


@command.command(name="run")
@click.option("--store", "store_path", type=click.Path(path_type=Path), help="store folder")
@click.option("--endpoint", help="SPARQL endpoint URL instead of a store folder")
@click.option("--benchmark", type=click.Choice(BENCHMARKS), default="mop30", show_default=True)
@click.option("--json", "as_json", is_flag=True, help="print the full report as JSON")
@click.option("--html", type=click.Path(path_type=Path), help="also write an HTML report")
@click.option("--out", type=click.Path(path_type=Path), help="also write the JSON report")
def run_command(*, store_path: Path | None, endpoint: str | None, benchmark: str,
                as_json: bool, html: Path | None, out: Path | None) -> None:
    """Read every benchmark paper out of a store with the fixed queries and score it.

    Example: kgctl eval run --store kg.db --benchmark mop30 --html report.html
    """
    from rich.progress import track

    from kgctl.evaluation.loader import Loaded
    from kgctl.evaluation.readout import read_out_loaded
    from kgctl.store import open_store

    if (store_path is None) == (endpoint is None):
        raise InputError("give exactly one of --store PATH or --endpoint URL")
    if store_path is not None and not store_path.exists():
        raise InputError(f"no such store: {store_path}")
    gold = load_benchmark(asset_dir("benchmarks") / benchmark)
    store = open_store(path=store_path, endpoint=endpoint)
    try:
        docs, problems = {}, []
        for paper in track(sorted(gold.docs), description="reading out", disable=as_json):
            part = read_out_loaded(store, [paper])
            docs.update(part.docs)
            problems.extend(part.problems)
    finally:
        store.close()
    report = score(gold, Loaded(docs=docs, problems=tuple(problems)))
    _emit(report, as_json=as_json, html=html, out=out)


@command.command(name="nerre")
@click.option("--pred", "pred", type=click.Path(path_type=Path), required=True,
              help="decoded predictions (NERRE inference_decoded_json.json layout)")
@click.option("--gold", "gold", type=click.Path(path_type=Path),
              help="gold test file (default: the bundled doping test split)")
@click.option("--json", "as_json", is_flag=True, help="print the scores as JSON")
def nerre_command(*, pred: Path, gold: Path | None, as_json: bool) -> None:
    """Word-level NERRE doping scores (hosts, dopants, host-dopant links).

    Example: kgctl eval nerre --pred benchmarks/nerre-doping/gpt3/inference_decoded_json.json
    """
    from kgctl.evaluation.nerre import load_json_list, score_doping

    gold_path = gold or asset_dir("benchmarks") / "nerre-doping" / "test.json"
    scores = score_doping(load_json_list(gold_path), load_json_list(pred))
    if as_json:
        click.echo(json.dumps({k: c.summary() for k, c in scores.items()}, indent=2))
        return
    for kind, c in scores.items():
        click.echo(f"{kind:9s} P {c.precision:.3f} R {c.recall:.3f} F1 {c.f1:.3f} "
                   f"(TP {c.tp} FP {c.fp} FN {c.fn})")


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
@click.option("--benchmark", type=click.Choice(BENCHMARKS), default="mop30", show_default=True)
@click.option("--store", "store_path", type=click.Path(path_type=Path),
              help="store folder the papers are built into (created if missing)")
@click.option("--endpoint", help="SPARQL endpoint URL of a remote store instead")
@click.option("--traces", type=click.Path(path_type=Path),
              help="also write each paper's call trace as <paper>.jsonl into this folder")
@click.option("--paper", "papers", multiple=True, help="build only this paper (repeatable)")
@click.option("--json", "as_json", is_flag=True, help="print the report and findings as JSON")
@click.option("--html", type=click.Path(path_type=Path), help="also write an HTML report")
def oracle_command(*, benchmark: str, store_path: Path | None, endpoint: str | None,
                   traces: Path | None,
                   papers: tuple[str, ...], as_json: bool, html: Path | None) -> None:
    """Round-trip oracle: ground truth -> MCP tool calls -> graph -> read-out -> scores.

    Every shortfall is listed: values the tools cannot express and calls they rejected.

    Example: kgctl eval oracle --benchmark mop30 --store kg.db --traces traces --html oracle.html
    """
    from rich.progress import Progress

    from kgctl.evaluation.loader import Loaded
    from kgctl.evaluation.oracle import benchmark_papers, run_oracle
    from kgctl.evaluation.readout import read_out_loaded
    from kgctl.store import open_store

    if (store_path is None) == (endpoint is None):
        raise InputError("give exactly one of --store PATH or --endpoint URL")
    root = asset_dir("benchmarks") / benchmark
    known = benchmark_papers(root)
    chosen = list(papers) or known
    unknown = sorted(set(chosen) - set(known))
    if unknown:
        raise InputError(f"not a {benchmark} paper: {', '.join(unknown)}")
    gold = load_benchmark(root)
    gold = Loaded(docs={p: d for p, d in gold.docs.items() if p in chosen},
                  problems=gold.problems)
    store = open_store(path=store_path, endpoint=endpoint)
    try:
        with Progress(disable=as_json) as progress:
            task = progress.add_task("building papers", total=len(chosen))
            builds = run_oracle(store, root, papers=chosen, traces=traces,
                                step=lambda _: progress.advance(task))
        report = score(gold, read_out_loaded(store, chosen))
    finally:
        store.close()
    findings = [f for b in builds for f in b.findings]
    if as_json:
        click.echo(json.dumps(report.to_dict() | {
            "oracle": {"calls": sum(b.calls for b in builds),
                       "rejected": sum(b.rejected for b in builds),
                       "findings": [f.model_dump() | {"text": str(f)} for f in findings]}},
            indent=2, ensure_ascii=False))
        if html is not None:
            from kgctl.evaluation.html import write_html

            write_html(report, html)
        return
    _emit(report, as_json=False, html=html, out=None)
    click.echo(f"oracle: {sum(b.calls for b in builds)} calls, "
               f"{sum(b.rejected for b in builds)} rejected, {len(findings)} finding(s)")
    for finding in findings:
        click.echo(f"  shortfall: {finding}")
