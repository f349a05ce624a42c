// ComputeDesiredState: class ids, QoS levels, skb->priority and HTB leaves from allocations and
// observed containers; leaf minors stable, released, reused and adopted after a restart. Pure.
#include "enforce/desired_state.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/constants.h"
#include "support/observed_container.h"
#include "unit/enforce/desired_world.h"

namespace {

using Catch::Contains;
using netqos::core::AllocationInfo;
using netqos::core::NicId;
using netqos::core::PolicyConfig;
using netqos::core::StringMap;
using netqos::enforce::ComputeDesiredState;
using netqos::enforce::DesiredContainer;
using netqos::enforce::DesiredOptions;
using netqos::enforce::DesiredState;
using netqos::enforce::EnforcedLink;
using netqos::enforce::LevelOf;
using netqos::enforce::ObservedContainer;
using netqos::shaping::BuildHtbPlan;
using netqos::shaping::ContainerAllocation;
using netqos::shaping::kQdiscMajor;
using netqos::shaping::MakeHandle;
using netqos::shaping::MinorAllocator;
using netqos::shaping::QosLevel;

constexpr uint32_t H(uint32_t minor) { return MakeHandle(kQdiscMajor, minor); }

using netqos::testing::Alloc;
using netqos::testing::kEth0;
using netqos::testing::kEth1;
using netqos::testing::World;
const char kQosKey[] = "katalyst.kubewharf.io/qos_level";
const char kClassKey[] = "katalyst.kubewharf.io/net_class_id";
using netqos::testing::EditAnnotations;
using netqos::testing::NicOf;
using netqos::testing::ObservedIn;

using LeafTuple = std::tuple<uint64_t, int, uint64_t, uint32_t>;  // key, level, Mbit/s, minor
std::vector<LeafTuple> Leaves(const std::vector<ContainerAllocation>& v) {
  std::vector<LeafTuple> out;
  for (const auto& a : v) {
    out.emplace_back(a.key, static_cast<int>(a.level), a.rate_bps / netqos::shaping::kBitsPerMbit,
                     a.minor);
  }
  return out;
}

std::string Joined(const std::vector<std::string>& problems) {
  std::string out;
  for (const auto& p : problems) out += p + "\n";
  return out;
}

const DesiredContainer& At(const DesiredState& s, uint64_t cgroup_id) {
  auto it = s.by_cgroup.find(cgroup_id);
  INFO("cgroup " << cgroup_id);
  REQUIRE(it != s.by_cgroup.end());
  return it->second;
}

struct LevelRow {
  const char* name;
  QosLevel level;
  uint32_t default_minor;
};
const LevelRow kLevelRows[] = {
    {"system_cores", QosLevel::kSystem, 0x11},
    {"dedicated_cores", QosLevel::kDedicated, 0x21},
    {"shared_cores", QosLevel::kShared, 0x31},
    {"reclaimed_cores", QosLevel::kReclaimed, 0x41},
};

}  // namespace

TEST_CASE("LevelOf maps the Katalyst level names", "[enforce]") {
  for (const auto& row : kLevelRows) {
    INFO(row.name);
    CHECK(LevelOf(row.name) == std::optional<QosLevel>(row.level));
  }
  CHECK_FALSE(LevelOf("shared").has_value());
  CHECK_FALSE(LevelOf("").has_value());
  CHECK_FALSE(LevelOf("gold_cores").has_value());
}

TEST_CASE("allocated container on an enforced NIC gets a leaf on egress and ingress", "[enforce]") {
  World w;
  w.allocations["u1"]["c1"] = Alloc("shared_cores", kEth0, 100, 50);
  w.containers = {ObservedIn("u1", "c1", 1001)};
  const DesiredState s = w.Compute();

  CHECK(s.problems.empty());
  REQUIRE(s.by_cgroup.size() == 1);
  const DesiredContainer& d = At(s, 1001);
  CHECK(d.entry.priority == 0x100100u);
  CHECK(d.entry.qos_level == static_cast<uint8_t>(QosLevel::kShared));
  CHECK(d.entry.net_class_id == 0);
  CHECK(d.leaf_key == std::optional<uint64_t>(1001));
  CHECK(NicOf(d) == std::optional<NicId>(kEth0));
  CHECK(d.allocated_mbps == 100);
  CHECK(d.pod_uid() == "u1");
  CHECK(d.pod_namespace() == "ns");
  CHECK(d.pod_name() == "pod-u1");
  CHECK(d.container_name == "c1");
  CHECK(Leaves(s.egress.at(kEth0)) == std::vector<LeafTuple>{{1001, 2, 100, 0x100}});
  CHECK(Leaves(s.ingress.at(kEth0)) == std::vector<LeafTuple>{{1001, 2, 50, 0x100}});
  CHECK(w.minors.Lookup(1001) == std::optional<uint32_t>(0x100));
}

TEST_CASE("capped leaves carry the container's level and a minor in the leaf range", "[enforce]") {
  for (const auto& row : kLevelRows) {
    INFO(row.name);
    World w;
    w.allocations["u1"]["c1"] = Alloc(row.name, kEth0, 10, 0);
    w.containers = {ObservedIn("u1", "c1", 7)};
    const DesiredState s = w.Compute();
    const DesiredContainer& d = At(s, 7);
    CHECK(d.entry.qos_level == static_cast<uint8_t>(row.level));
    CHECK(netqos::shaping::HandleMajor(d.entry.priority) == 0x10u);
    CHECK(netqos::shaping::HandleMinor(d.entry.priority) >= 0x100u);
    CHECK(Leaves(s.egress.at(kEth0)) ==
          std::vector<LeafTuple>{{7, static_cast<int>(row.level), 10, 0x100}});
    CHECK(s.ingress.at(kEth0).empty());  // no ingress allocation: no ingress leaf
  }
}

