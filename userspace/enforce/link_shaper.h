// The port through which the enforcer shapes one NIC: on egress, by the NIC's shaping mode
// (shaping/shaping_mode.h), either an HTB tree at the NIC's root or (EDT) fq under each TX queue
// with per-container rates in a map; on ingress an HTB tree on the NIC's IFB. The kernel adapter
// is enforce/kernel/kernel_link_shaper.h; unit tests use a fake.
#pragma once

#include <string>

#include "common/status.h"
#include "core/types.h"
#include "shaping/htb_plan.h"
#include "shaping/plan_delta.h"
#include "shaping/shaping_mode.h"

namespace netqos::enforce {

class LinkShaper {
 public:
  virtual ~LinkShaper() = default;
  // The mode the NIC's egress runs in, and why. In EDT mode the egress plan's container leaves
  // are not installed (their rates go to the EDT map, see edt_rates.h); its ingress plan is.
  virtual Result<shaping::ModeChoice> Apply(const core::Nic& nic, const shaping::HtbPlan& egress,
                                            const shaping::HtbPlan& ingress) = 0;
  // Only what changed since the last Apply or Patch that succeeded on this NIC (DiffPlans): the
  // reaction to a new container, without reading the NIC's trees back, re-attaching its programs
  // or re-recording it. The egress delta is empty in EDT mode. On an error the caller applies the
  // whole plans, which finds and repairs whatever the patch left.
  virtual Status Patch(const core::Nic& nic, const shaping::PlanDelta& egress,
                       const shaping::PlanDelta& ingress) = 0;
};

// The IFB that carries a NIC's ingress tree: "nqifb<ifindex>", unique per namespace and within
// IFNAMSIZ.
inline constexpr char kIfbPrefix[] = "nqifb";
std::string IfbNameFor(int ifindex);

}  // namespace netqos::enforce
