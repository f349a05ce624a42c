// NUMA node → socket discovery from fixture sysfs trees (and once from this machine's /sys).
#include "topology/sysfs_cpu_topology.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "support/files.h"
#include "support/temp_dir.h"

namespace fs = std::filesystem;
using netqos::core::NumaNode;
using netqos::testing::TempDir;
using netqos::testing::WriteFile;
using netqos::topology::ParseCpuList;
using netqos::topology::ReadNumaNodes;

namespace {

void Put(const TempDir& root, const std::string& rel, const std::string& contents) {
  fs::path p = fs::path(root.path()) / rel;
  fs::create_directories(p.parent_path());
  WriteFile(p.string(), contents);
}

void Cpu(const TempDir& root, int cpu, int package) {
  Put(root, "devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/physical_package_id",
      std::to_string(package) + "\n");
}

void Node(const TempDir& root, int node, const std::string& cpulist) {
  Put(root, "devices/system/node/node" + std::to_string(node) + "/cpulist", cpulist + "\n");
}

std::vector<std::pair<int, int>> Pairs(const std::vector<NumaNode>& nodes) {
  std::vector<std::pair<int, int>> out;
  for (const auto& n : nodes) out.emplace_back(n.id, n.socket);
  return out;
}

using P = std::vector<std::pair<int, int>>;

}  // namespace

TEST_CASE("cpu list: ranges, singles, whitespace and errors") {
  CHECK(*ParseCpuList("0-3,8,10-11\n") == std::vector<int>{0, 1, 2, 3, 8, 10, 11});
  CHECK(*ParseCpuList("5") == std::vector<int>{5});
  CHECK(ParseCpuList("  \n")->empty());
  CHECK(*ParseCpuList("3,1-2,2") == std::vector<int>{1, 2, 3});
  CHECK_FALSE(ParseCpuList("1-").ok());
  CHECK_FALSE(ParseCpuList("3-1").ok());
  CHECK_FALSE(ParseCpuList("a").ok());
  CHECK_FALSE(ParseCpuList("1,,2").ok());
  CHECK(ParseCpuList("x-y").status().code() == netqos::StatusCode::kInvalidArgument);
}

TEST_CASE("numa nodes: four nodes on two sockets") {
  TempDir root;
  for (int c = 0; c < 8; ++c) Cpu(root, c, c / 4);
  Put(root, "devices/system/cpu/online", "0-7\n");
  Node(root, 0, "0-1");
  Node(root, 1, "2-3");
  Node(root, 2, "4-5");
  Node(root, 3, "6-7");
  Put(root, "devices/system/node/online", "0-3\n");  // a file, not a node directory
  auto nodes = ReadNumaNodes(root.path());
  REQUIRE(nodes.ok());
  CHECK(Pairs(*nodes) == P{{0, 0}, {1, 0}, {2, 1}, {3, 1}});
}

TEST_CASE("numa nodes: node ids are numeric order, not name order") {
  TempDir root;
  for (int c = 0; c < 12; ++c) Cpu(root, c, c < 6 ? 0 : 1);
  for (int n = 0; n < 12; ++n) Node(root, n, std::to_string(n));
  auto nodes = ReadNumaNodes(root.path());
  REQUIRE(nodes.ok());
  REQUIRE(nodes->size() == 12);
  CHECK((*nodes)[2].id == 2);
  CHECK((*nodes)[10].id == 10);
  CHECK((*nodes)[10].socket == 1);
}

TEST_CASE("numa nodes: a machine without node directories is one node 0") {
  TempDir root;
  Cpu(root, 0, 3);
  Cpu(root, 1, 3);
  SECTION("on the socket of the first online CPU") {
    CHECK(Pairs(*ReadNumaNodes(root.path())) == P{{0, 3}});
  }
  SECTION("an empty node directory counts as no NUMA information") {
    fs::create_directories(root.file("devices/system/node"));
    CHECK(Pairs(*ReadNumaNodes(root.path())) == P{{0, 3}});
  }
  SECTION("the first CPU offline: the next one decides") {
    Cpu(root, 0, 7);
    Put(root, "devices/system/cpu/online", "1\n");
    CHECK(Pairs(*ReadNumaNodes(root.path())) == P{{0, 3}});
  }
}

