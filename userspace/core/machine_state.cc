#include "core/machine_state.h"

#include <algorithm>
#include <string>

namespace netqos::core {

uint32_t CapacityMbps(int64_t speed_mbps, float rate) {
  float product = static_cast<float>(speed_mbps) * rate;
  if (!(product > 0.0f)) return 0;  // negative, zero, NaN
  if (product >= 4294967296.0f) return UINT32_MAX;
  return static_cast<uint32_t>(product);
}

Result<NicState> InitialNicState(const Nic& nic, float egress_rate, float ingress_rate,
                                 uint32_t reservation) {
  NicState st;
  st.egress.capacity = CapacityMbps(nic.speed_mbps, egress_rate);
  st.ingress.capacity = CapacityMbps(nic.speed_mbps, ingress_rate);
  bool known_capacity = st.egress.capacity > 0 || st.ingress.capacity > 0;
  if (reservation > 0 && known_capacity &&
      (reservation >= st.egress.capacity || reservation >= st.ingress.capacity)) {
    return InvalidArgument("invalid bandwidth reservation: " + std::to_string(reservation) +
                           " Mbps on NIC " + nic.id.Identifier() + " with capacity " +
                           std::to_string(st.egress.capacity) + "/" +
                           std::to_string(st.ingress.capacity) + " Mbps");
  }
  st.egress.reservation = reservation;
  st.ingress.reservation = reservation;
  ApplyUsage(st, BandwidthUsage{}, /*healthy=*/true);
  return st;
}

namespace {

uint32_t Saturate(uint64_t v) { return v > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(v); }

uint32_t StaticAllocatable(const BandwidthInfo& b, bool healthy) {
  if (!healthy || b.capacity <= b.reservation) return 0;
  return b.capacity - b.reservation;
}

}  // namespace

void ApplyUsage(NicState& st, const BandwidthUsage& usage, bool healthy) {
  BandwidthInfo& e = st.egress;
  BandwidthInfo& i = st.ingress;
  e.allocatable = StaticAllocatable(e, healthy);
  i.allocatable = StaticAllocatable(i, healthy);
  e.allocated = Saturate(usage.egress);
  i.allocated = Saturate(usage.ingress);
  // Upstream compares the INGRESS allocatable with the EGRESS allocated here
  // (docs/compatibility.md, "Kept on purpose").
  if (e.allocatable < e.allocated || i.allocatable < e.allocated) e.allocatable = e.allocated;
  e.free = e.allocatable - e.allocated;
  if (i.allocatable < i.allocated) i.allocatable = i.allocated;
  i.free = i.allocatable - i.allocated;
}

}  // namespace netqos::core
