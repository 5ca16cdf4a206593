"""``kgctl serve``: the SPARQL endpoint and web page over a kgctl store."""

from __future__ import annotations

import ipaddress
import socket
from pathlib import Path

import click
import uvicorn

from kgctl.errors import InputError
from kgctl.service.app import (
    DEFAULT_MAX_ROWS,
    DEFAULT_TIMEOUT_S,
    DEFAULT_WORKERS,
    ServiceConfig,
    create_app,
)
from kgctl.service.dataset import Dataset

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 7878
TOKEN_ENV = "KGCTL_UPDATE_TOKEN"

# clients that pool connections (SPARQLWrapper, httpx) must not race the server closing an
# idle one; uvicorn's 5 s default lost one request in 5,000 under the load benchmark
KEEP_ALIVE_S = 75


@click.command(name="serve")
@click.option("--store", "store_path", required=True,
              type=click.Path(path_type=Path, file_okay=False),
              help="Store directory; this process owns it while serving.")
@click.option("--host", default=DEFAULT_HOST, show_default=True,
              help="Interface to listen on (loopback unless you say otherwise).")
@click.option("--port", default=DEFAULT_PORT, show_default=True, type=click.IntRange(0, 65535))
@click.option("--update-token", envvar=TOKEN_ENV, default=None,
              help=f"Enable SPARQL Update for clients sending this bearer token "
                   f"(or set {TOKEN_ENV}). Without it updates are refused.")
@click.option("--timeout", "timeout_s", default=DEFAULT_TIMEOUT_S, show_default=True,
              type=click.FloatRange(min=0, min_open=True), help="Query time limit in seconds.")
@click.option("--max-rows", default=DEFAULT_MAX_ROWS, show_default=True,
              type=click.IntRange(min=1), help="Most result rows (or triples) a query returns.")
@click.option("--workers", default=DEFAULT_WORKERS, show_default=True,
              type=click.IntRange(min=1), help="Query worker threads.")
@click.option("--cors-origin", "cors_origins", multiple=True,
              help="Allow browser pages from this origin (repeatable; '*' for any).")
@click.option("--union-default-graph", is_flag=True,
              help="Make the union of all graphs the default graph of queries.")
@click.option("--seed-mop30", is_flag=True,
              help="First (re)build the MOP-30 demo graphs by replaying the bundled traces "
                   "through the extraction tools (as `kgctl demo` does).")
def command(store_path: Path, *, host: str, port: int, update_token: str | None,
            timeout_s: float, max_rows: int, workers: int, cors_origins: tuple[str, ...],
            union_default_graph: bool, seed_mop30: bool) -> None:
    """Serve a store as a SPARQL 1.1 endpoint with a query page at /.

    Queries: /query (GET/POST); updates: /update with a bearer token; graphs: /store?graph=IRI.

    Example: kgctl serve --store kgctl-data --port 7878
    """
    if seed_mop30:
        store_path.mkdir(parents=True, exist_ok=True)
    dataset = Dataset.open(store_path)
    if seed_mop30:
        from kgctl.service.seed import mop30_quads

        dataset.load(mop30_quads(), replace=True)
    config = ServiceConfig(timeout_s=timeout_s, max_rows=max_rows, workers=workers,
                           update_token=update_token or None, cors_origins=cors_origins,
                           union_default=union_default_graph)
    listener = listen(host, port)
    bound_port = listener.getsockname()[1]
    click.echo(f"kgctl serve: http://{host}:{bound_port}/  (SPARQL at /query, updates "
               f"{'need the bearer token' if config.update_token else 'disabled'})", err=True)
    if not is_loopback(host):
        click.echo(f"warning: listening on {host}, reachable from other machines", err=True)
    server = uvicorn.Server(uvicorn.Config(create_app(dataset, config), log_level="warning",
                                           access_log=False, timeout_keep_alive=KEEP_ALIVE_S))
    server.run(sockets=[listener])


def listen(host: str, port: int) -> socket.socket:
    """A bound listening socket, or one clear error (port taken, unknown host)."""
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as exc:
        raise InputError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock


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
