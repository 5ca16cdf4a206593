"""Ground-truth step records of MOP-30 as calls of the compiled tools, through the oracle's
mapping (kgctl.evaluation.oracle), so the tests and the oracle speak the same calls."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kgctl.chemistry.oracle_calls import step_call
from kgctl.evaluation.values import is_empty

STEPS = Path(__file__).resolve().parents[1] / "domains" / "mop30" / "benchmark" / "steps"


def paper_calls(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """Every call that builds the paper's syntheses with all their steps."""
    data = json.loads(path.read_text(encoding="utf-8"))
    calls: list[tuple[str, dict[str, Any]]] = []
    for i, synthesis in enumerate(data["Synthesis"], start=1):
        label = f"synthesis {i}: {synthesis['productNames'][0]}"
        output: dict[str, Any] = {"label": synthesis["productNames"][-1],
                                  "product_name": synthesis["productNames"]}
        calls.append(("create_chemical_synthesis", {"label": label, "chemical_output": output}))
        ccdc = synthesis.get("productCCDCNumber")
        if not is_empty(ccdc):
            calls.append(("add_ccdc_number", {"subject": output["label"],
                                              "ccdc_number_value": [ccdc]}))
        for step in synthesis["steps"]:
            (step_type, body), = step.items()
            calls.append(step_call(label, step_type, body))
    return calls
