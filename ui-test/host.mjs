// The test host: what an MCP Apps host does, with the official bridge (ext-apps AppBridge).
// Bundled by run.mjs with esbuild into one script served to the page; it talks to the real
// backend through /mcp on its own origin (run.mjs forwards that path to the backend on loopback).
import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const UI = "io.modelcontextprotocol/ui";
const MIME = "text/html;profile=mcp-app";

// What the host enforces from the resource's _meta.ui.csp: nothing but inline code, and the
// origins the server declared (none for this app).
function cspFor(declared) {
  const list = (domains) => (domains && domains.length ? domains.join(" ") : "'none'");
  return [
    "default-src 'none'",
    "script-src 'unsafe-inline'",
    "style-src 'unsafe-inline'",
    `connect-src ${list(declared?.connectDomains)}`,
    `img-src data: ${declared?.resourceDomains?.join(" ") ?? ""}`.trim(),
    `frame-src ${list(declared?.frameDomains)}`,
    "base-uri 'none'",
    "form-action 'none'",
  ].join("; ");
}

async function open() {
  const client = new Client(
    { name: "host-de-teste", version: "1.0.0" },
    { capabilities: { extensions: { [UI]: { mimeTypes: [MIME] } } } },
  );
  await client.connect(new StreamableHTTPClientTransport(new URL("/mcp", location.href)));
  const { tools } = await client.listTools();
  const entry = tools.find((tool) => tool.name === "ver_catalogo");
  if (!entry) throw new Error("ver_catalogo is not offered to a client that renders apps");
  const uri = entry._meta.ui.resourceUri;
  const read = await client.readResource({ uri });
  const contents = read.contents[0];
  if (contents.mimeType !== MIME) throw new Error(`unexpected MIME ${contents.mimeType}`);
  const csp = `<meta http-equiv="Content-Security-Policy" content="${cspFor(contents._meta?.ui?.csp)}">`;

  const frame = document.createElement("iframe");
  frame.title = "Catálogo de cursos";
  frame.setAttribute("sandbox", "allow-scripts"); // no same origin: the view reaches nothing but the bridge
  frame.srcdoc = contents.text.replace("<head>", `<head>${csp}`);
  document.getElementById("painel").append(frame);

  const bridge = new AppBridge(
    client,
    { name: "host-de-teste", version: "1.0.0" },
    { serverTools: { listChanged: true }, serverResources: { listChanged: true } },
    { hostContext: { locale: "pt-BR", displayMode: "inline", platform: "web" } },
  );
  bridge.onsizechange = ({ height }) => {
    if (height) frame.style.height = `${Math.min(Math.max(height + 4, 300), 4000)}px`;
  };
  bridge.oninitialized = async () => {
    // The model "calls" the entry tool; the host shows its result in the view.
    const result = await client.callTool({ name: "ver_catalogo", arguments: {} });
    await bridge.sendToolInput({ arguments: {} });
    await bridge.sendToolResult(result);
    window.__hostReady = true;
  };
  await bridge.connect(new PostMessageTransport(frame.contentWindow, frame.contentWindow));
}

open().catch((error) => {
  window.__hostError = String(error && error.stack ? error.stack : error);
  document.getElementById("erro").textContent = window.__hostError;
});
