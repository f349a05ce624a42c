// What the enforcer's worker publishes to the other threads: its status (Status, the metrics), the
// shaped links' leaves (QueueStats) and the pod list with its container index (whether a starting
// container got its class). One writer, the worker, under one lock; readers get copies or answers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/histogram.h"
#include "enforce/desired_state.h"
#include "enforce/enforcer_inbox.h"
#include "enforce/leaf_queues.h"
#include "enforce/problem_log.h"
#include "enforce/runtime_pods.h"
#include "pods/pod_list.h"
#include "shaping/shaping_mode.h"

namespace netqos::enforce {

// What a failed kernel write is counted under (EnforcerStatus::kernel_failures).
enum class KernelTarget { kClassMap, kShaping, kEdtMap, kPodAddressMap };
inline constexpr KernelTarget kKernelTargets[] = {KernelTarget::kClassMap, KernelTarget::kShaping,
                                                  KernelTarget::kEdtMap,
                                                  KernelTarget::kPodAddressMap};
const char* KernelTargetName(KernelTarget target);  // "class_map", "shaping", ...

// Upper bounds of a pass's time: a container added takes about a millisecond, a whole pass on a
// node of 10,000 containers seconds, the first one after a cold start about ten.
const std::vector<double>& PassSecondsBounds();

struct EnforcerStatus {
  uint64_t passes = 0;
  uint64_t pod_list_failures = 0;
  bool pods_known = false;
  size_t classified = 0;  // entries the last pass wanted in the class map
  size_t capped = 0;      // of which with an HTB leaf
  size_t pod_veths = 0;   // pods classified at their veth
  std::vector<std::string> shaped_nics;
  // The egress shaping mode of each shaped NIC (by identifier), and why.
  std::map<std::string, shaping::ModeChoice> shaping_modes;
  std::vector<ProblemSnapshot> problems;
  uint64_t problem_reports_total = 0;
  // The time of each wake-up that ran a pass (pod list read included), by its scope
  // (PassScopeName: "containers", "all", "resync", "full").
  std::map<std::string, HistogramCounts> pass_seconds;
  // Wake-ups that did not finish: an exception, or a pass that could not read the class map.
  uint64_t pass_failures = 0;
  // Wake-ups in which a kernel write (or the read it diffs against) failed, by target:
  // "class_map", "shaping" (a NIC's qdiscs), "edt_map", "pod_address_map". The next pass retries.
  std::map<std::string, uint64_t> kernel_failures;
  // What the last pass put in the class map, by cgroup id.
  std::map<uint64_t, DesiredContainer> classes;
  // Pods whose annotation the tenant policy refuses or bounds now, per (namespace, annotation).
  std::map<std::pair<std::string, std::string>, uint64_t> refused_annotations;
};

// Everything on the board. The worker changes it through EnforcerStatusBoard::Publish only.
struct PublishedState {
  EnforcerStatus status;
  std::vector<LinkLeaves> leaf_links;  // the shaped links of the last pass and their leaves
  std::vector<pods::PodInfo> pods;     // the pod list, with what the runtime said merged in
  // Where each container of `pods` is, as last indexed. Never changed once built: the inbox is
  // handed the same index (EnforcerInbox::PublishIndex) and reads it under its own lock only.
  std::shared_ptr<const ContainerIndex> known_containers = std::make_shared<const ContainerIndex>();
  // The containers the runtime's record added to `pods` since the index was built (cleared when
  // it is rebuilt): a small map beside the index rather than a copy of a node's worth of it.
  ContainerIndex runtime_known;

  // Where container `container_id` is in `pods` (the index, then runtime_known); null when not.
  const ContainerRef* FindContainer(const std::string& container_id) const;
  // Whether status.classes holds an entry for that container, found by its pod and name as the
  // pod list gives them (the class entries are keyed by cgroup). A restarted container's earlier
  // entry (same pod, same name) counts until a pass drops it: that errs towards letting it start.
  bool HasClass(const std::string& container_id) const;
  // Rebuilds known_containers from `pods` and clears runtime_known; returns the new index.
  std::shared_ptr<const ContainerIndex> IndexContainers();
  // Notes the containers a merge of the runtime's record added to `pods` (RuntimePods::Merged).
  void AddRuntimeContainers(const RuntimePods::Merged& merged);
};

// The lock contract. One writer: the worker thread, which changes the state only inside
// Publish (the board's lock held while `change` runs) and reads it through worker() without the
// lock, since nobody else writes. Every other thread reads only through Status, LeafLinks and
// HasClass, which take the lock and return copies or answers, never references. `change` may call
// into the enforcer's inbox (lock order: the board's, then the inbox's); nothing holding the
// inbox's lock calls the board, and no reader waits on anything while holding the board's lock.
class EnforcerStatusBoard {
 public:
  // Every pass_seconds series and kernel_failures target there from the start, at zero, so that
  // rates and alerts see the first one.
  EnforcerStatusBoard();

  // --- The worker.
  template <typename Change>
  decltype(auto) Publish(Change&& change) {
    std::lock_guard<std::mutex> lock(mu_);
    return std::forward<Change>(change)(state_);
  }
  // The worker's own reads, without the lock: valid on the worker thread only.
  const PublishedState& worker() const { return state_; }

  // --- Any thread.
  // The status as last published (problems are not the board's: the enforcer adds them).
  EnforcerStatus Status() const;
  // The shaped links' leaves and the classes they belong to, from the same publication.
  struct Leaves {
    std::vector<LinkLeaves> links;
    std::map<uint64_t, DesiredContainer> classes;
  };
  Leaves LeafLinks() const;
  bool HasClass(const std::string& container_id) const;

 private:
  mutable std::mutex mu_;
  PublishedState state_;
};

}  // namespace netqos::enforce
