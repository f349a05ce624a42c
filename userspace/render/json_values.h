// How the structured output of netqosctl and netqosd says "no value": the admin API leaves a
// string empty or a number negative when it has none, and the JSON documents print null for both,
// so that a reader never has to know which sentinel a field uses.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>

namespace netqos::render {

// nullptr for "", else the string (an absent error, a NIC not yet known, the host's netns).
nlohmann::json StringOrNull(const std::string& s);
// nullptr for a negative number: the admin API's "unknown" (speed, NUMA node, ...).
nlohmann::json NonNegativeOrNull(int64_t v);
nlohmann::json NonNegativeOrNull(double v);

}  // namespace netqos::render
