// Namespace aggregates (enforce/aggregates.h): the classes and where each member goes, and
// ComputeDesiredState putting a namespace's pods under its aggregate while other namespaces pay
// nothing (no class, no leaf they would not have had). Pure.
#include "enforce/aggregates.h"

#include <catch2/catch.hpp>
#include <map>
#include <memory>
#include <string>

#include "enforce/desired_state.h"
#include "enforce/edt_rates.h"
#include "unit/enforce/desired_world.h"

namespace {

using netqos::enforce::AggregateCap;
using netqos::enforce::AggregateKey;
using netqos::enforce::AggregateMember;
using netqos::enforce::PlanAggregates;
using netqos::enforce::TenantPolicy;
using netqos::shaping::QosLevel;
using netqos::testing::Alloc;
using netqos::testing::kEth0;
using netqos::testing::ObservedIn;
using netqos::testing::World;

constexpr uint64_t kMbit = 1'000'000;

std::optional<uint32_t> MinorOf(uint64_t key) {
  // Any stable, distinct minor per key will do here.
  return static_cast<uint32_t>(0x800 + (key % 0x100));
}

}  // namespace

TEST_CASE("aggregates: one level takes the whole aggregate, and members keep their rates",
          "[enforce][aggregate]") {
  const std::vector<AggregateMember> members = {
      {1, "media", QosLevel::kShared, 50 * kMbit, 50 * kMbit, false},
      {2, "media", QosLevel::kShared, 1 * kMbit, 0, true},
      {3, "other", QosLevel::kShared, 20 * kMbit, 20 * kMbit, false},  // no aggregate
  };
  const auto plan = PlanAggregates(members, {{"media", AggregateCap{100 * kMbit, 0}}}, MinorOf, "");
  REQUIRE(plan.groups.size() == 1);
  CHECK(plan.groups[0].ceil_bps == 100 * kMbit);
  CHECK(plan.groups[0].rate_bps == 51 * kMbit);
  CHECK(plan.groups[0].minor == *MinorOf(AggregateKey(QosLevel::kShared, "media")));
  REQUIRE(plan.members.size() == 2);
  CHECK(plan.members.at(1).rate_bps == 50 * kMbit);
  CHECK(plan.members.at(1).ceil_bps == 50 * kMbit);
  CHECK(plan.members.at(2).ceil_bps == 0);  // borrows up to the aggregate
  CHECK(plan.members.count(3) == 0);
  CHECK(plan.problems.empty());
}

TEST_CASE("aggregates: guarantees above the aggregate are scaled to fit it, and reported",
          "[enforce][aggregate]") {
  const std::vector<AggregateMember> members = {
      {1, "media", QosLevel::kShared, 300 * kMbit, 300 * kMbit, false},
      {2, "media", QosLevel::kShared, 100 * kMbit, 400 * kMbit, false},
  };
  const auto plan =
      PlanAggregates(members, {{"media", AggregateCap{200 * kMbit, 0}}}, MinorOf, "eth0: ");
  CHECK(plan.members.at(1).rate_bps == 150 * kMbit);
  CHECK(plan.members.at(2).rate_bps == 50 * kMbit);
  CHECK(plan.members.at(1).ceil_bps == 200 * kMbit);  // its own ceiling held to the aggregate
  CHECK(plan.members.at(2).ceil_bps == 200 * kMbit);
  REQUIRE(plan.problems.size() == 1);
  CHECK_THAT(plan.problems[0], Catch::StartsWith("eth0: namespace media (shared)") &&
                                   Catch::Contains("scaled to fit"));
}

TEST_CASE("aggregates: a namespace over two levels divides its aggregate by their guarantees",
          "[enforce][aggregate]") {
  const std::vector<AggregateMember> members = {
      {1, "media", QosLevel::kShared, 30 * kMbit, 30 * kMbit, false},
      {2, "media", QosLevel::kReclaimed, 10 * kMbit, 10 * kMbit, false},
  };
  const auto plan =
      PlanAggregates(members, {{"media", AggregateCap{100 * kMbit, 40 * kMbit}}}, MinorOf, "");
  REQUIRE(plan.groups.size() == 2);
  uint64_t ceil_sum = 0;
  for (const auto& g : plan.groups) {
    ceil_sum += g.ceil_bps;
    CHECK(g.rate_bps <= g.ceil_bps);
    CHECK(g.ceil_bps == (g.level == QosLevel::kShared ? 75 * kMbit : 25 * kMbit));
    CHECK(g.rate_bps == (g.level == QosLevel::kShared ? 30 * kMbit : 10 * kMbit));
  }
  CHECK(ceil_sum <= 100 * kMbit);  // never more than the aggregate together
  CHECK(AggregateKey(QosLevel::kShared, "media") != AggregateKey(QosLevel::kReclaimed, "media"));
  CHECK((AggregateKey(QosLevel::kShared, "media") >> 63) == 1);  // never a cgroup id
}

