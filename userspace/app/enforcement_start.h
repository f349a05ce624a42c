// Enforcement started beside serving (--enforcement=bpf): the plugin socket answers the kubelet as
// soon as the allocation state is loaded, and the eBPF dataplane is opened, the pinned class map
// adopted and the reconciler started on a thread of their own. Nothing already enforced stops
// meanwhile: the programs, links, maps and qdiscs a previous run pinned outlive the process and
// keep classifying and shaping until the new enforcer adopts them. Readiness and `netqosctl
// status` say that enforcement is starting until its first pass is done.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "app/daemon_config.h"
#include "app/enforcement_setup.h"
#include "app/runtime_feed.h"
#include "service/allocation_service.h"

namespace netqos::app {

// Allocation changes for an enforcer that may not exist yet. Until Attach, each pod's last change
// (and whether the topology changed) is kept; Attach replays them. The enforcer's first pass reads
// the allocations when it runs, which may be before an Allocate served while enforcement started:
// the replay wakes it for another pass, so that container does not wait for the periodic resync.
// After Discard (enforcement failed to start) changes are dropped.
class ChangeRelay {
 public:
  using Event = service::AllocationService::ChangeEvent;
  using Sink = std::function<void(const Event&)>;

  void Deliver(const Event& event);
  // Replays what was kept, then hands every later change straight to `sink`.
  void Attach(Sink sink);
  void Discard();
  size_t Pending() const;

 private:
  mutable std::mutex mu_;  // held while calling the sink: no change overtakes the replay
  Sink sink_;
  bool discarded_ = false;
  std::map<std::string, Event::Kind> pods_;  // pod uid -> its last change
  bool topology_ = false;
};

// What the status surfaces may read of enforcement now.
struct EnforcementState {
  const EnforcementStack* stack = nullptr;  // null while starting, when off or failed
  std::string mode;                         // "bpf", "none", or "disabled"
  std::string error;                        // why "disabled"
  bool starting = false;                    // bpf asked for, the stack not there yet
};

// Starts enforcement after serving. Construct it before the plugin socket is served (it takes the
// service's change listener, so no Allocate is missed), call Start once served.
class EnforcementStart : public RuntimeFeed {
 public:
  // `tenant_policy` (null: the built-in default) gives the enforcer the policy in force.
  EnforcementStart(
      const DaemonConfig& config, service::AllocationService& service,
      std::chrono::steady_clock::time_point daemon_start,
      std::function<std::shared_ptr<const enforce::TenantPolicy>()> tenant_policy = nullptr);
  // Waits for a start still running, detaches the service's listener, then stops the enforcer:
  // the pins stay (EnforcementStack).
  ~EnforcementStart() override;
  EnforcementStart(const EnforcementStart&) = delete;
  EnforcementStart& operator=(const EnforcementStart&) = delete;

  void Start();
  EnforcementState State() const;
  // The tenant policy changed: the enforcer (once started) applies it with a whole pass; one
  // still starting reads it at its first pass anyway.
  void OnTenantPolicyChanged();
  // NRI's StartContainer (app/nri_plugin_setup.h): Enforcer::OnContainerStarting once the
  // enforcer runs; false at once while it starts or when it failed to.
  bool OnContainerStarting(const std::string& container_id, std::chrono::milliseconds timeout);
  // What NRI says of pods and containers (RuntimeFeed), for Enforcer::OnRuntimePod and the
  // rest; dropped while starting (the enforcer's first pass lists them itself).
  void Pod(pods::PodInfo pod) override;
  void Container(const pods::PodInfo& pod, pods::ContainerInfo container) override;
  void PodRemoved(const std::string& pod_uid) override;
  void ContainerRemoved(const std::string& pod_uid, const std::string& container_id) override;

 private:
  void Run();

  const DaemonConfig& config_;
  service::AllocationService& service_;
  const std::chrono::steady_clock::time_point daemon_start_;
  const std::function<std::shared_ptr<const enforce::TenantPolicy>()> tenant_policy_;
  ChangeRelay relay_;
  mutable std::mutex mu_;
  // Set once by the start thread, under mu_; destroyed only after it is joined and every reader
  // (the servers) has stopped, so readers use the pointer without the lock.
  std::unique_ptr<EnforcementStack> stack_;
  std::unique_ptr<ResidualCleanup> residual_cleanup_;  // when enforcement failed to start
  std::string error_;
  bool starting_ = true;
  std::thread thread_;
};

}  // namespace netqos::app
