#!/usr/bin/env bash
# The allocation core computes and never touches the system: userspace/core may include the C++
# standard library (headers without a '.' or '/', <cstdint> and the like), its own headers and
# common/. Anything else (a POSIX header, an adapter, a third-party library) fails the suite,
# naming the file and the line.
set -euo pipefail
cd "$(dirname "$0")/../userspace/core"
bad=$(grep -nE '^[[:space:]]*#[[:space:]]*include' -- *.h *.cc |
      grep -vE '#[[:space:]]*include[[:space:]]*(<[a-z_]+>|"(core|common)/[a-z_]+\.h")' || true)
if [[ -n $bad ]]; then
  echo "userspace/core includes something other than the standard library, core/ and common/:"
  echo "$bad"
  exit 1
fi
echo "userspace/core includes the standard library, core/ and common/ only"
