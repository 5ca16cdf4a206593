"""``kgctl extract`` (agent runs and trace replay) and ``kgctl demo`` (the main job)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from kgctl.agent.llm import LLMError, quiet_http_logs
from kgctl.errors import DataRejected, InputError
from kgctl.ontology.options import ir_from_options, ontology_options
from kgctl.pipeline.llm_options import DEFAULT_RUNS, llm_options, llm_settings
from kgctl.progress import progress_bar
from kgctl.store import command_store
from kgctl.store.commands import DEFAULT_STORE

DEMO_DIR = DEFAULT_STORE.parent  # the demo's store is the default store of every command
# the demo's help shows these; the LLM tuning options stay accepted (they are kgctl extract's)
DEMO_OPTIONS = {"use_llm", "workdir", "traces", "reference", "as_json", "base_url", "model",
                "domain", "ontologies"}
_err = Console(stderr=True)


@click.command("extract")
@click.argument("papers", nargs=-1, type=click.Path(path_type=Path))
@click.option("--replay", "replays", multiple=True, type=click.Path(path_type=Path),
              metavar="TRACE", help="re-issue a recorded trace through the tools (repeatable).")
@click.option("--supplementary", multiple=True, type=click.Path(path_type=Path),
              help="supplementary file of the (single) paper, added as extra sections.")
@click.option("--replace", is_flag=True, help="rebuild papers that already have a graph.")
@click.option("--json", "as_json", is_flag=True, help="print the summary as JSON.")
@llm_options
@click.option("--endpoint", envvar="KGCTL_ENDPOINT", metavar="URL",
              help="SPARQL 1.1 query URL of a remote store (env KGCTL_ENDPOINT).")
@click.option("--store", "store_path", envvar="KGCTL_STORE", type=click.Path(path_type=Path),
              metavar="PATH", help=f"embedded store directory (env KGCTL_STORE, default "
              f"{DEFAULT_STORE}).")
@ontology_options
def extract(papers: tuple[Path, ...], replays: tuple[Path, ...],
            supplementary: tuple[Path, ...], replace: bool, as_json: bool,
            store_path: Path | None, endpoint: str | None, **llm: Any) -> None:
    """Extract papers (PDF, Markdown, text) into their graphs with an LLM agent, or replay
    recorded traces through the same validating tools.

    \b
    Examples:
      OPENAI_BASE_URL=http://127.0.0.1:11434/v1 KGCTL_MODEL=qwen2.5 kgctl extract paper.pdf
      kgctl extract --replay kgctl-data/runs/10.1021_ic050460z.trace.json --store rebuilt
      kgctl extract paper.pdf --ontology sosa.ttl --no-profile
    """
    from kgctl.packs import load_pack

    files = ontology_files(load_pack(llm.get("domain")), llm)
    pack, ir = _pack_and_ir(llm)
    if replays and papers:
        raise InputError("give papers to extract or --replay traces, not both")
    if not replays:  # check papers and LLM settings before touching any store
        load_documents_checked(list(papers), supplementary, pack)
        llm_settings(llm)
        _check_tool_servers(ir, llm)
    if store_path is not None and endpoint is not None:
        raise InputError("give --store or --endpoint, not both")
    with command_store(path=None if endpoint else (store_path or DEFAULT_STORE),
                       endpoint=endpoint, create=True) as store:
        if replays:
            _replay(store, list(replays), replace=replace, as_json=as_json, ir=ir)
            return
        summaries = run_extraction(store, list(papers), supplementary=supplementary,
                                   replace=replace, ir=ir, pack=pack, **llm)
        from kgctl.evaluation.runs_page import RUN_REPORT_HTML, write_run_report

        write_run_report(llm["out"] or DEFAULT_RUNS, store=store, ontology=files)
        if not as_json:
            _err.print(f"run report: {(llm['out'] or DEFAULT_RUNS) / RUN_REPORT_HTML} (+ .json)")
    _print_summaries(summaries, as_json=as_json)
    failed = [s for s in summaries if s.outcome == "failed"]
    if failed:
        raise LLMError(f"{len(failed)} of {len(summaries)} papers failed; first: "
                       f"{failed[0].paper_id}: {failed[0].error}")
    empty = [s.paper_id for s in summaries if s.outcome == "nothing_extracted"]
    if empty:
        raise DataRejected(f"nothing extracted from {len(empty)} of {len(summaries)} papers "
                           f"({', '.join(empty)}): no tool call was accepted; the model must "
                           "call tools (see docs/agent.md)")


def _pack_and_ir(llm: dict[str, Any]):
    """(domain pack, IR): the --ontology files (no pack parts then), else the --domain pack."""
    from kgctl.ontology import pack_ir
    from kgctl.packs import load_pack

    domain = llm.pop("domain", None)
    ir = ir_from_options(llm)
    if ir is not None:
        if domain is not None:
            raise InputError("give --domain or --ontology, not both")
        return None, ir
    pack = load_pack(domain)
    return pack, pack_ir(pack.root)


def ontology_files(pack, llm: dict[str, Any]) -> list[Path]:
    """The T-Box and profile files a run compiles (named by its report): the --ontology and
    --profile files, else the pack's; read before the options are consumed."""
    from kgctl.pipeline.demo import pack_files

    given = [*(llm.get("ontologies") or ()), *(llm.get("profiles") or ())]
    return given or pack_files(pack)


