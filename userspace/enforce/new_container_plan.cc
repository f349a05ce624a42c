#include "enforce/new_container_plan.h"

namespace netqos::enforce {

NewContainerPlan PlanNewContainer(const core::PolicyConfig& policy,
                                  const core::PodEntries& allocations,
                                  const ObservedContainer& container,
                                  const std::vector<EnforcedLink>& enforced,
                                  const DesiredOptions& options, shaping::MinorAllocator& minors) {
  // The rules themselves are ComputeDesiredState's, so both paths classify alike. It is given a
  // scratch allocator: the real one would release every leaf but this container's.
  shaping::MinorAllocator scratch;
  DesiredState one =
      ComputeDesiredState(policy, allocations, {container}, enforced, {}, options, scratch);
  NewContainerPlan plan;
  plan.problems = std::move(one.problems);
  auto it = one.by_cgroup.find(container.cgroup_id);
  if (it == one.by_cgroup.end()) return plan;
  DesiredContainer d = std::move(it->second);
  if (d.leaf_key && d.nic) {
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
      plan.problems.push_back(d.pod_namespace + "/" + d.pod_name + " container " +
                              d.container_name +
                              ": no free HTB leaf minor; shaped by its QoS level only");
    } else {
      if (options.set_priority)
        d.entry.priority = shaping::MakeHandle(shaping::kQdiscMajor, *minor);
      if (!existed) {
        for (auto leaf : one.egress[*d.nic]) {
          if (leaf.key == *d.leaf_key) plan.egress_leaf = leaf;
        }
        for (auto leaf : one.ingress[*d.nic]) {
          if (leaf.key == *d.leaf_key) plan.ingress_leaf = leaf;
        }
        if (plan.egress_leaf) plan.egress_leaf->minor = *minor;
        if (plan.ingress_leaf) plan.ingress_leaf->minor = *minor;
      }
    }
  }
  plan.desired = std::move(d);
  return plan;
}

}  // namespace netqos::enforce
