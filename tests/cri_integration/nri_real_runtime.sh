#!/usr/bin/env bash
# The hidden [nri] cases of a test executable (netqos_cri_integration_tests: the NRI session;
# netqos_integration_tests: netqosd with --nri-socket) against a containerd with NRI from a newer
# Debian suite: trixie's 1.7 by default, sid's 2.x with --suite sid. The package is fetched into
# a cache by scripts/lib/fetch-containerd.sh (a download only the first time) and put first on
# PATH for these tests alone; the other CRI tests keep the machine's containerd 1.6. The cases
# tagged [containerd2] check what only containerd 2 does (it sends its request timeout in
# Configure) and run only against it.
# Without root the test binary itself reports NOT RUN (exit 77), or fails under CI=true. A fetch
# that fails is NOT RUN too, and a failure under CI=true.
#
#   tests/cri_integration/nri_real_runtime.sh [--suite SUITE] TEST_BINARY [catch2 args...]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
suite=()
if [[ ${1:-} == --suite ]]; then
  suite=(--suite "${2:?--suite needs a value}")
  shift 2
fi
binary=${1:?usage: $0 [--suite SUITE] TEST_BINARY [catch2 args...]}
shift
if [[ $(id -u) -ne 0 ]]; then
  exec "$binary" '[nri]' "$@"  # says why it does not run
fi
if ! bin=$("$here/../../scripts/lib/fetch-containerd.sh" "${suite[@]}"); then
  if [[ ${CI:-} == true ]]; then
    echo "FAIL: no containerd with NRI could be fetched (see above), and CI=true requires it" >&2
    exit 1
  fi
  echo "NOT RUN: no containerd with NRI could be fetched (see above)" >&2
  exit 77
fi
version=$("$bin/containerd" --version)
echo "nri_real_runtime: $version"
# runc comes with the containerd when the fetch brought one (containerd 2: see fetch-containerd.sh).
if [[ -x $bin/runc ]]; then
  echo "nri_real_runtime: $("$bin/runc" --version | head -n 1)"
fi
read -r _ _ release _ <<<"$version"
spec='[nri]'
[[ ${release%%.*} -ge 2 ]] || spec='[nri]~[containerd2]'
PATH=$bin:$PATH exec "$binary" --warn NoTests "$spec" "$@"
