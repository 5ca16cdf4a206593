"""Figures of the merged view on a demo store (`kgctl demo` leaves kgctl-data/store and
kgctl-data/report.json): the "species used across several papers" example before (one row per
label, raw view, the query the page shipped) and after (one row per grounded identity, merged
view, the pack's example), for one entity; and the demo's grounding by role.

    python scripts/merged_view_figures.py --workdir kgctl-data --entity DMF
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from pyoxigraph import NamedNode

from kgctl.service.static_examples import load_examples
from kgctl.store import EmbeddedStore
from kgctl.store.entities import members

BY_LABEL = """PREFIX ontosyn: <https://www.theworldavatar.com/kg/OntoSyn/>
PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
SELECT ?species (COUNT(DISTINCT ?g) AS ?papers) (COUNT(?input) AS ?uses) WHERE {
  GRAPH ?g { ?step ontosyn:hasAddedChemicalInput ?input . ?input rdfs:label ?species . }
}
GROUP BY ?species
HAVING (COUNT(DISTINCT ?g) > 1)
ORDER BY DESC(?papers) ?species"""
CANONICAL = "SELECT ?c WHERE { GRAPH ?g { ?x <https://w3id.org/kgctl/ns#canonical> ?c } }"
NAMES = """PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
SELECT DISTINCT ?l WHERE { GRAPH ?g { ?x rdfs:label ?l } }"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, default=Path("kgctl-data"))
    parser.add_argument("--entity", default="DMF")
    args = parser.parse_args()
    store = EmbeddedStore(args.workdir / "store")
    try:
        used = members(store, args.entity)
        names = {r["l"].value for iris in used.values() for iri in sorted(iris)
                 for r in store.query(NAMES, bindings={"x": NamedNode(iri)}, view="raw")}
        before = list(store.query(BY_LABEL, view="raw"))
        print(f"before (raw view, one row per label): {len(before)} rows; rows naming "
              f"{args.entity!r}'s identity:")
        for row in before:
            if row["species"].value in names:
                print(f"  {row['species'].value!r}: {row['papers'].value} papers, "
                      f"{row['uses'].value} uses")
        query = next(e["query"] for e in load_examples()
                     if e["title"].startswith("Species used across several papers"))
        after = list(store.query(query, view="merged"))
        identities = {r["c"].value for iris in used.values() for iri in iris
                      for r in store.query(CANONICAL, bindings={"x": NamedNode(iri)},
                                           view="merged")}
        print(f"after (merged view, one row per identity): {len(after)} rows; rows of "
              f"{args.entity!r}'s identity:")
        for row in after:
            if row["species"].value in identities:
                print(f"  {row['name'].value!r} <{row['species'].value}>: {row['papers'].value} "
                      f"papers, {row['uses'].value} uses")
        print(f"papers with an entity of that identity (any role): {len(used)}")
    finally:
        store.close()
    report = args.workdir / "report.json"
    if report.is_file():
        grounding = json.loads(report.read_text(encoding="utf-8")).get("grounding") or {}
        print(f"grounding: {grounding.get('grounded')} of {grounding.get('entities')} entities "
              f"({grounding.get('share', 0):.1%})")
        for role, s in (grounding.get("by_role") or {}).items():
            print(f"  {role}: {s['grounded']} of {s['entities']} grounded ({s['share']:.1%}), "
                  f"{len(s['ungrounded'])} distinct names ungrounded")


if __name__ == "__main__":
    main()
