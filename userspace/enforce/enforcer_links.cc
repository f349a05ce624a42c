// Enforcer::ApplyLink: one enforced NIC's egress and ingress HTB trees, built from the leaves the
// last pass (and the containers added since) want, and applied when they differ from what was
// applied last, or on the periodic resync, which repairs classes changed behind netqos's back.
#include "enforce/enforcer.h"

namespace netqos::enforce {
namespace {

bool SamePlan(const shaping::HtbPlan& a, const shaping::HtbPlan& b) {
  return a.nic == b.nic && a.link_mbps == b.link_mbps && a.qdisc_handle == b.qdisc_handle &&
         a.default_minor == b.default_minor && a.classes == b.classes;
}

}  // namespace

std::string Enforcer::NicKey(const core::NicId& id) { return "nic:" + id.Identifier(); }

bool Enforcer::ApplyLink(const EnforcedLink& link, bool force) {
  const core::Nic& nic = nic_of_.at(link.id);
  auto eplan = shaping::BuildHtbPlan(link.id.Identifier(), options_.shaping, link.link_mbps,
                                     egress_leaves_[link.id]);
  auto iplan = shaping::BuildHtbPlan(IfbNameFor(nic.ifindex), options_.shaping, link.link_mbps,
                                     ingress_leaves_[link.id]);
  if (!eplan.ok() || !iplan.ok()) {
    problems_.Report(NicKey(link.id), (!eplan.ok() ? eplan.status() : iplan.status()).message());
    return false;
  }
  for (const auto& o : eplan->overcommit) problems_.Report(NicKey(link.id) + ":overcommit", o);
  Applied& a = applied_[link.id];
  if (!force && a.ok && a.ifindex == nic.ifindex && SamePlan(a.egress, *eplan) &&
      SamePlan(a.ingress, *iplan)) {
    return true;
  }
  if (auto st = ports_.shaper->Apply(nic, *eplan, *iplan); !st.ok()) {
    problems_.Report(NicKey(link.id), st.message());
    a.ok = false;
    return false;
  }
  a = Applied{nic.ifindex, std::move(*eplan), std::move(*iplan), true};
  return true;
}

LinkLeaves Enforcer::LeavesOf(const core::Nic& nic, const Applied& a) const {
  return {nic, IfbNameFor(nic.ifindex), LeafHandles(a.egress), LeafHandles(a.ingress)};
}

}  // namespace netqos::enforce
