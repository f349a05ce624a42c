// Finds the cgroups of the containers the kubelet reports (both cgroup drivers, every runtime's
// naming) and lists which cgroups exist, so the reconciler can tell "gone" from "not listed".
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
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

class ContainerResolver {
 public:
  // Reads the tree through `tree`, every member set (cgroup_tree.h).
  ContainerResolver(std::string cgroup_mount, cgroup::CgroupLayout layout, CgroupTree tree);

  // Regular (non-init) started containers of every pod not in `skip_pods`.
  ResolvedContainers Resolve(const std::vector<pods::PodInfo>& pods,
                             const std::set<std::string>& skip_pods) const;
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

}  // namespace netqos::enforce
