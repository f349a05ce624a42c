// The enforcement reconciler: keeps the class map and every enforced NIC's shaping in step with the
// allocations and the containers running on the node. One worker thread does all the work; events
// (an allocation, a RemovePod, a topology change, a container cgroup appearing or going away) are
// only recorded in its inbox (enforcer_inbox.h) and wake it, and a periodic resync repairs
// whatever drifted. A wake-up does what it needs (see
// pass_scope.h): a container cgroup appearing adds that container only, an unchanged pod list
// costs its read only, everything else recomputes the whole desired state. Bad states are reported
// once through a ProblemLog and never stop the other containers' enforcement.
#pragma once

#include <chrono>
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
#include "common/status.h"
#include "core/config.h"
#include "core/low_priority_group.h"
#include "core/types.h"
#include "enforce/cgroup_changes.h"
#include "enforce/cgroup_events.h"
#include "enforce/class_sync.h"
#include "enforce/class_table.h"
#include "enforce/container_resolver.h"
#include "enforce/desired_state.h"
#include "enforce/edt_rates.h"
#include "enforce/enforcer_inbox.h"
#include "enforce/enforcer_status_board.h"
#include "enforce/leaf_queues.h"
#include "enforce/link_shaper.h"
#include "enforce/pass_scope.h"
#include "enforce/pod_address_table.h"
#include "enforce/problem_log.h"
#include "enforce/residual_pods.h"
#include "enforce/tenant_policy.h"
#include "enforce/veth_ports.h"
#include "enforce/veth_sync.h"
#include "pods/pod_list.h"
#include "shaping/htb_plan.h"

namespace netqos::enforce {

struct AllocationSnapshot {
  core::PodEntries allocations;
  std::vector<core::Nic> nics;       // every NIC the topology reports
  core::MachineState machine_state;  // the low-priority groups' allocatable
};

struct EnforcerPorts {
  // The node's pods (pods::PodSource::Read): nullopt when unchanged since the last read.
  std::function<Result<std::optional<std::vector<pods::PodInfo>>>(bool force)> read_pods;
  std::function<AllocationSnapshot()> snapshot;
  // The allocations of a few pods (a new container's): what the reaction between passes reads,
  // so that the enforcer keeps no copy of every pod's allocations. Unset: taken from snapshot().
  std::function<core::PodEntries(const std::vector<std::string>& pod_uids)> pod_allocations;
  // Removes a pod's allocations (residual state cleanup).
  std::function<Status(const std::string& pod_uid)> remove_pod;
  ClassTable* table = nullptr;
  LinkShaper* shaper = nullptr;
  // Pod address -> cgroup, for pods behind a CNI; optional (none: their routed traffic is not
  // classified).
  PodAddressTable* addresses = nullptr;
  // Pods classified at the host end of their veths (veth_sync.h); optional, all three or none
  // (none: pods behind a CNI are classified by their addresses at the NIC only).
  VethSource* veth_source = nullptr;
  VethTable* veth_table = nullptr;
  VethAttacher* veth_attacher = nullptr;
  // Attaches the pods' setsockopt guard to the kubelet's cgroup roots (bpf::Dataplane::
  // GuardPodRoots); optional. Called on full passes until it succeeds: a root the kubelet makes
  // after netqosd started is guarded then. NotFound (roots still missing) is no problem.
  std::function<Status()> guard_pod_roots;
  // Container -> egress rate for NICs in EDT mode; optional (none: EDT-mode NICs pace nobody).
  EdtRateTable* edt = nullptr;
  // Leaf -> its namespace's aggregate, for NICs in EDT mode; optional (none: aggregates are held
  // on EDT NICs' ingress only).
  EdtAggregateTable* edt_aggregates = nullptr;
  // Reads a shaped NIC's HTB class counters, for QueueStats(); optional (none: no queues).
  ReadLinkClassStats read_class_stats;
  // The cgroup tree: which candidate directory exists, its id, the ids below a root (required;
  // cgroup_tree.h).
  CgroupTree cgroup_tree;
  // Starts watching one kubelet cgroup root (cgroup_events.h; the daemon's is inotify's,
  // enforce/kernel/inotify_cgroup_watch.h); optional (none: new containers wait for the next
  // pod-list refresh or resync).
  WatchCgroups watch_cgroups;
  // The time; optional (none: Clock::now). Tests move it to age residual entries.
  std::function<Clock::time_point()> now;
  // The tenant policy in force, read at every pass; optional (none, or null: the built-in
  // default, tenant_policy.h).
  std::function<std::shared_ptr<const TenantPolicy>()> tenant_policy;
};

struct EnforcerOptions {
  core::PolicyConfig policy;
  std::string pods_source;  // where the pods come from (PodSource::Describe), for messages
  std::string cgroup_mount;
  cgroup::CgroupLayout layout;
  // Which NICs to shape; empty = none (classify and count only).
  std::function<bool(const core::Nic&)> is_enforced;
  // Names given in --enforce-nics ("[netns/]name"), to report the ones that do not exist.
  std::vector<core::NicId> enforce_names;
  shaping::ShapingConfig shaping;
  std::chrono::milliseconds resync{std::chrono::seconds(30)};
  // How often a resync is a full one, which also looks every container's cgroup up again, parses
  // the pod list even when its bytes are unchanged and re-applies every NIC's trees (reading them
  // back, repairing what someone else changed). The resyncs between take the cgroups the watcher
  // reported no change of as they were. At most `resync` (0 included): every resync is full.
  std::chrono::milliseconds full_resync{0};
  // How often the kubelet's pod list is re-read between resyncs, so that annotation changes
  // (class id, QoS level) and started containers the watcher could not name are picked up.
  // Katalyst's applyNetClass loop runs every 5 s.
  std::chrono::milliseconds pods_refresh{std::chrono::seconds(5)};
  // Pods with allocations that the kubelet has not listed for this long lose them (upstream:
  // 10 hits of a 30 s loop).
  std::chrono::milliseconds residual_state_after{std::chrono::minutes(5)};
  std::chrono::seconds residual_class_grace{std::chrono::minutes(30)};
};

class Enforcer {
 public:
  // Adopts what the class map holds, starts the worker and returns: the worker starts the cgroup
  // watchers, then runs the first full pass (Status().passes stays 0 until it is done), so the
  // daemon serves the kubelet without waiting for a node's worth of cgroups, classes and qdiscs.
  static Result<std::unique_ptr<Enforcer>> Start(EnforcerOptions options, EnforcerPorts ports);
  ~Enforcer();
  void Stop();

