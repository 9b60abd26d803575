#!/usr/bin/env bash
# Installs what is missing, builds everything this machine can build, and runs every test
# (unit, conformance per backend, the malformed-file corpus and a bounded fuzz run).
# The output ends with CTest's summary line.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

bash ci/install-deps.sh
cmake --preset default
cmake --build --preset default -j"$jobs"

# Fuzz build (clang + libFuzzer): only the file readers' fuzz targets and their bounded runs.
if command -v clang++ >/dev/null 2>&1; then
  cmake --preset fuzz >/dev/null
  cmake --build --preset fuzz -j"$jobs" --target fuzz_safetensors fuzz_gguf
  ctest --preset fuzz
else
  echo "test.sh: SKIP fuzz run: clang++ not found"
fi

# Say why device tests skip (CTest itself only prints "Skipped").
build/default/bin/dnnblocks devices | sed -n "/^Absent/,/^$/p"
ctest --preset default -j"$jobs"
