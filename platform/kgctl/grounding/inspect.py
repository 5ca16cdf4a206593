"""Propose a grounding spec from an endpoint's own evidence.

For a sample of instances of a class, every literal-valued predicate (one hop) and every
identifier-node value (two hops) is counted and classified as identifier-like (values are
well-formed instances of an identifier kind the domain's `Naming` recognises by shape) or
label-like (free text with letters).

>>> classify(["Paris", "Lyon"]), classify(["1", "2"])
('label', None)
"""

from __future__ import annotations

from pyoxigraph import NamedNode

from kgctl.errors import InputError
from kgctl.grounding.normalise import GENERIC, Naming, naming_of
from kgctl.grounding.sources import SparqlSource
from kgctl.store.sparql import term_to_sparql

SAMPLE_VALUES = 20
EXAMPLES = 3
_LABEL_SHARE = 0.5


def propose_spec(source: SparqlSource, target_class: str, *, limit: int,
                 naming: str | None = None) -> dict:
    """Label and identifier candidates of `target_class`; identifiers as `naming` (a hook
    target, None: the generic rules, which recognise no kind) tells them."""
    rules = naming_of(naming)
    cls = term_to_sparql(NamedNode(target_class))
    sample = f"{{ SELECT ?s WHERE {{ ?s a {cls} }} LIMIT {int(limit)} }}"
    one_hop = source.select(f"""SELECT ?p ?v WHERE {{ {sample} ?s ?p ?v FILTER(isLiteral(?v)) }}""")
    two_hop = source.select(f"""SELECT ?p ?q ?v WHERE {{ {sample} ?s ?p ?n .
        ?n ?q ?v FILTER(isIRI(?n) && isLiteral(?v)) }}""")
    if not one_hop and not two_hop:
        raise InputError(f"no instance of <{target_class}> with literal values at {source.name}")
    groups: dict[tuple[str, ...], list[str]] = {}
    for p, v in one_hop:
        groups.setdefault((p,), []).append(v)
    for p, q, v in two_hop:
        groups.setdefault((p, q), []).append(v)
    labels, identifiers, other = [], [], []
    for path, values in sorted(groups.items()):
        finding = {"path": list(path), "count": len(values), "examples": values[:EXAMPLES]}
        kind = classify(values[:SAMPLE_VALUES], rules)
        if kind == "label":
            labels.append(finding)
        elif kind is not None:
            identifiers.append({"kind": kind, **finding})
        else:
            other.append(finding)
    labels.sort(key=lambda f: -f["count"])
    return {"target_class": target_class, "sampled_instances": limit, "labels": labels,
            "identifiers": identifiers, "other_literals": other}


def classify(values: list[str], naming: Naming = GENERIC) -> str | None:
    """'label', an identifier kind, or None (numbers, dates, ...)."""
    for kind in naming.kinds:
        if values and all(naming.canonical(kind, v) is not None for v in values):
            return kind
    letters = sum(any(c.isalpha() for c in v) and not v.replace(".", "").isdigit()
                  for v in values)
    return "label" if values and letters / len(values) > _LABEL_SHARE else None
