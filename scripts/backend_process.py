"""What the scripts that measure the real mcp-cursos backend share (soak.py, abuse.py,
abuse_subscribers.py): settings from the environment, starting and stopping the backend,
reading its memory. Loopback only, Python standard library only."""

import os
import signal
import subprocess
import sys
import threading
import time
from collections import deque


def start(binary, environment, name, counters=None, preexec_fn=None):
    """Spawns `binary` with exactly `environment` and waits (60 s at most) for its `listening ...
    url=` log line; `name` prefixes the message when it exits or does not listen. Then a thread
    keeps reading its stderr: the last 200 lines stay in `log`, and `counts[key]` counts the lines
    for which `counters[key](line)` is true. Returns (process, host, port, log, counts)."""
    counters = counters or {}
    process = subprocess.Popen(
        [binary], env=environment, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True, preexec_fn=preexec_fn,
    )
    log = deque(maxlen=200)
    deadline = time.monotonic() + 60
    url = None
    while url is None:
        line = process.stderr.readline()
        if not line:
            sys.exit(f"{name}: the backend exited before listening:\n" + "".join(log))
        log.append(line)
        if "listening" in line:
            url = next((word[4:] for word in line.split() if word.startswith("url=")), None)
        if time.monotonic() > deadline:
            sys.exit(f"{name}: the backend did not listen within 60 s")
    counts = {key: 0 for key in counters}

    def drain():
        for line in process.stderr:
            log.append(line)
            for key, matches in counters.items():
                if matches(line):
                    counts[key] += 1

    threading.Thread(target=drain, daemon=True).start()
    host, port = url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)
    return process, host, int(port), log, counts


def setting(name, default, kind=int):
    """The environment variable `name` as `kind`, or `default` when unset or empty."""
    value = os.environ.get(name)
    return kind(value) if value not in (None, "") else default


def rss_kib(pid):
    """The resident memory of process `pid`, in KiB."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def stop(process, timeout=30):
    """Sends SIGTERM to a running backend and returns its exit status, or None when it had to be
    killed after `timeout` seconds."""
    process.send_signal(signal.SIGTERM)
    try:
        return process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        return None
