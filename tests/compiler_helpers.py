"""A small hand-built IR (a toy synthesis ontology) for compiler and instantiation tests."""

from __future__ import annotations

from kgctl.ontology.ir import (
    Cardinality,
    ClassInfo,
    Enumeration,
    OntologyIR,
    OrderingRule,
    PropertyInfo,
    QuantityKind,
    Source,
    Unit,
)

EX = "https://example.org/toy/"
OM = "http://www.ontology-of-units-of-measure.org/resource/om-2/"
XSD = "http://www.w3.org/2001/XMLSchema#"
SRC = Source(kind="profile", file="toy.yaml", line=1)


def _cls(name: str, *, parents: tuple[str, ...] = (), **kw) -> ClassInfo:
    return ClassInfo(iri=EX + name, name=name, label=name, parents=parents, ancestors=parents,
                     ontology="toy.ttl", **kw)


def _prop(name: str, kind: str, domain: tuple[str, ...], rng: tuple[str, ...], **kw):
    return PropertyInfo(iri=EX + name, name=name, label=name, kind=kind, domain=domain,
                        range=rng, ontology="toy.ttl", **kw)


def toy_ir() -> OntologyIR:
    step = EX + "Step"
    classes = [
        _cls("Synthesis", comment="A whole procedure."),
        _cls("Step", abstract=True),
        _cls("Heat", parents=(step,), comment="Heat or cool."),
        _cls("Mix", parents=(step,)),
        _cls("Input"),
        _cls("Output"),
        _cls("Device", identity="label"),
        _cls("Supplier", identity="label"),
    ]
    props = [
        _prop("hasStep", "object", (EX + "Synthesis",), (step,)),
        _prop("hasOrder", "datatype", (step,), (XSD + "integer",)),
        _prop("hasOutput", "object", (EX + "Synthesis",), (EX + "Output",)),
        _prop("hasStatus", "datatype", (EX + "Synthesis",), (XSD + "string",)),
        _prop("hasTemperature", "object", (EX + "Heat",), (OM + "Temperature",)),
        _prop("hasDuration", "object", (step,), (OM + "Duration",)),
        _prop("hasDevice", "object", (EX + "Heat",), (EX + "Device",)),
        _prop("isStirred", "datatype", (step,), (XSD + "boolean",)),
        _prop("hasInput", "object", (EX + "Mix",), (EX + "Input",)),
        _prop("hasAmount", "datatype", (EX + "Input",), (XSD + "string",)),
        _prop("isSuppliedBy", "object", (EX + "Input",), (EX + "Supplier",)),
        _prop("hasYield", "datatype", (EX + "Output",), (XSD + "double",)),
    ]
    units = [
        Unit(iri=OM + "degreeCelsius", name="degreeCelsius", label="degree Celsius",
             category=OM + "TemperatureUnit"),
        Unit(iri=OM + "kelvin", name="kelvin", label="kelvin", category=OM + "TemperatureUnit"),
        Unit(iri=OM + "hour", name="hour", label="hour", category=OM + "TimeUnit"),
        Unit(iri=OM + "minute-Time", name="minute-Time", label="minute",
             category=OM + "TimeUnit"),
    ]
    quantities = [
        QuantityKind(iri=OM + "Temperature", label="Temperature",
                     unit_category=OM + "TemperatureUnit",
                     units=(OM + "degreeCelsius", OM + "kelvin"),
                     value_property=OM + "hasNumericalValue", unit_property=OM + "hasUnit",
                     source=SRC),
        QuantityKind(iri=OM + "Duration", label="Duration", unit_category=OM + "TimeUnit",
                     units=(OM + "hour", OM + "minute-Time"),
                     value_property=OM + "hasNumericalValue", unit_property=OM + "hasUnit",
                     source=SRC),
    ]
    return OntologyIR(
        ontologies=("toy.ttl",),
        prefixes={"ex": EX, "om-2": OM},
        top_level=(EX + "Synthesis",),
        classes={c.iri: c for c in classes},
        properties={p.iri: p for p in props},
        cardinalities=(
            Cardinality(on_class=EX + "Synthesis", on_property=EX + "hasOutput", min=1, max=1,
                        sources=(SRC,)),
            Cardinality(on_class=step, on_property=EX + "hasDuration", max=1, sources=(SRC,)),
            Cardinality(on_class=EX + "Heat", on_property=EX + "hasTemperature", max=1,
                        sources=(SRC,)),
            Cardinality(on_class=EX + "Heat", on_property=EX + "hasDevice", max=1,
                        sources=(SRC,)),
            Cardinality(on_class=step, on_property=EX + "isStirred", max=1, sources=(SRC,)),
            Cardinality(on_class=EX + "Input", on_property=EX + "hasAmount", max=1,
                        sources=(SRC,)),
        ),
        enumerations=(Enumeration(on_class=EX + "Synthesis", on_property=EX + "hasStatus",
                                  values=("planned", "done"), source=SRC),),
        orderings=(OrderingRule(container_class=EX + "Synthesis", member_property=EX + "hasStep",
                                order_property=EX + "hasOrder", source=SRC),),
        quantities={q.iri: q for q in quantities},
        units={u.iri: u for u in units},
        unit_aliases={"°c": OM + "degreeCelsius", "h": OM + "hour", "hours": OM + "hour",
                      "min": OM + "minute-Time", "k": OM + "kelvin"},
    )
