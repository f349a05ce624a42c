// Privilege gate for the integration tier. Without root (CAP_NET_ADMIN + CAP_SYS_ADMIN) the
// tests cannot create namespaces or mount sysfs: locally they report "not run" (CTest shows them
// as skipped); under CI=true a missing privilege is a failure, never a silent skip.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

namespace netqos::testing {

inline constexpr int kSkipExitCode = 77;  // CTest SKIP_RETURN_CODE for this tier

inline uint64_t EffectiveCapabilities() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("CapEff:", 0) == 0) return std::stoull(line.substr(7), nullptr, 16);
  }
  return 0;
}

inline bool HasIntegrationPrivileges() {
  constexpr uint64_t kNetAdmin = 1ull << 12, kSysAdmin = 1ull << 21;
  const uint64_t caps = EffectiveCapabilities();
  return (caps & kNetAdmin) && (caps & kSysAdmin);
}

// Called before any test runs; returns an exit code to stop with, or -1 to run the tests.
inline int CheckIntegrationPrivileges() {
  if (HasIntegrationPrivileges()) return -1;
  const char* ci = std::getenv("CI");
  if (ci != nullptr && std::string(ci) == "true") {
    std::cerr << "FAIL: integration tests need root (CAP_NET_ADMIN, CAP_SYS_ADMIN) and CI=true: "
                 "a missing privilege is a failure here\n";
    return 1;
  }
  std::cerr << "integration tests NOT RUN: they need root (CAP_NET_ADMIN, CAP_SYS_ADMIN); "
               "run scripts/test.sh as root\n";
  return kSkipExitCode;
}

}  // namespace netqos::testing