TEST_CASE("allocated on a NIC that is not enforced: level default priority, no leaf", "[enforce]") {
  for (const auto& row : kLevelRows) {
    INFO(row.name);
    World w;
    w.allocations["u1"]["c1"] = Alloc(row.name, kEth1, 100, 100);
    w.containers = {ObservedIn("u1", "c1", 1001)};
    const DesiredState s = w.Compute();
    CHECK(s.problems.empty());
    const DesiredContainer& d = At(s, 1001);
    CHECK(d.entry.priority == H(row.default_minor));
    CHECK(d.entry.qos_level == static_cast<uint8_t>(row.level));
    CHECK_FALSE(d.leaf_key.has_value());
    CHECK(NicOf(d) == std::optional<NicId>(kEth1));
    CHECK(d.allocated_mbps == 100);
    CHECK(s.egress.at(kEth0).empty());
    CHECK(s.egress.count(kEth1) == 0);
    CHECK(w.minors.size() == 0);
  }
}

TEST_CASE("allocated on an enforced NIC with 0 Mbps egress gets no leaf", "[enforce]") {
  World w;
  w.allocations["u1"]["c1"] = Alloc("dedicated_cores", kEth0, 0, 100);
  w.containers = {ObservedIn("u1", "c1", 5)};
  const DesiredState s = w.Compute();
  CHECK(At(s, 5).entry.priority == H(0x21));
  CHECK_FALSE(At(s, 5).leaf_key.has_value());
  CHECK(s.egress.at(kEth0).empty());
  CHECK(s.ingress.at(kEth0).empty());
}

TEST_CASE("unallocated container: QoS level from its annotations", "[enforce]") {
  for (const auto& row : kLevelRows) {
    INFO(row.name);
    World w;
    w.options.tenant = netqos::testing::AnyLevelPolicy();
    w.containers = {ObservedIn("u1", "c1", 42, {{kQosKey, row.name}})};
    const DesiredState s = w.Compute();
    CHECK(s.problems.empty());
    const DesiredContainer& d = At(s, 42);
    CHECK(d.entry.qos_level == static_cast<uint8_t>(row.level));
    CHECK(d.entry.priority == H(row.default_minor));
    CHECK(d.nic == nullptr);
    CHECK(d.allocated_mbps == 0);
    CHECK_FALSE(d.leaf_key.has_value());
  }
  // No annotation at all: shared_cores.
  World w;
  w.containers = {ObservedIn("u1", "c1", 42)};
  const DesiredState s = w.Compute();
  CHECK(At(s, 42).entry.qos_level == static_cast<uint8_t>(QosLevel::kShared));
  CHECK(At(s, 42).entry.priority == H(0x31));
}

TEST_CASE("the allocation's QoS level wins over the pod annotations", "[enforce]") {
  World w;
  w.allocations["u1"]["c1"] = Alloc("reclaimed_cores", kEth1, 10, 10);
  w.containers = {ObservedIn("u1", "c1", 9, {{kQosKey, "dedicated_cores"}})};
  const DesiredState s = w.Compute();
  CHECK(At(s, 9).entry.qos_level == static_cast<uint8_t>(QosLevel::kReclaimed));
  CHECK(At(s, 9).entry.priority == H(0x41));
}

TEST_CASE("set_priority false leaves every priority at 0", "[enforce]") {
  World w;
  w.options.set_priority = false;
  w.allocations["u1"]["capped"] = Alloc("dedicated_cores", kEth0, 100, 100);
  w.allocations["u1"]["elsewhere"] = Alloc("system_cores", kEth1, 100, 100);
  w.containers = {ObservedIn("u1", "capped", 1), ObservedIn("u1", "elsewhere", 2),
                  ObservedIn("u2", "free", 3, {{kQosKey, "reclaimed_cores"}})};
  const DesiredState s = w.Compute();
  REQUIRE(s.by_cgroup.size() == 3);
  for (const auto& [cg, d] : s.by_cgroup) {
    INFO("cgroup " << cg);
    CHECK(d.entry.priority == 0);
  }
  // The class id and level are still written (they key the counters).
  CHECK(At(s, 1).entry.qos_level == static_cast<uint8_t>(QosLevel::kDedicated));
  CHECK(At(s, 2).entry.qos_level == static_cast<uint8_t>(QosLevel::kSystem));
  CHECK(At(s, 3).entry.qos_level == static_cast<uint8_t>(QosLevel::kReclaimed));
}

