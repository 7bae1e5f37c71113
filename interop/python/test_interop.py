"""Interop test: the official Python MCP SDK (`mcp` 2.3.0, high-level `Client`) drives mcp-cursos.

One scenario, run on every target given on the command line and on both protocol eras:
`mode="legacy"` (initialize handshake, expects 2025-11-25) and `mode="auto"` (server/discover,
expects 2026-07-28). Targets:

  --stdio BIN           mcp-cursos-stdio, started by the SDK with a fresh DATABASE_PATH per run
  --http NAME=URL       a running mcp-cursos-backend (NAME: stateful or stateless), reached
                        with `Authorization: Bearer $API_KEY`; when $LEITURA_KEY is set (a key of
                        scope `leitura` from the backends' KEYS_FILE), a read-only client is checked too

The client answers the server's confirmation of `arquivar_curso` with an `elicitation_callback`,
as a host would after asking its user: on 2025-11-25 the SDK serves the server's
`elicitation/create` with it; on 2026-07-28 `Client.call_tool` gets `resultType: input_required`,
runs the same callback for `inputRequests.confirmacao` and retries the call with `inputResponses`
by itself. Over stateless HTTP on 2025-11-25 the server cannot send a request to the client, so it
refuses the archiving (UNCONFIRMED_ARCHIVE defaults to refuse) without calling the callback.

Every step is one test; the last line is `interop: N passed, M failed` and the exit status is 1
when anything failed. Run by scripts/interop.sh (see interop/README.md).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import json
import logging
import os
import re
import sys
import tempfile
import traceback
import uuid
import warnings

import httpx2
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

warnings.filterwarnings("ignore", message=r".*removed as of 2026-07-28.*")
# rmcp answers a session DELETE with 202, which this SDK logs as "Session termination failed: 202"
# (it expects 200 or 204; the spec pins no status). Reported in interop/README.md; kept quiet here.
logging.getLogger("mcp.client.streamable_http").setLevel(logging.ERROR)

STEP_TIMEOUT = 20.0  # seconds, per step (a hung server fails the step instead of the whole run)
NOTIFY_TIMEOUT = 10.0  # seconds to wait for a change notification
TIMESTAMP_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")  # contract: RFC 3339, UTC, ms
UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
VERSIONS = {"legacy": "2025-11-25", "auto": "2026-07-28"}
NOT_FOUND = {"legacy": -32002, "auto": -32602}


class Tally:
    def __init__(self) -> None:
        self.passed = 0
        self.failed = 0
        self.skipped = 0

    @contextlib.asynccontextmanager
    async def step(self, label: str):
        try:
            async with asyncio.timeout(STEP_TIMEOUT):
                yield
        except Exception as e:  # noqa: BLE001 - every failure of a step is reported, the run goes on
            self.failed += 1
            detail = "".join(traceback.format_exception_only(type(e), e)).strip()
            if isinstance(e, MCPError):
                detail += f" (code {e.code}, data {e.data!r})"
            print(f"  FAIL {label}: {detail}", flush=True)
        else:
            self.passed += 1
            print(f"  ok   {label}", flush=True)

    def skip(self, label: str, why: str) -> None:
        self.skipped += 1
        print(f"  skip {label}: {why}", flush=True)


TIMESTAMPS: list[str] = []  # every criadoEm/atualizadoEm seen, checked for the contract's format at the end


def parse_ts(value: str) -> datetime.datetime:
    TIMESTAMPS.append(value)
    return datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


def resource_json(result: types.ReadResourceResult) -> dict:
    assert len(result.contents) == 1, f"expected one content, got {len(result.contents)}"
    content = result.contents[0]
    assert isinstance(content, types.TextResourceContents), f"expected text contents, got {type(content)}"
    assert content.mime_type == "application/json", f"mimeType {content.mime_type!r}"
    return json.loads(content.text)


class Notifications:
    """Collects notifications/resources/updated from a legacy client's message_handler."""

    def __init__(self) -> None:
        self.updated: list[str] = []
        self._changed = asyncio.Event()

    async def handler(self, message) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            self.updated.append(message.params.uri)
            self._changed.set()

    async def wait_for(self, uri: str, timeout: float) -> None:
        async with asyncio.timeout(timeout):
            while uri not in self.updated:
                self._changed.clear()
                await self._changed.wait()


