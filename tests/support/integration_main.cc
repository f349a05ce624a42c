// Catch2 main for the privileged integration tier: checks privileges first (see privileges.h).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cstring>

#include "support/privileges.h"

int main(int argc, char* argv[]) {
  // Test discovery (--list-test-names-only) must work without privileges.
  bool listing = false;
  for (int i = 1; i < argc; ++i) listing = listing || std::strncmp(argv[i], "--list", 6) == 0;
  if (!listing) {
    int code = netqos::testing::CheckIntegrationPrivileges();
    if (code >= 0) return code;
  }
  return Catch::Session().run(argc, argv);
}
