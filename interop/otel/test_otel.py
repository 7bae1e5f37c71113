"""End-to-end test of mcp-cursos' OpenTelemetry export (issue 27, ADR 0051).

The backend (and the stdio app) run with `OTEL_EXPORTER_OTLP_ENDPOINT` pointed at a receiver on
loopback that decodes what arrives with the official OTLP protobuf definitions
(`opentelemetry-proto`, pinned by scripts/install-test-tools.sh). No OpenTelemetry Collector,
Jaeger or Tempo binary can be installed on this machine (neither apt nor the package registries
used here carry one), so this receiver stands in for the collector: it answers as OTLP/HTTP says
(200, an empty `Export*ServiceResponse`) and keeps every span and metric it was sent.

The requests come from the official Python MCP SDK (`mcp` 2.3.0), run under a W3C trace context
the test sets (trace id and parent span id below): the SDK itself injects it as `_meta.traceparent`
(SEP-414) in every request. Checks:

  1. one server span per request, named and attributed per the MCP semantic conventions, whose
     trace id and parent are the client's;
  2. the store's child spans (statement kind and table, `db.system.name`), children of the request's;
  3. `error.type`: `tool_error` for an `isError` result, the JSON-RPC code for an error (a caller's
     mistake not marked as a server error);
  4. `mcp.server.operation.duration`, a histogram in seconds with the conventions' bounds and the
     tool name;
  5. nothing secret in any span, resource or metric: not the API key, not a title, not an argument;
  6. the stdio app exports its spans too (`network.transport` = `pipe`), its stdout staying JSON-RPC
     (the SDK would fail on anything else);
  7. a request rmcp answers before any handler (a 2026-07-28 request without its `_meta` keys) has
     its span too, parented by the HTTP `traceparent`;
  8. a 2025-era session's `notifications/initialized` has its span, and each stdio connection's
     `mcp.server.session.duration` is exported when it ends;
  9. with the collector not answering (a socket that listens and never accepts: each export waits
     for its timeout): every request is still answered, the process's memory does not keep
     growing with more requests (the export queue is bounded), drops are said in the log, and the
     process stops within its shutdown budget.

Usage: test_otel.py BACKEND_BIN STDIO_BIN. Last line: `otel: N passed, M failed`.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.server
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import uuid

import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
PARENT_ID = "b7ad6b7169203331"
SERVICE = "mcp-cursos-otel-test"
BOUNDS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0]
SPAN_KIND_SERVER, SPAN_KIND_CLIENT = 2, 3
STATUS_CODE_ERROR = 2
WAIT = 30.0  # seconds to poll for what the exporter sends (it batches every 200 ms here)


# What each OTLP/HTTP path carries: its request and response messages and where the items are.
SIGNALS = {
    "/v1/traces": (trace_service_pb2.ExportTraceServiceRequest, trace_service_pb2.ExportTraceServiceResponse,
                   "resource_spans", "scope_spans", "spans"),
    "/v1/metrics": (metrics_service_pb2.ExportMetricsServiceRequest, metrics_service_pb2.ExportMetricsServiceResponse,
                    "resource_metrics", "scope_metrics", "metrics"),
}


class Receiver:
    """An OTLP/HTTP protobuf receiver on 127.0.0.1 keeping what it decodes."""

    def __init__(self) -> None:
        self.spans: list[tuple[dict, object]] = []  # (resource attributes, span)
        self.metrics: list[tuple[dict, object]] = []  # (resource attributes, metric)
        self.requests = 0
        self.lock = threading.Lock()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                assert self.headers.get("Content-Type") == "application/x-protobuf", self.headers
                signal = SIGNALS.get(self.path)
                if signal is None:
                    self.send_response(404)
                    self.end_headers()
                    return
                request_type, answer_type, resources, scopes, items = signal
                request = request_type.FromString(body)
                with receiver.lock:
                    receiver.requests += 1
                    kept = receiver.spans if items == "spans" else receiver.metrics
                    for resource_items in getattr(request, resources):
                        resource = attributes(resource_items.resource.attributes)
                        for scope_items in getattr(resource_items, scopes):
                            kept.extend((resource, item) for item in getattr(scope_items, items))
                answer = answer_type()
                out = answer.SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *args) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def value_of(any_value):
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


def attributes(key_values) -> dict:
    return {kv.key: value_of(kv.value) for kv in key_values}


def every_string(receiver: Receiver) -> list[str]:
    """Every span name, attribute, event and status text, resource and metric attribute received."""
    out: list[str] = []
    with receiver.lock:
        for resource, span in receiver.spans:
            out += [str(v) for v in resource.values()]
            out += [span.name, span.status.message]
            out += [f"{k}={v}" for k, v in attributes(span.attributes).items()]
            for event in span.events:
                out += [event.name] + [f"{k}={v}" for k, v in attributes(event.attributes).items()]
        for resource, metric in receiver.metrics:
            out += [str(v) for v in resource.values()] + [metric.name]
            for point in metric.histogram.data_points:
                out += [f"{k}={v}" for k, v in attributes(point.attributes).items()]
    return out


class Tally:
    def __init__(self) -> None:
        self.passed = self.failed = 0

    @contextlib.contextmanager
    def step(self, label: str):
        try:
            yield
        except Exception as e:  # noqa: BLE001 - every failure of a step is reported, the run goes on
            self.failed += 1
            print(f"  FAIL {label}: {''.join(traceback.format_exception_only(type(e), e)).strip()}", flush=True)
        else:
            self.passed += 1
            print(f"  ok   {label}", flush=True)


def start_backend(binary: str, work: str, name: str, env: dict) -> tuple[subprocess.Popen, str, str]:
    """Starts the backend on a free loopback port; returns it, its /mcp URL and its log's path."""
    log = os.path.join(work, f"{name}.log")
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR")}
    full = {**keep, "HOST": "127.0.0.1", "PORT": "0", "RUST_LOG": "info,rmcp=warn",
            "DATABASE_PATH": os.path.join(work, f"{name}.db"), **env}
    process = subprocess.Popen([binary], env=full, stdout=open(log, "w"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        match = re.search(r"mcp-cursos-backend listening url=(http:\S+)", open(log).read())
        if match:
            return process, match.group(1), log
        if process.poll() is not None:
            raise RuntimeError(f"the backend exited: {open(log).read()}")
        time.sleep(0.1)
    raise RuntimeError(f"the backend did not listen within 30 s: {open(log).read()}")


def stop(process: subprocess.Popen) -> float:
    """SIGTERM, then the seconds until it exited (killed after 30 s)."""
    began = time.monotonic()
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    return time.monotonic() - began


def rss_kib(pid: int) -> int:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


@contextlib.contextmanager
def client_trace():
    """The client's W3C trace context: the SDK injects it into each request's `_meta`."""
    parent = trace.SpanContext(trace_id=int(TRACE_ID, 16), span_id=int(PARENT_ID, 16), is_remote=False,
                               trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED))
    token = otel_context.attach(trace.set_span_in_context(trace.NonRecordingSpan(parent)))
    try:
        yield
    finally:
        otel_context.detach(token)


def poll(predicate, what: str) -> None:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"not received within {WAIT} s: {what}")


