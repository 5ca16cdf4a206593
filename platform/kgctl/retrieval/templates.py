"""Query templates: the "core definition" of an entity a query container starts from.

One template per class is generated (root variable typed by the class or any sub-class, its
label optional, read by the label predicate the data uses most for that class). The ``.rq``
files of a template folder add or override templates; they are SPARQL SELECT queries in a small
line-based subset so they can become the typed model:

    # description: one sensor and its label
    # var ?sensor sosa:Sensor
    PREFIX sosa: <http://www.w3.org/ns/sosa/>
    SELECT DISTINCT ?sensor ?label WHERE {
      ?sensor a sosa:Sensor .
      OPTIONAL { ?sensor rdfs:label ?label . }
    }

Body lines are triple patterns (one per line, plain predicates or ``a``),
``OPTIONAL { triple . triple ... }`` or ``VALUES ?v { terms }``. The first ``# var`` line
names the root. A file that does not fit the loaded ontology (a prefix, class or property it does
not declare) is skipped with the reason, not fatal: a folder serves the T-Boxes it was written
for.

A file template whose root is typed may also require other patterns (a template of observations
may require ``?observation sosa:madeBySensor ?sensor``): rows without them are left out. Such
a template lists them in ``requires``, and a twin ``<name>_optional`` is generated in which they
sit in one OPTIONAL block (with the OPTIONAL blocks that depend on them nested inside), so every
instance of the root class is kept.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pyoxigraph as ox
from pydantic import BaseModel, ConfigDict

from kgctl.errors import InputError
from kgctl.retrieval.model import Element, Group, Optional, Triple, Values
from kgctl.retrieval.schema import Schema, snake
from kgctl.retrieval.terms import RDF_TYPE, Const, Iri, Var
from kgctl.retrieval.terms import Path as PropertyPath

CORE_VOCABULARIES = ("http://www.w3.org/1999/02/22-rdf-syntax-ns#",
                     "http://www.w3.org/2000/01/rdf-schema#", "http://www.w3.org/2002/07/owl#",
                     "http://www.w3.org/2001/XMLSchema#")
_TERM = r'\?[A-Za-z_]\w*|<[^>\s]*>|[A-Za-z][\w-]*:[\w-]*|"[^"]*"|\ba\b'
_TRIPLE = re.compile(rf"^({_TERM})\s+({_TERM})\s+({_TERM})\s*\.?$")
_OPTIONAL = re.compile(r"^OPTIONAL\s*\{\s*(.*?)\s*\}$", re.IGNORECASE)
_VALUES = re.compile(r"^VALUES\s+\?([A-Za-z_]\w*)\s*\{\s*(.*?)\s*\}$", re.IGNORECASE)
_PREFIX = re.compile(r"^PREFIX\s+([\w-]*):\s*<([^>]*)>$", re.IGNORECASE)
_SELECT = re.compile(r"^SELECT\s+(DISTINCT\s+)?(.*?)\s+WHERE\s*\{$", re.IGNORECASE)
_VAR_LINE = re.compile(r"^#\s*var\s+\?([A-Za-z_]\w*)\s+(\S+)$")
_DESCRIPTION = re.compile(r"^#\s*description:\s*(.+)$")


class Template(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str
    description: str
    root: str
    select: tuple[str, ...]
    variables: dict[str, str]  # variable -> class or datatype IRI
    where: Group
    source: str  # "ir" or the .rq file name
    requires: tuple[str, ...] = ()  # required patterns besides the root's type
    optional_form: str = ""  # the template keeping the rows that lack them


def ir_templates(schema: Schema) -> dict[str, Template]:
    """One template per IR class: ``?<class> a <class or sub-class>`` plus its optional label.
    Named after the class (``sensor``); classes of the same local name in two namespaces are
    named with their prefix (``foaf_person``, ``schema_person``)."""
    found: dict[str, Template] = {}
    names = Counter(snake(c) for c in schema.ir.classes)
    for cls in schema.ir.classes:
        var = snake(cls) if names[snake(cls)] == 1 else snake(
            schema.ir.curie(cls).replace(":", "_"))
        label = f"{var}_label"
        where = Group(items=(
            *type_patterns(var, cls, schema),
            Optional(group=Group(items=(_triple(var, schema.label_property(cls),
                                                Var(name=label)),))),
        ))
        found[var] = Template(
            name=var, description=f"instances of {schema.ir.curie(cls)} with their label",
            root=var, select=(var, label), variables={var: cls, label: _STRING},
            where=where, source="ir",
        )
    return found


def load_templates(schema: Schema, *, folder: Path | None
                   ) -> tuple[dict[str, Template], dict[str, str]]:
    """(templates, skipped): the generated templates overridden/extended by the ``.rq`` files
    of `folder` (None: generated only); skipped maps a file that does not fit the ontology to
    the reason."""
    templates = ir_templates(schema)
    skipped: dict[str, str] = {}
    for path in sorted(folder.glob("*.rq")) if folder is not None and folder.is_dir() else ():
        try:
            found = parse_template(path.stem, path.read_text(encoding="utf-8"), schema,
                                   source=path.name)
        except InputError as exc:
            skipped[path.name] = str(exc)
            continue
        templates[found.name] = found
        twin = optional_twin(found)
        if twin is not None:
            templates[twin.name] = twin
            templates[found.name] = found.model_copy(update={
                "optional_form": twin.name,
                "description": f"{found.description}; rows lacking "
                               f"{'; '.join(found.requires)} are left out ({twin.name} keeps "
                               "them)"})
    return templates, skipped


def optional_twin(template: Template) -> Template | None:
    """The ``<name>_optional`` form of a file template whose root is typed and that requires
    other patterns; None when there is nothing to make optional."""
    root_typed = [i for i in template.where.items if _types_root(i, template.root)]
    if not template.requires or not any(isinstance(i, Triple) for i in root_typed):
        return None
    required = [i for i in template.where.items if isinstance(i, Triple) and i not in root_typed]
    others = [i for i in template.where.items
              if not isinstance(i, Triple) and i not in root_typed]
    bound = set().union(*(i.variables() for i in root_typed))
    linked = set().union(*(i.variables() for i in required)) - bound
    nested = [o for o in others if isinstance(o, Optional) and o.variables() & linked]
    block = Optional(group=Group(items=(*required, *nested)))
    where = Group(items=(*root_typed, block, *(o for o in others if o not in nested)))
    name = f"{template.name}_optional"
    return template.model_copy(update={
        "name": name, "where": where, "requires": (), "optional_form": "",
        "description": f"{template.description}; keeps every ?{template.root}, also without "
                       + "; ".join(template.requires)})


def parse_template(name: str, text: str, schema: Schema, *, source: str) -> Template:
    """A template from its ``.rq`` text; the text must also be valid SPARQL 1.1."""
    try:
        ox.Store().query(text)
    except SyntaxError as exc:
        raise InputError(f"template {source}: invalid SPARQL: {exc}") from None
    prefixes = dict(schema.ir.prefixes)
    variables: dict[str, str] = {}
    description, select, items = "", (), []
    for raw in text.splitlines():
        line = raw.strip()
        if m := _VAR_LINE.match(line):
            variables[m[1]] = _expand(m[2], prefixes, source)
        elif m := _DESCRIPTION.match(line):
            description = m[1].strip()
        elif m := _PREFIX.match(line):
            prefixes[m[1]] = m[2]
        elif m := _SELECT.match(line):
            select = tuple(v.lstrip("?") for v in m[2].split())
        elif line and not line.startswith("#") and line != "}":
            items.append(_element(line, prefixes, source))
    if not variables:
        raise InputError(f"template {source}: no '# var ?name class' line")
    unknown = sorted(t for t in (*variables.values(), *_terms(items))
                     if not _known(t, schema))
    if unknown:
        raise InputError(f"template {source}: not in the ontology or the data: {unknown[0]}")
    root = next(iter(variables))
    pm = dict(schema.ir.prefixes)
    requires = tuple(i.render(pm, 0)[0].removesuffix(" .") for i in items
                     if isinstance(i, Triple) and not _types_root(i, root))
    return Template(name=name, description=description or name, root=root, select=select,
                    variables=variables, where=Group(items=tuple(items)), source=source,
                    requires=requires)


def _terms(items: list[Element]) -> set[str]:
    """Classes and properties a template's patterns name."""
    found: set[str] = set()
    for item in items:
        for t in item.group.items if isinstance(item, Optional) else (item,):
            if isinstance(t, Triple):
                found.update(s.iri for s in t.p.steps if s.iri != RDF_TYPE)
                if t.p.steps[0].iri == RDF_TYPE and isinstance(t.o, Iri):
                    found.add(t.o.value)
    return found


