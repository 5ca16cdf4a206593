"""The evidence view as one self-contained HTML page, and its route in ``kgctl serve``.

The paper text is shown with every located quote highlighted; a highlight links to the call
that quoted it, a call links to the entities it wrote and back to its place in the text, and
each entity lists the quotes behind it. Quotes that do not occur in the text are flagged.
"""

from __future__ import annotations

import asyncio
import html
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from kgctl.evaluation.evidence import (
    LABEL_QUERY,
    EvidenceView,
    Span,
    build_view,
    entity_names,
)
from kgctl.papers.text import PAPER_TEXT
from kgctl.store.iris import graph_iri, paper_of_graph, provenance_graph_iri
from kgctl.store.merged import PAPER_IDENTITIES, Link, links_of_rows
from kgctl.store.provenance import TRACE_QUERY, record_from_literal
from kgctl.store.views import merged_graph_iri, merged_provenance_iri

STYLE = (
    "body{font-family:sans-serif;margin:1em 2em;color:#222}"
    ".cols{display:flex;gap:2em;align-items:flex-start}"
    "#text{flex:3;white-space:pre-wrap;font-family:Georgia,serif;line-height:1.5;"
    "border:1px solid #ddd;padding:1em;max-height:85vh;overflow:auto}"
    "#side{flex:2;max-height:85vh;overflow:auto}"
    "a.ev{background:#fff0a0;color:inherit;text-decoration:none;border-bottom:2px solid #d0a000}"
    "a.ev.many{background:#ffd27a}"
    ".flag{color:#fff;background:#c0392b;padding:0 4px;border-radius:3px;font-size:.85em;"
    "white-space:nowrap}"
    ".ok{color:#27ae60;font-size:.85em}code{font-size:.8em;color:#555}"
    ".notice{background:#fdf2e9;border-left:4px solid #e67e22;padding:.5em 1em}"
    ".notice code{color:#222}"
    "li{margin:.3em 0}:target{outline:2px solid #2980b9}"
    ".summary span{margin-right:1.5em}.identity{font-size:.9em;margin:.2em 0 0 1em}"
)


def render_page(view: EvidenceView) -> str:
    """The whole page for one paper."""
    entity_ids = {e.iri: f"entity-{i}" for i, e in enumerate(view.entities, start=1)}
    located = sum(s.found for s in view.spans)
    summary = (f"<p class='summary'><span>{len(view.spans)} calls with a quote</span>"
               f"<span id='located'>{located} located in the text</span>"
               f"<span id='flagged-count'>{len(view.flagged)} not in the text</span>"
               f"<span>{len(view.without_evidence)} calls without a quote</span>"
               f"<span>{len(view.entities)} entities</span></p>")
    text = _text(view) if view.text is not None else (
        "<p class='notice'>The paper text is not stored with this paper. Write the view with "
        f"<code>kgctl eval evidence --store STORE --paper {html.escape(view.paper)} --text "
        "PAPER_FILE --out evidence.html</code> to place the quotes.</p>")
    return (f"<!doctype html><html><head><meta charset='utf-8'>"
            f"<title>evidence: {html.escape(view.paper)}</title><style>{STYLE}</style>"
            f"</head><body><h1>Evidence behind paper {html.escape(view.paper)}</h1>{summary}"
            f"{_flagged(view)}<div class='cols'><div id='text'>{text}</div><div id='side'>"
            f"{_entities(view, entity_ids)}{_calls(view, entity_ids)}</div></div>"
            "</body></html>")


def _text(view: EvidenceView) -> str:
    text = view.text or ""
    found = [s for s in view.spans if s.found]
    cuts = sorted({0, len(text), *(s.start for s in found), *(s.end for s in found)})
    starts = {}
    for s in found:
        starts.setdefault(s.start, []).append(s.seq)
    out = []
    for a, b in zip(cuts, cuts[1:], strict=False):
        anchors = "".join(f"<span id='q{seq}'></span>" for seq in starts.get(a, []))
        piece = html.escape(text[a:b])
        covering = [s for s in found if s.start <= a and s.end >= b]
        if covering:
            seqs = " ".join(str(s.seq) for s in covering)
            title = "; ".join(f"call {s.seq} {s.tool}" for s in covering)
            many = " many" if len(covering) > 1 else ""
            piece = (f"<a class='ev{many}' href='#call-{covering[0].seq}' data-calls='{seqs}' "
                     f"title='{html.escape(title)}'>{piece}</a>")
        out.append(anchors + piece)
    return "".join(out)


def _quote(span: Span) -> str:
    where = (f"<a class='ok' href='#q{span.seq}'>in the text</a>" if span.found
             else "<span class='flag'>not in the text</span>")
    return f"“{html.escape(span.quote)}” {where}"


