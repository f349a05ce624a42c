// The topology file format: what it accepts, what it rejects, and live reload through Watch().
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "support/temp_dir.h"
#include "topology/topology_file_source.h"

using netqos::topology::ParseTopologyJson;
using netqos::topology::TopologyFileSource;

TEST_CASE("topology file: the documented example parses with every field") {
  auto t = ParseTopologyJson(R"({"numa_nodes": [{"id": 0, "socket": 0}, {"id": 1, "socket": 0},
      {"id": 2, "socket": 1}, {"id": 3, "socket": 1}],
    "nics": [{"name": "eth0", "netns": "", "netns_path": "", "speed_mbps": 25000,
              "numa_node": 0, "enabled": true, "ipv4": ["1.1.1.1"], "ipv6": []},
             {"name": "eth2", "netns": "ns2", "speed_mbps": 10000, "numa_node": 2,
              "ipv6": ["::ffff:192.0.2.1"], "ifindex": 7, "pci_address": "0000:3b:00.0"}]})",
                             "t.json", "/var/run/netns");
  REQUIRE(t.ok());
  REQUIRE(t->numa_nodes.size() == 4);
  CHECK(t->numa_nodes[2].id == 2);
  CHECK(t->numa_nodes[2].socket == 1);
  REQUIRE(t->nics.size() == 2);
  const auto& eth0 = t->nics[0];
  CHECK(eth0.id.name == "eth0");
  CHECK(eth0.id.netns.empty());
  CHECK(eth0.netns_path.empty());
  CHECK(eth0.speed_mbps == 25000);
  CHECK(eth0.numa_node == 0);
  CHECK(eth0.enabled);
  CHECK(eth0.healthy);
  CHECK(eth0.ipv4 == std::vector<std::string>{"1.1.1.1"});
  const auto& eth2 = t->nics[1];
  CHECK(eth2.id.netns == "ns2");
  CHECK(eth2.netns_path == "/var/run/netns/ns2");  // derived from the netns dir
  CHECK(eth2.enabled);                             // default
  CHECK(eth2.ifindex == 7);
  CHECK(eth2.pci_address == "0000:3b:00.0");
}

TEST_CASE("topology file: defaults for omitted fields") {
  auto t = ParseTopologyJson(R"({"nics": [{"name": "eth9"}]})", "t.json", "/run/netns");
  REQUIRE(t.ok());
  CHECK(t->numa_nodes.empty());
  CHECK(t->nics[0].speed_mbps == -1);
  CHECK(t->nics[0].numa_node == -1);
  CHECK(t->nics[0].ipv4.empty());
}

TEST_CASE("topology file: errors name the file and the field") {
  struct Case {
    const char* text;
    const char* expect;
  };
  const Case cases[] = {
      {"{", "malformed JSON"},
      // Found by fuzz/fuzz_topology_file: nlohmann throws out_of_range, not parse_error, for a
      // number no double holds; it escaped the parser, and a SIGHUP with such a file made netqosd
      // exit instead of keeping the previous topology.
      {R"({"nics": [{"name": "a", "speed_mbps": 1e400}]})", "malformed JSON"},
      {"[]", "expected a JSON object"},
      {R"({"nic": []})", "unknown field \"nic\""},
      {R"({"nics": {}})", "nics: expected an array"},
      {R"({"nics": [{"speed_mbps": 1}]})", "nics[0]: missing required field \"name\""},
      {R"({"nics": [{"name": ""}]})", "nics[0].name: must not be empty"},
      {R"({"nics": [{"name": "a", "speed": 1}]})", "unknown field \"speed\""},
      {R"({"nics": [{"name": "a", "speed_mbps": "fast"}]})", "speed_mbps: expected an integer"},
      {R"({"nics": [{"name": "a", "speed_mbps": -5}]})", "speed_mbps: -5 is out of range"},
      {R"({"nics": [{"name": "a", "enabled": "yes"}]})", "enabled: expected true or false"},
      {R"({"nics": [{"name": "a", "ipv4": "1.1.1.1"}]})", "ipv4: expected an array"},
      {R"({"nics": [{"name": "a", "ipv4": [1]}]})", "ipv4: expected an array of strings"},
      {R"({"numa_nodes": [{"id": 0}]})", "numa_nodes[0]: missing required field \"socket\""},
      {R"({"numa_nodes": [{"id": -1, "socket": 0}]})", "numa_nodes[0].id: -1 is out of range"},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    auto t = ParseTopologyJson(c.text, "/etc/topo.json", "/var/run/netns");
    REQUIRE_FALSE(t.ok());
    CHECK(t.status().code() == netqos::StatusCode::kInvalidArgument);
    CHECK_THAT(t.status().message(), Catch::Contains("/etc/topo.json"));
    CHECK_THAT(t.status().message(), Catch::Contains(c.expect));
  }
}

