// SnapshotWriter on its own, on real files: the file it writes reads back, nothing is left behind,
// and an older seq, an oversized snapshot or an unwritable directory leave the file as it was.
#include "checkpoint/snapshot_writer.h"

#include <catch2/catch.hpp>
#include <string>

#include "checkpoint/snapshot_file.h"
#include "support/checkpoint_store.h"
#include "support/files.h"
#include "support/temp_dir.h"

namespace netqos::checkpoint {
namespace {

using netqos::testing::ListDir;
using netqos::testing::ReadFile;
using netqos::testing::TempDir;

SnapshotWriter::Options Opts(const std::string& dir) {
  SnapshotWriter::Options o;
  o.dir = dir;
  o.every_records = 10;
  o.every_bytes = 1000;
  o.max_bytes = size_t{1} << 20;
  return o;
}

core::Snapshot SnapshotOf(std::initializer_list<std::pair<const char*, uint32_t>> pods) {
  core::Snapshot s;
  for (const auto& [uid, bw] : pods) s.pod_entries[uid]["c"] = testing::Info(uid, bw);
  s.machine_state[core::NicId{"", "eth0"}] = core::NicState{};
  return s;
}

// The snapshot file in `dir`, parsed (required to parse).
ParsedSnapshot ReadBack(const std::string& path) {
  auto parsed = ParseSnapshot(path, ReadFile(path), /*skip=*/false);
  INFO(parsed.status().message());
  REQUIRE(parsed.ok());
  return std::move(parsed).value();
}

TEST_CASE("snapshot writer: each write replaces the file whole and leaves no temp file",
          "[snapshot_writer]") {
  TempDir tmp;
  SnapshotWriter writer(Opts(tmp.path()), 0);
  CHECK(writer.path() == tmp.file("network_plugin_state"));
  REQUIRE(writer.Write(3, SnapshotOf({{"a", 100}, {"b", 200}})).ok());
  ParsedSnapshot first = ReadBack(writer.path());
  CHECK(first.seq == 3);
  CHECK(first.pod_entries == SnapshotOf({{"a", 100}, {"b", 200}}).pod_entries);

  REQUIRE(writer.Write(7, SnapshotOf({{"b", 300}})).ok());
  ParsedSnapshot second = ReadBack(writer.path());
  CHECK(second.seq == 7);
  CHECK(second.pod_entries == SnapshotOf({{"b", 300}}).pod_entries);
  CHECK(ListDir(tmp.path()) == std::vector<std::string>{"network_plugin_state"});
}

TEST_CASE("snapshot writer: a seq older than the snapshot on disk is refused",
          "[snapshot_writer]") {
  TempDir tmp;
  SnapshotWriter writer(Opts(tmp.path()), 10);  // a load found seq 10 on disk
  Status older = writer.Write(9, SnapshotOf({{"a", 100}}));
  CHECK(older.code() == StatusCode::kFailedPrecondition);
  CHECK_THAT(older.message(), Catch::Contains("snapshot seq 9 is older than the snapshot on disk "
                                              "(10)"));
  CHECK(ListDir(tmp.path()).empty());

  REQUIRE(writer.Write(10, SnapshotOf({{"a", 100}})).ok());  // the same seq again is fine
  REQUIRE(writer.Write(12, SnapshotOf({{"a", 200}})).ok());
  CHECK(writer.Write(11, SnapshotOf({{"a", 300}})).code() == StatusCode::kFailedPrecondition);
  CHECK(ReadBack(writer.path()).seq == 12);
}

TEST_CASE("snapshot writer: a snapshot over the size limit is not written", "[snapshot_writer]") {
  TempDir tmp;
  SnapshotWriter::Options options = Opts(tmp.path());
  options.max_bytes = 4096;
  SnapshotWriter writer(options, 0);
  REQUIRE(writer.Write(1, SnapshotOf({{"a", 100}})).ok());
  const std::string before = ReadFile(writer.path());

  core::Snapshot big = SnapshotOf({{"a", 100}});
  big.pod_entries["a"]["c"].annotations["note"] = std::string(8192, 'x');
  Status st = writer.Write(2, big);
  CHECK(st.code() == StatusCode::kResourceExhausted);
  CHECK_THAT(st.message(), Catch::Contains("snapshot " + writer.path() + " would be") &&
                               Catch::Contains("the journal is kept"));
  CHECK(ReadFile(writer.path()) == before);
  CHECK(ListDir(tmp.path()).size() == 1);
}

TEST_CASE("snapshot writer: a directory it cannot write in fails naming the call and the file",
          "[snapshot_writer]") {
  TempDir tmp;
  SnapshotWriter writer(Opts(tmp.file("missing")), 0);
  Status st = writer.Write(1, SnapshotOf({{"a", 100}}));
  CHECK(st.code() == StatusCode::kInternal);
  CHECK_THAT(st.message(),
             Catch::StartsWith("open(" + tmp.file("missing") + "/.network_plugin_state.tmp-"));
}

TEST_CASE("snapshot writer: a snapshot is due at either threshold", "[snapshot_writer]") {
  TempDir tmp;
  SnapshotWriter writer(Opts(tmp.path()), 0);  // 10 records or 1000 bytes
  CHECK_FALSE(writer.Due(0, 0));
  CHECK_FALSE(writer.Due(9, 999));
  CHECK(writer.Due(10, 0));
  CHECK(writer.Due(0, 1000));
}

}  // namespace
}  // namespace netqos::checkpoint
