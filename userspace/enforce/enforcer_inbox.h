// The enforcer's event inbox: what the event threads (allocations, RemovePod, cgroup watchers, NRI,
// topology and tenant policy changes) tell the worker, recorded under one lock and taken by the
// worker at the start of each wake-up; and OnContainerStarting's barrier, which lets a caller wait
// for a wake-up that has seen its event. The inbox never calls out while holding its lock.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "enforce/class_sync.h"
#include "enforce/runtime_pods.h"
#include "pods/pod_list.h"

namespace netqos::enforce {

// Where a listed container is in the worker's pod list: its pod's index, its index in the pod.
struct ContainerRef {
  size_t pod = 0;
  size_t container = 0;
};
// Container id -> where it is. The worker builds a new one whenever its pod list changes and never
// modifies one it has published, so other threads may read a published index without a lock.
using ContainerIndex = std::map<std::string, ContainerRef>;

// What one wake-up takes (EnforcerInbox::Take).
struct InboxEvents {
  // Containers whose cgroup appeared and which were known (listed, or told of by the runtime)
  // when they were recorded; in the order recorded, repeats kept.
  std::vector<std::string> created;
  std::set<std::string> allocated;  // pods allocated since the last take
  bool refresh_pods = false;        // the pod list is to be read again
  bool general = false;             // something only a whole pass handles happened
  uint64_t wakeup = 0;              // the barrier number this wake-up covers (MarkDone's argument)
};

// What the worker sees when WaitForWork returns.
struct InboxWaiting {
  bool stopping = false;
  bool refresh_pods = false;
  bool general = false;
};

class EnforcerInbox {
 public:
  using Clock = enforce::Clock;
  // How long a pod removed through RemovePod is kept out of classification when the kubelet still
  // lists it (terminating): its entries are cleared at once, not re-added as unallocated.
  static constexpr auto kTombstoneTtl = std::chrono::minutes(10);
  // How many pod-list refreshes a container cgroup the pod list does not know yet waits for.
  static constexpr int kPendingRetries = 30;
  // At most this many queued container ids (created and pending each) and allocated pods: an
  // event storm the worker cannot keep up with turns into a whole pass, which finds every listed
  // container and reads every allocation, instead of growing the queues without end.
  static constexpr size_t kMaxQueued = 100000;

  // --- The event threads.
  // Something only a whole pass handles happened (a cgroup removed, a topology or tenant policy
  // change, a watcher failure).
  void RecordGeneral();
  void RecordAllocated(const std::string& pod_uid);
  // RemovePod: the pod is tombstoned from `now` and forgotten by the runtime's record; a whole
  // pass follows.
  void RecordPodRemoved(const std::string& pod_uid, Clock::time_point now);
  // A container's cgroup appeared. Known to the worker's last published index, or to the
  // runtime's record (which the wake-up merges before it looks the container up): queued for the
  // wake-up to add. Unknown: kept pending and the pod list is read again.
  void RecordContainerCreated(const std::string& container_id);
  // RecordContainerCreated, and asks for a wake-up numbered above every earlier one; returns its
  // number, for AwaitWakeup.
  uint64_t RecordContainerStarting(const std::string& container_id);
  // Asks for a wake-up numbered above every earlier one, with nothing else recorded (the wake-up
  // then takes what is there, possibly nothing); returns its number, for AwaitWakeup.
  uint64_t RequestWakeup();
  // Waits, at most `timeout`, until a wake-up that took `ticket` (or a later one) is done. false on
  // timeout or when stopping.
  bool AwaitWakeup(uint64_t ticket, std::chrono::milliseconds timeout);
  // Nothing recorded since the last take (pending ids waiting for a pod-list read do not count:
  // their retries are the worker's timer's).
  bool Idle() const;
  // What the runtime says (runtime_pods.h). No wake-up, except RuntimePodRemoved, which has the
  // pod list read again.
  void RuntimePod(pods::PodInfo pod);
  void RuntimeContainer(const pods::PodInfo& pod, pods::ContainerInfo container);
  void RuntimePodRemoved(const std::string& pod_uid);
  void RuntimeContainerRemoved(const std::string& pod_uid, const std::string& container_id);
  // Wakes the worker and every AwaitWakeup for good.
  void Stop();
  bool stopping() const;

  // --- The worker.
  // Blocks until there is work, stopping, or `deadline`.
  InboxWaiting WaitForWork(Clock::time_point deadline);
  // Asks the next take for a pod-list read (the worker's own timers), without waking anyone.
  void RequestPodRefresh();
  // Everything recorded since the last take; the next take starts empty.
  InboxEvents Take();
  // The wake-up that took `wakeup` is done: AwaitWakeup(ticket <= wakeup) returns true.
  void MarkDone(uint64_t wakeup);
  // The worker's container index, for RecordContainerCreated's check (see ContainerIndex).
  void PublishIndex(std::shared_ptr<const ContainerIndex> index);
  // Merges what the runtime said into `pods` (RuntimePods::MergeInto, tombstoned pods skipped):
  // the pods that changed since the last merge, or every one when `force` (a new pod list).
  RuntimePods::Merged MergeRuntimePodsInto(std::vector<pods::PodInfo>& pods, bool force);
  // After a pod-list read: pending ids the published index now knows, and those tried more than
  // kPendingRetries times, are dropped. Returns how many remain pending.
  size_t RetryPending();
  // The pods tombstoned now.
  std::set<std::string> Tombstoned() const;
  // Drops the tombstones of pods gone from the pod list (when `pods_known`) or older than
  // kTombstoneTtl, and returns the live ones.
  std::set<std::string> ExpireTombstones(const std::set<std::string>& listed, bool pods_known,
                                         Clock::time_point now);

 private:
  void RecordContainerCreatedLocked(const std::string& container_id);
  uint64_t RequestWakeupLocked();

  mutable std::mutex mu_;
  std::condition_variable work_cv_;  // the worker's: there is work, or stopping
  std::condition_variable done_cv_;  // AwaitWakeup's: a wake-up is done, or stopping
  bool dirty_ = false;               // any work: wakes the worker
  bool refresh_pods_ = false;
  bool general_ = false;
  bool stopping_ = false;
  std::vector<std::string> created_ids_;
  std::map<std::string, int> pending_ids_;  // id -> refreshes tried
  std::set<std::string> allocated_uids_;
  std::map<std::string, Clock::time_point> tombstones_;  // pods removed through RemovePod
  RuntimePods runtime_pods_;
  std::shared_ptr<const ContainerIndex> index_ = std::make_shared<const ContainerIndex>();
  // The barrier: each RecordContainerStarting asks for a wake-up numbered above every earlier
  // one; a take takes the highest number asked for, and MarkDone publishes it.
  uint64_t wakeups_requested_ = 0;
  uint64_t wakeups_done_ = 0;
};

}  // namespace netqos::enforce
