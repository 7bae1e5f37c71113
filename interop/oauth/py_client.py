"""The official Python SDK's OAuth client (`mcp.client.auth.OAuthClientProvider`) against the real
mcp-cursos backend and the real AS (as.mjs): 401 → protected-resource metadata → AS metadata → client
registration (DCR, or the pre-registered `mcp-public`) → authorization code with PKCE (login and consent
scripted headless, oauth_common.consent) → token → tools/list, cursos://catalogo, criar_curso, and the
course's history naming the token's subject.

    python py_client.py --url http://127.0.0.1:P/mcp [--mode legacy|auto] [--registration dcr|pre]
                        [--user alice] [--tenant acme] [--expect-version V]

Runs on either venv: `mcp` 2.3.0 (high-level `Client`, httpx2; `--mode legacy` → 2025-11-25,
`--mode auto` → 2026-07-28) or `mcp` 1.27.2 (`ClientSession`, httpx; 2025-11-25, `--mode` ignored).
Last line: `oauth-py: N passed, M failed`; exit status 1 when anything failed.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import json
import logging
import sys
import traceback
import urllib.parse
import uuid
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import oauth_common as common  # noqa: E402

from mcp.client.auth import OAuthClientProvider  # noqa: E402
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata  # noqa: E402

MCP_VERSION = importlib.metadata.version("mcp")
V2 = int(MCP_VERSION.split(".")[0]) >= 2
warnings.filterwarnings("ignore", message=r".*removed as of 2026-07-28.*")
logging.getLogger("mcp.client.streamable_http").setLevel(logging.ERROR)

if V2:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.auth import AuthorizationCodeResult
else:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client


class Tally:
    def __init__(self, tag: str) -> None:
        self.tag, self.passed, self.failed = tag, 0, 0

    async def step(self, label: str, coro):
        try:
            value = await asyncio.wait_for(coro, 30)
        except Exception as e:  # noqa: BLE001 - every failure of a step is reported, the run goes on
            self.failed += 1
            detail = "".join(traceback.format_exception_only(type(e), e)).strip()
            print(f"  FAIL {self.tag}: {label}: {detail}", flush=True)
            return None
        self.passed += 1
        print(f"  ok   {self.tag}: {label}", flush=True)
        return value


class Storage:
    """The host's token storage: in memory, one run."""

    def __init__(self, client_info=None) -> None:
        self.tokens = None
        self.client_info = client_info

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens) -> None:
        self.tokens = tokens

    async def get_client_info(self):
        return self.client_info

    async def set_client_info(self, client_info) -> None:
        self.client_info = client_info


def field(obj, v2_name: str, v1_name: str):
    return getattr(obj, v2_name if V2 else v1_name)


def resource_json(result) -> dict:
    return json.loads(result.contents[0].text)


