"""Names that need the IR: unique class words and prefixed argument names across namespaces.

A word two terms share (`Agent` of two vocabularies) is prefixed with each one's namespace
prefix, else its T-Box file's stem; every other word stays plain, so names are stable across
compiles and unchanged where nothing collides.
"""

from __future__ import annotations

from kgctl.compiler.naming import is_opaque, local_name, readable, snake
from kgctl.ontology.ir import OntologyIR


def unique_words(ir: OntologyIR, classes: list[str]) -> dict[str, str]:
    """Class -> snake_case word, unique among `classes`: a word two classes share (`Agent`
    of two vocabularies) is prefixed with each one's namespace prefix, else its file stem."""
    words = {}
    for cls in classes:
        info = ir.classes[cls]
        words[cls] = snake(readable(info.name, info.label))
    count: dict[str, int] = {}
    for word in words.values():
        count[word] = count.get(word, 0) + 1
    return {c: w if count[w] == 1 else prefixed_class(ir, c, w) for c, w in words.items()}


def prefixed_class(ir: OntologyIR, cls: str, word: str) -> str:
    curie = ir.curie(cls)
    stem = curie.partition(":")[0] if curie != cls else ir.classes[cls].ontology.rsplit(".", 1)[0]
    return f"{snake(stem)}_{word}" if stem else word


def prefixed_name(ir: OntologyIR, prop: str, name: str) -> str:
    """`name` prefixed with the prefix of `prop`'s namespace, else its T-Box file's stem.

    >>> from kgctl.ontology import pack_ir
    >>> ir = pack_ir("nerre-doping")
    >>> prefixed_name(ir, ir.prefixes["dop"] + "sentenceNumber", "sentence_number")
    'dop_sentence_number'
    """
    curie = ir.curie(prop)
    info = ir.properties.get(prop)
    stem = curie.partition(":")[0] if curie != prop else (
        info.ontology.rsplit(".", 1)[0] if info and info.ontology else "")
    return f"{snake(stem)}_{name}" if stem else name


def property_ref(ir: OntologyIR, prop: str) -> str:
    """How tools name a property: its prefixed name, with the label for an opaque local name
    (`battery:hasTestEquipment`, `obo:is_about`); one per property, stable across compiles.

    >>> from kgctl.ontology import pack_ir
    >>> ir = pack_ir("nerre-doping")
    >>> property_ref(ir, ir.prefixes["dop"] + "statedIn")
    'dop:statedIn'
    """
    curie = ir.curie(prop)
    name = local_name(prop)
    info = ir.properties.get(prop)
    if info is None or not is_opaque(name) or is_opaque(info.label):
        return curie
    word = info.label if " " not in info.label.strip() else snake(info.label)
    return curie[: len(curie) - len(name)] + word if curie.endswith(name) else curie