  void OnAllocated(const std::string& pod_uid);
  void OnPodRemoved(const std::string& pod_uid);
  void OnTopologyChanged();
  // The tenant policy changed: a whole pass applies it.
  void OnTenantPolicyChanged();
  // The container runtime is about to start `container_id` (NRI's StartContainer: its cgroup
  // exists, its process has not run yet). Handled exactly as the cgroup watcher's event for the
  // container's cgroup; then waits, at most `timeout`, until a wake-up of the worker that saw it
  // has finished. true when the container's class entry is then in the map; false on timeout,
  // when stopping, or when that wake-up did not place it (its pod not listed yet, a class map
  // write refused): the event stays queued and the class comes as it would without NRI.
  bool OnContainerStarting(const std::string& container_id, std::chrono::milliseconds timeout);
  // What the container runtime says of a pod (NRI's RunPodSandbox and Synchronize) and of a
  // container it creates or starts (with its pod), possibly before the pod source lists them
  // (runtime_pods.h): they fill in what the pod list lacks, the pod's addresses included (never
  // those of a hostNetwork pod: the node's are nobody's to claim), so that a container the pod
  // list does not have yet is classified as soon as its cgroup exists. Malformed, duplicate and
  // surplus addresses are dropped. No wake-up by themselves: the container's cgroup (or its
  // StartContainer) brings one.
  void OnRuntimePod(pods::PodInfo pod);
  void OnRuntimeContainer(const pods::PodInfo& pod, pods::ContainerInfo container);
  // The runtime removed the pod (RemovePodSandbox) or the container (RemoveContainer): forgotten,
  // and the pod list is read again, so that nothing the runtime alone listed is kept.
  void OnRuntimePodRemoved(const std::string& pod_uid);
  void OnRuntimeContainerRemoved(const std::string& pod_uid, const std::string& container_id);

  // Returns once every event recorded before the call has been taken by a wake-up of the worker
  // that then finished, and nothing new was recorded meanwhile: the worker is idle, waiting for
  // events or its timers (the pod-list refresh, the retries of containers not listed yet, the
  // resync), which it does not wait for. false on timeout or when stopping. Tests use it where
  // they would otherwise poll for the worker to have handled what they told it.
  bool WaitUntilIdle(std::chrono::milliseconds timeout);

  EnforcerStatus Status() const;
  // The HTB leaves' counters, read now (outside the lock, from the calling thread) and attributed
  // to the containers of the last pass: the drops, overlimits and backlog of each capped
  // container's own leaves. Read on demand so a scrape is never staler than the kernel.
  QueueSnapshot QueueStats() const;

