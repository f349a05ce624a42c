#include "app/nri_plugin_setup.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <limits>
#include <map>
#include <utility>

#include "core/bandwidth_quantity.h"
#include "enforce/pod_annotation_keys.h"
#include "pods/cri/cri_translate.h"

namespace netqos::app {

pods::PodInfo PodInfoOf(const nri_plugin::NriPod& pod) {
  pods::PodInfo out;
  out.uid = pod.uid;
  out.ns = pod.namespace_name;
  out.name = pod.name;
  out.qos_class = cri::QosClassFromCgroupParent(pod.cgroup_parent, pod.uid);
  out.annotations = pod.annotations;
  out.host_network = pod.network == nri_plugin::PodNetwork::kHost;
  if (pod.network == nri_plugin::PodNetwork::kOwn) out.ips = pod.ips;
  return out;
}

pods::ContainerInfo ContainerInfoOf(const nri_plugin::NriContainer& container) {
  pods::ContainerInfo out;
  out.name = container.name;
  out.id = container.id;
  // No runtime: its cgroup is looked for under every runtime's name (cgroup_paths.h).
  return out;
}

void NriEnforcerBridge::OnSynchronize(const std::vector<nri_plugin::NriPod>& pods,
                                      const std::vector<nri_plugin::NriContainer>& containers) {
  // The enforcer's passes list the node's cgroups and pods themselves; what the runtime has fills
  // in what the pod list does not have yet.
  spdlog::info("nri: the runtime has pods={} containers={}", pods.size(), containers.size());
  if (!feed_) return;
  std::map<std::string, pods::PodInfo> by_sandbox;
  for (const auto& pod : pods) {
    pods::PodInfo info = PodInfoOf(pod);
    feed_->Pod(info);
    by_sandbox.emplace(pod.id, std::move(info));
  }
  for (const auto& c : containers) {
    auto pod = by_sandbox.find(c.pod_sandbox_id);
    if (pod != by_sandbox.end()) feed_->Container(pod->second, ContainerInfoOf(c));
  }
}

void NriEnforcerBridge::OnPodEvent(nri_plugin::PodEvent event, const nri_plugin::NriPod& pod) {
  if (!feed_) return;
  if (event == nri_plugin::PodEvent::kRemove) {
    feed_->PodRemoved(pod.uid);
  } else if (event == nri_plugin::PodEvent::kRun) {
    feed_->Pod(PodInfoOf(pod));
  }
  // kStop: the pod keeps what it had until it is removed.
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
    {
      std::lock_guard lock(mu_);
      placed_.erase(container.id);
    }
    if (feed_ && event == nri_plugin::ContainerEvent::kRemove) {
      feed_->ContainerRemoved(pod.uid, container.id);
    }
    return;
  }
  // Known from CreateContainer on: the cgroup watcher's event for its cgroup, which comes before
  // StartContainer, then finds it even when the pod list does not list it yet.
  if (feed_) feed_->Container(PodInfoOf(pod), ContainerInfoOf(container));
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
  if (!capped_ || !capped_(pod)) return Status::Ok();
  return FailedPrecondition("netqos could not confirm the network class of container " +
                            container.id + " of pod " + pod.namespace_name + "/" + pod.name +
                            " (uid " + pod.uid + ") within " + std::to_string(wait_.count()) +
                            " ms; its start is refused (--nri-fail-closed)");
}

bool CappedByNetqos(const core::PodEntries& allocations, const nri_plugin::NriPod& pod,
                    bool level_ceilings) {
  if (level_ceilings || HasBandwidthAllocation(allocations, pod.uid)) return true;
  const core::AnnotatedBandwidth annotated = core::ReadBandwidthAnnotations(pod.annotations);
  return annotated.egress_bps || annotated.ingress_bps || annotated.egress_refused ||
         annotated.ingress_refused;
}

bool HasLevelCeilings(const DaemonConfig& config) {
  return std::any_of(config.qos_level_shaping.begin(), config.qos_level_shaping.end(),
                     [](const auto& level) { return level && level->ceil_permille < 1000; });
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
                     RuntimeFeed* feed)
    : socket_(options.socket_path),
      fail_closed_(options.fail_closed),
      bridge_(std::move(on_starting), options.event_budget, std::move(capped), feed),
      session_(options, bridge_) {
  thread_ = std::thread([this] { session_.Run(); });
}

NriPlugin::~NriPlugin() {
  session_.Stop();
  thread_.join();
}

service::NriReport NriPlugin::Report() const {
  service::NriReport r;
  r.socket = socket_;
  r.fail_closed = fail_closed_;
  const nri_plugin::NriSessionStats& s = session_.stats();
  r.connected = s.connected;
  const nri_plugin::NriRuntime runtime = session_.runtime();
  r.runtime_name = runtime.name;
  r.runtime_version = runtime.version;
  // The runtime's own figure, shown as sent: held to what the field holds.
  r.runtime_timeout_ms = static_cast<uint32_t>(
      std::min<uint64_t>(s.runtime_request_timeout_ms, std::numeric_limits<uint32_t>::max()));
  r.event_budget_ms = static_cast<uint32_t>(s.event_budget_ms);
  r.connects = s.connects;
  r.events = s.events;
  r.late_replies = s.late_replies;
  r.refused_starts = s.refused_starts;
  r.shed_events = s.shed_events;
  r.invalid_events = s.invalid_events;
  r.last_error = session_.last_error();
  return r;
}

service::NriReport NriStatusSource::Report() const {
  std::lock_guard lock(mu_);
  if (plugin_ != nullptr) return plugin_->Report();
  service::NriReport r;
  r.socket = config_.nri_socket;
  r.fail_closed = config_.nri_fail_closed;
  r.last_error = "the session is not running (it starts once enforcement has started)";
  return r;
}

nri_plugin::NriSessionOptions NriSessionOptionsOf(const DaemonConfig& config) {
  nri_plugin::NriSessionOptions options;
  options.socket_path = config.nri_socket;
  options.event_budget = std::chrono::milliseconds(config.nri_event_budget_ms);
  options.fail_closed = config.nri_fail_closed;
  // As the pod source does (enforcement_setup.cc): what the runtime's events hand the enforcer
  // keeps only the annotations it reads.
  options.annotation_keys = enforce::PodAnnotationKeys(config.policy);
  return options;
}

}  // namespace netqos::app
