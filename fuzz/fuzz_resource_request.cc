// libFuzzer target: a kubelet request as it arrives on the plugin socket (protobuf wire format),
// read both as a container-level ResourceRequest and as a pod-level PodResourceRequest, through
// the gRPC layer's proto -> core translation and the policy's validation (resource name and
// quantity, QoS level, network_enhancement, net class id), hints and allocation, on the
// policy_test.go node that already holds one pod.
//
// Invariants:
// - translation round-trips: proto -> core -> proto equals the request (unknown fields dropped,
//   unknown container types read as MAIN) and core -> proto -> core is stable;
// - planning is const: a rejected request, or the plan alone, leaves the policy untouched;
// - a new allocation fits the NIC's free bandwidth, is found again, is reported back, and
//   removing its pod restores the machine state and pod entries exactly;
// - every response translates to proto without crashing.
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <variant>

#include "core/constants.h"
#include "core/nic_chooser.h"
#include "core/policy.h"
#include "fuzz_check.h"
#include "grpc/translate.h"
#include "support/katalyst_fixture_node.h"

namespace {

using namespace netqos;
namespace pb = ::resourceplugin::v1alpha1;

const core::StaticPolicy& BasePolicy() {
  static const core::StaticPolicy policy = [] {
    auto p = core::StaticPolicy::Create(testing::FixtureConfig(), testing::FixtureTopology());
    FUZZ_CHECK(p.ok(), "the fixture node is valid");
    core::StaticPolicy out = std::move(p).value();
    core::ContainerRequest held;
    held.pod_uid = "held-pod";
    held.pod_namespace = "default";
    held.pod_name = "held";
    held.container_name = "app";
    held.resource_name = core::kResourceName;
    held.resource_requests[core::kResourceName] = 3000;
    held.annotations[core::kQosLevelKey] = core::kSharedCores;
    core::FirstNicChooser chooser;
    auto plan = out.PlanAllocate(held, chooser);
    FUZZ_CHECK(plan.ok() && plan->change.has_value(), "the held pod allocates");
    out.Apply(*plan->change);
    return out;
  }();
  return policy;
}

// Bitwise, so that a NaN request compares equal to itself.
bool SameDouble(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

bool SameRequests(const std::map<std::string, double>& a, const std::map<std::string, double>& b) {
  if (a.size() != b.size()) return false;
  for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib) {
    if (ia->first != ib->first || !SameDouble(ia->second, ib->second)) return false;
  }
  return true;
}

template <typename Req>
bool SameCommon(const Req& a, const Req& b) {
  return a.pod_uid == b.pod_uid && a.pod_namespace == b.pod_namespace && a.pod_name == b.pod_name &&
         a.pod_role == b.pod_role && a.pod_type == b.pod_type &&
         a.resource_name == b.resource_name && a.hint == b.hint &&
         SameRequests(a.resource_requests, b.resource_requests) && a.labels == b.labels &&
         a.annotations == b.annotations;
}

bool Same(const core::ContainerRequest& a, const core::ContainerRequest& b) {
  return SameCommon(a, b) && a.container_name == b.container_name &&
         a.container_type == b.container_type && a.container_index == b.container_index &&
         a.native_qos_class == b.native_qos_class;
}

bool Same(const core::PodRequest& a, const core::PodRequest& b) { return SameCommon(a, b); }

std::string Deterministic(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  FUZZ_CHECK(m.SerializeToCodedStream(&coded), "a parsed message serializes");
  coded.Trim();
  return out;
}

// The request as translation should give it back: no unknown fields, and a container type
// outside the four known values read as MAIN.
void Normalize(pb::ResourceRequest* req) {
  req->DiscardUnknownFields();
  switch (req->container_type()) {
    case pb::INIT:
    case pb::MAIN:
    case pb::SIDECAR:
    case pb::EPHEMERAL:
      break;
    default:
      req->set_container_type(pb::MAIN);
  }
}
void Normalize(pb::PodResourceRequest* req) { req->DiscardUnknownFields(); }

template <typename Proto>
void CheckRoundTrip(const Proto& parsed) {
  const auto core_req = grpcadapter::ToCore(parsed);
  const Proto back = grpcadapter::ToProto(core_req);
  Proto expected = parsed;
  Normalize(&expected);
  FUZZ_CHECK(Deterministic(back) == Deterministic(expected), "proto -> core -> proto is identity");
  FUZZ_CHECK(Same(grpcadapter::ToCore(back), core_req), "core -> proto -> core is identity");
}

// Every managed NIC's books are consistent.
void CheckBooks(const core::StaticPolicy& policy) {
  for (const auto& [nic, state] : policy.machine_state()) {
    for (const core::BandwidthInfo* dir : {&state.egress, &state.ingress}) {
      FUZZ_CHECK(dir->allocated <= dir->allocatable, "allocated <= allocatable");
      FUZZ_CHECK(dir->free == dir->allocatable - dir->allocated, "free = allocatable - allocated");
      FUZZ_CHECK(dir->allocatable <= dir->capacity, "allocatable <= capacity");
    }
  }
}

struct Snapshot {
  core::MachineState machine;
  core::PodEntries entries;
  bool operator==(const Snapshot&) const = default;
};
Snapshot Take(const core::StaticPolicy& p) { return {p.machine_state(), p.pod_entries()}; }

// Allocation through `plan_fn`, then the checks above; `pod_uid`/`container` locate the entry.
template <typename PlanFn, typename ToProtoFn>
void CheckAllocate(core::StaticPolicy& policy, const std::string& pod_uid,
                   const std::string& container, PlanFn plan_fn, ToProtoFn to_proto) {
  const Snapshot before = Take(policy);
  const bool pod_known = policy.pod_entries().count(pod_uid) != 0;
  core::FirstNicChooser chooser;
  auto plan = plan_fn(policy, chooser);
  FUZZ_CHECK(Take(policy) == before, "planning leaves the policy untouched");
  if (!plan.ok()) {
    FUZZ_CHECK(plan.status().code() != StatusCode::kInternal, "no internal error on bad input");
    return;
  }
  to_proto(plan->response);
  if (!plan->change) return;
  const auto* set = std::get_if<core::SetAllocation>(&*plan->change);
  FUZZ_CHECK(set != nullptr, "an allocation plans a SetAllocation");
  const core::AllocationInfo info = set->info;
  FUZZ_CHECK(info.pod_uid == pod_uid && info.container_name == container,
             "the allocation is stored under the request's pod and container");
  FUZZ_CHECK(std::isfinite(plan->response.allocated_quantity) &&
                 plan->response.allocated_quantity == info.egress,
             "the response reports the stored bandwidth");
  auto nic_before = before.machine.find(info.nic());
  FUZZ_CHECK(nic_before != before.machine.end(), "the allocation names a managed NIC");
  if (!pod_known) {
    FUZZ_CHECK(info.egress <= nic_before->second.egress.free &&
                   info.ingress <= nic_before->second.ingress.free,
               "a new allocation fits the NIC's free bandwidth");
  }
  policy.Apply(*plan->change);
  CheckBooks(policy);
  const core::AllocationInfo* found = policy.FindAllocation(pod_uid, container);
  FUZZ_CHECK(found != nullptr && *found == info, "the applied allocation is found again");
  auto resources = policy.GetTopologyAwareResources(pod_uid, container);
  FUZZ_CHECK(resources.ok() && resources->found, "the allocation is reported");
  pb::GetTopologyAwareResourcesResponse res_proto;
  grpcadapter::ToProto(*resources, &res_proto);
  auto allocatable = policy.GetTopologyAwareAllocatableResources();
  FUZZ_CHECK(allocatable.ok(), "allocatable resources are reported");
  pb::GetTopologyAwareAllocatableResourcesResponse alloc_proto;
  grpcadapter::ToProto(*allocatable, &alloc_proto);

  if (!pod_known) {
    auto remove = policy.PlanRemovePod(pod_uid);
    FUZZ_CHECK(remove.ok() && remove->change.has_value(), "the new pod can be removed");
    policy.Apply(*remove->change);
    FUZZ_CHECK(Take(policy) == before, "removing the new pod restores the state exactly");
  }
}

void FuzzContainerRequest(const uint8_t* data, size_t size) {
  pb::ResourceRequest req;
  if (!req.ParseFromArray(data, static_cast<int>(size))) return;
  CheckRoundTrip(req);
  const core::ContainerRequest c = grpcadapter::ToCore(req);
  core::StaticPolicy policy = BasePolicy();

  auto hints = policy.GetTopologyHints(c);
  if (hints.ok()) {
    pb::ResourceHintsResponse out;
    grpcadapter::ToProto(req, *hints, &out);
    FUZZ_CHECK(out.resource_hints_size() == 1, "hints carry exactly one resource entry");
  } else {
    FUZZ_CHECK(hints.status().code() != StatusCode::kInternal, "no internal error on bad input");
  }

  CheckAllocate(
      policy, c.pod_uid, c.container_name,
      [&](const core::StaticPolicy& p, core::NicChooser& ch) { return p.PlanAllocate(c, ch); },
      [&](const core::AllocationResponse& r) {
        pb::ResourceAllocationResponse out;
        grpcadapter::ToProto(req, r, &out);
      });
}

void FuzzPodRequest(const uint8_t* data, size_t size) {
  pb::PodResourceRequest req;
  if (!req.ParseFromArray(data, static_cast<int>(size))) return;
  CheckRoundTrip(req);
  const core::PodRequest p = grpcadapter::ToCore(req);
  core::StaticPolicy policy = BasePolicy();

  auto hints = policy.GetPodTopologyHints(p);
  if (hints.ok()) {
    pb::PodResourceHintsResponse out;
    grpcadapter::ToProto(req, *hints, &out);
  } else {
    FUZZ_CHECK(hints.status().code() != StatusCode::kInternal, "no internal error on bad input");
  }

  CheckAllocate(
      policy, p.pod_uid, core::kPodLevelContainerName,
      [&](const core::StaticPolicy& pol, core::NicChooser& ch) {
        return pol.PlanAllocateForPod(p, ch);
      },
      [&](const core::AllocationResponse& r) {
        pb::PodResourceAllocationResponse out;
        grpcadapter::ToProto(req, r, &out);
      });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzContainerRequest(data, size);
  FuzzPodRequest(data, size);
  return 0;
}
