// A value from outside (a pod name, an annotation, a kubelet's error text) made safe for a
// key=value log line: printed as is when it is a plain token, else in double quotes with '"',
// '\' and control characters escaped. So a name cannot end its field, forge another one
// (`x" pod=kube-system/y`) or start a new log line, in the text format or in the JSON one, which
// parses these pairs (app/logging.h).
#pragma once

#include <string>
#include <string_view>

namespace netqos {

std::string LogValue(std::string_view value);

}  // namespace netqos
