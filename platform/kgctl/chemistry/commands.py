"""``kgctl chem``: names to structures and building units, and the chemistry MCP server."""

from __future__ import annotations

import json

import click

from kgctl.chemistry.workers import DEADLINE_S, WORKERS, Pool
from kgctl.toolserver.transport import serve, transport_options

DEFAULT_PORT = 8768


@click.group(name="chem")
def command() -> None:
    """Chemistry: structures from names (OPSIN), identifiers (RDKit), building units.

    Needs the optional part: pip install 'kgctl[chem]' (and Java for OPSIN).

    Example: kgctl chem parse "terephthalic acid" H2BDC
    """


@command.command()
@click.argument("names", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="The resolution as JSON.")
def parse(names: tuple[str, ...], as_json: bool) -> None:
    """Structure the names of ONE chemical agree on.

    Example: kgctl chem parse "2,2'-bipyridine-5,5'-dicarboxylic acid" H2bpydc
    """
    from kgctl.chemistry.names import resolve
    from kgctl.chemistry.opsin import Opsin

    with Opsin() as opsin:
        result = resolve(opsin, names)
    if as_json:
        click.echo(result.model_dump_json(indent=2))
    elif result.structure is None:
        click.echo("no name parsed to a structure")
    else:
        s = result.structure
        click.echo(f"{s.formula}  {s.smiles}\nInChIKey {s.inchikey}\nagreeing names: "
                   + "; ".join(result.agreeing))


@command.command()
@click.option("--metal", "metal", multiple=True, required=True,
              help="A name of the metal precursor (repeatable).")
@click.option("--linker", "linker", multiple=True, required=True,
              help="A name of the linker precursor (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="The units as JSON.")
def cbu(metal: tuple[str, ...], linker: tuple[str, ...], as_json: bool) -> None:
    """Building units of a MOP from its precursors' names.

    Example: kgctl chem cbu --metal "copper(II) nitrate" --linker "isophthalic acid"
    """
    from kgctl.chemistry.cbu import derive_units
    from kgctl.chemistry.opsin import Opsin

    with Opsin() as opsin:
        units = derive_units(opsin, metal=list(metal), linker=list(linker))
    if as_json:
        click.echo(json.dumps(units.model_dump(mode="json"), indent=2))
        return
    click.echo(f"metal unit:  {units.metal.unit if units.metal else '(none derived)'}"
               + (f"  [{units.metal.family}]" if units.metal else ""))
    click.echo(f"linker unit: {units.linker.formula if units.linker else '(none derived)'}"
               + (f"  composition {units.linker.composition}" if units.linker else ""))


@command.command()
@transport_options(DEFAULT_PORT)
@click.option("--workers", type=click.IntRange(1, 64), default=WORKERS, show_default=True,
              help="worker processes (each with its own OPSIN JVM): calls served at once")
@click.option("--deadline", type=click.FloatRange(min=0.1), default=DEADLINE_S,
              show_default=True, help="seconds a call may take; a longer one is stopped")
def mcp(transport: str, host: str, port: int, session_idle: float, workers: int,
        deadline: float) -> None:
    """Serve parse_names / describe_structure / derive_* over MCP (docs/mcp.md).

    Example: kgctl chem mcp --transport http --port 8768 --deadline 5
    """
    from kgctl.chemistry.server import build_server

    with Pool(size=workers, deadline=deadline) as pool:
        serve(build_server(pool), transport=transport, host=host, port=port,
              session_idle=session_idle)
