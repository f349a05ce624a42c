#include "enforce/edt_rates.h"

#include <algorithm>

namespace netqos::enforce {

std::map<uint64_t, uint64_t> PlanEdtRates(
    const std::map<core::NicId, std::vector<shaping::ContainerAllocation>>& egress_leaves,
    const std::set<core::NicId>& edt_nics,
    const std::map<core::NicId, std::vector<shaping::GroupClass>>& egress_groups) {
  std::map<uint64_t, uint64_t> want;
  for (const auto& [nic, groups] : egress_groups) {
    if (edt_nics.count(nic) == 0) continue;
    for (const auto& g : groups) {
      // The EDT map is node-wide: an aggregate on several EDT NICs keeps the lowest of its shares.
      const uint64_t handle = shaping::MakeHandle(shaping::kQdiscMajor, g.minor);
      const uint64_t bytes = shaping::BitsToBytes(g.ceil_bps);
      auto [it, added] = want.emplace(handle, bytes);
      if (!added) it->second = std::min(it->second, bytes);
    }
  }
  for (const auto& [nic, leaves] : egress_leaves) {
    if (edt_nics.count(nic) == 0) continue;
    for (const auto& leaf : leaves) {
      // A leaf only there for its namespace's aggregate has no rate of its own to pace at: its
      // egress is not paced (EDT holds no aggregate yet; the IFB's HTB holds its ingress).
      if (leaf.aggregate_member) continue;
      // Paced at the leaf's ceiling when it has one of its own (a cap), else at its guarantee.
      const uint64_t bps = leaf.borrow ? leaf.rate_bps : std::max(leaf.rate_bps, leaf.ceil_bps);
      if (bps > 0) {
        want[shaping::MakeHandle(shaping::kQdiscMajor, leaf.minor)] = shaping::BitsToBytes(bps);
      }
    }
  }
  return want;
}

std::map<uint64_t, uint64_t> PlanEdtAggregates(
    const std::map<core::NicId, std::vector<shaping::ContainerAllocation>>& egress_leaves,
    const std::set<core::NicId>& edt_nics) {
  std::map<uint64_t, uint64_t> want;
  for (const auto& [nic, leaves] : egress_leaves) {
    if (edt_nics.count(nic) == 0) continue;
    for (const auto& leaf : leaves) {
      if (leaf.group_minor == 0) continue;
      want[shaping::MakeHandle(shaping::kQdiscMajor, leaf.minor)] =
          shaping::MakeHandle(shaping::kQdiscMajor, leaf.group_minor);
    }
  }
  return want;
}

size_t BurstsNotApplied(
    const std::map<core::NicId, std::vector<shaping::ContainerAllocation>>& egress_leaves,
    const std::set<core::NicId>& edt_nics) {
  size_t n = 0;
  for (const auto& [nic, leaves] : egress_leaves) {
    if (edt_nics.count(nic) == 0) continue;
    for (const auto& leaf : leaves) n += leaf.burst_bytes != 0 ? 1 : 0;
  }
  return n;
}

EdtSyncReport SyncEdtRates(EdtRateTable& table, const std::map<uint64_t, uint64_t>& current,
                           const std::map<uint64_t, uint64_t>& want) {
  EdtSyncReport r;
  for (const auto& [id, rate] : want) {
    auto it = current.find(id);
    if (it != current.end() && it->second == rate) continue;
    if (Status st = table.Set(id, rate); !st.ok()) {
      r.errors.push_back(st);
    } else {
      ++r.set;
    }
  }
  for (const auto& [id, rate] : current) {
    if (want.count(id) != 0) continue;
    if (Status st = table.Clear(id); !st.ok()) {
      r.errors.push_back(st);
    } else {
      ++r.cleared;
    }
  }
  return r;
}

}  // namespace netqos::enforce
