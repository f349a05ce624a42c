#include "enforce/container_resolver.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>

namespace netqos::enforce {
namespace {

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Pod uids are UUIDs, or 32-hex-digit hashes for static pods; systemd names write '_' for '-'.
bool IsPodUid(const std::string& uid, char separator) {
  if (uid.empty()) return false;
  for (char c : uid) {
    const bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
    if (!hex && c != separator) return false;
  }
  return true;
}

bool IsContainerId(const std::string& id) {
  if (id.empty()) return false;
  for (char c : id) {
    const bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
    if (!hex) return false;
  }
  return true;
}

std::string Dashes(std::string uid) {
  for (char& c : uid) {
    if (c == '_') c = '-';
  }
  return uid;
}

}  // namespace

ContainerResolver::ContainerResolver(std::string cgroup_mount, cgroup::CgroupLayout layout,
                                     CgroupTree tree)
    : mount_(std::move(cgroup_mount)), layout_(std::move(layout)), tree_(std::move(tree)) {}

namespace {

// Whether s can be one component of a cgroup path: no '/', not "." or "..", nothing but
// letters, digits, '-', '_' and '.'. Looser than what a kubelet writes (UUIDs, hex ids), so that
// test and static pods resolve too; strict enough that nothing leaves the pod's directory.
bool PathComponent(const std::string& s) {
  if (s.empty() || s.size() > 128 || s == "." || s == "..") return false;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '.';
    if (!ok) return false;
  }
  return true;
}

// Why the pod list's names for this container cannot be made into a path ("" = they can).
std::string Malformed(const pods::PodInfo& pod, const pods::ContainerInfo& c) {
  if (!PathComponent(pod.uid)) return "pod uid \"" + pod.uid + "\" is not a pod uid";
  if (!PathComponent(c.id)) return "container id \"" + c.id + "\" is not a container id";
  return "";
}

}  // namespace

uint64_t ContainerResolver::PodCgroupId(const pods::PodInfo& pod) const {
  const auto qos = cgroup::ParsePodQosClass(pod.qos_class);
  auto dir = tree_.find_dir(mount_, cgroup::PodCgroupCandidates(layout_, qos, pod.uid));
  if (!dir.ok()) return 0;
  auto id = tree_.cgroup_id(*dir);
  return id.ok() ? *id : 0;
}

std::optional<ObservedContainer> ContainerResolver::Observe(const pods::PodInfo& pod,
                                                            const pods::ContainerInfo& c,
                                                            uint64_t pod_cgroup_id,
                                                            SharedPod& shared) const {
  const auto qos = cgroup::ParsePodQosClass(pod.qos_class);
  auto dir = tree_.find_dir(
      mount_, cgroup::ContainerCgroupCandidates(layout_, qos, pod.uid, c.runtime, c.id));
  Result<uint64_t> id = dir.ok() ? tree_.cgroup_id(*dir) : Result<uint64_t>(dir.status());
  if (!id.ok()) return std::nullopt;
  return Observed(pod, c, *id, pod_cgroup_id, shared);
}

ObservedContainer ContainerResolver::Observed(const pods::PodInfo& pod,
                                              const pods::ContainerInfo& c, uint64_t cgroup_id,
                                              uint64_t pod_cgroup_id, SharedPod& shared) {
  if (!shared.meta) {
    shared.meta = std::make_shared<const PodMeta>(PodMeta{pod.uid, pod.ns, pod.name});
    shared.annotations = std::make_shared<const core::StringMap>(pod.annotations);
  }
  ObservedContainer o;
  o.pod = shared.meta;
  o.annotations = shared.annotations;
  o.container_name = c.name;
  o.cgroup_id = cgroup_id;
  o.pod_cgroup_id = pod_cgroup_id;
  return o;
}

