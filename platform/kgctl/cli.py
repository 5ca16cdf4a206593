"""The ``kgctl`` command line: one sub-command per box, loaded lazily.

Each box exports a click command named ``command`` from its ``commands`` module; loading them
lazily keeps ``kgctl --help`` fast and one box's import errors out of the others.
"""

from __future__ import annotations

import importlib
import sys

import click

from kgctl import __version__
from kgctl.errors import EXIT_INTERRUPTED, EXIT_USAGE, KgctlError

# sub-command -> (module exporting ``command``, its one-line help). `kgctl --help` lists the
# lines from here without importing any box; tests/test_cli.py keeps each line equal to the
# command's own short help.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "compile": ("kgctl.compiler.commands", "Compile ONTOLOGY files (Turtle, RDF/XML) and their "
                "profiles into the intermediate model."),
    "store": ("kgctl.store.commands",
              "Paper graphs in the store: info, papers, export, import, drop, replay, merge, "
              "compact."),
    "mcp": ("kgctl.instantiation.commands", "MCP servers of kgctl."),
    "extract": ("kgctl.pipeline.commands:extract", "Extract papers (PDF, Markdown, text) into "
                "their graphs with an LLM agent, or replay recorded traces through the same "
                "validating tools."),
    "demo": ("kgctl.pipeline.commands:demo", "The main job: compile a domain pack's ontologies, "
             "build its paper graphs by replaying its ground-truth traces through the compiled "
             "tools, evaluate them against its benchmark and write the HTML report."),
    "doctor": ("kgctl.agent.doctor", "Check the LLM server before a batch: reachable, model "
               "offered, tool calling, context window."),
    "ground": ("kgctl.grounding.commands",
               "Ground locally minted entities of paper graphs against a reference KG."),
    "reference": ("kgctl.chemistry.reference_commands:reference",
                  "Build and serve the reference species KG."),
    "dedup": ("kgctl.dedup.commands", "Deduplicate entities across papers into the dedup graph "
              "(owl:sameAs, paper graphs untouched)."),
    "eval": ("kgctl.evaluation.commands", "Evaluate extracted graphs against benchmarks."),
    "query": ("kgctl.retrieval.commands", "Query the knowledge graph: SPARQL files, a "
              "query-building shell, the MCP server."),
    "serve": ("kgctl.service.commands",
              "Serve a store as a SPARQL 1.1 endpoint with a query page at /."),
    "domain": ("kgctl.domains.commands", "Domain packs: list the bundled ones, check a pack, "
               "make a new one from a T-Box."),
    "chem": ("kgctl.chemistry.commands", "Chemistry: structures from names (OPSIN), "
             "identifiers (RDKit), building units."),
}


def load_command(name: str) -> click.Command:
    """The click command of one box (imports that box only)."""
    module_name, _, attr = SUBCOMMANDS[name][0].partition(":")
    return getattr(importlib.import_module(module_name), attr or "command")


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(SUBCOMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return load_command(cmd_name) if cmd_name in SUBCOMMANDS else None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        limit = formatter.width - 6 - max(map(len, SUBCOMMANDS))
        rows = [(name, _shorten(text, limit)) for name, (_, text) in SUBCOMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def main(self, *args, standalone_mode: bool = True, **kwargs):
        """Click's usage errors too end in one `error:` line (with where to find help)."""
        if not standalone_mode:
            return super().main(*args, standalone_mode=False, **kwargs)
        try:
            code = super().main(*args, standalone_mode=False, **kwargs)
        except click.ClickException as exc:
            context = getattr(exc, "ctx", None)
            hint = f" (see '{context.command_path} --help')" if context is not None else ""
            click.echo(f"error: {exc.format_message()}{hint}", err=True)
            sys.exit(exc.exit_code)
        except click.Abort:  # Ctrl-C (click turns KeyboardInterrupt into Abort)
            click.echo("interrupted", err=True)
            sys.exit(EXIT_INTERRUPTED)
        sys.exit(code if isinstance(code, int) else 0)

    def invoke(self, ctx: click.Context):
        # One message and a documented exit code for every error a user can cause.
        try:
            return super().invoke(ctx)
        except KgctlError as exc:
            click.echo("error: " + " ".join(str(exc).split("\n")), err=True)  # one line
            ctx.exit(exc.exit_code)
        except OSError as exc:  # a path or server the user named: missing, full, refused
            where = f": {exc.filename}" if exc.filename else ""
            click.echo(f"error: {exc.strerror or exc}{where}", err=True)
            ctx.exit(EXIT_USAGE)
        except UnicodeDecodeError:
            click.echo("error: an input file is not UTF-8 text", err=True)
            ctx.exit(EXIT_USAGE)


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 3].rsplit(" ", 1)[0] + "..."


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="kgctl")
def cli() -> None:
    """kgctl: compile an ontology into validated tools and build literature knowledge graphs.

    Example: kgctl demo
    """


def main() -> None:
    """Console entry point."""
    cli(prog_name="kgctl")
