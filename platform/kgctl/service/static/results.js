// Query results as a table a reader can follow, shared by both query pages: IRIs compacted
// with the ontologies' prefixes and shown beside their labels, literals shown plainly (datatype
// or language on hover), entities linked to their paper's evidence view and to what they are
// the same as (owl:sameAs, e.g. a reference entity), a pager for queries that end in LIMIT,
// and empty states that say what to do.
"use strict";
const KgResults = (() => {
  // an IRI that can be written between < > in a query as it is (results are IRIs already)
  const WRITABLE_IRI = /^[^\s<>"{}|^`\\]+$/;
  const MAX_LOOKUP = 400; // IRIs whose labels and links one lookup asks for
  const ATTEMPTS = 10; // a busy server answers 503 "retry later" (waits of 0.2 s to 1.8 s)
  const MAX_EVIDENCE = 4; // evidence links shown per entity
  const XSD = "http://www.w3.org/2001/XMLSchema#";
  const NUMERIC = /#(integer|decimal|double|float|long|int|short|byte|nonNegativeInteger|positiveInteger)$/;
  const PAGED = /\s(?:LIMIT\s+(\d+)(?:\s+OFFSET\s+(\d+))?|OFFSET\s+(\d+)\s+LIMIT\s+(\d+))\s*$/i;
  const LOOKUP = (iris) => `PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
PREFIX skos: <http://www.w3.org/2004/02/skos/core#>
PREFIX owl: <http://www.w3.org/2002/07/owl#>
SELECT DISTINCT ?iri ?label ?same ?sameLabel ?member WHERE {
  VALUES ?iri { ${iris.map((iri) => `<${iri}>`).join(" ")} }
  { ?iri rdfs:label|skos:prefLabel ?label }
  UNION { ?iri owl:sameAs ?same OPTIONAL { ?same rdfs:label|skos:prefLabel ?sameLabel } }
  UNION { ?member owl:sameAs ?iri }
}`;

  const el = (tag, props = {}, ...children) => {
    const node = Object.assign(document.createElement(tag), props);
    node.append(...children);
    return node;
  };

  /** fetch(), asked again a little later while the server answers 503 (busy). */
  async function patiently(url, init) {
    for (let attempt = 1; ; attempt += 1) {
      const response = await fetch(url, init);
      if (response.status !== 503 || attempt === ATTEMPTS) return response;
      await new Promise((resolve) => setTimeout(resolve, 200 * attempt));
    }
  }

  /** The JSON a page route answers (papers, prefixes, examples). */
  async function json(url) {
    const response = await patiently(url);
    if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
    return response.json();
  }

  /** The LIMIT and OFFSET a query ends with, or null: what the pager changes. */
  function paging(query) {
    const match = query.match(PAGED);
    if (!match) return null;
    const [limit, offset] = match[1] ? [match[1], match[2]] : [match[4], match[3]];
    return { limit: Number(limit), offset: Number(offset || 0), head: query.slice(0, match.index) };
  }

  function withOffset(page, offset) {
    return `${page.head}\nLIMIT ${page.limit}${offset > 0 ? ` OFFSET ${offset}` : ""}\n`;
  }

  /** The page's query for the triples about `iri`, both ways (so the entities the same as
   * a reference entity show), and their graphs. */
  function describeQuery(iri) {
    if (!WRITABLE_IRI.test(iri)) return null;
    return `SELECT ?subject ?property ?object ?graph WHERE {
  GRAPH ?graph {
    { <${iri}> ?property ?object BIND(<${iri}> AS ?subject) }
    UNION { ?subject ?property <${iri}> BIND(<${iri}> AS ?object) }
  }
}
ORDER BY ?graph ?subject ?property
LIMIT 100
`;
  }

  function compact(iri, prefixes) {
    let best = null;
    for (const [prefix, namespace] of Object.entries(prefixes)) {
      if (iri.startsWith(namespace) && (!best || namespace.length > best[1].length)) {
        best = [prefix, namespace];
      }
    }
    const local = best && iri.slice(best[1].length);
    return best && /^[\w.-]*$/.test(local) ? `${best[0]}:${local}` : iri;
  }

  // an entity of a paper by its path inside the paper's graph (the paper is on its evidence link)
  function shortName(iri, ctx) {
    const paper = paperOf(iri, ctx.papers);
    return paper && iri !== paper.graph ? iri.slice(paper.graph.length + 1) : compact(iri, ctx.prefixes);
  }

  // the last two path segments of an IRI no prefix and no label shortens (title: all of it)
  function tail(name) {
    return /^https?:\/\//.test(name) ? name.split("/").slice(-2).join("/") : name;
  }

  function paperOf(iri, papers) {
    return papers.find((p) => iri === p.graph || iri.startsWith(`${p.graph}/`));
  }

  /** Labels, sameAs targets and evidence papers of `iris`, one lookup query. */
  async function lookUp(iris, ctx) {
    const wanted = [...iris].filter((iri) => WRITABLE_IRI.test(iri)).slice(0, MAX_LOOKUP);
    const found = new Map(wanted.map((iri) => [iri, { labels: new Set(), same: new Map(), papers: new Set() }]));
    if (!wanted.length) return found;
    const body = new URLSearchParams({ query: LOOKUP(wanted), "union-default-graph": "true", view: "raw" });
    const response = await patiently("/query", { method: "POST", body,
                                                  headers: { Accept: "application/sparql-results+json" } });
    if (!response.ok) return found;
    for (const row of (await response.json()).results.bindings) {
      const entry = found.get(row.iri.value);
      if (row.label) entry.labels.add(row.label.value);
      if (row.same && row.same.type === "uri") {
        entry.same.set(row.same.value, entry.same.get(row.same.value) || (row.sameLabel && row.sameLabel.value));
      }
      const paper = row.member && paperOf(row.member.value, ctx.papers);
      if (paper) entry.papers.add(paper.paper);
    }
    return found;
  }

  function describeLink(iri, text, ctx) {
    const link = el("a", { className: text === iri ? "iri" : "iri short",
                           href: `/?${new URLSearchParams({ describe: iri })}`, title: iri, textContent: text });
    link.addEventListener("click", (event) => {
      event.preventDefault();
      ctx.run(describeQuery(iri));
    });
    return link;
  }

  function literalCell(term, prefixes) {
    const value = el("span", { className: "literal", textContent: term.value });
    if (term["xml:lang"]) value.title = `language: ${term["xml:lang"]}`;
    else if (term.datatype) {
      value.title = compact(term.datatype, prefixes);
      if (NUMERIC.test(term.datatype) && term.datatype.startsWith(XSD)) value.classList.add("number");
    }
    return value;
  }

  function termCell(term, ctx, pending) {
    if (!term) return "";
    if (term.type === "literal" || term.type === "typed-literal") return literalCell(term, ctx.prefixes);
    if (term.type === "bnode") return el("span", { className: "bnode", textContent: `_:${term.value}` });
    const cell = el("span", { className: "entity" }, describeLink(term.value, shortName(term.value, ctx), ctx));
    const more = el("span", { className: "more" });
    cell.append(more);
    (pending.get(term.value) || pending.set(term.value, []).get(term.value)).push(more);
    return cell;
  }

  function decorate(more, iri, info, ctx) {
    const [label, ...others] = [...info.labels];
    if (label) more.append(" ", el("span", { className: "label", textContent: label,
                                             title: others.length ? `also: ${others.join(" · ")}` : "" }));
    const own = paperOf(iri, ctx.papers);
    const papers = [...new Set([...(own ? [own.paper] : []), ...info.papers])].sort();
    papers.slice(0, MAX_EVIDENCE).forEach((paper, index) => more.append(" ", el("a", {
      className: "evidence", href: `/papers/${encodeURIComponent(paper)}/evidence`, title: `evidence in ${paper}`,
      textContent: papers.length === 1 ? "evidence" : `evidence ${index + 1}` })));
    if (papers.length > MAX_EVIDENCE) more.append(` +${papers.length - MAX_EVIDENCE} papers`);
    for (const [target, targetLabel] of info.same) {
      const link = describeLink(target, `≡ ${targetLabel || tail(compact(target, ctx.prefixes))}`, ctx);
      link.className = "same-as";
      more.append(" ", link);
    }
  }

  function emptyState(ctx) {
    const page = paging(ctx.query);
    if (!ctx.papers.length) {
      return "The store holds no papers yet. Seed the demo graphs with “kgctl serve --seed”, " +
        "extract papers into the store with “kgctl extract PAPER --store DIR” before serving it, " +
        "or PUT Turtle to /store?graph=IRI with the update token.";
    }
    if (page && page.offset > 0) return `No rows past row ${page.offset}: go back a page.`;
    if (!ctx.union && !/\b(GRAPH|FROM)\b/i.test(ctx.query)) {
      return "No results: the default graph is empty. Tick “union of all graphs”, or match " +
        "inside GRAPH ?g { … }.";
    }
    return "No results: nothing matched. Check the IRIs and prefixes of the pattern, widen a " +
      "FILTER, or start from an example query.";
  }

  function pager(rows, ctx) {
    const page = paging(ctx.query);
    if (!page || (page.offset === 0 && rows < page.limit)) return null;
    const previous = el("button", { type: "button", className: "previous", textContent: "‹ previous",
                                    disabled: page.offset === 0 });
    const next = el("button", { type: "button", className: "next", textContent: "next ›",
                                disabled: rows < page.limit });
    previous.addEventListener("click", () => ctx.run(withOffset(page, Math.max(0, page.offset - page.limit))));
    next.addEventListener("click", () => ctx.run(withOffset(page, page.offset + page.limit)));
    const shown = rows ? `rows ${page.offset + 1}–${page.offset + rows}` : "no rows";
    return el("div", { className: "pager" }, previous, " ", el("span", { textContent: shown }), " ", next);
  }

  /** Draw SPARQL JSON results `data` into `container`; ctx: {query, prefixes, papers, union,
   * run(query)}. Labels and links arrive after the table is shown (then data-decorated). */
  async function render(container, data, ctx) {
    delete container.dataset.decorated;
    await draw(container, data, ctx);
    container.dataset.decorated = "true";
  }

  async function draw(container, data, ctx) {
    container.replaceChildren();
    if (data.boolean !== undefined) {
      container.append(el("p", { className: "answer", textContent: `answer: ${data.boolean}` }));
      return;
    }
    const vars = data.head.vars || [];
    const bindings = data.results.bindings;
    const top = pager(bindings.length, ctx);
    if (top) container.append(top);
    if (!bindings.length) {
      container.append(el("p", { className: "empty", textContent: emptyState(ctx) }));
      return;
    }
    const pending = new Map();
    const table = el("table", { className: "kg-results" });
    table.createTHead().insertRow().append(...vars.map((v) => el("th", { textContent: v })));
    const body = table.createTBody();
    for (const binding of bindings) {
      const row = body.insertRow();
      for (const v of vars) row.insertCell().append(termCell(binding[v], ctx, pending));
    }
    container.append(table);
    if (top) container.append(top.cloneNode(true));
    const bottom = container.lastChild;
    if (top) wireClone(top, bottom);
    const found = await lookUp(pending.keys(), ctx);
    for (const [iri, info] of found) for (const more of pending.get(iri)) decorate(more, iri, info, ctx);
  }

  // the pager shown under the table too: its buttons press the ones above
  function wireClone(top, bottom) {
    for (const name of ["previous", "next"]) {
      bottom.querySelector(`.${name}`).addEventListener("click", () => top.querySelector(`.${name}`).click());
    }
  }

  /** The empty state of the paper list (table body `body`): how to fill the store. */
  function noPapers(body) {
    const cell = body.insertRow().insertCell();
    cell.colSpan = 4;
    cell.className = "empty";
    cell.textContent = "No papers in this store yet: restart with “kgctl serve --seed” for the " +
      "demo graphs, or extract papers with “kgctl extract PAPER --store DIR” and serve that store.";
  }

  return { render, describeQuery, json, noPapers };
})();
