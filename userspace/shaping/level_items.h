// The items of a per-QoS-level flag (--qos-level-dscp, --qos-level-burst): "<level>=<value>",
// levels by any spelling in kQosLevelSpellings, each level at most once. Pure.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "shaping/htb_plan.h"

namespace netqos::shaping {

// Applies `items` to *out, each value read by `parse` (string_view -> Result<V>). Errors name
// `flag` and the item; `value_form` says what follows '=' ("<dscp>").
template <typename T, typename Parse>
Status ParseLevelItems(const std::vector<std::string>& items, const char* flag,
                       const char* value_form, Parse parse, std::array<T, kQosLevelCount>* out) {
  std::array<std::string, kQosLevelCount> given_by;
  for (const auto& item : items) {
    auto bad = [&](const std::string& why) {
      return InvalidArgument(std::string(flag) + ": \"" + item + "\": " + why);
    };
    const auto eq = item.find('=');
    if (eq == std::string::npos) return bad(std::string("expected <level>=") + value_form);
    auto level = ParseQosLevel(item.substr(0, eq));
    if (!level.ok()) {
      return bad(level.status().message() +
                 " (system_cores, dedicated_cores, shared_cores or reclaimed_cores)");
    }
    const auto idx = static_cast<size_t>(*level);
    if (!given_by[idx].empty()) return bad("level already set by \"" + given_by[idx] + "\"");
    given_by[idx] = item;
    auto value = parse(std::string_view(item).substr(eq + 1));
    if (!value.ok()) return bad(value.status().message());
    (*out)[idx] = *value;
  }
  return Status::Ok();
}

}  // namespace netqos::shaping
