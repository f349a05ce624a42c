#include "common/problem_kind.h"

namespace netqos {

std::string ProblemKey(ProblemKind kind, std::string_view object) {
  std::string key(ProblemKindName(kind));
  if (!object.empty()) key.append(":").append(object);
  return key;
}

}  // namespace netqos
