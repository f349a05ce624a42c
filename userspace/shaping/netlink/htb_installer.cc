#include "shaping/netlink/htb_installer.h"

#include <linux/pkt_sched.h>
#include <net/if.h>
#include <netlink/cache.h>
#include <netlink/netlink.h>
#include <netlink/route/class.h>
#include <netlink/route/link.h>
#include <netlink/route/qdisc.h>
#include <netlink/route/qdisc/htb.h>
#include <netlink/route/tc.h>
#include <netlink/socket.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "os/nl_error.h"
#include "shaping/netlink/qdisc_netlink.h"

namespace netqos::shaping {
namespace {

using os::NlStatus;

const uint32_t kOurQdisc = MakeHandle(kQdiscMajor, 0);

// The kernel derives quantum = rate / r2q and clamps it to 200000 bytes with a warning per class;
// setting it explicitly keeps the log quiet and the DRR rounds the same.
uint32_t Quantum(uint64_t rate_bps) {
  return static_cast<uint32_t>(std::clamp<uint64_t>(BitsToBytes(rate_bps) / 10, 1600, 200000));
}

struct ExistingClass {
  uint32_t parent = 0;
  uint64_t rate_bytes = 0;  // bytes per second, as the kernel reports it
  uint64_t ceil_bytes = 0;
  uint32_t prio = 0;
  uint32_t rbuffer = 0;  // bytes, as libnl converts the kernel's ticks back (see Matches)
  uint32_t cbuffer = 0;
  std::string kind;
};

bool IsOurs(const RootQdisc& r) { return r.present && r.kind == "htb" && r.handle == kOurQdisc; }

void CollectClass(nl_object* obj, void* arg) {
  auto* out = static_cast<std::map<uint32_t, ExistingClass>*>(arg);
  auto* cls = reinterpret_cast<rtnl_class*>(obj);
  const uint32_t handle = rtnl_tc_get_handle(TC_CAST(cls));
  if (HandleMajor(handle) != kQdiscMajor) return;
  ExistingClass e;
  e.parent = rtnl_tc_get_parent(TC_CAST(cls));
  if (e.parent == TC_H_ROOT) e.parent = kOurQdisc;  // the kernel reports 10:1's parent as root
  if (const char* kind = rtnl_tc_get_kind(TC_CAST(cls))) e.kind = kind;
  if (e.kind == "htb") {
    if (rtnl_htb_get_rate64(cls, &e.rate_bytes) < 0) e.rate_bytes = rtnl_htb_get_rate(cls);
    if (rtnl_htb_get_ceil64(cls, &e.ceil_bytes) < 0) e.ceil_bytes = rtnl_htb_get_ceil(cls);
    e.prio = rtnl_htb_get_prio(cls);
    e.rbuffer = rtnl_htb_get_rbuffer(cls);
    e.cbuffer = rtnl_htb_get_cbuffer(cls);
  }
  (*out)[handle] = e;
}

Result<std::map<uint32_t, ExistingClass>> ReadClasses(nl_sock* sock, int ifindex,
                                                      const std::string& nic) {
  nl_cache* raw = nullptr;
  int err = rtnl_class_alloc_cache(sock, ifindex, &raw);
  if (err < 0) return NlStatus(err, "rtnl_class_alloc_cache(" + nic + ")");
  NlCachePtr cache(raw);
  std::map<uint32_t, ExistingClass> out;
  nl_cache_foreach(cache.get(), CollectClass, &out);
  return out;
}

Status PutQdisc(nl_sock* sock, int ifindex, const HtbPlan& plan, int flags,
                const std::string& nic) {
  QdiscPtr q(rtnl_qdisc_alloc());
  if (!q) return ResourceExhausted("rtnl_qdisc_alloc: out of memory");
  rtnl_tc_set_ifindex(TC_CAST(q.get()), ifindex);
  rtnl_tc_set_parent(TC_CAST(q.get()), TC_H_ROOT);
  rtnl_tc_set_handle(TC_CAST(q.get()), kOurQdisc);
  int err = rtnl_tc_set_kind(TC_CAST(q.get()), "htb");
  if (err < 0) return NlStatus(err, "rtnl_tc_set_kind(htb)");
  err = rtnl_htb_set_defcls(q.get(), plan.default_minor);
  if (err < 0) return NlStatus(err, "rtnl_htb_set_defcls");
  err = rtnl_qdisc_add(sock, q.get(), flags);
  return NlStatus(err, "rtnl_qdisc_add(htb " + TcHandleText(kOurQdisc) + " on " + nic + ")");
}

Status PutClass(nl_sock* sock, int ifindex, const PlannedClass& c, int flags,
                const std::string& nic) {
  ClassPtr cls(rtnl_class_alloc());
  if (!cls) return ResourceExhausted("rtnl_class_alloc: out of memory");
  rtnl_tc_set_ifindex(TC_CAST(cls.get()), ifindex);
  rtnl_tc_set_parent(TC_CAST(cls.get()), c.parent);
  rtnl_tc_set_handle(TC_CAST(cls.get()), c.handle);
  const std::string what = "class " + TcHandleText(c.handle) + " on " + nic;
  int err = rtnl_tc_set_kind(TC_CAST(cls.get()), "htb");
  if (err < 0) return NlStatus(err, "rtnl_tc_set_kind(htb) for " + what);
  if ((err = rtnl_htb_set_rate64(cls.get(), BitsToBytes(c.rate_bps))) < 0 ||
      (err = rtnl_htb_set_ceil64(cls.get(), BitsToBytes(c.ceil_bps))) < 0 ||
      (err = rtnl_htb_set_prio(cls.get(), c.prio)) < 0 ||
      (err = rtnl_htb_set_quantum(cls.get(), Quantum(c.rate_bps))) < 0 ||
      (err = rtnl_htb_set_rbuffer(cls.get(), BucketBytes(c.rate_bps, c.burst_bytes))) < 0 ||
      (err = rtnl_htb_set_cbuffer(cls.get(), BucketBytes(c.ceil_bps, c.burst_bytes))) < 0) {
    return NlStatus(err, "rtnl_htb_set_* for " + what);
  }
  err = rtnl_class_add(sock, cls.get(), flags);
  return NlStatus(err, "rtnl_class_add(" + what + ")");
}

Status DeleteClass(nl_sock* sock, int ifindex, uint32_t handle, uint32_t parent,
                   const std::string& nic) {
  ClassPtr cls(rtnl_class_alloc());
  if (!cls) return ResourceExhausted("rtnl_class_alloc: out of memory");
  rtnl_tc_set_ifindex(TC_CAST(cls.get()), ifindex);
  rtnl_tc_set_parent(TC_CAST(cls.get()), parent);
  rtnl_tc_set_handle(TC_CAST(cls.get()), handle);
  int err = rtnl_class_delete(sock, cls.get());
  return NlStatus(err, "rtnl_class_delete(class " + TcHandleText(handle) + " on " + nic + ")");
}

// The kernel keeps a bucket as a time (64 ns ticks); libnl sends it as whole microseconds at the
// class's rate and converts the ticks it reads back through whole microseconds again, so a bucket
// comes back up to ~2 us of its rate (and a byte of rounding) smaller than it was set. Closer
// than 3 us of the rate counts as the same bucket: a burst that differs by less is no change
// anyone could measure, and an unchanged class must not be rewritten every pass.
bool SameBucket(uint32_t have, uint32_t want, uint64_t rate_bps) {
  const uint64_t slack = BitsToBytes(rate_bps) * 3 / 1000000 + 2;
  const uint64_t diff = have > want ? have - want : want - have;
  return diff <= slack;
}

bool Matches(const PlannedClass& want, const ExistingClass& have) {
  return have.kind == "htb" && have.rate_bytes == BitsToBytes(want.rate_bps) &&
         have.ceil_bytes == BitsToBytes(want.ceil_bps) && have.prio == want.prio &&
         SameBucket(have.rbuffer, BucketBytes(want.rate_bps, want.burst_bytes), want.rate_bps) &&
         SameBucket(have.cbuffer, BucketBytes(want.ceil_bps, want.burst_bytes), want.ceil_bps);
}

int Depth(uint32_t handle, const std::map<uint32_t, ExistingClass>& existing) {
  int depth = 0;
  for (auto it = existing.find(handle); it != existing.end() && depth < 16;
       it = existing.find(it->second.parent)) {
    ++depth;
  }
  return depth;
}

}  // namespace

HtbInstaller::HtbInstaller(os::NlSockPtr sock) : sock_(std::move(sock)) {}
HtbInstaller::HtbInstaller(HtbInstaller&&) noexcept = default;
HtbInstaller& HtbInstaller::operator=(HtbInstaller&&) noexcept = default;
HtbInstaller::~HtbInstaller() = default;

Result<HtbInstaller> HtbInstaller::Create() {
  os::NlSockPtr sock(nl_socket_alloc());
  if (!sock) return ResourceExhausted("nl_socket_alloc: out of memory");
  int err = nl_connect(sock.get(), NETLINK_ROUTE);
  if (err < 0) return NlStatus(err, "nl_connect(NETLINK_ROUTE)");
  return HtbInstaller(std::move(sock));
}

Result<InstallReport> HtbInstaller::Apply(int ifindex, const HtbPlan& plan,
                                          const InstallOptions& options) {
  nl_sock* sock = sock_.get();
  const std::string nic = LinkName(sock, ifindex);
  InstallReport report;
  NETQOS_ASSIGN_OR_RETURN(RootQdisc root, ReadRoot(sock, ifindex, nic));

  if (!IsOurs(root)) {
    if (!IsKernelDefault(root) && !options.replace_foreign) {
      return FailedPrecondition("refusing to replace root qdisc " + root.kind + " " +
                                TcHandleText(root.handle) + " on " + nic +
                                " that netqos did not create (use --replace-root-qdisc)");
    }
    if (!IsKernelDefault(root)) {
      spdlog::warn("shaping: replacing foreign root qdisc nic={} kind={} handle={}", nic, root.kind,
                   TcHandleText(root.handle));
    }
    NETQOS_RETURN_IF_ERROR(PutQdisc(sock, ifindex, plan, NLM_F_CREATE | NLM_F_REPLACE, nic));
    report.qdisc_created = true;
  } else if (root.defcls != plan.default_minor) {
    // sch_htb has no change operation: the default class is fixed until the qdisc is re-created,
    // which would drop every queue, so that is left to an explicit Remove.
    return FailedPrecondition(
        "htb " + TcHandleText(kOurQdisc) + " on " + nic + " sends unclassified traffic to " +
        TcHandleText(MakeHandle(kQdiscMajor, root.defcls)) + " but the plan wants " +
        TcHandleText(MakeHandle(kQdiscMajor, plan.default_minor)) +
        "; HTB cannot change this in place: remove the qdisc first");
  }

  NETQOS_ASSIGN_OR_RETURN(auto existing, ReadClasses(sock, ifindex, nic));

  std::map<uint32_t, const PlannedClass*> wanted;
  for (const PlannedClass& c : plan.classes) wanted[c.handle] = &c;

  // Stale classes (absent from the plan, or under another parent: HTB cannot move a class) go
  // first, children before parents.
  std::vector<std::pair<int, uint32_t>> stale;
  for (const auto& [handle, have] : existing) {
    auto want = wanted.find(handle);
    if (want == wanted.end() || want->second->parent != have.parent) {
      stale.emplace_back(Depth(handle, existing), handle);
    }
  }
  std::sort(stale.rbegin(), stale.rend());
  for (const auto& [depth, handle] : stale) {
    NETQOS_RETURN_IF_ERROR(DeleteClass(sock, ifindex, handle, existing[handle].parent, nic));
    existing.erase(handle);
    ++report.classes_deleted;
  }

  for (const PlannedClass& want : plan.classes) {
    auto it = existing.find(want.handle);
    if (it == existing.end()) {
      NETQOS_RETURN_IF_ERROR(PutClass(sock, ifindex, want, NLM_F_CREATE | NLM_F_EXCL, nic));
      ++report.classes_added;
    } else if (!Matches(want, it->second)) {
      NETQOS_RETURN_IF_ERROR(PutClass(sock, ifindex, want, 0, nic));
      ++report.classes_changed;
    }
  }
  if (!report.Unchanged()) {
    spdlog::info("shaping: applied htb plan nic={} qdisc_created={} added={} changed={} deleted={}",
                 nic, report.qdisc_created, report.classes_added, report.classes_changed,
                 report.classes_deleted);
  }
  return report;
}

Result<InstallReport> HtbInstaller::Patch(int ifindex, const PlanDelta& delta) {
  nl_sock* sock = sock_.get();
  const std::string nic = LinkName(sock, ifindex);
  InstallReport report;
  for (const PlannedClass& c : delta.changed) {
    NETQOS_RETURN_IF_ERROR(PutClass(sock, ifindex, c, 0, nic));
    ++report.classes_changed;
  }
  for (const PlannedClass& c : delta.added) {
    NETQOS_RETURN_IF_ERROR(PutClass(sock, ifindex, c, NLM_F_CREATE | NLM_F_EXCL, nic));
    ++report.classes_added;
  }
  return report;
}

Status HtbInstaller::Remove(int ifindex) {
  nl_sock* sock = sock_.get();
  const std::string nic = LinkName(sock, ifindex);
  NETQOS_ASSIGN_OR_RETURN(RootQdisc root, ReadRoot(sock, ifindex, nic));
  if (!IsOurs(root)) return Status::Ok();
  NETQOS_RETURN_IF_ERROR(DeleteQdisc(sock, ifindex, TC_H_ROOT, kOurQdisc, "htb 10: on " + nic));
  spdlog::info("shaping: removed htb root qdisc nic={}", nic);
  return Status::Ok();
}

Result<int> HtbInstaller::EnsureIfb(const std::string& name) {
  nl_sock* sock = sock_.get();
  if (name.empty() || name.size() >= IFNAMSIZ) {
    return InvalidArgument("ifb name \"" + name + "\" must have 1.." +
                           std::to_string(IFNAMSIZ - 1) + " characters");
  }
  rtnl_link* raw = nullptr;
  int err = rtnl_link_get_kernel(sock, 0, name.c_str(), &raw);
  LinkPtr link(raw);
  if (err == -NLE_OBJ_NOTFOUND || err == -NLE_NODEV) {
    LinkPtr want(rtnl_link_alloc());
    if (!want) return ResourceExhausted("rtnl_link_alloc: out of memory");
    rtnl_link_set_name(want.get(), name.c_str());
    err = rtnl_link_set_type(want.get(), "ifb");
    if (err < 0) return NlStatus(err, "rtnl_link_set_type(ifb)");
    rtnl_link_set_flags(want.get(), IFF_UP);
    err = rtnl_link_add(sock, want.get(), NLM_F_CREATE | NLM_F_EXCL);
    if (err < 0) return NlStatus(err, "rtnl_link_add(ifb " + name + ")");
    spdlog::info("shaping: created ifb device name={}", name);
    raw = nullptr;
    err = rtnl_link_get_kernel(sock, 0, name.c_str(), &raw);
    link.reset(raw);
  }
  if (err < 0 || !link) return NlStatus(err, "rtnl_link_get_kernel(" + name + ")");
  const char* type = rtnl_link_get_type(link.get());
  if (type == nullptr || std::string(type) != "ifb") {
    return FailedPrecondition("link " + name + " exists and is not an ifb device (type " +
                              (type ? type : "none") + ")");
  }
  if ((rtnl_link_get_flags(link.get()) & IFF_UP) == 0) {
    LinkPtr change(rtnl_link_alloc());
    if (!change) return ResourceExhausted("rtnl_link_alloc: out of memory");
    rtnl_link_set_flags(change.get(), IFF_UP);
    err = rtnl_link_change(sock, link.get(), change.get(), 0);
    if (err < 0) return NlStatus(err, "rtnl_link_change(" + name + " up)");
  }
  return rtnl_link_get_ifindex(link.get());
}

Status HtbInstaller::DeleteIfb(const std::string& name) {
  nl_sock* sock = sock_.get();
  rtnl_link* raw = nullptr;
  int err = rtnl_link_get_kernel(sock, 0, name.c_str(), &raw);
  LinkPtr link(raw);
  if (err == -NLE_OBJ_NOTFOUND || err == -NLE_NODEV) return Status::Ok();
  if (err < 0 || !link) return NlStatus(err, "rtnl_link_get_kernel(" + name + ")");
  const char* type = rtnl_link_get_type(link.get());
  if (type == nullptr || std::string(type) != "ifb") {
    return FailedPrecondition("refusing to delete link " + name + ": not an ifb device");
  }
  return NlStatus(rtnl_link_delete(sock, link.get()), "rtnl_link_delete(" + name + ")");
}

}  // namespace netqos::shaping
