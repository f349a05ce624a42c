#include "enforce/pod_veths.h"

#include <algorithm>

#include "enforce/pod_addresses.h"

namespace netqos::enforce {
namespace {

// Whether the first `length` bits of a and b agree.
bool SamePrefix(const PodAddress& a, const PodAddress& b, int length) {
  const int bytes = length / 8;
  if (!std::equal(a.begin(), a.begin() + bytes, b.begin())) return false;
  const int bits = length % 8;
  if (bits == 0) return true;
  const auto mask = static_cast<uint8_t>(0xff << (8 - bits));
  return (a[bytes] & mask) == (b[bytes] & mask);
}

std::string Names(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

std::optional<NodeRoute> BestRoute(const std::vector<NodeRoute>& routes,
                                   const PodAddress& address) {
  std::optional<NodeRoute> best;
  for (const auto& r : routes) {
    if (r.length < 0 || r.length > 128 || !SamePrefix(r.prefix, address, r.length)) continue;
    if (!best || r.length > best->length) best = r;
  }
  return best;
}

PodVethPlan PlanPodVeths(const std::vector<pods::PodInfo>& pods,
                         const std::map<uint64_t, DesiredContainer>& classes,
                         const std::vector<VethLink>& veths, const std::vector<NodeRoute>& routes,
                         const std::vector<core::NicId>& enforced) {
  PodVethPlan plan;
  std::map<int, const VethLink*> by_ifindex;
  for (const auto& v : veths) by_ifindex[v.ifindex] = &v;
  const ClassesByPod by_pod = GroupByPod(classes);

  // Each pod's veth, before the veths claimed twice are taken out.
  std::map<int, std::vector<const pods::PodInfo*>> claims;
  std::map<std::string, int> chosen_veth;
  for (const auto& pod : pods) {
    if (pod.host_network || pod.ips.empty()) continue;
    if (pod.phase == "Succeeded" || pod.phase == "Failed") continue;
    if (by_pod.count(pod.uid) == 0) continue;
    std::vector<PodAddress> addresses;
    for (const auto& text : pod.ips) {
      if (auto a = ParsePodAddress(text)) addresses.push_back(*a);
    }
    if (addresses.empty()) continue;
    ++plan.unplaced;  // until a veth is its alone (below)
    const std::string name = pod.ns + "/" + pod.name;

    // The CNI's route: what the node itself sends to the pod's address leaves by the veth.
    std::set<int> routed;
    for (const auto& a : addresses) {
      auto r = BestRoute(routes, a);
      if (r && by_ifindex.count(r->ifindex) != 0) routed.insert(r->ifindex);
    }
    std::set<int> candidates = routed;
    if (candidates.empty()) {
      // No route names a veth (a bridge carries the pod's subnet): the veth whose other end
      // holds every address of the pod.
      for (const auto& v : veths) {
        const bool all = std::all_of(addresses.begin(), addresses.end(), [&](const PodAddress& a) {
          return std::find(v.peer_addresses.begin(), v.peer_addresses.end(), a) !=
                 v.peer_addresses.end();
        });
        if (all) candidates.insert(v.ifindex);
      }
    }
    if (candidates.empty()) continue;
    if (candidates.size() > 1) {
      std::vector<std::string> names;
      for (int i : candidates) names.push_back(by_ifindex.at(i)->name);
      plan.problems.push_back({ProblemKind::kPod, name,
                               name + ": " + std::to_string(candidates.size()) + " veths (" +
                                   Names(names) +
                                   ") lead to its addresses; it is classified by its sockets and "
                                   "addresses only, not at a veth"});
      continue;
    }
    claims[*candidates.begin()].push_back(&pod);
    chosen_veth[pod.uid] = *candidates.begin();
  }

  for (const auto& [ifindex, claimants] : claims) {
    if (claimants.size() > 1) {
      std::vector<std::string> names;
      for (const auto* p : claimants) names.push_back(p->ns + "/" + p->name);
      plan.problems.push_back({ProblemKind::kVeth, by_ifindex.at(ifindex)->name,
                               "veth " + by_ifindex.at(ifindex)->name +
                                   " leads to the addresses of pods " + Names(names) +
                                   "; none of them is classified at it"});
      continue;
    }
    const pods::PodInfo& pod = *claimants.front();
    --plan.unplaced;
    const auto& containers = by_pod.at(pod.uid);
    const RoutedContainer routed = ChooseRoutedContainer(containers);
    PodVeth pv;
    pv.pod_uid = pod.uid;
    pv.pod_name = pod.ns + "/" + pod.name;
    pv.cgroup_id = routed.chosen->first;
    const DesiredContainer& d = routed.chosen->second;
    for (const auto& nic : *d.leaf_nics) {
      if (std::find(enforced.begin(), enforced.end(), nic) != enforced.end()) {
        pv.home = nic;
        break;
      }
    }
    if (!pv.home && !enforced.empty()) pv.home = enforced.front();
    plan.veths[ifindex] = pv;
    for (const auto& [name, entry] : containers) plan.container_veth[entry->first] = ifindex;
  }
  return plan;
}

bool SlotAllocator::Adopt(uint64_t cgroup_id, uint16_t slot) {
  if (slot == 0 || slot >= kCarrierSlots || used_.count(slot) != 0 ||
      by_cgroup_.count(cgroup_id) != 0) {
    return false;
  }
  used_.insert(slot);
  by_cgroup_[cgroup_id] = slot;
  return true;
}

uint16_t SlotAllocator::Acquire(uint64_t cgroup_id) {
  if (auto it = by_cgroup_.find(cgroup_id); it != by_cgroup_.end()) return it->second;
  if (used_.size() >= kCarrierSlots - 1) return 0;
  // Round-robin from the last one given: a freed slot is not reused at once, so a packet still
  // in flight with it never lands in the next container's class.
  auto after = [](uint16_t s) {
    return static_cast<uint16_t>(s + 1u >= kCarrierSlots ? 1u : s + 1u);
  };
  while (used_.count(next_) != 0) next_ = after(next_);
  const uint16_t slot = next_;
  next_ = after(next_);
  used_.insert(slot);
  by_cgroup_[cgroup_id] = slot;
  return slot;
}

std::vector<uint16_t> SlotAllocator::ReleaseExcept(const std::set<uint64_t>& keep) {
  std::vector<uint16_t> freed;
  for (auto it = by_cgroup_.begin(); it != by_cgroup_.end();) {
    if (keep.count(it->first) != 0) {
      ++it;
      continue;
    }
    freed.push_back(it->second);
    used_.erase(it->second);
    it = by_cgroup_.erase(it);
  }
  return freed;
}

}  // namespace netqos::enforce
