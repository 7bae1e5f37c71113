"""Median time from spawn to the `initialize` answer of an MCP stdio server command.

    start_time.py RUNS LABEL COMMAND [ARG...]

Each run spawns the command (inheriting the environment: DATABASE_PATH, caches), writes one
`initialize` request, and stops the clock at the first line on stdout, which must be the answer.
Prints `start-time: LABEL median X ms (min Y, max Z, N runs)`. A figure, never a test verdict on
speed: scripts/test-release.sh records it (bench/README.md quotes it).
"""

import json
import statistics
import subprocess
import sys
import time

runs, label, command = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
request = json.dumps({
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "start-time", "version": "1"}},
}) + "\n"
samples = []
for _ in range(runs):
    started = time.perf_counter()
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    child.stdin.write(request.encode())
    child.stdin.flush()
    line = child.stdout.readline()
    samples.append((time.perf_counter() - started) * 1000)
    child.stdin.close()
    child.wait(timeout=30)
    answer = json.loads(line)
    assert answer.get("id") == 1 and "result" in answer, answer
print(f"start-time: {label} median {statistics.median(samples):.1f} ms "
      f"(min {min(samples):.1f}, max {max(samples):.1f}, {runs} runs)")
