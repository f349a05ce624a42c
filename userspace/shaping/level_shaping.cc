#include "shaping/level_shaping.h"

#include <cstdint>

#include "shaping/level_items.h"

namespace netqos::shaping {
namespace {

// Decimal digits only (no sign, no spaces), at most 9 of them so the value fits comfortably.
bool ParseUint(std::string_view text, uint32_t* out) {
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

Result<LevelConfig> ParseLevelShaping(std::string_view text) {
  const auto c1 = text.find(':');
  const auto c2 = c1 == std::string_view::npos ? c1 : text.find(':', c1 + 1);
  if (c2 == std::string_view::npos || text.find(':', c2 + 1) != std::string_view::npos)
    return InvalidArgument("expected <rate_permille>:<ceil_permille>:<prio> after '='");
  LevelConfig lc;
  if (!ParseUint(text.substr(0, c1), &lc.rate_permille) ||
      !ParseUint(text.substr(c1 + 1, c2 - c1 - 1), &lc.ceil_permille) ||
      !ParseUint(text.substr(c2 + 1), &lc.prio))
    return InvalidArgument("rate, ceil and prio must be non-negative integers");
  NETQOS_RETURN_IF_ERROR(ValidateLevelConfig(lc));
  return lc;
}

Status ParseLevelShapingItems(const std::vector<std::string>& items, const char* flag,
                              LevelShaping* out) {
  return ParseLevelItems(items, flag, "<rate_permille>:<ceil_permille>:<prio>", ParseLevelShaping,
                         out);
}

}  // namespace netqos::shaping
