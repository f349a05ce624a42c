// A real AllocationService (core policy + in-memory state store) served by PluginServer on a
// unix socket in a temp dir, with the three services the daemon registers.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "core/nic_chooser.h"
#include "core/policy.h"
#include "core/state_store.h"
#include "grpc/admin_service.h"
#include "grpc/plugin_server.h"
#include "grpc/registration_service.h"
#include "grpc/resource_plugin_service.h"
#include "service/allocation_service.h"
#include "support/katalyst_fixture_node.h"
#include "support/temp_dir.h"

namespace netqos::testing {

// Keeps everything in memory; durability is the checkpoint adapter's business, not ours.
class MemoryStateStore final : public core::StateStore {
 public:
  Result<core::LoadedState> Load() override { return core::LoadedState{}; }
  Status Append(const core::StateChange&) override { return Status::Ok(); }
  bool SnapshotDue() const override { return false; }
  Result<uint64_t> BeginSnapshot() override { return uint64_t{seq_++}; }
  Status FinishSnapshot(uint64_t, const core::Snapshot&) override { return Status::Ok(); }

 private:
  uint64_t seq_ = 1;
};

class ServedStack {
 public:
  // `enforcement` (not owned, may be null) backs the admin GetStatus and ListClasses RPCs;
  // `tenant_policy` (may be null) GetTenantPolicy.
  explicit ServedStack(const service::EnforcementView* enforcement = nullptr,
                       std::function<service::TenantPolicyReport()> tenant_policy = nullptr) {
    core::PolicyConfig config;
    config.reserved_bandwidth = 4000;
    auto policy = core::StaticPolicy::Create(config, FixtureTopology());
    if (!policy.ok()) throw std::runtime_error("policy: " + policy.status().message());
    auto svc = service::AllocationService::Create(std::move(policy).value(),
                                                  std::make_unique<MemoryStateStore>(),
                                                  std::make_unique<core::FirstNicChooser>());
    if (!svc.ok()) throw std::runtime_error("service: " + svc.status().message());
    service_ = std::move(svc).value();
    resource_plugin_ = std::make_unique<grpcadapter::ResourcePluginService>(*service_);
    admin_ = std::make_unique<grpcadapter::AdminService>(
        *service_, grpcadapter::AdminService::Options{
                       "fixture", enforcement, {dir_.path()}, {}, std::move(tenant_policy)});
    auto server = grpcadapter::PluginServer::Create(
        {dir_.path()}, {resource_plugin_.get(), &registration_, admin_.get()});
    if (!server.ok()) throw std::runtime_error("server: " + server.status().message());
    server_ = std::move(server).value();
  }
  ~ServedStack() { server_->Stop(); }

  const std::string& dir() const { return dir_.path(); }
  std::string socket() const { return server_->SocketPaths().at(0); }
  grpcadapter::RegistrationService& registration() { return registration_; }
  service::AllocationService& service() { return *service_; }

 private:
  TempDir dir_;
  std::unique_ptr<service::AllocationService> service_;
  std::unique_ptr<grpcadapter::ResourcePluginService> resource_plugin_;
  grpcadapter::RegistrationService registration_;
  std::unique_ptr<grpcadapter::AdminService> admin_;
  std::unique_ptr<grpcadapter::PluginServer> server_;
};

}  // namespace netqos::testing
