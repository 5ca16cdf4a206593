"""``kgctl compile``: T-Boxes + profiles -> the IR, printed as a summary or as JSON."""

from __future__ import annotations

from pathlib import Path

import click

from kgctl.ontology import default_ontology_paths, load_ir
from kgctl.ontology.summary import summary_lines


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
def command(
    ontologies: tuple[Path, ...], profiles: tuple[Path, ...], no_profile: bool, as_json: bool
) -> None:
    """Compile ONTOLOGY files (Turtle, RDF/XML) and their profiles into the intermediate model.

    Without ONTOLOGY, the bundled TWA T-Boxes (OntoSyn, OntoMOPs, OntoSpecies, OM-2) are used.

    Example: kgctl compile ontologies/ontosynthesis.ttl ontologies/om2.ttl --json
    """
    paths = list(ontologies) or default_ontology_paths()
    profile_paths = [] if no_profile else (list(profiles) or None)
    ir = load_ir(paths, profile_paths=profile_paths)
    if as_json:
        click.echo(ir.to_json())
    else:
        click.echo("\n".join(summary_lines(ir)))
