// Katalyst's checkpoint checksum, reproduced in C++, against the Go reference in
// tests/tools/katalyst_checksum (mirrors of Katalyst's Go types, hashed with the real go-spew).
//
// The tests tagged [katalyst_go] need Go and go-spew (scripts/install-deps.sh). They are hidden
// from Catch2's test discovery and run as one CTest test, labelled "go" (tests/CMakeLists.txt):
// without Go they print "Go reference NOT RUN" (CTest reports them skipped), except under
// CI=true, where a missing Go is a failure.
#include "checkpoint/katalyst_checksum.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "checkpoint/file_state_store.h"
#include "core/constants.h"
#include "support/files.h"
#include "support/katalyst_go_tool.h"
#include "support/process.h"
#include "support/temp_dir.h"

namespace netqos::checkpoint {
namespace {

using Catch::Contains;
using netqos::testing::GoTool;
using netqos::testing::GoToolAvailable;
using netqos::testing::ReadFile;
using netqos::testing::RunCommand;
using netqos::testing::TempDir;
using netqos::testing::WriteFile;
using nlohmann::json;

constexpr KatalystLayout kLayouts[] = {KatalystLayout::kV053, KatalystLayout::kHead};

const char* GoLayoutFlag(KatalystLayout layout) {
  return layout == KatalystLayout::kV053 ? "v0.5.3" : "head";
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

// Runs the Go tool on `contents`; exit 2 means Go's json.Unmarshal refused the document.
testing::CommandResult GoOn(const std::string& contents, const std::vector<std::string>& flags) {
  TempDir tmp;
  WriteFile(tmp.file("cp.json"), contents);
  std::vector<std::string> args = flags;
  args.push_back(tmp.file("cp.json"));
  return GoTool::Get().Run(args);
}

// Fixtures: what Go decodes them into is what matters, so they cover every decoding rule the
// C++ side mirrors. Each is compared in both layouts.
const std::vector<std::string>& Fixtures() {
  static const std::vector<std::string> fixtures = {
      // Nothing at all: both maps stay the empty maps Katalyst decodes into.
      R"({})",
      R"({"policyName":"static","machineState":{},"pod_entries":{},"checksum":0})",
      // Explicit nulls make the maps nil, which go-spew prints differently.
      R"({"policyName":"static","machineState":null,"pod_entries":null,"checksum":12})",
      // Nil pointers and nil maps inside maps; a NIC with no pod_entries member and no states.
      R"({"policyName":"static",
          "machineState":{"eth0":null,"eth1":{},"eth2":{"egress_state":null,"pod_entries":null},
                          "eth3":{"pod_entries":{"p":null,"q":{}}}},
          "pod_entries":{"p":null,"q":{"c":null},"r":{}}})",
      // A nil pointer as a map's last value leaves go-spew's "ignore the next type" flag set:
      // the next field (PodEntries, Checksum) loses its type; a non-nil last value does not.
      R"({"machineState":{"eth0":{},"eth9":null},"pod_entries":{"p":{"a":{},"z":null}}})",
      R"({"machineState":{"eth0":{"pod_entries":{"p":{"c":null}}}},"pod_entries":{}})",
      R"({"machineState":{"eth0":null,"eth1":{}},"pod_entries":{"p":{"c":null},"q":{}}})",
      R"({"machineState":{"eth0":{"pod_entries":{"p":{"c":null},"q":null}}},
          "pod_entries":{"p":{"c":null},"q":null}})",
      // Several NICs and pods, every v0.5.3 field set, several CPU lists.
      R"({"policyName":"static","checksum":4294967295,
          "machineState":{
            "eth0":{"egress_state":{"Capacity":23500,"SysReservation":1,"Reservation":4000,
                                    "Allocatable":19500,"Allocated":6000,"Free":13500},
                    "ingress_state":{"Capacity":22500,"SysReservation":0,"Reservation":4000,
                                     "Allocatable":18500,"Allocated":6000,"Free":12500},
                    "pod_entries":{"uid-2":{"sidecar":{"pod_uid":"uid-2","container_name":"sidecar",
                        "container_type":"SIDECAR","container_index":3,"ramp_up":true,
                        "egress":1000,"ingress":1000,"if_name":"eth0","numa_node":"0,2-3,7"}}}},
            "eth1":{"egress_state":{"Capacity":4294967295},"ingress_state":{},"pod_entries":{}}},
          "pod_entries":{
            "uid-1":{"main":{"pod_uid":"uid-1","pod_namespace":"ns","pod_name":"web",
                             "container_name":"main","container_type":"MAIN","pod_role":"role",
                             "pod_type":"type","egress":5000,"ingress":4000,"if_name":"eth0",
                             "numa_node":"0-1","labels":{},"annotations":null},
                     "init":{"container_name":"init","container_type":"INIT",
                             "container_index":18446744073709551615,"ramp_up":false,
                             "if_name":"","numa_node":""}},
            "uid-2":{"sidecar":{"pod_uid":"uid-2","container_name":"sidecar",
                     "container_type":"SIDECAR","container_index":3,"ramp_up":true,
                     "egress":1000,"ingress":1000,"if_name":"eth0","numa_node":"0,2-3,7"}}}})",
      // Strings are printed raw: quotes, backslashes, newlines, tabs, unicode, HTML characters
      // (escaped in the file), NUL, empty strings; keys sorted byte-wise.
      R"({"policyName":"st\"at\\ic\n",
          "pod_entries":{"uid":{"c":{"pod_name":"","numa_node":"nil",
            "labels":{"b":"x y","B":"\"quoted\"","a":"back\\slash","_":"new\nline\ttab",
                      "é":"ünïcødé ✓ 😀","10":"","9":"\u0000nul","<":"\u003chtml\u003e&"},
            "annotations":{"":"empty key","k":null,"map[x:y]":"] z:{"}}}}})",
      // CPU lists as Katalyst's parser reads them: a reversed range is empty (but initialised),
      // an item with two dashes is ignored, signs and leading zeros are numbers, a missing
      // member is the uninitialised set like "nil".
      R"({"pod_entries":{"u":{
            "a":{"numa_node":"3-1"},"b":{"numa_node":"0-1-2,5"},"c":{"numa_node":"+1,007"},
            "d":{},"e":{"numa_node":"nil"},"f":{"numa_node":"10,9,100,2"}}}})",
      // The HEAD field set: qosLevel, identifier, ns_name, net_class_id, owner_pool_name.
      R"({"policyName":"static","pod_entries":{"uid":{"main":{"pod_uid":"uid",
            "pod_namespace":"ns","pod_name":"p","container_name":"main","container_type":"MAIN",
            "owner_pool_name":"share","labels":{"l":"v"},"annotations":{"a":"v"},
            "qosLevel":"shared_cores","egress":100,"ingress":200,"identifier":"ns1-eth0",
            "ns_name":"ns1","if_name":"eth0","numa_node":"0","net_class_id":"42"}}},
          "machineState":{"ns1-eth0":{"egress_state":{"Free":1},"ingress_state":{"Free":2},
            "pod_entries":{}}}})",
      // Members Go does not know are ignored, whatever their type; netqos's own member too.
      R"({"netqos":{"format":1,"seq":9},"extra":[1,2],"pod_entries":{"u":{"c":{
            "unknown":{"x":1},"egress":7}}}})",
  };
  return fixtures;
}