def server_spans(receiver: Receiver, transport: str) -> list:
    with receiver.lock:
        return [span for _, span in receiver.spans if span.kind == SPAN_KIND_SERVER
                and attributes(span.attributes).get("network.transport") == transport]


async def http_requests(url: str, key: str, title: str) -> dict:
    """The requests of the HTTP scenario, under the client's trace; returns what they gave."""
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"})
    out: dict = {}
    with client_trace():
        async with http, Client(streamable_http_client(url, http_client=http), mode="auto") as c:
            out["version"] = c.protocol_version
            await c.list_tools()
            created = await c.call_tool("criar_curso", {"titulo": title, "cargaHoraria": 12})
            assert created.is_error is False, created
            out["id"] = created.structured_content["id"]
            await c.read_resource(f"cursos://{out['id']}")
            refused = await c.call_tool("criar_curso", {"titulo": f"{title} bis", "cargaHoraria": 0})
            assert refused.is_error is True, refused
            try:
                await c.call_tool("ferramenta_que_nao_existe", {})
                raise AssertionError("an unknown tool was answered")
            except MCPError as e:
                out["unknown_code"] = e.code
    return out


async def stdio_requests(binary: str, work: str, mode: str) -> None:
    """One stdio connection: 2026-07-28 (`auto`) or a 2025-era session (`legacy`, with `initialize`)."""
    env = {"DATABASE_PATH": os.path.join(work, "stdio.db"), "RUST_LOG": "warn",
           "OTEL_EXPORTER_OTLP_ENDPOINT": os.environ["OTEL_TEST_ENDPOINT"], "OTEL_SERVICE_NAME": SERVICE,
           "OTEL_BSP_SCHEDULE_DELAY": "200", "OTEL_METRIC_EXPORT_INTERVAL": "500"}
    with client_trace():
        async with Client(StdioServerParameters(command=binary, env=env), mode=mode) as c:
            await c.list_tools()


