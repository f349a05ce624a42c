// Pre-written journal segments: a segment is created as zeros, records overwrite them, a NUL at a
// record's start ends the journal and a record cut short by zeros is a torn write. What a crash
// can leave is made here by hand: the zeros a record was written over are put back (the write did
// not reach the disk), in part or whole, with or without later records after them.
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <string>
#include <vector>

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

constexpr uint64_t kSegmentBytes = 4096;

using testing::Info;

core::StateChange Set(const std::string& uid, uint32_t bw = 1) {
  return core::SetAllocation{Info(uid, bw)};
}

std::unique_ptr<FileStateStore> MustCreate(const std::string& dir, bool skip = false,
                                           uint64_t segment_bytes = kSegmentBytes) {
  FileStateStore::Options o;
  o.dir = dir;
  o.skip_corruption = skip;
  o.segment_bytes = segment_bytes;
  auto store = FileStateStore::Create(o);
  REQUIRE(store.ok());
  return std::move(store).value();
}

std::unique_ptr<FileStateStore> Open(const std::string& dir, core::LoadedState* loaded = nullptr,
                                     bool skip = false) {
  return testing::MustLoad(MustCreate(dir, skip), loaded);
}

void MustAppend(FileStateStore& store, const core::StateChange& change) {
  Status st = store.Append(change);
  INFO(st.message());
  REQUIRE(st.ok());
}

std::vector<std::string> Segments(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& name : ListDir(dir)) {
    if (name.rfind("network_plugin_state.wal.", 0) == 0) out.push_back(dir + "/" + name);
  }
  return out;
}

off_t FileSize(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_size;
}

// Offsets of the records (lines) before the zero tail.
std::vector<size_t> RecordOffsets(const std::string& contents) {
  std::vector<size_t> out;
  size_t pos = 0;
  while (pos < contents.size() && contents[pos] != '\0') {
    out.push_back(pos);
    pos = contents.find('\n', pos) + 1;
  }
  return out;
}

// The segment's bytes [from, to) back to zeros, as if that part of a write never reached the disk.
void ZeroRange(const std::string& path, size_t from, size_t to) {
  std::string contents = ReadFile(path);
  REQUIRE(to <= contents.size());
  contents.replace(from, to - from, std::string(to - from, '\0'));
  WriteFile(path, contents);
}

std::vector<std::string> Uids(const core::LoadedState& loaded) {
  std::vector<std::string> out;
  for (const auto& [uid, containers] : loaded.pod_entries) out.push_back(uid);
  return out;
}

using Strings = std::vector<std::string>;

TEST_CASE("a new journal segment is written with zeros and records overwrite them",
          "[file_state_store][prewritten]") {
  TempDir tmp;
  auto store = Open(tmp.path());
  MustAppend(*store, Set("a"));
  MustAppend(*store, Set("b"));
  const auto segs = Segments(tmp.path());
  REQUIRE(segs.size() == 1);
  CHECK(FileSize(segs[0]) == static_cast<off_t>(kSegmentBytes));
  const std::string contents = ReadFile(segs[0]);
  const auto offsets = RecordOffsets(contents);
  REQUIRE(offsets.size() == 2);
  const size_t end = contents.find('\n', offsets[1]) + 1;
  CHECK(contents.find_first_not_of('\0', end) == std::string::npos);

  // The zero tail is the end of the journal; nothing is truncated.
  store.reset();
  core::LoadedState loaded;
  store = Open(tmp.path(), &loaded);
  CHECK(Uids(loaded) == Strings{"a", "b"});
  CHECK(FileSize(segs[0]) == static_cast<off_t>(kSegmentBytes));
}

TEST_CASE("records after a zero gap were never acknowledged and are not loaded",
          "[file_state_store][prewritten]") {
  TempDir tmp;
  {
    auto store = Open(tmp.path());
    for (const char* uid : {"a", "b", "c", "d"}) MustAppend(*store, Set(uid));
  }
  const std::string seg = Segments(tmp.path()).at(0);
  const auto offsets = RecordOffsets(ReadFile(seg));
  REQUIRE(offsets.size() == 4);
  // Record 2 ("b") never reached the disk; 3 and 4 did (write-back in any order).
  ZeroRange(seg, offsets[1], offsets[2]);
  const std::string damaged = ReadFile(seg);

  core::LoadedState loaded;
  auto store = Open(tmp.path(), &loaded);
  CHECK(Uids(loaded) == Strings{"a"});
  CHECK_FALSE(loaded.corruption_skipped);
  CHECK(ReadFile(seg) == damaged);  // left as it is: every load stops at the same place

  // New records follow the loaded ones (seq 2 again, in a new segment), and a later load reads
  // them, never the stale records beyond the gap.
  MustAppend(*store, Set("e"));
  CHECK(Segments(tmp.path()).size() == 2);
  store.reset();
  store = Open(tmp.path(), &loaded);
  CHECK(Uids(loaded) == Strings{"a", "e"});
  MustAppend(*store, Set("f"));
  store.reset();
  store = Open(tmp.path(), &loaded);
  CHECK(Uids(loaded) == Strings{"a", "e", "f"});
}

