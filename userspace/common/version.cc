#include "common/version.h"

#ifndef NETQOS_VERSION
#error "NETQOS_VERSION is set by userspace/CMakeLists.txt from the project version"
#endif
#ifndef NETQOS_COMMIT
#define NETQOS_COMMIT ""
#endif

namespace netqos {

const char* Version() { return NETQOS_VERSION; }

std::string ReleaseName() {
  const std::string commit = NETQOS_COMMIT;
  return commit.empty() ? std::string(NETQOS_VERSION) : std::string(NETQOS_VERSION) + "+" + commit;
}

}  // namespace netqos
