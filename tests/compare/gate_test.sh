#!/usr/bin/env bash
# ci/gate.sh end to end on this machine's cpu:0, with a stand-in for `dnnblocks bench` (the
# files of tests/compare/data/ with this CPU's name; everything else is the real binary):
# refresh writes a baseline; another run of the same build passes; a case 20% slower fails;
# a case ambiguous in the first run (1 repetition) is rerun and passes when the rerun is
# clean, and one that stays ambiguous after 2 reruns (4.99% slower, threshold 5%) fails; a device without a baseline is
# reported and fails (passes with GATE_ALLOW_NO_BASELINE=1). Needs python3, like the gate.
#   gate_test.sh BIN REPO_DIR
set -u
bin=$(realpath "$1")
repo=$2
data=$repo/tests/compare/data
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# The stand-in: `bench` writes FAKE_BENCH (or FAKE_RERUN when cases are named) for the device
# asked for. FAKE_CASE is changed as FAKE_MODE says: "first": only its first repetition in the
# first run (ambiguous: too few); "threshold": in every run, the times of bench-base.json
# (the baseline) x 1.0499, a change of 4.99% against a 5% threshold, ambiguous however often
# rerun.
# With FAKE_GPUS=N, `devices` adds cuda:0..N-1 ("NVIDIA H200") and `check` on them writes
# check-base.json; every bench call appends its device to FAKE_LOG.
cat > "$tmp/dnnblocks" <<FAKE
#!/usr/bin/env bash
case "\$1:\${FAKE_GPUS:-0}" in
  bench:* | devices:[1-9]*) ;;
  check:[1-9]*) [[ " \$* " == *" --device cpu:0 "* ]] || exec cp "$data/check-base.json" "\${@: -3:1}" ;&
  *) exec "$bin" "\$@" ;;
esac
exec python3 - "\$@" <<'PY'
import json, os, re, subprocess, sys
devices = json.loads(subprocess.check_output(["$bin", "devices", "--json"]))
devices["devices"] += [{"id": "cuda:%d" % i, "kind": "cuda", "name": "NVIDIA H200"} for i in range(int(os.environ.get("FAKE_GPUS", "0")))]
if sys.argv[1] == "devices":
    sys.exit(print(json.dumps(devices)))
args = sys.argv[2:]
out = args[args.index("--out") + 1]
cases = [args[i + 1] for i, a in enumerate(args) if a == "--case"]
device = args[args.index("--device") + 1] if "--device" in args else "cpu:0"
if cases:
    device = ("cuda:" if "@cuda" in cases[0] else "cpu:") + cases[0].rsplit(":", 1)[1]
name = next(d["name"] for d in devices["devices"] if d["id"] == device)
doc = json.load(open(os.environ["FAKE_RERUN" if cases else "FAKE_BENCH"]))
mode = os.environ.get("FAKE_MODE", "")
base_times = {r["case_id"]: r.get("repetition_times_s") for r in json.load(open("$data/bench-base.json"))["results"]}
for r in doc["results"]:
    if device.startswith("cuda"):
        r["case_id"] = re.sub("@avx512:0$", "@cuda:" + device[5:], r["case_id"])
    r["device"], r["device_name"] = device, name
    if r["case_id"].split("@")[0] == os.environ.get("FAKE_CASE", "").split("@")[0]:
        if mode == "first" and not cases:
            r["repetition_times_s"] = r["repetition_times_s"][:1]
            r["cv"] = 0.0
        if mode == "threshold":
            r["repetition_times_s"] = [1.0499 * t for t in base_times[os.environ["FAKE_CASE"]]]
            r["cv"] = None
if cases:
    doc["results"] = [r for r in doc["results"] if r["case_id"] in cases]
json.dump(doc, open(out, "w"))
if os.environ.get("FAKE_LOG"):
    open(os.environ["FAKE_LOG"], "a").write("%s pid %d\\n" % (device, os.getpid()))
PY
FAKE
chmod +x "$tmp/dnnblocks"

export GATE_DEVICES=cpu:0 GATE_BASELINES=$tmp/baselines GATE_CHECK_ARGS="--op relu --backend reference"
export FAKE_CASE="softmax:f32:64x8192@avx512:0" FAKE_MODE=none
gate() {  # gate NAME [--refresh]
  local name=$1; shift
  bash "$repo/ci/gate.sh" "$@" "$tmp/dnnblocks" "$tmp/$name" > "$tmp/$name.txt" 2>&1
}

