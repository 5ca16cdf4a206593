// The query page: runs queries through the SPARQL 1.1 Protocol endpoint of this server.
"use strict";
const ENDPOINT = "/query";
const ACCEPT = "application/sparql-results+json, text/turtle;q=0.9";
const $ = (id) => document.getElementById(id);

function formBody(query, graph) {
  const body = new URLSearchParams({ query });
  if (graph) body.append("default-graph-uri", graph);
  else if ($("union").checked) body.append("union-default-graph", "true");
  return body;
}

function cellText(term) {
  if (!term) return "";
  if (term.type === "literal" && term["xml:lang"]) return `${term.value} @${term["xml:lang"]}`;
  return term.value;
}

function showTable(data) {
  const head = $("results").tHead, body = $("results").tBodies[0];
  head.replaceChildren(); body.replaceChildren();
  $("graph").hidden = true;
  const vars = data.head.vars || [];
  const header = head.insertRow();
  if (data.boolean !== undefined) {
    header.insertCell().textContent = "answer";
    body.insertRow().insertCell().textContent = String(data.boolean);
    return 1;
  }
  for (const v of vars) header.appendChild(document.createElement("th")).textContent = v;
  for (const binding of data.results.bindings) {
    const row = body.insertRow();
    for (const v of vars) row.insertCell().textContent = cellText(binding[v]);
  }
  return data.results.bindings.length;
}

async function run(query, graph) {
  const status = $("status");
  status.className = ""; status.textContent = "running…";
  const started = performance.now();
  const response = await fetch(ENDPOINT, { method: "POST", body: formBody(query, graph),
                                           headers: { Accept: ACCEPT } });
  const text = await response.text();
  const ms = Math.round(performance.now() - started);
  if (!response.ok) {
    status.className = "error"; status.textContent = `HTTP ${response.status}: ${text}`;
    return;
  }
  if ((response.headers.get("content-type") || "").includes("json")) {
    const rows = showTable(JSON.parse(text));
    status.textContent = `${rows} row${rows === 1 ? "" : "s"} in ${ms} ms`;
  } else {
    $("results").tHead.replaceChildren(); $("results").tBodies[0].replaceChildren();
    $("graph").hidden = false; $("graph").textContent = text;
    status.textContent = `graph in ${ms} ms`;
  }
  updateDownloads(query, graph);
}

function updateDownloads(query, graph) {
  for (const link of document.querySelectorAll("#downloads a")) {
    link.href = `${ENDPOINT}?${formBody(query, graph)}&format=${link.dataset.format}`;
  }
}

async function loadExamples() {
  const examples = await (await fetch("/static/examples.json")).json();
  const select = $("examples");
  examples.forEach((example, index) => {
    const option = select.appendChild(document.createElement("option"));
    option.value = String(index); option.textContent = example.title;
  });
  select.addEventListener("change", () => {
    if (select.value !== "") $("query").value = examples[Number(select.value)].query;
  });
  $("query").value = examples[0].query;
}

async function loadPapers() {
  const papers = await (await fetch("/papers")).json();
  const body = $("papers").tBodies[0];
  for (const paper of papers) {
    const row = body.insertRow();
    row.insertCell().textContent = paper.paper;
    row.insertCell().textContent = String(paper.triples);
    const browse = row.insertCell().appendChild(document.createElement("button"));
    browse.type = "button"; browse.textContent = "browse";
    browse.addEventListener("click", () => {
      const query = "SELECT ?s ?p ?o WHERE { ?s ?p ?o } ORDER BY ?s ?p LIMIT 500";
      $("query").value = `# default graph: ${paper.graph}\n${query}`;
      run($("query").value, paper.graph);
    });
    const links = row.insertCell();
    for (const [format, label] of [["turtle", "Turtle"], ["nt", "N-Triples"], ["jsonld", "JSON-LD"]]) {
      const link = links.appendChild(document.createElement("a"));
      link.href = `/store?${new URLSearchParams({ graph: paper.graph, format })}`;
      link.textContent = label; links.append(" ");
    }
  }
}

$("run").addEventListener("click", () => run($("query").value, null));
loadExamples();
loadPapers();
