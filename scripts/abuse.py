#!/usr/bin/env python3
"""Connection abuse run for mcp-cursos-backend (driven by scripts/abuse.sh; Python standard library only).

Starts the backend on 127.0.0.1 (free port, throwaway database, default connection settings) with its
soft open-files limit lowered to ABUSE_SOFT_NOFILE (1024, a common default: the backend raises it to
the hard limit at start). Then, for ABUSE_SECONDS, an attacker without a key holds ABUSE_IDLE idle
TCP connections (not a byte sent) and ABUSE_SLOWLORIS slowloris connections (a request head that
never ends, one byte a second), opening a new one whenever the server closes one, while a
well-behaved client calls GET /health and a 2026-07-28 resources/read of cursos://catalogo with its
key, one after the other, each with a 5 s timeout. Once a second it samples the backend's resident
memory (VmRSS) and the abuse connections open. Then the attacker goes away, and after
ABUSE_SETTLE_SECONDS the memory is sampled again and the backend is stopped with SIGTERM.

Fails (exit 1) when a well-behaved call failed or timed out, fewer than ABUSE_IDLE idle connections
were ever open at once, the backend died, logged an ERROR, or did not stop cleanly.
"""

import http.client
import json
import os
import resource
import secrets
import selectors
import socket
import subprocess
import sys
import tempfile
import threading
import time

import backend_process
from backend_process import rss_kib, setting


SECONDS = setting("ABUSE_SECONDS", 30)
IDLE = setting("ABUSE_IDLE", 1200)
SLOWLORIS = setting("ABUSE_SLOWLORIS", 100)
SOFT_NOFILE = setting("ABUSE_SOFT_NOFILE", 1024)
SETTLE_SECONDS = setting("ABUSE_SETTLE_SECONDS", 5)
BACKEND_BIN = os.environ["BACKEND_BIN"]
API_KEY = "abuse-" + secrets.token_hex(16)
CALL_TIMEOUT = 5


def open_files_limit(pid):
    with open(f"/proc/{pid}/limits") as limits:
        for line in limits:
            if line.startswith("Max open files"):
                return line.split()[3]
    return "?"


def start_backend(folder):
    environment = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOST": "127.0.0.1",  # loopback only
        "PORT": "0",
        "API_KEY": API_KEY,
        "DATABASE_PATH": os.path.join(folder, "abuse.db"),
        "RUST_LOG": "info,rmcp=warn",
    }
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    soft = min(SOFT_NOFILE, hard) if hard != resource.RLIM_INFINITY else SOFT_NOFILE

    def lower_soft_limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

    process, host, port, log, problems = backend_process.start(
        BACKEND_BIN, environment, "abuse",
        {"log_errors": lambda line: " ERROR " in line or "panicked" in line},
        preexec_fn=lower_soft_limit,
    )
    return process, host, port, log, problems, soft


class WellBehaved:
    """Calls /health and an MCP read, one after the other, and records every outcome."""

    def __init__(self, host, port):
        self.host, self.port = host, port
        self.calls = {"health": 0, "read": 0}
        self.failures = []
        self.slowest = 0.0
        self.stop = threading.Event()
        self.lock = threading.Lock()

    def call(self, kind):
        started = time.monotonic()
        connection = http.client.HTTPConnection(self.host, self.port, timeout=CALL_TIMEOUT)
        try:
            if kind == "health":
                connection.request("GET", "/health")
                response = connection.getresponse()
                ok = response.status == 200 and json.loads(response.read())["status"] == "ok"
            else:
                meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                        "io.modelcontextprotocol/clientInfo": {"name": "abuse", "version": "1"},
                        "io.modelcontextprotocol/clientCapabilities": {}}
                body = {"jsonrpc": "2.0", "id": 1, "method": "resources/read",
                        "params": {"uri": "cursos://catalogo", "_meta": meta}}
                connection.request("POST", "/mcp", body=json.dumps(body), headers={
                    "Authorization": f"Bearer {API_KEY}", "Content-Type": "application/json",
                    "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28",
                    "Mcp-Method": "resources/read", "Mcp-Name": "cursos://catalogo"})
                response = connection.getresponse()
                text = response.read().decode()
                ok = response.status == 200 and '"contents"' in text and "cursos://catalogo" in text
            outcome = None if ok else f"{kind}: unexpected answer {response.status}"
        except Exception as error:  # noqa: BLE001 - every failure is counted and reported
            outcome = f"{kind}: {error!r}"
        finally:
            connection.close()
        elapsed = time.monotonic() - started
        with self.lock:
            self.calls[kind] += 1
            self.slowest = max(self.slowest, elapsed)
            if outcome:
                self.failures.append(outcome)

    def run(self):
        while not self.stop.is_set():
            self.call("health")
            self.call("read")
            time.sleep(0.05)


