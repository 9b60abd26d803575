#!/usr/bin/env bash
# The main job: install what is missing, build, then on every device found: list devices,
# check every backend against the fixtures, and write the results under reports/out/<host>/.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
host=$(hostname)
out="reports/out/$host"
mkdir -p "$out"

bash ci/install-deps.sh
cmake --preset default
cmake --build --preset default -j"$jobs"
bin=build/default/bin/dnnblocks

$bin devices | tee "$out/devices.txt"
$bin devices --json > "$out/devices.json"
$bin list | tee "$out/coverage.txt"

set +e
$bin check --json "$out/check.json" --junit "$out/check.junit.xml" | tee "$out/check.txt"
check_rc=${PIPESTATUS[0]}
# Interim bench (issue 5 replaces it with the Google Benchmark based one and the HTML report):
# the decode-like shape on every backend and device found, a few seconds per backend.
$bin bench --size 64x8192 --repetitions 20 --warmup 3 --out "$out/bench.json" | tee "$out/bench.txt"
bench_rc=${PIPESTATUS[0]}
set -e
echo "run.sh: check exit code $check_rc, bench exit code $bench_rc; results in $out/"
[ "$check_rc" -ne 0 ] && exit "$check_rc"
exit "$bench_rc"
