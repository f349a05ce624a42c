#include "app/nri_plugin_setup.h"

#include <spdlog/spdlog.h>

#include <utility>

namespace netqos::app {

void NriEnforcerBridge::OnSynchronize(const std::vector<nri_plugin::NriPod>& pods,
                                      const std::vector<nri_plugin::NriContainer>& containers) {
  // The enforcer's passes list the node's cgroups and pods themselves; the runtime's pod addresses
  // fill in those the pod list does not have yet.
  spdlog::info("nri: the runtime has pods={} containers={}", pods.size(), containers.size());
  for (const auto& pod : pods) OnPodEvent(nri_plugin::PodEvent::kRun, pod);
}

void NriEnforcerBridge::OnPodEvent(nri_plugin::PodEvent event, const nri_plugin::NriPod& pod) {
  if (!pod_addresses_) return;
  if (event == nri_plugin::PodEvent::kRemove) {
    pod_addresses_(pod.uid, {});
    return;
  }
  // Only a pod the runtime says has a network namespace of its own: a hostNetwork pod's
  // addresses are the node's, and a runtime that lists no namespaces does not say which it is.
  if (event != nri_plugin::PodEvent::kRun || pod.ips.empty() ||
      pod.network != nri_plugin::PodNetwork::kOwn) {
    return;
  }
  pod_addresses_(pod.uid, pod.ips);
}

namespace {

// Confirmations kept for starts the session no longer asks about (the runtime was answered before
// the enforcer confirmed, and the container never stopped): dropped beyond this many.
constexpr size_t kMaxPlaced = 4096;

}  // namespace

void NriEnforcerBridge::OnContainerEvent(nri_plugin::ContainerEvent event,
                                         const nri_plugin::NriPod& pod,
                                         const nri_plugin::NriContainer& container) {
  if (event == nri_plugin::ContainerEvent::kStop || event == nri_plugin::ContainerEvent::kRemove) {
    std::lock_guard lock(mu_);
    placed_.erase(container.id);
    return;
  }
  if (event != nri_plugin::ContainerEvent::kStart) return;
  const auto start = std::chrono::steady_clock::now();
  const bool placed = on_starting_(container.id, wait_);
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - start);
  if (placed) {
    std::lock_guard lock(mu_);
    if (placed_.size() >= kMaxPlaced) placed_.clear();
    placed_.insert(container.id);
  }
  if (placed) {
    spdlog::debug("nri: class in place before start container={} pod={} ms={}", container.id,
                  pod.uid, took.count());
  } else {
    spdlog::info(
        "nri: container starts before its class was confirmed container={} pod={} ms={} (the "
        "enforcer places it as without NRI)",
        container.id, pod.uid, took.count());
  }
}

Status NriEnforcerBridge::StartRefusal(const nri_plugin::NriPod& pod,
                                       const nri_plugin::NriContainer& container) {
  {
    std::lock_guard lock(mu_);
    if (placed_.erase(container.id) != 0) return Status::Ok();
  }
  // Not confirmed: the enforcer failed, or its budget ran out. Only a container netqos caps is
  // held back; any other starts as it would without netqos.
  if (!capped_ || !capped_(pod.uid)) return Status::Ok();
  return FailedPrecondition("netqos could not confirm the network class of container " +
                            container.id + " of pod " + pod.namespace_name + "/" + pod.name +
                            " (uid " + pod.uid + ") within " + std::to_string(wait_.count()) +
                            " ms; its start is refused (--nri-fail-closed)");
}

bool HasBandwidthAllocation(const core::PodEntries& entries, const std::string& pod_uid) {
  auto pod = entries.find(pod_uid);
  if (pod == entries.end()) return false;
  for (const auto& [name, info] : pod->second) {
    if (info.egress > 0 || info.ingress > 0) return true;
  }
  return false;
}

NriPlugin::NriPlugin(nri_plugin::NriSessionOptions options,
                     NriEnforcerBridge::OnStarting on_starting, NriEnforcerBridge::Capped capped,
                     NriEnforcerBridge::PodAddresses pod_addresses)
    : bridge_(std::move(on_starting), options.event_budget, std::move(capped),
              std::move(pod_addresses)),
      session_(options, bridge_) {
  thread_ = std::thread([this] { session_.Run(); });
}

NriPlugin::~NriPlugin() {
  session_.Stop();
  thread_.join();
}

nri_plugin::NriSessionOptions NriSessionOptionsOf(const DaemonConfig& config) {
  nri_plugin::NriSessionOptions options;
  options.socket_path = config.nri_socket;
  options.event_budget = std::chrono::milliseconds(config.nri_event_budget_ms);
  options.fail_closed = config.nri_fail_closed;
  return options;
}

}  // namespace netqos::app
