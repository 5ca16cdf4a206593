"""Test and benchmark helper: write ground-truth records as graphs in the strict ontology form
the fixed queries read (the same form as tests/data/evaluation/*.trig).

This stands in for the extraction tools only to fill stores for read-out tests and the speed
benchmark; it is not the round-trip oracle (that one goes through the MCP tools).
"""

from __future__ import annotations

import re
from itertools import count

from pyoxigraph import Literal, NamedNode, Quad

from kgctl.evaluation import records as r
from kgctl.evaluation.values import unit_table
from kgctl.store.iris import graph_iri, mint_iri

RDF_TYPE = NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
LABEL = NamedNode("http://www.w3.org/2000/01/rdf-schema#label")
COMMENT = NamedNode("http://www.w3.org/2000/01/rdf-schema#comment")
SYN = "https://www.theworldavatar.com/kg/OntoSyn/"
MOPS = "https://www.theworldavatar.com/kg/ontomops/"
OS = "http://www.theworldavatar.com/ontology/ontospecies/OntoSpecies.owl#"
OM = "http://www.ontology-of-units-of-measure.org/resource/om-2/"
QUANTITY = re.compile(r"^([-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?) (\w+)$", re.I)


class GraphWriter:
    """Collects the quads of one paper's graph."""

    def __init__(self, paper: str) -> None:
        self.paper = paper
        self.graph = graph_iri(paper)
        self.quads: list[Quad] = []
        self._n = count(1)
        self.outputs: dict[str, NamedNode] = {}
        self.syntheses: dict[str, NamedNode] = {}
        self.claimed: set[tuple[str, str]] = set()

    def synthesis(self, ccdc: str | None, role: str) -> NamedNode:
        """One synthesis node per product (CCDC number), shared by the steps and the chemicals
        record of that product; a second record of the same role gets its own node."""
        key = ccdc if ccdc and (role, ccdc) not in self.claimed else f"syn{next(self._n)}"
        self.claimed.add((role, key))
        if key not in self.syntheses:
            self.syntheses[key] = self.node(SYN + "ChemicalSynthesis", key)
        return self.syntheses[key]

    def node(self, cls: str, key: str = "") -> NamedNode:
        iri = mint_iri(self.paper, cls, key or f"n{next(self._n)}")
        self.add(iri, RDF_TYPE, NamedNode(cls))
        return iri

    def add(self, s: NamedNode, p: NamedNode | str, o: NamedNode | Literal | str | None) -> None:
        if o is None:
            return
        obj = Literal(o) if isinstance(o, str) else o
        pred = NamedNode(p) if isinstance(p, str) else p
        self.quads.append(Quad(s, pred, obj, self.graph))

    def names(self, s: NamedNode, names: tuple[str, ...] | None) -> None:
        for i, name in enumerate(names or ()):
            self.add(s, LABEL if i == 0 else SYN + "hasAlternativeNames", name)

    def quantity(self, s: NamedNode, prop: str, cls: str, value: str | None) -> None:
        if value is None:
            return
        q = self.node(OM + cls)
        self.add(s, prop, q)
        match = QUANTITY.match(value)
        if match and match.group(2).casefold() in unit_table():
            self.add(q, OM + "hasNumericalValue", Literal(match.group(1),
                     datatype=NamedNode("http://www.w3.org/2001/XMLSchema#decimal")))
            self.add(q, OM + "hasUnit", NamedNode(OM + unit_table()[match.group(2).casefold()]))
        else:
            self.add(q, LABEL, value)

    def flag(self, s: NamedNode, prop: str, value: bool) -> None:
        if value:
            self.add(s, prop, Literal(True))

    def output(self, ccdc: str | None, names: tuple[str, ...] | None) -> NamedNode:
        key = ccdc or f"out{next(self._n)}"
        if key not in self.outputs:
            self.outputs[key] = self.node(SYN + "ChemicalOutput", key)
            self.add(self.outputs[key], MOPS + "hasCCDCNumber", ccdc)
        out = self.outputs[key]
        for name in names or ():
            self.add(out, SYN + "hasAlternativeNames", name)
        return out


