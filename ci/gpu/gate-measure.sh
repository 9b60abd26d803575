#!/usr/bin/env bash
# Measures the regression gate's two error rates on this machine (docs/gating.md), judging
# exactly as ci/gate.sh does (judge_bench: compare, rerun ambiguous and slower cases up to
# GATE_RERUNS times in fresh processes, then ambiguous fails):
#   1. false alarms: the family-1 bench of one build, a base of MEASURE_BASE_RUNS runs pooled
#      (as a refreshed baseline) and one more run judged against it. Share of cases flagged
#      (regression or ambiguous) on the first comparison, and failing at the end. Target: at
#      most 1%.
#   2. detection: MEASURE_TRIALS times, a fresh base of one case (MEASURE_BASE_RUNS runs
#      pooled), then a run of it with
#      `--slowdown CASE=PCT` (a real device-side delay inside the timed region), judged
#      against that base. Share caught (gate exit 1). Target: at least 95% for 5%.
#      Each trial also judges a third, unslowed run against its base (the control: a false
#      alarm rate on that case alone).
#
#   ci/gpu/gate-measure.sh BIN OUTDIR
#
# Environment (defaults: the GPU machine):
#   MEASURE_DEVICE        device (default cuda:0)
#   MEASURE_SELECT        bench flags choosing the family-1 cases (default "--backend cuda":
#                         every op's bench problems)
#   MEASURE_BENCH_EXTRA   more bench flags for every run (e.g. a ceilings file)
#   MEASURE_CASE          the case slowed down (default: the case of base run 1 whose median is the
#                         median of all, a typical kernel)
#   MEASURE_SLOWDOWN_PCT  injected slowdown in percent (default 5)
#   MEASURE_TRIALS        detection trials (default 20)
#   MEASURE_BASE_RUNS     runs pooled into each base (default GATE_REFRESH_RUNS, 3; 1 saves time)
#   GATE_BENCH_TIMING, GATE_THRESHOLD, GATE_ALPHA, GATE_NOISE, GATE_RERUNS, GATE_RERUN_SLOWER: as ci/gate.sh
#                         (the gate's defaults)
# On the CPU machine, e.g.:
#   MEASURE_DEVICE=cpu:0 MEASURE_SELECT="--backend avx512 --size 64x2048" ci/gpu/gate-measure.sh BIN OUT
# Writes OUTDIR/gate-measure.md (the figures, with the command and date), OUTDIR/gate-measure.json
# and every run and report under OUTDIR. Exit 0 when both targets are met, 1 when not, 2 when a
# run failed.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../gate.sh
source "$here/../gate.sh"

bin=${1:?usage: gate-measure.sh BIN OUTDIR}
out=${2:?usage: gate-measure.sh BIN OUTDIR}
[ -x "$bin" ] || { echo "gate-measure: BIN '$bin' is not an executable" >&2; exit 2; }
command -v python3 > /dev/null || { echo "gate-measure: python3 is needed to read the results" >&2; exit 2; }
mkdir -p "$out"
device=${MEASURE_DEVICE:-cuda:0}
selection=${MEASURE_SELECT:---backend cuda}
extra=${MEASURE_BENCH_EXTRA:-}
pct=${MEASURE_SLOWDOWN_PCT:-5}
trials=${MEASURE_TRIALS:-20}
base_runs=${MEASURE_BASE_RUNS:-$GATE_REFRESH_RUNS}
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
SECONDS=0
log() { echo "== $(date +%T) gate-measure: $*"; }

# bench NAME FLAGS...: one run into OUTDIR/NAME.json; stops the measurement when it fails.
bench() {
  local name=$1; shift
  # shellcheck disable=SC2086  # the flag lists split into words on purpose
  "$bin" bench "$@" $GATE_BENCH_TIMING $extra --out "$out/$name.json" > "$out/$name.txt" 2>&1
  local rc=$?
  if [ $rc -eq 2 ] || [ ! -s "$out/$name.json" ]; then
    echo "gate-measure: bench $name exited $rc: $(tail -3 "$out/$name.txt")" >&2
    exit 2
  fi
}

