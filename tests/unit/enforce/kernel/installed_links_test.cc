// The installed-links record (what `netqosd --uninstall` removes): round trip, including the IFBs
// of NICs that were deleted and re-created, and records written before IFBs were listed.
#include "enforce/kernel/installed_links.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

using netqos::enforce::InstalledLink;
using netqos::enforce::LoadInstalledLinks;
using netqos::enforce::SaveInstalledLinks;

namespace {

std::string TempPath() {
  char tmpl[] = "/tmp/nq-links.XXXXXX";
  const int fd = ::mkstemp(tmpl);
  REQUIRE(fd >= 0);
  ::close(fd);
  return tmpl;
}

}  // namespace

TEST_CASE("installed links: the record keeps every IFB of a link") {
  const std::string path = TempPath();
  std::vector<InstalledLink> links = {
      {"", "", "eth0", 1, {"nqifb12", "nqifb7"}, "edt", {"mq", 0x80010000, {"fq_codel", "fq"}}},
      {"ns2", "/var/run/netns/ns2", "eth2", -1, {}, "htb", {}},
  };
  REQUIRE(SaveInstalledLinks(path, links).ok());
  auto loaded = LoadInstalledLinks(path);
  REQUIRE(loaded.ok());
  REQUIRE(loaded->size() == 2);
  CHECK((*loaded)[0].name == "eth0");
  CHECK((*loaded)[0].forward_priority_before == 1);
  CHECK((*loaded)[0].ifbs == std::vector<std::string>{"nqifb12", "nqifb7"});
  CHECK((*loaded)[1].netns == "ns2");
  CHECK((*loaded)[1].netns_path == "/var/run/netns/ns2");
  CHECK((*loaded)[1].ifbs.empty());
  // The mode and the layout --uninstall puts back.
  CHECK((*loaded)[0].mode == "edt");
  CHECK((*loaded)[0].before == links[0].before);
  CHECK((*loaded)[1].mode == "htb");
  CHECK((*loaded)[1].before.root_kind.empty());
  std::remove(path.c_str());
}

TEST_CASE("installed links: a record written before IFBs were listed still loads") {
  const std::string path = TempPath();
  std::ofstream(path) << R"({"links": [{"netns": "", "netns_path": "", "name": "eth0",
                                        "forward_priority_before": -1}]})";
  auto loaded = LoadInstalledLinks(path);
  REQUIRE(loaded.ok());
  REQUIRE(loaded->size() == 1);
  CHECK((*loaded)[0].name == "eth0");
  CHECK((*loaded)[0].ifbs.empty());
  std::remove(path.c_str());
}

TEST_CASE("installed links: a record over the size limit is refused, naming it and the limit") {
  const std::string path = TempPath();
  // Sparse: 1 GiB that is never read.
  REQUIRE(::truncate(path.c_str(), off_t{1} << 30) == 0);
  auto loaded = LoadInstalledLinks(path);
  REQUIRE_FALSE(loaded.ok());
  CHECK(loaded.status().code() == netqos::StatusCode::kInvalidArgument);
  CHECK_THAT(loaded.status().message(), Catch::Contains(path));
  CHECK_THAT(loaded.status().message(), Catch::Contains("limit of 4194304 bytes (4 MiB)"));
  std::remove(path.c_str());
}
