#include "enforce/enforcer_status_board.h"

#include <algorithm>

#include "enforce/pass_scope.h"

namespace netqos::enforce {

const char* KernelTargetName(KernelTarget target) {
  switch (target) {
    case KernelTarget::kClassMap:
      return "class_map";
    case KernelTarget::kShaping:
      return "shaping";
    case KernelTarget::kEdtMap:
      return "edt_map";
    case KernelTarget::kPodAddressMap:
      return "pod_address_map";
  }
  return "unknown";
}

const std::vector<double>& PassSecondsBounds() {
  static const std::vector<double> kBounds = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                              0.5,   1,      2.5,   5,    10,    30,   60};
  return kBounds;
}

const ContainerRef* PublishedState::FindContainer(const std::string& container_id) const {
  if (auto it = known_containers->find(container_id); it != known_containers->end()) {
    return &it->second;
  }
  auto it = runtime_known.find(container_id);
  return it == runtime_known.end() ? nullptr : &it->second;
}

bool PublishedState::HasClass(const std::string& container_id) const {
  const ContainerRef* ref = FindContainer(container_id);
  if (ref == nullptr) return false;
  const pods::PodInfo& pod = pods[ref->pod];
  const std::string& name = pod.containers[ref->container].name;
  return std::any_of(status.classes.begin(), status.classes.end(), [&](const auto& entry) {
    return entry.second.pod_uid() == pod.uid && entry.second.container_name == name;
  });
}

std::shared_ptr<const ContainerIndex> PublishedState::IndexContainers() {
  auto index = std::make_shared<ContainerIndex>();
  for (size_t p = 0; p < pods.size(); ++p) {
    for (size_t c = 0; c < pods[p].containers.size(); ++c) {
      const std::string& id = pods[p].containers[c].id;
      if (!id.empty()) (*index)[id] = {p, c};
    }
  }
  known_containers = index;
  runtime_known.clear();
  return index;
}

void PublishedState::AddRuntimeContainers(const RuntimePods::Merged& merged) {
  for (const auto& [p, c] : merged.containers) runtime_known[pods[p].containers[c].id] = {p, c};
}

EnforcerStatusBoard::EnforcerStatusBoard() {
  for (PassScope scope :
       {PassScope::kContainers, PassScope::kAll, PassScope::kResync, PassScope::kFull}) {
    state_.status.pass_seconds.emplace(PassScopeName(scope), HistogramCounts(PassSecondsBounds()));
  }
  for (KernelTarget target : kKernelTargets) {
    state_.status.kernel_failures[KernelTargetName(target)] = 0;
  }
}

EnforcerStatus EnforcerStatusBoard::Status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return state_.status;
}

EnforcerStatusBoard::Leaves EnforcerStatusBoard::LeafLinks() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {state_.leaf_links, state_.status.classes};
}

bool EnforcerStatusBoard::HasClass(const std::string& container_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  return state_.HasClass(container_id);
}

}  // namespace netqos::enforce