def _check_tool_servers(ir, llm: dict[str, Any]) -> None:
    from kgctl.agent.external import check_overrides

    check_overrides(ir.tool_servers, llm["tool_servers"])


def load_documents_checked(papers: list[Path], supplementary: tuple[Path, ...], pack) -> None:
    from kgctl.papers.ingest import load_documents

    load_documents(papers, supplementary=supplementary,
                   headings=pack.manifest.sections if pack else ())


def run_extraction(store, papers: list[Path], *, supplementary=(), replace: bool = False,
                   ir=None, pack=None, **llm: Any) -> list:
    """Ingest, check the LLM settings, compile, then run the batch with a progress bar; the
    pack (when the IR is its T-Box) adds its section words and plan hints."""
    from kgctl.agent.aio import run_sync
    from kgctl.agent.batch import BatchOptions, extract_batch
    from kgctl.compiler.plan import compile_plan, load_hints
    from kgctl.papers.ingest import load_documents
    from kgctl.pipeline.demo import compile_all

    documents = load_documents(papers, supplementary=supplementary,
                               headings=pack.manifest.sections if pack else ())
    settings = llm_settings(llm)
    quiet_http_logs(verbose=llm["verbose"])
    _compiled, (ir, surface), plan = compile_all(ir, pack=pack)
    if llm["plan_hints"]:
        plan = compile_plan(ir, surface=surface, hints=load_hints(llm["plan_hints"], ir))
    options = BatchOptions(out_dir=llm["out"] or DEFAULT_RUNS, workers=llm["workers"],
                           feedback=not llm["no_feedback"], max_iterations=llm["max_iterations"],
                           lam=llm["lam"], replace=replace, tool_servers=llm["tool_servers"])
    with progress_bar() as bar:
        task = bar.add_task("extracting", total=len(documents))

        def progress(paper: str, what: str) -> None:
            if what.startswith("warning:"):
                bar.console.print(f"{paper}: {what}" if paper else what, markup=False,
                                  highlight=False, soft_wrap=True)
                return
            bar.update(task, description=f"{paper}: {what}")
            if what in ("done", "failed") or what.startswith("skipped"):
                bar.advance(task)

        return run_sync(lambda: extract_batch(
            documents, ir=ir, surface=surface, plan=plan, store=store, settings=settings,
            options=options, progress=progress))


