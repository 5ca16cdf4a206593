"""Matching names against a label index: identifiers, then exact, then fuzzy.

Tiers, first decisive one wins: a well-formed identifier (of a kind the grounding spec declares)
that points at one entity, when the index's `Naming` calls it decisive (a domain may say an
identifier only ranks candidates); the normalised name equal to a label; the squeezed name (no
spaces or hyphens) equal to a label; rapidfuzz over the trigram-blocked skeletons of the labels
(also without brackets) with a score threshold and a margin. A fuzzy candidate *agrees* when its
protected signature (the parts the Naming says must not differ, numbers by default) equals the
name's: agreeing candidates rank first, only they count as rivals for the margin ("route 65" is
no rival of "route 66"), and a match must agree. Abbreviations come from the pack's table.

>>> from kgctl.grounding.index import LabelIndex
>>> index = LabelIndex.build([
...     ("ex:65", "label:0", "Route 65 north"), ("ex:66", "label:0", "Route 66 north"),
...     ("ex:gb", "label:0", "Great Britain"), ("ex:gb", "id:iso", "GB")])
>>> matcher = Matcher(index, Thresholds(fuzzy_score=90, margin=3, candidates=10))
>>> matcher.lookup("route  66 North").match.iri
'ex:66'
>>> matcher.lookup("Route 66 nort").match.iri
'ex:66'
>>> matcher.lookup("Route 67 north").match is None
True
>>> [c.iri for c in matcher.lookup_identifier("iso", " GB ")]
['ex:gb']
"""

from __future__ import annotations

import threading
import unicodedata
from collections.abc import Iterable

import numpy as np
from pydantic import BaseModel, ConfigDict
from rapidfuzz import fuzz, process

from kgctl.errors import InputError
from kgctl.grounding.abbreviations import expansions
from kgctl.grounding.index import LabelIndex, key_hash, trigram_codes
from kgctl.grounding.normalise import GENERIC, Naming, skeleton, squeeze
from kgctl.grounding.spec import Thresholds

MAX_NAME_CHARS = 1000
SCORE_IDENTIFIER = 100.0
SCORE_EXACT = 100.0
SCORE_SQUEEZED = 99.0
# trigram blocking: how many of the rarest query trigrams to read and how many labels to score
RARE_TRIGRAMS = 12  # < 256: hits are counted in uint8
BLOCK_LABELS = 300
# ...but stop adding trigrams once this many postings are read (after at least MIN_TRIGRAMS)
POSTING_BUDGET = 20_000
MIN_TRIGRAMS = 4
# decisive methods of the generic tiers and of extension tiers (structure, minted), strongest
# first; used to weigh votes of several surface names. An identifier kind weighs what the index's
# Naming gives it (IDENTIFIER_WEIGHT when it gives none).
METHOD_WEIGHT = {"structure": 4, "minted": 4, "abbreviation": 3, "exact": 3, "squeezed": 2,
                 "fuzzy": 1}
IDENTIFIER_WEIGHT = 5
# (score, -priority, method, matched text, protected signature agrees with the name)
Value = tuple[float, int, str, str, bool]
FUZZY_SCORER = fuzz.ratio  # chosen by scripts/bench_grounding.py (see docs/grounding.md)


class Candidate(BaseModel):
    model_config = ConfigDict(frozen=True)
    iri: str
    label: str  # the entity's preferred label
    score: float
    # an identifier kind | abbreviation | exact | squeezed | fuzzy, or a method of a pack's
    # extension tier (structure, minted), or hydrate (the Naming's parent of the name matched)
    method: str
    matched: str  # the reference label or identifier value that matched
    agrees: bool  # locants, charges and stereo descriptors agree with the name's


class LookupResult(BaseModel):
    model_config = ConfigDict(frozen=True)
    name: str
    match: Candidate | None
    candidates: tuple[Candidate, ...]
    reason: str  # why the match was accepted or not


