"""``kgctl domain``: list the bundled packs, check a pack, make a new one from T-Box files."""

from __future__ import annotations

import shutil
from pathlib import Path

import click
import yaml

from kgctl.errors import DataRejected, InputError, KgctlError
from kgctl.packs import MANIFEST, Pack, bundled_names, default_name, load_pack, read_manifest


@click.group("domain")
def command() -> None:
    """Domain packs: list the bundled ones, check a pack, make a new one from a T-Box.

    Example: kgctl domain new station --ontology sosa.ttl
    """


@command.command("list")
def list_command() -> None:
    """The bundled domain packs (the default one marked *).

    Example: kgctl domain list
    """
    default = default_name()
    for name in bundled_names():
        pack = load_pack(name)
        mark = "*" if name == default else " "
        click.echo(f"{mark} {name:16} {pack.manifest.title}")


@command.command("check")
@click.argument("domain", metavar="NAME|PATH")
def check_command(domain: str) -> None:
    """Check a pack: its manifest, that every part it names exists, that its T-Boxes compile
    into tools and plan (with its plan hints) and that its specs read; one line per problem,
    exit 1 when there is any.

    Example: kgctl domain check nerre-doping
    """
    pack = load_pack(domain)
    problems = pack.problems()
    if not problems:
        problems = _compile_problems(pack)
    for problem in problems:
        click.echo(f"problem: {problem}")
    if problems:
        raise DataRejected(f"domain {pack.name!r}: {len(problems)} problem(s)")
    click.echo(f"domain {pack.name} ({pack.root}): ok")


def _compile_problems(pack: Pack) -> list[str]:
    from kgctl.compiler.plan import compile_plan, load_hints
    from kgctl.compiler.tools import compile_tools
    from kgctl.dedup.spec import pack_specs
    from kgctl.ontology import load_ir

    problems = []
    try:
        ir = load_ir(pack.ontology_paths(), profile_paths=pack.profile_paths())
        hints = pack.part("plan_hints")
        plan = compile_plan(ir, surface=compile_tools(ir),
                            hints=load_hints(hints, ir) if hints else None)
        if not plan.steps:
            problems.append("the T-Boxes give no plan step (no class can be created)")
        pack_specs(pack.root, ir=ir)
    except KgctlError as exc:
        problems.append(" ".join(str(exc).split()))
    return problems


@command.command("new")
@click.argument("name")
@click.option("--ontology", "ontologies", multiple=True, required=True,
              type=click.Path(path_type=Path, exists=True, dir_okay=False), metavar="FILE",
              help="T-Box file, copied into the pack (repeatable; a X.profile.yaml beside it "
                   "comes along).")
@click.option("--dir", "out", type=click.Path(path_type=Path),
              help="folder of the new pack (default: ./NAME).")
@click.option("--title", default="", help="one-line title of the domain.")
def new_command(name: str, ontologies: tuple[Path, ...], out: Path | None, title: str) -> None:
    """Make a domain pack from T-Box files alone: the parts it leaves out (read-out, templates,
    dedup spec, ...) are derived from the T-Box and the data by each stage. The new pack is
    checked before this command ends.

    Example: kgctl domain new station --ontology sosa.ttl --dir packs/station
    """
    root = out or Path(name)
    if root.exists() and any(root.iterdir()):
        raise InputError(f"{root} exists and is not empty")
    (root / "ontologies").mkdir(parents=True, exist_ok=True)
    files = []
    for path in ontologies:
        shutil.copy(path, root / "ontologies" / path.name)
        files.append(f"ontologies/{path.name}")
        profile = path.with_name(path.stem + ".profile.yaml")
        if profile.is_file():
            shutil.copy(profile, root / "ontologies" / profile.name)
    manifest = {"name": name, "title": title or f"{name} (made by kgctl domain new)",
                "ontologies": files}
    (root / MANIFEST).write_text(yaml.safe_dump(manifest, sort_keys=False), encoding="utf-8")
    read_manifest(root)  # a bad name fails here
    problems = _compile_problems(load_pack(root))
    if problems:
        raise DataRejected(f"{root}: " + "; ".join(problems))
    click.echo(f"domain {name}: {root / MANIFEST} (use --domain {root})")
