// The snapshot netqos writes is also a checkpoint Katalyst loads after a rollback: its "checksum"
// member is Katalyst's, for the layout chosen with --katalyst-checkpoint-layout, and netqos's own
// checksum moved into the "netqos" member (snapshot format 2). Also: one store per directory.
//
// The tests tagged [katalyst_go] check the files against the Go reference and run in the CTest
// test "checkpoint: Katalyst checksum matches the Go reference" (support/katalyst_go_tool.h).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "checkpoint/file_state_store.h"
#include "checkpoint/katalyst_checksum.h"
#include "core/constants.h"
#include "support/files.h"
#include "support/katalyst_go_tool.h"
#include "support/temp_dir.h"
#include "unit/checkpoint/loaded_store.h"

namespace netqos::checkpoint {
namespace {

namespace t = netqos::testing;
using Catch::Contains;
using nlohmann::json;

constexpr KatalystLayout kBothLayouts[] = {KatalystLayout::kV053, KatalystLayout::kHead};

// Load with the default options: the error of a file that does not load.
Result<core::LoadedState> TryLoad(const std::string& dir) {
  FileStateStore::Options options;
  options.dir = dir;
  auto store = FileStateStore::Create(options);
  REQUIRE(store.ok());
  return store.value()->Load();
}

std::unique_ptr<FileStateStore> LoadedStore(const std::string& dir, KatalystLayout layout,
                                            core::LoadedState* loaded = nullptr) {
  FileStateStore::Options options;
  options.dir = dir;
  options.katalyst_layout = layout;
  return LoadedStoreWith(std::move(options), loaded);
}

// Allocations with what a tenant can put in names, labels and annotations: quotes, backslashes,
// control characters, HTML characters (Go's encoder escapes them), non-ASCII, invalid UTF-8.
class RandomAllocations {
 public:
  explicit RandomAllocations(uint32_t seed) : rng_(seed) {}

  core::PodEntries Pods(int pods) {
    core::PodEntries entries;
    for (int p = 0; p < pods; ++p) {
      const std::string uid = "uid-" + std::to_string(p) + Text();
      const int containers = 1 + static_cast<int>(Below(3));
      for (int c = 0; c < containers; ++c) {
        core::AllocationInfo info;
        info.pod_uid = uid;
        info.pod_namespace = Text();
        info.pod_name = "pod" + Text();
        info.container_name = c == 0 ? "main" : "c" + std::to_string(c) + Text();
        info.container_type = Below(4) == 0 ? "SIDECAR" : "MAIN";
        info.container_index = Below(3);
        info.pod_role = Below(3) == 0 ? Text() : "";
        info.egress = static_cast<uint32_t>(Below(4) == 0 ? 4294967295u : Below(30000));
        info.ingress = static_cast<uint32_t>(Below(30000));
        info.if_name = Below(2) == 0 ? "eth0" : "eth2";
        info.ns_name = info.if_name == "eth2" ? "ns2" : "";
        for (uint32_t n = Below(4); n > 0; --n) info.numa_nodes.insert(Below(8));
        for (uint32_t n = Below(3); n > 0; --n) info.labels[Text()] = Text();
        for (uint32_t n = Below(3); n > 0; --n) info.annotations[Text()] = Text();
        info.qos_level = Below(2) == 0 ? "shared_cores" : "dedicated_cores";
        info.net_class_id = Below(2) == 0 ? "" : std::to_string(Below(100000));
        entries[uid][info.container_name] = info;
      }
    }
    return entries;
  }