class Matcher:
    def __init__(self, index: LabelIndex, thresholds: Thresholds, *,
                 scorer=FUZZY_SCORER) -> None:
        self.index = index
        self.thresholds = thresholds
        self.scorer = scorer
        self.naming = index.naming  # normalise queries as the labels were
        # scratch trigram-hit counter per label, zero between lookups
        self._hits = np.zeros(len(index.labels), dtype=np.uint8)
        self._lengths = np.fromiter(map(len, index.skeletons), dtype=np.int32,
                                    count=len(index.skeletons))
        self._hits_lock = threading.Lock()

    def lookup(self, name: str, *, k: int | None = None) -> LookupResult:
        """The accepted match of one name (or None) and its ranked candidates."""
        check_name(name)
        k = k or self.thresholds.candidates
        best: dict[int, Value] = {}  # entity -> (score, -priority, method, matched, agrees)
        decided = self._identifier_tier(name, best)
        for surface, method in [(name, "exact"), *((e, "abbreviation") for e in expansions(name))]:
            self._exact_tier(self.naming.normalise(surface), method, best)
        norm = self.naming.normalise(name)
        if not norm:
            raise InputError(f"name {name!r} is empty after normalisation")
        self._fuzzy_tier(norm, best)
        ranked = sorted(best.items(), key=lambda kv: (
            tuple(-x for x in self._rank(kv[1])), self.index.entities[kv[0]]))
        candidates = tuple(self._candidate(e, v) for e, v in ranked[:k])
        match, reason = self._decide(ranked, decided)
        return LookupResult(name=name, match=match, candidates=candidates, reason=reason)

    def lookup_identifier(self, kind: str, value: str) -> list[Candidate]:
        canonical = self.naming.canonical(kind, value)
        if canonical is None:
            raise InputError(f"{value!r} is not a well-formed {kind}")
        hits = self.index.identifiers.get(kind, {}).get(canonical, [])
        return [self._candidate(e, (SCORE_IDENTIFIER, 0, kind, canonical, True)) for e in hits]

    # ---- tiers ----------------------------------------------------------------------------

    def _identifier_tier(self, name: str, best: dict) -> str | None:
        decided = None
        for kind, value in self.naming.identifiers_in(name.strip()).items():
            hits = self.index.identifiers.get(kind, {}).get(value, [])
            for e in hits:
                self._keep(best, e, (SCORE_IDENTIFIER, 0, kind, value, True))
            if len(hits) == 1 and decided is None and self.naming.decisive(kind, value):
                decided = kind
        return decided

    def _exact_tier(self, norm: str, method: str, best: dict) -> None:
        label_id = self.index.label_id(norm)
        label_ids = [label_id] if label_id is not None else []
        tier = method
        if not label_ids:
            label_ids = self.index.squeezed_ids(squeeze(norm))
            tier = "squeezed" if method == "exact" else method
        score = SCORE_EXACT if tier != "squeezed" else SCORE_SQUEEZED
        for label_id in label_ids:
            for e, priority, text in self.index.label_pairs(label_id):
                self._keep(best, e, (score, -priority, tier, text, True))

    def _fuzzy_tier(self, norm: str, best: dict) -> None:
        query = skeleton(norm)
        block = self._block(query)
        if not len(block):
            return
        choices = [self.index.skeletons[i] for i in block.tolist()]
        limit = self.thresholds.candidates * 2
        signature = key_hash(self.naming.signature(norm))
        for _, score, pos in process.extract(query, choices, scorer=self.scorer, limit=limit):
            label_id = int(block[pos])
            agrees = bool(self.index.signatures[label_id] == signature)
            for e, priority, text in self.index.label_pairs(label_id):
                self._keep(best, e, (float(score), -priority, "fuzzy", text, agrees))

    def _block(self, query: str) -> np.ndarray:
        """Label ids whose skeletons share the most of the query skeleton's rarest trigrams."""
        tri = self.index
        if not len(tri.tri_keys):
            return np.empty(0, dtype=np.int32)
        codes = np.fromiter(sorted(trigram_codes(query)), dtype=np.int64)
        pos = np.minimum(np.searchsorted(tri.tri_keys, codes), len(tri.tri_keys) - 1)
        known = tri.tri_keys[pos] == codes
        pos, sizes = pos[known], (tri.tri_ptr[pos + 1] - tri.tri_ptr[pos])[known]
        lists, read = [], 0
        for i in np.argsort(sizes, kind="stable")[:RARE_TRIGRAMS]:
            postings = tri.tri_labels[tri.tri_ptr[pos[i]]:tri.tri_ptr[pos[i] + 1]]
            if len(lists) >= MIN_TRIGRAMS and read + len(postings) > POSTING_BUDGET:
                break  # the rest are common trigrams: counting them costs more than it tells
            if len(postings):
                lists.append(postings)
                read += len(postings)
        if not lists:
            return np.empty(0, dtype=np.int32)
        return self._most_shared(lists, len(query))

    def _most_shared(self, lists: list[np.ndarray], length: int) -> np.ndarray:
        """The BLOCK_LABELS label ids found in most posting lists, sorted.

        Ties at the cut-off go to the labels closest in length to the query (a ratio score
        is bounded by the length ratio), then to the lower id.

        Hits are counted in a scratch array; only the ids at or above the cut-off count are
        de-duplicated, so a lookup sorts a few thousand ids instead of every posting read.
        """
        postings = np.concatenate(lists)
        with self._hits_lock:
            for one in lists:
                self._hits[one] += 1  # one trigram's postings hold each label once
            hits = self._hits[postings]
            self._hits[postings] = 0
        # an id with c hits occurs c times in `postings`: count ids per hit count, then find
        # the cut-off count at which the block fills up
        per_count = np.bincount(hits, minlength=len(lists) + 1)[1:] // np.arange(1, len(lists) + 1)
        at_least = np.cumsum(per_count[::-1])  # at_least[j]: ids with >= len(lists) - j hits
        if at_least[-1] <= BLOCK_LABELS:
            return np.unique(postings)
        cut = len(lists) - int(np.argmax(at_least >= BLOCK_LABELS))
        ids, counts = np.unique(postings[hits >= cut], return_counts=True)
        above, tied = ids[counts > cut], ids[counts == cut]
        closest = np.argsort(np.abs(self._lengths[tied] - length), kind="stable")
        return np.sort(np.concatenate((above, tied[closest[:BLOCK_LABELS - len(above)]])))

    # ---- decision -------------------------------------------------------------------------

    def _decide(self, ranked: list, decided: str | None) -> tuple[Candidate | None, str]:
        if not ranked:
            return None, "no candidate"
        (top, value), runner = ranked[0], (ranked[1] if len(ranked) > 1 else None)
        score, _, method, _, agrees = value
        if method not in METHOD_WEIGHT:  # an identifier kind
            if decided == method:
                return self._candidate(top, value), f"unique {method}"
            return None, (f"{method} of several entities" if runner and runner[1][2] == method
                          else f"{method} alone does not decide")
        if method in ("exact", "squeezed", "abbreviation"):
            tied = runner is not None and self._rank(runner[1]) == self._rank(value)
            if tied:
                return None, f"{method} label shared by several entities"
            return self._candidate(top, value), f"{method} label"
        if not agrees:
            return None, "locants, charges or stereo descriptors differ from every close label"
        rival = max((v[0] for _, v in ranked[1:] if v[4]), default=0.0)
        margin = score - rival
        if score < self.thresholds.fuzzy_score:
            return None, f"best score {score:.1f} below threshold {self.thresholds.fuzzy_score}"
        if margin < self.thresholds.margin:
            return None, f"margin {margin:.1f} below {self.thresholds.margin}"
        return self._candidate(top, value), f"fuzzy score {score:.1f}, margin {margin:.1f}"

    def _rank(self, value: Value) -> tuple[int, bool, float, int]:
        score, neg_priority, method, _, agrees = value
        return weight(method, self.naming), agrees, score, neg_priority

    def _keep(self, best: dict, entity: int, value: Value) -> None:
        old = best.get(entity)
        if old is None or self._rank(value) > self._rank(old):
            best[entity] = value

    def _candidate(self, entity: int, value: Value) -> Candidate:
        score, _, method, matched, agrees = value
        return Candidate(iri=self.index.entities[entity], label=self.index.display[entity],
                         score=round(score, 2), method=method, matched=matched, agrees=agrees)


