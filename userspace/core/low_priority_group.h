// Low-priority network groups (Katalyst HEAD): per NIC, what its reclaimed_cores traffic may use
// is what the NIC can allocate minus what every other allocation on it requests, never less than
// a floor (a share of the allocatable). netqos computes it for both directions; the enforcer
// applies it as the reclaimed_cores level's HTB ceiling.
#pragma once

#include <cstdint>
#include <map>

#include "core/types.h"

namespace netqos::core {

struct LowPriorityGroup {
  uint32_t egress_mbps = 0;
  uint32_t ingress_mbps = 0;
  bool operator==(const LowPriorityGroup&) const = default;
};

// What an allocation requests in Mbps: its reservation, else (an implicit request, which
// reserves 0) the declared value of its net_bandwidth_implicit state annotation; 0 when that is
// not a decimal number up to 2^32-1 (it comes from the state, which only netqos writes).
uint32_t RequestedMbps(const AllocationInfo& info);

// One group per NIC of `state`. Allocations of reclaimed_cores count toward no group; those on
// NICs not in `state` are ignored. `floor_percent` (0..100) of the allocatable is the least a group
// gets, as when the others request as much as the NIC has or more.
std::map<NicId, LowPriorityGroup> ComputeLowPriorityGroups(const MachineState& state,
                                                           const PodEntries& entries,
                                                           uint32_t floor_percent);

}  // namespace netqos::core
