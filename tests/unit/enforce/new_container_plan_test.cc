// PlanNewContainer: a container added on its own gets the class entry and leaf a whole
// recomputation would give it, its minor from the node-wide allocator, and a pod-level leaf
// already in place is not added twice. Pure.
#include "enforce/new_container_plan.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/constants.h"
#include "support/observed_container.h"

namespace {

using netqos::core::AllocationInfo;
using netqos::core::NicId;
using netqos::core::StringMap;
using netqos::enforce::ComputeDesiredState;
using netqos::enforce::DesiredOptions;
using netqos::enforce::DesiredState;
using netqos::enforce::EnforcedLink;
using netqos::enforce::NewContainerPlan;
using netqos::enforce::ObservedContainer;
using netqos::enforce::PlanNewContainer;
using netqos::shaping::kQdiscMajor;
using netqos::shaping::MakeHandle;
using netqos::shaping::MinorAllocator;
using netqos::testing::EditAnnotations;

const NicId kEth0{"", "eth0"};  // enforced
const NicId kEth1{"", "eth1"};  // not enforced

AllocationInfo Alloc(const NicId& nic, uint32_t egress, uint32_t ingress,
                     const std::string& level = "shared_cores") {
  AllocationInfo a;
  a.qos_level = level;
  a.if_name = nic.name;
  a.egress = egress;
  a.ingress = ingress;
  return a;
}

ObservedContainer Container(const std::string& uid, const std::string& name, uint64_t cgroup_id,
                            uint64_t pod_cgroup_id = 0) {
  ObservedContainer c;
  c.pod = netqos::testing::PodMetaOf(uid, "ns", "pod-" + uid);
  c.container_name = name;
  c.cgroup_id = cgroup_id;
  c.pod_cgroup_id = pod_cgroup_id;
  return c;
}

// The plan's leaf on eth0, the one enforced NIC, in each direction.
std::optional<netqos::shaping::ContainerAllocation> LeafOn(
    const std::map<NicId, netqos::shaping::ContainerAllocation>& leaves) {
  auto it = leaves.find(kEth0);
  if (it == leaves.end()) return std::nullopt;
  return it->second;
}
std::optional<netqos::shaping::ContainerAllocation> EgressOn(const NewContainerPlan& p) {
  return LeafOn(p.egress_leaves);
}
std::optional<netqos::shaping::ContainerAllocation> IngressOn(const NewContainerPlan& p) {
  return LeafOn(p.ingress_leaves);
}

struct World {
  netqos::core::PolicyConfig policy;
  netqos::core::PodEntries allocations;
  std::vector<EnforcedLink> enforced{{kEth0, 1000}};
  DesiredOptions options{true};
  MinorAllocator minors;

  DesiredState Whole(const std::vector<ObservedContainer>& containers) {
    return ComputeDesiredState(policy, allocations, containers, enforced, {}, options, minors);
  }
  NewContainerPlan Add(const ObservedContainer& c) {
    return PlanNewContainer(policy, allocations, c, enforced, options, minors);
  }
};

}  // namespace

TEST_CASE("new container plan: same entry and leaf as recomputing everything", "[enforce]") {
  World incremental, whole;
  for (World* w : {&incremental, &whole}) {
    w->allocations["u1"]["a"] = Alloc(kEth0, 100, 50);
    w->allocations["u2"]["b"] = Alloc(kEth0, 200, 0, "dedicated_cores");
    w->allocations["u3"]["c"] = Alloc(kEth1, 300, 300);  // not an enforced NIC
  }
  const auto a = Container("u1", "a", 11), b = Container("u2", "b", 12),
             c = Container("u3", "c", 13), d = Container("u4", "d", 14);  // d: not allocated
  incremental.Whole({a});
  const DesiredState want = whole.Whole({a, b, c, d});
  // a has an ingress leaf: its packets go through the IFB; b (egress only), c and d do not.
  CHECK(want.by_cgroup.at(11).entry.flags == netqos::enforce::kClassIngressShaped);
  CHECK(want.by_cgroup.at(12).entry.flags == 0);

  for (const auto& added : {b, c, d}) {
    INFO("container " << added.container_name);
    const NewContainerPlan plan = incremental.Add(added);
    CHECK(plan.problems.empty());
    REQUIRE(plan.desired.has_value());
    const auto& expect = want.by_cgroup.at(added.cgroup_id);
    CHECK(plan.desired->entry == expect.entry);
    CHECK(plan.desired->leaf_key == expect.leaf_key);
    CHECK(netqos::testing::NicOf(*plan.desired) == netqos::testing::NicOf(expect));
    CHECK(plan.desired->allocated_mbps == expect.allocated_mbps);
  }
  // b's leaf: egress only (no ingress allocation), at the minor the whole pass gave it.
  World again;
  again.allocations = incremental.allocations;
  again.Whole({a});
  const NewContainerPlan pb = again.Add(b);
  REQUIRE(EgressOn(pb).has_value());
  CHECK(EgressOn(pb)->key == 12);
  CHECK(EgressOn(pb)->rate_bps == 200 * netqos::shaping::kBitsPerMbit);
  CHECK(EgressOn(pb)->minor == 0x101);
  CHECK(EgressOn(pb)->minor == *whole.minors.Lookup(12));
  CHECK_FALSE(IngressOn(pb).has_value());
  CHECK(pb.desired->entry.priority == MakeHandle(kQdiscMajor, 0x101));
  // The whole pass that follows keeps the minor: the leaf does not move.
  const DesiredState next = again.Whole({a, b});
  CHECK(next.by_cgroup.at(12).entry.priority == MakeHandle(kQdiscMajor, 0x101));
  CHECK(again.minors.Lookup(11) == std::optional<uint32_t>(0x100));
}

