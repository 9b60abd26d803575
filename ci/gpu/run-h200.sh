#!/usr/bin/env bash
# One call on the GPU machine: set up (OpenCL ICDs, the carried oneDNN), build, then the steps
# named on the command line, each under its own time cap, everything written under $OUT (the
# device tool brings it back).
#   bash ci/gpu/run-h200.sh check variants opencl cpu anchors report
# Steps:
#   check     conformance (CHECK_BACKENDS, default cuda opencl avx512 onednn reference, "" none:
#             ctest only; every
#             variant, every device of the kind; CHECK_ARGS narrows, e.g. "--op gelu"; "opencl/"
#             is the defaults only; CHECK_DEVICE one device, nvidia-opencl = the NVIDIA OpenCL
#             device; CHECK_CAP seconds per backend, default 240); ctest unless NO_CTEST=1,
#             CTEST_ARGS narrows it (e.g. "-R Avx512Math": the AVX-512 math sweeps only)
#   variants  CUDA defaults and variants at 16384x8192, every dtype (which variant to promote)
#   opencl    OpenCL on NVIDIA at 16384x8192, per op so a slow op shows which it is
#   cpu       AVX-512 and oneDNN at 16384x8192 on the host CPU, with the CPU copy probe
#   cpu-rounds  the same in CPU_ROUNDS rounds, each against its own probe (ci/gpu/cpu_rounds.py)
#   targets-cuda, targets-opencl  the issue-4 figures of that backend in one call: ceilings, every
#             default at the bench problems and the broadcasts (cuda: with PyTorch's figures and
#             ci/gpu/perf_table.py's table); TARGETS_CAP caps each op's bench (60 s); TARGETS_OPS
#             narrows the ops (default every op); TARGETS_DEVICE another device (default cuda:0 or the
#             NVIDIA OpenCL device)
#   rounds    ROUND_OPS="rmsnorm softmax" ROUND_DTYPES="bf16 f16": those ops' CUDA defaults and
#             variants at 16384x8192 in ROUNDS (2) interleaved rounds against one measured copy
#             ($OUT/rounds.tgz; the summary lines printed), after a change to compare variants
#   knob      KNOB=ENV_NAME KNOB_VALUES="0 1024" KNOB_OPS="exp gelu": the ops timed under each
#             value of an environment switch, round by round (ci/gpu/knob_sweep.py); see the step
#   anchors   PyTorch's figures (ci/gpu/torch_anchors.py)
#   rebench   REBENCH="backend device op,op;..." re-times ops (device nvidia-opencl = the NVIDIA
#             OpenCL device; backend may be a comma list, e.g. opencl,opencl/legacy) into
#             $OUT/rebench.tgz; REBENCH_ARGS adds bench flags, e.g. "--size 16384x8192"
#   reference the float64 reference at 64x8192 on the host CPU ($OUT/bench-reference.json)
#   verify    per-op check of VERIFY_BACKENDS with a fallback to .fallback/kernels/<backend>
#   ncu       NCU_CASES="case;..." through Nsight Compute (NCU_KERNELS regex, NCU_SASS objects,
#             NCU_SOURCE=1 the per-instruction page)
#   opencl-dump  DUMP_OPS="op:dtype ..." build logs and PTX of those ops' NVIDIA OpenCL programs
#   roofline  the measured ceilings of every device ($OUT/ceilings.json); ROOFLINE_RUNS=2 runs it
#             twice and prints the run-to-run differences (ci/gpu/roofline_repeat.py)
#   report    ci/report.sh full on cuda:0, the NVIDIA OpenCL device and cpu:0 ($OUT/report.tgz);
#             CEILINGS=file reuses measured ceilings
# CMAKE_ARGS adds configure flags, e.g. "-DDNNB_CUDA=OFF" for a call that times only the CPU and
# OpenCL (the build then takes a third of the time).
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