TEST_CASE("a record cut short by zeros is a torn write dropped with everything after it",
          "[file_state_store][prewritten]") {
  TempDir tmp;
  {
    auto store = Open(tmp.path());
    for (const char* uid : {"a", "b", "c"}) MustAppend(*store, Set(uid));
  }
  const std::string seg = Segments(tmp.path()).at(0);
  const auto offsets = RecordOffsets(ReadFile(seg));
  REQUIRE(offsets.size() == 3);
  SECTION("its end did not reach the disk") { ZeroRange(seg, offsets[1] + 20, offsets[2]); }
  SECTION("its middle did not, its newline and the next record did") {
    ZeroRange(seg, offsets[1] + 20, offsets[1] + 40);
  }
  SECTION("only its newline did not") { ZeroRange(seg, offsets[2] - 1, offsets[2]); }

  core::LoadedState loaded;
  auto store = Open(tmp.path(), &loaded);
  CHECK(Uids(loaded) == Strings{"a"});
  CHECK_FALSE(loaded.corruption_skipped);
  // Cut at the torn record, as a torn tail always was.
  CHECK(FileSize(seg) == static_cast<off_t>(offsets[1]));
  MustAppend(*store, Set("d"));
  store.reset();
  store = Open(tmp.path(), &loaded);
  CHECK(Uids(loaded) == Strings{"a", "d"});
}

TEST_CASE("a record cut short by zeros in a sealed segment is corruption",
          "[file_state_store][prewritten]") {
  TempDir tmp;
  {
    auto store = Open(tmp.path());
    MustAppend(*store, Set("a"));
    MustAppend(*store, Set("b"));
    REQUIRE(store->BeginSnapshot().ok());  // seals the first segment (no FinishSnapshot)
    MustAppend(*store, Set("c"));
  }
  const auto segs = Segments(tmp.path());
  REQUIRE(segs.size() == 2);
  const auto offsets = RecordOffsets(ReadFile(segs[0]));
  REQUIRE(offsets.size() == 2);
  ZeroRange(segs[0], offsets[1] + 10, offsets[1] + 20);

  auto strict = MustCreate(tmp.path())->Load();
  REQUIRE_FALSE(strict.ok());
  INFO(strict.status().message());
  CHECK(strict.status().code() == StatusCode::kDataLoss);
  CHECK_THAT(strict.status().message(), Catch::Contains(segs[0] + ":2"));
  CHECK_THAT(strict.status().message(), Catch::Contains("cut short by zero bytes"));

  core::LoadedState loaded;
  auto store = Open(tmp.path(), &loaded, /*skip=*/true);
  CHECK(loaded.corruption_skipped);
  CHECK(Uids(loaded) == Strings{"a"});
}

TEST_CASE("a full segment rolls over to a new one named after its first record",
          "[file_state_store][prewritten]") {
  TempDir tmp;
  std::vector<std::string> uids;
  auto store = Open(tmp.path());
  for (int i = 0; i < 40; ++i) {
    uids.push_back("p" + std::to_string(100 + i));
    MustAppend(*store, Set(uids.back()));
  }
  const auto segs = Segments(tmp.path());
  REQUIRE(segs.size() > 2);
  uint64_t records = 0;
  for (const auto& seg : segs) {
    INFO(seg);
    CHECK(FileSize(seg) == static_cast<off_t>(kSegmentBytes));
    // Named after its first record's sequence number.
    const std::string contents = ReadFile(seg);
    CHECK(seg == store->SegmentPath(records + 1));
    CHECK_THAT(contents, Catch::StartsWith("{\"alloc\":"));
    records += RecordOffsets(contents).size();
  }
  CHECK(records == 40);

  store.reset();
  core::LoadedState loaded;
  store = Open(tmp.path(), &loaded);
  CHECK(Uids(loaded) == uids);
  // A snapshot removes every segment it covers.
  auto seq = store->BeginSnapshot();
  REQUIRE(seq.ok());
  core::Snapshot snap;
  snap.pod_entries = loaded.pod_entries;
  REQUIRE(store->FinishSnapshot(*seq, snap).ok());
  CHECK(Segments(tmp.path()).empty());
}

TEST_CASE("a record larger than a segment gets a segment of its own size",
          "[file_state_store][prewritten]") {
  TempDir tmp;
  auto store = Open(tmp.path());
  MustAppend(*store, Set("a"));
  core::AllocationInfo big = Info("big", 1);
  big.annotations["example.com/blob"] = std::string(3 * kSegmentBytes, 'x');
  MustAppend(*store, core::SetAllocation{big});
  MustAppend(*store, Set("b"));
  // Its segment is made large enough, in whole pages, and the next record fits in what is left.
  const auto segs = Segments(tmp.path());
  REQUIRE(segs.size() == 2);
  CHECK(FileSize(segs[0]) == static_cast<off_t>(kSegmentBytes));
  CHECK(FileSize(segs[1]) == static_cast<off_t>(4 * kSegmentBytes));
  CHECK(RecordOffsets(ReadFile(segs[1])).size() == 2);
  store.reset();
  core::LoadedState loaded;
  store = Open(tmp.path(), &loaded);
  CHECK(Uids(loaded) == Strings{"a", "b", "big"});
}

