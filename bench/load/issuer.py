#!/usr/bin/env python3
"""A stand-in for the team's identity provider in bench/run.sh's JWT cell (`cursos-jwt json read`).

    python3 bench/load/issuer.py --resource http://127.0.0.1:PORT/mcp --token-file FILE [--alg RS256|ES256]

Serves, on 127.0.0.1 (a free port), what the backend reads from an authorization server:
  /.well-known/oauth-authorization-server   the RFC 8414 metadata (issuer, jwks_uri, ...)
  /jwks                                      one public signing key (RS256: RSA-2048; ES256: P-256)
and writes to --token-file (mode 600) ONE access token signed with that key, as an IdP would mint
it (RFC 9068 `at+jwt`): iss = this issuer, aud = --resource, sub, client_id, scope "mcp:read
mcp:write", the catalog claim (--claim, default `tenant`, value --catalog, default `padrao`), iat,
nbf, a long exp (--hours, default 24) and a jti. The key is generated per run with the `openssl`
command line (Debian's `openssl` package); Python's standard library does the rest.

It prints `issuer=URL` once it is listening, then one line per request it answers (method, path,
status), so the bench can count the JWKS fetches (the backend fetches the set once and caches it;
a second fetch would only follow an unknown `kid`). No token and no key is ever printed.
"""
import argparse
import base64
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def openssl(*args: str, data: bytes | None = None) -> bytes:
    return subprocess.run(["openssl", *args], input=data, check=True, capture_output=True).stdout


def der_length(blob: bytes, at: int) -> tuple[int, int]:
    """A DER length at `at`: (length, index of the content)."""
    first = blob[at]
    if first < 0x80:
        return first, at + 1
    count = first & 0x7F
    return int.from_bytes(blob[at + 1:at + 1 + count], "big"), at + 1 + count


def ecdsa_der_to_jose(signature: bytes, size: int = 32) -> bytes:
    """openssl's DER `SEQUENCE { INTEGER r, INTEGER s }` as JWS's fixed-size r || s (RFC 7518 §3.4)."""
    assert signature[0] == 0x30
    _, at = der_length(signature, 1)
    parts = []
    for _ in range(2):
        assert signature[at] == 0x02
        length, at = der_length(signature, at + 1)
        parts.append(int.from_bytes(signature[at:at + length], "big").to_bytes(size, "big"))
        at += length
    return b"".join(parts)


class SigningKey:
    """A fresh key in a private temporary folder, its public JWK, and signing by `openssl dgst`."""

    def __init__(self, algorithm: str, folder: str):
        self.algorithm = algorithm
        self.kid = f"bench-{algorithm.lower()}-{uuid.uuid4().hex[:8]}"
        self.path = os.path.join(folder, "key.pem")
        if algorithm == "RS256":
            openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", self.path)
            modulus = openssl("rsa", "-in", self.path, "-noout", "-modulus").decode().strip().split("=", 1)[1]
            # genpkey's default public exponent is 65537 (AQAB).
            self.jwk = {"kty": "RSA", "n": b64url(bytes.fromhex(modulus)), "e": "AQAB"}
        elif algorithm == "ES256":
            openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", self.path)
            public = openssl("pkey", "-in", self.path, "-pubout", "-outform", "DER")
            point = public[-65:]  # the uncompressed point 04 || x || y ends the SubjectPublicKeyInfo
            assert point[0] == 0x04
            self.jwk = {"kty": "EC", "crv": "P-256", "x": b64url(point[1:33]), "y": b64url(point[33:])}
        else:
            raise SystemExit(f"issuer.py: --alg {algorithm}: RS256 or ES256")
        self.jwk.update({"kid": self.kid, "use": "sig", "alg": algorithm})

    def sign(self, signing_input: bytes) -> bytes:
        signature = openssl("dgst", "-sha256", "-sign", self.path, data=signing_input)
        return signature if self.algorithm == "RS256" else ecdsa_der_to_jose(signature)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--resource", required=True, help="the backend's OAUTH_RESOURCE: the token's aud")
    parser.add_argument("--token-file", required=True)
    parser.add_argument("--alg", default="RS256")
    parser.add_argument("--claim", default="tenant", help="the backend's OAUTH_CATALOG_CLAIM")
    parser.add_argument("--catalog", default="padrao", help="the claim's value")
    parser.add_argument("--hours", type=float, default=24.0)
    arguments = parser.parse_args()

    folder = tempfile.mkdtemp(prefix="bench-issuer-")
    key = SigningKey(arguments.alg, folder)
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    issuer = f"http://127.0.0.1:{server.server_address[1]}"
    documents = {
        "/.well-known/oauth-authorization-server": {
            "issuer": issuer,
            "jwks_uri": f"{issuer}/jwks",
            "authorization_endpoint": f"{issuer}/authorize",
            "token_endpoint": f"{issuer}/token",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "client_credentials"],
            "code_challenge_methods_supported": ["S256"],
            "scopes_supported": ["mcp:read", "mcp:write"],
        },
        "/jwks": {"keys": [key.jwk]},
    }

    now = int(time.time())
    header = {"alg": key.algorithm, "typ": "at+jwt", "kid": key.kid}
    claims = {
        "iss": issuer, "sub": "bench-user", "aud": arguments.resource, "client_id": "bench",
        "scope": "mcp:read mcp:write", arguments.claim: arguments.catalog,
        "iat": now, "nbf": now - 5, "exp": now + int(arguments.hours * 3600), "jti": uuid.uuid4().hex,
    }
    signing_input = f"{b64url(json.dumps(header).encode())}.{b64url(json.dumps(claims).encode())}".encode()
    token = signing_input.decode() + "." + b64url(key.sign(signing_input))
    descriptor = os.open(arguments.token_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(token)
    os.remove(key.path)  # the token is minted: the private key is no longer needed
    os.rmdir(folder)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            document = documents.get(self.path)
            body = json.dumps(document).encode() if document else b'{"error":"not_found"}'
            self.send_response(200 if document else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format, *args):  # noqa: A002 (http.server's signature)
            print(f"request {self.command} {self.path} {args[1] if len(args) > 1 else ''}", flush=True)

    server.RequestHandlerClass = Handler
    print(f"issuer={issuer} alg={key.algorithm} kid={key.kid} token_bytes={len(token)}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
