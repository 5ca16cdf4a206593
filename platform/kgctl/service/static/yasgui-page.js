// The YASGUI query page: kgctl's examples, the ontologies' prefixes, the paper list, download
// links in the formats that fit the query's form, and results drawn by KgResults (results.js).
"use strict";
const ENDPOINT = `${location.origin}/query`;
const FORMATS = {
  solutions: [["csv", "CSV"], ["tsv", "TSV"], ["json", "JSON"], ["xml", "XML"]],
  graph: [["turtle", "Turtle"], ["nt", "N-Triples"], ["jsonld", "JSON-LD"], ["rdfxml", "RDF/XML"]],
};
const BROWSE_ROWS = 100;
const $ = (id) => document.getElementById(id);

let papers = [], prefixes = {};
const loaded = Promise.all([loadPapers(), loadPrefixes()]);

// SELECT and ASK results as KgResults draws them; graphs go to YASR's own table
class EntitiesPlugin {
  constructor(yasr) {
    Object.assign(this, { yasr, priority: 20, label: "Labelled table" });
  }

  canHandleResults() {
    const results = this.yasr.results;
    return !!results && !results.getError() && results.getType() === "json";
  }

  async draw() {
    await loaded;
    const container = document.createElement("div");
    container.className = "kg-results-view";
    this.yasr.resultsEl.append(container);
    await KgResults.render(container, this.yasr.results.getAsJson(), {
      query: yasgui.getTab().getYasqe().getValue(), prefixes, papers,
      union: $("union").checked, run: (query) => setQuery(query, true) });
  }

  getIcon() {
    return document.createElement("span");
  }
}
Yasgui.Yasr.registerPlugin("entities", EntitiesPlugin);
Object.assign(Yasgui.Yasr.defaults, { pluginOrder: ["entities", "table", "response"],
                                      defaultPlugin: "entities" });
// no third-party services from the page: only the variable completer stays on
Yasgui.Yasqe.defaults.autocompleters = ["variables"];
const yasgui = new Yasgui($("yasgui"), {
  requestConfig: { endpoint: ENDPOINT, method: "POST", args: requestArgs() },
  copyEndpointOnNewTab: false,
  endpointCatalogueOptions: { getData: () => [{ endpoint: ENDPOINT }] },
  persistenceId: null,
});

// the dataset options of every request: union default graph, merged or raw entities
function requestArgs() {
  return [...($("union").checked ? [{ name: "union-default-graph", value: "true" }] : []),
          { name: "view", value: $("view").value }];
}

function applyArgs() {
  yasgui.getTab().setRequestConfig({ args: requestArgs() });
}
$("union").addEventListener("change", applyArgs);
$("view").addEventListener("change", applyArgs);

function setQuery(query, run) {
  const tab = yasgui.getTab();
  applyArgs();
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
    for (const arg of requestArgs()) params.append(arg.name, arg.value);
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
yasgui.on("tabAdd", () => setTimeout(applyArgs));

async function loadExamples() {
  const examples = await KgResults.json("/examples.json");
  const select = $("examples");
  examples.forEach((example, index) => select.add(new Option(example.title, String(index))));
  select.addEventListener("change", () => {
    if (select.value !== "") setQuery(examples[Number(select.value)].query, false);
  });
}

async function loadPrefixes() {
  prefixes = await KgResults.json("/prefixes");
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
  papers = await KgResults.json("/papers");
  const body = $("papers").tBodies[0];
  if (!papers.length) KgResults.noPapers(body);
  for (const paper of papers) {
    const row = body.insertRow();
    row.insertCell().textContent = paper.paper;
    row.insertCell().textContent = String(paper.triples);
    const browse = document.createElement("button");
    browse.type = "button";
    browse.textContent = "browse";
    // the editor names the graph it queries: what runs is what is shown
    browse.addEventListener("click", () => setQuery(browseQuery(paper.graph), true));
    row.insertCell().append(browse);
    const link = document.createElement("a");
    link.href = `/store?${new URLSearchParams({ graph: paper.graph, format: "turtle" })}`;
    link.textContent = "Turtle";
    row.insertCell().append(link);
  }
}

// a paper a page at a time, in a stable order (the pager moves the OFFSET)
function browseQuery(graph) {
  return `SELECT ?s ?p ?o WHERE {\n  GRAPH <${graph}> { ?s ?p ?o }\n}\nORDER BY ?s ?p ?o\nLIMIT ${BROWSE_ROWS}\n`;
}

loadExamples();
const described = KgResults.describeQuery(new URLSearchParams(location.search).get("describe") || "");
if (described) setQuery(described, true);
