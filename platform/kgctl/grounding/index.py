"""The label index: harvested labels and identifiers of a reference class, ready to match.

Built from harvest rows ``(entity IRI, field, value)`` where field is ``label:<priority>`` or
``id:<kind>``. Labels are stored normalised and de-duplicated (CSR arrays to their entities),
with their skeletons (the fuzzy tier's form); character trigrams of the skeletons block the
fuzzy search. The index keeps the hook target of the `Naming` it was built with (None: the
generic rules), so the matcher normalises queries the same way.

>>> index = LabelIndex.build([
...     ("ex:a", "label:0", "Ethanol"), ("ex:a", "label:1", "ethyl alcohol"),
...     ("ex:a", "id:cas", "64-17-5"), ("ex:b", "label:0", "Methanol"), ("ex:c", "", None)])
>>> index.entities, index.labels
(['ex:a', 'ex:b', 'ex:c'], ['ethanol', 'ethyl alcohol', 'methanol'])
>>> [index.entities[e] for e, _, _ in index.label_pairs(index.label_id("ethanol"))]
['ex:a']
>>> index.squeezed_ids("ethylalcohol"), index.label_id("ethyl")
([1], None)
>>> index.identifiers["cas"]["64-17-5"]
[0]
>>> LabelIndex.from_state(index.state()).labels == index.labels
True
"""

from __future__ import annotations

import hashlib
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Iterable

import numpy as np

from kgctl.grounding.normalise import naming_of, skeleton, squeeze

Row = tuple[str, str, str | None]
LABEL_FIELD = "label:"
ID_FIELD = "id:"
TRIGRAM = 3
_SEPARATOR = 0
_LABEL_BITS = 32


class LabelIndex:
    """Loaded index of one reference class (state only; matching lives in matcher.py)."""

    def __init__(self, state: dict) -> None:
        self.entities: list[str] = state["entities"]
        self.display: list[str] = state["display"]
        self.labels: list[str] = state["labels"]
        self.skeletons: list[str] = state["skeletons"]
        self.signatures: np.ndarray = state["signatures"]  # hashed protected signature per label
        self.label_ptr: np.ndarray = state["label_ptr"]
        self.pair_entity: np.ndarray = state["pair_entity"]
        self.pair_priority: np.ndarray = state["pair_priority"]
        self.pair_text: list[str] = state["pair_text"]
        self.identifiers: dict[str, dict[str, list[int]]] = state["identifiers"]
        self.tri_keys: np.ndarray = state["tri_keys"]
        self.tri_ptr: np.ndarray = state["tri_ptr"]
        self.tri_labels: np.ndarray = state["tri_labels"]
        # squeezed labels as sorted 64-bit hashes: no per-label objects to rebuild on load
        self.squeeze_hash: np.ndarray = state["squeeze_hash"]
        self.squeeze_label: np.ndarray = state["squeeze_label"]
        self.naming_target: str | None = state["naming"]
        self.naming = naming_of(self.naming_target)
        self.entity_id = {iri: i for i, iri in enumerate(self.entities)}

    @classmethod
    def build(cls, rows: Iterable[Row], *, naming: str | None = None) -> LabelIndex:
        rules = naming_of(naming)
        entities: set[str] = set()
        labels: dict[str, dict[str, tuple[int, str]]] = defaultdict(dict)  # norm -> iri -> best
        identifiers: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
        for subject, field, value in rows:
            entities.add(subject)
            if value is None:
                continue
            if field.startswith(LABEL_FIELD):
                priority = int(field[len(LABEL_FIELD):])
                norm = rules.normalise(value)
                if not norm:
                    continue
                best = labels[norm].get(subject)
                if best is None or (priority, value) < best:
                    labels[norm][subject] = (priority, value)
            elif field.startswith(ID_FIELD):
                kind = field[len(ID_FIELD):]
                canonical = rules.canonical(kind, value)
                if canonical is not None:
                    identifiers[kind][canonical].add(subject)
        order = sorted(entities)
        entity_id = {iri: i for i, iri in enumerate(order)}
        label_list = sorted(labels)
        ptr = [0]
        pair_entity: list[int] = []
        pair_priority: list[int] = []
        pair_text: list[str] = []
        display: dict[int, tuple[int, str]] = {}
        for norm in label_list:
            for iri, (priority, text) in sorted(labels[norm].items()):
                e = entity_id[iri]
                pair_entity.append(e)
                pair_priority.append(priority)
                pair_text.append(text)
                if e not in display or (priority, text) < display[e]:
                    display[e] = (priority, text)
            ptr.append(len(pair_entity))
        squeezed = [squeeze(x) for x in label_list]
        skeletons = [skeleton(x) for x in label_list]
        signatures = np.fromiter((key_hash(rules.signature(x)) for x in label_list),
                                 dtype=np.int64, count=len(label_list))
        tri_keys, tri_ptr, tri_labels = trigram_postings(skeletons)
        hashes = np.fromiter((key_hash(x) for x in squeezed), dtype=np.int64, count=len(squeezed))
        by_hash = np.argsort(hashes, kind="stable")
        return cls({
            "entities": order,
            "display": [display.get(i, (0, iri))[1] for i, iri in enumerate(order)],
            "labels": label_list,
            "skeletons": skeletons, "signatures": signatures,
            "label_ptr": np.asarray(ptr, dtype=np.int64),
            "pair_entity": np.asarray(pair_entity, dtype=np.int32),
            "pair_priority": np.asarray(pair_priority, dtype=np.int8),
            "pair_text": pair_text,
            "identifiers": {k: {v: sorted(entity_id[s] for s in subjects)
                                for v, subjects in sorted(values.items())}
                            for k, values in sorted(identifiers.items())},
            "tri_keys": tri_keys, "tri_ptr": tri_ptr, "tri_labels": tri_labels,
            "squeeze_hash": hashes[by_hash], "squeeze_label": by_hash.astype(np.int32),
            "naming": naming,
        })

    @classmethod
    def from_state(cls, state: dict) -> LabelIndex:
        return cls(state)

    def state(self) -> dict:
        """Plain data for the on-disk cache (dictionaries are rebuilt on load)."""
        return {
            "entities": self.entities, "display": self.display, "labels": self.labels,
            "skeletons": self.skeletons, "signatures": self.signatures,
            "label_ptr": self.label_ptr, "pair_entity": self.pair_entity,
            "pair_priority": self.pair_priority, "pair_text": self.pair_text,
            "identifiers": self.identifiers, "tri_keys": self.tri_keys,
            "tri_ptr": self.tri_ptr, "tri_labels": self.tri_labels,
            "squeeze_hash": self.squeeze_hash, "squeeze_label": self.squeeze_label,
            "naming": self.naming_target,
        }

    def label_id(self, normalised: str) -> int | None:
        """Id of a normalised label (labels are sorted: a binary search, no dictionary)."""
        pos = bisect_left(self.labels, normalised)
        return pos if pos < len(self.labels) and self.labels[pos] == normalised else None

    def squeezed_ids(self, squeezed: str) -> list[int]:
        """Ids of the labels whose squeezed form is `squeezed`."""
        code = key_hash(squeezed)
        lo = int(np.searchsorted(self.squeeze_hash, code, side="left"))
        hi = int(np.searchsorted(self.squeeze_hash, code, side="right"))
        return sorted(int(i) for i in self.squeeze_label[lo:hi]
                      if squeeze(self.labels[int(i)]) == squeezed)

    def label_pairs(self, label_id: int) -> list[tuple[int, int, str]]:
        """(entity, priority, original text) of every entity carrying one normalised label."""
        lo, hi = int(self.label_ptr[label_id]), int(self.label_ptr[label_id + 1])
        return [(int(self.pair_entity[i]), int(self.pair_priority[i]), self.pair_text[i])
                for i in range(lo, hi)]

    def summary(self) -> dict[str, int]:
        return {"entities": len(self.entities), "labels": len(self.labels),
                "label_pairs": len(self.pair_text),
                "identifiers": sum(len(v) for v in self.identifiers.values())}


