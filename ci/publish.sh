#!/usr/bin/env bash
# Publishes one GPU machine's run: from the files `ci/gpu/run-h200.sh tiers roofline anchors
# bench-gpu bench-cpu` brought back (IN holds ceilings.json, torch.json, bench-gpu.tgz,
# bench-cpu.tgz and optionally tiers.tgz), writes reports/published/<NAME>/ (results.json,
# ceilings.json, torch.json, tiers.json, index.html, summary.md) and regenerates docs/perf.md.
#   ci/publish.sh IN NAME [BIN]        e.g. ci/publish.sh /work/.device/run-3 h100
# BIN (default build/default/bin/dnnblocks) makes the report; any machine will do.
set -euo pipefail
cd "$(dirname "$0")/.."
in=${1:?usage: ci/publish.sh IN NAME [BIN]}
name=${2:?usage: ci/publish.sh IN NAME [BIN]}
bin=${3:-build/default/bin/dnnblocks}
out=reports/published/$name
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for f in ceilings.json bench-gpu.tgz bench-cpu.tgz; do
  [ -f "$in/$f" ] || { echo "publish.sh: $in/$f: missing" >&2; exit 2; }
done
mkdir -p "$work/gpu" "$work/cpu"
tar -xzf "$in/bench-gpu.tgz" -C "$work/gpu"
tar -xzf "$in/bench-cpu.tgz" -C "$work/cpu"
rm -rf "$out" && mkdir -p "$out"
cp "$in/ceilings.json" "$out/ceilings.json"
[ -f "$in/torch.json" ] && cp "$in/torch.json" "$out/torch.json"
benches=("$work"/gpu/bench-*.json "$work"/cpu/bench-*.json)
python3 ci/publish.py "$out/results.json" "${benches[@]}"
"$bin" report "${benches[@]}" "$work"/gpu/sweep-*.json "$work"/cpu/sweep-*.json --html "$out/index.html" --md "$out/summary.md"

if [ -f "$in/tiers.tgz" ]; then
  mkdir -p "$work/tiers" && tar -xzf "$in/tiers.tgz" -C "$work/tiers"
  python3 - "$work/tiers" "$out/tiers.json" "$out/results.json" <<'EOF'
import json, os, re, sys
folder, dest, results = sys.argv[1:4]
r = json.load(open(results))
date = r["fingerprint"]["date"][:10]
machine = next((d["info"]["name"] for k, d in r["devices"].items() if k.startswith("cuda")), "the GPU machine")
machine += " machine (its host CPU included)"
walls = {}
for line in open(os.path.join(folder, "walls.txt")):
    m = re.match(r"tier (\w+): exit (\d+), ([\d.]+) s", line)
    if m:
        walls[m.group(1)] = (int(m.group(2)), float(m.group(3)))
tiers = {}
for tier, (rc, wall) in walls.items():
    text = open(os.path.join(folder, f"check-{tier}.txt")).read()
    per = [[w, int(n), float(s)] for w, n, s in re.findall(r"^  (\S+@\S+)\s+(\d+) cases\s+([\d.]+) s$", text, re.M)]
    m = re.search(r"^check: (\d+) passed, (\d+) failed", text, re.M)
    tiers[tier] = {"wall_s": wall, "exit": rc, "passed": int(m.group(1)) if m else None,
                   "failed": int(m.group(2)) if m else None, "per": per}
    if not per:  # stopped at its cap before the summary: the per-case lines printed so far
        sums = {}
        verdicts = re.findall(r"^(\w+)\s+\S+@(\S+)\s+\S+\s+([\d.]+)ms", text, re.M)
        for verdict, where, ms in verdicts:
            n, s = sums.get(where, (0, 0.0))
            sums[where] = (n + 1, s + float(ms) / 1e3)
        tiers[tier]["per"] = [[w, n, round(s, 1)] for w, (n, s) in sums.items()]
        tiers[tier]["cases_run"] = len(verdicts)
        tiers[tier]["passed_so_far"] = sum(v == "PASS" for v, _, _ in verdicts)
        tiers[tier]["failed_so_far"] = sum(v in ("FAIL", "ERROR", "TIMEOUT") for v, _, _ in verdicts)
json.dump({"machine": machine, "date": date, "command": "bash ci/gpu/run-h200.sh tiers", "tiers": tiers},
          open(dest, "w"), indent=1)
EOF
fi
python3 ci/perf_doc.py "$out" > docs/perf.md
echo "publish.sh: $out and docs/perf.md written"
