"""Word-level scorer of the LLM-NERRE doping benchmark (host/dopant entities and their links).

Only sentences marked relevant in the gold file are scored. Entities are split into
whitespace words; a gold word found among the predicted words is a TP (counted on the gold
side, so repeated gold words count each time), a gold word not predicted is a FN, a predicted
word not in the gold is a FP. Links are (host word, dopant word) pairs of every
dopant -> host link, scored the same way.

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


def entity_words(entities: dict[str, str] | None) -> list[str]:
    """Whitespace words of all entity strings, in order."""
    return [w for text in (entities or {}).values() for w in str(text).split()]


def link_words(graph: dict) -> list[tuple[str, str]]:
    """(host word, dopant word) pairs of every link whose two ends exist."""
    hosts, dopants = graph.get("basemats") or {}, graph.get("dopants") or {}
    pairs = []
    for d, bs in (graph.get("dopants2basemats") or {}).items():
        for b in bs or ():
            if d in dopants and b in hosts:
                pairs += [(hw, dw) for hw in hosts[b].split() for dw in dopants[d].split()]
    return pairs


def word_counts(gold: list, pred: list) -> Counts:
    """TP/FN counted on the gold words, FP on the predicted ones."""
    return Counts(tp=sum(1 for w in gold if w in pred), fn=sum(1 for w in gold if w not in pred),
                  fp=sum(1 for w in pred if w not in gold))


def score_doping(gold: list[dict], pred: list[dict]) -> dict[str, Counts]:
    """Counts for basemats, dopants and links over the relevant gold sentences."""
    if len(gold) != len(pred):
        raise InputError(f"prediction has {len(pred)} abstracts, gold has {len(gold)}")
    totals = {k: Counts() for k in (*ENTITY_TYPES, "links")}
    for g_doc, p_doc in zip(gold, pred, strict=True):
        for g, p in zip(g_doc["doping_sentences"], p_doc["doping_sentences"], strict=True):
            if not g.get("relevant"):
                continue
            graph = p.get("entity_graph_raw") or {}
            for kind in ENTITY_TYPES:
                totals[kind] += word_counts(entity_words(g.get(kind)),
                                            entity_words(graph.get(kind)))
            totals["links"] += word_counts(link_words(g), link_words(graph))
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
