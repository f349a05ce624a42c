// A value from outside (a pod name, an annotation, a kubelet's error text) made safe for a
// key=value log line: printed as is when it is a plain token, else in double quotes with '"',
// '\' and control characters escaped. So a name cannot end its field, forge another one
// (`x" pod=kube-system/y`) or start a new log line, in the text format or in the JSON one, which
// parses these pairs (app/logging.h).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace netqos {

std::string LogValue(std::string_view value);

// LogValue of at most `max_bytes` of `value` (cut at a UTF-8 character boundary), followed by
// "...(<n> bytes)" when it was cut: a value from outside quoted in a message or an error text.
std::string BoundedLogValue(std::string_view value, size_t max_bytes = 64);

// The same, always in double quotes: a value from outside quoted in an error text
// ("net class id \"0x10\" is not a decimal number").
std::string QuotedValue(std::string_view value, size_t max_bytes = 64);

}  // namespace netqos
