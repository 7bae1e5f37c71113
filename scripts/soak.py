#!/usr/bin/env python3
"""Soak run for mcp-cursos-backend (driven by scripts/soak.sh; Python standard library only).

Starts the backend on 127.0.0.1 (free port, throwaway database, short SESSION_IDLE_TIMEOUT) and,
for SOAK_SECONDS, has SOAK_WORKERS threads open MCP sessions (initialize, notifications/initialized,
a read of cursos://catalogo) and abandon them: never a DELETE, the client just goes away. They
open SOAK_RATE sessions a second in all (paced, so the number of sessions open at once settles at
about SOAK_RATE x SOAK_IDLE_TIMEOUT during the warm-up: an idle session holds memory until it is
reclaimed, and the allocator keeps its high-water mark, so only a steady load makes later growth
mean a leak). Once a
second it samples the backend's resident memory (VmRSS in /proc/<pid>/status) and /health's open
session count. Then it stops opening sessions and polls /health until every idle session was
reclaimed.

Fails (exit 1) when: the resident memory after reclaiming exceeds the memory at the end of the
warm-up by more than SOAK_RSS_BOUND_MB, or the memory under load grew by more than that between the
end of the warm-up and the end of the run, or the idle sessions are not all reclaimed within
SOAK_IDLE_TIMEOUT + 60 s, or any session failed, or the backend died or stopped uncleanly.
"""

import http.client
import json
import os
import secrets
import subprocess
import sys
import tempfile
import threading
import time

import backend_process
from backend_process import rss_kib, setting


