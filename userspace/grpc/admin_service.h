// AdminService: netqos.admin.v1.Admin, the operator API netqosctl uses. Read-only views built
// from one consistent AllocationService::Snapshot().
#pragma once

#include <string>

#include "netqos/admin/v1/admin.grpc.pb.h"
#include "service/allocation_service.h"

namespace netqos::grpcadapter {

class AdminService final : public ::netqos::admin::v1::Admin::Service {
 public:
  explicit AdminService(service::AllocationService& service) : service_(service) {}
  // topology_source: how the daemon learns its NICs, reported by GetTopology ("kernel", "file X").
  AdminService(service::AllocationService& service, std::string topology_source)
      : service_(service), topology_source_(std::move(topology_source)) {}

  grpc::Status ListAllocations(grpc::ServerContext* ctx,
                               const ::netqos::admin::v1::ListAllocationsRequest* req,
                               ::netqos::admin::v1::ListAllocationsResponse* resp) override;
  grpc::Status GetCapacity(grpc::ServerContext* ctx,
                           const ::netqos::admin::v1::GetCapacityRequest* req,
                           ::netqos::admin::v1::GetCapacityResponse* resp) override;
  grpc::Status GetTopology(grpc::ServerContext* ctx,
                           const ::netqos::admin::v1::GetTopologyRequest* req,
                           ::netqos::admin::v1::GetTopologyResponse* resp) override;

 private:
  service::AllocationService& service_;
  std::string topology_source_;
};

// The translations behind the two RPCs, exposed for tests.
void FillAllocations(const service::AllocationService::View& view,
                     ::netqos::admin::v1::ListAllocationsResponse* out);
void FillCapacity(const service::AllocationService::View& view,
                  ::netqos::admin::v1::GetCapacityResponse* out);
void FillTopology(const service::AllocationService::View& view,
                  ::netqos::admin::v1::GetTopologyResponse* out);

}  // namespace netqos::grpcadapter