# Set-up files go to one tarball: the device tool brings back at most 8 files from $OUT.
setup=/tmp/setup; mkdir -p $setup
log "configure (oneDNN=$onednn)"
cmake -S . -B build/gpu -DCMAKE_BUILD_TYPE=Release -DDNNB_ONEDNN=$onednn ${CMAKE_ARGS:-} > $setup/configure.log 2>&1 || { tail -40 $setup/configure.log; exit 1; }
grep "dnnblocks:" $setup/configure.log
log build
cmake --build build/gpu -j"$jobs" > $setup/build.log 2>&1 || { grep -E "error" -A5 $setup/build.log | head -80; exit 1; }
bin=build/gpu/bin/dnnblocks
$bin devices > $setup/devices.txt 2>&1
$bin devices --json > $setup/devices.json
tar -czf "$OUT/setup.tgz" -C $setup .
# The NVIDIA OpenCL device's id (platform order is the loader's, not fixed).
ocl_nv=$(python3 -c 'import json,sys; print(next((d["id"] for d in json.load(sys.stdin)["devices"] if d["kind"]=="opencl" and "NVIDIA" in d["name"]), ""))' < $setup/devices.json)
all_ops=$($bin list --json | python3 -c 'import json,sys; print(" ".join(o["op"] for o in json.load(sys.stdin)["ops"]))')
log "devices: $(grep -c . $setup/devices.txt) lines; NVIDIA OpenCL = ${ocl_nv:-none}"

# Bench lines of one step appended to one text file; the JSON of each call kept apart.
bench() { local name=$1; shift; timeout "${cap:-120}" $bin bench "$@" --out "$OUT/$name.json" >> "$OUT/$name.txt" 2>&1; echo "  $name $*: exit $?"; }

