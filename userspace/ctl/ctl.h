// netqosctl: the operator's and the kubelet-side client of netqosd. RunCtl holds the whole
// program (netqosctl_main.cc only forwards argv), so tests can run it in-process.
#pragma once

#include <ostream>

namespace netqos::ctl {

inline constexpr int kExitOk = 0;
inline constexpr int kExitRpcError = 1;  // also: daemon socket not found, no cgroup2 mount
inline constexpr int kExitUsage = 2;

inline constexpr char kDefaultSocket[] =
    "/var/lib/kubelet/plugins_registry/qrm_network_plugin_static.sock";

int RunCtl(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace netqos::ctl
