"""Interop test: the v1 Python MCP SDK (`mcp` 1.27.2, `ClientSession`) drives mcp-cursos.

A v1 client only knows the initialize handshake (LATEST_PROTOCOL_VERSION 2025-11-25), which is
what most deployed hosts still speak. Targets as in test_interop.py:

  --stdio BIN           mcp-cursos-stdio with a fresh DATABASE_PATH
  --http NAME=URL       mcp-cursos-backend with `Authorization: Bearer $API_KEY`

The client confirms `arquivar_curso` with ClientSession's `elicitation_callback` (the server sends
`elicitation/create`); over stateless HTTP the server cannot send it, and refuses the archiving.

Last line: `interop: N passed, M failed`; exit status 1 on any failure.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import sys
import tempfile
import traceback
import uuid

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client
from mcp.shared.exceptions import McpError

# rmcp answers a session DELETE with 202; this SDK logs "Session termination failed: 202".
logging.getLogger("mcp.client.streamable_http").setLevel(logging.ERROR)

STEP_TIMEOUT = 20.0
NOTIFY_TIMEOUT = 10.0


class Tally:
    def __init__(self) -> None:
        self.passed = self.failed = self.skipped = 0

    @contextlib.asynccontextmanager
    async def step(self, label: str):
        try:
            async with asyncio.timeout(STEP_TIMEOUT):
                yield
        except Exception as e:  # noqa: BLE001
            self.failed += 1
            detail = "".join(traceback.format_exception_only(type(e), e)).strip()
            print(f"  FAIL {label}: {detail}", flush=True)
        else:
            self.passed += 1
            print(f"  ok   {label}", flush=True)


class Updates:
    def __init__(self) -> None:
        self.uris: list[str] = []
        self.list_changed = 0
        self.changed = asyncio.Event()

    async def handler(self, message) -> None:
        root = getattr(message, "root", None)
        if isinstance(root, types.ResourceUpdatedNotification):
            self.uris.append(str(root.params.uri))
            self.changed.set()
        elif isinstance(root, types.ResourceListChangedNotification):
            self.list_changed += 1
            self.changed.set()

    async def wait_for_list_changed(self) -> None:
        async with asyncio.timeout(NOTIFY_TIMEOUT):
            while not self.list_changed:
                self.changed.clear()
                await self.changed.wait()

    async def wait_for(self, uri: str) -> None:
        async with asyncio.timeout(NOTIFY_TIMEOUT):
            while uri not in self.uris:
                self.changed.clear()
                await self.changed.wait()


class Confirmer:
    """The host's user: accepts every elicitation with confirmar=true and records the questions."""

    def __init__(self) -> None:
        self.asked: list = []

    async def callback(self, context, params) -> types.ElicitResult:
        self.asked.append(params)
        return types.ElicitResult(action="accept", content={"confirmar": True})


@contextlib.asynccontextmanager
async def session(target: dict, handler=None, elicitation=None):
    opts = {"message_handler": handler, "elicitation_callback": elicitation}
    if "stdio" in target:
        params = StdioServerParameters(
            command=target["stdio"], env={"DATABASE_PATH": target["db"], "RUST_LOG": "error"}
        )
        async with stdio_client(params) as (r, w), ClientSession(r, w, **opts) as s:
            yield s, await s.initialize()
    else:
        headers = {"Authorization": f"Bearer {target['key']}"}
        async with streamablehttp_client(target["url"], headers=headers) as (r, w, _sid):
            async with ClientSession(r, w, **opts) as s:
                yield s, await s.initialize()


