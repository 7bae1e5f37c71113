// Peer (c) of bench/run.sh: the same `resources/read` of `cursos://{uuid}` served by the official
// TypeScript MCP SDK (@modelcontextprotocol/sdk, pinned in package.json), what most users would
// pick instead of mcp-cursos. The course's JSON is built once and kept in memory (no database).
// Served on node:http (lighter than the express of the SDK's examples: the SDK's best case) with
// the SDK's StreamableHTTPServerTransport, as its documentation shows:
//   stateless: a new McpServer and transport per request, JSON responses (enableJsonResponse);
//   stateful:  one McpServer and transport per session (Mcp-Session-Id), SSE responses.
//
//   node server.mjs --port 0 --session-mode stateless   # prints "listening on ..." on stderr
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import { parseArgs } from "node:util";
import { McpServer, ResourceTemplate } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";

const { values: options } = parseArgs({
  options: { port: { type: "string", default: "0" }, "session-mode": { type: "string", default: "stateless" } },
});
const stateful = options["session-mode"] === "stateful";

const COURSE_ID = "0b5c4f8e-6a63-4c51-9d7e-2f0b8f0c1a11";
const courses = new Map([
  [COURSE_ID, JSON.stringify({
    id: COURSE_ID,
    titulo: "Introdução a Rust para Iniciantes 0000123",
    cargaHoraria: 40,
    arquivado: false,
    versao: 1,
    criadoEm: "2026-11-30T04:40:22.000Z",
    atualizadoEm: "2026-11-30T04:40:22.000Z",
  })],
]);

function newServer() {
  const server = new McpServer({ name: "peer-ts", version: "0.0.0" });
  server.registerResource(
    "curso",
    new ResourceTemplate("cursos://{id}", { list: undefined }),
    { mimeType: "application/json" },
    async (uri, { id }) => {
      const text = courses.get(id);
      if (text === undefined) throw new Error(`recurso não encontrado: ${uri.href}`);
      return { contents: [{ uri: uri.href, mimeType: "application/json", text }] };
    },
  );
  return server;
}

function readBody(request) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    request.on("data", (chunk) => chunks.push(chunk));
    request.on("end", () => {
      try { resolve(JSON.parse(Buffer.concat(chunks).toString("utf8"))); } catch (error) { reject(error); }
    });
    request.on("error", reject);
  });
}

const sessions = new Map(); // Mcp-Session-Id -> transport

async function handle(request, response) {
  if (request.url !== "/mcp" || request.method !== "POST") {
    response.writeHead(405).end();
    return;
  }
  const body = await readBody(request);
  if (!stateful) {
    const server = newServer();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    response.on("close", () => { transport.close(); server.close(); });
    await server.connect(transport);
    await transport.handleRequest(request, response, body);
    return;
  }
  const sessionId = request.headers["mcp-session-id"];
  let transport = sessionId === undefined ? undefined : sessions.get(sessionId);
  if (transport === undefined) {
    if (sessionId !== undefined || body?.method !== "initialize") {
      response.writeHead(sessionId === undefined ? 400 : 404, { "content-type": "application/json" });
      response.end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32000, message: "no valid session" } }));
      return;
    }
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => sessions.set(id, transport),
    });
    transport.onclose = () => { if (transport.sessionId) sessions.delete(transport.sessionId); };
    await newServer().connect(transport);
  }
  await transport.handleRequest(request, response, body);
}

const http = createServer((request, response) => {
  handle(request, response).catch((error) => {
    if (!response.headersSent) response.writeHead(500, { "content-type": "application/json" });
    response.end(JSON.stringify({ error: String(error) }));
  });
});
http.keepAliveTimeout = 60_000;
http.listen(Number(options.port), "127.0.0.1", () => {
  const { port } = http.address();
  process.stderr.write(`peer-ts (${stateful ? "stateful" : "stateless"}) listening on http://127.0.0.1:${port}/mcp\n`);
});
