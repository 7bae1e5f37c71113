// The user's part of the authorization code flow, scripted headless against oidc-provider's development
// interactions: open the authorization URL the SDK handed over, log in as `user` (any password), approve the
// consent page, and return the redirect back to the client (code, state, iss) without following it.
// Cookies are kept by hand; every redirect is followed by hand (at most 12 hops).

/** Runs the login and consent for `user` on `authorizationUrl`; resolves to the callback URL (a URL object). */
export async function consent(authorizationUrl, user, redirectUri) {
  const jar = new Map();
  const cookieHeader = () => [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
  const keep = (response) => {
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair.indexOf('=');
      jar.set(pair.slice(0, eq).trim(), pair.slice(eq + 1).trim());
    }
  };
  let url = new URL(authorizationUrl);
  let method = 'GET';
  let body;
  for (let hop = 0; hop < 12; hop += 1) {
    const response = await fetch(url, {
      method,
      body,
      redirect: 'manual',
      headers: { cookie: cookieHeader(), ...(body ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) },
    });
    keep(response);
    method = 'GET';
    body = undefined;
    if (response.status >= 300 && response.status < 400) {
      const next = new URL(response.headers.get('location'), url);
      if (next.href.startsWith(redirectUri)) return next;
      url = next;
      continue;
    }
    const html = await response.text();
    if (response.status !== 200) throw new Error(`consent: ${url.pathname} answered ${response.status}: ${html.slice(0, 300)}`);
    const prompt = /name="prompt" value="([a-z]+)"/.exec(html)?.[1];
    if (prompt === 'login') body = new URLSearchParams({ prompt, login: user, password: 'x' }).toString();
    else if (prompt === 'consent') body = new URLSearchParams({ prompt }).toString();
    else throw new Error(`consent: no login or consent form at ${url.pathname}: ${html.slice(0, 300)}`);
    method = 'POST';
  }
  throw new Error('consent: more than 12 hops');
}
