#!/usr/bin/env python3
"""Run-to-run repeatability of `dnnblocks roofline`: compares the medians of two or more
ceilings files (the first is the base) probe by probe and prints a Markdown table with each
later run's difference in %, the within-run spreads, and whether the largest difference is
within the target (default 2%, issue 5).

  python3 ci/gpu/roofline_repeat.py ceilings-1.json ceilings-2.json [...] [--target 2]
Exit 0 when every probe is within the target, 1 otherwise, 2 on unreadable input."""
import argparse
import json
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)["devices"]
    except (OSError, ValueError, KeyError) as e:
        print(f"roofline_repeat: cannot read {path}: {e}", file=sys.stderr)
        sys.exit(2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="+")
    ap.add_argument("--target", type=float, default=2.0, help="largest allowed |difference| in %%")
    args = ap.parse_args()
    if len(args.files) < 2:
        print("roofline_repeat: need at least two ceilings files", file=sys.stderr)
        return 2
    runs = [load(p) for p in args.files]
    base = runs[0]
    worst = 0.0
    print("| device | probe | run 1 | " + " | ".join(f"run {i + 2} (diff)" for i in range(len(runs) - 1)) +
          " | within-run spreads | verdict |")
    print("|---|---|---|" + "---|" * (len(runs) - 1) + "---|---|")
    for dev in base:
        for probe, r in sorted(base[dev].get("measured", {}).items()):
            cells, spreads, diffs = [], [f'{100 * r["spread"]:.1f}%'], []
            for other in runs[1:]:
                s = other.get(dev, {}).get("measured", {}).get(probe)
                if not s:
                    cells.append("missing")
                    diffs.append(float("inf"))
                    continue
                d = 100 * (s["value"] - r["value"]) / r["value"]
                diffs.append(d)
                spreads.append(f'{100 * s["spread"]:.1f}%')
                cells.append(f'{s["value"]:.4g} ({d:+.2f}%)')
            m = max(abs(d) for d in diffs)
            worst = max(worst, m)
            verdict = "ok" if m <= args.target else f"over {args.target:g}%"
            print(f'| {dev} | {probe} | {r["value"]:.4g} | ' + " | ".join(cells) +
                  f' | {", ".join(spreads)} | {verdict} |')
    print(f"\nlargest run-to-run difference: {worst:.2f}% (target {args.target:g}%)")
    return 0 if worst <= args.target else 1


if __name__ == "__main__":
    sys.exit(main())
