// HtbPlanner (see htb_planner.h): minors from its own allocator, the plan from the product's
// shaping::BuildHtbPlan, so the tests plan exactly as the enforcer does.
#include "support/htb_planner.h"

#include <algorithm>
#include <set>
#include <utility>

namespace netqos::testing {

using shaping::ContainerAllocation;
using shaping::HtbPlan;
using shaping::MinorAllocator;

HtbPlanner::HtbPlanner(std::string nic, shaping::ShapingConfig config)
    : nic_(std::move(nic)), config_(config) {}

Result<HtbPlan> HtbPlanner::Plan(uint64_t link_mbps,
                                 const std::vector<ContainerAllocation>& containers) {
  const std::string where = "nic " + nic_ + ": ";
  NETQOS_RETURN_IF_ERROR(shaping::ValidateConfig(config_).Wrap("nic " + nic_));
  if (link_mbps == 0) return InvalidArgument(where + "link rate is 0 Mbps");
  // A key listed twice would get one minor twice: say what is wrong before minors are handed out
  // (BuildHtbPlan checks everything else).
  std::set<uint64_t> present;
  for (const auto& c : containers) {
    if (!present.insert(c.key).second) {
      return InvalidArgument(where + "container " + std::to_string(c.key) +
                             ": listed more than once");
    }
  }
  // Minors: work on a copy so that a failed plan leaves the allocator untouched. Departed
  // containers release first, so their minors can be reused by newcomers.
  MinorAllocator minors = minors_;
  for (uint64_t key : minors.Keys()) {
    if (present.count(key) == 0) minors.Release(key);
  }
  std::vector<ContainerAllocation> with_minors = containers;
  for (auto& c : with_minors) {
    auto m = minors.Acquire(c.key);
    if (!m.ok()) return m.status().Wrap(where + "container " + std::to_string(c.key));
    c.minor = *m;
  }
  auto plan = shaping::BuildHtbPlan(nic_, config_, link_mbps, with_minors);
  if (plan.ok()) minors_ = std::move(minors);
  return plan;
}

uint32_t HtbPlanner::PriorityFor(uint64_t key) const {
  if (auto m = minors_.Lookup(key)) return shaping::MakeHandle(shaping::kQdiscMajor, *m);
  return shaping::MakeHandle(shaping::kQdiscMajor,
                             shaping::LevelDefaultMinor(config_.default_level));
}

}  // namespace netqos::testing
