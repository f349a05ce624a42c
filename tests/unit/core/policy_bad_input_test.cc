// Requests the policy must refuse: each gives a precise status code and message and leaves the
// policy's state exactly as it was.
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <limits>

#include "core/constants.h"
#include "core/policy.h"
#include "unit/core/policy_fixture.h"

namespace netqos::core {
namespace {

using testing::MakePolicy;
using testing::MakeRequest;

struct BadCase {
  const char* name;
  std::function<void(ContainerRequest&)> mutate;
  StatusCode code;
  const char* message;
};

std::vector<BadCase> BadCases() {
  const double kNan = std::numeric_limits<double>::quiet_NaN();
  const double kInf = std::numeric_limits<double>::infinity();
  return {
      {"empty pod uid", [](ContainerRequest& r) { r.pod_uid.clear(); },
       StatusCode::kInvalidArgument, "empty pod_uid"},
      {"empty container name", [](ContainerRequest& r) { r.container_name.clear(); },
       StatusCode::kInvalidArgument, "empty container_name"},
      {"missing resource name", [](ContainerRequest& r) { r.resource_name.clear(); },
       StatusCode::kInvalidArgument, "unknown resource name \"\""},
      {"unknown resource name", [](ContainerRequest& r) { r.resource_name = "cpu"; },
       StatusCode::kInvalidArgument, "unknown resource name \"cpu\""},
      {"request keyed by another resource",
       [](ContainerRequest& r) {
         r.resource_requests = {{"memory", 1.0}};
       },
       StatusCode::kInvalidArgument, "unknown resource name \"memory\" in resource_requests"},
      {"no request entry", [](ContainerRequest& r) { r.resource_requests.clear(); },
       StatusCode::kInvalidArgument, "exactly one entry"},
      {"two request entries", [](ContainerRequest& r) { r.resource_requests["cpu"] = 1; },
       StatusCode::kInvalidArgument,
       "exactly one entry (resource.katalyst.kubewharf.io/net_bandwidth), got 2"},
      {"negative", [](ContainerRequest& r) { r.resource_requests[kResourceName] = -1; },
       StatusCode::kInvalidArgument, "is negative"},
      {"NaN", [kNan](ContainerRequest& r) { r.resource_requests[kResourceName] = kNan; },
       StatusCode::kInvalidArgument, "not a finite number"},
      {"+inf", [kInf](ContainerRequest& r) { r.resource_requests[kResourceName] = kInf; },
       StatusCode::kInvalidArgument, "not a finite number"},
      {"-inf", [kInf](ContainerRequest& r) { r.resource_requests[kResourceName] = -kInf; },
       StatusCode::kInvalidArgument, "not a finite number"},
      {"above uint32",
       [](ContainerRequest& r) { r.resource_requests[kResourceName] = 4294967295.5; },
       StatusCode::kInvalidArgument, "exceeds 4294967295 Mbps"},
      {"unparsable class id",
       [](ContainerRequest& r) { r.annotations[kDefaultNetClassAnnotationKey] = "0x10"; },
       StatusCode::kInvalidArgument, "net class id \"0x10\" is not a decimal number"},
      {"signed class id",
       [](ContainerRequest& r) { r.annotations[kDefaultNetClassAnnotationKey] = "+5"; },
       StatusCode::kInvalidArgument, "is not a decimal number"},
      {"class id above uint32",
       [](ContainerRequest& r) { r.annotations[kDefaultNetClassAnnotationKey] = "4294967296"; },
       StatusCode::kInvalidArgument, "exceeds 4294967295"},
      {"malformed network enhancement",
       [](ContainerRequest& r) { r.annotations[kNetworkEnhancementKey] = "{\"namespace_type\":"; },
       StatusCode::kInvalidArgument,
       "annotation katalyst.kubewharf.io/network_enhancement is not a JSON object"},
      {"network enhancement is an array",
       [](ContainerRequest& r) { r.annotations[kNetworkEnhancementKey] = "[]"; },
       StatusCode::kInvalidArgument, "expected a JSON object, got array"},
      {"non-string enhancement value",
       [](ContainerRequest& r) {
         r.annotations[kNetworkEnhancementKey] = R"({"topology_affinity_restricted": true})";
       },
       StatusCode::kInvalidArgument,
       "value of key \"topology_affinity_restricted\" is a JSON bool, expected a string"},
      {"bad namespace_type",
       [](ContainerRequest& r) {
         r.annotations[kNetworkEnhancementKey] = R"({"namespace_type": "host"})";
       },
       StatusCode::kInvalidArgument,
       "valid values: host_ns, host_ns_preferred, anti_host_ns, anti_host_ns_preferred"},
      {"bad topology_affinity_restricted",
       [](ContainerRequest& r) {
         r.annotations[kNetworkEnhancementKey] = R"({"topology_affinity_restricted": "yes"})";
       },
       StatusCode::kInvalidArgument, "invalid topology_affinity_restricted \"yes\""},
      {"unknown qos_level", [](ContainerRequest& r) { r.annotations[kQosLevelKey] = "foo"; },
       StatusCode::kInvalidArgument, "can't get valid qos level"},
  };
}

// A policy holding one allocation, so "state unchanged" covers a non-trivial state.
StaticPolicy PolicyWithOneAllocation() {
  StaticPolicy policy = MakePolicy();
  testing::AllocateAndApply(policy, MakeRequest({kSharedCores, 1000, "", "", std::nullopt,
                                                 ContainerType::kMain, "existing-pod"}));
  return policy;
}

TEST_CASE("bad requests are refused and change nothing", "[policy][bad-input]") {
  for (const BadCase& c : BadCases()) {
    SECTION(c.name) {
      StaticPolicy policy = PolicyWithOneAllocation();
      const PodEntries entries_before = policy.pod_entries();
      const MachineState state_before = policy.machine_state();
      ContainerRequest req = MakeRequest({kSharedCores, 5000});
      c.mutate(req);
      FirstNicChooser chooser;
      auto plan = policy.PlanAllocate(req, chooser);
      REQUIRE_FALSE(plan.ok());
      CHECK(plan.status().code() == c.code);
      CHECK_THAT(plan.status().message(), Catch::Contains(c.message));
      CHECK(policy.pod_entries() == entries_before);
      CHECK(policy.machine_state() == state_before);
    }
  }
}

TEST_CASE("bad requests also fail GetTopologyHints, except net class errors",
          "[policy][bad-input]") {
  StaticPolicy policy = MakePolicy();
  for (const BadCase& c : BadCases()) {
    ContainerRequest req = MakeRequest({kSharedCores, 5000});
    c.mutate(req);
    auto hints = policy.GetTopologyHints(req);
    INFO(c.name);
    // Hints never resolve the class id (upstream computes it only when allocating).
    bool class_id_case = req.annotations.count(kDefaultNetClassAnnotationKey) > 0;
    if (class_id_case) {
      CHECK(hints.ok());
    } else {
      REQUIRE_FALSE(hints.ok());
      CHECK(hints.status().code() == c.code);
      CHECK_THAT(hints.status().message(), Catch::Contains(c.message));
    }
  }
}

TEST_CASE("bad pod-level requests", "[policy][bad-input]") {
  StaticPolicy policy = MakePolicy();
  FirstNicChooser chooser;
  PodRequest req = testing::MakePodRequest({kSharedCores, 5000});
  req.pod_uid.clear();
  auto plan = policy.PlanAllocateForPod(req, chooser);
  REQUIRE_FALSE(plan.ok());
  CHECK(plan.status().code() == StatusCode::kInvalidArgument);
  auto hints = policy.GetPodTopologyHints(req);
  REQUIRE_FALSE(hints.ok());
  CHECK(hints.status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("lenient inputs that upstream accepts", "[policy][bad-input]") {
  StaticPolicy policy = MakePolicy();
  FirstNicChooser chooser;
  SECTION("fractional request rounds up") {
    auto plan = policy.PlanAllocate(MakeRequest({kSharedCores, 0.2}), chooser);
    REQUIRE(plan.ok());
    CHECK(plan->response.allocated_quantity == 1);
  }
  SECTION("malformed cpu enhancement contributes nothing") {
    ContainerRequest req = MakeRequest({kSharedCores, 5000});
    req.annotations[kCpuEnhancementKey] = "{not json";
    auto plan = policy.PlanAllocate(req, chooser);
    REQUIRE(plan.ok());
    CHECK(plan->response.annotations == StringMap{{kQosLevelKey, kSharedCores}});
  }
  SECTION("null value in the network enhancement decodes as empty") {
    ContainerRequest req = MakeRequest({kSharedCores, 5000});
    req.annotations[kNetworkEnhancementKey] = R"({"some_key": null})";
    auto plan = policy.PlanAllocate(req, chooser);
    REQUIRE(plan.ok());
    CHECK(plan->response.annotations.at("some_key") == "");
  }
  SECTION("class id 4294967295 is accepted") {
    ContainerRequest req = MakeRequest({kSharedCores, 5000});
    req.annotations[kDefaultNetClassAnnotationKey] = "4294967295";
    auto plan = policy.PlanAllocate(req, chooser);
    REQUIRE(plan.ok());
    CHECK(plan->response.allocation_annotations->at(kDefaultNetClassIdAnnotationKey) ==
          "4294967295");
  }
}

}  // namespace
}  // namespace netqos::core
