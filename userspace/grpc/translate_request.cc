// Request translation (kubelet proto <-> core). See translate.h.
#include "grpc/translate.h"

namespace netqos::grpcadapter {
namespace {

core::ContainerType ContainerTypeToCore(pb::ContainerType type) {
  switch (type) {
    case pb::INIT:
      return core::ContainerType::kInit;
    case pb::SIDECAR:
      return core::ContainerType::kSidecar;
    case pb::EPHEMERAL:
      return core::ContainerType::kEphemeral;
    default:
      return core::ContainerType::kMain;
  }
}

pb::ContainerType ContainerTypeToProto(core::ContainerType type) {
  switch (type) {
    case core::ContainerType::kInit:
      return pb::INIT;
    case core::ContainerType::kSidecar:
      return pb::SIDECAR;
    case core::ContainerType::kEphemeral:
      return pb::EPHEMERAL;
    case core::ContainerType::kMain:
      break;
  }
  return pb::MAIN;
}

template <typename ProtoMap, typename StdMap>
void CopyToStd(const ProtoMap& from, StdMap* to) {
  for (const auto& [k, v] : from) (*to)[k] = v;
}

template <typename StdMap, typename ProtoMap>
void CopyToProto(const StdMap& from, ProtoMap* to) {
  for (const auto& [k, v] : from) (*to)[k] = v;
}

}  // namespace

core::TopologyHint ToCore(const pb::TopologyHint& hint) {
  core::TopologyHint out;
  out.nodes.assign(hint.nodes().begin(), hint.nodes().end());
  out.preferred = hint.preferred();
  return out;
}

void ToProto(const core::TopologyHint& hint, pb::TopologyHint* out) {
  out->mutable_nodes()->Add(hint.nodes.begin(), hint.nodes.end());
  out->set_preferred(hint.preferred);
}

core::ContainerRequest ToCore(const pb::ResourceRequest& req) {
  core::ContainerRequest out;
  out.pod_uid = req.pod_uid();
  out.pod_namespace = req.pod_namespace();
  out.pod_name = req.pod_name();
  out.container_name = req.container_name();
  out.container_type = ContainerTypeToCore(req.container_type());
  out.container_index = req.container_index();
  out.pod_role = req.pod_role();
  out.pod_type = req.pod_type();
  out.resource_name = req.resource_name();
  if (req.has_hint()) out.hint = ToCore(req.hint());
  CopyToStd(req.resource_requests(), &out.resource_requests);
  CopyToStd(req.labels(), &out.labels);
  CopyToStd(req.annotations(), &out.annotations);
  out.native_qos_class = req.native_qos_class();
  return out;
}

core::PodRequest ToCore(const pb::PodResourceRequest& req) {
  core::PodRequest out;
  out.pod_uid = req.pod_uid();
  out.pod_namespace = req.pod_namespace();
  out.pod_name = req.pod_name();
  out.pod_role = req.pod_role();
  out.pod_type = req.pod_type();
  out.resource_name = req.resource_name();
  if (req.has_hint()) out.hint = ToCore(req.hint());
  CopyToStd(req.resource_requests(), &out.resource_requests);
  CopyToStd(req.labels(), &out.labels);
  CopyToStd(req.annotations(), &out.annotations);
  return out;
}

pb::ResourceRequest ToProto(const core::ContainerRequest& req) {
  pb::ResourceRequest out;
  out.set_pod_uid(req.pod_uid);
  out.set_pod_namespace(req.pod_namespace);
  out.set_pod_name(req.pod_name);
  out.set_container_name(req.container_name);
  out.set_container_type(ContainerTypeToProto(req.container_type));
  out.set_container_index(req.container_index);
  out.set_pod_role(req.pod_role);
  out.set_pod_type(req.pod_type);
  out.set_resource_name(req.resource_name);
  if (req.hint) ToProto(*req.hint, out.mutable_hint());
  CopyToProto(req.resource_requests, out.mutable_resource_requests());
  CopyToProto(req.labels, out.mutable_labels());
  CopyToProto(req.annotations, out.mutable_annotations());
  out.set_native_qos_class(req.native_qos_class);
  return out;
}

pb::PodResourceRequest ToProto(const core::PodRequest& req) {
  pb::PodResourceRequest out;
  out.set_pod_uid(req.pod_uid);
  out.set_pod_namespace(req.pod_namespace);
  out.set_pod_name(req.pod_name);
  out.set_pod_role(req.pod_role);
  out.set_pod_type(req.pod_type);
  out.set_resource_name(req.resource_name);
  if (req.hint) ToProto(*req.hint, out.mutable_hint());
  CopyToProto(req.resource_requests, out.mutable_resource_requests());
  CopyToProto(req.labels, out.mutable_labels());
  CopyToProto(req.annotations, out.mutable_annotations());
  return out;
}

}  // namespace netqos::grpcadapter
