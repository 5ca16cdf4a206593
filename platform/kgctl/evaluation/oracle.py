"""Round-trip oracle: a deterministic agent that builds each ground-truth paper through the
compiled MCP tools (a real in-process client session), exports the call traces and collects
findings: ground-truth values the tools cannot express, and calls they rejected.

The mapping ground truth -> tool call lives here, one place for all four categories. The
oracle never writes triples itself: what the tools cannot hold is reported, not invented.

>>> step_call("S1", "Stir", {"stepNumber": 2, "duration": "2 h", "wait": True})
('create_stir', {'chemical_synthesis': 'S1', 'order': 2, 'step_duration': '2 h', 'is_wait': True})
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from pydantic import BaseModel, ConfigDict

from kgctl.errors import InputError
from kgctl.evaluation.loader import CATEGORIES
from kgctl.evaluation.values import is_empty
from kgctl.store.base import GraphStore
from kgctl.store.iris import normalise_label
from kgctl.store.iris import paper_id as make_paper_id
from kgctl.store.trace import trace_jsonl

# ground-truth step field -> compiled argument name (per step type where they differ)
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


class PaperBuild(BaseModel):
    """What building one paper did: calls made, calls rejected, findings."""

    model_config = ConfigDict(frozen=True)
    paper: str
    calls: int
    rejected: int
    findings: tuple[OracleFinding, ...]


# -- pure mapping ----------------------------------------------------------------------------
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


# -- the agent -------------------------------------------------------------------------------
class ToolRejected(Exception):
    """A tool call came back as a feedback envelope."""

    def __init__(self, tool: str, envelope: dict[str, Any]) -> None:
        super().__init__(f"{tool}: {envelope.get('code')} at {envelope.get('field')!r}: "
                         f"{envelope.get('message')}")
        self.envelope = envelope


class _Agent:
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
            devices = _devices(group)
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
                 for n in range(1, _cbu_count(mop) + 1)
                 if not is_empty(mop.get(f"cbuFormula{n}"))
                 and any(not is_empty(x) for x in mop.get(f"cbuSpeciesNames{n}") or [])}
        for i, mop in enumerate(doc.get("synthesisProcedures", []), start=1):
            where = f"synthesisProcedures[{i}]"
            ccdc = mop.get("mopCCDCNumber")
            self.unexpressed("cbu", where, mop, [k for k in mop if CBU_FIELD.match(k)])
            units = []
            for n in range(1, _cbu_count(mop) + 1):
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


def _devices(group: dict[str, Any]) -> dict[str, Any]:
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


def _cbu_count(mop: dict[str, Any]) -> int:
    numbers = [int(k.removeprefix("cbuFormula")) for k in mop
               if k.startswith("cbuFormula") and k.removeprefix("cbuFormula").isdigit()]
    return max(numbers, default=0)


# -- driving ---------------------------------------------------------------------------------
def load_paper(root: Path, paper: str) -> dict[str, dict[str, Any]]:
    """The raw ground-truth JSON of one paper by category (missing categories left out)."""
    docs = {}
    for category in CATEGORIES:
        path = root / category / f"{paper}.json"
        if not path.is_file():
            continue
        try:
            docs[category] = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InputError(f"{path}: not readable JSON ({exc})") from exc
    return docs


def benchmark_papers(root: Path) -> list[str]:
    """Paper ids present in any category folder of a benchmark."""
    return sorted({p.stem for c in CATEGORIES for p in (root / c).glob("*.json")})


async def build_papers(client: Client, root: Path, papers: Iterable[str], *,
                       step: Callable[[str], None] | None = None) -> list[PaperBuild]:
    """Build every paper through `client` (a session on the instantiation server)."""
    builds = []
    listing = await client.list_tools()
    required = {t.name: frozenset(t.input_schema.get("required") or ()) for t in listing.tools}
    for paper in papers:
        docs = load_paper(root, paper)
        await client.call_tool("select_paper", {"paper_id": paper})
        agent = _Agent(client, paper)
        agent.required = required
        # the steps and chemicals records share a synthesis node per product (CCDC number)
        for category in ("steps", "chemicals", "characterisation", "cbu"):
            if category in docs:
                await getattr(agent, category)(docs[category])
        builds.append(PaperBuild(paper=paper, calls=agent.calls, rejected=agent.rejected,
                                 findings=tuple(agent.findings)))
        if step:
            step(paper)
    return builds


def run_oracle(store: GraphStore, root: Path, *, papers: Iterable[str] | None = None,
               traces: Path | None = None, step: Callable[[str], None] | None = None
               ) -> list[PaperBuild]:
    """Build `papers` (default: all of the benchmark at `root`) into `store` through a real
    in-process MCP session; each paper is rebuilt from scratch; traces go to `traces`."""
    from kgctl.instantiation.server import build_server
    from kgctl.ontology import default_ir

    chosen = list(papers) if papers is not None else benchmark_papers(root)
    present = set(store.papers())
    for paper in chosen:
        if make_paper_id(paper) in present:
            store.drop(make_paper_id(paper))
    server = build_server(default_ir(), store)

    async def main() -> list[PaperBuild]:
        async with Client(server) as client:
            return await build_papers(client, root, chosen, step=step)

    builds = anyio.run(main)
    if traces is not None:
        traces.mkdir(parents=True, exist_ok=True)
        for paper in chosen:
            (traces / f"{paper}.jsonl").write_text(
                trace_jsonl(store.trace(make_paper_id(paper))), encoding="utf-8")
    return builds


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
