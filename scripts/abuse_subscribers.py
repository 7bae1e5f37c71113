#!/usr/bin/env python3
"""Abuse run for live updates (driven by scripts/abuse_subscribers.sh; Python standard library only).

Starts the backend on 127.0.0.1 (free port, throwaway database, KEYS_FILE with one writing key,
one read-only key for the well-behaved client and ABUSE_KEYS read-only keys for the abusers) and:

- a well-behaved 2025-era session (GET stream read) and a well-behaved 2026-07-28 listen stream,
  both on cursos://catalogo, count the notices they receive;
- each abuser key opens a 2025-era session subscribed to ABUSE_SESSION_URIS catalog pages whose GET
  stream is never read, sends the report's 28,003-URI listen filter (with file:///etc/passwd and
  cursos://catalogoXYZ), opens ABUSE_STREAMS_PER_KEY listen streams of ABUSE_STREAM_URIS pages
  that are never read, and asks for one stream more (beyond the per-key caps: by default the key
  then holds 2000 URIs); every stuck socket has a 1 KiB receive buffer;
- the writer then makes ABUSE_WRITES courses, one at a time, and after each waits (at most
  ABUSE_NOTICE_DEADLINE seconds) until both well-behaved clients have heard of it;
- the abusers keep their sockets open ABUSE_HOLD_SECONDS more (past the 10 s send bound), then
  close them.

Prints the backend's resident memory (VmRSS) before, during (peak) and after the abuse (after the
abusers closed their sockets), /health and the slow-listener counter, and whether the
well-behaved clients got a notice for every write. Exits 1 when one did not, or when the backend
died or stopped uncleanly.
"""

import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

import backend_process
from backend_process import rss_kib, setting


KEYS = setting("ABUSE_KEYS", 4)
SESSION_URIS = setting("ABUSE_SESSION_URIS", 1000)
STREAM_URIS = setting("ABUSE_STREAM_URIS", 250)
STREAMS_PER_KEY = setting("ABUSE_STREAMS_PER_KEY", 4)
WRITES = setting("ABUSE_WRITES", 600)
NOTICE_DEADLINE = setting("ABUSE_NOTICE_DEADLINE", 5.0, float)
HOLD_SECONDS = setting("ABUSE_HOLD_SECONDS", 12)
BACKEND_BIN = os.environ["BACKEND_BIN"]
MODERN = "2026-07-28"
LEGACY = "2025-11-25"


def create_key(keys_file, name, scope):
    output = subprocess.run(
        [BACKEND_BIN, "keys", "create", "--name", name, "--scope", scope],
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "KEYS_FILE": keys_file},
        capture_output=True, text=True, check=True,
    )
    return output.stdout.strip()


def start_backend(folder, keys_file):
    environment = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOST": "127.0.0.1",  # loopback only
        "PORT": "0",
        "KEYS_FILE": keys_file,
        "DATABASE_PATH": os.path.join(folder, "abuse.db"),
        "SESSION_MODE": "stateful",
        "METRICS": "true",
        "RUST_LOG": "info,rmcp=error",
    }
    process, host, port, log, warnings = backend_process.start(
        BACKEND_BIN, environment, "abuse", {"slow": lambda line: "stopped reading" in line or "fell behind" in line}
    )
    return process, host, port, log, warnings


def meta():
    return {"io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientInfo": {"name": "abuse", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {}}


def listen_body(uris, list_changed=False):
    notifications = {"resourceSubscriptions": uris}
    if list_changed:
        notifications["resourcesListChanged"] = True
    return {"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen",
            "params": {"notifications": notifications, "_meta": meta()}}


def pages(first, count):
    return [f"cursos://catalogo?pagina={page}" for page in range(first, first + count)]


class Http:
    """One keep-alive connection with one key."""

    def __init__(self, host, port, key):
        self.host, self.port, self.key = host, port, key
        self.connection = http.client.HTTPConnection(host, port, timeout=30)

    def post(self, body, session=None, version=LEGACY, method=None):
        headers = {"Authorization": f"Bearer {self.key}", "Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": version}
        if session:
            headers["Mcp-Session-Id"] = session
        if method:
            headers["Mcp-Method"] = method
        self.connection.request("POST", "/mcp", body=json.dumps(body), headers=headers)
        response = self.connection.getresponse()
        return response, response.read().decode()

    def session(self, uris):
        initialize = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "abuse", "version": "1"}}}
        response, text = self.post(initialize)
        session = response.getheader("Mcp-Session-Id")
        if response.status != 200 or not session:
            raise RuntimeError(f"initialize: {response.status} {text[:200]}")
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
        self.refused = None
        for number, uri in enumerate(uris, start=1):
            body = {"jsonrpc": "2.0", "id": number, "method": "resources/subscribe", "params": {"uri": uri}}
            response, text = self.post(body, session)
            if '"result"' not in text:
                self.refused = text  # a cap: the session keeps what it got
                break
        return session


