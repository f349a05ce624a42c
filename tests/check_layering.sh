#!/usr/bin/env bash
# The layer rules, checked on the sources; each failure names the file and the line.
# A. Derived from the build graph (tests/layering_from_cmake.py): every library under userspace/
#    includes only its own headers and those of the libraries its links in
#    userspace/CMakeLists.txt reach (directly, or through a PUBLIC link), third-party headers
#    included; and it links PUBLIC only what its headers include. So "core/ needs only common/",
#    "no adapter includes topology/", "ctl/ and app/ share only render/" and the like are what
#    the CMake file declares, and a new include across the layers needs a new link there.
# Two rules are stricter than the links, and are checked here:
# B. The allocation core computes and never touches the system: userspace/core includes only
#    the C++ standard library (headers without a '.' or '/', <cstdint> and the like), its own
#    headers and common/.
# C. The reconciler (userspace/enforce, outside enforce/kernel) reaches the kernel only through its
#    ports: no bpf/, os/ or enforce/kernel/, and no shaping/ header that talks netlink (one that
#    includes os/), though it links shaping/, which links os/ PUBLIC; nor the cgroup layer's inotify
#    watcher (cgroup/cgroup_watcher.h), though it links cgroup/: its cgroup events come through
#    EnforcerPorts::watch_cgroups. Its kernel adapters live in enforce/kernel.
set -euo pipefail
here=$(dirname "$0")
failed=0
python3 "$here/layering_from_cmake.py" || failed=1
cd "$here/../userspace"
include='^[[:space:]]*#[[:space:]]*include'
report() {  # rule, offending lines
  [[ -z $2 ]] && return 0
  echo "layering: $1:"
  echo "$2"
  failed=1
}
report "userspace/core includes something other than the standard library, core/ and common/" \
  "$(grep -nE "$include" -- core/*.h core/*.cc |
     grep -vE '#[[:space:]]*include[[:space:]]*(<[a-z_]+>|"(core|common)/[a-z_]+\.h")' || true)"
netlink_shaping=$(grep -lE "$include"'[[:space:]]*"os/' -- shaping/*.h | sed 's|^|"|; s|$|"|' |
  paste -sd'|' | sed 's/[.]/[.]/g')
report "enforce/ includes a kernel layer (bpf/, os/, enforce/kernel/, cgroup/cgroup_watcher.h or a netlink shaping/ header)" \
  "$(grep -nE "$include"'[[:space:]]*"((bpf|os|enforce/kernel)/|cgroup/cgroup_watcher[.]h)' -- enforce/*.h enforce/*.cc || true
     grep -nE "$include[[:space:]]*(${netlink_shaping:-\"-\"})" -- enforce/*.h enforce/*.cc || true)"
((failed == 0)) || exit 1
echo "layering: core/ includes only the standard library and common/; enforce/ reaches the" \
  "kernel through enforce/kernel only"
