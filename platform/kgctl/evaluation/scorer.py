"""Slot-level scorer: optimal one-to-one record alignment, then exact slot matches.

Records of the same list are aligned by ``scipy.optimize.linear_sum_assignment`` so that the
number of matched slots (children included) is maximal; the order of records, steps
included, does not matter. In an aligned pair a slot is TP when both agree, FP when only the
prediction has it, FN when only the gold has it, and FP + FN when both have different values;
a slot empty on both sides counts nothing. Unaligned records count all their slots as FN
(gold) or FP (prediction).

>>> from kgctl.evaluation.slots import Node
>>> gold = Node("r", children={"x": [Node("x", {"a": "1", "b": "2"}), Node("x", {"a": "3"})]})
>>> pred = Node("r", children={"x": [Node("x", {"a": "3"}), Node("x", {"a": "1", "b": "9"})]})
>>> c = align(gold, pred)
>>> (c.total.tp, c.total.fp, c.total.fn)
(2, 1, 1)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
from pydantic import BaseModel, ConfigDict

from kgctl.evaluation.slots import Node, Value, slots_agree

# (field key, gold value, predicted value) -> do they agree; the strict rule ignores the key
Agree = Callable[[str, Value, Value], bool]


def strict_agree(key: str, gold: Value, pred: Value) -> bool:
    """The strict rule: canonical values equal (name lists share a name)."""
    return slots_agree(gold, pred)


@dataclass(frozen=True)
class ScoringRule:
    """How slots are compared and counted: one named, versioned scorer."""

    name: str
    agree: Agree = strict_agree
    uncounted: Mapping[str, frozenset[str]] = field(default_factory=dict)  # by category
    empty: float | None = None  # a 0/0 precision or recall; None: 1.0 (nothing expected)
    note: str = ""  # one sentence for reports: what the rule compares and counts


STRICT_NOTE = "canonical values equal, formulas case-sensitive, 0/0 counts 1"


STRICT = ScoringRule(name="strict/1", note=STRICT_NOTE)


class Counts(BaseModel):
    """TP/FP/FN with the derived precision, recall and F1 (1.0 when nothing was expected)."""

    model_config = ConfigDict(frozen=True)
    tp: int = 0
    fp: int = 0
    fn: int = 0

    def __add__(self, other: Counts) -> Counts:
        return Counts(tp=self.tp + other.tp, fp=self.fp + other.fp, fn=self.fn + other.fn)

    @property
    def precision(self) -> float:
        return ratio(self.tp, self.tp + self.fp)

    @property
    def recall(self) -> float:
        return ratio(self.tp, self.tp + self.fn)

    @property
    def f1(self) -> float:
        return f1(self.precision, self.recall) if self.tp else ratio(0, self.fp + self.fn)

    def summary(self, *, empty: float | None = None) -> dict[str, float | int]:
        """Counts and P/R/F1; `empty` replaces the 1.0 of a 0/0 ratio (0.0 in the published
        protocol's arithmetic).

        >>> Counts().summary(empty=0.0)["precision"], Counts().summary()["precision"]
        (0.0, 1.0)
        """
        if empty is None:
            p, r, f = self.precision, self.recall, self.f1
        else:
            p = self.tp / (self.tp + self.fp) if self.tp + self.fp else empty
            r = self.tp / (self.tp + self.fn) if self.tp + self.fn else empty
            f = f1(p, r)
        return {"tp": self.tp, "fp": self.fp, "fn": self.fn, "precision": p, "recall": r,
                "f1": f}


@dataclass
class Alignment:
    """Counts of one aligned pair (or list): in total and per field path."""

    total: Counts = field(default_factory=Counts)
    fields: Counter = field(default_factory=Counter)  # (path, "tp"|"fp"|"fn") -> n

    def add(self, path: str, kind: str, n: int = 1) -> None:
        if n:
            self.fields[(path, kind)] += n
            self.total = self.total + Counts(**{kind: n})

    def merge(self, other: Alignment) -> None:
        self.total = self.total + other.total
        self.fields.update(other.fields)


def align(gold: Node | None, pred: Node | None, *, agree: Agree = strict_agree,
          uncounted: frozenset[str] = frozenset()) -> Alignment:
    """Counts of one record pair; None on a side means the record is unmatched. Slots named
    in `uncounted` steer the alignment but add no counts."""
    return _Aligner(agree, uncounted).align(gold, pred)


class _Aligner:
    """One alignment of two record trees under one rule. A pair's matched-slot count is kept
    (by the nodes' identity, alive for the whole call): counting a pair counts the best
    pairing of its children, which aligning the pair asks for again."""

    def __init__(self, agree: Agree, uncounted: frozenset[str]) -> None:
        self.agree, self.uncounted = agree, uncounted
        self.matched: dict[tuple[int, int], int] = {}

    def align(self, gold: Node | None, pred: Node | None) -> Alignment:
        result = Alignment()
        reference = gold or pred
        if reference is None:
            return result
        keys = sorted(set(gold.slots if gold else ()) | set(pred.slots if pred else ()))
        for key in keys:
            g = gold.slots.get(key) if gold else None
            p = pred.slots.get(key) if pred else None
            path = f"{reference.path}.{key}" if reference.path else key
            if key in self.uncounted:
                continue
            if g is not None and p is not None and self.agree(key, g, p):
                result.add(path, "tp")
            else:
                result.add(path, "fn", g is not None)
                result.add(path, "fp", p is not None)
        child_keys = sorted(set(gold.children if gold else ())
                            | set(pred.children if pred else ()))
        for key in child_keys:
            result.merge(self.align_lists(gold.children.get(key, []) if gold else [],
                                          pred.children.get(key, []) if pred else []))
        return result

    def align_lists(self, gold: list[Node], pred: list[Node]) -> Alignment:
        """Optimal one-to-one alignment of two record lists maximising matched slots."""
        result = Alignment()
        used_gold, used_pred = set(), set()
        if gold and pred:
            matched = self.matrix(gold, pred)
            for i, j in zip(*best_pairs(matched), strict=True):
                if matched[i, j] > 0:
                    result.merge(self.align(gold[i], pred[j]))
                    used_gold.add(i)
                    used_pred.add(j)
        for i, node in enumerate(gold):
            if i not in used_gold:
                result.merge(self.align(node, None))
        for j, node in enumerate(pred):
            if j not in used_pred:
                result.merge(self.align(None, node))
        return result

    def matrix(self, gold: list[Node], pred: list[Node]) -> np.ndarray:
        return np.array([[self.matched_slots(g, p) for p in pred] for g in gold], dtype=float)

    def matched_slots(self, gold: Node, pred: Node) -> int:
        """Agreeing slots of a pair under the best alignment of their children (the TP
        count)."""
        key = (id(gold), id(pred))
        if key not in self.matched:
            own = sum(1 for k, g in gold.slots.items() if g is not None
                      and (p := pred.slots.get(k)) is not None and self.agree(k, g, p))
            self.matched[key] = own + sum(self.best_total(kids, pred.children.get(k, []))
                                          for k, kids in gold.children.items())
        return self.matched[key]

    def best_total(self, gold: list[Node], pred: list[Node]) -> int:
        if not gold or not pred:
            return 0
        matched = self.matrix(gold, pred)
        rows, cols = best_pairs(matched)
        return int(matched[rows, cols].sum())


def best_pairs(matched: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows and columns of the pairing with the most agreeing slots."""
    from scipy.optimize import linear_sum_assignment  # scipy takes half a second to import

    return linear_sum_assignment(matched, maximize=True)


def ratio(num: int, den: int) -> float:
    """num/den, and 1.0 for 0/0 (nothing expected, nothing predicted).

    >>> ratio(3, 4), ratio(0, 0)
    (0.75, 1.0)
    """
    return num / den if den else 1.0


def f1(precision: float, recall: float) -> float:
    """Harmonic mean of precision and recall."""
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0
