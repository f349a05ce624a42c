#include "app/nri_plugin_setup.h"

#include <spdlog/spdlog.h>

#include <utility>

namespace netqos::app {

void NriEnforcerBridge::OnSynchronize(const std::vector<nri_plugin::NriPod>& pods,
                                      const std::vector<nri_plugin::NriContainer>& containers) {
  // The enforcer's passes list the node's cgroups and pods themselves: nothing to add.
  spdlog::info("nri: the runtime has pods={} containers={}", pods.size(), containers.size());
}

void NriEnforcerBridge::OnPodEvent(nri_plugin::PodEvent, const nri_plugin::NriPod&) {}

void NriEnforcerBridge::OnContainerEvent(nri_plugin::ContainerEvent event,
                                         const nri_plugin::NriPod& pod,
                                         const nri_plugin::NriContainer& container) {
  if (event != nri_plugin::ContainerEvent::kStart) return;
  const auto start = std::chrono::steady_clock::now();
  const bool placed = on_starting_(container.id, wait_);
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - start);
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

NriPlugin::NriPlugin(nri_plugin::NriSessionOptions options,
                     NriEnforcerBridge::OnStarting on_starting)
    : bridge_(std::move(on_starting), options.event_budget), session_(options, bridge_) {
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
  return options;
}

}  // namespace netqos::app
