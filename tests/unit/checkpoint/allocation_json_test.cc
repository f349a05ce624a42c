#include "checkpoint/allocation_json.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "unit/checkpoint/full_allocation.h"

namespace netqos::checkpoint {
namespace {

using nlohmann::json;
using testing::FullInfo;

TEST_CASE("every AllocationInfo field survives a JSON round trip", "[allocation_json]") {
  const core::AllocationInfo info = FullInfo();
  json j = AllocationToJson(info);
  CHECK(j["numa_node"] == "0-1,3,5-7");
  CHECK(j["identifier"] == "ns2-eth0");
  CHECK(j["qosLevel"] == "shared_cores");
  CHECK(j["net_class_id"] == "42");
  CHECK(j["container_index"] == 3);
  // Through the text form too, as the store does.
  auto back = AllocationFromJson(json::parse(j.dump()));
  REQUIRE(back.ok());
  CHECK(*back == info);
}

TEST_CASE("empty meta fields are omitted, maps always written", "[allocation_json]") {
  core::AllocationInfo info;
  info.container_type = "POD";
  info.pod_uid = "u";
  json j = AllocationToJson(info);
  CHECK_FALSE(j.contains("container_name"));
  CHECK_FALSE(j.contains("container_index"));
  CHECK_FALSE(j.contains("pod_role"));
  CHECK_FALSE(j.contains("pod_type"));
  CHECK(j["labels"] == json::object());
  CHECK(j["annotations"] == json::object());
  CHECK(j["numa_node"] == "");
  CHECK(j["identifier"] == "");
  CHECK(j["egress"] == 0);
  auto back = AllocationFromJson(j);
  REQUIRE(back.ok());
  CHECK(*back == info);
}

TEST_CASE("a Katalyst v0.5.3 entry is readable", "[allocation_json]") {
  json j = json::parse(R"({"pod_uid":"u","pod_namespace":"test","pod_name":"test",
    "container_name":"test","container_type":"MAIN","ramp_up":true,"egress":5000,"ingress":5000,
    "if_name":"eth0","numa_node":"0-1",
    "labels":{"katalyst.kubewharf.io/qos_level":"shared_cores"},
    "annotations":{"katalyst.kubewharf.io/qos_level":"shared_cores",
                   "namespace_type":"host_ns_preferred"}})");
  auto info = AllocationFromJson(j);
  REQUIRE(info.ok());
  CHECK(info->pod_uid == "u");
  CHECK(info->container_type == "MAIN");
  CHECK(info->egress == 5000);
  CHECK(info->ingress == 5000);
  CHECK(info->nic() == core::NicId{"", "eth0"});
  CHECK(info->numa_nodes == core::NumaSet{0, 1});
  CHECK(info->annotations.at("namespace_type") == "host_ns_preferred");
  // No level stored by v0.5.3: taken from the stored annotations (enforcement needs it).
  CHECK(info->qos_level == "shared_cores");
}

TEST_CASE("a Katalyst HEAD entry is readable", "[allocation_json]") {
  json j = json::parse(R"({"pod_uid":"u","pod_namespace":"n","pod_name":"p",
    "container_name":"c","container_type":"MAIN","owner_pool_name":"share","labels":{},
    "annotations":{},"qosLevel":"dedicated_cores","egress":100,"ingress":90,
    "identifier":"ns2-eth1","ns_name":"ns2","if_name":"eth1","numa_node":"nil",
    "net_class_id":"7","some_future_field":[1,2]})");
  auto info = AllocationFromJson(j);
  REQUIRE(info.ok());
  CHECK(info->qos_level == "dedicated_cores");
  CHECK(info->nic() == core::NicId{"ns2", "eth1"});
  CHECK(info->numa_nodes.empty());
  CHECK(info->net_class_id == "7");
}