def _replay(store, traces: list[Path], *, replace: bool, as_json: bool, ir=None) -> None:
    from kgctl.agent.aio import run_sync
    from kgctl.agent.replay import replay_traces
    with progress_bar(quiet=as_json) as bar:
        task = bar.add_task("replaying", total=len(traces))
        reports = run_sync(lambda: replay_traces(
            traces, ir=ir, store=store, replace=replace,
            progress=lambda pid: bar.update(task, advance=1, description=pid)))
    if as_json:
        click.echo(json.dumps([r.model_dump(mode="json") for r in reports], indent=2))
    else:
        for r in reports:
            click.echo(f"{r.paper_id}: {r.accepted} of {r.calls} calls written")
    refused = [(r, f) for r in reports for f in r.refused]
    if refused:
        report, first = refused[0]
        calls = sum(r.calls for r in reports)
        raise DataRejected(f"{len(refused)} of {calls} calls refused on replay; first: "
                           f"{report.paper_id} call {first.position} ({first.tool}): "
                           f"{first.feedback[:300]}")


def _brief(command: click.Command) -> click.Command:
    """Hide all but DEMO_OPTIONS from the command's help."""
    for param in command.params:
        if isinstance(param, click.Option) and param.name not in DEMO_OPTIONS:
            param.hidden = True
    return command


@_brief
@click.command("demo")
@click.argument("papers", nargs=-1, type=click.Path(path_type=Path))
@click.option("--llm", "use_llm", is_flag=True,
              help="extract the given papers with an LLM instead of replaying the bundled traces.")
@click.option("--workdir", type=click.Path(path_type=Path), default=DEMO_DIR, show_default=True,
              help="folder of the store (WORKDIR/store) and the reports.")
@click.option("--traces", type=click.Path(path_type=Path),
              help="folder of traces to replay (default: the domain pack's ground-truth "
                   "traces).")
@click.option("--reference", type=click.Path(path_type=Path),
              help="reference store for grounding, built there when absent "
                   "(default: $KGCTL_REFERENCE or ~/.cache/kgctl/reference/store).")
@click.option("--json", "as_json", is_flag=True, help="print the result as JSON.")
@llm_options
@ontology_options
def demo(papers: tuple[Path, ...], use_llm: bool, workdir: Path, traces: Path | None,
         reference: Path | None, as_json: bool, **llm: Any) -> None:
    """The main job: compile a domain pack's ontologies, build its paper graphs by replaying
    its ground-truth traces through the compiled tools, evaluate them against its benchmark
    and write the HTML report. No API key or server needed. With --llm it takes every
    option of `kgctl extract` too (see its --help).

    \b
    Examples:
      kgctl demo
      kgctl demo --domain nerre-doping
      kgctl demo --llm --model gpt-4o papers/10.1021_ic050460z.pdf
      kgctl demo --llm --ontology sosa.ttl --no-profile papers/station.pdf
    """
    from kgctl.pipeline.demo import bundled_traces, run_replay_demo
    from kgctl.store import EmbeddedStore

    if papers and not use_llm:
        raise InputError("papers are extracted with --llm (which needs an LLM server); "
                         "without it the demo replays the domain pack's traces")
    pack, ir = _pack_and_ir(llm)
    if pack is None and not use_llm:
        raise InputError("--ontology needs --llm: the replay demo replays a domain pack's "
                         "ground-truth traces (use --domain)")
    store_path = workdir / "store"
    if use_llm:
        llm_settings(llm)  # say what to set before creating anything
        _check_tool_servers(ir, llm)
    found = bundled_traces(pack, traces) if not use_llm else None
    workdir.mkdir(parents=True, exist_ok=True)
    store = EmbeddedStore(store_path)
    try:
        if use_llm:
            result = _llm_demo(store, list(papers), workdir=workdir, store_path=store_path,
                               ir=ir, pack=pack, **llm)
            if result is None:
                return
        elif pack.benchmark()[1].kind == "nerre":
            from kgctl.pipeline.nerre import run_nerre_demo

            with progress_bar(quiet=as_json) as bar:
                task = bar.add_task("replaying traces", total=len(found))
                nerre = run_nerre_demo(
                    store, pack, workdir=workdir, traces=found,
                    progress=lambda pid: bar.update(task, advance=1, description=pid))
            click.echo(nerre.model_dump_json(indent=2) if as_json else "\n".join(nerre.lines()))
            return
        else:
            with progress_bar(quiet=as_json) as bar:
                task = bar.add_task("replaying traces", total=len(found), visible=False)

                def phase(what: str) -> None:  # announced as it starts; the bar is replay's
                    bar.update(task, visible=False)
                    if not as_json:
                        bar.console.print(f"{what} ...", highlight=False, markup=False)

                result = run_replay_demo(
                    store, pack, workdir=workdir, store_path=store_path, traces=found,
                    progress=lambda pid: bar.update(task, advance=1, description=pid,
                                                    visible=True),
                    reference=reference, phase=phase)
    finally:
        store.close()
    from kgctl.pipeline.demo_report import demo_json, demo_lines

    if as_json:
        click.echo(json.dumps(demo_json(result), indent=2))
        return
    for line in demo_lines(result):
        click.echo(line)


