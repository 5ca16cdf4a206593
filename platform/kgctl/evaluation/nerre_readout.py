"""NERRE read-out: a store's paper graphs -> predictions in the NERRE layout, so that
`score_doping` scores them like the published ones.

A pack with a NERRE benchmark ships two read-out queries: ``entities.rq`` (variables
``?sentence ?kind ?label``, kind ``basemats`` or ``dopants``) and ``links.rq`` (``?sentence
?host ?dopant``, by label). Each gold abstract is read from the paper its DOI names; a
sentence's predicted ``entity_graph_raw`` holds the entities and links of its number.
"""

from __future__ import annotations

from pathlib import Path

from kgctl.errors import InputError
from kgctl.evaluation.nerre import ENTITY_TYPES
from kgctl.store.base import GraphStore
from kgctl.store.iris import paper_id

QUERIES = ("entities", "links")


def sentence_graphs(entity_rows: list[tuple[int, str, str]],
                    link_rows: list[tuple[int, str, str]]) -> dict[int, dict]:
    """{sentence: entity_graph_raw} from (sentence, kind, label) and (sentence, host, dopant).

    >>> g = sentence_graphs([(0, "basemats", "ZnO"), (0, "dopants", "Al")], [(0, "ZnO", "Al")])
    >>> g[0]
    {'basemats': {'b0': 'ZnO'}, 'dopants': {'d0': 'Al'}, 'dopants2basemats': {'d0': ['b0']}}
    """
    graphs: dict[int, dict] = {}
    for n, kind, label in entity_rows:
        graph = graphs.setdefault(n, {k: {} for k in (*ENTITY_TYPES, "dopants2basemats")})
        entities = graph[kind]
        if label not in entities.values():
            entities[f"{kind[0]}{len(entities)}"] = label
    for n, host, dopant in link_rows:
        graph = graphs.setdefault(n, {k: {} for k in (*ENTITY_TYPES, "dopants2basemats")})
        b = _key(graph["basemats"], host, "b")
        d = _key(graph["dopants"], dopant, "d")
        links = graph["dopants2basemats"].setdefault(d, [])
        if b not in links:
            links.append(b)
    return graphs


def _key(entities: dict[str, str], label: str, letter: str) -> str:
    for key, value in entities.items():
        if value == label:
            return key
    key = f"{letter}{len(entities)}"
    entities[key] = label
    return key


def read_predictions(store: GraphStore, gold: list[dict], folder: Path) -> list[dict]:
    """The gold abstracts with each sentence's `entity_graph_raw` read from the store."""
    queries = {}
    for name in QUERIES:
        path = folder / f"{name}.rq"
        if not path.is_file():
            raise InputError(f"no NERRE read-out query {path}")
        queries[name] = path.read_text(encoding="utf-8")
    out = []
    for abstract in gold:
        pid = paper_id(str(abstract.get("doi", "")))
        graphs: dict[int, dict] = {}
        if store.has_paper(pid):
            entities = [(int(r["sentence"].value), r["kind"].value, r["label"].value)
                        for r in store.query(queries["entities"], paper_id=pid)]
            links = [(int(r["sentence"].value), r["host"].value, r["dopant"].value)
                     for r in store.query(queries["links"], paper_id=pid)]
            graphs = sentence_graphs(entities, links)
        out.append({**{k: v for k, v in abstract.items() if k != "doping_sentences"},
                    "doping_sentences": [
                        {"sentence_text": s.get("sentence_text", ""),
                         "entity_graph_raw": graphs.get(n, {})}
                        for n, s in enumerate(abstract["doping_sentences"])]})
    return out


def missing_links(gold: list[dict], pred: list[dict]) -> list[str]:
    """Every gold host-dopant link the predictions lack: "doi [sentence] dopant -> host"."""
    from kgctl.evaluation.nerre import link_words

    lost = []
    for g_doc, p_doc in zip(gold, pred, strict=True):
        for n, (g, p) in enumerate(zip(g_doc["doping_sentences"], p_doc["doping_sentences"],
                                       strict=True)):
            if not g.get("relevant"):
                continue
            have = link_words(p.get("entity_graph_raw") or {})
            for host, dopant in link_words(g):
                if (host, dopant) not in have:
                    lost.append(f"{g_doc.get('doi')} [{n}] {dopant} -> {host}")
    return lost
