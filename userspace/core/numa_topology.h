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
  // Rejects negative or duplicate ids and sockets below kNoSocket. An empty list means a single
  // NUMA node 0 on socket 0 (a machine that reports no NUMA information).
  static Result<NumaTopology> Create(const std::vector<NumaNode>& nodes);

  // NUMA -1 (unknown) is looked up as NUMA 0, as v0.5.3 does. nullopt for an unknown node and
  // for a node without CPUs.
  std::optional<int> SocketOf(int numa) const;
  // All NUMA nodes on the socket of `numa`; empty when `numa` is not a known node or has no
  // socket. Nodes without CPUs are on no socket: v0.5.3 builds these sets from the CPU
  // topology, where such nodes do not appear, so a socket of nodes {0, 1} stays {0, 1} next to a
  // CXL or PMEM node 2 (which would otherwise widen the hint past what the CPU manager offers).
  NumaSet SiblingsOf(int numa) const;
  bool Contains(int numa) const { return socket_of_.count(numa) > 0; }
  // The nodes of the all-NUMA hint: those on a socket (v0.5.3: the CPU topology's nodes).
  std::vector<uint64_t> AllNodes() const;
  // The effective node list, sorted by id.
  std::vector<NumaNode> nodes() const;

 private:
  std::map<int, int> socket_of_;
};

}  // namespace netqos::core
