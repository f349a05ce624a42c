#include "enforce/new_container_plan.h"

namespace netqos::enforce {

NewContainerPlan PlanNewContainer(const core::PolicyConfig& policy,
                                  const core::PodEntries& allocations,
                                  const ObservedContainer& container,
                                  const std::vector<EnforcedLink>& enforced,
                                  const DesiredOptions& options, shaping::MinorAllocator& minors,
                                  const AnnotatedByPod& previous_annotated) {
  // The rules themselves are ComputeDesiredState's, so both paths classify alike. It is given a
  // scratch allocator: the real one would release every leaf but this container's.
  shaping::MinorAllocator scratch;
  DesiredState one = ComputeDesiredState(policy, allocations, {container}, enforced, {}, options,
                                         scratch, previous_annotated);
  NewContainerPlan plan;
  plan.problems = std::move(one.problems);
  plan.annotated = std::move(one.annotated);
  auto it = one.by_cgroup.find(container.cgroup_id);
  if (it == one.by_cgroup.end()) return plan;
  DesiredContainer d = std::move(it->second);
  if (d.leaf_key) {
    const bool existed = minors.Lookup(*d.leaf_key).has_value();
    auto minor = minors.Acquire(*d.leaf_key);
    const auto level = static_cast<shaping::QosLevel>(d.entry.qos_level);
    if (!minor.ok()) {
      d.leaf_key.reset();
      if (options.set_priority) {
        d.entry.priority =
            shaping::MakeHandle(shaping::kQdiscMajor, shaping::LevelDefaultMinor(level));
      }
      d.entry.flags = ClassFlags(options, level, false, false);
      plan.problems.push_back(d.pod_namespace() + "/" + d.pod_name() + " container " +
                              d.container_name +
                              ": no free HTB leaf minor; shaped by its QoS level only");
    } else {
      if (options.set_priority)
        d.entry.priority = shaping::MakeHandle(shaping::kQdiscMajor, *minor);
      if (!existed) {
        const auto take = [&](const auto& trees, auto& into) {
          for (const auto& nic : *d.leaf_nics) {
            auto tree = trees.find(nic);
            if (tree == trees.end()) continue;
            for (auto leaf : tree->second) {
              if (leaf.key != *d.leaf_key) continue;
              leaf.minor = *minor;
              into[nic] = leaf;
            }
          }
        };
        take(one.egress, plan.egress_leaves);
        take(one.ingress, plan.ingress_leaves);
      }
    }
  }
  plan.desired = std::move(d);
  return plan;
}

}  // namespace netqos::enforce
