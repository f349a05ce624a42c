// Implicit bandwidth (Katalyst HEAD): a pod annotated quantity-from-qrm-declaration=true declares
// its bandwidth without reserving it, where the tenant policy lets its namespace. The declared
// value is kept in the state annotation net_bandwidth_implicit, and the response carries no
// bandwidth annotation.
#include <algorithm>
#include <catch2/catch.hpp>

#include "core/constants.h"
#include "unit/core/policy_fixture.h"

namespace netqos::core {
namespace {

using testing::AllocateAndApply;
using testing::MakePodRequest;
using testing::MakePolicy;
using testing::MakeRequest;

ContainerRequest Implicit(double mbps, const char* value = "true") {
  ContainerRequest r = MakeRequest({kSharedCores, mbps});
  r.annotations[kQuantityFromQrmDeclarationKey] = value;
  return r;
}

// A policy whose requests' namespace ("test") may declare up to 100,000 Mbit/s: the tenant
// policy grants it (implicit_bandwidth_max_mbps); without a grant nothing is implicit.
StaticPolicy MakeGrantingPolicy(uint32_t max_mbps = 100000) {
  PolicyConfig config = testing::FixtureConfig();
  config.implicit_grants.max_mbps_by_namespace["test"] = max_mbps;
  auto created = StaticPolicy::Create(config, testing::FixtureTopology());
  REQUIRE(created.ok());
  return std::move(created).value();
}

uint32_t EgressAllocated(const StaticPolicy& policy, const NicId& nic) {
  return policy.machine_state().at(nic).egress.allocated;
}

TEST_CASE("implicit bandwidth: the request reserves nothing and its declared value is recorded",
          "[policy][implicit]") {
  StaticPolicy policy = MakeGrantingPolicy();
  AllocationResponse resp = AllocateAndApply(policy, Implicit(5000.2));
  CHECK(resp.allocated_quantity == 0);
  REQUIRE(resp.allocation_annotations.has_value());
  CHECK(resp.allocation_annotations->count(kDefaultBandwidthAnnotationKey) == 0);
  CHECK(resp.allocation_annotations->at(kDefaultNicNameAnnotationKey) == "eth0");

  const AllocationInfo* info = policy.FindAllocation("pod-uid", "test");
  REQUIRE(info != nullptr);
  CHECK(info->egress == 0);
  CHECK(info->ingress == 0);
  CHECK(info->annotations.at(kNetBandwidthImplicitKey) == "5001");
  CHECK(EgressAllocated(policy, {"", "eth0"}) == 0);
}

TEST_CASE("implicit bandwidth: the declaration is read whatever the kept keys are",
          "[policy][implicit]") {
  // Katalyst HEAD zeroes the request only when the annotation is in --pod-annotation-kept-keys,
  // but omits the bandwidth annotation either way; netqos reads the pod's own annotations for
  // both, so the reservation and the report always agree.
  StaticPolicy policy = MakeGrantingPolicy();
  REQUIRE(policy.config().qos.annotation_kept_keys.end() ==
          std::find(policy.config().qos.annotation_kept_keys.begin(),
                    policy.config().qos.annotation_kept_keys.end(),
                    std::string(kQuantityFromQrmDeclarationKey)));
  AllocateAndApply(policy, Implicit(3000));
  CHECK(policy.FindAllocation("pod-uid", "test")->egress == 0);
}

// Allocates `req` (5000 Mbps) and checks it was reserved and reported like any request.
void CheckReservedAsExplicit(StaticPolicy& policy, const ContainerRequest& req) {
  AllocationResponse resp = AllocateAndApply(policy, req);
  CHECK(resp.allocated_quantity == 5000);
  CHECK(resp.allocation_annotations->at(kDefaultBandwidthAnnotationKey) == "5000");
  const AllocationInfo* info = policy.FindAllocation("pod-uid", "test");
  CHECK(info->egress == 5000);
  CHECK(info->annotations.count(kNetBandwidthImplicitKey) == 0);
  CHECK(EgressAllocated(policy, {"", "eth0"}) == 5000);
}

TEST_CASE("implicit bandwidth: an explicit request is reserved and reported as before",
          "[policy][implicit]") {
  StaticPolicy policy = MakeGrantingPolicy();
  CheckReservedAsExplicit(policy, Implicit(5000, "false"));
}

TEST_CASE("implicit bandwidth: a declaration other than true or false is refused, naming it",
          "[policy][implicit]") {
  StaticPolicy policy = MakeGrantingPolicy();
  FirstNicChooser chooser;
  for (const char* bad : {"True", "1", "yes", ""}) {
    INFO(bad);
    auto plan = policy.PlanAllocate(Implicit(100, bad), chooser);
    REQUIRE_FALSE(plan.ok());
    CHECK(plan.status().code() == StatusCode::kInvalidArgument);
    CHECK_THAT(plan.status().message(), Catch::Contains(kQuantityFromQrmDeclarationKey));
    auto hints = policy.GetTopologyHints(Implicit(100, bad));
    CHECK_FALSE(hints.ok());
  }
}

TEST_CASE("implicit bandwidth: a tenant's own net_bandwidth_implicit annotation is never stored",
          "[policy][implicit]") {
  // Even when an operator keeps the key, only netqos writes it: a forged value must not count
  // as the pod's declared bandwidth.
  PolicyConfig config = testing::FixtureConfig();
  config.implicit_grants.default_max_mbps = 100000;
  config.qos.annotation_kept_keys.push_back(kNetBandwidthImplicitKey);
  auto created = StaticPolicy::Create(config, testing::FixtureTopology());
  REQUIRE(created.ok());
  StaticPolicy policy = std::move(created).value();
  ContainerRequest forged = MakeRequest({kSharedCores, 100});
  forged.annotations[kNetBandwidthImplicitKey] = "99999";
  AllocationResponse resp = AllocateAndApply(policy, forged);
  CHECK(resp.annotations.count(kNetBandwidthImplicitKey) == 0);
  CHECK(policy.FindAllocation("pod-uid", "test")->annotations.count(kNetBandwidthImplicitKey) == 0);

  ContainerRequest implicit = Implicit(7);
  implicit.pod_uid = "other";
  implicit.annotations[kNetBandwidthImplicitKey] = "99999";
  AllocateAndApply(policy, implicit);
  CHECK(policy.FindAllocation("other", "test")->annotations.at(kNetBandwidthImplicitKey) == "7");
}

TEST_CASE("implicit bandwidth: hints are computed for a request of 0", "[policy][implicit]") {
  // 30000 Mbps fits no NIC; declared implicitly it reserves nothing, so its hints are those of a
  // request of 0.
  StaticPolicy policy = MakeGrantingPolicy();
  auto too_big = policy.GetTopologyHints(Implicit(30000, "false"));
  auto zero = policy.GetTopologyHints(Implicit(0, "false"));
  auto implicit = policy.GetTopologyHints(Implicit(30000));
  REQUIRE(too_big.ok());
  REQUIRE(zero.ok());
  REQUIRE(implicit.ok());
  CHECK(*implicit->hints == *zero->hints);
  CHECK(*implicit->hints != *too_big->hints);
}

TEST_CASE("implicit bandwidth: a pod-level allocation is implicit too", "[policy][implicit]") {
  StaticPolicy policy = MakeGrantingPolicy();
  PodRequest req = MakePodRequest({kSharedCores, 2000});
  req.annotations[kQuantityFromQrmDeclarationKey] = "true";
  FirstNicChooser chooser;
  auto plan = policy.PlanAllocateForPod(req, chooser);
  REQUIRE(plan.ok());
  REQUIRE(plan->change.has_value());
  policy.Apply(*plan->change);
  const AllocationInfo* info = policy.FindAllocation("pod-uid", kPodLevelContainerName);
  REQUIRE(info != nullptr);
  CHECK(info->egress == 0);
  CHECK(info->annotations.at(kNetBandwidthImplicitKey) == "2000");
  CHECK(plan->response.allocation_annotations->count(kDefaultBandwidthAnnotationKey) == 0);
}

TEST_CASE(
    "implicit bandwidth: a namespace the tenant policy does not let declare, or a declaration "
    "above its maximum, is reserved like any request",
    "[policy][implicit]") {
  for (uint32_t max : {0u, 4999u}) {
    INFO("maximum " << max);
    StaticPolicy policy = max == 0 ? MakePolicy() : MakeGrantingPolicy(max);
    CheckReservedAsExplicit(policy, Implicit(5000));
  }
  // The grants change with the policy: later requests follow.
  StaticPolicy policy = MakePolicy();
  ImplicitBandwidthGrants grants;
  grants.max_mbps_by_namespace["test"] = 5000;
  policy.SetImplicitGrants(grants);
  AllocateAndApply(policy, Implicit(5000));
  CHECK(policy.FindAllocation("pod-uid", "test")->egress == 0);
}

}  // namespace
}  // namespace netqos::core
