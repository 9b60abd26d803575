#!/usr/bin/env bash
# The regression gate: on every device found, `dnnblocks check` and `dnnblocks bench`, then each
# device compared with the baseline of its model (ci/baselines/<model>.<kind>.json) by
# `dnnblocks compare`. Ambiguous timings (neither clearly the same nor clearly slower) are
# rerun, up to GATE_RERUNS times, before they are judged; one still ambiguous then fails.
# A case found slower is confirmed by one fresh run first (GATE_RERUN_SLOWER=0: not).
# A device without a baseline is reported and fails the gate (GATE_ALLOW_NO_BASELINE=1 lets
# it pass with the report). docs/gating.md says why the rule is what it is and how well it works.
#
#   ci/gate.sh [BIN [OUTDIR]]            gate every device
#   ci/gate.sh --refresh [BIN [OUTDIR]]  write new baselines (ci/baselines/README.md)
#
# BIN defaults to build/default/bin/dnnblocks, OUTDIR to reports/gate/<host>. One process per
# device, run by CTest: every CUDA device is one test holding one GPU of a CTest resource spec
# (generated from the devices found, or GATE_RESOURCE_SPEC, e.g. ci/gpu/ctest-resources.json),
# so GPUs are gated in parallel, each by its own process; CPU and OpenCL devices share the
# host (PoCL runs on the CPU, OpenCL on NVIDIA on a GPU) and run alone (RUN_SERIAL).
#
# Environment:
#   GATE_DEVICES        device ids to gate (default: every device `dnnblocks devices` finds)
#   GATE_BASELINES      baselines folder (default ci/baselines)
#   GATE_BENCH_SELECT   bench flags choosing cases (default none: every op's bench problems)
#   GATE_BENCH_TIMING   bench flags for timing, also given to reruns (default --repetitions 10)
#   GATE_CHECK_ARGS     extra check flags
#   GATE_THRESHOLD      slowdown in percent that may fail (default 5); GATE_ALPHA (default 0.05)
#   GATE_NOISE          robust (default) or cv: the noise measure under the 3x noise floor
#   GATE_RERUNS         reruns of ambiguous cases before judging them (default 2)
#   GATE_RERUN_SLOWER   1 (default): a case found slower is confirmed by one fresh run that
#                       replaces its result; 0: slower cases are judged at once
#   GATE_ALLOW_NO_BASELINE=1   report a device without a baseline but let it pass
#   GATE_REFRESH_RUNS   bench runs pooled into a refreshed baseline (default 3)
#   GATE_RESOURCE_SPEC  CTest resource spec file for the GPUs (default: generated, one slot per GPU)
# Exit: 0 every device matches its baseline; 1 a regression (timing, now failing,
# conformance), a case still ambiguous after the reruns, or a device without a baseline;
# 2 bad input (a flag, a file, a baseline that cannot be read).
set -uo pipefail

gate_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_dir=$(dirname "$gate_dir")

: "${GATE_BASELINES:=$repo_dir/ci/baselines}"
: "${GATE_BENCH_SELECT:=}"
: "${GATE_BENCH_TIMING:=--repetitions 10}"
: "${GATE_CHECK_ARGS:=}"
: "${GATE_THRESHOLD:=5}"
: "${GATE_ALPHA:=0.05}"
: "${GATE_RERUNS:=2}"
: "${GATE_RERUN_SLOWER:=1}"
: "${GATE_NOISE:=robust}"
: "${GATE_REFRESH_RUNS:=3}"
: "${GATE_ALLOW_NO_BASELINE:=0}"

gate_log() { echo "gate: $*" >&2; }

# "NVIDIA H200" -> "NVIDIA-H200": the model as a file name.
model_file_name() { printf '%s' "$1" | sed -E 's/[^A-Za-z0-9._]+/-/g; s/^-+//; s/-+$//'; }

