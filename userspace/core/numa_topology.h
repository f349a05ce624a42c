// The NUMA layout the policy aligns NICs with: which socket holds each NUMA node and which NUMA
// nodes share a socket (Katalyst v0.5.3's GetSiblingNUMAs).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "common/status.h"
#include "core/types.h"

namespace netqos::core {

class NumaTopology {
 public:
  // Rejects negative or duplicate ids and negative sockets. An empty list means a single NUMA
  // node 0 on socket 0 (a machine that reports no NUMA information).
  static Result<NumaTopology> Create(const std::vector<NumaNode>& nodes);

  // NUMA -1 (unknown) is looked up as NUMA 0, as v0.5.3 does.
  std::optional<int> SocketOf(int numa) const;
  // All NUMA nodes on the socket of `numa`; empty when `numa` is not a known node.
  NumaSet SiblingsOf(int numa) const;
  bool Contains(int numa) const { return socket_of_.count(numa) > 0; }
  std::vector<uint64_t> AllNodes() const;
  // The effective node list, sorted by id.
  std::vector<NumaNode> nodes() const;

 private:
  std::map<int, int> socket_of_;
};

}  // namespace netqos::core
