// --qos-level-shaping: each QoS level's HTB parent class as the operator gave it,
// "<level>=<rate_permille>:<ceil_permille>:<prio>". Pure; parsed once, when the flags are read.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "shaping/htb_plan.h"

namespace netqos::shaping {

// The levels the flag set (QosLevel order); nullopt: ShapingConfig's default for the level.
using LevelShaping = std::array<std::optional<LevelConfig>, kQosLevelCount>;

// "<rate_permille>:<ceil_permille>:<prio>", each decimal digits only (at most 9), and a class
// ValidateLevelConfig accepts.
Result<LevelConfig> ParseLevelShaping(std::string_view text);

// Applies --qos-level-shaping items to *out. Errors name `flag` and the item; a level given
// twice is an error. Whether the levels' guaranteed rates fit the link together is the whole
// config's question (app/shaping_flags.h).
Status ParseLevelShapingItems(const std::vector<std::string>& items, const char* flag,
                              LevelShaping* out);

}  // namespace netqos::shaping