def _llm_demo(store, papers: list[Path], *, workdir: Path, store_path: Path, ir, pack,
              **llm: Any):
    from kgctl.pipeline.demo import DemoResult, compile_all, evaluate, write_reports

    if not papers:
        raise InputError("--llm needs the papers to extract, e.g. kgctl demo --llm paper.pdf")
    llm["out"] = llm["out"] or workdir / "runs"
    summaries = run_extraction(store, papers, replace=True, ir=ir, pack=pack, **llm)
    _print_summaries(summaries, as_json=False)
    kinds = [b.kind for b in pack.manifest.benchmarks.values()] if pack else []
    if kinds[:1] != ["records"]:  # a records benchmark scores its own pack's T-Box
        click.echo(f"graphs in {store_path} (no benchmark to score for this ontology)")
        return None
    from kgctl.evaluation.runs_page import write_run_report
    from kgctl.evaluation.source import source_for
    from kgctl.pipeline.demo import pack_files

    write_run_report(llm["out"], store=store, ontology=pack_files(pack))

    compiled, _, _ = compile_all(ir, pack=pack)
    done = [s.paper_id for s in summaries if s.outcome != "failed"]
    settings = llm_settings(llm)
    report, seconds = evaluate(store, done, pack, source=source_for(
        "extraction", benchmark=pack.benchmark()[0], model=settings.model,
        server=settings.base_url, ontology=pack_files(pack)))
    html, json_path = write_reports(report, workdir, pack)
    return DemoResult(compiled=compiled, replays=[], report=report, papers=done, html=html,
                      json_path=json_path, store_path=store_path,
                      seconds={"evaluate": seconds})


def _print_summaries(summaries: list, *, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps([s.model_dump(mode="json") for s in summaries], indent=2))
        return
    table = Table(title="extraction")
    for column in ("paper", "outcome", "steps", "written", "refused", "tokens in/out",
                   "cost USD", "s"):
        table.add_column(column)
    for s in summaries:
        cost = "n/a" if s.cost_usd is None else f"{s.cost_usd:.4f}"
        table.add_row(s.paper_id, s.outcome, str(s.steps), str(s.accepted), str(s.rejected),
                      f"{s.prompt_tokens}/{s.completion_tokens}", cost, f"{s.seconds:.1f}")
    out = Console()
    out.print(table)
    for s in summaries:
        if s.steps_without_writes:
            out.print(f"{s.paper_id}: steps that wrote nothing: "
                      f"{', '.join(s.steps_without_writes)}", markup=False, highlight=False,
                      soft_wrap=True)

