#!/usr/bin/env bash
# Per-device performance report: measured ceilings, bench of every backend on every device
# found (one results file per device), then the HTML page and Markdown summary.
#   ci/report.sh BIN OUTDIR [quick|full]
# quick (default; CI-sized, a few minutes on 2 cores): quick ceilings, the decode-like shape
#   64x8192, and a row sweep up to 1024x8192 for add, softmax and rmsnorm.
# full (the GPU machine; what reports/published/ holds): full ceilings, the specs' bench
#   problems (16384x8192, 64x8192, 1x8192 and their parameter cases) for every backend but
#   the reference, which runs at 64x8192 (it is a float64 oracle, not a kernel), and a sweep
#   up to 16384x8192 for add, softmax, layernorm and rmsnorm.
# Environment: REPORT_DEVICES (ids; default every device), REPORT_BACKENDS (default all),
# CEILINGS (a `roofline --out` file to reuse), NO_REPORT=1 (bench only; report made later),
# SWEEP_OPS (the ops of the size sweep; default above).
set -uo pipefail
bin=$1
out=$2
mode=${3:-quick}
mkdir -p "$out"
rc=0
note() { echo "report.sh: $*"; }

# Full: 5 repetitions and a 1 s cap per case keep the whole H200 run inside the device budget.
if [ "$mode" = full ]; then roof_args=(); big=(--repetitions 5 --max-time 1); sweep_top=16384x8192; sweep_ops="add softmax layernorm rmsnorm"
else roof_args=(--quick); big=(--size 64x8192); sweep_top=1024x8192; sweep_ops="add softmax rmsnorm"; fi
sweep_ops=${SWEEP_OPS:-$sweep_ops}
wanted() { [ -z "${REPORT_BACKENDS:-}" ] || [[ " ${REPORT_BACKENDS//,/ } " == *" $1 "* ]]; }

if [ -n "${CEILINGS:-}" ]; then
  note "ceilings from $CEILINGS"; cp "$CEILINGS" "$out/ceilings.json" 2>/dev/null || true
else
  dev_args=(); for d in ${REPORT_DEVICES:-}; do dev_args+=(--device "$d"); done
  $bin roofline "${roof_args[@]}" "${dev_args[@]}" --out "$out/ceilings.json" | tee "$out/roofline.txt" || rc=1
fi

implementations=$($bin list --json)  # once: `list | grep -q` under pipefail would fail on SIGPIPE
# Every device (or those in REPORT_DEVICES), each bench in its own file named after the device.
devices=${REPORT_DEVICES:-$($bin devices --json | python3 -c 'import json,sys; print(" ".join(d["id"] for d in json.load(sys.stdin)["devices"]))')}
for dev in $devices; do
  name=${dev//[:.]/-}
  case $dev in
    cpu:*) kernels=avx512,onednn ;;
    cuda:*) kernels=cuda ;;
    opencl:*) kernels=opencl ;;
  esac
  for backend in ${kernels//,/ }; do
    wanted "$backend" || continue
    grep -q "\"backend\": \"$backend\"" <<< "$implementations" || { note "$backend: not in this build (see \`dnnblocks list\`)"; continue; }
    $bin bench --backend "$backend" --device "$dev" --ceilings "$out/ceilings.json" "${big[@]}" \
      --out "$out/bench-$backend-$name.json" > "$out/bench-$backend-$name.txt" 2>&1
    r=$?; note "bench $backend on $dev: exit $r ($(grep -c '' "$out/bench-$backend-$name.txt") lines)"; [ $r -eq 0 ] || rc=1
  done
  for op in $sweep_ops; do
    [ "$dev" = cpu:0 ] && b=avx512 || b=${kernels%%,*}
    wanted "$b" || continue
    $bin bench --op "$op" --backend "$b" --device "$dev" --dtype bf16 --size "$sweep_top" --sweep --ceilings "$out/ceilings.json" \
      --out "$out/sweep-$op-$b-$name.json" > "$out/sweep-$op-$b-$name.txt" 2>&1 || rc=1
  done
  if [ "$dev" = cpu:0 ] && wanted reference; then
    $bin bench --backend reference --device cpu:0 --size 64x8192 --repetitions 3 --max-time 1 --ceilings "$out/ceilings.json" \
      --out "$out/bench-reference-$name.json" > "$out/bench-reference-$name.txt" 2>&1
    r=$?; note "bench reference on $dev: exit $r"; [ $r -eq 0 ] || rc=1
  fi
done

[ -n "${NO_REPORT:-}" ] && exit $rc
$bin report "$out"/bench-*.json "$out"/sweep-*.json --html "$out/index.html" --md "$out/summary.md" || rc=1
note "report: $out/index.html, $out/summary.md (exit $rc)"
exit $rc
