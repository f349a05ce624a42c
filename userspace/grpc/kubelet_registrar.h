// KubeletRegistrar (optional, --kubelet-register-socket): registers the plugin with a kubelet that
// uses resourceplugin.v1alpha1 Registration.Register instead of the plugin watcher. Retries with
// exponential backoff until the kubelet accepts, and registers again whenever the kubelet's
// socket is replaced (a kubelet restart creates a new socket inode).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/status.h"
#include "core/constants.h"
#include "core/types.h"

namespace grpc {
class ClientContext;
}

namespace netqos::grpcadapter {

class KubeletRegistrar {
 public:
  struct Options {
    std::string kubelet_socket;  // e.g. /var/lib/kubelet/resource-plugins/kubelet.sock
    std::string endpoint = core::kSocketFileName;  // our socket's file name, relative to its dir
    std::string resource_name = core::kResourceName;
    core::PluginOptions plugin_options;
    std::chrono::milliseconds initial_backoff{500};
    std::chrono::milliseconds max_backoff{30000};
    std::chrono::milliseconds poll_interval{1000};  // how often the socket inode is checked
    std::chrono::milliseconds rpc_timeout{10000};
  };

  // Starts the registration thread; returns at once (the kubelet may not be up yet). Fails only
  // on an empty socket path.
  static Result<std::unique_ptr<KubeletRegistrar>> Start(Options options);
  // Same, for a socket path already known to be non-empty: registering can only fail at run time,
  // which the thread retries.
  explicit KubeletRegistrar(Options options);
  KubeletRegistrar(std::string kubelet_socket, core::PluginOptions plugin_options);
  ~KubeletRegistrar();
  KubeletRegistrar(const KubeletRegistrar&) = delete;
  KubeletRegistrar& operator=(const KubeletRegistrar&) = delete;

  void Stop();  // idempotent; interrupts a backoff wait

  bool registered() const { return registered_.load(); }
  uint64_t registrations() const { return registrations_.load(); }

 private:
  void Loop();
  Status RegisterOnce();
  // Sleeps up to `d`; returns false if Stop() was called.
  bool SleepFor(std::chrono::milliseconds d);

  Options options_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  grpc::ClientContext* in_flight_ = nullptr;  // cancelled by Stop()
  std::thread thread_;
  std::atomic<bool> registered_{false};
  std::atomic<uint64_t> registrations_{0};
};

}  // namespace netqos::grpcadapter
