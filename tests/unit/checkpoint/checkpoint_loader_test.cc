// LoadCheckpointDir on its own, on files written here with the formats' pure encoders
// (journal_record.h, snapshot_file.h): what it loads, where the journal picks up, a torn tail
// against corruption, a bad snapshot checksum, and how it tidies the directory.
#include "checkpoint/checkpoint_loader.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "checkpoint/journal_record.h"
#include "checkpoint/journal_writer.h"
#include "checkpoint/snapshot_file.h"
#include "checkpoint/snapshot_writer.h"
#include "support/checkpoint_store.h"
#include "support/files.h"
#include "support/temp_dir.h"

namespace netqos::checkpoint {
namespace {

using netqos::testing::ListDir;
using netqos::testing::ReadFile;
using netqos::testing::TempDir;
using netqos::testing::WriteFile;

CheckpointLoadOptions Opts(const std::string& dir, bool skip = false) {
  CheckpointLoadOptions o;
  o.dir = dir;
  o.skip_corruption = skip;
  o.max_journal_line_bytes = size_t{1} << 20;
  o.max_snapshot_bytes = size_t{16} << 20;
  return o;
}

core::StateChange Set(const std::string& uid, uint32_t bw) {
  return core::SetAllocation{testing::Info(uid, bw)};
}

// Records first..first+n-1, setting pods "p<seq>".
std::string Records(uint64_t first, uint64_t n) {
  std::string out;
  for (uint64_t seq = first; seq < first + n; ++seq) {
    out += EncodeRecord(seq, Set("p" + std::to_string(seq), 10));
  }
  return out;
}

std::string SnapshotText(uint64_t seq, const core::PodEntries& entries) {
  core::Snapshot s;
  s.pod_entries = entries;
  s.machine_state[core::NicId{"", "eth0"}] = core::NicState{};
  return RenderSnapshot(seq, s, KatalystLayout::kV053, "test");
}

LoadedCheckpoint MustLoad(const CheckpointLoadOptions& options) {
  auto loaded = LoadCheckpointDir(options);
  INFO(loaded.status().message());
  REQUIRE(loaded.ok());
  return std::move(loaded).value();
}

uint64_t FileSize(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return static_cast<uint64_t>(st.st_size);
}

TEST_CASE("checkpoint loader: an empty directory is a fresh start at seq 1",
          "[checkpoint_loader]") {
  TempDir tmp;
  LoadedCheckpoint loaded = MustLoad(Opts(tmp.path()));
  CHECK_FALSE(loaded.state.found);
  CHECK(loaded.state.pod_entries.empty());
  CHECK(loaded.snapshot_seq == 0);
  CHECK(loaded.journal.next_seq == 1);
  CHECK(loaded.journal.segments.empty());
}

TEST_CASE("checkpoint loader: the journal is replayed over the snapshot from its seq on",
          "[checkpoint_loader]") {
  TempDir tmp;
  // The snapshot holds records 1..3 (pods p1..p3); the journal still has 1..5.
  core::PodEntries snap;
  for (int i = 1; i <= 3; ++i) {
    snap["p" + std::to_string(i)]["c"] = testing::Info("p" + std::to_string(i), 10);
  }
  WriteFile(tmp.file("network_plugin_state"), SnapshotText(3, snap));
  const std::string segment = tmp.file(SegmentFileName(1));
  const std::string records = Records(1, 5);
  WriteFile(segment, records);

  LoadedCheckpoint loaded = MustLoad(Opts(tmp.path()));
  CHECK(loaded.state.found);
  CHECK(loaded.snapshot_seq == 3);
  CHECK(loaded.state.pod_entries.size() == 5);
  CHECK(loaded.state.pod_entries.count("p5") == 1);
  CHECK(loaded.journal.next_seq == 6);
  // Only records 4 and 5 were not in the snapshot: they count towards the next one.
  CHECK(loaded.journal.records_since_snapshot == 2);
  CHECK(loaded.journal.bytes_since_snapshot == Records(4, 2).size());
  REQUIRE(loaded.journal.segments.size() == 1);
  CHECK(loaded.journal.segments[0].path == segment);
  CHECK(loaded.journal.segments[0].last_seq == 5);
}

TEST_CASE("checkpoint loader: a snapshot written over its journal replaces it",
          "[checkpoint_loader]") {
  TempDir tmp;
  // Written by the two writers as a store would: records, a cut, the snapshot, the journal gone.
  {
    JournalWriter::Options journal_options;
    journal_options.dir = tmp.path();
    journal_options.max_line_bytes = size_t{1} << 20;
    journal_options.segment_bytes = 8192;
    JournalWriter journal(std::move(journal_options), JournalResume{});
    REQUIRE(journal.Write(Set("a", 10)).ok());
    REQUIRE(journal.Write(Set("b", 20)).ok());
    auto seq = journal.Cut();
    REQUIRE(seq.ok());
    SnapshotWriter::Options options;
    options.dir = tmp.path();
    options.max_bytes = size_t{1} << 20;
    SnapshotWriter snapshots(options, 0);
    core::Snapshot snap;
    snap.pod_entries["a"]["c"] = testing::Info("a", 10);
    snap.pod_entries["b"]["c"] = testing::Info("b", 20);
    REQUIRE(snapshots.Write(*seq, snap).ok());
    REQUIRE(journal.DropCoveredBy(*seq).ok());
  }
  CHECK(ListDir(tmp.path()) == std::vector<std::string>{"network_plugin_state"});
  LoadedCheckpoint loaded = MustLoad(Opts(tmp.path()));
  CHECK(loaded.snapshot_seq == 2);
  CHECK(loaded.state.pod_entries.size() == 2);
  CHECK(loaded.journal.next_seq == 3);
  CHECK(loaded.journal.records_since_snapshot == 0);
  CHECK(loaded.journal.segments.empty());
}

TEST_CASE("checkpoint loader: a torn last journal line is dropped and cut off the file",
          "[checkpoint_loader]") {
  TempDir tmp;
  const std::string segment = tmp.file(SegmentFileName(1));
  const std::string whole = Records(1, 2);
  const std::string third = Records(3, 1);
  WriteFile(segment, whole + third.substr(0, third.size() / 2));  // the third write never returned

  LoadedCheckpoint loaded = MustLoad(Opts(tmp.path()));
  CHECK(loaded.state.pod_entries.size() == 2);
  CHECK(loaded.state.pod_entries.count("p3") == 0);
  CHECK_FALSE(loaded.state.corruption_skipped);
  CHECK(loaded.journal.next_seq == 3);
  CHECK(FileSize(segment) == whole.size());
  CHECK(ReadFile(segment) == whole);
}

TEST_CASE("checkpoint loader: a damaged record before the last line is corruption naming its line",
          "[checkpoint_loader]") {
  TempDir tmp;
  const std::string segment = tmp.file(SegmentFileName(1));
  std::string records = Records(1, 3);
  records[records.find("\"p2\"") + 1] = 'q';  // record 2 no longer matches its crc
  WriteFile(segment, records);

  auto strict = LoadCheckpointDir(Opts(tmp.path()));
  REQUIRE_FALSE(strict.ok());
  CHECK(strict.status().code() == StatusCode::kDataLoss);
  CHECK_THAT(strict.status().message(), Catch::StartsWith("journal " + segment + ":2: "));
  CHECK(ReadFile(segment) == records);  // left as it was

  // Skipping stops the replay there; the segment is kept for the next snapshot to drop, and new
  // records are numbered after everything in it.
  LoadedCheckpoint skipped = MustLoad(Opts(tmp.path(), /*skip=*/true));
  CHECK(skipped.state.corruption_skipped);
  CHECK(skipped.state.snapshot_before_changes);
  CHECK(skipped.state.pod_entries.size() == 1);
  CHECK(skipped.journal.next_seq == 4);
  REQUIRE(skipped.journal.segments.size() == 1);
  CHECK(skipped.journal.segments[0].last_seq == 0);
}

TEST_CASE("checkpoint loader: a snapshot failing its checksum is refused naming the file",
          "[checkpoint_loader]") {
  TempDir tmp;
  const std::string path = tmp.file("network_plugin_state");
  core::PodEntries entries;
  entries["a"]["c"] = testing::Info("a", 100);
  nlohmann::json doc = nlohmann::json::parse(SnapshotText(0, entries));
  doc["pod_entries"]["a"]["c"]["egress"] = 999;  // changed after the checksum was computed
  WriteFile(path, doc.dump());

  auto strict = LoadCheckpointDir(Opts(tmp.path()));
  REQUIRE_FALSE(strict.ok());
  CHECK(strict.status().code() == StatusCode::kDataLoss);
  CHECK_THAT(strict.status().message(),
             Catch::Contains("checkpoint " + path) && Catch::Contains("checksum"));
  LoadedCheckpoint skipped = MustLoad(Opts(tmp.path(), /*skip=*/true));
  CHECK(skipped.state.corruption_skipped);
  CHECK(skipped.state.pod_entries.at("a").at("c").egress == 999);
}

TEST_CASE("checkpoint loader: unfinished snapshots and segments without records are removed",
          "[checkpoint_loader]") {
  TempDir tmp;
  const std::string temp = tmp.file(SnapshotTempPrefix() + "123-1");
  WriteFile(temp, "{\"half\":");
  WriteFile(tmp.file(SegmentFileName(1)), Records(1, 2));
  WriteFile(tmp.file(SegmentFileName(3)), std::string(4096, '\0'));  // created, never written
  LoadedCheckpoint loaded = MustLoad(Opts(tmp.path()));
  CHECK(loaded.state.pod_entries.size() == 2);
  CHECK(loaded.journal.next_seq == 3);
  CHECK(ListDir(tmp.path()) == std::vector<std::string>{SegmentFileName(1)});
}

}  // namespace
}  // namespace netqos::checkpoint
