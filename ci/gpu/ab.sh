#!/usr/bin/env bash
# A/B of uncommitted kernel changes against the committed code, in one call on the GPU machine,
# after `bash ci/gpu/run-h200.sh` (no step: configure + build of the working tree in build/gpu).
# Prepare here:  git archive HEAD kernels/avx512 > ci/gpu/ab-base.tar   (the paths that changed)
# Then there:    AB_BENCH="--op gelu --dtype bf16;--op softmax --dtype f32" AB_ARGS="--backend avx512/ \
#                  --device cpu:0 --size 16384x8192" bash ci/gpu/ab.sh
# "new" is the build of the working tree; "old" the same tree with ci/gpu/ab-base.tar extracted over
# it (files the change added stay, so a change that adds files must archive their folder's
# CMakeLists or keep them unused), rebuilt incrementally. Each of AB_ROUNDS (2) rounds times every
# AB_BENCH item with new, then old, against one ceilings file measured first on AB_DEVICE (the
# --device of AB_ARGS, else cuda:0); a shared host drifts, so the rounds interleave the two.
# Prints "new|old case median_us %copy" per line; raw output in $OUT/ab.tgz.
set -uo pipefail
OUT=${OUT:-/tmp/dnnblocks-out}
bin=build/gpu/bin/dnnblocks
base=${AB_BASE:-ci/gpu/ab-base.tar}
[ -x "$bin" ] || { echo "ab.sh: $bin missing: run ci/gpu/run-h200.sh first"; exit 2; }
[ -f "$base" ] || { echo "ab.sh: $base missing (git archive HEAD PATHS > $base)"; exit 2; }
d=/tmp/ab; mkdir -p $d
cp "$bin" $d/new
tar -xmf "$base" &&  # -m: fresh mtimes, so make rebuilds what it replaced
   cmake --build build/gpu -j"$(nproc)" --target dnnblocks > $d/build-old.log 2>&1 \
  || { tail -30 $d/build-old.log; exit 1; }
cp "$bin" $d/old
device=$(sed -n 's/.*--device \([^ ]*\).*/\1/p' <<< "${AB_ARGS:-}"); device=${AB_DEVICE:-${device:-cuda:0}}
timeout 120 $d/new roofline --device "$device" --out $d/ceilings.json > $d/roofline.txt 2>&1
grep -E "dram_copy|empty_launch" $d/roofline.txt | cut -c1-60
IFS=';' read -ra items <<< "${AB_BENCH:-}"
for r in $(seq 1 "${AB_ROUNDS:-2}"); do
  echo "round $r"
  for item in "${items[@]}"; do
    for side in new old; do
      # shellcheck disable=SC2086  # the items are flag lists
      timeout 150 $d/$side bench ${AB_ARGS:-} $item --ceilings $d/ceilings.json >> $d/$side-round-$r.txt 2>&1 \
        || echo "  $side $item: exit $?"
    done
  done
  for side in new old; do grep -E "^[a-z_0-9]+:" $d/$side-round-$r.txt | awk -v s=$side '{print "  " s, $1, $3, $8}'; done
done
tar -czf "$OUT/ab.tgz" -C $d --exclude new --exclude old .
