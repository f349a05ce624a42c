#include "shaping/netlink/qdisc_netlink.h"

#include <linux/pkt_sched.h>
#include <netlink/cache.h>
#include <netlink/netlink.h>
#include <netlink/route/class.h>
#include <netlink/route/link.h>
#include <netlink/route/qdisc.h>
#include <netlink/route/qdisc/htb.h>
#include <netlink/route/tc.h>

#include <set>

#include "os/nl_error.h"
#include "shaping/htb_plan.h"  // HandleMajor

namespace netqos::shaping {

std::string LinkName(nl_sock* sock, int ifindex) {
  rtnl_link* raw = nullptr;
  if (rtnl_link_get_kernel(sock, ifindex, nullptr, &raw) < 0 || raw == nullptr) {
    return "ifindex " + std::to_string(ifindex);
  }
  LinkPtr link(raw);
  const char* name = rtnl_link_get_name(link.get());
  return name ? name : "ifindex " + std::to_string(ifindex);
}

Result<RootQdisc> ReadRoot(nl_sock* sock, int ifindex, const std::string& nic) {
  nl_cache* raw = nullptr;
  int err = rtnl_qdisc_alloc_cache(sock, &raw);
  if (err < 0) return os::NlStatus(err, "rtnl_qdisc_alloc_cache(" + nic + ")");
  NlCachePtr cache(raw);
  RootQdisc root;
  QdiscPtr q(rtnl_qdisc_get_by_parent(cache.get(), ifindex, TC_H_ROOT));
  if (!q) return root;
  root.present = true;
  if (const char* kind = rtnl_tc_get_kind(TC_CAST(q.get()))) root.kind = kind;
  root.handle = rtnl_tc_get_handle(TC_CAST(q.get()));
  if (root.kind == "htb") root.defcls = rtnl_htb_get_defcls(q.get());
  return root;
}

bool IsKernelDefault(const RootQdisc& r) {
  if (!r.present || r.handle == 0) return true;
  static const std::set<std::string> kDefaults = {"noqueue", "pfifo_fast", "mq", "fq_codel"};
  return kDefaults.count(r.kind) != 0 && HandleMajor(r.handle) >= 0x8000;
}

Status DeleteQdisc(nl_sock* sock, int ifindex, uint32_t parent, uint32_t handle,
                   const std::string& what) {
  QdiscPtr q(rtnl_qdisc_alloc());
  if (!q) return ResourceExhausted("rtnl_qdisc_alloc: out of memory");
  rtnl_tc_set_ifindex(TC_CAST(q.get()), ifindex);
  rtnl_tc_set_parent(TC_CAST(q.get()), parent);
  rtnl_tc_set_handle(TC_CAST(q.get()), handle);
  return os::NlStatus(rtnl_qdisc_delete(sock, q.get()), "rtnl_qdisc_delete(" + what + ")");
}

}  // namespace netqos::shaping