// Documents Go's json.Unmarshal refuses (Katalyst cannot load them either).
const std::vector<std::string>& Undecodable() {
  static const std::vector<std::string> docs = {
      R"({"policyName":5})",
      R"({"machineState":[]})",
      R"({"machineState":{"eth0":7}})",
      R"({"machineState":{"eth0":{"egress_state":{"Capacity":4294967296}}}})",
      R"({"machineState":{"eth0":{"egress_state":{"Capacity":-1}}}})",
      R"({"pod_entries":{"u":{"c":{"egress":1.5}}}})",
      R"({"pod_entries":{"u":{"c":{"numa_node":null}}}})",
      R"({"pod_entries":{"u":{"c":{"numa_node":"x"}}}})",
      R"({"pod_entries":{"u":{"c":{"numa_node":"0-"}}}})",
      R"({"pod_entries":{"u":{"c":{"labels":{"a":1}}}}})",
      R"({"pod_entries":{"u":{"c":{"container_index":-3}}}})",
      R"({"pod_entries":{"u":[]}})",
      R"({"checksum":-1})",
  };
  return docs;
}

TEST_CASE("Katalyst checksum: the C++ rendering matches go-spew on every fixture",
          "[.][katalyst_go]") {
  if (!GoToolAvailable()) return;
  for (const std::string& fixture : Fixtures()) {
    const json doc = json::parse(fixture);
    for (KatalystLayout layout : kLayouts) {
      INFO("layout " << KatalystLayoutName(layout) << ", fixture " << fixture);
      auto go_text = GoOn(fixture, {"-layout", GoLayoutFlag(layout), "-spew"});
      REQUIRE(go_text.exit_code == 0);
      auto go_sum = GoOn(fixture, {"-layout", GoLayoutFlag(layout)});
      REQUIRE(go_sum.exit_code == 0);
      auto text = KatalystSpewRendering(doc, layout);
      REQUIRE(text.ok());
      CHECK(text.value() == go_text.output);
      auto sum = KatalystChecksum(doc, layout);
      REQUIRE(sum.ok());
      CHECK(std::to_string(sum.value()) == Trim(go_sum.output));
    }
  }
}

