// Which capabilities --enforcement=bpf needs, against the ones netqosd holds, so that a container
// started without one reports it by name ("CAP_NET_ADMIN: ...") instead of an EPERM from deep in
// libbpf or netlink. deploy/base/30-daemonset.yaml lists the same set, each with its reason.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace netqos::app {

struct CapabilityNeed {
  int bit;           // <linux/capability.h>'s number
  std::string name;  // "CAP_BPF"
  std::string why;
};

// enforcement: classify and shape (CAP_BPF, CAP_NET_ADMIN); named_netns: NICs in named network
// namespaces are offered or shaped (--machine-net-multi-ns, a netns/ item of --enforce-nics), for
// which netqosd enters them with setns() and mounts their sysfs (CAP_SYS_ADMIN).
std::vector<CapabilityNeed> CapabilitiesNeeded(bool enforcement, bool named_netns);

// FailedPrecondition naming every need that effective (bit n = capability n) lacks, with what
// it is for; CAP_SYS_ADMIN stands in for CAP_BPF, as the kernel lets it.
Status CheckCapabilities(const std::vector<CapabilityNeed>& needs, std::uint64_t effective);

}  // namespace netqos::app
