"""``kgctl store``: inspect, export, import, drop, replay and merge paper graphs."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import wraps
from pathlib import Path

import click
from pyoxigraph import RdfFormat

from kgctl.errors import InputError
from kgctl.packs import domain_option, load_pack
from kgctl.progress import progress_bar
from kgctl.store import command_store
from kgctl.store.base import GraphStore
from kgctl.store.exports import has_merged, merged_paper, table_csv
from kgctl.store.trace import read_trace, replay, trace_jsonl
from kgctl.store.views import DEFAULT_VIEW, VIEWS

DEFAULT_STORE = Path("kgctl-data") / "store"
FORMATS = {
    "trig": RdfFormat.TRIG,
    "nquads": RdfFormat.N_QUADS,
    "turtle": RdfFormat.TURTLE,
    "ntriples": RdfFormat.N_TRIPLES,
}


def store_options(func: Callable | None = None, *, creates: bool = False) -> Callable:
    """--store PATH / --endpoint URL, opening the store and closing it after the command.
    Only a command that `creates` may open a store folder that does not exist yet."""
    if func is None:
        return lambda f: store_options(f, creates=creates)

    @click.option("--endpoint", envvar="KGCTL_ENDPOINT", metavar="URL",
                  help="SPARQL 1.1 query URL of a remote store (env KGCTL_ENDPOINT).")
    @click.option("--store", "path", envvar="KGCTL_STORE", type=click.Path(path_type=Path),
                  metavar="PATH", help=f"Embedded store directory (env KGCTL_STORE, "
                  f"default {DEFAULT_STORE}).")
    @wraps(func)
    def wrapper(*args, path: Path | None, endpoint: str | None, **kwargs):
        if path is not None and endpoint is not None:
            raise InputError("give --store or --endpoint, not both")
        folder = None if endpoint else (path or DEFAULT_STORE)
        with command_store(path=folder, endpoint=endpoint, create=creates) as store:
            return func(store, *args, **kwargs)

    return wrapper


def _emit(data: object, *, as_json: bool, text: str) -> None:
    click.echo(json.dumps(data, indent=2) if as_json else text)


def _summary(store: GraphStore) -> list[dict[str, object]]:
    return [{"paper": pid, "triples": sum(1 for _ in store.triples(pid)),
             "calls": len(store.trace(pid))} for pid in store.papers()]


@click.group("store")
def command() -> None:
    """Paper graphs in the store: info, papers, export, import, drop, replay, merge, compact.

    Example: kgctl store papers --store ./kgctl-data/store --json
    """


@command.command()
@store_options
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def info(store: GraphStore, *, as_json: bool) -> None:
    """Backend, location and size of the store.

    Example: kgctl store info --endpoint http://127.0.0.1:7878/query
    """
    papers = _summary(store)
    data = {"backend": repr(store), "papers": len(papers),
            "triples": sum(p["triples"] for p in papers),
            "calls": sum(p["calls"] for p in papers)}
    _emit(data, as_json=as_json, text="\n".join(f"{k}: {v}" for k, v in data.items()))


@command.command()
@store_options
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def papers(store: GraphStore, *, as_json: bool) -> None:
    """Papers with a graph, their triple and call counts.

    Example: kgctl store papers --json
    """
    rows = _summary(store)
    text = "\n".join(f"{r['paper']}\t{r['triples']} triples\t{r['calls']} calls" for r in rows)
    _emit(rows, as_json=as_json, text=text or "(no papers)")


view_option = click.option(
    "--view", type=click.Choice(VIEWS), default=DEFAULT_VIEW, show_default=True,
    help="merged: entities with their canonical identity (`kgctl store merge`); raw: the "
         "paper graphs as extracted.")


@command.command()
@store_options
@click.argument("paper", required=False)
@click.option("--format", "fmt", type=click.Choice([*FORMATS, "csv"]), default="trig",
              show_default=True, help="RDF syntax (turtle/ntriples need a PAPER), or csv with "
              "--table.")
@click.option("--table", help="With --format csv: a table the domain pack declares "
              "(its tables/NAME.rq).")
@view_option
@domain_option
@click.option("--trace", "as_trace", is_flag=True,
              help="Write the paper's call trace as JSONL instead of RDF.")
@click.option("--out", "output", type=click.Path(path_type=Path, dir_okay=False),
              help="File to write (default: standard output).")
def export(store: GraphStore, paper: str | None, *, fmt: str, table: str | None, view: str,
           domain: str | None, as_trace: bool, output: Path | None) -> None:
    """Export one paper or the whole store as RDF, a paper's trace, or a table as CSV.

    A paper exports in the merged view when it has a merged graph (its graph plus the
    canonical identity of each entity); the whole store exports every graph (a backup).

    Example: kgctl store export --format csv --table dopings --domain nerre-doping --out t.csv

    Example: kgctl store export 10.1021_ic050460z --trace --out ic050460z.jsonl
    """
    if (fmt == "csv") != (table is not None):
        raise InputError("--format csv and --table NAME go together (see --help)")
    if as_trace:
        if paper is None:
            raise InputError("--trace needs a PAPER")
        if not store.has_paper(paper):
            raise InputError(f"unknown paper: {paper!r} (see `kgctl store papers`)")
        data = trace_jsonl(store.trace(paper)).encode()
    elif table is not None:
        data = table_csv(store, _table_query(table, domain), view=view)
    elif paper is not None and view == "merged" and store.has_paper(paper) \
            and has_merged(store, paper):
        data = merged_paper(store, paper, format=FORMATS[fmt])
    else:
        data = store.export(paper_id=paper, format=FORMATS[fmt])
    if output is None:
        click.echo(data, nl=False)
    else:
        output.write_bytes(data)


def _table_query(name: str, domain: str | None) -> str:
    pack = load_pack(domain)
    folder = pack.part("tables")
    known = sorted(p.stem for p in folder.glob("*.rq")) if folder else []
    if name not in known:
        raise InputError(f"domain {pack.name!r} declares no table {name!r}"
                         + (f"; choose from {', '.join(known)}" if known else ""))
    return (folder / f"{name}.rq").read_text(encoding="utf-8")


@command.command("import")
@store_options(creates=True)
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["trig", "nquads"]), default=None,
              help="RDF syntax (default: from the file extension).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def import_(store: GraphStore, file: Path, *, fmt: str | None, as_json: bool) -> None:
    """Import a TriG/N-Quads dataset atomically (all of it or nothing).

    Example: kgctl store import backup.trig
    """
    if not file.is_file():
        raise InputError(f"no such file: {file}")
    rdf_format = FORMATS[fmt] if fmt else RdfFormat.from_extension(file.suffix.lstrip("."))
    if rdf_format is None or not rdf_format.supports_datasets:
        raise InputError(f"cannot import {file.name}: use a .trig or .nq file or --format")
    touched = store.import_data(file.read_bytes(), format=rdf_format)
    _emit({"imported": touched}, as_json=as_json,
          text=f"imported {len(touched)} paper(s): {' '.join(touched)}")


@command.command()
@store_options
@click.argument("paper")
def drop(store: GraphStore, paper: str) -> None:
    """Remove a paper's graph and its provenance.

    Example: kgctl store drop 10.1021_ic050460z
    """
    store.drop(paper)
    click.echo(f"dropped {paper}")


@command.command("replay")
@store_options(creates=True)
@click.argument("trace_file", metavar="TRACE", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--paper", help="Paper to replay when the trace holds several.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def replay_(store: GraphStore, trace_file: Path, *, paper: str | None, as_json: bool) -> None:
    """Rebuild a paper graph from a JSONL trace by applying its recorded deltas in order.

    The old graph and provenance of that paper are replaced atomically.

    Example: kgctl store replay ic050460z.jsonl --store ./rebuilt
    """
    if not trace_file.is_file():
        raise InputError(f"no such file: {trace_file}")
    records = read_trace(trace_file.read_text(encoding="utf-8"), source=trace_file.name)
    with progress_bar() as progress:
        task = progress.add_task("replaying", total=len(records))
        pid = replay(store, records, paper_id=paper, step=lambda: progress.advance(task))
    data = {"paper": pid, "calls": len(store.trace(pid)),
            "triples": sum(1 for _ in store.triples(pid))}
    _emit(data, as_json=as_json,
          text=f"replayed {data['calls']} calls into {pid}: {data['triples']} triples")


@command.command("merge")
@store_options
@click.option("--paper", "papers", multiple=True, help="Paper id (repeatable; default: all).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def merge(store: GraphStore, *, papers: tuple[str, ...], as_json: bool) -> None:
    """Rebuild the merged view: each paper graph plus the canonical identity of its grounded
    or deduplicated entities, with the method and score of each link (docs/store.md).
    `kgctl ground` and `kgctl dedup` run it for the papers they touch.

    Example: kgctl store merge --store kgctl-data/store
    """
    from kgctl.store.merged import rebuild

    unknown = sorted(p for p in set(papers) if not store.has_paper(p))
    if unknown:
        raise InputError(f"unknown paper(s): {', '.join(unknown)} (see `kgctl store papers`)")
    summary = rebuild(store, list(papers) or None)
    _emit(summary.model_dump(), as_json=as_json,
          text=f"merged {summary.papers} paper(s): {summary.entities} entities with "
               f"{summary.identities} identities ("
               + ", ".join(f"{n} by {m}" for m, n in sorted(summary.by_method.items())) + ")")


@command.command()
@click.option("--store", "path", envvar="KGCTL_STORE", type=click.Path(path_type=Path),
              default=DEFAULT_STORE, show_default=True, metavar="PATH",
              help="Embedded store directory (env KGCTL_STORE).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def compact(path: Path, *, as_json: bool) -> None:
    """Rewrite the store into a fresh database and swap it in: the same quads in fewer bytes.

    The old database is removed only once the new one holds every quad. Stop the processes
    that use the store first (it is locked while they run).

    Example: kgctl store compact --store kgctl-data/store
    """
    from kgctl.store.compact import compact as run

    done = run(path)
    per_quad = (f"{done.bytes_before / done.quads:.0f} -> {done.bytes_after / done.quads:.0f} "
                "bytes per quad" if done.quads else "empty store")
    _emit(done.model_dump(), as_json=as_json,
          text=f"compacted {done.quads} quads: {done.bytes_before:,} -> {done.bytes_after:,} "
               f"bytes ({per_quad})")
