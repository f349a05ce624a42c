// AllocationService: the thread-safe use-case layer between the RPC adapters and the core.
// One mutex guards the policy; every state change is made durable through the StateStore before
// it is applied, so an acknowledged Allocate or RemovePod survives a crash and a failed write
// leaves the state exactly as it was.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "core/nic_chooser.h"
#include "core/policy.h"
#include "core/state_store.h"

namespace netqos::service {

class AllocationService {
 public:
  // How a change is made durable before it is acknowledged.
  enum class Durability {
    kJournal,      // one fsync'd journal record (StateStore::Append); snapshots in the background
    kFullRewrite,  // the whole state rewritten synchronously on every change, as Katalyst does
                   // (--checkpoint-mode=full-rewrite: the baseline of bench/control_plane_bench)
  };

  // Restores the state from the store (Load), recomputes the machine state and starts the
  // background snapshot writer, which first writes a fresh snapshot folding the journal in
  // (written here, before returning, when the load needs it: LoadedState::snapshot_before_changes).
  static Result<std::unique_ptr<AllocationService>> Create(
      core::StaticPolicy policy, std::unique_ptr<core::StateStore> store,
      std::unique_ptr<core::NicChooser> chooser, Durability durability = Durability::kJournal);
  ~AllocationService();

  AllocationService(const AllocationService&) = delete;
  AllocationService& operator=(const AllocationService&) = delete;

  Result<core::HintsResponse> GetTopologyHints(const core::ContainerRequest& req);
  Result<core::HintsResponse> GetPodTopologyHints(const core::PodRequest& req);
  Result<core::AllocationResponse> Allocate(const core::ContainerRequest& req);
  Result<core::AllocationResponse> AllocateForPod(const core::PodRequest& req);
  Status RemovePod(const std::string& pod_uid);
  Result<core::TopologyAwareResources> GetTopologyAwareResources(const std::string& pod_uid,
                                                                 const std::string& container);
  Result<core::AllocatableResources> GetTopologyAwareAllocatableResources();
  core::PluginOptions Options();
  Status UpdateTopology(core::Topology topology);
  // The tenant policy's implicit-bandwidth grants (core::StaticPolicy::SetImplicitGrants).
  void SetImplicitGrants(core::ImplicitBandwidthGrants grants);

  // What changed, for whoever acts on allocations (the enforcer). Called after the change is
  // durable and applied, outside the service's lock, on the thread that made the change.
  // Setting another listener (or none) waits for a call in flight to the old one.
  struct ChangeEvent {
    enum class Kind { kAllocated, kPodRemoved, kTopology };
    Kind kind = Kind::kAllocated;
    std::string pod_uid;  // empty for kTopology
  };
  void SetChangeListener(std::function<void(const ChangeEvent&)> listener);

  // Writes a full snapshot now (graceful shutdown), so the next start reads a single file.
  Status Flush() { return WriteSnapshotNow(); }

  // Not OK once a journal flush has failed: the disk may have dropped changes the state in
  // memory holds, so every call is refused from then on and the liveness probe fails, to have
  // the daemon restarted from what the disk really has.
  Status PersistenceStatus();
  // The journal's group-commit flushes so far (records each made durable, its time).
  core::FlushStats CheckpointFlushes() const { return store_->Flushes(); }

  // Consistent copies for operators and metrics.
  struct View {
    std::vector<core::Nic> nics;           // managed NICs, with the policy's health verdict
    std::vector<core::Nic> topology_nics;  // every NIC the topology source reported
    std::vector<core::NumaNode> numa_nodes;
    core::PodEntries pod_entries;
    core::MachineState machine_state;
  };
  View Snapshot();
  // The allocations of these pods only (those the service holds): what the enforcer's reaction
  // to a new container needs, without copying every pod's entries.
  core::PodEntries PodAllocations(const std::vector<std::string>& pod_uids);

 private:
  AllocationService(core::StaticPolicy policy, std::unique_ptr<core::StateStore> store,
                    std::unique_ptr<core::NicChooser> chooser, Durability durability);
  // Journals and applies one change; caller holds mu_. Returns what AwaitDurable waits for.
  Result<uint64_t> CommitLocked(const core::StateChange& change);
  // Outside mu_ (group commit: concurrent calls share the flush): returns once the committed
  // change is durable. A failed flush stops the service (PersistenceStatus()).
  Status AwaitDurable(uint64_t seq);
  // The refusal of every call after a failed flush; OK before. Caller holds mu_.
  Status UsableLocked() const { return lost_; }
  // kFullRewrite: applies the change, then writes the whole state; undoes it if that fails.
  Status CommitFullRewriteLocked(const core::StateChange& change);
  void MaybeScheduleSnapshotLocked();
  void Notify(const ChangeEvent& event);
  void SnapshotLoop();
  Status WriteSnapshotNow();

  const Durability durability_;
  std::mutex mu_;
  Status lost_;  // guarded by mu_: set when a journal flush failed
  core::StaticPolicy policy_;
  std::unique_ptr<core::StateStore> store_;
  std::unique_ptr<core::NicChooser> chooser_;

  std::mutex listener_mu_;
  std::function<void(const ChangeEvent&)> listener_;

  std::mutex snap_mu_;
  std::condition_variable snap_cv_;
  bool snap_requested_ = false;
  bool startup_snapshot_pending_ = false;  // the requested snapshot is the start-up one
  bool stopping_ = false;
  std::thread snap_thread_;
};

}  // namespace netqos::service