 private:
  struct Applied {
    int ifindex = 0;
    shaping::HtbPlan egress;
    shaping::HtbPlan ingress;
    bool ok = false;
    // The mode of the last successful apply: kept when an apply fails, so the containers of a
    // NIC still pacing in EDT mode keep their rates.
    std::optional<shaping::ModeChoice> mode;
  };

  Enforcer(EnforcerOptions options, EnforcerPorts ports);
  void Wake();  // something only a whole pass handles happened
  // The options of a pass: the shaping flags and the tenant policy in force now.
  DesiredOptions PassOptions() const;
  // On the worker, before its first pass: one watch (ports_.watch_cgroups) per kubelet cgroup root.
  void StartWatchers();
  // One Work, its failure logged (the loop goes on).
  void RunPass(bool resync, bool full);
  void Loop();
  // One wake-up: reads the pod list if due, then runs the pass its scope needs. `resync`: the
  // periodic resync is due; `full`: a full one.
  void Work(bool resync, bool full);
  // Reads the pod list; true when it changed or could not be read.
  bool RefreshPods(bool force, Clock::time_point now);
  // Recomputes the whole desired state and diffs it against the class map and the shaping;
  // `resync` (the periodic resync) also drops residual pods and re-checks the pod veths, `full`
  // (a full resync) also resolves every cgroup again and re-applies unchanged plans.
  // false when it could not read the class map (nothing was changed).
  bool Pass(bool resync, bool full);
  // The containers of pods(), through the resolve cache when the watchers make it trustworthy
  // and `full` does not ask for every cgroup anew.
  ResolvedContainers ResolveContainers(const std::set<std::string>& tombstoned, bool full);
  // Notes that a kernel write of this wake-up failed (EnforcerStatus::kernel_failures).
  void KernelFailed(KernelTarget target) { own_.kernel_failed.insert(target); }
  // Pass's phases. Tombstones of pods gone or expired are dropped; the live ones returned.
  std::set<std::string> ExpireTombstones(Clock::time_point now);
  // The enforced NICs that can be shaped now; reports those that cannot, and missing names.
  std::map<core::NicId, core::Nic> EnforcedNics(const std::vector<core::Nic>& nics);
  void SyncClasses(const std::map<uint64_t, DesiredContainer>& desired,
                   const std::map<uint64_t, ClassEntry>& current,
                   const std::set<std::string>& tombstoned, Clock::time_point now);
  void DropResidualPods(const core::PodEntries& allocations, Clock::time_point now);
  Clock::time_point Now() const;
  // Adds the class entries and leaves of containers whose cgroup appeared (new_containers.cc).
  void AddContainers(const std::vector<std::string>& container_ids);
  // Builds the link's plans from the leaves and applies them when they changed (or `force`);
  // false after a reported failure (enforcer_links.cc).
  // With `grown`: set when the change went as a patch, to the container leaves it added (what
  // the link's LinkLeaves gain), so that the caller need not list the link's leaves again.
  bool ApplyLink(const EnforcedLink& link, bool force, std::optional<LinkLeaves>* grown = nullptr);
  // When the new plans only add or change classes of those applied last: sends just that
  // (LinkShaper::Patch) and takes the plans as applied. false: the whole plans must be applied.
  bool PatchLink(const core::Nic& nic, Applied& a, shaping::HtbPlan& eplan, shaping::HtbPlan& iplan,
                 std::optional<LinkLeaves>* grown);
  LinkLeaves LeavesOf(const core::Nic& nic, const Applied& a) const;
  // The egress tree's level classes; none in EDT mode (no HTB tree on egress).
  static std::vector<LevelClass> EgressLevels(const Applied& a);
  void OnCgroupCreated(const std::string& path);
  // On the worker, inside the board's Publish: what the runtime said into its pods (EnforcerInbox::
  // MergeRuntimePodsInto): the pods it changed, or every one when `force` (the pods were read
  // again); the ids it adds go into its runtime_known.
  void MergeRuntimePods(PublishedState& published, bool force);
  // The worker's reads of what it published (no lock: it is the only writer).
  const std::vector<pods::PodInfo>& pods() const { return board_.worker().pods; }
  const std::map<uint64_t, DesiredContainer>& classes() const {
    return board_.worker().status.classes;
  }
  // Brings the pod address table in step with pods() and `classes` (pod_addresses.h).
  void SyncAddresses(const std::map<uint64_t, DesiredContainer>& classes);
  // Brings the EDT map in step with the egress leaves of the NICs in EDT mode (edt_rates.h).
  void SyncEdt();
  // The new-container path's: writes the entries of `added` (new egress leaves) that the map does
  // not hold yet, by what the last SyncEdt left (SyncEdt itself when that is not known).
  void SyncEdtAdded(const std::map<core::NicId, std::vector<shaping::ContainerAllocation>>& added);
  // The NICs whose egress runs in EDT mode, as last applied.
  std::set<core::NicId> EdtNics() const;
  // Classifies the pods of `classes` at their veths (veth_sync.h) and returns the class entries
  // that changed; reports its problems.
  VethSyncResult SyncVeths(const std::map<uint64_t, DesiredContainer>& classes, bool full);
  // SyncVeths over the last pass's classes, between passes: for a new container of a pod with
  // addresses, and on pod refreshes while a pod waits for its veth.
  void SyncVethsBetweenPasses();

