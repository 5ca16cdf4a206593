"""Self-contained HTML report: matplotlib plots embedded as base64 PNG, no external assets.

The page opens with what was measured (the report's source), then both scorers' figures,
the plots, a sortable per-paper table, extra sections (grounding, dedup) and the problems.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display needed
import matplotlib.pyplot as plt  # noqa: E402

from kgctl.evaluation.report import Report  # noqa: E402
from kgctl.evaluation.schema import record_schema  # noqa: E402
from kgctl.evaluation.scorer import STRICT, Counts  # noqa: E402

FIGURE_DPI = 90
TOP_FIELDS = 15
Y_MARGIN = 0.05  # below the lowest bar, so differences near 1.0 stay visible
METRICS = ("precision", "recall", "f1")
STYLE = ("body{font-family:sans-serif;max-width:1000px;margin:2em auto;color:#222}"
         "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;"
         "padding:2px 8px;text-align:right}td:first-child,th:first-child{text-align:left}"
         ".source{background:#fff7e0;border-left:4px solid #e0a000;padding:.5em 1em}"
         ".meta{color:#555;font-size:.9em}th.sort{cursor:pointer;text-decoration:underline}"
         "td.l{text-align:left}ul.names{columns:3;font-size:.85em}")
# clicking a header of a .sortable table sorts its rows by that column (numbers numerically)
SORT_SCRIPT = """<script>
document.querySelectorAll('table.sortable').forEach(function(t){
  t.querySelectorAll('th').forEach(function(th,i){
    th.classList.add('sort');
    th.addEventListener('click',function(){
      var body=t.tBodies[0],rows=Array.from(body.rows),up=th.dataset.dir!=='asc';
      rows.sort(function(a,b){
        var x=a.cells[i].dataset.v||a.cells[i].textContent,
            y=b.cells[i].dataset.v||b.cells[i].textContent;
        var nx=parseFloat(x),ny=parseFloat(y);
        var c=(isNaN(nx)||isNaN(ny))?x.localeCompare(y):nx-ny;
        return up?c:-c;});
      th.dataset.dir=up?'asc':'desc';
      rows.forEach(function(r){body.appendChild(r);});});});});
