"""CPU per JSON read of mcp-cursos-backend with OpenTelemetry off, on (100 % sampling, a live
receiver) and on with the collector down, measured interleaved in one run (issue 27, ADR 0051).

Each target is a release backend in stateless JSON mode (SESSION_MODE=stateless) on its own
SQLite copy with one course; the client sends `resources/read cursos://{uuid}` (2025-11-25, the
`MCP-Protocol-Version` header, as bench/load/mcp.lua) one after the other over one keep-alive
connection, and the server's CPU time (utime + stime from /proc, in clock ticks) is read before and
after each batch. Targets run in turns (even repetitions in reverse order). Printed: each target's
median CPU per read, requests per second, and the median of the per-repetition ratios to `off`.

  off       OTEL unset (what today's binary does with telemetry off);
  on        OTEL_EXPORTER_OTLP_ENDPOINT at a receiver on 127.0.0.1 that reads and discards each
            export (answering 200), OTEL_TRACES_SAMPLER=always_on: every request's spans exported;
  down      the endpoint a closed port (the collector unreachable), always_on;
  baseline  (with --baseline PATH) another binary, telemetry off: e.g. main's build.

Usage: python3 bench/otel_reads.py BACKEND [--baseline PATH] [--requests N] [--reps R]
"""

from __future__ import annotations

import argparse
import http.client
import http.server
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import tempfile
import threading
import time
import uuid

TICKS = os.sysconf("SC_CLK_TCK")


class Discard(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


def cpu_ticks(pid: int) -> int:
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Target:
    def __init__(self, name: str, binary: str, work: str, env: dict):
        self.name, self.key = name, f"bench-{uuid.uuid4().hex}"
        self.log = os.path.join(work, f"{name}.log")
        base = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG")}
        full = {**base, "HOST": "127.0.0.1", "PORT": "0", "RUST_LOG": "warn,mcp_cursos_backend=info",
                "API_KEY": self.key, "SESSION_MODE": "stateless",
                "DATABASE_PATH": os.path.join(work, f"{name}.db"), **env}
        self.process = subprocess.Popen([binary], env=full, stdout=open(self.log, "w"), stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while True:
            match = re.search(r"listening url=http://127\.0\.0\.1:(\d+)/mcp", open(self.log).read())
            if match:
                self.port = int(match.group(1))
                break
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{name} did not start: {open(self.log).read()}")
            time.sleep(0.1)
        self.connection = http.client.HTTPConnection("127.0.0.1", self.port)
        self.headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                        "MCP-Protocol-Version": "2025-11-25", "Authorization": f"Bearer {self.key}"}
        created = self.call({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "criar_curso", "arguments": {"titulo": f"Bench {name}", "cargaHoraria": 10}}})
        course = created["result"]["structuredContent"]["id"]
        self.read = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "resources/read",
                                "params": {"uri": f"cursos://{course}"}}).encode()

    def call(self, message: dict) -> dict:
        self.connection.request("POST", "/mcp", json.dumps(message), self.headers)
        response = self.connection.getresponse()
        body = response.read()
        assert response.status == 200, (response.status, body[:300])
        return json.loads(body)

    def batch(self, count: int) -> tuple[float, float]:
        """`count` reads; returns (server CPU µs per read, reads per second)."""
        # A connection of its own per batch: while the other targets run theirs, this one would
        # sit idle longer than the backend keeps an idle connection open.
        self.connection.close()
        self.connection = http.client.HTTPConnection("127.0.0.1", self.port)
        before, began = cpu_ticks(self.process.pid), time.monotonic()
        for _ in range(count):
            self.connection.request("POST", "/mcp", self.read, self.headers)
            response = self.connection.getresponse()
            body = response.read()
            if response.status != 200 or b'"result"' not in body:
                raise RuntimeError(f"{self.name}: {response.status} {body[:300]!r}")
        elapsed = time.monotonic() - began
        return (cpu_ticks(self.process.pid) - before) / TICKS / count * 1e6, count / elapsed

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("backend")
    ap.add_argument("--baseline")
    ap.add_argument("--requests", type=int, default=4000)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    receiver = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Discard)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{receiver.server_address[1]}"
    work = tempfile.mkdtemp(prefix="mcp-cursos-bench-otel-")
    traced = {"OTEL_TRACES_SAMPLER": "always_on", "OTEL_SERVICE_NAME": "bench"}
    targets = [Target("off", args.backend, work, {}),
               Target("on", args.backend, work, {**traced, "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint}),
               Target("down", args.backend, work, {**traced, "OTEL_EXPORTER_OTLP_ENDPOINT":
                                                   f"http://127.0.0.1:{free_port()}"})]
    if args.baseline:
        targets.append(Target("baseline", args.baseline, work, {}))
    results: dict[str, list[tuple[float, float]]] = {t.name: [] for t in targets}
    try:
        for t in targets:
            t.batch(500)  # warm-up
        for rep in range(args.reps):
            for t in (targets if rep % 2 == 0 else list(reversed(targets))):
                results[t.name].append(t.batch(args.requests))
    finally:
        for t in targets:
            t.stop()
    print(f"{args.reps} repetitions x {args.requests} reads per target, interleaved; load {os.getloadavg()}")
    print("| target | CPU per read, µs (median) | reads/s (median) | CPU ratio to off (median of reps) |")
    print("|---|---|---|---|")
    for t in targets:
        cpu = statistics.median(c for c, _ in results[t.name])
        rate = statistics.median(r for _, r in results[t.name])
        ratio = statistics.median(c / o for (c, _), (o, _) in zip(results[t.name], results["off"]))
        print(f"| {t.name} | {cpu:.0f} | {rate:.0f} | {ratio:.2f} |")
    print("raw (µs per read, reads/s):", json.dumps({k: [[round(c), round(r)] for c, r in v] for k, v in results.items()}))


if __name__ == "__main__":
    main()
