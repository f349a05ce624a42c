// `netqosctl --version` reports the release the binary was built from (CMake's project version),
// the same string netqosd and the admin GetStatus report.
#include <catch2/catch.hpp>
#include <sstream>
#include <string>

#include "common/version.h"
#include "ctl/ctl.h"

TEST_CASE("netqosctl --version prints the build's release version and exits 0") {
  const char* argv[] = {"netqosctl", "--version"};
  std::ostringstream out, err;
  const int rc = netqos::ctl::RunCtl(2, argv, out, err);
  CHECK(rc == netqos::ctl::kExitOk);
  CHECK(out.str() == std::string("netqosctl ") + netqos::Version() + "\n");
  CHECK(std::string(netqos::Version()).find('.') != std::string::npos);
}
