// netqosd as an NRI plugin (--nri-socket, docs/nri.md): the NRI session on a thread of its own,
// and the bridge from its events to the enforcer. The enforcer stays the one source of truth:
// a StartContainer is handled as the cgroup watcher's event for the container's cgroup, and the
// runtime's reply waits (bounded) until the enforcer's worker has placed the class.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "app/daemon_config.h"
#include "nri_plugin/nri_events.h"
#include "nri_plugin/nri_session.h"

namespace netqos::app {

// The NriEvents the daemon hands the session. Only StartContainer needs the enforcer: at
// CreateContainer the container's cgroup does not exist yet (the runtime creates it after the
// plugins answered), and removals reach the enforcer through the cgroup watcher and the pod
// source as before.
class NriEnforcerBridge : public nri_plugin::NriEvents {
 public:
  // `on_starting(container id, timeout)`: true when the class is in place (EnforcementStart's).
  using OnStarting = std::function<bool(const std::string&, std::chrono::milliseconds)>;
  NriEnforcerBridge(OnStarting on_starting, std::chrono::milliseconds wait)
      : on_starting_(std::move(on_starting)), wait_(wait) {}

  void OnSynchronize(const std::vector<nri_plugin::NriPod>& pods,
                     const std::vector<nri_plugin::NriContainer>& containers) override;
  void OnPodEvent(nri_plugin::PodEvent event, const nri_plugin::NriPod& pod) override;
  void OnContainerEvent(nri_plugin::ContainerEvent event, const nri_plugin::NriPod& pod,
                        const nri_plugin::NriContainer& container) override;

 private:
  OnStarting on_starting_;
  std::chrono::milliseconds wait_;
};

// The session and its thread; stops and joins when destroyed (before the enforcer goes).
class NriPlugin {
 public:
  NriPlugin(nri_plugin::NriSessionOptions options, NriEnforcerBridge::OnStarting on_starting);
  ~NriPlugin();
  NriPlugin(const NriPlugin&) = delete;
  NriPlugin& operator=(const NriPlugin&) = delete;

  const nri_plugin::NriSessionStats& stats() const { return session_.stats(); }

 private:
  NriEnforcerBridge bridge_;
  nri_plugin::NriSession session_;
  std::thread thread_;
};

// The session options --nri-socket and --nri-event-budget-ms ask for.
nri_plugin::NriSessionOptions NriSessionOptionsOf(const DaemonConfig& config);

}  // namespace netqos::app
