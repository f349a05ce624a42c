// Response translation (core -> kubelet proto). See translate.h.
#include "core/constants.h"
#include "grpc/translate.h"

namespace netqos::grpcadapter {
namespace {

template <typename StdMap, typename ProtoMap>
void CopyMap(const StdMap& from, ProtoMap* to) {
  for (const auto& [k, v] : from) (*to)[k] = v;
}

void FillHintsEntry(const core::HintsResponse& resp, pb::ResourceHintsEntry* entry) {
  entry->set_key(resp.resource_name);
  // Leaving `value` unset is the whole point of the repeated-entry schema: it is how the kubelet
  // receives a nil ListOfTopologyHints. mutable_value() on an empty vector still creates the
  // (empty) message, which encodes as 0x12 0x00.
  if (!resp.hints) return;
  auto* list = entry->mutable_value();
  for (const auto& hint : *resp.hints) ToProto(hint, list->add_hints());
}

void FillAllocation(const core::AllocationResponse& resp, pb::ResourceAllocation* out) {
  auto& info = (*out->mutable_resource_allocation())[core::kResourceName];
  info.set_is_node_resource(true);
  info.set_is_scalar_resource(true);
  info.set_allocated_quantity(resp.allocated_quantity);
  info.set_allocation_result(resp.allocation_result);
  if (resp.allocation_annotations)
    CopyMap(*resp.allocation_annotations, info.mutable_annotations());
  // Upstream always sends exactly one hint element, which may be a nil pointer (SIDECAR, or a
  // request without a hint); gogo would panic serialising it. We send an empty TopologyHint
  // instead (no nodes, not preferred), the closest well-formed encoding: `0x0a 0x00`.
  auto* hint = info.mutable_resource_hints()->add_hints();
  if (resp.hint) ToProto(*resp.hint, hint);
}

// The pod identity every response echoes from its request (pod- and container-level messages
// share these field names, so one template serves all four response types).
template <typename Req, typename Resp>
void EchoPod(const Req& req, Resp* out) {
  out->set_pod_uid(req.pod_uid());
  out->set_pod_namespace(req.pod_namespace());
  out->set_pod_name(req.pod_name());
  out->set_pod_role(req.pod_role());
  out->set_pod_type(req.pod_type());
}

template <typename Resp>
void EchoContainer(const pb::ResourceRequest& req, Resp* out) {
  EchoPod(req, out);
  out->set_container_name(req.container_name());
  out->set_container_type(req.container_type());
  out->set_container_index(req.container_index());
}

// Filtered labels and annotations, echoed in every hints and allocation response.
template <typename CoreResp, typename Resp>
void CopyFilteredMaps(const CoreResp& resp, Resp* out) {
  CopyMap(resp.labels, out->mutable_labels());
  CopyMap(resp.annotations, out->mutable_annotations());
}

}  // namespace

void ToProto(const pb::ResourceRequest& req, const core::HintsResponse& resp,
             pb::ResourceHintsResponse* out) {
  EchoContainer(req, out);
  out->set_resource_name(resp.resource_name);
  FillHintsEntry(resp, out->add_resource_hints());
  CopyFilteredMaps(resp, out);
  out->set_native_qos_class(req.native_qos_class());
}

void ToProto(const pb::PodResourceRequest& req, const core::HintsResponse& resp,
             pb::PodResourceHintsResponse* out) {
  EchoPod(req, out);
  out->set_resource_name(resp.resource_name);
  FillHintsEntry(resp, out->add_resource_hints());
  CopyFilteredMaps(resp, out);
}

void ToProto(const pb::ResourceRequest& req, const core::AllocationResponse& resp,
             pb::ResourceAllocationResponse* out) {
  EchoContainer(req, out);
  out->set_resource_name(resp.resource_name);
  if (resp.has_allocation) FillAllocation(resp, out->mutable_allocation_result());
  CopyFilteredMaps(resp, out);
  // native_qos_class is deliberately not echoed (upstream packAllocationResponse leaves it unset).
}

void ToProto(const pb::PodResourceRequest& req, const core::AllocationResponse& resp,
             pb::PodResourceAllocationResponse* out) {
  EchoPod(req, out);
  out->set_resource_name(resp.resource_name);
  if (resp.has_allocation) FillAllocation(resp, out->mutable_allocation_result());
  CopyFilteredMaps(resp, out);
}

void ToProto(const core::TopologyAwareQuantity& q, pb::TopologyAwareQuantity* out) {
  out->set_resource_value(q.resource_value);
  out->set_node(q.node);
  out->set_name(q.name);
  out->set_type(q.type);
  out->set_topology_level(q.topology_level == core::kTopologyLevelSocket ? pb::SOCKET : pb::NUMA);
  CopyMap(q.annotations, out->mutable_annotations());
}

void ToProto(const core::TopologyAwareResources& res, pb::GetTopologyAwareResourcesResponse* out) {
  if (!res.found) return;
  out->set_pod_uid(res.pod_uid);
  out->set_pod_name(res.pod_name);
  out->set_pod_namespace(res.pod_namespace);
  auto* container = out->mutable_container_topology_aware_resources();
  container->set_container_name(res.container_name);
  auto& resource = (*container->mutable_allocated_resources())[core::kResourceName];
  resource.set_is_node_resource(true);
  resource.set_is_scalar_resource(true);
  resource.set_aggregated_quantity(res.aggregated_quantity);
  resource.set_original_aggregated_quantity(res.aggregated_quantity);
  for (const auto& q : res.quantities) {
    ToProto(q, resource.add_topology_aware_quantity_list());
    ToProto(q, resource.add_original_topology_aware_quantity_list());
  }
}

void ToProto(const core::AllocatableResources& res,
             pb::GetTopologyAwareAllocatableResourcesResponse* out) {
  auto& resource = (*out->mutable_allocatable_resources())[core::kResourceName];
  resource.set_is_node_resource(true);
  resource.set_is_scalar_resource(true);
  resource.set_aggregated_allocatable_quantity(res.aggregated_allocatable);
  resource.set_aggregated_capacity_quantity(res.aggregated_capacity);
  for (const auto& q : res.allocatable) {
    ToProto(q, resource.add_topology_aware_allocatable_quantity_list());
  }
  for (const auto& q : res.capacity)
    ToProto(q, resource.add_topology_aware_capacity_quantity_list());
}

void ToProto(const core::PluginOptions& options, pb::ResourcePluginOptions* out) {
  out->set_pre_start_required(options.pre_start_required);
  out->set_with_topology_alignment(options.with_topology_alignment);
  out->set_need_reconcile(options.need_reconcile);
}

}  // namespace netqos::grpcadapter