ResolvedContainers ContainerResolver::Resolve(const std::vector<pods::PodInfo>& pods,
                                              const std::set<std::string>& skip_pods,
                                              ResolveCache* cache) const {
  ResolvedContainers out;
  ResolveCache found;  // what this call found: the next cache
  for (const auto& pod : pods) {
    if (pod.uid.empty() || skip_pods.count(pod.uid) != 0) continue;
    // What an earlier call found of this pod, unless it was forgotten since or its QoS class (so
    // its candidate paths) differs.
    const uint64_t qos_key = ResolveCache::Hash(pod.qos_class);
    const ResolveCache::Pod* known = nullptr;
    if (cache != nullptr) {
      auto it = cache->pods_.find(pod.uid);
      if (it != cache->pods_.end() && it->second.qos_class == qos_key) known = &it->second;
    }
    uint64_t pod_id = 0;
    bool pod_looked_up = false;
    SharedPod shared;  // made with the pod's first found container, shared by the rest
    for (const auto& c : pod.containers) {
      if (c.init || c.id.empty()) continue;
      if (std::string why = Malformed(pod, c); !why.empty()) {
        out.rejected.push_back(pod.ns + "/" + pod.name + " container " + c.name + ": " + why +
                               "; not classified");
        continue;
      }
      if (!pod_looked_up) {
        pod_id = known != nullptr ? known->cgroup_id : PodCgroupId(pod);
        pod_looked_up = true;
      }
      const uint64_t container_key = cache != nullptr ? ResolveCache::Key(c.id, c.runtime) : 0;
      std::optional<ObservedContainer> o;
      if (known != nullptr) {
        for (const auto& k : known->containers) {
          if (k.key != container_key) continue;
          o = Observed(pod, c, k.cgroup_id, pod_id, shared);
          break;
        }
      }
      if (!o) o = Observe(pod, c, pod_id, shared);
      if (!o) {
        out.missing.push_back(pod.ns + "/" + pod.name + " container " + c.name + " (" + c.id + ")");
        continue;
      }
      if (cache != nullptr) {
        ResolveCache::Pod& p = found.pods_[pod.uid];
        p.qos_class = qos_key;
        p.cgroup_id = pod_id;
        p.containers.push_back(ResolveCache::Container{container_key, o->cgroup_id});
      }
      out.containers.push_back(std::move(*o));
    }
  }
  if (cache != nullptr) {
    found.pods_.rehash(0);  // no more buckets than the pods need (it was grown one by one)
    *cache = std::move(found);
  }
  return out;
}

std::optional<ObservedContainer> ContainerResolver::ResolveOne(
    const pods::PodInfo& pod, const pods::ContainerInfo& container) const {
  if (pod.uid.empty() || container.init || container.id.empty()) return std::nullopt;
  if (!Malformed(pod, container).empty()) return std::nullopt;
  SharedPod shared;
  return Observe(pod, container, PodCgroupId(pod), shared);
}

std::optional<ContainerCgroupName> ParseContainerCgroupPath(const std::string& path) {
  std::string p = path;
  while (!p.empty() && p.back() == '/') p.pop_back();
  const auto slash = p.rfind('/');
  if (slash == std::string::npos) return std::nullopt;
  const std::string last = p.substr(slash + 1);
  const std::string parent_path = p.substr(0, slash);
  const std::string parent = parent_path.substr(parent_path.rfind('/') + 1);

  if (EndsWith(parent, ".slice") && EndsWith(last, ".scope")) {
    const auto pod_at = parent.rfind("-pod");
    const auto dash = last.rfind('-');
    if (pod_at == std::string::npos || dash == std::string::npos) return std::nullopt;
    const std::string uid = parent.substr(pod_at + 4, parent.size() - 6 - (pod_at + 4));
    const std::string id = last.substr(dash + 1, last.size() - 6 - (dash + 1));
    if (!IsPodUid(uid, '_') || !IsContainerId(id)) return std::nullopt;
    return ContainerCgroupName{Dashes(uid), id};
  }
  if (parent.rfind("pod", 0) == 0 && !EndsWith(parent, ".slice") &&
      IsPodUid(parent.substr(3), '-')) {
    std::string id = last.rfind("crio-", 0) == 0 ? last.substr(5) : last;  // CRI-O, cgroupfs
    if (!IsContainerId(id)) return std::nullopt;
    return ContainerCgroupName{parent.substr(3), id};
  }
  return std::nullopt;
}

std::optional<std::string> PodUidOfCgroupPath(const std::string& path) {
  size_t start = 0;
  while (start < path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    const std::string part = path.substr(start, end - start);
    start = end + 1;
    if (EndsWith(part, ".slice")) {
      // kubepods-burstable-pod<uid_>.slice (the QoS slices have no "-pod")
      const auto pod_at = part.rfind("-pod");
      if (pod_at == std::string::npos) continue;
      const std::string uid = part.substr(pod_at + 4, part.size() - 6 - (pod_at + 4));
      if (IsPodUid(uid, '_')) return Dashes(uid);
    } else if (part.rfind("pod", 0) == 0 && IsPodUid(part.substr(3), '-')) {
      return part.substr(3);
    }
  }
  return std::nullopt;
}

}  // namespace netqos::enforce
