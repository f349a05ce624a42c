// Listing the cgroup ids of a tree (inode numbers; any directory tree will do).
#include "cgroup/fs/cgroup_dirs.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <set>
#include <string>

#include "support/files.h"
#include "support/temp_dir.h"

namespace {

using netqos::cgroup::ListCgroupIds;
using netqos::testing::TempDir;

uint64_t Inode(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_ino;
}

TEST_CASE("ListCgroupIds lists the root and every directory below it, no files", "[cgroup]") {
  TempDir tmp;
  const std::string root = tmp.file("cg");
  namespace fs = std::filesystem;
  fs::create_directories(root + "/kubepods/burstable/podx/ctr1");
  fs::create_directories(root + "/kubepods/burstable/podx/ctr2");
  fs::create_directories(root + "/kubepods/besteffort");
  fs::create_directories(root + "/system.slice");
  netqos::testing::WriteFile(root + "/cgroup.procs", "");
  netqos::testing::WriteFile(root + "/kubepods/burstable/podx/ctr1/cgroup.procs", "1\n");
  fs::create_directory_symlink(root + "/system.slice", root + "/link");  // not a directory entry
  fs::create_directories(tmp.file("outside"));

  std::set<uint64_t> want;
  for (const char* rel : {"", "/kubepods", "/kubepods/burstable", "/kubepods/burstable/podx",
                          "/kubepods/burstable/podx/ctr1", "/kubepods/burstable/podx/ctr2",
                          "/kubepods/besteffort", "/system.slice"}) {
    want.insert(Inode(root + rel));
  }
  auto ids = ListCgroupIds(root);
  INFO(ids.status().message());
  REQUIRE(ids.ok());
  CHECK(*ids == want);
  CHECK(ids->count(Inode(root + "/cgroup.procs")) == 0);
  CHECK(ids->count(Inode(tmp.file("outside"))) == 0);
  CHECK(ids->count(Inode(tmp.path())) == 0);

  // A removed directory disappears from the next listing.
  fs::remove_all(root + "/kubepods/burstable/podx/ctr2");
  auto after = ListCgroupIds(root);
  REQUIRE(after.ok());
  CHECK(after->size() == want.size() - 1);

  // A root with no subdirectories is just its own id.
  auto leaf = ListCgroupIds(root + "/system.slice");
  REQUIRE(leaf.ok());
  CHECK(*leaf == std::set<uint64_t>{Inode(root + "/system.slice")});
}

TEST_CASE("ListCgroupIds of a missing root is NotFound", "[cgroup]") {
  TempDir tmp;
  auto ids = ListCgroupIds(tmp.file("absent"));
  REQUIRE_FALSE(ids.ok());
  CHECK(ids.status().code() == netqos::StatusCode::kNotFound);
  CHECK_THAT(ids.status().message(), Catch::Contains(tmp.file("absent")));
}

}  // namespace
