// AdminService: netqos.admin.v1.Admin, the operator API netqosctl uses. Read-only views built
// from one consistent AllocationService::Snapshot().
#pragma once

#include "netqos/admin/v1/admin.grpc.pb.h"
#include "service/allocation_service.h"

namespace netqos::grpcadapter {

class AdminService final : public ::netqos::admin::v1::Admin::Service {
 public:
  explicit AdminService(service::AllocationService& service) : service_(service) {}

  grpc::Status ListAllocations(grpc::ServerContext* ctx,
                               const ::netqos::admin::v1::ListAllocationsRequest* req,
                               ::netqos::admin::v1::ListAllocationsResponse* resp) override;
  grpc::Status GetCapacity(grpc::ServerContext* ctx,
                           const ::netqos::admin::v1::GetCapacityRequest* req,
                           ::netqos::admin::v1::GetCapacityResponse* resp) override;

 private:
  service::AllocationService& service_;
};

// The translations behind the two RPCs, exposed for tests.
void FillAllocations(const service::AllocationService::View& view,
                     ::netqos::admin::v1::ListAllocationsResponse* out);
void FillCapacity(const service::AllocationService::View& view,
                  ::netqos::admin::v1::GetCapacityResponse* out);

}  // namespace netqos::grpcadapter