TEST_CASE("Katalyst checksum: a document Go cannot decode has no checksum", "[.][katalyst_go]") {
  if (!GoToolAvailable()) return;
  for (const std::string& doc : Undecodable()) {
    for (KatalystLayout layout : kLayouts) {
      INFO("layout " << KatalystLayoutName(layout) << ", document " << doc);
      auto go = GoOn(doc, {"-layout", GoLayoutFlag(layout)});
      CHECK(go.exit_code == 2);
      CHECK_FALSE(KatalystChecksum(json::parse(doc), layout).ok());
    }
  }
}

// Random checkpoints: every member present, missing or null, values of the right type or not,
// strings and keys drawn to stress sorting and raw printing. A fixed seed keeps runs repeatable.
class RandomCheckpoint {
 public:
  explicit RandomCheckpoint(uint32_t seed) : rng_(seed) {}

  json Doc() {
    json d = json::object();
    if (Chance(80)) d["policyName"] = Value("s");
    if (Chance(80)) d["machineState"] = Chance(10) ? json() : Nics();
    if (Chance(80)) d["pod_entries"] = Pods();
    if (Chance(80)) d["checksum"] = Pick<json>({0, 5, nullptr, 18446744073709551615ULL});
    return d;
  }

 private:
  uint32_t Below(uint32_t n) { return static_cast<uint32_t>(rng_() % n); }
  bool Chance(uint32_t percent) { return Below(100) < percent; }
  template <typename T>
  T Pick(std::vector<T> options) {
    return options[Below(static_cast<uint32_t>(options.size()))];
  }
  std::string Str() {
    if (Chance(30)) {
      static const std::vector<std::string> pieces = {"a",  "A", "z", "Z", "_", "-", ".",  "0",
                                                      "1",  "8", "9", "é", "😀", " ", "\n", "\"",
                                                      "\\", "[", "]", ":", "{", "}", "<",  ">"};
      std::string out;
      for (uint32_t n = Below(5); n > 0; --n) out += Pick(pieces);
      return out;
    }
    return Pick<std::string>({"", "a", "eth0", "x y", "\"q\"", "b\\s", "n\nl", "é", "😀",
                              std::string(1, '\0'), "map[", "<nil>", "Z", "0", "10", "9"});
  }
  json Value(const std::string& kind) {
    if (Chance(8)) return nullptr;
    if (Chance(4)) {
      return Pick<json>({1, -1, 1.5, "s", true, json::array(), json::object(), 4294967296ULL,
                         18446744073709551615ULL});
    }
    if (kind == "s") return Str();
    if (kind == "u32") return Pick<json>({0, 1, 5000, 4294967295ULL});
    if (kind == "u64") return Pick<json>({0, 3, 18446744073709551615ULL});
    if (kind == "b") return Chance(50);
    if (kind == "numa") {
      return Pick<std::string>({"0-1", "0", "", "nil", "3-1", "0-1-2,5", "+1,007", "1,0", "2-3,0",
                                "x", "0-", ",", "1,,2"});
    }
    json m = json::object();  // map[string]string
    for (uint32_t n = Below(4); n > 0; --n) m[Str()] = Chance(80) ? json(Str()) : json();
    return m;
  }
  json Allocation() {
    static const std::vector<std::pair<const char*, const char*>> fields = {
        {"pod_uid", "s"},        {"pod_namespace", "s"},  {"pod_name", "s"},
        {"container_name", "s"}, {"container_type", "s"}, {"container_index", "u64"},
        {"ramp_up", "b"},        {"pod_role", "s"},       {"pod_type", "s"},
        {"egress", "u32"},       {"ingress", "u32"},      {"if_name", "s"},
        {"numa_node", "numa"},   {"labels", "map"},       {"annotations", "map"},
        {"qosLevel", "s"},       {"identifier", "s"},     {"ns_name", "s"},
        {"net_class_id", "s"},   {"owner_pool_name", "s"}};
    json a = json::object();
    for (const auto& [name, kind] : fields) {
      if (Chance(60)) a[name] = Value(kind);
    }
    return a;
  }
  json Pods() {
    if (Chance(10)) return nullptr;
    json pods = json::object();
    for (uint32_t n = Below(4); n > 0; --n) {
      if (Chance(10)) {
        pods[Str()] = nullptr;
        continue;
      }
      json containers = json::object();
      for (uint32_t c = Below(3); c > 0; --c) {
        containers[Str()] = Chance(10) ? json() : Allocation();
      }
      pods[Str()] = containers;
    }
    return pods;
  }
  json Bandwidth() {
    if (Chance(20)) return nullptr;
    json bw = json::object();
    for (const char* f :
         {"Capacity", "SysReservation", "Reservation", "Allocatable", "Allocated", "Free"}) {
      if (Chance(70)) bw[f] = Value("u32");
    }
    return bw;
  }
  json Nics() {
    json nics = json::object();
    for (uint32_t n = Below(4); n > 0; --n) {
      if (Chance(10)) {
        nics[Str()] = nullptr;
        continue;
      }
      json nic = json::object();
      if (Chance(80)) nic["egress_state"] = Bandwidth();
      if (Chance(80)) nic["ingress_state"] = Bandwidth();
      if (Chance(80)) nic["pod_entries"] = Pods();
      nics[Str()] = nic;
    }
    return nics;
  }