FAKE_BENCH=$data/bench-base.json gate refresh --refresh
rc=$?; [ $rc -eq 0 ] || fail "refresh exited $rc: $(cat "$tmp/refresh.txt")"
baseline=$(ls "$GATE_BASELINES"/*.cpu.json 2> /dev/null | head -1)
[ -n "$baseline" ] || fail "refresh wrote no baseline: $(cat "$tmp/refresh.txt")"
grep -q '"kind": "baseline"' "$baseline" || fail "$baseline is not a baseline"

FAKE_BENCH=$data/bench-same-build.json gate same
rc=$?; [ $rc -eq 0 ] || fail "same build exited $rc: $(cat "$tmp/same.txt")"
grep -q "PASS" "$tmp/same/gate-summary.md" || fail "summary lacks PASS"
[ -f "$tmp/same/cpu-0/bench-compare.md" ] && [ -f "$tmp/same/cpu-0/check-compare.md" ] || fail "no compare reports"

FAKE_BENCH=$data/bench-softmax-20pct-slower.json gate slower
rc=$?; [ $rc -eq 1 ] || fail "20% slower exited $rc, want 1: $(cat "$tmp/slower.txt")"
grep -q "softmax:f32:64x8192@avx512:0" "$tmp/slower/cpu-0/bench-compare.md" || fail "slowed case not in the report"

FAKE_BENCH=$data/bench-same-build.json FAKE_RERUN=$data/bench-same-build.json FAKE_MODE=first gate resolved
rc=$?; [ $rc -eq 0 ] || fail "ambiguous then clean rerun exited $rc, want 0: $(cat "$tmp/resolved.txt")"
[ -f "$tmp/resolved/cpu-0/rerun-1.json" ] || fail "the ambiguous case was not rerun"
[ -f "$tmp/resolved/cpu-0/rerun-2.json" ] && fail "a clean first rerun was rerun again"

FAKE_BENCH=$data/bench-same-build.json FAKE_RERUN=$data/bench-same-build.json FAKE_MODE=threshold gate stuck
rc=$?; [ $rc -eq 1 ] || fail "ambiguous after 2 reruns exited $rc, want 1: $(cat "$tmp/stuck.txt")"
[ -f "$tmp/stuck/cpu-0/rerun-2.json" ] || fail "not rerun twice"
[ -f "$tmp/stuck/cpu-0/rerun-3.json" ] && fail "rerun more than twice"
grep -q "ambiguous" "$tmp/stuck/cpu-0/bench-compare.md" || fail "report does not say ambiguous"

GATE_BASELINES=$tmp/empty FAKE_BENCH=$data/bench-same-build.json gate nobase
rc=$?; [ $rc -eq 1 ] || fail "no baseline exited $rc, want 1: $(cat "$tmp/nobase.txt")"
grep -q "NO BASELINE" "$tmp/nobase/gate-summary.md" || fail "summary does not report the missing baseline"
GATE_ALLOW_NO_BASELINE=1 GATE_BASELINES=$tmp/empty FAKE_BENCH=$data/bench-same-build.json gate nobase-allowed
rc=$?; [ $rc -eq 0 ] || fail "no baseline with GATE_ALLOW_NO_BASELINE=1 exited $rc, want 0"
grep -q "NO BASELINE" "$tmp/nobase-allowed/gate-summary.md" || fail "allowed missing baseline not reported"

# Two GPUs: one CTest test per GPU, each given its own device by CTest's resource allocation.
export FAKE_GPUS=2 FAKE_LOG=$tmp/bench-devices.log
FAKE_BENCH=$data/bench-base.json GATE_DEVICES="cuda:0 cuda:1" GATE_BASELINES=$tmp/gpu-baselines gate gpu-refresh --refresh
rc=$?; [ $rc -eq 0 ] || fail "GPU refresh exited $rc: $(cat "$tmp/gpu-refresh.txt")"
[ -f "$tmp/gpu-baselines/NVIDIA-H200.cuda.json" ] || fail "no NVIDIA-H200.cuda.json: $(ls "$tmp/gpu-baselines")"
# One device per model, benched GATE_REFRESH_RUNS (3) times, the runs pooled into the baseline.
[ "$(grep -c '^cuda:0 ' "$FAKE_LOG")" -eq 3 ] && [ "$(grep -c '^cuda:1 ' "$FAKE_LOG")" -eq 0 ] ||
  fail "refresh should bench cuda:0 three times and cuda:1 never: $(cat "$FAKE_LOG")"
grep -q '"pooled_runs": 3' "$tmp/gpu-baselines/NVIDIA-H200.cuda.json" || fail "the baseline does not pool 3 runs"
: > "$FAKE_LOG"
FAKE_BENCH=$data/bench-same-build.json GATE_DEVICES="cuda:0 cuda:1" GATE_BASELINES=$tmp/gpu-baselines gate gpus
rc=$?; [ $rc -eq 0 ] || fail "two GPUs exited $rc: $(cat "$tmp/gpus.txt")"
grep -q '"gpus"' "$tmp/gpus/ctest-resources.json" || fail "no resource spec written"
grep -q "RESOURCE_GROUPS gpus:1" "$tmp/gpus/ctest/CTestTestfile.cmake" || fail "GPU tests do not ask CTest for a GPU"
[ "$(grep -c '^cuda:0 ' "$FAKE_LOG")" -eq 1 ] && [ "$(grep -c '^cuda:1 ' "$FAKE_LOG")" -eq 1 ] ||
  fail "each GPU should be benched once: $(cat "$FAKE_LOG")"
[ "$(grep -c "PASS" "$tmp/gpus/gate-summary.md")" -ge 2 ] || fail "summary lacks a verdict per GPU: $(cat "$tmp/gpus/gate-summary.md")"
unset FAKE_GPUS FAKE_LOG
echo "gate OK"