 private:
  uint32_t Below(uint32_t n) { return std::uniform_int_distribution<uint32_t>(0, n - 1)(rng_); }
  std::string Text() {
    static const std::vector<std::string> pieces = {"a",
                                                    "Z",
                                                    "0",
                                                    "-",
                                                    "/",
                                                    " ",
                                                    "\"",
                                                    "\\",
                                                    "\n",
                                                    "\t",
                                                    std::string(1, '\0'),
                                                    "<",
                                                    ">",
                                                    "&",
                                                    "\u00e9",
                                                    "\u4e2d",
                                                    "\xf0\x9f\x98\x80",
                                                    "\xff",
                                                    "\xc3",
                                                    "\u2028",
                                                    "%#v",
                                                    "map[",
                                                    "<nil>",
                                                    "}"};
    std::string s;
    for (uint32_t n = Below(6); n > 0; --n)
      s += pieces[Below(static_cast<uint32_t>(pieces.size()))];
    return s;
  }
  std::mt19937 rng_;
};

// A string as it reads back from the file: invalid UTF-8 is written as U+FFFD.
std::string AsWritten(const std::string& s) {
  return json::parse(json(s).dump(-1, ' ', false, json::error_handler_t::replace))
      .get<std::string>();
}

core::Snapshot SnapshotOf(const core::PodEntries& entries) {
  core::Snapshot snap;
  snap.pod_entries = entries;
  snap.machine_state[core::NicId{"", "eth0"}] =
      core::NicState{{22500, 0, 4000, 18500, 0, 18500}, {21250, 0, 4000, 17250, 0, 17250}};
  snap.machine_state[core::NicId{"ns2", "eth2"}] =
      core::NicState{{22500, 0, 0, 22500, 0, 22500}, {21250, 0, 0, 21250, 0, 21250}};
  return snap;
}

// Journals every allocation, then folds the journal into a snapshot.
void WriteState(FileStateStore& store, const core::PodEntries& entries) {
  for (const auto& [uid, containers] : entries) {
    for (const auto& [name, info] : containers)
      REQUIRE(store.Append(core::SetAllocation{info}).ok());
  }
  auto seq = store.BeginSnapshot();
  REQUIRE(seq.ok());
  Status st = store.FinishSnapshot(*seq, SnapshotOf(entries));
  INFO(st.message());
  REQUIRE(st.ok());
}

TEST_CASE("rollback: the snapshot's checksum is Katalyst's, in the configured layout",
          "[rollback]") {
  RandomAllocations gen(1204);
  const core::PodEntries entries = gen.Pods(6);
  for (KatalystLayout layout : kBothLayouts) {
    INFO("layout " << KatalystLayoutName(layout));
    t::TempDir tmp;
    WriteState(*LoadedStore(tmp.path(), layout), entries);
    const json doc = json::parse(t::ReadFile(tmp.file(core::kCheckpointFileName)));
    CHECK(doc["netqos"]["format"] == 2);
    CHECK(doc["netqos"]["katalyst_layout"] == KatalystLayoutFlagValue(layout));
    auto sum = KatalystChecksum(doc, layout);
    REQUIRE(sum.ok());
    CHECK(doc["checksum"] == uint64_t{sum.value()});
    // The two layouts hash the same allocations differently: the flag matters.
    const KatalystLayout other =
        layout == KatalystLayout::kV053 ? KatalystLayout::kHead : KatalystLayout::kV053;
    CHECK(KatalystChecksum(doc, other).value() != sum.value());

    // netqos reads its own file strictly, through its own checksum.
    core::LoadedState loaded;
    LoadedStore(tmp.path(), layout, &loaded);
    CHECK_FALSE(loaded.corruption_skipped);
    CHECK(loaded.pod_entries.size() == entries.size());
  }
}

TEST_CASE("rollback: netqos's own checksum still guards a snapshot Katalyst would accept",
          "[rollback]") {
  t::TempDir tmp;
  RandomAllocations gen(7);
  WriteState(*LoadedStore(tmp.path(), KatalystLayout::kV053), gen.Pods(2));
  json doc = json::parse(t::ReadFile(tmp.file(core::kCheckpointFileName)));
  // A member Katalyst does not decode changes no Katalyst checksum, but it is netqos's data.
  doc["netqos"]["seq"] = doc["netqos"]["seq"].get<uint64_t>() + 1;
  t::WriteFile(tmp.file(core::kCheckpointFileName), doc.dump());
  auto loaded = TryLoad(tmp.path());
  REQUIRE_FALSE(loaded.ok());
  CHECK(loaded.status().code() == StatusCode::kDataLoss);
  CHECK_THAT(loaded.status().message(), Contains("failed its checksum"));
}

TEST_CASE("rollback: a format 1 snapshot (netqos's checksum at the top) still loads",
          "[rollback]") {
  t::TempDir tmp;
  RandomAllocations gen(11);
  const core::PodEntries entries = gen.Pods(3);
  WriteState(*LoadedStore(tmp.path(), KatalystLayout::kV053), entries);
  json doc = json::parse(t::ReadFile(tmp.file(core::kCheckpointFileName)));
  // What a netqos of before the Katalyst checksum wrote.
  doc.erase("checksum");
  doc["netqos"] = json{{"format", 1}, {"seq", doc["netqos"]["seq"]}};
  uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : doc.dump(-1, ' ', false, json::error_handler_t::replace)) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  doc["checksum"] = h;
  t::WriteFile(tmp.file(core::kCheckpointFileName), doc.dump());
  core::LoadedState loaded;
  LoadedStore(tmp.path(), KatalystLayout::kV053, &loaded);
  CHECK_FALSE(loaded.corruption_skipped);
  CHECK(loaded.pod_entries.size() == entries.size());
}

TEST_CASE("rollback: a second store on the same directory is refused while the first runs",
          "[rollback]") {
  t::TempDir tmp;
  auto first = LoadedStore(tmp.path(), KatalystLayout::kV053);
  auto refused = TryLoad(tmp.path());
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == StatusCode::kFailedPrecondition);
  CHECK_THAT(refused.status().message(), Contains(tmp.path()));
  CHECK_THAT(refused.status().message(), Contains("in use by another netqosd"));
  first.reset();  // the first process stops
  CHECK(TryLoad(tmp.path()).ok());
}

