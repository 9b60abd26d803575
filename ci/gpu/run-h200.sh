#!/usr/bin/env bash
# One call on the GPU machine (H100 or H200): set up (OpenCL ICDs, the carried oneDNN), build,
# then the steps named on the command line, each under its own time cap, everything written
# under $OUT (the device tool brings it back; at most 8 files, so steps write tarballs).
#   bash ci/gpu/run-h200.sh tiers watchdog
#   bash ci/gpu/run-h200.sh roofline anchors bench-gpu
#   bash ci/gpu/run-h200.sh roofline gemm-sweep
# Steps:
#   tiers      `check --tier T` for each T in TIERS (default "smoke ci") over every backend and
#              device, timed; the first run fills the OpenCL program cache ($OUT/tiers.tgz).
#              TIER_FILL=K first fills the caches untimed with K processes per OpenCL device
#   watchdog   the CheckWatchdog tests: a CPU case and a CUDA kernel that never return
#   check      `check` per backend (CHECK_BACKENDS, default every one; CHECK_ARGS adds flags,
#              e.g. "--op layernorm --variants all"; CHECK_CAP seconds per backend, default 240)
#   ctest      the unit tests (CTEST_ARGS narrows them, e.g. "-R Conformance")
#   roofline   the measured ceilings of REPORT_DEVICES (default cuda:0, NVIDIA OpenCL, cpu:0)
#              into $OUT/ceilings.json
#   anchors    PyTorch's figures on the same GPU (ci/gpu/torch_anchors.py) into $OUT/torch.json
#   bench-gpu  ci/report.sh full's bench of the defaults on cuda:0 and the NVIDIA OpenCL device,
#              against $OUT/ceilings.json or CEILINGS ($OUT/bench-gpu.tgz)
#   bench-cpu  the same for AVX-512, oneDNN and the reference on cpu:0 ($OUT/bench-cpu.tgz)
#   bench      `bench $BENCH_ARGS` (e.g. "--op matmul,linear --backend cuda,cublas --dtype bf16"),
#              each run's results in $OUT/bench.tgz (BENCH_RUNS="args;args;..." for several)
#   gemm-sweep the GEMM size sweep: `bench --op matmul --sweep --size 16384x4096x4096` (M = 1, 4,
#              ..., 16384 at N = K = 4096) in bf16 on cuda:0 with the CUDA kernels and cuBLAS,
#              against $OUT/ceilings.json or CEILINGS (run `roofline` first: its bf16_tensor is
#              the wgmma ceiling) into $OUT/gemm-sweep.json; its report (index.html with the
#              sweep's roofline, summary.md with its table) and the bench log in
#              $OUT/gemm-sweep.tgz. GEMM_SWEEP_BACKENDS (default cuda,cublas; opencl runs on the
#              NVIDIA OpenCL device), GEMM_SWEEP_DTYPE (bf16), GEMM_SWEEP_SIZE, GEMM_SWEEP_ARGS.
#   ncu        NCU_CASES="case;..." through Nsight Compute (NCU_KERNELS regex) ($OUT/ncu.tgz)
# The published report is made from the bench tarballs on any machine: see reports/README.md.
# CMAKE_ARGS adds configure flags; BUILD_TARGETS (e.g. "dnnblocks") builds only those targets. oneDNN is not installed there: run `ci/gpu/pack-onednn.sh`
# here first and carry `.deps`.
set -uo pipefail
OUT=${OUT:-/tmp/dnnblocks-out}
mkdir -p "$OUT"
jobs=$(nproc)
log() { echo "== $(date +%T) $*"; }

