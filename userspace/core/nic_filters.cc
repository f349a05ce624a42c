#include "core/nic_filters.h"

#include <algorithm>
#include <climits>

#include "core/constants.h"
#include "core/numa_set.h"

namespace netqos::core {
namespace {

std::string Get(const StringMap& m, const char* key) {
  auto it = m.find(key);
  return it == m.end() ? std::string() : it->second;
}

bool InHostNs(const Nic& nic) { return nic.id.netns.empty(); }

}  // namespace

bool NamespaceAllows(const Nic& nic, const StringMap& annotations) {
  std::string t = Get(annotations, kNamespaceTypeKey);
  if (t == kHostNs) return InHostNs(nic);
  if (t == kAntiHostNs) return !InHostNs(nic);
  return true;
}

bool NicPreferred(const Nic& nic, const StringMap& annotations) {
  std::string t = Get(annotations, kNamespaceTypeKey);
  // host_ns / anti_host_ns mismatches are errors upstream, but the namespace filter has already
  // removed such NICs, so "not preferred" is equivalent here.
  if (t == kHostNs || t == kHostNsPreferred) return InHostNs(nic);
  if (t == kAntiHostNs || t == kAntiHostNsPreferred) return !InHostNs(nic);
  return true;
}

bool AffinityRestricted(const StringMap& annotations) {
  return Get(annotations, kTopologyAffinityRestrictedKey) == "true";
}

bool NamespaceRestricted(const StringMap& annotations) {
  std::string t = Get(annotations, kNamespaceTypeKey);
  return t == kHostNs || t == kAntiHostNs;
}

FilterOutcome FilterNics(const std::vector<NicCandidate>& nics, uint32_t request_mbps,
                         const StringMap& annotations, const std::optional<TopologyHint>& hint,
                         HintFit fit) {
  FilterOutcome out;
  std::vector<const NicCandidate*> passed;
  for (const NicCandidate& c : nics) {
    std::string id = c.nic->id.Identifier();
    if (!c.nic->healthy) {
      out.reasons.push_back(id + ": unhealthy (" + c.nic->unhealthy_reason + ")");
    } else if (c.free_egress < request_mbps || c.free_ingress < request_mbps) {
      out.reasons.push_back(id + ": free egress " + std::to_string(c.free_egress) + " / ingress " +
                            std::to_string(c.free_ingress) + " Mbps");
    } else if (!NamespaceAllows(*c.nic, annotations)) {
      out.reasons.push_back(id + ": " + kNamespaceTypeKey + " " +
                            Get(annotations, kNamespaceTypeKey) + " excludes it");
    } else {
      passed.push_back(&c);
    }
  }
  // No hint, or one without nodes: the kubelet's topology policy `none` sends the latter (no
  // NUMA affinity). Upstream reads it as an empty set that no NIC fits, refusing every pod.
  if (!hint || hint->nodes.empty()) {
    out.selected = std::move(passed);
    return out;
  }
  // Upstream builds a set of ints from the hint; an id that does not fit filters out everything.
  NumaSet hint_set;
  bool representable = true;
  for (uint64_t n : hint->nodes) {
    if (n > static_cast<uint64_t>(INT_MAX)) {
      representable = false;
      break;
    }
    hint_set.insert(static_cast<int>(n));
  }
  std::string hint_text = representable ? FormatNumaList(hint_set) : "(out of range)";
  // Upstream takes the first exact match whatever its namespace and picks among the subsets at
  // random, so a pod whose preferred socket hint was met by a NIC it prefers may get another NIC
  // of that socket. Among NICs that fit the hint equally, the ones the pod prefers go first.
  const NicCandidate* exact = nullptr;
  const NicCandidate* exact_preferred = nullptr;
  std::vector<const NicCandidate*> subsets;
  std::vector<const NicCandidate*> preferred_subsets;
  // For Allocate, last: NICs whose socket holds the whole hint. The kubelet merges the hints of
  // every provider into the narrowest preferred one, so a pod whose CPUs fit one node arrives
  // with {0} where netqos offered {0,1}; upstream then finds no NIC and the pod fails to start.
  std::vector<const NicCandidate*> around;
  std::vector<const NicCandidate*> preferred_around;
  for (const NicCandidate* c : passed) {
    const bool preferred = fit == HintFit::kAllocate && NicPreferred(*c->nic, annotations);
    const bool own_node_is_hint = representable && c->own_node && hint_set == NumaSet{*c->own_node};
    if (representable && (c->siblings == hint_set || own_node_is_hint)) {
      if (exact == nullptr) exact = c;
      if (preferred && exact_preferred == nullptr) exact_preferred = c;
    } else if (representable && std::includes(hint_set.begin(), hint_set.end(), c->siblings.begin(),
                                              c->siblings.end())) {
      subsets.push_back(c);
      if (preferred) preferred_subsets.push_back(c);
    } else if (fit == HintFit::kAllocate && representable && !hint_set.empty() &&
               std::includes(c->siblings.begin(), c->siblings.end(), hint_set.begin(),
                             hint_set.end())) {
      around.push_back(c);
      if (preferred) preferred_around.push_back(c);
    } else {
      out.reasons.push_back(c->nic->id.Identifier() + ": NUMA nodes " +
                            FormatNumaList(c->siblings) + " do not fit hint " + hint_text);
    }
  }
  if (exact != nullptr) {
    out.selected = {exact_preferred != nullptr ? exact_preferred : exact};
  } else if (!preferred_subsets.empty()) {
    out.selected = std::move(preferred_subsets);
  } else if (!subsets.empty()) {
    out.selected = std::move(subsets);
  } else if (!preferred_around.empty()) {
    out.selected = std::move(preferred_around);
  } else {
    out.selected = std::move(around);
  }
  return out;
}

}  // namespace netqos::core
