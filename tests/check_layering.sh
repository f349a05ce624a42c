#!/usr/bin/env bash
# Layer rules that the compiler does not enforce, checked on the sources. Each failure names the
# file and the line.
# 1. The allocation core computes and never touches the system: userspace/core may include the
#    C++ standard library (headers without a '.' or '/', <cstdint> and the like), its own headers
#    and common/.
# 2. The OS toolkit (userspace/os) sits just above common/: no other netqos layer in it.
# 3. No adapter borrows topology discovery's internals: shaping/, bpf/, enforce/ and cgroup/ do
#    not include topology/ (what they shared from it lives in os/).
# 4. The CLI and the daemon share only what they both print: ctl/ includes no server side
#    (grpc/, service/, app/), app/ includes nothing of ctl/, and render/ needs only common/ and the
#    generated API. userspace/CMakeLists.txt checks that the link lists agree.
# 5. The reconciler (userspace/enforce, outside enforce/kernel) reaches the kernel only through its
#    ports: no bpf/, os/ or enforce/kernel/, and no shaping/ header that talks netlink (one that
#    includes os/). Its kernel adapters live in enforce/kernel.
# 6-10. The other adapters include only the layers their links in userspace/CMakeLists.txt reach
#    (directly or through a PUBLIC link), besides common/ and their own directory: 6. checkpoint/
#    core/; 7. topology/ core/ and os/; 8. metrics/ service/ and core/; 9. grpc/ service/, core/,
#    os/, render/ and the generated kubelet and admin APIs; 10. cri/ cgroup/, os/ and the
#    generated CRI API. None reaches app/, enforce/, bpf/, shaping/ or another adapter.
# 11. The NRI wire layer (userspace/nri) is pure: common/, itself and the generated NRI and ttRPC
#    messages, no other layer (its link line in userspace/CMakeLists.txt has nothing else).
# 12. The NRI session (userspace/nri_plugin) builds on the wire layer only: common/, nri/ and the
#    generated NRI messages. What it learns leaves through its port (nri_plugin/nri_events.h).
set -euo pipefail
cd "$(dirname "$0")/../userspace"
include='^[[:space:]]*#[[:space:]]*include'
failed=0
report() {  # rule, offending lines
  [[ -z $2 ]] && return 0
  echo "layering: $1:"
  echo "$2"
  failed=1
}
report "userspace/core includes something other than the standard library, core/ and common/" \
  "$(grep -nE "$include" -- core/*.h core/*.cc |
     grep -vE '#[[:space:]]*include[[:space:]]*(<[a-z_]+>|"(core|common)/[a-z_]+\.h")' || true)"
report "userspace/os includes a netqos layer other than common/ and os/" \
  "$(grep -nE "$include"'[[:space:]]*"' -- os/*.h os/*.cc |
     grep -vE '"(os|common)/[a-z_]+\.h"' || true)"
report "an adapter includes topology/ (shared pieces belong in os/)" \
  "$(grep -nE "$include"'[[:space:]]*"topology/' -- shaping/* bpf/* enforce/*.h enforce/*.cc enforce/kernel/* cgroup/* || true)"
report "ctl/ includes a server-side layer (grpc/, service/ or app/)" \
  "$(grep -nE "$include"'[[:space:]]*"(grpc|service|app)/' -- ctl/* || true)"
report "app/ includes ctl/ (what both print lives in render/)" \
  "$(grep -nE "$include"'[[:space:]]*"ctl/' -- app/* || true)"
report "render/ includes something other than common/, render/ and the generated API" \
  "$(grep -nE "$include"'[[:space:]]*"' -- render/* |
     grep -vE '"(common|render)/[a-z_]+\.h"|"netqos/admin/v1/admin\.pb\.h"' || true)"
netlink_shaping=$(grep -lE "$include"'[[:space:]]*"os/' -- shaping/*.h | sed 's|^|"|; s|$|"|' |
  paste -sd'|' | sed 's/[.]/[.]/g')
report "enforce/ includes a kernel layer (bpf/, os/, enforce/kernel/ or a netlink shaping/ header)" \
  "$(grep -nE "$include"'[[:space:]]*"(bpf|os|enforce/kernel)/' -- enforce/*.h enforce/*.cc || true
     grep -nE "$include[[:space:]]*(${netlink_shaping:-\"-\"})" -- enforce/*.h enforce/*.cc || true)"
# An adapter directory whose quoted includes name only the given directories (and common/ and
# itself) and the generated headers matching `generated` (an ERE, or empty for none).
only_includes() {  # directory, allowed directories (a|b), generated headers, rule text
  local allowed="\"($1|common|$2)/[a-z_]+\\.h\""
  [[ -n $3 ]] && allowed="$allowed|\"($3)\""
  report "$4" \
    "$(grep -nE "$include"'[[:space:]]*"' -- "$1"/*.h "$1"/*.cc | grep -vE "$allowed" || true)"
}
only_includes checkpoint core "" \
  "checkpoint/ includes a layer other than common/ and core/"
only_includes topology 'core|os' "" \
  "topology/ includes a layer other than common/, core/ and os/"
only_includes metrics 'service|core' "" \
  "metrics/ includes a layer other than common/, core/ and service/"
only_includes grpc 'service|core|os|render' \
  'netqos/admin/v1/admin\.(pb|grpc\.pb)\.h|(resourceplugin/v1alpha1|pluginregistration/v1)/api\.(pb|grpc\.pb)\.h' \
  "grpc/ includes a layer other than common/, core/, os/, render/, service/ and the generated APIs"
only_includes cri 'cgroup|os' 'runtime/v1/api\.(pb|grpc\.pb)\.h' \
  "cri/ includes a layer other than common/, cgroup/, os/ and the generated CRI API"
only_includes nri '' '(nri/v1alpha1/api|ttrpc/request)\.pb\.h' \
  "nri/ includes a layer other than common/ and the generated NRI and ttRPC messages"
only_includes nri_plugin 'nri' 'nri/v1alpha1/api\.pb\.h' \
  "nri_plugin/ includes a layer other than common/, nri/ and the generated NRI messages"
((failed == 0)) || exit 1
echo "layering: core is pure; os/ depends on common/ only; no adapter includes topology/;" \
  "ctl/ and app/ share only render/; enforce/ reaches the kernel through enforce/kernel only;" \
  "checkpoint/, topology/, metrics/, grpc/, cri/, nri/ and nri_plugin/ include only the layers they link"
