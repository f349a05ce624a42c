#include "app/capability_check.h"

#include <linux/capability.h>

namespace netqos::app {
namespace {

constexpr int kCapNetAdmin = CAP_NET_ADMIN;
constexpr int kCapSysAdmin = CAP_SYS_ADMIN;
constexpr int kCapBpf = CAP_BPF;

bool Has(std::uint64_t effective, int bit) { return (effective >> bit) & 1U; }

}  // namespace

std::vector<CapabilityNeed> CapabilitiesNeeded(bool enforcement, bool named_netns) {
  std::vector<CapabilityNeed> needs;
  if (enforcement) {
    needs.push_back({kCapBpf, "CAP_BPF",
                     "bpf(): load the programs, create and pin the maps and the cgroup link"});
    needs.push_back({kCapNetAdmin, "CAP_NET_ADMIN",
                     "attach the networking programs; HTB qdiscs and classes, the tc filters "
                     "and the IFBs over rtnetlink"});
  }
  if (named_netns) {
    needs.push_back({kCapSysAdmin, "CAP_SYS_ADMIN",
                     "setns() into named network namespaces and mount their sysfs "
                     "(--machine-net-multi-ns, netns/ NICs of --enforce-nics)"});
  }
  return needs;
}

Status CheckCapabilities(const std::vector<CapabilityNeed>& needs, std::uint64_t effective) {
  std::string missing;
  for (const auto& need : needs) {
    if (Has(effective, need.bit)) continue;
    if (need.bit == kCapBpf && Has(effective, kCapSysAdmin)) continue;
    missing += (missing.empty() ? "" : "; ") + need.name + " (" + need.why + ")";
  }
  if (missing.empty()) return Status::Ok();
  return FailedPrecondition(
      "missing capabilities: " + missing +
      ". Add them to the container's securityContext.capabilities (deploy/base/30-daemonset.yaml), "
      "or run netqosd as root");
}

}  // namespace netqos::app
