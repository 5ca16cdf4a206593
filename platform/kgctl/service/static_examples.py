"""What the query page offers: the example queries, the domain pack's (``examples:`` in its
``domain.yaml``) else a few that fit any knowledge graph, and the ontologies' prefixes.

>>> [e["title"] for e in load_examples("nerre-doping")][:1]
['Named graphs and their sizes']
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from kgctl.errors import InputError
from kgctl.packs import load_pack

GENERIC = Path(__file__).with_name("generic_examples.json")  # for a pack without examples


def load_examples(domain: str | Path | None = None) -> list[dict[str, str]]:
    """Each example of the pack (default: the default pack) as ``{"title", "query"}``."""
    path = load_pack(domain).part("examples") or GENERIC
    try:
        examples = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: not a list of example queries ({exc})") from None
    if not (isinstance(examples, list) and all(
            isinstance(e, dict) and {"title", "query"} <= set(e) for e in examples)):
        raise InputError(f"{path}: expected a JSON list of {{\"title\", \"query\"}} objects")
    return examples


@cache
def ontology_prefixes() -> dict[str, str]:
    """Prefix -> namespace of the bundled ontologies and of kgctl's own graphs and terms
    (loaded once, by the serving process: a query worker answering it first would take
    seconds).

    >>> prefixes = ontology_prefixes()
    >>> prefixes["kgctl"], prefixes["merged"]
    ('https://w3id.org/kgctl/ns#', 'https://w3id.org/kgctl/merged/')
    """
    from kgctl.ontology import default_ir  # loaded on first use
    from kgctl.ontology.loader import STANDARD_PREFIXES
    from kgctl.store.iris import PAPER_BASE
    from kgctl.store.provenance import KG
    from kgctl.store.views import MERGED_BASE

    # kgctl's terms under a name no ontology is likely to take (`kg:` often is)
    return {**STANDARD_PREFIXES, "skos": SKOS, "paper": PAPER_BASE, "merged": MERGED_BASE,
            **default_ir().prefixes, "kgctl": KG}


SKOS = "http://www.w3.org/2004/02/skos/core#"  # the merged view's preferred names
