// The class entry and leaf of one container whose cgroup just appeared, without recomputing every
// other container: ComputeDesiredState's per-container rules applied to it alone, its leaf minor
// taken from the node-wide allocator that the last whole pass left. Pure (no I/O).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/types.h"
#include "enforce/desired_state.h"
#include "shaping/htb_plan.h"

namespace netqos::enforce {

struct NewContainerPlan {
  std::optional<DesiredContainer> desired;  // nullopt: not classified (see problems)
  // The leaves to add to its NICs' trees; none when not capped or when the leaf is there already
  // (a pod-level allocation or a pod capped by its annotations, whose pod has another container
  // running).
  std::map<core::NicId, shaping::ContainerAllocation> egress_leaves;
  std::map<core::NicId, shaping::ContainerAllocation> ingress_leaves;
  std::vector<std::string> problems;
  AnnotatedByPod annotated;  // the container's pod's, as ComputeDesiredState gives it
};

NewContainerPlan PlanNewContainer(const core::PolicyConfig& policy,
                                  const core::PodEntries& allocations,
                                  const ObservedContainer& container,
                                  const std::vector<EnforcedLink>& enforced,
                                  const DesiredOptions& options, shaping::MinorAllocator& minors,
                                  const AnnotatedByPod& previous_annotated = {});

}  // namespace netqos::enforce
