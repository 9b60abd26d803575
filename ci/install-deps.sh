#!/usr/bin/env bash
# Installs the Debian packages dnnblocks needs, only those missing; does nothing when all
# are present. On a machine without a package registry (the GPU machine) a failed install
# is reported and the build goes on with what is there: CMake then says what it lacks, and
# optional backends (oneDNN, PoCL) are left out with a visible message.
set -uo pipefail

required=(cmake g++ make libgtest-dev libgmock-dev libbenchmark-dev nlohmann-json3-dev libcli11-dev
          ocl-icd-opencl-dev opencl-headers)
optional=(pocl-opencl-icd libdnnl-dev clang python3 chromium)

missing=()
for pkg in "${required[@]}" "${optional[@]}"; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
sudo_cmd=""
[ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
if ! { $sudo_cmd apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"; }; then
  echo "install-deps: WARNING: could not install ${missing[*]} (no registry?); building with what is present" >&2
fi
exit 0
