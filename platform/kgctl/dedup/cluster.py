"""Pure clustering of mentions: deterministic keys, exact names, then blocked fuzzy names.

Union-find over distinct mention *profiles* (same labels and keys), so a million mentions of a
few thousand distinct spellings cost little. A union is refused when the two sides carry different
values of a conflict key (an identifier, a code ...), whatever chain of names links them.

>>> ms = [
...     Mention(iri="p1#ws", paper="p1", labels=("WS", "N,N-weather station")),
...     Mention(iri="p2#ws", paper="p2", labels=("N, N-weather station",)),
...     Mention(iri="p3#rd", paper="p3", labels=("1,3-station road west",),
...             keys=(("code", "R8"),)),
...     Mention(iri="p4#rd", paper="p4", labels=("1,4-station road west",),
...             keys=(("code", "R8"),)),
... ]
>>> result = cluster(ms, Thresholds(conflict_keys=("ref", "code")))
>>> sorted(len(c.members) for c in result.clusters)
[1, 1, 2]
>>> [round(p.score) for p in result.grey]
[95]
"""

from __future__ import annotations

import zlib
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict
from rapidfuzz import fuzz, process

from kgctl.dedup.keys import is_fragment, locant_signature, name_key

BLOCK_CHARS = 5  # names are compared only inside blocks sharing leading or trailing letters
MAX_BLOCK = 1000  # larger blocks are compared in slices
SLICE = 500  # in a larger block, a name whose hash is a multiple of this starts a new slice


class Mention(BaseModel):
    model_config = ConfigDict(frozen=True)
    iri: str
    paper: str
    labels: tuple[str, ...] = ()
    keys: tuple[tuple[str, str], ...] = ()  # (key kind, normalised value)


class Thresholds(BaseModel):
    model_config = ConfigDict(frozen=True)
    merge: float = 95.0  # fuzzy score (0-100) at or above which names merge automatically
    review: float = 88.0  # scores in [review, merge) go to the grey zone for a person to decide
    merge_keys: tuple[str, ...] = ("ref",)  # key kinds whose equal value -> same entity
    conflict_keys: tuple[str, ...] = ("ref",)  # key kinds whose different values forbid it
    # "paper": names link mentions only inside one paper (product labels such as "Cage 1" are
    # paper-local); "global": names link across papers too
    name_scope: Literal["global", "paper"] = "global"


class Pair(BaseModel):
    """A scored decision between two mentions, kept as provenance or put up for review."""

    model_config = ConfigDict(frozen=True)
    a: str
    b: str
    score: float
    method: str  # key:<kind> | exact-name | fuzzy | review
    evidence: str
    accepted: bool


@dataclass
class Cluster:
    members: list[str]
    keys: dict[str, str]
    labels: list[str]


@dataclass
class Result:
    clusters: list[Cluster]
    decisions: list[Pair] = field(default_factory=list)
    grey: list[Pair] = field(default_factory=list)
    refused: list[Pair] = field(default_factory=list)


def clash(ka: dict[str, set[str]], kb: dict[str, set[str]], kinds: Iterable[str]) -> str | None:
    """Why two components' conflict-key values forbid joining them, or None."""
    for kind in kinds:
        if ka.get(kind) and kb.get(kind) and ka[kind] != kb[kind]:
            return f"{kind}: {sorted(ka[kind])[0]} vs {sorted(kb[kind])[0]}"
    return None


