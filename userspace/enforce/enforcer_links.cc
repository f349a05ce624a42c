// Enforcer::ApplyLink: one enforced NIC's egress and ingress HTB trees, built from the leaves the
// last pass (and the containers added since) want, and applied when they differ from what was
// applied last, or on the periodic resync, which repairs classes changed behind netqos's back.
// Between resyncs a change that only adds or changes classes (a new container's leaf) is sent
// alone, without reading the trees back (PatchLink).
#include <spdlog/spdlog.h>

#include "enforce/enforcer.h"
#include "shaping/plan_delta.h"

namespace netqos::enforce {
namespace {

bool SamePlan(const shaping::HtbPlan& a, const shaping::HtbPlan& b) {
  return a.nic == b.nic && a.link_mbps == b.link_mbps && a.qdisc_handle == b.qdisc_handle &&
         a.default_minor == b.default_minor && a.shapes == b.shapes && a.classes == b.classes;
}

}  // namespace

bool Enforcer::ApplyLink(const EnforcedLink& link, bool force, std::optional<LinkLeaves>* grown) {
  const core::Nic& nic = own_.nic_of.at(link.id);
  shaping::LevelCeilings egress_ceilings, ingress_ceilings;
  if (options_.shaping.low_priority_floor_percent) {
    // A NIC the allocation state does not know (not managed) has no group: held to the floor of
    // nothing would stop its reclaimed traffic, so it keeps the configured ceiling.
    if (auto g = own_.groups.find(link.id); g != own_.groups.end()) {
      const auto reclaimed = static_cast<size_t>(shaping::QosLevel::kReclaimed);
      egress_ceilings[reclaimed] = g->second.egress_mbps;
      ingress_ceilings[reclaimed] = g->second.ingress_mbps;
    }
  }
  auto eplan = shaping::BuildHtbPlan(link.id.Identifier(), options_.shaping, link.link_mbps,
                                     own_.egress_leaves[link.id], egress_ceilings,
                                     own_.egress_groups[link.id]);
  auto iplan = shaping::BuildHtbPlan(IfbNameFor(nic.ifindex), options_.shaping, link.link_mbps,
                                     own_.ingress_leaves[link.id], ingress_ceilings,
                                     own_.ingress_groups[link.id]);
  if (!eplan.ok() || !iplan.ok()) {
    problems_.Report(ProblemKind::kNic, link.id.Identifier(),
                     (!eplan.ok() ? eplan.status() : iplan.status()).message());
    return false;
  }
  for (const auto& o : eplan->overcommit)
    problems_.Report(ProblemKind::kNic, link.id.Identifier() + ":overcommit", o);
  Applied& a = own_.applied[link.id];
  if (!force && a.ok && a.ifindex == nic.ifindex) {
    if (SamePlan(a.egress, *eplan) && SamePlan(a.ingress, *iplan)) return true;
    if (PatchLink(nic, a, *eplan, *iplan, grown)) return true;
  }
  auto mode = ports_.shaper->Apply(nic, *eplan, *iplan);
  if (!mode.ok()) {
    problems_.Report(ProblemKind::kNic, link.id.Identifier(), mode.status().message());
    KernelFailed(KernelTarget::kShaping);
    a.ok = false;
    return false;
  }
  // netqosctl status shows the mode and why: an idle NIC says its root is its own.
  if (!eplan->shapes) mode->reason += "; nothing capped: the NIC's own root";
  if (a.egress.nic.empty() || a.egress.shapes != eplan->shapes ||
      a.ingress.shapes != iplan->shapes) {
    // Once per change that took: an idle NIC keeps its own root qdisc; its first cap brings the
    // tree, and its last one takes it away again.
    spdlog::info("shaping trees nic={} egress={} ingress={}", link.id.Identifier(),
                 eplan->shapes ? "netqos" : "own root (nothing capped)",
                 iplan->shapes ? "netqos" : "none (nothing capped)");
  }
  if (!a.mode || a.mode->mode != mode->mode) {
    spdlog::info("shaping mode nic={} mode={} reason=\"{}\"", link.id.Identifier(),
                 shaping::ShapingModeName(mode->mode), mode->reason);
  }
  a = Applied{nic.ifindex, std::move(*eplan), std::move(*iplan), true, std::move(*mode)};
  return true;
}

bool Enforcer::PatchLink(const core::Nic& nic, Applied& a, shaping::HtbPlan& eplan,
                         shaping::HtbPlan& iplan, std::optional<LinkLeaves>* grown) {
  auto egress = shaping::DiffPlans(a.egress, eplan);
  auto ingress = shaping::DiffPlans(a.ingress, iplan);
  if (!egress || !ingress) return false;  // a class goes or moves: only a whole apply can do it
  // In EDT mode the NIC has no HTB tree on egress (see LinkShaper::Apply).
  if (a.mode && a.mode->mode == shaping::ShapingMode::kEdt) *egress = {};
  if (netqos::Status st = ports_.shaper->Patch(nic, *egress, *ingress); !st.ok()) {
    spdlog::info("shaping patch failed, applying the whole plan nic={} error=\"{}\"",
                 nic.id.Identifier(), st.message());
    return false;
  }
  a.egress = std::move(eplan);
  a.ingress = std::move(iplan);
  if (grown != nullptr) {
    // A patch may change a level class too (the reclaimed level's ceiling follows its group).
    *grown = LinkLeaves{nic,
                        IfbNameFor(nic.ifindex),
                        LeafHandles(egress->added),
                        LeafHandles(ingress->added),
                        EgressLevels(a),
                        LevelClasses(a.ingress)};
  }
  return true;
}

LinkLeaves Enforcer::LeavesOf(const core::Nic& nic, const Applied& a) const {
  // In EDT mode the NIC has no egress leaves: fq under its queues holds the packets.
  const bool edt = a.mode && a.mode->mode == shaping::ShapingMode::kEdt;
  return {nic,
          IfbNameFor(nic.ifindex),
          edt ? std::map<uint64_t, uint32_t>{} : LeafHandles(a.egress),
          LeafHandles(a.ingress),
          EgressLevels(a),
          LevelClasses(a.ingress)};
}

std::vector<LevelClass> Enforcer::EgressLevels(const Applied& a) {
  const bool edt = a.mode && a.mode->mode == shaping::ShapingMode::kEdt;
  return edt ? std::vector<LevelClass>{} : LevelClasses(a.egress);
}

std::set<core::NicId> Enforcer::EdtNics() const {
  std::set<core::NicId> edt_nics;
  for (const auto& link : own_.links) {
    auto it = own_.applied.find(link.id);
    if (it != own_.applied.end() && it->second.mode &&
        it->second.mode->mode == shaping::ShapingMode::kEdt) {
      edt_nics.insert(link.id);
    }
  }
  return edt_nics;
}

void Enforcer::SyncEdtAdded(
    const std::map<core::NicId, std::vector<shaping::ContainerAllocation>>& added) {
  if (ports_.edt == nullptr) return;
  if (!own_.edt_written) {
    SyncEdt();
    return;
  }
  // The new leaves alone, against what the last sync left: no listing of the whole map on the
  // new-container path. A leaf a new container shares with its pod's others has its entry
  // already, at the same rate, and is not rewritten (that would restart its pacing clock).
  for (const auto& [handle, rate] : PlanEdtRates(added, EdtNics())) {
    auto it = own_.edt_written->find(handle);
    if (it != own_.edt_written->end() && it->second == rate) continue;
    if (netqos::Status st = ports_.edt->Set(handle, rate); !st.ok()) {
      problems_.Report(ProblemKind::kEdtMap, "", st.message());
      KernelFailed(KernelTarget::kEdtMap);
      own_.edt_written.reset();  // the next sync lists the map again
      continue;
    }
    (*own_.edt_written)[handle] = rate;
  }
}

void Enforcer::SyncEdt() {
  if (ports_.edt == nullptr) return;
  const std::set<core::NicId> edt_nics = EdtNics();
  // Logged when the count changes, not on every pass.
  const size_t unapplied = BurstsNotApplied(own_.egress_leaves, edt_nics);
  if (unapplied != own_.edt_bursts_unapplied && unapplied != 0) {
    spdlog::info(
        "burst not applied to EDT egress pacing leaves={} (EDT carries at most 2 ms of idle time "
        "over at the leaf's rate; the ingress leaves on the IFB have the burst)",
        unapplied);
  }
  own_.edt_bursts_unapplied = unapplied;
  auto current = ports_.edt->List();
  if (!current.ok()) {
    own_.edt_written.reset();
    problems_.Report(ProblemKind::kEdtMap, "", current.status().message());
    KernelFailed(KernelTarget::kEdtMap);
    return;
  }
  // The aggregates first: a leaf that starts naming one finds its budget there.
  const auto want = PlanEdtRates(own_.egress_leaves, edt_nics, own_.egress_groups);
  const EdtSyncReport r = SyncEdtRates(*ports_.edt, *current, want);
  if (!r.errors.empty()) KernelFailed(KernelTarget::kEdtMap);
  // What the map holds now, for SyncEdtAdded; unknown after a failed write.
  if (r.errors.empty()) {
    own_.edt_written = want;
  } else {
    own_.edt_written.reset();
  }
  for (const auto& e : r.errors) problems_.Report(ProblemKind::kEdtMap, "", e.message());
  if (r.set > 0 || r.cleared > 0) {
    spdlog::info("edt rates synced set={} cleared={} entries={}", r.set, r.cleared, want.size());
  }
  if (ports_.edt_aggregates == nullptr) return;
  auto members = ports_.edt_aggregates->List();
  if (!members.ok()) {
    problems_.Report(ProblemKind::kAggregateMap, "", members.status().message());
    return;
  }
  const auto placed = PlanEdtAggregates(own_.egress_leaves, edt_nics);
  const EdtSyncReport a = SyncEdtRates(*ports_.edt_aggregates, *members, placed);
  for (const auto& e : a.errors) problems_.Report(ProblemKind::kAggregateMap, "", e.message());
  if (a.set > 0 || a.cleared > 0) {
    spdlog::info("edt aggregates synced set={} cleared={} entries={}", a.set, a.cleared,
                 placed.size());
  }
}

}  // namespace netqos::enforce
