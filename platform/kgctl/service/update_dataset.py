"""Protocol dataset parameters of an update (``using-graph-uri``, ``using-named-graph-uri``).

They act as ``USING`` / ``USING NAMED`` clauses of every ``DELETE/INSERT ... WHERE`` operation;
an update that names its own dataset (``USING``, ``WITH``) as well is a conflict (400). The
update is read by rdflib's SPARQL grammar (kgctl.service.sparql_tree), so a word in a string,
comment, IRI or escaped name is never taken for a keyword; the clauses are written from
validated IRIs (pyoxigraph's N-Triples form of a ``NamedNode``) before each ``WHERE`` located.

>>> with_dataset("INSERT { ?s a <urn:t> } WHERE { ?s a <urn:u> }", ["urn:g"], [])
'INSERT { ?s a <urn:t> } USING <urn:g> WHERE { ?s a <urn:u> }'
>>> with_dataset("WITH <urn:g> DELETE { ?s ?p ?o } WHERE { ?s ?p ?o }", [], ["urn:n"])
Traceback (most recent call last):
...
kgctl.service.execution.HttpProblem: the update names its dataset (USING/WITH) and the request \
does too (using-graph-uri/using-named-graph-uri); give it one way
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from kgctl.service.dataset import Dataset
from kgctl.service.execution import HTTP_BAD_REQUEST, HttpProblem, iri
from kgctl.service.federation import check_remote
from kgctl.service.protocol import UpdateRequest
from kgctl.service.sparql_tree import parse_update


def apply_update(dataset: Dataset, operation: UpdateRequest, allowed: Collection[str], *,
                 base_iri: str | None) -> None:
    """Check the endpoints `operation` would contact, add the protocol's dataset, apply it; in
    the writer process, within the write's time limit (rdflib read 0.7 MB for 10 s)."""
    check_remote(operation.update, allowed, update=True)
    dataset.update(with_dataset(operation.update, operation.using_graphs,
                                operation.using_named_graphs), base_iri=base_iri)


def with_dataset(update: str, using: Sequence[str], using_named: Sequence[str]) -> str:
    """`update` with the protocol's dataset added to each operation that reads a dataset."""
    if not using and not using_named:
        return update
    text, tree = parse_update(update)
    modifies = [op for op in tree["request"] if op.name == "Modify"] if "request" in tree else []
    if any("using" in op or "withClause" in op for op in modifies):
        raise HttpProblem(HTTP_BAD_REQUEST, "the update names its dataset (USING/WITH) and "
                          "the request does too (using-graph-uri/using-named-graph-uri); "
                          "give it one way")
    clauses = " ".join([f"USING {iri(g)}" for g in using]
                       + [f"USING NAMED {iri(g)}" for g in using_named]) + " "
    for at in sorted((op["whereAt"] for op in modifies), reverse=True):
        text = text[:at] + clauses + text[at:]
    return text
