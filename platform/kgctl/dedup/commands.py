"""`kgctl dedup`: link the same entity across paper graphs."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.console import Console

from kgctl.dedup.groups import dask_client
from kgctl.dedup.job import AUTO_OUT_OF_CORE, ENGINES, run
from kgctl.dedup.outofcore import memory_size
from kgctl.dedup.spec import load_specs, pack_specs
from kgctl.errors import InputError
from kgctl.packs import domain_option
from kgctl.store import open_store
from kgctl.store.merged import rebuild

REVIEW_FILE = "dedup-review.csv"


@click.command("dedup")
@click.option("--store", "store_path", type=click.Path(path_type=Path), envvar="KGCTL_STORE",
              help="Embedded store directory (env KGCTL_STORE).")
@click.option("--endpoint", help="SPARQL endpoint URL of a remote store instead.")
@click.option("--class", "classes", multiple=True, metavar="NAME",
              help="Only this spec (the names `--dry-run` lists); repeatable.")
@click.option("--spec", "spec_file", type=click.Path(path_type=Path),
              help="Dedup spec YAML (default: the domain pack's, else derived from its T-Box).")
@domain_option
@click.option("--review", "review_out", type=click.Path(path_type=Path),
              help=f"Where to write the grey-zone pairs for review [default: {REVIEW_FILE}; "
                   "a dry run writes it only when asked].")
@click.option("--apply-review", "review_in", type=click.Path(path_type=Path, exists=True),
              help="A filled review file: its accept/reject decisions are applied and kept.")
@click.option("--engine", type=click.Choice(ENGINES), default="auto", show_default=True,
              help="Cluster in memory, or out of core on DuckDB (same clusters); auto: DuckDB "
                   f"from {AUTO_OUT_OF_CORE:,} mentions of one class.")
@click.option("--memory-limit", default="2GB", show_default=True, callback=memory_size,
              help="Memory DuckDB may use before it spills to disk (engine duckdb).")
@click.option("--scheduler", metavar="ADDRESS",
              help="Score fuzzy names and replay parts on the workers of this Dask scheduler "
                   "(e.g. tcp://host:8786; engine duckdb).")
@click.option("--workers", type=click.IntRange(1), metavar="N",
              help="Score fuzzy names and replay parts on N Dask worker processes started "
                   "on this machine (engine duckdb).")
@click.option("--state", "state_dir", type=click.Path(path_type=Path, file_okay=False),
              help="Keep the clusters in this directory between runs: a run harvests and "
                   "clusters only the papers added since (same result as a full run).")
@click.option("--dry-run", is_flag=True, help="Compute and report, write nothing to the store.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def command(store_path, endpoint, classes, spec_file, review_out, review_in, engine, memory_limit,
            scheduler, workers, state_dir, dry_run, as_json, domain):
    """Deduplicate entities across papers into the dedup graph (owl:sameAs, paper graphs untouched).

    Example: kgctl dedup --store kgctl-data/store --dry-run
    """
    if scheduler and workers:
        raise click.UsageError("--scheduler and --workers exclude each other")
    if (scheduler or workers) and (engine == "memory" or state_dir):
        raise click.UsageError("--scheduler and --workers cluster out of core: not with "
                               "--engine memory or --state")
    if review_out is None and not dry_run:
        review_out = Path(REVIEW_FILE)
    path = None if endpoint else store_path or Path("kgctl-data/store")
    store = open_store(path=path, endpoint=endpoint, create=False)
    console = Console(stderr=True, quiet=as_json)
    try:
        specs = load_specs(spec_file) if spec_file else pack_specs(domain,
                                                                   present=types_in(store))
        known = [s.name for s in specs]
        unknown = sorted(set(classes) - set(known))
        if unknown:
            raise InputError(f"unknown class {', '.join(unknown)}; choose from "
                             f"{', '.join(known)}")
        specs = [s for s in specs if not classes or s.name in classes]
        with console.status("deduplicating") as status:
            with dask_client(scheduler, workers) as client:
                summaries = run(store, specs, dry_run=dry_run, review_in=review_in,
                                review_out=review_out, progress=status.update, domain=domain,
                                engine=engine, memory_limit=memory_limit, state=state_dir,
                                client=client)
            if not dry_run:
                rebuild(store, progress=status.update)  # the merged view follows the clusters
    finally:
        store.close()
    if as_json:
        click.echo(json.dumps([s.model_dump() for s in summaries], indent=2))
        return
    for s in summaries:
        click.echo(f"{s.spec:10} {s.mentions:7} mentions -> {s.clusters:6} clusters "
                   f"({s.cross_paper_clusters} across papers), {s.merges} merges, "
                   f"{s.grey} for review, {s.refused} refused")
    if review_out is not None:
        click.echo(f"review file: {review_out}")
    if dry_run:
        click.echo("dry run: nothing written to the store")


TYPES = "SELECT DISTINCT ?t WHERE { GRAPH ?g { ?s a ?t } }"


def types_in(store) -> set[str]:
    """The classes with instances in the store's graphs (what derived specs cover)."""
    return {row["t"].value for row in store.query(TYPES) if row["t"] is not None}
