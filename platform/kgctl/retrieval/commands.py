"""``kgctl query``: run a SPARQL file, build a query interactively, or serve the MCP tools."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from pyoxigraph import QueryBoolean, QuerySolutions, QueryTriples, RdfFormat, serialize

from kgctl.errors import InputError
from kgctl.ontology.loader import pack_ir
from kgctl.packs import domain_option, load_pack
from kgctl.retrieval.engine import QueryEngine
from kgctl.retrieval.feedback import Rejected
from kgctl.store import open_store as open_any
from kgctl.store.base import GraphStore
from kgctl.store.embedded import EmbeddedStore
from kgctl.toolserver.transport import serve as run_server
from kgctl.toolserver.transport import transport_options

DEFAULT_PORT = 8766
SHELL_SESSION = "shell"
SHELL_TOOLS = ("filter_by_entity", "filter_by_value", "filter_by_quantity", "convert_quantity",
               "add_path_constraint", "add_triple", "add_provenance", "group_by", "aggregate",
               "nest_query", "select", "order_by", "undo", "show_query", "execute_query")
EXPLORE_TOOLS = ("list_templates", "list_classes", "describe_class", "find_entities",
                 "describe_entity")


def engine_for(store: GraphStore, domain: str | None) -> QueryEngine:
    """The query engine over `store` for a domain pack's T-Box and retrieval templates (a pack
    without templates gets one per class of its T-Box)."""
    pack = load_pack(domain)
    return QueryEngine(store, pack_ir(pack.root),
                       templates=pack.part("templates") or pack.root / "templates")


def open_store(store: Path | None, data: tuple[Path, ...], endpoint: str | None = None
               ) -> GraphStore:
    if endpoint is not None:
        if store is not None or data:
            raise InputError("give --endpoint or --store/--data, not both")
        return open_any(endpoint=endpoint)
    if store is None and not data:
        raise InputError("give --store DIR, --data FILE.trig or --endpoint URL")
    return load_files(EmbeddedStore(store), data)


def load_files(opened: EmbeddedStore, data: tuple[Path, ...]) -> EmbeddedStore:
    for path in data:
        try:
            opened.import_data(path.read_bytes())
        except OSError as exc:
            raise InputError(f"cannot read {path}: {exc.strerror}") from None
        except SyntaxError as exc:
            raise InputError(f"{path}: not valid TriG: {exc}") from None
    return opened


store_options = [
    click.option("--store", type=click.Path(path_type=Path), help="on-disk store directory"),
    click.option("--data", multiple=True, type=click.Path(path_type=Path),
                 help="TriG file loaded into the store first (repeatable)"),
    click.option("--endpoint", metavar="URL", help="SPARQL endpoint URL of a remote store"),
]


def with_store(fn):
    for option in reversed(store_options):
        fn = option(fn)
    return fn


@click.group(name="query")
def command() -> None:
    """Query the knowledge graph: SPARQL files, a query-building shell, the MCP server.

    Example: kgctl query run question.rq --data graph.trig --json
    """


@command.command(name="run")
@click.argument("sparql_file", type=click.Path(path_type=Path))
@with_store
@click.option("--json", "as_json", is_flag=True, help="rows as JSON")
def run(sparql_file: Path, store: Path | None, data: tuple[Path, ...], endpoint: str | None,
        as_json: bool) -> None:
    """Run a query file over the union of all paper graphs: SELECT rows as a table (or JSON),
    ASK as true/false, CONSTRUCT/DESCRIBE as N-Triples.

    Example: kgctl query run q.rq --store ./kg
    """
    try:
        text = sparql_file.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read {sparql_file}: {exc.strerror}") from None
    if not text.strip():
        raise InputError(f"{sparql_file} is empty")
    if store is not None and not store.is_dir():
        raise InputError(f"no store at {store}")  # a query never creates one
    graph = open_store(store, data, endpoint)
    try:
        results = graph.query(text, union=True)
        if isinstance(results, QueryBoolean):
            answer = bool(results)
            click.echo(json.dumps({"boolean": answer}) if as_json else str(answer).lower())
        elif isinstance(results, QueryTriples):
            click.echo(results.serialize(format=RdfFormat.N_TRIPLES).decode(), nl=False)
        elif isinstance(results, list):  # a remote store's CONSTRUCT: parsed triples
            click.echo(serialize(results, format=RdfFormat.N_TRIPLES).decode(), nl=False)
        else:
            _print_rows(results, as_json=as_json)
    finally:
        graph.close()


def _print_rows(solutions: QuerySolutions, *, as_json: bool) -> None:
    columns = [v.value for v in solutions.variables]
    rows = [[None if s[c] is None else s[c].value for c in columns] for s in solutions]
    if as_json:
        click.echo(json.dumps({"columns": columns, "rows": rows}, ensure_ascii=False))
        return
    click.echo("\t".join(columns))
    for row in rows:
        click.echo("\t".join("" if v is None else v for v in row))


@command.command(name="shell")
@click.option("--template", required=True,
              help="template to start from (see the list_templates tool)")
@with_store
@domain_option
def shell(template: str, store: Path | None, data: tuple[Path, ...],
          endpoint: str | None, domain: str | None) -> None:
    """Build a query step by step: each input line is `tool {json arguments}`; the query id
    is filled in. Rejected steps print their feedback and change nothing. Ends at EOF or `quit`.

    Example: kgctl query shell --template step --data graph.trig
    """
    engine = engine_for(open_store(store, data, endpoint), domain)
    view = _safe(lambda: engine.new_query(SHELL_SESSION, template))
    if view is None:
        raise InputError(f"cannot start from template {template!r}")
    click.echo(view.sparql)
    query_id = view.query_id
    for line in sys.stdin:
        name, _, raw = line.strip().partition(" ")
        if name in ("", "quit", "exit"):
            if name:
                break
            continue
        try:
            args = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError as exc:
            click.echo(f"error: arguments are not JSON: {exc.msg}")
            continue
        if name in SHELL_TOOLS:
            call = lambda n=name, a=args: getattr(engine, n)(SHELL_SESSION, query_id, **a)  # noqa: E731
        elif name in EXPLORE_TOOLS:
            call = lambda n=name, a=args: getattr(engine, n)(**a)  # noqa: E731
        else:
            click.echo(f"error: unknown tool {name!r}; tools: "
                       + ", ".join(EXPLORE_TOOLS + SHELL_TOOLS))
            continue
        result = _safe(call)
        if result is not None:
            click.echo(result.model_dump_json(indent=2))


@command.command(name="serve")
@with_store
@transport_options(DEFAULT_PORT)
@domain_option
def serve(store: Path | None, data: tuple[Path, ...], endpoint: str | None, transport: str,
          host: str, port: int, session_idle: float, domain: str | None) -> None:
    """Serve the query-building tools over MCP; the store and indexes load in the background.
    Over HTTP several clients share it, each session with its own containers (docs/mcp.md).

    Example: kgctl query serve --store ./kg --transport http
    """
    from kgctl.retrieval.server import build_server  # the MCP SDK only when serving

    if endpoint is not None:
        graph = open_store(store, data, endpoint)
        load_pack(domain)  # a bad --domain fails before serving
        server = build_server(lambda: engine_for(graph, domain))
    else:
        if store is None and not data:
            raise InputError("give --store DIR, --data FILE.trig or --endpoint URL")
        missing = [str(path) for path in data if not path.is_file()]
        if missing:
            raise InputError(f"cannot read {', '.join(missing)}: no such file")
        local = EmbeddedStore(store)  # a locked store fails here, before serving
        load_pack(domain)
        server = build_server(lambda: engine_for(load_files(local, data), domain))
    run_server(server, transport=transport, host=host, port=port, session_idle=session_idle)


def _safe(call):
    try:
        return call()
    except Rejected as rejected:
        click.echo(rejected.feedback.model_dump_json(indent=2))
    except TypeError as exc:
        click.echo(f"error: bad arguments: {exc}")
    return None
