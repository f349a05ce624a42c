// Size limits on the checkpoint files: a snapshot or journal line too large to be netqos's own
// is refused as damaged without being read into memory, and netqos never writes one.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "checkpoint/file_state_store.h"
#include "support/checkpoint_store.h"
#include "support/files.h"
#include "support/temp_dir.h"

namespace netqos::checkpoint {
namespace {

using netqos::testing::ListDir;
using netqos::testing::ReadFile;
using netqos::testing::TempDir;
using netqos::testing::WriteFile;

using testing::Info;

core::StateChange Set(const core::AllocationInfo& info) { return core::SetAllocation{info}; }

std::unique_ptr<FileStateStore> MustCreate(const std::string& dir, bool skip = false,
                                           size_t max_line = kMaxJournalLineBytes,
                                           size_t max_snapshot = kMaxSnapshotBytes) {
  FileStateStore::Options o;
  o.dir = dir;
  o.skip_corruption = skip;
  o.max_journal_line_bytes = max_line;
  o.max_snapshot_bytes = max_snapshot;
  auto store = FileStateStore::Create(o);
  REQUIRE(store.ok());
  return std::move(store).value();
}

std::string OnlySegment(const std::string& dir) {
  std::string found;
  for (const auto& name : ListDir(dir)) {
    if (name.rfind("network_plugin_state.wal.", 0) == 0) {
      REQUIRE(found.empty());
      found = dir + "/" + name;
    }
  }
  REQUIRE_FALSE(found.empty());
  return found;
}

// Makes `path` `size` bytes long without writing them (a hole reads as zeros).
void GrowSparse(const std::string& path, off_t size) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  REQUIRE(fd >= 0);
  const int rc = ::ftruncate(fd, size);
  ::close(fd);
  REQUIRE(rc == 0);
}

off_t FileSize(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_size;
}

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

TEST_CASE("a snapshot larger than the limit is refused as damaged without being read",
          "[file_state_store]") {
  TempDir tmp;
  const std::string snapshot = tmp.file("network_plugin_state");
  // 32 times the limit; reading it whole would take 4 GiB.
  const off_t huge = static_cast<off_t>(kMaxSnapshotBytes) * 32;
  GrowSparse(snapshot, huge);
  for (bool skip : {false, true}) {
    auto r = MustCreate(tmp.path(), skip)->Load();
    REQUIRE_FALSE(r.ok());
    INFO(r.status().message());
    CHECK(r.status().code() == StatusCode::kDataLoss);
    CHECK(Contains(r.status().message(), snapshot));
    CHECK(Contains(r.status().message(), "limit of 134217728 bytes (128 MiB)"));
    CHECK(Contains(r.status().message(), std::to_string(huge) + " bytes"));
    CHECK(FileSize(snapshot) == huge);  // left in place for inspection
  }
}

TEST_CASE("a journal line longer than the limit is corruption naming the file, line and limit",
          "[file_state_store]") {
  TempDir tmp;
  {
    auto store = MustCreate(tmp.path());
    REQUIRE(store->Load().ok());
    REQUIRE(store->Append(Set(Info("a", 1))).ok());
    REQUIRE(store->Append(Set(Info("b", 2))).ok());
  }
  const std::string seg = OnlySegment(tmp.path());
  std::string good = ReadFile(seg);
  good.resize(good.find('\0'));  // the records, without the zeros the segment was written with
  const std::string first_line = good.substr(0, good.find('\n') + 1);
  const std::string second_line = good.substr(first_line.size());
  std::string contents;
  SECTION("between two records") {
    contents = first_line + std::string(kMaxJournalLineBytes + 1, 'x') + "\n" + second_line;
  }
  SECTION("as the last line of the last segment, where a torn write would be dropped") {
    // No newline: a torn write of netqos's is never that long, so this is damage and the file
    // is not truncated. (Zeros would be the segment's unwritten tail, the end of its journal.)
    contents = first_line + std::string(kMaxJournalLineBytes + 1, 'x');
  }
  WriteFile(seg, contents);
  const off_t size = FileSize(seg);

  auto strict = MustCreate(tmp.path())->Load();
  REQUIRE_FALSE(strict.ok());
  INFO(strict.status().message());
  CHECK(strict.status().code() == StatusCode::kDataLoss);
  CHECK(Contains(strict.status().message(), seg + ":2"));
  CHECK(Contains(strict.status().message(), "limit of 8388608 bytes (8 MiB)"));
  CHECK(Contains(strict.status().message(), "--skip-network-state-corruption"));
  CHECK(FileSize(seg) == size);

  // With the skip flag replay stops there, keeping what came before.
  auto store = MustCreate(tmp.path(), /*skip=*/true);
  auto loaded = store->Load();
  REQUIRE(loaded.ok());
  CHECK(loaded->corruption_skipped);
  REQUIRE(loaded->pod_entries.size() == 1);
  CHECK(loaded->pod_entries.count("a") == 1);
}

TEST_CASE("Append refuses a record longer than the journal line limit", "[file_state_store]") {
  TempDir tmp;
  auto store = MustCreate(tmp.path(), false, /*max_line=*/4096);
  REQUIRE(store->Load().ok());
  core::AllocationInfo big = Info("big", 1);
  big.annotations["example.com/blob"] = std::string(5000, 'a');
  Status st = store->Append(Set(big));
  REQUIRE_FALSE(st.ok());
  INFO(st.message());
  CHECK(st.code() == StatusCode::kInvalidArgument);
  CHECK(Contains(st.message(), "pod big container c"));
  CHECK(Contains(st.message(), "limit of 4096 bytes (4 KiB)"));
  // Nothing was written, and the journal goes on.
  REQUIRE(store->Append(Set(Info("small", 1))).ok());
  store.reset();
  auto again = MustCreate(tmp.path(), false, 4096)->Load();
  REQUIRE(again.ok());
  CHECK(again->pod_entries.size() == 1);
  CHECK(again->pod_entries.count("small") == 1);
}

TEST_CASE("a snapshot over the limit is not written and its journal is kept",
          "[file_state_store]") {
  TempDir tmp;
  core::PodEntries entries;
  {
    auto store = MustCreate(tmp.path(), false, kMaxJournalLineBytes, /*max_snapshot=*/1024);
    REQUIRE(store->Load().ok());
    for (const char* uid : {"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}) {
      core::AllocationInfo info = Info(uid, 1);
      REQUIRE(store->Append(Set(info)).ok());
      entries[uid]["c"] = info;
    }
    auto seq = store->BeginSnapshot();
    REQUIRE(seq.ok());
    core::Snapshot snap;
    snap.pod_entries = entries;
    Status st = store->FinishSnapshot(*seq, snap);
    REQUIRE_FALSE(st.ok());
    INFO(st.message());
    CHECK(st.code() == StatusCode::kResourceExhausted);
    CHECK(Contains(st.message(), tmp.file("network_plugin_state")));
    CHECK(Contains(st.message(), "limit of 1024 bytes (1 KiB)"));
  }
  CHECK_FALSE(std::filesystem::exists(tmp.file("network_plugin_state")));
  auto loaded = MustCreate(tmp.path(), false, kMaxJournalLineBytes, 1024)->Load();
  REQUIRE(loaded.ok());
  CHECK(loaded->pod_entries == entries);
}

}  // namespace
}  // namespace netqos::checkpoint
