// Katalyst's policy_test.go fixture (support/katalyst_fixture_node.h) and the request builders
// of the policy tests.
#pragma once

#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <utility>

#include "core/constants.h"
#include "core/policy.h"
#include "support/katalyst_fixture_node.h"

namespace netqos::core::testing {

inline constexpr char kHp[] = R"({"namespace_type": "host_ns_preferred"})";
inline constexpr char kNhp[] = R"({"namespace_type": "anti_host_ns_preferred"})";
inline constexpr char kH[] = R"({"namespace_type": "host_ns"})";

using netqos::testing::FixtureConfig;
using netqos::testing::FixtureTopology;

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
