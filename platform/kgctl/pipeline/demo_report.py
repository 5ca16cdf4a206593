"""What ``kgctl demo`` reports beyond the scores: grounding and dedup summaries, and the
renderings of a demo result (terminal lines, JSON, HTML sections). Every rendering starts with
the source of the figures, so a round trip is never read as an extraction score.

>>> g = GroundingSummary(reference=Path("r"), built=False, entities=4, grounded=3, seconds=0.1,
...                      by_method={"exact": 2, "fuzzy": 1}, ungrounded=("mystery salt",))
>>> round(g.share, 2), "mystery salt" in grounding_section(g)
(0.75, True)
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from kgctl.evaluation.report import summary_lines

if TYPE_CHECKING:
    from kgctl.pipeline.demo import DemoResult

UNGROUNDED_SHOWN = 200  # names listed in the HTML section; the JSON lists them all


class RoleSummary(BaseModel):
    """Grounding of the entities of one role (the pack's grounding spec names the roles)."""

    model_config = ConfigDict(frozen=True)
    entities: int
    grounded: int
    ungrounded: tuple[str, ...] = ()

    @property
    def share(self) -> float:
        return self.grounded / self.entities if self.entities else 0.0


class GroundingSummary(RoleSummary):
    reference: Path
    built: bool  # the reference store was built in this run
    seconds: float
    by_method: dict[str, int] = {}
    by_role: dict[str, RoleSummary] = {}
    # ungrounded: the first name of each entity left ungrounded


class DedupSummary(BaseModel):
    model_config = ConfigDict(frozen=True)
    spec: str
    mentions: int
    clusters: int
    merged_clusters: int
    cross_paper_clusters: int
    merges: int
    grey: int
    refused: int


def grounding_section(g: GroundingSummary) -> str:
    methods = "".join(f"<tr><td>{html.escape(m)}</td><td>{n}</td></tr>"
                      for m, n in sorted(g.by_method.items(), key=lambda kv: -kv[1]))
    roles = "".join(f"<tr><td>{html.escape(r)}</td><td>{s.entities}</td><td>{s.grounded}</td>"
                    f"<td>{s.share:.1%}</td></tr>" for r, s in g.by_role.items())
    parts = [f"<h2>Grounding</h2><p>{g.grounded} of {g.entities} entities grounded "
             f"({g.share:.1%}) to the reference KG in {g.seconds:.1f} s.</p>"]
    if roles:
        parts.append("<table><tr><th>role</th><th>entities</th><th>grounded</th><th>share</th>"
                     f"</tr>{roles}</table>")
    parts.append(f"<table><tr><th>method</th><th>entities</th></tr>{methods}</table>")
    for role, s in (g.by_role or {"": g}).items():
        names = "".join(f"<li>{html.escape(n)}</li>" for n in s.ungrounded[:UNGROUNDED_SHOWN])
        more = len(s.ungrounded) - UNGROUNDED_SHOWN
        parts.append(f"<h3>Ungrounded{' ' + html.escape(role) if role else ''}: "
                     f"{s.entities - s.grounded} entities, {len(s.ungrounded)} distinct names"
                     f"</h3><ul class='names'>{names}</ul>"
                     + (f"<p>… and {more} more (see report.json)</p>" if more > 0 else ""))
    return "".join(parts)


def dedup_section(specs: list[DedupSummary]) -> str:
    rows = "".join(
        f"<tr><td>{html.escape(s.spec)}</td><td>{s.mentions}</td><td>{s.clusters}</td>"
        f"<td>{s.merged_clusters}</td><td>{s.cross_paper_clusters}</td><td>{s.merges}</td>"
        f"<td>{s.grey}</td><td>{s.refused}</td></tr>" for s in specs)
    return ("<h2>Deduplication across papers</h2><table><tr><th>class</th><th>mentions</th>"
            "<th>clusters</th><th>merged clusters</th><th>cross-paper clusters</th>"
            "<th>merges</th><th>for review</th><th>refused merges</th></tr>"
            f"{rows}</table>")


def sections(grounding: GroundingSummary | None, dedup: list[DedupSummary] | None) -> list[str]:
    """The HTML sections a demo report adds after the scores."""
    return ([grounding_section(grounding)] if grounding else []) + \
        ([dedup_section(dedup)] if dedup is not None else [])


def extras_json(grounding: GroundingSummary | None, dedup: list[DedupSummary] | None
                ) -> dict[str, Any]:
    return {
        "grounding": None if grounding is None else
        grounding.model_dump(mode="json") | {
            "share": round(grounding.share, 4),
            "by_role": {r: s.model_dump(mode="json") | {"share": round(s.share, 4)}
                        for r, s in grounding.by_role.items()}},
        "dedup": None if dedup is None else [s.model_dump() for s in dedup],
    }


def demo_json(result: DemoResult) -> dict[str, Any]:
    """`kgctl demo --json`: the source first, then what was built and scored."""
    scores = result.report.to_dict()
    return {
        "source": scores.pop("source", None),
        "provenance": scores.pop("provenance", None),
        "compiled": result.compiled.model_dump(),
        "papers": len(result.papers),
        "calls": sum(r.calls for r in result.replays),
        "refused": sum(len(r.refused) for r in result.replays),
        "scores": scores | {"papers": None},
        "report": str(result.html),
        "store": str(result.store_path),
        "seconds": result.seconds,
        **extras_json(result.grounding, result.dedup),
    }


def demo_lines(result: DemoResult) -> list[str]:
    """The terminal report of a demo run, source first."""
    c = result.compiled
    lines = summary_lines(result.report)[:1]
    lines.append(f"compiled {c.classes} classes, {c.properties} properties -> {c.tools} tools, "
                 f"{c.plan_steps} plan steps in {c.seconds:.2f} s")
    if result.replays:
        calls = sum(r.calls for r in result.replays)
        refused = sum(len(r.refused) for r in result.replays)
        lines.append(f"replayed {len(result.replays)} paper traces: {calls} tool calls, "
                     f"{refused} refused, in {result.seconds.get('replay', 0):.1f} s")
    lines.append(f"{_score_title(result)} ({len(result.papers)} papers):")
    lines += summary_lines(result.report)[1:]
    if result.grounding is not None:
        g = result.grounding
        methods = ", ".join(f"{m} {n}" for m, n in sorted(g.by_method.items(),
                                                         key=lambda kv: -kv[1]))
        lines.append(f"grounded {g.grounded} of {g.entities} entities "
                     f"({g.share:.1%}) to the reference KG {g.reference}"
                     f"{' (built in this run)' if g.built else ''} in {g.seconds:.1f} s"
                     f" [{methods or 'no match'}]; {g.entities - g.grounded} ungrounded "
                     f"({len(g.ungrounded)} distinct names, listed in the report)")
        lines += [f"  {role}: {s.grounded} of {s.entities} grounded ({s.share:.1%})"
                  for role, s in g.by_role.items()]
    for s in result.dedup or []:
        lines.append(f"dedup {s.spec}: {s.mentions} mentions -> {s.clusters} clusters "
                     f"({s.cross_paper_clusters} across papers), {s.merges} merges, "
                     f"{s.refused} refused, {s.grey} for review")
    store = result.store_path
    lines += [f"report: {result.html} (and {result.json_path})", "query the graph:",
              f"  kgctl serve --store {store}            (SPARQL endpoint and query page)",
              f"  kgctl query run QUESTION.rq --store {store}",
              f"  kgctl store papers --store {store}"]
    return lines


def _score_title(result: DemoResult) -> str:
    source = result.report.source
    name = (source.benchmark if source is not None else None) or "benchmark"
    if source is not None and source.kind == "round_trip":
        return f"{name} round-trip ceiling, not an extraction score"
    return f"{name} scores"
