// Enforcer::SyncVeths: the whole pass's and the new-container path's call into VethSync, with the
// enforced NICs a pod's veth can redirect to.
#include "enforce/enforcer.h"

namespace netqos::enforce {

VethSyncResult Enforcer::SyncVeths(const std::map<uint64_t, DesiredContainer>& classes, bool full) {
  if (!own_.veths.enabled()) return {};
  // The enforced NICs of netqosd's own namespace, whose IFBs a veth there can redirect to.
  std::vector<core::NicId> enforced;
  std::map<core::NicId, int> home_ifindex;
  for (const auto& link : own_.links) {
    const core::Nic& nic = own_.nic_of.at(link.id);
    if (!link.id.netns.empty() || nic.ifindex <= 0) continue;
    enforced.push_back(link.id);
    // Only a NIC whose receive side is shaped has an IFB (an idle one keeps none): a veth homed
    // at another gets no redirect, and gets one when the NIC's first ingress cap brings the IFB.
    // What the last successful apply left counts (a failed pass keeps the IFB it had).
    auto a = own_.applied.find(link.id);
    if (a == own_.applied.end() || a->second.ingress.shapes) home_ifindex[link.id] = nic.ifindex;
  }
  VethSyncResult r = own_.veths.Sync(pods(), classes, enforced, home_ifindex, *ports_.table, full);
  for (const auto& p : r.problems) problems_.Report(p);
  return r;
}

void Enforcer::SyncVethsBetweenPasses() {
  // The classes change on this thread only: read without the board's lock, written under it. Its
  // problems are reported like AddContainers' (the next whole pass clears what is gone).
  const VethSyncResult veths = SyncVeths(classes(), false);
  board_.Publish([&](PublishedState& published) {
    for (const auto& [id, e] : veths.marked) published.status.classes.at(id).entry = e;
    published.status.pod_veths = veths.veths;
  });
}

}  // namespace netqos::enforce
