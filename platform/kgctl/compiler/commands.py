"""``kgctl compile``: T-Boxes + profiles -> the IR, printed as a summary or as JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from kgctl.errors import DataRejected
from kgctl.ontology import load_ir, pack_ir
from kgctl.ontology.ir import OntologyIR
from kgctl.ontology.options import import_options, read_options
from kgctl.ontology.summary import summary_lines
from kgctl.packs import domain_option, load_pack


@click.command("compile")
@click.argument("ontologies", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--profile",
    "profiles",
    multiple=True,
    type=click.Path(path_type=Path),
    help="Profile YAML (repeatable). Default: X.profile.yaml beside each X.ttl.",
)
@click.option("--no-profile", is_flag=True, help="Compile the OWL axioms alone.")
@click.option("--json", "as_json", is_flag=True, help="Print the full IR as canonical JSON.")
@click.option("--tools", is_flag=True,
              help="Print the compiled tools (name, tool set, description, input schema).")
@click.option("--plan", is_flag=True,
              help="Print the extraction plan (steps, tool sets, prompts) as JSON.")
@click.option("--plan-hints", type=click.Path(path_type=Path),
              help="YAML with extra section-title words to read per plan step, for --plan.")
@click.option("--budget", is_flag=True,
              help="Print the tokens of the tool surface and of each plan step per turn "
                   "(exit 1 when over budget).")
@import_options
@domain_option
def command(
    ontologies: tuple[Path, ...], profiles: tuple[Path, ...], no_profile: bool, as_json: bool,
    tools: bool, plan: bool, plan_hints: Path | None, budget: bool, domain: str | None,
    **reading: Any,
) -> None:
    """Compile ONTOLOGY files (Turtle, RDF/XML) and their profiles into the intermediate model.

    Without ONTOLOGY, the T-Boxes of the domain pack (--domain) are used, with its plan hints.

    \b
    Examples:
      kgctl compile sosa.ttl --json
      kgctl compile --domain nerre-doping --plan
      kgctl compile --tools --json
      kgctl compile --plan
      kgctl compile --plan --budget
      kgctl compile battery.ttl --no-profile --imports catalog-v001.xml --tools \\
        --ignore-import https://w3id.org/emmo/1 \\
        --ignore-import https://w3id.org/emmo/domain/electrochemistry
    """
    pack = None if ontologies else load_pack(domain)
    if pack is not None and not profiles and not no_profile:
        ir = pack_ir(pack.root)
        plan_hints = plan_hints or pack.part("plan_hints")
    else:
        paths = list(ontologies) or pack.ontology_paths()
        profile_paths = [] if no_profile else (list(profiles) or None)
        ir = load_ir(paths, profile_paths=profile_paths, **read_options(reading))
    if budget:
        _budget(ir, plan_hints, as_json=as_json)
    elif plan:
        from kgctl.compiler.plan import compile_plan, load_hints

        hints = load_hints(plan_hints, ir) if plan_hints else None
        click.echo(compile_plan(ir, hints=hints).to_json(), nl=False)
    elif tools:
        from kgctl.compiler.tools import compile_tools

        surface = compile_tools(ir)
        click.echo(json.dumps(surface.listing(), indent=2, ensure_ascii=False) if as_json
                   else "\n".join(f"{t.toolset:<22} {t.name}" for t in surface.tools))
    elif as_json:
        click.echo(ir.to_json())
    else:
        click.echo("\n".join(summary_lines(ir)))


def _budget(ir: OntologyIR, plan_hints: Path | None, *, as_json: bool) -> None:
    from kgctl.compiler.budget import plan_budget
    from kgctl.compiler.plan import compile_plan, load_hints
    from kgctl.compiler.tools import compile_tools

    surface = compile_tools(ir)
    hints = load_hints(plan_hints, ir) if plan_hints else None
    report = plan_budget(compile_plan(ir, surface=surface, hints=hints), surface)
    click.echo(report.model_dump_json(indent=2) if as_json else report.table())
    over = report.over_budget()
    if over:
        raise DataRejected("over budget: " + "; ".join(over))
