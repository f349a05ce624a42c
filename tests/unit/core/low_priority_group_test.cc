// Low-priority network groups: per NIC, the allocatable minus what the non-reclaimed allocations
// request, never below the floor, in both directions.
#include "core/low_priority_group.h"

#include <catch2/catch.hpp>

#include "core/constants.h"

namespace netqos::core {
namespace {

const NicId kEth0{"", "eth0"};
const NicId kEth2{"ns2", "eth2"};

AllocationInfo Alloc(const NicId& nic, const std::string& level, uint32_t mbps) {
  AllocationInfo a;
  a.if_name = nic.name;
  a.ns_name = nic.netns;
  a.qos_level = level;
  a.egress = a.ingress = mbps;
  return a;
}

MachineState State(uint32_t egress, uint32_t ingress) {
  NicState s;
  s.egress.allocatable = egress;
  s.ingress.allocatable = ingress;
  return {{kEth0, s}, {kEth2, s}};
}

TEST_CASE("low-priority groups: allocatable minus the other levels' requests, per direction") {
  PodEntries e;
  e["a"]["c"] = Alloc(kEth0, kSharedCores, 3000);
  e["b"]["c"] = Alloc(kEth0, kDedicatedCores, 1000);
  e["r"]["c"] = Alloc(kEth0, kReclaimedCores, 5000);  // its own level counts for nothing
  auto g = ComputeLowPriorityGroups(State(20000, 18000), e, 5);
  CHECK(g.at(kEth0) == LowPriorityGroup{16000, 14000});
  CHECK(g.at(kEth2) == LowPriorityGroup{20000, 18000});
}

TEST_CASE("low-priority groups: the floor when the others request as much as the NIC has") {
  PodEntries e;
  e["a"]["c"] = Alloc(kEth0, kSharedCores, 19500);
  auto g = ComputeLowPriorityGroups(State(20000, 20000), e, 5);
  CHECK(g.at(kEth0) == LowPriorityGroup{1000, 1000});  // 500 left is below the 5 % floor
  e["b"]["c"] = Alloc(kEth0, kSharedCores, 500);       // exactly the allocatable
  CHECK(ComputeLowPriorityGroups(State(20000, 20000), e, 5).at(kEth0).egress_mbps == 1000);
  e["c"]["c"] = Alloc(kEth0, kSharedCores, 9000);  // beyond it
  CHECK(ComputeLowPriorityGroups(State(20000, 20000), e, 5).at(kEth0).egress_mbps == 1000);
  CHECK(ComputeLowPriorityGroups(State(20000, 20000), e, 0).at(kEth0).egress_mbps == 0);
  CHECK(ComputeLowPriorityGroups(State(20000, 20000), e, 12).at(kEth0).egress_mbps == 2400);
}

TEST_CASE("low-priority groups: implicit requests count with their declared bandwidth") {
  AllocationInfo implicit = Alloc(kEth0, kSharedCores, 0);
  implicit.annotations[kNetBandwidthImplicitKey] = "4000";
  CHECK(RequestedMbps(implicit) == 4000);
  PodEntries e;
  e["a"]["c"] = implicit;
  CHECK(ComputeLowPriorityGroups(State(20000, 20000), e, 5).at(kEth0).egress_mbps == 16000);
  for (const char* bad : {"", "-1", "12x", "4294967296", " 5"}) {
    INFO(bad);
    implicit.annotations[kNetBandwidthImplicitKey] = bad;
    CHECK(RequestedMbps(implicit) == 0);
  }
  // A reservation wins over the annotation (only an imported checkpoint can hold both).
  AllocationInfo both = Alloc(kEth0, kSharedCores, 300);
  both.annotations[kNetBandwidthImplicitKey] = "4000";
  CHECK(RequestedMbps(both) == 300);
}

}  // namespace
}  // namespace netqos::core