# Counts of a judge_bench directory: "<flagged on the first comparison> <failing at the end> <ok cases>"
# and the first comparison's change of one case.
counts() {  # counts DIR
  python3 - "$1" <<'PY'
import json, sys
d = sys.argv[1]
first = json.load(open(d + "/bench-compare-0.json"))["bench"]["timings"]
final = json.load(open(d + "/bench-compare.json"))["bench"]["timings"]
bad = ("regression", "now failing", "ambiguous")
print(sum(t["verdict"] in bad for t in first), sum(t["verdict"] in bad for t in final), len(first),
      "%+.2f%%" % (100 * first[0]["change"]) if len(first) == 1 else "-", first[0]["verdict"].replace(" ", "_") if len(first) == 1 else "-")
PY
}

# base NAME FLAGS...: base_runs bench runs pooled into OUTDIR/NAME.json, as `ci/gate.sh
# --refresh` makes a baseline.
base() {
  local name=$1 r runs=()
  shift
  for ((r = 1; r <= base_runs; r++)); do
    bench "$name-$r" "$@"
    runs+=("$out/$name-$r.json")
  done
  pool_bench_runs "$out/$name.json" "${runs[@]}" || { echo "gate-measure: could not pool $name" >&2; exit 2; }
}

# --- 1. false alarms: the same build, a base of base_runs runs pooled and one more run
log "$base_runs base runs and a candidate run of '$selection' on $device"
# shellcheck disable=SC2086
base run-base --device "$device" $selection
# shellcheck disable=SC2086
bench run-candidate --device "$device" $selection
judge_bench "$bin" "$out/run-base.json" "$out/run-candidate.json" "$out/same-build"
same_rc=$?
[ $same_rc -eq 2 ] && { echo "gate-measure: compare of the two runs: $(cat "$out/same-build/bench-compare.txt")" >&2; exit 2; }
read -r same_first same_final same_cases _ _ <<< "$(counts "$out/same-build")"
# How loud the runs are: the cases whose threshold is the plain GATE_THRESHOLD (3x their noise
# is below it, so a step of that size can be caught at all), and the median threshold.
read -r at_floor median_threshold <<< "$(python3 - "$out/same-build/bench-compare-0.json" <<'PY'
import json, sys
t = sorted(x["threshold"] for x in json.load(open(sys.argv[1]))["bench"]["timings"])
o = json.load(open(sys.argv[1]))["options"]["threshold_pct"] / 100
print(sum(v <= o + 1e-12 for v in t), "%.1f%%" % (100 * t[len(t) // 2]) if t else "-")
PY
)"
log "same build: $same_first of $same_cases flagged on the first comparison, $same_final after reruns"

# --- 2. detection: one case slowed down by pct, against a fresh base, trials times
case_id=${MEASURE_CASE:-$(python3 - "$out/run-base-1.json" <<'PY'
import json, sys
ok = sorted((r["median_s"], r["case_id"]) for r in json.load(open(sys.argv[1]))["results"] if r["status"] == "ok")
print(ok[len(ok) // 2][1] if ok else "")
PY
)}
[ -n "$case_id" ] || { echo "gate-measure: run 1 has no ok case to slow down" >&2; exit 2; }
log "detection: $trials trials of $case_id slowed by $pct%"
caught=0 control_flagged=0
trial_lines=()
for ((t = 1; t <= trials; t++)); do
  base "trial-$t-base" --case "$case_id"
  bench "trial-$t-slow" --case "$case_id" --slowdown "$case_id=$pct"
  bench "trial-$t-control" --case "$case_id"
  judge_bench "$bin" "$out/trial-$t-base.json" "$out/trial-$t-slow.json" "$out/trial-$t/slow" --slowdown "$case_id=$pct"
  slow_rc=$?
  judge_bench "$bin" "$out/trial-$t-base.json" "$out/trial-$t-control.json" "$out/trial-$t/control"
  control_rc=$?
  { [ $slow_rc -eq 2 ] || [ $control_rc -eq 2 ]; } && { echo "gate-measure: trial $t: compare failed (see $out/trial-$t)" >&2; exit 2; }
  [ $slow_rc -eq 1 ] && caught=$((caught + 1))
  [ $control_rc -eq 1 ] && control_flagged=$((control_flagged + 1))
  read -r _ _ _ slow_change slow_first <<< "$(counts "$out/trial-$t/slow")"
  read -r _ _ _ control_change control_first <<< "$(counts "$out/trial-$t/control")"
  trial_lines+=("| $t | $slow_change | $slow_first | $([ $slow_rc -eq 1 ] && echo caught || echo missed) | $control_change | $control_first | $([ $control_rc -eq 1 ] && echo "false alarm" || echo pass) |")
  log "trial $t: slowed $slow_change ($slow_first) -> $([ $slow_rc -eq 1 ] && echo caught || echo missed); control $control_change"
done

# --- summary
pass_false=$(python3 -c "print(int($same_final <= 0.01 * $same_cases))")
pass_detect=$(python3 -c "print(int($caught >= 0.95 * $trials))")
summary=$out/gate-measure.md
{
  echo "# Gate measurement: $device, $started"
  echo
  echo "Command: \`MEASURE_DEVICE=$device MEASURE_SELECT=\"$selection\" MEASURE_SLOWDOWN_PCT=$pct MEASURE_TRIALS=$trials MEASURE_BASE_RUNS=$base_runs" \
       "GATE_BENCH_TIMING=\"$GATE_BENCH_TIMING\" GATE_THRESHOLD=$GATE_THRESHOLD GATE_ALPHA=$GATE_ALPHA GATE_RERUNS=$GATE_RERUNS GATE_RERUN_SLOWER=$GATE_RERUN_SLOWER GATE_NOISE=$GATE_NOISE" \
       "ci/gpu/gate-measure.sh $bin $out\`; $(hostname), ${SECONDS}s."
  echo
  echo "| measure | result | target |"
  echo "|---|---|---|"
  echo "| same build ($base_runs base runs pooled, 1 candidate run), cases flagged on the first comparison (regression or ambiguous) | $same_first of $same_cases | |"
  echo "| same build, cases failing after up to $GATE_RERUNS reruns | $same_final of $same_cases | at most 1% ($([ "$pass_false" = 1 ] && echo met || echo NOT met)) |"
  echo "| same build, cases quiet enough that the threshold is $GATE_THRESHOLD% (3x noise below it); median threshold | $at_floor of $same_cases; $median_threshold | |"
  echo "| $pct% slowdown of \`$case_id\` caught | $caught of $trials | at least 95% ($([ "$pass_detect" = 1 ] && echo met || echo NOT met)) |"
  echo "| same case unslowed (control), false alarms | $control_flagged of $trials | |"
  echo
  echo "| trial | slowed: change | first verdict | gate | control: change | first verdict | gate |"
  echo "|---:|---:|---|---|---:|---|---|"
  printf '%s\n' "${trial_lines[@]}"
  echo
  echo "Same-build reports: $out/same-build/bench-compare.md; each trial's under $out/trial-N/."
} > "$summary"
python3 - "$out/gate-measure.json" <<PY
import json, sys
json.dump({"device": "$device", "date": "$started", "select": "$selection", "timing": "$GATE_BENCH_TIMING",
           "base_runs": $base_runs, "threshold_pct": $GATE_THRESHOLD, "alpha": $GATE_ALPHA, "reruns": $GATE_RERUNS, "rerun_slower": $GATE_RERUN_SLOWER, "noise": "$GATE_NOISE",
           "same_build": {"cases": $same_cases, "flagged_first": $same_first, "failing_after_reruns": $same_final,
                          "cases_at_threshold": $at_floor, "median_threshold": "$median_threshold"},
           "detection": {"case": "$case_id", "slowdown_pct": $pct, "trials": $trials, "caught": $caught,
                         "control_false_alarms": $control_flagged}}, open(sys.argv[1], "w"), indent=1)
PY
cat "$summary"
[ "$pass_false" = 1 ] && [ "$pass_detect" = 1 ]
