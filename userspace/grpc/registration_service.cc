#include "grpc/registration_service.h"

#include <spdlog/spdlog.h>

#include "core/constants.h"
#include "grpc/rpc_guard.h"

namespace netqos::grpcadapter {

inline constexpr char kPluginType[] = "ResourcePlugin";
inline constexpr char kApiVersion[] = "v1alpha1";

void FillPluginInfo(::pluginregistration::PluginInfo* info) {
  info->set_type(kPluginType);
  info->set_name(core::kResourceName);
  // Endpoint stays empty: the kubelet dials the socket it found in the watched directory.
  info->add_supported_versions(kApiVersion);
}

grpc::Status RegistrationService::GetInfo(grpc::ServerContext* ctx,
                                          const ::pluginregistration::InfoRequest*,
                                          ::pluginregistration::PluginInfo* resp) {
  return RunGuarded("GetInfo", [&] {
    if (ctx == nullptr || ctx->client_metadata().count(kSelfCheckMetadataKey) == 0) {
      std::lock_guard lk(mu_);
      ++state_.get_info_calls;
      state_.last_get_info = std::chrono::steady_clock::now();
    }
    spdlog::debug("rpc called rpc=GetInfo plugin={} type={}", core::kResourceName, kPluginType);
    FillPluginInfo(resp);
    return grpc::Status::OK;
  });
}

grpc::Status RegistrationService::NotifyRegistrationStatus(
    grpc::ServerContext*, const ::pluginregistration::RegistrationStatus* req,
    ::pluginregistration::RegistrationStatusResponse*) {
  return RunGuarded("NotifyRegistrationStatus", [&] {
    {
      std::lock_guard lk(mu_);
      state_.notified = true;
      state_.registered = req->plugin_registered();
      state_.error = req->error();
      state_.last_notify = std::chrono::steady_clock::now();
    }
    if (req->plugin_registered()) {
      spdlog::info("registered with kubelet plugin={} type={}", core::kResourceName, kPluginType);
    } else {
      spdlog::warn("kubelet rejected registration plugin={} type={} error=\"{}\"",
                   core::kResourceName, kPluginType, req->error());
    }
    return grpc::Status::OK;
  });
}

RegistrationService::State RegistrationService::state() const {
  std::lock_guard lk(mu_);
  return state_;
}

}  // namespace netqos::grpcadapter