# The baseline of a device: its model's name, then its kind (a GPU's CUDA and OpenCL devices
# share a model name but not their cases).
baseline_path() {  # baseline_path MODEL KIND
  echo "$GATE_BASELINES/$(model_file_name "$1").$2.json"
}

# Lines "id<TAB>kind<TAB>name" of every device the binary finds.
list_devices() {  # list_devices BIN
  "$1" devices --json | python3 -c '
import json, sys
for d in json.load(sys.stdin)["devices"]:
    print("\t".join([d["id"], d["kind"], d["name"]]))'
}

# judge_bench BIN BASE CANDIDATE DIR [EXTRA BENCH FLAGS FOR RERUNS...]
# Compares CANDIDATE (a bench file) with BASE (bench or baseline); reruns the ambiguous cases
# with GATE_BENCH_TIMING plus the extra flags, up to GATE_RERUNS times, each rerun's
# repetitions joining the candidate's (compare --rerun); the last comparison fails ambiguous
# cases too. With GATE_RERUN_SLOWER=1, each case slower in the first comparison gets one
# confirmation run, which replaces its result (compare --replace): a slowdown of that one
# process, which the repetitions inside it cannot show, is cleared by a fresh one, and a real
# one is seen twice. Writes DIR/bench-compare.{md,xml,json,txt} (and
# DIR/bench-compare-<round>.{json,txt}, rerun-<round>.json, confirm-1.json of the rounds);
# returns compare's exit code. Also used by ci/gpu/gate-measure.sh.
judge_bench() {
  local bin=$1 base=$2 candidate=$3 dir=$4
  shift 4
  local extra=("$@") reruns=() rc round
  local common=(--threshold "$GATE_THRESHOLD" --alpha "$GATE_ALPHA" --noise "$GATE_NOISE")
  mkdir -p "$dir"
  rm -f "$dir"/ambiguous-*.txt "$dir"/slower-*.txt "$dir"/rerun-*.json "$dir"/confirm-*.json  # a previous gate's
  local lists=(--ambiguous-list "$dir/ambiguous-0.txt")
  [ "$GATE_RERUN_SLOWER" = 1 ] && lists+=(--slower-list "$dir/slower-0.txt")
  "$bin" compare "$base" "$candidate" "${common[@]}" "${lists[@]}" --json "$dir/bench-compare-0.json" > "$dir/bench-compare-0.txt" 2>&1
  rc=$?
  # rerun_cases LIST OUT: one bench process for the case ids in LIST; false when none or it failed.
  rerun_cases() {
    local cases=() id
    while IFS= read -r id; do [ -n "$id" ] && cases+=(--case "$id"); done < "$1"
    [ ${#cases[@]} -gt 0 ] || return 1
    gate_log "$(basename "$dir"): $(basename "$2" .json): $((${#cases[@]} / 2)) case(s)"
    # shellcheck disable=SC2086  # GATE_BENCH_TIMING holds several flags
    "$bin" bench "${cases[@]}" $GATE_BENCH_TIMING "${extra[@]}" --out "$2" > "${2%.json}.txt" 2>&1
    [ -s "$2" ] || { gate_log "$(basename "$dir"): $(basename "$2") not written: $(tail -3 "${2%.json}.txt")"; return 1; }
  }
  for ((round = 1; round <= GATE_RERUNS; round++)); do
    [ $rc -eq 2 ] && break
    local before=${#reruns[@]}
    # Slower cases of the first comparison: one confirmation run each, which replaces the
    # result (a slowdown seen twice stands). Ambiguous cases: reruns that join.
    if [ $round -eq 1 ] && [ -s "$dir/slower-0.txt" ] && rerun_cases "$dir/slower-0.txt" "$dir/confirm-1.json"; then
      reruns+=(--replace "$dir/confirm-1.json")
    fi
    rerun_cases "$dir/ambiguous-$((round - 1)).txt" "$dir/rerun-$round.json" && reruns+=(--rerun "$dir/rerun-$round.json")
    [ ${#reruns[@]} -eq "$before" ] && break
    lists=(--ambiguous-list "$dir/ambiguous-$round.txt")
    "$bin" compare "$base" "$candidate" "${common[@]}" "${reruns[@]}" "${lists[@]}" --json "$dir/bench-compare-$round.json" \
      > "$dir/bench-compare-$round.txt" 2>&1
    rc=$?
  done
  "$bin" compare "$base" "$candidate" "${common[@]}" "${reruns[@]}" --fail-on-ambiguous \
    --md "$dir/bench-compare.md" --junit "$dir/bench-compare.xml" --json "$dir/bench-compare.json" > "$dir/bench-compare.txt" 2>&1
  return $?
}

# pool_bench_runs OUT RUN1 RUN2...: RUN1 with the repetitions of every case that ran ok in
# all runs pooled (median, min and cv recomputed). A baseline measured in several processes:
# one process that ran fast or slow on its own (placement, clocks, neighbours) does not
# become the reference, and the pooled spread shows how much processes disagree.
pool_bench_runs() {
  python3 - "$@" <<'PY'
import json, statistics, sys
out, first, more = sys.argv[1], sys.argv[2], sys.argv[3:]
doc = json.load(open(first))
others = [{r["case_id"]: r for r in json.load(open(p))["results"]} for p in more]
for r in doc["results"]:
    runs = [o.get(r["case_id"]) for o in others]
    if r["status"] != "ok" or any(x is None or x["status"] != "ok" for x in runs):
        continue
    for x in runs:
        r["repetition_times_s"] += x["repetition_times_s"]
    t = r["repetition_times_s"]
    r["repetitions"], r["median_s"], r["min_s"] = len(t), statistics.median(t), min(t)
    r["cv"] = statistics.stdev(t) / statistics.fmean(t) if len(t) > 1 else 0.0
doc.setdefault("fingerprint", {})["pooled_runs"] = 1 + len(more)
with open(out, "w") as f:
    json.dump(doc, f, indent=1)
PY
}

# Writes a baseline file: {"schema_version":1,"kind":"baseline","device_model":...,"bench":...,"check":...}
write_baseline() {  # write_baseline MODEL BENCH CHECK OUT
  python3 - "$@" <<'PY'
import json, sys
model, bench, check, out = sys.argv[1:5]
doc = {"schema_version": 1, "kind": "baseline", "device_model": model,
       "bench": json.load(open(bench)), "check": json.load(open(check))}
with open(out, "w") as f:
    json.dump(doc, f, indent=1)
    f.write("\n")
PY
}

# One device, as one CTest test: check, bench, compare. "cuda" means the GPU CTest allotted
# (CTEST_RESOURCE_GROUP_0_GPUS=id:3,slots:1 -> cuda:3). Writes OUTDIR/<device>/verdict.txt:
# "<code> <device> <model>: <why>".
device_job() {  # device_job DEVICE BIN OUTDIR MODE
  local id=$1 bin=$2 out=$3 mode=$4
  if [ "$id" = cuda ]; then
    local allotted=${CTEST_RESOURCE_GROUP_0_GPUS:-}
    if [ -z "$allotted" ]; then
      gate_log "CTest allotted no GPU (CTEST_RESOURCE_GROUP_0_GPUS unset): run through ci/gate.sh, which passes --resource-spec-file"
      return 2
    fi
    id="cuda:$(sed -E 's/^id:([^,]*),.*/\1/' <<< "$allotted")"
  fi
  local dir="$out/${id//:/-}"
  mkdir -p "$dir"
  local line kind name
  line=$(list_devices "$bin" | awk -F'\t' -v id="$id" '$1 == id')
  if [ -z "$line" ]; then
    echo "2 $id ?: device not found by '$bin devices'" | tee "$dir/verdict.txt"
    return 2
  fi
  kind=$(cut -f2 <<< "$line")
  name=$(cut -f3 <<< "$line")
  local baseline
  baseline=$(baseline_path "$name" "$kind")
  verdict() { echo "$1 $id $name: $2" | tee "$dir/verdict.txt"; return "$1"; }

  # shellcheck disable=SC2086  # the GATE_* flag lists split into words on purpose
  "$bin" check --device "$id" $GATE_CHECK_ARGS --json "$dir/check.json" --junit "$dir/check.xml" > "$dir/check.txt" 2>&1
  local check_rc=$?
  [ $check_rc -eq 2 ] && { verdict 2 "check: bad input: $(tail -2 "$dir/check.txt" | tr '\n' ' ')"; return; }
  # shellcheck disable=SC2086
  "$bin" bench --device "$id" $GATE_BENCH_SELECT $GATE_BENCH_TIMING --out "$dir/bench.json" > "$dir/bench.txt" 2>&1
  local bench_rc=$?
  [ $bench_rc -eq 2 ] || [ ! -s "$dir/bench.json" ] && { verdict 2 "bench: exit $bench_rc: $(tail -2 "$dir/bench.txt" | tr '\n' ' ')"; return; }

  if [ "$mode" = refresh ]; then
    local runs=("$dir/bench.json") r
    for ((r = 2; r <= GATE_REFRESH_RUNS; r++)); do
      # shellcheck disable=SC2086
      "$bin" bench --device "$id" $GATE_BENCH_SELECT $GATE_BENCH_TIMING --out "$dir/bench-$r.json" > "$dir/bench-$r.txt" 2>&1
      [ -s "$dir/bench-$r.json" ] || { verdict 2 "bench run $r: $(tail -2 "$dir/bench-$r.txt" | tr '\n' ' ')"; return; }
      runs+=("$dir/bench-$r.json")
    done
    mkdir -p "$GATE_BASELINES"
    if ! pool_bench_runs "$dir/bench-pooled.json" "${runs[@]}" ||
       ! write_baseline "$name" "$dir/bench-pooled.json" "$dir/check.json" "$baseline"; then
      verdict 2 "could not write $baseline"
      return
    fi
    verdict 0 "baseline written to $baseline (${#runs[@]} bench runs pooled; check exit $check_rc, bench exit $bench_rc)"
    return
  fi
  if [ ! -f "$baseline" ]; then
    local code=1
    [ "$GATE_ALLOW_NO_BASELINE" = 1 ] && code=0
    verdict $code "NO BASELINE: $baseline does not exist; results kept in $dir (ci/baselines/README.md: how to add one)"
    return
  fi
  judge_bench "$bin" "$baseline" "$dir/bench.json" "$dir"
  local bench_verdict=$?
  "$bin" compare "$baseline" "$dir/check.json" --md "$dir/check-compare.md" --junit "$dir/check-compare.xml" > "$dir/check-compare.txt" 2>&1
  local check_verdict=$?
  local worst=$(( bench_verdict > check_verdict ? bench_verdict : check_verdict ))
  local why
  why="bench $(tail -1 "$dir/bench-compare.txt"); check $(tail -1 "$dir/check-compare.txt")"
  verdict $worst "$([ $worst -eq 0 ] && echo PASS || echo FAIL): $why (reports: $dir/bench-compare.md, $dir/check-compare.md)"
}

gate_main() {
  local mode=gate
  [ "${1:-}" = --refresh ] && { mode=refresh; shift; }
  local bin=${1:-$repo_dir/build/default/bin/dnnblocks}
  local out=${2:-$repo_dir/reports/gate/$(hostname)}
  [ -x "$bin" ] || { gate_log "BIN '$bin' is not an executable (build first, or pass the path)"; return 2; }
  command -v python3 > /dev/null || { gate_log "python3 is needed to read 'dnnblocks devices --json'"; return 2; }
  bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
  mkdir -p "$out" && out=$(cd "$out" && pwd)

  local devices=() models=() id kind name
  while IFS=$'\t' read -r id kind name; do
    if [ -n "${GATE_DEVICES:-}" ] && [[ " $GATE_DEVICES " != *" $id "* ]]; then continue; fi
    # A refresh writes one baseline per model: the first device of each model measures it.
    if [ $mode = refresh ] && [[ " ${models[*]} " == *" $kind/$name "* ]]; then continue; fi
    devices+=("$id")
    models+=("$kind/$name")
  done < <(list_devices "$bin")
  [ ${#devices[@]} -gt 0 ] || { gate_log "no device to gate (GATE_DEVICES='${GATE_DEVICES:-}')"; return 2; }
  gate_log "devices: ${devices[*]} ($mode; results in $out)"

  # The CTest project: one test per device; CUDA tests take their GPU from the resource spec.
  local ctest_dir="$out/ctest" gpus=()
  rm -rf "$ctest_dir" "$out"/*/verdict.txt
  mkdir -p "$ctest_dir"
  {
    echo "# Generated by ci/gate.sh: one test per device."
    for id in "${devices[@]}"; do
      local test=gate.${id//:/-}
      if [[ $id == cuda:* ]]; then
        gpus+=("${id#cuda:}")
        test=gate.gpu-${#gpus[@]}
        echo "add_test([=[$test]=] bash [=[$gate_dir/gate.sh]=] --device-job cuda [=[$bin]=] [=[$out]=] $mode)"
        echo "set_tests_properties([=[$test]=] PROPERTIES RESOURCE_GROUPS gpus:1 TIMEOUT 14400)"
      else
        echo "add_test([=[$test]=] bash [=[$gate_dir/gate.sh]=] --device-job $id [=[$bin]=] [=[$out]=] $mode)"
        echo "set_tests_properties([=[$test]=] PROPERTIES RUN_SERIAL TRUE TIMEOUT 14400)"
      fi
    done
  } > "$ctest_dir/CTestTestfile.cmake"
  local spec=${GATE_RESOURCE_SPEC:-$out/ctest-resources.json}
  if [ -z "${GATE_RESOURCE_SPEC:-}" ]; then
    local entries=() g
    for g in "${gpus[@]}"; do entries+=("{\"id\": \"$g\", \"slots\": 1}"); done
    local joined
    joined=$(IFS=,; echo "${entries[*]}")
    echo "{\"version\": {\"major\": 1, \"minor\": 0}, \"local\": [{\"gpus\": [$joined]}]}" > "$spec"
  fi
  local jobs=$(( ${#gpus[@]} > 0 ? ${#gpus[@]} : 1 ))
  ctest --test-dir "$ctest_dir" --resource-spec-file "$spec" -j "$jobs" --output-on-failure \
    --output-junit "$out/gate-ctest.xml" > "$out/gate-ctest.txt" 2>&1
  tail -4 "$out/gate-ctest.txt" >&2

  # The verdict of every device, worst first; a device whose job died has none.
  local worst=0 code summary="$out/gate-summary.md"
  {
    echo "# dnnblocks gate ($mode): $(date -u +%Y-%m-%dT%H:%M:%SZ), $(hostname), $bin"
    echo
  } > "$summary"
  local seen=0 f
  for f in "$out"/*/verdict.txt; do
    [ -f "$f" ] || continue
    seen=$((seen + 1))
    code=$(cut -d' ' -f1 < "$f")
    echo "- $(cut -d' ' -f2- < "$f")" >> "$summary"
    [ "$code" -gt "$worst" ] && worst=$code
  done
  if [ $seen -lt ${#devices[@]} ]; then
    echo "- $(( ${#devices[@]} - seen )) device job(s) left no verdict: see $out/gate-ctest.txt" >> "$summary"
    [ "$worst" -lt 1 ] && worst=1
  fi
  echo >> "$summary"
  echo "**gate: $([ "$worst" -eq 0 ] && echo PASS || echo FAIL) (exit $worst)**" >> "$summary"
  cat "$summary"
  return "$worst"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  if [ "${1:-}" = --device-job ]; then
    shift
    device_job "$@"
    exit $?
  fi
  gate_main "$@"
  exit $?
fi