# NVIDIA's OpenCL library ships without an ICD file: point the loader at a folder holding one,
# plus PoCL's, so both platforms are seen.
mkdir -p /tmp/icd
echo /usr/local/nvidia/lib64/libnvidia-opencl.so.1 > /tmp/icd/nvidia.icd
cp /etc/OpenCL/vendors/*.icd /tmp/icd/ 2>/dev/null || true
export OCL_ICD_VENDORS=/tmp/icd

onednn=OFF
if [ -f .deps/onednn.tar.xz ]; then
  mkdir -p /tmp/onednn && tar -xJf .deps/onednn.tar.xz -C /tmp/onednn
  export CMAKE_PREFIX_PATH=/tmp/onednn/usr LD_LIBRARY_PATH=/tmp/onednn/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
  onednn=ON
fi

setup=/tmp/setup; mkdir -p $setup
log "configure (oneDNN=$onednn)"
cmake -S . -B build/gpu -DCMAKE_BUILD_TYPE=Release -DDNNB_ONEDNN=$onednn ${CMAKE_ARGS:-} > $setup/configure.log 2>&1 || { tail -40 $setup/configure.log; exit 1; }
grep "dnnblocks:" $setup/configure.log
log build
cmake --build build/gpu -j"$jobs" ${BUILD_TARGETS:+--target $BUILD_TARGETS} > $setup/build.log 2>&1 || { grep -E "error" -A5 $setup/build.log | head -80; exit 1; }
bin=build/gpu/bin/dnnblocks
$bin devices > $setup/devices.txt 2>&1
$bin devices --json > $setup/devices.json
tar -czf "$OUT/setup.tgz" -C $setup .
# The NVIDIA OpenCL device's id (platform order is the loader's, not fixed).
ocl_nv=$(python3 -c 'import json,sys; print(next((d["id"] for d in json.load(sys.stdin)["devices"] if d["kind"]=="opencl" and "NVIDIA" in d["name"]), ""))' < $setup/devices.json)
gpu_name=$(python3 -c 'import json,sys; print(next((d["name"] for d in json.load(sys.stdin)["devices"] if d["kind"]=="cuda"), "none"))' < $setup/devices.json)
log "devices: $gpu_name; NVIDIA OpenCL = ${ocl_nv:-none}"
ceilings=${CEILINGS:-$OUT/ceilings.json}

for step in "$@"; do
  case $step in
  tiers)
    mkdir -p /tmp/tiers
    if [ "${TIER_FILL:-0}" -gt 0 ]; then
      # Fill the OpenCL program caches (ours and PoCL's) untimed: TIER_FILL processes per OpenCL
      # device, each checking a share of the ops, so the single-threaded program builds run side
      # by side. The timed runs below then find every program built.
      log "fill the OpenCL program caches: $TIER_FILL processes per OpenCL device"
      start=$(date +%s.%N)
      ops=$($bin list --json | python3 -c 'import json,sys; print(" ".join(sorted({i["op"] for i in json.load(sys.stdin)["implementations"] if i["backend"]=="opencl"})))')
      for dev in $($bin devices --json | python3 -c 'import json,sys; print(" ".join(d["id"] for d in json.load(sys.stdin)["devices"] if d["kind"]=="opencl"))'); do
        for ((i = 0; i < TIER_FILL; i++)); do
          share=$(echo $ops | tr ' ' '\n' | awk -v n="$TIER_FILL" -v i="$i" '(NR - 1) % n == i' | paste -sd,)
          [ -n "$share" ] && timeout "${TIER_FILL_CAP:-400}" $bin check --tier ci --backend opencl --device "$dev" --op "$share" > "/tmp/tiers/fill-${dev//[:.]/_}-$i.txt" 2>&1 &
        done
      done
      wait
      echo "fill: $(python3 -c "import time; print(round(time.time() - $start, 1))") s" | tee -a /tmp/tiers/walls.txt
      grep -h "^check:" /tmp/tiers/fill-*.txt | head -40
    fi
    for tier in ${TIERS:-smoke ci}; do
      log "check --tier $tier (every backend, every device)"
      start=$(date +%s.%N)
      timeout "${TIER_CAP:-400}" $bin check --tier "$tier" --json "/tmp/tiers/check-$tier.json" > "/tmp/tiers/check-$tier.txt" 2>&1
      rc=$?
      wall=$(python3 -c "import time; print(round(time.time() - $start, 1))")
      echo "tier $tier: exit $rc, $wall s" | tee -a /tmp/tiers/walls.txt
      sed -n '/^time per implementation/,$p' "/tmp/tiers/check-$tier.txt" | head -40
      grep -E "^(FAIL|ERROR|BAD_INPUT|TIMEOUT)" "/tmp/tiers/check-$tier.txt" | head -15
      tar -czf "$OUT/tiers.tgz" -C /tmp/tiers .
    done ;;
  watchdog)
    log "watchdog tests (a CPU case and a CUDA kernel that never return)"
    timeout 120 build/gpu/bin/dnnblocks_tests --gtest_filter='CheckWatchdog.*' > "$OUT/watchdog.txt" 2>&1
    echo "watchdog tests exit $?"
    grep -E "^\[|TIMEOUT|SKIP|PASS" "$OUT/watchdog.txt" | tail -25 ;;
  check)
    mkdir -p /tmp/check
    for backend in ${CHECK_BACKENDS:-cuda opencl avx512 onednn reference}; do
      tag=${backend//\//_}
      timeout "${CHECK_CAP:-240}" $bin check --backend "$backend" ${CHECK_ARGS:-} --json "/tmp/check/check-$tag.json" > "/tmp/check/check-$tag.txt" 2>&1
      echo "check $backend: exit $? :: $(grep '^check:' "/tmp/check/check-$tag.txt" | head -c 300)"
      grep -E "^(FAIL|ERROR|BAD_INPUT|TIMEOUT)" -A3 "/tmp/check/check-$tag.txt" | head -30
    done
    tar -czf "$OUT/check.tgz" -C /tmp/check . ;;
  ctest)
    (cd build/gpu && timeout 300 ctest -j8 --output-on-failure ${CTEST_ARGS:-} > "$OUT/ctest.txt" 2>&1)
    tail -5 "$OUT/ctest.txt" ;;
  roofline)
    dev_args=(); for d in ${REPORT_DEVICES:-cuda:0 $ocl_nv cpu:0}; do dev_args+=(--device "$d"); done
    log "roofline ${dev_args[*]}"
    timeout 250 $bin roofline "${dev_args[@]}" --out "$OUT/ceilings.json" > "$OUT/roofline.txt" 2>&1; echo "roofline exit $?"
    grep -E "^[a-z]|copy|launch" "$OUT/roofline.txt" | cut -c1-100 | head -30 ;;
  anchors)
    log "torch anchors"
    PYTHONUNBUFFERED=1 timeout 150 python3 ci/gpu/torch_anchors.py "$OUT/torch.json" > "$OUT/torch.txt" 2>&1; tail -3 "$OUT/torch.txt" ;;
  bench-gpu|bench-cpu)
    devs="cuda:0 $ocl_nv"; [ "$step" = bench-cpu ] && devs=cpu:0
    log "$step on $devs against $ceilings"
    rm -rf "/tmp/$step"; mkdir -p "/tmp/$step"
    CEILINGS=$ceilings NO_REPORT=1 REPORT_DEVICES=$devs timeout "${BENCH_CAP:-560}" bash ci/report.sh "$bin" "/tmp/$step" full | tail -12
    rm -f "/tmp/$step/ceilings.json"  # a copy of $ceilings
    tar -czf "$OUT/$step.tgz" -C "/tmp/$step" . ;;
  bench)
    mkdir -p /tmp/bench
    IFS=';' read -ra runs <<< "${BENCH_RUNS:-${BENCH_ARGS:-}}"
    n=0
    for args in "${runs[@]}"; do
      n=$((n + 1))
      log "bench $args"
      ceil_args=(); [ -f "$ceilings" ] && ceil_args=(--ceilings "$ceilings")
      # shellcheck disable=SC2086
      timeout "${BENCH_CAP:-300}" $bin bench $args "${ceil_args[@]}" --out "/tmp/bench/bench-$n.json" > "/tmp/bench/bench-$n.txt" 2>&1
      echo "bench $n: exit $?"
      grep -vE "^\s*$" "/tmp/bench/bench-$n.txt" | tail -n "${BENCH_TAIL:-40}" | cut -c1-200
    done
    tar -czf "$OUT/bench.tgz" -C /tmp/bench . ;;
  gemm-sweep)
    log "gemm-sweep: matmul ${GEMM_SWEEP_DTYPE:-bf16} ${GEMM_SWEEP_SIZE:-16384x4096x4096} on ${GEMM_SWEEP_BACKENDS:-cuda,cublas}"
    rm -rf /tmp/gemm-sweep; mkdir -p /tmp/gemm-sweep
    ceil_args=(); [ -f "$ceilings" ] && ceil_args=(--ceilings "$ceilings")
    dev_args=(--device cuda:0); [ -n "$ocl_nv" ] && dev_args+=(--device "$ocl_nv")
    # shellcheck disable=SC2086
    timeout "${BENCH_CAP:-400}" $bin bench --op matmul --backend "${GEMM_SWEEP_BACKENDS:-cuda,cublas}" \
      --dtype "${GEMM_SWEEP_DTYPE:-bf16}" "${dev_args[@]}" --sweep --size "${GEMM_SWEEP_SIZE:-16384x4096x4096}" \
      ${GEMM_SWEEP_ARGS:-} "${ceil_args[@]}" --out "$OUT/gemm-sweep.json" > /tmp/gemm-sweep/bench.txt 2>&1
    echo "gemm-sweep bench: exit $?"
    grep -E "^matmul|ceilings" /tmp/gemm-sweep/bench.txt | cut -c1-160
    $bin report "$OUT/gemm-sweep.json" --html /tmp/gemm-sweep/index.html --md /tmp/gemm-sweep/summary.md
    echo "gemm-sweep report: exit $?"
    sed -n '/^### Size sweeps of products/,/^### Not measured/p' /tmp/gemm-sweep/summary.md | head -30
    tar -czf "$OUT/gemm-sweep.tgz" -C /tmp/gemm-sweep . ;;
  ncu)
    # NCU_CASES="case;case;..." profiles one launch of each case's kernel (names matching
    # NCU_KERNELS, a regex) with Nsight Compute (--set full, clocks left alone).
    log "ncu: ${NCU_CASES:-nothing}"
    mkdir -p /tmp/ncu
    ncu_bin=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
    IFS=';' read -ra cases <<< "${NCU_CASES:-}"
    for c in "${cases[@]}"; do
      tag=$(echo "$c" | tr -c 'a-zA-Z0-9_.=-' '_')
      timeout 150 "$ncu_bin" --clock-control none --set full --import-source no -k "regex:${NCU_KERNELS:-.}" \
        --launch-skip "${NCU_SKIP:-3}" --launch-count 1 $bin bench --case "$c" \
        --repetitions 2 --warmup 1 --min-time 0.00001 --max-time 0 > "/tmp/ncu/$tag.txt" 2>&1
      echo "  ncu $c: exit $?, $(grep -c . "/tmp/ncu/$tag.txt") lines"
    done
    tar -czf "$OUT/ncu.tgz" -C /tmp/ncu . ;;
  *) echo "unknown step '$step'"; exit 2 ;;
  esac
done
log done
