"""What the server asks the compiled view of an IR when a call names a class or a property
the schema does not enumerate: argument specs of one class, the classes by the names tools
give them, the properties `link` and `update_property` take, and the nearest names to offer
when a name is unknown. Everything is derived from the memoised view (`view_of`)."""

from __future__ import annotations

from rapidfuzz import fuzz, process

from kgctl.compiler.names import property_ref
from kgctl.compiler.naming import local_name, readable, snake
from kgctl.compiler.spec import ArgSpec
from kgctl.compiler.tools import MAX_INLINE_DEPTH, view_of
from kgctl.ontology.ir import OntologyIR
from kgctl.store.iris import normalise_label

# names offered in `allowed` when a class, property or argument name is unknown
NEAREST_NAMES = 8


def property_arg(ir: OntologyIR, cls: str, prop: str) -> ArgSpec | None:
    """The argument spec (write plan) of one property on one class, as a create tool has it."""
    return view_of(ir).property_arg(cls, ir.properties[prop], depth=1)


def entity_fields(ir: OntologyIR, cls: str) -> tuple[ArgSpec, ...]:
    """The arguments of `cls` as `create_entity` takes them in `values` (values of object
    properties are references or names, never inline objects)."""
    return view_of(ir).field_args(cls, depth=MAX_INLINE_DEPTH)


def class_words(ir: OntologyIR) -> dict[str, str]:
    """The names of instantiable classes as tools give them (`type` values) -> class IRI."""
    view = view_of(ir)
    if view.words is None:
        classes = tuple(sorted(c for c in ir.classes if view.instantiable(c)))
        view.words = dict(zip(view.type_words(classes), classes, strict=True))
    return view.words


def find_class(ir: OntologyIR, text: str) -> str | None:
    """The creatable class `text` names: IRI, prefixed name, local name, `type` word or label
    (normalised); None when it names none or several."""
    view = view_of(ir)
    if view.class_names is None:
        names: dict[str, set[str]] = {}
        for cls in (c for c in ir.classes if view.creatable(c)):
            info = ir.classes[cls]
            for name in (cls, ir.curie(cls), local_name(cls), normalise_label(info.label),
                         normalise_label(local_name(cls)), snake(readable(info.name, info.label))):
                names.setdefault(name, set()).add(cls)
        for word, cls in class_words(ir).items():
            names.setdefault(word, set()).add(cls)
        view.class_names = {n: next(iter(c)) for n, c in names.items() if len(c) == 1}
    return (view.class_names.get(text) or view.class_names.get(normalise_label(text))
            or view.class_names.get(normalise_label(text.replace("_", " "))))


def nearest(text: str, names: list[str]) -> tuple[str, ...]:
    """Up to NEAREST_NAMES of `names` closest to `text`, best first.

    >>> nearest("hasPart", ["ex:hasPart", "ex:partOf", "ex:name"])[0]
    'ex:hasPart'
    """
    hits = process.extract(text, names, scorer=fuzz.WRatio, limit=NEAREST_NAMES)
    return tuple(name for name, _, _ in hits)


def link_properties(ir: OntologyIR) -> tuple[str, ...]:
    """Prefixed names of the object properties `link` accepts."""
    return tuple(property_ref(ir, p) for p in view_of(ir).link_props())


def writable_properties(ir: OntologyIR) -> tuple[str, ...]:
    """Prefixed names of the properties `update_property` accepts."""
    return tuple(property_ref(ir, p) for p, i in sorted(ir.properties.items())
                 if i.kind != "annotation")
