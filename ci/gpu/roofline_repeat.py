#!/usr/bin/env python3
"""Run-to-run repeatability of `dnnblocks roofline`: compares two or more ceilings files (the
first is the base) probe by probe, for the median (`value`, what bench and report use) and for
the best sample (`best`, STREAM's convention; absent in older files), and prints a Markdown
table with each later run's differences in %, the within-run spreads, and the verdict against
the target (default 2%, issue 5).

  python3 ci/gpu/roofline_repeat.py ceilings-1.json ceilings-2.json [...] [--target 2]
Exit 0 when every probe's median is within the target, 1 otherwise, 2 on unreadable input."""
import argparse
import json
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)["devices"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"roofline_repeat: cannot read {path}: {e}", file=sys.stderr)
        sys.exit(2)


def diff(a, b):
    return 100.0 * (b - a) / a if a else float("inf")


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
    worst = {"value": 0.0, "best": None}
    later = range(2, len(runs) + 1)
    print("| device | probe | median, run 1 | " + " | ".join(f"median diff, run {k}" for k in later) +
          " | " + " | ".join(f"best diff, run {k}" for k in later) + " | spreads | verdict (median / best) |")
    print("|---|---|---|" + "---|" * (2 * len(runs) - 2) + "---|---|")
    for dev in base:
        for probe, r in sorted(base[dev].get("measured", {}).items()):
            d = {"value": [], "best": []}
            spreads = [f'{100 * r.get("spread", 0):.1f}%']
            for other in runs[1:]:
                s = other.get(dev, {}).get("measured", {}).get(probe)
                if not s:
                    d["value"].append(float("inf"))
                    d["best"].append(float("inf"))
                    continue
                spreads.append(f'{100 * s.get("spread", 0):.1f}%')
                d["value"].append(diff(r["value"], s["value"]))
                d["best"].append(diff(r["best"], s["best"]) if r.get("best") and s.get("best") else float("nan"))
            verdicts = []
            for stat in ("value", "best"):
                known = [abs(x) for x in d[stat] if x == x]
                if not known:
                    verdicts.append("-")
                    continue
                worst[stat] = max(worst[stat] or 0.0, max(known))
                verdicts.append("ok" if max(known) <= args.target else f"over {args.target:g}%")
            cell = lambda x: "missing" if x == float("inf") else ("-" if x != x else f"{x:+.2f}%")
            print(f'| {dev} | {probe} | {r["value"]:.4g} | ' + " | ".join(cell(x) for x in d["value"]) + " | " +
                  " | ".join(cell(x) for x in d["best"]) + f' | {", ".join(spreads)} | {" / ".join(verdicts)} |')
    best = "not in these files" if worst["best"] is None else f"{worst['best']:.2f}%"
    print(f"\nlargest run-to-run difference: median {worst['value']:.2f}%, best sample {best} "
          f"(target {args.target:g}%)")
    return 0 if worst["value"] <= args.target else 1


if __name__ == "__main__":
    sys.exit(main())
