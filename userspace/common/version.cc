#include "common/version.h"

#ifndef NETQOS_VERSION
#error "NETQOS_VERSION is set by userspace/CMakeLists.txt from the project version"
#endif
#ifndef NETQOS_COMMIT
#define NETQOS_COMMIT ""
#endif
#ifndef NETQOS_BUILD_DATE
#define NETQOS_BUILD_DATE ""
#endif

namespace netqos {

const char* Version() { return NETQOS_VERSION; }
const char* Commit() { return NETQOS_COMMIT; }
const char* BuildDate() { return NETQOS_BUILD_DATE; }

std::string ReleaseName() {
  const std::string commit = NETQOS_COMMIT;
  return commit.empty() ? std::string(NETQOS_VERSION) : std::string(NETQOS_VERSION) + "+" + commit;
}

std::string VersionLine() {
  const auto or_unknown = [](const char* s) { return *s == '\0' ? std::string("unknown") : s; };
  return std::string(NETQOS_VERSION) + " commit=" + or_unknown(Commit()) +
         " date=" + or_unknown(BuildDate());
}

}  // namespace netqos
