#!/usr/bin/env python3
"""Issue-4 tables from one GPU run: dnnblocks bench results files (docs/bench-json.md) and
PyTorch's figures from the same run (ci/gpu/torch_anchors.py JSON).

For every (op, dtype, params) at the large shape and each backend: the default
implementation and the best variant, their time, % of the device's measured copy stream
(the issue's target unit) and % of its roofline bound (speed of light); PyTorch's time and
the ratio where PyTorch was measured; then the small shapes next to the empty launch.

Usage: perf_table.py TORCH.json BENCH.json... > table.md
"""
import json
import sys
from collections import defaultdict

LARGE = "16384x8192"


def load(paths):
    results, ceilings = [], {}
    for path in paths:
        with open(path) as f:
            j = json.load(f)
        for dev, d in j.get("devices", {}).items():
            ceilings[dev] = d["ceilings"]["measured"]
        results += [r for r in j["results"] if r["status"] == "ok"]
    return results, ceilings


def value(ceilings, dev, probe):
    return ceilings.get(dev, {}).get(probe, {}).get("value", 0)


def main():
    torch = json.load(open(sys.argv[1]))
    results, ceilings = load(sys.argv[2:])
    anchors = {(o["op"], o["dtype"], o["shape"]): o["median_ms"] * 1e3 for o in torch["ops"]}
    groups = defaultdict(dict)  # (backend, device, op, dtype, shape, params) -> variant -> result
    for r in results:
        groups[(r["backend"], r["device"], r["op"], r["dtype"], r["shape"], r["params"])][r["variant"]] = r
    devices = sorted({k[1] for k in groups})
    print("Ceilings measured by `dnnblocks roofline` on this machine: " + "; ".join(
        f"{d}: copy {value(ceilings, d, 'dram_copy_bytes_per_s') / 1e9:.0f} GB/s, read "
        f"{value(ceilings, d, 'dram_read_bytes_per_s') / 1e9:.0f} GB/s"
        + (f", empty launch {value(ceilings, d, 'empty_launch_s') * 1e6:.2f} us" if value(ceilings, d, 'empty_launch_s') else "")
        for d in devices) + f". PyTorch {torch.get('torch_version', '?')} copy in its own run: "
        f"{torch['copy_bytes_per_s'] / 1e9:.0f} GB/s.\n")
    print(f"### {LARGE}\n")
    print("| backend | op | dtype | params | default us | default % copy | best variant | best us | best % copy | best % SOL | torch us | torch / best |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for key in sorted(groups):
        backend, dev, op, dtype, shape, params = key
        if shape != LARGE:
            continue
        variants = groups[key]
        copy = value(ceilings, dev, "dram_copy_bytes_per_s")
        default = variants.get("")
        best_name, best = min(variants.items(), key=lambda kv: kv[1]["median_s"])
        pct = lambda r: f"{100 * r['bytes_per_s'] / copy:.1f}%" if r and copy else "-"
        us = lambda r: f"{r['median_s'] * 1e6:.1f}" if r else "-"
        t = anchors.get((op, dtype, shape)) if backend == "cuda" and params in ("", "form=torch") else None
        best_us = best["median_s"] * 1e6
        torch_us = f"{t:.1f}" if t else "-"
        ratio = f"{t / best_us:.2f}x" if t else "-"
        sol = best["roofline"]["sol_percent"]
        print(f"| {backend} | {op} | {dtype} | {params or '-'} | {us(default)} | {pct(default)} | {best_name or '(default)'} | "
              f"{us(best)} | {pct(best)} | {sol:.1f}% | {torch_us} | {ratio} |")
    print("\n### Small shapes (default implementations) against the empty launch\n")
    print("| backend | case | median us | batched us per launch | x empty launch | torch us |")
    print("|---|---|---|---|---|---|")
    for key in sorted(groups):
        backend, dev, op, dtype, shape, params = key
        r = groups[key].get("")
        if r is None or shape == LARGE or shape not in ("1x8192", "64x8192") or backend == "reference":
            continue
        launch = r.get("launch") or {}
        batched = launch.get("batched_s")
        t = anchors.get((op, dtype, shape)) if backend == "cuda" and not params else None
        batched_us = f"{batched * 1e6:.1f}" if batched else "-"
        torch_us = f"{t:.1f}" if t else "-"
        x_empty = launch.get("x_empty") or 0
        print(f"| {backend} | `{r['case_id']}` | {r['median_s'] * 1e6:.1f} | {batched_us} | {x_empty:.1f} | {torch_us} |")


if __name__ == "__main__":
    main()
