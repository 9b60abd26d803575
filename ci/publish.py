#!/usr/bin/env python3
"""Merge the bench results files of one machine into one published results file.

Keeps the schema (docs/bench-json.md): our `results` (every repetition's time included),
the `devices` with their ceilings, Google Benchmark's `context` (from the first file) and its
`benchmarks` aggregates (mean, median, stddev, cv per case: what compare.py reads); the
per-repetition entries are dropped because `results[].repetition_times_s` holds the same
numbers. Each input's fingerprint is kept under `fingerprints`, `fingerprint` is the first.
A case present in several files keeps the later one, as `dnnblocks report` does.

Usage: publish.py OUT.json BENCH.json...
"""
import json
import sys


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: publish.py OUT.json BENCH.json...")
    merged = {"schema_version": 1, "kind": "bench", "context": None, "benchmarks": [], "fingerprint": None,
              "fingerprints": [], "devices": {}, "results": []}
    index = {}
    for path in sys.argv[2:]:
        with open(path) as f:
            j = json.load(f)
        if j.get("schema_version") != 1 or j.get("kind") != "bench":
            sys.exit(f"publish.py: {path}: not a bench results file of schema version 1")
        merged["context"] = merged["context"] or j.get("context", {})
        merged["fingerprint"] = merged["fingerprint"] or j.get("fingerprint")
        merged["fingerprints"].append({"file": path.rsplit("/", 1)[-1], **j.get("fingerprint", {})})
        merged["benchmarks"] += [b for b in j.get("benchmarks", []) if b.get("run_type") == "aggregate"]
        merged["devices"].update(j.get("devices", {}))
        for r in j["results"]:
            if r["case_id"] in index:
                merged["results"][index[r["case_id"]]] = r
            else:
                index[r["case_id"]] = len(merged["results"])
                merged["results"].append(r)
    with open(sys.argv[1], "w") as f:
        json.dump(merged, f, separators=(",", ":"))
        f.write("\n")
    print(f"publish.py: {len(merged['results'])} results from {len(sys.argv) - 2} files -> {sys.argv[1]}")


if __name__ == "__main__":
    main()
