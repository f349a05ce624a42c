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
#    ports: no bpf/, os/, enforce/kernel/, cgroup/fs/ or shaping/netlink/ (its cgroup events
#    come through EnforcerPorts::watch_cgroups, its reads of the tree through cgroup_tree). Its
#    links already keep those out of reach (rule A); this names the rule where a new link would
#    hide it. Its kernel adapters live in enforce/kernel.
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
report "enforce/ includes a kernel layer (bpf/, os/, enforce/kernel/, cgroup/fs/ or shaping/netlink/)" \
  "$(grep -nE "$include"'[[:space:]]*"(bpf|os|enforce/kernel|cgroup/fs|shaping/netlink)/' -- enforce/*.h \
     enforce/*.cc || true)"
((failed == 0)) || exit 1
echo "layering: core/ includes only the standard library and common/; enforce/ reaches the" \
  "kernel through enforce/kernel only"
