#include "service/allocation_service.h"

#include <spdlog/spdlog.h>

#include <map>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "common/log_value.h"
#include "core/imported_netns.h"

namespace netqos::service {
namespace {

void LogStartupSnapshotFailed(const Status& st) {
  spdlog::error(
      "start-up snapshot not written, serving the state loaded from the checkpoint "
      "files, which still hold it; free space or fix the disk: {}",
      st.message());
}

}  // namespace

Result<std::unique_ptr<AllocationService>> AllocationService::Create(
    core::StaticPolicy policy, std::unique_ptr<core::StateStore> store,
    std::unique_ptr<core::NicChooser> chooser, Durability durability) {
  auto loaded = store->Load();
  if (!loaded.ok()) return loaded.status();
  if (loaded->found) {
    NETQOS_RETURN_IF_ERROR(core::ResolveImportedNetns(policy.topology().nics, loaded->without_netns,
                                                      loaded->pod_entries));
    // Pod entries are trusted; the machine state is always recomputed from them and the current
    // NICs and configuration, so capacity or reservation changes take effect on restart.
    policy.Restore(std::move(loaded->pod_entries));
  }
  std::unique_ptr<AllocationService> svc(
      new AllocationService(std::move(policy), std::move(store), std::move(chooser), durability));
  size_t containers = 0;
  for (const auto& [uid, entries] : svc->policy_.pod_entries()) containers += entries.size();
  spdlog::info("state restored found={} corruption_skipped={} pods={} containers={}", loaded->found,
               loaded->corruption_skipped, svc->policy_.pod_entries().size(), containers);
  // A fresh snapshot on every start folds the journal in and rewrites the checksum (also after a
  // skipped corruption), so the next start reads one small file. At 10,000 containers it takes
  // hundreds of milliseconds (rendering, two checksums, fsync), so it is written by the
  // snapshot thread while the state is served: until it is on disk the files loaded from plus
  // the journal hold every change, as between any two snapshots. Only when a later load could
  // not read those back (LoadedState::snapshot_before_changes), or when every change rewrites
  // the whole file anyway, is it written before the service takes a change.
  // If it cannot be written (a full or failing disk), the state just loaded is still in the
  // files it came from: serve it rather than refuse to start, which would steer an operator
  // towards deleting good files. Changes are persisted, or refused with the write's error, one
  // by one as always; the next snapshot (after the next batch of changes, or at a graceful
  // stop) folds the journal in.
  if (loaded->snapshot_before_changes || !loaded->without_netns.empty() ||
      durability == Durability::kFullRewrite) {
    if (Status st = svc->WriteSnapshotNow(); !st.ok()) LogStartupSnapshotFailed(st);
  } else {
    svc->snap_requested_ = true;
    svc->startup_snapshot_pending_ = true;
  }
  svc->snap_thread_ = std::thread([s = svc.get()] { s->SnapshotLoop(); });
  return svc;
}

AllocationService::AllocationService(core::StaticPolicy policy,
                                     std::unique_ptr<core::StateStore> store,
                                     std::unique_ptr<core::NicChooser> chooser,
                                     Durability durability)
    : durability_(durability),
      policy_(std::move(policy)),
      store_(std::move(store)),
      chooser_(std::move(chooser)) {}

AllocationService::~AllocationService() {
  {
    std::lock_guard lk(snap_mu_);
    stopping_ = true;
  }
  snap_cv_.notify_all();
  if (snap_thread_.joinable()) snap_thread_.join();
}

Result<core::HintsResponse> AllocationService::GetTopologyHints(const core::ContainerRequest& req) {
  std::lock_guard lk(mu_);
  NETQOS_RETURN_IF_ERROR(UsableLocked());
  return policy_.GetTopologyHints(req);
}

Result<core::HintsResponse> AllocationService::GetPodTopologyHints(const core::PodRequest& req) {
  std::lock_guard lk(mu_);
  NETQOS_RETURN_IF_ERROR(UsableLocked());
  return policy_.GetPodTopologyHints(req);
}

Result<core::AllocationResponse> AllocationService::Allocate(const core::ContainerRequest& req) {
  core::AllocationResponse response;
  uint64_t seq = 0;
  {
    std::lock_guard lk(mu_);
    NETQOS_RETURN_IF_ERROR(UsableLocked());
    auto plan = policy_.PlanAllocate(req, *chooser_);
    if (!plan.ok()) return plan.status();
    if (!plan->change) return std::move(plan->response);
    NETQOS_ASSIGN_OR_RETURN(seq, CommitLocked(*plan->change));
    response = std::move(plan->response);
  }
  NETQOS_RETURN_IF_ERROR(AwaitDurable(seq));
  Notify({ChangeEvent::Kind::kAllocated, req.pod_uid});
  return response;
}

Result<core::AllocationResponse> AllocationService::AllocateForPod(const core::PodRequest& req) {
  core::AllocationResponse response;
  uint64_t seq = 0;
  {
    std::lock_guard lk(mu_);
    NETQOS_RETURN_IF_ERROR(UsableLocked());
    auto plan = policy_.PlanAllocateForPod(req, *chooser_);
    if (!plan.ok()) return plan.status();
    if (!plan->change) return std::move(plan->response);
    NETQOS_ASSIGN_OR_RETURN(seq, CommitLocked(*plan->change));
    response = std::move(plan->response);
  }
  NETQOS_RETURN_IF_ERROR(AwaitDurable(seq));
  Notify({ChangeEvent::Kind::kAllocated, req.pod_uid});
  return response;
}

Status AllocationService::RemovePod(const std::string& pod_uid) {
  uint64_t seq = 0;
  {
    std::lock_guard lk(mu_);
    NETQOS_RETURN_IF_ERROR(UsableLocked());
    auto plan = policy_.PlanRemovePod(pod_uid);
    if (!plan.ok()) return plan.status();
    if (!plan->change) return Status::Ok();
    NETQOS_ASSIGN_OR_RETURN(seq, CommitLocked(*plan->change));
  }
  NETQOS_RETURN_IF_ERROR(AwaitDurable(seq));
  Notify({ChangeEvent::Kind::kPodRemoved, pod_uid});
  return Status::Ok();
}

Result<core::TopologyAwareResources> AllocationService::GetTopologyAwareResources(
    const std::string& pod_uid, const std::string& container) {
  std::lock_guard lk(mu_);
  NETQOS_RETURN_IF_ERROR(UsableLocked());
  return policy_.GetTopologyAwareResources(pod_uid, container);
}

Result<core::AllocatableResources> AllocationService::GetTopologyAwareAllocatableResources() {
  std::lock_guard lk(mu_);
  NETQOS_RETURN_IF_ERROR(UsableLocked());
  return policy_.GetTopologyAwareAllocatableResources();
}

core::PluginOptions AllocationService::Options() {
  std::lock_guard lk(mu_);
  return policy_.Options();
}

void AllocationService::SetImplicitGrants(core::ImplicitBandwidthGrants grants) {
  std::lock_guard lk(mu_);
  policy_.SetImplicitGrants(std::move(grants));
}

Status AllocationService::UpdateTopology(core::Topology topology) {
  {
    std::lock_guard lk(mu_);
    std::map<core::NicId, std::string> was_unhealthy;
    for (const core::Nic& nic : policy_.nics()) {
      if (!nic.healthy) was_unhealthy[nic.id] = nic.unhealthy_reason;
    }
    NETQOS_RETURN_IF_ERROR(policy_.UpdateTopology(std::move(topology)));
    // The policy may find a NIC unfit that its source calls healthy (a reservation above a
    // renegotiated speed): every change of a managed NIC's health is logged here, once.
    for (const core::Nic& nic : policy_.nics()) {
      auto before = was_unhealthy.find(nic.id);
      if (!nic.healthy &&
          (before == was_unhealthy.end() || before->second != nic.unhealthy_reason)) {
        spdlog::warn("nic takes no new allocations nic={} reason={}", LogValue(nic.id.Identifier()),
                     LogValue(nic.unhealthy_reason));
      } else if (nic.healthy && before != was_unhealthy.end()) {
        spdlog::info("nic takes allocations again nic={}", LogValue(nic.id.Identifier()));
      }
    }
  }
  Notify({ChangeEvent::Kind::kTopology, ""});
  return Status::Ok();
}

void AllocationService::SetChangeListener(std::function<void(const ChangeEvent&)> listener) {
  std::lock_guard lk(listener_mu_);
  listener_ = std::move(listener);
}

void AllocationService::Notify(const ChangeEvent& event) {
  // Called under listener_mu_ so that SetChangeListener(nullptr) returns only once no call into
  // the old listener is in flight. Listeners must be quick and must not call back into the
  // service's change methods.
  std::lock_guard lk(listener_mu_);
  if (listener_) listener_(event);
}

AllocationService::View AllocationService::Snapshot() {
  std::lock_guard lk(mu_);
  return View{policy_.nics(), policy_.topology().nics, policy_.topology().numa_nodes,
              policy_.pod_entries(), policy_.machine_state()};
}

core::PodEntries AllocationService::PodAllocations(const std::vector<std::string>& pod_uids) {
  std::lock_guard lk(mu_);
  const core::PodEntries& all = policy_.pod_entries();
  core::PodEntries out;
  for (const auto& uid : pod_uids) {
    if (auto it = all.find(uid); it != all.end()) out.insert(*it);
  }
  return out;
}

Result<uint64_t> AllocationService::CommitLocked(const core::StateChange& change) {
  if (durability_ == Durability::kFullRewrite) {
    NETQOS_RETURN_IF_ERROR(CommitFullRewriteLocked(change));
    return uint64_t{0};
  }
  // Written before it is applied: if the journal write fails the in-memory state is untouched
  // and the kubelet sees the error. The flush comes after mu_ is released (group commit), and
  // the call is acknowledged only once it is done, so nothing is acknowledged that a restart
  // would forget; a failed flush stops the service (AwaitDurable).
  auto seq = store_->Write(change);
  if (!seq.ok()) {
    spdlog::error("checkpoint append failed, state unchanged: {}", seq.status().message());
    return Status(StatusCode::kUnavailable, "persist allocation state: " + seq.status().message());
  }
  policy_.Apply(change);
  MaybeScheduleSnapshotLocked();
  return seq;
}

Status AllocationService::AwaitDurable(uint64_t seq) {
  Status st = store_->Sync(seq);
  if (st.ok()) return st;
  // This call's own error (its record was in the failed flush, or written after it); later
  // calls get the first one.
  Status refused(StatusCode::kUnavailable,
                 "persist allocation state: " + st.message() +
                     "; netqosd refuses every call until it is restarted from the checkpoint");
  std::lock_guard lk(mu_);
  if (lost_.ok()) {
    spdlog::critical(
        "checkpoint flush failed: the state in memory may hold changes the disk "
        "lost; refusing every call until netqosd is restarted: {}",
        st.message());
    lost_ = refused;
  }
  return refused;
}

Status AllocationService::PersistenceStatus() {
  std::lock_guard lk(mu_);
  return lost_;
}

Status AllocationService::CommitFullRewriteLocked(const core::StateChange& change) {
  // O(pods) per call by design: this mode exists to measure the journal against it. The pod's
  // previous entries are kept so that a failed write leaves the state exactly as it was.
  const std::string& uid = std::holds_alternative<core::SetAllocation>(change)
                               ? std::get<core::SetAllocation>(change).info.pod_uid
                               : std::get<core::RemovePodEntries>(change).pod_uid;
  std::vector<core::AllocationInfo> before;
  if (auto it = policy_.pod_entries().find(uid); it != policy_.pod_entries().end()) {
    for (const auto& [name, info] : it->second) before.push_back(info);
  }
  policy_.Apply(change);
  auto seq = store_->BeginSnapshot();
  Status st = seq.ok() ? store_->FinishSnapshot(
                             *seq, core::Snapshot{policy_.pod_entries(), policy_.machine_state()})
                       : seq.status();
  if (st.ok()) return Status::Ok();
  policy_.Apply(core::RemovePodEntries{uid});
  for (auto& info : before) policy_.Apply(core::SetAllocation{std::move(info)});
  spdlog::error("checkpoint rewrite failed, state unchanged: {}", st.message());
  return Status(StatusCode::kUnavailable, "persist allocation state: " + st.message());
}

void AllocationService::MaybeScheduleSnapshotLocked() {
  if (!store_->SnapshotDue()) return;
  {
    std::lock_guard lk(snap_mu_);
    snap_requested_ = true;
  }
  snap_cv_.notify_one();
}

void AllocationService::SnapshotLoop() {
  for (;;) {
    bool startup = false;
    {
      std::unique_lock lk(snap_mu_);
      snap_cv_.wait(lk, [this] { return snap_requested_ || stopping_; });
      if (stopping_) return;
      snap_requested_ = false;
      startup = startup_snapshot_pending_;
      startup_snapshot_pending_ = false;
    }
    try {
      Status st = WriteSnapshotNow();
      if (!st.ok() && startup) {
        LogStartupSnapshotFailed(st);
      } else if (!st.ok()) {
        spdlog::error("checkpoint snapshot failed (journal kept): {}", st.message());
      }
    } catch (const std::exception& e) {
      spdlog::error("checkpoint snapshot threw: {}", e.what());
    }
  }
}

Status AllocationService::WriteSnapshotNow() {
  uint64_t seq = 0;
  core::Snapshot snap;
  {
    // The copy is O(pods) but happens once per thousands of changes; the file write that
    // follows runs without the policy lock so RPCs are not blocked by it.
    std::lock_guard lk(mu_);
    auto begun = store_->BeginSnapshot();
    if (!begun.ok()) return begun.status();
    seq = *begun;
    snap.pod_entries = policy_.pod_entries();
    snap.machine_state = policy_.machine_state();
  }
  return store_->FinishSnapshot(seq, snap);
}

}  // namespace netqos::service
