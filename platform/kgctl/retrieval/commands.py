"""``kgctl query``: run a SPARQL file, build a query interactively, or serve the MCP tools."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import click
from pyoxigraph import QueryBoolean, QuerySolutions, QueryTriples, RdfFormat, serialize

from kgctl.errors import InputError
from kgctl.ontology.ir import OntologyIR
from kgctl.ontology.loader import STANDARD_PREFIXES, pack_ir
from kgctl.ontology.options import ir_from_options, ontology_options
from kgctl.packs import load_pack
from kgctl.retrieval.engine import QueryEngine
from kgctl.retrieval.feedback import Rejected
from kgctl.retrieval.loading import declared_prefixes, open_graph, stored_tbox
from kgctl.store.base import GraphStore
from kgctl.store.views import DEFAULT_VIEW, VIEWS
from kgctl.toolserver.transport import serve as run_server
from kgctl.toolserver.transport import transport_options

DEFAULT_PORT = 8766
SHELL_SESSION = "shell"
SHELL_TOOLS = ("filter_by_entity", "filter_by_value", "filter_by_quantity", "convert_quantity",
               "add_path_constraint", "add_triple", "add_provenance", "group_by", "aggregate",
               "nest_query", "select", "order_by", "undo", "show_query", "execute_query")
EXPLORE_TOOLS = ("list_templates", "list_classes", "describe_class", "find_entities",
                 "describe_entity")


def build_engine(graph: GraphStore, ir: OntologyIR | None, *, data: tuple[Path, ...] = (),
                 domain: str | None = None, view: str = DEFAULT_VIEW) -> QueryEngine:
    """The engine over `graph` with the T-Box `ir` (from --ontology), else the `domain` pack's,
    else the one stored in the graph, else the default pack's when the data uses its classes,
    else none (the schema is then what the data shows). The pack's retrieval templates come
    with its T-Box; `data` are the files whose declared prefixes name the data's namespaces;
    `view` the store view the tools read (merged or raw)."""
    prefixes = declared_prefixes(data)
    pack = load_pack(domain)
    tbox = (ir or (pack_ir(pack.root) if domain is not None else None)
            or stored_tbox(graph, prefixes=prefixes) or pack_if_used(graph, pack_ir(pack.root)))
    templates = pack.part("templates") if tbox is pack_ir(pack.root) else None
    return QueryEngine(graph, tbox, templates=templates, prefixes=prefixes, view=view)


def pack_if_used(graph: GraphStore, tbox: OntologyIR) -> OntologyIR:
    """`tbox` when the data uses one of its classes, else an empty T-Box."""
    used = {r["t"].value for r in graph.query("SELECT DISTINCT ?t WHERE { ?s a ?t }",
                                              union=True)}
    return tbox if used & set(tbox.classes) else OntologyIR(prefixes=STANDARD_PREFIXES)


store_options = [
    click.option("--store", type=click.Path(path_type=Path), help="on-disk store directory"),
    click.option("--data", multiple=True, type=click.Path(path_type=Path),
                 help="RDF file (TriG, N-Quads, Turtle, N-Triples, RDF/XML) queried with the "
                      "store, in memory: never written to it; blank nodes are skolemised "
                      "(repeatable)"),
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


view_option = click.option(
    "--view", type=click.Choice(VIEWS), default=DEFAULT_VIEW, show_default=True,
    help="merged: paper graphs with the canonical identity of their entities "
         "(kgctl:canonical); raw: the paper graphs as extracted")


@command.command(name="run")
@click.argument("sparql_file", type=click.Path(path_type=Path))
@with_store
@ontology_options
@view_option
@click.option("--json", "as_json", is_flag=True, help="rows as JSON")
def run(sparql_file: Path, store: Path | None, data: tuple[Path, ...], endpoint: str | None,
        view: str, as_json: bool, **options) -> None:
    """Run a query file over the union of the view's paper graphs: SELECT rows as a table (or
    JSON), ASK as true/false, CONSTRUCT/DESCRIBE as N-Triples. Prefixes the file uses without
    declaring them come from the --ontology T-Box and the --data files.

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
    ir = ir_from_options(options)
    text = with_prefixes(text, {**declared_prefixes(data), **(ir.prefixes if ir else {})})
    graph = open_graph(store, data, endpoint)
    try:
        results = graph.query(text, union=True, view=view)
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


def with_prefixes(text: str, prefixes: dict[str, str]) -> str:
    """`text` with a PREFIX line for each of `prefixes` it uses but does not declare.

    >>> print(with_prefixes("SELECT * { ?s a sosa:Sensor }", {"sosa": "http://e/sosa/"}))
    PREFIX sosa: <http://e/sosa/>
    SELECT * { ?s a sosa:Sensor }
    """
    lines = [f"PREFIX {p}: <{ns}>" for p, ns in sorted(prefixes.items())
             if p and re.search(rf"(?<![\w\-.:<]){re.escape(p)}:(?!//)", text)
             and not re.search(rf"PREFIX\s+{re.escape(p)}\s*:", text, re.IGNORECASE)]
    return "\n".join([*lines, text])


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
@click.option("--template", help="template to start from (default: list the templates)")
@with_store
@ontology_options
@view_option
def shell(template: str | None, store: Path | None, data: tuple[Path, ...],
          endpoint: str | None, view: str, **options) -> None:
    """Build a query step by step: each input line is `tool {json arguments}`; the query id
    is filled in. Rejected steps print their feedback and change nothing. Ends at EOF or `quit`.
    Without --template it prints the templates the graph offers.

    Example: kgctl query shell --template step --data graph.trig
    """
    domain = options.pop("domain", None)
    ir = ir_from_options(options)
    engine = build_engine(open_graph(store, data, endpoint), ir, data=data, domain=domain,
                          view=view)
    if template is None:
        click.echo(engine.list_templates().model_dump_json(indent=2))
        return
    started = _safe(lambda: engine.new_query(SHELL_SESSION, template))
    if started is None:
        raise InputError(f"cannot start from template {template!r}")
    click.echo(started.sparql)
    query_id = started.query_id
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
@ontology_options
@view_option
@transport_options(DEFAULT_PORT)
def serve(store: Path | None, data: tuple[Path, ...], endpoint: str | None, view: str,
          transport: str, host: str, port: int, session_idle: float, **options) -> None:
    """Serve the query-building tools over MCP; the schema and label indexes load in the
    background (data files are read first).
    Over HTTP several clients share it, each session with its own containers (docs/mcp.md).

    Example: kgctl query serve --data graph.trig --ontology sosa.ttl --no-profile
    """
    from kgctl.retrieval.server import build_server  # the MCP SDK only when serving

    missing = [str(path) for path in data if not path.is_file()]
    if missing:
        raise InputError(f"cannot read {', '.join(missing)}: no such file")
    domain = options.pop("domain", None)
    load_pack(domain)  # a bad --domain fails here, before serving
    ir = ir_from_options(options)  # and a bad T-Box
    graph = open_graph(store, data, endpoint)  # so does a locked store
    server = build_server(lambda: build_engine(graph, ir, data=data, domain=domain, view=view))
    run_server(server, transport=transport, host=host, port=port, session_idle=session_idle)


def _safe(call):
    try:
        return call()
    except Rejected as rejected:
        click.echo(rejected.feedback.model_dump_json(indent=2))
    except TypeError as exc:
        click.echo(f"error: bad arguments: {exc}")
    return None
