#!/usr/bin/env bash
# dnnblocks list and the check tiers, end to end: the coverage table fits 120 columns and counts
# the catalogue's missing cells; every alternative has its sentence; the smoke tier runs and
# prints each implementation's time; bad tier, variants and timeout values are bad input (2).
set -u
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$bin" list > "$tmp/list.txt" || fail "list exited $?"
wide=$(awk 'length > 120' "$tmp/list.txt")
[ -z "$wide" ] || fail "list has lines over 120 columns: $wide"
grep -q '^missing: [0-9]* op x backend cells of the catalogue' "$tmp/list.txt" || fail "no missing-cell count: $(tail -5 "$tmp/list.txt")"
grep -q '^softmax ' "$tmp/list.txt" || fail "no softmax row"

"$bin" list --variants > "$tmp/variants.txt" || fail "list --variants exited $?"
! grep -q 'no sentence' "$tmp/variants.txt" || fail "an alternative without its sentence: $(grep 'no sentence' "$tmp/variants.txt")"
"$bin" list --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["coverage"]["catalogue_ops"] > 21' \
  || fail "list --json has no catalogue coverage"

"$bin" check --tier smoke --backend reference --op 'soft*' > "$tmp/smoke.txt"; rc=$?
[ $rc -eq 0 ] || fail "smoke tier exited $rc: $(tail -5 "$tmp/smoke.txt")"
grep -q '^time per implementation and device (tier smoke' "$tmp/smoke.txt" || fail "no per-implementation time"
grep -q '^  reference@cpu:0 ' "$tmp/smoke.txt" || fail "no reference time line"

for bad in "--tier nightly" "--variants some" "--case-timeout -1"; do
  # shellcheck disable=SC2086  # two words on purpose
  "$bin" check $bad --op relu > /dev/null 2>&1; rc=$?
  [ $rc -eq 2 ] || fail "check $bad exited $rc, want 2"
done
"$bin" bench --variants some --op relu > /dev/null 2>&1; rc=$?; [ $rc -eq 2 ] || fail "bench --variants some exited $rc, want 2"
echo "list and tiers OK"