def text_of(result) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def scenario(t: Tally, target: dict) -> None:
    tag = target["name"]
    print(f"-- python mcp 1.27.2 (v1 ClientSession), {tag}", flush=True)
    token = uuid.uuid4().hex[:8]
    title = f"Cliente v1 {tag} {token}"
    updates = Updates()
    user = Confirmer()
    async with contextlib.AsyncExitStack() as stack:
        try:
            s, init = await stack.enter_async_context(session(target, updates.handler, user.callback))
        except Exception as e:  # noqa: BLE001
            t.failed += 1
            print(f"  FAIL {tag}: connect: {e!r}", flush=True)
            return
        async with t.step(f"{tag}: initialize negotiates 2025-11-25"):
            assert init.protocolVersion == "2025-11-25", init.protocolVersion
            assert init.serverInfo.name == "mcp-cursos", init.serverInfo
            assert init.capabilities.resources and init.capabilities.resources.subscribe, init.capabilities

        async with t.step(f"{tag}: tools/list"):
            names = {x.name for x in (await s.list_tools()).tools}
            assert {"criar_curso", "atualizar_curso", "arquivar_curso"} <= names, names

        cid = "00000000-0000-4000-8000-000000000000"
        async with t.step(f"{tag}: criar_curso structuredContent + resource_link"):
            r = await s.call_tool("criar_curso", {"titulo": title, "cargaHoraria": 8})
            assert not r.isError, text_of(r)
            cid = r.structuredContent["id"]
            assert r.structuredContent["versao"] == 1
            links = [str(x.uri) for x in r.content if isinstance(x, types.ResourceLink)]
            assert links == [f"cursos://{cid}"], links

        async with t.step(f"{tag}: refusal is isError naming the field"):
            r = await s.call_tool("criar_curso", {"titulo": title, "cargaHoraria": 1001})
            assert r.isError and "cargaHoraria" in text_of(r), text_of(r)

        async with t.step(f"{tag}: read cursos://catalogo and cursos://<id>"):
            cat = json.loads((await s.read_resource("cursos://catalogo")).contents[0].text)
            assert cid in [x["id"] for x in cat["cursos"]] or cat["proximaPagina"], cat
            one = json.loads((await s.read_resource(f"cursos://{cid}")).contents[0].text)
            assert one["titulo"] == title, one

        async with t.step(f"{tag}: unknown resource is -32002"):
            try:
                await s.read_resource(f"cursos://{uuid.uuid4()}")
            except McpError as e:
                assert e.error.code == -32002, e.error
            else:
                raise AssertionError("reading an unknown course succeeded")

        async with t.step(f"{tag}: completion and prompts/get"):
            ref = types.ResourceTemplateReference(type="ref/resource", uri="cursos://{uuid}")
            values = (await s.complete(ref, {"name": "uuid", "value": token})).completion.values
            assert values == [cid], values
            p = await s.get_prompt("criar-curso", {"titulo": title, "cargaHoraria": "8"})
            assert json.dumps(title, ensure_ascii=False) in p.messages[0].content.text

        uri = f"cursos://{cid}"
        if tag == "http-stateless":
            t.skipped += 1
            print(f"  skip {tag}: resources/subscribe: stateless HTTP cannot carry notifications", flush=True)
        else:
            async with t.step(f"{tag}: resources/subscribe + notifications/resources/updated"):
                await s.subscribe_resource(uri)
                if "stdio" in target:
                    r = await s.call_tool("atualizar_curso", {"id": cid, "cargaHoraria": 9})
                else:
                    async with session(target) as (other, _):
                        r = await other.call_tool("atualizar_curso", {"id": cid, "cargaHoraria": 9})
                assert not r.isError, text_of(r)
                await updates.wait_for(uri)

        if tag == "http-stateless":
            async with t.step(f"{tag}: arquivar_curso is refused without asking (no session to carry elicitation/create)"):
                r = await s.call_tool("arquivar_curso", {"id": cid})
                assert r.isError and "UNCONFIRMED_ARCHIVE=allow" in text_of(r), text_of(r)
                assert user.asked == [], user.asked
                one = json.loads((await s.read_resource(uri)).contents[0].text)
                assert one["arquivado"] is False, one
        else:
            async with t.step(f"{tag}: arquivar_curso confirmed through elicitation_callback; subscribers told"):
                updates.uris.clear()
                updates.list_changed = 0
                r = await s.call_tool("arquivar_curso", {"id": cid})
                assert not r.isError and r.structuredContent["arquivado"] is True, text_of(r)
                assert len(user.asked) == 1, f"asked {len(user.asked)} times"
                assert user.asked[0].message.startswith(f'Arquivar o curso "{title}"'), user.asked[0].message
                assert "confirmar" in user.asked[0].requestedSchema["properties"], user.asked[0].requestedSchema
                # The archiving is announced (updated for the subscribed course, list_changed to every
                # session). Waiting for both before leaving also keeps this SDK's stdio_client from
                # dying on a notification that arrives while it closes (BrokenResourceError,
                # python-sdk#1960, fixed on main, not in 1.27.2).
                await updates.wait_for(uri)
                await updates.wait_for_list_changed()


async def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--stdio")
    ap.add_argument("--http", action="append", default=[], metavar="NAME=URL")
    args = ap.parse_args()
    targets = []
    if args.stdio:
        db = os.path.join(tempfile.mkdtemp(prefix="mcp-cursos-v1-"), "cursos.db")
        targets.append({"name": "stdio", "stdio": args.stdio, "db": db})
    for spec in args.http:
        name, url = spec.split("=", 1)
        targets.append({"name": f"http-{name}", "url": url, "key": os.environ.get("API_KEY", "")})
    t = Tally()
    for target in targets:
        await scenario(t, target)
    print(f"python mcp 1.27.2{f' ({t.skipped} skipped)' if t.skipped else ''}:")
    print(f"interop: {t.passed} passed, {t.failed} failed", flush=True)
    return 1 if t.failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