def _flagged(view: EvidenceView) -> str:
    if not view.flagged or view.text is None:
        return ""
    items = "".join(f"<li><a href='#call-{s.seq}'>call {s.seq} {html.escape(s.tool)}</a>: "
                    f"{_quote(s)}</li>" for s in view.flagged)
    return f"<h2>Quotes not found in the text</h2><ul id='flagged'>{items}</ul>"


def _entities(view: EvidenceView, ids: dict[str, str]) -> str:
    by_seq = {s.seq: s for s in view.spans}
    blocks = []
    for entity in view.entities:
        name = html.escape(entity.label or entity.iri.rsplit("/", 1)[-1])
        quotes = "".join(
            f"<li><a href='#call-{seq}'>call {seq}</a>: "
            + (_quote(by_seq[seq]) if seq in by_seq else "no quote") + "</li>"
            for seq in entity.calls)
        blocks.append(f"<div class='entity' id='{ids[entity.iri]}'><b>{name}</b> "
                      f"<code>{html.escape(entity.iri)}</code>{_identity(entity.identity)}"
                      f"<ul>{quotes}</ul></div>")
    return f"<h2>Entities and the quotes behind them</h2>{''.join(blocks) or '<p>none</p>'}"


def _identity(link: Link | None) -> str:
    """The entity's canonical identity (merged view) with how it was linked; linked only when
    it is a web address (a write may store any IRI, ``javascript:`` ones too).

    >>> page = _identity(Link(entity="urn:e", identity="javascript:f()", label="x", method="m"))
    >>> page.startswith("<div class='identity'>same as x <code>javascript:f()</code>")
    True
    """
    if link is None:
        return ""
    how = link.method + (f", score {link.score:g}" if link.score is not None else "")
    name = html.escape(link.label)
    if link.identity.startswith(("http://", "https://")):
        name = f"<a href='{html.escape(link.identity)}'>{name}</a>"
    return (f"<div class='identity'>same as {name} <code>{html.escape(link.identity)}</code> "
            f"<small>({html.escape(how)})</small></div>")


def _calls(view: EvidenceView, ids: dict[str, str]) -> str:
    rows = []
    names = {e.iri: e.label or e.iri.rsplit("/", 1)[-1] for e in view.entities}
    for span in view.spans:
        links = ", ".join(f"<a href='#{ids[iri]}'>{html.escape(names[iri])}</a>"
                          for iri in span.iris if iri in ids)
        section = f" <i>({html.escape(span.section)})</i>" if span.section else ""
        rows.append(f"<li id='call-{span.seq}' class='call'><b>call {span.seq}</b> "
                    f"{html.escape(span.tool)}{section}: {_quote(span)}<br>wrote: "
                    f"{links or '–'}</li>")
    rows += [f"<li id='call-{seq}' class='call'><b>call {seq}</b> {html.escape(tool)}: "
             "no quote given</li>" for seq, tool in view.without_evidence]
    return f"<h2>Calls</h2><ol class='calls'>{''.join(rows)}</ol>"


# The route of `kgctl serve` (registered in kgctl.service.app)


def dataset_view(dataset: Any, paper: str) -> EvidenceView:
    """The view of a paper held by the service's dataset (graphs chosen as default graphs,
    so no value enters the query text)."""
    prov = provenance_graph_iri(paper)
    records = [record_from_literal(r["record"])
               for r in dataset.query(TRACE_QUERY, default_graphs=[prov])]
    texts = [r["t"].value for r in dataset.query(
        f"SELECT ?t WHERE {{ ?g <{PAPER_TEXT.value}> ?t }}", default_graphs=[prov])]
    labels = entity_names(dataset.query(LABEL_QUERY, default_graphs=[graph_iri(paper)]))
    links = links_of_rows(dataset.query(PAPER_IDENTITIES, named_graphs=[
        merged_graph_iri(paper), merged_provenance_iri(paper)]))
    return build_view(paper, texts[0] if texts else None, records, labels, links)


def evidence_route(dataset: Any, submit: Callable[[Callable[[], str | None]], Future],
                   not_found: Callable[[str], Exception]) -> Callable:
    """A Starlette endpoint for /papers/{paper}/evidence; reads run in the service's pool."""
    from starlette.requests import Request
    from starlette.responses import HTMLResponse

    def page(paper: str) -> str | None:
        try:
            graph = graph_iri(paper)
        except ValueError:  # not an IRI once prefixed: no such paper
            return None
        if paper_of_graph(graph.value) != paper or not dataset.has_graph(graph):
            return None
        return render_page(dataset_view(dataset, paper))

    async def endpoint(request: Request) -> HTMLResponse:
        paper = request.path_params["paper"]
        body = await asyncio.wrap_future(submit(lambda: page(paper)))
        if body is None:
            raise not_found(f"no paper {paper} in this store")
        return HTMLResponse(body)

    return endpoint
