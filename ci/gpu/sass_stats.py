#!/usr/bin/env python3
"""Sums Nsight Compute's per-instruction page (`ncu -i R --page source --csv --print-source sass`,
the NCU_SOURCE=1 output of ci/gpu/run-h200.sh's ncu step): warp instructions executed, per
element of the case, the stall reasons' shares and the opcode mix.

    python3 ci/gpu/sass_stats.py [--elements N] FILE-sass.csv...

--elements: the case's element count (default 16384 * 8192, the bench shape)."""
import argparse
import collections
import csv
import sys


def summarise(path, elements):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    header = next((i for i, r in enumerate(rows) if "Source" in r and "Instructions Executed" in r), None)
    if header is None:
        raise ValueError(f"{path}: no 'Source' / 'Instructions Executed' header (not a source page CSV)")
    hdr, data = rows[header], rows[header + 1:]
    i_src, i_exe = hdr.index("Source"), hdr.index("Instructions Executed")
    stall_cols = [i for i, h in enumerate(hdr) if h.startswith("stall_") and "Not Issued" not in h]
    total, stalls, ops = 0, collections.Counter(), collections.Counter()
    for r in data:
        if len(r) <= i_exe or not r[i_exe].isdigit():
            continue
        n = int(r[i_exe])
        total += n
        words = r[i_src].split()
        if not words:
            continue
        op = words[1] if words[0].startswith("@") and len(words) > 1 else words[0]
        ops[op.split(".")[0]] += n
        for i in stall_cols:
            try:
                stalls[hdr[i][6:]] += float(r[i])
            except (ValueError, IndexError):
                pass
    per = 32.0 / elements
    print(f"{path}: {total} warp instructions, {total * per:.2f} per element")
    samples = sum(stalls.values()) or 1
    print("  stalls: " + ", ".join(f"{k} {100 * v / samples:.1f}%" for k, v in stalls.most_common(8)))
    print("  per element: " + " ".join(f"{o} {c * per:.2f}" for o, c in ops.most_common(16)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--elements", type=int, default=16384 * 8192)
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    status = 0
    for path in args.files:
        try:
            summarise(path, args.elements)
        except (OSError, ValueError) as e:
            print(f"sass_stats: {e}", file=sys.stderr)
            status = 2
    return status


if __name__ == "__main__":
    sys.exit(main())