TEST_CASE("received packets go through the IFB only when a class there can hold them back",
          "[enforce]") {
  using netqos::enforce::DesiredOptionsFor;
  using netqos::enforce::kClassIngressShaped;
  using netqos::enforce::kClassNoLeaf;
  netqos::shaping::ShapingConfig shaping;  // every level may borrow up to the whole link
  World w;
  w.options = DesiredOptionsFor(shaping, true);
  w.allocations["u1"]["both"] = Alloc("shared_cores", kEth0, 100, 50);
  w.allocations["u1"]["egress-only"] = Alloc("dedicated_cores", kEth0, 100, 0);
  w.containers = {ObservedIn("u1", "both", 1), ObservedIn("u1", "egress-only", 2),
                  ObservedIn("u2", "free", 3, {{kQosKey, "reclaimed_cores"}})};
  DesiredState s = w.Compute();
  CHECK(At(s, 1).entry.flags == kClassIngressShaped);  // its own ingress leaf
  CHECK(At(s, 2).entry.flags == 0);  // no ingress leaf: lands in the unclassified level's class
  // Its level's class borrows up to the link; and it has no leaf, so EDT never looks for a
  // pacing budget for it.
  CHECK(At(s, 3).entry.flags == kClassNoLeaf);

  // A level with a ceiling below the link holds its traffic back on ingress too.
  shaping.levels[static_cast<size_t>(QosLevel::kReclaimed)].ceil_permille = 500;
  w.options = DesiredOptionsFor(shaping, true);
  s = w.Compute();
  CHECK(At(s, 1).entry.flags == kClassIngressShaped);
  CHECK(At(s, 2).entry.flags == 0);
  CHECK(At(s, 3).entry.flags == (kClassIngressShaped | kClassNoLeaf));
  // ... and so does the unclassified level, where an egress-only leaf's packets land.
  shaping.default_level = QosLevel::kReclaimed;
  w.options = DesiredOptionsFor(shaping, true);
  s = w.Compute();
  CHECK(At(s, 2).entry.flags == kClassIngressShaped);

  // Nothing shaped: nothing is redirected.
  w.options = DesiredOptionsFor(shaping, false);
  s = w.Compute();
  for (const auto& [cg, d] : s.by_cgroup) {
    INFO("cgroup " << cg);
    CHECK(d.entry.flags == 0);
  }
}

TEST_CASE("net class id from the pod annotation or the level's configured id", "[enforce]") {
  struct Row {
    const char* what;
    std::string annotation_key;  // policy.pod_net_class_annotation_key
    StringMap annotations;
    uint32_t want;
    const char* problem;  // substring of the one expected problem; nullptr = none
  };
  const std::string custom = "example.com/class";
  const std::vector<Row> rows = {
      {"level id", kClassKey, {{kQosKey, "dedicated_cores"}}, 3, nullptr},
      {"shared by default", kClassKey, {}, 7, nullptr},
      {"annotation", kClassKey, {{kClassKey, "42"}}, 42, nullptr},
      {"annotation max", kClassKey, {{kClassKey, "4294967295"}}, 4294967295u, nullptr},
      {"custom key", custom, {{custom, "9"}, {kClassKey, "5"}}, 9, nullptr},
      {"default key ignored under a custom key", custom, {{kClassKey, "5"}}, 7, nullptr},
      {"not a number", kClassKey, {{kClassKey, "abc"}}, 7, "not a decimal number"},
      {"negative",
       kClassKey,
       {{kClassKey, "-1"}, {kQosKey, "dedicated_cores"}},
       3,
       "not a decimal number"},
      {"too large", kClassKey, {{kClassKey, "4294967296"}}, 7, "exceeds 4294967295"},
      {"empty", kClassKey, {{kClassKey, ""}}, 7, "empty net class id"},
  };
  for (const auto& row : rows) {
    INFO(row.what);
    World w;
    w.options.tenant = netqos::testing::AnyLevelPolicy();
    w.policy.pod_net_class_annotation_key = row.annotation_key;
    w.policy.qos_class_ids[netqos::core::kDedicatedCores] = 3;
    w.policy.qos_class_ids[netqos::core::kSharedCores] = 7;
    w.containers = {ObservedIn("u1", "c1", 11, row.annotations)};
    const DesiredState s = w.Compute();
    CHECK(At(s, 11).entry.net_class_id == row.want);
    if (row.problem == nullptr) {
      CHECK(s.problems.empty());
    } else {
      REQUIRE(s.problems.size() == 1);
      CHECK_THAT(s.problems[0], Contains("ns/pod-u1 container c1") && Contains(row.problem) &&
                                    Contains("class id " + std::to_string(row.want)));
    }
  }
}

TEST_CASE("a bad class id annotation does not stop the cap", "[enforce]") {
  World w;
  w.policy.qos_class_ids[netqos::core::kReclaimedCores] = 4;
  w.allocations["u1"]["c1"] = Alloc("reclaimed_cores", kEth0, 100, 0);
  w.containers = {ObservedIn("u1", "c1", 11, {{kClassKey, "0x10"}})};
  const DesiredState s = w.Compute();
  CHECK(At(s, 11).entry.net_class_id == 4);
  CHECK(At(s, 11).leaf_key == std::optional<uint64_t>(11));
  CHECK(At(s, 11).entry.priority == H(0x100));
  REQUIRE(s.problems.size() == 1);
  CHECK_THAT(s.problems[0], Contains("reclaimed_cores class id 4"));
}

TEST_CASE(
    "QoS annotations that cannot be resolved classify the container at the unclassified level",
    "[enforce]") {
  struct Row {
    const char* what;
    StringMap annotations;
    const char* problem;
  };
  const std::vector<Row> rows = {
      {"conflicting selectors",
       {{kQosKey, "dedicated_cores"}, {"example.com/tier", "silver"}},
       "conflicting or unknown selectors"},
      {"unknown level", {{kQosKey, "gold_cores"}}, "conflicting or unknown selectors"},
  };
  for (const auto& row : rows) {
    INFO(row.what);
    World w;
    w.options.tenant = netqos::testing::AnyLevelPolicy();
    w.policy.qos.extra_selectors[netqos::core::kDedicatedCores] = {{"example.com/tier", "gold"}};
    w.containers = {ObservedIn("u1", "bad", 21, row.annotations),
                    ObservedIn("u2", "good", 22, {{kQosKey, "system_cores"}})};
    const DesiredState s = w.Compute();
    CHECK(At(s, 21).entry.qos_level == static_cast<uint8_t>(QosLevel::kShared));
    CHECK(At(s, 21).entry.priority == H(0x31));
    CHECK(At(s, 22).entry.priority == H(0x11));  // the others are unaffected
    REQUIRE(s.problems.size() == 1);
    CHECK_THAT(s.problems[0], Contains("ns/pod-u1 container bad") && Contains(row.problem) &&
                                  Contains("classified at the unclassified level shared_cores"));
  }
}

