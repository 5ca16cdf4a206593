"""The ``kgctl`` command line: one sub-command per box, loaded lazily.

Each box exports a click command named ``command`` from its ``commands`` module; loading them
lazily keeps ``kgctl --help`` fast and one box's import errors out of the others.
"""

from __future__ import annotations

import importlib

import click

from kgctl import __version__
from kgctl.errors import KgctlError

# sub-command -> module exporting ``command``
SUBCOMMANDS: dict[str, str] = {
    "compile": "kgctl.compiler.commands",
    "store": "kgctl.store.commands",
    "mcp": "kgctl.instantiation.commands",
    "extract": "kgctl.agent.commands:extract",
    "demo": "kgctl.agent.commands:demo",
    "ground": "kgctl.grounding.commands",
    "reference": "kgctl.grounding.commands:reference",
    "dedup": "kgctl.dedup.commands",
    "eval": "kgctl.evaluation.commands",
    "query": "kgctl.retrieval.commands",
    "serve": "kgctl.service.commands",
    "chem": "kgctl.chemistry.commands",
}


def _load(target: str) -> click.Command | None:
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name:  # box not built yet
            return None
        raise
    return getattr(module, attr or "command", None)


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return [name for name in SUBCOMMANDS if _load(SUBCOMMANDS[name]) is not None]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = SUBCOMMANDS.get(cmd_name)
        return _load(target) if target else None

    def invoke(self, ctx: click.Context):
        # One message and a documented exit code for every error a user can cause.
        try:
            return super().invoke(ctx)
        except KgctlError as exc:
            click.echo(f"error: {exc}", err=True)
            ctx.exit(exc.exit_code)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="kgctl")
def cli() -> None:
    """kgctl: compile an ontology into validated tools and build literature knowledge graphs.

    Example: kgctl demo
    """


def main() -> None:
    """Console entry point."""
    cli(prog_name="kgctl")