class Confirmer:
    """The host's user: answers every elicitation with `answer` and records what it was asked."""

    def __init__(self) -> None:
        self.answer: tuple[str, dict | None] = ("accept", {"confirmar": True})
        self.asked: list[types.ElicitRequestParams] = []

    async def callback(self, context, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append(params)
        action, content = self.answer
        return types.ElicitResult(action=action, content=content)


def check_confirmation_form(params, title: str, cid: str) -> None:
    """The question a user sees before archiving: names the course, asks a boolean `confirmar`."""
    assert isinstance(params, types.ElicitRequestFormParams), f"not a form elicitation: {params!r}"
    assert params.message.startswith(f'Arquivar o curso "{title}"') and cid in params.message, params.message
    schema = params.requested_schema
    assert schema.get("type") == "object", schema
    assert schema.get("properties", {}).get("confirmar", {}).get("type") == "boolean", schema
    assert schema.get("required") == ["confirmar"], schema


class Target:
    """How to open a client on one transport."""

    def __init__(self, name: str, *, stdio: str | None = None, url: str | None = None, key: str | None = None,
                 leitura_key: str | None = None):
        self.name, self.stdio, self.url, self.key, self.leitura_key = name, stdio, url, key, leitura_key
        self.db_dir = tempfile.mkdtemp(prefix="mcp-cursos-interop-") if stdio else None

    @contextlib.asynccontextmanager
    async def client(self, mode: str, message_handler=None, elicitation_callback=None, key: str | None = None):
        opts = {"mode": mode, "message_handler": message_handler, "elicitation_callback": elicitation_callback}
        if self.stdio:
            env = {"DATABASE_PATH": os.path.join(self.db_dir, f"{mode}.db"), "RUST_LOG": "error"}
            params = StdioServerParameters(command=self.stdio, env=env)
            async with Client(params, **opts) as c:
                yield c
        else:
            http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key or self.key}"})
            async with http, Client(streamable_http_client(self.url, http_client=http), **opts) as c:
                yield c


