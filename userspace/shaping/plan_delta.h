// What it takes to go from one HTB plan to the next without reading the tree back: the classes
// to create and those to change in place. The reaction to a new container (one more leaf on a
// tree of thousands) is then a few netlink messages, not a dump of every class on the link.
#pragma once

#include <optional>
#include <vector>

#include "shaping/htb_plan.h"

namespace netqos::shaping {

struct PlanDelta {
  std::vector<PlannedClass> added;    // parents before children, as the plan orders them
  std::vector<PlannedClass> changed;  // same handle and parent, other parameters
  bool empty() const { return added.empty() && changed.empty(); }
};

// nullopt when `after` cannot be reached from `before` by creating and changing classes: a class
// is gone or has moved to another parent (HTB cannot move one), or the qdisc itself differs
// (handle, default class, link), or the tree is to be installed or removed (HtbPlan::shapes
// differs). The caller applies the whole plan then. Empty between two plans that do not shape.
std::optional<PlanDelta> DiffPlans(const HtbPlan& before, const HtbPlan& after);

}  // namespace netqos::shaping