  std::mt19937 rng_;
};

TEST_CASE("Katalyst checksum: the C++ rendering matches go-spew on random checkpoints",
          "[.][katalyst_go]") {
  if (!GoToolAvailable()) return;
  RandomCheckpoint gen(20261204);
  for (int i = 0; i < 150; ++i) {
    const json doc = gen.Doc();
    for (KatalystLayout layout : kLayouts) {
      INFO("layout " << KatalystLayoutName(layout) << ", document " << doc.dump());
      auto go = GoOn(doc.dump(), {"-layout", GoLayoutFlag(layout), "-spew"});
      auto text = KatalystSpewRendering(doc, layout);
      REQUIRE((go.exit_code == 0 || go.exit_code == 2));
      REQUIRE(text.ok() == (go.exit_code == 0));
      if (text.ok()) CHECK(text.value() == go.output);
    }
  }
}

// A file as Katalyst writes it: the Go tool re-encodes the fixture and stores its checksum.
std::string SignedByGo(const std::string& contents, KatalystLayout layout) {
  TempDir tmp;
  WriteFile(tmp.file("cp.json"), contents);
  auto signed_run =
      GoTool::Get().Run({"-layout", GoLayoutFlag(layout), "-sign", tmp.file("cp.json")});
  INFO(signed_run.output);
  REQUIRE(signed_run.exit_code == 0);
  return ReadFile(tmp.file("cp.json"));
}

