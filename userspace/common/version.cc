#include "common/version.h"

#ifndef NETQOS_VERSION
#error "NETQOS_VERSION is set by userspace/CMakeLists.txt from the project version"
#endif

namespace netqos {

const char* Version() { return NETQOS_VERSION; }

}  // namespace netqos
