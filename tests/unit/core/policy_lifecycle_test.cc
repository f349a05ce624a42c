// StaticPolicy behaviour beyond the upstream acceptance cases: creation checks, re-allocation,
// pod-level allocations, NIC health and NICs that vanish and come back.
#include <catch2/catch.hpp>

#include "core/constants.h"
#include "core/policy.h"
#include "unit/core/policy_fixture.h"

namespace netqos::core {
namespace {

using testing::FixtureConfig;
using testing::FixtureTopology;
using testing::Hint;
using testing::kH;
using testing::kHp;
using testing::kNhp;
using testing::MakePolicy;
using testing::MakeRequest;

const NicId kEth0{"", "eth0"};
const NicId kEth2{"ns2", "eth2"};

Nic& FindNic(Topology& t, const std::string& name) {
  for (Nic& nic : t.nics) {
    if (nic.id.name == name) return nic;
  }
  FAIL("no NIC " << name);
  return t.nics.front();
}

void RequireCreateFails(const PolicyConfig& config, const Topology& topology,
                        const std::string& message) {
  auto p = StaticPolicy::Create(config, topology);
  REQUIRE_FALSE(p.ok());
  CHECK(p.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(p.status().message(), Catch::Contains(message));
}

TEST_CASE("Create validates configuration and topology", "[policy][create]") {
  PolicyConfig config = FixtureConfig();
  Topology topo = FixtureTopology();

  SECTION("rates") {
    config.egress_capacity_rate = 0;
    RequireCreateFails(config, topo, "egress capacity rate");
    config = FixtureConfig();
    config.ingress_capacity_rate = std::numeric_limits<float>::infinity();
    RequireCreateFails(config, topo, "ingress capacity rate");
    config.ingress_capacity_rate = std::numeric_limits<float>::quiet_NaN();
    RequireCreateFails(config, topo, "ingress capacity rate");
    config.ingress_capacity_rate = -0.5f;
    RequireCreateFails(config, topo, "ingress capacity rate");
    config.ingress_capacity_rate = 5.0f;  // 500 % of the NIC: more than it has
    RequireCreateFails(config, topo, "ingress capacity rate");
    config = FixtureConfig();
    config.egress_capacity_rate = 1.01f;
    RequireCreateFails(config, topo, "at most 1");
    config.egress_capacity_rate = 1.0f;  // the whole NIC is allowed
    CHECK(StaticPolicy::Create(config, topo).ok());
  }
  SECTION("NUMA nodes") {
    topo.numa_nodes.push_back({1, 1});
    RequireCreateFails(config, topo, "NUMA node 1 is listed twice");
    topo = FixtureTopology();
    topo.numa_nodes.push_back({-2, 0});
    RequireCreateFails(config, topo, "NUMA node -2: negative id");
    topo = FixtureTopology();
    topo.numa_nodes.push_back({7, -2});
    RequireCreateFails(config, topo,
                       "NUMA node 7: socket -2 (want an id, or -1 for a node without CPUs)");
  }
  SECTION("NICs") {
    topo.nics.push_back(topo.nics[0]);
    RequireCreateFails(config, topo, "NIC eth0 is listed twice");
    topo = FixtureTopology();
    FindNic(topo, "eth1").id.name = "";
    RequireCreateFails(config, topo, "empty name");
    topo = FixtureTopology();
    FindNic(topo, "eth1").speed_mbps = -2;
    RequireCreateFails(config, topo, "NIC eth1: invalid speed -2");
    topo = FixtureTopology();
    FindNic(topo, "eth2").numa_node = 9;
    RequireCreateFails(config, topo, "NIC ns2-eth2: NUMA node 9 is not in the topology");
    topo = FixtureTopology();
    FindNic(topo, "eth0").ipv4.push_back("1.1.1");
    RequireCreateFails(config, topo, "NIC eth0: unparsable IP address \"1.1.1\"");
    topo = FixtureTopology();
    FindNic(topo, "eth1").ipv6.push_back("fe80::1%eth1");  // even on a NIC never used
    RequireCreateFails(config, topo, "NIC eth1: unparsable IP address");
  }
  SECTION("same NIC name in two namespaces is two NICs") {
    Nic twin = FindNic(topo, "eth0");
    twin.id.netns = "ns2";
    twin.numa_node = 3;
    topo.nics.push_back(twin);
    auto p = StaticPolicy::Create(config, topo);
    REQUIRE(p.ok());
    REQUIRE(p->nics().size() == 3);
    CHECK(p->nics()[0].id == kEth0);
    CHECK(p->nics()[1].id == NicId{"ns2", "eth0"});
    CHECK(p->nics()[2].id == kEth2);
    CHECK(p->machine_state().size() == 3);
    // Only the first NIC carries the reservation.
    CHECK(p->machine_state().at(NicId{"ns2", "eth0"}).egress.reservation == 0);
  }
  SECTION("reservation too large") {
    config.reserved_bandwidth = 21250;
    RequireCreateFails(config, topo,
                       "invalid bandwidth reservation: 21250 Mbps on NIC eth0 with capacity "
                       "22500/21250 Mbps");
  }
  SECTION("reservation on a NIC of unknown speed: allocatable 0, no error") {
    FindNic(topo, "eth0").speed_mbps = -1;
    auto p = StaticPolicy::Create(config, topo);
    REQUIRE(p.ok());
    const NicState& st = p->machine_state().at(kEth0);
    CHECK(st.egress.capacity == 0);
    CHECK(st.egress.reservation == 4000);
    CHECK(st.egress.allocatable == 0);
    CHECK(st.ingress.free == 0);
  }
  SECTION("unknown NUMA (-1) is treated as NUMA 0") {
    FindNic(topo, "eth2").numa_node = -1;
    auto p = StaticPolicy::Create(config, topo);
    REQUIRE(p.ok());
    auto hints = p->GetTopologyHints(MakeRequest({kSharedCores, 5000}));
    REQUIRE(hints.ok());
    CHECK(*hints->hints ==
          std::vector<TopologyHint>{Hint({0, 1}, true), Hint({0, 1, 2, 3}, false)});
  }
  SECTION("no NUMA nodes means NUMA 0 on socket 0") {
    topo.numa_nodes.clear();
    FindNic(topo, "eth0").numa_node = -1;
    FindNic(topo, "eth1").numa_node = 0;
    FindNic(topo, "eth2").numa_node = 0;
    auto p = StaticPolicy::Create(config, topo);
    REQUIRE(p.ok());
    CHECK(p->topology().numa_nodes.size() == 1);
    auto hints = p->GetTopologyHints(MakeRequest({kSharedCores, 5000}));
    REQUIRE(hints.ok());
    CHECK(*hints->hints == std::vector<TopologyHint>{Hint({0}, true), Hint({0}, false)});
  }
}

TEST_CASE("re-allocation", "[policy][realloc]") {
  StaticPolicy policy = MakePolicy();
  FirstNicChooser chooser;
  ContainerRequest req = MakeRequest({kSharedCores, 5000, kHp, "12345", Hint({0, 1}, true)});
  testing::AllocateAndApply(policy, req);

  SECTION("same or smaller request reuses the allocation and echoes the request hint") {
    ContainerRequest again = MakeRequest({kSharedCores, 3000, kHp, "777", std::nullopt});
    auto plan = policy.PlanAllocate(again, chooser);
    REQUIRE(plan.ok());
    CHECK_FALSE(plan->change.has_value());
    CHECK(plan->response.allocated_quantity == 5000);
    CHECK(plan->response.allocation_result == "0-1");
    CHECK_FALSE(plan->response.hint.has_value());
    // Annotations are recomputed from the current request: the new class id shows.
    CHECK(plan->response.allocation_annotations->at(kDefaultNetClassIdAnnotationKey) == "777");
    CHECK(plan->response.allocation_annotations->at(kDefaultBandwidthAnnotationKey) == "5000");
  }
  SECTION("growing on the same NIC may use the container's own old allocation (bug 8 fix)") {
    // eth0 ingress free is 17250 - 5000 = 12250; 15000 only fits once the 5000 is released.
    ContainerRequest bigger = MakeRequest({kSharedCores, 15000, kH, "12345", Hint({0, 1}, true)});
    auto plan = policy.PlanAllocate(bigger, chooser);
    INFO(plan.status().message());
    REQUIRE(plan.ok());
    REQUIRE(plan->change.has_value());
    policy.Apply(*plan->change);
    const NicState& st = policy.machine_state().at(kEth0);
    CHECK(st.egress.allocated == 15000);
    CHECK(st.ingress.allocated == 15000);
    CHECK(st.ingress.free == 2250);
    CHECK(policy.pod_entries().at("pod-uid").size() == 1);
  }
  SECTION("growing may move to another NIC") {
    ContainerRequest bigger = MakeRequest({kSharedCores, 20000});
    auto plan = policy.PlanAllocate(bigger, chooser);
    REQUIRE(plan.ok());
    policy.Apply(*plan->change);
    CHECK(policy.machine_state().at(kEth0).egress.allocated == 0);
    CHECK(policy.machine_state().at(kEth2).egress.allocated == 20000);
  }
  SECTION("growing that fits nowhere fails and keeps the old allocation") {
    ContainerRequest bigger = MakeRequest({kSharedCores, 30000});
    auto plan = policy.PlanAllocate(bigger, chooser);
    REQUIRE_FALSE(plan.ok());
    CHECK(plan.status().code() == StatusCode::kResourceExhausted);
    // The reason shows eth0's free bandwidth including the container's own 5000.
    CHECK_THAT(plan.status().message(), Catch::Contains("eth0: free egress 18500 / ingress 17250"));
    REQUIRE(policy.FindAllocation("pod-uid", "test") != nullptr);
    CHECK(policy.FindAllocation("pod-uid", "test")->egress == 5000);
  }
  SECTION("reuse after the NIC vanished does not crash") {
    Topology topo = FixtureTopology();
    topo.nics.erase(topo.nics.begin());  // eth0 gone
    REQUIRE(policy.UpdateTopology(topo).ok());
    auto plan = policy.PlanAllocate(MakeRequest({kSharedCores, 5000}), chooser);
    REQUIRE(plan.ok());
    CHECK_FALSE(plan->change.has_value());
    const StringMap& ann = *plan->response.allocation_annotations;
    CHECK(ann.at(kDefaultIpv4AnnotationKey) == "");
    CHECK(ann.at(kDefaultIpv6AnnotationKey) == "");
    CHECK(ann.at(kDefaultNicNameAnnotationKey) == "eth0");
    CHECK(ann.count(kDefaultNetnsPathAnnotationKey) == 0);
    auto resources = policy.GetTopologyAwareResources("pod-uid", "test");
    REQUIRE(resources.ok());
    REQUIRE(resources->quantities.size() == 1);
    CHECK(resources->quantities[0].node == 0);  // from the allocation's NUMA nodes
  }
}

TEST_CASE("pod-level allocation", "[policy][pod]") {
  StaticPolicy policy = MakePolicy();
  FirstNicChooser chooser;
  PodRequest pod_req = testing::MakePodRequest({kDedicatedCores, 5000, kH, "", Hint({0, 1}, true)});

  SECTION("pod hints equal the MAIN container hints") {
    auto pod_hints = policy.GetPodTopologyHints(pod_req);
    REQUIRE(pod_hints.ok());
    CHECK(*pod_hints->hints == std::vector<TopologyHint>{Hint({0, 1}, true)});
  }
  SECTION("allocate, reuse, container requests follow the pod") {
    auto plan = policy.PlanAllocateForPod(pod_req, chooser);
    REQUIRE(plan.ok());
    REQUIRE(plan->change.has_value());
    const AllocationInfo& info = std::get<SetAllocation>(*plan->change).info;
    CHECK(info.container_name == kPodLevelContainerName);
    CHECK(info.container_type == kPodLevelContainerType);
    CHECK(plan->response.allocation_result == "0-1");
    policy.Apply(*plan->change);
    CHECK(policy.machine_state().at(kEth0).egress.allocated == 5000);

    auto again = policy.PlanAllocateForPod(pod_req, chooser);
    REQUIRE(again.ok());
    CHECK_FALSE(again->change.has_value());

    auto container = policy.PlanAllocate(
        MakeRequest({kDedicatedCores, 100, kH, "", std::nullopt, ContainerType::kMain}), chooser);
    REQUIRE(container.ok());
    CHECK_FALSE(container->change.has_value());
    CHECK(container->response.allocated_quantity == 5000);
    CHECK(container->response.allocation_annotations->at(kDefaultNicNameAnnotationKey) == "eth0");

    auto resources = policy.GetTopologyAwareResources("pod-uid", kPodLevelContainerName);
    REQUIRE(resources.ok());
    CHECK(resources->found);
    CHECK(resources->aggregated_quantity == 5000);

    auto remove = policy.PlanRemovePod("pod-uid");
    REQUIRE(remove.ok());
    policy.Apply(*remove->change);
    CHECK(policy.machine_state().at(kEth0).egress.allocated == 0);
  }
  SECTION("a pod with container allocations cannot take a pod-level one") {
    testing::AllocateAndApply(policy, MakeRequest({kDedicatedCores, 100, kH}));
    auto plan = policy.PlanAllocateForPod(pod_req, chooser);
    REQUIRE_FALSE(plan.ok());
    CHECK(plan.status().code() == StatusCode::kFailedPrecondition);
  }
}

TEST_CASE("NIC health changes", "[policy][health]") {
  StaticPolicy policy = MakePolicy();
  FirstNicChooser chooser;
  testing::AllocateAndApply(policy, MakeRequest({kSharedCores, 5000, kHp, "", Hint({0, 1}, true)}));

  Topology down = FixtureTopology();
  FindNic(down, "eth0").enabled = false;
  REQUIRE(policy.UpdateTopology(down).ok());

  REQUIRE(policy.nics().size() == 2);
  CHECK_FALSE(policy.nics()[0].healthy);
  CHECK(policy.nics()[0].unhealthy_reason == "link disabled");
  CHECK(policy.FindAllocation("pod-uid", "test") != nullptr);
  CHECK(policy.machine_state().at(kEth0).egress.allocated == 5000);
  CHECK(policy.machine_state().at(kEth0).egress.free == 0);

  auto hints = policy.GetTopologyHints(MakeRequest({kSharedCores, 100, kHp}));
  REQUIRE(hints.ok());
  CHECK(*hints->hints == std::vector<TopologyHint>{Hint({2, 3}, false), Hint({0, 1, 2, 3}, false)});

  auto plan = policy.PlanAllocate(
      MakeRequest({kSharedCores, 100, kH, "", std::nullopt, ContainerType::kMain, "other"}),
      chooser);
  REQUIRE_FALSE(plan.ok());
  CHECK_THAT(plan.status().message(), Catch::Contains("eth0: unhealthy (link disabled)"));

  auto alloc = policy.GetTopologyAwareAllocatableResources();
  REQUIRE(alloc.ok());
  CHECK(alloc->allocatable[0].resource_value == 0);
  CHECK(alloc->capacity[0].resource_value == 21250);
  CHECK(alloc->aggregated_allocatable == 21250);

  SECTION("a reason from the source is kept") {
    Topology sick = FixtureTopology();
    FindNic(sick, "eth0").healthy = false;
    FindNic(sick, "eth0").unhealthy_reason = "carrier lost";
    REQUIRE(policy.UpdateTopology(sick).ok());
    CHECK(policy.nics()[0].unhealthy_reason == "carrier lost");
  }
  SECTION("losing IPs") {
    Topology no_ip = FixtureTopology();
    FindNic(no_ip, "eth0").ipv4.clear();
    REQUIRE(policy.UpdateTopology(no_ip).ok());
    CHECK(policy.nics()[0].unhealthy_reason == "no IP address");
  }
  SECTION(
      "losing IPs with the ip health checker off "
      "(--network-resource-plugin-nic-health-checkers=-ip)") {
    PolicyConfig config = FixtureConfig();
    config.require_ip_address = false;
    Topology no_ip = FixtureTopology();
    FindNic(no_ip, "eth0").ipv4.clear();
    auto off = StaticPolicy::Create(config, no_ip);
    REQUIRE(off.ok());
    REQUIRE_FALSE(off->nics().empty());
    CHECK(off->nics()[0].id == kEth0);
    CHECK(off->nics()[0].healthy);
    CHECK(off->machine_state().at(kEth0).egress.free > 0);
  }
  SECTION("back up: usable again") {
    REQUIRE(policy.UpdateTopology(FixtureTopology()).ok());
    CHECK(policy.nics()[0].healthy);
    CHECK(policy.machine_state().at(kEth0).egress.free == 13500);
    auto ok = policy.PlanAllocate(
        MakeRequest({kSharedCores, 100, kH, "", std::nullopt, ContainerType::kMain, "other"}),
        chooser);
    REQUIRE(ok.ok());
    CHECK(std::get<SetAllocation>(*ok->change).info.if_name == "eth0");
  }
}

TEST_CASE("a reservation above a renegotiated speed degrades its NIC, not the topology",
          "[policy][health]") {
  StaticPolicy policy = MakePolicy();  // 4000 Mbps reserved on eth0, 25G
  testing::AllocateAndApply(policy, MakeRequest({kSharedCores, 5000, "", "", Hint({0, 1}, true)}));
  Topology slow = FixtureTopology();
  FindNic(slow, "eth0").speed_mbps = 1000;  // 900/850 Mbps of capacity, under the reservation
  FindNic(slow, "eth1").enabled = true;     // and another change in the same update
  FindNic(slow, "eth1").ipv4 = {"10.0.0.1"};
  Status st = policy.UpdateTopology(slow);
  INFO(st.message());
  REQUIRE(st.ok());
  REQUIRE(policy.nics().size() == 3);
  const Nic& eth0 = policy.nics()[0];
  CHECK_FALSE(eth0.healthy);
  CHECK_THAT(eth0.unhealthy_reason,
             Catch::Contains("invalid bandwidth reservation: 4000 Mbps on NIC eth0 with capacity "
                             "900/850 Mbps"));
  const NicState& ms = policy.machine_state().at(kEth0);
  CHECK(ms.egress.capacity == 900);
  CHECK(ms.egress.reservation == 4000);
  CHECK(ms.egress.allocated == 5000);  // kept
  CHECK(ms.egress.free == 0);
  CHECK(policy.nics()[1].id == NicId{"", "eth1"});  // the rest of the update was taken
  FirstNicChooser chooser;
  auto moved = policy.PlanAllocate(
      MakeRequest({kSharedCores, 100, kH, "", Hint({0, 1}, true), ContainerType::kMain, "p2"}),
      chooser);
  REQUIRE(moved.ok());
  CHECK(std::get<SetAllocation>(*moved->change).info.nic() == NicId{"", "eth1"});
  // More than eth1 has: eth0 would have had it, but takes nothing and says why.
  auto refused = policy.PlanAllocate(
      MakeRequest({kSharedCores, 21300, kH, "", Hint({0, 1}, true), ContainerType::kMain, "p3"}),
      chooser);
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.status().message(), Catch::Contains("eth0: unhealthy (invalid bandwidth"));

  SECTION("the speed comes back: the NIC takes allocations again") {
    REQUIRE(policy.UpdateTopology(FixtureTopology()).ok());
    CHECK(policy.nics()[0].healthy);
    CHECK(policy.nics()[0].unhealthy_reason.empty());
    CHECK(policy.machine_state().at(kEth0).egress.free == 22500 - 4000 - 5000);
  }
  SECTION("at start the same conflict is still an error") {
    RequireCreateFails(FixtureConfig(), slow, "invalid bandwidth reservation: 4000 Mbps");
  }
}

TEST_CASE("NICs vanish, reappear and appear", "[policy][health]") {
  StaticPolicy policy = MakePolicy();
  testing::AllocateAndApply(policy, MakeRequest({kSharedCores, 5000, kHp, "", Hint({0, 1}, true)}));

  Topology gone = FixtureTopology();
  gone.nics.erase(gone.nics.begin());
  REQUIRE(policy.UpdateTopology(gone).ok());
  REQUIRE(policy.nics().size() == 1);
  CHECK(policy.nics()[0].id == kEth2);
  CHECK(policy.machine_state().count(kEth0) == 0);
  CHECK(policy.FindAllocation("pod-uid", "test") != nullptr);

  SECTION("removing the pod while its NIC is gone") {
    auto remove = policy.PlanRemovePod("pod-uid");
    REQUIRE(remove.ok());
    policy.Apply(*remove->change);
    REQUIRE(policy.UpdateTopology(FixtureTopology()).ok());
    CHECK(policy.machine_state().at(kEth0).egress.allocated == 0);
  }
  SECTION("reappearing available: managed again with its allocations counted") {
    REQUIRE(policy.UpdateTopology(FixtureTopology()).ok());
    REQUIRE(policy.nics().size() == 2);
    CHECK(policy.machine_state().at(kEth0).egress.allocated == 5000);
    // The reservation stays on eth0.
    CHECK(policy.machine_state().at(kEth0).egress.reservation == 4000);
  }
  SECTION("reappearing unavailable: not managed") {
    Topology down = FixtureTopology();
    FindNic(down, "eth0").enabled = false;
    REQUIRE(policy.UpdateTopology(down).ok());
    CHECK(policy.nics().size() == 1);
  }
  SECTION("a NIC enabled later becomes managed") {
    Topology up = FixtureTopology();
    FindNic(up, "eth1").enabled = true;
    FindNic(up, "eth1").ipv4 = {"10.0.0.1", "10.0.0.1", "10.0.0.0"};
    REQUIRE(policy.UpdateTopology(up).ok());
    REQUIRE(policy.nics().size() == 3);
    CHECK(policy.nics()[1].id == NicId{"", "eth1"});
    CHECK(policy.machine_state().at(NicId{"", "eth1"}).egress.reservation == 0);
    FirstNicChooser chooser;
    auto plan = policy.PlanAllocate(
        MakeRequest({kSharedCores, 15000, "", "", Hint({0, 1}, true), ContainerType::kMain, "p2"}),
        chooser);
    REQUIRE(plan.ok());
    CHECK(plan->response.allocation_annotations->at(kDefaultIpv4AnnotationKey) ==
          "10.0.0.0,10.0.0.1");
  }
  SECTION("an invalid update changes nothing") {
    Topology bad = FixtureTopology();
    bad.nics.push_back(bad.nics[0]);
    CHECK_FALSE(policy.UpdateTopology(bad).ok());
    CHECK(policy.nics().size() == 1);
  }
}

TEST_CASE("Restore recomputes the machine state", "[policy][restore]") {
  StaticPolicy source = MakePolicy();
  testing::AllocateAndApply(source, MakeRequest({kSharedCores, 5000, kHp}));
  testing::AllocateAndApply(
      source, MakeRequest({kReclaimedCores, 7000, R"({"namespace_type": "anti_host_ns"})", "",
                           std::nullopt, ContainerType::kMain, "pod-2"}));
  StaticPolicy restored = MakePolicy();
  restored.Restore(source.pod_entries());
  CHECK(restored.machine_state() == source.machine_state());
  CHECK(restored.machine_state().at(kEth2).ingress.allocated == 7000);
}

}  // namespace
}  // namespace netqos::core