def paper_quads(paper: str, docs: dict[str, r.Record]) -> list[Quad]:
    """Quads of one paper's graph from its validated ground-truth documents."""
    w = GraphWriter(paper)
    if isinstance(docs.get("steps"), r.StepsDoc):
        for syn in docs["steps"].Synthesis:
            s = w.synthesis(syn.productCCDCNumber, "steps")
            w.add(s, SYN + "hasChemicalOutput", w.output(syn.productCCDCNumber, syn.productNames))
            for order, step in enumerate(syn.steps, start=1):
                _step(w, s, step, order)
    if isinstance(docs.get("chemicals"), r.ChemicalsDoc):
        for proc in docs["chemicals"].synthesisProcedures:
            outputs = [o.CCDCNumber for ps in proc.steps for o in ps.outputChemical]
            s = w.synthesis(outputs[0] if outputs else None, "chemicals")
            w.add(s, LABEL, proc.procedureName)
            for pstep in proc.steps:
                for inp in pstep.inputChemicals:
                    for chem in inp.chemical:
                        c = w.node(SYN + "ChemicalInput")
                        w.add(s, SYN + "hasChemicalInput", c)
                        w.names(c, chem.chemicalName)
                        w.add(c, SYN + "hasChemicalFormula", chem.chemicalFormula)
                        w.add(c, SYN + "hasAmount", chem.chemicalAmount)
                        w.add(c, SYN + "hasPurity", inp.purity)
                        if inp.supplierName:
                            sup = w.node(SYN + "Supplier", inp.supplierName)
                            w.add(sup, LABEL, inp.supplierName)
                            w.add(c, SYN + "isSuppliedBy", sup)
                for out in pstep.outputChemical:
                    o = w.output(out.CCDCNumber, out.names)
                    w.add(s, SYN + "hasChemicalOutput", o)
                    w.add(o, SYN + "hasChemicalFormula", out.chemicalFormula)
                    w.quantity(s, SYN + "hasYield", "AmountOfSubstanceFraction", out.yield_)
    if isinstance(docs.get("characterisation"), r.CharacterisationDoc):
        for group in docs["characterisation"].Devices:
            _characterisation(w, group)
    if isinstance(docs.get("cbu"), r.CbuDoc):
        for mop_rec in docs["cbu"].synthesisProcedures:
            mop = w.node(MOPS + "MetalOrganicPolyhedron")
            w.add(mop, MOPS + "hasCCDCNumber", mop_rec.mopCCDCNumber)
            for unit in mop_rec.cbus:
                cbu = w.node(MOPS + "ChemicalBuildingUnit")
                w.add(mop, MOPS + "hasChemicalBuildingUnit", cbu)
                w.add(cbu, MOPS + "hasCBUFormula", unit.cbuFormula)
                for name in unit.cbuSpeciesNames or ():
                    w.add(cbu, LABEL, name)
    return w.quads