TEST_CASE("an allocation with an unknown QoS level is classified at the unclassified level",
          "[enforce]") {
  World w;
  w.allocations["u1"]["c1"] = Alloc("gold_cores", kEth0, 100, 100);
  w.containers = {ObservedIn("u1", "c1", 31)};
  const DesiredState s = w.Compute();
  CHECK(At(s, 31).entry.qos_level == static_cast<uint8_t>(QosLevel::kShared));
  REQUIRE(s.egress.at(kEth0).size() == 1);  // its cap holds
  REQUIRE(s.problems.size() == 1);
  CHECK_THAT(s.problems[0], Contains("ns/pod-u1 container c1") && Contains("gold_cores"));
}

TEST_CASE("pod-level allocation: all containers share one leaf keyed by the pod cgroup",
          "[enforce]") {
  World w;
  w.allocations["u1"][netqos::core::kPodLevelContainerName] =
      Alloc("dedicated_cores", kEth0, 200, 80);
  w.containers = {ObservedIn("u1", "app", 11, {}, 10), ObservedIn("u1", "sidecar", 12, {}, 10),
                  ObservedIn("u2", "other", 13, {}, 20)};
  const DesiredState s = w.Compute();
  CHECK(s.problems.empty());
  for (uint64_t cg : {11u, 12u}) {
    INFO("cgroup " << cg);
    const DesiredContainer& d = At(s, cg);
    CHECK(d.leaf_key == std::optional<uint64_t>(10));
    CHECK(d.entry.priority == H(0x100));
    CHECK(d.entry.qos_level == static_cast<uint8_t>(QosLevel::kDedicated));
    CHECK(d.allocated_mbps == 200);
    CHECK(NicOf(d) == std::optional<NicId>(kEth0));
  }
  // The unallocated pod is shared_cores without a leaf.
  CHECK(At(s, 13).entry.priority == H(0x31));
  CHECK_FALSE(At(s, 13).leaf_key.has_value());
  CHECK(Leaves(s.egress.at(kEth0)) == std::vector<LeafTuple>{{10, 1, 200, 0x100}});
  CHECK(Leaves(s.ingress.at(kEth0)) == std::vector<LeafTuple>{{10, 1, 80, 0x100}});
}

TEST_CASE("a container's own allocation wins over the pod-level one", "[enforce]") {
  World w;
  w.allocations["u1"][netqos::core::kPodLevelContainerName] =
      Alloc("dedicated_cores", kEth0, 200, 0);
  w.allocations["u1"]["own"] = Alloc("dedicated_cores", kEth0, 30, 0);
  w.containers = {ObservedIn("u1", "own", 11, {}, 10), ObservedIn("u1", "rest", 12, {}, 10)};
  const DesiredState s = w.Compute();
  CHECK(At(s, 11).leaf_key == std::optional<uint64_t>(11));
  CHECK(At(s, 12).leaf_key == std::optional<uint64_t>(10));
  CHECK(At(s, 11).entry.priority != At(s, 12).entry.priority);
  CHECK(Leaves(s.egress.at(kEth0)) ==
        std::vector<LeafTuple>{{10, 1, 200, 0x100}, {11, 1, 30, 0x101}});
}

TEST_CASE("pod-level allocation without a pod cgroup: no leaf, a problem", "[enforce]") {
  World w;
  w.allocations["u1"][netqos::core::kPodLevelContainerName] =
      Alloc("shared_cores", kEth0, 200, 200);
  w.containers = {ObservedIn("u1", "app", 11, {}, 0)};
  const DesiredState s = w.Compute();
  const DesiredContainer& d = At(s, 11);
  CHECK_FALSE(d.leaf_key.has_value());
  CHECK(d.entry.priority == H(0x31));
  CHECK(d.allocated_mbps == 200);
  CHECK(s.egress.at(kEth0).empty());
  CHECK(w.minors.size() == 0);
  REQUIRE(s.problems.size() == 1);
  CHECK_THAT(s.problems[0],
             Contains("ns/pod-u1 container app") && Contains("pod cgroup was not found"));
}

TEST_CASE("an allocation above the link rate is capped at the link rate", "[enforce]") {
  World w;
  w.allocations["u1"]["c1"] = Alloc("shared_cores", kEth0, 5000, 3000);
  w.allocations["u1"]["c2"] = Alloc("shared_cores", kEth0, 1000, 1000);  // exactly the link
  w.containers = {ObservedIn("u1", "c1", 1), ObservedIn("u1", "c2", 2)};
  const DesiredState s = w.Compute();
  CHECK(At(s, 1).allocated_mbps == 5000);  // the allocation itself is reported as is
  CHECK(Leaves(s.egress.at(kEth0)) ==
        std::vector<LeafTuple>{{1, 2, 1000, 0x100}, {2, 2, 1000, 0x101}});
  CHECK(Leaves(s.ingress.at(kEth0)) ==
        std::vector<LeafTuple>{{1, 2, 1000, 0x100}, {2, 2, 1000, 0x101}});
  REQUIRE(s.problems.size() == 1);
  // One problem for the container, naming both directions.
  CHECK_THAT(s.problems[0], Contains("ns/pod-u1 container c1: egress on eth0 5 Gbit/s exceeds") &&
                                Contains("ingress on eth0 3 Gbit/s exceeds") &&
                                Contains("capped at 1 Gbit/s"));
}

