#!/usr/bin/env bash
# dnnblocks compare, end to end on the files of tests/compare/data/: exit 0 for another run of
# the same build, 1 for a case made 20% slower and for a conformance regression (the Markdown
# leads with the verdict), 2 for an unreadable file, a malformed one, bench against check and
# two device models (each message names the file and the reason).
#   compare_exit_codes.sh BIN DATA_DIR
set -u
bin=$1
data=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
run() { "$bin" compare "$@" > "$tmp/out.txt" 2>&1; }

run "$data/bench-base.json" "$data/bench-same-build.json" --md "$tmp/same.md" --junit "$tmp/same.xml"
rc=$?; [ $rc -eq 0 ] || fail "same build exited $rc, want 0: $(cat "$tmp/out.txt")"
head -1 "$tmp/same.md" | grep -q "PASS" || fail "Markdown does not lead with PASS: $(head -3 "$tmp/same.md")"
grep -q '<testcase' "$tmp/same.xml" || fail "no JUnit test cases"

run "$data/bench-base.json" "$data/bench-softmax-20pct-slower.json" --md "$tmp/slow.md" --json "$tmp/slow.json"
rc=$?; [ $rc -eq 1 ] || fail "20% slower exited $rc, want 1: $(cat "$tmp/out.txt")"
head -1 "$tmp/slow.md" | grep -q "FAIL" || fail "Markdown does not lead with FAIL"
grep -q "Largest changes" "$tmp/slow.md" || fail "no table of the largest changes"
sed -n '/Largest changes/,/^$/p;/^| `/p' "$tmp/slow.md" | grep -m1 '^| `' | grep -q 'softmax:f32:64x8192@avx512:0' ||
  fail "the slowed case does not lead the table: $(cat "$tmp/slow.md")"
grep -q '"verdict": "regression"' "$tmp/slow.json" || fail "JSON lacks the regression"

# The baseline (bench + check of one device model) on either side; conformance regression fails.
run "$data/baseline.json" "$data/check-softmax-fails.json" --md "$tmp/check.md"
rc=$?; [ $rc -eq 1 ] || fail "conformance regression exited $rc, want 1"
grep -q "PASS -> FAIL" "$tmp/check.md" || fail "Markdown does not show PASS -> FAIL"
grep -q "silu:f32:64x8192@avx512:0" "$tmp/check.md" || fail "new case not listed"
grep -q "relu:f32:64x8192@avx512:0" "$tmp/check.md" || fail "missing case not listed"
run "$data/bench-base.json" "$data/baseline.json"
rc=$?; [ $rc -eq 0 ] || fail "bench against its own baseline exited $rc, want 0: $(cat "$tmp/out.txt")"

# Ambiguous cases: listed for the gate's reruns (this pair has none, the file is still written).
run "$data/bench-noisy-a.json" "$data/bench-noisy-b.json" --ambiguous-list "$tmp/ambiguous.txt"
rc=$?; [ $rc -eq 0 ] || fail "noisy but same exited $rc, want 0: $(cat "$tmp/out.txt")"
[ -f "$tmp/ambiguous.txt" ] || fail "--ambiguous-list not written"

expect_bad() {  # expect_bad WHAT TEXT-IN-MESSAGE ARGS...
  local what=$1 text=$2; shift 2
  run "$@"; local rc=$?
  [ $rc -eq 2 ] || fail "$what exited $rc, want 2: $(cat "$tmp/out.txt")"
  grep -qF -- "$text" "$tmp/out.txt" || fail "$what: message lacks '$text': $(cat "$tmp/out.txt")"
}
expect_bad "unreadable file" "$tmp/no-such.json: cannot read" "$tmp/no-such.json" "$data/bench-base.json"
expect_bad "truncated file" "truncated.json: not valid JSON" "$data/bench-base.json" "$data/truncated.json"
expect_bad "negative time" "times must be positive" "$data/bench-base.json" "$data/bench-negative-time.json"
expect_bad "bench against check" "nothing to compare" "$data/bench-base.json" "$data/check-base.json"
expect_bad "two device models" "device models differ" "$data/bench-base.json" "$data/bench-other-model.json"
run "$data/bench-base.json" "$data/bench-other-model.json" --allow-device-mismatch
rc=$?; [ $rc -eq 0 ] || fail "--allow-device-mismatch exited $rc, want 0"
expect_bad "unwritable --md" "--md: cannot write" "$data/bench-base.json" "$data/bench-same-build.json" --md "$tmp/no/such/dir.md"
expect_bad "bad --alpha" "--alpha" "$data/bench-base.json" "$data/bench-same-build.json" --alpha 2
echo "compare exit codes OK"
