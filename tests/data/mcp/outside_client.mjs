// An MCP client nobody here wrote: the TypeScript SDK. Usage:
//   node outside_client.mjs SDK_DIR CALLS_FILE http URL | stdio COMMAND ARGS...
// Connects, lists the tools, runs the calls of CALLS_FILE (JSON lines {"name", "arguments"})
// and prints one JSON object: server info, capabilities, tools with annotations, results.
import { pathToFileURL } from "node:url";
import { join } from "node:path";
import { readFileSync } from "node:fs";

const [sdk, callsFile, mode, ...target] = process.argv.slice(2);
const load = (path) => import(pathToFileURL(join(sdk, "node_modules/@modelcontextprotocol/sdk/dist/esm", path)).href);
const { Client } = await load("client/index.js");
let transport;
if (mode === "http") {
  const { StreamableHTTPClientTransport } = await load("client/streamableHttp.js");
  transport = new StreamableHTTPClientTransport(new URL(target[0]));
} else {
  const { StdioClientTransport } = await load("client/stdio.js");
  transport = new StdioClientTransport({ command: target[0], args: target.slice(1), stderr: "ignore" });
}
const client = new Client({ name: "outside-client", version: "1.0.0" });
await client.connect(transport);
const tools = (await client.listTools()).tools.map((t) => ({ name: t.name, annotations: t.annotations }));
const results = [];
for (const line of readFileSync(callsFile, "utf8").split("\n").filter(Boolean)) {
  const call = JSON.parse(line);
  const started = performance.now();
  const r = await client.callTool({ name: call.name, arguments: call.arguments });
  results.push({ isError: r.isError ?? false, text: r.content[0].text.slice(0, 2000),
                 structured: r.structuredContent ?? null, ms: performance.now() - started });
}
console.log(JSON.stringify({ server: client.getServerVersion(), capabilities: client.getServerCapabilities(),
                             sessionId: transport.sessionId ?? null, tools, results }));
await client.close();
