// HtbPlanner: one NIC's HTB plan over time, with its own leaf minors, for the tests that plan a
// NIC by hand (the shaping unit tests, the privileged HTB and traffic tests). The daemon never
// plans one NIC alone: the enforcer keeps one node-wide shaping::MinorAllocator, so a container
// has the same minor (and skb->priority) on every NIC and IFB, and calls shaping::BuildHtbPlan.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "shaping/htb_plan.h"

namespace netqos::testing {

class HtbPlanner {
 public:
  explicit HtbPlanner(std::string nic, shaping::ShapingConfig config = {});

  // Validates the inputs and computes the plan with shaping::BuildHtbPlan. On error nothing
  // changes (minors included). Containers absent from `containers` release their minors when the
  // plan succeeds; the containers' own `minor` fields are ignored.
  Result<shaping::HtbPlan> Plan(uint64_t link_mbps,
                                const std::vector<shaping::ContainerAllocation>& containers);

  // TC_H_MAKE(0x10 << 16, minor) for a container with a leaf in the last successful plan (or a
  // restored minor); otherwise the handle of the default leaf of the configured default level.
  uint32_t PriorityFor(uint64_t key) const;
  std::optional<uint32_t> MinorFor(uint64_t key) const { return minors_.Lookup(key); }
  shaping::MinorAllocator& minors() { return minors_; }
  const shaping::ShapingConfig& config() const { return config_; }

 private:
  std::string nic_;
  shaping::ShapingConfig config_;
  shaping::MinorAllocator minors_;
};

}  // namespace netqos::testing
