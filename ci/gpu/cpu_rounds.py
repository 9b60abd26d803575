#!/usr/bin/env python3
"""AVX-512 against the host's copy stream and oneDNN, over several rounds (ci/gpu/run-h200.sh
cpu-rounds). Each round directory holds the bench results files (docs/bench-json.md) of that
round, all timed against the ceilings measured at the start of the round.

Why rounds: the GPU machine's CPU is a shared 16-vCPU VM; its copy stream and the kernels' times
drift by 10-25% within minutes (docs/perf.md, sessions 3-6), so one pass mixes quiet and busy
minutes. Per round, each case's bandwidth is divided by that round's copy probe; the table gives
the median over rounds and the range, and AVX-512's time over oneDNN's per round (median).
AVX-512 variants (e.g. avx512/rcp) follow in a second table: their % of copy and their time over
the default's in the same round, the figure that decides a promotion.

Usage: cpu_rounds.py ROUND_DIR... > summary.md
"""
import glob
import json
import os
import statistics
import sys
from collections import defaultdict


def round_results(directory):
    """(copy bytes/s, {(backend, op, dtype, shape, params): result}) of one round."""
    copy, results = 0.0, {}
    for path in sorted(glob.glob(os.path.join(directory, "*.json"))):
        with open(path) as f:
            j = json.load(f)
        if j.get("kind") != "bench":
            continue
        cpu = j.get("devices", {}).get("cpu:0", {})  # the host's probe, not another device's
        copy = cpu.get("ceilings", {}).get("measured", {}).get("dram_copy_bytes_per_s", {}).get("value", copy)
        for r in j["results"]:
            if r["status"] == "ok":
                backend = r["backend"] + ("/" + r["variant"] if r["variant"] else "")
                results[(backend, r["op"], r["dtype"], r["shape"], r["params"])] = r
    return copy, results


def main():
    rounds = [round_results(d) for d in sys.argv[1:]]
    rounds = [(c, r) for c, r in rounds if c > 0 and r]
    if not rounds:
        sys.exit("cpu_rounds.py: no round with a copy probe and results")
    print(f"Rounds: {len(rounds)}; copy probe per round: "
          + ", ".join(f"{c / 1e9:.0f} GB/s" for c, _ in rounds) + "\n")
    pct = defaultdict(list)    # (op, dtype, shape, params) -> avx512 % of copy per round
    ratio = defaultdict(list)  # same key -> avx512 time / onednn time per round
    for copy, results in rounds:
        for (backend, *key), r in results.items():
            key = tuple(key)
            if backend != "avx512":
                continue
            pct[key].append(100 * r["bytes_per_s"] / copy)
            peer = results.get(("onednn", *key))
            if peer:
                ratio[key].append(r["median_s"] / peer["median_s"])
    print("| op | dtype | params | avx512 % of copy, median (min-max) | >= 80 | avx512 / oneDNN time, median (max) |")
    print("|---|---|---|---|---|---|")
    met = defaultdict(lambda: [0, 0])
    for key in sorted(pct):
        op, dtype, shape, params = key
        p = pct[key]
        m = statistics.median(p)
        met[dtype][0] += m >= 80
        met[dtype][1] += 1
        rr = ratio.get(key)
        peer = f"{statistics.median(rr):.2f} ({max(rr):.2f})" if rr else "-"
        print(f"| {op} | {dtype} | {params or '-'} | {m:.1f} ({min(p):.1f}-{max(p):.1f}) | "
              f"{'yes' if m >= 80 else 'no'} | {peer} |")
    print("\nMedian at or above 80% of copy: " + "; ".join(f"{d} {a} of {b}" for d, (a, b) in sorted(met.items())))

    variant_pct = defaultdict(list)    # (variant, op, dtype, shape, params) -> % of copy per round
    variant_ratio = defaultdict(list)  # same key -> variant time / default time per round
    for copy, results in rounds:
        for (backend, *key), r in results.items():
            if not backend.startswith("avx512/"):
                continue
            variant_pct[(backend, *key)].append(100 * r["bytes_per_s"] / copy)
            default = results.get(("avx512", *key))
            if default:
                variant_ratio[(backend, *key)].append(r["median_s"] / default["median_s"])
    if variant_pct:
        print("\n| variant | op | dtype | params | % of copy, median (min-max) | time / default's, median (min-max) |")
        print("|---|---|---|---|---|---|")
        for key in sorted(variant_pct):
            variant, op, dtype, shape, params = key
            p, rr = variant_pct[key], variant_ratio.get(key)
            against = f"{statistics.median(rr):.2f} ({min(rr):.2f}-{max(rr):.2f})" if rr else "-"
            print(f"| {variant} | {op} | {dtype} | {params or '-'} | {statistics.median(p):.1f} "
                  f"({min(p):.1f}-{max(p):.1f}) | {against} |")


if __name__ == "__main__":
    main()
