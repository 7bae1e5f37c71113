// The official TypeScript SDK's OAuth client against the real mcp-cursos backend and the real AS (as.mjs):
// 401 → protected-resource metadata → AS metadata → client registration (DCR, or the pre-registered
// `mcp-public`) → authorization code with PKCE (login and consent scripted headless: consent.mjs) → token →
// MCP calls: tools/list, cursos://catalogo, criar_curso, and the course's history naming the token's subject.
//
//   node ts_client.mjs --url http://127.0.0.1:P/mcp --sdk v1|v2 [--mode legacy|auto] [--registration dcr|pre]
//                      [--user alice] [--tenant acme] [--expect-version 2025-11-25]
//
// --sdk v1: @modelcontextprotocol/sdk 1.32.2 (2025-11-25); v2: @modelcontextprotocol/client 2.4.0, whose Client
// negotiates 2025-11-25 by default (`--mode legacy`) and 2026-07-28 with versionNegotiation `--mode auto`.
// --registration machine (v2 only): no user: the SDK's ClientCredentialsProvider as the confidential client
// `mcp-machine` (tenant acme), which answers the 401 with a client_credentials grant by itself.
// Last line: `oauth-ts: N passed, M failed`; exit status 1 when anything failed.
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { consent } from './consent.mjs';
import { load } from './resolve.mjs';

const { values: opts } = parseArgs({
  options: {
    url: { type: 'string' },
    sdk: { type: 'string', default: 'v2' },
    mode: { type: 'string', default: 'legacy' },
    registration: { type: 'string', default: 'dcr' },
    user: { type: 'string', default: 'alice' },
    tenant: { type: 'string', default: 'acme' },
    'expect-version': { type: 'string' },
    'redirect-uri': { type: 'string', default: 'http://127.0.0.1:9/callback' },
  },
});
const URL_ = opts.url;
const REDIRECT = opts['redirect-uri'];
const tag = `ts-${opts.sdk}${opts.sdk === 'v2' ? `-${opts.mode}` : ''}-${opts.registration}`;

let sdk;
if (opts.sdk === 'v1') {
  const [{ Client }, { StreamableHTTPClientTransport }, { UnauthorizedError }] = await Promise.all([
    load('@modelcontextprotocol/sdk/client/index.js'),
    load('@modelcontextprotocol/sdk/client/streamableHttp.js'),
    load('@modelcontextprotocol/sdk/client/auth.js'),
  ]);
  sdk = { Client, StreamableHTTPClientTransport, UnauthorizedError };
} else {
  sdk = await load('@modelcontextprotocol/client');
}

let passed = 0;
let failed = 0;
async function step(label, fn) {
  try {
    const value = await Promise.race([
      fn(),
      new Promise((_, reject) => setTimeout(() => reject(new Error('timed out after 30 s')), 30000).unref()),
    ]);
    passed += 1;
    console.log(`  ok   ${tag}: ${label}`);
    return value;
  } catch (e) {
    failed += 1;
    console.log(`  FAIL ${tag}: ${label}: ${e?.stack?.split('\n').slice(0, 3).join(' | ') ?? e}`);
    return undefined;
  }
}
function check(condition, message) {
  if (!condition) throw new Error(message);
}
const claimsOf = (jwt) => JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url').toString());
const textJson = (result) => JSON.parse(result.contents[0].text);

// The host's storage: in memory, one run.
class Provider {
  constructor(issuer) {
    this.issuer = issuer;
    this.client = undefined;
    this.saved = undefined;
    this.verifier = undefined;
    this.authorizationUrl = undefined;
    this.discovery = undefined;
    this.stateValue = randomBytes(12).toString('hex');
  }
  get redirectUrl() {
    return REDIRECT;
  }
  get clientMetadata() {
    return {
      client_name: `mcp-cursos oauth-e2e ${tag}`,
      redirect_uris: [REDIRECT],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  state() {
    return this.stateValue;
  }
  clientInformation() {
    if (this.client) return this.client;
    if (opts.registration === 'pre' && this.issuer) return { client_id: 'mcp-public', issuer: this.issuer };
    return undefined;
  }
  saveClientInformation(info) {
    this.client = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(v) {
    this.verifier = v;
  }
  codeVerifier() {
    return this.verifier;
  }
  saveDiscoveryState(s) {
    this.discovery = s;
  }
  discoveryState() {
    return this.discovery;
  }
}

const newClient = () =>
  new sdk.Client(
    { name: `oauth-e2e-${tag}`, version: '1.0.0' },
    opts.sdk === 'v2' && opts.mode === 'auto' ? { versionNegotiation: { mode: 'auto' } } : {},
  );

// The pre-registered client's issuer must be the PRM's authorization server: read it as a host would.
let issuer;
await step('GET /mcp without a token → 401 with resource_metadata; the PRM names the AS', async () => {
  const r = await fetch(URL_, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: '{}',
  });
  check(r.status === 401, `status ${r.status}`);
  const challenge = r.headers.get('www-authenticate') ?? '';
  const prm = /resource_metadata="([^"]+)"/.exec(challenge)?.[1];
  check(prm, `no resource_metadata in ${challenge}`);
  const meta = await (await fetch(prm)).json();
  check(meta.resource === URL_, `PRM resource ${meta.resource}`);
  issuer = meta.authorization_servers?.[0];
  check(issuer, `PRM ${JSON.stringify(meta)}`);
});

