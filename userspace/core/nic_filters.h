// The NIC filter chain (health, bandwidth, namespace type, hint) and the preference among the
// NICs' network namespaces that follows it. Each excluded NIC gets a reason, so a failed
// allocation can say why.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/types.h"

namespace netqos::core {

// What the filters need to know about one managed NIC.
struct NicCandidate {
  const Nic* nic = nullptr;
  uint32_t free_egress = 0;
  uint32_t free_ingress = 0;
  NumaSet siblings;  // NUMA nodes of the socket holding the NIC
  // The NIC's own NUMA node, with PolicyConfig::numa_node_hints (and a known node on a socket).
  std::optional<int> own_node;
};

struct FilterOutcome {
  std::vector<const NicCandidate*> selected;  // in input order
  std::vector<std::string> reasons;           // "<identifier>: <why>", one per excluded NIC
};

// The flattened network enhancement values that steer selection.
bool NamespaceAllows(const Nic& nic, const StringMap& annotations);
bool NicPreferred(const Nic& nic, const StringMap& annotations);
bool AffinityRestricted(const StringMap& annotations);
bool NamespaceRestricted(const StringMap& annotations);

// Which of the NICs that fit a hint equally are kept.
enum class HintFit {
  kUpstream,  // the first exact match, else every subset (hints: what upstream offers)
  kAllocate,  // the same, the pod's preferred NICs first; else the NICs whose socket holds it
};

// healthy -> free >= request in both directions -> namespace_type -> hint (when it names nodes:
// the first NIC whose sibling set (or, with numa_node_hints, own node) equals the hint, else
// every NIC whose sibling set is a subset of it; with kAllocate, among those the ones the pod's
// namespace_type prefers, if any, and when none fits, the NICs whose socket holds the hint).
FilterOutcome FilterNics(const std::vector<NicCandidate>& nics, uint32_t request_mbps,
                         const StringMap& annotations, const std::optional<TopologyHint>& hint,
                         HintFit fit = HintFit::kUpstream);

}  // namespace netqos::core
