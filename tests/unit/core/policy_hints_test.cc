// Hint details beyond the upstream cases: preference OR-ed per socket, restrictions, the
// request's own hint, deterministic order and NIC choice among several candidates.
#include <catch2/catch.hpp>

#include "core/constants.h"
#include "core/policy.h"
#include "unit/core/policy_fixture.h"

namespace netqos::core {
namespace {

using testing::Hint;
using testing::kHp;
using testing::MakeRequest;

// eth0 (host, NUMA 0), eth3 (ns3, NUMA 1), eth2 (ns2, NUMA 2); all 25G, no reservation.
StaticPolicy ThreeNicPolicy() {
  Topology t = testing::FixtureTopology();
  Nic eth3 = t.nics[2];
  eth3.id = {"ns3", "eth3"};
  eth3.numa_node = 1;
  eth3.ipv6 = {"2001:db8::3"};
  t.nics.push_back(eth3);
  PolicyConfig c = testing::FixtureConfig();
  c.reserved_bandwidth = 0;
  auto p = StaticPolicy::Create(c, t);
  REQUIRE(p.ok());
  return std::move(p).value();
}

std::vector<TopologyHint> HintsFor(const StaticPolicy& policy, const ContainerRequest& req) {
  auto resp = policy.GetTopologyHints(req);
  INFO(resp.status().message());
  REQUIRE(resp.ok());
  REQUIRE(resp->hints.has_value());
  return *resp->hints;
}

TEST_CASE("hints: preference is OR-ed per socket, order is stable", "[policy][hints]") {
  StaticPolicy policy = ThreeNicPolicy();
  REQUIRE(policy.nics().size() == 3);
  CHECK(HintsFor(policy, MakeRequest({kSharedCores, 100, kHp})) ==
        std::vector<TopologyHint>{Hint({0, 1}, true), Hint({2, 3}, false),
                                  Hint({0, 1, 2, 3}, false)});
  CHECK(
      HintsFor(policy, MakeRequest({kSharedCores, 100})) ==
      std::vector<TopologyHint>{Hint({0, 1}, true), Hint({2, 3}, true), Hint({0, 1, 2, 3}, false)});
}

TEST_CASE("hints: restrictions drop the all-NUMA hint", "[policy][hints]") {
  StaticPolicy policy = testing::MakePolicy();
  CHECK(HintsFor(policy,
                 MakeRequest({kSharedCores, 100, R"({"topology_affinity_restricted": "true"})"})) ==
        std::vector<TopologyHint>{Hint({0, 1}, true), Hint({2, 3}, true)});
  CHECK(
      HintsFor(policy,
               MakeRequest({kSharedCores, 100, R"({"topology_affinity_restricted": "false"})"})) ==
      std::vector<TopologyHint>{Hint({0, 1}, true), Hint({2, 3}, true), Hint({0, 1, 2, 3}, false)});
  CHECK(
      HintsFor(policy, MakeRequest({kSharedCores, 100, R"({"namespace_type": "anti_host_ns"})"})) ==
      std::vector<TopologyHint>{Hint({2, 3}, true)});
}

TEST_CASE("hints: a request hint filters NICs", "[policy][hints]") {
  StaticPolicy policy = testing::MakePolicy();
  CHECK(HintsFor(policy, MakeRequest({kSharedCores, 100, "", "", Hint({2, 3}, false)})) ==
        std::vector<TopologyHint>{Hint({2, 3}, true), Hint({0, 1, 2, 3}, false)});
  // A hint covering everything: no exact match, both NICs are subsets.
  CHECK(
      HintsFor(policy, MakeRequest({kSharedCores, 100, "", "", Hint({0, 1, 2, 3}, false)})) ==
      std::vector<TopologyHint>{Hint({0, 1}, true), Hint({2, 3}, true), Hint({0, 1, 2, 3}, false)});
  // A hint node beyond int range filters out everything.
  CHECK(HintsFor(policy, MakeRequest({kSharedCores, 100, "", "", Hint({1ULL << 40}, false)})) ==
        std::vector<TopologyHint>{Hint({0, 1, 2, 3}, false)});
}

TEST_CASE("hints: 0 Mbps passes every healthy NIC, even a full one", "[policy][hints]") {
  StaticPolicy policy = testing::MakePolicy();
  testing::AllocateAndApply(policy, MakeRequest({kSharedCores, 17250, "", "", Hint({0, 1}, true)}));
  CHECK(policy.machine_state().at(NicId{"", "eth0"}).ingress.free == 0);
  CHECK(HintsFor(policy, MakeRequest({kSharedCores, 0, kHp, "", std::nullopt, ContainerType::kMain,
                                      "other"})) ==
        std::vector<TopologyHint>{Hint({0, 1}, true), Hint({2, 3}, false),
                                  Hint({0, 1, 2, 3}, false)});
  CHECK(HintsFor(policy, MakeRequest({kSharedCores, 1, kHp, "", std::nullopt, ContainerType::kMain,
                                      "other"})) ==
        std::vector<TopologyHint>{Hint({2, 3}, false), Hint({0, 1, 2, 3}, false)});
}

TEST_CASE("hints: SIDECAR has no preference", "[policy][hints]") {
  StaticPolicy policy = testing::MakePolicy();
  auto resp = policy.GetTopologyHints(
      MakeRequest({kSharedCores, 100, "", "", std::nullopt, ContainerType::kSidecar}));
  REQUIRE(resp.ok());
  CHECK_FALSE(resp->hints.has_value());
}

TEST_CASE("the chooser picks among candidates in managed order", "[policy][choose]") {
  StaticPolicy policy = ThreeNicPolicy();
  // Hint {0,1,2,3}: all three NICs are subsets, none is exact.
  ContainerRequest req = MakeRequest({kSharedCores, 100, "", "", Hint({0, 1, 2, 3}, false)});
  FirstNicChooser first;
  LastNicChooser last;
  auto a = policy.PlanAllocate(req, first);
  auto b = policy.PlanAllocate(req, last);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(std::get<SetAllocation>(*a->change).info.nic() == NicId{"", "eth0"});
  CHECK(std::get<SetAllocation>(*b->change).info.nic() == NicId{"ns3", "eth3"});
  CHECK(b->response.allocation_result == "0-1");
  // The kubelet's hint, echoed: not the chosen NIC's socket.
  CHECK(b->response.hint == Hint({0, 1, 2, 3}, false));
  CHECK(b->response.allocation_annotations->at(kDefaultIpv6AnnotationKey) == "2001:db8::3");
  CHECK(b->response.allocation_annotations->at(kDefaultNetnsPathAnnotationKey) == "/var/run/ns2");
}

// After a restart the kubelet re-admits running pods with the hints of their Allocate responses,
// and its restricted policy refuses one that is not preferred.
TEST_CASE("Allocate echoes the kubelet's hint and takes the NIC the pod prefers among equals",
          "[policy][choose]") {
  StaticPolicy policy = ThreeNicPolicy();
  LastNicChooser last;
  SECTION("exact matches: a preferred one, though another comes first") {
    // Socket {0,1} holds eth0 (host) and eth3 (ns3); upstream takes eth0, the first exact match,
    // which anti_host_ns_preferred does not prefer: its response hint was not preferred.
    auto plan = policy.PlanAllocate(
        MakeRequest({kSharedCores, 100, testing::kNhp, "", Hint({0, 1}, true)}), last);
    REQUIRE(plan.ok());
    CHECK(std::get<SetAllocation>(*plan->change).info.nic() == NicId{"ns3", "eth3"});
    CHECK(plan->response.hint == Hint({0, 1}, true));
  }
  SECTION("subsets: only the preferred ones are chosen from") {
    // {0,1,2,3}: eth0, eth2 and eth3 all fit; host_ns_preferred leaves eth0 alone to choose.
    auto plan = policy.PlanAllocate(
        MakeRequest({kSharedCores, 100, kHp, "", Hint({0, 1, 2, 3}, false)}), last);
    REQUIRE(plan.ok());
    CHECK(std::get<SetAllocation>(*plan->change).info.nic() == NicId{"", "eth0"});
    CHECK(plan->response.hint == Hint({0, 1, 2, 3}, false));
  }
  SECTION("no NIC preferred: every one that fits stays a candidate") {
    // anti_host_ns_preferred on socket {0,1} of a policy without eth3: only eth0 fits.
    StaticPolicy two = testing::MakePolicy();
    auto plan = two.PlanAllocate(
        MakeRequest({kSharedCores, 100, testing::kNhp, "", Hint({0, 1}, true)}), last);
    REQUIRE(plan.ok());
    CHECK(std::get<SetAllocation>(*plan->change).info.nic() == NicId{"", "eth0"});
    CHECK(plan->response.hint == Hint({0, 1}, true));
  }
  SECTION("hints are offered as upstream offers them") {
    // The preference steers the choice in Allocate only: a hint request with a hint is filtered
    // as upstream filters it.
    CHECK(HintsFor(policy, MakeRequest({kSharedCores, 100, testing::kNhp, "",
                                        Hint({0, 1, 2, 3}, false)})) ==
          std::vector<TopologyHint>{Hint({0, 1}, true), Hint({2, 3}, true),
                                    Hint({0, 1, 2, 3}, false)});
  }
}

TEST_CASE("memory-only NUMA nodes are in no socket hint and not in the all-NUMA hint",
          "[policy][hints]") {
  // The fixture's sockets {0,1} and {2,3}, plus CXL memory as NUMA 4 and 5: the CPU manager
  // never offers them, so a socket hint widened by them would not merge with its hints.
  Topology t = testing::FixtureTopology();
  t.numa_nodes.push_back({4, kNoSocket});
  t.numa_nodes.push_back({5, kNoSocket});
  auto p = StaticPolicy::Create(testing::FixtureConfig(), t);
  REQUIRE(p.ok());
  CHECK(
      HintsFor(*p, MakeRequest({kSharedCores, 100})) ==
      std::vector<TopologyHint>{Hint({0, 1}, true), Hint({2, 3}, true), Hint({0, 1, 2, 3}, false)});
  FirstNicChooser chooser;
  auto plan =
      p->PlanAllocate(MakeRequest({kSharedCores, 100, "", "", Hint({0, 1}, true)}), chooser);
  REQUIRE(plan.ok());
  CHECK(plan->response.allocation_result == "0-1");
}

// The kubelet merges every provider's hints into the narrowest preferred one: a pod whose CPUs
// fit one node comes with {0} where netqos offered {0,1}. Upstream then finds no NIC.
TEST_CASE("Allocate takes the NIC whose socket holds a hint narrower than any socket",
          "[policy][choose]") {
  StaticPolicy policy = testing::MakePolicy();
  FirstNicChooser chooser;
  for (uint64_t node : {0, 1}) {
    auto plan =
        policy.PlanAllocate(MakeRequest({kSharedCores, 100, "", "", Hint({node}, true)}), chooser);
    INFO(node << ": " << plan.status().message());
    REQUIRE(plan.ok());
    CHECK(std::get<SetAllocation>(*plan->change).info.nic() == NicId{"", "eth0"});
    CHECK(plan->response.hint == Hint({node}, true));
  }
  // A hint across two sockets is held by no socket and holds none: nothing fits.
  auto across =
      policy.PlanAllocate(MakeRequest({kSharedCores, 100, "", "", Hint({1, 2}, true)}), chooser);
  REQUIRE_FALSE(across.ok());
  CHECK_THAT(across.status().message(),
             Catch::Contains("eth0: NUMA nodes 0-1 do not fit hint 1-2"));
  // Hint answers stay upstream's: a hint request with {0} offers nothing for eth0.
  CHECK(HintsFor(policy, MakeRequest({kSharedCores, 100, "", "", Hint({0}, true)})) ==
        std::vector<TopologyHint>{Hint({0, 1, 2, 3}, false)});
}

// The kubelet's single-numa-node policy keeps only preferred hints of one node; Katalyst's
// socket hints ({0,1}) are never one node, so no pod requesting bandwidth was admitted.
TEST_CASE("NUMA node hints (--network-resource-plugin-numa-node-hints) offer each NIC's own node",
          "[policy][hints]") {
  PolicyConfig c = testing::FixtureConfig();
  c.numa_node_hints = true;
  Topology t = testing::FixtureTopology();  // eth0 on NUMA 0, eth2 (ns2) on NUMA 2
  auto p = StaticPolicy::Create(c, t);
  REQUIRE(p.ok());
  CHECK(HintsFor(*p, MakeRequest({kSharedCores, 100})) ==
        std::vector<TopologyHint>{Hint({0}, true), Hint({0, 1}, true), Hint({2}, true),
                                  Hint({2, 3}, true), Hint({0, 1, 2, 3}, false)});
  // host_ns_preferred: eth2's hints are not preferred (the kubelet's filter drops them).
  CHECK(HintsFor(*p, MakeRequest({kSharedCores, 100, kHp})) ==
        std::vector<TopologyHint>{Hint({0}, true), Hint({0, 1}, true), Hint({2}, false),
                                  Hint({2, 3}, false), Hint({0, 1, 2, 3}, false)});
  FirstNicChooser chooser;
  SECTION("the kubelet admitted the pod on NUMA 2: eth2, whose own node it is") {
    auto plan = p->PlanAllocate(MakeRequest({kSharedCores, 100, "", "", Hint({2}, true)}), chooser);
    INFO(plan.status().message());
    REQUIRE(plan.ok());
    CHECK(std::get<SetAllocation>(*plan->change).info.nic() == NicId{"ns2", "eth2"});
    CHECK(plan->response.hint == Hint({2}, true));
  }
  SECTION("NUMA 1 holds no NIC: the NIC of its socket") {
    auto plan = p->PlanAllocate(MakeRequest({kSharedCores, 100, "", "", Hint({1}, true)}), chooser);
    REQUIRE(plan.ok());
    CHECK(std::get<SetAllocation>(*plan->change).info.nic() == NicId{"", "eth0"});
  }
  SECTION("off (the default): socket hints only, as Katalyst") {
    StaticPolicy off = testing::MakePolicy();
    CHECK(HintsFor(off, MakeRequest({kSharedCores, 100})) ==
          std::vector<TopologyHint>{Hint({0, 1}, true), Hint({2, 3}, true),
                                    Hint({0, 1, 2, 3}, false)});
    // Allocate with {2} still finds eth2: its socket holds the hint.
    auto plan =
        off.PlanAllocate(MakeRequest({kSharedCores, 100, "", "", Hint({2}, true)}), chooser);
    REQUIRE(plan.ok());
    CHECK(std::get<SetAllocation>(*plan->change).info.nic() == NicId{"ns2", "eth2"});
  }
}

TEST_CASE("an unknown NUMA without NUMA 0 aligns with nothing", "[policy][hints]") {
  Topology t;
  t.numa_nodes = {{1, 0}, {2, 1}};
  Nic nic;
  nic.id = {"", "eth0"};
  nic.speed_mbps = 10000;
  nic.numa_node = -1;
  nic.enabled = true;
  nic.ipv4 = {"10.0.0.1"};
  t.nics = {nic};
  auto p = StaticPolicy::Create(testing::FixtureConfig(), t);
  REQUIRE(p.ok());
  CHECK(HintsFor(*p, MakeRequest({kSharedCores, 100})) ==
        std::vector<TopologyHint>{Hint({1, 2}, false)});
  FirstNicChooser chooser;
  auto plan = p->PlanAllocate(MakeRequest({kSharedCores, 100, "", "", Hint({1}, true)}), chooser);
  REQUIRE(plan.ok());  // the empty NUMA set is a subset of any hint (upstream item 34)
  CHECK(plan->response.allocation_result == "");
  CHECK(plan->response.hint == Hint({1}, true));  // the kubelet's, echoed
}

}  // namespace
}  // namespace netqos::core
