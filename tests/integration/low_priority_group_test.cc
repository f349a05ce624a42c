// Low-priority network groups (--low-priority-groups) in the kernel: the real netqosd on a veth,
// allocations through its socket, and the reclaimed_cores level's HTB class read back with tc on
// the veth (egress) and on its IFB (ingress). Root only; everything is removed on scope exit.
#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "shaping/htb_plan.h"
#include "support/daemon_fixture.h"

namespace {

using namespace std::chrono_literals;
using netqos::TcHandleText;
using netqos::testing::DaemonFixture;
using netqos::testing::TcClasses;
using netqos::testing::WaitFor;
using nlohmann::json;
namespace shaping = netqos::shaping;

// The reclaimed level's class on `dev` has this ceiling (Mbit/s), within `limit`.
bool ReclaimedCeilBecomes(const std::string& dev, uint64_t mbps, std::chrono::milliseconds limit) {
  const std::string handle = TcHandleText(shaping::MakeHandle(
      shaping::kQdiscMajor, shaping::LevelMinor(shaping::QosLevel::kReclaimed)));
  uint64_t seen = 0;
  const bool ok = WaitFor(
                      [&] {
                        auto classes = TcClasses(dev);
                        auto it = classes.find(handle);
                        seen = it == classes.end() ? 0 : it->second.ceil_bits;
                        return seen == mbps * 1000000;
                      },
                      limit)
                      .has_value();
  if (!ok)
    UNSCOPED_INFO(dev << " class " << handle << " ceil " << seen << " bit/s, want " << mbps
                      << " Mbit/s");
  return ok;
}

}  // namespace

TEST_CASE(
    "daemon enforcement: low-priority groups hold the reclaimed level to what the other "
    "allocations leave, on the NIC and its IFB",
    "[enforcement]") {
  DaemonFixture env({.tag = "lp", .subnet = 252});
  env.AddPod(1);
  env.AddPod(2);
  env.WritePods();
  env.StartDaemon({"--low-priority-groups", "--low-priority-group-floor-percent=5"});

  auto cap = env.Ctl({"capacity", "--json"});
  INFO(cap.output);
  REQUIRE(cap.exit_code == 0);
  const json nic = json::parse(cap.output)["nics"].at(0);
  const uint64_t egress = nic["egress"]["allocatable"].get<uint64_t>();
  const uint64_t ingress = nic["ingress"]["allocatable"].get<uint64_t>();
  REQUIRE(egress > 1000);
  const std::string& dev = env.veth().host;
  const std::string ifb = env.veth().Ifb();

  // Nothing else allocated: the group is the whole allocatable.
  CHECK(ReclaimedCeilBecomes(dev, egress, 5000ms));
  CHECK(ReclaimedCeilBecomes(ifb, ingress, 5000ms));

  // A shared_cores container takes 100: the group is what is left, in both directions.
  env.Allocate(env.pods[0], 100);
  CHECK(ReclaimedCeilBecomes(dev, egress - 100, 5000ms));
  CHECK(ReclaimedCeilBecomes(ifb, ingress - 100, 5000ms));

  // The others take nearly everything (an allocation takes the same in both directions, so at
  // most what the smaller direction has left): the group keeps its floor, 5 % of the allocatable.
  const uint64_t most = std::min(egress, ingress) - 100;
  env.Allocate(env.pods[1], static_cast<int>(most - 10));
  const uint64_t others = 100 + most - 10;
  auto group = [&](uint64_t allocatable) {
    return std::max(allocatable * 5 / 100, allocatable > others ? allocatable - others : 0);
  };
  REQUIRE(group(egress) == egress * 5 / 100);  // the case is the floor's
  CHECK(ReclaimedCeilBecomes(dev, group(egress), 5000ms));
  CHECK(ReclaimedCeilBecomes(ifb, group(ingress), 5000ms));

  // The pod goes: the group grows back.
  env.RemovePod(env.pods[1]);
  CHECK(ReclaimedCeilBecomes(dev, egress - 100, 5000ms));

  CHECK(env.DaemonRunning());
  CHECK(env.Leftovers() == "");
}
