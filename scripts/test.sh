#!/usr/bin/env bash
# The test command: installs what is missing, configures and builds netqos from scratch, and runs
# every test through CTest. Usage: scripts/test.sh [--keep-build] [extra ctest args...]
#   --keep-build   reuse an existing build directory (faster local iterations)
#   BUILD_DIR=...  build directory (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."

keep=0
if [[ ${1:-} == --keep-build ]]; then keep=1; shift; fi
BUILD_DIR=${BUILD_DIR:-build}

scripts/install-deps.sh

if ((!keep)); then rm -rf "$BUILD_DIR"; fi
cmake -S . -B "$BUILD_DIR" -G Ninja -DNETQOS_WERROR=ON
cmake --build "$BUILD_DIR" -j "$(nproc)"

cd "$BUILD_DIR"
ctest --output-on-failure --timeout 600 "$@"