  // What the worker thread alone reads and writes (and Start, before the thread runs). No other
  // thread touches any of it: what they read is on board_, what they tell the worker is in inbox_.
  struct WorkerState {
    WorkerState(const EnforcerOptions& options, const EnforcerPorts& ports);

    ContainerResolver resolver;
    // What the last whole pass resolved (the pods the watchers reported no change of since are
    // taken from it); used only while every kubelet root has a running watch.
    ResolveCache resolve_cache;
    bool watching_all = false;  // every kubelet root has a watch (StartWatchers)
    ClassSync sync;
    shaping::MinorAllocator minors;
    ResidualPods residual;  // pods with allocations not listed
    VethSync veths;
    bool pods_known = false;
    std::optional<std::string> pods_error;  // the last read's failure, reported by the next pass
    std::optional<Clock::time_point> retry_at;  // when the inbox's pending ids are looked up again
    bool roots_guarded = false;                 // guard_pod_roots succeeded
    // What the last whole pass worked from, so that a new container is added on top of it.
    bool baseline = false;
    bool unresolved = false;  // listed containers without a cgroup were left
    std::vector<EnforcedLink> links;
    std::map<core::NicId, core::Nic> nic_of;
    std::map<core::NicId, std::vector<shaping::ContainerAllocation>> egress_leaves;
    std::map<core::NicId, std::vector<shaping::ContainerAllocation>> ingress_leaves;
    // The namespace aggregates' classes of the last whole pass (a container added between passes
    // into an aggregated namespace asks for a whole pass instead).
    std::map<core::NicId, std::vector<shaping::GroupClass>> egress_groups;
    std::map<core::NicId, std::vector<shaping::GroupClass>> ingress_groups;
    AnnotatedByPod annotated;  // the bandwidth annotations each pod was last enforced with
    // (pod uid, annotation) pairs counted in the status's refused_annotations since the last
    // whole pass.
    std::set<std::pair<std::string, std::string>> refusals_counted;
    // Low-priority network groups of the last whole pass (shaping.low_priority_floor_percent set).
    std::map<core::NicId, core::LowPriorityGroup> groups;
    std::map<core::NicId, Applied> applied;
    size_t edt_bursts_unapplied = 0;  // egress leaves of EDT NICs with a burst set, last logged
    // What the EDT map holds after the last SyncEdt and SyncEdtAdded (leaf handle -> bytes/s);
    // nullopt when a failed list or write leaves it unknown.
    std::optional<std::map<uint64_t, uint64_t>> edt_written;
    std::map<uint64_t, std::string> pod_of_cgroup;
    std::set<KernelTarget> kernel_failed;  // targets whose kernel writes failed in this wake-up
    bool pass_failed = false;              // this wake-up's pass did not finish
    Clock::time_point next_resync;
    Clock::time_point next_full;  // the next resync at or after it is a full one
    Clock::time_point next_pods;
    uint64_t wakeup_taken = 0;  // the inbox's barrier number the current wake-up took
  };

  const EnforcerOptions options_;
  const EnforcerPorts ports_;
  ProblemLog problems_;  // its own lock: the worker reports, Status reads
  std::vector<std::unique_ptr<CgroupWatch>> watches_;  // the worker's, until joined
  CgroupChanges cgroup_changes_;  // its own lock: the watchers record, the worker takes
  WorkerState own_;

  // What the event threads tell the worker, and OnContainerStarting's barrier: its own lock.
  EnforcerInbox inbox_;
  // What the worker publishes to other threads (Status, QueueStats, OnContainerStarting's answer),
  // under the board's lock (its contract: enforcer_status_board.h). Lock order: the board's, then
  // the inbox's.
  EnforcerStatusBoard board_;
  mutable std::mutex stats_log_mu_;
  mutable std::string stats_error_logged_;  // the last queue-read failure logged ("" = none)
  std::thread worker_;
};

}  // namespace netqos::enforce
