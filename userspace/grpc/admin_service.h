// AdminService: netqos.admin.v1.Admin, the operator API netqosctl uses. Read-only views built
// from one consistent AllocationService::Snapshot() and, for enforcement, one
// EnforcementView::Report().
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "common/format_stamp.h"
#include "grpc/registration_health.h"
#include "netqos/admin/v1/admin.grpc.pb.h"
#include "service/allocation_service.h"
#include "service/enforcement_view.h"
#include "service/nri_report.h"

namespace netqos::grpcadapter {

class AdminService final : public ::netqos::admin::v1::Admin::Service {
 public:
  struct Options {
    // How the daemon learns its NICs, reported by GetTopology and GetStatus ("kernel", "file X").
    std::string topology_source;
    // Enforcement state for GetStatus and ListClasses; null: reported as mode "none".
    const service::EnforcementView* enforcement = nullptr;
    // --qrm-socket-dirs: GetStatus reports <dir>/qrm_network_plugin_static.sock for each.
    std::vector<std::string> socket_dirs;
    // The kubelet's registration of the socket, for GetStatus; null: not reported.
    std::function<RegistrationHealth()> kubelet_registration;
    // The tenant policy in force, for GetTenantPolicy and GetStatus; null: the built-in default.
    std::function<service::TenantPolicyReport()> tenant_policy = nullptr;
    // The format stamps of the pin and state directories as they are now, for GetStatus; null:
    // not reported (own_format still is).
    std::function<std::vector<FormatStampReading>()> format_stamps = nullptr;
    // The NRI session, for GetStatus; null: netqosd is no NRI plugin (not reported).
    std::function<service::NriReport()> nri = nullptr;
  };

  explicit AdminService(service::AllocationService& service) : AdminService(service, Options{}) {}
  AdminService(service::AllocationService& service, std::string topology_source)
      : AdminService(service, Options{std::move(topology_source), nullptr, {}, {}}) {}
  // Uptime in GetStatus counts from here (the daemon builds its services just before serving).
  AdminService(service::AllocationService& service, Options options)
      : service_(service),
        options_(std::move(options)),
        started_(std::chrono::steady_clock::now()) {}

  grpc::Status ListAllocations(grpc::ServerContext* ctx,
                               const ::netqos::admin::v1::ListAllocationsRequest* req,
                               ::netqos::admin::v1::ListAllocationsResponse* resp) override;
  grpc::Status GetCapacity(grpc::ServerContext* ctx,
                           const ::netqos::admin::v1::GetCapacityRequest* req,
                           ::netqos::admin::v1::GetCapacityResponse* resp) override;
  grpc::Status GetTopology(grpc::ServerContext* ctx,
                           const ::netqos::admin::v1::GetTopologyRequest* req,
                           ::netqos::admin::v1::GetTopologyResponse* resp) override;
  grpc::Status GetStatus(grpc::ServerContext* ctx, const ::netqos::admin::v1::GetStatusRequest* req,
                         ::netqos::admin::v1::GetStatusResponse* resp) override;
  grpc::Status ListClasses(grpc::ServerContext* ctx,
                           const ::netqos::admin::v1::ListClassesRequest* req,
                           ::netqos::admin::v1::ListClassesResponse* resp) override;
  grpc::Status GetTenantPolicy(grpc::ServerContext* ctx,
                               const ::netqos::admin::v1::GetTenantPolicyRequest* req,
                               ::netqos::admin::v1::GetTenantPolicyResponse* resp) override;

 private:
  service::AllocationService& service_;
  Options options_;
  std::chrono::steady_clock::time_point started_;
};

// The translations behind the RPCs, exposed for tests.
void FillAllocations(const service::AllocationService::View& view,
                     ::netqos::admin::v1::ListAllocationsResponse* out);
void FillCapacity(const service::AllocationService::View& view,
                  ::netqos::admin::v1::GetCapacityResponse* out);
void FillTopology(const service::AllocationService::View& view,
                  ::netqos::admin::v1::GetTopologyResponse* out);
// Allocation counts, NIC health and the enforcement part of GetStatus (the caller adds version,
// pid, uptime, sockets). `enforcement` null: mode "none".
void FillStatus(const service::AllocationService::View& view,
                const service::EnforcementReport* enforcement,
                ::netqos::admin::v1::GetStatusResponse* out);
void FillClasses(const service::EnforcementReport& report,
                 ::netqos::admin::v1::ListClassesResponse* out);

}  // namespace netqos::grpcadapter
