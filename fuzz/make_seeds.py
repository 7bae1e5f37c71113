#!/usr/bin/env python3
"""Writes the seed corpus of the http_request fuzz target (fuzz/corpus/http_request/seed-*).

Each seed is one selector byte (fuzz_targets/http_request.rs: a digit sends the MCP-Protocol-Version
header it picks, a letter also sends Mcp-Method/Mcp-Name) followed by the request body.
Run from anywhere: python3 fuzz/make_seeds.py
"""
import json
import pathlib

OUT = pathlib.Path(__file__).resolve().parent / "corpus" / "http_request"
UUID = "1b4e28ba-2fa1-41d2-883f-0016d3cca427"
# Selectors: index = byte % 8 into PROTOCOL_VERSIONS; 0x40 set = SEP-2243 headers too.
NO_HEADER, V2024, V2025_03, V2025_06, V2025_11, V2026, BAD, LIST = "01234567"
V2026_HEADERS = "E"  # 0x45: 2026-07-28 plus Mcp-Method / Mcp-Name


def rpc(method, params=None, id_=1):
    message = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        message["params"] = params
    return message


def meta(params=None):
    params = dict(params or {})
    params["_meta"] = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "fuzz", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    return params


def call(name, arguments):
    return {"name": name, "arguments": arguments}


seeds = {}


def seed(name, selector, body):
    if not isinstance(body, bytes):
        body = json.dumps(body, ensure_ascii=False).encode()
    seeds[name] = selector.encode() + body