TEST_CASE("after a restart records go to a new segment and the partly written one stays whole",
          "[file_state_store][prewritten]") {
  TempDir tmp;
  {
    auto store = Open(tmp.path());
    MustAppend(*store, Set("a"));
    MustAppend(*store, Set("b"));
  }
  const std::string first = Segments(tmp.path()).at(0);
  const std::string before = ReadFile(first);
  core::LoadedState loaded;
  auto store = Open(tmp.path(), &loaded);
  MustAppend(*store, Set("c"));
  const auto segs = Segments(tmp.path());
  REQUIRE(segs.size() == 2);
  CHECK(segs[0] == first);
  CHECK(segs[1] == store->SegmentPath(3));
  CHECK(ReadFile(first) == before);
  // Two restarts in a row with nothing appended leave no empty segment behind.
  store.reset();
  store = Open(tmp.path(), &loaded);
  store.reset();
  store = Open(tmp.path(), &loaded);
  CHECK(Uids(loaded) == Strings{"a", "b", "c"});
  CHECK(Segments(tmp.path()).size() == 2);
  MustAppend(*store, Set("d"));
  store.reset();
  store = Open(tmp.path(), &loaded);
  CHECK(Uids(loaded) == Strings{"a", "b", "c", "d"});
}

TEST_CASE("a segment that holds only zeros is removed at load", "[file_state_store][prewritten]") {
  // A crash after the segment's zeros were written and before its first record reached the disk.
  TempDir tmp;
  {
    auto store = Open(tmp.path());
    MustAppend(*store, Set("a"));
  }
  const std::string empty = MustCreate(tmp.path())->SegmentPath(2);
  WriteFile(empty, std::string(kSegmentBytes, '\0'));
  core::LoadedState loaded;
  auto store = Open(tmp.path(), &loaded);
  CHECK(Uids(loaded) == Strings{"a"});
  CHECK(Segments(tmp.path()).size() == 1);
  MustAppend(*store, Set("b"));  // takes the name again
  CHECK(Segments(tmp.path()).back() == empty);
}

// Runs `fn` with RLIMIT_FSIZE at `limit` bytes (a write beyond fails with EFBIG, as a full disk
// fails with ENOSPC, both before the record is written).
template <typename Fn>
void WithFileSizeLimit(rlim_t limit, Fn fn) {
  struct rlimit old_limit {};
  REQUIRE(::getrlimit(RLIMIT_FSIZE, &old_limit) == 0);
  auto old_handler = ::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = old_limit;
  small.rlim_cur = limit;
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
  fn();
  ::setrlimit(RLIMIT_FSIZE, &old_limit);
  ::signal(SIGXFSZ, old_handler);
}

TEST_CASE("a segment that cannot be written with zeros refuses the change and loses nothing",
          "[file_state_store][prewritten]") {
  TempDir tmp;
  auto store = Open(tmp.path());
  SECTION("the first segment") {}
  SECTION("rolling over from one the record does not fit in") { MustAppend(*store, Set("a")); }
  const auto segs_before = Segments(tmp.path());
  std::vector<std::string> contents_before;
  for (const auto& s : segs_before) contents_before.push_back(ReadFile(s));
  // Too large for what is left of a segment that holds a record.
  core::AllocationInfo refused = Info("refused", 1);
  refused.annotations["example.com/blob"] = std::string(kSegmentBytes - 200, 'x');

  Status st;
  WithFileSizeLimit(kSegmentBytes / 2, [&] { st = store->Append(core::SetAllocation{refused}); });
  REQUIRE_FALSE(st.ok());
  INFO(st.message());
  CHECK(st.code() == StatusCode::kInternal);
  CHECK_THAT(st.message(), Catch::Contains("cannot create journal segment"));
  CHECK_THAT(st.message(), Catch::Contains("File too large"));
  CHECK_THAT(st.message(), Catch::Contains("the change is not made"));
  // No half-written segment is left, and the others are as they were.
  const auto segs_after = Segments(tmp.path());
  REQUIRE(segs_after == segs_before);
  for (size_t i = 0; i < segs_after.size(); ++i)
    CHECK(ReadFile(segs_after[i]) == contents_before[i]);

  // A snapshot in between, then the next change finds its segment.
  auto seq = store->BeginSnapshot();
  REQUIRE(seq.ok());
  MustAppend(*store, Set("after"));
  store.reset();
  core::LoadedState loaded;
  store = Open(tmp.path(), &loaded);
  CHECK(loaded.pod_entries.count("refused") == 0);
  CHECK(loaded.pod_entries.count("after") == 1);
}

}  // namespace
}  // namespace netqos::checkpoint
