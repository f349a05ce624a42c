#include "checkpoint/file_state_store.h"

#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "support/checkpoint_store.h"
#include "support/files.h"
#include "support/temp_dir.h"

namespace netqos::checkpoint {
namespace {

using netqos::testing::ListDir;
using netqos::testing::ReadFile;
using netqos::testing::TempDir;
using netqos::testing::WriteFile;
using nlohmann::json;

constexpr char kSnapshotName[] = "network_plugin_state";

core::AllocationInfo Info(const std::string& uid, const std::string& container, uint32_t bw,
                          const std::string& nic = "eth0") {
  core::AllocationInfo info;
  info.pod_uid = uid;
  info.pod_namespace = "default";
  info.pod_name = "pod-" + uid;
  info.container_name = container;
  info.container_type = "MAIN";
  info.egress = bw;
  info.ingress = bw;
  info.if_name = nic;
  info.numa_nodes = {0, 1};
  info.labels = {{"katalyst.kubewharf.io/qos_level", "shared_cores"}};
  info.annotations = {{"katalyst.kubewharf.io/qos_level", "shared_cores"}};
  info.qos_level = "shared_cores";
  return info;
}

core::StateChange Set(const core::AllocationInfo& info) { return core::SetAllocation{info}; }
core::StateChange Remove(const std::string& uid) { return core::RemovePodEntries{uid}; }

void Apply(const core::StateChange& change, core::PodEntries* entries) {
  if (const auto* set = std::get_if<core::SetAllocation>(&change)) {
    (*entries)[set->info.pod_uid][set->info.container_name] = set->info;
  } else {
    entries->erase(std::get<core::RemovePodEntries>(change).pod_uid);
  }
}

FileStateStore::Options Opts(const std::string& dir, bool skip = false) {
  FileStateStore::Options o;
  o.dir = dir;
  o.skip_corruption = skip;
  return o;
}

std::unique_ptr<FileStateStore> MustCreate(const std::string& dir, bool skip = false) {
  auto store = FileStateStore::Create(Opts(dir, skip));
  REQUIRE(store.ok());
  return std::move(store).value();
}

// Creates a store and loads it, requiring success.
std::unique_ptr<FileStateStore> Open(const std::string& dir, core::LoadedState* loaded = nullptr,
                                     bool skip = false) {
  return testing::MustLoad(MustCreate(dir, skip), loaded);
}

void MustAppend(FileStateStore& store, const core::StateChange& change,
                core::PodEntries* mirror = nullptr) {
  Status st = store.Append(change);
  INFO(st.message());
  REQUIRE(st.ok());
  if (mirror != nullptr) Apply(change, mirror);
}

core::Snapshot MakeSnapshot(const core::PodEntries& entries) {
  core::Snapshot snap;
  snap.pod_entries = entries;
  snap.machine_state[core::NicId{"", "eth0"}] =
      core::NicState{{23500, 0, 0, 23500, 0, 23500}, {22500, 0, 0, 22500, 0, 22500}};
  return snap;
}

uint64_t MustSnapshot(FileStateStore& store, const core::PodEntries& entries) {
  auto seq = store.BeginSnapshot();
  REQUIRE(seq.ok());
  Status st = store.FinishSnapshot(*seq, MakeSnapshot(entries));
  INFO(st.message());
  REQUIRE(st.ok());
  return *seq;
}

std::vector<std::string> Segments(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& name : ListDir(dir)) {
    if (name.rfind("network_plugin_state.wal.", 0) == 0) out.push_back(dir + "/" + name);
  }
  return out;
}

// A segment's records: its bytes up to the zeros it was pre-written with.
std::string Records(const std::string& path) {
  std::string contents = ReadFile(path);
  return contents.substr(0, contents.find('\0'));
}

std::vector<std::string> Lines(const std::string& path) {
  std::vector<std::string> lines;
  std::string contents = Records(path);
  size_t pos = 0;
  while (pos < contents.size()) {
    size_t nl = contents.find('\n', pos);
    lines.push_back(contents.substr(pos, nl - pos));
    if (nl == std::string::npos) break;
    pos = nl + 1;
  }
  return lines;
}

uint64_t Fnv1a64(const std::string& s) {
  uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

// Rewrites the snapshot document through `edit` and gives it a valid netqos checksum again
// (format 2: netqos.checksum over the document without both checksums).
void RewriteSnapshot(const std::string& path, const std::function<void(json&)>& edit) {
  json doc = json::parse(ReadFile(path));
  edit(doc);
  const json katalyst = doc["checksum"];
  doc.erase("checksum");
  doc["netqos"].erase("checksum");
  doc["netqos"]["checksum"] = Fnv1a64(doc.dump());
  doc["checksum"] = katalyst;
  WriteFile(path, doc.dump());
}

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

TEST_CASE("a fresh directory loads as not found and is created", "[file_state_store]") {
  TempDir tmp;
  const std::string dir = tmp.file("a/b/state");
  core::LoadedState loaded;
  auto store = Open(dir, &loaded);
  CHECK_FALSE(loaded.found);
  CHECK_FALSE(loaded.corruption_skipped);
  CHECK(loaded.pod_entries.empty());
  struct stat st {};
  REQUIRE(::stat(dir.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  CHECK(store->snapshot_path() == dir + "/network_plugin_state");
  CHECK(store->SegmentPath(42) == dir + "/network_plugin_state.wal.00000000000000000042");
}

TEST_CASE("Create names the directory it cannot make", "[file_state_store]") {
  TempDir tmp;
  WriteFile(tmp.file("file"), "x");
  auto store = FileStateStore::Create(Opts(tmp.file("file/sub")));
  REQUIRE_FALSE(store.ok());
  CHECK(Contains(store.status().message(), tmp.file("file/sub")));
  CHECK(Contains(store.status().message(), "mkdir("));
  CHECK_FALSE(FileStateStore::Create(Opts("")).ok());
}

TEST_CASE("calls before Load are refused", "[file_state_store]") {
  TempDir tmp;
  auto store = MustCreate(tmp.path());
  CHECK(store->Append(Remove("x")).code() == StatusCode::kFailedPrecondition);
  CHECK(store->BeginSnapshot().status().code() == StatusCode::kFailedPrecondition);
  CHECK(store->FinishSnapshot(0, {}).code() == StatusCode::kFailedPrecondition);
  REQUIRE(store->Load().ok());
  CHECK(store->Load().status().code() == StatusCode::kFailedPrecondition);
}

TEST_CASE("set, overwrite and remove replay from the journal", "[file_state_store]") {
  TempDir tmp;
  core::PodEntries expected;
  {
    auto store = Open(tmp.path());
    MustAppend(*store, Set(Info("a", "c1", 100)), &expected);
    MustAppend(*store, Set(Info("a", "c2", 200, "eth1")), &expected);
    MustAppend(*store, Set(Info("b", "c1", 300)), &expected);
    MustAppend(*store, Set(Info("a", "c1", 700)), &expected);  // overwrite
    core::AllocationInfo pod_level = Info("c", "", 50);
    pod_level.container_type = "POD";
    MustAppend(*store, Set(pod_level), &expected);
    MustAppend(*store, Remove("b"), &expected);
    MustAppend(*store, Remove("never-there"), &expected);
  }
  REQUIRE(expected.size() == 2);
  CHECK(expected["a"]["c1"].egress == 700);
  core::LoadedState loaded;
  auto store = Open(tmp.path(), &loaded);
  CHECK(loaded.found);
  CHECK_FALSE(loaded.corruption_skipped);
  CHECK(loaded.pod_entries == expected);

  // One line per change, each with seq and crc.
  auto segs = Segments(tmp.path());
  REQUIRE(segs.size() == 1);
  auto lines = Lines(segs[0]);
  REQUIRE(lines.size() == 7);
  json first = json::parse(lines[0]);
  CHECK(first["seq"] == 1);
  CHECK(first["op"] == "set");
  CHECK(first["alloc"]["pod_uid"] == "a");
  CHECK(first.contains("crc"));
  json last = json::parse(lines[6]);
  CHECK(last["op"] == "remove_pod");
  CHECK(last["pod_uid"] == "never-there");
}

TEST_CASE("sequence numbers keep increasing across restarts", "[file_state_store]") {
  TempDir tmp;
  core::PodEntries expected;
  for (int round = 0; round < 3; ++round) {
    core::LoadedState loaded;
    auto store = Open(tmp.path(), &loaded);
    CHECK(loaded.pod_entries == expected);
    for (int i = 0; i < 3; ++i) {
      MustAppend(*store, Set(Info("p" + std::to_string(round), "c" + std::to_string(i), 10)),
                 &expected);
    }
    if (round == 1) MustSnapshot(*store, expected);
  }
  core::LoadedState loaded;
  auto store = Open(tmp.path(), &loaded);
  CHECK(loaded.pod_entries == expected);
  // Round 1's snapshot covered seqs 1..6; round 2 appended 7..9 in a segment of its own.
  auto segs = Segments(tmp.path());
  REQUIRE(segs.size() == 1);
  CHECK(segs[0] == store->SegmentPath(7));
  auto lines = Lines(segs[0]);
  REQUIRE(lines.size() == 3);
  for (size_t i = 0; i < lines.size(); ++i) CHECK(json::parse(lines[i])["seq"] == 7 + i);
  CHECK(json::parse(ReadFile(store->snapshot_path()))["netqos"]["seq"] == 6);
  // The next append continues at 10.
  MustAppend(*store, Remove("p0"));
  CHECK(Segments(tmp.path()).back() == store->SegmentPath(10));
}

TEST_CASE("snapshot plus journal: records on both sides of the snapshot seq",
          "[file_state_store]") {
  TempDir tmp;
  core::PodEntries at_snapshot;
  core::PodEntries expected;
  std::string old_segment;
  std::string old_contents;
  {
    auto store = Open(tmp.path());
    MustAppend(*store, Set(Info("a", "c", 1)), &expected);
    MustAppend(*store, Set(Info("b", "c", 2)), &expected);
    MustAppend(*store, Set(Info("z", "c", 3)), &expected);
    old_segment = Segments(tmp.path()).at(0);
    old_contents = ReadFile(old_segment);
    auto seq = store->BeginSnapshot();
    REQUIRE(seq.ok());
    CHECK(*seq == 3);
    at_snapshot = expected;
    // Appends between Begin and Finish go to a new segment (seq 4, 5).
    MustAppend(*store, Remove("a"), &expected);
    MustAppend(*store, Set(Info("b", "c", 20)), &expected);
    REQUIRE(store->FinishSnapshot(*seq, MakeSnapshot(at_snapshot)).ok());
    MustAppend(*store, Set(Info("d", "c", 4)), &expected);
    auto segs = Segments(tmp.path());
    REQUIRE(segs.size() == 1);  // the sealed segment holding 1..3 is gone
    CHECK(segs[0] == store->SegmentPath(4));
    CHECK_FALSE(store->SnapshotDue());
  }
  json doc = json::parse(ReadFile(tmp.file(kSnapshotName)));
  CHECK(doc["netqos"]["format"] == 2);
  CHECK(doc["netqos"]["seq"] == 3);
  CHECK(doc["netqos"]["katalyst_layout"] == "v0.5.3");
  CHECK(doc["policyName"] == "static");
  CHECK(doc["pod_entries"].size() == 3);
  CHECK(doc["machineState"]["eth0"]["pod_entries"].size() == 3);
  CHECK(doc["machineState"]["eth0"]["egress_state"]["Capacity"] == 23500);
  {
    core::LoadedState loaded;
    Open(tmp.path(), &loaded);
    CHECK(loaded.pod_entries == expected);
  }

  SECTION("a leftover segment with records <= seq is skipped, not replayed") {
    // Make the snapshot disagree with the old journal: records <= 3 must not be applied.
    RewriteSnapshot(tmp.file(kSnapshotName), [](json& d) { d["pod_entries"].erase("z"); });
    WriteFile(old_segment, old_contents);
    expected.erase("z");
    core::LoadedState loaded;
    Open(tmp.path(), &loaded);
    CHECK(loaded.pod_entries == expected);
  }
  SECTION("a missing segment after the snapshot is reported") {
    for (const auto& s : Segments(tmp.path())) REQUIRE(::unlink(s.c_str()) == 0);
    WriteFile(tmp.file("network_plugin_state.wal.00000000000000000009"),
              ReadFile(tmp.file(kSnapshotName)).substr(0, 0));
    // An empty segment is just removed; now forge a gap: a record with seq 9.
    auto store = Open(tmp.path());
    for (int i = 0; i < 6; ++i) MustAppend(*store, Remove("x"));  // seqs 4..9
    auto segs = Segments(tmp.path());
    REQUIRE(segs.size() == 1);
    auto lines = Lines(segs[0]);
    WriteFile(segs[0], lines[5] + "\n");  // only seq 9 left
    store.reset();                        // the restart: the directory's lock goes with the process
    auto again = MustCreate(tmp.path())->Load();
    REQUIRE_FALSE(again.ok());
    CHECK(again.status().code() == StatusCode::kDataLoss);
    CHECK(Contains(again.status().message(), segs[0] + ":1"));
    CHECK(Contains(again.status().message(), "records 4 to 8 are missing"));
  }
}

TEST_CASE("a torn journal tail is dropped and the file truncated", "[file_state_store]") {
  // Segments as netqos wrote them before they were pre-written with zeros (records up to the end
  // of the file); a torn record followed by zeros is in prewritten_segment_test.cc.
  TempDir tmp;
  core::PodEntries expected;
  {
    auto store = Open(tmp.path());
    MustAppend(*store, Set(Info("a", "c", 1)), &expected);
    MustAppend(*store, Set(Info("b", "c", 2)), &expected);
  }
  const std::string seg = Segments(tmp.path()).at(0);
  const std::string good = Records(seg);
  std::string torn;
  SECTION("partial line without newline") {
    std::string line = Lines(seg)[1];
    torn = line.substr(0, line.size() / 2);
  }
  SECTION("complete but valid JSON without newline") { torn = Lines(seg)[1]; }
  SECTION("garbage ending in a newline") { torn = std::string(7, '\x7f') + "\n"; }
  WriteFile(seg, good + torn);
  core::LoadedState loaded;
  auto store = Open(tmp.path(), &loaded);
  CHECK(loaded.pod_entries == expected);
  CHECK_FALSE(loaded.corruption_skipped);
  CHECK(ReadFile(seg) == good);
  // Appending continues after the last good record.
  MustAppend(*store, Remove("a"), &expected);
  CHECK(Segments(tmp.path()).back() == store->SegmentPath(3));
  store.reset();
  core::LoadedState again;
  Open(tmp.path(), &again);
  CHECK(again.pod_entries == expected);
}

TEST_CASE("a torn line that is the only content leaves no empty segment", "[file_state_store]") {
  TempDir tmp;
  WriteFile(tmp.file("network_plugin_state.wal.00000000000000000001"), "{\"seq\":1,\"op\"");
  core::LoadedState loaded;
  auto store = Open(tmp.path(), &loaded);
  CHECK(loaded.found);
  CHECK(loaded.pod_entries.empty());
  CHECK(Segments(tmp.path()).empty());
  MustAppend(*store, Remove("x"));
  CHECK(Segments(tmp.path()) == std::vector<std::string>{store->SegmentPath(1)});
}

TEST_CASE("corruption inside the journal names the file and line", "[file_state_store]") {
  TempDir tmp;
  core::PodEntries after_first;
  {
    auto store = Open(tmp.path());
    MustAppend(*store, Set(Info("a", "c", 1)), &after_first);
    MustAppend(*store, Set(Info("bbbb", "c", 2)));
    MustAppend(*store, Set(Info("c", "c", 3)));
  }
  const std::string seg = Segments(tmp.path()).at(0);
  auto lines = Lines(seg);
  std::string expect_text;
  SECTION("crc mismatch") {
    auto at = lines[1].find("bbbb");
    REQUIRE(at != std::string::npos);
    lines[1][at] = 'x';  // still valid JSON
    expect_text = "crc mismatch";
  }
  SECTION("not JSON") {
    lines[1] = "this is not json";
    expect_text = "not valid JSON";
  }
  SECTION("nested far too deep") {
    // Valid JSON a million brackets deep: recursion over it (dump, compare) would overflow the
    // stack on every start.
    lines[1] = lines[1].substr(0, lines[1].size() - 1) + ",\"x\":" + std::string(500000, '[') +
               std::string(500000, ']') + "}";
    expect_text = "nested deeper than";
  }
  SECTION("sequence going backwards") {
    lines[2] = lines[0];
    expect_text = "sequence number 1 does not follow 2";
  }
  std::string contents;
  for (const auto& l : lines) contents += l + "\n";
  WriteFile(seg, contents);

  auto strict = MustCreate(tmp.path())->Load();
  REQUIRE_FALSE(strict.ok());
  CHECK(strict.status().code() == StatusCode::kDataLoss);
  const std::string line_no = expect_text.rfind("sequence", 0) == 0 ? ":3" : ":2";
  CHECK(Contains(strict.status().message(), seg + line_no));
  CHECK(Contains(strict.status().message(), expect_text));
  CHECK(Contains(strict.status().message(), "--skip-network-state-corruption"));
  CHECK(ReadFile(seg) == contents);

  // With the skip flag replay stops at the bad record.
  core::LoadedState loaded;
  auto store = Open(tmp.path(), &loaded, /*skip=*/true);
  CHECK(loaded.corruption_skipped);
  core::PodEntries expected = after_first;
  const bool backwards = expect_text.rfind("sequence", 0) == 0;
  if (backwards) expected["bbbb"]["c"] = Info("bbbb", "c", 2);
  CHECK(loaded.pod_entries == expected);
  // New records are numbered after everything on disk (the highest seq there is 3, or 2 when
  // the third line repeats the first); the next snapshot drops the bad journal and a strict
  // load works again.
  MustAppend(*store, Set(Info("d", "c", 4)), &expected);
  CHECK(Segments(tmp.path()).back() == store->SegmentPath(backwards ? 3 : 4));
  MustSnapshot(*store, expected);
  CHECK(Segments(tmp.path()).empty());
  store.reset();
  core::LoadedState strict_again;
  Open(tmp.path(), &strict_again);
  CHECK(strict_again.pod_entries == expected);
  CHECK_FALSE(strict_again.corruption_skipped);
}

TEST_CASE("an incomplete line in a sealed segment is corruption, not a torn tail",
          "[file_state_store]") {
  TempDir tmp;
  {
    auto store = Open(tmp.path());
    MustAppend(*store, Set(Info("a", "c", 1)));
    REQUIRE(store->BeginSnapshot().ok());  // seals segment 1 without writing a snapshot
    MustAppend(*store, Set(Info("b", "c", 2)));
  }
  auto segs = Segments(tmp.path());
  REQUIRE(segs.size() == 2);
  // Cut as a segment without the zero tail (written by an earlier netqos) would be; cut short by
  // zeros is in prewritten_segment_test.cc.
  std::string first = Records(segs[0]);
  WriteFile(segs[0], first.substr(0, first.size() - 5));
  auto r = MustCreate(tmp.path())->Load();
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::kDataLoss);
  CHECK(Contains(r.status().message(), segs[0] + ":1"));
}

TEST_CASE("a flipped byte in the snapshot fails its checksum", "[file_state_store]") {
  TempDir tmp;
  core::PodEntries entries;
  {
    auto store = Open(tmp.path());
    core::AllocationInfo info = Info("a", "c", 1);
    info.labels["note"] = "aaaa";
    MustAppend(*store, Set(info), &entries);
    MustSnapshot(*store, entries);
  }
  const std::string path = tmp.file(kSnapshotName);
  std::string contents = ReadFile(path);
  auto at = contents.rfind("aaaa");  // the copy under pod_entries (machineState sorts first)
  REQUIRE(at != std::string::npos);
  REQUIRE(at > contents.find("\"pod_entries\":{\"a\""));
  contents[at + 3] = 'b';
  WriteFile(path, contents);

  auto strict = MustCreate(tmp.path())->Load();
  REQUIRE_FALSE(strict.ok());
  CHECK(strict.status().code() == StatusCode::kDataLoss);
  CHECK(Contains(strict.status().message(), "checkpoint " + path + " failed its checksum"));
  CHECK(Contains(strict.status().message(), "--skip-network-state-corruption"));

  core::LoadedState loaded;
  Open(tmp.path(), &loaded, /*skip=*/true);
  CHECK(loaded.found);
  CHECK(loaded.corruption_skipped);
  REQUIRE(loaded.pod_entries.count("a") == 1);
  CHECK(loaded.pod_entries["a"]["c"].labels["note"] == "aaab");
}

TEST_CASE("a snapshot loads the same whether its bytes are as written or only its document",
          "[file_state_store]") {
  // Load checks a snapshot as netqos wrote it on its bytes and reads only pod_entries; any other
  // rendering of the same document (another tool's whitespace) is checked and read whole. Both
  // give the same state, also with member names and values that look like the members the byte
  // check looks for.
  TempDir tmp;
  core::PodEntries entries;
  {
    auto store = Open(tmp.path());
    core::AllocationInfo info = Info("a", "c", 1);
    info.labels["x"] = R"(,"netqos":{"checksum":1,"format":2},"pod_entries":{},"policyName":"y"})";
    MustAppend(*store, Set(info), &entries);
    MustAppend(*store, Set(Info("netqos", "checksum", 2)), &entries);
    MustAppend(*store, Set(Info("policyName", "c", 3)), &entries);
    MustSnapshot(*store, entries);
  }
  const std::string path = tmp.file(kSnapshotName);
  const std::string written = ReadFile(path);
  core::LoadedState as_written;
  Open(tmp.path(), &as_written);
  CHECK(as_written.pod_entries == entries);
  CHECK_FALSE(as_written.corruption_skipped);

  WriteFile(path, json::parse(written).dump(2));
  core::LoadedState reformatted;
  Open(tmp.path(), &reformatted);
  CHECK(reformatted.pod_entries == entries);
  CHECK_FALSE(reformatted.corruption_skipped);
}

TEST_CASE("a malformed snapshot is fatal, named, and left untouched", "[file_state_store]") {
  TempDir tmp;
  {
    auto store = Open(tmp.path());
    core::PodEntries entries;
    MustAppend(*store, Set(Info("a", "c", 1)), &entries);
    MustSnapshot(*store, entries);
  }
  const std::string path = tmp.file(kSnapshotName);
  const std::string valid = ReadFile(path);
  std::string bad;
  SECTION("truncated") { bad = valid.substr(0, valid.size() / 2); }
  SECTION("garbage") { bad = "corrupted data"; }
  SECTION("empty") { bad = ""; }
  SECTION("type error") {
    json doc = json::parse(valid);
    doc["pod_entries"]["a"]["c"]["egress"] = "lots";
    bad = doc.dump();
  }
  WriteFile(path, bad);
  for (bool skip : {false, true}) {
    INFO("skip=" << skip);
    auto r = MustCreate(tmp.path(), skip)->Load();
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::kDataLoss);
    CHECK(Contains(r.status().message(), path));
    CHECK(ReadFile(path) == bad);
  }
}

TEST_CASE("a temp file from a crash before rename never wins", "[file_state_store]") {
  TempDir tmp;
  core::PodEntries entries;
  {
    auto store = Open(tmp.path());
    MustAppend(*store, Set(Info("old", "c", 1)), &entries);
    MustSnapshot(*store, entries);
  }
  // A complete, valid-looking newer snapshot that was never renamed, and a truncated one.
  std::string newer = ReadFile(tmp.file(kSnapshotName));
  auto at = newer.find("\"old\"");
  REQUIRE(at != std::string::npos);
  newer.replace(at, 5, "\"new\"");
  const std::string tmp1 = tmp.file(".network_plugin_state.tmp-12345-1");
  const std::string tmp2 = tmp.file(".network_plugin_state.tmp-12345-2");
  WriteFile(tmp1, newer);
  WriteFile(tmp2, newer.substr(0, 10));
  core::LoadedState loaded;
  Open(tmp.path(), &loaded);
  CHECK(loaded.pod_entries == entries);
  CHECK(ListDir(tmp.path()) == std::vector<std::string>{kSnapshotName});
}

// The TestRemovePod-style checkpoint as Katalyst v0.5.3 writes it: no "netqos" member and
// Katalyst's go-spew based checksum (by default a wrong one).
// The checksum Katalyst v0.5.3 computes for KatalystV053File() (policy "static"), as printed
// by tests/tools/katalyst_checksum; the file's default checksum is deliberately wrong.
constexpr uint64_t kKatalystV053Checksum = 2823309087ULL;

std::string KatalystV053File(const std::string& policy = "static",
                             uint64_t checksum = 3157463925ULL) {
  json alloc = json::parse(R"({"pod_uid":"373d08e4-7a6b-4293-aaaf-b135ff8123bf",
    "pod_namespace":"test","pod_name":"test","container_name":"test","container_type":"MAIN",
    "egress":5000,"ingress":5000,"if_name":"eth0","numa_node":"0-1",
    "labels":{"katalyst.kubewharf.io/qos_level":"shared_cores"},
    "annotations":{"katalyst.kubewharf.io/qos_level":"shared_cores",
                   "namespace_type":"host_ns_preferred"}})");
  json entries = {{"373d08e4-7a6b-4293-aaaf-b135ff8123bf", {{"test", alloc}}}};
  json bw_e = {{"Capacity", 23500},    {"SysReservation", 0}, {"Reservation", 4000},
               {"Allocatable", 19500}, {"Allocated", 5000},   {"Free", 14500}};
  json bw_i = {{"Capacity", 22500},    {"SysReservation", 0}, {"Reservation", 4000},
               {"Allocatable", 18500}, {"Allocated", 5000},   {"Free", 13500}};
  json empty_e = bw_e;
  empty_e["Reservation"] = 0;
  return json{
      {"policyName", policy},
      {"machineState",
       {{"eth0", {{"egress_state", bw_e}, {"ingress_state", bw_i}, {"pod_entries", entries}}},
        {"eth1",
         {{"egress_state", empty_e},
          {"ingress_state", empty_e},
          {"pod_entries", json::object()}}}}},
      {"pod_entries", entries},
      {"checksum", checksum}}
      .dump();
}

TEST_CASE("a Katalyst v0.5.3 checkpoint with its real checksum loads without the skip flag",
          "[file_state_store]") {
  TempDir tmp;
  WriteFile(tmp.file(kSnapshotName), KatalystV053File("static", kKatalystV053Checksum));
  core::LoadedState loaded;
  Open(tmp.path(), &loaded);
  CHECK(loaded.found);
  CHECK_FALSE(loaded.corruption_skipped);
  REQUIRE(loaded.pod_entries.size() == 1);
  CHECK(loaded.pod_entries.begin()->second.at("test").egress == 5000);
}

TEST_CASE(
    "a Katalyst v0.5.3 checkpoint with a wrong checksum is importable only with the skip "
    "flag",
    "[file_state_store]") {
  TempDir tmp;
  WriteFile(tmp.file(kSnapshotName), KatalystV053File());
  auto strict = MustCreate(tmp.path())->Load();
  REQUIRE_FALSE(strict.ok());
  CHECK(strict.status().code() == StatusCode::kDataLoss);
  CHECK(Contains(strict.status().message(), tmp.file(kSnapshotName)));
  CHECK(Contains(strict.status().message(), "written by Katalyst"));
  CHECK(Contains(strict.status().message(), "Katalyst checksum did not match"));
  CHECK(Contains(strict.status().message(), "stored 3157463925"));
  CHECK(Contains(strict.status().message(), "--skip-network-state-corruption"));

  core::LoadedState loaded;
  auto store = Open(tmp.path(), &loaded, /*skip=*/true);
  CHECK(loaded.found);
  CHECK(loaded.corruption_skipped);
  REQUIRE(loaded.pod_entries.size() == 1);
  const auto& info = loaded.pod_entries.begin()->second.at("test");
  CHECK(info.egress == 5000);
  CHECK(info.nic() == core::NicId{"", "eth0"});
  CHECK(info.numa_nodes == core::NumaSet{0, 1});
  // v0.5.3 stores no level; the stored annotations carry it (enforcement needs it).
  CHECK(info.qos_level == "shared_cores");
  // Nor a NIC namespace: the entry is listed for the policy to find its NIC by name.
  CHECK(loaded.without_netns == std::vector<std::pair<std::string, std::string>>{
                                    {"373d08e4-7a6b-4293-aaaf-b135ff8123bf", "test"}});
  // After a snapshot the file is ours and loads strictly.
  MustAppend(*store, Remove("gone"), &loaded.pod_entries);
  MustSnapshot(*store, loaded.pod_entries);
  store.reset();
  core::LoadedState again;
  Open(tmp.path(), &again);
  CHECK(again.pod_entries == loaded.pod_entries);
  CHECK_FALSE(again.corruption_skipped);
  CHECK(again.without_netns.empty());  // netqos writes ns_name, also ""
}

TEST_CASE("journal segments older than a Katalyst-written snapshot are set aside, not replayed",
          "[file_state_store]") {
  // netqos ran here (its journal remains), Katalyst took over and rewrote the snapshot (it
  // removed the pod "a" netqos had), and netqos comes back.
  TempDir tmp;
  {
    auto store = Open(tmp.path());
    MustAppend(*store, Set(Info("a", "c", 1)));
  }
  std::vector<std::string> before = ListDir(tmp.path());
  REQUIRE(before.size() == 1);  // one journal segment
  WriteFile(tmp.file(kSnapshotName), KatalystV053File());
  core::LoadedState loaded;
  Open(tmp.path(), &loaded, /*skip=*/true);
  REQUIRE(loaded.pod_entries.size() == 1);
  CHECK(loaded.pod_entries.count("a") == 0);
  // The segment is kept under another name, for an operator to look at.
  std::vector<std::string> after = ListDir(tmp.path());
  REQUIRE(after.size() == 2);
  CHECK(Contains(after[1], before[0] + ".before-katalyst-snapshot-"));
}

TEST_CASE("a checkpoint of another policy is refused unless skipping", "[file_state_store]") {
  TempDir tmp;
  core::PodEntries entries;
  {
    auto store = Open(tmp.path());
    MustAppend(*store, Set(Info("a", "c", 1)), &entries);
    MustSnapshot(*store, entries);
  }
  RewriteSnapshot(tmp.file(kSnapshotName), [](json& d) { d["policyName"] = "dynamic"; });
  auto strict = MustCreate(tmp.path())->Load();
  REQUIRE_FALSE(strict.ok());
  CHECK(strict.status().code() == StatusCode::kFailedPrecondition);
  CHECK(Contains(strict.status().message(), "\"dynamic\""));
  CHECK(Contains(strict.status().message(), "\"static\""));
  core::LoadedState loaded;
  Open(tmp.path(), &loaded, /*skip=*/true);
  CHECK(loaded.pod_entries == entries);
  CHECK_FALSE(loaded.corruption_skipped);  // the checksum itself was fine
}

TEST_CASE("snapshot seqs never go backwards", "[file_state_store]") {
  TempDir tmp;
  auto store = Open(tmp.path());
  MustAppend(*store, Remove("a"));
  auto s1 = store->BeginSnapshot();
  MustAppend(*store, Remove("b"));
  auto s2 = store->BeginSnapshot();
  REQUIRE((s1.ok() && s2.ok()));
  REQUIRE(store->FinishSnapshot(*s2, {}).ok());
  CHECK(store->FinishSnapshot(*s1, {}).code() == StatusCode::kFailedPrecondition);
  CHECK(store->FinishSnapshot(99, {}).code() == StatusCode::kInvalidArgument);
}

TEST_CASE("SnapshotDue follows the record and byte thresholds", "[file_state_store]") {
  TempDir tmp;
  FileStateStore::Options o = Opts(tmp.path());
  o.snapshot_every_records = 3;
  o.snapshot_every_bytes = 1 << 20;
  auto store = std::move(FileStateStore::Create(o)).value();
  REQUIRE(store->Load().ok());
  CHECK_FALSE(store->SnapshotDue());
  MustAppend(*store, Remove("a"));
  MustAppend(*store, Remove("a"));
  CHECK_FALSE(store->SnapshotDue());
  MustAppend(*store, Remove("a"));
  CHECK(store->SnapshotDue());
  REQUIRE(store->BeginSnapshot().ok());
  CHECK_FALSE(store->SnapshotDue());

  TempDir tmp2;
  o = Opts(tmp2.path());
  o.snapshot_every_bytes = 1000;
  auto by_bytes = std::move(FileStateStore::Create(o)).value();
  REQUIRE(by_bytes->Load().ok());
  MustAppend(*by_bytes, Set(Info("a", "c", 1)));
  CHECK_FALSE(by_bytes->SnapshotDue());
  for (int i = 0; i < 5; ++i) MustAppend(*by_bytes, Set(Info("a", "c", 1)));
  CHECK(by_bytes->SnapshotDue());
}

TEST_CASE("the journal replayed at Load counts towards SnapshotDue", "[file_state_store]") {
  TempDir tmp;
  FileStateStore::Options o = Opts(tmp.path());
  o.snapshot_every_records = 3;
  {
    auto store = std::move(FileStateStore::Create(o)).value();
    REQUIRE(store->Load().ok());
    for (int i = 0; i < 3; ++i) MustAppend(*store, Remove("a"));
  }
  auto store = std::move(FileStateStore::Create(o)).value();
  REQUIRE(store->Load().ok());
  CHECK(store->SnapshotDue());
}

TEST_CASE("I/O errors name the syscall and the file", "[file_state_store]") {
  TempDir tmp;
  const std::string dir = tmp.file("state");
  auto store = Open(dir);
  std::filesystem::remove_all(dir);
  Status st = store->Append(Remove("a"));
  REQUIRE_FALSE(st.ok());
  CHECK(st.message() == "open(" + store->SegmentPath(1) + "): No such file or directory");
  st = store->FinishSnapshot(0, {});
  REQUIRE_FALSE(st.ok());
  CHECK(Contains(st.message(), "open(" + dir + "/.network_plugin_state.tmp-"));
  CHECK(Contains(st.message(), "No such file or directory"));
  // The store stays usable once the directory is back.
  std::filesystem::create_directories(dir);
  CHECK(store->Append(Remove("a")).ok());
}

TEST_CASE("a journal segment that cannot be created leaves the journal as it was",
          "[file_state_store]") {
  // A full disk shows when a new segment is written with zeros, before any record: here the
  // record does not fit in what is left of the first segment, and RLIMIT_FSIZE lets 10 bytes of
  // the next one's zeros be written and then fails with EFBIG.
  TempDir tmp;
  core::PodEntries expected;
  FileStateStore::Options o = Opts(tmp.path());
  o.segment_bytes = 4096;
  auto store = std::move(FileStateStore::Create(o)).value();
  REQUIRE(store->Load().ok());
  MustAppend(*store, Set(Info("a", "c", 1)), &expected);
  const std::string seg = Segments(tmp.path()).at(0);
  const std::string before = ReadFile(seg);
  REQUIRE(before.size() == 4096);
  core::AllocationInfo big = Info("b", "c", 2);
  big.annotations["example.com/blob"] = std::string(4000, 'x');

  struct rlimit old_limit {};
  REQUIRE(::getrlimit(RLIMIT_FSIZE, &old_limit) == 0);
  auto old_handler = ::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = old_limit;
  small.rlim_cur = before.size() + 10;
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
  Status st = store->Append(Set(big));
  ::setrlimit(RLIMIT_FSIZE, &old_limit);
  ::signal(SIGXFSZ, old_handler);

  REQUIRE_FALSE(st.ok());
  const std::string next = store->SegmentPath(2);
  CHECK(st.message() == "cannot create journal segment " + next +
                            " (8192 bytes of zeros written ahead of its records), the change is "
                            "not made: pwrite(" +
                            next + "): File too large (errno 27)");
  CHECK(st.code() == StatusCode::kInternal);  // I/O, not a statement about the contents
  CHECK(ReadFile(seg) == before);
  CHECK(Segments(tmp.path()) == std::vector<std::string>{seg});
  MustAppend(*store, Set(Info("c", "c", 3)), &expected);
  store.reset();
  core::LoadedState loaded;
  Open(tmp.path(), &loaded);
  CHECK(loaded.pod_entries == expected);
}

TEST_CASE("a snapshot begun after a new segment's first write failed does not block the next",
          "[file_state_store]") {
  // On a full disk the start-up snapshot (written beside serving) can begin right after a change
  // failed to be journalled into a segment just created: the next change must still find a
  // segment to go to, not a file of its name in the way.
  TempDir tmp;
  core::PodEntries expected;
  auto store = Open(tmp.path());
  struct rlimit old_limit {};
  REQUIRE(::getrlimit(RLIMIT_FSIZE, &old_limit) == 0);
  auto old_handler = ::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = old_limit;
  small.rlim_cur = 10;
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
  Status st = store->Append(Set(Info("a", "c", 1)));
  ::setrlimit(RLIMIT_FSIZE, &old_limit);
  ::signal(SIGXFSZ, old_handler);
  REQUIRE_FALSE(st.ok());

  auto seq = store->BeginSnapshot();
  REQUIRE(seq.ok());
  MustAppend(*store, Set(Info("b", "c", 2)), &expected);
  REQUIRE(store->FinishSnapshot(*seq, MakeSnapshot({})).ok());
  MustAppend(*store, Set(Info("c", "c", 3)), &expected);
  store.reset();
  core::LoadedState loaded;
  Open(tmp.path(), &loaded);
  CHECK(loaded.pod_entries == expected);
}

TEST_CASE("Append runs concurrently with FinishSnapshot without losing records",
          "[file_state_store]") {
  TempDir tmp;
  FileStateStore::Options o = Opts(tmp.path());
  o.snapshot_every_records = 50;
  auto store = std::move(FileStateStore::Create(o)).value();
  REQUIRE(store->Load().ok());

  std::mutex caller_mu;  // plays the allocation service's lock
  core::PodEntries state;
  std::atomic<bool> done{false};
  std::atomic<int> snapshots{0};
  std::string failure;

  std::thread writer([&] {
    for (int i = 0; i < 1500; ++i) {
      std::lock_guard lock(caller_mu);
      if (!failure.empty()) break;
      core::StateChange change = (i % 7 == 6) ? Remove("p" + std::to_string(i - 3))
                                              : Set(Info("p" + std::to_string(i), "c", 1));
      Status st = store->Append(change);
      if (!st.ok()) {
        failure = st.message();
        break;
      }
      Apply(change, &state);
    }
    done = true;
  });
  std::thread snapshotter([&] {
    while (!done) {
      core::Snapshot snap;
      uint64_t seq = 0;
      bool due = false;
      {
        std::lock_guard lock(caller_mu);
        due = store->SnapshotDue();
        if (due) {
          auto s = store->BeginSnapshot();
          if (!s.ok()) {
            failure = s.status().message();
            return;
          }
          seq = *s;
          snap = MakeSnapshot(state);
        }
      }
      if (!due) {
        std::this_thread::yield();
        continue;
      }
      Status st = store->FinishSnapshot(seq, snap);  // outside the caller's lock
      if (!st.ok()) {
        std::lock_guard lock(caller_mu);
        failure = st.message();
        return;
      }
      ++snapshots;
    }
  });
  writer.join();
  snapshotter.join();
  INFO(failure);
  REQUIRE(failure.empty());
  CHECK(snapshots > 0);
  store.reset();
  core::LoadedState loaded;
  Open(tmp.path(), &loaded);
  CHECK(loaded.pod_entries == state);
}

TEST_CASE("10,000 entries snapshot and reload", "[file_state_store]") {
  TempDir tmp;
  core::PodEntries entries;
  for (int i = 0; i < 10000; ++i) {
    core::AllocationInfo info =
        Info("pod-" + std::to_string(i), "main", 10, i % 2 == 0 ? "eth0" : "eth1");
    entries[info.pod_uid][info.container_name] = info;
  }
  using Clock = std::chrono::steady_clock;
  {
    auto store = Open(tmp.path());
    MustAppend(*store, Remove("nothing"));
    auto t0 = Clock::now();
    MustSnapshot(*store, entries);
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
    spdlog::info("checkpoint test: snapshot entries=10000 bytes={} write_ms={}",
                 ReadFile(store->snapshot_path()).size(), ms);
  }
  auto t0 = Clock::now();
  core::LoadedState loaded;
  auto store = Open(tmp.path(), &loaded);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
  spdlog::info("checkpoint test: load entries=10000 load_ms={}", ms);
  CHECK(loaded.pod_entries == entries);

  // Appends keep going while the large snapshot is written (reported, not asserted: timing).
  auto seq = store->BeginSnapshot();
  REQUIRE(seq.ok());
  std::atomic<bool> writing{true};
  Status snap_status;
  std::thread writer([&] {
    snap_status = store->FinishSnapshot(*seq, MakeSnapshot(entries));
    writing = false;
  });
  int appended_meanwhile = 0;
  core::PodEntries expected = entries;
  while (writing) {
    MustAppend(*store, Set(Info("extra-" + std::to_string(appended_meanwhile), "c", 1)), &expected);
    ++appended_meanwhile;
  }
  writer.join();
  REQUIRE(snap_status.ok());
  spdlog::info("checkpoint test: appends completed during a 10000-entry snapshot count={}",
               appended_meanwhile);
  store.reset();
  Open(tmp.path(), &loaded);
  CHECK(loaded.pod_entries == expected);
}

}  // namespace
}  // namespace netqos::checkpoint