async def reads(url: str, key: str, uri: str, count: int) -> int:
    """`count` reads of `uri` on one session; returns how many were answered."""
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30)
    answered = 0
    with client_trace():
        async with http, Client(streamable_http_client(url, http_client=http), mode="auto") as c:
            for _ in range(count):
                result = await c.read_resource(uri)
                answered += len(result.contents) == 1
    return answered


def main() -> int:
    backend_bin, stdio_bin = sys.argv[1], sys.argv[2]
    t = Tally()
    work = tempfile.mkdtemp(prefix="mcp-cursos-otel-")
    key = f"otel-{uuid.uuid4().hex}"
    title = f"Titulo secreto {uuid.uuid4().hex[:8]}"
    receiver = Receiver()
    os.environ["OTEL_TEST_ENDPOINT"] = receiver.url
    otel_env = {"API_KEY": key, "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_SERVICE_NAME": SERVICE,
                "OTEL_BSP_SCHEDULE_DELAY": "200", "OTEL_METRIC_EXPORT_INTERVAL": "500"}
    print("-- otel: backend exporting to a loopback OTLP receiver (no Collector binary can be installed here)")
    backend, url, log = start_backend(backend_bin, work, "traced", otel_env)
    try:
        out = asyncio.run(http_requests(url, key, title))
    except Exception:  # noqa: BLE001
        stop(backend)
        print(open(log).read())
        raise
    expected = {"tools/list", "tools/call criar_curso", "resources/read", "tools/call ferramenta_que_nao_existe"}
    with t.step("one server span per request arrives, with the conventions' names"):
        poll(lambda: expected <= {s.name for s in server_spans(receiver, "tcp")}, f"server spans {expected}")
        names = [s.name for s in server_spans(receiver, "tcp")]
        assert names.count("tools/call criar_curso") == 2, names  # the created one and the refused one
        assert names.count("resources/read") == 1 and names.count("tools/list") == 1, names
    spans = server_spans(receiver, "tcp")
    by_name = {}
    for span in spans:
        by_name.setdefault(span.name, []).append(span)
    with t.step("every server span has the client's trace id and the client's span as parent"):
        for span in spans:
            assert span.trace_id.hex() == TRACE_ID, (span.name, span.trace_id.hex())
            assert span.parent_span_id.hex() == PARENT_ID, (span.name, span.parent_span_id.hex())
    with t.step("the server spans carry the MCP conventions' attributes"):
        for span in spans:
            a = attributes(span.attributes)
            assert a["mcp.method.name"] == span.name.split(" ")[0], a
            assert a["mcp.protocol.version"] == out["version"] == "2026-07-28", a
            assert a["network.transport"] == "tcp" and a["network.protocol.name"] == "http", a
            assert a.get("jsonrpc.request.id"), a
            assert "mcp.session.id" not in a, a  # MUST NOT on 2026-07-28
        created, refused = sorted(by_name["tools/call criar_curso"], key=lambda s: s.start_time_unix_nano)
        a = attributes(created.attributes)
        assert a["gen_ai.tool.name"] == "criar_curso" and a["gen_ai.operation.name"] == "execute_tool", a
        assert "error.type" not in a and created.status.code != STATUS_CODE_ERROR, (a, created.status)
        read = attributes(by_name["resources/read"][0].attributes)
        assert read["mcp.resource.uri"] == f"cursos://{out['id']}", read
    with t.step("error.type: tool_error for isError, the JSON-RPC code for an unknown tool (a caller's mistake)"):
        a = attributes(refused.attributes)
        assert a["error.type"] == "tool_error" and refused.status.code == STATUS_CODE_ERROR, (a, refused.status)
        unknown = by_name["tools/call ferramenta_que_nao_existe"][0]
        a = attributes(unknown.attributes)
        assert a["error.type"] == str(out["unknown_code"]) == "-32602", a
        assert a["rpc.response.status_code"] == "-32602", a
        assert unknown.status.code != STATUS_CODE_ERROR, unknown.status
    with t.step("the store's spans are children of the request's: statement kind, table, database"):
        with receiver.lock:
            store = [s for _, s in receiver.spans if s.kind == SPAN_KIND_CLIENT]
        insert = [s for s in store if s.parent_span_id == created.span_id]
        assert [s.name for s in insert] == ["INSERT courses"], [s.name for s in insert]
        a = attributes(insert[0].attributes)
        assert a == {"db.system.name": "sqlite", "db.operation.name": "INSERT", "db.collection.name": "courses"}, a
        assert insert[0].trace_id.hex() == TRACE_ID
        read_span = by_name["resources/read"][0]
        assert [s.name for s in store if s.parent_span_id == read_span.span_id] == ["SELECT courses"], store
    with t.step("the resource names the service; the spans carry no code location, thread or target"):
        with receiver.lock:
            resource, span = receiver.spans[0]
        assert resource["service.name"] == SERVICE, resource
        for span in spans:
            assert not any(k.startswith(("code.", "thread.", "target", "busy_ns", "idle_ns"))
                           for k in attributes(span.attributes)), attributes(span.attributes)
    with t.step("mcp.server.operation.duration: a histogram in s, the conventions' bounds, the tool name"):
        def http_metric():
            """The last export of the backend's histogram (the stdio app's has `pipe` points only)."""
            with receiver.lock:
                found = [m for _, m in receiver.metrics if m.name == "mcp.server.operation.duration" and any(
                    attributes(p.attributes).get("network.transport") == "tcp" for p in m.histogram.data_points)]
            return found[-1] if found else None

        def tool_points() -> set:
            metric = http_metric()
            return {(attributes(p.attributes).get("gen_ai.tool.name"), attributes(p.attributes).get("error.type"))
                    for p in metric.histogram.data_points} if metric else set()
        wanted = {("criar_curso", None), ("criar_curso", "tool_error"), ("_OTHER", "-32602")}
        poll(lambda: wanted <= tool_points(), f"the duration histogram's points {wanted}")
        metric = http_metric()
        assert metric.unit == "s", metric.unit
        points = {(attributes(p.attributes)["mcp.method.name"], attributes(p.attributes).get("gen_ai.tool.name"),
                   attributes(p.attributes).get("error.type")): p for p in metric.histogram.data_points}
        assert points[("tools/call", "criar_curso", None)].count == 1, points.keys()
        assert points[("tools/call", "criar_curso", "tool_error")].count == 1, points.keys()
        # An unknown tool's name never becomes a metric label (a client could send any name).
        assert ("tools/call", "_OTHER", "-32602") in points, points.keys()
        for point in metric.histogram.data_points:
            assert list(point.explicit_bounds) == BOUNDS, list(point.explicit_bounds)
    with t.step("a request rmcp refuses before any handler still has its span, its parent the HTTP traceparent"):
        header_trace, header_parent = "5" * 32, "6" * 16
        refused = httpx2.post(url, json={"jsonrpc": "2.0", "id": "sem-meta", "method": "tools/list", "params": {}},
                              headers={"Authorization": f"Bearer {key}", "MCP-Protocol-Version": "2026-07-28",
                                       "Accept": "application/json, text/event-stream",
                                       "traceparent": f"00-{header_trace}-{header_parent}-01"})
        # A 2026-07-28 request without its required `_meta` keys: rmcp answers it, no handler sees it.
        assert refused.status_code == 400 and refused.json()["error"]["code"] == -32602, refused.text

        def refused_spans() -> list:
            return [s for s in server_spans(receiver, "tcp") if s.trace_id.hex() == header_trace]
        poll(lambda: refused_spans(), "the refused request's span")
        [span] = refused_spans()
        assert span.name == "tools/list" and span.parent_span_id.hex() == header_parent, span
        a = attributes(span.attributes)
        assert a["mcp.method.name"] == "tools/list" and a["network.protocol.name"] == "http", a
        assert a["error.type"] == a["rpc.response.status_code"] == "-32602", a
        assert span.status.code != STATUS_CODE_ERROR, span.status  # a caller's mistake
        assert span.end_time_unix_nano >= span.start_time_unix_nano > 0, span
    print("-- otel: the stdio app exporting to the same receiver")
    with t.step("the stdio app exports its request spans (network.transport pipe), stdout JSON-RPC only"):
        asyncio.run(stdio_requests(stdio_bin, work, "auto"))
        poll(lambda: any(s.name == "tools/list" for s in server_spans(receiver, "pipe")), "a stdio tools/list span")
        span = [s for s in server_spans(receiver, "pipe") if s.name == "tools/list"][0]
        assert span.trace_id.hex() == TRACE_ID and span.parent_span_id.hex() == PARENT_ID, span
    with t.step("a 2025-era session's notification has its span: notifications/initialized, no request id"):
        asyncio.run(stdio_requests(stdio_bin, work, "legacy"))
        poll(lambda: any(s.name == "notifications/initialized" for s in server_spans(receiver, "pipe")),
             "a notifications/initialized span")
        span = [s for s in server_spans(receiver, "pipe") if s.name == "notifications/initialized"][0]
        a = attributes(span.attributes)
        assert a["mcp.method.name"] == "notifications/initialized", a
        assert a["mcp.protocol.version"] == "2025-11-25", a
        assert "jsonrpc.request.id" not in a and "error.type" not in a, a
        assert any(s.name == "initialize" for s in server_spans(receiver, "pipe")), "the initialize request's span"
    with t.step("mcp.server.session.duration: each stdio connection's, recorded when it ends"):
        def session_points() -> list:
            with receiver.lock:
                found = [m for _, m in receiver.metrics if m.name == "mcp.server.session.duration"]
            return [p for m in found for p in m.histogram.data_points]

        def versions() -> set:
            return {attributes(p.attributes).get("mcp.protocol.version") for p in session_points()}
        poll(lambda: {"2026-07-28", "2025-11-25"} <= versions(), "a session duration of each stdio connection")
        for point in session_points():
            a = attributes(point.attributes)
            assert a["network.transport"] == "pipe" and "network.protocol.name" not in a, a
            assert point.count == 1 and point.sum > 0, (a, point.count, point.sum)
            assert list(point.explicit_bounds) == BOUNDS, list(point.explicit_bounds)
        with receiver.lock:
            units = {m.unit for _, m in receiver.metrics if m.name == "mcp.server.session.duration"}
        assert units == {"s"}, units
    with t.step("nothing secret in any span, resource or metric: no key, no title, no argument"):
        stop(backend)
        strings = every_string(receiver)
        for secret in (key, title, "Titulo secreto", "cargaHoraria", "titulo"):
            leaked = [s for s in strings if secret in s]
            assert not leaked, (secret, leaked[:3])
    print("-- otel: the collector not answering")
    receiver.close()
    # A collector that never answers: a socket that listens but never accepts, so each export
    # waits for its 10 s timeout and at most 256 spans leave every 10 s, however slowly the
    # requests come (with a refused connection each export fails at once, and on a busy machine
    # the exporter then keeps up with the requests: nothing is dropped and nothing is shown).
    silent = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    silent.bind(("127.0.0.1", 0))
    silent.listen(1)
    down_env = {**otel_env, "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{silent.getsockname()[1]}",
                "OTEL_BSP_MAX_QUEUE_SIZE": "256", "OTEL_EXPORTER_OTLP_TIMEOUT": "10000"}
    backend, url, log = start_backend(backend_bin, work, "collector-down", down_env)
    try:
        with t.step("with the collector not answering, every request is answered and memory stays flat"):
            asyncio.run(reads(url, key, "cursos://catalogo", 200))  # warm-up: pools, caches, the queue fills
            first = rss_kib(backend.pid)
            answered = asyncio.run(reads(url, key, "cursos://catalogo", 1000))
            middle = rss_kib(backend.pid)
            answered += asyncio.run(reads(url, key, "cursos://catalogo", 1000))
            last = rss_kib(backend.pid)
            assert answered == 2000, answered
            # 1000 more requests, each with 2 spans, are held nowhere: the queue holds at most 256.
            assert last - middle < 4096, f"RSS grew {first} -> {middle} -> {last} KiB"
            print(f"       RSS {first} -> {middle} -> {last} KiB over 2000 reads", flush=True)
        with t.step("the dropped spans are said in the log; the process stops within its budget"):
            seconds = stop(backend)
            text = open(log).read()
            said = [line for line in text.splitlines() if "SpanDropping" in line or "SpansDropped" in line]
            assert said, text[-2000:]
            for line in said:
                print(f"       log: {line[:220]}", flush=True)
            assert backend.returncode == 0, (backend.returncode, text[-2000:])
            print(f"       stopped in {seconds:.1f} s (the telemetry shutdown waits at most 3 s)", flush=True)
    finally:
        if backend.poll() is None:
            stop(backend)
        silent.close()
    print(f"otel: {t.passed} passed, {t.failed} failed")
    return 1 if t.failed else 0


if __name__ == "__main__":
    sys.exit(main())
