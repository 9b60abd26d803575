#!/usr/bin/env bash
# The GPU machine has no oneDNN: pack this machine's Debian libdnnl-dev (headers, library,
# CMake package) into .deps/onednn.tar.xz (git-ignored, ~7 MB) for the device tool to carry;
# ci/gpu/run-h200.sh unpacks it under /tmp/onednn and builds the onednn peer against it.
set -euo pipefail
cd "$(dirname "$0")/../.."
dpkg -s libdnnl-dev > /dev/null 2>&1 || { echo "pack-onednn: libdnnl-dev is not installed here (ci/install-deps.sh installs it)" >&2; exit 2; }
mkdir -p .deps .git/info
grep -qx "/.deps/" .git/info/exclude 2>/dev/null || echo "/.deps/" >> .git/info/exclude
files=$(dpkg -L libdnnl-dev libdnnl2 2>/dev/null | grep -E '^/usr/(include|lib)/' | while read -r f; do [ -f "$f" ] || [ -L "$f" ] && echo "${f#/}"; done)
tar -cJf .deps/onednn.tar.xz -C / $files
ls -la .deps/onednn.tar.xz