def raw_request(host, port, key, method, headers, body=b""):
    """Sends one request on a socket with a 1 KiB receive buffer, reads the status line and headers,
    and returns the socket: the caller never reads it again."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
    sock.settimeout(30)
    sock.connect((host, port))
    lines = [f"{method} /mcp HTTP/1.1", f"Host: {host}:{port}", f"Authorization: Bearer {key}",
             f"Content-Length: {len(body)}"] + [f"{name}: {value}" for name, value in headers.items()]
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        byte = sock.recv(1)
        if not byte:
            raise RuntimeError(f"closed before the headers: {head!r}")
        head += byte
    return sock, head.decode(errors="replace")


def stuck_listen(host, port, key, body):
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": MODERN, "Mcp-Method": "subscriptions/listen"}
    return raw_request(host, port, key, "POST", headers, json.dumps(body).encode())


def read_refusal(host, port, key, body):
    """The listen request's JSON-RPC error, if it was refused (read to the end)."""
    connection = http.client.HTTPConnection(host, port, timeout=30)
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json",
               "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": MODERN,
               "Mcp-Method": "subscriptions/listen"}
    connection.request("POST", "/mcp", body=json.dumps(body), headers=headers)
    response = connection.getresponse()
    errors = []
    while True:
        line = response.fp.readline()
        if not line:
            break
        text = line.decode(errors="replace").strip()
        payload = text[5:].strip() if text.startswith("data:") else text
        if payload.startswith("{"):
            message = json.loads(payload)
            if "error" in message:
                errors.append(message["error"]["message"])
                break
            if "result" in message:
                break
    connection.close()
    return errors[0] if errors else None


class Counter:
    def __init__(self):
        self.count = 0
        self.condition = threading.Condition()

    def add(self):
        with self.condition:
            self.count += 1
            self.condition.notify_all()

    def wait_above(self, seen, deadline):
        with self.condition:
            return self.condition.wait_for(lambda: self.count > seen, timeout=deadline)


def follow(response, counter):
    """Counts `updated cursos://catalogo` notices on an SSE response."""
    for line in response.fp:
        text = line.decode(errors="replace")
        if text.startswith("data:") and "notifications/resources/updated" in text and '"cursos://catalogo"' in text:
            counter.add()


def metric(host, port, name):
    connection = http.client.HTTPConnection(host, port, timeout=10)
    try:
        connection.request("GET", "/metrics")
        for line in connection.getresponse().read().decode().splitlines():
            if line.startswith(name + " "):
                return int(float(line.split()[1]))
    finally:
        connection.close()
    return None


def health(host, port):
    connection = http.client.HTTPConnection(host, port, timeout=10)
    try:
        connection.request("GET", "/health")
        return json.loads(connection.getresponse().read())
    finally:
        connection.close()


