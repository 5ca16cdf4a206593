"""A second, unrelated T-Box (host/dopant doping) compiles without a profile, from Turtle and
from RDF/XML, with its OWL axioms in the IR."""

from __future__ import annotations

from pathlib import Path

import pyoxigraph as ox
import pytest

from kgctl.errors import OntologyError
from kgctl.ontology import load_ir

DATA = Path(__file__).parent / "data" / "ontology"
DOP = "https://example.org/doping#"
XSD = "http://www.w3.org/2001/XMLSchema#"


@pytest.fixture(scope="module")
def ir():
    return load_ir([DATA / "doping.ttl"])


def test_compiles_without_a_profile(ir):
    assert ir.ontologies == ("doping.ttl",)
    assert ir.top_level == () and ir.quantities == {} and ir.orderings == ()
    assert all(r.source.kind == "owl" for r in ir.restrictions)
    assert ir.curie(DOP + "Dopant") == "dop:Dopant"


def test_classes_hierarchy_and_disjointness(ir):
    assert sorted(i.name for i in ir.classes.values()) == [
        "CoDopedMaterial", "Dopant", "DopedMaterial", "DopingMethod", "HostMaterial", "Material"]
    assert ir.classes[DOP + "CoDopedMaterial"].ancestors == (DOP + "DopedMaterial",
                                                            DOP + "Material")
    assert ir.classes[DOP + "HostMaterial"].disjoint_with == (DOP + "Dopant",)
    assert ir.classes[DOP + "Dopant"].disjoint_with == (DOP + "HostMaterial",)  # both ways
    assert ir.classes[DOP + "Material"].label == "material"


def test_cardinality_restrictions_and_their_induction(ir):
    host = ir.cardinality(DOP + "DopedMaterial", DOP + "hasHost")
    assert (host.min, host.max) == (1, 1)
    dopant = ir.cardinality(DOP + "DopedMaterial", DOP + "hasDopant")
    assert (dopant.min, dopant.max) == (1, None)  # qualified minimum on the range class
    co = ir.cardinality(DOP + "CoDopedMaterial", DOP + "hasDopant")
    assert (co.min, co.max) == (2, None)
    inherited = ir.cardinality(DOP + "CoDopedMaterial", DOP + "hasHost")
    assert (inherited.min, inherited.max) == (1, 1)
    kinds = {(r.on_class, r.on_property, r.kind, r.cardinality) for r in ir.restrictions}
    assert (DOP + "DopedMaterial", DOP + "hasHost", "exact", 1) in kinds
    assert (DOP + "DopedMaterial", DOP + "hasDopingMethod", "all", None) in kinds


def test_enumerations(ir):
    methods = ir.enumeration(DOP + "CoDopedMaterial", DOP + "hasDopingMethod")
    assert methods.values == tuple(DOP + m for m in ("IonImplantation", "SolGel",
                                                     "SolidStateReaction"))
    site = ir.enumeration(DOP + "Dopant", DOP + "hasDopantSite")
    assert site.values == ("interstitial", "substitutional") and site.on_class is None
    assert ir.properties[DOP + "hasDopantSite"].range == (XSD + "string",)


def test_properties(ir):
    props = ir.properties
    assert props[DOP + "hasHost"].functional and not props[DOP + "hasDopant"].functional
    assert props[DOP + "hasDopant"].inverse_of == DOP + "isDopantOf"
    assert props[DOP + "isDopantOf"].inverse_of == DOP + "hasDopant"
    assert props[DOP + "isDopantOf"].domain == (DOP + "Dopant",)  # induced from the inverse
    assert props[DOP + "hasFormula"].domain == (DOP + "Dopant", DOP + "HostMaterial")
    conc = props[DOP + "hasConcentration"]
    assert conc.parents == (DOP + "hasAmount",) and conc.domain == (DOP + "Dopant",)
    assert {p.name for p in ir.properties_of(DOP + "CoDopedMaterial")} == {
        "hasHost", "hasDopant", "hasDopingMethod"}


def test_rdf_xml_gives_the_same_model(ir, tmp_path):
    graph = ox.parse(path=str(DATA / "doping.ttl"), format=ox.RdfFormat.TURTLE)
    xml = tmp_path / "doping.owl"
    xml.write_bytes(ox.serialize(graph, format=ox.RdfFormat.RDF_XML))
    from_xml = load_ir([xml])
    assert from_xml.ontologies == ("doping.owl",)
    assert from_xml.classes.keys() == ir.classes.keys()
    assert [c.model_dump(exclude={"ontology"}) for c in from_xml.classes.values()] == [
        c.model_dump(exclude={"ontology"}) for c in ir.classes.values()]
    assert from_xml.properties.keys() == ir.properties.keys()
    assert from_xml.cardinalities == tuple(
        c.model_copy(update={"sources": tuple(s.model_copy(update={"file": "doping.owl"})
                                              for s in c.sources)})
        for c in ir.cardinalities)


def test_profile_conflict_names_both_sources():
    with pytest.raises(OntologyError) as err:
        load_ir([DATA / "doping.ttl"], profile_paths=[DATA / "conflict.profile.yaml"])
    message = str(err.value)
    assert "conflict.profile.yaml:4" in message and "doping.ttl" in message
    assert "dop:hasDopant" in message


def test_profile_may_narrow_but_not_widen_an_owl_enumeration(tmp_path):
    narrow = tmp_path / "narrow.profile.yaml"
    narrow.write_text("classes:\n  dop:DopedMaterial:\n    allowed_values:\n"
                      "      dop:hasDopingMethod: [dop:SolGel]\n")
    ir = load_ir([DATA / "doping.ttl"], profile_paths=[narrow])
    assert ir.enumeration(DOP + "CoDopedMaterial", DOP + "hasDopingMethod").values == (
        DOP + "SolGel",)
    wide = tmp_path / "wide.profile.yaml"
    wide.write_text("classes:\n  dop:DopedMaterial:\n    allowed_values:\n"
                    "      dop:hasDopingMethod: [dop:Spray]\n")
    with pytest.raises(OntologyError, match=r"wide.profile.yaml:4 allows .*#Spray which doping"):
        load_ir([DATA / "doping.ttl"], profile_paths=[wide])


def test_has_value_in_a_second_tbox_refining_the_first(tmp_path):
    extra = tmp_path / "implanted.ttl"
    extra.write_text(
        "@prefix dop: <https://example.org/doping#> .\n"
        "@prefix owl: <http://www.w3.org/2002/07/owl#> .\n"
        "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
        "dop:IonImplantedMaterial a owl:Class ; rdfs:subClassOf dop:DopedMaterial ,\n"
        "  [ a owl:Restriction ; owl:onProperty dop:hasDopingMethod ;\n"
        "    owl:hasValue dop:IonImplantation ] .\n")
    ir = load_ir([DATA / "doping.ttl", extra])
    (value,) = [r for r in ir.restrictions if r.kind == "has_value"]
    assert (value.on_class, value.filler, value.source.file) == (
        DOP + "IonImplantedMaterial", DOP + "IonImplantation", "implanted.ttl")
    implanted = ir.classes[DOP + "IonImplantedMaterial"]
    assert implanted.ancestors == (DOP + "DopedMaterial", DOP + "Material")
    assert implanted.ontology == "implanted.ttl" and not implanted.external
    host = ir.cardinality(DOP + "IonImplantedMaterial", DOP + "hasHost")  # across files
    assert (host.min, host.max) == (1, 1)