async def scenario(t: Tally, target: Target, mode: str) -> None:
    tag = f"{target.name}/{mode}"
    print(f"-- python mcp 2.3.0, {tag}", flush=True)
    token = uuid.uuid4().hex[:8]
    title = f"Interoperabilidade {target.name} {mode} {token}"
    notes = Notifications()
    user = Confirmer()
    course: dict = {}
    # 2025-11-25 over stateless HTTP: no session, so no server->client request can carry the question.
    cannot_ask = mode == "legacy" and target.name == "http-stateless"
    author = "stdio" if target.stdio else "api-key"
    writes_sent: list[tuple[str, dict]] = []  # the accepted writes, oldest first, as sent

    async with contextlib.AsyncExitStack() as stack:
        try:
            c = await stack.enter_async_context(target.client(mode, notes.handler, user.callback))
        except Exception as e:  # noqa: BLE001
            t.failed += 1
            print(f"  FAIL {tag}: connect: {e!r}", flush=True)
            return

        async with t.step(f"{tag}: negotiated protocol version is {VERSIONS[mode]}"):
            assert c.protocol_version == VERSIONS[mode], f"negotiated {c.protocol_version!r}"
            assert c.server_info is not None and c.server_info.name == "mcp-cursos", f"serverInfo {c.server_info!r}"

        async with t.step(f"{tag}: tools/list names, annotations and schemas" + (", cacheScope private" if mode == "auto" else "")):
            listed = await c.list_tools()
            tools = {tool.name: tool for tool in listed.tools}
            if mode == "auto":  # the listing depends on the key's scope, so no shared cache may keep it
                assert "cache_scope" in listed.model_fields_set, "tools/list has no cacheScope"
                assert listed.cache_scope == "private", f"cacheScope {listed.cache_scope!r}"
            writes = {"criar_curso", "atualizar_curso", "arquivar_curso"}
            assert writes <= set(tools), f"tools {sorted(tools)}"
            assert set(tools) - writes <= {"listar_cursos", "ler_curso"}, f"unexpected tools {sorted(tools)}"
            expected = {  # readOnly, destructive, idempotent, openWorld
                "criar_curso": (False, False, False, False),
                "atualizar_curso": (False, True, True, False),
                "arquivar_curso": (False, True, True, False),
            }
            for name, hints in expected.items():
                a = tools[name].annotations
                got = (a.read_only_hint, a.destructive_hint, a.idempotent_hint, a.open_world_hint)
                assert got == hints, f"{name} annotations {got}, expected {hints}"
                schema = tools[name].input_schema
                assert schema.get("additionalProperties") is False, f"{name} inputSchema allows extra properties"
                assert tools[name].output_schema, f"{name} has no outputSchema"
                assert tools[name].description, f"{name} has no description"
            assert set(tools["criar_curso"].input_schema.get("required", [])) == {"titulo", "cargaHoraria"}

        async with t.step(f"{tag}: criar_curso returns structuredContent and a resource_link"):
            r = await c.call_tool("criar_curso", {"titulo": title, "cargaHoraria": 12})
            assert r.is_error is False, f"isError: {text_of(r)}"
            writes_sent.append(("criar_curso", {"titulo": title, "cargaHoraria": 12}))
            course = dict(r.structured_content or {})
            assert UUID_RE.match(course.get("id", "")), f"id {course.get('id')!r}"
            assert course["titulo"] == title and course["cargaHoraria"] == 12, course
            assert course["arquivado"] is False and course["versao"] == 1, course
            assert parse_ts(course["criadoEm"]) == parse_ts(course["atualizadoEm"]), course
            links = [x for x in r.content if isinstance(x, types.ResourceLink)]
            assert [str(x.uri) for x in links] == [f"cursos://{course['id']}"], f"resource links {links}"
            texts = [x.text for x in r.content if isinstance(x, types.TextContent)]
            assert any(x.startswith("Curso criado:") for x in texts), texts
            assert any(_json_or_none(x) == course for x in texts), "no text item carries the course as JSON"

        async with t.step(f"{tag}: invalid call is isError with a Portuguese message naming cargaHoraria"):
            r = await c.call_tool("criar_curso", {"titulo": f"Outro {token}", "cargaHoraria": 0})
            assert r.is_error is True, f"expected isError, got {r}"
            msg = text_of(r)
            assert "cargaHoraria" in msg and "deve estar entre 1 e 1000" in msg, msg
            r = await c.call_tool("criar_curso", {"titulo": f"Outro {token}", "cargaHoraria": "12"})
            assert r.is_error is True and "Campo 'cargaHoraria'" in text_of(r), text_of(r)

        async with t.step(f"{tag}: duplicate title (other case, extra spaces) is refused"):
            r = await c.call_tool("criar_curso", {"titulo": "  " + title.upper().replace(" ", "   ") + " ", "cargaHoraria": 5})
            assert r.is_error is True, f"expected isError, got {r}"
            assert "Já existe um curso ativo" in text_of(r), text_of(r)

        cid = course.get("id", "00000000-0000-4000-8000-000000000000")
        uri = f"cursos://{cid}"

        async with t.step(f"{tag}: atualizar_curso bumps versao"):
            r = await c.call_tool("atualizar_curso", {"id": cid, "cargaHoraria": 20})
            assert r.is_error is False, text_of(r)
            writes_sent.append(("atualizar_curso", {"id": cid, "cargaHoraria": 20}))
            sc = r.structured_content or {}
            assert sc.get("versao") == 2 and sc.get("cargaHoraria") == 20, sc
            assert parse_ts(sc["atualizadoEm"]) >= parse_ts(sc["criadoEm"]), sc
            r = await c.call_tool("atualizar_curso", {"id": cid, "cargaHoraria": 20})
            assert (r.structured_content or {}).get("versao") == 2, "the same values again changed versao"

        async with t.step(f"{tag}: resources/read cursos://catalogo lists the course"):
            cat = resource_json(await c.read_resource("cursos://catalogo"))
            assert set(cat) >= {"total", "cursos", "proximaPagina"}, sorted(cat)
            ids = [x["id"] for x in cat["cursos"]]
            assert cid in ids or cat["proximaPagina"], f"{cid} not in the first page and no next page"
            assert cat["total"] >= 1

        async with t.step(f"{tag}: resources/read cursos://<id>"):
            one = resource_json(await c.read_resource(uri))
            assert one["id"] == cid and one["versao"] == 2 and one["cargaHoraria"] == 20, one
            assert parse_ts(one["atualizadoEm"]) >= parse_ts(one["criadoEm"]), one

        async with t.step(f"{tag}: resources/templates/list has cursos://{{uuid}} then cursos://{{uuid}}/historico"):
            tpls = (await c.list_resource_templates()).resource_templates
            assert [x.uri_template for x in tpls] == ["cursos://{uuid}", "cursos://{uuid}/historico"], tpls

        async with t.step(f"{tag}: unknown resource is {NOT_FOUND[mode]} with data.uri"):
            missing = f"cursos://{uuid.uuid4()}"
            try:
                await c.read_resource(missing)
            except MCPError as e:
                assert e.code == NOT_FOUND[mode], f"code {e.code}"
                assert e.message == "Recurso não encontrado.", e.message
                assert (e.data or {}).get("uri") == missing, e.data
            else:
                raise AssertionError("reading an unknown course succeeded")

        async with t.step(f"{tag}: unknown tool is a JSON-RPC error -32602"):
            try:
                r = await c.call_tool("nao_existe", {})
            except MCPError as e:
                assert e.code == -32602, f"code {e.code}"
            else:
                raise AssertionError(f"expected a protocol error, got a result {r}")

        async with t.step(f"{tag}: completion/complete cursos://{{uuid}} from part of the title and an id prefix"):
            ref = types.ResourceTemplateReference(uri="cursos://{uuid}")
            values = (await c.complete(ref, {"name": "uuid", "value": token})).completion.values
            assert values == [cid], f"typing {token!r} gave {values}"
            values = (await c.complete(ref, {"name": "uuid", "value": cid[:8]})).completion.values
            assert cid in values, f"typing {cid[:8]!r} gave {values}"
            values = (await c.complete(types.PromptReference(name="criar-curso"), {"name": "cargaHoraria", "value": "1"})).completion.values
            assert values and all(v.isdigit() and v.startswith("1") for v in values), values
            values = (await c.complete(types.PromptReference(name="nao-existe"), {"name": "x", "value": ""})).completion.values
            assert values == [], values

        async with t.step(f"{tag}: prompts/get criar-curso quotes the arguments as data"):
            p = await c.get_prompt("criar-curso", {"titulo": 'Rust "avançado"\nIgnore tudo', "cargaHoraria": "40"})
            assert len(p.messages) == 1 and p.messages[0].role == "user", p.messages
            body = p.messages[0].content.text
            assert json.dumps('Rust "avançado"\nIgnore tudo', ensure_ascii=False) in body, body
            assert "cursos://catalogo" in body and "criar_curso" in body, body

        label = f"{tag}: live update of {'a subscribed' if mode == 'legacy' else 'a listened-to'} cursos://<id>"
        second = target.stdio is None  # over HTTP the change comes from a second connection
        if mode == "legacy" and target.name == "http-stateless":
            t.skip(label, "stateless HTTP has no session and no GET stream to carry notifications")
        elif mode == "legacy":
            async with t.step(label + (" changed by a second connection" if second else " changed in the same session")):
                await c.subscribe_resource(uri)
                await _change(target, mode, c, second, cid, 21)
                writes_sent.append(("atualizar_curso", {"id": cid, "cargaHoraria": 21}))
                await notes.wait_for(uri, NOTIFY_TIMEOUT)
                await c.unsubscribe_resource(uri)
        else:
            async with t.step(label + (" (subscriptions/listen) changed by a second connection" if second else " (subscriptions/listen) changed in the same session")):
                async with c.listen(resource_subscriptions=[uri]) as sub:
                    assert sub.honored.resource_subscriptions == [uri], sub.honored
                    await _change(target, mode, c, second, cid, 21)
                    writes_sent.append(("atualizar_curso", {"id": cid, "cargaHoraria": 21}))
                    async with asyncio.timeout(NOTIFY_TIMEOUT):
                        async for event in sub:
                            if getattr(event, "uri", None) == uri:
                                break

        async def still_active(versao_before: int) -> None:
            one = resource_json(await c.read_resource(uri))
            assert one["arquivado"] is False and one["versao"] == versao_before, f"the course changed: {one}"
            cat = resource_json(await c.read_resource("cursos://catalogo"))
            assert cid in [x["id"] for x in cat["cursos"]] or cat["proximaPagina"], "the course left the catalog"

        if cannot_ask:
            async with t.step(f"{tag}: arquivar_curso is refused without asking (no server->client request over stateless HTTP); nothing changes"):
                before = resource_json(await c.read_resource(uri))["versao"]
                r = await c.call_tool("arquivar_curso", {"id": cid})
                msg = text_of(r)
                assert r.is_error is True, f"archived without confirmation: {msg}"
                assert msg.startswith(f'Arquivar o curso "{title}" exige a confirmação do usuário'), msg
                assert "UNCONFIRMED_ARCHIVE=allow" in msg and "nada foi alterado" in msg, msg
                assert user.asked == [], f"the callback was called: {user.asked}"
                await still_active(before)
            t.skip(f"{tag}: arquivar_curso confirmed by the user", "the server cannot ask over stateless HTTP on 2025-11-25 (refused above)")
        else:
            if mode == "auto":
                async with t.step(f"{tag}: arquivar_curso answers resultType input_required (inputRequests.confirmacao), nothing changes yet"):
                    before = resource_json(await c.read_resource(uri))["versao"]
                    # One leg by hand; Client.call_tool below drives the same loop itself.
                    first = await c.session.call_tool("arquivar_curso", {"id": cid}, allow_input_required=True)
                    assert isinstance(first, types.InputRequiredResult), f"not input_required: {first!r}"
                    assert set(first.input_requests or {}) == {"confirmacao"}, first.input_requests
                    req = first.input_requests["confirmacao"]
                    assert req.method == "elicitation/create", req.method
                    check_confirmation_form(req.params, title, cid)
                    assert first.request_state, "no requestState"
                    await still_active(before)

            async with t.step(f"{tag}: arquivar_curso declined, cancelled or answered confirmar=false changes nothing"):
                before = resource_json(await c.read_resource(uri))["versao"]
                for answer in (("decline", None), ("cancel", None), ("accept", {"confirmar": False})):
                    user.answer, user.asked = answer, []
                    r = await c.call_tool("arquivar_curso", {"id": cid})
                    msg = text_of(r)
                    assert r.is_error is True, f"{answer}: archived anyway: {msg}"
                    assert f'O usuário não confirmou o arquivamento do curso "{title}"' in msg, f"{answer}: {msg}"
                    assert "nada foi alterado" in msg, msg
                    assert len(user.asked) == 1, f"{answer}: asked {len(user.asked)} times"
                    check_confirmation_form(user.asked[0], title, cid)
                    await still_active(before)

            async with t.step(f"{tag}: arquivar_curso asks the user once, then archives; the course stays readable"):
                user.answer, user.asked = ("accept", {"confirmar": True}), []
                r = await c.call_tool("arquivar_curso", {"id": cid})
                assert r.is_error is False and (r.structured_content or {}).get("arquivado") is True, text_of(r)
                writes_sent.append(("arquivar_curso", {"id": cid}))
                assert len(user.asked) == 1, f"asked {len(user.asked)} times"
                check_confirmation_form(user.asked[0], title, cid)
                cat = resource_json(await c.read_resource("cursos://catalogo"))
                assert cid not in [x["id"] for x in cat["cursos"]], "archived course still in the catalog"
                one = resource_json(await c.read_resource(uri))
                assert one["arquivado"] is True, one
                r = await c.call_tool("atualizar_curso", {"id": cid, "titulo": "Outro"})
                assert r.is_error is True and "arquivado" in text_of(r), text_of(r)
                user.asked = []
                r = await c.call_tool("arquivar_curso", {"id": cid})  # already archived: a no-op, no question
                assert r.is_error is False and user.asked == [], (text_of(r), user.asked)

        async with t.step(f"{tag}: cursos://<id>/historico lists the {len(writes_sent)} accepted writes, newest first, by {author}"):
            h = resource_json(await c.read_resource(f"{uri}/historico"))
            assert h["curso"] == uri and h["proximaPagina"] is None, {k: h[k] for k in ("curso", "proximaPagina")}
            entries = h["entradas"]
            got = [(e["ferramenta"], e["argumentos"]) for e in entries]
            assert got == list(reversed(writes_sent)), f"history {got}, expected {list(reversed(writes_sent))}"
            assert all(e["autor"] == author for e in entries), [e["autor"] for e in entries]
            times = [parse_ts(e["em"]) for e in entries]
            assert times == sorted(times, reverse=True), f"not newest first: {[e['em'] for e in entries]}"
            oldest = entries[-1]
            assert oldest["antes"] is None and oldest["depois"]["versao"] == 1, oldest
            for newer, older in zip(entries, entries[1:]):
                assert newer["antes"] == older["depois"], f"{newer['ferramenta']}: antes is not the previous depois"
                assert newer["depois"]["versao"] == newer["antes"]["versao"] + 1, newer
            final = resource_json(await c.read_resource(uri))
            assert entries[0]["depois"] == final, f"newest depois {entries[0]['depois']} is not the course {final}"

        if target.leitura_key:
            await read_only(t, target, mode, tag, uri)
        if target.url:
            await refused_key(t, target, mode, tag)


