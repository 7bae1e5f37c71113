#!/usr/bin/env python3
"""Counts one conformance-suite run against its expected-failures file.

Usage: conformance_count.py RESULTS_DIR EXPECTED_FAILURES_YML LABEL

RESULTS_DIR is the suite's `-o` directory (one `server-<scenario>-<timestamp>/checks.json` per
scenario). The rules are the suite's own baseline rules (0.1.16 and 0.2.0-alpha.12): a check whose
status is FAILURE or WARNING is failing; an entry `scenario` expects the scenario to have a failing
check; an entry `scenario:check-id` expects that check to fail (a listed check that is SUCCESS is
stale). Unlike the suite, this is applied to every scenario in the run, including the ones
`--requirements` runs but does not score, and an entry naming a scenario that did not run is an
error too: the expected-failures file must be exact.

Per scenario: passed (no failing check, nothing listed, or only skipped checks), expected (every
failing check is listed, nothing stale) or failed (an unlisted failing check, or a stale entry).
Prints a report and, last, a line `COUNTS <passed> <failed> <expected>`.
"""
import glob
import json
import os
import re
import sys

FAILING = {"FAILURE", "WARNING"}
RANK = {"FAILURE": 4, "WARNING": 3, "SUCCESS": 2, "SKIPPED": 1, "INFO": 0}


def read_baseline(path):
    """The `server:` list of a baseline file (a plain YAML list; comments allowed)."""
    entries, in_server = [], False
    with open(path, encoding="utf-8") as f:
        for raw in f:
            line = raw.split("#", 1)[0].rstrip()
            if not line.strip():
                continue
            if not line.startswith((" ", "-")):
                in_server = line.strip() == "server:"
                continue
            m = re.match(r"^\s*-\s*['\"]?([^'\"]+?)['\"]?\s*$", line)
            if in_server and m:
                entries.append(m.group(1))
    return entries


def read_results(results_dir):
    runs = {}
    for path in glob.glob(os.path.join(results_dir, "*", "checks.json")):
        name = os.path.basename(os.path.dirname(path))
        name = re.sub(r"-\d{4}-\d\d-\d\dT[\d-]+Z$", "", name)
        name = name[len("server-"):] if name.startswith("server-") else name
        with open(path, encoding="utf-8") as f:
            runs[name] = json.load(f)
    return runs


def main():
    results_dir, baseline_path, label = sys.argv[1:4]
    entries = read_baseline(baseline_path)
    whole = {e for e in entries if ":" not in e}
    per_check = {}
    for e in entries:
        if ":" in e:
            scenario, check = e.split(":", 1)
            per_check.setdefault(scenario, set()).add(check)
    runs = read_results(results_dir)

    passed, failed, expected, problems = [], [], [], []
    for name in sorted(set(whole) | set(per_check)):
        if name not in runs:
            problems.append(f"listed in {os.path.basename(baseline_path)} but not run: {name}")
            failed.append(name)
    for name, checks in sorted(runs.items()):
        worst = {}
        for c in checks:
            cid = c.get("id", "?")
            if RANK.get(c.get("status"), 0) >= RANK.get(worst.get(cid, {}).get("status"), -1):
                worst[cid] = c
        failing = {cid: c for cid, c in worst.items() if c.get("status") in FAILING}
        if name in whole:
            if failing:
                expected.append(name)
            else:
                failed.append(name)
                problems.append(f"stale (now passing, remove it from the baseline): {name}")
            continue
        listed = per_check.get(name, set())
        unexpected = [cid for cid in failing if cid not in listed]
        stale = [cid for cid in listed if worst.get(cid, {}).get("status") == "SUCCESS"]
        for cid in unexpected:
            msg = (failing[cid].get("errorMessage") or "").replace("\n", " ")[:300]
            problems.append(f"unexpected {failing[cid]['status']}: {name}:{cid}: {msg}")
        for cid in stale:
            problems.append(f"stale (now passing, remove it from the baseline): {name}:{cid}")
        if unexpected or stale:
            failed.append(name)
        elif failing:
            expected.append(name)
        else:
            passed.append(name)

    print(f"  {label}: {len(passed)} passed, {len(failed)} failed, {len(expected)} expected failures")
    for p in problems:
        print(f"    ✗ {p}")
    print(f"COUNTS {len(passed)} {len(failed)} {len(expected)}")


if __name__ == "__main__":
    main()
