"""Shared builders for the store tests."""

from __future__ import annotations

from kgctl.store.base import CallRecord, Evidence
from kgctl.store.iris import mint_iri
from pyoxigraph import Literal, NamedNode, Triple

EX = "https://example.org/onto/"
TIME = "2024-05-01T12:00:00+00:00"


def step_triples(paper: str, n: int, *, size: int = 3) -> list[Triple]:
    """`size` triples describing step n of a paper (distinct per paper and n)."""
    node = mint_iri(paper, EX + "Step", f"step {n}")
    out = [Triple(node, NamedNode(EX + "hasOrder"), Literal(str(n)))]
    out += [Triple(node, NamedNode(EX + f"p{i}"), Literal(f"value {n}.{i} \"q\" }} # é"))
            for i in range(size - 1)]
    return out


def record(paper: str, n: int, *, seq: int = 0, evidence: bool = False) -> CallRecord:
    return CallRecord(
        paper_id=paper, seq=seq, tool="add_step", arguments={"order": n, "note": "x\ny"},
        iris=(mint_iri(paper, EX + "Step", f"step {n}").value,), time=TIME,
        evidence=Evidence(quote=f"Step {n} was done.", section="2.1", start=n, end=n + 10)
        if evidence else None,
    )
