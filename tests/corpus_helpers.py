"""The third-party ontology corpus (tests/ontologies, see its README) and one MCP session per
scenario: create the main classes, link them, and have each axiom kind refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from kgctl.compiler.bounded import CREATE_ENTITY
from kgctl.instantiation.server import build_server
from kgctl.ontology import OntologyIR, load_ir
from kgctl.store import EmbeddedStore

CORPUS = Path(__file__).resolve().parent / "ontologies"
# the battery ontology imports EMMO and its electrochemistry domain, which are not bundled
EMMO_IMPORTS = ("https://w3id.org/emmo/1", "https://w3id.org/emmo/domain/electrochemistry",
                "https://w3id.org/emmo/domain/chemical-substance",
                "https://w3id.org/emmo/domain/characterisation-methodology")
ONTOLOGIES: dict[str, tuple[str, tuple[str, ...]]] = {
    "pizza": ("pizza/pizza.owl", ()),
    "sosa": ("sosa/sosa.ttl", ()),
    "prov": ("prov/prov-o.ttl", ()),
    "time": ("time/time.ttl", ()),
    "iao": ("iao/iao.owl", ()),
    "battery": ("battery/battery.ttl", EMMO_IMPORTS),
}

# (tool, arguments, refused with one of these codes or None when accepted, axiom kind refused)
Step = tuple[str, dict[str, Any], tuple[str, ...] | None, str | None]


# a profile that makes existentials hard (refused at creation, not recorded as missing)
HARD = Path(__file__).resolve().parent / "data" / "hard_existentials.profile.yaml"


def corpus_ir(name: str, *, hard: bool = True) -> OntologyIR:
    path, ignore = ONTOLOGIES[name]
    return load_ir([CORPUS / path], profile_paths=[HARD] if hard else [],
                   ignore_imports=ignore)


def run_session(ir: OntologyIR, steps: list[Step], store: EmbeddedStore | None = None
                ) -> list[tuple[Step, bool, str]]:
    """Every step through one in-process MCP client session: (step, is_error, text). Like a
    model reading the schemas, the client gives a one-item list where a schema asks for a
    list and the step gives one value."""
    store = store or EmbeddedStore()
    seen: list[tuple[Step, bool, str]] = []

    async def main() -> None:
        async with Client(build_server(ir, store, paper_id="paper-1")) as client:
            schemas = {t.name: t.input_schema for t in (await client.list_tools()).tools}
            for step in steps:
                tool, args, _, _ = step
                bounded = "values" in schemas.get(CREATE_ENTITY, {}).get("properties", {})
                if bounded and (tool not in schemas or (
                        tool == CREATE_ENTITY and "values" not in args)):
                    tool, args = as_create_entity(tool, args)
                result = await client.call_tool(tool, _as_schema_says(schemas.get(tool), args))
                seen.append((step, bool(result.is_error), result.content[0].text))

    anyio.run(main)
    return seen


def as_create_entity(tool: str, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """A call of a per-class create tool as the bounded surface takes it: its `type` (or the
    class its name says) and its label, the other arguments under `values`."""
    values = dict(args)
    kind = values.pop("type", None) or tool.removeprefix("create_")
    label = values.pop("label", None)
    return CREATE_ENTITY, {"type": kind, **({"label": label} if label else {}),
                           **({"values": values} if values else {})}


def _as_schema_says(schema: dict[str, Any] | None, args: dict[str, Any]) -> dict[str, Any]:
    properties = (schema or {}).get("properties", {})

    def is_list(prop: dict[str, Any]) -> bool:
        return prop.get("type") == "array" or any(
            option.get("type") == "array" for option in prop.get("anyOf", []))

    return {k: [v] if not isinstance(v, list) and is_list(properties.get(k, {})) else v
            for k, v in args.items()}
