"""The oracle's deterministic agent: builds one ground-truth paper through the compiled MCP
tools in a bound client session, keeping what it could not put into the graph as findings.

The oracle never writes triples itself: what the tools cannot hold is reported, not invented.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from mcp import Client
from pydantic import BaseModel, ConfigDict

from kgctl.chemistry.oracle_calls import (
    CBU_FIELD,
    DEVICES,
    MEASUREMENT_FIELDS,
    UNNAMED,
    cbu_count,
    ccdc_key,
    chemical_args,
    device_args,
    step_call,
    without_field,
)
from kgctl.evaluation.values import is_empty
from kgctl.store.iris import normalise_label

MAX_RETRIES = 6  # a call is retried after dropping each refused value, this many times at most


class OracleFinding(BaseModel):
    """One ground-truth value the oracle could not put into the graph, with its reason."""

    model_config = ConfigDict(frozen=True)
    paper: str
    category: str
    field: str
    value: str = ""
    reason: str

    def __str__(self) -> str:
        shown = f" = {self.value!r}" if self.value else ""
        return f"{self.paper} [{self.category}] {self.field}{shown}: {self.reason}"


class PaperAgent:
    """Builds one paper in the bound session; keeps the IRIs it created by CCDC number."""

    def __init__(self, client: Client, paper: str) -> None:
        self.client = client
        self.paper = paper
        self.findings: list[OracleFinding] = []
        self.calls = 0
        self.rejected = 0
        self.outputs: dict[str, str] = {}  # CCDC number -> ChemicalOutput IRI
        self.hosts: dict[str, list[str]] = {}  # CCDC number -> every output with it, in order
        self.syntheses: dict[str, str] = {}  # CCDC number -> ChemicalSynthesis IRI
        self.claimed: set[str] = set()  # syntheses already given their chemicals record
        self.output_of: dict[str, str] = {}  # synthesis IRI -> output IRI
        self.required: dict[str, frozenset[str]] = {}
        self.product_names: dict[str, list[str]] = {}  # output IRI -> product names written
        self.represented: set[str] = set()  # outputs already represented by a MOP

    def finding(self, category: str, field: str, value: Any, reason: str) -> None:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        self.findings.append(OracleFinding(paper=self.paper, category=category, field=field,
                                           value=text, reason=reason))

    async def call(self, tool: str, args: dict[str, Any], *, category: str,
                   field: str) -> tuple[str, ...] | None:
        """IRIs written by the call, or None. A rejection is itemised with its envelope; like
        an agent reading the feedback, the oracle then drops the refused value and retries
        (never a required argument)."""
        for _ in range(MAX_RETRIES):
            self.calls += 1
            result = await self.client.call_tool(tool, args)
            text = result.content[0].text if result.content else "{}"
            if not result.is_error:
                return tuple(json.loads(text).get("iris", ()))
            self.rejected += 1
            envelope = json.loads(text)
            where = str(envelope.get("field") or "")
            reduced = without_field(args, where, keep=self.required.get(tool, frozenset()))
            self.finding(category, field, envelope.get("value") or "",
                         f"{tool} rejected: {envelope.get('code')} at {where!r}: "
                         f"{envelope.get('message')}"
                         + ("; dropped it and retried" if reduced is not None else ""))
            if reduced is None:
                return None
            args = reduced
        return None

    def unexpressed(self, category: str, where: str, record: dict[str, Any],
                    handled: Iterable[str]) -> None:
        """Ground-truth fields with a value that no tool argument takes."""
        for key, value in record.items():
            if key not in handled and not is_empty(value):
                self.finding(category, f"{where}.{key}", value,
                             "no tool argument or ontology property holds this field")

    # steps ---------------------------------------------------------------------------------
    async def steps(self, doc: dict[str, Any]) -> None:
        for i, syn in enumerate(doc.get("Synthesis", []), start=1):
            names = [n for n in syn.get("productNames") or [] if not is_empty(n)]
            ccdc = syn.get("productCCDCNumber")
            output: dict[str, Any] = {"label": names[-1] if names else f"product {i}"}
            if names:
                output["product_name"] = names
            iris = await self.call("create_chemical_synthesis", {
                "label": f"synthesis {i}: {names[0] if names else ''}".strip(),
                "chemical_output": output}, category="steps", field=f"Synthesis[{i}]")
            if iris is None:
                continue
            synthesis, out = iris[0], iris[1]
            self.output_of[synthesis] = out
            self.product_names[out] = names
            if not is_empty(ccdc):
                await self.call("add_ccdc_number", {"subject": out,
                                                    "ccdc_number_value": [ccdc]},
                                category="steps", field=f"Synthesis[{i}].productCCDCNumber")
                self.outputs.setdefault(ccdc_key(ccdc), out)
                self.hosts.setdefault(ccdc_key(ccdc), []).append(out)
                self.syntheses.setdefault(ccdc, synthesis)
            for step in syn.get("steps", []):
                (step_type, body), = step.items()
                where = f"Synthesis[{i}].steps[{body.get('stepNumber')}].{step_type}"
                tool, args = step_call(
                    synthesis, step_type, body,
                    unexpressed=lambda f, v, r, w=where: self.finding("steps", f"{w}.{f}", v, r))
                await self.call(tool, args, category="steps", field=where)

    # chemicals -----------------------------------------------------------------------------
    async def chemicals(self, doc: dict[str, Any]) -> None:
        for i, proc in enumerate(doc.get("synthesisProcedures", []), start=1):
            where = f"synthesisProcedures[{i}]"
            outs = [o for step in proc.get("steps", []) for o in step.get("outputChemical", [])]
            ccdc = next((o.get("CCDCNumber") for o in outs
                         if not is_empty(o.get("CCDCNumber"))), None)
            synthesis = self.syntheses.get(ccdc) if ccdc else None
            if synthesis in self.claimed:
                synthesis = None
            first = outs[0] if outs else {}
            self.unexpressed("chemicals", where, proc, ("procedureName", "steps"))
            for step in proc.get("steps", []):
                self.unexpressed("chemicals", where, step, ("inputChemicals", "outputChemical"))
                for out in step.get("outputChemical", []):
                    self.unexpressed("chemicals", f"{where}.outputChemical", out,
                                     ("CCDCNumber", "chemicalFormula", "names", "yield"))
                for group in step.get("inputChemicals", []):
                    self.unexpressed("chemicals", f"{where}.inputChemicals", group,
                                     ("chemical", "purity", "supplierName"))
                    for chem in group.get("chemical", []):
                        self.unexpressed("chemicals", f"{where}.inputChemicals.chemical", chem,
                                         ("chemicalName", "chemicalAmount", "chemicalFormula"))
            if synthesis is None:
                names = [n for n in first.get("names") or [] if not is_empty(n)]
                output: dict[str, Any] = {"label": names[0] if names else f"product of {i}"}
                if names:
                    output["product_name"] = names
                if not is_empty(first.get("chemicalFormula")):
                    output["ontosyn_chemical_formula"] = first["chemicalFormula"]
                iris = await self.call("create_chemical_synthesis", {
                    "label": proc.get("procedureName") or f"procedure {i}",
                    "chemical_output": output}, category="chemicals", field=where)
                if iris is None:
                    continue
                synthesis = iris[0]
                self.output_of[synthesis] = iris[1]
                self.product_names[iris[1]] = names
                if ccdc:
                    await self.call("add_ccdc_number", {"subject": iris[1],
                                                        "ccdc_number_value": [ccdc]},
                                    category="chemicals", field=f"{where}.CCDCNumber")
                    self.outputs.setdefault(ccdc_key(ccdc), iris[1])
                    self.hosts.setdefault(ccdc_key(ccdc), []).append(iris[1])
            elif not is_empty(first.get("chemicalFormula")):  # an output the steps made
                await self.call("update_property", {
                    "entity": self.output_of[synthesis], "property": "ontosyn:hasChemicalFormula",
                    "value": first["chemicalFormula"]}, category="chemicals",
                    field=f"{where}.outputChemical.chemicalFormula")
            self.claimed.add(synthesis)
            for extra in outs[1:]:
                self.finding("chemicals", f"{where}.outputChemical", extra.get("names"),
                             "a synthesis has at most one chemical output")
            if not is_empty(first.get("yield")):
                await self.yield_(synthesis, first["yield"], where)
            for step in proc.get("steps", []):
                for j, group in enumerate(step.get("inputChemicals", []), start=1):
                    for chem in group.get("chemical", []):
                        args = {"subject": synthesis, **chemical_args(chem)}
                        for key, arg in (("purity", "purity"), ("supplierName",
                                                                "is_supplied_by")):
                            if not is_empty(group.get(key)):
                                args[arg] = group[key]
                        await self.call("add_chemical_input", args, category="chemicals",
                                        field=f"{where}.inputChemicals[{j}]")

    async def yield_(self, synthesis: str, value: str, where: str) -> None:
        await self.call("update_property", {"entity": synthesis, "property": "ontosyn:hasYield",
                                            "value": value},
                        category="chemicals", field=f"{where}.outputChemical.yield")

    # characterisation ----------------------------------------------------------------------
    async def characterisation(self, doc: dict[str, Any]) -> None:
        for i, group in enumerate(doc.get("Devices", []), start=1):
            session: str | None = None
            self.unexpressed("characterisation", f"Devices[{i}]", group,
                             ("Characterisation", *DEVICES))
            for key in DEVICES:
                self.unexpressed("characterisation", f"Devices[{i}].{key}",
                                 group.get(key) or {}, ("deviceName", "frequency"))
            devices = device_args(group)
            for k, rec in enumerate(group.get("Characterisation", []), start=1):
                where = f"Devices[{i}].Characterisation[{k}]"
                species = await self.species(rec, where)
                if species is None:
                    continue
                if session is None:
                    iris = await self.call("add_characterization_session", {
                        "subject": species, "label": f"characterisation session {i}",
                        **devices}, category="characterisation", field=f"Devices[{i}]")
                    session = iris[0] if iris else None
                else:
                    await self.call("link", {
                        "subject": species, "property": "ontospecies:hasCharacterizationSession",
                        "object": session}, category="characterisation", field=where)
                await self.measurements(species, rec, where)

    async def species(self, rec: dict[str, Any], where: str) -> str | None:
        ccdc = rec.get("productCCDCNumber")
        names = [n for n in rec.get("productNames") or [] if not is_empty(n)]
        if not is_empty(ccdc) and ccdc_key(ccdc) in self.outputs:
            output = self.outputs[ccdc_key(ccdc)]
            await self.more_names(output, names, where)
            return output
        args: dict[str, Any] = {"label": names[0] if names else UNNAMED}
        if names:
            args["product_name"] = names
        iris = await self.call("create_species", args, category="characterisation", field=where)
        if iris and not is_empty(ccdc):
            await self.call("add_ccdc_number", {"subject": iris[0], "ccdc_number_value": [ccdc]},
                            category="characterisation", field=f"{where}.productCCDCNumber")
        return iris[0] if iris else None

    async def more_names(self, output: str, names: list[str], where: str) -> None:
        """Give a product the names another record uses for it (names are aliases)."""
        known = self.product_names.setdefault(output, [])
        new = [n for n in names if n not in known]
        if new:
            known.extend(new)
            await self.call("update_property", {
                "entity": output, "property": "ontospecies:hasProductName", "value": known},
                category="characterisation", field=f"{where}.productNames")

    async def measurements(self, species: str, rec: dict[str, Any], where: str) -> None:
        self.unexpressed("characterisation", where, rec, (
            "productNames", "productCCDCNumber", "ElementalAnalysis", "HNMR",
            "InfraredSpectroscopy"))
        for key, handled in MEASUREMENT_FIELDS.items():
            self.unexpressed("characterisation", f"{where}.{key}", rec.get(key) or {}, handled)
        ea = rec.get("ElementalAnalysis") or {}
        if not is_empty(ea.get("chemicalFormula")):
            await self.call("add_chemical_formula", {
                "subject": species, "chemical_formula_value": [ea["chemicalFormula"]]},
                category="characterisation", field=f"{where}.ElementalAnalysis.chemicalFormula")
        ea_args: dict[str, Any] = {}
        for kind in ("Calculated", "Experimental"):
            value = ea.get(f"weightPercentage{kind}")
            if not is_empty(value):
                ea_args[f"weight_percentage_{kind.lower()}"] = {
                    "label": f"{kind.lower()} weight percentage",
                    f"weight_percentage_{kind.lower()}_value": [value]}
        if ea_args:
            await self.call("add_elemental_analysis_data", {"subject": species, **ea_args},
                            category="characterisation", field=f"{where}.ElementalAnalysis")
        nmr = rec.get("HNMR") or {}
        nmr_args: dict[str, Any] = {k: nmr[k] for k in ("shifts", "temperature")
                                    if not is_empty(nmr.get(k))}
        if not is_empty(nmr.get("solvent")):
            nmr_args["uses_solvent"] = {"label": nmr["solvent"], "solvent_name": nmr["solvent"]}
        if nmr_args:
            await self.call("add_hnmr_data", {"subject": species, **nmr_args},
                            category="characterisation", field=f"{where}.HNMR")
        ir = rec.get("InfraredSpectroscopy") or {}
        ir_args: dict[str, Any] = {}
        if not is_empty(ir.get("bands")):
            ir_args["bands"] = ir["bands"]
        if not is_empty(ir.get("material")):
            ir_args["uses_material"] = {"label": ir["material"], "material_name": ir["material"]}
        if ir_args:
            await self.call("add_infrared_spectroscopy_data", {"subject": species, **ir_args},
                            category="characterisation", field=f"{where}.InfraredSpectroscopy")

    # cbu -----------------------------------------------------------------------------------
    async def cbu(self, doc: dict[str, Any]) -> None:
        named = {normalise_label(str(mop[f"cbuFormula{n}"]))
                 for mop in doc.get("synthesisProcedures", [])
                 for n in range(1, cbu_count(mop) + 1)
                 if not is_empty(mop.get(f"cbuFormula{n}"))
                 and any(not is_empty(x) for x in mop.get(f"cbuSpeciesNames{n}") or [])}
        for i, mop in enumerate(doc.get("synthesisProcedures", []), start=1):
            where = f"synthesisProcedures[{i}]"
            ccdc = mop.get("mopCCDCNumber")
            self.unexpressed("cbu", where, mop, [k for k in mop if CBU_FIELD.match(k)])
            units = []
            for n in range(1, cbu_count(mop) + 1):
                formula = mop.get(f"cbuFormula{n}")
                names = [x for x in mop.get(f"cbuSpeciesNames{n}") or [] if not is_empty(x)]
                if is_empty(formula):
                    if names:
                        self.finding("cbu", f"{where}.cbuSpeciesNames{n}", names,
                                     "a CBU is identified by its formula and none is given")
                    continue
                unit: dict[str, Any] = {"cbu_formula": formula}
                if names:
                    unit["label"] = names[0]
                elif normalise_label(str(formula)) in named:
                    self.finding("cbu", f"{where}.cbuSpeciesNames{n}", formula,
                                 "unnamed here, named in another MOP of the paper: a CBU is "
                                 "one entity per paper (found by its formula), so its names "
                                 "read back here too")
                units.append(unit)
            args: dict[str, Any] = {"label": f"MOP {ccdc or i}"}
            if not is_empty(ccdc):
                args["ccdc_number"] = ccdc
            if units:
                args["chemical_building_unit"] = units
            output = self.mop_host(ccdc)
            if output is None:  # no described product is this MOP: it stands alone
                await self.call("create_metal_organic_polyhedron", args, category="cbu",
                                field=where)
                continue
            self.represented.add(output)
            await self.call("add_is_represented_by", {"subject": output, **args},
                            category="cbu", field=where)

    def mop_host(self, ccdc: Any) -> str | None:
        """The product a MOP represents: the first one (in creation order) with its CCDC number
        not yet represented (several syntheses may make one product), else the first with it;
        a MOP without a CCDC number goes to the first product without one not yet represented."""
        if not is_empty(ccdc):
            hosts = self.hosts.get(ccdc_key(ccdc), [])
            return next((o for o in hosts if o not in self.represented),
                        hosts[0] if hosts else None)
        with_ccdc = {o for hosts in self.hosts.values() for o in hosts}
        return next((o for o in self.product_names
                     if o not in with_ccdc and o not in self.represented), None)

