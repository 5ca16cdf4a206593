"""The extraction run report as one self-contained HTML page (plots as base64 PNG)."""

from __future__ import annotations

import html
from pathlib import Path

import matplotlib.pyplot as plt

from kgctl.evaluation.html import SORT_SCRIPT, STYLE, figure, png_data
from kgctl.evaluation.runs import PaperRun, RunReport, StepRow

STEP_COLUMNS = ("step", "status", "turns", "requests", "tokens in", "tokens out", "cost USD",
                "accepted", "refused", "repaired", "refused by code", "agent calls", "s",
                "finish reasons")


def write_runs_html(report: RunReport, path: Path) -> None:
    source = report.source
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(source.headline)}</title><style>{STYLE}</style></head><body>",
        f"<p class='source'><b>{html.escape(source.headline)}</b></p>",
        "<h1>kgctl extract: run report</h1>",
        f"<p class='meta'>kgctl {html.escape(source.kgctl_version)} · "
        f"{html.escape(source.date)} · traces in <code>{html.escape(report.folder)}</code></p>",
        _batch(report),
        figure(_calls_plot(report), "graph-tool calls per paper"),
        figure(_tokens_plot(report), "tokens per paper"),
        _papers(report),
        *(_steps(p) for p in report.papers),
        _problems(report),
        SORT_SCRIPT,
        "</body></html>",
    ]
    path.write_text("\n".join(parts), encoding="utf-8")


def _fmt(value: object, digits: int = 4) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    if isinstance(value, dict):
        return ", ".join(f"{k} {v}" for k, v in value.items()) or "–"
    return html.escape(str(value))


def _batch(report: RunReport) -> str:
    b = report.batch()
    rows = "".join(f"<tr><td>{html.escape(k.replace('_', ' '))}</td><td>{_fmt(v)}</td></tr>"
                   for k, v in b.items())
    return f"<h2>Batch summary</h2><table id='batch'>{rows}</table>"


def _papers(report: RunReport) -> str:
    head = "".join(f"<th>{c}</th>" for c in (
        "paper", "status", "steps", "turns", "tokens in", "tokens out", "cost USD", "accepted",
        "refused", "repaired", "s", "triples"))
    rows = "".join(
        f"<tr><td><a href='#paper-{html.escape(p.paper)}'>{html.escape(p.paper)}</a></td>"
        f"<td>{html.escape(p.status)}</td><td>{len(p.steps)}</td>"
        + "".join(f"<td>{_fmt(p.total(k))}</td>" for k in (
            "turns", "prompt_tokens", "completion_tokens", "cost_usd", "accepted", "refused",
            "repaired", "seconds"))
        + f"<td>{_fmt(p.triples)}</td></tr>" for p in report.papers)
    return ("<h2>Papers (click a column to sort)</h2><table class='sortable' id='papers'>"
            f"<thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")


def _step_cells(s: StepRow) -> str:
    values = (s.step, s.status, s.turns, s.requests, s.prompt_tokens, s.completion_tokens,
              s.cost_usd, s.accepted, s.refused, s.repaired, s.refused_by_code, s.agent_calls,
              s.seconds, s.finish_reasons)
    return "".join(f"<td>{_fmt(v)}</td>" for v in values)


def _steps(paper: PaperRun) -> str:
    head = "".join(f"<th>{c}</th>" for c in STEP_COLUMNS)
    rows = "".join(f"<tr>{_step_cells(s)}</tr>" for s in paper.steps)
    error = f"<p class='flag'>{html.escape(paper.error)}</p>" if paper.error else ""
    return (f"<h3 id='paper-{html.escape(paper.paper)}'>{html.escape(paper.paper)} "
            f"({html.escape(paper.model)}, {html.escape(paper.status)}"
            f"{'' if paper.feedback else ', without feedback'})</h3>{error}"
            f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")


def _calls_plot(report: RunReport) -> str:
    papers = list(report.papers)
    fig, ax = plt.subplots(figsize=(7.5, 0.3 * max(len(papers), 3) + 1))
    names = [p.paper for p in papers]
    accepted = [p.total("accepted") or 0 for p in papers]
    refused = [p.total("refused") or 0 for p in papers]
    repaired = [p.total("repaired") or 0 for p in papers]
    ax.barh(names, accepted, label="accepted", color="#55a868")
    ax.barh(names, refused, left=accepted, label="refused", color="#c44e52")
    ax.scatter(repaired, names, marker="|", s=200, color="k", label="repaired (count)")
    ax.invert_yaxis()
    ax.set_xlabel("calls")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return png_data(fig)


def _tokens_plot(report: RunReport) -> str:
    papers = list(report.papers)
    fig, ax = plt.subplots(figsize=(7.5, 0.3 * max(len(papers), 3) + 1))
    names = [p.paper for p in papers]
    tokens_in = [p.total("prompt_tokens") or 0 for p in papers]
    tokens_out = [p.total("completion_tokens") or 0 for p in papers]
    ax.barh(names, tokens_in, label="in (prompt)", color="#4c72b0")
    ax.barh(names, tokens_out, left=tokens_in, label="out (completion)", color="#dd8452")
    ax.invert_yaxis()
    ax.set_xlabel("tokens")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return png_data(fig)


def _problems(report: RunReport) -> str:
    if not report.problems:
        return ""
    items = "".join(f"<li>{html.escape(p)}</li>" for p in report.problems)
    return f"<h2>Files that are not run traces</h2><ul>{items}</ul>"


RUN_REPORT_HTML = "run-report.html"
RUN_REPORT_JSON = "run-report.json"


def write_run_report(folder: Path, *, store=None, html_path: Path | None = None,
                     json_path: Path | None = None, ontology: list[Path] | None = None
                     ) -> RunReport:
    """Read the run traces of `folder` (graph sizes from `store` when given) and write the
    report (default: run-report.html and run-report.json inside the folder); `ontology` names
    the T-Box and profile files the runs compiled, where the caller knows them."""
    import json

    from kgctl.evaluation.runs import load_runs

    sizes = None
    if store is not None:
        held = set(store.papers())
        sizes = {p: sum(1 for _ in store.triples(p)) for p in held}
    report = load_runs(folder, graph_sizes=sizes, ontology=ontology or ())
    write_runs_html(report, html_path or folder / RUN_REPORT_HTML)
    (json_path or folder / RUN_REPORT_JSON).write_text(
        json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return report