TEST_CASE("containers whose cgroup is unknown are skipped", "[enforce]") {
  World w;
  w.allocations["u1"]["c1"] = Alloc("shared_cores", kEth0, 100, 100);
  w.containers = {ObservedIn("u1", "c1", 0), ObservedIn("u2", "c2", 0, {{kQosKey, "bogus"}})};
  const DesiredState s = w.Compute();
  CHECK(s.by_cgroup.empty());
  CHECK(s.problems.empty());  // not even the bad annotation is looked at
  CHECK(s.egress.at(kEth0).empty());
  CHECK(w.minors.size() == 0);
}

TEST_CASE("every enforced link has a tree, leaves or not", "[enforce]") {
  World w;
  const NicId in_ns{"ns1", "eth0"};
  w.enforced = {{kEth0, 1000}, {in_ns, 25000}};
  w.allocations["u1"]["c1"] = Alloc("shared_cores", in_ns, 100, 0);
  w.containers = {ObservedIn("u1", "c1", 1)};
  const DesiredState s = w.Compute();
  REQUIRE(s.egress.size() == 2);
  REQUIRE(s.ingress.size() == 2);
  CHECK(s.egress.at(kEth0).empty());
  CHECK(s.ingress.at(kEth0).empty());
  CHECK(Leaves(s.egress.at(in_ns)) == std::vector<LeafTuple>{{1, 2, 100, 0x100}});
  CHECK(s.ingress.at(in_ns).empty());

  World none;
  none.enforced.clear();
  none.containers = {ObservedIn("u1", "c1", 1)};
  const DesiredState empty = none.Compute();
  CHECK(empty.egress.empty());
  CHECK(empty.ingress.empty());
}

TEST_CASE("leaf minors are stable across calls, released and reused", "[enforce]") {
  World w;
  w.allocations["a"]["c"] = Alloc("shared_cores", kEth0, 10, 0);
  w.allocations["b"]["c"] = Alloc("shared_cores", kEth0, 20, 0);
  w.allocations["c"]["c"] = Alloc("reclaimed_cores", kEth0, 30, 0);
  w.containers = {ObservedIn("a", "c", 1), ObservedIn("b", "c", 2)};
  DesiredState s1 = w.Compute();
  CHECK(At(s1, 1).entry.priority == H(0x100));
  CHECK(At(s1, 2).entry.priority == H(0x101));

  // Same input again: same minors.
  DesiredState s2 = w.Compute();
  CHECK(At(s2, 1).entry.priority == H(0x100));
  CHECK(At(s2, 2).entry.priority == H(0x101));
  CHECK(Leaves(s2.egress.at(kEth0)) == Leaves(s1.egress.at(kEth0)));

  // Container 1 leaves, 3 arrives (in front of 2 in the input): 2 keeps its minor, 3 reuses 1's.
  w.containers = {ObservedIn("c", "c", 3), ObservedIn("b", "c", 2)};
  DesiredState s3 = w.Compute();
  CHECK_FALSE(w.minors.Lookup(1).has_value());
  CHECK(At(s3, 2).entry.priority == H(0x101));
  CHECK(At(s3, 3).entry.priority == H(0x100));
  CHECK(Leaves(s3.egress.at(kEth0)) ==
        std::vector<LeafTuple>{{2, 2, 20, 0x101}, {3, 3, 30, 0x100}});

  // A container whose allocation moves to an unenforced NIC gives its minor back too.
  w.allocations["b"]["c"] = Alloc("shared_cores", kEth1, 20, 0);
  DesiredState s4 = w.Compute();
  CHECK_FALSE(w.minors.Lookup(2).has_value());
  CHECK(At(s4, 2).entry.priority == H(0x31));
  CHECK(At(s4, 3).entry.priority == H(0x100));
  CHECK(w.minors.size() == 1);
}

TEST_CASE("a restarted daemon adopts the minors the class map already holds", "[enforce]") {
  World w;
  w.allocations["a"]["c"] = Alloc("shared_cores", kEth0, 10, 10);
  w.allocations["b"]["c"] = Alloc("shared_cores", kEth0, 20, 0);
  w.allocations["c"]["c"] = Alloc("shared_cores", kEth0, 30, 0);
  w.allocations["d"]["c"] = Alloc("shared_cores", kEth0, 40, 0);
  w.allocations["e"]["c"] = Alloc("shared_cores", kEth0, 50, 0);
  w.containers = {ObservedIn("a", "c", 1), ObservedIn("b", "c", 2), ObservedIn("c", "c", 3),
                  ObservedIn("d", "c", 4), ObservedIn("e", "c", 5)};
  w.current = {
      {1, H(0x123)},                 // adopted
      {2, H(0x31)},                  // a level default leaf, not a container minor
      {3, MakeHandle(0x20, 0x150)},  // another qdisc's handle
      {4, H(0x123)},                 // claims 1's minor: cannot have it
      {5, H(0x100)},                 // adopted: the lowest minor, which fresh keys then skip
  };
  const DesiredState s = w.Compute();
  CHECK(At(s, 1).entry.priority == H(0x123));
  CHECK(At(s, 5).entry.priority == H(0x100));
  std::set<uint32_t> seen;
  for (uint64_t cg : {1u, 2u, 3u, 4u, 5u}) {
    const uint32_t minor = *w.minors.Lookup(cg);
    CHECK(At(s, cg).entry.priority == H(minor));
    CHECK(seen.insert(minor).second);  // no two leaves share a minor
  }
  CHECK(At(s, 2).entry.priority == H(0x101));
  CHECK(At(s, 3).entry.priority == H(0x102));
  CHECK(At(s, 4).entry.priority == H(0x103));
  CHECK(Leaves(s.ingress.at(kEth0)) == std::vector<LeafTuple>{{1, 2, 10, 0x123}});

  // The adopted minors stay once `current` no longer says so.
  w.current.clear();
  const DesiredState again = w.Compute();
  CHECK(At(again, 1).entry.priority == H(0x123));
  CHECK(At(again, 5).entry.priority == H(0x100));
}

