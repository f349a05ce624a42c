#include "enforce/runtime_pods.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "enforce/pod_addresses.h"

namespace netqos::enforce {
namespace {

// The pod list's checks on addresses (cri_translate.cc, PlanPodAddresses): each one that
// parses, in canonical form, once, at most kMaxAddresses.
std::vector<std::string> ValidAddresses(const std::vector<std::string>& ips) {
  std::vector<std::string> valid;
  for (const auto& text : ips) {
    if (valid.size() >= RuntimePods::kMaxAddresses) break;
    const auto address = ParsePodAddress(text);
    if (!address) continue;
    std::string canonical = PodAddressText(*address);
    if (std::find(valid.begin(), valid.end(), canonical) == valid.end()) {
      valid.push_back(std::move(canonical));
    }
  }
  return valid;
}

// Everything but the containers.
bool SameMetadata(const pods::PodInfo& a, const pods::PodInfo& b) {
  return a.uid == b.uid && a.ns == b.ns && a.name == b.name && a.qos_class == b.qos_class &&
         a.annotations == b.annotations && a.host_network == b.host_network && a.phase == b.phase &&
         a.ips == b.ips;
}

}  // namespace

bool RuntimePods::PutPod(pods::PodInfo pod) {
  if (pod.uid.empty()) return false;
  std::vector<pods::ContainerInfo> given = std::exchange(pod.containers, {});
  pod.ips = pod.host_network ? std::vector<std::string>{} : ValidAddresses(pod.ips);
  auto it = pods_.find(pod.uid);
  if (it == pods_.end()) {
    if (pods_.size() >= kMaxPods) return false;
    it = pods_.emplace(pod.uid, std::move(pod)).first;
    changed_.insert(it->first);
  } else {
    pod.containers = std::exchange(it->second.containers, {});
    if (!SameMetadata(it->second, pod)) changed_.insert(pod.uid);
    it->second = std::move(pod);
  }
  for (auto& c : given) AddContainer(it->second, std::move(c));
  return true;
}

bool RuntimePods::PutContainer(const pods::PodInfo& pod, pods::ContainerInfo container) {
  if (container.id.empty()) return false;
  pods::PodInfo meta = pod;
  meta.containers.clear();
  if (!PutPod(std::move(meta))) return false;
  return AddContainer(pods_.at(pod.uid), std::move(container));
}

bool RuntimePods::AddContainer(pods::PodInfo& pod, pods::ContainerInfo container) {
  if (container.id.empty()) return false;
  auto& containers = pod.containers;
  auto same = std::find_if(containers.begin(), containers.end(), [&](const auto& c) {
    return c.id == container.id || c.name == container.name;
  });
  if (same != containers.end()) {
    if (*same == container) return true;
    container_pod_.erase(same->id);
    *same = std::move(container);
    container_pod_[same->id] = pod.uid;
  } else {
    if (containers.size() >= kMaxContainersPerPod) return false;
    containers.push_back(std::move(container));
    container_pod_[containers.back().id] = pod.uid;
  }
  changed_.insert(pod.uid);
  return true;
}

void RuntimePods::ForgetPod(const std::string& uid) {
  auto it = pods_.find(uid);
  if (it == pods_.end()) return;
  for (const auto& c : it->second.containers) container_pod_.erase(c.id);
  pods_.erase(it);
  changed_.insert(uid);
}

void RuntimePods::ForgetContainer(const std::string& uid, const std::string& container_id) {
  auto it = pods_.find(uid);
  if (it == pods_.end()) return;
  auto& containers = it->second.containers;
  auto c = std::find_if(containers.begin(), containers.end(),
                        [&](const auto& x) { return x.id == container_id; });
  if (c == containers.end()) return;
  containers.erase(c);
  container_pod_.erase(container_id);
  changed_.insert(uid);
}

bool RuntimePods::HasContainer(const std::string& container_id) const {
  return container_pod_.count(container_id) != 0;
}

RuntimePods::Merged RuntimePods::MergeInto(std::vector<pods::PodInfo>& pods,
                                           const std::set<std::string>& skip, bool all) {
  Merged out;
  std::set<std::string> changed;
  changed.swap(changed_);
  if (pods_.empty()) return out;
  // Where each pod is in the list: an index of the whole list for a whole merge; for a few
  // changed pods, a scan per pod is cheaper than indexing a node's worth.
  std::map<std::string, size_t> listed;
  if (all) {
    for (size_t i = 0; i < pods.size(); ++i) listed.emplace(pods[i].uid, i);
  }
  auto find = [&](const std::string& uid) -> std::optional<size_t> {
    if (all) {
      auto at = listed.find(uid);
      return at == listed.end() ? std::nullopt : std::optional<size_t>(at->second);
    }
    for (size_t i = 0; i < pods.size(); ++i) {
      if (pods[i].uid == uid) return i;
    }
    return std::nullopt;
  };
  auto merge = [&](const pods::PodInfo& runtime) {
    if (skip.count(runtime.uid) != 0) return;
    const auto at = find(runtime.uid);
    if (!at) {
      pods.push_back(runtime);
      out.changed = true;
      for (size_t c = 0; c < runtime.containers.size(); ++c) {
        out.containers.emplace_back(pods.size() - 1, c);
      }
      return;
    }
    pods::PodInfo& pod = pods[*at];
    if (!pod.host_network && pod.ips.empty() && !runtime.ips.empty()) {
      pod.ips = runtime.ips;
      out.changed = true;
    }
    for (const auto& c : runtime.containers) {
      const bool has_id = std::any_of(pod.containers.begin(), pod.containers.end(),
                                      [&](const auto& x) { return x.id == c.id; });
      if (has_id) continue;
      auto unstarted =
          std::find_if(pod.containers.begin(), pod.containers.end(),
                       [&](const auto& x) { return x.id.empty() && x.name == c.name; });
      if (unstarted != pod.containers.end()) {
        unstarted->id = c.id;
        unstarted->runtime = c.runtime;
      } else {
        unstarted = pod.containers.insert(pod.containers.end(), c);
      }
      out.containers.emplace_back(*at, static_cast<size_t>(unstarted - pod.containers.begin()));
      out.changed = true;
    }
  };
  if (all) {
    for (const auto& [uid, runtime] : pods_) merge(runtime);
  } else {
    for (const auto& uid : changed) {
      auto it = pods_.find(uid);
      if (it != pods_.end()) merge(it->second);
    }
  }
  return out;
}

}  // namespace netqos::enforce
