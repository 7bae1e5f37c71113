// The catalog's MCP App in a real browser (issue 15): headless Chromium (Debian's package), a test
// host page built on the official ext-apps AppBridge, the real backend binary on loopback. A
// scripted user pages, searches, creates, meets a duplicate-title refusal, edits and archives;
// after each step the catalog is checked through the MCP API and a screenshot is kept in
// target/ui-screenshots/. Any network request other than the host page and its /mcp fails the run.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { chromium } from "playwright-core";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "..");
const backendBin = process.env.BACKEND_BIN || path.join(root, "target/debug/mcp-cursos-backend");
const chromiumBin = process.env.CHROMIUM_BIN || "/usr/bin/chromium";
const shots = path.join(root, "target/ui-screenshots");
const STEP_TIMEOUT_MS = 30_000;

const cleanups = [];
function fail(message) { throw new Error(message); }
function expectEqual(actual, expected, what) {
  const [a, e] = [JSON.stringify(actual), JSON.stringify(expected)];
  if (a !== e) fail(`${what}: expected ${e}, got ${a}`);
}

async function startBackend() {
  const folder = mkdtempSync(path.join(tmpdir(), "mcp-cursos-ui-"));
  cleanups.push(() => rmSync(folder, { recursive: true, force: true }));
  const key = randomBytes(24).toString("hex");
  const env = { PATH: process.env.PATH, HOST: "127.0.0.1", PORT: "0", API_KEY: key,
    DATABASE_PATH: path.join(folder, "cursos.db"), RUST_LOG: "info,rmcp=warn" };
  const child = spawn(backendBin, [], { env, stdio: ["ignore", "pipe", "pipe"] });
  cleanups.push(() => child.kill("SIGTERM"));
  let log = "";
  const url = await new Promise((resolve, reject) => {
    const look = (chunk) => {
      log += chunk;
      const found = /mcp-cursos-backend listening url=(http:\S+)/.exec(log);
      if (found) resolve(found[1]);
    };
    child.stdout.on("data", look);
    child.stderr.on("data", look);
    child.on("exit", (code) => reject(new Error(`backend exited (${code}) before listening:\n${log}`)));
  });
  return { url, key };
}

async function apiClient(backend) {
  const client = new Client({ name: "verificador", version: "1.0.0" });
  const headers = { Authorization: `Bearer ${backend.key}` };
  await client.connect(new StreamableHTTPClientTransport(new URL(backend.url), { requestInit: { headers } }));
  cleanups.push(() => client.close());
  return client;
}

async function catalog(api) {
  let uri = "cursos://catalogo", total = 0;
  const courses = [];
  while (uri) {
    const page = JSON.parse((await api.readResource({ uri })).contents[0].text);
    total = page.total;
    courses.push(...page.cursos);
    uri = page.proximaPagina;
  }
  return { total, courses };
}

