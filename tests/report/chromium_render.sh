#!/usr/bin/env bash
# dnnblocks report, end to end: exit codes (0, and 2 naming file and key on a malformed file),
# then the page in headless Chromium: it must log no console message and no uncaught
# exception, and its script must count as many roofline points as the samples have ok
# results. A page with zero results must render too (0 points). Without Chromium the test
# is skipped (exit 77, CTest's SKIP_RETURN_CODE) with the reason printed, never passed.
# Usage: chromium_render.sh DNNBLOCKS_BINARY SAMPLES_DIR   (CHROMIUM=path overrides the browser)
set -u
bin=$1
samples=$2
# bench-h200.json has 16 ok results, bench-epyc.json 15; all have a FLOP model, so all are drawn.
expected_points=31
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$bin" report "$samples/bench-h200.json" "$samples/bench-epyc.json" --html "$tmp/index.html" --md "$tmp/summary.md"
rc=$?; [ $rc -eq 0 ] || fail "report on the samples exited $rc"
head -n 1 "$tmp/summary.md" | grep -q '^\*\*dnnblocks report\*\*: 31 of 33 cases' ||
  fail "the summary does not open with the verdict: $(head -n 1 "$tmp/summary.md")"
"$bin" report "$samples/bench-h200.json" > "$tmp/stdout.md"
rc=$?; [ $rc -eq 0 ] || fail "report to stdout exited $rc"
grep -q '^### Furthest from the roofline' "$tmp/stdout.md" || fail "no Markdown on stdout without --html/--md"

echo '{"schema_version": 1, "kind": "bench", "results": [{"case_id": 3}]}' > "$tmp/bad.json"
"$bin" report "$samples/bench-h200.json" "$tmp/bad.json" --html "$tmp/bad.html" > /dev/null 2> "$tmp/err.txt"
rc=$?; [ $rc -eq 2 ] || fail "malformed file exited $rc, want 2"
grep -qF "$tmp/bad.json: results[0].case_id" "$tmp/err.txt" || fail "message names neither file nor key: $(cat "$tmp/err.txt")"
[ ! -e "$tmp/bad.html" ] || fail "a page was written from bad input"
"$bin" report "$tmp/missing.json" > /dev/null 2>&1; rc=$?; [ $rc -eq 2 ] || fail "missing file exited $rc, want 2"

echo '{"schema_version": 1, "kind": "bench", "devices": {}, "results": []}' > "$tmp/empty.json"
"$bin" report "$tmp/empty.json" --html "$tmp/empty.html" > /dev/null
rc=$?; [ $rc -eq 0 ] || fail "report with zero results exited $rc"

browser=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
if [ -z "$browser" ]; then
  echo "SKIP: chromium is not installed (Debian: apt-get install chromium, which ci/install-deps.sh does); the page was not rendered"
  exit 77
fi

# Chromium logs every console message as INFO:CONSOLE whatever its level, and the page writes
# none, so any console line is a failure; so are uncaught exceptions and refused loads (a CSP
# violation is one).
render() {
  local page=$1 want=$2 name
  name=$(basename "$page" .html)
  timeout 120 "$browser" --headless --no-sandbox --disable-gpu --enable-logging=stderr --v=0 \
    --no-first-run --user-data-dir="$tmp/profile-$name" --dump-dom "file://$page" > "$tmp/$name.dom" 2> "$tmp/$name.log"
  rc=$?
  [ $rc -eq 0 ] || fail "chromium exited $rc on $page: $(tail -n 5 "$tmp/$name.log")"
  if grep -E ':CONSOLE|Uncaught|Refused to|Content Security Policy' "$tmp/$name.log"; then
    fail "console output or an exception while rendering $page (lines above)"
  fi
  local drawn
  drawn=$(grep -o 'data-points-drawn="[0-9]*"' "$tmp/$name.dom" | head -n 1 | grep -o '[0-9][0-9]*')
  [ -n "$drawn" ] || fail "$page: body has no data-points-drawn: the page's script did not run"
  [ "$drawn" -eq "$want" ] || fail "$page: $drawn roofline points drawn, want $want"
  grep -q '</html>' "$tmp/$name.dom" || fail "$page: the dumped DOM is incomplete"
  echo "$page: $drawn points, no console output"
}
render "$tmp/index.html" "$expected_points"
render "$tmp/empty.html" 0
echo "report OK"
