"""The ontology options shared by the commands that compile a T-Box (`--domain`, `--ontology`,
`--profile`, `--no-profile`, `--imports`, `--ignore-import`, `--lang`).

Without `--ontology` the T-Boxes of the domain pack (`--domain`, default: the default pack) are
used.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from kgctl.errors import InputError
from kgctl.ontology.graph import LABEL_LANGUAGES
from kgctl.ontology.ir import OntologyIR
from kgctl.packs import domain_option

_PATH = click.Path(path_type=Path)


def import_options(func: Callable) -> Callable:
    """--imports, --ignore-import and --lang (how a T-Box is read)."""
    options = [
        click.option("--imports", "imports", multiple=True, type=_PATH, metavar="PATH",
                     help="catalog-v001.xml, T-Box file (matched by its ontology IRI) or "
                          "folder (files matched by name) where owl:imports are looked for "
                          "(repeatable; never the network)."),
        click.option("--ignore-import", "ignore_imports", multiple=True, metavar="IRI",
                     help="skip owl:imports whose IRI starts with this (repeatable)."),
        click.option("--lang", "languages", multiple=True, metavar="TAG",
                     help="preferred label language, in order (repeatable; default: en, "
                          "then untagged)."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def ontology_options(func: Callable) -> Callable:
    """--ontology / --profile / --no-profile plus the import options."""
    options = [
        click.option("--ontology", "ontologies", multiple=True, type=_PATH, metavar="FILE",
                     help="T-Box file(s) instead of the domain pack's (repeatable)."),
        click.option("--profile", "profiles", multiple=True, type=_PATH, metavar="FILE",
                     help="profile YAML (repeatable; default: X.profile.yaml beside X.ttl)."),
        click.option("--no-profile", is_flag=True, help="compile the OWL axioms alone."),
    ]
    func = import_options(func)
    for option in reversed(options):
        func = option(func)
    return domain_option(func)


def ir_from_options(options: dict[str, Any]) -> OntologyIR | None:
    """Pops the ontology options from a command's keyword arguments and compiles them: the
    --ontology files, else the --domain pack's T-Boxes; None when neither is given (the
    caller's default applies). A caller that needs the pack pops `domain` first."""
    from kgctl.ontology.loader import load_ir, pack_ir

    domain = options.pop("domain", None)
    ontologies = options.pop("ontologies", ())
    profiles, no_profile = options.pop("profiles", ()), options.pop("no_profile", False)
    reading = read_options(options)
    if not ontologies:
        if profiles or no_profile or reading["imports"] or reading["ignore_imports"]:
            raise InputError("--profile, --no-profile and the import options need --ontology")
        return None if domain is None else pack_ir(domain)
    if domain is not None:
        raise InputError("give --domain or --ontology, not both")
    return load_ir(list(ontologies), profile_paths=[] if no_profile else (list(profiles) or None),
                   **reading)


def read_options(options: dict[str, Any]) -> dict[str, Any]:
    """Pops --imports / --ignore-import / --lang into load_ir keyword arguments."""
    return {"imports": list(options.pop("imports", ())),
            "ignore_imports": list(options.pop("ignore_imports", ())),
            "languages": tuple(options.pop("languages", ())) or LABEL_LANGUAGES}