def weight(method: str, naming: Naming) -> int:
    """The vote weight of a match method (an identifier kind's from `naming`)."""
    if method in METHOD_WEIGHT:
        return METHOD_WEIGHT[method]
    return naming.weights.get(method, IDENTIFIER_WEIGHT)


def vote(results: Iterable[LookupResult], naming: Naming = GENERIC
         ) -> tuple[Candidate | None, dict[str, float]]:
    """Combine the accepted matches of all surface names of one entity.

    Each accepted match votes with its method weight; ties go to the higher summed score, then
    to the smaller IRI, so the outcome is deterministic. The winner is reported as found by its
    strongest method.
    """
    tally: dict[str, list] = {}
    for result in results:
        if result.match is None:
            continue
        m = result.match
        entry = tally.setdefault(m.iri, [0.0, 0.0, m])
        entry[0] += weight(m.method, naming)
        entry[1] += m.score
        if weight(m.method, naming) > weight(entry[2].method, naming):
            entry[2] = m  # the winner is reported with its strongest method
    if not tally:
        return None, {}
    winner = min(tally.items(), key=lambda kv: (-kv[1][0], -kv[1][1], kv[0]))
    return winner[1][2], {iri: v[0] for iri, v in sorted(tally.items())}


def check_name(name: str) -> None:
    """Refuse names nothing can be called: empty, longer than MAX_NAME_CHARS, control characters."""
    if not isinstance(name, str) or not name.strip():
        raise InputError("empty name")
    if len(name) > MAX_NAME_CHARS:
        raise InputError(f"name of {len(name)} characters is longer than {MAX_NAME_CHARS}")
    bad = sorted({f"U+{ord(c):04X}" for c in name if unicodedata.category(c) == "Cc"})
    if bad:
        raise InputError(f"name contains control characters ({', '.join(bad)})")

