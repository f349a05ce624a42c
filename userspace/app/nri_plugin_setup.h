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
#include "app/runtime_feed.h"
#include "core/types.h"
#include "nri_plugin/nri_events.h"
#include "nri_plugin/nri_session.h"
#include "pods/pod_list.h"
#include "service/nri_report.h"

namespace netqos::app {

// A pod as the pod list would have it, from what the runtime said: its addresses only when it
// has a network namespace of its own (a hostNetwork pod's are the node's, and a runtime that
// lists no namespaces does not say which it is), its QoS class from its cgroup parent.
pods::PodInfo PodInfoOf(const nri_plugin::NriPod& pod);
pods::ContainerInfo ContainerInfoOf(const nri_plugin::NriContainer& container);

// The NriEvents the daemon hands the session. The enforcer stays the one source of truth for
// classes: what the runtime says of pods and containers goes into its pod list (RuntimeFeed), and
// StartContainer waits for the enforcer (bounded). At CreateContainer the container's cgroup does
// not exist yet (the runtime creates it after the plugins answered), so only StartContainer waits;
// removals reach the enforcer through the cgroup watcher as before. With --nri-fail-closed it
// also says which starts to refuse: those of a pod netqos caps whose container's class the
// enforcer did not confirm in time.
class NriEnforcerBridge : public nri_plugin::NriEvents {
 public:
  // `on_starting(container id, timeout)`: true when the class is in place (EnforcementStart's).
  using OnStarting = std::function<bool(const std::string&, std::chrono::milliseconds)>;
  // `capped(pod)`: whether netqos caps the pod (CappedByNetqos). Asked from the session's I/O
  // thread, so it must not wait on anything slow. Empty: no pod is (nothing is ever refused).
  using Capped = std::function<bool(const nri_plugin::NriPod&)>;
  // `feed`: null, or one that outlives the bridge.
  NriEnforcerBridge(OnStarting on_starting, std::chrono::milliseconds wait, Capped capped = {},
                    RuntimeFeed* feed = nullptr)
      : on_starting_(std::move(on_starting)),
        wait_(wait),
        capped_(std::move(capped)),
        feed_(feed) {}

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
  RuntimeFeed* feed_;
  std::mutex mu_;
  // Containers the enforcer confirmed at their StartContainer, until the session asks about them
  // (or they stop: a confirmation that came after the runtime's reply is not kept for ever).
  std::set<std::string> placed_;
};

// Whether `entries` (the allocation service's, for one pod or more) give `pod_uid` any bandwidth:
// an allocation with a non-zero egress or ingress.
bool HasBandwidthAllocation(const core::PodEntries& entries, const std::string& pod_uid);

// Whether netqos caps `pod`, for --nri-fail-closed: a bandwidth allocation
// (HasBandwidthAllocation over `allocations`), a kubernetes.io/egress-bandwidth or
// ingress-bandwidth annotation (even one the tenant rules do not read or that is refused: holding
// a container back errs on the safe side), or `level_ceilings` (a QoS level held below its link
// by --qos-level-shaping, which a pod without either may be in).
bool CappedByNetqos(const core::PodEntries& allocations, const nri_plugin::NriPod& pod,
                    bool level_ceilings);

// Whether --qos-level-shaping holds some QoS level below its NIC's link (a ceiling under 100 %).
bool HasLevelCeilings(const DaemonConfig& config);

// The session and its thread; stops and joins when destroyed (before the enforcer goes).
class NriPlugin {
 public:
  NriPlugin(nri_plugin::NriSessionOptions options, NriEnforcerBridge::OnStarting on_starting,
            NriEnforcerBridge::Capped capped = {}, RuntimeFeed* feed = nullptr);
  ~NriPlugin();
  NriPlugin(const NriPlugin&) = delete;
  NriPlugin& operator=(const NriPlugin&) = delete;

  const nri_plugin::NriSessionStats& stats() const { return session_.stats(); }
  // The session as netqosctl status shows it.
  service::NriReport Report() const;

 private:
  const std::string socket_;
  const bool fail_closed_;
  NriEnforcerBridge bridge_;
  nri_plugin::NriSession session_;
  std::thread thread_;
};

// The NRI session for GetStatus, which the servers may ask before the session starts and while
// it stops: what the flags say until Set(plugin), and again after Set(nullptr).
class NriStatusSource {
 public:
  explicit NriStatusSource(const DaemonConfig& config) : config_(config) {}
  void Set(const NriPlugin* plugin) {
    std::lock_guard lock(mu_);
    plugin_ = plugin;
  }
  service::NriReport Report() const;

 private:
  const DaemonConfig& config_;
  mutable std::mutex mu_;
  const NriPlugin* plugin_ = nullptr;
};

// The session options --nri-socket, --nri-event-budget-ms and --nri-fail-closed ask for.
nri_plugin::NriSessionOptions NriSessionOptionsOf(const DaemonConfig& config);

}  // namespace netqos::app
