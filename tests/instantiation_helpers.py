"""Ground-truth step records of MOP-30 turned into calls of the compiled tools."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

STEPS = Path(__file__).resolve().parents[1] / "benchmarks" / "mop30" / "steps"
ABSENT = {"n/a", ""}
# ground-truth step field -> compiled argument name (per step type where they differ)
COMMON = {"comment": "label", "duration": "step_duration", "atmosphere": "vessel_environment"}
BY_TYPE = {
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
CHEMICAL_LISTS = {"addedChemical": "added_chemical_input", "washingSolvent": "washing_solvent",
                  "dryingAgent": "drying_agent", "solvent": "separation_solvent"}
ATMOSPHERES = {"argon": "Ar"}  # the profile's allowed spellings


def snake_type(name: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in name).lstrip("_")


def chemical(entry: dict[str, Any]) -> dict[str, Any]:
    names = entry.get("chemicalName") or ["unnamed"]
    out: dict[str, Any] = {"label": names[0]}
    if len(names) > 1:
        out["alternative_names"] = "; ".join(n.replace(";", ",") for n in names[1:])
    amount = entry.get("chemicalAmount")
    if amount and amount.lower() not in ABSENT:
        out["amount"] = amount
    return out


def step_call(synthesis: str, step_type: str, step: dict[str, Any]) -> tuple[str, dict]:
    args: dict[str, Any] = {"chemical_synthesis": synthesis, "order": step["stepNumber"]}
    names = {**COMMON, **BY_TYPE.get(step_type, {})}
    for key, value in step.items():
        if key in CHEMICAL_LISTS:
            chemicals = [chemical(c) for c in value]
            if key == "addedChemical":  # one Add owns exactly one ChemicalInput
                args[CHEMICAL_LISTS[key]] = chemicals[0]
            elif chemicals:
                args[CHEMICAL_LISTS[key]] = chemicals
            continue
        if key not in names or value is None:
            continue
        if isinstance(value, str) and value.strip().lower() in ABSENT:
            continue
        if key == "targetPH" and value == -1:
            continue
        if key == "atmosphere":
            value = ATMOSPHERES.get(value.lower(), value)
        args[names[key]] = value
    return f"create_{snake_type(step_type)}", args


def paper_calls(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """Every call that builds the paper's syntheses with all their steps."""
    data = json.loads(path.read_text(encoding="utf-8"))
    calls: list[tuple[str, dict[str, Any]]] = []
    for i, synthesis in enumerate(data["Synthesis"], start=1):
        label = f"synthesis {i}: {synthesis['productNames'][0]}"
        output: dict[str, Any] = {"label": synthesis["productNames"][-1],
                                  "product_name": synthesis["productNames"]}
        calls.append(("create_chemical_synthesis", {"label": label, "chemical_output": output}))
        ccdc = synthesis.get("productCCDCNumber", "")
        if ccdc and ccdc.lower() not in ABSENT:
            calls.append(("add_ccdc_number", {"subject": output["label"],
                                              "ccdc_number_value": [ccdc]}))
        for step in synthesis["steps"]:
            (step_type, body), = step.items()
            calls.append(step_call(label, step_type, body))
    return calls
