// Settling the checkpoint set between the disk and the in-memory directory, on real files.
#include "checkpoint/state_dir_migration.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "support/files.h"
#include "support/temp_dir.h"

namespace netqos::checkpoint {
namespace {

namespace fs = std::filesystem;
using netqos::testing::ListDir;
using netqos::testing::ReadFile;
using netqos::testing::TempDir;
using netqos::testing::WriteFile;

constexpr char kSnapshot[] = "network_plugin_state";
constexpr char kSegment1[] = "network_plugin_state.wal.00000000000000000001";
constexpr char kSegment7[] = "network_plugin_state.wal.00000000000000000007";

// Writes `names` into `dir` (contents "<tag>:<name>") with the given age.
void WriteSet(const std::string& dir, const std::vector<std::string>& names, const std::string& tag,
              std::chrono::seconds age) {
  fs::create_directories(dir);
  for (const std::string& n : names) {
    WriteFile(dir + "/" + n, tag + ":" + n);
    fs::last_write_time(dir + "/" + n, fs::file_time_type::clock::now() - age);
  }
}

TEST_CASE("checkpoint set files are the snapshot and its journal segments only",
          "[checkpoint][migration]") {
  CHECK(IsCheckpointSetFile(kSnapshot));
  CHECK(IsCheckpointSetFile(kSegment7));
  CHECK_FALSE(IsCheckpointSetFile("network_plugin_state.wal.7"));
  CHECK_FALSE(IsCheckpointSetFile("network_plugin_state.wal.0000000000000000000x"));
  CHECK_FALSE(IsCheckpointSetFile("network_plugin_state.stale"));
  CHECK_FALSE(IsCheckpointSetFile(".network_plugin_state.tmp-1-2"));
  CHECK_FALSE(IsCheckpointSetFile("netqos-enforced-links.json"));
}

TEST_CASE("the checkpoint settles into the directory the mode uses", "[checkpoint][migration]") {
  TempDir tmp;
  const std::string disk = tmp.path() + "/disk", shm = tmp.path() + "/shm/qrm/state";
  using std::chrono::seconds;

  SECTION("mode turned on: the disk set moves, nothing else does") {
    WriteSet(disk, {kSnapshot, kSegment1}, "disk", seconds(60));
    WriteFile(disk + "/netqos-enforced-links.json", "links");
    REQUIRE(SettleCheckpointDirs(shm, disk).ok());
    CHECK(ListDir(shm) == std::vector<std::string>{kSnapshot, kSegment1});
    CHECK(ReadFile(shm + "/" + kSegment1) == std::string("disk:") + kSegment1);
    CHECK(ListDir(disk) == std::vector<std::string>{"netqos-enforced-links.json"});
    CHECK((fs::status(shm + "/" + kSnapshot).permissions() & fs::perms::all) ==
          (fs::perms::owner_read | fs::perms::owner_write));
  }
  SECTION("after a reboot emptied the tmpfs, nothing comes back") {
    WriteSet(disk, {kSnapshot}, "disk", seconds(60));
    REQUIRE(SettleCheckpointDirs(shm, disk).ok());
    fs::remove_all(tmp.path() + "/shm");
    REQUIRE(SettleCheckpointDirs(shm, disk).ok());
    CHECK_FALSE(fs::exists(shm + "/" + kSnapshot));
    CHECK(ListDir(disk).empty());
  }
  SECTION("mode turned off: the in-memory set moves back") {
    WriteSet(shm, {kSnapshot, kSegment7}, "shm", seconds(5));
    REQUIRE(SettleCheckpointDirs(disk, shm).ok());
    CHECK(ListDir(disk) == std::vector<std::string>{kSnapshot, kSegment7});
    CHECK(ListDir(shm).empty());
  }
  SECTION("both hold a set: the one written last wins, whole") {
    WriteSet(disk, {kSnapshot, kSegment1}, "disk", seconds(600));
    WriteSet(shm, {kSnapshot, kSegment7}, "shm", seconds(5));
    SECTION("the active one is newer: the other goes") {
      REQUIRE(SettleCheckpointDirs(shm, disk).ok());
      CHECK(ListDir(shm) == std::vector<std::string>{kSnapshot, kSegment7});
      CHECK(ReadFile(shm + "/" + kSnapshot) == std::string("shm:") + kSnapshot);
      CHECK(ListDir(disk).empty());
    }
    SECTION("the other one is newer: it replaces the active one, segments included") {
      REQUIRE(SettleCheckpointDirs(disk, shm).ok());
      CHECK(ListDir(disk) == std::vector<std::string>{kSnapshot, kSegment7});
      CHECK(ReadFile(disk + "/" + kSnapshot) == std::string("shm:") + kSnapshot);
      CHECK(ListDir(shm).empty());
    }
  }
  SECTION("a move cut short is redone from the source, though the partial copy is newer") {
    WriteSet(disk, {kSnapshot, kSegment1, kSegment7}, "disk", seconds(60));
    WriteSet(shm, {kSnapshot}, "partial", seconds(0));
    WriteFile(shm + "/.network_plugin_state.moving", "");
    REQUIRE(SettleCheckpointDirs(shm, disk).ok());
    CHECK(ListDir(shm) == std::vector<std::string>{kSnapshot, kSegment1, kSegment7});
    CHECK(ReadFile(shm + "/" + kSnapshot) == std::string("disk:") + kSnapshot);
    CHECK(ListDir(disk).empty());
  }
  SECTION("a move that finished but for its marker keeps what it moved") {
    WriteSet(shm, {kSnapshot}, "moved", seconds(1));
    WriteFile(shm + "/.network_plugin_state.moving", "");
    REQUIRE(SettleCheckpointDirs(shm, disk).ok());
    CHECK(ListDir(shm) == std::vector<std::string>{kSnapshot});
  }
  SECTION("a copy that fails names the file and leaves the source whole") {
    WriteSet(disk, {kSnapshot, kSegment1}, "disk", seconds(60));
    // A directory where the second file must go: its copy fails (EISDIR), as on a full tmpfs.
    fs::create_directories(shm + "/" + kSegment1);
    Status st = SettleCheckpointDirs(shm, disk);
    REQUIRE_FALSE(st.ok());
    CHECK_THAT(st.message(),
               Catch::Contains(shm + "/" + kSegment1) && Catch::Contains(disk + " still holds it"));
    CHECK(ListDir(disk) == std::vector<std::string>{kSnapshot, kSegment1});
    CHECK(ListDir(shm) == std::vector<std::string>{kSegment1});  // the blocking directory only
  }
  SECTION("the same directory twice: nothing moves") {
    WriteSet(disk, {kSnapshot}, "disk", seconds(60));
    REQUIRE(SettleCheckpointDirs(disk, disk).ok());
    CHECK(ListDir(disk) == std::vector<std::string>{kSnapshot});
  }
}

}  // namespace
}  // namespace netqos::checkpoint