TEST_CASE("topology file source: missing file is a clear error") {
  auto s = TopologyFileSource::Create("/nonexistent/topo.json", "/var/run/netns");
  REQUIRE_FALSE(s.ok());
  CHECK_THAT(s.status().message(), Catch::Contains("/nonexistent/topo.json"));
}

TEST_CASE("topology file source: a file over the size limit is refused, naming it and the limit") {
  netqos::testing::TempDir dir;
  const std::string path = dir.path() + "/topo.json";
  // Valid JSON, padded past the limit with whitespace: only its size is wrong.
  const std::string doc = R"({"nics": [{"name": "eth9"}]})";
  std::ofstream(path) << doc << std::string(netqos::topology::kMaxTopologyFileBytes, ' ');
  auto s = TopologyFileSource::Create(path, "/var/run/netns");
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().code() == netqos::StatusCode::kInvalidArgument);
  CHECK_THAT(s.status().message(), Catch::Contains(path));
  CHECK_THAT(s.status().message(), Catch::Contains("limit of 4194304 bytes (4 MiB)"));
  // At the limit it is read.
  std::ofstream(path) << doc
                      << std::string(netqos::topology::kMaxTopologyFileBytes - doc.size(), ' ');
  CHECK(TopologyFileSource::Create(path, "/var/run/netns").ok());
}

TEST_CASE("topology file source: an endless file is read no further than the limit") {
  // A character device has no size to check first; the read stops one byte past the limit.
  auto s = TopologyFileSource::Create("/dev/zero", "/var/run/netns");
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().code() == netqos::StatusCode::kInvalidArgument);
  CHECK_THAT(s.status().message(), Catch::Contains("/dev/zero is larger than the limit"));
}

TEST_CASE("topology file source: rewriting the file delivers the new topology") {
  netqos::testing::TempDir dir;
  const std::string path = dir.path() + "/topo.json";
  auto write = [&](const std::string& text) {
    const std::string tmp = path + ".tmp";
    std::ofstream(tmp) << text;
    std::filesystem::rename(tmp, path);
  };
  write(R"({"nics": [{"name": "eth0", "ipv4": ["10.0.0.1"], "speed_mbps": 1000}]})");
  auto src = TopologyFileSource::Create(path, "/var/run/netns");
  REQUIRE(src.ok());
  std::mutex mu;
  std::condition_variable cv;
  std::vector<netqos::core::Topology> seen;
  REQUIRE((*src)
              ->Watch([&](netqos::core::Topology t) {
                std::lock_guard lk(mu);
                seen.push_back(std::move(t));
                cv.notify_all();
              })
              .ok());
  write("{ broken");  // ignored: the previous topology stays in force
  write(R"({"nics": [{"name": "eth0", "ipv4": ["10.0.0.1"], "speed_mbps": 1000},
                     {"name": "eth1", "ipv4": ["10.0.0.2"], "speed_mbps": 1000}]})");
  std::unique_lock lk(mu);
  REQUIRE(cv.wait_for(lk, std::chrono::seconds(5), [&] { return !seen.empty(); }));
  CHECK(seen.back().nics.size() == 2);
}