def main():
    folder = tempfile.mkdtemp(prefix="mcp-cursos-abuse-")
    keys_file = os.path.join(folder, "keys")
    writer_key = create_key(keys_file, "escritor", "escrita")
    good_key = create_key(keys_file, "leitor-bom", "leitura")
    abuser_keys = [create_key(keys_file, f"abusador-{number}", "leitura") for number in range(KEYS)]
    process, host, port, log, warnings = start_backend(folder, keys_file)
    pid = process.pid
    failed = []
    stuck = []
    try:
        before_kib = rss_kib(pid)

        # The well-behaved clients.
        good = Http(host, port, good_key)
        session = good.session(["cursos://catalogo"])
        legacy_notices, stream_notices = Counter(), Counter()
        get = http.client.HTTPConnection(host, port, timeout=None)
        get.request("GET", "/mcp", headers={"Authorization": f"Bearer {good_key}", "Accept": "text/event-stream",
                                            "Mcp-Session-Id": session, "MCP-Protocol-Version": LEGACY})
        threading.Thread(target=follow, args=(get.getresponse(), legacy_notices), daemon=True).start()
        listen = http.client.HTTPConnection(host, port, timeout=None)
        listen.request("POST", "/mcp", body=json.dumps(listen_body(["cursos://catalogo"])), headers={
            "Authorization": f"Bearer {good_key}", "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": MODERN,
            "Mcp-Method": "subscriptions/listen"})
        threading.Thread(target=follow, args=(listen.getresponse(), stream_notices), daemon=True).start()

        # The abusers.
        huge = pages(1, 28_001) + ["file:///etc/passwd", "cursos://catalogoXYZ"]
        refusals = {}
        started = time.monotonic()
        for key in abuser_keys:
            abuser = Http(host, port, key)
            abuser_session = abuser.session(pages(1, SESSION_URIS))
            if abuser.refused:
                refusals.setdefault("resources/subscribe beyond the caps", []).append(abuser.refused[:160])
            sock, head = raw_request(host, port, key, "GET", {
                "Accept": "text/event-stream", "Mcp-Session-Id": abuser_session, "MCP-Protocol-Version": LEGACY})
            stuck.append(sock)
            refusal = read_refusal(host, port, key, listen_body(huge, list_changed=True))
            refusals.setdefault("28,003-URI filter", []).append(refusal)
            first = SESSION_URIS + 1
            for _ in range(STREAMS_PER_KEY):
                sock, head = stuck_listen(host, port, key, listen_body(pages(first, STREAM_URIS), list_changed=True))
                first += STREAM_URIS
                stuck.append(sock)
            refusal = read_refusal(host, port, key, listen_body(pages(first, STREAM_URIS)))
            refusals.setdefault("one stream more", []).append(refusal)
        setup_seconds = time.monotonic() - started
        opened = health(host, port)

        # The writes, each waited for by both well-behaved clients.
        writer = Http(host, port, writer_key)
        writer_session = writer.session([])
        missed, slowest, peak_kib = 0, 0.0, rss_kib(pid)
        for number in range(WRITES):
            seen = (legacy_notices.count, stream_notices.count)
            call = {"jsonrpc": "2.0", "id": number + 1, "method": "tools/call", "params": {
                "name": "criar_curso", "arguments": {"titulo": f"Abuso {number}", "cargaHoraria": 4}}}
            began = time.monotonic()
            response, text = writer.post(call, writer_session)
            if '"isError":false' not in text.replace(" ", ""):
                failed.append(f"write {number}: {text[:200]}")
                break
            heard = [counter.wait_above(count, NOTICE_DEADLINE)
                     for counter, count in ((legacy_notices, seen[0]), (stream_notices, seen[1]))]
            slowest = max(slowest, time.monotonic() - began)
            missed += heard.count(False)
            if number % 25 == 0:
                peak_kib = max(peak_kib, rss_kib(pid))
        peak_kib = max(peak_kib, rss_kib(pid))
        during = health(host, port)
        dropped = metric(host, port, "mcp_cursos_slow_listeners_dropped_total")
        time.sleep(HOLD_SECONDS)
        peak_kib = max(peak_kib, rss_kib(pid))
        held = health(host, port)
        dropped_later = metric(host, port, "mcp_cursos_slow_listeners_dropped_total")

        for sock in stuck:
            sock.close()
        stuck.clear()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            settled = health(host, port)
            if settled["subscriptions"]["listenStreams"] <= 1 and settled["sessions"] <= 2:
                break
            time.sleep(0.2)
        time.sleep(1)
        after_kib = rss_kib(pid)
        after = health(host, port)

        print(f"abusers: {KEYS} read-only keys; each a session of {SESSION_URIS} pages with a GET never read, "
              f"listen streams of {STREAM_URIS} pages never read, and the report's 28,003-URI filter "
              f"(set up in {setup_seconds:.1f} s)")
        for what, messages in refusals.items():
            print(f"  refused, {what}: {len(messages)}x, e.g. {messages[0]!r}")
        print(f"open while abusing: {json.dumps(opened)}")
        print(f"writes: {WRITES}; well-behaved 2025 session heard {legacy_notices.count}, 2026 stream heard "
              f"{stream_notices.count}; writes not heard within {NOTICE_DEADLINE:g} s: {missed}; "
              f"slowest write-to-notice {slowest * 1000:.0f} ms")
        print(f"after the writes: {json.dumps(during)}; slow listeners dropped: {dropped}")
        print(f"{HOLD_SECONDS} s later, sockets still open: {json.dumps(held)}; slow listeners dropped: "
              f"{dropped_later}; drop warnings in the log: {warnings['slow']}")
        print(f"after the abusers left: {json.dumps(after)}")
        print(f"RSS: before {before_kib / 1024:.1f} MB, peak during {peak_kib / 1024:.1f} MB, "
              f"after {after_kib / 1024:.1f} MB")
        if missed:
            failed.append(f"{missed} writes not heard in time by a well-behaved client")
    finally:
        for sock in stuck:
            sock.close()
        if process.poll() is None:
            status = backend_process.stop(process)
            if status is None:
                failed.append("the backend did not stop within 30 s of SIGTERM")
            elif status != 0:
                failed.append(f"the backend exited with {status}")
        else:
            failed.append(f"the backend died (status {process.returncode})")
    if failed:
        print("FAILED: " + "; ".join(failed))
        print("".join(list(log)[-20:]))
        sys.exit(1)
    print("OK: every write reached both well-behaved clients in time")


if __name__ == "__main__":
    main()