class Resolver:
    """Applies evidence in order through a union-find whose roots carry the conflict-key values
    of their component. Both engines feed their evidence here in the same order, so they form
    the same clusters and decisions. Nodes are profile numbers; a root is its component's
    smallest node."""

    def __init__(self, thresholds: Thresholds, rejected: set[frozenset]):
        self.thresholds = thresholds
        self.rejected = rejected
        self.parent: dict[int, int] = {}
        self.keys: dict[int, dict[str, set[str]]] = {}
        self.rep: dict[int, str] = {}  # the IRI a decision names for a node
        self.decisions: list[Pair] = []
        self.grey: list[Pair] = []
        self.refused: list[Pair] = []

    def add(self, node: int, rep: str, keys: Iterable[tuple[str, str]]) -> None:
        if node in self.parent:
            return
        self.parent[node] = node
        self.rep[node] = rep
        values: dict[str, set[str]] = {}
        for kind, value in keys:
            if kind in self.thresholds.conflict_keys:
                values.setdefault(kind, set()).add(value)
        self.keys[node] = values

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def conflict(self, a: int, b: int) -> str | None:
        return clash(self.keys[self.find(a)], self.keys[self.find(b)],
                     self.thresholds.conflict_keys)

    def probe(self, node: int | None) -> dict[str, list[str]] | None:
        """The conflict-key values of a node's component now, sorted (None for None)."""
        if node is None:
            return None
        return {kind: sorted(values) for kind, values in self.keys[self.find(node)].items()}

    def _union(self, a: int, b: int) -> None:
        ra, rb = sorted((self.find(a), self.find(b)))
        self.parent[rb] = ra
        for kind, values in self.keys.pop(rb).items():
            self.keys[ra].setdefault(kind, set()).update(values)

    def _pair(self, a: int, b: int, score: float, method: str, evidence: str,
              accepted: bool) -> Pair:
        return Pair(a=self.rep[a], b=self.rep[b], score=score, method=method,
                    evidence=evidence, accepted=accepted)

    def edge(self, a: int, b: int, score: float, method: str, left: str, right: str) -> None:
        """One piece of evidence: `review`, `key:<kind>` (left: the value), `exact-name` (left:
        the name) or `fuzzy` (left, right: the two names; merges only at the merge threshold
        with the same locants, else goes to review)."""
        if self.find(a) == self.find(b):
            return
        if method == "fuzzy":
            evidence = f"{left!r} ~ {right!r}"
            if score >= self.thresholds.merge and locant_signature(left) == locant_signature(right):
                self._join(a, b, score, method, evidence)
            elif frozenset((a, b)) not in self.rejected and not self.conflict(a, b):
                self.grey.append(self._pair(a, b, score, method, evidence, False))
            return
        evidence = ("accepted in review" if method == "review" else
                    f"same name {left!r}" if method == "exact-name" else
                    f"same {method.removeprefix('key:')} {left}")
        self._join(a, b, score, method, evidence)

    def _join(self, a: int, b: int, score: float, method: str, evidence: str) -> None:
        clash = self.conflict(a, b)
        if clash or frozenset((a, b)) in self.rejected:
            why = clash or "rejected in review"
            self.refused.append(self._pair(a, b, score, method, f"{evidence}; refused: {why}",
                                           False))
            return
        self._union(a, b)
        self.decisions.append(self._pair(a, b, score, method, evidence, True))


def _profiles(
    mentions: Sequence[Mention], scope: str
) -> tuple[list[list[Mention]], list[frozenset[str]]]:
    """Group mentions with identical name keys and key values; names that are not evidence of
    identity (building-unit fragments) are left out, paper-scoped names carry their paper.
    Profiles are ordered by their smallest IRI, members by IRI."""
    groups: dict[tuple, list[Mention]] = defaultdict(list)
    for m in mentions:
        groups[(profile_names(m.labels, m.paper, scope), frozenset(m.keys))].append(m)
    ordered = sorted(((k, sorted(g, key=lambda m: m.iri)) for k, g in groups.items()),
                     key=lambda kv: kv[1][0].iri)
    return [g for _, g in ordered], [k[0] for k, _ in ordered]


def profile_names(labels: Iterable[str], paper: str, scope: str) -> frozenset[str]:
    """The name keys a mention is matched on."""
    keys = (name_key(lab) for lab in labels if not is_fragment(lab))
    prefix = f"{paper}\x1f" if scope == "paper" else ""
    return frozenset(prefix + k for k in keys if k)


def block_keys(name: str) -> tuple[str, str]:
    """Two blocking keys: leading and trailing letters (locants and punctuation ignored), so a
    spelling variant at either end of a name still meets its twin in one block."""
    letters = "".join(filter(str.isalpha, name))
    return "^" + letters[:BLOCK_CHARS], letters[-BLOCK_CHARS:] + "$"


def _blocks(names: Sequence[str]) -> Iterable[list[int]]:
    by_key: dict[str, list[int]] = defaultdict(list)
    for i, name in enumerate(names):
        for key in block_keys(name):
            by_key[key].append(i)
    for key in sorted(by_key):
        idx = by_key[key]
        if len(idx) <= MAX_BLOCK:
            yield idx
            continue
        start = 0
        for pos in range(1, len(idx)):
            if starts_slice(names[idx[pos]]):
                yield idx[start:pos]
                start = pos
        yield idx[start:]


def starts_slice(name: str) -> bool:
    """Whether a name starts a new slice of a block of more than MAX_BLOCK names (sorted). The
    cut depends on the name alone, so a new name changes only the slice it falls in (slices of
    500 names on average bound the quadratic cost of huge blocks)."""
    return zlib.crc32(name.encode()) % SLICE == 0


