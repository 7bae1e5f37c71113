// A real OAuth 2.1 / OpenID authorization server for the end-to-end suite: oidc-provider (npm, OpenID
// Certified) on 127.0.0.1, issuer http://127.0.0.1:PORT. Nobody on this project wrote the token code: this
// file only configures it. Once listening it prints ONE line of JSON on stdout (issuer, port, pid, kid, ...),
// which the driver reads instead of sleeping.
//
//   node as.mjs --resource http://127.0.0.1:P/mcp [--other-resource URL] [--opaque] [--ttl SECONDS]
//               [--port N] [--redirect-uri URL]
//
// --resource        the MCP server's canonical URI (RFC 8707 resource indicator, the tokens' `aud`)
// --other-resource  a second allowed resource: tokens for it are the "wrong audience" ones
// --opaque          access tokens are opaque (not JWTs), for the server's RFC 7662 introspection mode
//                   (oidc-provider cannot introspect JWT access tokens)
// --ttl             access token lifetime in seconds (default 600)
// --port            listen port (default 0: a free one)
// --redirect-uri    the pre-registered public client's redirect URI (default http://127.0.0.1:9/callback;
//                   nothing needs to listen there: the clients read the code from the Location header)
//
// Accounts (devInteractions login: any password): alice → tenant acme, bob → tenant beta, carol → no tenant.
// Clients: open DCR at /reg; public `mcp-public` (PKCE, no secret); client_credentials machines
// `mcp-machine` (acme, mcp:read mcp:write), `mcp-machine-ro` (acme, mcp:read), `mcp-machine-beta` (beta, both),
// `mcp-machine-none` (no tenant, both), all with secret `machine-secret`; `mcp-rs` / `rs-secret` for introspection.
// Debug routes (tests only): GET /debug/jwks-count → {"count": N} (GET /jwks served so far);
// GET /debug/mint?kid=&sub=&tenant=&scope=&aud=&exp_in=&nbf_in= → a JWT with this issuer's claims signed with a
// spare RSA key that is NOT in /jwks (an unknown or rotated key, whatever kid it claims); with &key=published,
// signed with the published key under its kid instead (claims the provider would never issue, e.g. a future nbf).
import { generateKeyPairSync, randomBytes, randomUUID, sign } from 'node:crypto';
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';
import { load } from './resolve.mjs';

const { default: Provider, errors } = await load('oidc-provider');

const { values: opts } = parseArgs({
  options: {
    resource: { type: 'string' },
    'other-resource': { type: 'string' },
    opaque: { type: 'boolean', default: false },
    ttl: { type: 'string', default: '600' },
    port: { type: 'string', default: '0' },
    'redirect-uri': { type: 'string', default: 'http://127.0.0.1:9/callback' },
  },
});
if (!opts.resource) {
  console.error('as.mjs: --resource is required');
  process.exit(2);
}
const RESOURCE = opts.resource;
const OTHER = opts['other-resource'];
const TTL = Number(opts.ttl);
const SCOPES = 'mcp:read mcp:write';
const ACCOUNT_TENANTS = { alice: 'acme', bob: 'beta', carol: null };
const CLIENT_TENANTS = { 'mcp-machine': 'acme', 'mcp-machine-ro': 'acme', 'mcp-machine-beta': 'beta', 'mcp-machine-none': null };
const CLIENT_SCOPES = { 'mcp-machine-ro': 'mcp:read' };

function rsaKey(kid) {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { privateKey, jwk: { ...privateKey.export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' } };
}
const kid = `k-${randomBytes(4).toString('hex')}`;
const signing = rsaKey(kid);
const spare = rsaKey('spare'); // never published

const http = createServer();
await new Promise((resolve) => http.listen(Number(opts.port), '127.0.0.1', resolve));
const port = http.address().port;
const ISSUER = `http://127.0.0.1:${port}`;

const machine = (client_id) => ({
  client_id,
  client_secret: 'machine-secret',
  grant_types: ['client_credentials'],
  response_types: [],
  redirect_uris: [],
});

const provider = new Provider(ISSUER, {
  jwks: { keys: [signing.jwk] },
  cookies: { keys: [randomBytes(16).toString('hex')] },
  scopes: ['openid', 'offline_access', 'mcp:read', 'mcp:write'],
  clients: [
    {
      client_id: 'mcp-public',
      token_endpoint_auth_method: 'none',
      redirect_uris: [opts['redirect-uri']],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
    },
    ...Object.keys(CLIENT_TENANTS).map(machine),
    { ...machine('mcp-rs'), client_secret: 'rs-secret' },
  ],
  findAccount: (ctx, id) => ({ accountId: id, claims: () => ({ sub: id }) }),
  pkce: { required: () => true },
  features: {
    devInteractions: { enabled: true },
    registration: { enabled: true },
    clientCredentials: { enabled: true },
    introspection: { enabled: true },
    revocation: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: (ctx, client, oneOf) => oneOf || RESOURCE,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, indicator, client) => {
        if (indicator !== RESOURCE && indicator !== OTHER) throw new errors.InvalidTarget();
        return {
          scope: CLIENT_SCOPES[client?.clientId] ?? SCOPES,
          audience: indicator,
          accessTokenTTL: TTL,
          accessTokenFormat: opts.opaque ? 'opaque' : 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        };
      },
    },
  },
  extraTokenClaims: (ctx, token) => {
    const tenant = token.accountId !== undefined ? ACCOUNT_TENANTS[token.accountId] : CLIENT_TENANTS[token.clientId];
    return tenant ? { tenant } : {};
  },
});

let jwksCount = 0;
const b64url = (value) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');
provider.use(async (ctx, next) => {
  if (ctx.path === '/jwks') jwksCount += 1;
  if (ctx.path === '/debug/jwks-count') {
    ctx.body = { count: jwksCount };
    return;
  }
  if (ctx.path === '/debug/mint') {
    const q = ctx.query;
    const now = Math.floor(Date.now() / 1000);
    const claims = {
      iss: ISSUER,
      sub: q.sub || 'alice',
      aud: q.aud || RESOURCE,
      client_id: 'mcp-public',
      scope: q.scope ?? SCOPES,
      jti: randomUUID(),
      iat: now,
      exp: now + Number(q.exp_in || TTL),
      ...(q.nbf_in ? { nbf: now + Number(q.nbf_in) } : {}),
      ...(q.tenant ? { tenant: q.tenant } : {}),
    };
    const published = q.key === 'published';
    const header = { alg: 'RS256', typ: 'at+jwt', kid: published ? kid : q.kid || 'spare' };
    const input = `${b64url(header)}.${b64url(claims)}`;
    const key = published ? signing.privateKey : spare.privateKey;
    ctx.body = { token: `${input}.${sign('sha256', Buffer.from(input), key).toString('base64url')}` };
    return;
  }
  await next();
});

http.on('request', provider.callback());
for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => process.exit(0));
process.stdout.write(
  `${JSON.stringify({
    issuer: ISSUER,
    port,
    pid: process.pid,
    kid,
    resource: RESOURCE,
    other_resource: OTHER ?? null,
    opaque: opts.opaque,
    ttl: TTL,
  })}\n`,
);
