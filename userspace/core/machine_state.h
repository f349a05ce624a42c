// Per-NIC bandwidth bookkeeping: capacity from link speed, the static reservation,
// and allocatable/free derived from what the pod entries hold on the NIC.
#pragma once

#include <cstdint>

#include "common/status.h"
#include "core/types.h"

namespace netqos::core {

// uint32(float32(speed) * rate), truncated toward zero, exactly as Katalyst computes it; an
// unknown speed (-1) gives 0, and values beyond uint32 saturate.
uint32_t CapacityMbps(int64_t speed_mbps, float rate);

// Sums of the allocations held on one NIC. 64-bit so that a restored checkpoint cannot wrap.
struct BandwidthUsage {
  uint64_t egress = 0;
  uint64_t ingress = 0;
  bool operator==(const BandwidthUsage&) const = default;
};

// The state of a NIC with nothing allocated. `reservation` applies to both directions; a
// reservation that leaves nothing on a NIC of known capacity is InvalidArgument. On a NIC of
// capacity 0 (unknown speed) it is recorded and allocatable is simply 0.
Result<NicState> InitialNicState(const Nic& nic, float egress_rate, float ingress_rate,
                                 uint32_t reservation);

// Recomputes allocated/allocatable/free from the capacity, reservation, health and `usage`.
// Keeps Katalyst's validation fix-up verbatim: the egress allocatable is raised (or lowered) to
// the egress allocated when either allocatable is below the egress allocated.
void ApplyUsage(NicState& state, const BandwidthUsage& usage, bool healthy);

}  // namespace netqos::core
