#!/usr/bin/env bash
# dnnblocks check, end to end: exit 0 on a passing run with JSON and JUnit written, exit 2 on a
# truncated fixture (the message names the file), an unknown op and a malformed case id.
set -u
bin=$1
fixtures=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$bin" check --backend reference --op softmax --json "$tmp/r.json" --junit "$tmp/r.xml" > "$tmp/out.txt"
rc=$?; [ $rc -eq 0 ] || fail "passing run exited $rc"
grep -q '"passed"' "$tmp/r.json" || fail "no JSON summary"
grep -q '<testcase' "$tmp/r.xml" || fail "no JUnit test cases"

mkdir -p "$tmp/fx/family1/softmax"
cp "$fixtures/manifest.json" "$tmp/fx/"
victim=family1/softmax/basic.f32.safetensors
head -c 100 "$fixtures/$victim" > "$tmp/fx/$victim"
"$bin" check --fixtures "$tmp/fx" --case 'softmax:f32:4x64:fixture=basic@reference' > "$tmp/out.txt" 2>&1
rc=$?; [ $rc -eq 2 ] || fail "truncated fixture exited $rc, want 2"
grep -q "$tmp/fx/$victim" "$tmp/out.txt" || fail "message does not name the file: $(cat "$tmp/out.txt")"

"$bin" check --op no_such_op > /dev/null 2>&1; rc=$?; [ $rc -eq 2 ] || fail "unknown op exited $rc, want 2"
"$bin" check --case 'relu:f99:4x4@reference' > /dev/null 2>&1; rc=$?; [ $rc -eq 2 ] || fail "bad case id exited $rc, want 2"
"$bin" inspect "$tmp/fx/$victim" > /dev/null 2>&1; rc=$?; [ $rc -eq 2 ] || fail "inspect of a truncated file exited $rc, want 2"
echo "exit codes OK"
