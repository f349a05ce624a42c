// A small strict JSON reader for the QoS enhancement annotations (the core takes no JSON library):
// validates the whole document as Go's encoding/json does and returns the top-level members.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace netqos::core {

enum class JsonType { kNull, kBool, kNumber, kString, kArray, kObject };
const char* JsonTypeName(JsonType type);  // "null", "bool", "number", "string", "array", "object"

struct JsonMember {
  std::string key;  // decoded
  JsonType type = JsonType::kNull;
  std::string string_value;  // decoded value when type == kString, else ""
};

// Members in document order; duplicates are kept (Go's decoder lets the last one win).
// A top-level `null` yields no members, as decoding null into a Go map leaves it empty.
// Any other non-object top-level value, or any syntax error, is InvalidArgument.
Result<std::vector<JsonMember>> ParseJsonObject(std::string_view text);

}  // namespace netqos::core
