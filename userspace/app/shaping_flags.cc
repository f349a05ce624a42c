#include "app/shaping_flags.h"

#include <array>
#include <cstdint>
#include <string>

#include "enforce/burst.h"
#include "enforce/dscp.h"

namespace netqos::app {
namespace {

constexpr char kShapingFlag[] = "--qos-level-shaping";

}  // namespace

Result<shaping::ShapingConfig> BuildShapingConfig(const DaemonConfig& config) {
  shaping::ShapingConfig out;
  // Parsed when the flags were read (daemon_config.cc); a config built in code is held to the
  // same rules by ValidateConfig below.
  for (size_t i = 0; i < shaping::kQosLevelCount; ++i) {
    if (const auto& given = config.qos_level_shaping[i]) out.levels[i] = *given;
  }
  // Level shares the operator chose are to hold on every enforced NIC, capped or not.
  out.shape_idle = config.shape_idle_nics || out.levels != shaping::ShapingConfig{}.levels;

  out.default_level = config.unclassified_qos_level;
  out.container_ceil = config.container_ceil;
  // Parsed when the flags were read (daemon_config.cc); a config built in code is held to the
  // same ranges here.
  out.dscp = config.qos_level_dscp;
  out.burst_bytes = config.qos_level_burst;
  for (size_t i = 0; i < shaping::kQosLevelCount; ++i) {
    const std::string level = shaping::QosLevelName(static_cast<shaping::QosLevel>(i));
    if (const auto d = out.dscp[i]; d && *d > enforce::kMaxDscp) {
      return InvalidArgument("--qos-level-dscp: " + level + ": DSCP " + std::to_string(*d) +
                             " is out of range 0.." + std::to_string(enforce::kMaxDscp));
    }
    const uint32_t b = out.burst_bytes[i];
    if (b != 0 && (b < shaping::kMinBurstBytes || b > shaping::kMaxBurstBytes)) {
      return InvalidArgument("--qos-level-burst: " + level + ": " + std::to_string(b) +
                             " bytes is outside " + std::to_string(shaping::kMinBurstBytes) + ".." +
                             std::to_string(shaping::kMaxBurstBytes));
    }
  }
  switch (config.dscp_default.kind) {
    case enforce::DscpDefault::Kind::kAuto:
      // Marking some levels says the fabric honours DSCP: the others must not choose their own.
      for (const auto& d : out.dscp) {
        if (d) out.unmarked_dscp = 0;
      }
      break;
    case enforce::DscpDefault::Kind::kKeep:
      break;
    case enforce::DscpDefault::Kind::kDscp:
      if (config.dscp_default.dscp > enforce::kMaxDscp) {
        return InvalidArgument("--dscp-default: DSCP " + std::to_string(config.dscp_default.dscp) +
                               " is out of range 0.." + std::to_string(enforce::kMaxDscp));
      }
      out.unmarked_dscp = config.dscp_default.dscp;
      break;
  }

  if (config.low_priority_group_floor_percent > 100) {
    return InvalidArgument("--low-priority-group-floor-percent must be 0..100, got " +
                           std::to_string(config.low_priority_group_floor_percent));
  }
  if (config.low_priority_groups) {
    out.low_priority_floor_percent = config.low_priority_group_floor_percent;
  }

  if (Status st = shaping::ValidateConfig(out); !st.ok())
    return InvalidArgument(std::string(kShapingFlag) + ": " + st.message());
  uint32_t guaranteed = 0;
  for (const auto& lc : out.levels) guaranteed += lc.rate_permille;
  if (guaranteed > 1000) {
    std::string levels;
    for (size_t i = 0; i < out.levels.size(); ++i) {
      if (!levels.empty()) levels += " + ";
      levels += std::string(shaping::QosLevelName(static_cast<shaping::QosLevel>(i))) + " " +
                std::to_string(out.levels[i].rate_permille);
    }
    return InvalidArgument(std::string(kShapingFlag) + ": the levels' guaranteed rates add up to " +
                           std::to_string(guaranteed) + " permille of the link (" + levels +
                           "), more than 1000; lower one of them");
  }
  return out;
}

}  // namespace netqos::app