for step in "$@"; do
  case $step in
  check)
    log check
    check_dev=${CHECK_DEVICE:-}; [ "$check_dev" = nvidia-opencl ] && check_dev=$ocl_nv
    for backend in ${CHECK_BACKENDS-cuda opencl avx512 onednn reference}; do
      tag=${backend//\//_}  # "opencl/" (the default only) -> check-opencl_.txt
      timeout "${CHECK_CAP:-240}" $bin check --backend "$backend" ${check_dev:+--device "$check_dev"} ${CHECK_ARGS:-} --json "$OUT/check-$tag.json" > "$OUT/check-$tag.txt" 2>&1
      echo "check $backend: exit $? :: $(tail -1 "$OUT/check-$tag.txt" | head -c 300)"
      grep -E "^(FAIL|ERROR|BAD_INPUT)" "$OUT/check-$tag.txt" | head -15
    done
    [ -n "${NO_CTEST:-}" ] || { (cd build/gpu && timeout 180 ctest -j4 --output-on-failure ${CTEST_ARGS:-} > "$OUT/ctest.txt" 2>&1); tail -3 "$OUT/ctest.txt"; } ;;
  variants)
    log "CUDA variants at 16384x8192"
    cap=200 bench bench-variants --backend cuda --size 16384x8192 --repetitions 20 --warmup 5 ${CEILINGS:+--ceilings "$CEILINGS"}
    grep -E "copy|empty" "$OUT/bench-variants.txt" ;;
  opencl)
    log "OpenCL on NVIDIA at 16384x8192, per op"
    for op in $all_ops; do
      cap=40 bench bench-opencl --backend opencl --device "$ocl_nv" --op "$op" --size 16384x8192 --repetitions 10 --warmup 3
    done ;;
  cpu)
    log "AVX-512 and oneDNN at 16384x8192"
    cap=150 bench bench-avx512 --backend avx512 --size 16384x8192 --repetitions 5 --warmup 2 --dtype ${CPU_DTYPE:-f32}
    cap=150 bench bench-onednn --backend onednn --size 16384x8192 --repetitions 5 --warmup 2 --dtype ${CPU_DTYPE:-f32} ;;
  cpu-rounds)
    # CPU_ROUNDS (default 3) rounds of: the host's ceilings (dnnblocks roofline --device cpu:0),
    # then AVX-512 and oneDNN at 16384x8192 in CPU_DTYPES (default "f32 bf16") against them.
    # ci/gpu/cpu_rounds.py takes each case's % of copy per round against that round's probe and
    # prints the median and range over rounds (the host is a shared VM whose bandwidth drifts
    # 10-25% within minutes: one round's figure is not the machine's). $OUT/cpu-rounds.tgz.
    mkdir -p /tmp/cpu-rounds
    for k in $(seq 1 "${CPU_ROUNDS:-3}"); do
      d=/tmp/cpu-rounds/round-$k; mkdir -p "$d"
      log "cpu round $k"
      timeout 120 $bin roofline --device cpu:0 --out "$d/ceilings.json" > "$d/roofline.txt" 2>&1 || echo "  roofline exit $?"
      for dt in ${CPU_DTYPES:-f32 bf16}; do
        for be in avx512 onednn; do
          timeout 200 $bin bench --backend $be --device cpu:0 --size 16384x8192 --dtype "$dt" --repetitions 5 --warmup 2 \
            --max-time 1 --ceilings "$d/ceilings.json" --out "$d/$be-$dt.json" > "$d/$be-$dt.txt" 2>&1 || echo "  $be $dt exit $?"
          tar -czf "$OUT/cpu-rounds.tgz" -C /tmp/cpu-rounds .  # kept if a later cap ends the call
        done
      done
    done
    python3 ci/gpu/cpu_rounds.py /tmp/cpu-rounds/round-* | tee /tmp/cpu-rounds/summary.md | tail -60
    tar -czf "$OUT/cpu-rounds.tgz" -C /tmp/cpu-rounds . ;;
  rounds)
    log "rounds: ${ROUND_OPS:-nothing} (${ROUND_DTYPES:-bf16}) x ${ROUNDS:-2}"
    mkdir -p /tmp/rounds
    timeout 60 $bin roofline --device cuda:0 --out /tmp/rounds/ceilings.json > /tmp/rounds/roofline.txt 2>&1
    grep -E "dram_copy|empty_launch" /tmp/rounds/roofline.txt | cut -c1-60
    for r in $(seq 1 "${ROUNDS:-2}"); do
      for op in ${ROUND_OPS:-}; do
        for dt in ${ROUND_DTYPES:-bf16}; do
          timeout 100 $bin bench --backend cuda --op "$op" --size 16384x8192 --dtype "$dt" --repetitions 20 \
            --warmup 5 --ceilings /tmp/rounds/ceilings.json >> "/tmp/rounds/round-$r.txt" 2>&1
        done
      done
      echo "  round $r (case, median us, % of copy):"
      grep -E "16384x8192" "/tmp/rounds/round-$r.txt" | awk '{print "   ", $1, $3, $8}'
    done
    tar -czf "$OUT/rounds.tgz" -C /tmp/rounds . ;;
  knob)
    # A/B of an environment switch: KNOB=NAME, KNOB_VALUES="v0 v1 ..." (v0 the baseline),
    # KNOB_OPS (ops), KNOB_DTYPES (f32), KNOB_BACKEND (avx512), KNOB_DEVICE (cpu:0),
    # KNOB_SIZE (16384x8192), KNOB_ROUNDS (2). Each round measures the device's ceilings, then
    # times each op under every value in turn, so drift within a round hits every value alike;
    # ci/gpu/knob_sweep.py gives each value's time over v0's in the same round and its % of
    # copy. $OUT/knob-NAME.tgz.
    [ -n "${KNOB:-}" ] && [ -n "${KNOB_VALUES:-}" ] && [ -n "${KNOB_OPS:-}" ] || { echo "knob: set KNOB, KNOB_VALUES and KNOB_OPS"; continue; }
    k=/tmp/knob-$KNOB; rm -rf "$k"; mkdir -p "$k"
    for round in $(seq 1 "${KNOB_ROUNDS:-2}"); do
      d=$k/round-$round; mkdir -p "$d"
      log "knob $KNOB round $round"
      timeout 120 $bin roofline --device "${KNOB_DEVICE:-cpu:0}" --out "$d/ceilings.json" > "$d/roofline.txt" 2>&1 || echo "  roofline exit $?"
      for op in $KNOB_OPS; do
        for dt in ${KNOB_DTYPES:-f32}; do
          for v in $KNOB_VALUES; do
            mkdir -p "$d/$v"
            env "$KNOB=$v" timeout 120 $bin bench --backend "${KNOB_BACKEND:-avx512}" --device "${KNOB_DEVICE:-cpu:0}" \
              --op "$op" --dtype "$dt" --size "${KNOB_SIZE:-16384x8192}" --repetitions 5 --warmup 2 --max-time 1 \
              --ceilings "$d/ceilings.json" --out "$d/$v/$op-$dt.json" >> "$d/$v/bench.txt" 2>&1 || echo "  $op $dt $KNOB=$v exit $?"
          done
        done
      done
      tar -czf "$OUT/knob-$KNOB.tgz" -C "$k" .  # kept if a later cap ends the call
    done
    python3 ci/gpu/knob_sweep.py "$KNOB" $k/round-* | tee "$k/summary.md"
    tar -czf "$OUT/knob-$KNOB.tgz" -C "$k" . ;;
  targets-cuda|targets-opencl)
    # The issue-4 figures of one backend in one call, each part under its own cap (the device
    # tool allows 600 s a call, the build takes ~120 s of it): the device's ceilings, then every
    # default at the specs' bench problems (16384x8192, 1x8192, 64x8192) and the broadcasts of
    # add, sub, mul, div; targets-cuda adds PyTorch's figures (ci/gpu/torch_anchors.py) and
    # ci/gpu/perf_table.py's table. $OUT/targets-<backend>.tgz holds every file.
    be=${step#targets-}; dev=cuda:0; [ "$be" = opencl ] && dev=$ocl_nv; dev=${TARGETS_DEVICE:-$dev}
    [ -n "$dev" ] || { echo "$step: no NVIDIA OpenCL device"; continue; }
    t=/tmp/targets-$be; rm -rf "$t"; mkdir -p "$t"
    log "$step: ceilings of $dev"
    timeout 120 $bin roofline --device "$dev" --out "$t/ceilings.json" > "$t/roofline.txt" 2>&1 || echo "  roofline exit $?"
    if [ "$be" = cuda ]; then
      log "$step: PyTorch"
      PYTHONUNBUFFERED=1 timeout 150 python3 ci/gpu/torch_anchors.py "$t/torch.json" > "$t/torch.txt" 2>&1 || echo "  anchors exit $?"
    fi
    # One bench call per op, each with the spec's bench problems (the broadcasts, softmax's scale
    # and softcap, rmsnorm's gemma form included), its own cap and its own file, so a slow op
    # loses only itself (every default in one call ran past 160 s on the H100, session 9).
    pack() { tar -czf "$OUT/targets-$be.tgz" -C "$t" .; }  # after each op: a cap that ends the call keeps the rest
    log "$step: every default at the specs' bench problems, op by op"
    for op in ${TARGETS_OPS:-$all_ops}; do
      timeout "${TARGETS_CAP:-60}" $bin bench --backend "$be/" --device "$dev" --op "$op" --repetitions 10 --max-time 0.5 \
        --ceilings "$t/ceilings.json" --out "$t/bench-$be-$op.json" > "$t/bench-$be-$op.txt" 2>&1 || echo "  $op exit $?"
      pack
    done
    if [ -f "$t/torch.json" ]; then python3 ci/gpu/perf_table.py "$t/torch.json" "$t"/bench-*.json > "$t/table.md"; tail -40 "$t/table.md"
    else grep -h "16384x8192" "$t"/bench-*.txt | cut -c1-128; fi
    pack ;;
  anchors)
    log "torch anchors"
    PYTHONUNBUFFERED=1 timeout 150 python3 ci/gpu/torch_anchors.py "$OUT/torch.json" > "$OUT/torch.txt" 2>&1; tail -5 "$OUT/torch.txt" ;;
  report)
    log "ceilings, bench of CUDA, OpenCL on NVIDIA, AVX-512, oneDNN and the reference; report (ci/report.sh full)"
    REPORT_DEVICES=${REPORT_DEVICES:-"cuda:0 $ocl_nv cpu:0"} timeout ${REPORT_CAP:-560} bash ci/report.sh "$bin" /tmp/report full | tail -30
    cp "$OUT"/torch.* /tmp/report/ 2>/dev/null; tar -czf "$OUT/report.tgz" -C /tmp/report . ;;
  rebench)
    # REBENCH="backend device op,op,..;..." re-times chosen ops at the specs' bench problems
    # (every variant) against CEILINGS, e.g. after kernel changes; results in $OUT/rebench.tgz.
    log "rebench: ${REBENCH:-nothing}"
    mkdir -p /tmp/rebench
    IFS=';' read -ra items <<< "${REBENCH:-}"
    for item in "${items[@]}"; do
      read -r backend device ops <<< "$item"
      [ "$device" = nvidia-opencl ] && device=$ocl_nv
      tag=${backend//[,\/]/_}
      for op in ${ops//,/ }; do
        timeout 150 $bin bench --backend "$backend" --device "$device" --op "$op" --repetitions 5 --max-time 1 \
          ${REBENCH_ARGS:-} ${CEILINGS:+--ceilings "$CEILINGS"} --out "/tmp/rebench/bench-$tag-$op.json" > "/tmp/rebench/bench-$tag-$op.txt" 2>&1
        echo "  $backend $op on $device: exit $?"
      done
    done
    tar -czf "$OUT/rebench.tgz" -C /tmp/rebench . ;;
  reference)
    log "reference at 64x8192 on cpu:0"
    timeout 300 $bin bench --backend reference --device cpu:0 --size 64x8192 --repetitions 3 --max-time 0.5 \
      ${CEILINGS:+--ceilings "$CEILINGS"} --out "$OUT/bench-reference.json" > "$OUT/bench-reference.txt" 2>&1
    echo "reference bench exit $?" ;;
  verify)
    # After kernel rewrites: check VERIFY_BACKENDS on every device here, op by op; when a
    # backend fails or crashes and .fallback/kernels/<backend> exists (the last version that
    # passed), put it back, rebuild and check again, so the timings that follow are of code
    # that passes. Logs in $OUT/logs.tgz.
    mkdir -p /tmp/logs
    for backend in ${VERIFY_BACKENDS:-opencl avx512}; do
      for attempt in new fallback; do
        bad=0
        for op in $all_ops; do
          timeout 90 $bin check --backend "$backend" --op "$op" > "/tmp/logs/check-$backend-$op-$attempt.txt" 2>&1
          rc=$?; [ $rc -eq 0 ] || { bad=1; echo "  $attempt $backend $op: exit $rc: $(grep -E '^(FAIL|ERROR)' "/tmp/logs/check-$backend-$op-$attempt.txt" | head -2)"; }
        done
        echo "verify $backend ($attempt): $([ $bad = 0 ] && echo all passed || echo FAILURES)"
        [ $bad = 0 ] && break
        [ $attempt = new ] && [ -d ".fallback/kernels/$backend" ] || break
        echo "verify $backend: restoring the fallback kernels and rebuilding"
        rm -rf "kernels/$backend" && cp -r ".fallback/kernels/$backend" kernels/ && cmake --build build/gpu -j"$jobs" > /tmp/logs/rebuild-$backend.log 2>&1 || { tail -20 /tmp/logs/rebuild-$backend.log; exit 1; }
      done
    done
    tar -czf "$OUT/logs.tgz" -C /tmp/logs . ;;
  roofline)
    # ROOFLINE_RUNS=N (default 1) runs it N times: the first is $OUT/ceilings.json, the others
    # ceilings-K.json, and ci/gpu/roofline_repeat.py prints the run-to-run differences.
    # REPORT_DEVICES may name the NVIDIA OpenCL device as nvidia-opencl (its id is the loader's).
    dev_args=(); for d in ${REPORT_DEVICES:-cuda:0 $ocl_nv cpu:0}; do [ "$d" = nvidia-opencl ] && d=$ocl_nv; dev_args+=(--device "$d"); done
    runs=(); for k in $(seq 1 "${ROOFLINE_RUNS:-1}"); do
      file="$OUT/ceilings.json"; [ "$k" = 1 ] || file="$OUT/ceilings-$k.json"
      log "roofline run $k"
      start=$(date +%s)
      timeout 250 $bin roofline "${dev_args[@]}" --out "$file" > "$OUT/roofline-$k.txt" 2>&1; echo "roofline run $k exit $? in $(( $(date +%s) - start )) s"
      runs+=("$file")
    done
    grep -E "^[a-z]|flops|bytes|launch" "$OUT/roofline-1.txt" | cut -c1-90
    [ ${#runs[@]} -lt 2 ] || python3 ci/gpu/roofline_repeat.py "${runs[@]}" | tee "$OUT/roofline-repeat.md" ;;
  ncu)
    # NCU_CASES="case;case;..." profiles one launch of each case's kernel (names matching
    # NCU_KERNELS, a regex) with Nsight Compute (--set full, clocks left alone), and writes the
    # SASS of NCU_SASS objects (e.g. "softmax layernorm"); NCU_SOURCE=1 adds each kernel's
    # per-instruction page (<case>-sass.csv; ci/gpu/sass_stats.py sums it); all in $OUT/ncu.tgz.
    log "ncu: ${NCU_CASES:-nothing}"
    mkdir -p /tmp/ncu
    ncu_bin=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
    IFS=';' read -ra cases <<< "${NCU_CASES:-}"
    for c in "${cases[@]}"; do
      tag=$(echo "$c" | tr -c 'a-zA-Z0-9_.=-' '_')
      timeout 150 "$ncu_bin" --clock-control none --set full --import-source no -k "regex:${NCU_KERNELS:-.}" \
        --launch-skip "${NCU_SKIP:-3}" --launch-count 1 ${NCU_SOURCE:+-o /tmp/ncu/$tag -f} $bin bench --case "$c" \
        --repetitions 2 --warmup 1 --min-time 0.00001 --max-time 0 > "/tmp/ncu/$tag.txt" 2>&1
      echo "  ncu $c: exit $?, $(grep -c . "/tmp/ncu/$tag.txt") lines"
      if [ -n "${NCU_SOURCE:-}" ]; then  # per-instruction page: executions and stall reasons of each SASS line
        timeout 60 "$ncu_bin" -i "/tmp/ncu/$tag.ncu-rep" --page source --csv --print-source sass > "/tmp/ncu/$tag-sass.csv" 2>&1
        echo "  source page: exit $?"; rm -f "/tmp/ncu/$tag.ncu-rep"
      fi
    done
    for obj in ${NCU_SASS:-}; do
      f=$(find build/gpu -name "$obj.cu.o" | head -1)
      [ -n "$f" ] && cuobjdump -sass "$f" > "/tmp/ncu/sass-$obj.txt" 2>&1
    done
    tar -czf "$OUT/ncu.tgz" -C /tmp/ncu . ;;
  opencl-dump)
    # DUMP_OPS="op:dtype ..." builds each op's NVIDIA OpenCL programs with DNNB_OPENCL_DUMP (build
    # log with -cl-nv-verbose, PTX) by checking them; $OUT/ocl-dump.tgz.
    log "OpenCL dumps: ${DUMP_OPS:-nothing}"
    mkdir -p /tmp/ocl-dump
    for item in ${DUMP_OPS:-}; do
      mkdir -p "/tmp/ocl-dump/${item//:/-}"
      DNNB_OPENCL_DUMP=/tmp/ocl-dump/${item//:/-} timeout 60 $bin check --backend opencl --device "$ocl_nv" \
        --op "${item%%:*}" --dtype "${item##*:}" > "/tmp/ocl-dump/check-${item//:/-}.txt" 2>&1
      echo "  dump $item: exit $?"
    done
    tar -czf "$OUT/ocl-dump.tgz" -C /tmp/ocl-dump . ;;
  *) echo "unknown step '$step'"; exit 2 ;;
  esac
done
log done
