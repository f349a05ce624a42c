// Installs and reconciles netqos's HTB hierarchy (an HtbPlan) on a link through libnl-route, in
// the network namespace of the calling thread. Never replaces a root qdisc netqos did not create
// unless told to; reconciling only touches the classes that differ, so flows keep their classes.
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "os/libnl_ptr.h"
#include "shaping/htb_plan.h"
#include "shaping/plan_delta.h"

struct nl_sock;

namespace netqos::shaping {

struct InstallOptions {
  // Replace a foreign root qdisc (--replace-root-qdisc). Kernel defaults are always replaced.
  bool replace_foreign = false;
};

struct InstallReport {
  bool qdisc_created = false;  // our root qdisc was (re)installed
  int classes_added = 0;
  int classes_changed = 0;
  int classes_deleted = 0;
  bool Unchanged() const {
    return !qdisc_created && classes_added == 0 && classes_changed == 0 && classes_deleted == 0;
  }
};

// Not thread-safe: one installer per thread (its socket belongs to the namespace it was opened in).
class HtbInstaller {
 public:
  // Opens a NETLINK_ROUTE socket in the calling thread's current network namespace.
  static Result<HtbInstaller> Create();

  HtbInstaller(HtbInstaller&&) noexcept;
  HtbInstaller& operator=(HtbInstaller&&) noexcept;
  ~HtbInstaller();

  // Root qdisc: none/kernel default → install ours; ours (htb 10:) → reconcile classes;
  // anything else → FailedPrecondition unless options.replace_foreign. A changed default class
  // (ShapingConfig::default_level) is FailedPrecondition too: sch_htb cannot change it in place.
  Result<InstallReport> Apply(int ifindex, const HtbPlan& plan, const InstallOptions& options = {});
  // Only the difference from a plan applied before (DiffPlans): changed classes first (a parent's
  // new rate before its new children), then the new ones, created exclusively. Nothing is read
  // back, so this trusts the tree to be what the last Apply left; any error (a class already
  // there, a parent missing, a root that is not ours) is returned for the caller to apply the
  // whole plan instead.
  Result<InstallReport> Patch(int ifindex, const PlanDelta& delta);

  // Deletes our root qdisc (htb 10:) on the link; the kernel puts its default back. Ok when
  // ours is not installed; a foreign root qdisc is left alone.
  Status Remove(int ifindex);

  // Creates the ifb device `name` if missing and sets it up; returns its ifindex.
  Result<int> EnsureIfb(const std::string& name);
  // Deletes the ifb device `name`; Ok if it does not exist; refuses non-ifb links.
  Status DeleteIfb(const std::string& name);

 private:
  explicit HtbInstaller(os::NlSockPtr sock);

  os::NlSockPtr sock_;
};

}  // namespace netqos::shaping