TEST_CASE("adoption applies to pod-level leaves through any of the pod's containers", "[enforce]") {
  World w;
  w.allocations["u1"][netqos::core::kPodLevelContainerName] = Alloc("shared_cores", kEth0, 100, 0);
  w.containers = {ObservedIn("u1", "a", 11, {}, 10), ObservedIn("u1", "b", 12, {}, 10)};
  w.current = {{12, H(0x200)}};
  const DesiredState s = w.Compute();
  CHECK(At(s, 11).entry.priority == H(0x200));
  CHECK(At(s, 12).entry.priority == H(0x200));
  CHECK(w.minors.Lookup(10) == std::optional<uint32_t>(0x200));
}

TEST_CASE("minor exhaustion falls back to the level default and names the containers",
          "[enforce]") {
  World w;
  w.minors = MinorAllocator(0x100, 0x101);
  for (const char* uid : {"p1", "p2", "p3", "p4"}) {
    w.allocations[uid]["c"] = Alloc("dedicated_cores", kEth0, 10, 10);
  }
  w.containers = {ObservedIn("p1", "c", 1), ObservedIn("p2", "c", 2), ObservedIn("p3", "c", 3),
                  ObservedIn("p4", "c", 4)};
  const DesiredState s = w.Compute();
  CHECK(At(s, 1).entry.priority == H(0x100));
  CHECK(At(s, 2).entry.priority == H(0x101));
  for (uint64_t cg : {3u, 4u}) {
    INFO("cgroup " << cg);
    CHECK(At(s, cg).entry.priority == H(0x21));
    CHECK_FALSE(At(s, cg).leaf_key.has_value());
    CHECK(At(s, cg).entry.qos_level == static_cast<uint8_t>(QosLevel::kDedicated));
  }
  CHECK(Leaves(s.egress.at(kEth0)) == std::vector<LeafTuple>{{1, 1, 10, 0x100}, {2, 1, 10, 0x101}});
  CHECK(s.ingress.at(kEth0).size() == 2);
  REQUIRE(s.problems.size() == 2);
  const std::string all = Joined(s.problems);
  CHECK_THAT(all, Contains("ns/pod-p3 container c") && Contains("ns/pod-p4 container c") &&
                      Contains("no free HTB leaf minor"));
  CHECK_THAT(all, !Contains("pod-p1") && !Contains("pod-p2"));

  // One leaves: the first waiting container gets its minor.
  w.containers = {ObservedIn("p2", "c", 2), ObservedIn("p3", "c", 3), ObservedIn("p4", "c", 4)};
  const DesiredState after = w.Compute();
  CHECK(At(after, 3).entry.priority == H(0x100));
  CHECK(At(after, 4).entry.priority == H(0x21));
  REQUIRE(after.problems.size() == 1);
  CHECK_THAT(after.problems[0], Contains("ns/pod-p4 container c"));
}

TEST_CASE("the desired leaves plan as an HTB tree whose leaves match the priorities", "[enforce]") {
  World w;
  w.allocations["a"]["c"] = Alloc("system_cores", kEth0, 10, 10);
  w.allocations["b"]["c"] = Alloc("reclaimed_cores", kEth0, 20, 20);
  w.allocations["c"][netqos::core::kPodLevelContainerName] = Alloc("shared_cores", kEth0, 30, 0);
  w.containers = {ObservedIn("a", "c", 1), ObservedIn("b", "c", 2), ObservedIn("c", "x", 3, {}, 30),
                  ObservedIn("c", "y", 4, {}, 30)};
  const DesiredState s = w.Compute();
  auto plan = BuildHtbPlan("eth0", {}, 1000, s.egress.at(kEth0));
  INFO(plan.status().message());
  REQUIRE(plan.ok());
  for (const auto& [cg, d] : s.by_cgroup) {
    INFO("cgroup " << cg);
    const auto* leaf = plan->Find(d.entry.priority);
    REQUIRE(leaf != nullptr);
    CHECK(leaf->container_key == d.leaf_key);
  }
  auto ingress = BuildHtbPlan("nqifb2", {}, 1000, s.ingress.at(kEth0));
  REQUIRE(ingress.ok());
  CHECK(ingress->Find(At(s, 1).entry.priority) != nullptr);
  CHECK(ingress->Find(At(s, 3).entry.priority) == nullptr);  // no ingress allocation
}

// ---------------------------------------------------------------------------------------------
// The bandwidth model: allocations, kubernetes.io/{egress,ingress}-bandwidth and --container-ceil
// (docs/enforcement.md, "The bandwidth model").