</script>"""


def write_html(report: Report, path: Path, *, title: str = "kgctl evaluation",
               sections: Sequence[str] = ()) -> None:
    """Write the report as one HTML file; `sections` are extra HTML fragments (with their own
    headings) placed after the scores."""
    headline = report.source.headline if report.source else "scores of the given records"
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(headline)}</title><style>{STYLE}</style></head><body>",
        _source(report, title),
        _summary_table(report),
        figure(_category_bars(report), "per-category precision, recall and F1 (strict scorer)"),
        figure(_paper_bars(report), "micro F1 per paper, sorted (strict scorer)"),
        _paper_table(report),
        *sections,
        figure(_field_bars(report), "field error anatomy"),
        _fields_table(report),
        _problems(report),
        SORT_SCRIPT,
        "</body></html>",
    ]
    path.write_text("\n".join(parts), encoding="utf-8")


def _source(report: Report, title: str) -> str:
    source = report.source
    if source is None:
        return (f"<p class='source'><b>scores of the given records</b></p>"
                f"<h1>{html.escape(title)}</h1>")
    files = ", ".join(f"{f.name} <code>{f.sha256}</code>" for f in source.ontology) or "none"
    meta = [f"kgctl {html.escape(source.kgctl_version)}", html.escape(source.date)]
    if source.benchmark:
        meta.append(f"benchmark {html.escape(source.benchmark)}")
    meta.append(f"scorers {html.escape(', '.join(source.scorers) or report.scorer)}")
    return (f"<p class='source'><b>{html.escape(source.headline)}</b></p>"
            f"<h1>{html.escape(title)}</h1><p class='meta'>{' · '.join(meta)}<br>"
            f"ontology: {files}</p>")


def png_data(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=FIGURE_DPI, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def figure(data: str, alt: str) -> str:
    return (f"<h2>{alt[:1].upper()}{alt[1:]}</h2>"
            f"<img alt='{alt}' src='data:image/png;base64,{data}'>")


def y_floor(values: Sequence[float]) -> float:
    """Lower y limit that shows the differences between bars (0 when a bar is low).

    >>> y_floor([0.99, 0.995, 1.0]), y_floor([0.2, 0.9])
    (0.9, 0.0)
    """
    low = min(values, default=0.0) - Y_MARGIN
    return 0.0 if low < 0.5 else max(0.0, round(low - 0.045, 1))


def _category_bars(report: Report) -> str:
    fig, ax = plt.subplots(figsize=(7.5, 3.5))
    names = list(report.categories)
    width = 0.27
    shown: list[float] = []
    for k, metric in enumerate(METRICS):
        vals = [float(report.metrics(report.categories[c])[metric]) for c in names]
        shown += vals
        bars = ax.bar([i + (k - 1) * width for i in range(len(names))], vals, width,
                      label={"f1": "F1"}.get(metric, metric))
        ax.bar_label(bars, fmt="%.3f", fontsize=7, rotation=90, padding=2)
    ax.set_xticks(range(len(names)), names)
    ax.set_ylim(y_floor(shown), 1.0 + (1.0 - y_floor(shown)) * 0.25)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.set_ylabel("score")
    return png_data(fig)


def _paper_f1(report: Report) -> dict[str, float]:
    return {paper: float(report.metrics(sum(cats.values(), Counts()))["f1"])
            for paper, cats in report.papers.items()}


def _paper_bars(report: Report) -> str:
    ranked = sorted(_paper_f1(report).items(), key=lambda kv: kv[1])
    fig, ax = plt.subplots(figsize=(7.5, 0.22 * max(len(ranked), 3) + 1))
    ax.barh([p for p, _ in ranked], [f for _, f in ranked], color="#4c72b0")
    ax.set_xlim(y_floor([f for _, f in ranked]), 1.0)
    ax.set_xlabel("micro F1 of the paper")
    ax.tick_params(axis="y", labelsize=7)
    return png_data(fig)


def _field_bars(report: Report) -> str:
    rows = [r for r in report.fields if r.fp or r.fn][:TOP_FIELDS]
    fig, ax = plt.subplots(figsize=(7.5, 0.35 * max(len(rows), 2) + 1))
    labels = [f"{r.category}: {r.field.rsplit('.', 1)[-1]}" for r in rows]
    ax.barh(labels, [r.fn for r in rows], label="FN")
    ax.barh(labels, [r.fp for r in rows], left=[r.fn for r in rows], label="FP")
    ax.invert_yaxis()
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    if not rows:
        ax.set_title("no field errors")
    return png_data(fig)


def _cells(summary: dict) -> str:
    return "".join(f"<td>{summary[k]:.3f}</td>" if isinstance(summary[k], float)
                   else f"<td>{summary[k]}</td>"
                   for k in ("tp", "fp", "fn", "precision", "recall", "f1"))


def _summary_table(report: Report) -> str:
    parts = [report] + ([report.compatible] if report.compatible is not None else [])
    body = ""
    for part in parts:
        rows = [("micro", part.micro), *part.categories.items()]
        body += "".join(f"<tr><td>{html.escape(part.scorer)}</td><td>{html.escape(name)}</td>"
                        f"{_cells(part.metrics(n))}</tr>" for name, n in rows)
    rules = [STRICT, *([record_schema().compatible] if len(parts) > 1 else [])]
    note = ("<p class='meta'>" + " ".join(
        f"<b>{html.escape(r.name)}</b>: {html.escape(r.note)}." for r in rules if r)
        + "</p>") if len(parts) > 1 else ""
    macro = report.macro
    return ("<h2>Scores</h2><table><tr><th>scorer</th><th>category</th><th>TP</th><th>FP</th>"
            f"<th>FN</th><th>P</th><th>R</th><th>F1</th></tr>{body}</table>{note}"
            f"<p>macro ({html.escape(report.scorer)}) P {macro['precision']:.3f} / "
            f"R {macro['recall']:.3f} / F1 {macro['f1']:.3f}</p>")


def _paper_table(report: Report) -> str:
    categories = list(report.categories)
    f1s = _paper_f1(report)
    head = "".join(f"<th>{html.escape(c)} F1</th>" for c in categories)
    rows = []
    for paper, cats in report.papers.items():
        cells = "".join(
            f"<td>{float(report.metrics(cats[c])['f1']):.3f}</td>" if c in cats
            else "<td data-v='-1'>–</td>" for c in categories)
        total = sum(cats.values(), Counts())
        rows.append(f"<tr><td>{html.escape(paper)}</td><td>{f1s[paper]:.3f}</td>{cells}"
                    f"<td>{total.fp}</td><td>{total.fn}</td></tr>")
    return ("<h2>Per paper (click a column to sort)</h2><table class='sortable' id='papers'>"
            f"<thead><tr><th>paper</th><th>micro F1</th>{head}<th>FP</th><th>FN</th></tr>"
            f"</thead><tbody>{''.join(rows)}</tbody></table>")


def _fields_table(report: Report) -> str:
    body = "".join(
        f"<tr><td>{html.escape(r.category)}</td><td class='l'>{html.escape(r.field)}</td>"
        f"<td>{r.tp}</td><td>{r.fp}</td><td>{r.fn}</td></tr>" for r in report.fields)
    return ("<h2>Field-level errors</h2><table class='sortable'><thead><tr><th>category</th>"
            "<th>field</th><th>TP</th><th>FP</th><th>FN</th></tr></thead>"
            f"<tbody>{body}</tbody></table>")


def _problems(report: Report) -> str:
    if not report.problems:
        return "<h2>Problems</h2><p>none</p>"
    items = "".join(f"<li>{html.escape(str(p))}</li>" for p in report.problems)
    return f"<h2>Problems</h2><ul>{items}</ul>"
