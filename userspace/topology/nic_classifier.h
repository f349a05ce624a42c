// The NIC filter: decides which discovered links are offered as NICs and what speed each reports.
// Pure (no I/O): the kernel topology source feeds it facts read from sysfs/netlink.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace netqos::topology {

// Which links count as NICs: physical (PCI-backed) links and bonds by default, as upstream;
// --nic-allow / --nic-deny shell globs (fnmatch) on the NIC name widen/narrow that (deny wins);
// --nic-speed-override NAME=MBPS supplies speeds for virtual links (veth in tests, virtio in VMs).
struct NicSelection {
  std::vector<std::string> allow;                 // globs
  std::vector<std::string> deny;                  // globs
  std::map<std::string, int64_t> speed_override;  // exact NIC name -> Mbps
};

// Largest accepted --nic-speed-override value (10 Tbit/s).
inline constexpr int64_t kMaxSpeedOverrideMbps = 10'000'000;

// Parses flag values: allow/deny items may be comma-separated and repeated; empty items ignored;
// a glob with an unbalanced '[' is an error naming the flag; overrides must be NAME=MBPS with
// 0 < MBPS <= 10,000,000, else InvalidArgument naming the flag and the bad item.
Result<NicSelection> ParseNicSelection(const std::vector<std::string>& allow,
                                       const std::vector<std::string>& deny,
                                       const std::vector<std::string>& speed_overrides);

struct NicDecision {
  bool counted = false;
  std::string why;  // e.g. "PCI device", "bond", "allowed by --nic-allow 'veth*'",
                    // "denied by --nic-deny 'eth1'", "not a PCI device or bond (virtual link)"
};

// Loopback ("lo") is never counted unless an --nic-allow glob matches it.
NicDecision ClassifyNic(const NicSelection& sel, const std::string& name, bool pci, bool bond);

// The speed to report: the override if one names this NIC, else the sysfs speed.
int64_t EffectiveSpeed(const NicSelection& sel, const std::string& name, int64_t sysfs_speed);

}  // namespace netqos::topology
