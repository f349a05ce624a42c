#include "shaping/netlink/queue_qdiscs.h"

#include <linux/pkt_sched.h>
#include <netlink/cache.h>
#include <netlink/netlink.h>
#include <netlink/route/classifier.h>
#include <netlink/route/link.h>
#include <netlink/route/qdisc.h>
#include <netlink/route/tc.h>
#include <netlink/socket.h>
#include <spdlog/spdlog.h>

#include "os/nl_error.h"
#include "shaping/htb_plan.h"  // MakeHandle, TcHandleText, kQdiscMajor
#include "shaping/netlink/qdisc_netlink.h"

namespace netqos::shaping {
namespace {

using os::NlStatus;

const uint32_t kOurRoot = MakeHandle(kEdtRootMajor, 0);
const uint32_t kHtbRoot = MakeHandle(kQdiscMajor, 0);

Result<NlCachePtr> QdiscCache(nl_sock* sock, const std::string& nic) {
  nl_cache* raw = nullptr;
  int err = rtnl_qdisc_alloc_cache(sock, &raw);
  if (err < 0) return NlStatus(err, "rtnl_qdisc_alloc_cache(" + nic + ")");
  return NlCachePtr(raw);
}

std::string KindAt(nl_cache* cache, int ifindex, uint32_t parent) {
  QdiscPtr q(rtnl_qdisc_get_by_parent(cache, ifindex, parent));
  if (!q) return "";
  const char* kind = rtnl_tc_get_kind(TC_CAST(q.get()));
  return kind ? kind : "";
}

// Creates (or replaces) a qdisc of `kind` with its default parameters at parent; handle 0 lets
// the kernel number it.
Status PutQdisc(nl_sock* sock, int ifindex, uint32_t parent, uint32_t handle,
                const std::string& kind, const std::string& what) {
  QdiscPtr q(rtnl_qdisc_alloc());
  if (!q) return ResourceExhausted("rtnl_qdisc_alloc: out of memory");
  rtnl_tc_set_ifindex(TC_CAST(q.get()), ifindex);
  rtnl_tc_set_parent(TC_CAST(q.get()), parent);
  if (handle != 0) rtnl_tc_set_handle(TC_CAST(q.get()), handle);
  int err = rtnl_tc_set_kind(TC_CAST(q.get()), kind.c_str());
  if (err < 0) return NlStatus(err, "rtnl_tc_set_kind(" + kind + ")");
  err = rtnl_qdisc_add(sock, q.get(), NLM_F_CREATE | NLM_F_REPLACE);
  return NlStatus(err, "rtnl_qdisc_add(" + kind + " " + what + ")");
}

bool IsOurEdtRoot(const RootQdisc& r) {
  return r.present && r.handle == kOurRoot && (r.kind == "mq" || r.kind == "fq");
}

}  // namespace

QueueQdiscs::QueueQdiscs(os::NlSockPtr sock) : sock_(std::move(sock)) {}
QueueQdiscs::QueueQdiscs(QueueQdiscs&&) noexcept = default;
QueueQdiscs& QueueQdiscs::operator=(QueueQdiscs&&) noexcept = default;
QueueQdiscs::~QueueQdiscs() = default;

Result<QueueQdiscs> QueueQdiscs::Create() {
  os::NlSockPtr sock(nl_socket_alloc());
  if (!sock) return ResourceExhausted("nl_socket_alloc: out of memory");
  int err = nl_connect(sock.get(), NETLINK_ROUTE);
  if (err < 0) return NlStatus(err, "nl_connect(NETLINK_ROUTE)");
  return QueueQdiscs(std::move(sock));
}

Result<int> QueueQdiscs::TxQueues(int ifindex) {
  rtnl_link* raw = nullptr;
  int err = rtnl_link_get_kernel(sock_.get(), ifindex, nullptr, &raw);
  LinkPtr link(raw);
  if (err < 0 || !link)
    return NlStatus(err, "rtnl_link_get_kernel(ifindex " + std::to_string(ifindex) + ")");
  const uint32_t n = rtnl_link_get_num_tx_queues(link.get());
  return n == 0 ? 1 : static_cast<int>(n);
}

Result<QueueLayout> QueueQdiscs::Read(int ifindex) {
  nl_sock* sock = sock_.get();
  const std::string nic = LinkName(sock, ifindex);
  NETQOS_ASSIGN_OR_RETURN(RootQdisc root, ReadRoot(sock, ifindex, nic));
  QueueLayout layout;
  if (!root.present) return layout;
  layout.root_kind = root.kind;
  layout.root_handle = root.handle;
  if (root.kind != "mq") return layout;
  NETQOS_ASSIGN_OR_RETURN(int queues, TxQueues(ifindex));
  NETQOS_ASSIGN_OR_RETURN(NlCachePtr cache, QdiscCache(sock, nic));
  for (int i = 1; i <= queues; ++i) {
    layout.queue_kinds.push_back(KindAt(
        cache.get(), ifindex, MakeHandle(HandleMajor(root.handle), static_cast<uint32_t>(i))));
  }
  return layout;
}

Result<bool> QueueQdiscs::OwnRoot(int ifindex) {
  nl_sock* sock = sock_.get();
  NETQOS_ASSIGN_OR_RETURN(RootQdisc root, ReadRoot(sock, ifindex, LinkName(sock, ifindex)));
  return IsOurEdtRoot(root);
}

Result<EdtInstallReport> QueueQdiscs::EnsureEdt(int ifindex, bool replace_foreign) {
  nl_sock* sock = sock_.get();
  const std::string nic = LinkName(sock, ifindex);
  NETQOS_ASSIGN_OR_RETURN(RootQdisc root, ReadRoot(sock, ifindex, nic));
  NETQOS_ASSIGN_OR_RETURN(int queues, TxQueues(ifindex));
  EdtInstallReport report;
  const char* want_root = queues > 1 ? "mq" : "fq";
  const bool keep = root.present && root.kind == want_root;  // the NIC's own mq (or fq): kept
  if (!keep) {
    const bool our_htb = root.present && root.kind == "htb" && root.handle == kHtbRoot;
    if (!our_htb && !IsOurEdtRoot(root) && !IsKernelDefault(root) && !replace_foreign) {
      return FailedPrecondition("refusing to replace root qdisc " + root.kind + " " +
                                TcHandleText(root.handle) + " on " + nic +
                                " that netqos did not create (use --replace-root-qdisc)");
    }
    if (root.present && !our_htb && !IsKernelDefault(root) && !IsOurEdtRoot(root)) {
      spdlog::warn("shaping: replacing foreign root qdisc nic={} kind={} handle={}", nic, root.kind,
                   TcHandleText(root.handle));
    }
    // A replace cannot change a root's kind in place when the handle is taken (10: htb -> 10:
    // mq): delete netqos's HTB root first. Its packets in flight are dropped once, as on any
    // mode switch.
    if (our_htb) {
      NETQOS_RETURN_IF_ERROR(DeleteQdisc(sock, ifindex, TC_H_ROOT, kHtbRoot, "htb 10: on " + nic));
    }
    NETQOS_RETURN_IF_ERROR(
        PutQdisc(sock, ifindex, TC_H_ROOT, kOurRoot, want_root, "10: root on " + nic));
    report.root_created = true;
    spdlog::info("shaping: edt root nic={} kind={} tx_queues={}", nic, want_root, queues);
  }
  if (queues <= 1) return report;
  NETQOS_ASSIGN_OR_RETURN(RootQdisc now, ReadRoot(sock, ifindex, nic));
  NETQOS_ASSIGN_OR_RETURN(NlCachePtr cache, QdiscCache(sock, nic));
  for (int i = 1; i <= queues; ++i) {
    const uint32_t parent = MakeHandle(HandleMajor(now.handle), static_cast<uint32_t>(i));
    const std::string kind = KindAt(cache.get(), ifindex, parent);
    if (kind == "fq") continue;
    NETQOS_RETURN_IF_ERROR(
        PutQdisc(sock, ifindex, parent, 0, "fq", "under " + TcHandleText(parent) + " on " + nic));
    ++report.queues_replaced;
  }
  if (report.queues_replaced > 0) {
    spdlog::info("shaping: fq under tx queues nic={} replaced={} of={}", nic,
                 report.queues_replaced, queues);
  }
  return report;
}

Status QueueQdiscs::RemoveOwnRoot(int ifindex) {
  nl_sock* sock = sock_.get();
  const std::string nic = LinkName(sock, ifindex);
  NETQOS_ASSIGN_OR_RETURN(RootQdisc root, ReadRoot(sock, ifindex, nic));
  if (!IsOurEdtRoot(root)) return Status::Ok();
  NETQOS_RETURN_IF_ERROR(
      DeleteQdisc(sock, ifindex, TC_H_ROOT, kOurRoot, root.kind + " 10: on " + nic));
  spdlog::info("shaping: removed edt root qdisc nic={} kind={}", nic, root.kind);
  return Status::Ok();
}

Status QueueQdiscs::Restore(int ifindex, const QueueLayout& before) {
  if (before.root_kind != "mq") return Status::Ok();
  nl_sock* sock = sock_.get();
  const std::string nic = LinkName(sock, ifindex);
  NETQOS_ASSIGN_OR_RETURN(RootQdisc root, ReadRoot(sock, ifindex, nic));
  if (!root.present || root.kind != "mq") {
    if (root.present && !IsKernelDefault(root)) {
      return FailedPrecondition("cannot put mq back on " + nic + ": its root is " + root.kind +
                                " " + TcHandleText(root.handle) + " now");
    }
    // The kernel numbers it, as it numbered the mq it made when the device came up.
    NETQOS_RETURN_IF_ERROR(PutQdisc(sock, ifindex, TC_H_ROOT, 0, "mq", "root on " + nic));
    NETQOS_ASSIGN_OR_RETURN(root, ReadRoot(sock, ifindex, nic));
  }
  NETQOS_ASSIGN_OR_RETURN(NlCachePtr cache, QdiscCache(sock, nic));
  std::string failures;
  for (size_t i = 0; i < before.queue_kinds.size(); ++i) {
    const std::string& kind = before.queue_kinds[i];
    const uint32_t parent = MakeHandle(HandleMajor(root.handle), static_cast<uint32_t>(i + 1));
    if (kind.empty() || KindAt(cache.get(), ifindex, parent) == kind) continue;
    if (Status st = PutQdisc(sock, ifindex, parent, 0, kind,
                             "under " + TcHandleText(parent) + " on " + nic);
        !st.ok()) {
      failures += (failures.empty() ? "" : "; ") + st.message();
    }
  }
  if (!failures.empty()) return Internal("restoring the TX queues' qdiscs: " + failures);
  spdlog::info("shaping: restored mq and its queues' qdiscs nic={}", nic);
  return Status::Ok();
}

Status QueueQdiscs::RemoveEmptyClsact(int ifindex) {
  nl_sock* sock = sock_.get();
  const std::string nic = LinkName(sock, ifindex);
  NETQOS_ASSIGN_OR_RETURN(NlCachePtr qdiscs, QdiscCache(sock, nic));
  if (KindAt(qdiscs.get(), ifindex, TC_H_CLSACT) != "clsact") return Status::Ok();
  for (uint32_t side : {TC_H_MIN_INGRESS, TC_H_MIN_EGRESS}) {
    nl_cache* raw = nullptr;
    int err = rtnl_cls_alloc_cache(sock, ifindex, TC_H_MAKE(TC_H_CLSACT, side), &raw);
    if (err < 0) return NlStatus(err, "rtnl_cls_alloc_cache(clsact on " + nic + ")");
    NlCachePtr filters(raw);
    if (nl_cache_nitems(filters.get()) > 0) return Status::Ok();  // someone else's filters
  }
  return DeleteQdisc(sock, ifindex, TC_H_CLSACT, TC_H_MAKE(TC_H_CLSACT, 0), "clsact on " + nic);
}

}  // namespace netqos::shaping
