// JournalWriter on its own, on real files: group commit with concurrent writers, the seal of Cut,
// resuming after a load, and the removal of the segments a snapshot covers. The records are read
// back with the journal's own reader (journal_lines.h), not through a store.
#include "checkpoint/journal_writer.h"

#include <sys/stat.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "checkpoint/journal_lines.h"
#include "checkpoint/journal_record.h"
#include "support/checkpoint_store.h"
#include "support/files.h"
#include "support/temp_dir.h"

namespace netqos::checkpoint {
namespace {

using testing::SetFor;

using netqos::testing::ListDir;
using netqos::testing::TempDir;
using netqos::testing::WriteFile;

JournalWriter::Options Opts(const std::string& dir) {
  JournalWriter::Options options;
  options.dir = dir;
  options.max_line_bytes = size_t{1} << 20;
  options.segment_bytes = 8192;
  return options;
}

// The segment files in `dir` by first sequence number.
std::map<uint64_t, std::string> SegmentFiles(const std::string& dir) {
  std::map<uint64_t, std::string> out;
  for (const std::string& name : ListDir(dir)) {
    uint64_t first = 0;
    if (ParseSegmentName(name, &first)) out[first] = dir + "/" + name;
  }
  return out;
}

// Every record in the segments of `dir`, in file order, each required to decode.
std::vector<JournalRecord> ReadRecords(const std::string& dir) {
  std::vector<JournalRecord> out;
  for (const auto& [first, path] : SegmentFiles(dir)) {
    auto lines = JournalLines::Open(path, size_t{1} << 20);
    REQUIRE(lines.ok());
    JournalLines::Line l;
    while (true) {
      auto more = lines->Next(&l);
      REQUIRE(more.ok());
      if (!*more || (l.zero_end && l.length == 0)) break;
      auto rec = DecodeRecord(nlohmann::json::parse(l.text));
      INFO(path << ": " << rec.status().message());
      REQUIRE(rec.ok());
      out.push_back(std::move(rec).value());
    }
  }
  return out;
}

uint64_t FileSize(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return static_cast<uint64_t>(st.st_size);
}

TEST_CASE("journal writer: concurrent writers' records are all flushed, in order, by fewer flushes",
          "[journal_writer]") {
  TempDir tmp;
  JournalWriter::Options options = Opts(tmp.path());
  options.segment_bytes = uint64_t{1} << 20;  // one segment: no rollover seals (and flushes) any
  JournalWriter journal(options, JournalResume{});
  constexpr int kThreads = 8;
  constexpr int kEach = 30;
  constexpr int kRecords = kThreads * kEach;
  std::vector<std::thread> threads;
  std::vector<int> failures(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        auto seq = journal.Write(SetFor("client-" + std::to_string(t), std::to_string(i)));
        if (!seq.ok() || !journal.Sync(*seq).ok()) ++failures[static_cast<size_t>(t)];
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int f : failures) CHECK(f == 0);

  const core::FlushStats stats = journal.Flushes();
  INFO(stats.records.count() << " flushes for " << kRecords << " records");
  // Every record was made durable by exactly one flush (no Cut or rollover sealed any), and
  // overlapping callers shared flushes.
  CHECK(stats.records.sum == kRecords);
  CHECK(stats.records.count() < static_cast<uint64_t>(kRecords));
  CHECK(journal.LastSeq() == kRecords);

  // On disk: every record once, numbered 1..N in file order, each client's in its own order.
  const std::vector<JournalRecord> records = ReadRecords(tmp.path());
  REQUIRE(records.size() == static_cast<size_t>(kRecords));
  std::map<std::string, int> next_of_client;
  for (size_t i = 0; i < records.size(); ++i) {
    CHECK(records[i].seq == i + 1);
    const auto& info = std::get<core::SetAllocation>(records[i].change).info;
    CHECK(info.container_name == std::to_string(next_of_client[info.pod_uid]++));
  }
  CHECK(next_of_client.size() == static_cast<size_t>(kThreads));
}

TEST_CASE("journal writer: a record sealed by Cut is durable without a flush of its own",
          "[journal_writer]") {
  TempDir tmp;
  JournalWriter journal(Opts(tmp.path()), JournalResume{});
  auto first = journal.Write(SetFor("a", "c"));
  REQUIRE(first.ok());
  auto second = journal.Write(SetFor("b", "c"));
  REQUIRE(second.ok());
  auto covered = journal.Cut();
  REQUIRE(covered.ok());
  CHECK(*covered == *second);
  CHECK(journal.Sync(*second).ok());
  CHECK(journal.Flushes().records.count() == 0);  // the seal flushed them

  // The next record opens a segment named after it, and its Sync leads one flush of one record.
  auto third = journal.Write(SetFor("c", "c"));
  REQUIRE(third.ok());
  REQUIRE(journal.Sync(*third).ok());
  const core::FlushStats stats = journal.Flushes();
  CHECK(stats.records.count() == 1);
  CHECK(stats.records.sum == 1);
  const auto segments = SegmentFiles(tmp.path());
  REQUIRE(segments.size() == 2);
  CHECK(segments.begin()->first == 1);
  CHECK(segments.rbegin()->first == *third);
}

TEST_CASE("journal writer: the backlog counts what was written since the last Cut",
          "[journal_writer]") {
  TempDir tmp;
  JournalResume resume;
  resume.records_since_snapshot = 5;  // replayed by a load
  resume.bytes_since_snapshot = 500;
  JournalWriter journal(Opts(tmp.path()), resume);
  CHECK(journal.SinceCut().records == 5);
  CHECK(journal.SinceCut().bytes == 500);
  auto seq = journal.Write(SetFor("a", "c"));
  REQUIRE(seq.ok());
  CHECK(journal.SinceCut().records == 6);
  CHECK(journal.SinceCut().bytes == 500 + EncodeRecord(*seq, SetFor("a", "c")).size());
  REQUIRE(journal.Cut().ok());
  CHECK(journal.SinceCut().records == 0);
  CHECK(journal.SinceCut().bytes == 0);
}

TEST_CASE("journal writer: after a load it numbers on and writes into a new pre-written segment",
          "[journal_writer]") {
  TempDir tmp;
  const std::string old_segment = tmp.file(SegmentFileName(1));
  WriteFile(old_segment, "records 1 to 41, as a load left them\n");
  JournalResume resume;
  resume.next_seq = 42;
  resume.segments = {{old_segment, 41}};
  JournalWriter journal(Opts(tmp.path()), resume);
  CHECK(journal.LastSeq() == 41);
  CHECK(journal.SealedSegments() == 1);
  // What the load read counts as durable: nothing to flush for it.
  CHECK(journal.Sync(41).ok());
  CHECK(journal.Flushes().records.count() == 0);

  auto seq = journal.Write(SetFor("a", "c"));
  REQUIRE(seq.ok());
  CHECK(*seq == 42);
  const std::string segment = tmp.file(SegmentFileName(42));
  CHECK(FileSize(segment) == 8192);  // the segment's size, written with zeros up front
  CHECK(netqos::testing::ReadFile(old_segment) == "records 1 to 41, as a load left them\n");
}

TEST_CASE("journal writer: DropCoveredBy removes only segments whose records are all covered",
          "[journal_writer]") {
  TempDir tmp;
  JournalWriter journal(Opts(tmp.path()), JournalResume{});
  REQUIRE(journal.Write(SetFor("a", "c")).ok());
  REQUIRE(journal.Write(SetFor("b", "c")).ok());
  REQUIRE(journal.Cut().ok());  // segment 1 holds 1..2
  REQUIRE(journal.Write(SetFor("c", "c")).ok());
  REQUIRE(journal.Cut().ok());                    // segment 3 holds 3
  REQUIRE(journal.Write(SetFor("d", "c")).ok());  // segment 4 is open
  REQUIRE(SegmentFiles(tmp.path()).size() == 3);
  CHECK(journal.SealedSegments() == 2);

  REQUIRE(journal.DropCoveredBy(2).ok());
  auto left = SegmentFiles(tmp.path());
  CHECK(left.count(1) == 0);
  CHECK(left.count(3) == 1);
  CHECK(left.count(4) == 1);
  CHECK(journal.SealedSegments() == 1);

  REQUIRE(journal.DropCoveredBy(4).ok());  // the open segment is never removed
  left = SegmentFiles(tmp.path());
  CHECK(left.count(3) == 0);
  CHECK(left.count(4) == 1);
  CHECK(journal.SealedSegments() == 0);
  CHECK(ReadRecords(tmp.path()).size() == 1);
}

TEST_CASE("journal writer: a record over the line limit is refused naming its pod and container",
          "[journal_writer]") {
  TempDir tmp;
  JournalWriter::Options options = Opts(tmp.path());
  options.max_line_bytes = 100;
  JournalWriter journal(options, JournalResume{});
  auto seq = journal.Write(SetFor("pod-with-a-long-uid", "sidecar"));
  REQUIRE_FALSE(seq.ok());
  CHECK(seq.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(seq.status().message(), Catch::Contains("pod pod-with-a-long-uid container sidecar"));
  CHECK(journal.LastSeq() == 0);
  CHECK(SegmentFiles(tmp.path()).empty());
}

}  // namespace
}  // namespace netqos::checkpoint
