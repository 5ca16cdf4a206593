"""Self-contained HTML report: matplotlib plots embedded as base64 PNG, no external assets."""

from __future__ import annotations

import base64
import html
import io
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display needed
import matplotlib.pyplot as plt  # noqa: E402

from kgctl.evaluation.report import Report  # noqa: E402

FIGURE_DPI = 90
TOP_FIELDS = 15
STYLE = ("body{font-family:sans-serif;max-width:960px;margin:2em auto}"
         "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px;"
         "text-align:right}td:first-child,th:first-child{text-align:left}")


def write_html(report: Report, path: Path, *, title: str = "kgctl evaluation") -> None:
    """Write the report (tables and three plots) as one HTML file."""
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
        f"<style>{STYLE}</style></head><body><h1>{html.escape(title)}</h1>",
        _summary_table(report),
        _img(_category_bars(report), "per-category precision, recall and F1"),
        _img(_paper_hist(report), "per-paper F1 distribution"),
        _img(_field_bars(report), "field error anatomy"),
        _fields_table(report),
        _problems(report),
        "</body></html>",
    ]
    path.write_text("\n".join(parts), encoding="utf-8")


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=FIGURE_DPI, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _img(data: str, alt: str) -> str:
    return f"<h2>{alt.capitalize()}</h2><img alt='{alt}' src='data:image/png;base64,{data}'>"


def _category_bars(report: Report) -> str:
    fig, ax = plt.subplots(figsize=(7, 3.5))
    names = list(report.categories)
    width = 0.27
    for k, metric in enumerate(("precision", "recall", "f1")):
        vals = [getattr(report.categories[c], metric) for c in names]
        ax.bar([i + (k - 1) * width for i in range(len(names))], vals, width, label=metric)
    ax.set_xticks(range(len(names)), names)
    ax.set_ylim(0, 1.05)
    ax.legend(loc="lower right")
    return _png(fig)


def _paper_hist(report: Report) -> str:
    fig, ax = plt.subplots(figsize=(7, 3))
    f1s = [sum(cats.values(), type(report.micro)()).f1 for cats in report.papers.values()]
    ax.hist(f1s, bins=20, range=(0, 1))
    ax.set_xlabel("micro F1 of a paper")
    ax.set_ylabel("papers")
    return _png(fig)


def _field_bars(report: Report) -> str:
    rows = [r for r in report.fields if r.fp or r.fn][:TOP_FIELDS]
    fig, ax = plt.subplots(figsize=(7, 0.35 * max(len(rows), 2) + 1))
    labels = [f"{r.category}: {r.field.rsplit('.', 1)[-1]}" for r in rows]
    ax.barh(labels, [r.fn for r in rows], label="FN")
    ax.barh(labels, [r.fp for r in rows], left=[r.fn for r in rows], label="FP")
    ax.invert_yaxis()
    ax.legend(loc="lower right")
    return _png(fig)


def _summary_table(report: Report) -> str:
    rows = [("micro", report.micro.summary())]
    rows += [(c, n.summary()) for c, n in report.categories.items()]
    body = "".join(
        f"<tr><td>{html.escape(name)}</td>" + "".join(
            f"<td>{s[k]:.3f}</td>" if isinstance(s[k], float) else f"<td>{s[k]}</td>"
            for k in ("tp", "fp", "fn", "precision", "recall", "f1")) + "</tr>"
        for name, s in rows)
    macro = report.macro
    return ("<table><tr><th></th><th>TP</th><th>FP</th><th>FN</th><th>P</th><th>R</th>"
            f"<th>F1</th></tr>{body}</table><p>macro P {macro['precision']:.3f} / "
            f"R {macro['recall']:.3f} / F1 {macro['f1']:.3f}</p>")


def _fields_table(report: Report) -> str:
    body = "".join(
        f"<tr><td>{html.escape(r.category)}</td><td>{html.escape(r.field)}</td>"
        f"<td>{r.tp}</td><td>{r.fp}</td><td>{r.fn}</td></tr>" for r in report.fields)
    return ("<h2>Field-level errors</h2><table><tr><th>category</th><th>field</th><th>TP</th>"
            f"<th>FP</th><th>FN</th></tr>{body}</table>")


def _problems(report: Report) -> str:
    if not report.problems:
        return "<h2>Problems</h2><p>none</p>"
    items = "".join(f"<li>{html.escape(str(p))}</li>" for p in report.problems)
    return f"<h2>Problems</h2><ul>{items}</ul>"
