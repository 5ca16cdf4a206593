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

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict
from rapidfuzz import fuzz, process

from kgctl.dedup.keys import is_fragment, locant_signature, name_key

BLOCK_CHARS = 5  # names are compared only inside blocks sharing leading or trailing letters
MAX_BLOCK = 1000  # larger blocks are compared in slices of this size


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


class _Union:
    """Union-find whose roots carry the conflict-key values of their component."""

    def __init__(self, keys: Sequence[dict[str, set[str]]]):
        self.parent = list(range(len(keys)))
        self.keys = [dict(k) for k in keys]

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def conflict(self, a: int, b: int, kinds: Iterable[str]) -> str | None:
        ka, kb = self.keys[self.find(a)], self.keys[self.find(b)]
        for kind in kinds:
            if ka.get(kind) and kb.get(kind) and ka[kind] != kb[kind]:
                return f"{kind}: {sorted(ka[kind])[0]} vs {sorted(kb[kind])[0]}"
        return None

    def union(self, a: int, b: int) -> None:
        ra, rb = sorted((self.find(a), self.find(b)))
        if ra != rb:
            self.parent[rb] = ra
            for kind, values in self.keys[rb].items():
                self.keys[ra].setdefault(kind, set()).update(values)


def _profiles(
    mentions: Sequence[Mention], scope: str
) -> tuple[list[list[Mention]], list[frozenset[str]]]:
    """Group mentions with identical name keys and key values; names that are not evidence of
    identity (building-unit fragments) are left out, paper-scoped names carry their paper."""
    groups: dict[tuple, list[Mention]] = defaultdict(list)
    for m in mentions:
        keys = (name_key(lab) for lab in m.labels if not is_fragment(lab))
        prefix = f"{m.paper}\x1f" if scope == "paper" else ""
        names = frozenset(prefix + k for k in keys if k)
        groups[(names, frozenset(m.keys))].append(m)
    ordered = sorted(groups.items(), key=lambda kv: min(m.iri for m in kv[1]))
    return [g for _, g in ordered], [k[0] for k, _ in ordered]


def _block_keys(name: str) -> tuple[str, str]:
    """Two blocking keys: leading and trailing letters (locants and punctuation ignored), so a
    spelling variant at either end of a name still meets its twin in one block."""
    letters = "".join(ch for ch in name if ch.isalpha())
    return "^" + letters[:BLOCK_CHARS], letters[-BLOCK_CHARS:] + "$"


def _blocks(names: Sequence[str]) -> Iterable[list[int]]:
    by_key: dict[str, list[int]] = defaultdict(list)
    for i, name in enumerate(names):
        for key in _block_keys(name):
            by_key[key].append(i)
    for key in sorted(by_key):
        idx = by_key[key]
        for start in range(0, len(idx), MAX_BLOCK):  # bound the quadratic cost of huge blocks
            yield idx[start:start + MAX_BLOCK]


def _fuzzy_pairs(names: Sequence[str], cutoff: float) -> list[tuple[float, int, int]]:
    pairs: dict[tuple[int, int], float] = {}
    for block in _blocks(names):
        if len(block) < 2:
            continue
        texts = [names[i] for i in block]
        scores = process.cdist(texts, texts, scorer=fuzz.ratio, score_cutoff=cutoff,
                               dtype=np.uint8, workers=-1)
        rows, cols = scores.nonzero()
        for r, c in zip(rows.tolist(), cols.tolist(), strict=True):
            if r != c:
                i, j = sorted((block[r], block[c]))
                pairs[(i, j)] = int(scores[r, c])
    return [(score, i, j) for (i, j), score in pairs.items()]


def cluster(
    mentions: Sequence[Mention],
    thresholds: Thresholds,
    *,
    accept: Iterable[tuple[str, str]] = (),
    reject: Iterable[tuple[str, str]] = (),
) -> Result:
    """Cluster mentions. `accept`/`reject` are reviewed pairs (IRI, IRI) from a person."""
    groups, name_sets = _profiles(mentions, thresholds.name_scope)
    conflict_values = []
    for group in groups:
        values: dict[str, set[str]] = defaultdict(set)
        for kind, value in group[0].keys:
            if kind in thresholds.conflict_keys:
                values[kind].add(value)
        conflict_values.append(values)
    uf = _Union(conflict_values)
    result = Result(clusters=[])
    profile_of = {m.iri: i for i, g in enumerate(groups) for m in g}
    rejected = {frozenset((profile_of.get(a), profile_of.get(b))) for a, b in reject}

    def join(a: int, b: int, score: float, method: str, evidence: str) -> None:
        if uf.find(a) == uf.find(b):
            return
        pair_ids = (groups[a][0].iri, groups[b][0].iri)
        clash = uf.conflict(a, b, thresholds.conflict_keys)
        if clash or frozenset((a, b)) in rejected:
            why = clash or "rejected in review"
            result.refused.append(Pair(a=pair_ids[0], b=pair_ids[1], score=score, method=method,
                                       evidence=f"{evidence}; refused: {why}", accepted=False))
            return
        uf.union(a, b)
        result.decisions.append(Pair(a=pair_ids[0], b=pair_ids[1], score=score, method=method,
                                     evidence=evidence, accepted=True))

    # 1. reviewed acceptances and deterministic keys
    for a, b in sorted(accept):
        if a in profile_of and b in profile_of:
            join(profile_of[a], profile_of[b], 100.0, "review", "accepted in review")
    atoms: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, group in enumerate(groups):
        for kind, value in group[0].keys:
            if kind in thresholds.merge_keys:
                atoms[(kind, value)].append(i)
    for (kind, value), idx in sorted(atoms.items()):
        for other in idx[1:]:
            join(idx[0], other, 100.0, f"key:{kind}", f"same {kind} {value}")
    # 2. exact normalised names
    by_name: dict[str, list[int]] = defaultdict(list)
    for i, names in enumerate(name_sets):
        for name in names:
            by_name[name].append(i)
    for name, idx in sorted(by_name.items()):
        for other in idx[1:]:
            join(idx[0], other, 100.0, "exact-name", f"same name {name!r}")
    # 3. fuzzy names inside blocks, strongest first; locant/charge differences never auto-merge
    distinct = sorted(by_name)
    fuzzy = (sorted(_fuzzy_pairs(distinct, thresholds.review), key=lambda t: (-t[0], t[1], t[2]))
             if thresholds.name_scope == "global" else [])
    for score, i, j in fuzzy:
        a, b = by_name[distinct[i]][0], by_name[distinct[j]][0]
        if uf.find(a) == uf.find(b):
            continue
        evidence = f"{distinct[i]!r} ~ {distinct[j]!r}"
        same_skeleton = locant_signature(distinct[i]) == locant_signature(distinct[j])
        if score >= thresholds.merge and same_skeleton:
            join(a, b, score, "fuzzy", evidence)
        elif frozenset((a, b)) not in rejected and not uf.conflict(a, b, thresholds.conflict_keys):
            result.grey.append(Pair(a=groups[a][0].iri, b=groups[b][0].iri, score=score,
                                    method="fuzzy", evidence=evidence, accepted=False))
    # 4. read out the components
    components: dict[int, list[int]] = defaultdict(list)
    for i in range(len(groups)):
        components[uf.find(i)].append(i)
    for root in sorted(components):
        members = sorted(m.iri for i in components[root] for m in groups[i])
        labels = sorted({lab for i in components[root] for m in groups[i] for lab in m.labels})
        keys = {k: sorted(v)[0] for k, v in uf.keys[root].items() if v}
        result.clusters.append(Cluster(members=members, keys=keys, labels=labels))
    return result