class Attacker:
    """Holds `idle` idle and `slow` slowloris connections, reopening those the server closes."""

    def __init__(self, host, port, idle, slow):
        self.address = (host, port)
        self.selector = selectors.DefaultSelector()
        self.wanted = {"idle": idle, "slow": slow}
        self.open = {"idle": 0, "slow": 0}
        self.peak = {"idle": 0, "slow": 0}
        self.closed_by_server = {"idle": 0, "slow": 0}
        self.connect_errors = 0
        self.slow_lifetimes = []
        self.stop = threading.Event()

    def connect(self, kind):
        try:
            sock = socket.create_connection(self.address, timeout=5)
        except OSError:
            self.connect_errors += 1
            return
        sock.setblocking(False)
        if kind == "slow":
            sock.send(f"POST /mcp HTTP/1.1\r\nHost: {self.address[0]}\r\nX-Lento: ".encode())
        self.selector.register(sock, selectors.EVENT_READ, (kind, time.monotonic()))
        self.open[kind] += 1
        self.peak[kind] = max(self.peak[kind], self.open[kind])

    def forget(self, sock, kind):
        self.selector.unregister(sock)
        sock.close()
        self.open[kind] -= 1

    def run(self):
        next_trickle = time.monotonic()
        while not self.stop.is_set():
            for kind in ("idle", "slow"):
                while self.open[kind] < self.wanted[kind] and not self.stop.is_set():
                    self.connect(kind)
            for key, _ in self.selector.select(timeout=0.2):
                kind, opened = key.data
                try:
                    data = key.fileobj.recv(4096)
                except OSError:
                    data = b""
                if not data:
                    self.closed_by_server[kind] += 1
                    if kind == "slow":
                        self.slow_lifetimes.append(time.monotonic() - opened)
                    self.forget(key.fileobj, kind)
            if time.monotonic() >= next_trickle:
                next_trickle += 1
                for key in list(self.selector.get_map().values()):
                    if key.data[0] == "slow":
                        try:
                            key.fileobj.send(b"a")
                        except OSError:
                            pass
        for key in list(self.selector.get_map().values()):
            self.forget(key.fileobj, key.data[0])


def main():
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # the attacker needs its own descriptors
    folder = tempfile.mkdtemp(prefix="mcp-cursos-abuse-")
    process, host, port, log, log_problems, soft = start_backend(folder)
    pid = process.pid
    failed = []
    try:
        time.sleep(1)
        before_kib = rss_kib(pid)
        backend_limit = open_files_limit(pid)
        client = WellBehaved(host, port)
        attacker = Attacker(host, port, IDLE, SLOWLORIS)
        threads = [threading.Thread(target=client.run, daemon=True),
                   threading.Thread(target=attacker.run, daemon=True)]
        began = time.monotonic()
        for thread in threads:
            thread.start()
        samples = []
        while (elapsed := time.monotonic() - began) < SECONDS:
            time.sleep(1)
            if process.poll() is not None:
                failed.append(f"the backend died (status {process.returncode})")
                break
            samples.append((elapsed, rss_kib(pid), attacker.open["idle"], attacker.open["slow"]))
        attacker.stop.set()
        threads[1].join(timeout=30)
        during_peak_kib = max((rss for _, rss, _, _ in samples), default=before_kib)
        time.sleep(SETTLE_SECONDS)
        client.stop.set()
        threads[0].join(timeout=30)
        after_kib = rss_kib(pid) if process.poll() is None else 0
        lifetimes = sorted(attacker.slow_lifetimes)

        print(f"abuse: {SECONDS} s, backend {BACKEND_BIN}, default connection settings; started with a soft "
              f"open-files limit of {soft}, which the backend raised to {backend_limit}")
        print(f"  attacker (no key): {IDLE} idle + {SLOWLORIS} slowloris connections wanted; open at once: peak "
              f"{attacker.peak['idle']} idle, {attacker.peak['slow']} slowloris; closed by the server: "
              f"{attacker.closed_by_server['idle']} idle, {attacker.closed_by_server['slow']} slowloris; "
              f"connect errors: {attacker.connect_errors}")
        if lifetimes:
            print(f"  slowloris lifetime until closed by the server: min {lifetimes[0]:.1f} s, "
                  f"median {lifetimes[len(lifetimes) // 2]:.1f} s, max {lifetimes[-1]:.1f} s")
        print(f"  well-behaved client: {client.calls['health']} /health and {client.calls['read']} MCP reads, "
              f"{len(client.failures)} failed, slowest {client.slowest * 1000:.0f} ms")
        print(f"  RSS KiB: before {before_kib}, peak during {during_peak_kib}, "
              f"{SETTLE_SECONDS} s after the attacker left {after_kib}")
        print("  samples (s, RSS KiB, idle open, slowloris open): "
              + ", ".join(f"({t:.0f}, {rss}, {idle}, {slow})" for t, rss, idle, slow in samples[:: max(1, len(samples) // 10)]))

        if client.failures:
            failed.append(f"{len(client.failures)} well-behaved calls failed (first: {client.failures[0]})")
        if attacker.peak["idle"] < IDLE:
            failed.append(f"only {attacker.peak['idle']} idle connections were open at once")
        if log_problems["log_errors"]:
            failed.append(f"{log_problems['log_errors']} ERROR/panic lines in the backend log")
    finally:
        if process.poll() is None:
            status = backend_process.stop(process)
            if status != 0:
                failed.append(f"the backend stopped with status {status} on SIGTERM (None: killed after 30 s)")
        subprocess.run(["rm", "-rf", folder], check=False)
    if failed:
        print("abuse: FAILED: " + "; ".join(failed))
        print("  last backend log lines:\n" + "".join(list(log)[-20:]), file=sys.stderr)
        sys.exit(1)
    print("abuse: ok")


if __name__ == "__main__":
    main()