SECONDS = setting("SOAK_SECONDS", 120)
IDLE_TIMEOUT = setting("SOAK_IDLE_TIMEOUT", 2)
WARMUP_SECONDS = setting("SOAK_WARMUP_SECONDS", max(5, min(30, SECONDS // 4)))
WORKERS = setting("SOAK_WORKERS", 4)
RATE = setting("SOAK_RATE", 200)
RSS_BOUND_MB = setting("SOAK_RSS_BOUND_MB", 16)
BACKEND_BIN = os.environ["BACKEND_BIN"]
API_KEY = "soak-" + secrets.token_hex(16)


def start_backend(folder):
    environment = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOST": "127.0.0.1",  # loopback only
        "PORT": "0",
        "API_KEY": API_KEY,
        "DATABASE_PATH": os.path.join(folder, "soak.db"),
        "SESSION_MODE": "stateful",
        "SESSION_IDLE_TIMEOUT": str(IDLE_TIMEOUT),
        # One key opens every session: the per-key cap (ADR 0023) is raised so that memory per
        # session is what this measures.
        "MAX_SESSIONS_PER_KEY": "100000",
        "RUST_LOG": "info,rmcp=warn",
    }
    process, host, port, log, problems = backend_process.start(
        BACKEND_BIN, environment, "soak", {"log_errors": lambda line: " ERROR " in line or "panicked" in line}
    )
    return process, host, port, log, problems


class Soak:
    def __init__(self, host, port):
        self.host, self.port = host, port
        self.lock = threading.Lock()
        self.opened = 0
        self.failures = 0
        self.first_failure = None
        self.stop = threading.Event()

    def post(self, connection, body, session=None):
        headers = {
            "Authorization": f"Bearer {API_KEY}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-11-25",
        }
        if session:
            headers["Mcp-Session-Id"] = session
        connection.request("POST", "/mcp", body=json.dumps(body), headers=headers)
        response = connection.getresponse()
        return response, response.read().decode()

    def open_and_abandon(self, connection):
        initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "soak", "version": "1"}}}
        response, text = self.post(connection, initialize)
        session = response.getheader("Mcp-Session-Id")
        if response.status != 200 or not session or "serverInfo" not in text:
            raise RuntimeError(f"initialize: {response.status} {text[:200]}")
        response, text = self.post(connection, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
        if response.status != 202:
            raise RuntimeError(f"initialized: {response.status} {text[:200]}")
        read = {"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": {"uri": "cursos://catalogo"}}
        response, text = self.post(connection, read, session)
        if response.status != 200 or "cursos://catalogo" not in text:
            raise RuntimeError(f"read: {response.status} {text[:200]}")
        # Abandoned: no DELETE.

    def worker(self):
        connection = http.client.HTTPConnection(self.host, self.port, timeout=30)
        interval = WORKERS / RATE
        next_start = time.monotonic()
        while not self.stop.is_set():
            next_start += interval
            delay = next_start - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            else:
                next_start = time.monotonic()  # behind schedule: do not burst to catch up
            try:
                self.open_and_abandon(connection)
                with self.lock:
                    self.opened += 1
            except Exception as error:  # noqa: BLE001 - every failure is counted and reported
                with self.lock:
                    self.failures += 1
                    self.first_failure = self.first_failure or repr(error)
                connection.close()
                connection = http.client.HTTPConnection(self.host, self.port, timeout=30)
        connection.close()


def health(host, port):
    connection = http.client.HTTPConnection(host, port, timeout=10)
    try:
        connection.request("GET", "/health")
        return json.loads(connection.getresponse().read())
    finally:
        connection.close()


def slope_kib_per_minute(samples):
    """Least-squares slope of RSS over time."""
    if len(samples) < 2:
        return 0.0
    times = [sample[0] for sample in samples]
    values = [sample[1] for sample in samples]
    mean_t, mean_v = sum(times) / len(times), sum(values) / len(values)
    variance = sum((t - mean_t) ** 2 for t in times)
    covariance = sum((t - mean_t) * (v - mean_v) for t, v in zip(times, values))
    return 60 * covariance / variance if variance else 0.0


def main():
    folder = tempfile.mkdtemp(prefix="mcp-cursos-soak-")
    process, host, port, log, log_problems = start_backend(folder)
    pid = process.pid
    failed = []
    try:
        start_kib = rss_kib(pid)
        soak = Soak(host, port)
        threads = [threading.Thread(target=soak.worker, daemon=True) for _ in range(WORKERS)]
        began = time.monotonic()
        for thread in threads:
            thread.start()
        samples = []  # (seconds, rss KiB, open sessions, sessions opened so far)
        warm_kib = None
        peak_kib, peak_sessions = start_kib, 0
        while (elapsed := time.monotonic() - began) < SECONDS:
            time.sleep(1)
            if process.poll() is not None:
                failed.append(f"the backend died (status {process.returncode})")
                break
            rss, open_sessions = rss_kib(pid), health(host, port)["sessions"]
            with soak.lock:
                opened = soak.opened
            samples.append((elapsed, rss, open_sessions, opened))
            peak_kib, peak_sessions = max(peak_kib, rss), max(peak_sessions, open_sessions)
            if warm_kib is None and elapsed >= WARMUP_SECONDS:
                warm_kib = rss
        soak.stop.set()
        for thread in threads:
            thread.join(timeout=60)
        loaded_end_kib = samples[-1][1] if samples else start_kib
        warm_kib = warm_kib if warm_kib is not None else loaded_end_kib
        reclaim_started = time.monotonic()
        reclaimed_after = None
        while time.monotonic() - reclaim_started < IDLE_TIMEOUT + 60:
            state = health(host, port)
            if state["sessions"] == 0 and state["subscriptions"]["sessions"] == 0:
                reclaimed_after = time.monotonic() - reclaim_started
                break
            time.sleep(0.1)
        end_kib = rss_kib(pid)
        after_warmup = [(t, rss) for t, rss, _, _ in samples if t >= WARMUP_SECONDS]
        bound_kib = RSS_BOUND_MB * 1024

        print(f"soak: {SECONDS} s ({WARMUP_SECONDS} s warm-up), {WORKERS} workers, target {RATE} sessions/s, "
              f"SESSION_IDLE_TIMEOUT={IDLE_TIMEOUT} s, backend {BACKEND_BIN}")
        print(f"  sessions opened and abandoned: {soak.opened} ({soak.opened / max(SECONDS, 1):.0f}/s), "
              f"failures: {soak.failures}" + (f" (first: {soak.first_failure})" if soak.first_failure else ""))
        print(f"  open sessions: peak {peak_sessions}; all reclaimed "
              + (f"{reclaimed_after:.1f} s after the last was opened" if reclaimed_after is not None else "NEVER"))
        print(f"  RSS KiB: start {start_kib}, after warm-up {warm_kib}, peak {peak_kib}, "
              f"end of load {loaded_end_kib}, after reclaim {end_kib}")
        if peak_sessions:
            print(f"  memory per open session at the peak: about {(peak_kib - start_kib) / peak_sessions:.0f} KiB")
        print(f"  RSS trend after warm-up: {slope_kib_per_minute(after_warmup):+.0f} KiB/min; "
              f"bound: +{RSS_BOUND_MB} MiB over the after-warm-up figure")
        print("  samples (s, RSS KiB, open sessions, opened so far): "
              + ", ".join(f"({t:.0f}, {rss}, {open_}, {opened})" for t, rss, open_, opened in samples[:: max(1, len(samples) // 12)]))

        if soak.failures:
            failed.append(f"{soak.failures} sessions failed")
        if soak.opened == 0:
            failed.append("no session was opened")
        if reclaimed_after is None:
            failed.append("idle sessions were not all reclaimed")
        if end_kib > warm_kib + bound_kib:
            failed.append(f"RSS after reclaim {end_kib} KiB > {warm_kib} + {bound_kib} KiB")
        if loaded_end_kib > warm_kib + bound_kib:
            failed.append(f"RSS under load grew from {warm_kib} to {loaded_end_kib} KiB")
        if log_problems["log_errors"]:
            failed.append(f"{log_problems['log_errors']} ERROR/panic lines in the backend log")
    finally:
        if process.poll() is None:
            status = backend_process.stop(process)
            if status != 0:
                failed.append(f"the backend stopped with status {status} on SIGTERM (None: killed after 30 s)")
        subprocess.run(["rm", "-rf", folder], check=False)
    if failed:
        print("soak: FAILED: " + "; ".join(failed))
        print("  last backend log lines:\n" + "".join(list(log)[-20:]), file=sys.stderr)
        sys.exit(1)
    print("soak: ok")


if __name__ == "__main__":
    main()
