// netqosd as an NRI plugin (--nri-socket, docs/nri.md): the NRI session on a thread of its own,
// and the bridge from its events to the enforcer. The enforcer stays the one source of truth:
// a StartContainer is handled as the cgroup watcher's event for the container's cgroup, and the
// runtime's reply waits (bounded) until the enforcer's worker has placed the class.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "app/daemon_config.h"
#include "core/types.h"
#include "nri_plugin/nri_events.h"
#include "nri_plugin/nri_session.h"

namespace netqos::app {

// The NriEvents the daemon hands the session. Only StartContainer needs the enforcer: at
// CreateContainer the container's cgroup does not exist yet (the runtime creates it after the
// plugins answered), and removals reach the enforcer through the cgroup watcher and the pod
// source as before. With --nri-fail-closed it also says which starts to refuse: those of a pod
// with a bandwidth allocation whose container's class the enforcer did not confirm in time.
class NriEnforcerBridge : public nri_plugin::NriEvents {
 public:
  // `on_starting(container id, timeout)`: true when the class is in place (EnforcementStart's).
  using OnStarting = std::function<bool(const std::string&, std::chrono::milliseconds)>;
  // `capped(pod uid)`: whether the pod has a bandwidth allocation. Asked from the session's I/O
  // thread, so it must not wait on anything slow. Empty: no pod is (nothing is ever refused).
  using Capped = std::function<bool(const std::string&)>;
  // `pod_addresses(pod uid, ips)`: the runtime's addresses of a pod with a network namespace of
  // its own (RunPodSandbox, Synchronize); empty ips when the pod is removed (EnforcementStart's).
  using PodAddresses = std::function<void(const std::string&, const std::vector<std::string>&)>;
  NriEnforcerBridge(OnStarting on_starting, std::chrono::milliseconds wait, Capped capped = {},
                    PodAddresses pod_addresses = {})
      : on_starting_(std::move(on_starting)),
        wait_(wait),
        capped_(std::move(capped)),
        pod_addresses_(std::move(pod_addresses)) {}

  void OnSynchronize(const std::vector<nri_plugin::NriPod>& pods,
                     const std::vector<nri_plugin::NriContainer>& containers) override;
  void OnPodEvent(nri_plugin::PodEvent event, const nri_plugin::NriPod& pod) override;
  void OnContainerEvent(nri_plugin::ContainerEvent event, const nri_plugin::NriPod& pod,
                        const nri_plugin::NriContainer& container) override;
  Status StartRefusal(const nri_plugin::NriPod& pod,
                      const nri_plugin::NriContainer& container) override;

 private:
  OnStarting on_starting_;
  std::chrono::milliseconds wait_;
  Capped capped_;
  PodAddresses pod_addresses_;
  std::mutex mu_;
  // Containers the enforcer confirmed at their StartContainer, until the session asks about them
  // (or they stop: a confirmation that came after the runtime's reply is not kept for ever).
  std::set<std::string> placed_;
};

// Whether `entries` (the allocation service's, for one pod or more) give `pod_uid` any bandwidth:
// an allocation with a non-zero egress or ingress. A pod without one is not capped by netqos.
bool HasBandwidthAllocation(const core::PodEntries& entries, const std::string& pod_uid);

// The session and its thread; stops and joins when destroyed (before the enforcer goes).
class NriPlugin {
 public:
  NriPlugin(nri_plugin::NriSessionOptions options, NriEnforcerBridge::OnStarting on_starting,
            NriEnforcerBridge::Capped capped = {},
            NriEnforcerBridge::PodAddresses pod_addresses = {});
  ~NriPlugin();
  NriPlugin(const NriPlugin&) = delete;
  NriPlugin& operator=(const NriPlugin&) = delete;

  const nri_plugin::NriSessionStats& stats() const { return session_.stats(); }

 private:
  NriEnforcerBridge bridge_;
  nri_plugin::NriSession session_;
  std::thread thread_;
};

// The session options --nri-socket, --nri-event-budget-ms and --nri-fail-closed ask for.
nri_plugin::NriSessionOptions NriSessionOptionsOf(const DaemonConfig& config);

}  // namespace netqos::app
