#!/usr/bin/env bash
# Proves check_runtime_libs.sh can fail: with a package taken out of the list, or the list not
# installed by the Dockerfile, it must exit 1 and name what is missing.
#
#   check_runtime_libs_selftest.sh PACKAGE_LIST DOCKERFILE BINARY...
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
list=$1
dockerfile=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail=0
expect_failure() {  # NAME EXPECTED_TEXT ARGS...
  local name=$1 expected=$2 out rc=0
  shift 2
  out=$("$here/check_runtime_libs.sh" "$@" 2>&1) || rc=$?
  if [[ $rc -ne 1 ]]; then
    echo "FAIL: $name: check exited $rc, expected 1; output:"; echo "$out"; fail=1
  elif ! grep -qF -- "$expected" <<<"$out"; then
    echo "FAIL: $name: output does not mention \"$expected\":"; echo "$out"; fail=1
  else
    echo "ok: $name is reported"
  fi
}

grep -vx 'libbpf1' "$list" >"$tmp/no-libbpf.txt"
expect_failure "a library package missing from the list" "in package libbpf1, not in" \
  "$tmp/no-libbpf.txt" "$dockerfile" "$@"
grep -vx 'libstdc++6' "$list" >"$tmp/no-libstdcxx.txt"
expect_failure "an implicit base package missing from the list" "in package libstdc++6, not in" \
  "$tmp/no-libstdcxx.txt" "$dockerfile" "$@"
grep -vx 'bpftool' "$list" >"$tmp/no-bpftool.txt"
expect_failure "bpftool missing from the list" "operator tool package bpftool" \
  "$tmp/no-bpftool.txt" "$dockerfile" "$@"
sed -e '/runtime-packages.txt/d' "$dockerfile" >"$tmp/Dockerfile"
expect_failure "a Dockerfile that does not install the list" "does not COPY" \
  "$list" "$tmp/Dockerfile" "$@"
expect_failure "a binary that does not exist" "does not exist" \
  "$list" "$dockerfile" "$tmp/no-such-binary"
exit $fail