TEST_CASE("new container plan: a pod-level leaf already in place is not added again", "[enforce]") {
  World w;
  w.allocations["u1"][netqos::core::kPodLevelContainerName] = Alloc(kEth0, 100, 100);
  const auto first = Container("u1", "a", 21, /*pod_cgroup_id=*/20);
  const auto second = Container("u1", "b", 22, 20);
  w.Whole({first});
  const NewContainerPlan plan = w.Add(second);
  REQUIRE(plan.desired.has_value());
  CHECK(plan.desired->leaf_key == std::optional<uint64_t>(20));
  CHECK(plan.desired->entry.priority == MakeHandle(kQdiscMajor, *w.minors.Lookup(20)));
  CHECK_FALSE(EgressOn(plan).has_value());
  CHECK_FALSE(IngressOn(plan).has_value());

  // The pod's first container on its own brings the leaf, both ways.
  World fresh;
  fresh.allocations = w.allocations;
  const NewContainerPlan p1 = fresh.Add(first);
  REQUIRE(EgressOn(p1).has_value());
  REQUIRE(IngressOn(p1).has_value());
  CHECK(EgressOn(p1)->key == 20);
  CHECK(IngressOn(p1)->minor == EgressOn(p1)->minor);
}

TEST_CASE("new container plan: no free minor leaves the container on its level's default leaf",
          "[enforce]") {
  World w;
  w.minors = MinorAllocator(0x100, 0x100);  // room for one leaf
  // The shared level's class has a ceiling below the link: on it, b's packets are held back.
  w.options.ingress_level_limited[static_cast<size_t>(netqos::shaping::QosLevel::kShared)] = true;
  w.allocations["u1"]["a"] = Alloc(kEth0, 100, 0);
  w.allocations["u2"]["b"] = Alloc(kEth0, 100, 50);
  w.Whole({Container("u1", "a", 31)});
  const NewContainerPlan plan = w.Add(Container("u2", "b", 32));
  REQUIRE(plan.desired.has_value());
  CHECK_FALSE(plan.desired->leaf_key.has_value());
  CHECK(plan.desired->entry.priority == MakeHandle(kQdiscMajor, 0x31));
  CHECK(plan.desired->entry.flags ==
        (netqos::enforce::kClassIngressShaped | netqos::enforce::kClassNoLeaf));
  CHECK_FALSE(EgressOn(plan).has_value());
  CHECK_FALSE(IngressOn(plan).has_value());
  REQUIRE(plan.problems.size() == 1);
  CHECK_THAT(plan.problems[0], Catch::Contains("no free HTB leaf minor"));
}

TEST_CASE(
    "new container plan: an unknown QoS level is classified at the unclassified level, with its "
    "problem",
    "[enforce]") {
  World w;
  w.allocations["u1"]["a"] = Alloc(kEth0, 100, 0, "gold_cores");
  const NewContainerPlan plan = w.Add(Container("u1", "a", 41));
  REQUIRE(plan.desired.has_value());
  CHECK(plan.desired->entry.qos_level == static_cast<uint8_t>(netqos::shaping::QosLevel::kShared));
  CHECK(EgressOn(plan).has_value());  // its cap holds
  REQUIRE(plan.problems.size() == 1);
  CHECK_THAT(plan.problems[0],
             Catch::Contains("gold_cores is unknown; classified at the unclassified level"));
}

TEST_CASE("new container plan: a pod capped by its annotations alone gets its leaf on every NIC",
          "[enforce]") {
  World w;
  const NicId eth2{"", "eth2"};
  w.enforced = {{kEth0, 1000}, {eth2, 500}};
  auto c = Container("u1", "a", 51, /*pod_cgroup_id=*/50);
  EditAnnotations(c, [](StringMap& a) { a = {{"kubernetes.io/egress-bandwidth", "20M"}}; });
  const NewContainerPlan plan = w.Add(c);
  REQUIRE(plan.desired.has_value());
  CHECK(plan.desired->leaf_key == std::optional<uint64_t>(50));
  REQUIRE(plan.egress_leaves.size() == 2);
  for (const auto& [nic, leaf] : plan.egress_leaves) {
    INFO(nic.name);
    CHECK(leaf.key == 50);
    CHECK(leaf.ceil_bps == 20'000'000);
    CHECK(leaf.minor == *w.minors.Lookup(50));
  }
  CHECK(plan.ingress_leaves.empty());
  CHECK(plan.annotated.at("u1").egress_bps == std::optional<uint64_t>(20'000'000));

  // A refused value in the fast path keeps what the last pass enforced.
  World again;
  again.enforced = w.enforced;
  EditAnnotations(c, [](StringMap& a) { a["kubernetes.io/egress-bandwidth"] = "lots"; });
  const NewContainerPlan kept = PlanNewContainer(again.policy, again.allocations, c, again.enforced,
                                                 again.options, again.minors, plan.annotated);
  REQUIRE(kept.egress_leaves.size() == 2);
  CHECK(kept.egress_leaves.begin()->second.ceil_bps == 20'000'000);
  REQUIRE(kept.problems.size() == 1);
  CHECK_THAT(kept.problems[0], Catch::Contains("kubernetes.io/egress-bandwidth=lots"));
}
