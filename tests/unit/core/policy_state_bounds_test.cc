// The bounds on what tenant-written pod metadata makes the checkpoint hold: a pod whose kept
// labels and annotations are too large is refused by name, the pod entries stop growing at their
// bound, and nothing already allocated is lost either way.
#include <catch2/catch.hpp>
#include <string>

#include "core/constants.h"
#include "core/policy.h"
#include "core/state_size.h"
#include "unit/core/policy_fixture.h"

namespace netqos::core {
namespace {

using netqos::testing::FixtureConfig;
using netqos::testing::FixtureTopology;
using testing::MakeRequest;
using testing::RequestSpec;

StaticPolicy PolicyWith(size_t max_pod_metadata_bytes, size_t max_state_bytes) {
  PolicyConfig config = FixtureConfig();
  config.max_pod_metadata_bytes = max_pod_metadata_bytes;
  config.max_state_bytes = max_state_bytes;
  auto p = StaticPolicy::Create(std::move(config), FixtureTopology(true));
  REQUIRE(p.ok());
  return std::move(p).value();
}

// A 1 Mbps request of pod `uid` whose kept aggregated-requests annotation is `bytes` long.
ContainerRequest RequestWithAnnotation(const std::string& uid, size_t bytes,
                                       const std::string& container = "main") {
  ContainerRequest r = MakeRequest(
      RequestSpec(kSharedCores, 1, "", "", std::nullopt, ContainerType::kMain, uid, container));
  r.annotations[kPodAggregatedRequestsKey] = std::string(bytes, 'a');
  return r;
}

Status AllocateAndApply(StaticPolicy& policy, const ContainerRequest& req) {
  FirstNicChooser chooser;
  auto plan = policy.PlanAllocate(req, chooser);
  if (!plan.ok()) return plan.status();
  if (plan->change) policy.Apply(*plan->change);
  return Status::Ok();
}

TEST_CASE("a pod whose kept annotations pass the limit is refused, naming the largest",
          "[policy][state_bounds]") {
  StaticPolicy policy = PolicyWith(4096, kMaxStateBytes);
  REQUIRE(AllocateAndApply(policy, RequestWithAnnotation("small", 100)).ok());
  const PodEntries before = policy.pod_entries();
  const size_t bytes_before = policy.state_bytes();

  ContainerRequest big = RequestWithAnnotation("big", 5000);
  FirstNicChooser chooser;
  auto plan = policy.PlanAllocate(big, chooser);
  REQUIRE_FALSE(plan.ok());
  CHECK(plan.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(plan.status().message(),
             Catch::Contains("pod test/test (big)") && Catch::Contains("over the limit of 4096") &&
                 Catch::Contains(std::string("annotation \"") + kPodAggregatedRequestsKey) &&
                 Catch::Contains("--checkpoint-pod-metadata-bytes"));
  // Hints refuse it too: the kubelet learns before admitting the pod.
  auto hints = policy.GetTopologyHints(big);
  REQUIRE_FALSE(hints.ok());
  CHECK(hints.status().code() == StatusCode::kInvalidArgument);
  CHECK(policy.pod_entries() == before);
  CHECK(policy.state_bytes() == bytes_before);
}

TEST_CASE("a container already held keeps being served whatever its metadata",
          "[policy][state_bounds]") {
  // Held under a higher limit (or restored from a checkpoint written before the limit existed).
  StaticPolicy before = PolicyWith(size_t{1} << 20, kMaxStateBytes);
  REQUIRE(AllocateAndApply(before, RequestWithAnnotation("held", 100000)).ok());
  StaticPolicy policy = PolicyWith(4096, kMaxStateBytes);
  policy.Restore(before.pod_entries());

  // Asked again (a kubelet restart re-admits running pods): hints and the same allocation.
  CHECK(policy.GetTopologyHints(RequestWithAnnotation("held", 100000)).ok());
  FirstNicChooser chooser;
  auto again = policy.PlanAllocate(RequestWithAnnotation("held", 100000), chooser);
  REQUIRE(again.ok());
  CHECK_FALSE(again->change);  // nothing new to write
  CHECK(policy.pod_entries() == before.pod_entries());

  // What would write a new entry with that metadata is refused: another container of the pod,
  // and the same container asking for more.
  CHECK(AllocateAndApply(policy, RequestWithAnnotation("held", 100000, "sidecar2")).code() ==
        StatusCode::kInvalidArgument);
  ContainerRequest more = RequestWithAnnotation("held", 100000);
  more.resource_requests[kResourceName] = 2;
  CHECK(AllocateAndApply(policy, more).code() == StatusCode::kInvalidArgument);
  CHECK(policy.pod_entries() == before.pod_entries());
}

TEST_CASE("metadata at the limit is taken and one byte over it is not", "[policy][state_bounds]") {
  ContainerRequest probe = RequestWithAnnotation("p", 0);
  StaticPolicy unlimited = PolicyWith(size_t{1} << 30, kMaxStateBytes);
  REQUIRE(AllocateAndApply(unlimited, probe).ok());
  const AllocationInfo* held = unlimited.FindAllocation("p", "main");
  REQUIRE(held != nullptr);
  const size_t at_zero = MetadataBytes(held->labels, held->annotations);

  const size_t limit = at_zero + 2000;
  StaticPolicy policy = PolicyWith(limit, kMaxStateBytes);
  CHECK(AllocateAndApply(policy, RequestWithAnnotation("fits", 2000)).ok());
  Status over = AllocateAndApply(policy, RequestWithAnnotation("over", 2001));
  CHECK(over.code() == StatusCode::kInvalidArgument);
  CHECK(policy.FindAllocation("fits", "main") != nullptr);
  CHECK(policy.FindAllocation("over", "main") == nullptr);
}

TEST_CASE("the pod entries stop growing at their bound and keep everything they hold",
          "[policy][state_bounds]") {
  StaticPolicy probe = PolicyWith(kDefaultPodMetadataBytes, kMaxStateBytes);
  REQUIRE(AllocateAndApply(probe, RequestWithAnnotation("p0", 8000)).ok());
  const size_t per_entry = probe.state_bytes();
  REQUIRE(per_entry > 2 * 8000);

  // Room for three such entries and a half.
  StaticPolicy policy = PolicyWith(kDefaultPodMetadataBytes, per_entry * 7 / 2);
  for (int i = 0; i < 3; ++i) {
    REQUIRE(AllocateAndApply(policy, RequestWithAnnotation("p" + std::to_string(i), 8000)).ok());
  }
  const PodEntries full = policy.pod_entries();
  Status refused = AllocateAndApply(policy, RequestWithAnnotation("p3", 8000));
  CHECK(refused.code() == StatusCode::kResourceExhausted);
  CHECK_THAT(refused.message(),
             Catch::Contains("no room in the checkpoint for pod test/test (p3)"));
  CHECK(policy.pod_entries() == full);

  // A container already held is allocated again at the same size, even when full.
  CHECK(AllocateAndApply(policy, RequestWithAnnotation("p1", 8000)).ok());
  // A small entry still fits in the remaining half.
  CHECK(AllocateAndApply(policy, RequestWithAnnotation("small", 10)).ok());

  // Removing a pod makes room again.
  auto remove = policy.PlanRemovePod("p0");
  REQUIRE(remove.ok());
  REQUIRE(remove->change);
  policy.Apply(*remove->change);
  CHECK(AllocateAndApply(policy, RequestWithAnnotation("p3", 8000)).ok());
}

TEST_CASE("a state restored over the bound keeps its entries and takes no new ones",
          "[policy][state_bounds]") {
  StaticPolicy source = PolicyWith(kDefaultPodMetadataBytes, kMaxStateBytes);
  for (int i = 0; i < 4; ++i) {
    REQUIRE(AllocateAndApply(source, RequestWithAnnotation("p" + std::to_string(i), 8000)).ok());
  }
  StaticPolicy policy = PolicyWith(kDefaultPodMetadataBytes, source.state_bytes() / 2);
  policy.Restore(source.pod_entries());
  CHECK(policy.pod_entries() == source.pod_entries());
  CHECK(policy.state_bytes() == source.state_bytes());
  CHECK(AllocateAndApply(policy, RequestWithAnnotation("new", 10)).code() ==
        StatusCode::kResourceExhausted);
  CHECK(AllocateAndApply(policy, RequestWithAnnotation("p2", 8000)).ok());
}

TEST_CASE("the running count of the state's bytes matches a recount after every change",
          "[policy][state_bounds]") {
  StaticPolicy policy = PolicyWith(kDefaultPodMetadataBytes, kMaxStateBytes);
  auto recount = [&] {
    StaticPolicy fresh = PolicyWith(kDefaultPodMetadataBytes, kMaxStateBytes);
    fresh.Restore(policy.pod_entries());
    return fresh.state_bytes();
  };
  CHECK(policy.state_bytes() == 0);
  REQUIRE(AllocateAndApply(policy, RequestWithAnnotation("a", 100, "c1")).ok());
  REQUIRE(AllocateAndApply(policy, RequestWithAnnotation("a", 100, "c2")).ok());
  REQUIRE(AllocateAndApply(policy, RequestWithAnnotation("b", 3000)).ok());
  CHECK(policy.state_bytes() == recount());
  // Grown in place: a larger request for a container already held replaces its entry.
  ContainerRequest grown = RequestWithAnnotation("b", 50);
  grown.resource_requests[kResourceName] = 2;
  REQUIRE(AllocateAndApply(policy, grown).ok());
  REQUIRE(policy.FindAllocation("b", "main")->egress == 2);
  CHECK(policy.state_bytes() == recount());
  auto remove = policy.PlanRemovePod("a");
  REQUIRE(remove.ok());
  REQUIRE(remove->change);
  policy.Apply(*remove->change);
  CHECK(policy.state_bytes() == recount());
  CHECK(policy.state_bytes() == 2 * EntryBytes(*policy.FindAllocation("b", "main")));
}

}  // namespace
}  // namespace netqos::core
