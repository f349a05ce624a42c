// Proto <-> core translation for the resourceplugin.v1alpha1 API. Pure functions: no policy, no
// logging. Echoed request fields are copied from the proto request so they round-trip exactly.
#pragma once

#include "core/types.h"
#include "resourceplugin/v1alpha1/api.pb.h"

namespace netqos::grpcadapter {

namespace pb = ::resourceplugin::v1alpha1;

// Requests, kubelet -> core. An unset `hint` becomes nullopt. A container type outside the four
// known values is treated as MAIN, as the upstream plugin does (it only tests for INIT/SIDECAR);
// the response still echoes the raw value from the proto request.
core::ContainerRequest ToCore(const pb::ResourceRequest& req);
core::PodRequest ToCore(const pb::PodResourceRequest& req);
core::TopologyHint ToCore(const pb::TopologyHint& hint);

// Requests, core -> proto (used by clients and tests).
pb::ResourceRequest ToProto(const core::ContainerRequest& req);
pb::PodResourceRequest ToProto(const core::PodRequest& req);
void ToProto(const core::TopologyHint& hint, pb::TopologyHint* out);

// Hints. `resource_hints` holds exactly one entry keyed by the response's resource name:
// hints == nullopt -> the entry's value is left unset (nil: "no topology preference");
// an empty vector -> the value is present with no hints ("no NIC can satisfy").
void ToProto(const pb::ResourceRequest& req, const core::HintsResponse& resp,
             pb::ResourceHintsResponse* out);
void ToProto(const pb::PodResourceRequest& req, const core::HintsResponse& resp,
             pb::PodResourceHintsResponse* out);

// Allocations. has_allocation == false leaves allocation_result unset (INIT).
void ToProto(const pb::ResourceRequest& req, const core::AllocationResponse& resp,
             pb::ResourceAllocationResponse* out);
void ToProto(const pb::PodResourceRequest& req, const core::AllocationResponse& resp,
             pb::PodResourceAllocationResponse* out);

// Topology-aware views. found == false gives a completely empty response.
void ToProto(const core::TopologyAwareResources& res, pb::GetTopologyAwareResourcesResponse* out);
void ToProto(const core::AllocatableResources& res,
             pb::GetTopologyAwareAllocatableResourcesResponse* out);
void ToProto(const core::TopologyAwareQuantity& q, pb::TopologyAwareQuantity* out);

void ToProto(const core::PluginOptions& options, pb::ResourcePluginOptions* out);

}  // namespace netqos::grpcadapter
