// Puts netqos's shaping on one NIC, in the NIC's own network namespace: on egress, by the NIC's
// shaping mode (shaping/shaping_mode.h), either the HTB tree at the NIC's root or (EDT) fq under
// each TX queue of its mq root, with the NIC's egress program in the matching mode; an IFB
// carrying the ingress tree, the tc-ingress classifier and the act_mirred filter that redirect to
// it (both modes); and (optionally) net.ipv4.ip_forward_update_priority=0. What it installed, and
// the root qdisc layout it found, go to the installed-links record (installed_links.h) so
// `netqosd --uninstall` can take it all away and give the NIC back its qdiscs.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bpf/nic_attach.h"
#include "common/status.h"
#include "core/types.h"
#include "enforce/kernel/installed_links.h"
#include "enforce/link_shaper.h"
#include "shaping/htb_plan.h"
#include "shaping/netlink/qdisc_probe.h"
#include "shaping/netlink/queue_qdiscs.h"
#include "shaping/shaping_mode.h"

namespace netqos::enforce {

struct KernelLinkShaperOptions {
  std::string pin_dir;      // where the dataplane's maps are pinned (the ingress program uses them)
  std::string record_path;  // the installed-links record
  bool replace_root_qdisc = false;
  bool keep_forwarded_priority = true;
  // Received packets of no class go through the IFB too (the unclassified level's ceiling is
  // below the link); otherwise only those of classes flagged kClassIngressShaped do.
  bool redirect_unclassified = false;
  // --shaping-mode; kHtb unless told (tests that build a shaper directly get today's HTB).
  shaping::ShapingMode mode = shaping::ShapingMode::kHtb;
  // Whether the kernel has sch_fq (shaping::ProbeQdiscKind("fq")); consulted for auto and edt.
  shaping::QdiscSupport fq;
  // What the operator asked for that only htb does (shaping::HtbOnlyFeatures): auto picks htb
  // for it, and an edt NIC reports it as inactive.
  std::vector<std::string> htb_only;
  // The DSCP of every sent packet no class marks (--dscp-default); nullopt: left as sent.
  std::optional<uint8_t> unmarked_dscp;
};

class KernelLinkShaper : public LinkShaper {
 public:
  explicit KernelLinkShaper(KernelLinkShaperOptions options) : options_(std::move(options)) {}
  Result<shaping::ModeChoice> Apply(const core::Nic& nic, const shaping::HtbPlan& egress,
                                    const shaping::HtbPlan& ingress) override;

  Status Patch(const core::Nic& nic, const shaping::PlanDelta& egress,
               const shaping::PlanDelta& ingress) override;

 private:
  // The NIC programs for this configuration, loaded (and verified by the kernel) the first time
  // and kept: a resync re-applies every NIC, and loading them each time cost more CPU than the
  // rest of the apply.
  Result<const bpf::NicPrograms*> ProgramsFor(bool edt);
  Status Record(const core::Nic& nic, int forward_priority_before,
                const std::vector<std::string>& ifbs, const std::string& mode,
                const shaping::QueueLayout& before);
  KernelLinkShaperOptions options_;
  std::map<bool, std::unique_ptr<bpf::NicPrograms>> programs_;  // by edt
};

// Removes, for each recorded link (and each extra one), the HTB trees or the EDT root, the IFB
// and both classifiers (and the clsact qdisc when nothing else uses it), puts back the mq root and
// its queues' qdisc kinds the link had before, restores the sysctl, and deletes the record. Links
// or namespaces that are gone are skipped; every other failure is returned (joined) after trying
// the rest.
Status RemoveInstalledLinks(const std::string& record_path,
                            const std::vector<InstalledLink>& extra);

}  // namespace netqos::enforce
