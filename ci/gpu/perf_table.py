#!/usr/bin/env python3
"""Markdown table of one GPU run: our CUDA kernels (dnnblocks bench JSON) beside PyTorch's
figures from the same run (ci/gpu/torch_anchors.py JSON), as % of the copy bandwidth measured
in that run. Usage: perf_table.py BENCH.json TORCH.json"""
import json
import sys


def main():
    bench = json.load(open(sys.argv[1]))
    torch = json.load(open(sys.argv[2]))
    probes = bench["device_probes"]["cuda:0"]
    copy = probes["copy_bytes_per_s"]
    empty_us = probes["empty_launch_ms"] * 1e3
    anchors = {(o["op"], o["dtype"], o["shape"]): o for o in torch["ops"]}
    print(f"Copy ceiling (cudaMemcpy D2D, 1 GiB, bytes read + written): {copy / 1e12:.2f} TB/s; "
          f"torch copy in the same run: {torch['copy_bytes_per_s'] / 1e12:.2f} TB/s; "
          f"empty kernel launch: {empty_us:.2f} us.\n")
    print("| case | median us | TB/s | % of copy | torch TB/s | vs torch | x empty launch |")
    print("|---|---|---|---|---|---|---|")
    for r in bench["results"]:
        if r["status"] != "ok":
            continue
        case = r["case"]
        op, dtype, shape = case.split("@")[0].split(":")[:3]
        params = case.split("@")[0].split(":")[3:]
        us = r["median_ms"] * 1e3
        bps = r["bytes_per_s"]
        key = (op, dtype, shape)
        anchor = anchors.get(key) if not params or params == ["form=torch"] else None
        t = f"{anchor['bytes_per_s'] / 1e12:.2f}" if anchor else ""
        ratio = f"{anchor['median_ms'] * 1e3 / us:.2f}x" if anchor else ""
        print(f"| `{case}` | {us:.1f} | {bps / 1e12:.2f} | {100 * bps / copy:.1f}% | {t} | {ratio} | {us / empty_us:.1f} |")


if __name__ == "__main__":
    main()