const char kKatalystEntry[] = R"({"pod_uid":"uid-1","pod_namespace":"ns","pod_name":"web",
    "container_name":"main","container_type":"MAIN","egress":5000,"ingress":5000,
    "if_name":"eth0","numa_node":"0-1","labels":{"k":"v \"q\" \\ \n"},
    "annotations":{"katalyst.kubewharf.io/qos_level":"shared_cores"}})";

std::string KatalystFixture() {
  json entries = {{"uid-1", {{"main", json::parse(kKatalystEntry)}}}};
  json bw = {{"Capacity", 23500},    {"SysReservation", 0}, {"Reservation", 0},
             {"Allocatable", 23500}, {"Allocated", 5000},   {"Free", 18500}};
  return json{{"policyName", "static"},
              {"machineState",
               {{"eth0", {{"egress_state", bw}, {"ingress_state", bw}, {"pod_entries", entries}}},
                {"eth1", {{"egress_state", bw}, {"ingress_state", bw}, {"pod_entries", {}}}}}},
              {"pod_entries", entries}}
      .dump();
}

Result<core::LoadedState> LoadDir(const std::string& dir, bool skip) {
  FileStateStore::Options options;
  options.dir = dir;
  options.skip_corruption = skip;
  auto store = FileStateStore::Create(options);
  REQUIRE(store.ok());
  return store.value()->Load();
}

TEST_CASE("Katalyst checksum: a file Katalyst signed loads without the skip flag",
          "[.][katalyst_go]") {
  if (!GoToolAvailable()) return;
  for (KatalystLayout layout : kLayouts) {
    INFO("layout " << KatalystLayoutName(layout));
    TempDir tmp;
    WriteFile(tmp.file(core::kCheckpointFileName), SignedByGo(KatalystFixture(), layout));
    auto loaded = LoadDir(tmp.path(), /*skip=*/false);
    INFO(loaded.status().message());
    REQUIRE(loaded.ok());
    CHECK(loaded.value().found);
    CHECK_FALSE(loaded.value().corruption_skipped);
    REQUIRE(loaded.value().pod_entries.count("uid-1") == 1);
    CHECK(loaded.value().pod_entries.at("uid-1").at("main").egress == 5000);
  }
}

TEST_CASE("Katalyst checksum: a changed value in a Katalyst-signed file needs the skip flag",
          "[.][katalyst_go]") {
  if (!GoToolAvailable()) return;
  json doc = json::parse(SignedByGo(KatalystFixture(), KatalystLayout::kV053));
  doc["pod_entries"]["uid-1"]["main"]["egress"] = 5001;
  TempDir tmp;
  WriteFile(tmp.file(core::kCheckpointFileName), doc.dump());
  auto strict = LoadDir(tmp.path(), /*skip=*/false);
  REQUIRE_FALSE(strict.ok());
  CHECK(strict.status().code() == StatusCode::kDataLoss);
  CHECK_THAT(strict.status().message(), Contains("written by Katalyst"));
  CHECK_THAT(strict.status().message(), Contains("Katalyst checksum did not match"));
  CHECK_THAT(strict.status().message(), Contains("--skip-network-state-corruption"));
  auto skipped = LoadDir(tmp.path(), /*skip=*/true);
  REQUIRE(skipped.ok());
  CHECK(skipped.value().corruption_skipped);
  CHECK(skipped.value().pod_entries.at("uid-1").at("main").egress == 5001);
}

