// The plain query page (served when YASGUI is not fetched): runs queries through the SPARQL
// 1.1 Protocol endpoint of this server; KgResults (results.js) draws the results.
"use strict";
const ENDPOINT = "/query";
const ACCEPT = "application/sparql-results+json, text/turtle;q=0.9";
const BROWSE_ROWS = 100;
const $ = (id) => document.getElementById(id);
let papers = [], prefixes = {};
const loaded = Promise.all([loadPapers(), KgResults.json("/prefixes")
  .then((found) => { prefixes = found; })]);

// the dataset options of every request: union default graph, merged or raw entities
function formBody(query) {
  const body = new URLSearchParams({ query });
  if ($("union").checked) body.append("union-default-graph", "true");
  body.append("view", $("view").value);
  return body;
}

function runShown(query) {
  $("query").value = query;
  return run(query);
}

const FORMATS = {
  solutions: [["csv", "CSV"], ["tsv", "TSV"], ["json", "JSON"], ["xml", "XML"]],
  graph: [["turtle", "Turtle"], ["nt", "N-Triples"], ["jsonld", "JSON-LD"], ["rdfxml", "RDF/XML"]],
};

// the query form: the first SELECT/ASK/CONSTRUCT/DESCRIBE outside comments, strings and IRIs
function queryForm(query) {
  const bare = query.replace(/#[^\n]*|"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|<[^>\s]*>/g, " ");
  const match = bare.match(/(?<![\w:])(SELECT|ASK|CONSTRUCT|DESCRIBE)(?![\w:])/i);
  return match ? match[1].toUpperCase() : "SELECT";
}

function clearResults() {
  $("results").replaceChildren();
  $("graph").hidden = true; $("graph").textContent = "";
  $("downloads").hidden = true;
}

async function run(query) {
  const status = $("status");
  status.className = ""; status.textContent = "running…";
  const started = performance.now();
  const response = await fetch(ENDPOINT, { method: "POST", body: formBody(query),
                                           headers: { Accept: ACCEPT } });
  const text = await response.text();
  const ms = Math.round(performance.now() - started);
  clearResults();
  if (!response.ok) {
    const line = text.split("\n").find((l) => l.startsWith("error:")) || text.trim();
    status.className = "error"; status.textContent = `HTTP ${response.status}: ${line}`;
    return;
  }
  showDownloads(query);
  if (!(response.headers.get("content-type") || "").includes("json")) {
    $("graph").hidden = false; $("graph").textContent = text;
    status.textContent = `graph in ${ms} ms`;
    return;
  }
  const data = JSON.parse(text);
  const rows = data.results ? data.results.bindings.length : 1;
  status.textContent = `${rows} row${rows === 1 ? "" : "s"} in ${ms} ms`;
  await loaded;
  await KgResults.render($("results"), data, { query, prefixes, papers,
                                                union: $("union").checked, run: runShown });
}

function showDownloads(query) {
  const form = queryForm(query);
  const kind = form === "CONSTRUCT" || form === "DESCRIBE" ? "graph" : "solutions";
  const links = $("download-links");
  links.replaceChildren();
  for (const [format, label] of FORMATS[kind]) {
    const params = formBody(query);
    params.append("format", format);
    const link = document.createElement("a");
    link.href = `${ENDPOINT}?${params}`;
    link.dataset.format = format;
    link.textContent = label;
    links.append(link, " ");
  }
  $("downloads").hidden = false;
}

async function loadExamples() {
  const examples = await KgResults.json("/examples.json");
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
  papers = await KgResults.json("/papers");
  const body = $("papers").tBodies[0];
  if (!papers.length) KgResults.noPapers(body);
  for (const paper of papers) {
    const row = body.insertRow();
    row.insertCell().textContent = paper.paper;
    row.insertCell().textContent = String(paper.triples);
    const browse = row.insertCell().appendChild(document.createElement("button"));
    browse.type = "button"; browse.textContent = "browse";
    // the editor names the graph it queries: what runs is what is shown
    browse.addEventListener("click", () => runShown(
      `SELECT ?s ?p ?o WHERE {\n  GRAPH <${paper.graph}> { ?s ?p ?o }\n}\nORDER BY ?s ?p ?o\nLIMIT ${BROWSE_ROWS}\n`));
    const links = row.insertCell();
    for (const [format, label] of [["turtle", "Turtle"], ["nt", "N-Triples"], ["jsonld", "JSON-LD"]]) {
      const link = links.appendChild(document.createElement("a"));
      link.href = `/store?${new URLSearchParams({ graph: paper.graph, format })}`;
      link.textContent = label; links.append(" ");
    }
  }
}

$("run").addEventListener("click", () => run($("query").value));
loadExamples().then(() => {
  const described = KgResults.describeQuery(new URLSearchParams(location.search).get("describe") || "");
  if (described) runShown(described);
});