namespace netqos::core {
namespace {

TEST_CASE("10,000 containers: planning and applying stay incremental", "[policy][scale]") {
  StaticPolicy policy = MakePolicy();
  FirstNicChooser chooser;
  for (int i = 0; i < 10000; ++i) {
    ContainerRequest req =
        MakeRequest({kSharedCores, 3, "", "", std::nullopt, ContainerType::kMain,
                     "pod-" + std::to_string(i / 4), "c" + std::to_string(i % 4)});
    auto plan = policy.PlanAllocate(req, chooser);
    REQUIRE(plan.ok());
    policy.Apply(*plan->change);
  }
  // eth0 fills up first (17250 ingress / 3 = 5750 containers), the rest go to eth2.
  CHECK(policy.machine_state().at(kEth0).ingress.allocated == 17250);
  CHECK(policy.machine_state().at(kEth2).ingress.allocated == 30000 - 17250);
  for (int p = 0; p < 2500; p += 2) {
    auto plan = policy.PlanRemovePod("pod-" + std::to_string(p));
    REQUIRE(plan.ok());
    policy.Apply(*plan->change);
  }
  CHECK(policy.pod_entries().size() == 1250);
  StaticPolicy recomputed = policy;
  recomputed.Restore(policy.pod_entries());
  CHECK(recomputed.machine_state() == policy.machine_state());
}

}  // namespace
}  // namespace netqos::core