def _step(w: GraphWriter, syn: NamedNode, step: r.Step, order: int) -> None:
    s = w.node(SYN + step.type)
    w.add(syn, SYN + "hasSynthesisStep", s)
    w.add(s, SYN + "hasOrder", Literal(step.stepNumber or order))
    w.add(s, COMMENT, step.comment)
    if step.atmosphere:
        env = w.node(SYN + "VesselEnvironment", step.atmosphere)
        w.add(env, LABEL, step.atmosphere)
        w.add(s, SYN + "hasVesselEnvironment", env)
    if step.targetPH is not None:
        w.add(s, SYN + "hasTargetPh", Literal(step.targetPH))
    w.quantity(s, SYN + "hasStepDuration", "Duration", step.duration)
    w.quantity(s, SYN + "hasTargetTemperature", "Temperature", step.targetTemperature)
    w.quantity(s, SYN + "hasTemperatureRate", "TemperatureRate", step.heatingCoolingRate)
    temperature_prop = "hasDryingTemperature" if step.type == "Dry" else "hasStirringTemperature"
    w.quantity(s, SYN + temperature_prop, "Temperature", step.temperature)
    w.quantity(s, SYN + "hasDryingPressure", "Pressure", step.pressure)
    w.quantity(s, SYN + "hasTransferedAmount", "Volume", step.transferedAmount)
    w.flag(s, SYN + ("isStirredHeatChill" if step.type == "HeatChill" else "isStirred"), step.stir)
    w.flag(s, SYN + ("isLayeredTransfer" if step.type == "Transfer" else "isLayered"),
           step.isLayered)
    w.flag(s, SYN + "hasVacuum", step.underVacuum)
    w.flag(s, SYN + "isWait", step.wait)
    w.flag(s, SYN + "isVacuumFiltration", step.vacuumFiltration)
    if step.numberOfFiltrations is not None:
        w.add(s, SYN + "isRepeated", Literal(step.numberOfFiltrations))
    for prop, text in (("hasHeatChillDevice", step.usedDevice),
                       ("isSeparationType", step.separationType)):
        if text:
            thing = w.node(SYN + ("HeatChillDevice" if prop == "hasHeatChillDevice"
                                  else "SeparationType"), text)
            w.add(thing, LABEL, text)
            w.add(s, SYN + prop, thing)
    for prop, chems in (("hasAddedChemicalInput", step.addedChemical),
                        ("hasWashingSolvent", step.washingSolvent),
                        ("hasSeparationSolvent", step.solvent),
                        ("hasDryingAgent", step.dryingAgent)):
        for chem in chems:
            c = w.node(SYN + "ChemicalInput")
            w.add(s, SYN + prop, c)
            w.names(c, chem.chemicalName)
            w.add(c, SYN + "hasAmount", chem.chemicalAmount)


def _characterisation(w: GraphWriter, group: r.DeviceGroup) -> None:
    session = w.node(OS + "CharacterizationSession")
    for prop, device in (("hasElementalAnalysisDevice", group.ElementalAnalysisDevice),
                         ("hasHNMRDevice", group.HNMRDevice),
                         ("hasInfraredSpectroscopyDevice", group.InfraredSpectroscopyDevice)):
        if device and (device.deviceName or device.frequency):
            d = w.node(OS + prop.removeprefix("has"))
            w.add(session, OS + prop, d)
            w.add(d, OS + "hasDeviceName", device.deviceName)
            w.add(d, OS + "hasFrequency", device.frequency)
    for rec in group.Characterisation:
        sp = w.output(rec.productCCDCNumber, rec.productNames)
        w.add(sp, OS + "hasCharacterizationSession", session)
        ea, nmr, ir = rec.ElementalAnalysis, rec.HNMR, rec.InfraredSpectroscopy
        if ea and ea.chemicalFormula:
            f = w.node(OS + "ChemicalFormula")
            w.add(sp, OS + "hasChemicalFormula", f)
            w.add(f, OS + "hasChemicalFormulaValue", ea.chemicalFormula)
        if ea and (ea.weightPercentageCalculated or ea.weightPercentageExperimental):
            d = w.node(OS + "ElementalAnalysisData")
            w.add(sp, OS + "hasElementalAnalysisData", d)
            for kind, value in (("Calculated", ea.weightPercentageCalculated),
                                ("Experimental", ea.weightPercentageExperimental)):
                if value:
                    wp = w.node(OS + "WeightPercentage")
                    w.add(d, OS + f"hasWeightPercentage{kind}", wp)
                    w.add(wp, OS + f"hasWeightPercentage{kind}Value", value)
        if nmr and (nmr.shifts or nmr.solvent or nmr.temperature):
            d = w.node(OS + "HNMRData")
            w.add(sp, OS + "hasHNMRData", d)
            w.add(d, OS + "hasShifts", nmr.shifts)
            w.add(d, OS + "hasTemperature", nmr.temperature)
            if nmr.solvent:
                sv = w.node(OS + "Solvent", nmr.solvent)
                w.add(d, OS + "usesSolvent", sv)
                w.add(sv, OS + "hasSolventName", nmr.solvent)
        if ir and (ir.bands or ir.material):
            d = w.node(OS + "InfraredSpectroscopyData")
            w.add(sp, OS + "hasInfraredSpectroscopyData", d)
            w.add(d, OS + "hasBands", ir.bands)
            if ir.material:
                m = w.node(OS + "Material", ir.material)
                w.add(d, OS + "usesMaterial", m)
                w.add(m, OS + "hasMaterialName", ir.material)