const machine = opts.registration === 'machine';
const subject = machine ? 'mcp-machine' : opts.user;
const provider = machine
  ? new sdk.ClientCredentialsProvider({
      clientId: 'mcp-machine',
      clientSecret: 'machine-secret',
      scope: 'mcp:read mcp:write',
      expectedIssuer: issuer,
    })
  : new Provider(issuer);
const client = newClient();
let transport = machine ? new sdk.StreamableHTTPClientTransport(new URL(URL_), { authProvider: provider }) : undefined;
if (!machine) {
  await step('connect → UnauthorizedError after PRM, AS metadata and registration; authorization URL with PKCE and resource', async () => {
    const transport = new sdk.StreamableHTTPClientTransport(new URL(URL_), { authProvider: provider });
    let error;
    try {
      await newClient().connect(transport);
    } catch (e) {
      error = e;
    }
    check(error instanceof sdk.UnauthorizedError, `expected UnauthorizedError, got ${error}`);
    const u = provider.authorizationUrl;
    check(u && u.href.startsWith(`${issuer}/auth`), `authorization URL ${u}`);
    check(u.searchParams.get('code_challenge_method') === 'S256' && u.searchParams.get('code_challenge'), 'no PKCE S256');
    check(u.searchParams.get('resource') === URL_, `resource ${u.searchParams.get('resource')}`);
    const registered = provider.clientInformation();
    if (opts.registration === 'pre') check(registered.client_id === 'mcp-public', `client ${registered.client_id}`);
    else check(registered?.client_id && registered.client_id !== 'mcp-public', `DCR gave ${JSON.stringify(registered)}`);
  });

  await step(`login as ${opts.user} and consent (headless) → code → token for the resource`, async () => {
    const callback = await consent(provider.authorizationUrl, opts.user, REDIRECT);
    check(callback.searchParams.get('code'), `callback ${callback}`);
    check(callback.searchParams.get('state') === provider.stateValue, 'state not echoed');
    transport = new sdk.StreamableHTTPClientTransport(new URL(URL_), { authProvider: provider });
    if (opts.sdk === 'v1') await transport.finishAuth(callback.searchParams.get('code'));
    else await transport.finishAuth(callback.searchParams);
    const claims = claimsOf(provider.saved.access_token);
    check(claims.aud === URL_ || claims.aud?.includes?.(URL_), `aud ${claims.aud}`);
    check(claims.iss === issuer && claims.sub === opts.user, `iss ${claims.iss} sub ${claims.sub}`);
    check(claims.tenant === opts.tenant, `tenant ${claims.tenant}`);
    check(/\bmcp:write\b/.test(claims.scope) && /\bmcp:read\b/.test(claims.scope), `scope ${claims.scope}`);
  });
}

await step(`connect with the token (protocol ${opts['expect-version'] ?? 'any'})`, async () => {
  await client.connect(transport);
  const version = client.getNegotiatedProtocolVersion?.() ?? transport.protocolVersion;
  console.log(`       negotiated protocol version: ${version}`);
  if (opts['expect-version']) check(version === opts['expect-version'], `negotiated ${version}`);
  if (machine) {
    const claims = claimsOf((await provider.tokens()).access_token);
    check(claims.sub === 'mcp-machine' && claims.aud === URL_ && claims.tenant === 'acme', JSON.stringify(claims));
  }
});

await step('tools/list has criar_curso', async () => {
  const { tools } = await client.listTools();
  check(tools.some((t) => t.name === 'criar_curso'), `tools ${tools.map((t) => t.name)}`);
});

await step('resources/read cursos://catalogo', async () => {
  const catalog = textJson(await client.readResource({ uri: 'cursos://catalogo' }));
  check(Array.isArray(catalog.cursos), JSON.stringify(catalog).slice(0, 200));
});

const title = `OAuth ${tag} ${randomBytes(3).toString('hex')}`;
const course = await step('criar_curso', async () => {
  const r = await client.callTool({ name: 'criar_curso', arguments: { titulo: title, cargaHoraria: 8 } });
  check(!r.isError, `isError: ${JSON.stringify(r.content)}`);
  check(r.structuredContent?.titulo === title, JSON.stringify(r.structuredContent));
  return r.structuredContent;
});

await step(`the history records the token's subject (${subject}@${issuer}) and the catalog lists the course`, async () => {
  check(course, 'no course');
  const h = textJson(await client.readResource({ uri: `cursos://${course.id}/historico` }));
  const authors = h.entradas.map((e) => e.autor);
  check(authors.length === 1 && authors[0] === `${subject}@${issuer}`, `autor ${JSON.stringify(authors)}`);
  const catalog = textJson(await client.readResource({ uri: 'cursos://catalogo' }));
  check(catalog.cursos.some((c) => c.id === course.id), 'course not in the catalog');
});

if (opts.sdk === 'v2' && !machine) {
  await step('a refused access token (invalid_token) → the SDK refreshes with the refresh token and retries', async () => {
    check(provider.saved.refresh_token, `no refresh token (scope ${provider.saved.scope})`);
    const before = provider.saved.access_token;
    provider.saved = { ...provider.saved, access_token: 'junk' };
    const catalog = textJson(await client.readResource({ uri: 'cursos://catalogo' }));
    check(Array.isArray(catalog.cursos), 'no catalog');
    check(provider.saved.access_token !== 'junk' && provider.saved.access_token !== before, 'no new access token');
  });
}

await client.close().catch(() => {});
console.log(`oauth-ts: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
