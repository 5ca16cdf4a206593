"""Word-level scorer of the LLM-NERRE doping benchmark (host/dopant entities and their links).

Every sentence marked relevant in the gold file is scored against the predicted
``entity_graph_raw`` of the sentence at the same position. Entity strings are split on single
spaces (empty pieces dropped).

- Hosts and dopants: a gold word found among the sentence's predicted words is a TP (counted
  on the gold side, so a repeated gold word counts each time), a gold word not predicted is a
  FN, a predicted word absent from the gold is a FP.
- Links: every dopant -> host link yields "host-word dopant-word" pairs. Correct = gold pairs
  found among the predicted pairs (gold side); precision = correct / all predicted pairs,
  recall = correct / all gold pairs, both over the whole test set. So link FP = all predicted
  pairs - correct, formed from the totals: a pair repeated in the gold of one sentence (one
  host word in two linked host entities, e.g. "carbon" in "hierarchical porous carbon" and
  "ordered mesoporous carbon") is credited each time, and that credit is not clipped per
  sentence.

These are the rules of the published doping scores (GPT-3 JSON links 0.772/0.684/0.726).

>>> gold = [{"doping_sentences": [{"relevant": True, "basemats": {"b0": "ZnO"},
...     "dopants": {"d0": "Al"}, "dopants2basemats": {"d0": ["b0"]}}]}]
>>> pred = [{"doping_sentences": [{"entity_graph_raw": {"basemats": {"b0": "ZnO"},
...     "dopants": {"d0": "Al", "d1": "Ga"}, "dopants2basemats": {"d0": ["b0"], "d1": ["b0"]}}}]}]
>>> s = score_doping(gold, pred)
>>> s["dopants"].tp, s["dopants"].fp, s["links"].fp, round(s["links"].f1, 3)
(1, 1, 1, 0.667)
"""

from __future__ import annotations

import json
from pathlib import Path

from kgctl.errors import InputError
from kgctl.evaluation.scorer import Counts

ENTITY_TYPES = ("basemats", "dopants")


def words(text: str) -> list[str]:
    """Pieces of ``text`` between single spaces, empty pieces dropped.

    >>> words(" Al  Ga-doped ")
    ['Al', 'Ga-doped']
    """
    return [w for w in str(text).split(" ") if w]


def entity_words(entities: dict[str, str] | None) -> list[str]:
    """Words of all entity strings, in order."""
    return [w for text in (entities or {}).values() for w in words(text)]


def link_words(graph: dict) -> list[tuple[str, str]]:
    """(host word, dopant word) pairs of every link whose two ends exist."""
    hosts, dopants = graph.get("basemats") or {}, graph.get("dopants") or {}
    pairs = []
    for d, bs in (graph.get("dopants2basemats") or {}).items():
        for b in bs or ():
            if d in dopants and b in hosts:
                pairs += [(hw, dw) for hw in words(hosts[b]) for dw in words(dopants[d])]
    return pairs


def word_counts(gold: list, pred: list) -> Counts:
    """Entity words: TP/FN counted on the gold words, FP = predicted words not in the gold.

    >>> word_counts(["Al", "Al"], ["Al", "Al", "Ga"])
    Counts(tp=2, fp=1, fn=0)
    """
    return Counts(tp=sum(1 for w in gold if w in pred), fn=sum(1 for w in gold if w not in pred),
                  fp=sum(1 for w in pred if w not in gold))


def link_counts(gold: list, pred: list) -> Counts:
    """Link pairs: TP/FN counted on the gold pairs, FP = predicted pairs - TP (see above).

    >>> link_counts([("ZnO", "Al")], [("ZnO", "Al"), ("ZnO", "Al")])
    Counts(tp=1, fp=1, fn=0)
    >>> link_counts([("C", "N"), ("C", "N")], [("C", "N")])  # credit carried to the totals
    Counts(tp=2, fp=-1, fn=0)
    """
    tp = sum(1 for pair in gold if pair in pred)
    return Counts(tp=tp, fn=len(gold) - tp, fp=len(pred) - tp)


def score_doping(gold: list[dict], pred: list[dict]) -> dict[str, Counts]:
    """Counts for basemats, dopants and links over the relevant gold sentences."""
    if len(gold) != len(pred):
        raise InputError(f"prediction has {len(pred)} abstracts, gold has {len(gold)}")
    totals = {k: Counts() for k in (*ENTITY_TYPES, "links")}
    for n, (g_doc, p_doc) in enumerate(zip(gold, pred, strict=True)):
        if len(g_doc["doping_sentences"]) != len(p_doc["doping_sentences"]):
            raise InputError(f"abstract {n} ({g_doc.get('doi', '?')}): prediction has "
                             f"{len(p_doc['doping_sentences'])} sentences, gold has "
                             f"{len(g_doc['doping_sentences'])}")
        for g, p in zip(g_doc["doping_sentences"], p_doc["doping_sentences"], strict=True):
            if not g.get("relevant"):
                continue
            graph = p.get("entity_graph_raw") or {}
            for kind in ENTITY_TYPES:
                totals[kind] += word_counts(entity_words(g.get(kind)),
                                            entity_words(graph.get(kind)))
            totals["links"] += link_counts(link_words(g), link_words(graph))
    return totals


def load_json_list(path: Path) -> list[dict]:
    """A NERRE JSON file (a list of abstracts); clear error otherwise."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: not readable JSON: {exc}") from None
    if not isinstance(data, list) or not all("doping_sentences" in d for d in data):
        raise InputError(f"{path}: expected a list of abstracts with 'doping_sentences'")
    return data
