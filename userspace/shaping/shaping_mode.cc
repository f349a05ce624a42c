#include "shaping/shaping_mode.h"

namespace netqos::shaping {

const char* ShapingModeName(ShapingMode mode) { return ChoiceName(mode, kShapingModeNames).data(); }

const char* ShapingReasonName(ShapingReason why) {
  return ChoiceName(why, kShapingReasonNames).data();
}

Result<ShapingMode> ParseShapingMode(std::string_view text) {
  if (auto mode = FindChoice(text, kShapingModeNames)) return *mode;
  return InvalidArgument("--shaping-mode: '" + std::string(text) +
                         "' is not one of auto, htb, edt");
}

Result<ModeChoice> ChooseShapingMode(ShapingMode requested, const NicQueueFacts& facts) {
  const std::string queues =
      std::to_string(facts.tx_queues) + (facts.tx_queues == 1 ? " TX queue" : " TX queues");
  switch (requested) {
    case ShapingMode::kHtb:
      return ModeChoice{ShapingMode::kHtb, "--shaping-mode=htb", ShapingReason::kFlag};
    case ShapingMode::kEdt:
      if (!facts.fq_available) {
        return FailedPrecondition("--shaping-mode=edt needs the kernel's fq qdisc: " +
                                  facts.fq_missing_reason);
      }
      return ModeChoice{ShapingMode::kEdt, "--shaping-mode=edt (" + queues + ")",
                        ShapingReason::kFlag};
    case ShapingMode::kAuto:
      break;
  }
  if (facts.tx_queues <= 1) {
    return ModeChoice{ShapingMode::kHtb, "auto: " + queues, ShapingReason::kSingleTxQueue};
  }
  if (!facts.fq_available) {
    return ModeChoice{ShapingMode::kHtb,
                      "auto: " + queues + " but no fq: " + facts.fq_missing_reason,
                      ShapingReason::kNoFq};
  }
  return ModeChoice{ShapingMode::kEdt, "auto: " + queues + " and fq",
                    ShapingReason::kTxQueuesAndFq};
}

}  // namespace netqos::shaping
