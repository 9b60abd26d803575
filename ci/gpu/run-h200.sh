#!/usr/bin/env bash
# One call on the GPU machine: build, devices, conformance (CUDA, OpenCL on NVIDIA and PoCL,
# AVX-512 on the host CPU), the GPU tests, then timings of ours and PyTorch's in the same run.
# Everything lands under $OUT (the device tool brings it back). Usage: bash ci/gpu/run-h200.sh [quick]
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

log configure
cmake -S . -B build/gpu -DCMAKE_BUILD_TYPE=Release -DDNNB_ONEDNN=AUTO > "$OUT/configure.log" 2>&1 || { tail -40 "$OUT/configure.log"; exit 1; }
grep "dnnblocks:" "$OUT/configure.log"
log build
cmake --build build/gpu -j"$jobs" > "$OUT/build.log" 2>&1 || { grep -E "error" -A5 "$OUT/build.log" | head -80; exit 1; }
bin=build/gpu/bin/dnnblocks

log devices
$bin devices | tee "$OUT/devices.txt"
$bin devices --json > "$OUT/devices.json"

log check
for backend in cuda opencl avx512 reference; do
  $bin check --backend "$backend" --json "$OUT/check-$backend.json" > "$OUT/check-$backend.txt" 2>&1
  echo "check $backend: exit $? :: $(tail -1 "$OUT/check-$backend.txt" | head -c 300)"
  grep -E "^(FAIL|ERROR|BAD_INPUT)" "$OUT/check-$backend.txt" | head -15
done

log tests
(cd build/gpu && ctest -j4 --output-on-failure > "$OUT/ctest.txt" 2>&1); tail -5 "$OUT/ctest.txt"

[ "${1:-}" = "quick" ] && exit 0

log torch anchors
PYTHONUNBUFFERED=1 python3 ci/gpu/torch_anchors.py "$OUT/torch.json" > "$OUT/torch.txt" 2>&1; tail -45 "$OUT/torch.txt"

log bench
$bin bench --backend cuda --out "$OUT/bench-cuda.json" > "$OUT/bench-cuda.txt" 2>&1; echo "bench cuda exit $?"
$bin bench --backend opencl --device opencl:0.0 --size 16384x8192 --dtype f32 --out "$OUT/bench-opencl.json" > "$OUT/bench-opencl.txt" 2>&1; echo "bench opencl exit $?"
$bin bench --backend avx512 --size 16384x8192 --repetitions 10 --out "$OUT/bench-avx512.json" > "$OUT/bench-avx512.txt" 2>&1; echo "bench avx512 exit $?"
grep -E "16384x8192|copy|empty" "$OUT/bench-cuda.txt" | head -80
log done