// Golden values computed with the Go tool, so the rendering stays covered where Go is absent.
TEST_CASE("Katalyst checksum: golden renderings from go-spew", "[katalyst_checksum]") {
  const json empty = json::parse("{}");
  auto text = KatalystSpewRendering(empty, KatalystLayout::kV053);
  REQUIRE(text.ok());
  CHECK(text.value() ==
        "(*state.NetworkPluginCheckpoint){PolicyName:(string) MachineState:(state.NICMap)map[] "
        "PodEntries:(state.PodEntries)map[] Checksum:(checksum.Checksum)0}");

  const json nils = json::parse(
      R"({"machineState":null,"pod_entries":{"p":null,"q":{"c":null,"d":{"numa_node":"nil"}}}})");
  text = KatalystSpewRendering(nils, KatalystLayout::kHead);
  REQUIRE(text.ok());
  CHECK(text.value() ==
        "(*state.NetworkPluginCheckpoint){PolicyName:(string) MachineState:(state.NICMap)<nil> "
        "PodEntries:(state.PodEntries)map[p:<nil> q:map[c:<nil> d:<*>{AllocationMeta:"
        "(commonstate.AllocationMeta){PodUid:(string) PodNamespace:(string) PodName:(string) "
        "ContainerName:(string) ContainerType:(string) ContainerIndex:(uint64)0 "
        "OwnerPoolName:(string) PodRole:(string) PodType:(string) Labels:(map[string]string)"
        "<nil> Annotations:(map[string]string)<nil> QoSLevel:(string)} Egress:(uint32)0 "
        "Ingress:(uint32)0 Identifier:(string) NSName:(string) IfName:(string) NumaNodes:"
        "(machine.CPUSet){Initialed:(bool)false elems:(map[int]struct {})<nil>} "
        "NetClassID:(string)}]] Checksum:(checksum.Checksum)0}");

  const json one = json::parse(
      R"({"policyName":"static","pod_entries":{"u":{"c":{"egress":5,"numa_node":"0-1",
          "labels":{"k":"v"}}}}})");
  text = KatalystSpewRendering(one, KatalystLayout::kV053);
  REQUIRE(text.ok());
  CHECK(text.value() ==
        "(*state.NetworkPluginCheckpoint){PolicyName:(string)static MachineState:(state.NICMap)"
        "map[] PodEntries:(state.PodEntries)map[u:map[c:<*>{PodUid:(string) "
        "PodNamespace:(string) PodName:(string) ContainerName:(string) ContainerType:(string) "
        "ContainerIndex:(uint64)0 RampUp:(bool)false PodRole:(string) PodType:(string) "
        "Egress:(uint32)5 Ingress:(uint32)0 IfName:(string) NumaNodes:(machine.CPUSet)"
        "{Initialed:(bool)true elems:(map[int]struct {})map[0:{} 1:{}]} Labels:"
        "(map[string]string)map[k:v] Annotations:(map[string]string)<nil>}]] "
        "Checksum:(checksum.Checksum)0}");
  // After a nil pointer as the last value of a map, go-spew prints the next field untyped.
  const json trailing_nil =
      json::parse(R"({"machineState":{"eth0":null},"pod_entries":{"p":{"c":null}}})");
  text = KatalystSpewRendering(trailing_nil, KatalystLayout::kV053);
  REQUIRE(text.ok());
  CHECK(text.value() ==
        "(*state.NetworkPluginCheckpoint){PolicyName:(string) MachineState:(state.NICMap)"
        "map[eth0:<nil>] PodEntries:map[p:map[c:<nil>]] Checksum:0}");

  // The checksum is hashed as the text is produced, without keeping it.
  for (KatalystLayout layout : kLayouts) {
    for (const json* doc : {&empty, &nils, &one, &trailing_nil}) {
      auto text_of = KatalystSpewRendering(*doc, layout);
      auto sum = KatalystChecksum(*doc, layout);
      REQUIRE(text_of.ok());
      REQUIRE(sum.ok());
      CHECK(sum.value() == Fnv1a32(text_of.value()));
    }
  }
}

TEST_CASE("Katalyst checksum: FNV-1a 32 test vectors", "[katalyst_checksum]") {
  CHECK(Fnv1a32("") == 2166136261U);
  CHECK(Fnv1a32("a") == 0xe40c292cU);
  CHECK(Fnv1a32("foobar") == 0xbf9cf968U);
}

}  // namespace
}  // namespace netqos::checkpoint