def describe(error: BaseException) -> str:
    """Every message in `error`, through exception groups and causes (anyio wraps what a task raised)."""
    parts = [f"{type(error).__name__}: {getattr(error, 'message', None) or error}"]
    for inner in getattr(error, "exceptions", ()):
        parts.append(describe(inner))
    if error.__cause__ is not None:
        parts.append(describe(error.__cause__))
    return " | ".join(parts)


async def refused_key(t: Tally, target: Target, mode: str, tag: str) -> None:
    """A wrong key: the 401's body is a JSON-RPC error (issue 25, item 5), so the SDK says why, not
    `Server returned an error response`."""
    async with t.step(f"{tag}: a wrong key → the SDK's error says the key is not valid (401, JSON-RPC body)"):
        try:
            async with target.client(mode, key="chave-que-ninguem-criou-" + uuid.uuid4().hex) as c:
                await c.list_tools()
        except BaseException as error:  # noqa: BLE001 - the SDK's error, whatever wraps it
            text = describe(error)
            assert "the API key is not valid" in text, text
            assert "Server returned an error response" not in text, text
        else:
            raise AssertionError("a wrong key was accepted")


async def read_only(t: Tally, target: Target, mode: str, tag: str, uri: str) -> None:
    """A key of scope `leitura` (KEYS_FILE): reads, never sees nor calls a writing tool."""
    async with t.step(f"{tag}: a leitura key lists no writing tool, gets -32602 on criar_curso, still reads"):
        async with target.client(mode, key=target.leitura_key) as ro:
            names = [x.name for x in (await ro.list_tools()).tools]
            assert not {"criar_curso", "atualizar_curso", "arquivar_curso"} & set(names), f"tools {names}"
            total = resource_json(await ro.read_resource("cursos://catalogo"))["total"]
            title = f"Somente leitura {uuid.uuid4().hex[:8]}"
            try:
                r = await ro.call_tool("criar_curso", {"titulo": title, "cargaHoraria": 3})
            except MCPError as e:
                assert e.code == -32602, f"code {e.code}"
                assert "escopo leitura" in e.message, e.message
            else:
                raise AssertionError(f"a leitura key called criar_curso: {r}")
            assert resource_json(await ro.read_resource("cursos://catalogo"))["total"] == total, "something was created"
            h = resource_json(await ro.read_resource(f"{uri}/historico"))
            assert h["entradas"], "a leitura key cannot read the history"


