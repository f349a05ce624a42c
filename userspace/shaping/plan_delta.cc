#include "shaping/plan_delta.h"

#include <unordered_map>

namespace netqos::shaping {

std::optional<PlanDelta> DiffPlans(const HtbPlan& before, const HtbPlan& after) {
  if (before.nic != after.nic || before.link_mbps != after.link_mbps ||
      before.qdisc_handle != after.qdisc_handle || before.default_minor != after.default_minor) {
    return std::nullopt;
  }
  // The tree comes or goes (the first cap on an idle NIC, or the last one leaving): only a whole
  // apply installs or removes it. A NIC idle before and after has no tree to patch.
  if (before.shapes != after.shapes) return std::nullopt;
  if (!after.shapes) return PlanDelta{};
  // Hashed: this runs for every new container on NICs with thousands of leaves.
  std::unordered_map<uint32_t, const PlannedClass*> old;
  old.reserve(before.classes.size());
  for (const PlannedClass& c : before.classes) old.emplace(c.handle, &c);
  PlanDelta delta;
  size_t kept = 0;
  for (const PlannedClass& c : after.classes) {
    auto it = old.find(c.handle);
    if (it == old.end()) {
      delta.added.push_back(c);
      continue;
    }
    if (it->second->parent != c.parent) return std::nullopt;
    ++kept;
    if (!(*it->second == c)) delta.changed.push_back(c);
  }
  // A class of `before` that `after` does not have would have to be deleted.
  if (kept != old.size()) return std::nullopt;
  return delta;
}

}  // namespace netqos::shaping
