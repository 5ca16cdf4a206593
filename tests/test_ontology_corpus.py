"""Six public third-party T-Boxes, compiled with a profile that only makes existentials hard: a
real MCP client session creates instances of each one's main classes and links them, and every
axiom kind the ontology states and kgctl enforces is refused at least once with the right
finding code. Where the per-class tools exceed the token budget the same calls go through
`create_entity` (corpus_helpers.as_create_entity)."""

from __future__ import annotations

import json

import pytest
from corpus_helpers import ONTOLOGIES, Step, corpus_ir, run_session

from kgctl.ontology.kinds import CODES, axiom_kinds

MID = "pizza:MozzarellaTopping"

SCENARIOS: dict[str, list[Step]] = {
    "pizza": [
        ("create_spiciness", {"type": "Mild", "label": "mild"}, None, None),
        ("create_pizza_base", {"type": "ThinAndCrispyBase", "label": "thin base"}, None, None),
        ("create_pizza_base", {"type": "DeepPanBase", "label": "deep base"}, None, None),
        ("create_pizza_topping", {"type": "MozzarellaTopping", "label": "mozzarella"},
         ("required_missing",), "someValuesFrom"),
        ("create_pizza_topping", {"type": "MozzarellaTopping", "label": "mozzarella",
                                  "spiciness": "mild"}, None, None),
        ("create_pizza_topping", {"type": "TomatoTopping", "label": "tomato",
                                  "spiciness": "mild"}, None, None),
        ("create_pizza_topping", {"type": "HamTopping", "label": "ham", "spiciness": "mild"},
         None, None),
        ("create_pizza", {"type": "Margherita", "label": "margherita", "base": "thin base",
                          "topping": ["mozzarella", "tomato"]}, None, None),
        ("create_pizza", {"type": "Margherita", "label": "bad", "base": "mozzarella",
                          "topping": ["mozzarella", "tomato"]}, ("type_mismatch",),
         "domain/range"),
        ("link", {"subject": "margherita", "property": "pizza:hasTopping", "object": "ham"},
         ("type_mismatch",), "allValuesFrom"),
        ("link", {"subject": "margherita", "property": "pizza:hasBase", "object": "deep base"},
         ("max_one",), "functional"),
        ("create_pizza", {"type": "InterestingPizza", "label": "interesting",
                          "base": "thin base", "topping": ["ham"]}, ("cardinality",),
         "minCardinality"),
        ("update_property", {"entity": "mozzarella", "property": "pizza:hasCountryOfOrigin",
                             "value": ["France"]}, ("enum_value",), "hasValue"),
        ("create_pizza", {"type": "RealItalianPizza", "label": "italian",
                          "base": "thin base"}, None, None),
        ("link", {"subject": "italian", "property": "pizza:hasTopping", "object": "tomato"},
         None, None),
    ],
    "sosa": [
        ("create_sensor", {"label": "thermometer 1"}, None, None),
        ("create_observable_property", {"label": "air temperature"}, None, None),
        ("create_feature_of_interest", {"label": "room 101"}, None, None),
        ("create_platform", {"label": "weather station"}, None, None),
        ("create_observation", {"label": "obs 1", "made_by_sensor": "thermometer 1",
                                "observed_property": "air temperature",
                                "feature_of_interest": "room 101",
                                "result_time": "2017-06-06T12:36:12Z"}, None, None),
        ("create_observation", {"label": "obs 2", "made_by_sensor": "room 101"},
         ("type_mismatch",), "domain/range"),
        ("create_observation", {"label": "obs 3", "result_time": "noon"}, ("datatype",),
         "datatype"),
        ("link", {"subject": "thermometer 1", "property": "sosa:isHostedBy",
                  "object": "weather station"}, None, None),
        ("link", {"subject": "thermometer 1", "property": "sosa:observes",
                  "object": "air temperature"}, None, None),
        ("update_property", {"entity": "obs 1", "property": "sosa:hasSimpleResult",
                             "value": ["23.5 °C"]}, None, None),
    ],
    "prov": [
        ("create_activity", {"label": "baking", "started_at_time": "2012-03-09T08:05:08-05:00"},
         None, None),
        ("create_agent", {"label": "baker"}, None, None),
        ("create_entity", {"label": "cake", "was_generated_by": "baking"}, None, None),
        ("create_entity", {"label": "cake 2", "was_generated_by": "baker"},
         ("type_mismatch",), "domain/range"),
        ("create_activity", {"label": "eating", "started_at_time": "after lunch"},
         ("datatype",), "datatype"),
        ("create_generation", {"label": "generation of cake", "activity": "baking"}, None,
         None),
        ("link", {"subject": "generation of cake", "property": "prov:hadActivity",
                  "object": "baking"}, ("cardinality",), "maxCardinality"),
        ("link", {"subject": "baking", "property": "prov:wasAssociatedWith", "object": "baker"},
         None, None),
        ("link", {"subject": "cake", "property": "prov:qualifiedGeneration",
                  "object": "generation of cake"}, None, None),
    ],
    "time": [
        ("create_instant", {"label": "start", "in_xsd_date": "2020-02-03"}, None, None),
        ("create_instant", {"label": "x", "in_xsd_date": "2020-02-30"}, ("datatype",),
         "datatype"),
        ("create_duration", {"label": "three days", "numeric_duration": 3,
                             "unit_type": "unitDay"}, None, None),
        ("create_duration", {"label": "d", "unit_type": "unitDay"}, ("required_missing",),
         "exactCardinality"),
        ("create_date_time_description", {"label": "5 May 2020", "unit_type": "unitDay",
                                          "day": "---05", "month": "--05", "year": "2020"},
         None, None),
        ("create_date_time_description", {"label": "bad month", "unit_type": "unitDay",
                                          "month": "--13"}, ("datatype",), "allValuesFrom"),
        ("create_trs", {"label": "Julian calendar"}, None, None),
        ("create_date_time_description", {"label": "julian", "unit_type": "unitDay",
                                          "trs": "Julian calendar"}, ("enum_value",),
         "hasValue"),
        ("create_date_time_description", {"label": "two days", "unit_type": "unitDay",
                                          "day": ["---05", "---06"]}, ("max_one",),
         "maxCardinality"),
        ("create_duration_description", {"label": "dd", "trs": ["Julian calendar",
                                                                "Julian calendar"]},
         ("max_one",), "functional"),
        ("create_proper_interval", {"label": "spring", "beginning": "start",
                                    "duration": "three days"}, None, None),
        ("create_proper_interval", {"label": "bad", "beginning": "three days"},
         ("type_mismatch",), "domain/range"),
        ("link", {"subject": "start", "property": "time:inDateTime", "object": "5 May 2020"},
         None, None),
    ],
    "iao": [
        ("create_continuant", {"label": "a sample"}, None, None),
        ("create_information_content_entity", {"type": "document", "label": "paper"},
         ("required_missing",), "someValuesFrom"),
        ("create_information_content_entity", {"type": "document", "label": "paper",
                                               "is_about": "a sample"}, None, None),
        ("create_material_entity", {"type": "material_entity", "label": "balance"}, None,
         None),
        ("create_length_unit", {"label": "metre", "is_about": "a sample"}, None, None),
        ("create_immaterial_entity", {"type": "zero_dimensional_spatial_region",
                                      "label": "origin"}, None, None),
        ("create_scalar_measurement_datum",
         {"type": "scalar_measurement_datum", "label": "m1", "is_about": "a sample",
          "measurement_value": "ten", "measurement_unit_label": "metre"},
         ("datatype",), "datatype"),
        ("create_scalar_measurement_datum",
         {"type": "scalar_measurement_datum", "label": "m1", "is_about": "a sample",
          "measurement_unit_label": "metre"}, ("required_missing",), "minCardinality"),
        ("create_scalar_measurement_datum",
         {"type": "scalar_measurement_datum", "label": "m1", "is_about": "a sample",
          "measurement_value": [1.0, 2.0], "measurement_unit_label": "metre"},
         ("max_one",), "functional"),
        ("create_cartesian_spatial_coordinate_datum",
         {"type": "one_dimensional_cartesian_spatial_coordinate_datum", "label": "x only",
          "is_about": "a sample", "denotes": "origin", "coordinate_unit_label": "metre"},
         ("cardinality", "required_missing"), "exactCardinality"),
        ("create_scalar_measurement_datum",
         {"type": "mass_measurement_datum", "label": "mass", "is_about": "a sample",
          "measurement_value": 2.5, "measurement_unit_label": "metre"},
         ("type_mismatch",), "allValuesFrom"),
        ("create_scalar_measurement_datum",
         {"type": "scalar_measurement_datum", "label": "m2", "is_about": "a sample",
          "measurement_value": 2.5, "measurement_unit_label": "a sample"},
         ("type_mismatch",), "domain/range"),
        ("link", {"subject": "paper", "property": "obo:IAO_0000136", "object": "balance"},
         None, None),
    ],
    "battery": [
        ("create_battery_testing_entity", {"type": "thermal_runaway_test",
                                           "label": "nail test 1"}, None, None),
        ("create_battery_testing_entity", {"type": "battery_cycler", "label": "cycler A"},
         None, None),
        ("create_battery_testing_entity", {"type": "lithium_manganese_dioxide_battery",
                                           "label": "CR2032"}, None, None),
        ("create_surface", {"type": "surface_ac", "label": "surface AC"}, None, None),
        ("create_battery_cell_geometry_entity",
         {"type": "paired_terminal_prismatic_vent_surface_ac", "label": "prismatic cell"},
         ("required_missing",), "someValuesFrom"),
        ("create_battery_cell_geometry_entity",
         {"type": "paired_terminal_prismatic_vent_surface_ac", "label": "prismatic cell",
          "surface": "nail test 1"}, ("type_mismatch",), "domain/range"),
        ("link", {"subject": "nail test 1", "property": "battery:hasTestEquipment",
                  "object": "cycler A"}, None, None),
        ("link", {"subject": "nail test 1", "property": "battery:hasTestObject",
                  "object": "CR2032"}, None, None),
    ],
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_main_classes_created_linked_and_every_axiom_kind_refused(name: str) -> None:
    ir = corpus_ir(name)
    seen = run_session(ir, SCENARIOS[name])
    refused_kinds = set()
    for (tool, args, codes, kind), is_error, text in seen:
        if codes is None:
            assert not is_error, (tool, args, text)
            continue
        assert is_error, (tool, args, "was accepted")
        code = json.loads(text)["code"]
        assert code in codes, (tool, args, text)
        assert code in CODES[kind], (kind, code)
        refused_kinds.add(kind)
    _, enforced = axiom_kinds(ir)
    assert set(enforced) <= refused_kinds, set(enforced) - refused_kinds
    assert any(tool == "link" and not err for (tool, *_), err, _ in seen)
    created = sum(1 for (tool, *_), err, _ in seen if tool.startswith("create_") and not err)
    assert created >= 3


def test_every_corpus_ontology_has_its_case(request: pytest.FixtureRequest) -> None:
    """Counted from the session's items, which every xdist worker collects whole (a list the
    cases append to would be split between workers that steal each other's tests)."""
    case = test_main_classes_created_linked_and_every_axiom_kind_refused.__name__
    names = [item.callspec.params["name"] for item in request.session.items
             if getattr(item, "originalname", "") == case]
    assert sorted(names) == sorted(ONTOLOGIES) and len(names) == 6
