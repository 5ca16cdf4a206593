"""Ground truth -> tool call: the pure mapping the round-trip oracle uses, one place for all
four categories (field names, step types, chemicals, devices) and for dropping a refused value.

>>> step_call("S1", "Stir", {"stepNumber": 2, "duration": "2 h", "wait": True})
('create_stir', {'chemical_synthesis': 'S1', 'order': 2, 'step_duration': '2 h', 'is_wait': True})
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from kgctl.evaluation.values import is_empty

COMMON_STEP_FIELDS = {"comment": "label", "duration": "step_duration",
                      "atmosphere": "vessel_environment"}
STEP_FIELDS = {
    "Add": {"stir": "is_stirred", "isLayered": "is_layered", "targetPH": "target_ph"},
    "HeatChill": {"usedDevice": "heat_chill_device", "targetTemperature": "target_temperature",
                  "heatingCoolingRate": "temperature_rate", "underVacuum": "vacuum",
                  "stir": "is_stirred_heat_chill"},
    "Filter": {"vacuumFiltration": "is_vacuum_filtration", "numberOfFiltrations": "is_repeated"},
    "Transfer": {"transferedAmount": "transfered_amount", "isLayered": "is_layered_transfer"},
    "Dry": {"pressure": "drying_pressure", "temperature": "drying_temperature"},
    "Stir": {"temperature": "stirring_temperature", "wait": "is_wait"},
    "Separate": {"separationType": "is_separation_type"},
}
STEP_CHEMICALS = {"addedChemical": "added_chemical_input", "washingSolvent": "washing_solvent",
                  "dryingAgent": "drying_agent", "solvent": "separation_solvent"}
IGNORED_STEP_FIELDS = frozenset({"stepNumber", "usedVesselName", "usedVesselType"})
ATMOSPHERES = {"argon": "Ar", "air": "Air", "vacuum": "Vacuum"}  # the profile's spellings
DEVICES = {"ElementalAnalysisDevice": "elemental_analysis_device", "HNMRDevice": "hnmr_device",
           "InfraredSpectroscopyDevice": "infrared_spectroscopy_device"}
MEASUREMENT_FIELDS = {
    "ElementalAnalysis": ("chemicalFormula", "weightPercentageCalculated",
                          "weightPercentageExperimental"),
    "HNMR": ("shifts", "solvent", "temperature"),
    "InfraredSpectroscopy": ("bands", "material")}
NO_PH = -1  # the ground truth's "not stated" for targetPH
UNNAMED = "unnamed"
CBU_FIELD = re.compile(r"^(mopCCDCNumber|cbuFormula\d+|cbuSpeciesNames\d+)$")
FIELD_STEP = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(?:\[(\d+)\])?")


def snake_type(name: str) -> str:
    """Tool-name spelling of a step class.

    >>> snake_type("HeatChill")
    'heat_chill'
    """
    return "".join("_" + c.lower() if c.isupper() else c for c in name).lstrip("_")


def chemical_args(entry: dict[str, Any]) -> dict[str, Any]:
    """A ground-truth chemical (names, amount, formula) as a nested ChemicalInput argument."""
    names = [n for n in entry.get("chemicalName") or [] if not is_empty(n)] or [UNNAMED]
    out: dict[str, Any] = {"label": names[0]}
    if len(names) > 1:
        out["alternative_names"] = "; ".join(n.replace(";", ",") for n in names[1:])
    for key, arg in (("chemicalAmount", "amount"), ("chemicalFormula", "chemical_formula")):
        if not is_empty(entry.get(key)):
            out[arg] = str(entry[key])
    return out


def step_call(synthesis: str, step_type: str, step: dict[str, Any], *,
              unexpressed: Callable[[str, Any, str], None] | None = None
              ) -> tuple[str, dict[str, Any]]:
    """The create_<step> call of one ground-truth step; fields without a tool argument go to
    `unexpressed(field, value, reason)`."""
    args: dict[str, Any] = {"chemical_synthesis": synthesis, "order": step["stepNumber"]}
    names = {**COMMON_STEP_FIELDS, **STEP_FIELDS.get(step_type, {})}
    for key, value in step.items():
        if key in STEP_CHEMICALS:
            chemicals = [chemical_args(c) for c in value]
            if key == "addedChemical" and chemicals:  # one Add owns exactly one ChemicalInput
                args[STEP_CHEMICALS[key]] = chemicals[0]
                for extra in chemicals[1:] if unexpressed else ():
                    unexpressed(key, extra["label"], "an Add step holds exactly one chemical")
            elif chemicals:
                args[STEP_CHEMICALS[key]] = chemicals
            continue
        if value is None or is_empty(value) or (key == "targetPH" and value == NO_PH):
            continue
        if key not in names:
            if unexpressed and key not in IGNORED_STEP_FIELDS:
                unexpressed(key, value, f"no argument of create_{snake_type(step_type)}")
            continue
        if key == "atmosphere" and value.lower() in ATMOSPHERES:
            if unexpressed and ATMOSPHERES[value.lower()].lower() != value.lower():
                unexpressed(key, value, "the profile's vessel environments spell it "
                            f"{ATMOSPHERES[value.lower()]!r}; written so")
            value = ATMOSPHERES[value.lower()]
        args[names[key]] = value
    return f"create_{snake_type(step_type)}", args


def device_args(group: dict[str, Any]) -> dict[str, Any]:
    """The instrument arguments of a characterisation session from a ground-truth device group."""
    out: dict[str, Any] = {}
    for key, arg in DEVICES.items():
        device = group.get(key) or {}
        given = {k: device[k] for k in ("deviceName", "frequency") if not is_empty(device.get(k))}
        if not given:
            continue
        entry: dict[str, Any] = {"label": given.get("deviceName") or key}
        if "deviceName" in given:
            entry["device_name"] = given["deviceName"]
        if "frequency" in given:
            entry["frequency"] = given["frequency"]
        out[arg] = [entry]
    return out


def cbu_count(mop: dict[str, Any]) -> int:
    """How many CBUs a MOP record numbers (cbuFormula1, cbuFormula2, ...).

    >>> cbu_count({"cbuFormula1": "a", "cbuFormula2": "b", "cbuFormulaX": "c"})
    2
    """
    numbers = [int(k.removeprefix("cbuFormula")) for k in mop
               if k.startswith("cbuFormula") and k.removeprefix("cbuFormula").isdigit()]
    return max(numbers, default=0)


def ccdc_key(number: str) -> str:
    """CCDC numbers compared by their digits (the ground truth has stray spaces).

    >>> ccdc_key("96272 8") == ccdc_key("962728")
    True
    """
    return "".join(c for c in str(number) if c.isalnum())


def without_field(args: dict[str, Any], path: str, *,
                  keep: frozenset[str]) -> dict[str, Any] | None:
    """`args` without the value at an envelope field path (`a.b[1].c`), or None when that is a
    required argument or not present.

    >>> without_field({"x": 1, "t": {"value": 5, "unit": "furlong"}}, "t.unit", keep=frozenset())
    {'x': 1, 't': {'value': 5}}
    >>> without_field({"u": [{"l": "a"}, {"l": "b"}]}, "u[1].l", keep=frozenset())
    {'u': [{'l': 'a'}, {}]}
    >>> without_field({"order": 1}, "order", keep=frozenset({"order"})) is None
    True
    >>> without_field({"x": 1, "t": {"value": 5}}, "t.unit", keep=frozenset())
    {'x': 1}
    """
    steps = [(m.group(1), m.group(2)) for m in FIELD_STEP.finditer(path)]
    if not steps or steps[0][0] in keep or steps[0][0] not in args:
        return None
    while steps:  # a path already dropped: its parent goes
        reduced = _drop(args, steps)
        if reduced is not None:
            return reduced
        steps = steps[:-1] if steps[-1][1] is None else [*steps[:-1], (steps[-1][0], None)]
    return None


def _drop(args: dict[str, Any], steps: list[tuple[str, str | None]]) -> dict[str, Any] | None:
    copy = json.loads(json.dumps(args))
    parent: Any = copy
    for depth, (name, index) in enumerate(steps):
        last = depth == len(steps) - 1
        if not isinstance(parent, dict) or name not in parent:
            return None
        if last and index is None:
            del parent[name]
            return copy
        child = parent[name]
        if index is not None:
            if not isinstance(child, list) or int(index) >= len(child):
                return None
            if last:
                del child[int(index)]
                if not child:
                    del parent[name]
                return copy
            child = child[int(index)]
        parent = child
    return None
