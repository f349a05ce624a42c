#include "shaping/shaping_mode.h"

namespace netqos::shaping {

const char* ShapingModeName(ShapingMode mode) { return ChoiceName(mode, kShapingModeNames).data(); }

const char* ShapingReasonName(ShapingReason why) {
  return ChoiceName(why, kShapingReasonNames).data();
}

namespace {

std::string Joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

}  // namespace

std::vector<std::string> HtbOnlyFeatures(const ShapingConfig& config) {
  const ShapingConfig defaults;
  std::vector<std::string> out;
  if (config.levels != defaults.levels) out.emplace_back("--qos-level-shaping");
  if (config.container_ceil == ContainerCeil::kLevel) out.emplace_back("--container-ceil=level");
  if (config.low_priority_floor_percent) out.emplace_back("--low-priority-groups");
  for (uint32_t burst : config.burst_bytes) {
    if (burst != 0) {
      out.emplace_back("--qos-level-burst");
      break;
    }
  }
  return out;
}

Result<ModeChoice> ChooseShapingMode(ShapingMode requested, const NicQueueFacts& facts,
                                     const std::vector<std::string>& htb_only) {
  const std::string queues =
      std::to_string(facts.tx_queues) + (facts.tx_queues == 1 ? " TX queue" : " TX queues");
  switch (requested) {
    case ShapingMode::kHtb:
      return ModeChoice{ShapingMode::kHtb, "--shaping-mode=htb", ShapingReason::kFlag, {}};
    case ShapingMode::kEdt:
      if (!facts.fq_available) {
        return FailedPrecondition("--shaping-mode=edt needs the kernel's fq qdisc: " +
                                  facts.fq_missing_reason);
      }
      return ModeChoice{ShapingMode::kEdt, "--shaping-mode=edt (" + queues + ")",
                        ShapingReason::kFlag, htb_only};
    case ShapingMode::kAuto:
      break;
  }
  if (facts.tx_queues <= 1)
    return ModeChoice{ShapingMode::kHtb, "auto: " + queues, ShapingReason::kSingleTxQueue, {}};
  if (!facts.fq_available) {
    return ModeChoice{ShapingMode::kHtb,
                      "auto: " + queues + " but no fq: " + facts.fq_missing_reason,
                      ShapingReason::kNoFq,
                      {}};
  }
  if (!htb_only.empty()) {
    // EDT paces each container at one rate and has no classes to borrow from or queue in: what
    // the operator asked for wins over the cheaper send path.
    return ModeChoice{ShapingMode::kHtb,
                      "auto: " + queues + " and fq, but htb for " + Joined(htb_only),
                      ShapingReason::kHtbOnlyFeatures,
                      {}};
  }
  return ModeChoice{
      ShapingMode::kEdt, "auto: " + queues + " and fq", ShapingReason::kTxQueuesAndFq, {}};
}

}  // namespace netqos::shaping