def _known(iri: str, schema: Schema) -> bool:
    ir = schema.ir
    return iri in ir.classes or iri in ir.properties or iri.startswith(CORE_VOCABULARIES)


def _types_root(item: Element, root: str) -> bool:
    """``?root a C`` / ``?root a ?t`` or the VALUES block of the root's type variable."""
    if isinstance(item, Triple):
        return item.s == Var(name=root) and item.p.steps[0].iri == RDF_TYPE
    return isinstance(item, Values) and item.variables_ == (Var(name=f"{root}_type"),)


def type_patterns(var: str, cls: str, schema: Schema) -> tuple[Element, ...]:
    """``?v a C`` or, when C has sub-classes, ``?v a ?v_type`` with the allowed types."""
    allowed = schema.type_constraint(cls)
    if len(allowed) == 1:
        return (Triple(s=Var(name=var), p=PropertyPath.of(RDF_TYPE), o=Iri(value=cls)),)
    type_var = f"{var}_type"
    return (
        Values(variables_=(Var(name=type_var),), rows=tuple((Iri(value=c),) for c in allowed)),
        Triple(s=Var(name=var), p=PropertyPath.of(RDF_TYPE), o=Var(name=type_var)),
    )


_STRING = "http://www.w3.org/2001/XMLSchema#string"


