// The YASGUI query page: kgctl's examples, the ontologies' prefixes, the paper list, and
// download links in the formats that fit the query's form.
"use strict";
const ENDPOINT = `${location.origin}/query`;
const FORMATS = {
  solutions: [["csv", "CSV"], ["tsv", "TSV"], ["json", "JSON"], ["xml", "XML"]],
  graph: [["turtle", "Turtle"], ["nt", "N-Triples"], ["jsonld", "JSON-LD"], ["rdfxml", "RDF/XML"]],
};
const $ = (id) => document.getElementById(id);

// no third-party services from the page: only the variable completer stays on
Yasgui.Yasqe.defaults.autocompleters = ["variables"];
const yasgui = new Yasgui($("yasgui"), {
  requestConfig: { endpoint: ENDPOINT, method: "POST", args: unionArgs() },
  copyEndpointOnNewTab: false,
  endpointCatalogueOptions: { getData: () => [{ endpoint: ENDPOINT }] },
  persistenceId: null,
});

function unionArgs() {
  return $("union").checked ? [{ name: "union-default-graph", value: "true" }] : [];
}

function applyUnion() {
  yasgui.getTab().setRequestConfig({ args: unionArgs() });
}
$("union").addEventListener("change", applyUnion);

function setQuery(query, run) {
  const tab = yasgui.getTab();
  applyUnion();
  tab.setQuery(query);
  if (run) tab.query();
}

function downloadLinks() {
  const yasqe = yasgui.getTab().getYasqe();
  const form = yasqe.getQueryType();
  const kind = form === "CONSTRUCT" || form === "DESCRIBE" ? "graph" : "solutions";
  const links = $("download-links");
  links.replaceChildren();
  for (const [format, label] of FORMATS[kind]) {
    const params = new URLSearchParams({ query: yasqe.getValue(), format });
    for (const arg of unionArgs()) params.append(arg.name, arg.value);
    const link = document.createElement("a");
    link.href = `/query?${params}`;
    link.dataset.format = format;
    link.textContent = label;
    links.append(link, " ");
  }
  $("downloads").hidden = false;
}

yasgui.on("queryResponse", downloadLinks);
yasgui.on("tabSelect", () => { $("downloads").hidden = true; });
yasgui.on("tabAdd", () => setTimeout(applyUnion));

async function loadExamples() {
  const examples = await (await fetch("/examples.json")).json();
  const select = $("examples");
  examples.forEach((example, index) => select.add(new Option(example.title, String(index))));
  select.addEventListener("change", () => {
    if (select.value !== "") setQuery(examples[Number(select.value)].query, false);
  });
}

async function loadPrefixes() {
  const prefixes = await (await fetch("/prefixes")).json();
  for (const [prefix, namespace] of Object.entries(prefixes)) {
    const chip = document.createElement("button");
    chip.type = "button";
    chip.className = "prefix";
    chip.title = namespace;
    chip.textContent = prefix;
    chip.addEventListener("click", () => yasgui.getTab().getYasqe().addPrefixes({ [prefix]: namespace }));
    $("prefixes").append(chip, " ");
  }
}

async function loadPapers() {
  const papers = await (await fetch("/papers")).json();
  const body = $("papers").tBodies[0];
  for (const paper of papers) {
    const row = body.insertRow();
    row.insertCell().textContent = paper.paper;
    row.insertCell().textContent = String(paper.triples);
    const browse = document.createElement("button");
    browse.type = "button";
    browse.textContent = "browse";
    // the editor names the graph it queries: what runs is what is shown
    browse.addEventListener("click", () => setQuery(
      `SELECT ?s ?p ?o WHERE {\n  GRAPH <${paper.graph}> { ?s ?p ?o }\n}\nLIMIT 500\n`, true));
    row.insertCell().append(browse);
    const link = document.createElement("a");
    link.href = `/store?${new URLSearchParams({ graph: paper.graph, format: "turtle" })}`;
    link.textContent = "Turtle";
    row.insertCell().append(link);
  }
}

loadExamples();
loadPrefixes();
loadPapers();
