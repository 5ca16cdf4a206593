"""``kgctl serve``: the SPARQL endpoint and web page over a kgctl store."""

from __future__ import annotations

import ipaddress
import os
import sys
from pathlib import Path
from typing import Any

import click

from kgctl.packs import domain_option
from kgctl.service import config as defaults
from kgctl.service.config import ServiceConfig
from kgctl.service.dataset import Dataset
from kgctl.service.hosts import LOOPBACK_NAMES
from kgctl.service.server import Server, listen
from kgctl.service.static_examples import load_examples

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 7878
TOKEN_ENV = "KGCTL_UPDATE_TOKEN"
SECONDS = click.FloatRange(min=0, min_open=True)


@click.command(name="serve")
@click.option("--store", "store_path", required=True,
              type=click.Path(path_type=Path, file_okay=False),
              help="Store directory; this process owns it while serving.")
@click.option("--host", default=DEFAULT_HOST, show_default=True,
              help="Interface to listen on (loopback unless you say otherwise).")
@click.option("--port", default=DEFAULT_PORT, show_default=True, type=click.IntRange(0, 65535))
@click.option("--update-token", envvar=TOKEN_ENV, default=None,
              help=f"Enable SPARQL Update and Graph Store writes for clients sending this bearer "
                   f"token (or set {TOKEN_ENV}). Without it writes are refused.")
@click.option("--timeout", "timeout_s", default=defaults.DEFAULT_TIMEOUT_S, show_default=True,
              type=SECONDS, help="Time limit in seconds of a query (counted from its arrival) or "
              "write; its process is killed at the limit.")
@click.option("--max-rows", default=defaults.DEFAULT_MAX_ROWS, show_default=True,
              type=click.IntRange(min=1), help="Most result rows (or triples) a query returns.")
@click.option("--max-bytes", default=defaults.DEFAULT_MAX_BYTES, show_default=True,
              type=click.IntRange(min=1), help="Largest serialised result (and graph upload).")
@click.option("--workers", default=defaults.DEFAULT_WORKERS, show_default=True,
              type=click.IntRange(min=1),
              help="Query worker processes answering at once, one request each (two per CPU "
                   "core, at most 16, by default); as many more wait started as spares.")
@click.option("--long-queries", default=defaults.DEFAULT_LONG_QUERIES, show_default=True,
              type=click.IntRange(min=1),
              help="Queries allowed to run longer than a quarter second at once; more are 503.")
@click.option("--worker-memory", "worker_memory_mb", default=defaults.DEFAULT_WORKER_MEMORY_MB,
              show_default=True, type=click.IntRange(min=64),
              help="Memory (MB) a query worker, or the writer, may allocate; a query or write "
                   "that needs more is stopped (500) instead of swapping the machine.")
@click.option("--cors-origin", "cors_origins", multiple=True,
              help="Allow browser pages from this origin (repeatable; '*' for any).")
@click.option("--allowed-host", "allowed_hosts", multiple=True,
              help="Host header the server answers besides the loopback names and --host "
                   "(repeatable; '*' for any).")
@click.option("--allow-service", "allow_service", multiple=True,
              help="Endpoint that SERVICE (and LOAD) may contact (repeatable); none by default.")
@click.option("--header-timeout", "header_timeout_s", default=defaults.DEFAULT_HEADER_TIMEOUT_S,
              show_default=True, type=SECONDS,
              help="Seconds a client has to send its request headers.")
@click.option("--body-timeout", "body_timeout_s", default=defaults.DEFAULT_BODY_TIMEOUT_S,
              show_default=True, type=SECONDS, help="Seconds a client has to send its body.")
@click.option("--base-iri", default=None,
              help="Base IRI for relative IRIs in requests [default: the endpoint's URL].")
@click.option("--union-default-graph", is_flag=True,
              help="Make the union of all graphs the default graph of queries. Without it the "
                   "default graph is the store's own (empty: every paper is a named graph) "
                   "unless a request sets default-graph-uri or union-default-graph=true.")
@click.option("--seed", is_flag=True,
              help="First (re)build the domain pack's demo graphs by replaying its ground-truth "
                   "traces through the extraction tools (as `kgctl demo` does).")
@domain_option
def command(store_path: Path, *, host: str, port: int, update_token: str | None,
            allowed_hosts: tuple[str, ...], union_default_graph: bool, seed: bool,
            domain: str | None, **settings: Any) -> None:
    """Serve a store as a SPARQL 1.1 endpoint with a query page at /.

    Queries: /query (GET/POST); updates: /update with a bearer token; graphs: /store?graph=IRI
    (Graph Store Protocol). Queries see the store's default graph (empty) unless they name
    graphs; see --union-default-graph.

    Example: kgctl serve --store kgctl-data/store --port 7878
    """
    examples = load_examples(domain)  # a bad --domain fails before anything is opened
    if seed:
        store_path.mkdir(parents=True, exist_ok=True)
    dataset = Dataset.open(store_path)  # one clear error before anything starts
    if seed:
        from kgctl.pipeline.seed import pack_quads

        dataset.load(pack_quads(domain), replace=True)
    del dataset  # closed: the service's writer process owns the directory
    config = ServiceConfig(  # the other options are named as the settings they give
        update_token=update_token or None, union_default=union_default_graph,
        allowed_hosts=(*LOOPBACK_NAMES, host.lower(), *allowed_hosts), examples=tuple(examples),
        **settings)
    listener = listen(host, port)
    bound_port = listener.getsockname()[1]
    click.echo(f"kgctl serve: http://{host}:{bound_port}/  (SPARQL at /query, updates "
               f"{'need the bearer token' if config.update_token else 'disabled'})", err=True)
    if not is_loopback(host):
        click.echo(f"warning: listening on {host}, reachable from other machines", err=True)
    server = Server(store_path, config)
    server.run(listener)
    if not server.write_ended:  # an update still runs: leave without it (nothing committed)
        click.echo("kgctl serve: stopped while an update ran; it was not applied", err=True)
        sys.stderr.flush()
        os._exit(0)


def is_loopback(host: str) -> bool:
    """
    >>> is_loopback("127.0.0.1"), is_loopback("localhost"), is_loopback("0.0.0.0")
    (True, True, False)
    """
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
