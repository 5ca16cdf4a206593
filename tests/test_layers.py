"""The sub-packages of kgctl import each other without a cycle (every import counts, also one
inside a function), and the generic packages name no domain.

Layers follow the data: `papers` (ingested text, stored paper text, trace formats) sits below
both `agent` and `evaluation`; `pipeline` (extract, demo) above them; domain-specific Python
(`chemistry`) is reached only through a pack's hooks.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "platform" / "kgctl"
GENERIC = ("ontology", "compiler", "instantiation", "store", "retrieval", "evaluation", "dedup",
           "grounding", "agent", "service", "toolserver", "papers", "pipeline", "domains")
# Words of the first domain (metal-organic polyhedra synthesis with The World Avatar's
# T-Boxes) and of chemistry: none may appear in a generic package, as a whole word, in code,
# comments or docstrings. Chosen to be specific: "synthesis" and "species" are words of that
# domain here; "formula", "unit" or "material" are not on the list (general words).
DOMAIN_WORDS = ("mop", "mops", "mop30", "mop-30", "ontosyn", "ontosynthesis", "ontomops",
                "ontospecies", "twa", "theworldavatar", "synthesis", "syntheses", "linker",
                "cbu", "cbus", "species", "chemical", "chemicals", "solvent", "dmf", "inchi",
                "inchikey", "smiles", "ccdc", "opsin", "rdkit", "pubchem", "hill")
_WORD = re.compile(r"(?<![\w-])(" + "|".join(re.escape(w) for w in DOMAIN_WORDS)
                   + r")(?![\w-])", re.IGNORECASE)


def unit_of(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def import_graph() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        source = unit_of(path)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module] if isinstance(node, ast.ImportFrom) and node.module
                     and node.level == 0 else [])
            for name in names:
                parts = name.split(".")
                if parts[0] == "kgctl" and len(parts) > 1 and parts[1] != source:
                    edges.setdefault(source, set()).add(parts[1])
    return edges


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """A cycle of the graph as a path (first node repeated at the end), or None.

    >>> find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}})
    ['a', 'b', 'c', 'a']
    >>> find_cycle({"a": {"b"}, "b": set()}) is None
    True
    """
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_cycle_between_sub_packages():
    edges = import_graph()
    assert len(edges) >= 15  # the walk saw the package
    assert find_cycle(edges) is None, find_cycle(edges)


def test_paper_input_below_agent_and_evaluation():
    edges = import_graph()
    assert "evaluation" not in edges["agent"] and "agent" not in edges["evaluation"]
    assert not edges.get("papers", set()) & {"agent", "evaluation", "pipeline"}


def test_generic_packages_reach_chemistry_only_through_packs():
    edges = import_graph()
    assert [p for p in GENERIC if "chemistry" in edges.get(p, set())] == []


def domain_words(package: str) -> list[str]:
    found = []
    for path in sorted((PACKAGE / package).rglob("*")):
        if path.suffix not in (".py", ".yaml", ".json", ".html", ".js"):
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for match in _WORD.finditer(line):
                found.append(f"{path.relative_to(PACKAGE)}:{n}: {match.group(0)}")
    return found


def test_the_word_list_finds_what_it_must():
    assert _WORD.findall("a MOP-30 chemical synthesis of OntoSyn:Add") == [
        "MOP-30", "chemical", "synthesis", "OntoSyn"]
    assert _WORD.findall("mopping the formula unit of a material") == []


def test_generic_packages_name_no_domain():
    found = [hit for package in GENERIC for hit in domain_words(package)]
    assert found == [], f"{len(found)} domain words, first: {found[:20]}"
