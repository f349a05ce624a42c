// The enforcement reconciler: keeps the class map and every enforced NIC's shaping in step with the
// allocations and the containers running on the node. One worker thread does all the work; events
// (an allocation, a RemovePod, a topology change, a container cgroup appearing or going away) only
// wake it, and a periodic resync repairs whatever drifted. Bad states are reported once through a
// ProblemLog and never stop the other containers' enforcement.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cgroup/cgroup_paths.h"
#include "cgroup/cgroup_watcher.h"
#include "cgroup/pod_list.h"
#include "common/status.h"
#include "core/config.h"
#include "core/types.h"
#include "enforce/class_sync.h"
#include "enforce/class_table.h"
#include "enforce/container_resolver.h"
#include "enforce/leaf_queues.h"
#include "enforce/link_shaper.h"
#include "enforce/problem_log.h"
#include "shaping/htb_plan.h"

namespace netqos::enforce {

struct AllocationSnapshot {
  core::PodEntries allocations;
  std::vector<core::Nic> nics;  // every NIC the topology reports
};

struct EnforcerPorts {
  std::function<Result<std::vector<cgroup::PodInfo>>()> list_pods;
  std::function<AllocationSnapshot()> snapshot;
  // Removes a pod's allocations (residual state cleanup, spec 7.7).
  std::function<Status(const std::string& pod_uid)> remove_pod;
  ClassTable* table = nullptr;
  LinkShaper* shaper = nullptr;
  // Reads a shaped NIC's HTB class counters, for QueueStats(); optional (none: no queues).
  ReadLinkClassStats read_class_stats;
};

struct EnforcerOptions {
  core::PolicyConfig policy;
  std::string cgroup_mount;
  cgroup::CgroupLayout layout;
  // Which NICs to shape; empty = none (classify and count only).
  std::function<bool(const core::Nic&)> is_enforced;
  // Names given in --enforce-nics ("[netns/]name"), to report the ones that do not exist.
  std::vector<core::NicId> enforce_names;
  shaping::ShapingConfig shaping;
  std::chrono::milliseconds resync{std::chrono::seconds(30)};
  // How often the kubelet's pod list is re-read between resyncs, so that annotation changes
  // (class id, QoS level) and started containers the watcher could not name are picked up.
  // Katalyst's applyNetClass loop runs every 5 s.
  std::chrono::milliseconds pods_refresh{std::chrono::seconds(5)};
  // Pods with allocations that the kubelet has not listed for this long lose them (upstream:
  // 10 hits of a 30 s loop).
  std::chrono::milliseconds residual_state_after{std::chrono::minutes(5)};
  std::chrono::seconds residual_class_grace{std::chrono::minutes(30)};
};

struct EnforcerStatus {
  uint64_t passes = 0;
  uint64_t pod_list_failures = 0;
  bool pods_known = false;
  size_t classified = 0;  // entries the last pass wanted in the class map
  size_t capped = 0;      // of which with an HTB leaf
  std::vector<std::string> shaped_nics;
  std::vector<ProblemSnapshot> problems;
  uint64_t problem_reports_total = 0;
  // What the last pass put in the class map, by cgroup id.
  std::map<uint64_t, DesiredContainer> classes;
};

class Enforcer {
 public:
  // Adopts what the class map holds, runs the first pass synchronously (so the dataplane is
  // reconciled before the plugin serves), then starts the cgroup watcher and the worker.
  static Result<std::unique_ptr<Enforcer>> Start(EnforcerOptions options, EnforcerPorts ports);
  ~Enforcer();
  void Stop();

  void OnAllocated(const std::string& pod_uid);
  void OnPodRemoved(const std::string& pod_uid);
  void OnTopologyChanged();

  EnforcerStatus Status() const;
  // The HTB leaves' counters, read now (outside the lock, from the calling thread) and attributed
  // to the containers of the last pass: the drops, overlimits and backlog of each capped
  // container's own leaves. Read on demand so a scrape is never staler than the kernel.
  QueueSnapshot QueueStats() const;

 private:
  Enforcer(EnforcerOptions options, EnforcerPorts ports);
  void Wake(bool refresh_pods);
  void Loop();
  void Pass(bool full);
  void OnCgroupCreated(const std::string& path);

  EnforcerOptions options_;
  EnforcerPorts ports_;
  ContainerResolver resolver_;
  ClassSync sync_;
  ProblemLog problems_;
  shaping::MinorAllocator minors_;
  std::vector<std::unique_ptr<cgroup::CgroupWatcher>> watchers_;

  // Worker state (touched by the worker thread only, and by Start before it runs).
  std::vector<cgroup::PodInfo> pods_;
  std::set<std::string> known_container_ids_;              // guarded by mu_
  std::map<std::string, int> pending_ids_;                 // guarded by mu_: id -> refreshes tried
  std::optional<Clock::time_point> retry_at_;              // guarded by mu_
  std::map<std::string, Clock::time_point> missing_since_;  // pod uid -> first pass not listed
  struct Applied {
    int ifindex = 0;
    shaping::HtbPlan egress;
    shaping::HtbPlan ingress;
    bool ok = false;
  };
  std::map<core::NicId, Applied> applied_;
  std::map<uint64_t, std::string> pod_of_cgroup_;
  Clock::time_point next_full_;
  Clock::time_point next_pods_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool dirty_ = false;
  bool refresh_pods_ = false;
  bool stopping_ = false;
  std::map<std::string, Clock::time_point> tombstones_;  // pods removed through RemovePod
  EnforcerStatus status_;
  std::vector<LinkLeaves> leaf_links_;  // the shaped links of the last pass and their leaves
  mutable std::mutex stats_log_mu_;
  mutable std::string stats_error_logged_;  // the last queue-read failure logged ("" = none)
  std::thread worker_;
};

}  // namespace netqos::enforce
