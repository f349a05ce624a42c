// StaticPolicy: Katalyst's "static" network QRM policy as a pure, single-threaded object.
// It validates requests, computes hints and allocations and keeps the pod entries and the machine
// state. Operations that change state are planned by const methods which return the StateChange;
// the caller makes the change durable and then Apply()s it. No I/O, no locking, no logging.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "core/config.h"
#include "core/nic_chooser.h"
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
  // Validates the configuration and topology (rates, reservation, NUMA ids, IP strings) and
  // computes the machine state with no allocations.
  static Result<StaticPolicy> Create(PolicyConfig config, Topology topology);

  // Replaces the pod entries (from a checkpoint) and recomputes the machine state from them.
  // Entries naming NICs that no longer exist are kept and counted nowhere.
  void Restore(PodEntries entries);

  // Replaces the topology (NICs appeared, vanished or changed health) and recomputes the machine
  // state from the current pod entries.
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

  const PolicyConfig& config() const { return config_; }
  const Topology& topology() const { return topology_; }
  // NICs the policy manages (enabled, with at least one IP), sorted by (name, netns).
  const std::vector<Nic>& nics() const { return nics_; }
  const PodEntries& pod_entries() const { return pod_entries_; }
  const MachineState& machine_state() const { return machine_state_; }
  const AllocationInfo* FindAllocation(std::string_view pod_uid, std::string_view container) const;

 private:
  StaticPolicy() = default;
  // Implementation detail members live in policy.cc helpers; see policy.cc.
  void RecomputeMachineState();

  PolicyConfig config_;
  Topology topology_;
  std::vector<Nic> nics_;
  PodEntries pod_entries_;
  MachineState machine_state_;
};

}  // namespace netqos::core