def block_scores(texts: Sequence[str], cutoff: float) -> Iterable[tuple[int, int, int]]:
    """(row, column, score) of the pairs of one block scoring at least `cutoff`, row < column."""
    scores = process.cdist(texts, texts, scorer=fuzz.ratio, score_cutoff=cutoff,
                           dtype=np.uint8, workers=-1)
    rows, cols = np.triu(scores, 1).nonzero()
    return zip(rows.tolist(), cols.tolist(), scores[rows, cols].tolist(), strict=True)


def _fuzzy_pairs(names: Sequence[str], cutoff: float) -> list[tuple[float, int, int]]:
    pairs: dict[tuple[int, int], float] = {}
    for block in _blocks(names):
        if len(block) > 1:
            for r, c, score in block_scores([names[i] for i in block], cutoff):
                pairs[(block[r], block[c])] = score
    return [(score, i, j) for (i, j), score in pairs.items()]


def cluster(
    mentions: Sequence[Mention],
    thresholds: Thresholds,
    *,
    accept: Iterable[tuple[str, str]] = (),
    reject: Iterable[tuple[str, str]] = (),
    fuzzy: Iterable[tuple[float, str, str]] | None = None,
    probes: dict[tuple[str, str], tuple | None] | None = None,
) -> Result:
    """Cluster mentions in memory. `accept`/`reject` are reviewed pairs (IRI, IRI) from a
    person; `fuzzy`: the scored name pairs (score, name, later name) if found beforehand (a pair
    with one name not among these mentions is only probed). `probes`: fuzzy pairs (name, later
    name) whose value is set to the conflict keys of both sides' components at the pair's turn
    (None for a name not among these mentions)."""
    groups, name_sets = _profiles(mentions, thresholds.name_scope)
    profile_of = {m.iri: i for i, g in enumerate(groups) for m in g}
    rejected = {frozenset((profile_of.get(a), profile_of.get(b))) for a, b in reject}
    resolver = Resolver(thresholds, rejected)
    for i, group in enumerate(groups):
        resolver.add(i, group[0].iri, group[0].keys)
    # 1. reviewed acceptances and deterministic keys
    for a, b in sorted(accept):
        if a in profile_of and b in profile_of:
            resolver.edge(profile_of[a], profile_of[b], 100.0, "review", "", "")
    atoms: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, group in enumerate(groups):
        for kind, value in group[0].keys:
            if kind in thresholds.merge_keys:
                atoms[(kind, value)].append(i)
    for (kind, value), idx in sorted(atoms.items()):
        for other in idx[1:]:
            resolver.edge(idx[0], other, 100.0, f"key:{kind}", value, "")
    # 2. exact normalised names
    by_name: dict[str, list[int]] = defaultdict(list)
    for i, names in enumerate(name_sets):
        for name in names:
            by_name[name].append(i)
    for name, idx in sorted(by_name.items()):
        for other in idx[1:]:
            resolver.edge(idx[0], other, 100.0, "exact-name", name, "")
    # 3. fuzzy names inside blocks, strongest first; locant/charge differences never auto-merge
    distinct = sorted(by_name)
    if thresholds.name_scope == "paper":
        pairs = []
    elif fuzzy is None:
        pairs = _fuzzy_pairs(distinct, thresholds.review)
    else:
        fuzzy = [(score, a, b) for score, a, b in fuzzy if a in by_name or b in by_name]
        distinct = sorted(by_name.keys() | {n for _, a, b in fuzzy for n in (a, b)})
        nid = {name: i for i, name in enumerate(distinct)}
        pairs = [(score, nid[a], nid[b]) for score, a, b in fuzzy]
    for score, i, j in sorted(pairs, key=lambda t: (-t[0], t[1], t[2])):
        a, b = (by_name[distinct[k]][0] if distinct[k] in by_name else None for k in (i, j))
        if probes is not None and (distinct[i], distinct[j]) in probes:
            probes[distinct[i], distinct[j]] = (resolver.probe(a), resolver.probe(b))
        if a is not None and b is not None:
            resolver.edge(a, b, score, "fuzzy", distinct[i], distinct[j])
    # 4. read out the components
    components: dict[int, list[int]] = defaultdict(list)
    for i in range(len(groups)):
        components[resolver.find(i)].append(i)
    result = Result(clusters=[], decisions=resolver.decisions, grey=resolver.grey,
                    refused=resolver.refused)
    for root in sorted(components):
        members = sorted(m.iri for i in components[root] for m in groups[i])
        labels = sorted({lab for i in components[root] for m in groups[i] for lab in m.labels})
        keys = {k: sorted(v)[0] for k, v in resolver.keys[root].items() if v}
        result.clusters.append(Cluster(members=members, keys=keys, labels=labels))
    return result
