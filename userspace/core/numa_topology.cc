#include "core/numa_topology.h"

#include <string>

namespace netqos::core {

Result<NumaTopology> NumaTopology::Create(const std::vector<NumaNode>& nodes) {
  NumaTopology t;
  if (nodes.empty()) {
    t.socket_of_[0] = 0;
    return t;
  }
  for (const NumaNode& n : nodes) {
    if (n.id < 0) return InvalidArgument("NUMA node " + std::to_string(n.id) + ": negative id");
    if (n.socket < kNoSocket) {
      return InvalidArgument("NUMA node " + std::to_string(n.id) + ": socket " +
                             std::to_string(n.socket) + " (want an id, or -1 for a node " +
                             "without CPUs)");
    }
    if (!t.socket_of_.emplace(n.id, n.socket).second) {
      return InvalidArgument("NUMA node " + std::to_string(n.id) + " is listed twice");
    }
  }
  return t;
}

std::optional<int> NumaTopology::SocketOf(int numa) const {
  if (numa == -1) numa = 0;
  auto it = socket_of_.find(numa);
  if (it == socket_of_.end() || it->second == kNoSocket) return std::nullopt;
  return it->second;
}

NumaSet NumaTopology::SiblingsOf(int numa) const {
  NumaSet out;
  std::optional<int> socket = SocketOf(numa);
  if (!socket) return out;
  for (const auto& [id, s] : socket_of_) {
    if (s == *socket) out.insert(id);
  }
  return out;
}

std::vector<uint64_t> NumaTopology::AllNodes() const {
  std::vector<uint64_t> out;
  for (const auto& [id, s] : socket_of_) {
    if (s != kNoSocket) out.push_back(static_cast<uint64_t>(id));
  }
  return out;
}

std::vector<NumaNode> NumaTopology::nodes() const {
  std::vector<NumaNode> out;
  for (const auto& [id, s] : socket_of_) out.push_back(NumaNode{id, s});
  return out;
}

}  // namespace netqos::core