TEST_CASE("numa nodes: nothing at all is node 0 on socket 0") {
  TempDir root;
  auto nodes = ReadNumaNodes(root.path());
  REQUIRE(nodes.ok());
  CHECK(Pairs(*nodes) == P{{0, 0}});
}

TEST_CASE("numa nodes: an offline CPU first in a node's cpulist is skipped") {
  TempDir root;
  for (int c = 0; c < 4; ++c) Cpu(root, c, c / 2);
  Node(root, 0, "0-1");
  Node(root, 1, "2-3");
  // cpu0 and cpu2 are offline; their stale package ids point at the wrong socket.
  Cpu(root, 0, 1);
  Cpu(root, 2, 0);
  SECTION("from the global online list") {
    Put(root, "devices/system/cpu/online", "1,3\n");
    CHECK(Pairs(*ReadNumaNodes(root.path())) == P{{0, 0}, {1, 1}});
  }
  SECTION("from per-CPU online files when there is no global list") {
    Put(root, "devices/system/cpu/cpu0/online", "0\n");
    Put(root, "devices/system/cpu/cpu1/online", "1\n");
    Put(root, "devices/system/cpu/cpu2/online", "0\n");
    CHECK(Pairs(*ReadNumaNodes(root.path())) == P{{0, 0}, {1, 1}});
  }
  SECTION("an offline CPU without a topology directory (as the kernel leaves it)") {
    Put(root, "devices/system/cpu/online", "1,3\n");
    fs::remove_all(root.file("devices/system/cpu/cpu0/topology"));
    fs::remove_all(root.file("devices/system/cpu/cpu2/topology"));
    CHECK(Pairs(*ReadNumaNodes(root.path())) == P{{0, 0}, {1, 1}});
  }
}

TEST_CASE("numa nodes: a node without a cpulist file uses its cpu<N> entries") {
  TempDir root;
  Cpu(root, 0, 0);
  Cpu(root, 1, 1);
  Node(root, 0, "0");
  fs::create_directories(root.file("devices/system/node/node1/cpu1"));
  CHECK(Pairs(*ReadNumaNodes(root.path())) == P{{0, 0}, {1, 1}});
}

TEST_CASE("numa nodes: memory-only nodes are on no socket") {
  TempDir root;
  Cpu(root, 0, 0);
  Cpu(root, 1, 0);
  Cpu(root, 2, 1);
  Cpu(root, 3, 1);
  Node(root, 0, "0-1");
  Node(root, 1, "2-3");
  SECTION("CXL or PMEM nodes 2 and 3") {
    Node(root, 2, "");
    Node(root, 3, "");
    CHECK(Pairs(*ReadNumaNodes(root.path())) == P{{0, 0}, {1, 1}, {2, -1}, {3, -1}});
  }
  SECTION("a node whose CPUs are all offline is memory-only too") {
    Node(root, 2, "");
    Put(root, "devices/system/cpu/online", "0-1\n");  // node 1's CPUs are offline
    CHECK(Pairs(*ReadNumaNodes(root.path())) == P{{0, 0}, {1, -1}, {2, -1}});
  }
  SECTION("no node with a CPU we can place: one socket, the first CPU's") {
    Put(root, "devices/system/cpu/online", "\n");
    CHECK(Pairs(*ReadNumaNodes(root.path())) == P{{0, 0}, {1, 0}});
  }
}

TEST_CASE("numa nodes: socket ids that are not 0..n-1") {
  TempDir root;
  Cpu(root, 0, 2);
  Cpu(root, 1, 5);
  Node(root, 0, "0");
  Node(root, 1, "1");
  Node(root, 2, "");
  CHECK(Pairs(*ReadNumaNodes(root.path())) == P{{0, 2}, {1, 5}, {2, -1}});
}

TEST_CASE("numa nodes: this machine's /sys") {
  auto nodes = ReadNumaNodes("/sys");
  REQUIRE(nodes.ok());
  REQUIRE_FALSE(nodes->empty());
  for (const auto& n : *nodes) {
    CHECK(n.id >= 0);
    CHECK(n.socket >= -1);
  }
}
