// Reads the HTB class counters of one shaped NIC from the kernel, in the NIC's own network
// namespace: the egress tree on the NIC and the ingress tree on its IFB (nqifb<ifindex>).
#pragma once

#include "common/status.h"
#include "core/types.h"
#include "enforce/leaf_queues.h"

namespace netqos::enforce {

// A ReadLinkClassStats over libnl. Two RTM_GETTCLASS dumps; a namespace other than the host's is
// entered by a short-lived thread (os::RunInNetns), so callers may be any thread.
Result<LinkClassStats> ReadKernelClassStats(const core::Nic& nic);

}  // namespace netqos::enforce
