// Capacity arithmetic (float32, truncation) and the verbatim upstream validation fix-up.
#include "core/machine_state.h"

#include <catch2/catch.hpp>

namespace netqos::core {
namespace {

TEST_CASE("CapacityMbps uses float32 and truncates", "[machine_state]") {
  CHECK(CapacityMbps(25000, 0.94f) == 23500);
  CHECK(CapacityMbps(25000, 0.9f) == 22500);
  CHECK(CapacityMbps(25000, 0.85f) == 21250);
  CHECK(CapacityMbps(10000, 0.94f) == 9400);
  CHECK(CapacityMbps(-1, 0.9f) == 0);
  CHECK(CapacityMbps(0, 0.9f) == 0);
  CHECK(CapacityMbps(1, 0.9f) == 0);
  CHECK(CapacityMbps(3, 0.5f) == 1);
  // float32(0.94) is slightly below 0.94, but the float32 product rounds back up to 94.
  CHECK(CapacityMbps(100, 0.94f) == 94);
  // The speed itself goes through float32: 2^24+1 is not representable and becomes 2^24.
  CHECK(CapacityMbps(16777217, 1.0f) == 16777216);
  CHECK(CapacityMbps(int64_t{1} << 40, 1.0f) == UINT32_MAX);
}

TEST_CASE("InitialNicState and reservation", "[machine_state]") {
  Nic nic;
  nic.id = {"", "eth0"};
  nic.speed_mbps = 25000;
  auto st = InitialNicState(nic, 0.9f, 0.85f, 4000);
  REQUIRE(st.ok());
  CHECK(st->egress == BandwidthInfo{22500, 0, 4000, 18500, 0, 18500});
  CHECK(st->ingress == BandwidthInfo{21250, 0, 4000, 17250, 0, 17250});
  CHECK_FALSE(InitialNicState(nic, 0.9f, 0.85f, 21250).ok());
  CHECK(InitialNicState(nic, 0.9f, 0.85f, 21249).ok());
  nic.speed_mbps = -1;
  auto unknown = InitialNicState(nic, 0.9f, 0.85f, 4000);
  REQUIRE(unknown.ok());
  CHECK(unknown->egress.allocatable == 0);
}

TEST_CASE("ApplyUsage keeps upstream's fix-up", "[machine_state]") {
  NicState st;
  st.egress = {22500, 0, 4000, 0, 0, 0};
  st.ingress = {21250, 0, 4000, 0, 0, 0};
  ApplyUsage(st, {1000, 1000}, true);
  CHECK(st.egress.allocatable == 18500);
  CHECK(st.egress.free == 17500);
  CHECK(st.ingress.free == 16250);
  // Egress allocated above the INGRESS allocatable: upstream sets the egress allocatable to the
  // egress allocated (lowering it here), so egress free becomes 0.
  ApplyUsage(st, {18000, 0}, true);
  CHECK(st.egress.allocatable == 18000);
  CHECK(st.egress.free == 0);
  CHECK(st.ingress.allocatable == 17250);
  // Unhealthy: nothing allocatable beyond what is held.
  ApplyUsage(st, {500, 500}, false);
  CHECK(st.egress.allocatable == 500);
  CHECK(st.egress.free == 0);
  CHECK(st.ingress.allocatable == 500);
  // Usage beyond uint32 saturates instead of wrapping.
  ApplyUsage(st, {uint64_t{1} << 33, 0}, true);
  CHECK(st.egress.allocated == UINT32_MAX);
}

}  // namespace
}  // namespace netqos::core
