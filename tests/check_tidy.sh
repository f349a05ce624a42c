#!/usr/bin/env bash
# clang-tidy with the curated checks of .clang-tidy over every translation unit of userspace/
# (the compile commands of BUILD_DIR, so generated headers must exist: run after the build).
# Any finding fails, and is printed with its file, line and check name.
#
#   check_tidy.sh BUILD_DIR      NETQOS_TIDY_JOBS=N sets the parallelism (default: nproc)
set -euo pipefail
build=${1:?usage: check_tidy.sh BUILD_DIR}
root=$(cd "$(dirname "$0")/.." && pwd)
[[ -f $build/compile_commands.json ]] || { echo "tidy: no $build/compile_commands.json" >&2; exit 1; }
runner=$(command -v run-clang-tidy || command -v run-clang-tidy-14 || true)
[[ -n $runner ]] || { echo "tidy: run-clang-tidy not found (Debian package clang-tidy)" >&2; exit 1; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# The compile commands are GCC's: its warning flags are not clang-tidy's business, and clang's
# -Wconversion adds sign conversions that GCC's (the build's compiler) does not warn about.
rc=0
"$runner" -p "$build" -j "${NETQOS_TIDY_JOBS:-$(nproc)}" -quiet \
  -extra-arg=-Wno-unknown-warning-option -extra-arg=-Wno-ignored-optimization-argument \
  -extra-arg=-Wno-sign-conversion \
  "^$root/userspace/" >"$log" 2>&1 || rc=$?
if ((rc != 0)) || grep -qE "(warning|error): .*\[[a-z]+-[a-z-]+" "$log"; then
  grep -E "(warning|error):|^ " "$log" | grep -v "^[0-9]* warnings* generated" | head -200
  echo "tidy: findings (or clang-tidy failed, exit $rc) in the userspace/ translation units"
  exit 1
fi
echo "tidy: clean ($(grep -c '"file": "'"$root"'/userspace/' "$build/compile_commands.json") translation units)"
