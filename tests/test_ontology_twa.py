"""The IR of the bundled TWA T-Boxes: counted against the files themselves, profile rules, units,
and a golden snapshot of the full IR JSON (regenerate with KGCTL_REGENERATE=1)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyoxigraph as ox
import pytest

from kgctl.assets import asset_dir
from kgctl.ontology import default_ir, default_ontology_paths, load_ir

ONTOSYN = "https://www.theworldavatar.com/kg/OntoSyn/"
OM = "http://www.ontology-of-units-of-measure.org/resource/om-2/"
GOLDEN = Path(__file__).parent / "golden" / "ir_twa.json"
STEP_TYPES = ("Add", "Stir", "HeatChill", "Evaporate", "Sonicate", "Transfer", "Separate",
              "Filter", "Dry")
DECLARED = """
PREFIX owl: <http://www.w3.org/2002/07/owl#>
SELECT DISTINCT ?x WHERE {{ ?x a ?type . VALUES ?type {{ {types} }} FILTER(isIRI(?x)) }}
"""
MOP30_ONTOLOGIES = asset_dir("domains") / "mop30" / "ontologies"


def declared_in_file(path: Path, *types: str) -> set[str]:
    """IRIs typed with one of `types` in one T-Box, by a SPARQL query over the file."""
    store = ox.Store()
    store.load(path=str(path), format=ox.RdfFormat.TURTLE)
    query = DECLARED.format(types=" ".join(types))
    return {row["x"].value for row in store.query(query)}


@pytest.fixture(scope="module")
def ontosyn_ir():
    return load_ir([MOP30_ONTOLOGIES / "ontosynthesis.ttl"])


def test_ir_holds_every_class_and_property_of_ontosynthesis(ontosyn_ir):
    path = MOP30_ONTOLOGIES / "ontosynthesis.ttl"
    classes = declared_in_file(path, "owl:Class")
    properties = declared_in_file(path, "owl:ObjectProperty", "owl:DatatypeProperty",
                                  "owl:AnnotationProperty")
    declared = {c for c, info in ontosyn_ir.classes.items() if not info.external}
    assert len(classes) > 20 and len(properties) > 40  # the query really read the file
    assert declared == classes
    assert set(ontosyn_ir.properties) == properties
    kinds = declared_in_file(path, "owl:DatatypeProperty")
    assert {p for p, i in ontosyn_ir.properties.items() if i.kind == "datatype"} == kinds


def test_nine_step_types_are_subclasses_of_synthesis_step(ontosyn_ir):
    step = ONTOSYN + "SynthesisStep"
    below = set(ontosyn_ir.subclasses(step)) - {step}
    assert below == {ONTOSYN + name for name in STEP_TYPES}
    for name in STEP_TYPES:
        assert ontosyn_ir.classes[ONTOSYN + name].ancestors == (step,)


@pytest.mark.parametrize("prop", ["hasOrder", "hasStepDuration", "hasVessel",
                                  "hasVesselEnvironment"])
def test_union_domains_of_step_properties_are_expanded(ontosyn_ir, prop):
    domain = set(ontosyn_ir.properties[ONTOSYN + prop].domain)
    assert domain == {ONTOSYN + n for n in (*STEP_TYPES, "SynthesisStep")}
    assert ontosyn_ir.properties[ONTOSYN + prop] in ontosyn_ir.properties_of(ONTOSYN + "Dry")


def test_other_union_domains(ontosyn_ir):
    uses = ontosyn_ir.properties[ONTOSYN + "usesEquipment"]
    assert uses.domain == (ONTOSYN + "ChemicalSynthesis", ONTOSYN + "SynthesisStep")
    formula = ontosyn_ir.properties[ONTOSYN + "hasChemicalFormula"]
    assert formula.domain == (ONTOSYN + "ChemicalInput", ONTOSYN + "ChemicalOutput")


def test_owl_restriction_of_chemical_synthesis(ontosyn_ir):
    (rule,) = [r for r in ontosyn_ir.restrictions if r.source.kind == "owl"]
    assert (rule.on_class, rule.on_property, rule.kind, rule.cardinality, rule.filler) == (
        ONTOSYN + "ChemicalSynthesis", ONTOSYN + "retrievedFrom", "min", 1,
        "http://purl.org/ontology/bibo/Document")
    assert ontosyn_ir.classes["http://purl.org/ontology/bibo/Document"].external


def units_in_om2(category: str) -> set[str]:
    return declared_in_file(MOP30_ONTOLOGIES / "om2.ttl", f"<{OM}{category}>")


@pytest.mark.parametrize(("quantity", "category"), [
    ("Temperature", "TemperatureUnit"),
    ("Duration", "DurationUnit"),
    ("Volume", "VolumeUnit"),
    ("TemperatureRate", "TemperatureRateUnit"),
    ("AmountOfSubstanceFraction", "AmountFractionUnit"),
])
def test_units_allowed_for_quantities(quantity, category):
    ir = default_ir()
    kind = ir.quantities[OM + quantity]
    expected = units_in_om2(category)
    assert expected and set(kind.units) == expected
    assert kind.unit_category == OM + category
    assert (kind.value_property, kind.unit_property) == (OM + "hasNumericalValue", OM + "hasUnit")


def test_step_properties_point_to_their_quantity_kinds():
    ir = default_ir()
    assert ir.quantity_of(ONTOSYN + "hasTargetTemperature").iri == OM + "Temperature"
    assert ir.quantity_of(ONTOSYN + "hasYield").iri == OM + "AmountOfSubstanceFraction"
    assert ir.quantity_of(ONTOSYN + "hasOrder") is None


def test_unit_spellings_resolve_case_sensitively_when_it_matters():
    ir = default_ir()
    assert ir.resolve_unit("mM") == OM + "millimolePerLitre"
    assert ir.resolve_unit("mm") == OM + "millimetre"
    assert ir.resolve_unit("°C", OM + "Temperature") == OM + "degreeCelsius"
    assert ir.resolve_unit("mL", OM + "Temperature") is None
    assert ir.resolve_unit("furlong") is None


def test_profile_rules_from_the_comments():
    ir = default_ir()
    add, step = ONTOSYN + "Add", ONTOSYN + "SynthesisStep"
    added = ir.cardinality(add, ONTOSYN + "hasAddedChemicalInput")
    assert (added.min, added.max) == (1, 1)
    profile = (MOP30_ONTOLOGIES / "ontosynthesis.profile.yaml").read_text().splitlines()
    line = profile.index("    exactly_one: [ontosyn:hasAddedChemicalInput]") + 1
    assert [str(s) for s in added.sources] == [f"ontosynthesis.profile.yaml:{line}"]
    order = ir.cardinality(ONTOSYN + "HeatChill", ONTOSYN + "hasOrder")  # induced from the parent
    assert (order.min, order.max) == (1, 1)
    synthesis = ir.cardinality(ONTOSYN + "ChemicalSynthesis", ONTOSYN + "retrievedFrom")
    assert synthesis.min == 1 and {s.kind for s in synthesis.sources} == {"owl", "profile"}
    assert ir.top_level == (ONTOSYN + "ChemicalSynthesis",)
    assert [c for c, i in ir.classes.items() if i.abstract] == [step]
    labelled = {i.name for i in ir.classes.values() if i.identity == "label"}
    assert {"Vessel", "VesselType", "VesselEnvironment", "Supplier", "Equipment",
            "HeatChillDevice", "SeparationType", "Solvent"} <= labelled
    assert ir.classes[ONTOSYN + "ChemicalInput"].identity == "occurrence"
    (ordering,) = ir.orderings
    assert (ordering.container_class, ordering.member_property, ordering.order_property,
            ordering.start, ordering.contiguous) == (
        ONTOSYN + "ChemicalSynthesis", ONTOSYN + "hasSynthesisStep", ONTOSYN + "hasOrder", 1, True)
    environment = ir.enumeration(ONTOSYN + "VesselEnvironment",
                                 "http://www.w3.org/2000/01/rdf-schema#label")
    assert {"N2", "Ar", "Air", "Vacuum"} <= set(environment.values)


def test_cross_ontology_references_resolve():
    ir = default_ir()
    output = ir.classes[ONTOSYN + "ChemicalOutput"]
    species = "http://www.theworldavatar.com/ontology/ontospecies/OntoSpecies.owl#Species"
    assert output.ancestors == (species,) and not ir.classes[species].external
    mop = ir.classes["https://www.theworldavatar.com/kg/ontomops/MetalOrganicPolyhedron"]
    assert mop.ontology == "ontosynthesis.ttl" and not mop.external
    assert ir.classes[OM + "Temperature"].ontology == "om2.ttl"


def test_full_ir_matches_golden_and_is_byte_identical_across_runs():
    text = load_ir(default_ontology_paths()).to_json()
    assert text == default_ir().to_json()
    if os.environ.get("KGCTL_REGENERATE"):
        GOLDEN.write_text(text + "\n", encoding="utf-8")
    assert text + "\n" == GOLDEN.read_text(encoding="utf-8")
    assert "/work/" not in text and str(Path.home()) not in text
    # another process (other hash seeds, other blank node ids) gives the same bytes
    code = "from kgctl.ontology import default_ir; print(default_ir().to_json())"
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True, env={**os.environ, "PYTHONHASHSEED": "123"})
    assert other.stdout == text + "\n"
