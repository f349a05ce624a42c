#!/usr/bin/env bash
# CTest's Catch2 discovery splits test names on ';' and mangles '[' and a leading '-': a test
# with such a name silently runs nothing. Fail the suite when one appears.
set -euo pipefail
cd "$(dirname "$0")"
bad=$(grep -rhoE 'TEST_CASE\("[^"]*' --include='*.cc' . | sed 's/^TEST_CASE("//' |
      grep -E ';|\[|^-' || true)
if [[ -n $bad ]]; then
  echo "test names CTest cannot run (no ';', '[' or leading '-'):"
  echo "$bad"
  exit 1
fi
echo "all test names are CTest-safe"
