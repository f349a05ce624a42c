#include "render/json_values.h"

#include <nlohmann/json.hpp>

namespace netqos::render {

using Json = nlohmann::json;

Json StringOrNull(const std::string& s) { return s.empty() ? Json(nullptr) : Json(s); }
Json NonNegativeOrNull(int64_t v) { return v < 0 ? Json(nullptr) : Json(v); }
Json NonNegativeOrNull(double v) { return v < 0 ? Json(nullptr) : Json(v); }

}  // namespace netqos::render
