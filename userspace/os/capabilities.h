// The calling thread's effective capability set, from capget(2): what the kernel will check, as
// the container runtime left it (a DaemonSet's capabilities.add, or all under privileged: true).
#pragma once

#include <cstdint>

#include "common/status.h"

namespace netqos::os {

// Bit n is capability n (<linux/capability.h>: CAP_NET_ADMIN 12, CAP_SYS_ADMIN 21, CAP_PERFMON
// 38, CAP_BPF 39).
Result<std::uint64_t> EffectiveCapabilities();

}  // namespace netqos::os