namespace {

const char kEgressKey[] = "kubernetes.io/egress-bandwidth";
const char kIngressKey[] = "kubernetes.io/ingress-bandwidth";
constexpr uint64_t kMbit = 1000 * 1000;

// The leaf of `key` in `leaves`, or nullptr.
const ContainerAllocation* LeafOf(const std::vector<ContainerAllocation>& leaves, uint64_t key) {
  for (const auto& l : leaves) {
    if (l.key == key) return &l;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("a pod annotated without an allocation gets one pod leaf per direction on every NIC",
          "[enforce]") {
  World w;
  w.enforced = {{kEth0, 1000}, {kEth1, 500}};
  const StringMap ann = {{kEgressKey, "20M"}, {kIngressKey, "1500k"}};
  w.containers = {ObservedIn("u1", "a", 11, ann, /*pod_cgroup_id=*/10),
                  ObservedIn("u1", "b", 12, ann, 10)};
  const DesiredState s = w.Compute();
  CHECK(s.problems.empty());
  for (const NicId& nic : {kEth0, kEth1}) {
    INFO(nic.name);
    const ContainerAllocation* e = LeafOf(s.egress.at(nic), 10);
    const ContainerAllocation* i = LeafOf(s.ingress.at(nic), 10);
    REQUIRE(e != nullptr);
    REQUIRE(i != nullptr);
    CHECK(e->ceil_bps == 20 * kMbit);
    CHECK(e->rate_bps == netqos::enforce::kUnreservedLeafRateBps);  // a cap, not a reservation
    CHECK(i->ceil_bps == 1'500'000);                                // bit/s, not rounded to Mbit/s
    CHECK(i->rate_bps == 1'000'000);
    CHECK_FALSE(e->borrow);
    CHECK(s.egress.at(nic).size() == 1);  // one leaf for the pod, both containers in it
  }
  CHECK(At(s, 11).leaf_key == std::optional<uint64_t>(10));
  CHECK(At(s, 12).entry.priority == At(s, 11).entry.priority);
  CHECK(At(s, 11).allocated_mbps == 0);
  CHECK(At(s, 11).rates.egress.annotated);
  CHECK(*At(s, 11).leaf_nics == std::vector<NicId>{kEth0, kEth1});
  CHECK((At(s, 11).entry.flags & netqos::enforce::kClassIngressShaped) != 0);
}

TEST_CASE("one annotated direction: a leaf in that direction only", "[enforce]") {
  World w;
  w.containers = {ObservedIn("u1", "a", 11, {{kIngressKey, "40M"}}, 10)};
  const DesiredState s = w.Compute();
  CHECK(s.egress.at(kEth0).empty());
  REQUIRE(s.ingress.at(kEth0).size() == 1);
  CHECK(s.ingress.at(kEth0)[0].ceil_bps == 40 * kMbit);
  CHECK_FALSE(At(s, 11).rates.egress.capped());
}

TEST_CASE("an annotation lowers an allocation's cap in its direction, and above it is reported",
          "[enforce]") {
  World w;
  w.allocations["u1"]["a"] = Alloc("shared_cores", kEth0, 100, 100);
  w.allocations["u2"]["b"] = Alloc("shared_cores", kEth0, 100, 100);
  w.containers = {ObservedIn("u1", "a", 11, {{kEgressKey, "30M"}}),
                  ObservedIn("u2", "b", 21, {{kEgressKey, "2G"}, {kIngressKey, "500M"}})};
  const DesiredState s = w.Compute();
  const ContainerAllocation* a = LeafOf(s.egress.at(kEth0), 11);
  REQUIRE(a != nullptr);
  CHECK(a->rate_bps == 30 * kMbit);
  CHECK(a->ceil_bps == 30 * kMbit);
  CHECK(LeafOf(s.ingress.at(kEth0), 11)->ceil_bps == 100 * kMbit);  // not annotated: allocation
  CHECK(LeafOf(s.egress.at(kEth0), 21)->ceil_bps == 100 * kMbit);   // held to the allocation
  CHECK(LeafOf(s.ingress.at(kEth0), 21)->ceil_bps == 100 * kMbit);
  // One problem for the container, naming both directions (problems are keyed per container).
  REQUIRE(s.problems.size() == 1);
  CHECK_THAT(s.problems[0], Contains("ns/pod-u2 container b: egress on eth0 annotation 2 Gbit/s "
                                     "exceeds the allocation of 100 Mbit/s") &&
                                Contains("ingress on eth0 annotation 500 Mbit/s exceeds"));
}

TEST_CASE("container-ceil level: the allocation is the guarantee, the level's ceiling the limit",
          "[enforce]") {
  World w;
  w.options.container_ceil = netqos::shaping::ContainerCeil::kLevel;
  w.allocations["u1"]["a"] = Alloc("shared_cores", kEth0, 100, 100);
  w.allocations["u2"]["b"] = Alloc("shared_cores", kEth0, 100, 100);
  w.allocations["u3"]["c"] = Alloc("shared_cores", kEth0, 100, 100);
  w.containers = {ObservedIn("u1", "a", 11), ObservedIn("u2", "b", 21, {{kEgressKey, "300M"}}),
                  ObservedIn("u3", "c", 31, {{"netqos.io/container-ceil", "allocation"}})};
  const DesiredState s = w.Compute();
  const ContainerAllocation* a = LeafOf(s.egress.at(kEth0), 11);
  REQUIRE(a != nullptr);
  CHECK(a->rate_bps == 100 * kMbit);
  CHECK(a->borrow);
  const ContainerAllocation* b = LeafOf(s.egress.at(kEth0), 21);
  CHECK(b->rate_bps == 100 * kMbit);  // guaranteed its allocation, may reach its annotation
  CHECK(b->ceil_bps == 300 * kMbit);
  CHECK_FALSE(b->borrow);
  const ContainerAllocation* c = LeafOf(s.egress.at(kEth0), 31);  // the pod chose a hard cap
  CHECK(c->ceil_bps == 100 * kMbit);
  CHECK_FALSE(c->borrow);
  CHECK(s.problems.empty());
  // The plan gives a borrowing leaf its level's ceiling.
  auto plan = BuildHtbPlan("eth0", {}, 1000, s.egress.at(kEth0));
  REQUIRE(plan.ok());
  const auto* leaf = plan->Find(At(s, 11).entry.priority);
  REQUIRE(leaf != nullptr);
  CHECK(leaf->rate_bps == 100 * kMbit);
  CHECK(leaf->ceil_bps == 1000 * kMbit);
}

TEST_CASE("a refused bandwidth annotation keeps the pod's previous cap and names pod and key",
          "[enforce]") {
  World w;
  w.containers = {ObservedIn("u1", "a", 11, {{kEgressKey, "20M"}}, 10)};
  DesiredState s = w.Compute();
  REQUIRE(LeafOf(s.egress.at(kEth0), 10) != nullptr);
  // An update the kubelet would refuse: the cap stays 20M, one problem for the pod.
  EditAnnotations(w.containers[0], [](StringMap& a) {
    a[kEgressKey] = "20 Mbit";
    a["netqos.io/container-ceil"] = "sometimes";
  });
  s = w.Compute();
  const ContainerAllocation* e = LeafOf(s.egress.at(kEth0), 10);
  REQUIRE(e != nullptr);
  CHECK(e->ceil_bps == 20 * kMbit);
  // The quantity the kubelet would refuse is the pod's problem; the ceiling mode, a tenant
  // policy decision, its container's.
  REQUIRE(s.problems.size() == 2);
  CHECK_THAT(s.problems[0] + "\n" + s.problems[1],
             Contains("ns/pod-u1: annotation kubernetes.io/egress-bandwidth=\"20 Mbit\"") &&
                 Contains("keeps the cap it had") &&
                 Contains("ns/pod-u1 container a: refused netqos.io/container-ceil=sometimes: "
                          "not allocation or level"));
  // A pod first seen with a bad value has no cap to keep.
  World fresh;
  fresh.containers = {ObservedIn("u2", "a", 21, {{kEgressKey, "-5M"}}, 20)};
  s = fresh.Compute();
  CHECK(s.egress.at(kEth0).empty());
  CHECK(s.problems.size() == 1);
}

TEST_CASE("a pass's result shares its pods' metadata, tenant entries and NICs", "[enforce]") {
  // The result is kept for the whole time until the next pass (and copied into the published
  // status): per container it holds pointers, not copies of the pod's names.
  World w;
  auto policy = std::make_shared<netqos::enforce::TenantPolicy>();
  policy->namespaces["ns"];
  w.options.tenant = policy;
  ObservedContainer a = ObservedIn("u1", "a", 11);
  ObservedContainer b = ObservedIn("u1", "b", 12);
  b.pod = a.pod;  // as the resolver gives them: one pod, one object
  b.annotations = a.annotations;
  ObservedContainer c = ObservedIn("u2", "c", 21);
  ObservedContainer d = ObservedIn("u3", "d", 31);
  netqos::testing::EditPod(d.pod, [](netqos::enforce::PodMeta& m) { m.ns = "other"; });
  w.containers = {a, b, c, d};
  w.allocations["u1"]["a"] = Alloc("shared_cores", kEth0, 10, 0);
  w.allocations["u2"]["c"] = Alloc("shared_cores", kEth0, 20, 0);
  w.allocations["u3"]["d"] = Alloc("shared_cores", kEth1, 30, 0);
  w.enforced.push_back({kEth1, 1000});
  const DesiredState s = w.Compute();
  REQUIRE(s.by_cgroup.size() == 4);

  CHECK(At(s, 11).pod.get() == a.pod.get());
  CHECK(At(s, 12).pod.get() == a.pod.get());
  CHECK(At(s, 21).pod.get() == c.pod.get());
  CHECK(At(s, 31).pod.get() == d.pod.get());
  CHECK(At(s, 12).pod_uid() == "u1");
  CHECK(At(s, 12).container_name == "b");
  CHECK(At(s, 31).pod_namespace() == "other");

  CHECK(At(s, 11).tenant_entry() == "namespace ns");
  CHECK(At(s, 21).tenant_entry() == "namespace ns");
  CHECK(At(s, 31).tenant_entry() == "default");
  CHECK(At(s, 11).tenant.get() == At(s, 12).tenant.get());
  CHECK(At(s, 11).tenant.get() == At(s, 21).tenant.get());
  CHECK(At(s, 11).tenant.get() != At(s, 31).tenant.get());

  // One NIC object per NIC and one list per set of leaf NICs, whichever pods use them.
  REQUIRE(At(s, 11).nic != nullptr);
  CHECK(*At(s, 11).nic == kEth0);
  CHECK(*At(s, 31).nic == kEth1);
  CHECK(At(s, 12).nic == nullptr);  // b has no allocation of its own
  CHECK(At(s, 11).nic.get() == At(s, 21).nic.get());
  CHECK(At(s, 11).nic.get() != At(s, 31).nic.get());
  CHECK(*At(s, 11).leaf_nics == std::vector<NicId>{kEth0});
  CHECK(*At(s, 31).leaf_nics == std::vector<NicId>{kEth1});
  CHECK(At(s, 12).leaf_nics->empty());
  CHECK(At(s, 11).leaf_nics.get() == At(s, 21).leaf_nics.get());
  CHECK(At(s, 11).leaf_nics.get() != At(s, 31).leaf_nics.get());
}
