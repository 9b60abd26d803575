#!/usr/bin/env bash
# One call on the GPU machine: set up (OpenCL ICDs, the carried oneDNN), build, then the steps
# named on the command line, each under its own time cap, everything written under $OUT (the
# device tool brings it back).
#   bash ci/gpu/run-h200.sh check variants opencl cpu anchors report
# Steps:
#   check     conformance (CHECK_BACKENDS, default cuda opencl avx512 onednn reference; every
#             variant, every device of the kind); ctest
#   variants  CUDA defaults and variants at 16384x8192, every dtype (which variant to promote)
#   opencl    OpenCL on NVIDIA at 16384x8192, per op so a slow op shows which it is
#   cpu       AVX-512 and oneDNN at 16384x8192 on the host CPU, with the CPU copy probe
#   anchors   PyTorch's figures (ci/gpu/torch_anchors.py)
#   report    roofline + bench of every backend + report into $OUT/report (issue 5)
# oneDNN is not installed there: run `ci/gpu/pack-onednn.sh` here first and carry `.deps`.
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

log "configure (oneDNN=$onednn)"
cmake -S . -B build/gpu -DCMAKE_BUILD_TYPE=Release -DDNNB_ONEDNN=$onednn > "$OUT/configure.log" 2>&1 || { tail -40 "$OUT/configure.log"; exit 1; }
grep "dnnblocks:" "$OUT/configure.log"
log build
cmake --build build/gpu -j"$jobs" > "$OUT/build.log" 2>&1 || { grep -E "error" -A5 "$OUT/build.log" | head -80; exit 1; }
bin=build/gpu/bin/dnnblocks
$bin devices > "$OUT/devices.txt" 2>&1
$bin devices --json > "$OUT/devices.json"
# The NVIDIA OpenCL device's id (platform order is the loader's, not fixed).
ocl_nv=$($bin devices --json | python3 -c 'import json,sys; print(next((d["id"] for d in json.load(sys.stdin)["devices"] if d["kind"]=="opencl" and "NVIDIA" in d["name"]), ""))')
log "devices: $(grep -c . "$OUT/devices.txt") lines; NVIDIA OpenCL = ${ocl_nv:-none}"

# Bench lines of one step appended to one text file; the JSON of each call kept apart.
bench() { local name=$1; shift; timeout "${cap:-120}" $bin bench "$@" --out "$OUT/$name.json" >> "$OUT/$name.txt" 2>&1; echo "  $name $*: exit $?"; }

for step in "$@"; do
  case $step in
  check)
    log check
    for backend in ${CHECK_BACKENDS:-cuda opencl avx512 onednn reference}; do
      timeout 240 $bin check --backend "$backend" --json "$OUT/check-$backend.json" > "$OUT/check-$backend.txt" 2>&1
      echo "check $backend: exit $? :: $(tail -1 "$OUT/check-$backend.txt" | head -c 300)"
      grep -E "^(FAIL|ERROR|BAD_INPUT)" "$OUT/check-$backend.txt" | head -15
    done
    (cd build/gpu && timeout 180 ctest -j4 --output-on-failure > "$OUT/ctest.txt" 2>&1); tail -3 "$OUT/ctest.txt" ;;
  variants)
    log "CUDA variants at 16384x8192"
    cap=200 bench bench-variants --backend cuda --size 16384x8192 --repetitions 20 --warmup 5
    grep -E "copy|empty" "$OUT/bench-variants.txt" ;;
  opencl)
    log "OpenCL on NVIDIA at 16384x8192, per op"
    for op in $($bin list --json | python3 -c 'import json,sys; print(" ".join(o["op"] for o in json.load(sys.stdin)["ops"]))'); do
      cap=40 bench bench-opencl --backend opencl --device "$ocl_nv" --op "$op" --size 16384x8192 --repetitions 10 --warmup 3
    done ;;
  cpu)
    log "AVX-512 and oneDNN at 16384x8192"
    cap=150 bench bench-avx512 --backend avx512 --size 16384x8192 --repetitions 5 --warmup 2 --dtype ${CPU_DTYPE:-f32}
    cap=150 bench bench-onednn --backend onednn --size 16384x8192 --repetitions 5 --warmup 2 --dtype ${CPU_DTYPE:-f32} ;;
  anchors)
    log "torch anchors"
    PYTHONUNBUFFERED=1 timeout 150 python3 ci/gpu/torch_anchors.py "$OUT/torch.json" > "$OUT/torch.txt" 2>&1; tail -5 "$OUT/torch.txt" ;;
  report)
    log "roofline, bench, report"
    [ -x ci/gpu/report-h200.sh ] && bash ci/gpu/report-h200.sh "$bin" "$OUT" "$ocl_nv" ;;
  *) echo "unknown step '$step'"; exit 2 ;;
  esac
done
log done
