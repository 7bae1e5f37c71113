"""What py_client.py and negative.py share, Python standard library only: plain HTTP without redirects,
the user's headless login and consent at oidc-provider's development interactions (as.mjs), a hand-made
authorization code + PKCE exchange (negative.py's user tokens; the SDK flows are in the clients), a
client_credentials token, and reading a JWT's parts."""

from __future__ import annotations

import base64
import hashlib
import http.client
import json
import re
import secrets
import urllib.parse

REDIRECT_URI = "http://127.0.0.1:9/callback"  # as.mjs's default; nothing listens there
MACHINE_SECRET = "machine-secret"


class Response:
    def __init__(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers if k.lower() == name.lower()), None)

    def all(self, name: str) -> list[str]:
        return [v for k, v in self.headers if k.lower() == name.lower()]

    def text(self) -> str:
        return self.body.decode("utf-8", "replace")

    def json(self):
        return json.loads(self.body)


def request(method: str, url: str, headers: dict | None = None, body: bytes | str | None = None,
            timeout: float = 20.0) -> Response:
    """One HTTP request on loopback, redirects not followed."""
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=timeout)
    try:
        path = u.path or "/"
        if u.query:
            path += "?" + u.query
        if isinstance(body, str):
            body = body.encode()
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        return Response(r.status, r.getheaders(), r.read())
    finally:
        conn.close()


def form(data: dict) -> str:
    return urllib.parse.urlencode(data)


def consent(authorization_url: str, user: str, redirect_uri: str = REDIRECT_URI) -> urllib.parse.SplitResult:
    """Logs `user` in (any password) and approves the consent page; returns the redirect back to the
    client (its query has code, state, iss), which is not followed."""
    jar: dict[str, str] = {}
    url = authorization_url
    method, body = "GET", None
    for _ in range(12):
        headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in jar.items())}
        if body is not None:
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        r = request(method, url, headers, body)
        for line in r.all("Set-Cookie"):
            name, _, value = line.split(";", 1)[0].partition("=")
            jar[name.strip()] = value.strip()
        method, body = "GET", None
        if 300 <= r.status < 400:
            url = urllib.parse.urljoin(url, r.header("Location"))
            if url.startswith(redirect_uri):
                return urllib.parse.urlsplit(url)
            continue
        page = r.text()
        if r.status != 200:
            raise RuntimeError(f"consent: {url} answered {r.status}: {page[:300]}")
        prompt = re.search(r'name="prompt" value="([a-z]+)"', page)
        if prompt and prompt.group(1) == "login":
            body = form({"prompt": "login", "login": user, "password": "x"})
        elif prompt and prompt.group(1) == "consent":
            body = form({"prompt": "consent"})
        else:
            raise RuntimeError(f"consent: no login or consent form at {url}: {page[:300]}")
        method = "POST"
    raise RuntimeError("consent: more than 12 hops")


def user_token(issuer: str, resource: str, user: str, scope: str = "mcp:read mcp:write") -> dict:
    """An access token for `user` through the authorization code flow with PKCE, with the
    pre-registered public client `mcp-public` (the token response as a dict)."""
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    state = secrets.token_hex(8)
    auth = issuer + "/auth?" + form({
        "response_type": "code", "client_id": "mcp-public", "redirect_uri": REDIRECT_URI, "scope": scope,
        "resource": resource, "code_challenge": challenge, "code_challenge_method": "S256", "state": state,
    })
    query = dict(urllib.parse.parse_qsl(consent(auth, user).query))
    if query.get("state") != state or "code" not in query:
        raise RuntimeError(f"authorization response {query}")
    r = request("POST", issuer + "/token", {"Content-Type": "application/x-www-form-urlencoded"}, form({
        "grant_type": "authorization_code", "code": query["code"], "redirect_uri": REDIRECT_URI,
        "client_id": "mcp-public", "code_verifier": verifier, "resource": resource,
    }))
    if r.status != 200:
        raise RuntimeError(f"token endpoint {r.status}: {r.text()[:300]}")
    return r.json()


def machine_token(issuer: str, client_id: str, scope: str | None, resource: str | None = None,
                  secret: str = MACHINE_SECRET) -> str:
    """A client_credentials access token of a machine client of as.mjs."""
    data = {"grant_type": "client_credentials"}
    if scope is not None:
        data["scope"] = scope
    if resource is not None:
        data["resource"] = resource
    basic = base64.b64encode(f"{client_id}:{secret}".encode()).decode()
    r = request("POST", issuer + "/token", {"Authorization": "Basic " + basic,
                                            "Content-Type": "application/x-www-form-urlencoded"}, form(data))
    if r.status != 200:
        raise RuntimeError(f"client_credentials {client_id} {r.status}: {r.text()[:300]}")
    return r.json()["access_token"]


def b64json(part: str) -> dict:
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def claims(jwt: str) -> dict:
    return b64json(jwt.split(".")[1])


def b64(obj) -> str:
    raw = obj if isinstance(obj, bytes) else json.dumps(obj, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