// The host page and its script on one loopback origin; /mcp is forwarded to the backend with the
// key, so the key never reaches the browser.
async function startHost(backend) {
  const bundle = await build({ entryPoints: [path.join(here, "host.mjs")], bundle: true, format: "iife",
    platform: "browser", write: false, logLevel: "error" });
  const script = bundle.outputFiles[0].text;
  const page = readFileSync(path.join(here, "host.html"));
  const target = new URL(backend.url);
  const server = http.createServer((request, response) => {
    if (request.url === "/") return response.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(page);
    if (request.url === "/host.js") return response.writeHead(200, { "content-type": "text/javascript" }).end(script);
    if (request.url.startsWith("/mcp")) {
      const headers = { ...request.headers, host: target.host, authorization: `Bearer ${backend.key}` };
      delete headers.origin; // the backend sees a loopback client, as from the host's own process
      const upstream = http.request({ host: target.hostname, port: target.port, path: target.pathname,
        method: request.method, headers }, (answer) => {
        response.writeHead(answer.statusCode, answer.headers);
        answer.pipe(response);
      });
      upstream.on("error", () => response.destroy());
      request.pipe(upstream);
      return undefined;
    }
    return response.writeHead(404).end();
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanups.push(() => server.closeAllConnections() || server.close());
  return `http://127.0.0.1:${server.address().port}`;
}

async function main() {
  mkdirSync(shots, { recursive: true });
  const backend = await startBackend();
  const api = await apiClient(backend);
  const plainTools = (await api.listTools()).tools.map((tool) => tool.name).sort();
  expectEqual(plainTools, ["arquivar_curso", "atualizar_curso", "criar_curso"], "a client without the extension");
  for (let number = 0; number <= 100; number++) {
    const titulo = `Curso ${String(number).padStart(3, "0")}`;
    const created = await api.callTool({ name: "criar_curso", arguments: { titulo, cargaHoraria: 10 + (number % 30) } });
    if (created.isError) fail(`seeding ${titulo}: ${JSON.stringify(created.content)}`);
  }
  expectEqual((await catalog(api)).total, 101, "seeded catalog");

  const hostOrigin = await startHost(backend);
  const browser = await chromium.launch({ executablePath: chromiumBin, headless: true, args: ["--no-sandbox"] });
  cleanups.push(() => browser.close());
  const context = await browser.newContext({ viewport: { width: 460, height: 1000 }, locale: "pt-BR" });
  const attempted = [];
  await context.route("**/*", (route) => {
    const url = route.request().url();
    if (url.startsWith(`${hostOrigin}/`)) return route.continue();
    attempted.push(url);
    return route.abort("blockedbyclient");
  });
  const page = await context.newPage();
  const pageErrors = [];
  page.on("pageerror", (error) => pageErrors.push(String(error)));
  page.on("console", (message) => { if (message.type() === "error") pageErrors.push(message.text()); });
  page.setDefaultTimeout(STEP_TIMEOUT_MS);
  let shot = 0;
  const step = async (name) => {
    shot += 1;
    const file = path.join(shots, `${String(shot).padStart(2, "0")}-${name}.png`);
    await page.screenshot({ path: file, fullPage: true });
    if (attempted.length) fail(`network requests outside the bridge were attempted: ${attempted.join(", ")}`);
    console.log(`ok ${shot} ${name}`);
  };

  await page.goto(`${hostOrigin}/`);
  await page.waitForFunction(() => window.__hostReady || window.__hostError);
  const hostError = await page.evaluate(() => window.__hostError);
  if (hostError) fail(`host: ${hostError}`);
  const view = page.frameLocator("iframe");
  describeView = async () => {
    const text = async (selector) => JSON.stringify(await view.locator(selector).textContent({ timeout: 1000 }).catch(() => "?"));
    const hidden = async (selector) => view.locator(selector).isHidden({ timeout: 1000 }).catch(() => "?");
    return `the view: #estado ${await text("#estado")}; #erro-detalhe ${await text("#erro-detalhe")} (hidden: ${await hidden("#erro-detalhe")}); ` +
      `#erro-formulario ${await text("#erro-formulario")} (hidden: ${await hidden("#erro-formulario")}); #dados ${await text("#dados")}`;
  };
  const rows = view.locator("#linhas tr");
  const caption = view.locator("#legenda");

  // 1. The catalog renders: the first page of the server's cursors.
  await expectCount(rows, 100);
  await expectText(caption, /101 no total, página 1/);
  expectEqual((await catalog(api)).total, 101, "catalog after rendering");
  await step("catalogo");

  // 2. Paging with the catalog's own cursors, forward and back.
  await view.getByRole("button", { name: "Próxima página" }).click();
  await expectCount(rows, 1);
  await expectText(rows.first(), /Curso 100/);
  await expectText(caption, /página 2/);
  await step("pagina-2");
  await view.getByRole("button", { name: "Página anterior" }).click();
  await expectCount(rows, 100);
  expectEqual((await catalog(api)).total, 101, "paging writes nothing");

  // 3. Search through the server's search.
  await view.getByLabel("Buscar curso (título ou id)").fill("curso 042");
  await view.getByRole("button", { name: "Buscar", exact: true }).click();
  await expectText(caption, /Resultado da busca/);
  await expectText(rows.first(), /Curso 042/);
  expectEqual((await catalog(api)).total, 101, "searching writes nothing");
  await step("busca");
  await view.getByRole("button", { name: "Ver catálogo" }).click();
  await expectCount(rows, 100);

  // 4. Create a course.
  await view.getByRole("button", { name: "Novo curso" }).click();
  await view.getByLabel("Título", { exact: true }).fill("Rust para iniciantes");
  await view.getByLabel("Carga horária (horas)").fill("40");
  await view.getByRole("button", { name: "Salvar" }).click();
  await expectText(view.locator("#titulo-detalhe"), /^Rust para iniciantes$/);
  const afterCreate = await catalog(api);
  expectEqual(afterCreate.total, 102, "catalog after creating");
  const rust = afterCreate.courses.find((course) => course.titulo === "Rust para iniciantes");
  if (!rust || rust.cargaHoraria !== 40) fail(`the created course through the API: ${JSON.stringify(rust)}`);
  await step("criado");

  // 5. A duplicate title: the server's own refusal, word for word.
  await view.getByRole("button", { name: "Novo curso" }).click();
  await view.getByLabel("Título", { exact: true }).fill("  RUST para   iniciantes ");
  await view.getByLabel("Carga horária (horas)").fill("12");
  await view.getByRole("button", { name: "Salvar" }).click();
  const alert = view.locator("#erro-formulario");
  await alert.waitFor({ state: "visible" });
  const shown = (await alert.textContent()).trim();
  const refusal = await api.callTool({ name: "criar_curso", arguments: { titulo: "  RUST para   iniciantes ", cargaHoraria: 12 } });
  if (!refusal.isError) fail("the API accepted a duplicate title");
  expectEqual(shown, refusal.content.map((block) => block.text).join("\n").trim(), "the refusal the view shows");
  expectEqual((await catalog(api)).total, 102, "a refused duplicate writes nothing");
  await step("titulo-repetido");
  await view.getByRole("button", { name: "Cancelar" }).click();

  // 6. Edit the course.
  await view.getByRole("button", { name: "Editar" }).click();
  await view.getByLabel("Carga horária (horas)").fill("60");
  await view.getByRole("button", { name: "Salvar" }).click();
  await expectText(view.locator("#dados"), /60 horas/);
  const edited = JSON.parse((await api.readResource({ uri: `cursos://${rust.id}` })).contents[0].text);
  expectEqual([edited.cargaHoraria, edited.versao, edited.titulo], [60, 2, "Rust para iniciantes"], "the edited course");
  await step("editado");

  // 7. Archive it, after the server's question is shown and confirmed.
  await view.getByRole("button", { name: "Arquivar" }).click();
  const question = view.locator("#texto-pergunta");
  await question.waitFor({ state: "visible" });
  expectEqual((await question.textContent()).startsWith('Arquivar o curso "Rust para iniciantes"'), true, "the question");
  const stillThere = JSON.parse((await api.readResource({ uri: `cursos://${rust.id}` })).contents[0].text);
  expectEqual(stillThere.arquivado, false, "asking archives nothing");
  await step("pergunta");
  await view.getByRole("button", { name: "Sim, arquivar" }).click();
  await expectText(view.locator("#dados"), /SituaçãoArquivado/);
  const archived = JSON.parse((await api.readResource({ uri: `cursos://${rust.id}` })).contents[0].text);
  expectEqual(archived.arquivado, true, "archived through the API");
  expectEqual((await catalog(api)).total, 101, "catalog after archiving");
  const history = JSON.parse((await api.readResource({ uri: `cursos://${rust.id}/historico` })).contents[0].text);
  expectEqual([history.entradas[0].ferramenta, history.entradas[0].evidencia.aprovacao.perguntado],
    ["interface_arquivar_curso", true], "the archiving's receipt");
  await step("arquivado");

  // 8. Live: another client's change reaches the view through the host's change notices.
  await view.getByRole("button", { name: "Fechar" }).click();
  const other = await api.callTool({ name: "criar_curso", arguments: { titulo: "Curso criado por outro cliente", cargaHoraria: 8 } });
  if (other.isError) fail("the other client's course");
  await expectText(caption, /102 no total/);
  await step("ao-vivo");

  // 9. A short view for the README: a search and one course's detail with its history.
  await view.getByLabel("Buscar curso (título ou id)").fill("curso 09");
  await view.getByRole("button", { name: "Buscar", exact: true }).click();
  await expectText(caption, /Resultado da busca/);
  await view.getByRole("button", { name: "Ver detalhes de Curso 095" }).click();
  await expectText(view.locator("#titulo-detalhe"), /^Curso 095$/);
  await expectCount(view.locator("#historico li"), 1);
  await step("visao-geral");
  // The top of it, the size docs/ui-catalogo.png has (copied there by hand when the view changes).
  await page.screenshot({ path: path.join(shots, "readme.png"), clip: { x: 0, y: 0, width: 460, height: 1220 } });

  // 10. A 200-character title without a space on a 360-pixel panel: the hours column stays on
  // the panel and the title keeps room to be read (issue 24: the table hid the hours).
  const long = "Arquitetura" + "x".repeat(189);
  const longCreated = await api.callTool({ name: "criar_curso", arguments: { titulo: long, cargaHoraria: 7 } });
  if (longCreated.isError) fail(`the long title: ${JSON.stringify(longCreated.content)}`);
  // The host's panel (420 px in host.html) narrowed to 360 px, as a side panel is.
  await page.evaluate(() => { document.getElementById("painel").style.width = "360px"; });
  await view.getByRole("button", { name: "Fechar" }).click();
  await view.getByLabel("Buscar curso (título ou id)").fill("arquiteturaxxx");
  await view.getByRole("button", { name: "Buscar", exact: true }).click();
  await expectText(caption, /Resultado da busca/);
  await expectCount(rows, 1);
  await expectText(rows.first(), /7 horas/);
  const hoursBox = await rows.first().locator("td.num").boundingBox();
  const titleBox = await rows.first().locator("td").first().boundingBox();
  const panel = await page.locator("iframe").boundingBox();
  if (!hoursBox || !panel || hoursBox.x < panel.x || hoursBox.x + hoursBox.width > panel.x + panel.width) {
    fail(`the hours are off the panel: ${JSON.stringify({ hoursBox, panel })}`);
  }
  if (!titleBox || titleBox.width < 120) fail(`the title has no room: ${JSON.stringify(titleBox)}`);
  await step("titulo-longo");

  // 11. A refusal stays on screen through live refreshes (issue 24): the question is asked, another
  // client renames the course (a change of the listing, which this host forwards to the view), the
  // confirmation is refused (the course changed since the question), and a further rename by the
  // other client refreshes the detail quietly: the refusal is still shown.
  await page.evaluate(() => { document.getElementById("painel").style.width = ""; });
  await view.getByLabel("Buscar curso (título ou id)").fill("curso 042");
  await view.getByRole("button", { name: "Buscar", exact: true }).click();
  await view.getByRole("button", { name: "Ver detalhes de Curso 042" }).click();
  await expectText(view.locator("#titulo-detalhe"), /^Curso 042$/);
  const target = JSON.parse((await api.readResource({ uri: `cursos://${await view.locator("#dados dd").last().textContent()}` })).contents[0].text);
  await view.getByRole("button", { name: "Arquivar" }).click();
  await view.locator("#texto-pergunta").waitFor({ state: "visible" });
  const rename = async (titulo, versao) => {
    const result = await api.callTool({ name: "atualizar_curso", arguments: { id: target.id, versao, titulo } });
    if (result.isError) fail(`the other client's edit: ${JSON.stringify(result.content)}`);
  };
  await rename("Curso 042 revisto", target.versao);
  await expectText(view.locator("#titulo-detalhe"), /^Curso 042 revisto$/);
  await view.getByRole("button", { name: "Sim, arquivar" }).click();
  const detailError = view.locator("#erro-detalhe");
  await detailError.waitFor({ state: "visible" });
  const refused = (await detailError.textContent()).trim();
  expectEqual(refused.includes('era para "Curso 042", versão 1'), true, `the refusal names what was confirmed: ${refused}`);
  expectEqual(await view.locator("#pergunta").isHidden(), true, "the spent question is closed");
  await rename("Curso 042 revisto outra vez", target.versao + 1);
  await expectText(view.locator("#titulo-detalhe"), /^Curso 042 revisto outra vez$/);
  expectEqual([await detailError.isVisible(), (await detailError.textContent()).trim()], [true, refused], "the refusal after a live refresh");
  const unarchived = JSON.parse((await api.readResource({ uri: `cursos://${target.id}` })).contents[0].text);
  expectEqual([unarchived.arquivado, unarchived.versao], [false, target.versao + 2], "nothing archived");
  await step("recusa-mantida");

  if (pageErrors.length) fail(`errors in the page: ${pageErrors.join("\n")}`);
  if (attempted.length) fail(`network requests outside the bridge were attempted: ${attempted.join(", ")}`);
  console.log(`ui-test: ${shot} steps passed; screenshots in ${path.relative(root, shots)}`);
}

async function expectCount(locator, count) {
  const deadline = Date.now() + STEP_TIMEOUT_MS;
  let seen;
  while (Date.now() < deadline) {
    seen = await locator.count();
    if (seen === count) return;
    await new Promise((resolve) => setTimeout(resolve, 50)); // polling, not waiting for readiness
  }
  fail(`expected ${count} rows, saw ${seen}`);
}

async function statusOf(locator) {
  return locator.page().frameLocator("iframe").locator("#estado").textContent().catch(() => "?");
}

async function expectText(locator, pattern) {
  const deadline = Date.now() + STEP_TIMEOUT_MS;
  let seen;
  while (Date.now() < deadline) {
    seen = (await locator.textContent().catch(() => null)) ?? "";
    if (pattern.test(seen.trim())) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  fail(`expected text matching ${pattern}, saw ${JSON.stringify(seen)} (the view says: ${await statusOf(locator)})`);
}

// What the view showed when a step failed (set once the view exists): a flaky step says why.
let describeView = async () => "no view yet";

let failed = false;
try {
  await main();
} catch (error) {
  failed = true;
  console.error(`ui-test FAILED: ${error.stack || error}`);
  console.error(`ui-test: ${await describeView().catch((problem) => `cannot describe the view: ${problem}`)}`);
} finally {
  for (const cleanup of cleanups.reverse()) {
    try { await cleanup(); } catch { /* best effort */ }
  }
}
process.exit(failed ? 1 : 0);
