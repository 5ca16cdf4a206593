"""``kgctl reference``: build and serve the reference species KG (chemistry's reference for
grounding, made from the PubChem-derived tables of the `chemicals` package)."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import click

from kgctl.chemistry.reference import build_reference, read_rows, table_paths
from kgctl.grounding.commands import ProgressBar
from kgctl.grounding.paths import default_reference

REFERENCE_PORT = 7879  # kgctl serve has 7878


@click.group()
def reference() -> None:
    """Build and serve the reference species KG.

    Example: kgctl reference build && kgctl reference serve
    """


@reference.command()
@click.option("--store", "store_path", type=click.Path(path_type=Path), default=None,
              help="Store folder (default: $KGCTL_REFERENCE).")
@click.option("--limit", type=click.IntRange(1), default=None, help="Only the first N species.")
@click.option("--json", "as_json", is_flag=True, help="Summary as JSON.")
def build(store_path: Path | None, limit: int | None, as_json: bool) -> None:
    """Convert the PubChem-derived tables of `chemicals` into an OntoSpecies graph.

    Example: kgctl reference build --store ref/ --limit 1000
    """
    path = store_path or default_reference()
    path.parent.mkdir(parents=True, exist_ok=True)
    with ProgressBar("species", limit) as advance:
        count = build_reference(path, read_rows(table_paths(), limit=limit), progress=advance)
    if as_json:
        click.echo(json.dumps({"store": str(path), "species": count}))
    else:
        click.echo(f"{count} species written to {path}")


@reference.command()
@click.option("--store", "store_path", type=click.Path(path_type=Path), default=None,
              help="Store folder (default: $KGCTL_REFERENCE).")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=int, default=REFERENCE_PORT, show_default=True)
def serve(store_path: Path | None, host: str, port: int) -> None:
    """Serve the reference store read-only with the `oxigraph` SPARQL server.

    Example: kgctl reference serve --port 7879
    """
    from kgctl.grounding.server import start_server, stop_server

    # SIGTERM (a service manager, `kill`) ends like Ctrl-C: the server process goes too
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    process, url = start_server(store_path or default_reference(), host=host, port=port)
    try:
        click.echo(f"SPARQL endpoint: {url} (Ctrl-C stops)")
        process.wait()
    except KeyboardInterrupt:
        pass
    finally:
        stop_server(process)


def build_if_absent(path: Path) -> bool:
    """Build the reference store at `path` from the bundled tables unless one is there (the
    mop30 pack's `reference` hook, used by `kgctl demo`); True when built."""
    if path.is_dir():
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    build_reference(path, read_rows(table_paths()))
    return True
