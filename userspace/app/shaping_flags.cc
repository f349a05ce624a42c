#include "app/shaping_flags.h"

#include <array>
#include <cstdint>
#include <string>

#include "enforce/burst.h"
#include "enforce/dscp.h"

namespace netqos::app {
namespace {

constexpr char kShapingFlag[] = "--qos-level-shaping";

Status BadItem(const std::string& item, const std::string& why) {
  return InvalidArgument(std::string(kShapingFlag) + ": \"" + item + "\": " + why);
}

// Decimal digits only (no sign, no spaces), at most 9 of them so the value fits comfortably.
bool ParseUint(const std::string& text, uint32_t* out) {
  if (text.empty() || text.size() > 9) return false;
  uint32_t v = 0;
  for (char ch : text) {
    if (ch < '0' || ch > '9') return false;
    v = v * 10 + static_cast<uint32_t>(ch - '0');
  }
  *out = v;
  return true;
}

}  // namespace

Result<shaping::ShapingConfig> BuildShapingConfig(const DaemonConfig& config) {
  shaping::ShapingConfig out;
  std::array<std::string, shaping::kQosLevelCount> given_by;  // item that set each level
  for (const auto& item : config.qos_level_shaping) {
    const auto eq = item.find('=');
    if (eq == std::string::npos)
      return BadItem(item, "expected <level>=<rate_permille>:<ceil_permille>:<prio>");
    auto level = shaping::ParseQosLevel(item.substr(0, eq));
    if (!level.ok())
      return BadItem(item, level.status().message() +
                               " (system_cores, dedicated_cores, shared_cores or reclaimed_cores)");
    const auto idx = static_cast<size_t>(*level);
    if (!given_by[idx].empty())
      return BadItem(item, "level already set by \"" + given_by[idx] + "\"");
    given_by[idx] = item;

    const std::string values = item.substr(eq + 1);
    const auto c1 = values.find(':');
    const auto c2 = c1 == std::string::npos ? c1 : values.find(':', c1 + 1);
    if (c2 == std::string::npos || values.find(':', c2 + 1) != std::string::npos)
      return BadItem(item, "expected <rate_permille>:<ceil_permille>:<prio> after '='");
    shaping::LevelConfig lc;
    if (!ParseUint(values.substr(0, c1), &lc.rate_permille) ||
        !ParseUint(values.substr(c1 + 1, c2 - c1 - 1), &lc.ceil_permille) ||
        !ParseUint(values.substr(c2 + 1), &lc.prio))
      return BadItem(item, "rate, ceil and prio must be non-negative integers");
    shaping::ShapingConfig probe;  // the defaults are valid: any error is this item's
    probe.levels[idx] = lc;
    if (Status st = shaping::ValidateConfig(probe); !st.ok()) return BadItem(item, st.message());
    out.levels[idx] = lc;
  }

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
  if (config.dscp_default == "auto") {
    // Marking some levels says the fabric honours DSCP: the others must not choose their own.
    for (const auto& d : out.dscp) {
      if (d) out.unmarked_dscp = 0;
    }
  } else if (config.dscp_default != "keep") {
    auto dscp = enforce::ParseDscp(config.dscp_default);
    if (!dscp.ok()) {
      return InvalidArgument("--dscp-default: \"" + config.dscp_default.substr(0, 64) +
                             "\": " + dscp.status().message() + ", or auto or keep");
    }
    out.unmarked_dscp = *dscp;
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
