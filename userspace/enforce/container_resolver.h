// Finds the cgroups of the containers the kubelet reports (both cgroup drivers, every runtime's
// naming) and lists which cgroups exist, so the reconciler can tell "gone" from "not listed".
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cgroup/cgroup_paths.h"
#include "common/status.h"
#include "enforce/cgroup_tree.h"
#include "enforce/desired_state.h"
#include "pods/pod_list.h"

namespace netqos::enforce {

struct ResolvedContainers {
  std::vector<ObservedContainer> containers;
  // Started containers whose cgroup was not found (yet): "ns/pod container c (id)".
  std::vector<std::string> missing;
  // Containers not looked for because the pod list named them with a uid or id that is not one
  // (it would be joined into a cgroup path): what is wrong, naming the pod.
  std::vector<std::string> rejected;
};

// What the containers of one pod share (desired_state.h).
struct SharedPod {
  PodMetaPtr meta;
  PodAnnotationsPtr annotations;
};

// What earlier passes found of each pod's cgroups, so that a pass re-resolves only the pods whose
// cgroups changed since (at 10,000 containers resolving them all is a stat of every candidate
// path: a third of the idle daemon's CPU). Trustworthy only while something reports every cgroup
// created or removed (the cgroup watcher): the enforcer forgets a pod on each such report, and
// everything when a report may have been lost, and on the rare full resync.
class ResolveCache {
 public:
  // The pod's cgroup (or one of its containers') was created or removed.
  void ForgetPod(const std::string& pod_uid) { pods_.erase(pod_uid); }
  void ForgetAll() { pods_.clear(); }

 private:
  friend class ContainerResolver;
  // A pod's QoS class and its containers' ids and runtimes are kept as 64-bit hashes, half the
  // memory of the strings at 10,000 pods; a hash is only ever compared with those of the same
  // pod's (few) containers.
  static uint64_t Hash(std::string_view s) { return std::hash<std::string_view>{}(s); }
  static uint64_t Key(std::string_view id, std::string_view runtime) {
    return Hash(id) ^ (Hash(runtime) * 0x9e3779b97f4a7c15ULL);  // no string made per container
  }
  struct Container {
    uint64_t key = 0;  // Hash of its id and runtime (the candidates looked for)
    uint64_t cgroup_id = 0;
  };
  struct Pod {
    uint64_t qos_class = 0;  // Hash of its QoS class (part of the candidates)
    uint64_t cgroup_id = 0;
    std::vector<Container> containers;  // usually one or two: searched in order
  };
  std::unordered_map<std::string, Pod> pods_;  // by pod uid
};

class ContainerResolver {
 public:
  // Reads the tree through `tree`, every member set (cgroup_tree.h).
  ContainerResolver(std::string cgroup_mount, cgroup::CgroupLayout layout, CgroupTree tree);

  // Regular (non-init) started containers of every pod not in `skip_pods`.
  // With `cache`: containers found there are taken from it without a look at the tree, and it is
  // left holding what this call found (the pods not listed any more dropped).
  ResolvedContainers Resolve(const std::vector<pods::PodInfo>& pods,
                             const std::set<std::string>& skip_pods,
                             ResolveCache* cache = nullptr) const;
  // One container of `pod` (a cgroup that just appeared); nullopt for an init or not started
  // container, a malformed uid or id, or when its cgroup is not found.
  std::optional<ObservedContainer> ResolveOne(const pods::PodInfo& pod,
                                              const pods::ContainerInfo& container) const;

  const std::string& mount() const { return mount_; }

 private:
  uint64_t PodCgroupId(const pods::PodInfo& pod) const;  // 0 when not found
  // `shared`: the pod's metadata and annotations, made once per pod and shared by its
  // containers; empty until the pod's first container is found, then set.
  std::optional<ObservedContainer> Observe(const pods::PodInfo& pod,
                                           const pods::ContainerInfo& container,
                                           uint64_t pod_cgroup_id, SharedPod& shared) const;
  // The container found with id `cgroup_id` (looked up, or known from the cache).
  static ObservedContainer Observed(const pods::PodInfo& pod, const pods::ContainerInfo& container,
                                    uint64_t cgroup_id, uint64_t pod_cgroup_id, SharedPod& shared);

  std::string mount_;
  cgroup::CgroupLayout layout_;
  CgroupTree tree_;
};

struct ContainerCgroupName {
  std::string pod_uid;       // with dashes, as in the pod's metadata.uid
  std::string container_id;  // without runtime prefix
};

// Recognises a container cgroup path of either driver:
//   .../pod<uid>/<id>                       (cgroupfs)
//   .../kubepods-...-pod<uid_>.slice/<runtime>-<id>.scope   (systemd)
// Anything else (pod, QoS or slice directories) gives nullopt.
std::optional<ContainerCgroupName> ParseContainerCgroupPath(const std::string& path);

// The pod a cgroup path is in or below (its pod directory, a container's, or one a container made
// inside its own), by the pod directory's name of either driver: `pod<uid>` or
// `kubepods-...-pod<uid_>.slice`; the uid with dashes. nullopt above the pods (a QoS level's
// directory, the kubelet's root) or for a path of neither shape.
std::optional<std::string> PodUidOfCgroupPath(const std::string& path);

}  // namespace netqos::enforce