def key_hash(text: str) -> int:
    """Stable signed 64-bit hash of a text (the cache outlives the process: no hash())."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little",
                          signed=True)


def trigram_codes(text: str) -> set[int]:
    """Integer codes of the byte trigrams of `text` (short texts: the whole text).

    >>> sorted(trigram_codes("abcd")) == sorted({0x616263, 0x626364})
    True
    """
    data = text.encode()
    if len(data) < TRIGRAM:
        data = data.ljust(TRIGRAM, b"\x01")
    return {(data[i] << 16) | (data[i + 1] << 8) | data[i + 2] for i in range(len(data) - 2)}


def trigram_postings(texts: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CSR postings trigram code -> sorted ids of the texts containing it (vectorised)."""
    padded = [t.encode().ljust(TRIGRAM, b"\x01") for t in texts]
    buffer = np.frombuffer(b"\x00".join(padded) + b"\x00\x00", dtype=np.uint8).astype(np.int64)
    codes = (buffer[:-2] << 16) | (buffer[1:-1] << 8) | buffer[2:]
    valid = (buffer[:-2] != _SEPARATOR) & (buffer[1:-1] != _SEPARATOR) & (buffer[2:] != _SEPARATOR)
    lengths = np.fromiter((len(p) + 1 for p in padded), dtype=np.int64, count=len(padded))
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    owner = np.searchsorted(starts, np.arange(len(codes)), side="right") - 1
    pairs = _sorted_unique((codes[valid] << _LABEL_BITS) | owner[valid])
    high = pairs >> _LABEL_BITS
    first = np.flatnonzero(np.concatenate(([True], high[1:] != high[:-1])))
    keys = high[first]
    ptr = np.append(first, len(pairs)).astype(np.int64)
    return keys, ptr, (pairs & ((1 << _LABEL_BITS) - 1)).astype(np.int32)


def _sorted_unique(values: np.ndarray) -> np.ndarray:
    """np.unique by sorting (numpy's hash-based unique is several times slower here)."""
    values = np.sort(values)
    return values[np.concatenate(([True], values[1:] != values[:-1]))] if len(values) else values
