#!/usr/bin/env python3
"""docs/perf.md from one published run: the current figures, generated, never edited by hand.

Reads a published folder (reports/published/<gpu>/, written by ci/publish.sh from what
ci/gpu/run-h200.sh brought back):
  results.json  every bench result of the run, merged (ci/publish.py; docs/bench-json.md)
  torch.json    PyTorch's figures from the same run (ci/gpu/torch_anchors.py), optional
  tiers.json    `check --tier` wall and per-implementation times on that machine, optional
                ({"machine": ..., "date": ..., "tiers": {"smoke": {"wall_s": .., "exit": ..,
                "passed": .., "failed": .., "per": [[where, cases, seconds], ...]}, ...}})
and prints Markdown: how the figures are taken, then per device the default implementations at
the large shape against the device's measured copy bandwidth and roofline (with PyTorch's time
where it was measured), the small shapes against the empty launch, and the check tiers' times.

Usage: python3 ci/perf_doc.py reports/published/h200 > docs/perf.md
"""
import json
import os
import sys
from collections import defaultdict

LARGE = "16384x8192"
SMALL = ("1x8192", "64x8192")


def load(folder, name, default=None):
    path = os.path.join(folder, name)
    if not os.path.exists(path):
        return default
    with open(path) as f:
        return json.load(f)


def probe(device, name):
    return device.get("ceilings", {}).get("measured", {}).get(name, {}).get("value", 0)


def device_title(dev_id, device):
    return f"{device.get('info', {}).get('name', dev_id)} (`{dev_id}`)"


def fmt_us(seconds):
    return f"{seconds * 1e6:.1f}" if seconds else "-"


def large_table(results, device, anchors):
    copy = probe(device, "dram_copy_bytes_per_s")
    rows = [r for r in results if r["shape"] == LARGE and r["status"] == "ok"]
    if not rows:
        return []
    out = ["| backend | op | dtype | params | median us | % of copy | % of roofline | torch us | torch / ours |",
           "|---|---|---|---|---:|---:|---:|---:|---:|"]
    for r in sorted(rows, key=lambda r: (r["backend"], r["op"], r["dtype"], r["params"])):
        pct = f"{100 * r['bytes_per_s'] / copy:.1f}%" if copy else "-"
        sol = r.get("roofline", {}).get("sol_percent")
        sol_text = f"{sol:.1f}%" if sol is not None else "-"
        t = anchors.get((r["op"], r["dtype"], r["shape"])) if r["params"] in ("", "form=torch") else None
        torch_us = f"{t * 1e6:.1f}" if t else "-"
        ratio = f"{t / r['median_s']:.2f}x" if t else "-"
        out.append(f"| {r['backend']} | {r['op']} | {r['dtype']} | {r['params'] or '-'} | {fmt_us(r['median_s'])} | {pct} | "
                   f"{sol_text} | {torch_us} | {ratio} |")
    return out


def small_table(results, device):
    rows = [r for r in results if r["shape"] in SMALL and r["status"] == "ok" and not r["params"]]
    if not rows:
        return []
    out = ["| case | median us | x empty launch |", "|---|---:|---:|"]
    for r in sorted(rows, key=lambda r: (r["op"], r["dtype"], r["shape"], r["backend"])):
        x = (r.get("launch") or {}).get("x_empty")
        out.append(f"| `{r['case_id']}` | {fmt_us(r['median_s'])} | {f'{x:.1f}' if x else '-'} |")
    return out


