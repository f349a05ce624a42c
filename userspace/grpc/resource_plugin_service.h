// ResourcePluginService: the kubelet-facing resourceplugin.v1alpha1.ResourcePlugin service.
// Each handler translates the request, calls the AllocationService and translates the result
// back; no policy lives here. Handlers never throw: any exception becomes INTERNAL.
#pragma once

#include <string>

#include "core/constants.h"
#include "resourceplugin/v1alpha1/api.grpc.pb.h"
#include "service/allocation_service.h"
#include "service/rpc_observer.h"

namespace netqos::grpcadapter {

class ResourcePluginService final : public ::resourceplugin::v1alpha1::ResourcePlugin::Service {
 public:
  struct Options {
    // Allocation annotations that name the chosen NIC and net class; only used for the
    // decision log line.
    std::string nic_name_annotation_key = core::kDefaultNicNameAnnotationKey;
    std::string net_class_id_annotation_key = core::kDefaultNetClassIdAnnotationKey;
    // Told about every RPC (method, code, duration); not owned, may be null.
    service::RpcObserver* rpc_observer = nullptr;
  };

  explicit ResourcePluginService(service::AllocationService& service);
  ResourcePluginService(service::AllocationService& service, Options options);

  using Ctx = grpc::ServerContext;

  grpc::Status GetTopologyHints(Ctx* ctx, const ::resourceplugin::v1alpha1::ResourceRequest* req,
                                ::resourceplugin::v1alpha1::ResourceHintsResponse* resp) override;
  grpc::Status GetPodTopologyHints(
      Ctx* ctx, const ::resourceplugin::v1alpha1::PodResourceRequest* req,
      ::resourceplugin::v1alpha1::PodResourceHintsResponse* resp) override;
  grpc::Status RemovePod(Ctx* ctx, const ::resourceplugin::v1alpha1::RemovePodRequest* req,
                         ::resourceplugin::v1alpha1::RemovePodResponse* resp) override;
  grpc::Status GetResourcesAllocation(
      Ctx* ctx, const ::resourceplugin::v1alpha1::GetResourcesAllocationRequest* req,
      ::resourceplugin::v1alpha1::GetResourcesAllocationResponse* resp) override;
  grpc::Status GetTopologyAwareResources(
      Ctx* ctx, const ::resourceplugin::v1alpha1::GetTopologyAwareResourcesRequest* req,
      ::resourceplugin::v1alpha1::GetTopologyAwareResourcesResponse* resp) override;
  grpc::Status GetTopologyAwareAllocatableResources(
      Ctx* ctx, const ::resourceplugin::v1alpha1::GetTopologyAwareAllocatableResourcesRequest* req,
      ::resourceplugin::v1alpha1::GetTopologyAwareAllocatableResourcesResponse* resp) override;
  grpc::Status GetResourcePluginOptions(
      Ctx* ctx, const ::resourceplugin::v1alpha1::Empty* req,
      ::resourceplugin::v1alpha1::ResourcePluginOptions* resp) override;
  grpc::Status Allocate(Ctx* ctx, const ::resourceplugin::v1alpha1::ResourceRequest* req,
                        ::resourceplugin::v1alpha1::ResourceAllocationResponse* resp) override;
  grpc::Status AllocateForPod(
      Ctx* ctx, const ::resourceplugin::v1alpha1::PodResourceRequest* req,
      ::resourceplugin::v1alpha1::PodResourceAllocationResponse* resp) override;
  grpc::Status PreStartContainer(
      Ctx* ctx, const ::resourceplugin::v1alpha1::PreStartContainerRequest* req,
      ::resourceplugin::v1alpha1::PreStartContainerResponse* resp) override;

 private:
  service::AllocationService& service_;
  Options options_;
};

}  // namespace netqos::grpcadapter
