#!/usr/bin/env bash
# Real bench runs of the same build on this machine: a base of two runs pooled (as
# `ci/gate.sh --refresh` makes a baseline) and a candidate run, judged as ci/gate.sh judges
# (compare; ambiguous cases rerun in fresh processes, up to twice): the gate must pass. Then one
# case slowed by PCT (default 100: the time doubled) with the bench's --slowdown (a real delay
# inside the timed region) must fail it (exit 1). Small sizes on the CPU backends: about a
# minute. The 20% rule itself is proven on fixed data (tests/compare/data, compare.exit_codes
# and test_regression.cpp): on a shared 2-vCPU CI machine whole runs shift by 20% from one
# process to the next (enough for a 20% step to measure "faster"), so a real step must be larger.
# On a machine so noisy that 3x the cv exceeds PCT, the second part only reports.
#   same_build_bench.sh BIN REPO_DIR
set -u
bin=$(realpath "$1")
# shellcheck source=../../ci/gate.sh
source "$2/ci/gate.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
select=(--op softmax --device cpu:0 --size 64x2048)
export GATE_BENCH_TIMING="--repetitions 10"

# The base as a refreshed baseline is: two runs pooled (ci/gate.sh pool_bench_runs). On a
# shared host the load can change between the base and the candidate, moving whole groups
# of cases at once (docs/gating.md, CPU figures): a failure is retried once with fresh runs,
# and only two failures in a row fail the test (a slower build fails both).
for attempt in 1 2; do
  for run in a1 a2 b; do
    "$bin" bench "${select[@]}" $GATE_BENCH_TIMING --out "$tmp/$run.json" > "$tmp/bench-$run.txt" 2>&1
    rc=$?; [ $rc -eq 0 ] || fail "bench run $run exited $rc: $(tail -5 "$tmp/bench-$run.txt")"
  done
  pool_bench_runs "$tmp/a.json" "$tmp/a1.json" "$tmp/a2.json" || fail "could not pool the base runs"
  # The same build is judged at a 25% threshold (SAME_BUILD_THRESHOLD), not the gate's 5%:
  # between processes, whole runs on a shared 2-vCPU VM move together by 9-20% (softmax
  # 64x2048 on avx512, onednn and the reference), which is the machine, not the method; the
  # method's 5% rule is proven on fixed data (compare.exit_codes, test_regression.cpp) and on
  # the H200 (0 of 61 same-build cases flagged at 5%, docs/gating.md).
  GATE_THRESHOLD=${SAME_BUILD_THRESHOLD:-25} judge_bench "$bin" "$tmp/a.json" "$tmp/b.json" "$tmp/same"
  rc=$?
  echo "attempt $attempt, first comparison: $(tail -1 "$tmp/same/bench-compare-0.txt")"
  [ $rc -eq 0 ] && break
  [ $attempt -eq 2 ] && fail "two runs of the same build exited $rc twice, want 0: $(cat "$tmp/same/bench-compare.txt")"
  echo "attempt 1 failed, retrying with fresh runs: $(cat "$tmp/same/bench-compare.txt")"
done

pct=${SLOWDOWN_PCT:-100}
# The quietest case of the base (smallest spread of its repetitions), slowed down by PCT in
# fresh runs (its reruns slowed too, as a slower build would be).
victim=$(python3 - "$tmp/a.json" <<'PY'
import json, statistics, sys
def spread(t):
    m = statistics.median(t)
    return statistics.median(abs(x - m) for x in t) / m
ok = [r for r in json.load(open(sys.argv[1]))["results"] if r["status"] == "ok"]
print(min(ok, key=lambda r: spread(r["repetition_times_s"]))["case_id"] if ok else "")
PY
)
[ -n "$victim" ] || fail "no ok case in the base runs"
# A fresh base of the victim right before its slowed run: a whole run measured minutes
# earlier can sit 20-100% off on this shared host, the step must be judged against the same
# conditions (as ci/gpu/gate-measure.sh does per trial).
"$bin" bench --case "$victim" $GATE_BENCH_TIMING --out "$tmp/victim-base.json" > "$tmp/bench-victim-base.txt" 2>&1
rc=$?; [ $rc -eq 0 ] || fail "bench of the victim exited $rc: $(tail -5 "$tmp/bench-victim-base.txt")"
"$bin" bench --case "$victim" $GATE_BENCH_TIMING --slowdown "$victim=$pct" --out "$tmp/slow.json" > "$tmp/bench-slow.txt" 2>&1
rc=$?; [ $rc -eq 0 ] || fail "bench --slowdown exited $rc: $(tail -5 "$tmp/bench-slow.txt")"
judge_bench "$bin" "$tmp/victim-base.json" "$tmp/slow.json" "$tmp/slow" --slowdown "$victim=$pct"
rc=$?
if [ $rc -ne 1 ]; then
  # The gate never fails on less than 3x the runs' cv: on a machine that noisy, PCT is below
  # what it may call a regression, and not catching it is the rule working, not a bug.
  threshold=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["bench"]["timings"][0]["threshold"])' \
              "$tmp/slow/bench-compare.json" 2> /dev/null || echo 0)
  python3 -c "import sys; sys.exit(0 if $threshold > $pct / 100 else 1)" ||
    fail "$pct% slowdown of $victim exited $rc, want 1: $(cat "$tmp/slow/bench-compare.txt")"
  echo "NOTE: this machine is too noisy to judge a $pct% step (threshold $threshold = 3 x cv): not failing"
fi
echo "same build passes; injected $pct% slowdown: exit $rc; OK"
