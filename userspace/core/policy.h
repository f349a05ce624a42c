// StaticPolicy: Katalyst's "static" network QRM policy as a pure, single-threaded object.
// It validates requests, computes hints and allocations and keeps the pod entries and the machine
// state. Operations that change state are planned by const methods which return the StateChange;
// the caller makes the change durable and then Apply()s it. No I/O, no locking, no logging.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "core/config.h"
#include "core/machine_state.h"
#include "core/nic_chooser.h"
#include "core/nic_filters.h"
#include "core/numa_topology.h"
#include "core/types.h"

namespace netqos::core {

struct AllocatePlan {
  AllocationResponse response;
  std::optional<StateChange> change;  // nullopt: nothing to persist (INIT, SIDECAR, re-used)
};

struct RemovePlan {
  std::optional<StateChange> change;  // nullopt: the pod holds nothing
};

class StaticPolicy {
 public:
  // Validates the configuration and topology (rates, NUMA ids, NIC identities, speeds and NUMA
  // nodes, IP strings, the reservation) and computes the machine state with no allocations.
  // IPs are stored in Go's printed form; an empty NUMA list becomes NUMA 0 on socket 0.
  static Result<StaticPolicy> Create(PolicyConfig config, Topology topology);

  // Replaces the pod entries (from a checkpoint) and recomputes the machine state from them.
  // Entries naming NICs that are not managed are kept and counted nowhere (until they are).
  void Restore(PodEntries entries);

  // Replaces the topology (NICs appeared, vanished or changed health) and recomputes the machine
  // state, in O(NICs). Validation as in Create, but a reservation that no longer fits its NIC's
  // capacity (the link renegotiated to a lower speed) makes that NIC unhealthy (allocatable 0,
  // allocations kept, the reason in unhealthy_reason) instead of failing; on error nothing
  // changes.
  Status UpdateTopology(Topology topology);

  Result<HintsResponse> GetTopologyHints(const ContainerRequest& req) const;
  Result<HintsResponse> GetPodTopologyHints(const PodRequest& req) const;
  Result<AllocatePlan> PlanAllocate(const ContainerRequest& req, NicChooser& chooser) const;
  Result<AllocatePlan> PlanAllocateForPod(const PodRequest& req, NicChooser& chooser) const;
  Result<RemovePlan> PlanRemovePod(std::string_view pod_uid) const;
  void Apply(const StateChange& change);

  Result<TopologyAwareResources> GetTopologyAwareResources(std::string_view pod_uid,
                                                           std::string_view container) const;
  Result<AllocatableResources> GetTopologyAwareAllocatableResources() const;
  PluginOptions Options() const { return PluginOptions{}; }
  // The tenant policy changed which namespaces may declare implicit bandwidth: later requests
  // follow it; allocations made before keep what they reserved.
  void SetImplicitGrants(ImplicitBandwidthGrants grants) {
    config_.implicit_grants = std::move(grants);
  }

  const PolicyConfig& config() const { return config_; }
  const Topology& topology() const { return topology_; }
  // NICs the policy manages, sorted by (name, netns): every NIC that was available (enabled,
  // with an IP, healthy) at Create or became available later and is still present. One that is
  // no longer available stays listed with healthy=false, keeps its allocations and takes none.
  const std::vector<Nic>& nics() const { return nics_; }
  const PodEntries& pod_entries() const { return pod_entries_; }
  const MachineState& machine_state() const { return machine_state_; }
  // What the pod entries take in the checkpoint at most, both copies counted (state_size.h).
  size_t state_bytes() const { return state_bytes_; }
  const AllocationInfo* FindAllocation(std::string_view pod_uid, std::string_view container) const;

 private:
  StaticPolicy() = default;
  // Validates `topology`, derives the managed NICs and their static state from it, and commits
  // all of it only on success. Shared by Create (at_start: a reservation conflict is an error)
  // and UpdateTopology.
  Status SetTopology(Topology topology, bool at_start);
  // Re-derives allocated/allocatable/free of every managed NIC from usage_ (O(NICs)).
  void RecomputeMachineState();
  // Adds (sign +1) or removes (-1) one allocation's bandwidth and refreshes only its NIC.
  void AccountAllocation(const AllocationInfo& info, int sign);
  const Nic* FindManagedNic(const NicId& id) const;
  const Nic* FindTopologyNic(const NicId& id) const;
  uint64_t SocketOfNicOrAllocation(const AllocationInfo& info) const;
  // The managed NICs as filter input; `release` (if any) is counted as already freed.
  std::vector<NicCandidate> Candidates(const AllocationInfo* release) const;
  Result<HintsResponse> ComputeHints(const ContainerRequest& req, bool pod_level) const;
  Result<AllocatePlan> PlanAllocateImpl(const ContainerRequest& req, bool pod_level,
                                        NicChooser& chooser) const;

  PolicyConfig config_;
  Topology topology_;
  NumaTopology numa_;
  std::vector<Nic> nics_;
  std::optional<NicId> reservation_nic_;  // the first managed NIC ever seen (FirstNIC policy)
  PodEntries pod_entries_;
  // Bandwidth held per NIC by pod entries, including NICs not currently managed, so topology
  // changes and Apply() never need a pass over all pods.
  std::map<NicId, BandwidthUsage> usage_;
  MachineState machine_state_;
  size_t state_bytes_ = 0;
};

}  // namespace netqos::core
