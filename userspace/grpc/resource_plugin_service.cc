#include "grpc/resource_plugin_service.h"

#include <spdlog/spdlog.h>

#include <string_view>
#include <utility>

#include "common/log_value.h"
#include "core/constants.h"
#include "grpc/grpc_status.h"
#include "grpc/rpc_guard.h"
#include "grpc/translate.h"

namespace netqos::grpcadapter {
namespace {

// "ns/name" as the log lines print a pod.
// Kubelet input: LogValue keeps a hostile name from forging fields or lines.
std::string PodRef(const std::string& ns, const std::string& name) {
  return LogValue(ns + "/" + name);
}

grpc::Status Failed(const char* rpc, const std::string& pod, const std::string& uid,
                    const std::string& container, const Status& status) {
  spdlog::warn("rpc failed rpc={} pod={} uid={} container={} code={} error={}", rpc, pod,
               LogValue(uid), LogValue(container), StatusCodeName(status.code()),
               LogValue(status.message()));
  return ToGrpcStatus(status);
}

double RequestedMbps(const google::protobuf::Map<std::string, double>& requests) {
  auto it = requests.find(core::kResourceName);
  return it == requests.end() ? 0 : it->second;
}

// An allocation annotation's value for the decision log line, "-" when absent (a sidecar).
std::string Annotation(const core::AllocationResponse& alloc, const std::string& key) {
  if (!alloc.allocation_annotations) return "-";
  auto it = alloc.allocation_annotations->find(key);
  return it == alloc.allocation_annotations->end() ? "-" : it->second;
}

std::string HintsSummary(const core::HintsResponse& resp) {
  if (!resp.hints) return "nil";
  return std::to_string(resp.hints->size());
}

// Katalyst HEAD's reallocation tag of a failed allocation: whether the pod carries the
// resource-reallocation annotation and says "true". Reduced to two values because the annotation
// is the tenant's: its raw text must not mint metric series.
std::string_view ReallocationTag(const google::protobuf::Map<std::string, std::string>& ann) {
  auto it = ann.find(core::kResourceReallocationKey);
  if (it == ann.end()) return {};
  return it->second == "true" ? "true" : "false";
}

}  // namespace

ResourcePluginService::ResourcePluginService(service::AllocationService& service)
    : ResourcePluginService(service, Options{}) {}

ResourcePluginService::ResourcePluginService(service::AllocationService& service, Options options)
    : service_(service), options_(std::move(options)) {}

grpc::Status ResourcePluginService::GetTopologyHints(Ctx*, const pb::ResourceRequest* req,
                                                     pb::ResourceHintsResponse* resp) {
  return RunObserved("GetTopologyHints", options_.rpc_observer, [&] {
    const auto pod = PodRef(req->pod_namespace(), req->pod_name());
    spdlog::debug("rpc called rpc=GetTopologyHints pod={} uid={} container={} type={} mbps={}", pod,
                  LogValue(req->pod_uid()), LogValue(req->container_name()),
                  pb::ContainerType_Name(req->container_type()),
                  RequestedMbps(req->resource_requests()));
    auto hints = service_.GetTopologyHints(ToCore(*req));
    if (!hints.ok()) {
      return Failed("GetTopologyHints", pod, req->pod_uid(), req->container_name(), hints.status());
    }
    spdlog::debug("hints computed pod={} uid={} container={} hints={}", pod,
                  LogValue(req->pod_uid()), LogValue(req->container_name()), HintsSummary(*hints));
    ToProto(*req, *hints, resp);
    return grpc::Status::OK;
  });
}

grpc::Status ResourcePluginService::GetPodTopologyHints(Ctx*, const pb::PodResourceRequest* req,
                                                        pb::PodResourceHintsResponse* resp) {
  return RunObserved("GetPodTopologyHints", options_.rpc_observer, [&] {
    const auto pod = PodRef(req->pod_namespace(), req->pod_name());
    spdlog::debug("rpc called rpc=GetPodTopologyHints pod={} uid={} mbps={}", pod,
                  LogValue(req->pod_uid()), RequestedMbps(req->resource_requests()));
    auto hints = service_.GetPodTopologyHints(ToCore(*req));
    if (!hints.ok()) return Failed("GetPodTopologyHints", pod, req->pod_uid(), "", hints.status());
    spdlog::debug("hints computed pod={} uid={} hints={}", pod, LogValue(req->pod_uid()),
                  HintsSummary(*hints));
    ToProto(*req, *hints, resp);
    return grpc::Status::OK;
  });
}

grpc::Status ResourcePluginService::Allocate(Ctx*, const pb::ResourceRequest* req,
                                             pb::ResourceAllocationResponse* resp) {
  return RunObserved(
      "Allocate", options_.rpc_observer,
      [&] {
        const auto pod = PodRef(req->pod_namespace(), req->pod_name());
        spdlog::debug("rpc called rpc=Allocate pod={} uid={} container={} type={} mbps={}", pod,
                      LogValue(req->pod_uid()), LogValue(req->container_name()),
                      pb::ContainerType_Name(req->container_type()),
                      RequestedMbps(req->resource_requests()));
        auto alloc = service_.Allocate(ToCore(*req));
        if (!alloc.ok()) {
          return Failed("Allocate", pod, req->pod_uid(), req->container_name(), alloc.status());
        }
        spdlog::info(
            "allocated pod={} uid={} container={} type={} nic={} mbps={} class_id={} result=\"{}\"",
            pod, LogValue(req->pod_uid()), LogValue(req->container_name()),
            pb::ContainerType_Name(req->container_type()),
            Annotation(*alloc, options_.nic_name_annotation_key), alloc->allocated_quantity,
            Annotation(*alloc, options_.net_class_id_annotation_key),
            alloc->has_allocation ? alloc->allocation_result : "<none>");
        ToProto(*req, *alloc, resp);
        return grpc::Status::OK;
      },
      ReallocationTag(req->annotations()));
}

grpc::Status ResourcePluginService::AllocateForPod(Ctx*, const pb::PodResourceRequest* req,
                                                   pb::PodResourceAllocationResponse* resp) {
  return RunObserved(
      "AllocateForPod", options_.rpc_observer,
      [&] {
        const auto pod = PodRef(req->pod_namespace(), req->pod_name());
        spdlog::debug("rpc called rpc=AllocateForPod pod={} uid={} mbps={}", pod,
                      LogValue(req->pod_uid()), RequestedMbps(req->resource_requests()));
        auto alloc = service_.AllocateForPod(ToCore(*req));
        if (!alloc.ok()) return Failed("AllocateForPod", pod, req->pod_uid(), "", alloc.status());
        spdlog::info(
            "allocated pod={} uid={} container=<pod> nic={} mbps={} class_id={} result=\"{}\"", pod,
            LogValue(req->pod_uid()), Annotation(*alloc, options_.nic_name_annotation_key),
            alloc->allocated_quantity, Annotation(*alloc, options_.net_class_id_annotation_key),
            alloc->has_allocation ? alloc->allocation_result : "<none>");
        ToProto(*req, *alloc, resp);
        return grpc::Status::OK;
      },
      ReallocationTag(req->annotations()));
}

grpc::Status ResourcePluginService::RemovePod(Ctx*, const pb::RemovePodRequest* req,
                                              pb::RemovePodResponse*) {
  return RunObserved("RemovePod", options_.rpc_observer, [&] {
    spdlog::debug("rpc called rpc=RemovePod uid={}", LogValue(req->pod_uid()));
    Status status = service_.RemovePod(req->pod_uid());
    if (!status.ok()) return Failed("RemovePod", "-", req->pod_uid(), "", status);
    spdlog::info("pod removed uid={}", LogValue(req->pod_uid()));
    return grpc::Status::OK;
  });
}

grpc::Status ResourcePluginService::GetResourcesAllocation(Ctx*,
                                                           const pb::GetResourcesAllocationRequest*,
                                                           pb::GetResourcesAllocationResponse*) {
  // Empty by design: need_reconcile is false, so the kubelet never relies on this view.
  return RunObserved("GetResourcesAllocation", options_.rpc_observer, [] {
    spdlog::debug("rpc called rpc=GetResourcesAllocation");
    return grpc::Status::OK;
  });
}

grpc::Status ResourcePluginService::GetTopologyAwareResources(
    Ctx*, const pb::GetTopologyAwareResourcesRequest* req,
    pb::GetTopologyAwareResourcesResponse* resp) {
  return RunObserved("GetTopologyAwareResources", options_.rpc_observer, [&] {
    spdlog::debug("rpc called rpc=GetTopologyAwareResources uid={} container={}",
                  LogValue(req->pod_uid()), LogValue(req->container_name()));
    auto res = service_.GetTopologyAwareResources(req->pod_uid(), req->container_name());
    if (!res.ok()) {
      return Failed("GetTopologyAwareResources", "-", req->pod_uid(), req->container_name(),
                    res.status());
    }
    ToProto(*res, resp);
    return grpc::Status::OK;
  });
}

grpc::Status ResourcePluginService::GetTopologyAwareAllocatableResources(
    Ctx*, const pb::GetTopologyAwareAllocatableResourcesRequest*,
    pb::GetTopologyAwareAllocatableResourcesResponse* resp) {
  return RunObserved("GetTopologyAwareAllocatableResources", options_.rpc_observer, [&] {
    spdlog::debug("rpc called rpc=GetTopologyAwareAllocatableResources");
    auto res = service_.GetTopologyAwareAllocatableResources();
    if (!res.ok())
      return Failed("GetTopologyAwareAllocatableResources", "-", "-", "", res.status());
    ToProto(*res, resp);
    return grpc::Status::OK;
  });
}

grpc::Status ResourcePluginService::GetResourcePluginOptions(Ctx*, const pb::Empty*,
                                                             pb::ResourcePluginOptions* resp) {
  return RunObserved("GetResourcePluginOptions", options_.rpc_observer, [&] {
    spdlog::debug("rpc called rpc=GetResourcePluginOptions");
    ToProto(service_.Options(), resp);
    return grpc::Status::OK;
  });
}

grpc::Status ResourcePluginService::PreStartContainer(Ctx*, const pb::PreStartContainerRequest* req,
                                                      pb::PreStartContainerResponse*) {
  return RunObserved("PreStartContainer", options_.rpc_observer, [&] {
    spdlog::debug("rpc called rpc=PreStartContainer pod={} uid={} container={}",
                  PodRef(req->pod_namespace(), req->pod_name()), LogValue(req->pod_uid()),
                  LogValue(req->container_name()));
    return grpc::Status::OK;
  });
}

}  // namespace netqos::grpcadapter
