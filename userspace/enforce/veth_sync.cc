#include "enforce/veth_sync.h"

namespace netqos::enforce {
namespace {

std::string VethName(const std::vector<VethLink>& veths, int ifindex) {
  for (const auto& v : veths) {
    if (v.ifindex == ifindex) return v.name;
  }
  return "ifindex " + std::to_string(ifindex);
}

}  // namespace

void VethSync::Adopt(const std::map<uint64_t, ClassEntry>& current) {
  if (!enabled()) return;
  for (const auto& [id, e] : current) {
    if (e.slot != 0) slots_.Adopt(id, e.slot);
    if ((e.flags & kClassVeth) != 0) marks_[id] = e.slot;
  }
  // The veths a previous netqosd attached: kept by the first Sync if their pod is still there,
  // removed otherwise. Their redirect is re-checked then (home -1 matches no NIC).
  if (auto veths = ports_.table->ListVeths(); veths.ok()) {
    for (const auto& [ifindex, cgroup_id] : *veths) attached_[ifindex] = {cgroup_id, -1};
  }
  if (auto carriers = ports_.table->ListCarriers(); carriers.ok()) carriers_ = std::move(*carriers);
}

void VethSync::ApplyMarks(std::map<uint64_t, DesiredContainer>& classes) const {
  for (auto& [id, d] : classes) {
    auto m = marks_.find(id);
    if (m == marks_.end()) continue;
    d.entry.slot = m->second;
    d.entry.flags |= kClassVeth;
  }
}

VethSyncResult VethSync::Sync(const std::vector<pods::PodInfo>& pods,
                              const std::map<uint64_t, DesiredContainer>& classes,
                              const std::vector<core::NicId>& enforced,
                              const std::map<core::NicId, int>& home_ifindex,
                              ClassTable& class_table, bool full) {
  VethSyncResult r;
  if (!enabled()) return r;
  // Off: no veth is any pod's, so whatever an earlier run placed goes.
  auto veths = ports_.source ? ports_.source->Veths() : std::vector<VethLink>{};
  auto routes = ports_.source ? ports_.source->Routes() : std::vector<NodeRoute>{};
  if (!veths.ok() || !routes.ok()) {
    // Nothing changes: the pods keep the veths, slots and marks they had.
    const Status& st = !veths.ok() ? veths.status() : routes.status();
    r.problems.push_back(
        {ProblemKind::kVeths, "",
         "pod veths not read (" + st.message() + "); pods keep the classification they had"});
    r.veths = attached_.size();
    return r;
  }
  PodVethPlan plan = PlanPodVeths(pods, classes, *veths, *routes, enforced);
  r.problems = std::move(plan.problems);
  unplaced_ = plan.unplaced;

  // 1. Carrier slots, in the map before any class entry or veth names them.
  std::set<uint64_t> keep;
  for (const auto& [id, ifindex] : plan.container_veth) keep.insert(id);
  std::map<uint64_t, uint16_t> slot_of;
  for (uint64_t id : keep) {
    const uint16_t slot = slots_.Acquire(id);
    if (slot == 0) {
      r.problems.push_back({ProblemKind::kCarrierSlots, "",
                            "all " + std::to_string(kCarrierSlots - 1) +
                                " carrier slots are taken; containers beyond them are classified "
                                "by their pod's at the veth"});
    }
    slot_of[id] = slot;
  }
  const std::vector<uint16_t> freed = slots_.ReleaseExcept(keep);
  if (full) {
    if (auto kernel = ports_.table->ListCarriers(); kernel.ok()) carriers_ = std::move(*kernel);
  }
  for (const auto& [id, slot] : slot_of) {
    if (slot == 0) continue;
    auto c = carriers_.find(slot);
    if (c != carriers_.end() && c->second == id) continue;
    if (Status st = ports_.table->SetCarrier(slot, id); !st.ok()) {
      r.problems.push_back({ProblemKind::kCarrierSlots, "", st.message()});
      continue;
    }
    carriers_[slot] = id;
  }

  // 2. The veths: programs (with the redirect) first, then the map entry the programs read.
  if (full) {
    if (auto kernel = ports_.table->ListVeths(); kernel.ok()) {
      for (const auto& [ifindex, cgroup_id] : *kernel) {
        attached_.try_emplace(ifindex, Attached{cgroup_id, -1});
      }
    }
  }
  std::set<int> ready;
  for (const auto& [ifindex, pv] : plan.veths) {
    int home = 0;
    if (pv.home) {
      if (auto h = home_ifindex.find(*pv.home); h != home_ifindex.end()) home = h->second;
    }
    auto a = attached_.find(ifindex);
    const bool placed = a != attached_.end() && a->second.home == home;
    const std::string veth = VethName(*veths, ifindex);
    if (full || !placed) {
      if (Status st = ports_.attacher->Attach(ifindex, home); !st.ok()) {
        r.problems.push_back(
            {ProblemKind::kVeth, veth,
             pv.pod_name + ": " + st.message() + "; classified by its sockets and addresses only"});
        continue;
      }
    }
    if (full || a == attached_.end() || a->second.cgroup_id != pv.cgroup_id) {
      if (Status st = ports_.table->SetVeth(ifindex, pv.cgroup_id); !st.ok()) {
        r.problems.push_back({ProblemKind::kVeth, veth, pv.pod_name + ": " + st.message()});
        continue;
      }
    }
    attached_[ifindex] = {pv.cgroup_id, home};
    ready.insert(ifindex);
  }

  // 3. The class entries: marked where the veth is in place, unmarked where it no longer is.
  std::map<uint64_t, uint16_t> marks;
  for (const auto& [id, ifindex] : plan.container_veth) {
    if (ready.count(ifindex) != 0) marks[id] = slot_of[id];
  }
  for (const auto& [id, d] : classes) {
    ClassEntry e = d.entry;
    auto m = marks.find(id);
    e.slot = m != marks.end() ? m->second : 0;
    e.flags = m != marks.end() ? (e.flags | kClassVeth) : (e.flags & ~kClassVeth);
    if (e == d.entry) continue;
    if (Status st = class_table.Set(id, e); !st.ok()) {
      r.problems.push_back({ProblemKind::kCgroup, std::to_string(id), st.message()});
      if (m != marks.end()) marks.erase(m);
      continue;
    }
    r.marked[id] = e;
  }
  marks_ = std::move(marks);

  // 4. What no pod needs any more: veths of pods gone (their programs go with the veth anyway),
  // then the slots no entry names.
  for (auto it = attached_.begin(); it != attached_.end();) {
    if (plan.veths.count(it->first) != 0) {
      ++it;
      continue;
    }
    Status st = ports_.attacher->Detach(it->first);
    if (st.ok()) st = ports_.table->ClearVeth(it->first);
    if (!st.ok()) {
      r.problems.push_back({ProblemKind::kVeth, std::to_string(it->first), st.message()});
      ++it;
      continue;
    }
    it = attached_.erase(it);
  }
  for (uint16_t slot : freed) {
    if (ports_.table->ClearCarrier(slot).ok()) carriers_.erase(slot);
  }
  for (auto it = carriers_.begin(); it != carriers_.end();) {
    const auto& owned = slots_.slots();
    auto o = owned.find(it->second);
    if (o != owned.end() && o->second == it->first) {
      ++it;
      continue;
    }
    if (ports_.table->ClearCarrier(it->first).ok()) {
      it = carriers_.erase(it);
    } else {
      ++it;
    }
  }
  r.veths = ready.size();
  return r;
}

}  // namespace netqos::enforce
