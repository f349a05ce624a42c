// The shared fixture of Katalyst's policy_test.go (the staticpolicy package, v0.5.3 and HEAD), rebuilt for StaticPolicy: four
// NUMA nodes on two sockets, eth0 (host), a disabled eth1 and eth2 in netns "ns2".
#pragma once

#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <utility>

#include "core/constants.h"
#include "core/policy.h"

namespace netqos::core::testing {

inline constexpr char kHp[] = R"({"namespace_type": "host_ns_preferred"})";
inline constexpr char kNhp[] = R"({"namespace_type": "anti_host_ns_preferred"})";
inline constexpr char kH[] = R"({"namespace_type": "host_ns"})";

inline Topology FixtureTopology(bool has_nics = true) {
  Topology t;
  t.numa_nodes = {{0, 0}, {1, 0}, {2, 1}, {3, 1}};
  Nic eth0;
  eth0.id = {"", "eth0"};
  eth0.ifindex = 0;
  eth0.speed_mbps = 25000;
  eth0.numa_node = 0;
  eth0.enabled = has_nics;
  eth0.ipv4 = {"1.1.1.1"};
  Nic eth1;
  eth1.id = {"", "eth1"};
  eth1.ifindex = 1;
  eth1.speed_mbps = 25000;
  eth1.numa_node = 1;
  eth1.enabled = false;
  Nic eth2;
  eth2.id = {"ns2", "eth2"};
  eth2.ifindex = 2;
  eth2.speed_mbps = 25000;
  eth2.numa_node = 2;
  eth2.enabled = has_nics;
  eth2.ipv6 = {"::ffff:192.0.2.1"};
  eth2.netns_path = "/var/run/ns2";
  t.nics = {eth0, eth1, eth2};
  return t;
}

inline PolicyConfig FixtureConfig() {
  PolicyConfig c;
  c.reserved_bandwidth = 4000;
  c.egress_capacity_rate = 0.9f;
  c.ingress_capacity_rate = 0.85f;
  c.qos_class_ids = {{kSharedCores, 22345}, {kReclaimedCores, 22346}, {kDedicatedCores, 22347}};
  return c;
}

inline StaticPolicy MakePolicy(bool has_nics = true) {
  auto p = StaticPolicy::Create(FixtureConfig(), FixtureTopology(has_nics));
  REQUIRE(p.ok());
  return std::move(p).value();
}

// Brace-initialisable with any prefix of the fields (a constructor, so -Wextra does not warn
// about the omitted ones).
struct RequestSpec {
  RequestSpec(std::string qos_in = kSharedCores, double mbps_in = 5000,
              std::string enhancement_in = "", std::string class_id_in = "",
              std::optional<TopologyHint> hint_in = std::nullopt,
              ContainerType type_in = ContainerType::kMain, std::string pod_uid_in = "pod-uid",
              std::string container_in = "test")  // NOLINT(google-explicit-constructor)
      : qos(std::move(qos_in)),
        mbps(mbps_in),
        enhancement(std::move(enhancement_in)),
        class_id(std::move(class_id_in)),
        hint(std::move(hint_in)),
        type(type_in),
        pod_uid(std::move(pod_uid_in)),
        container(std::move(container_in)) {}

  std::string qos;
  double mbps;
  std::string enhancement;  // network enhancement JSON, "" for none
  std::string class_id;     // pod-level net class annotation, "" for none
  std::optional<TopologyHint> hint;
  ContainerType type;
  std::string pod_uid;
  std::string container;
};

inline ContainerRequest MakeRequest(const RequestSpec& s) {
  ContainerRequest r;
  r.pod_uid = s.pod_uid;
  r.pod_namespace = "test";
  r.pod_name = "test";
  r.container_name = s.container;
  r.container_type = s.type;
  r.resource_name = kResourceName;
  r.hint = s.hint;
  r.resource_requests = {{kResourceName, s.mbps}};
  r.labels = {{kQosLevelKey, s.qos}};
  r.annotations = {{kQosLevelKey, s.qos}};
  if (!s.enhancement.empty()) r.annotations[kNetworkEnhancementKey] = s.enhancement;
  if (!s.class_id.empty()) r.annotations[kDefaultNetClassAnnotationKey] = s.class_id;
  return r;
}

inline PodRequest MakePodRequest(const RequestSpec& s) {
  ContainerRequest c = MakeRequest(s);
  PodRequest r;
  r.pod_uid = c.pod_uid;
  r.pod_namespace = c.pod_namespace;
  r.pod_name = c.pod_name;
  r.resource_name = c.resource_name;
  r.hint = c.hint;
  r.resource_requests = c.resource_requests;
  r.labels = c.labels;
  r.annotations = c.annotations;
  return r;
}

inline TopologyHint Hint(std::vector<uint64_t> nodes, bool preferred) {
  return TopologyHint{std::move(nodes), preferred};
}

// Plans and applies an allocation, as the service does after journaling the change.
inline AllocationResponse AllocateAndApply(StaticPolicy& policy, const ContainerRequest& req) {
  FirstNicChooser chooser;
  auto plan = policy.PlanAllocate(req, chooser);
  INFO(plan.status().message());
  REQUIRE(plan.ok());
  if (plan->change) policy.Apply(*plan->change);
  return plan->response;
}

}  // namespace netqos::core::testing
