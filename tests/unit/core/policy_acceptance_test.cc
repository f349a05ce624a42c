// Katalyst v0.5.3 policy_test.go acceptance cases (TestGetTopologyHints to TestGetNetClassID and
// its small tests), rewritten against StaticPolicy with the deterministic FirstNicChooser.
#include <catch2/catch.hpp>

#include "core/constants.h"
#include "core/policy.h"
#include "unit/core/policy_fixture.h"

namespace netqos::core {
namespace {

using testing::Hint;
using testing::kH;
using testing::kHp;
using testing::kNhp;
using testing::MakePolicy;
using testing::MakeRequest;
using testing::RequestSpec;

StringMap QosMap(const std::string& level) { return {{kQosLevelKey, level}}; }

StringMap QosMap(const std::string& level, const std::string& ns_type) {
  return {{kQosLevelKey, level}, {kNamespaceTypeKey, ns_type}};
}

TEST_CASE("fixture: managed NICs, reservation and machine state", "[policy][acceptance]") {
  StaticPolicy policy = MakePolicy();
  REQUIRE(policy.nics().size() == 2);
  CHECK(policy.nics()[0].id == NicId{"", "eth0"});
  CHECK(policy.nics()[1].id == NicId{"ns2", "eth2"});
  CHECK(policy.nics()[1].ipv6 == std::vector<std::string>{"192.0.2.1"});
  const MachineState& ms = policy.machine_state();
  REQUIRE(ms.size() == 2);
  const NicState& eth0 = ms.at(NicId{"", "eth0"});
  CHECK(eth0.egress == BandwidthInfo{22500, 0, 4000, 18500, 0, 18500});
  CHECK(eth0.ingress == BandwidthInfo{21250, 0, 4000, 17250, 0, 17250});
  const NicState& eth2 = ms.at(NicId{"ns2", "eth2"});
  CHECK(eth2.egress == BandwidthInfo{22500, 0, 0, 22500, 0, 22500});
  CHECK(eth2.ingress == BandwidthInfo{21250, 0, 0, 21250, 0, 21250});
}

TEST_CASE("fixture without usable NICs still constructs", "[policy][acceptance]") {
  StaticPolicy policy = MakePolicy(/*has_nics=*/false);
  CHECK(policy.nics().empty());
  CHECK(policy.machine_state().empty());
  CHECK(policy.pod_entries().empty());
}

struct HintCase {
  const char* name;
  RequestSpec spec;
  std::optional<std::vector<TopologyHint>> hints;
  StringMap annotations;
};

TEST_CASE("GetTopologyHints (TestGetTopologyHints, v0.5.3)", "[policy][acceptance]") {
  std::vector<HintCase> cases = {
      {"1 INIT container: no preference",
       {kSharedCores, 5000, "", "", std::nullopt, ContainerType::kInit},
       std::nullopt,
       QosMap(kSharedCores)},
      {"2 shared + HP",
       {kSharedCores, 5000, kHp, "12345"},
       std::vector<TopologyHint>{Hint({0, 1}, true), Hint({2, 3}, false),
                                 Hint({0, 1, 2, 3}, false)},
       QosMap(kSharedCores, kHostNsPreferred)},
      {"3 reclaimed + NHP",
       {kReclaimedCores, 5000, kNhp, "12346"},
       std::vector<TopologyHint>{Hint({0, 1}, false), Hint({2, 3}, true),
                                 Hint({0, 1, 2, 3}, false)},
       QosMap(kReclaimedCores, kAntiHostNsPreferred)},
      {"4 dedicated + H: namespace-restricted, no all-NUMA hint",
       {kDedicatedCores, 5000, kH},
       std::vector<TopologyHint>{Hint({0, 1}, true)},
       QosMap(kDedicatedCores, kHostNs)},
      {"5 dedicated + HP 20000: eth0 too small",
       {kDedicatedCores, 20000, kHp},
       std::vector<TopologyHint>{Hint({2, 3}, false), Hint({0, 1, 2, 3}, false)},
       QosMap(kDedicatedCores, kHostNsPreferred)},
      {"6 dedicated + H 20000: nothing fits",
       {kDedicatedCores, 20000, kH},
       std::vector<TopologyHint>{},
       QosMap(kDedicatedCores, kHostNs)},
  };
  for (const HintCase& c : cases) {
    SECTION(c.name) {
      StaticPolicy policy = MakePolicy();
      ContainerRequest req = MakeRequest(c.spec);
      auto resp = policy.GetTopologyHints(req);
      INFO(resp.status().message());
      REQUIRE(resp.ok());
      CHECK(resp->resource_name == kResourceName);
      CHECK(resp->hints == c.hints);
      CHECK(resp->annotations == c.annotations);
      CHECK(resp->labels == QosMap(c.spec.qos));
      CHECK(policy.pod_entries().empty());
    }
  }
  SECTION("7 policy without NICs: empty list") {
    StaticPolicy policy = MakePolicy(/*has_nics=*/false);
    auto resp = policy.GetTopologyHints(MakeRequest({kSharedCores, 5000, kHp, "12345"}));
    REQUIRE(resp.ok());
    REQUIRE(resp->hints.has_value());
    CHECK(resp->hints->empty());
  }
}

TEST_CASE("Allocate (TestAllocate, v0.5.3)", "[policy][acceptance]") {
  FirstNicChooser chooser;
  const AllocationAnnotationKeys keys;

  SECTION("1 INIT container: no allocation result, nothing stored") {
    StaticPolicy policy = MakePolicy();
    auto plan = policy.PlanAllocate(
        MakeRequest({kSharedCores, 5000, "", "", std::nullopt, ContainerType::kInit}), chooser);
    REQUIRE(plan.ok());
    CHECK_FALSE(plan->change.has_value());
    CHECK_FALSE(plan->response.has_allocation);
    CHECK(plan->response.resource_name == kResourceName);
    CHECK(plan->response.labels == QosMap(kSharedCores));
    CHECK(plan->response.annotations == QosMap(kSharedCores));
  }

  SECTION("2 shared + HP, hint {0,1}: eth0") {
    StaticPolicy policy = MakePolicy();
    ContainerRequest req = MakeRequest({kSharedCores, 5000, kHp, "12345", Hint({0, 1}, true)});
    auto plan = policy.PlanAllocate(req, chooser);
    REQUIRE(plan.ok());
    const AllocationResponse& r = plan->response;
    CHECK(r.has_allocation);
    CHECK(r.resource_name == kResourceName);
    CHECK(r.allocated_quantity == 5000);
    CHECK(r.allocation_result == "0-1");
    CHECK(r.allocation_annotations == StringMap{{keys.ipv4, "1.1.1.1"},
                                                {keys.ipv6, ""},
                                                {keys.nic_name, "eth0"},
                                                {keys.net_class_id, "12345"},
                                                {keys.bandwidth, "5000"}});
    CHECK(r.hint == Hint({0, 1}, true));
    CHECK(r.annotations == QosMap(kSharedCores, kHostNsPreferred));
    CHECK(r.labels == QosMap(kSharedCores));
    REQUIRE(plan->change.has_value());
    const AllocationInfo& info = std::get<SetAllocation>(*plan->change).info;
    CHECK(info.if_name == "eth0");
    CHECK(info.ns_name == "");
    CHECK(info.container_type == "MAIN");
    CHECK(info.egress == 5000);
    CHECK(info.ingress == 5000);
    CHECK(info.numa_nodes == NumaSet{0, 1});
    CHECK(info.qos_level == kSharedCores);
    CHECK(info.net_class_id == "12345");
    CHECK(info.annotations == QosMap(kSharedCores, kHostNsPreferred));
    // Planning changes nothing until the change is applied.
    CHECK(policy.pod_entries().empty());
  }

  SECTION("3 reclaimed + NHP, hint {2,3}: eth2 in ns2") {
    StaticPolicy policy = MakePolicy();
    ContainerRequest req = MakeRequest({kReclaimedCores, 5000, kNhp, "12346", Hint({2, 3}, true)});
    auto plan = policy.PlanAllocate(req, chooser);
    REQUIRE(plan.ok());
    const AllocationResponse& r = plan->response;
    CHECK(r.allocated_quantity == 5000);
    CHECK(r.allocation_result == "2-3");
    CHECK(r.allocation_annotations == StringMap{{keys.ipv4, ""},
                                                {keys.ipv6, "192.0.2.1"},
                                                {keys.netns_path, "/var/run/ns2"},
                                                {keys.nic_name, "eth2"},
                                                {keys.net_class_id, "12346"},
                                                {keys.bandwidth, "5000"}});
    CHECK(r.hint == Hint({2, 3}, true));
    CHECK(r.annotations == QosMap(kReclaimedCores, kAntiHostNsPreferred));
    const AllocationInfo& info = std::get<SetAllocation>(*plan->change).info;
    CHECK(info.nic() == NicId{"ns2", "eth2"});
  }

  SECTION("4 dedicated + H, no class annotation: class id from the QoS map") {
    StaticPolicy policy = MakePolicy();
    ContainerRequest req = MakeRequest({kDedicatedCores, 5000, kH, "", Hint({0, 1}, true)});
    auto plan = policy.PlanAllocate(req, chooser);
    REQUIRE(plan.ok());
    const AllocationResponse& r = plan->response;
    CHECK(r.allocation_result == "0-1");
    CHECK(r.allocation_annotations == StringMap{{keys.ipv4, "1.1.1.1"},
                                                {keys.ipv6, ""},
                                                {keys.nic_name, "eth0"},
                                                {keys.net_class_id, "22347"},
                                                {keys.bandwidth, "5000"}});
    CHECK(r.hint == Hint({0, 1}, true));
    CHECK(r.annotations == QosMap(kDedicatedCores, kHostNs));
  }

  SECTION("5 dedicated + H 20000: resource exhausted") {
    StaticPolicy policy = MakePolicy();
    auto plan = policy.PlanAllocate(
        MakeRequest({kDedicatedCores, 20000, kH, "", Hint({0, 1}, true)}), chooser);
    REQUIRE_FALSE(plan.ok());
    CHECK(plan.status().code() == StatusCode::kResourceExhausted);
    CHECK_THAT(plan.status().message(),
               Catch::Contains("failed to meet the bandwidth requirement of 20000 Mbps") &&
                   Catch::Contains("eth0: free egress 18500 / ingress 17250 Mbps") &&
                   Catch::Contains("ns2-eth2: namespace_type host_ns excludes it"));
  }

  SECTION("6 dedicated + HP 20000 hint {0,1}: eth2 fits but not the hint") {
    StaticPolicy policy = MakePolicy();
    auto plan = policy.PlanAllocate(
        MakeRequest({kDedicatedCores, 20000, kHp, "", Hint({0, 1}, true)}), chooser);
    REQUIRE_FALSE(plan.ok());
    CHECK(plan.status().code() == StatusCode::kResourceExhausted);
    CHECK_THAT(plan.status().message(),
               Catch::Contains("ns2-eth2: NUMA nodes 2-3 do not fit hint 0-1"));
  }

  SECTION("topology policy none: the kubelet's empty hint constrains nothing") {
    // With no NUMA affinity the kubewharf kubelet still sends a hint, with no nodes (its
    // ParseTopologyManagerHint); read as a set of nodes, it would fit no NIC.
    StaticPolicy policy = MakePolicy();
    for (const char* qos : {kDedicatedCores, kReclaimedCores}) {
      auto plan = policy.PlanAllocate(MakeRequest({qos, 5000, kH, "", Hint({}, false)}), chooser);
      INFO(qos << ": " << plan.status().message());
      REQUIRE(plan.ok());
      CHECK(plan->response.allocation_result == "0-1");
      CHECK(std::get<SetAllocation>(*plan->change).info.nic() == NicId{"", "eth0"});
    }
  }

  SECTION("7/8 policy without NICs: error, also for 0 Mbps") {
    StaticPolicy policy = MakePolicy(/*has_nics=*/false);
    for (double mbps : {5000.0, 0.0}) {
      auto plan = policy.PlanAllocate(
          MakeRequest({kSharedCores, mbps, kHp, "", Hint({0, 1}, true)}), chooser);
      REQUIRE_FALSE(plan.ok());
      CHECK(plan.status().code() == StatusCode::kResourceExhausted);
      CHECK_THAT(plan.status().message(),
                 Catch::Contains("failed to meet the bandwidth requirement of " +
                                 std::to_string(static_cast<int>(mbps)) + " Mbps"));
    }
  }

  SECTION("SIDECAR: trivial allocation, nothing stored") {
    StaticPolicy policy = MakePolicy();
    auto plan = policy.PlanAllocate(
        MakeRequest({kSharedCores, 5000, "", "", Hint({0, 1}, true), ContainerType::kSidecar}),
        chooser);
    REQUIRE(plan.ok());
    CHECK_FALSE(plan->change.has_value());
    CHECK(plan->response.has_allocation);
    CHECK(plan->response.allocated_quantity == 0);
    CHECK(plan->response.allocation_result == "");
    CHECK_FALSE(plan->response.allocation_annotations.has_value());
    CHECK_FALSE(plan->response.hint.has_value());
    CHECK(plan->response.resource_name == kResourceName);
  }

  SECTION("EPHEMERAL is allocated like MAIN and recorded as EPHEMERAL") {
    StaticPolicy policy = MakePolicy();
    auto plan = policy.PlanAllocate(
        MakeRequest({kSharedCores, 5000, "", "", std::nullopt, ContainerType::kEphemeral}),
        chooser);
    REQUIRE(plan.ok());
    CHECK(std::get<SetAllocation>(*plan->change).info.container_type == "EPHEMERAL");
  }
}

TEST_CASE("RemovePod (TestRemovePod)", "[policy][acceptance]") {
  StaticPolicy policy = MakePolicy();
  ContainerRequest req = MakeRequest({kSharedCores, 5000, kHp, "12345", Hint({0, 1}, true)});
  testing::AllocateAndApply(policy, req);
  const AllocationInfo* info = policy.FindAllocation(req.pod_uid, "test");
  REQUIRE(info != nullptr);
  CHECK(info->if_name == "eth0");
  CHECK(info->egress == 5000);
  CHECK(info->ingress == 5000);
  REQUIRE(policy.machine_state().size() == 2);
  const NicState& eth0 = policy.machine_state().at(NicId{"", "eth0"});
  CHECK(eth0.egress.allocated == 5000);
  CHECK(eth0.egress.free == 13500);
  CHECK(eth0.ingress.allocated == 5000);
  CHECK(eth0.ingress.free == 12250);

  auto plan = policy.PlanRemovePod(req.pod_uid);
  REQUIRE(plan.ok());
  REQUIRE(plan->change.has_value());
  CHECK(std::get<RemovePodEntries>(*plan->change).pod_uid == req.pod_uid);
  policy.Apply(*plan->change);
  CHECK(policy.FindAllocation(req.pod_uid, "test") == nullptr);
  CHECK(policy.pod_entries().empty());
  REQUIRE(policy.machine_state().size() == 2);
  CHECK(policy.machine_state().at(NicId{"", "eth0"}).egress.allocated == 0);
  CHECK(policy.machine_state().at(NicId{"", "eth0"}).egress.free == 18500);

  SECTION("unknown pod uid: no change, no error") {
    auto again = policy.PlanRemovePod("no-such-pod");
    REQUIRE(again.ok());
    CHECK_FALSE(again->change.has_value());
  }
}

TEST_CASE("RemovePod and GetTopologyAwareResources refuse a request that names no pod",
          "[policy][acceptance]") {
  StaticPolicy policy = MakePolicy();
  ContainerRequest req = MakeRequest({kSharedCores, 5000, kHp, "12345", Hint({0, 1}, true)});
  testing::AllocateAndApply(policy, req);

  auto remove = policy.PlanRemovePod("");
  REQUIRE_FALSE(remove.ok());
  CHECK(remove.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(remove.status().message(), Catch::Contains("empty pod_uid"));

  auto no_pod = policy.GetTopologyAwareResources("", "test");
  REQUIRE_FALSE(no_pod.ok());
  CHECK(no_pod.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(no_pod.status().message(), Catch::Contains("empty pod_uid"));

  // An empty container name asks for the pod-level allocation: a valid question, none here.
  auto pod_level = policy.GetTopologyAwareResources(req.pod_uid, kPodLevelContainerName);
  REQUIRE(pod_level.ok());
  CHECK_FALSE(pod_level->found);

  // Nothing was touched: the allocation is still there.
  CHECK(policy.FindAllocation(req.pod_uid, "test") != nullptr);
}

TEST_CASE("GetTopologyAwareResources (TestGetTopologyAwareResources)", "[policy][acceptance]") {
  SECTION("with NICs") {
    StaticPolicy policy = MakePolicy();
    ContainerRequest req = MakeRequest({kSharedCores, 5000, kHp, "12345", Hint({0, 1}, true)});
    testing::AllocateAndApply(policy, req);
    auto resp = policy.GetTopologyAwareResources(req.pod_uid, "test");
    REQUIRE(resp.ok());
    CHECK(resp->found);
    CHECK(resp->pod_uid == req.pod_uid);
    CHECK(resp->container_name == "test");
    CHECK(resp->aggregated_quantity == 5000);
    REQUIRE(resp->quantities.size() == 1);
    CHECK(resp->quantities[0] ==
          TopologyAwareQuantity{
              5000, 0, "eth0", "NIC", 1, {{kResourceIdentifierKey, "eth0"}, {kNetnsNameKey, ""}}});
  }
  SECTION("on eth2: socket 1, namespaced identifier") {
    StaticPolicy policy = MakePolicy();
    ContainerRequest req = MakeRequest({kReclaimedCores, 5000, kNhp, "", Hint({2, 3}, true)});
    testing::AllocateAndApply(policy, req);
    auto resp = policy.GetTopologyAwareResources(req.pod_uid, "test");
    REQUIRE(resp.ok());
    REQUIRE(resp->quantities.size() == 1);
    CHECK(resp->quantities[0] ==
          TopologyAwareQuantity{5000,
                                1,
                                "eth2",
                                "NIC",
                                1,
                                {{kResourceIdentifierKey, "ns2-eth2"}, {kNetnsNameKey, "ns2"}}});
  }
  SECTION("without NICs: not found") {
    StaticPolicy policy = MakePolicy(/*has_nics=*/false);
    FirstNicChooser chooser;
    ContainerRequest req = MakeRequest({kSharedCores, 0, kHp, "12345", Hint({0, 1}, true)});
    CHECK_FALSE(policy.PlanAllocate(req, chooser).ok());
    auto resp = policy.GetTopologyAwareResources(req.pod_uid, "test");
    REQUIRE(resp.ok());
    CHECK_FALSE(resp->found);
    CHECK(resp->quantities.empty());
  }
}

TEST_CASE("GetTopologyAwareAllocatableResources (TestGetTopologyAwareAllocatableResources)",
          "[policy][acceptance]") {
  SECTION("with NICs") {
    StaticPolicy policy = MakePolicy();
    auto resp = policy.GetTopologyAwareAllocatableResources();
    REQUIRE(resp.ok());
    CHECK(resp->aggregated_allocatable == 38500);
    CHECK(resp->aggregated_capacity == 42500);
    StringMap eth0_ann = {{kResourceIdentifierKey, "eth0"}, {kNetnsNameKey, ""}};
    StringMap eth2_ann = {{kResourceIdentifierKey, "ns2-eth2"}, {kNetnsNameKey, "ns2"}};
    CHECK(resp->allocatable ==
          std::vector<TopologyAwareQuantity>{{17250, 0, "eth0", "NIC", 1, eth0_ann},
                                             {21250, 1, "eth2", "NIC", 1, eth2_ann}});
    CHECK(resp->capacity ==
          std::vector<TopologyAwareQuantity>{{21250, 0, "eth0", "NIC", 1, eth0_ann},
                                             {21250, 1, "eth2", "NIC", 1, eth2_ann}});
  }
  SECTION("allocations are not subtracted") {
    StaticPolicy policy = MakePolicy();
    testing::AllocateAndApply(policy, MakeRequest({kSharedCores, 5000, kHp}));
    auto resp = policy.GetTopologyAwareAllocatableResources();
    REQUIRE(resp.ok());
    CHECK(resp->aggregated_allocatable == 38500);
  }
  SECTION("without NICs") {
    StaticPolicy policy = MakePolicy(/*has_nics=*/false);
    auto resp = policy.GetTopologyAwareAllocatableResources();
    REQUIRE(resp.ok());
    CHECK(resp->aggregated_allocatable == 0);
    CHECK(resp->aggregated_capacity == 0);
    CHECK(resp->allocatable.empty());
    CHECK(resp->capacity.empty());
  }
}

TEST_CASE("net class id per QoS level and pod annotation (TestGetNetClassID)",
          "[policy][acceptance]") {
  PolicyConfig config = testing::FixtureConfig();
  config.qos_class_ids = {
      {kReclaimedCores, 10}, {kSharedCores, 20}, {kDedicatedCores, 30}, {kSystemCores, 70}};
  auto created = StaticPolicy::Create(config, testing::FixtureTopology());
  REQUIRE(created.ok());
  StaticPolicy& policy = *created;
  FirstNicChooser chooser;
  struct Case {
    std::string qos;
    std::string class_id;
    std::string expected;
  };
  for (const Case& c : std::vector<Case>{{kSharedCores, "", "20"},
                                         {kReclaimedCores, "", "10"},
                                         {kDedicatedCores, "", "30"},
                                         {kSystemCores, "", "70"},
                                         {kSharedCores, "100", "100"}}) {
    auto plan = policy.PlanAllocate(MakeRequest({c.qos, 100, "", c.class_id}), chooser);
    INFO(c.qos << " " << c.class_id);
    REQUIRE(plan.ok());
    CHECK(plan->response.allocation_annotations->at(kDefaultNetClassIdAnnotationKey) == c.expected);
    CHECK(std::get<SetAllocation>(*plan->change).info.net_class_id == c.expected);
  }
  SECTION("system_cores absent from the fixture map: error") {
    StaticPolicy fixture = MakePolicy();
    auto plan = fixture.PlanAllocate(MakeRequest({kSystemCores, 100}), chooser);
    REQUIRE_FALSE(plan.ok());
    CHECK(plan.status().code() == StatusCode::kInvalidArgument);
    CHECK_THAT(plan.status().message(),
               Catch::Contains("net class id for QoS level system_cores is not configured"));
  }
}

TEST_CASE("small tests of policy_test.go", "[policy][acceptance]") {
  CHECK(std::string(kPluginName) == "qrm_network_plugin_static");
  CHECK(std::string(kResourceName) == "resource.katalyst.kubewharf.io/net_bandwidth");
  StaticPolicy policy = MakePolicy();
  PluginOptions o = policy.Options();
  CHECK_FALSE(o.pre_start_required);
  CHECK(o.with_topology_alignment);
  CHECK_FALSE(o.need_reconcile);
}

}  // namespace
}  // namespace netqos::core
