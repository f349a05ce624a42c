// What the container runtime said of its pods and containers (NRI's RunPodSandbox, CreateContainer,
// StartContainer, Synchronize), kept next to the pod source's list. The runtime speaks before the
// pod source can: a kubelet lists a container's id only after its next status update, a CRI read
// may predate the pod's network. Merged into the pod list, it lets a new container be classified
// the moment its cgroup exists. The pod source stays the authority for everything it lists: the
// runtime only fills in what the list lacks.
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "pods/pod_list.h"

namespace netqos::enforce {

class RuntimePods {
 public:
  // At most this many addresses per pod (the pod list's own limit), pods and containers per pod:
  // a runtime that never removes what it reported cannot grow this without end.
  static constexpr size_t kMaxAddresses = 16;
  static constexpr size_t kMaxPods = 100000;
  static constexpr size_t kMaxContainersPerPod = 256;

  // Records a pod's metadata (replacing what was recorded for its uid, keeping its containers).
  // Addresses that do not parse, repeats and those past kMaxAddresses are dropped; a hostNetwork
  // pod keeps none. false when the pod is refused: no uid, or kMaxPods reached.
  bool PutPod(pods::PodInfo pod);
  // PutPod(pod), then the container, by id. Another container of the same name is replaced: the
  // runtime creates a container's next instance only once the previous one has exited.
  bool PutContainer(const pods::PodInfo& pod, pods::ContainerInfo container);
  void ForgetPod(const std::string& uid);
  void ForgetContainer(const std::string& uid, const std::string& container_id);
  // Whether a recorded pod has this container (by id).
  bool HasContainer(const std::string& container_id) const;
  size_t pods() const { return pods_.size(); }

  // Whether anything changed since the last MergeInto.
  bool dirty() const { return !changed_.empty(); }

  struct Merged {
    bool changed = false;  // `pods` changed
    // Where the containers whose ids `pods` did not have are now: (pod, container) indexes.
    std::vector<std::pair<size_t, size_t>> containers;
  };
  // Into the pod source's `pods`, skipping uids in `skip` (pods removed through the kubelet):
  // - a listed pod without addresses takes the runtime's (never a hostNetwork one);
  // - a listed pod's container with an empty id takes the runtime's of the same name; a runtime
  //   container whose id the pod lists nowhere is added;
  // - a pod the list lacks is added whole.
  // Every recorded pod when `all` (a new pod list), else only those changed since the last merge
  // (the new-container path: a few pods, not the node's). Idempotent; indexes already in `pods`
  // stay valid.
  Merged MergeInto(std::vector<pods::PodInfo>& pods, const std::set<std::string>& skip, bool all);

 private:
  // Into the recorded `pod`: a container of the same id or name is replaced.
  bool AddContainer(pods::PodInfo& pod, pods::ContainerInfo container);

  std::map<std::string, pods::PodInfo> pods_;         // by uid
  std::map<std::string, std::string> container_pod_;  // container id -> pod uid
  std::set<std::string> changed_;                     // uids changed since the last merge
};

}  // namespace netqos::enforce