TEST_CASE("rollback: --katalyst-checkpoint-layout values", "[rollback]") {
  using netqos::FindChoice;
  using netqos::checkpoint::kKatalystLayoutNames;
  CHECK(FindChoice("v0.5.3", kKatalystLayoutNames) == KatalystLayout::kV053);
  CHECK(FindChoice("head", kKatalystLayoutNames) == KatalystLayout::kHead);
  for (const char* bad : {"", "HEAD", "v0.5.21", "v0.5.3 "}) {
    CHECK_FALSE(FindChoice(bad, kKatalystLayoutNames).has_value());
  }
}

// What Katalyst does with the file: decode it into its Go types, verify the checksum
// (go-spew + FNV-1a 32, the real go-spew), keep the decoded value.
TEST_CASE("rollback: a snapshot netqos wrote verifies with the Go reference", "[.][katalyst_go]") {
  if (!t::GoToolAvailable()) return;
  RandomAllocations gen(20261204);
  for (int round = 0; round < 10; ++round) {
    const core::PodEntries entries = gen.Pods(1 + round % 5);
    for (KatalystLayout layout : kBothLayouts) {
      INFO("round " << round << ", layout " << KatalystLayoutName(layout));
      t::TempDir tmp;
      WriteState(*LoadedStore(tmp.path(), layout), entries);
      const std::string path = tmp.file(core::kCheckpointFileName);
      const std::string flag = KatalystLayoutFlagValue(layout);
      auto verified = t::GoTool::Get().Run({"-layout", flag, "-verify", path});
      INFO(verified.output);
      REQUIRE(verified.exit_code == 0);
      // Katalyst keeps every container, on the NIC netqos recorded.
      const json kept = json::parse(verified.output.substr(verified.output.find('{')));
      size_t containers = 0;
      for (const auto& [uid, pod] : entries) {
        for (const auto& [name, info] : pod) {
          ++containers;
          const json& entry = kept["pod_entries"].at(AsWritten(uid)).at(AsWritten(name));
          CHECK(entry["if_name"] == info.if_name);
          CHECK(entry["egress"] == info.egress);
        }
      }
      size_t kept_containers = 0;
      for (const auto& [uid, pod] : kept["pod_entries"].items()) kept_containers += pod.size();
      CHECK(kept_containers == containers);
      // The other layout's Katalyst refuses it (ErrCorruptCheckpoint) unless nothing is hashed
      // differently, which needs an allocation.
      const std::string other = layout == KatalystLayout::kV053 ? "head" : "v0.5.3";
      CHECK(t::GoTool::Get().Run({"-layout", other, "-verify", path}).exit_code == 3);
    }
  }
}

}  // namespace
}  // namespace netqos::checkpoint