# 2025 era: initialize handshake, then requests with the header.
seed("initialize-2025-11-25", V2025_11, rpc("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "1"}}))
seed("initialize-no-header-2025-03-26", NO_HEADER, rpc("initialize", {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "1"}}))
seed("initialized-notification", V2025_11, {"jsonrpc": "2.0", "method": "notifications/initialized"})
seed("ping", V2025_06, rpc("ping"))
seed("tools-list", V2025_11, rpc("tools/list"))
seed("criar-curso", V2025_11, rpc("tools/call", call("criar_curso", {"titulo": "Arquitetura de Software", "cargaHoraria": 12})))
seed("criar-curso-idempotente", V2025_11, rpc("tools/call", call("criar_curso", {"titulo": "Rust Avançado", "cargaHoraria": 40, "chaveIdempotencia": "pedido-42"})))
seed("atualizar-curso", V2025_11, rpc("tools/call", call("atualizar_curso", {"id": UUID, "titulo": "Novo título", "cargaHoraria": None, "versao": 1})))
seed("arquivar-curso", V2025_11, rpc("tools/call", call("arquivar_curso", {"id": UUID, "versao": 2})))
seed("listar-cursos", V2025_11, rpc("tools/call", call("listar_cursos", {"pagina": "100"})))
seed("ler-curso", V2025_11, rpc("tools/call", call("ler_curso", {"id": UUID})))
seed("resources-list", V2025_11, rpc("resources/list", {"cursor": "1"}))
seed("resources-read-catalogo", V2025_11, rpc("resources/read", {"uri": "cursos://catalogo?pagina=1"}))
seed("resources-read-curso", V2025_11, rpc("resources/read", {"uri": f"cursos://{UUID}"}))
seed("resources-templates", V2024, rpc("resources/templates/list"))
seed("resources-subscribe", V2025_11, rpc("resources/subscribe", {"uri": "cursos://catalogo"}))
seed("prompts-list", V2025_11, rpc("prompts/list"))
seed("prompts-get", V2025_11, rpc("prompts/get", {"name": "criar-curso", "arguments": {"titulo": "Rust", "cargaHoraria": "40"}}))
seed("completion", V2025_11, rpc("completion/complete", {"ref": {"type": "ref/resource", "uri": "cursos://{uuid}"}, "argument": {"name": "uuid", "value": "arq"}}))

# 2026-07-28: per-request _meta and the SEP-2243 headers.
seed("discover-2026", V2026_HEADERS, rpc("server/discover", meta()))
seed("tools-list-2026", V2026_HEADERS, rpc("tools/list", meta()))
seed("criar-curso-2026", V2026_HEADERS, rpc("tools/call", meta(call("criar_curso", {"titulo": "Álgebra Linear", "cargaHoraria": 60}))))
seed("resources-read-2026", V2026_HEADERS, rpc("resources/read", meta({"uri": "cursos://catalogo"})))
seed("prompts-get-2026", V2026_HEADERS, rpc("prompts/get", meta({"name": "criar-curso", "arguments": {"titulo": "Rust"}})))
seed("listen-2026", V2026_HEADERS, rpc("subscriptions/listen", meta({"resourcesListChanged": True})))
seed("criar-curso-2026-without-headers", V2026, rpc("tools/call", meta(call("criar_curso", {"titulo": "Sem cabeçalhos", "cargaHoraria": 1}))))

# Malformed: wrong types, huge numbers, deep nesting, invalid UTF-8, broken JSON, bad headers.
seed("wrong-types-method", V2025_11, b'{"jsonrpc":"2.0","id":1,"method":5,"params":"x"}')
seed("wrong-types-id", V2025_11, b'{"jsonrpc":"2.0","id":{"a":[]},"method":"ping"}')
seed("wrong-types-jsonrpc", V2025_11, b'{"jsonrpc":"1.0","id":1,"method":"tools/list"}')
seed("wrong-types-arguments", V2025_11, rpc("tools/call", call("criar_curso", {"titulo": ["Rust"], "cargaHoraria": "12", "extra": True})))
seed("wrong-types-params", V2025_11, b'{"jsonrpc":"2.0","id":"x","method":"tools/call","params":[1,2,3]}')
seed("huge-numbers", V2025_11, b'{"jsonrpc":"2.0","id":18446744073709551616,"method":"tools/call","params":{"name":"criar_curso","arguments":{"titulo":"Grande","cargaHoraria":1e309}}}')
seed("huge-numbers-negative", V2025_11, b'{"jsonrpc":"2.0","id":-9223372036854775809,"method":"tools/call","params":{"name":"atualizar_curso","arguments":{"id":"' + UUID.encode() + b'","cargaHoraria":-9223372036854775809,"versao":99999999999999999999}}}')
seed("huge-id-float", V2025_11, b'{"jsonrpc":"2.0","id":1.5e300,"method":"ping"}')
seed("deep-nesting-body", V2025_11, b"[" * 4000 + b"]" * 4000)
seed("deep-nesting-arguments", V2025_11, b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"criar_curso","arguments":{"titulo":' + b'{"a":' * 1500 + b"1" + b"}" * 1500 + b',"cargaHoraria":1}}}')
seed("deep-nesting-meta", V2026_HEADERS, b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":' + b"[" * 3000 + b"]" * 3000 + b"}}")
seed("invalid-utf8", V2025_11, b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"criar_curso","arguments":{"titulo":"Rust \xff\xfe \xc3\x28","cargaHoraria":10}}}')
seed("lone-surrogate", V2025_11, b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"criar_curso","arguments":{"titulo":"\\ud800 Rust","cargaHoraria":10}}}')
seed("control-characters", V2025_11, rpc("tools/call", call("criar_curso", {"titulo": "Rust\u0000\u001b[31m\n", "cargaHoraria": 10})))
seed("truncated", V2025_11, b'{"jsonrpc":"2.0","id":1,"method":"tools/ca')
seed("empty", V2025_11, b"")
seed("not-json", V2025_11, b"GET / HTTP/1.1\r\n\r\n")
seed("batch", V2025_11, json.dumps([rpc("ping", id_=1), rpc("tools/list", id_=2)]).encode())
seed("response-from-client", V2025_11, b'{"jsonrpc":"2.0","id":1,"result":{}}')
seed("unknown-method", V2025_11, rpc("cursos/apagar_tudo", {}))
seed("bad-version-header", BAD, rpc("tools/list"))
seed("listed-version-header", LIST, rpc("tools/list"))
seed("initialize-version-mismatch", V2026_HEADERS, rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "1"}}))
seed("duplicate-keys", V2025_11, b'{"jsonrpc":"2.0","id":1,"id":2,"method":"ping","method":"tools/list"}')

OUT.mkdir(parents=True, exist_ok=True)
for old in OUT.glob("seed-*"):
    old.unlink()
for index, (name, content) in enumerate(seeds.items()):
    (OUT / f"seed-{index:02d}-{name}").write_bytes(content)
print(f"{len(seeds)} seeds in {OUT}")