TEST_CASE("NUMA list forms", "[allocation_json]") {
  auto parse = [](const std::string& text) {
    return AllocationFromJson(json{{"numa_node", text}});
  };
  CHECK(parse("")->numa_nodes.empty());
  CHECK(parse("nil")->numa_nodes.empty());
  CHECK(parse("3")->numa_nodes == core::NumaSet{3});
  CHECK(parse("0-2,4")->numa_nodes == core::NumaSet{0, 1, 2, 4});
  CHECK(parse("0-1\n")->numa_nodes == core::NumaSet{0, 1});
  for (const char* bad : {"x", "1-", "-1", "2-1", "1,,2", "0-99999999"}) {
    auto r = parse(bad);
    INFO(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message().find("numa_node") != std::string::npos);
  }
}

TEST_CASE("wrong types are errors naming the field", "[allocation_json]") {
  struct Case {
    json j;
    std::string field;
  };
  std::vector<Case> cases = {
      {json{{"egress", "5000"}}, "x.egress"},
      {json{{"ingress", -1}}, "x.ingress"},
      {json{{"egress", 5000.5}}, "x.egress"},
      {json{{"egress", 5000000000ULL}}, "x.egress"},
      {json{{"pod_uid", 1}}, "x.pod_uid"},
      {json{{"labels", json::array()}}, "x.labels"},
      {json{{"annotations", {{"k", 1}}}}, "x.annotations.k"},
      {json{{"numa_node", json::array({0, 1})}}, "x.numa_node"},
      {json{{"container_index", "1"}}, "x.container_index"},
      {json{{"net_class_id", 7}}, "x.net_class_id"},
      {json::array(), "x"},
  };
  for (const auto& c : cases) {
    auto r = AllocationFromJson(c.j, "x");
    INFO(c.j.dump());
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
    CHECK(r.status().message().rfind(c.field + ":", 0) == 0);
  }
}

TEST_CASE("null fields are absent, as in Go", "[allocation_json]") {
  auto r = AllocationFromJson(json{{"pod_uid", nullptr}, {"labels", nullptr}, {"egress", nullptr}});
  REQUIRE(r.ok());
  CHECK(*r == core::AllocationInfo{});
}

TEST_CASE("pod entries and bandwidth round trip", "[allocation_json]") {
  core::PodEntries entries;
  core::AllocationInfo a = FullInfo();
  core::AllocationInfo pod_level = FullInfo();
  pod_level.container_name = "";
  pod_level.container_type = "POD";
  entries["uid-1"]["main"] = a;
  entries["uid-1"][""] = pod_level;
  auto back = PodEntriesFromJson(json::parse(PodEntriesToJson(entries).dump()));
  REQUIRE(back.ok());
  CHECK(*back == entries);

  core::BandwidthInfo bw{22500, 1, 4000, 18500, 5000, 13500};
  json bj = BandwidthToJson(bw);
  CHECK(
      bj.dump() ==
      R"({"Allocatable":18500,"Allocated":5000,"Capacity":22500,"Free":13500,"Reservation":4000,"SysReservation":1})");
  auto bw_back = BandwidthFromJson(bj, "b");
  REQUIRE(bw_back.ok());
  CHECK(*bw_back == bw);
  auto bad = BandwidthFromJson(json{{"Free", "x"}}, "machineState.eth0.egress_state");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().rfind("machineState.eth0.egress_state.Free:", 0) == 0);
}

