// RegistrationService: the kubelet plugin watcher's pluginregistration.Registration service,
// served on the plugin socket. GetInfo identifies us as a ResourcePlugin for the net_bandwidth
// resource; NotifyRegistrationStatus tells us whether the kubelet accepted us.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "pluginregistration/v1/api.grpc.pb.h"

namespace netqos::grpcadapter {

// Client metadata that marks the daemon's own GetInfo (the socket self-check after binding), so
// that only the kubelet's calls count as the kubelet's contact.
inline constexpr char kSelfCheckMetadataKey[] = "x-netqos-self-check";

class RegistrationService final : public ::pluginregistration::Registration::Service {
 public:
  // What the kubelet last told us (for status reporting).
  struct State {
    bool notified = false;        // NotifyRegistrationStatus was received at least once
    bool registered = false;      // its plugin_registered
    std::string error;            // its error, "" when registered
    uint64_t get_info_calls = 0;  // the kubelet's (self-checks excluded)
    std::optional<std::chrono::steady_clock::time_point> last_get_info;
    std::optional<std::chrono::steady_clock::time_point> last_notify;
  };

  grpc::Status GetInfo(grpc::ServerContext* ctx, const ::pluginregistration::InfoRequest* req,
                       ::pluginregistration::PluginInfo* resp) override;
  grpc::Status NotifyRegistrationStatus(
      grpc::ServerContext* ctx, const ::pluginregistration::RegistrationStatus* req,
      ::pluginregistration::RegistrationStatusResponse* resp) override;

  State state() const;

 private:
  mutable std::mutex mu_;
  State state_;
};

// The PluginInfo this plugin reports (type ResourcePlugin, name = the resource name, empty
// endpoint, versions ["v1alpha1"]).
void FillPluginInfo(::pluginregistration::PluginInfo* info);

}  // namespace netqos::grpcadapter