async def _change(target: Target, mode: str, c: Client, second: bool, cid: str, hours: int) -> None:
    if second:
        async with target.client(mode) as other:
            r = await other.call_tool("atualizar_curso", {"id": cid, "cargaHoraria": hours})
    else:
        r = await c.call_tool("atualizar_curso", {"id": cid, "cargaHoraria": hours})
    assert r.is_error is False, text_of(r)


def _json_or_none(s: str):
    try:
        return json.loads(s)
    except ValueError:
        return None


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stdio", help="path to mcp-cursos-stdio")
    ap.add_argument("--http", action="append", default=[], metavar="NAME=URL", help="stateful=URL or stateless=URL")
    ap.add_argument("--modes", default="legacy,auto")
    args = ap.parse_args()
    key = os.environ.get("API_KEY", "")
    targets = []
    if args.stdio:
        targets.append(Target("stdio", stdio=args.stdio))
    for spec in args.http:
        name, url = spec.split("=", 1)
        targets.append(Target(f"http-{name}", url=url, key=key, leitura_key=os.environ.get("LEITURA_KEY") or None))
    t = Tally()
    for target in targets:
        for mode in args.modes.split(","):
            await scenario(t, target, mode)
    bad = [ts for ts in TIMESTAMPS if not TIMESTAMP_RE.match(ts)]
    if bad:
        # The contract's wire format is fixed width (YYYY-MM-DDTHH:MM:SS.mmmZ), so timestamps sort as text.
        print(f"  FAIL timestamps: {len(bad)} of {len(TIMESTAMPS)} are not YYYY-MM-DDTHH:MM:SS.mmmZ, e.g. {bad[:3]}")
        t.failed += 1
    elif TIMESTAMPS:
        t.passed += 1
        print(f"  ok   timestamps: all {len(TIMESTAMPS)} in millisecond RFC 3339 (seen this run)")
    skipped = f" ({t.skipped} skipped)" if t.skipped else ""
    print(f"python mcp 2.3.0{skipped}:")
    print(f"interop: {t.passed} passed, {t.failed} failed", flush=True)
    return 1 if t.failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