def tiers_section(tiers):
    out = [f"## Check tiers\n", f"`dnnblocks check --tier T` over every backend and device of {tiers['machine']} "
           f"({tiers['date']}; `{tiers.get('command', 'bash ci/gpu/run-h200.sh tiers')}`). The first tier run also "
           "builds the OpenCL programs, which later runs read from the program cache.\n",
           "| tier | wall s | exit | passed | failed | slowest implementation@device (s) |", "|---|---:|---:|---:|---:|---|"]
    for name, t in tiers["tiers"].items():
        per = sorted(t.get("per", []), key=lambda p: -p[2])[:3]
        slow = "; ".join(f"{w} {s:.1f}" for w, _, s in per)
        passed = t.get("passed")
        if passed is None:  # the run was stopped at its time cap: what ran by then
            passed = f"{t.get('cases_run', '?')} cases run before the cap, {t.get('passed_so_far', '?')} passed"
        failed = t.get("failed") if t.get("failed") is not None else t.get("failed_so_far", "-")
        out.append(f"| {name} | {t['wall_s']:.1f}{' (cap)' if t['exit'] == 124 else ''} | {t['exit']} | {passed} | "
                   f"{failed} | {slow} |")
    for m in tiers.get("also", []):
        out.append(f"\n{m}")
    return out


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: perf_doc.py PUBLISHED_FOLDER > docs/perf.md")
    folder = sys.argv[1].rstrip("/")
    results_file = load(folder, "results.json")
    if results_file is None:
        sys.exit(f"perf_doc.py: {folder}/results.json: not found")
    torch = load(folder, "torch.json", {"ops": []})
    tiers = load(folder, "tiers.json")
    anchors = {(o["op"], o["dtype"], o["shape"]): o["median_ms"] / 1e3 for o in torch.get("ops", [])}
    fp = results_file.get("fingerprint", {})
    by_device = defaultdict(list)
    for r in results_file["results"]:
        by_device[r["device"]].append(r)

    p = print
    p("# Performance figures\n")
    commit = os.environ.get("PERF_COMMIT") or fp.get("git_commit", "?")[:10]
    p(f"Generated by `python3 ci/perf_doc.py {folder}` from the run published in `{folder}/` "
      f"(code of commit {commit}, measured {fp.get('date', '?')}, its report: `{folder}/index.html`). "
      "Do not edit by hand: rerun the publishing calls and `ci/publish.sh`.\n")
    p("## How the figures are taken\n")
    p("- On the GPU machine (`ci/gpu/run-h200.sh tiers roofline anchors bench-gpu bench-cpu`, then `ci/publish.sh` "
      "on any machine): `dnnblocks roofline` measures each device's ceilings "
      "(copy and read streams, cache, FMA and tensor-core rates, the empty launch), then `dnnblocks bench` times the "
      "default implementation of every op at its bench problems on every device, in the same run.")
    p("- Device timers (CUDA events, OpenCL profiling events; the host clock for CPU kernels) after warm-up launches; "
      "each figure is the median of the repetitions (docs/bench.md), with inputs rotated through enough buffer sets "
      "that each launch reads DRAM, not cache (a case whose working set cannot be rotated past the cache is flagged).")
    p("- Bytes are the minimal bytes: every input read once, every output written once. `% of copy` is the case's "
      "bandwidth over the device's measured copy stream; `% of roofline` is bench's speed of light, against the "
      "DRAM roof and the compute roof of its unit: every case in the tables below is far larger than the caches "
      "(the report judges the small ones against their own memory level, docs/report.md).")
    p("- PyTorch's times (`torch us`) come from `ci/gpu/torch_anchors.py` on the same GPU in the same call "
      f"(PyTorch {torch.get('torch_version', '?')}); `torch / ours` above 1 means ours is faster.\n")
    if tiers:
        p("\n".join(tiers_section(tiers)) + "\n")
    order = {"cuda": 0, "opencl": 1, "cpu": 2}
    for dev_id in sorted(by_device, key=lambda d: (order.get(d.split(":")[0], 3), d)):
        device = results_file.get("devices", {}).get(dev_id, {})
        rows = by_device[dev_id]
        p(f"## {device_title(dev_id, device)}\n")
        copy, read = probe(device, "dram_copy_bytes_per_s"), probe(device, "dram_read_bytes_per_s")
        launch = probe(device, "empty_launch_s")
        p(f"Measured: copy {copy / 1e9:.0f} GB/s, read {read / 1e9:.0f} GB/s"
          + (f", empty launch {launch * 1e6:.2f} us" if launch else "") + ".\n")
        table = large_table(rows, device, anchors if dev_id.startswith("cuda") else {})
        if table:
            p(f"### {LARGE}\n")
            p("\n".join(table) + "\n")
            ok = [r for r in rows if r["shape"] == LARGE and r["status"] == "ok" and copy]
            if ok:
                pcts = sorted(100 * r["bytes_per_s"] / copy for r in ok)
                p(f"{len(ok)} cases; % of copy: lowest {pcts[0]:.1f}%, median {pcts[len(pcts) // 2]:.1f}%, "
                  f"highest {pcts[-1]:.1f}%.\n")
        small = small_table(rows, device)
        if small:
            p("### Small shapes against the empty launch\n")
            p("\n".join(small) + "\n")
        failed = [r for r in rows if r["status"] != "ok"]
        if failed:
            p("### Not measured\n")
            for r in failed:
                p(f"- `{r['case_id']}`: {r['status']}: {r.get('reason', '')}")
            p("")


if __name__ == "__main__":
    main()
