#include "core/low_priority_group.h"

#include <algorithm>
#include <charconv>
#include <string>

#include "core/constants.h"

namespace netqos::core {
namespace {

uint32_t Floor(uint32_t allocatable, uint32_t floor_percent) {
  return static_cast<uint32_t>(uint64_t{allocatable} * std::min<uint32_t>(floor_percent, 100) /
                               100);
}

// Katalyst HEAD subtracts the requests one by one and falls back to the floor once what is left
// is not strictly greater than the next request: the same as the floor whenever the requests sum
// to the allocatable or more.
uint32_t GroupMbps(uint32_t allocatable, uint64_t requested, uint32_t floor_percent) {
  const uint32_t floor = Floor(allocatable, floor_percent);
  if (requested >= allocatable) return floor;
  return std::max(floor, static_cast<uint32_t>(allocatable - requested));
}

}  // namespace

uint32_t RequestedMbps(const AllocationInfo& info) {
  if (info.egress > 0) return info.egress;
  auto it = info.annotations.find(kNetBandwidthImplicitKey);
  if (it == info.annotations.end()) return 0;
  const std::string& v = it->second;
  uint32_t mbps = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), mbps);
  if (ec != std::errc() || end != v.data() + v.size() || v.empty()) return 0;
  return mbps;
}

std::map<NicId, LowPriorityGroup> ComputeLowPriorityGroups(const MachineState& state,
                                                           const PodEntries& entries,
                                                           uint32_t floor_percent) {
  std::map<NicId, uint64_t> requested;
  for (const auto& [uid, containers] : entries) {
    for (const auto& [name, info] : containers) {
      if (info.qos_level == kReclaimedCores) continue;
      requested[info.nic()] += RequestedMbps(info);
    }
  }
  std::map<NicId, LowPriorityGroup> out;
  for (const auto& [id, nic] : state) {
    const uint64_t r = requested.count(id) != 0 ? requested.at(id) : 0;
    out[id] = {GroupMbps(nic.egress.allocatable, r, floor_percent),
               GroupMbps(nic.ingress.allocatable, r, floor_percent)};
  }
  return out;
}

}  // namespace netqos::core
