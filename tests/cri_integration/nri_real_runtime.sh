#!/usr/bin/env bash
# The hidden [nri] cases of a test executable (netqos_cri_integration_tests: the NRI session;
# netqos_integration_tests: netqosd with --nri-socket) against Debian 13's containerd 1.7 (NRI):
# fetched into a cache by scripts/lib/fetch-containerd.sh (a download only the first time) and
# put first on PATH for them alone; the other CRI tests keep the machine's containerd 1.6.
# Without root the test binary itself reports NOT RUN (exit 77), or fails under CI=true. A fetch
# that fails is NOT RUN too, and a failure under CI=true.
#
#   tests/cri_integration/nri_real_runtime.sh TEST_BINARY [catch2 args...]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
binary=${1:?usage: $0 TEST_BINARY [catch2 args...]}
shift
if [[ $(id -u) -ne 0 ]]; then
  exec "$binary" '[nri]' "$@"  # says why it does not run
fi
if ! bin=$("$here/../../scripts/lib/fetch-containerd.sh"); then
  if [[ ${CI:-} == true ]]; then
    echo "FAIL: no containerd with NRI could be fetched (see above), and CI=true requires it" >&2
    exit 1
  fi
  echo "NOT RUN: no containerd with NRI could be fetched (see above)" >&2
  exit 77
fi
echo "nri_real_runtime: $("$bin/containerd" --version)"
PATH=$bin:$PATH exec "$binary" --warn NoTests '[nri]' "$@"
