// Puts netqos's shaping on one NIC, in the NIC's own network namespace: the egress HTB tree on the
// NIC, an IFB carrying the ingress tree, the tc-ingress classifier and the act_mirred filter that
// redirect to it, and (optionally) net.ipv4.ip_forward_update_priority=0 so routed pod traffic
// keeps skb->priority.
// What it installed is recorded in a file so `netqosd --uninstall` can take it all away.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "core/types.h"
#include "shaping/htb_plan.h"

namespace netqos::enforce {

class LinkShaper {
 public:
  virtual ~LinkShaper() = default;
  virtual Status Apply(const core::Nic& nic, const shaping::HtbPlan& egress,
                       const shaping::HtbPlan& ingress) = 0;
};

// "nqifb<ifindex>": unique per namespace and within IFNAMSIZ.
std::string IfbNameFor(int ifindex);

struct InstalledLink {
  std::string netns;       // "" = host
  std::string netns_path;  // "" = host
  std::string name;
  int forward_priority_before = -1;  // sysctl value before netqos set it; -1 = untouched
  // IFBs created for this link. A NIC deleted and re-created gets a new ifindex and so a new
  // IFB; the earlier ones are removed when it is shaped again, or by --uninstall.
  std::vector<std::string> ifbs;
};

// The record of installed links (JSON). A missing file is an empty list.
Result<std::vector<InstalledLink>> LoadInstalledLinks(const std::string& path);
Status SaveInstalledLinks(const std::string& path, const std::vector<InstalledLink>& links);

struct KernelLinkShaperOptions {
  std::string pin_dir;      // where the dataplane's maps are pinned (the ingress program uses them)
  std::string record_path;  // the installed-links record
  bool replace_root_qdisc = false;
  bool keep_forwarded_priority = true;
  // Received packets of no class go through the IFB too (the unclassified level's ceiling is
  // below the link); otherwise only those of classes flagged kClassIngressShaped do.
  bool redirect_unclassified = false;
};

class KernelLinkShaper : public LinkShaper {
 public:
  explicit KernelLinkShaper(KernelLinkShaperOptions options) : options_(std::move(options)) {}
  Status Apply(const core::Nic& nic, const shaping::HtbPlan& egress,
               const shaping::HtbPlan& ingress) override;

 private:
  Status Record(const core::Nic& nic, int forward_priority_before,
                const std::vector<std::string>& ifbs);
  KernelLinkShaperOptions options_;
};

// Removes, for each recorded link (and each extra one), the HTB trees, the IFB and the ingress
// classifier, restores the sysctl, and deletes the record. Links or namespaces that are gone are
// skipped; every other failure is returned (joined) after trying the rest.
Status RemoveInstalledLinks(const std::string& record_path, const std::vector<InstalledLink>& extra);

}  // namespace netqos::enforce
