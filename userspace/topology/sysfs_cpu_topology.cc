#include "topology/sysfs_cpu_topology.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <map>
#include <optional>
#include <set>

#include "topology/sysfs_attr.h"

namespace netqos::topology {
namespace {

std::optional<int> ParseInt(const std::string& s) {
  int v = 0;
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, v);
  if (ec != std::errc() || p != end) return std::nullopt;
  return v;
}

// Directory entries named <prefix><digits>, as the numbers, sorted. nullopt if the directory
// cannot be opened.
std::optional<std::vector<int>> NumberedEntries(const std::string& dir, const std::string& prefix) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return std::nullopt;
  std::vector<int> ids;
  while (const dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    auto id = ParseInt(name.substr(prefix.size()));
    if (id && *id >= 0) ids.push_back(*id);
  }
  ::closedir(d);
  std::sort(ids.begin(), ids.end());
  return ids;
}

struct CpuInfo {
  std::string cpu_dir;                  // <root>/devices/system/cpu
  std::optional<std::set<int>> online;  // from cpu/online when readable
};

bool CpuOnline(const CpuInfo& info, int cpu) {
  if (info.online) return info.online->count(cpu) > 0;
  // No global list: the per-CPU file (absent for CPUs that cannot be offlined, e.g. cpu0).
  auto v = ReadSysfsAttr(info.cpu_dir + "/cpu" + std::to_string(cpu) + "/online");
  return !v || *v != "0";
}

// Socket of one CPU, or nullopt when it is offline or its package id is unreadable/negative.
std::optional<int> SocketOfCpu(const CpuInfo& info, int cpu) {
  if (!CpuOnline(info, cpu)) return std::nullopt;
  auto v =
      ReadSysfsAttr(info.cpu_dir + "/cpu" + std::to_string(cpu) + "/topology/physical_package_id");
  if (!v) return std::nullopt;
  auto id = ParseInt(*v);
  if (!id || *id < 0) return std::nullopt;
  return id;
}

// The CPUs of a node: its cpulist, or (when that is unreadable) its cpu<N> entries.
std::vector<int> NodeCpus(const std::string& node_dir) {
  if (auto text = ReadSysfsAttr(node_dir + "/cpulist")) {
    auto cpus = ParseCpuList(*text);
    if (cpus.ok()) return *cpus;
  }
  return NumberedEntries(node_dir, "cpu").value_or(std::vector<int>{});
}

}  // namespace

Result<std::vector<int>> ParseCpuList(const std::string& text) {
  std::vector<int> out;
  std::string s = TrimWhitespace(text);
  size_t pos = 0;
  while (pos < s.size()) {
    size_t comma = s.find(',', pos);
    if (comma == std::string::npos) comma = s.size();
    std::string item = TrimWhitespace(s.substr(pos, comma - pos));
    pos = comma + 1;
    if (item.empty()) return InvalidArgument("cpu list \"" + s + "\": empty item");
    size_t dash = item.find('-');
    auto lo = ParseInt(item.substr(0, dash));
    auto hi = dash == std::string::npos ? lo : ParseInt(item.substr(dash + 1));
    if (!lo || !hi || *lo < 0 || *hi < *lo)
      return InvalidArgument("cpu list \"" + s + "\": bad item \"" + item + "\"");
    for (int c = *lo; c <= *hi; ++c) out.push_back(c);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Result<std::vector<core::NumaNode>> ReadNumaNodes(const std::string& sysfs_root) {
  const std::string system_dir = sysfs_root + "/devices/system";
  CpuInfo info;
  info.cpu_dir = system_dir + "/cpu";
  if (auto text = ReadSysfsAttr(info.cpu_dir + "/online")) {
    if (auto list = ParseCpuList(*text); list.ok())
      info.online = std::set<int>(list->begin(), list->end());
  }

  std::optional<int> first_cpu_socket;
  if (auto cpus = NumberedEntries(info.cpu_dir, "cpu")) {
    for (int cpu : *cpus) {
      if (auto s = SocketOfCpu(info, cpu)) {
        first_cpu_socket = s;
        break;
      }
    }
  }

  auto node_ids = NumberedEntries(system_dir + "/node", "node").value_or(std::vector<int>{});
  if (node_ids.empty()) {
    // No NUMA information (CONFIG_NUMA off, or a container without the node directory).
    return std::vector<core::NumaNode>{{0, first_cpu_socket.value_or(0)}};
  }

  std::vector<core::NumaNode> nodes;
  nodes.reserve(node_ids.size());
  bool any_socket = false;
  for (int id : node_ids) {
    core::NumaNode node{id, 0};
    std::optional<int> socket;
    for (int cpu : NodeCpus(system_dir + "/node/node" + std::to_string(id))) {
      socket = SocketOfCpu(info, cpu);
      if (socket) break;
    }
    // A node with no online CPU (memory-only: CXL/PMEM, or all its CPUs offlined) is on no
    // socket, as in v0.5.3, whose sibling sets come from the CPU topology (core/numa_topology.h).
    node.socket = socket ? *socket : core::kNoSocket;
    any_socket = any_socket || socket.has_value();
    nodes.push_back(node);
  }
  if (!any_socket) {
    // No node names a CPU we can place (a sysfs without CPU topology): one socket, as when
    // there is no NUMA information at all.
    for (core::NumaNode& n : nodes) n.socket = first_cpu_socket.value_or(0);
  }
  return nodes;
}

}  // namespace netqos::topology