async def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--mode", default="legacy", choices=["legacy", "auto"])
    p.add_argument("--registration", default="dcr", choices=["dcr", "pre"])
    p.add_argument("--user", default="alice")
    p.add_argument("--tenant", default="acme")
    p.add_argument("--expect-version")
    a = p.parse_args()
    tag = f"py-{MCP_VERSION}" + (f"-{a.mode}" if V2 else "") + f"-{a.registration}"
    t = Tally(tag)

    # A host reads the PRM's authorization server to pre-register; with DCR the SDK finds it itself.
    r = common.request("POST", a.url, {"Content-Type": "application/json"}, "{}")
    challenge = r.header("WWW-Authenticate") or ""
    prm_url = challenge.split('resource_metadata="', 1)[-1].split('"', 1)[0]
    issuer = None
    if r.status == 401 and prm_url.startswith("http"):
        issuer = common.request("GET", prm_url).json()["authorization_servers"][0]
    if issuer is None:
        print(f"  FAIL {tag}: no 401 with resource_metadata: {r.status} {challenge!r}")
        print(f"oauth-py: 0 passed, 1 failed")
        return 1

    seen: dict = {}

    async def redirect_handler(url: str) -> None:
        seen["authorization_url"] = url
        seen["callback"] = await asyncio.to_thread(common.consent, url, a.user)

    async def callback_handler():
        q = dict(urllib.parse.parse_qsl(seen["callback"].query))
        if V2:
            return AuthorizationCodeResult(code=q["code"], state=q.get("state"), iss=q.get("iss"))
        return q["code"], q.get("state")

    pre = None
    if a.registration == "pre":
        extra = {"issuer": issuer} if "issuer" in OAuthClientInformationFull.model_fields else {}
        pre = OAuthClientInformationFull(client_id="mcp-public", token_endpoint_auth_method="none",
                                         redirect_uris=[common.REDIRECT_URI], **extra)
    storage = Storage(pre)
    provider = OAuthClientProvider(
        a.url,
        client_metadata=OAuthClientMetadata(
            client_name=f"mcp-cursos oauth-e2e {tag}", redirect_uris=[common.REDIRECT_URI],
            grant_types=["authorization_code", "refresh_token"], response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage, redirect_handler=redirect_handler, callback_handler=callback_handler,
    )

    async def run(c, version: str) -> None:
        async def negotiated():
            print(f"       negotiated protocol version: {version}", flush=True)
            if a.expect_version:
                assert version == a.expect_version, f"negotiated {version}"

        async def flow_happened():
            u = urllib.parse.urlsplit(seen["authorization_url"])
            q = dict(urllib.parse.parse_qsl(u.query))
            assert seen["authorization_url"].startswith(issuer + "/auth"), seen["authorization_url"]
            assert q.get("code_challenge_method") == "S256" and q.get("code_challenge"), q
            assert q.get("resource") == a.url, q.get("resource")
            client_id = storage.client_info.client_id
            assert (client_id == "mcp-public") == (a.registration == "pre"), client_id
            tok = common.claims(storage.tokens.access_token)
            assert tok["iss"] == issuer and tok["sub"] == a.user, tok
            assert tok["aud"] == a.url or a.url in tok["aud"], tok["aud"]
            assert tok.get("tenant") == a.tenant, tok
            assert {"mcp:read", "mcp:write"} <= set(tok.get("scope", "").split()), tok.get("scope")

        async def tools():
            names = {x.name for x in (await c.list_tools()).tools}
            assert "criar_curso" in names, names

        async def catalog():
            assert isinstance(resource_json(await c.read_resource("cursos://catalogo"))["cursos"], list)

        title = f"OAuth {tag} {uuid.uuid4().hex[:6]}"

        async def create():
            res = await c.call_tool("criar_curso", {"titulo": title, "cargaHoraria": 6})
            assert field(res, "is_error", "isError") is False, res
            course = field(res, "structured_content", "structuredContent")
            assert course["titulo"] == title, course
            return course

        await t.step(f"negotiated protocol version ({a.expect_version or 'any'})", negotiated())
        await t.step("the SDK went 401 → PRM → AS metadata → registration → PKCE code with resource → token",
                     flow_happened())
        await t.step("tools/list has criar_curso", tools())
        await t.step("resources/read cursos://catalogo", catalog())
        course = await t.step("criar_curso", create())

        async def history():
            assert course, "no course"
            h = resource_json(await c.read_resource(f"cursos://{course['id']}/historico"))
            authors = [e["autor"] for e in h["entradas"]]
            assert authors == [f"{a.user}@{issuer}"], authors
            ids = [x["id"] for x in resource_json(await c.read_resource("cursos://catalogo"))["cursos"]]
            assert course["id"] in ids, "course not in the catalog"

        await t.step(f"the history records the token's subject ({a.user}@{issuer}), the catalog lists it", history())

    try:
        if V2:
            async with httpx2.AsyncClient(auth=provider, timeout=30) as h, \
                    Client(streamable_http_client(a.url, http_client=h), mode=a.mode) as c:
                await run(c, c.protocol_version)
        else:
            async with streamablehttp_client(a.url, auth=provider) as (rd, wr, _sid), ClientSession(rd, wr) as s:
                init = await s.initialize()
                await run(s, init.protocolVersion)
    except Exception as e:  # noqa: BLE001
        t.failed += 1
        while isinstance(e, BaseExceptionGroup) and len(e.exceptions) == 1:
            e = e.exceptions[0]  # the SDK's task groups wrap the one error that matters
        detail = "".join(traceback.format_exception_only(type(e), e)).strip()
        try:
            detail += f" ({e.request.method} {e.request.url})"
        except (AttributeError, RuntimeError):
            pass
        print(f"  FAIL {tag}: connect through the OAuth flow: {detail}")
    print(f"oauth-py: {t.passed} passed, {t.failed} failed", flush=True)
    return 0 if t.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