TEST_CASE("pod entries read from their text agree with the document reader", "[allocation_json]") {
  // What the snapshot load reads without building a document (PodEntriesFromOwnText) must be
  // what PodEntriesFromJson reads, entries without a namespace included.
  auto check_same = [](const std::string& text) {
    INFO(text);
    core::PodEntries fast;
    std::vector<std::pair<std::string, std::string>> fast_without;
    REQUIRE(PodEntriesFromOwnText(text, &fast, &fast_without));
    const json doc = json::parse(text);
    auto slow = PodEntriesFromJson(doc);
    REQUIRE(slow.ok());
    CHECK(fast == *slow);
    std::vector<std::pair<std::string, std::string>> slow_without;
    for (const auto& [uid, containers] : doc.items()) {
      for (const auto& [name, entry] : containers.items()) {
        if (!entry.contains("ns_name")) slow_without.emplace_back(uid, name);
      }
    }
    CHECK(fast_without == slow_without);
  };
  core::PodEntries entries;
  core::AllocationInfo pod_level = FullInfo();
  pod_level.container_name = "";
  pod_level.container_type = "POD";
  entries["uid-1"]["main"] = FullInfo();
  entries["uid-1"][""] = pod_level;
  core::AllocationInfo bare;
  bare.pod_uid = "uid-2";
  entries["uid-2"]["c"] = bare;
  check_same(PodEntriesToJson(entries).dump());
  check_same("{}");
  // Katalyst's forms: null pods and entries dropped, no ns_name, the level in the annotations,
  // unknown members and null fields ignored.
  check_same(R"({"a":null,"b":{"x":null},"c":{"m":{"pod_uid":"c","egress":7,"ramp_up":false,)"
             R"("owner_pool_name":"shared","identifier":"eth0","numa_node":"nil","labels":null,)"
             R"("annotations":{"katalyst.kubewharf.io/qos_level":"shared_cores"}}},"d":{}})");
  check_same(R"({"a":{"m":{"ns_name":null,"if_name":"eth0","numa_node":"0-1","x":-1,"y":1.5}}})");
}

TEST_CASE("pod entries read from their text give up where the document reader errs",
          "[allocation_json]") {
  for (const std::string text : {
           R"({"a":{"m":{"egress":"5000"}}})",
           R"({"a":{"m":{"ingress":-1}}})",
           R"({"a":{"m":{"egress":5000.5}}})",
           R"({"a":{"m":{"egress":5000000000}}})",
           R"({"a":{"m":{"pod_uid":1}}})",
           R"({"a":{"m":{"labels":[]}}})",
           R"({"a":{"m":{"annotations":{"k":1}}}})",
           R"({"a":{"m":{"numa_node":"x"}}})",
           R"({"a":{"m":[]}})",
           R"({"a":"b"})",
           R"({"a":{"m":{}})",
           R"([])",
       }) {
    INFO(text);
    core::PodEntries entries;
    std::vector<std::pair<std::string, std::string>> without;
    CHECK_FALSE(PodEntriesFromOwnText(text, &entries, &without));
  }
}

TEST_CASE("machine state lists each NIC's own entries", "[allocation_json]") {
  core::PodEntries entries;
  core::AllocationInfo a = FullInfo();  // ns2/eth0
  core::AllocationInfo b = FullInfo();
  b.pod_uid = "uid-2";
  b.ns_name = "";
  entries["uid-1"]["main"] = a;
  entries["uid-2"]["main"] = b;
  core::MachineState ms;
  ms[core::NicId{"", "eth0"}] = core::NicState{{100, 0, 0, 100, 4000, 0}, {}};
  ms[core::NicId{"ns2", "eth0"}] = core::NicState{};
  ms[core::NicId{"", "eth9"}] = core::NicState{};
  json j = MachineStateToJson(ms, entries);
  CHECK(j["eth0"]["pod_entries"].size() == 1);
  CHECK(j["eth0"]["pod_entries"].contains("uid-2"));
  CHECK(j["eth0"]["egress_state"]["Capacity"] == 100);
  CHECK(j["ns2-eth0"]["pod_entries"].contains("uid-1"));
  CHECK(j["eth9"]["pod_entries"] == json::object());
  CHECK(ValidateMachineStateJson(j).ok());
  j["eth9"]["ingress_state"]["Allocated"] = "lots";
  Status st = ValidateMachineStateJson(j);
  REQUIRE_FALSE(st.ok());
  CHECK(st.message().find("machineState.eth9.ingress_state.Allocated") != std::string::npos);
}

}  // namespace
}  // namespace netqos::checkpoint