TEST_CASE(
    "aggregates: every pod of an aggregated namespace goes under its class, other namespaces pay "
    "nothing",
    "[enforce][aggregate]") {
  World w;
  auto policy = std::make_shared<TenantPolicy>();
  policy->namespaces["media"].aggregate.egress_ceil_bps = 100 * kMbit;
  w.options.tenant = policy;
  auto in = [](const std::string& ns, netqos::enforce::ObservedContainer c) {
    netqos::testing::EditPod(c.pod, [&](netqos::enforce::PodMeta& m) { m.ns = ns; });
    return c;
  };
  w.allocations["u1"]["c"] = Alloc("shared_cores", kEth0, 50, 50);
  w.containers = {
      in("media", ObservedIn("u1", "c", 11, {}, 1011)),  // allocated
      in("media", ObservedIn("u2", "c", 12, {}, 1012)),  // nothing: a member leaf
      in("media", ObservedIn("u3", "c", 13, {{"kubernetes.io/ingress-bandwidth", "10M"}}, 1013)),
      in("other", ObservedIn("u4", "c", 14, {}, 1014)),  // no aggregate, nothing: no leaf
  };
  auto s = w.Compute();
  INFO([&] {
    std::string out;
    for (const auto& p : s.problems) out += p + "\n";
    return out;
  }());
  REQUIRE(s.egress_groups.at(kEth0).size() == 1);
  const auto& g = s.egress_groups.at(kEth0)[0];
  CHECK(g.ceil_bps == 100 * kMbit);
  CHECK(s.ingress_groups.count(kEth0) == 0);  // the aggregate caps egress only
  std::map<uint64_t, const netqos::shaping::ContainerAllocation*> egress;
  for (const auto& a : s.egress.at(kEth0)) egress[a.key] = &a;
  REQUIRE(egress.size() == 3);  // u1's leaf, u2's and u3's pod leaves; nothing of u4
  for (uint64_t key : {uint64_t{11}, uint64_t{1012}, uint64_t{1013}}) {
    INFO("leaf " << key);
    REQUIRE(egress.count(key) == 1);
    CHECK(egress.at(key)->group_minor == g.minor);
  }
  CHECK(egress.at(11)->rate_bps == 50 * kMbit);
  CHECK_FALSE(egress.at(11)->aggregate_member);
  CHECK(egress.at(1012)->aggregate_member);
  CHECK(egress.at(1012)->borrow);
  CHECK(egress.at(1013)->aggregate_member);  // its leaf is its ingress annotation's; egress: member
  CHECK(s.by_cgroup.at(12).aggregate_minor == std::optional<uint32_t>(g.minor));
  CHECK_FALSE(s.by_cgroup.at(14).leaf_key.has_value());
  CHECK_FALSE(s.by_cgroup.at(14).aggregate_minor.has_value());
  // The plan takes them: the aggregate's class under the shared level, the leaves under it.
  auto plan = netqos::shaping::BuildHtbPlan("eth0", {}, 1000, s.egress.at(kEth0), {},
                                            s.egress_groups.at(kEth0));
  INFO(plan.status().message());
  REQUIRE(plan.ok());
  // EDT does not pace a member leaf at its 1 Mbit/s guarantee; the aggregate has a budget of its
  // own under its class handle, and the aggregate map names it for each of the namespace's leaves.
  using netqos::shaping::MakeHandle;
  const auto edt = netqos::enforce::PlanEdtRates(s.egress, {kEth0}, s.egress_groups);
  CHECK(edt.count(MakeHandle(0x10, *w.minors.Lookup(1012))) == 0);
  CHECK(edt.count(MakeHandle(0x10, *w.minors.Lookup(11))) == 1);
  CHECK(edt.at(MakeHandle(0x10, g.minor)) == 100 * kMbit / 8);
  const auto placed = netqos::enforce::PlanEdtAggregates(s.egress, {kEth0});
  CHECK(placed.size() == 3);
  CHECK(placed.at(MakeHandle(0x10, *w.minors.Lookup(1012))) == MakeHandle(0x10, g.minor));
  CHECK(netqos::enforce::PlanEdtAggregates(s.egress, {}).empty());  // no EDT NIC: nothing
  // Only the aggregated pods' class entries ask the NIC program to look at the aggregate map.
  CHECK((s.by_cgroup.at(12).entry.flags & netqos::enforce::kClassAggregate) != 0);
  CHECK((s.by_cgroup.at(14).entry.flags & netqos::enforce::kClassAggregate) == 0);

  // The aggregate's minor stays from pass to pass; without the aggregate it is released.
  const uint32_t minor = g.minor;
  s = w.Compute();
  CHECK(s.egress_groups.at(kEth0)[0].minor == minor);
  w.options.tenant = nullptr;
  s = w.Compute();
  CHECK(s.egress_groups.empty());
  CHECK_FALSE(w.minors.Lookup(AggregateKey(QosLevel::kShared, "media")).has_value());
  CHECK(s.egress.at(kEth0).size() == 1);  // u1's own leaf only
}
