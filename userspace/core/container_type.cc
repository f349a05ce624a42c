#include "core/types.h"

namespace netqos::core {

const char* ContainerTypeName(ContainerType type) {
  switch (type) {
    case ContainerType::kInit:
      return "INIT";
    case ContainerType::kMain:
      return "MAIN";
    case ContainerType::kSidecar:
      return "SIDECAR";
    case ContainerType::kEphemeral:
      return "EPHEMERAL";
  }
  return "UNKNOWN";
}

}  // namespace netqos::core
