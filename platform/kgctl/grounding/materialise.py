"""Write grounding decisions into paper graphs: owl:sameAs links or IRI rewriting.

With a mint tier (a pack's extension), an entity that nothing grounds may get a new reference
entity of its own (method `minted`), linked by sameAs like any other match.

When no name matches, the index's Naming may give a broader parent of a name (a hydrate of
unstated water content: its anhydrous parent). When the parent grounds, the entity is linked to
it by `kg:hydrateOf` (never sameAs, never rewritten), and the decision's method says `hydrate`.

Each decision (names, candidates, scores, method) is stored as the provenance record of the
write. Re-running gives the same graph: links that are already present are not written again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from pydantic import BaseModel, ConfigDict
from pyoxigraph import NamedNode, Triple

from kgctl.errors import InputError
from kgctl.grounding.matcher import Candidate, LookupResult, Matcher, vote, weight
from kgctl.grounding.spec import GroundingSpec, SourceClass
from kgctl.store import CallRecord, GraphStore, utc_now
from kgctl.store.sparql import term_to_sparql

# an extra tier over all names of one entity (kgctl.chemistry.tier.StructureTier.lookup)
NamesTier = Callable[[Sequence[str]], LookupResult | None]
# the last resort for (paper, entity, names) no tier grounds: a new reference entity minted
# from agreeing evidence (kgctl.chemistry.mint.Minter.mint), or None
MintTier = Callable[[str, str, Sequence[str]], Candidate | None]
OWL_SAME_AS = NamedNode("http://www.w3.org/2002/07/owl#sameAs")
HYDRATE_OF = NamedNode("https://w3id.org/kgctl/ns#hydrateOf")
TOOL_NAME = "ground"


class Decision(BaseModel):
    model_config = ConfigDict(frozen=True)
    paper: str
    entity: str
    source_class: str
    names: tuple[str, ...]
    match: Candidate | None
    votes: dict[str, float]
    results: tuple[LookupResult, ...]
    written: bool = False


def source_entities(store: GraphStore, paper: str, source: SourceClass
                    ) -> Iterator[tuple[str, list[str]]]:
    """(entity IRI, surface names) of one source class in one paper graph."""
    cls = term_to_sparql(NamedNode(source.cls))
    names: dict[str, list[str]] = {}
    for field in (*source.labels, *source.identifiers):
        pred = term_to_sparql(NamedNode(field.path[0]))
        query = f"SELECT ?e ?v WHERE {{ ?e a {cls} . ?e {pred} ?v }}"
        for row in store.query(query, paper_id=paper):
            values = [row["v"].value]
            split = getattr(field, "split", None)
            if split:
                values = [v.strip() for v in values[0].split(split)]
            names.setdefault(row["e"].value, [])
            names[row["e"].value].extend(v for v in values if v.strip())
    for entity in sorted(names):
        yield entity, list(dict.fromkeys(names[entity]))


def decide(matcher: Matcher, paper: str, source: SourceClass, entity: str,
           names: list[str], *, structures: NamesTier | None = None,
           mint: MintTier | None = None) -> Decision:
    results = _lookups(matcher, names)
    parsed = structures(names) if structures is not None else None
    if parsed is not None:
        results.append(parsed)
    match, votes = vote(results, matcher.naming)
    if match is None:
        match, votes = _hydrate_of(matcher, names)
    if match is None and mint is not None:
        match = mint(paper, entity, names)
        votes = {match.iri: weight(match.method, matcher.naming)} if match else {}
    return Decision(paper=paper, entity=entity, source_class=source.cls, names=tuple(names),
                    match=match, votes=votes, results=tuple(results))


def _lookups(matcher: Matcher, names: list[str]) -> list[LookupResult]:
    results = []
    for name in names:
        try:
            results.append(matcher.lookup(name))
        except InputError:  # e.g. control characters: that name does not vote
            continue
    return results


def _hydrate_of(matcher: Matcher, names: list[str]) -> tuple[Candidate | None, dict[str, float]]:
    parents = [p for n in names if (p := matcher.naming.parent(n))]
    match, votes = vote(_lookups(matcher, parents), matcher.naming)
    return (match.model_copy(update={"method": "hydrate"}) if match else None), votes


def materialise(store: GraphStore, matcher: Matcher, spec: GroundingSpec, papers: list[str], *,
                mode: str = "sameas", dry_run: bool = False,
                structures: NamesTier | None = None,
                mint: MintTier | None = None) -> list[Decision]:
    """Ground every source entity of `papers`; write links unless `dry_run` (a mint tier is
    given its own dry-run setting)."""
    decisions = []
    for paper in papers:
        for source in spec.sources:
            for entity, names in source_entities(store, paper, source):
                decision = decide(matcher, paper, source, entity, names,
                                  structures=structures, mint=mint)
                if decision.match is not None and not dry_run:
                    written = _write(store, decision, mode=mode)
                    decision = decision.model_copy(update={"written": written})
                decisions.append(decision)
    return decisions


def _write(store: GraphStore, decision: Decision, *, mode: str) -> bool:
    local, target = NamedNode(decision.entity), NamedNode(decision.match.iri)
    if mode == "sameas" or decision.match.method == "hydrate":
        link = Triple(local, HYDRATE_OF if decision.match.method == "hydrate" else OWL_SAME_AS,
                      target)
        # only the entity's own links are read (the paper's every triple, read per entity, made
        # linking a paper quadratic)
        if link in store.triples(decision.paper, subject=local, predicate=link.predicate):
            return False
        insert, delete = [link], []
    else:
        delete = [t for t in store.triples(decision.paper) if local in (t.subject, t.object)]
        if not delete:
            return False
        insert = [Triple(target if t.subject == local else t.subject, t.predicate,
                         target if t.object == local else t.object) for t in delete]
    record = CallRecord(
        paper_id=decision.paper, seq=0, tool=TOOL_NAME, time=utc_now(),
        arguments={"mode": mode, **decision.model_dump(
            mode="json", include={"entity", "names", "match", "votes"}),
                   "candidates": [r.model_dump(mode="json", include={"name", "candidates",
                                                                     "reason"})
                                  for r in decision.results]},
        iris=(decision.entity, decision.match.iri))
    store.write(decision.paper, insert=insert, delete=delete, record=record)
    return True


