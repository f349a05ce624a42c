// `netqosctl --version` reports the release the binary was built from (CMake's project version),
// the same string netqosd and the admin GetStatus report.
#include <catch2/catch.hpp>
#include <regex>
#include <sstream>
#include <string>

#include "common/version.h"
#include "ctl/ctl.h"

TEST_CASE("netqosctl --version prints the build's release version and exits 0") {
  const char* argv[] = {"netqosctl", "--version"};
  std::ostringstream out, err;
  const int rc = netqos::ctl::RunCtl(2, argv, out, err);
  CHECK(rc == netqos::ctl::kExitOk);
  CHECK(out.str() == "netqosctl " + netqos::VersionLine() + "\n");
  CHECK(std::string(netqos::Version()).find('.') != std::string::npos);
}

TEST_CASE("the version line names the commit and a reproducible build date") {
  const std::string line = netqos::VersionLine();
  const std::string commit = *netqos::Commit() ? netqos::Commit() : "unknown";
  const std::string date = *netqos::BuildDate() ? netqos::BuildDate() : "unknown";
  CHECK(line == std::string(netqos::Version()) + " commit=" + commit + " date=" + date);
  // SOURCE_DATE_EPOCH or the commit's date, in UTC: never the local clock's format.
  if (date != "unknown") {
    CHECK(std::regex_match(date, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")));
  }
}
