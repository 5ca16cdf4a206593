"""Pydantic models of the four MOP record types (steps, chemicals, characterisation, cbu).

The models accept the heterogeneous spellings of the ground truth ("N/A" vs "n/a",
targetPH -1 meaning none, "0.045 g (0.276 mmol)", "2 days", "room temperature") and hold
every value in its canonical, formatting-normalised form (see ``values``): two records agree
on a slot exactly when the canonical values are equal. Field kinds are the annotations.

>>> step = Step.model_validate({"HeatChill": {"stepNumber": 2, "targetPH": -1,
...     "duration": "2 days", "targetTemperature": "120.0 °C", "atmosphere": "N/A"}})
>>> step.type, step.duration, step.targetTemperature, step.targetPH, step.atmosphere
('HeatChill', '2 day', '120 degreeCelsius', None, None)
>>> Cbu.model_validate({"mopCCDCNumber": "1", "cbuFormula1": "[Cu2]",
...     "cbuSpeciesNames1": ["Cu(OAc)2"]}).cbus[0].cbuFormula
'[Cu2]'
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from kgctl.evaluation import values

STEP_TYPES = ("Add", "Stir", "HeatChill", "Evaporate", "Sonicate", "Transfer", "Separate",
              "Filter", "Dry")
NO_PH = -1  # the ground truth writes targetPH -1 for "no target pH"
MAX_NUMBERED_CBUS = 9


def _optional(normalise):
    def convert(value: Any) -> Any:
        if values.is_empty(value):
            return None
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            return value  # let pydantic report the wrong type
        return normalise(str(value))
    return BeforeValidator(convert)


def _names(value: Any) -> Any:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return value
    names = {values.text(v) for v in value if isinstance(v, str) and not values.is_empty(v)}
    return tuple(sorted(names)) or None


def _ph(value: Any) -> Any:
    return None if values.is_empty(value) or value == NO_PH else value


def _flag(value: Any) -> Any:
    if isinstance(value, str) and value.strip().casefold() in ("true", "yes"):
        return True
    return False if values.is_empty(value) or value in ("false", "no") else value


Text = Annotated[str | None, _optional(values.text)]
Formula = Annotated[str | None, _optional(values.formula)]
Identifier = Annotated[str | None, _optional(values.identifier)]
Quantity = Annotated[str | None, _optional(values.quantity)]
Names = Annotated[tuple[str, ...] | None, BeforeValidator(_names)]
Ph = Annotated[float | None, BeforeValidator(_ph)]
Flag = Annotated[bool, BeforeValidator(_flag)]
Count = Annotated[int | None, BeforeValidator(lambda v: None if values.is_empty(v) else v)]


class Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


# --- steps -----------------------------------------------------------------------------

class ChemicalAmount(Record):
    chemicalName: Names = None
    chemicalAmount: Quantity = None


class Step(Record):
    """One synthesis step; the ground truth writes it as ``{"<StepType>": {fields}}``."""

    type: Literal[STEP_TYPES]  # type: ignore[valid-type]
    stepNumber: Count = None
    atmosphere: Text = None
    targetPH: Ph = None
    comment: Text = None
    duration: Quantity = None
    addedChemical: tuple[ChemicalAmount, ...] = ()
    stir: Flag = False
    isLayered: Flag = False
    usedDevice: Text = None
    targetTemperature: Quantity = None
    heatingCoolingRate: Quantity = None
    underVacuum: Flag = False
    temperature: Quantity = None
    pressure: Quantity = None
    wait: Flag = False
    transferedAmount: Quantity = None
    numberOfFiltrations: Count = None
    vacuumFiltration: Flag = False
    washingSolvent: tuple[ChemicalAmount, ...] = ()
    separationType: Text = None
    solvent: tuple[ChemicalAmount, ...] = ()
    dryingAgent: tuple[ChemicalAmount, ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _unwrap(cls, data: Any) -> Any:
        if isinstance(data, dict) and len(data) == 1 and "type" not in data:
            (kind, fields), = data.items()
            if isinstance(fields, dict):
                return {"type": kind, **fields}
        return data


class SynthesisRecord(Record):
    productCCDCNumber: Identifier = None
    productNames: Names = None
    steps: tuple[Step, ...] = ()


class StepsDoc(Record):
    Synthesis: tuple[SynthesisRecord, ...] = ()


# --- chemicals -------------------------------------------------------------------------

class Chemical(Record):
    chemicalName: Names = None
    chemicalFormula: Formula = None
    chemicalAmount: Quantity = None


class InputChemical(Record):
    chemical: tuple[Chemical, ...] = ()
    purity: Quantity = None
    supplierName: Text = None


class OutputChemical(Record):
    CCDCNumber: Identifier = None
    chemicalFormula: Formula = None
    names: Names = None
    yield_: Quantity = Field(None, alias="yield")

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


class ProcedureStep(Record):
    inputChemicals: tuple[InputChemical, ...] = ()
    outputChemical: tuple[OutputChemical, ...] = ()


class Procedure(Record):
    procedureName: Text = None
    steps: tuple[ProcedureStep, ...] = ()


class ChemicalsDoc(Record):
    synthesisProcedures: tuple[Procedure, ...] = ()


# --- characterisation ------------------------------------------------------------------

class ElementalAnalysisRecord(Record):
    chemicalFormula: Formula = None
    weightPercentageCalculated: Text = None
    weightPercentageExperimental: Text = None
    measurementDevice: Text = None


class HNMRRecord(Record):
    shifts: Text = None
    solvent: Text = None
    temperature: Quantity = None


class Infrared(Record):
    bands: Text = None
    material: Text = None


class CharacterisationRecord(Record):
    productCCDCNumber: Identifier = None
    productNames: Names = None
    ElementalAnalysis: ElementalAnalysisRecord | None = None
    HNMR: HNMRRecord | None = None
    InfraredSpectroscopy: Infrared | None = None


class Device(Record):
    deviceName: Text = None
    frequency: Quantity = None


class DeviceGroup(Record):
    Characterisation: tuple[CharacterisationRecord, ...] = ()
    ElementalAnalysisDevice: Device | None = None
    HNMRDevice: Device | None = None
    InfraredSpectroscopyDevice: Device | None = None
    XRayDevice: Device | None = None


class CharacterisationDoc(Record):
    Devices: tuple[DeviceGroup, ...] = ()


# --- cbu -------------------------------------------------------------------------------

class BuildingUnit(Record):
    cbuFormula: Formula = None
    cbuSpeciesNames: Names = None


class Cbu(Record):
    """A MOP and its CBUs; the numbered fields cbuFormulaN/cbuSpeciesNamesN become a list."""

    mopCCDCNumber: Identifier = None
    chemicalName: Names = None
    cbus: tuple[BuildingUnit, ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _collect_numbered(cls, data: Any) -> Any:
        if not isinstance(data, dict) or "cbus" in data:
            return data
        rest = dict(data)
        units = []
        for n in range(1, MAX_NUMBERED_CBUS + 1):
            formula_ = rest.pop(f"cbuFormula{n}", None)
            names = rest.pop(f"cbuSpeciesNames{n}", None)
            if formula_ is not None or names is not None:
                units.append({"cbuFormula": formula_, "cbuSpeciesNames": names})
        return {**rest, "cbus": units}


class CbuDoc(Record):
    synthesisProcedures: tuple[Cbu, ...] = ()


DOCUMENTS: dict[str, type[Record]] = {
    "steps": StepsDoc,
    "chemicals": ChemicalsDoc,
    "characterisation": CharacterisationDoc,
    "cbu": CbuDoc,
}
CATEGORIES = tuple(DOCUMENTS)
