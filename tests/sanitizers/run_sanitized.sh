#!/usr/bin/env bash
# CTest's launcher for sanitizer builds (set as CROSSCOMPILING_EMULATOR in tests/CMakeLists.txt):
#   run_sanitized.sh TEST_EXECUTABLE [ARGS...]
# Sets the sanitizer options and sends every report to a private directory, then fails when any
# report was written, whichever process wrote it. That matters for the e2e tests: they spawn the
# (sanitized) netqosd and netqosctl, often SIGKILL the daemon or expect a non-zero exit from it,
# so a sanitizer abort in a child would otherwise look like an expected failure.
# Options already in the environment are kept and override the defaults below (log_path is
# always ours). NETQOS_SANITIZER_KEEP_LOGS=1 keeps the report directory for inspection.
set -uo pipefail

if (($# < 1)); then
  echo "usage: $0 TEST_EXECUTABLE [ARGS...]" >&2
  exit 2
fi

supp_dir=$(cd "$(dirname "$0")" && pwd)
reports=$(mktemp -d "${TMPDIR:-/tmp}/netqos-sanitizer.XXXXXX")

# Shared by every sanitizer: stop at the first finding, with a symbolized stack.
common="halt_on_error=1:print_stacktrace=1:symbolize=1"

# ASan: leaks too (LSan at exit of every process that exits normally, e.g. on SIGTERM), and
# SIGILL, which is how a GCC ASan+UBSan build reports undefined behaviour (an "ILL" report whose
# top frame is the offending line; see cmake/Sanitizers.cmake).
export ASAN_OPTIONS="${common}:detect_leaks=1:check_initialization_order=1:handle_sigill=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}:log_path=${reports}/report"
export LSAN_OPTIONS="suppressions=${supp_dir}/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}:log_path=${reports}/report"
# UBSan (without ASan, or with clang) is built with -fno-sanitize-recover=undefined, so a
# finding aborts; the options make sure it says where.
export UBSAN_OPTIONS="${common}${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}:log_path=${reports}/report"
# TSan: races and lock-order inversions; suppressions only for the uninstrumented gRPC,
# protobuf and abseil libraries (see tsan.supp). second_deadlock_stack helps read inversions.
export TSAN_OPTIONS="${common}:second_deadlock_stack=1:suppressions=${supp_dir}/tsan.supp${TSAN_OPTIONS:+:$TSAN_OPTIONS}:log_path=${reports}/report"

"$@"
code=$?

shopt -s nullglob
files=("$reports"/*)
if ((${#files[@]})); then
  echo "=== sanitizer reports (${#files[@]} file(s); the test fails even if it passed) ==="
  for f in "${files[@]}"; do
    echo "--- ${f##*/} ---"
    cat "$f"
  done
  if ((code == 0)); then code=1; fi
fi
if [[ ${NETQOS_SANITIZER_KEEP_LOGS:-0} == 1 ]]; then
  echo "sanitizer reports kept in $reports" >&2
else
  rm -rf "$reports"
fi
exit "$code"
