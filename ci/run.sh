#!/usr/bin/env bash
# The main job: install what is missing, build, then on every device found: list devices,
# check every backend against the fixtures, measure the ceilings, bench every backend, and
# write the report under reports/out/<host>/ (index.html, summary.md, the JSON behind them).
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
set -e
echo "run.sh: check exit code $check_rc; timing every backend on every device next"
# Ceilings, bench of every backend on every device, the HTML report and Markdown summary.
set +e
bash ci/report.sh "$bin" "$out" quick
report_rc=$?
set -e
echo "run.sh: check exit code $check_rc, report exit code $report_rc; open $out/index.html"
[ "$check_rc" -ne 0 ] && exit "$check_rc"
exit "$report_rc"
