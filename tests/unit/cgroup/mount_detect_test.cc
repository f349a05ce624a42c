#include "cgroup/fs/mount_detect.h"

#include <catch2/catch.hpp>

namespace {

using netqos::StatusCode;
using netqos::cgroup::FindCgroup2Mount;
using netqos::cgroup::UnescapeMountinfoPath;

const char* kHybrid =
    "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

const char* kUnified =
    "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
    "26 23 0:24 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 "
    "rw,nsdelegate,memory_recursiveprot\n";

TEST_CASE("FindCgroup2Mount: unified host gives /sys/fs/cgroup") {
  auto m = FindCgroup2Mount(kUnified);
  REQUIRE(m.ok());
  CHECK(*m == "/sys/fs/cgroup");
}

TEST_CASE("FindCgroup2Mount: hybrid host gives the unified mount") {
  auto m = FindCgroup2Mount(kHybrid);
  REQUIRE(m.ok());
  CHECK(*m == "/sys/fs/cgroup/unified");
}

TEST_CASE("FindCgroup2Mount: /sys/fs/cgroup is preferred over another cgroup2 mount listed first") {
  const std::string text =
      "50 22 0:24 / /mnt/other rw - cgroup2 none rw\n"
      "26 23 0:24 / /sys/fs/cgroup rw shared:4 - cgroup2 cgroup2 rw\n";
  auto m = FindCgroup2Mount(text);
  REQUIRE(m.ok());
  CHECK(*m == "/sys/fs/cgroup");
}

TEST_CASE("FindCgroup2Mount: elsewhere, the first cgroup2 mount, escaped spaces decoded") {
  const std::string text =
      "22 1 8:1 / / rw shared:1 - ext4 /dev/sda1 rw\n"
      "50 22 0:24 / /mnt/my\\040cgroups rw shared:7 master:2 - cgroup2 none rw\n"
      "51 22 0:24 / /mnt/second rw - cgroup2 none rw\n";
  auto m = FindCgroup2Mount(text);
  REQUIRE(m.ok());
  CHECK(*m == "/mnt/my cgroups");
}

TEST_CASE("FindCgroup2Mount: no cgroup2 mount is NotFound") {
  const std::string v1_only =
      "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
      "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n";
  for (const std::string& text : {v1_only, std::string(), std::string("garbage line\n")}) {
    auto m = FindCgroup2Mount(text);
    REQUIRE_FALSE(m.ok());
    CHECK(m.status().code() == StatusCode::kNotFound);
    CHECK_THAT(m.status().message(), Catch::Contains("cgroup2"));
  }
}

TEST_CASE("UnescapeMountinfoPath decodes octal escapes only") {
  CHECK(UnescapeMountinfoPath("/a\\040b\\011c\\012d\\134e") == "/a b\tc\nd\\e");
  CHECK(UnescapeMountinfoPath("/plain") == "/plain");
  CHECK(UnescapeMountinfoPath("/trailing\\04") == "/trailing\\04");
  CHECK(UnescapeMountinfoPath("/not\\9oct") == "/not\\9oct");
}

}  // namespace
