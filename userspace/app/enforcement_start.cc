#include "app/enforcement_start.h"

#include <spdlog/spdlog.h>

#include <utility>

namespace netqos::app {

void ChangeRelay::Deliver(const Event& event) {
  std::lock_guard lock(mu_);
  if (sink_) {
    sink_(event);
    return;
  }
  if (discarded_) return;
  if (event.kind == Event::Kind::kTopology) {
    topology_ = true;
  } else {
    pods_[event.pod_uid] = event.kind;  // an Allocate after a RemovePod undoes it, and back
  }
}

void ChangeRelay::Attach(Sink sink) {
  std::lock_guard lock(mu_);
  sink_ = std::move(sink);
  if (topology_) sink_({Event::Kind::kTopology, ""});
  for (const auto& [uid, kind] : pods_) sink_({kind, uid});
  topology_ = false;
  pods_.clear();
}

void ChangeRelay::Discard() {
  std::lock_guard lock(mu_);
  discarded_ = true;
  topology_ = false;
  pods_.clear();
}

size_t ChangeRelay::Pending() const {
  std::lock_guard lock(mu_);
  return pods_.size() + (topology_ ? 1 : 0);
}

EnforcementStart::EnforcementStart(
    const DaemonConfig& config, service::AllocationService& service,
    std::chrono::steady_clock::time_point daemon_start,
    std::function<std::shared_ptr<const enforce::TenantPolicy>()> tenant_policy)
    : config_(config),
      service_(service),
      daemon_start_(daemon_start),
      tenant_policy_(std::move(tenant_policy)) {
  service_.SetChangeListener([this](const ChangeRelay::Event& e) { relay_.Deliver(e); });
}

EnforcementStart::~EnforcementStart() {
  if (thread_.joinable()) thread_.join();
  // The topology watcher may still notify the service: detach the enforcer before it goes.
  service_.SetChangeListener(nullptr);
  residual_cleanup_.reset();
  stack_.reset();
}

void EnforcementStart::Start() {
  thread_ = std::thread([this] { Run(); });
}

EnforcementState EnforcementStart::State() const {
  std::lock_guard lock(mu_);
  EnforcementState s;
  s.stack = stack_.get();
  s.starting = starting_;
  s.mode = error_.empty() ? "bpf" : "disabled";
  s.error = error_;
  return s;
}

bool EnforcementStart::OnContainerStarting(const std::string& container_id,
                                           std::chrono::milliseconds timeout) {
  enforce::Enforcer* enforcer = nullptr;
  {
    std::lock_guard lock(mu_);
    if (stack_) enforcer = stack_->enforcer.get();
  }
  // Waited for without mu_ (State() must not block meanwhile): the stack outlives every caller,
  // as the NRI plugin is stopped before this object goes.
  return enforcer != nullptr && enforcer->OnContainerStarting(container_id, timeout);
}

void EnforcementStart::Pod(pods::PodInfo pod) {
  std::lock_guard lock(mu_);
  if (stack_ && stack_->enforcer) stack_->enforcer->OnRuntimePod(std::move(pod));
}

void EnforcementStart::Container(const pods::PodInfo& pod, pods::ContainerInfo container) {
  std::lock_guard lock(mu_);
  if (stack_ && stack_->enforcer) stack_->enforcer->OnRuntimeContainer(pod, std::move(container));
}

void EnforcementStart::PodRemoved(const std::string& pod_uid) {
  std::lock_guard lock(mu_);
  if (stack_ && stack_->enforcer) stack_->enforcer->OnRuntimePodRemoved(pod_uid);
}

void EnforcementStart::ContainerRemoved(const std::string& pod_uid,
                                        const std::string& container_id) {
  std::lock_guard lock(mu_);
  if (stack_ && stack_->enforcer)
    stack_->enforcer->OnRuntimeContainerRemoved(pod_uid, container_id);
}

void EnforcementStart::OnTenantPolicyChanged() {
  std::lock_guard lock(mu_);
  if (stack_ && stack_->enforcer) stack_->enforcer->OnTenantPolicyChanged();
}

void EnforcementStart::Run() {
  const auto t0 = std::chrono::steady_clock::now();
  auto ms = [](std::chrono::steady_clock::duration d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  };
  auto started = StartEnforcement(config_, service_, tenant_policy_);
  if (started.ok()) {
    enforce::Enforcer* e = (*started)->enforcer.get();
    {
      std::lock_guard lock(mu_);
      stack_ = std::move(*started);
      starting_ = false;
    }
    // After the stack is published: a change delivered from here on reaches the enforcer, and
    // the ones made while it started are replayed to it.
    relay_.Attach([e](const ChangeRelay::Event& ev) { ForwardChange(*e, ev); });
    const auto now = std::chrono::steady_clock::now();
    spdlog::info("enforcement started after_ms={} took_ms={} (its first pass runs next)",
                 ms(now - daemon_start_), ms(now - t0));
    return;
  }
  // Allocation keeps working (pods still get admitted); whatever a previous run pinned keeps
  // enforcing on its own. /readyz and `netqosctl status` report it.
  relay_.Discard();
  const std::string error = started.status().message();
  spdlog::error("enforcement disabled, serving allocations only: {}", error);
  // Without enforcement, allocations of pods the kubelet forgot to remove are still cleared after
  // 5 minutes (Katalyst HEAD does this whatever applies its net classes).
  std::unique_ptr<ResidualCleanup> cleanup;
  if (auto c = StartResidualCleanup(config_, service_); c.ok()) {
    cleanup = std::move(*c);
  } else {
    spdlog::warn(
        "no residual state cleanup (allocations of pods that vanished without a RemovePod are "
        "kept): {}",
        c.status().message());
  }
  std::lock_guard lock(mu_);
  residual_cleanup_ = std::move(cleanup);
  error_ = error.empty() ? std::string("enforcement failed to start") : error;
  starting_ = false;
}

}  // namespace netqos::app