def _triple(subject: str, prop: str, obj: Var | Iri | Const) -> Triple:
    return Triple(s=Var(name=subject), p=PropertyPath.of(prop), o=obj)


def _element(line: str, prefixes: dict[str, str], source: str) -> Element:
    if m := _OPTIONAL.match(line):
        parts = [t for t in re.split(r"\s+\.(?:\s+|$)", m[1]) if t.strip()]
        return Optional(group=Group(items=tuple(_pattern(t, prefixes, source) for t in parts)))
    if m := _VALUES.match(line):
        terms = tuple((_node(t, prefixes, source),) for t in re.findall(_TERM, m[2]))
        return Values(variables_=(Var(name=m[1]),), rows=terms)  # type: ignore[arg-type]
    return _pattern(line, prefixes, source)


def _pattern(text: str, prefixes: dict[str, str], source: str) -> Triple:
    m = _TRIPLE.match(text.strip())
    if not m:
        raise InputError(f"template {source}: unsupported line {text!r} (one triple per line)")
    pred = RDF_TYPE if m[2] == "a" else _expand(m[2], prefixes, source)
    return Triple(s=_node(m[1], prefixes, source), p=PropertyPath.of(pred),
                  o=_node(m[3], prefixes, source))


def _node(token: str, prefixes: dict[str, str], source: str) -> Var | Iri | Const:
    if token.startswith("?"):
        return Var(name=token[1:])
    if token.startswith('"'):
        return Const.string(token[1:-1])
    return Iri(value=_expand(token, prefixes, source))


def _expand(token: str, prefixes: dict[str, str], source: str) -> str:
    if token.startswith("<"):
        return token[1:-1]
    prefix, _, local = token.partition(":")
    if prefix not in prefixes:
        raise InputError(f"template {source}: unknown prefix in {token!r}")
    return prefixes[prefix] + local
