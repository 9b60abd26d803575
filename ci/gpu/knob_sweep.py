#!/usr/bin/env python3
"""Summary of run-h200.sh's `knob` step: one environment switch (e.g. DNNB_AVX512_ELTWISE_AHEAD)
timed at several values, round by round. Each round directory holds ceilings.json and one
folder per value with the bench results files (docs/bench-json.md) of every op and dtype.

Per case (op, dtype, params) and value: the % of the round's copy probe, and the time over the
first value's (the baseline) in the same round, as the median and range over rounds. A value
is worth making the default only where its ratio stays under 1 in every round: the host is a
shared VM whose bandwidth drifts 10-25% within minutes (docs/perf.md), and values within a
round are interleaved per op, so the ratio is the figure that drift moves least.

Usage: knob_sweep.py KNOB_NAME ROUND_DIR... > summary.md
"""
import glob
import json
import os
import statistics
import sys
from collections import defaultdict


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        print(f"knob_sweep.py: skipping {path}: {e}", file=sys.stderr)
        return None


def round_results(directory):
    """(copy bytes/s, values in directory order, {(value, op, dtype, params): result})."""
    ceilings = load(os.path.join(directory, "ceilings.json")) or {}
    copy = 0.0
    for dev in ceilings.get("devices", {}).values() if isinstance(ceilings.get("devices"), dict) else []:
        copy = dev.get("measured", {}).get("dram_copy_bytes_per_s", {}).get("value", copy)
    results, values = {}, []
    for value_dir in sorted(d for d in glob.glob(os.path.join(directory, "*")) if os.path.isdir(d)):
        value = os.path.basename(value_dir)
        values.append(value)
        for path in sorted(glob.glob(os.path.join(value_dir, "*.json"))):
            j = load(path)
            if not j or j.get("kind") != "bench":
                continue
            for dev in j.get("devices", {}).values():
                copy = dev.get("ceilings", {}).get("measured", {}).get("dram_copy_bytes_per_s", {}).get("value", copy)
            for r in j.get("results", []):
                if r.get("status") == "ok" and not r.get("variant"):
                    results[(value, r["op"], r["dtype"], r["params"])] = r
    return copy, values, results


def span(xs, fmt):
    return f"{fmt.format(statistics.median(xs))} ({fmt.format(min(xs))}-{fmt.format(max(xs))})"


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    knob, dirs = sys.argv[1], sys.argv[2:]
    order = os.environ.get("KNOB_VALUES", "").split()
    pct, ratio = defaultdict(list), defaultdict(list)
    probes = []
    for directory in dirs:
        copy, values, results = round_results(directory)
        if copy <= 0 or not results:
            print(f"knob_sweep.py: {directory}: no copy probe or no results", file=sys.stderr)
            continue
        probes.append(copy)
        base = order[0] if order else values[0]
        for (value, *case), r in results.items():
            case = tuple(case)
            pct[(case, value)].append(100 * r["bytes_per_s"] / copy)
            b = results.get((base, *case))
            if b:
                ratio[(case, value)].append(r["median_s"] / b["median_s"])
    if not probes:
        sys.exit("knob_sweep.py: no round with a copy probe and results")
    values = order or sorted({v for _, v in pct})
    print(f"{knob}: rounds {len(probes)}; copy probe per round: " + ", ".join(f"{c / 1e9:.0f} GB/s" for c in probes))
    print(f"\n| op | dtype | params | {knob} | % of copy, median (min-max) | time / {values[0]}'s, median (min-max) | faster every round |")
    print("|---|---|---|---|---|---|---|")
    for case in sorted({c for c, _ in pct}):
        for v in values:
            if (case, v) not in pct:
                continue
            rs = ratio.get((case, v), [])
            faster = "-" if v == values[0] or not rs else ("yes" if max(rs) < 1 else "no")
            print(f"| {case[0]} | {case[1]} | {case[2] or '-'} | {v} | {span(pct[(case, v)], '{:.1f}')} | "
                  f"{span(rs, '{:.3f}') if rs else '-'} | {faster} |")


if __name__ == "__main__":
    main()
